//! A workspace loaded and checked whole: config's validation, then what only each
//! scenario's expanded plan shows (its cell count against `--max-cells`, `planned.rs`:
//! a matrix with nothing to measure, a comparison that pairs no cells; `fits.rs`: arch
//! and memory), at the scenario's file:line:col. It sits above config, plan and the
//! report's pairing, so that config needs neither; `check`, `plan`, `apply` and
//! `report` load through it.

use std::path::{Path, PathBuf};

use toml::Spanned;

use crate::config::{Known, PlanChecks, ScenarioFile, Source, StoredNames, raw};
use crate::diag::{Diagnostic, Diagnostics};
use crate::model::{Scenario, Workspace};
use crate::plan;

mod fits;
mod planned;

/// Loads the scenarios in `files`, with every board in `root/boards/` and every recipe,
/// built in or in `root/pipeline/`, and checks them together.
pub fn load(root: &Path, files: &[PathBuf]) -> Result<Workspace, Diagnostics> {
    load_limited(root, files, plan::DEFAULT_MAX_CELLS)
}

/// `load`, refusing a scenario whose matrix could expand to more than `max_cells`.
pub fn load_limited(
    root: &Path,
    files: &[PathBuf],
    max_cells: u64,
) -> Result<Workspace, Diagnostics> {
    crate::config::load_with(root, files, &StoredNames::default(), &Planned { max_cells })
}

/// `load_limited` for a report: the store's boards count as known where the scenario
/// names boards and storage.
pub fn load_for_report(
    root: &Path,
    files: &[PathBuf],
    max_cells: u64,
    stored: &StoredNames,
) -> Result<Workspace, Diagnostics> {
    crate::config::load_with(root, files, stored, &Planned { max_cells })
}

/// `load_limited` over files given as text, not read from disk (`config::texts`): the
/// fuzz targets' way in (`crate::fuzzing`).
pub(crate) fn load_texts(
    texts: crate::config::texts::Texts<'_>,
    max_cells: u64,
) -> Result<Workspace, Diagnostics> {
    crate::config::texts::load(texts, &Planned { max_cells })
}

/// The checks of a scenario's expanded plan.
struct Planned {
    /// The most cells a matrix may expand to (`--max-cells`).
    max_cells: u64,
}

impl PlanChecks for Planned {
    fn check(
        &self,
        file: &ScenarioFile<'_>,
        scenario: &Scenario,
        diags: &mut Vec<Diagnostic>,
    ) -> bool {
        let (src, known) = (file.src, file.known);
        if cell_count(src, file.matrix, self.max_cells, scenario, known, diags).is_none() {
            return false;
        }
        let plan = plan::expand_in(known.boards, known.recipes, scenario);
        // A broken board file selected has its own errors, and its cells are missing
        // from the plan: a comparison or the matrix would only echo them.
        let plan_is_partial = file.selected_broken || planned::store_has_more(scenario, known);
        if !plan_is_partial && planned::nothing_to_measure(src, file.matrix, &plan, diags).is_none()
        {
            return false;
        }
        let before = diags.len();
        let parts = fits::Raw {
            images: file.images,
            params: file.params,
            matrix: file.matrix,
        };
        fits::check(src, parts, &plan, known, diags);
        if let Some(r) = file.report.filter(|_| !plan_is_partial) {
            planned::compares(src, &r.compare, scenario, &plan, diags);
        }
        diags.len() == before
    }
}

/// Counts the cells before anything expands them, and refuses a matrix over the limit
/// or one whose excludes leave nothing.
fn cell_count(
    src: &Source,
    raw: &Spanned<raw::Matrix>,
    max_cells: u64,
    scenario: &Scenario,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> Option<()> {
    let bound = plan::bound(known.boards, known.recipes, scenario);
    if bound.cells > u128::from(max_cells) {
        diags.push(
            src.at_value(
                raw,
                format!(
                    "the matrix has up to {} cells ({}), more than the limit of {}",
                    bound.cells, bound.axes, max_cells
                ),
            )
            .with_help(
                "split the study into smaller scenarios, or raise the limit with `--max-cells N`",
            ),
        );
        return None;
    }
    let m = raw.get_ref();
    if bound.cells > 0 && !m.exclude.is_empty() {
        let plan = plan::expand_in(known.boards, known.recipes, scenario);
        if plan.cells.is_empty() {
            let others = match plan.skipped.len() {
                0 => String::new(),
                n => format!(" ({n} other combination(s) cannot apply, see `benchpipe plan`)"),
            };
            diags.push(
                src.at_value(
                    &m.exclude[0],
                    format!(
                        "the excludes leave no cell: of up to {} combinations of the matrix, none is left to measure{others}",
                        bound.cells
                    ),
                )
                .with_help("a scenario with nothing to measure is a mistake: narrow the exclude patterns"),
            );
            return None;
        }
    }
    Some(())
}
