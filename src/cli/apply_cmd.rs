//! `benchpipe apply`: its arguments, the checks before anything runs (a saved plan still
//! current, the question before a disk is overwritten), the walk, and its summary.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use super::signals::Walk;
use super::{CellsArg, SelectArg, StoreArg, confirm, known_plans, load, plan_view, reports};
use crate::apply;
use crate::error::{Error, Result};
use crate::store::Store;

#[derive(clap::Args, Debug)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "command-line switches, each one the user gives or not"
)]
pub struct ApplyArgs {
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    store: StoreArg,
    /// Print only failures and the summary.
    #[arg(long, short)]
    quiet: bool,
    /// Where reports go after the run.
    #[arg(long, default_value = "reports", value_name = "DIR")]
    out: PathBuf,
    /// Do not render reports after the run.
    #[arg(long)]
    no_report: bool,
    /// Print the steps apply would walk, per board, and run nothing: no board is
    /// changed and the store is only read. Under each step that would overwrite a
    /// device: the model, serial and size its board reports (`lsblk`, a short
    /// connect timeout), or that the board cannot be reached.
    #[arg(long)]
    dry_run: bool,
    /// Format and flash without asking: the first time apply would overwrite a disk
    /// of a board the store holds no state of, it lists those steps and asks for
    /// "yes" on a terminal, and refuses without one (scripts, timers: pass --yes).
    #[arg(long, conflicts_with = "dry_run")]
    yes: bool,
    /// Apply the plan saved in FILE by `plan --json` (with the same files, --only,
    /// --redo and --on-drift), and only while it is still what would run: a plan the
    /// files or the store have changed since is refused with what changed, before
    /// anything runs (exit 2). Checked again under the store's lock, held to the end.
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,
    /// Start no cell that cannot end by TIME (RFC 3339 with its offset, like
    /// 2026-12-08T06:00:00Z, or @UNIX-SECONDS), by the estimates of its steps: the
    /// store's history of runs on the board, and fixed cool-downs. A cell already
    /// begun runs on; cells left stay for the next apply, and the summary lists them.
    #[arg(long, value_name = "TIME", conflicts_with = "dry_run")]
    deadline: Option<String>,
    /// Like --deadline, D after apply starts (90m, 6h, 1h30m).
    #[arg(long, value_name = "D", conflicts_with = "dry_run")]
    max_duration: Option<String>,
    #[command(flatten)]
    select: SelectArg,
    #[command(flatten)]
    cells: CellsArg,
}

pub(super) fn run(args: ApplyArgs) -> Result<()> {
    let ApplyArgs {
        files,
        store,
        quiet,
        out,
        no_report,
        dry_run,
        yes,
        plan,
        deadline,
        max_duration,
        select,
        cells,
    } = args;
    let select = select.parse()?;
    let deadline = deadline_of(deadline.as_deref(), max_duration.as_deref())?;
    let ws = load(&files, cells.max_cells)?;
    let saved = |store: &Store| match &plan {
        Some(path) => super::saved_plan::check(&ws, store, &select, path),
        None => Ok(()),
    };
    if dry_run {
        let store = Store::open_read(&store.store)?;
        saved(&store)?;
        let probe = crate::transport::RealConnector;
        print!(
            "{}",
            plan_view::dry_run_text(&ws, &store, &select, Some(&probe))?
        );
        return Ok(());
    }
    if !no_report {
        // A broken override template fails now, before anything is measured.
        reports::check_templates(&ws)?;
    }
    {
        // Asked before the store is made or marked: a "no" leaves nothing done. A stale
        // plan is refused before the question.
        let read = Store::open_read(&store.store)?;
        saved(&read)?;
        let schedule = plan_view::schedule_now(&ws, &read, &select)?;
        confirm::ask(&confirm::unclaimed(&schedule, &read)?, yes)?;
    }
    let store = Store::open(&store.store)?;
    // Held from the saved plan's check to the walk's end (apply takes it again, shared):
    // no other apply changes the store between.
    let _lock = store.lock()?;
    saved(&store)?;
    let mut cells: Vec<_> = known_plans(&ws, &store)?
        .into_iter()
        .flat_map(|(_, p)| p.cells)
        .collect();
    select.deal(&ws, &cells);
    cells.retain(|c| select.runs(c));
    if !select.redo.is_empty() {
        let session = format!("{:.0}-{}", crate::store::now(), std::process::id());
        for cell in cells.iter().filter(|c| select.redoes(c)) {
            store.mark_redo(cell, &session)?;
        }
    }
    let stop = Arc::new(AtomicBool::new(false));
    let progress = crate::progress::for_terminal(quiet);
    let outcome = {
        let _walk = Walk::begin(&stop);
        let options = apply::Options {
            on_drift: select.on_drift,
            deadline,
        };
        let connector = crate::transport::RealConnector;
        apply::apply_with_options(
            &ws,
            &cells,
            &store,
            progress.as_ref(),
            &stop,
            &connector,
            &options,
        )
    }?;
    drop(progress);
    let skipped = match outcome.skipped.len() {
        0 => String::new(),
        n => format!(", {n} skipped (cannot apply on the board)"),
    };
    eprintln!(
        "apply: {} cell(s) completed, {} already complete, {} failed{skipped}",
        outcome.completed,
        outcome.already_complete,
        outcome.failed.len()
    );
    for (a, cause) in &outcome.failed {
        eprintln!("  failed: {}: {cause}", a.label());
    }
    for (a, reason) in &outcome.skipped {
        eprintln!("  skipped: {}: {reason}", a.label());
    }
    for (a, reason) in &outcome.left {
        eprintln!("  left: {}: {reason}", a.label());
    }
    if !outcome.left.is_empty() {
        eprintln!(
            "apply: {} cell(s) left for lack of time; the next apply runs them",
            outcome.left.len()
        );
    }
    for (board, cause, cells) in &outcome.unreachable {
        eprintln!("  board {board} unreachable: {cause}; {cells} cell(s) not run");
    }
    reports::record_plan_skips(&ws, &store)?;
    if !no_report && !outcome.interrupted {
        for path in reports::write_reports(&ws, &store, &out)? {
            eprintln!("report: {}", path.display());
        }
    }
    if outcome.interrupted {
        return Err(Error::Interrupted);
    }
    if !outcome.failed.is_empty() {
        return Err(Error::CellsFailed {
            failed: outcome.failed.len(),
            total: outcome.completed + outcome.already_complete + outcome.failed.len(),
        });
    }
    if !outcome.unreachable.is_empty() {
        return Err(Error::BoardsUnreachable {
            boards: outcome.unreachable.len(),
            cells: outcome.unreachable.iter().map(|u| u.2).sum(),
        });
    }
    Ok(())
}

/// The earlier of `--deadline` and now plus `--max-duration`, as Unix seconds.
fn deadline_of(at: Option<&str>, within: Option<&str>) -> Result<Option<f64>> {
    let at = at
        .map(crate::config::units::parse_instant)
        .transpose()
        .map_err(|e| Error::Usage(format!("--deadline: {e}")))?;
    let within = within
        .map(crate::config::units::parse_duration)
        .transpose()
        .map_err(|e| Error::Usage(format!("--max-duration: {e}")))?
        .map(|d| crate::store::now() + d.as_secs_f64());
    Ok(match (at, within) {
        (Some(a), Some(w)) => Some(a.min(w)),
        (a, w) => a.or(w),
    })
}
