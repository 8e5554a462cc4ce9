//! Which cells a `[[report.compare]]` pairs: each candidate with the one baseline it is
//! compared to, and, when it pairs none, why. The report draws its comparisons from the
//! pairs; `check` refuses a comparison that has none, with the reason.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{CellPattern, Compare};
use crate::plan::{Address, Cell};

/// An axis a comparison's patterns may leave free: a candidate pairs with the baseline
/// that has its value there.
#[derive(Clone, Copy)]
struct Axis {
    name: &'static str,
    glob: fn(&CellPattern) -> &Option<String>,
    value: fn(&Address) -> Option<&str>,
}

/// The axes a pairing matches on when neither pattern names them.
const FREE: [Axis; 4] = [
    Axis {
        name: "image",
        glob: |p| &p.image,
        value: |a| Some(a.image.as_str()),
    },
    Axis {
        name: "board",
        glob: |p| &p.board,
        value: |a| Some(a.board.as_str()),
    },
    Axis {
        name: "storage",
        glob: |p| &p.storage,
        value: |a| a.storage.as_ref().map(crate::model::StorageName::as_str),
    },
    Axis {
        name: "filesystem",
        glob: |p| &p.filesystem,
        value: |a| a.filesystem.as_ref().map(crate::model::FsName::as_str),
    },
];

/// Every axis of an address, to say in which two baselines differ.
const ALL: [Axis; 5] = [
    FREE[0],
    FREE[1],
    FREE[2],
    FREE[3],
    Axis {
        name: "network",
        glob: |p| &p.network,
        value: |a| a.network.as_ref().map(crate::model::NetworkName::as_str),
    },
];

/// What one candidate is compared to.
enum Match<'c> {
    One(&'c Cell),
    Nothing,
    /// Several baselines agree with it on the free axes (two of them, to name how they
    /// differ): it is compared to none.
    Several(&'c Cell, &'c Cell),
}

/// One comparison's cells: its baselines, and each candidate with its baseline.
pub struct Pairing<'c> {
    /// How many cells the comparison's test has.
    cells: usize,
    baselines: Vec<&'c Cell>,
    candidates: Vec<(&'c Cell, Match<'c>)>,
    free: Vec<&'static Axis>,
}

impl<'c> Pairing<'c> {
    /// Pairs every candidate cell of `c`'s test with the baseline cell it is compared
    /// to: the only baseline when there is one, else the one baseline that agrees on
    /// every axis neither pattern names (so "UASP vs no UASP" pairs the same board and
    /// image). A cell both patterns match is a baseline.
    pub fn of(c: &Compare, cells: &[&'c Cell]) -> Pairing<'c> {
        let cells: Vec<&'c Cell> = cells
            .iter()
            .copied()
            .filter(|x| x.address.test == c.test)
            .collect();
        let baselines: Vec<&'c Cell> = cells
            .iter()
            .copied()
            .filter(|x| x.address.matches(&c.baseline))
            .collect();
        let free: Vec<&'static Axis> = FREE
            .iter()
            .filter(|a| (a.glob)(&c.baseline).is_none() && (a.glob)(&c.candidate).is_none())
            .collect();
        let key = |a: &'c Address| -> Vec<Option<&'c str>> {
            free.iter().map(|axis| (axis.value)(a)).collect()
        };
        // The baselines by their values of the free axes, so that pairing a candidate
        // is one lookup rather than a scan of every baseline.
        let mut by_free: BTreeMap<Vec<Option<&str>>, Vec<&Cell>> = BTreeMap::new();
        for b in &baselines {
            by_free.entry(key(&b.address)).or_default().push(b);
        }
        let candidates = cells
            .iter()
            .copied()
            .filter(|x| x.address.matches(&c.candidate) && !x.address.matches(&c.baseline))
            .map(|cand| {
                let m = match baselines.as_slice() {
                    [only] => Match::One(only),
                    _ => match by_free.get(&key(&cand.address)).map(Vec::as_slice) {
                        Some([only]) => Match::One(only),
                        Some([a, b, ..]) => Match::Several(a, b),
                        _ => Match::Nothing,
                    },
                };
                (cand, m)
            })
            .collect();
        Pairing {
            cells: cells.len(),
            baselines,
            candidates,
            free,
        }
    }

    /// Each (baseline, candidate) pair, in the cells' order.
    pub fn pairs(&self) -> impl Iterator<Item = (&'c Cell, &'c Cell)> + '_ {
        self.candidates.iter().filter_map(|(cand, m)| match m {
            Match::One(base) => Some((*base, *cand)),
            _ => None,
        })
    }

    /// The axes a candidate must agree on with its baseline: those neither pattern names.
    pub fn free_axes(&self) -> Vec<&'static str> {
        self.free.iter().map(|a| a.name).collect()
    }

