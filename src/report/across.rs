//! `benchpipe report --compare A B`: the same configurations across two runs (two
//! stores, or two scenarios in one store), each metric judged like a comparison row.
//! Pure: the caller passes both sides' plans and store contents in.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use super::compare::{ComparisonRow, config_label, row, values_of};
use crate::model::{Scenario, Workspace};
use crate::plan::diff::{self, MAX_CHANGES};
use crate::plan::{Address, Cell, CellKey, Plan};
use crate::store::{CellData, CellRecord};

/// One side of a comparison across runs.
pub struct Side<'a> {
    /// What the user named: a store's path or a scenario file, as typed.
    pub label: String,
    pub scenario: &'a Scenario,
    pub plan: &'a Plan,
    pub data: &'a BTreeMap<CellKey, CellData>,
}

/// Whether a configuration was measured on both sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Presence {
    Both,
    OnlyBaseline,
    OnlyCandidate,
    /// Several configurations of one side match it: it is not compared.
    Ambiguous,
}

/// One configuration across the two runs.
#[derive(Clone, Debug, Serialize)]
pub struct AcrossConfig {
    pub test: String,
    /// The baseline's configuration (`board / storage / filesystem / network / image`); with
    /// two scenarios, `baseline -> candidate` where they differ.
    pub config: String,
    pub presence: Presence,
    /// What differs between the two sides' cells: their inputs (as `plan` shows a
    /// diff) and the board under them (kernel, os-release, firmware, boot config).
    pub changes: Vec<String>,
    /// One row per metric of the test, baseline the first side.
    pub rows: Vec<ComparisonRow>,
}

/// The whole comparison across runs.
#[derive(Clone, Debug, Serialize)]
pub struct Across {
    pub baseline: String,
    pub candidate: String,
    pub scenario: String,
    /// How rows are judged, as under a report's comparisons.
    pub method: String,
    /// The axes matched to pair configurations; an axis whose values differ entirely
    /// between two scenarios (one image each) is what is compared, not matched.
    pub matched_axes: Vec<String>,
    pub configs: Vec<AcrossConfig>,
}

/// An axis of an address, by name.
type Axis = (&'static str, fn(&Address) -> String);

/// The axes of an address, in matrix order.
const AXES: [Axis; 5] = [
    ("image", |a| a.image.to_string()),
    ("board", |a| a.board.to_string()),
    ("storage", |a| format!("{:?}", a.storage)),
    ("filesystem", |a| format!("{:?}", a.filesystem)),
    ("network", |a| format!("{:?}", a.network)),
];

/// The data for `cell` on a side: under its key, else the stored cell at its address
/// whose inputs differ least (ties to the smaller key), so a run made under older
/// inputs still answers for its configuration. None when nothing was measured.
fn found<'d>(cell: &Cell, side: &Indexed<'d>) -> Option<&'d CellData> {
    if let Some(d) = side.data.get(&cell.key)
        && d.measured_count() > 0
    {
        return Some(d);
    }
    side.by_address
        .get(&cell.address)?
        .iter()
        .copied()
        .min_by(|(a, _), (b, _)| {
            let da = diff::diff(a.inputs.value(), cell.inputs.json(), usize::MAX).total();
            let db = diff::diff(b.inputs.value(), cell.inputs.json(), usize::MAX).total();
            da.cmp(&db).then(a.key.cmp(&b.key))
        })
        .map(|(_, d)| d)
}

/// A side's measured cells by address.
struct Indexed<'d> {
    data: &'d BTreeMap<CellKey, CellData>,
    by_address: BTreeMap<&'d Address, Vec<(&'d CellRecord, &'d CellData)>>,
}

impl<'d> Indexed<'d> {
    fn new(data: &'d BTreeMap<CellKey, CellData>) -> Self {
        let mut by_address: BTreeMap<&Address, Vec<_>> = BTreeMap::new();
        for d in data.values().filter(|d| d.measured_count() > 0) {
            if let Some(r) = &d.record {
                by_address.entry(&r.address).or_default().push((r, d));
            }
        }
        Indexed { data, by_address }
    }
}

