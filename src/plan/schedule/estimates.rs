//! `Estimates`: how long a step will take, from the store's history: seconds per run
//! of a test (on a board, else anywhere), and a cluster's last deploy.

use std::collections::BTreeMap;

use crate::model::BoardName;
use crate::plan::{Cell, CellKey};
use crate::store::CellData;

/// Seconds per run from the store's history: per (test, board), else per test.
#[derive(Debug, Default)]
pub struct Estimates {
    per_run: BTreeMap<(String, String), (f64, usize)>,
    /// Each board's last verified image identity (`results/boards/<board>.json`).
    pub(super) board_images: BTreeMap<BoardName, String>,
    /// Each cluster's last deploy durations, per deploy step (`results/boards/
    /// <cluster>.deploy.json`).
    deploys: BTreeMap<BoardName, BTreeMap<usize, f64>>,
}

impl Estimates {
    pub fn from_store(data: &BTreeMap<CellKey, CellData>) -> Estimates {
        let mut e = Estimates::default();
        for d in data.values() {
            e.add(d);
        }
        e
    }

    /// Adds a cell's runs to the history.
    pub fn add(&mut self, d: &CellData) {
        let Some(rec) = &d.record else { return };
        for s in &d.samples {
            let secs = (s.ended - s.started).max(0.0);
            for k in [
                (rec.address.test.to_string(), rec.address.board.to_string()),
                (rec.address.test.to_string(), String::new()),
            ] {
                let e = self.per_run.entry(k).or_insert((0.0, 0));
                e.0 += secs;
                e.1 += 1;
            }
        }
    }

    /// Adds the image identity each board was last verified at.
    pub fn with_board_images(mut self, images: BTreeMap<BoardName, String>) -> Estimates {
        self.board_images = images;
        self
    }

    /// Mean seconds of one run of this cell's test, on its board if known there.
    pub fn per_run(&self, cell: &Cell) -> Option<f64> {
        let (test, board) = (
            cell.address.test.to_string(),
            cell.address.board.to_string(),
        );
        self.per_run
            .get(&(test.clone(), board))
            .or_else(|| self.per_run.get(&(test, String::new())))
            .map(|(sum, n)| sum / *n as f64)
    }
}

impl Estimates {
    /// Adds each cluster's last deploy durations.
    pub fn with_deploys(mut self, deploys: BTreeMap<BoardName, BTreeMap<usize, f64>>) -> Estimates {
        self.deploys = deploys;
        self
    }

    /// Seconds the cluster's deploy step `from` took when it last succeeded.
    pub fn deploy(&self, cluster: &BoardName, from: usize) -> Option<f64> {
        self.deploys.get(cluster)?.get(&from).copied()
    }
}
