//! How many cells a matrix can expand to, counted without expanding it (`--max-cells`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{blocks, glob};
use crate::model::{Board, BoardName, Recipe, Scenario, TestName};

/// How many cells a matrix can expand to at most, counted without expanding it: the
/// combinations of every block, before `exclude`, with storage globs resolved per
/// board. `axes` describes the sizes for a message.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub cells: u128,
    pub axes: String,
}

pub fn bound(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
) -> Bound {
    let all = blocks(boards, recipes, scenario);
    let mut cells: u128 = 0;
    for b in &all {
        let (with, without): (Vec<_>, Vec<_>) = b
            .tests
            .iter()
            .filter_map(|t| recipes.get(t))
            .partition(|r| r.uses_storage);
        // A cluster has one cell per (image, test): it has no storage or network axis.
        let clusters = b
            .boards
            .iter()
            .filter(|n| scenario.clusters.contains_key(*n))
            .count() as u128;
        cells = cells.saturating_add(
            clusters
                .saturating_mul(b.images.len() as u128)
                .saturating_mul(b.tests.len() as u128),
        );
        for board in b.boards.iter().filter_map(|n| boards.get(n)) {
            let storages: u128 = b
                .storages
                .iter()
                .map(|p| {
                    board
                        .storage
                        .iter()
                        .filter(|s| glob::matches(p, s.name.as_str()))
                        .count() as u128
                })
                .sum();
            let networks: u128 = b
                .networks
                .iter()
                .map(|p| {
                    board
                        .network
                        .iter()
                        .filter(|n| glob::matches(p, n.name.as_str()))
                        .count() as u128
                })
                .sum();
            let mut per_image: u128 = 0;
            for r in with.iter().chain(&without) {
                // A raw-device test has one cell per storage, whatever the filesystems.
                let on_storage = match (r.uses_storage, r.raw_device) {
                    (false, _) => 1,
                    (true, true) => storages,
                    (true, false) => storages.saturating_mul(b.filesystems.len() as u128),
                };
                let over = if r.uses_network && !b.networks.is_empty() {
                    networks
                } else {
                    1
                };
                per_image = per_image.saturating_add(on_storage.saturating_mul(over));
            }
            cells = cells.saturating_add((b.images.len() as u128).saturating_mul(per_image));
        }
    }
    let m = &all[0];
    let mut axes = format!(
        "image {} x board {} x storage {} x filesystem {} x test {}",
        m.images.len(),
        m.boards.len(),
        m.storages.len(),
        m.filesystems.len(),
        m.tests.len()
    );
    if !m.networks.is_empty() {
        let _ = write!(axes, " x network {}", m.networks.len());
    }
    if all.len() > 1 {
        let _ = write!(axes, ", plus {} include(s)", all.len() - 1);
    }
    Bound { cells, axes }
}