/// What differs between the two sides' stored cells.
fn changes(a: &CellData, b: &CellData, cell_a: &Cell, cell_b: &Cell) -> Vec<String> {
    let inputs = |d: &CellData, c: &Cell| {
        d.record
            .as_ref()
            .map_or_else(|| c.inputs.json().clone(), |r| r.inputs.value().clone())
    };
    let d = diff::diff(&inputs(a, cell_a), &inputs(b, cell_b), MAX_CHANGES);
    let mut out: Vec<String> = d.changes.iter().map(|c| format!("input {c}")).collect();
    if d.more > 0 {
        out.push(format!("and {} more input difference(s)", d.more));
    }
    if let (Some(fa), Some(fb)) = (&a.fingerprint, &b.fingerprint) {
        let board = crate::plan::drift::changes(&fa.fingerprint, &fb.fingerprint);
        if !board.is_empty() {
            out.push(format!("board {}", crate::plan::drift::summary(&board)));
        }
    }
    out
}

/// Compares every configuration of `baseline` with the same one of `candidate`.
///
/// Configurations pair by address: test and every axis, except an axis whose values on
/// the two sides have none in common (two scenarios of one image each: the image is
/// what is compared). A configuration measured on one side only is listed as such.
/// Every metric of the test gives a row judged by [`super::comparisons`]' rules, at
/// the baseline scenario's confidence and noise band, from the runs that count under
/// each side's method.
pub fn across(ws: &Workspace, baseline: &Side, candidate: &Side) -> Across {
    let values = |plan: &Plan, f: fn(&Address) -> String| -> BTreeSet<String> {
        plan.cells.iter().map(|c| f(&c.address)).collect()
    };
    let matched: Vec<Axis> = AXES
        .iter()
        .copied()
        .filter(|(_, f)| !values(baseline.plan, *f).is_disjoint(&values(candidate.plan, *f)))
        .collect();
    let key = |c: &Cell| -> Vec<String> {
        std::iter::once(c.address.test.to_string())
            .chain(matched.iter().map(|(_, f)| f(&c.address)))
            .collect()
    };
    let mut by_key: BTreeMap<Vec<String>, (Vec<&Cell>, Vec<&Cell>)> = BTreeMap::new();
    for c in &baseline.plan.cells {
        by_key.entry(key(c)).or_default().0.push(c);
    }
    for c in &candidate.plan.cells {
        by_key.entry(key(c)).or_default().1.push(c);
    }
    let (ib, ic) = (Indexed::new(baseline.data), Indexed::new(candidate.data));
    let confidence = baseline.scenario.method.confidence;
    let noise_band = baseline.scenario.precision.noise_band;
    let mut configs = Vec::new();
    // In the baseline plan's order, then the candidate's configurations it lacks.
    let mut order: Vec<Vec<String>> = Vec::new();
    let mut seen = BTreeSet::new();
    for c in baseline.plan.cells.iter().chain(&candidate.plan.cells) {
        let k = key(c);
        if seen.insert(k.clone()) {
            order.push(k);
        }
    }
    for k in order {
        let (bs, cs) = &by_key[&k];
        let first = bs.first().or(cs.first()).copied();
        let Some(first) = first else { continue };
        let test = first.address.test.to_string();
        let label = |b: &Cell, c: &Cell| {
            let (lb, lc) = (config_label(&b.address), config_label(&c.address));
            if lb == lc {
                lb
            } else {
                format!("{lb} -> {lc}")
            }
        };
        let mut cfg = AcrossConfig {
            test: test.clone(),
            config: config_label(&first.address),
            presence: Presence::Both,
            changes: Vec::new(),
            rows: Vec::new(),
        };
        if bs.len() > 1 || cs.len() > 1 {
            cfg.presence = Presence::Ambiguous;
            configs.push(cfg);
            continue;
        }
        let b = bs.first().and_then(|c| found(c, &ib).map(|d| (*c, d)));
        let c = cs.first().and_then(|c| found(c, &ic).map(|d| (*c, d)));
        let ((cb, db), (cc, dc)) = match (b, c) {
            (Some(b), Some(c)) => (b, c),
            (Some(_), None) => {
                cfg.presence = Presence::OnlyBaseline;
                configs.push(cfg);
                continue;
            }
            (None, Some((cc, _))) => {
                cfg.config = config_label(&cc.address);
                cfg.presence = Presence::OnlyCandidate;
                configs.push(cfg);
                continue;
            }
            (None, None) => continue,
        };
        cfg.config = label(cb, cc);
        cfg.changes = changes(db, dc, cb, cc);
        let Some(recipe) = ws.recipes.get(&cb.address.test) else {
            configs.push(cfg);
            continue;
        };
        for spec in &recipe.metrics {
            let (xb, xc) = (
                values_of(&cb.method, spec, db),
                values_of(&cc.method, spec, dc),
            );
            if xb.is_empty() && xc.is_empty() {
                continue;
            }
            cfg.rows.push(row(
                format!("{test}.{}", spec.name),
                spec,
                (baseline.label.clone(), candidate.label.clone()),
                None,
                (&[&xb], &[&xc]),
                (confidence, noise_band),
                crate::model::Percent::OfBaseline,
            ));
        }
        configs.push(cfg);
    }
    Across {
        baseline: baseline.label.clone(),
        candidate: candidate.label.clone(),
        scenario: if baseline.scenario.name == candidate.scenario.name {
            baseline.scenario.name.clone()
        } else {
            format!("{} -> {}", baseline.scenario.name, candidate.scenario.name)
        },
        method: super::compare::method_text(baseline.scenario, false),
        matched_axes: matched.iter().map(|(n, _)| n.to_string()).collect(),
        configs,
    }
}