    /// Why no candidate pairs with a baseline, in words; None when one does.
    pub fn why_none(&self, c: &Compare) -> Option<String> {
        if self.pairs().next().is_some() {
            return None;
        }
        let test = &c.test;
        if self.cells == 0 {
            return Some(format!("the plan has no cell of test `{test}`"));
        }
        if self.baselines.is_empty() {
            return Some(format!(
                "no cell of `{test}` matches the baseline {}",
                pattern_text(&c.baseline)
            ));
        }
        if self.candidates.is_empty() {
            return Some(if c.candidate == CellPattern::default() {
                format!(
                    "every cell of `{test}` matches the baseline {}, so none is left to compare with it",
                    pattern_text(&c.baseline)
                )
            } else {
                format!(
                    "no cell of `{test}` but the baselines matches the candidate {}",
                    pattern_text(&c.candidate)
                )
            });
        }
        let several = self.candidates.iter().find_map(|(_, m)| match m {
            Match::Several(a, b) => Some((*a, *b)),
            _ => None,
        });
        if let Some((a, b)) = several {
            let differ: Vec<&str> = ALL
                .iter()
                .filter(|x| (x.value)(&a.address) != (x.value)(&b.address))
                .map(|x| x.name)
                .collect();
            return Some(format!(
                "a candidate agrees with several baselines on {}, and is compared with one only: the baselines also differ in {} ({} and {})",
                and_list(&self.free_axes()),
                and_list(&differ),
                a.address.label(),
                b.address.label()
            ));
        }
        // The free axes on which no baseline has a value any candidate has: those keep
        // every pair apart; failing any, those whose values merely differ.
        let values = |axis: &Axis, cells: &mut dyn Iterator<Item = &'c Cell>| {
            cells
                .map(|x| (axis.value)(&x.address).unwrap_or("none"))
                .collect::<BTreeSet<&'c str>>()
        };
        let sides: Vec<(&str, BTreeSet<&str>, BTreeSet<&str>)> = self
            .free
            .iter()
            .map(|axis| {
                (
                    axis.name,
                    values(axis, &mut self.baselines.iter().copied()),
                    values(axis, &mut self.candidates.iter().map(|(x, _)| *x)),
                )
            })
            .filter(|(_, b, c)| b != c)
            .collect();
        let disjoint: Vec<_> = sides.iter().filter(|(_, b, c)| b.is_disjoint(c)).collect();
        let differ = if disjoint.is_empty() {
            sides.iter().collect()
        } else {
            disjoint
        };
        Some(if differ.is_empty() {
            format!(
                "no candidate agrees with a baseline on {} at once",
                and_list(&self.free_axes())
            )
        } else {
            let text: Vec<String> = differ
                .iter()
                .map(|(name, b, c)| {
                    format!("{name} (baseline {}; candidate {})", some_of(b), some_of(c))
                })
                .collect();
            format!("the cells also differ in {}", text.join(", "))
        })
    }
}

/// `{ storage = "usb" }`, as a pattern is written.
fn pattern_text(p: &CellPattern) -> String {
    let parts: Vec<String> = ALL
        .iter()
        .chain(std::iter::once(&Axis {
            name: "test",
            glob: |p| &p.test,
            value: |_| None,
        }))
        .filter_map(|a| {
            (a.glob)(p)
                .as_ref()
                .map(|g| format!("{} = {:?}", a.name, crate::shown::shown(g)))
        })
        .collect();
    format!("{{ {} }}", parts.join(", "))
}

