//! Why a cell must run: the differences between its inputs and a stored cell's, as
//! terraform shows a diff. Pure: the caller passes the stored records in.
//!
//! A changed method, param, recipe text or image gives a cell a new key, so the stored
//! cells it resembles no longer count. Without this the user sees complete cells turn
//! missing and cannot tell why before apply discards hours of runs.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::{Address, Cell, CellKey};
use crate::store::CellRecord;

/// The most differences listed per cell; the rest are counted.
pub const MAX_CHANGES: usize = 10;
/// The most characters of a value shown.
const MAX_VALUE_CHARS: usize = 60;

/// One leaf that differs. `old`/`new` are JSON text, shortened; `None` when absent.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    pub path: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.old, &self.new) {
            (Some(o), Some(n)) => write!(f, "~ {}: {o} -> {n}", self.path),
            (None, Some(n)) => write!(f, "+ {}: {n}", self.path),
            (Some(o), None) => write!(f, "- {}: {o}", self.path),
            (None, None) => write!(f, "~ {}", self.path),
        }
    }
}

/// The differences between two input trees: the first `limit` leaves in path order, and
/// how many more there are.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Diff {
    pub changes: Vec<Change>,
    pub more: usize,
}

impl Diff {
    pub fn total(&self) -> usize {
        self.changes.len() + self.more
    }
}

/// Diffs `old` against `new`, keeping at most `limit` changes.
pub fn diff(old: &Value, new: &Value, limit: usize) -> Diff {
    let mut d = Diff::default();
    walk(&mut Vec::new(), Some(old), Some(new), limit, &mut d);
    d
}

/// One step of a path; the path is joined only for a difference, since a plan diffs
/// every missing cell and most of each tree is equal.
enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

fn path_text(path: &[Seg<'_>]) -> String {
    if path.is_empty() {
        return "(root)".into();
    }
    let mut s = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => {
                let _ = write!(s, "[{i}]");
            }
        }
    }
    s
}

fn walk<'v>(
    path: &mut Vec<Seg<'v>>,
    old: Option<&'v Value>,
    new: Option<&'v Value>,
    limit: usize,
    d: &mut Diff,
) {
    // Most of two cells' trees are equal: comparing costs less than walking.
    if old == new {
        return;
    }
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                path.push(Seg::Key(k));
                walk(path, a.get(k), b.get(k), limit, d);
                path.pop();
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            for i in 0..a.len().max(b.len()) {
                path.push(Seg::Index(i));
                walk(path, a.get(i), b.get(i), limit, d);
                path.pop();
            }
        }
        (a, b) => {
            if d.changes.len() >= limit {
                d.more += 1;
                return;
            }
            let (old, new) = match (a, b) {
                (Some(Value::String(x)), Some(Value::String(y))) => {
                    let (x, y) = around_difference(x, y);
                    (Some(x), Some(y))
                }
                _ => (a.map(short), b.map(short)),
            };
            // A stored cell's keys and values may come from a store someone sent: shown
            // on one line, controls escaped (JSON text escapes only C0 ones).
            let shown = |t: String| crate::shown::shown(&t).into_owned();
            d.changes.push(Change {
                path: shown(path_text(path)),
                old: old.map(shown),
                new: new.map(shown),
            });
        }
    }
}

/// A value as JSON text, cut to `MAX_VALUE_CHARS`.
fn short(v: &Value) -> String {
    cut(&v.to_string(), 0)
}

/// `s` as JSON text from char `from`, at most `MAX_VALUE_CHARS` long, with `…` where cut.
fn cut(s: &str, from: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    let end = (from + MAX_VALUE_CHARS).min(chars.len());
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    out.extend(&chars[from..end]);
    if end < chars.len() {
        out.push('…');
    }
    out
}

/// Two strings shown from a little before where they first differ, so that a change at
/// the end of a long recipe command is visible.
fn around_difference(x: &str, y: &str) -> (String, String) {
    let (jx, jy) = (Value::from(x).to_string(), Value::from(y).to_string());
    let first = jx
        .chars()
        .zip(jy.chars())
        .take_while(|(a, b)| a == b)
        .count();
    let from = if first > MAX_VALUE_CHARS / 2 {
        first - 10
    } else {
        0
    };
    (cut(&jx, from), cut(&jy, from))
}

/// Why a cell that is not complete must run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Why {
    /// No stored cell has its address, nor its test on its board.
    New,
    /// The nearest stored cell (fewest differences; same address first) and how its
    /// inputs differ. `same_address` false: only the test and board are the same.
    Changed {
        nearest: CellKey,
        same_address: bool,
        #[serde(flatten)]
        diff: Diff,
    },
    /// A user asked to measure it again (`--redo`, or a stored redo marker).
    Redo,
}

/// The stored cells indexed for `why`: by address, and by (test, board).
pub struct Nearest<'a> {
    by_address: BTreeMap<&'a Address, Vec<&'a CellRecord>>,
    by_test_board: BTreeMap<(&'a str, &'a str), Vec<&'a CellRecord>>,
}

