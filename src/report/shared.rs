//! Provenance told once: the facts every configuration that records them agrees on,
//! then per configuration only the facts whose value is not the same everywhere.

use std::collections::BTreeMap;

use super::{Fact, Provenance};

/// The facts shared by the configurations (in the order they first appear), and each
/// configuration with only its own facts (and its cells and warnings). A fact is
/// shared when at least two configurations record it, all of them with the same value,
/// and none disagrees within itself; with fewer than two configurations nothing is.
pub(super) fn split(all: &[Provenance]) -> (Vec<Fact>, Vec<Provenance>) {
    if all.len() < 2 {
        return (Vec::new(), all.to_vec());
    }
    // name -> (its value everywhere, or None once two differ; how many record it).
    let mut seen: BTreeMap<&str, (Option<&str>, usize)> = BTreeMap::new();
    let mut order: Vec<&Fact> = Vec::new();
    for p in all {
        for f in &p.facts {
            match seen.get_mut(f.name.as_str()) {
                None => {
                    let value = (!f.differs).then_some(f.value.as_str());
                    seen.insert(&f.name, (value, 1));
                    order.push(f);
                }
                Some((value, count)) => {
                    *count += 1;
                    if f.differs || *value != Some(f.value.as_str()) {
                        *value = None;
                    }
                }
            }
        }
    }
    let is_shared = |name: &str| matches!(seen.get(name), Some((Some(_), n)) if *n >= 2);
    let shared = order
        .into_iter()
        .filter(|f| is_shared(&f.name))
        .cloned()
        .collect();
    let own = all
        .iter()
        .map(|p| Provenance {
            config: p.config.clone(),
            facts: p
                .facts
                .iter()
                .filter(|f| !is_shared(&f.name))
                .cloned()
                .collect(),
            cells: p.cells.clone(),
            warnings: p.warnings.clone(),
        })
        .collect();
    (shared, own)
}
