//! `report` and the reports `apply` writes: the store read first, the scenario loaded
//! with the store's board names known, each plan given the stored cells of boards
//! without a file, every exporter's file written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::check;
use crate::config;
use crate::error::{Error, Result};
use crate::model::{BoardName, Workspace};
use crate::plan;
use crate::report;
use crate::store::{CellData, Store};

/// The boards the store holds cells of, with their storage names, and the members of
/// the clusters it holds cells of (so that a scenario's cluster of boards whose files are
/// gone still loads for its report).
pub fn stored_names(data: &BTreeMap<plan::CellKey, CellData>) -> config::StoredNames {
    /// A cluster cell's inputs: its members' names.
    #[derive(serde::Deserialize)]
    struct Cluster {
        cluster: Option<Members>,
    }
    #[derive(serde::Deserialize)]
    struct Members {
        members: Vec<Named>,
    }
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    let mut names = config::StoredNames::default();
    for record in data.values().filter_map(|d| d.record.as_ref()) {
        let a = &record.address;
        let storages = names.boards.entry(a.board.to_string()).or_default();
        if let Some(s) = &a.storage {
            storages.insert(s.to_string());
        }
        // Only a cluster's inputs name members: the others' text is not parsed.
        if record
            .inputs
            .text()
            .is_none_or(|t| t.contains("\"members\""))
        {
            let members = record.inputs.pick::<Cluster>().and_then(|c| c.cluster);
            for m in members.into_iter().flat_map(|c| c.members) {
                names.boards.entry(m.name).or_default();
            }
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
    let ws = check::load_for_report(&root, files, max_cells, stored).map_err(Error::Config)?;
    for w in &ws.warnings {
        eprint!("{w}");
    }
    Ok(ws)
}

/// The report templates: the embedded ones, each replaced by the workspace's own file
/// in `reports/templates/` when there is one. The directory is looked up under the
/// workspace root, never the working directory, so a report stays a function of the
/// workspace and the store. A file that is too large, not UTF-8 or does not parse is a
/// diagnostic at it (exit 2).
pub(super) fn templates(root: &Path) -> Result<report::Templates> {
    use std::io::Read;
    let mut templates = report::Templates::embedded();
    for name in report::TEMPLATE_NAMES {
        let path = root.join(report::TEMPLATE_DIR).join(name);
        let meta = match std::fs::metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io(&path, e)),
        };
        // A FIFO or device there would block the open or never end.
        if !meta.is_file() {
            return Err(Error::Config(crate::diag::Diagnostics(vec![
                crate::diag::Diagnostic::whole_file(
                    &path,
                    "a report template must be a regular file",
                ),
            ])));
        }
        let file = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        // One byte past the limit is enough to refuse it.
        let mut bytes = Vec::new();
        file.take(report::TEMPLATE_MAX_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(&path, e))?;
        let Ok(source) = String::from_utf8(bytes) else {
            return Err(Error::Config(crate::diag::Diagnostics(vec![
                crate::diag::Diagnostic::whole_file(&path, "a report template must be UTF-8 text"),
            ])));
        };
        templates = templates.with_override(name, path, source)?;
    }
    Ok(templates)
}

/// `check` and `apply`, before anything runs: the workspace's override templates parse,
/// and render every scenario's report as it is before any measurement (so a name the
/// context lacks is found now, not after an apply).
pub(super) fn check_templates(ws: &Workspace) -> Result<()> {
    let templates = templates(&ws.root)?;
    let overrides: Vec<&report::Template> = [&templates.markdown, &templates.html]
        .into_iter()
        .filter(|t| t.file.is_some())
        .collect();
    if overrides.is_empty() {
        return Ok(());
    }
    let empty = BTreeMap::new();
    for (scenario, plan) in super::plans(ws) {
        let model = report::build(ws, scenario, &plan, &empty);
        for t in &overrides {
            report::Exporter::render(*t, &model)?;
        }
    }
    Ok(())
}

/// Renders and writes every scenario's reports; returns the files written.
pub fn write_reports(ws: &Workspace, store: &Store, out: &Path) -> Result<Vec<PathBuf>> {
    // The plans need nothing from the store: they are expanded while it is read.
    let (data, plans) = crate::parallel::both(|| store.all_for_report(), || super::plans(ws));
    let data = data?;
    let written = write_reports_with(ws, store, &data, plans, out);
    crate::parallel::free_later(data);
    written
}

/// Every scenario's plan as a report sees it: with the stored cells of boards without a
/// file, their kernel facts and the plan skips apply recorded standing in for the board
/// file, so that the report needs only the scenario and the store.
pub fn report_plans<'w>(
    ws: &'w Workspace,
    store: &Store,
    data: &BTreeMap<plan::CellKey, CellData>,
) -> Result<Vec<(&'w crate::model::Scenario, plan::Plan)>> {
    reported_plans(ws, store, data, super::plans(ws))
}