impl<'a> Nearest<'a> {
    pub fn new(records: impl IntoIterator<Item = &'a CellRecord>) -> Nearest<'a> {
        let mut n = Nearest {
            by_address: BTreeMap::new(),
            by_test_board: BTreeMap::new(),
        };
        for r in records {
            n.by_address.entry(&r.address).or_default().push(r);
            n.by_test_board
                .entry((r.address.test.as_str(), r.address.board.as_str()))
                .or_default()
                .push(r);
        }
        n
    }

    /// Why `cell`, which the store lacks, must run: new, or its differences from the
    /// nearest stored cell at the same address or, failing that, of the same test and
    /// board. Ties go to the smallest key, so plans are reproducible.
    pub fn why(&self, cell: &Cell) -> Why {
        let others = |rs: Option<&Vec<&'a CellRecord>>| -> Vec<&'a CellRecord> {
            rs.map(|rs| rs.iter().copied().filter(|r| r.key != cell.key).collect())
                .unwrap_or_default()
        };
        let mut same_address = true;
        let mut candidates = others(self.by_address.get(&cell.address));
        if candidates.is_empty() {
            same_address = false;
            candidates = others(
                self.by_test_board
                    .get(&(cell.address.test.as_str(), cell.address.board.as_str())),
            );
        }
        candidates
            .into_iter()
            .map(|r| (diff(r.inputs.value(), cell.inputs.json(), MAX_CHANGES), r))
            .min_by(|(a, ra), (b, rb)| a.total().cmp(&b.total()).then(ra.key.cmp(&rb.key)))
            .map_or(Why::New, |(diff, r)| Why::Changed {
                nearest: r.key.clone(),
                same_address,
                diff,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_changed_leaf_is_listed_with_its_path_and_both_values() {
        let old = json!({"method": {"cooldown": "0s", "warmup_runs": 1}, "test": {"name": "x"}});
        let new = json!({"method": {"cooldown": "1s", "warmup_runs": 1}, "test": {"name": "x"}});
        let d = diff(&old, &new, 10);
        assert_eq!(d.more, 0);
        assert_eq!(d.changes.len(), 1);
        assert_eq!(
            d.changes[0].to_string(),
            r#"~ method.cooldown: "0s" -> "1s""#
        );
    }

    #[test]
    fn equal_trees_have_no_differences() {
        let v = json!({"a": [1, {"b": null}], "c": "x"});
        assert_eq!(diff(&v, &v, 10), Diff::default());
    }

    #[test]
    fn added_removed_and_retyped_values_and_array_items() {
        let old = json!({"gone": 1, "m": {"cooldown": "none"}, "l": [1, 2, 3]});
        let new = json!({"came": true, "m": {"cooldown": {"fixed_s": 1}}, "l": [1, 5]});
        let got: Vec<String> = diff(&old, &new, 10)
            .changes
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            got,
            [
                "+ came: true",
                "- gone: 1",
                "~ l[1]: 2 -> 5",
                "- l[2]: 3",
                r#"~ m.cooldown: "none" -> {"fixed_s":1}"#,
            ]
        );
    }

    #[test]
    fn differences_past_the_limit_are_counted_not_listed() {
        let old = json!({"p": (0..25).collect::<Vec<_>>()});
        let new = json!({"p": (100..125).collect::<Vec<_>>()});
        let d = diff(&old, &new, 10);
        assert_eq!(d.changes.len(), 10);
        assert_eq!(d.more, 15);
        assert_eq!(d.total(), 25);
    }

    #[test]
    fn long_values_are_shortened_around_where_they_differ() {
        let base = "x".repeat(200);
        let old = json!({"cmd": format!("{base} --a")});
        let new = json!({"cmd": format!("{base} --b")});
        let c = &diff(&old, &new, 10).changes[0];
        let (o, n) = (c.old.as_deref().unwrap(), c.new.as_deref().unwrap());
        assert!(o.starts_with('…') && o.contains("--a"), "{o}");
        assert!(n.starts_with('…') && n.contains("--b"), "{n}");
        assert!(o.chars().count() <= MAX_VALUE_CHARS + 2, "{o}");
        let big = json!({"v": "y".repeat(500)});
        let s = diff(&json!({"v": 1}), &big, 10).changes[0]
            .new
            .clone()
            .unwrap();
        assert!(
            s.ends_with('…') && s.chars().count() <= MAX_VALUE_CHARS + 1,
            "{s}"
        );
    }

    #[test]
    fn the_nearest_stored_cell_is_at_the_same_address_then_of_the_same_test_and_board() {
        let ws = super::super::fixtures::workspace();
        let plan = super::super::expand(&ws, &ws.scenarios[0]);
        let cell = &plan.cells[0];
        let record = |key: &str, address: &Address, inputs: Value| CellRecord {
            format: 1,
            key: CellKey::parse(key).unwrap(),
            address: address.clone(),
            inputs: inputs.into(),
        };
        assert_eq!(Nearest::new([]).why(cell), Why::New);

        // Its own record is no explanation.
        let own = record(cell.key.as_str(), &cell.address, cell.inputs.json().clone());
        assert_eq!(Nearest::new([&own]).why(cell), Why::New);

        let mut far = cell.inputs.json().clone();
        far["method"]["warmup_runs"] = json!(7);
        far["params"] = json!({"other": 1});
        let mut near = cell.inputs.json().clone();
        near["method"]["warmup_runs"] = json!(7);
        let mut elsewhere = cell.address.clone();
        elsewhere.image = "other".into();
        let a = record(&"a".repeat(32), &cell.address, far);
        let b = record(&"b".repeat(32), &cell.address, near.clone());
        let c = record(&"c".repeat(32), &elsewhere, near);
        match Nearest::new([&a, &b, &c]).why(cell) {
            Why::Changed {
                nearest,
                same_address,
                diff,
            } => {
                assert_eq!(nearest.as_str(), "b".repeat(32));
                assert!(same_address);
                assert_eq!(diff.changes.len(), 1);
                assert_eq!(diff.changes[0].path, "method.warmup_runs");
            }
            other => panic!("{other:?}"),
        }
        match Nearest::new([&c]).why(cell) {
            Why::Changed { same_address, .. } => assert!(!same_address),
            other => panic!("{other:?}"),
        }
    }
}