/// The comparison as Markdown, for the terminal or a pull request. Every value from a
/// file is escaped ([`super::markdown_escape`]).
pub fn markdown(a: &Across) -> String {
    let e = |s: &str| super::markdown_escape(s);
    let mut out = format!(
        "# {} against {} ({})\n\n{}\n",
        e(&a.candidate),
        e(&a.baseline),
        e(&a.scenario),
        e(&a.method)
    );
    let mut only_b = Vec::new();
    let mut only_c = Vec::new();
    let mut ambiguous = Vec::new();
    for c in &a.configs {
        let name = format!("{} on {}", c.test, c.config);
        match c.presence {
            Presence::OnlyBaseline => only_b.push(name),
            Presence::OnlyCandidate => only_c.push(name),
            Presence::Ambiguous => ambiguous.push(name),
            Presence::Both => {
                let _ = write!(out, "\n## {}\n\n", e(&name));
                for ch in &c.changes {
                    let _ = writeln!(out, "- differs: {}", e(ch));
                }
                if !c.changes.is_empty() {
                    out.push('\n');
                }
                out.push_str("| metric | runs | difference | verdict |\n|---|---|---|---|\n");
                for r in &c.rows {
                    let _ = writeln!(
                        out,
                        "| {} ({}) | {} vs {} | {} | {} |",
                        e(&r.metric),
                        e(&r.unit),
                        r.baseline_n,
                        r.candidate_n,
                        e(&r.difference),
                        e(&r.verdict_text)
                    );
                }
            }
        }
    }
    let list = |out: &mut String, title: String, items: &[String]| {
        if !items.is_empty() {
            let _ = write!(out, "\n## {title}\n\n");
            for i in items {
                let _ = writeln!(out, "- {}", e(i));
            }
        }
    };
    list(&mut out, format!("Only in {}", e(&a.baseline)), &only_b);
    list(&mut out, format!("Only in {}", e(&a.candidate)), &only_c);
    list(
        &mut out,
        "Not compared: several configurations match".to_string(),
        &ambiguous,
    );
    out
}
