//! What a scenario's plan could not make a cell of on a board (a storage pattern it has
//! nothing for, a boot storage to format), and why, in
//! `results/boards/<board>.skipped.json`, per scenario. Apply writes it from the board
//! file; a report reads it once the board file is gone, so a retired board's report
//! still lists them (`plan::stored::add_skips`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Store;
use super::files::{read_json, sync_dir, to_json_bytes, write_atomic};
use crate::cell::Skipped;
use crate::error::Result;
use crate::model::BoardName;

/// The most entries kept per scenario: a plan's skipped combinations are bounded by its
/// cell limit, but a file in the store is read by every report.
const MAX_PER_SCENARIO: usize = 10_000;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanSkips {
    pub format: u32,
    pub board: String,
    /// Scenario name -> the plan's skipped combinations on this board, as last applied.
    #[serde(default)]
    pub scenarios: BTreeMap<String, Vec<Skipped>>,
}

impl Store {
    fn plan_skips_path(&self, board: &BoardName) -> std::path::PathBuf {
        self.root
            .join("boards")
            .join(format!("{board}.skipped.json"))
    }

    /// The board's recorded plan skips; `None` when no apply recorded any.
    pub fn plan_skips(&self, board: &BoardName) -> Result<Option<PlanSkips>> {
        read_json(&self.plan_skips_path(board))
    }

    /// Records, for one scenario, what its plan could not make a cell of on `board`
    /// (replacing what an earlier apply of that scenario recorded). Nothing is written
    /// when nothing changes, so a plan without skips leaves no file.
    pub fn record_plan_skips(
        &self,
        board: &BoardName,
        scenario: &str,
        skipped: &[Skipped],
    ) -> Result<()> {
        let old = self.plan_skips(board)?;
        let mut doc = old.clone().unwrap_or_else(|| PlanSkips {
            format: super::FORMAT,
            board: board.to_string(),
            scenarios: BTreeMap::new(),
        });
        let entries: Vec<Skipped> = skipped.iter().take(MAX_PER_SCENARIO).cloned().collect();
        if entries.is_empty() {
            doc.scenarios.remove(scenario);
        } else {
            doc.scenarios.insert(scenario.to_string(), entries);
        }
        if old.as_ref() == Some(&doc) || (old.is_none() && doc.scenarios.is_empty()) {
            return Ok(());
        }
        let dir = self.root.join("boards");
        std::fs::create_dir_all(&dir).map_err(|e| crate::error::Error::io(&dir, e))?;
        write_atomic(&self.plan_skips_path(board), &to_json_bytes(&doc)?)?;
        sync_dir(&dir)
    }

    /// The recorded plan skips of each of `boards` that has some.
    pub fn all_plan_skips<'b>(
        &self,
        boards: impl IntoIterator<Item = &'b BoardName>,
    ) -> Result<BTreeMap<BoardName, PlanSkips>> {
        let mut out = BTreeMap::new();
        for b in boards {
            if let Some(s) = self.plan_skips(b)? {
                out.insert(b.clone(), s);
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Address;

    fn skip(storage: &str) -> Skipped {
        Skipped {
            address: Address {
                image: "installed".into(),
                board: "pi-1".into(),
                storage: Some(storage.into()),
                filesystem: None,
                network: None,
                test: "disk-4k".into(),
            },
            reason: format!("board pi-1 has no storage matching `{storage}`"),
        }
    }

    #[test]
    fn plan_skips_are_kept_per_scenario_and_replaced_by_the_next_apply() {
        let dir = std::env::temp_dir().join(format!("bp-plan-skips-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let b = BoardName::new("pi-1");
        store.record_plan_skips(&b, "a", &[]).unwrap();
        assert_eq!(
            store.plan_skips(&b).unwrap(),
            None,
            "nothing to keep, no file"
        );
        store.record_plan_skips(&b, "a", &[skip("usb*")]).unwrap();
        store.record_plan_skips(&b, "b", &[skip("nvme")]).unwrap();
        store.record_plan_skips(&b, "a", &[skip("sd*")]).unwrap();
        let doc = store.plan_skips(&b).unwrap().unwrap();
        assert_eq!(doc.scenarios["a"], [skip("sd*")]);
        assert_eq!(doc.scenarios["b"], [skip("nvme")]);
        store.record_plan_skips(&b, "b", &[]).unwrap();
        let doc = store.plan_skips(&b).unwrap().unwrap();
        assert_eq!(doc.scenarios.keys().collect::<Vec<_>>(), ["a"]);
        assert!(store.all().unwrap().is_empty(), "not cells");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