/// `report_plans`, given each scenario's expanded plan (`cli::plans`).
fn reported_plans<'w>(
    ws: &'w Workspace,
    store: &Store,
    data: &BTreeMap<plan::CellKey, CellData>,
    plans: Vec<(&'w crate::model::Scenario, plan::Plan)>,
) -> Result<Vec<(&'w crate::model::Scenario, plan::Plan)>> {
    // The boards' stored facts and plan skips, and each plan with the stored cells of
    // boards without a file: two walks over the store's records, side by side.
    let (read, plans) = crate::parallel::both(
        || -> Result<_> {
            let mut boards: Vec<BoardName> = ws.boards.keys().cloned().collect();
            boards.extend(
                data.values()
                    .filter_map(|d| d.record.as_ref())
                    .map(|r| r.address.board.clone()),
            );
            boards.sort();
            boards.dedup();
            let facts = store.all_board_facts(&boards)?;
            let recorded =
                store.all_plan_skips(boards.iter().filter(|b| !ws.boards.contains_key(*b)))?;
            Ok((facts, recorded))
        },
        || {
            plans
                .into_iter()
                .map(|(scenario, plan)| {
                    let plan =
                        plan::stored::with_stored(&ws.boards, &ws.recipes, scenario, plan, data);
                    (scenario, plan)
                })
                .collect::<Vec<_>>()
        },
    );
    let (facts, recorded) = read?;
    Ok(plans
        .into_iter()
        .map(|(scenario, mut plan)| {
            plan::stored::for_report_given_stored(
                &ws.boards,
                &ws.recipes,
                scenario,
                &mut plan,
                &recorded,
                &facts,
            );
            (scenario, plan)
        })
        .collect())
}

/// Writes one exporter's file into `dir` as it renders, through a temporary file put in
/// its place at the end: a report that fails to render leaves the last one whole.
fn write_file(
    exporter: &(dyn report::Exporter + Send + Sync + '_),
    model: &report::Report,
    dir: &Path,
) -> Result<PathBuf> {
    use std::io::Write;
    let path = dir.join(exporter.file_name());
    crate::owned::replace_with(&path, 0o666, |file: &mut std::fs::File| {
        let io = |e| Error::io(&path, e);
        let mut out = std::io::BufWriter::with_capacity(1 << 18, file);
        match exporter.write_to(model, &mut out) {
            Ok(()) => out.flush().map_err(io),
            Err(report::ExportError::Write(e)) => Err(io(e)),
            Err(e) => Err(e.into()),
        }
    })?;
    Ok(path)
}

/// `write_reports`, given the store's contents.
pub(super) fn write_reports_of(
    ws: &Workspace,
    store: &Store,
    data: &BTreeMap<plan::CellKey, CellData>,
    out: &Path,
) -> Result<Vec<PathBuf>> {
    write_reports_with(ws, store, data, super::plans(ws), out)
}

/// `write_reports`, given the store's contents and each scenario's expanded plan.
fn write_reports_with(
    ws: &Workspace,
    store: &Store,
    data: &BTreeMap<plan::CellKey, CellData>,
    plans: Vec<(&crate::model::Scenario, plan::Plan)>,
    out: &Path,
) -> Result<Vec<PathBuf>> {
    let templates = templates(&ws.root)?;
    let template_dir = ws.root.join(report::TEMPLATE_DIR);
    // The applies the samples belong to: a report's History section orders runs by them.
    let runs = store.runs()?;
    let mut written = Vec::new();
    for (scenario, plan) in reported_plans(ws, store, data, plans)? {
        let (mut model, leftovers) = report::build_leaving(ws, scenario, &plan, data);
        model.history = report::history_section(ws, scenario, &plan, data, &runs);
        let dir = out.join(&scenario.name);
        // A scenario called `templates` reported into the workspace's `reports/` would
        // write its pages where the override templates are read from.
        if std::path::absolute(&dir).ok() == std::path::absolute(&template_dir).ok() {
            return Err(Error::Usage(format!(
                "the report of scenario `{}` would be written to {}, where report templates are read from; report it with another --out",
                scenario.name,
                template_dir.display()
            )));
        }
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        // The exporters render and write their files as jobs on every core, the
        // longest (the HTML page) first: on two cores a big report's four files take
        // about half the time. The first failure in exporter order is the one
        // reported, as when they ran in turn.
        let context = report::SharedContext::default();
        let exporters = templates.exporters_for(&model, &context);
        let slots: Vec<crate::parallel::Slot<Result<PathBuf>>> = exporters
            .iter()
            .map(|_| crate::parallel::Slot::default())
            .collect();
        let mut jobs: Vec<(u32, Box<dyn FnOnce() + Send + '_>)> = exporters
            .iter()
            .zip(&slots)
            .map(|(exporter, slot)| {
                let (model, dir) = (&model, &dir);
                let job: Box<dyn FnOnce() + Send + '_> =
                    Box::new(move || slot.set(write_file(&**exporter, model, dir)));
                (exporter.weight(), job)
            })
            .collect();
        // The model's views are freed as the last job, beside the exporters' last,
        // rather than before the first.
        jobs.push((0, Box::new(move || drop(leftovers))));
        jobs.sort_by_key(|(weight, _)| std::cmp::Reverse(*weight));
        crate::parallel::jobs(jobs.into_iter().map(|(_, job)| job).collect());
        let files: Vec<Result<PathBuf>> = slots
            .into_iter()
            .map(|s| {
                s.take()
                    .expect("every exporter ran, or its panic was passed on")
            })
            .collect();
        drop(exporters);
        crate::parallel::free_later((model, plan, context));
        for file in files {
            written.push(file?);
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
