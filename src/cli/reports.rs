//! `report` and the reports `apply` writes: the store read first, the scenario loaded
//! with the store's board names known, each plan given the stored cells of boards
//! without a file, every exporter's file written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config;
use crate::error::{Error, Result};
use crate::model::{BoardName, Workspace};
use crate::plan;
use crate::report;
use crate::store::{CellData, Store};

/// The boards the store holds cells of, with their storage names.
pub fn stored_names(data: &BTreeMap<plan::CellKey, CellData>) -> config::StoredNames {
    let mut names = config::StoredNames::default();
    for a in data
        .values()
        .filter_map(|d| d.record.as_ref())
        .map(|r| &r.address)
    {
        let storages = names.boards.entry(a.board.to_string()).or_default();
        if let Some(s) = &a.storage {
            storages.insert(s.to_string());
        }
    }
    names
}

/// `load`, for a report: names the store knows count as known.
pub(super) fn load_for_report(
    files: &[PathBuf],
    max_cells: u64,
    stored: &config::StoredNames,
) -> Result<Workspace> {
    let root = config::find_root(files);
    let ws = config::load_for_report(&root, files, max_cells, stored).map_err(Error::Config)?;
    for w in &ws.warnings {
        eprint!("{w}");
    }
    Ok(ws)
}

/// Renders and writes every scenario's reports; returns the files written.
pub fn write_reports(ws: &Workspace, store: &Store, out: &Path) -> Result<Vec<PathBuf>> {
    write_reports_of(ws, store, &store.all()?, out)
}

/// Every scenario's plan as a report sees it: with the stored cells of boards without a
/// file, their kernel facts and the plan skips apply recorded standing in for the board
/// file, so that the report needs only the scenario and the store.
pub fn report_plans<'w>(
    ws: &'w Workspace,
    store: &Store,
    data: &BTreeMap<plan::CellKey, CellData>,
) -> Result<Vec<(&'w crate::model::Scenario, plan::Plan)>> {
    let mut boards: Vec<BoardName> = ws.boards.keys().cloned().collect();
    boards.extend(
        data.values()
            .filter_map(|d| d.record.as_ref())
            .map(|r| r.address.board.clone()),
    );
    boards.sort();
    boards.dedup();
    let facts = store.all_board_facts(&boards)?;
    let recorded = store.all_plan_skips(boards.iter().filter(|b| !ws.boards.contains_key(*b)))?;
    Ok(super::plans(ws)
        .into_iter()
        .map(|(scenario, plan)| {
            let plan = plan::stored::for_report(
                &ws.boards,
                &ws.recipes,
                scenario,
                plan,
                data,
                &recorded,
                &facts,
            );
            (scenario, plan)
        })
        .collect())
}

/// `write_reports`, given the store's contents.
pub(super) fn write_reports_of(
    ws: &Workspace,
    store: &Store,
    data: &BTreeMap<plan::CellKey, CellData>,
    out: &Path,
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (scenario, plan) in report_plans(ws, store, data)? {
        let model = report::build(ws, scenario, &plan, data);
        let dir = out.join(&scenario.name);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        for exporter in report::exporters() {
            let bytes = exporter.render(&model)?;
            let path = dir.join(exporter.file_name());
            std::fs::write(&path, bytes).map_err(|e| Error::io(&path, e))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// Records, per board with a file, what each scenario's plan could not make a cell of
/// there, so that a report made after the board file is gone still lists it.
pub(super) fn record_plan_skips(ws: &Workspace, store: &Store) -> Result<()> {
    for (scenario, plan) in super::plans(ws) {
        let mut per_board: BTreeMap<&BoardName, Vec<plan::Skipped>> = scenario
            .matrix
            .board
            .iter()
            .filter(|b| ws.boards.contains_key(*b))
            .map(|b| (b, Vec::new()))
            .collect();
        for s in &plan.skipped {
            if let Some(v) = per_board.get_mut(&s.address.board) {
                v.push(s.clone());
            }
        }
        for (board, skipped) in per_board {
            store.record_plan_skips(board, &scenario.name, &skipped)?;
        }
    }
    Ok(())
}