/// At most a few values, each quoted, and how many more.
fn some_of(values: &BTreeSet<&str>) -> String {
    const MOST: usize = 4;
    let shown: Vec<String> = values
        .iter()
        .take(MOST)
        .map(|v| format!("`{}`", crate::shown::shown(v)))
        .collect();
    match values.len().saturating_sub(MOST) {
        0 => shown.join(", "),
        n => format!("{}, and {n} more", shown.join(", ")),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(words: &[&str]) -> String {
    match words {
        [] => "no axis".to_string(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Percent;
    use crate::model::TestName;

    fn compare(baseline: CellPattern, candidate: CellPattern) -> Compare {
        Compare {
            test: TestName::new("disk-4k"),
            metric: "random_read".into(),
            baseline,
            candidate,
            pool: None,
            noise_band: None,
            percent: Percent::default(),
        }
    }

    fn storage(s: &str) -> CellPattern {
        CellPattern {
            storage: Some(s.into()),
            ..CellPattern::default()
        }
    }

    /// The fixture's disk-4k cells (pi-1 and pi-2, each sd/as-is, usb/as-is and
    /// usb/ext4), but those `keep` refuses.
    fn pair(c: &Compare, keep: impl Fn(&Address) -> bool) -> (usize, Option<String>) {
        let ws = crate::plan::fixtures::workspace();
        let plan = crate::plan::expand(&ws, &ws.scenarios[0]);
        let cells: Vec<&Cell> = plan.cells.iter().filter(|c| keep(&c.address)).collect();
        let p = Pairing::of(c, &cells);
        (p.pairs().count(), p.why_none(c))
    }

    #[test]
    fn a_candidate_pairs_with_the_baseline_that_agrees_on_every_free_axis() {
        let c = compare(storage("sd"), storage("usb"));
        // usb/as-is on each board pairs with sd/as-is on the same board; usb/ext4 finds
        // no sd/ext4.
        assert_eq!(pair(&c, |_| true), (2, None));
    }

    #[test]
    fn no_pair_says_which_free_axis_keeps_the_sides_apart() {
        // The case: the patterns name storage, and the cells also differ in
        // filesystem (usb only as ext4).
        let c = compare(storage("sd"), storage("usb"));
        let (n, why) = pair(&c, |a| {
            !(a.storage.as_ref().is_some_and(|s| s.as_str() == "usb")
                && a.filesystem.as_ref().is_some_and(|f| f.as_str() == "as-is"))
        });
        assert_eq!(n, 0);
        assert_eq!(
            why.as_deref(),
            Some("the cells also differ in filesystem (baseline `as-is`; candidate `ext4`)")
        );
    }

    #[test]
    fn no_pair_names_the_axis_several_baselines_differ_in() {
        let c = compare(
            CellPattern {
                board: Some("pi-1".into()),
                ..CellPattern::default()
            },
            CellPattern {
                board: Some("pi-2".into()),
                filesystem: Some("ext4".into()),
                ..CellPattern::default()
            },
        );
        let (n, why) = pair(&c, |_| true);
        assert_eq!(n, 0);
        let why = why.unwrap();
        assert!(
            why.starts_with("a candidate agrees with several baselines on image and storage")
                && why.contains("the baselines also differ in filesystem ("),
            "{why}"
        );
    }

    #[test]
    fn no_pair_says_which_side_matches_no_cell() {
        let (_, why) = pair(&compare(storage("nvme"), storage("usb")), |_| true);
        assert_eq!(
            why.as_deref(),
            Some("no cell of `disk-4k` matches the baseline { storage = \"nvme\" }")
        );
        let (_, why) = pair(&compare(storage("*"), CellPattern::default()), |_| true);
        assert!(
            why.as_deref()
                .is_some_and(|w| w.starts_with("every cell of `disk-4k` matches the baseline")),
            "{why:?}"
        );
        let (_, why) = pair(&compare(storage("sd"), storage("nvme")), |_| true);
        assert_eq!(
            why.as_deref(),
            Some(
                "no cell of `disk-4k` but the baselines matches the candidate { storage = \"nvme\" }"
            )
        );
    }
}
