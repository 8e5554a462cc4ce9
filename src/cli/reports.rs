//! `report` and the reports `apply` writes: the store read first, the scenario loaded
//! with the store's board names known, each plan given the stored cells of boards
//! without a file, every exporter's file written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::known_plans;
use crate::config;
use crate::error::{Error, Result};
use crate::model::Workspace;
use crate::plan;
use crate::report;
use crate::store::{CellData, Store};

/// The boards the store holds cells of, with their storage names.
pub(super) fn stored_names(data: &BTreeMap<plan::CellKey, CellData>) -> config::StoredNames {
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

/// `write_reports`, given the store's contents. Each plan gets the stored cells of
/// boards without a file, so the report needs only the scenario and the store.
pub(super) fn write_reports_of(
    ws: &Workspace,
    store: &Store,
    data: &BTreeMap<plan::CellKey, CellData>,
    out: &Path,
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for (scenario, plan) in known_plans(ws, store)? {
        let records = data.values().filter_map(|d| d.record.as_ref());
        let plan = plan::stored::with_stored(&ws.boards, &ws.recipes, scenario, plan, records);
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
