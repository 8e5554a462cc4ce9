//! What `plan` and `apply --dry-run` print: every cell with its state and why it runs,
//! and the schedule apply would walk, from the files and the store only.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{Selection, known_plans};
use crate::error::{Error, Result};
use crate::model::{BoardName, Scenario, Workspace};
use crate::plan::schedule::{self, Estimates, Schedule};
use crate::plan::state::{self, CellState};
use crate::plan::{self, Cell, Plan};
use crate::shown::shown;
use crate::store::OnDrift;
use crate::store::{CellData, Store};

/// The version of `plan --json`'s document (docs/FORMAT.md): 2 added `schedule`.
pub const PLAN_JSON_FORMAT: u32 = 2;

struct Row<'p> {
    scenario: String,
    cell: &'p Cell,
    state: CellState,
    why: Option<plan::diff::Why>,
    /// What changed on the board since the cell's runs (its last-seen fingerprint).
    drift: Option<Vec<plan::diff::Change>>,
    selected: bool,
}

#[derive(Default)]
struct Counts {
    complete: usize,
    partial: usize,
    missing: usize,
    failed: usize,
    /// Cells the last apply found could not apply on their board (`skip.json`).
    skipped: usize,
    not_selected: usize,
    runs_left: usize,
}

/// The plan as data: rows per cell, counts and the schedule.
struct View<'p> {
    rows: Vec<Row<'p>>,
    counts: Counts,
    schedule: Schedule,
}

fn view<'p>(
    ws: &Workspace,
    all_plans: &'p [(&Scenario, Plan)],
    store: &Store,
    select: &Selection,
) -> Result<View<'p>> {
    select.deal(ws, all_plans.iter().flat_map(|(_, p)| &p.cells));
    let data = store.all()?;
    let nearest = plan::diff::Nearest::new(data.values().filter_map(|d| d.record.as_ref()));
    let empty = CellData::default();
    let boards_seen = store.board_fingerprints(ws.boards.keys())?;
    let mut rows = Vec::new();
    let mut counts = Counts::default();
    let mut work = Vec::new();
    let mut seen = BTreeSet::new();
    for (scenario, plan) in all_plans {
        for cell in &plan.cells {
            let recipe = &ws.recipes[&cell.address.test];
            let primary = recipe.primary_metrics();
            let stored = data.get(&cell.key).unwrap_or(&empty);
            let drift = plan::drift::cell_drift(stored, boards_seen.get(&cell.address.board));
            let redone;
            let redo_drift = drift.is_some() && select.on_drift == OnDrift::Redo;
            let d = if select.redoes(cell) || (redo_drift && select.runs(cell)) {
                redone = stored.redone("plan");
                &redone
            } else {
                stored
            };
            let st = state::state(cell, &primary, d);
            if !select.runs(cell) {
                counts.not_selected += 1;
                rows.push(Row {
                    scenario: scenario.name.clone(),
                    cell,
                    state: st,
                    why: None,
                    drift,
                    selected: false,
                });
                continue;
            }
            // Why it must run: a redo, else (when nothing of it is stored) its nearest
            // stored neighbour's differences. Partial and failed cells speak for themselves.
            let why = if st.is_complete() {
                None
            } else if d.superseded() > 0 {
                // Asked now (`--redo`) or recorded by an earlier `apply --redo`; a cell
                // with nothing stored has nothing to redo and is explained below.
                Some(plan::diff::Why::Redo)
            } else if matches!(st, CellState::Missing { .. }) {
                Some(nearest.why(cell))
            } else {
                None
            };
            match &st {
                CellState::Complete { .. } => counts.complete += 1,
                CellState::Partial { .. } => counts.partial += 1,
                CellState::Missing { .. } => counts.missing += 1,
                CellState::Failed { .. } => counts.failed += 1,
                CellState::Skipped { .. } => counts.skipped += 1,
            }
            counts.runs_left += st.remaining();
            // The same cell from two scenarios runs once.
            if !st.is_complete() && seen.insert(cell.key.clone()) {
                work.push(schedule::Work {
                    cell,
                    recipe,
                    runs_left: st.remaining(),
                });
            }
            rows.push(Row {
                scenario: scenario.name.clone(),
                cell,
                state: st,
                why,
                drift,
                selected: true,
            });
        }
    }
    let walks: BTreeSet<BoardName> = work.iter().map(|w| w.cell.address.board.clone()).collect();
    let history = Estimates::from_store(&data)
        .with_board_images(store.board_images(ws.boards.keys())?)
        .with_deploys(store.deploy_times_of(&walks)?);
    let mut schedule = schedule::build(ws, &work, &history);
    // While an apply holds the store, its walks are not dead: nothing to tidy yet.
    if store.lock_holder().is_none() {
        let given: BTreeSet<BoardName> = all_plans
            .iter()
            .flat_map(|(_, p)| &p.cells)
            .filter(|c| select.runs(c))
            .map(|c| c.address.board.clone())
            .collect();
        schedule::tidy::add(&mut schedule, ws, &given, &store.walk_statuses()?);
    }
    Ok(View {
        rows,
        counts,
        schedule,
    })
}

fn fmt_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// The boards walked only to take back what a killed apply left on them.
fn tidy_lines(v: &View<'_>) -> String {
    let mut out = String::new();
    for b in v.schedule.boards.iter().filter(|b| b.is_tidy()) {
        let _ = writeln!(
            out,
            "Tidy {}: its last walk ended with its apply killed; apply connects and stops the leftover services, tmpfs and scratch mounts",
            b.board
        );
    }
    out
}

/// The summary line both `plan` and `apply --dry-run` end with.
fn summary(v: &View<'_>) -> String {
    let c = &v.counts;
    let eta = if c.runs_left == 0 {
        "nothing to run".to_string()
    } else {
        match v.schedule.estimate_seconds() {
            Some(e) => format!("estimated {}", fmt_duration(e)),
            None => "no estimate yet (no run history in the store for some tests)".to_string(),
        }
    };
    let only = if c.not_selected > 0 {
        format!(", {} skipped by --only", c.not_selected)
    } else {
        String::new()
    };
    let steps: usize = v.schedule.boards.iter().map(|b| b.steps.len()).sum();
    let skipped = if c.skipped > 0 {
        format!(", {} skipped on the board", c.skipped)
    } else {
        String::new()
    };
    format!(
        "Plan: {} cell(s): {} complete, {} partial, {} missing, {} failed{skipped}{only}; {} measured run(s) to take in {steps} step(s) on {} board(s); {eta}.\n",
        v.rows.len(),
        c.complete,
        c.partial,
        c.missing,
        c.failed,
        c.runs_left,
        v.schedule.boards.len(),
    )
}

/// The text (or JSON) of `benchpipe plan`.
pub fn plan_text(ws: &Workspace, store: &Store, json: bool, select: &Selection) -> Result<String> {
    let all_plans = known_plans(ws, store)?;
    let v = view(ws, &all_plans, store, select)?;
    if json {
        return plan_json(ws, &all_plans, &v, select.on_drift);
    }
    let mut table = String::new();
    for row in &v.rows {
        let cell = row.cell;
        if !row.selected {
            let _ = writeln!(
                table,
                "  {}  {:<22}  {}",
                cell.key,
                "skipped by --only",
                cell.address.label()
            );
            continue;
        }
        let state = match &row.state {
            CellState::Complete { have, .. } => format!("complete ({have} runs)"),
            CellState::Partial { have, want } => format!("partial ({have} of {want})"),
            CellState::Missing { want } => format!("missing ({want} runs)"),
            CellState::Failed { have, want, .. } => format!("failed ({have} of {want})"),
            CellState::Skipped { have, want, .. } => format!("skipped ({have} of {want})"),
        };
        let _ = writeln!(
            table,
            "  {}  {:<22}  {}",
            cell.key,
            state,
            cell.address.label()
        );
        // What the store says of a cell is shown on one line, its controls escaped: the
        // store may be someone else's.
        if let CellState::Failed { cause, .. } = &row.state {
            let cause = shown(&cause.to_string()).into_owned();
            let _ = writeln!(table, "  {:<32}  last failure: {cause}", "");
        }
        if let CellState::Skipped { reason, .. } = &row.state {
            let _ = writeln!(
                table,
                "  {:<32}  skipped by the last apply: {} (apply checks again)",
                "",
                shown(reason)
            );
        }
        why_lines(&mut table, row.why.as_ref());
        if let Some(changes) = &row.drift {
            drift_line(
                &mut table,
                changes,
                select.on_drift,
                row.state.is_complete(),
            );
        }
    }
    table.push_str(&not_applicable(&all_plans, usize::MAX, &keyed_skip()));
    table.push_str(&recipe_lines(ws, &v));
    table.push_str(&tidy_lines(&v));
    table.push_str(&summary(&v));
    Ok(table)
}

/// The recipes the plan's cells use, in name order.
fn recipes_used<'w>(ws: &'w Workspace, v: &View<'_>) -> Vec<&'w crate::model::Recipe> {
    let tests: BTreeSet<&crate::model::TestName> =
        v.rows.iter().map(|r| &r.cell.address.test).collect();
    tests
        .into_iter()
        .filter_map(|t| ws.recipes.get(t))
        .collect()
}

/// Which recipe each test uses, built in or the workspace's file, with its text's
/// sha256 (the one a measured cell's facts record): a line each.
fn recipe_lines(ws: &Workspace, v: &View<'_>) -> String {
    let mut out = String::new();
    for r in recipes_used(ws, v) {
        let sha = &r.source.sha256;
        let _ = writeln!(
            out,
            "Recipe {}: {}, sha256 {}",
            r.name,
            r.source.describe(&r.file),
            &sha[..sha.len().min(12)]
        );
    }
    out
}

/// The combinations the matrix names that cannot apply, a line each (after `prefix`)
/// with the plan's reason, at most `most` of them (then how many more): `plan` and
/// `apply --dry-run` show them all, `check` a few.
pub fn not_applicable(all_plans: &[(&Scenario, Plan)], most: usize, prefix: &str) -> String {
    let skipped: Vec<&plan::Skipped> = all_plans.iter().flat_map(|(_, p)| &p.skipped).collect();
    let mut out = String::new();
    for s in skipped.iter().take(most) {
        let _ = writeln!(out, "{prefix}{} [{}]", s.address.label(), shown(&s.reason));
    }
    if skipped.len() > most {
        let _ = writeln!(
            out,
            "  ... and {} more (`benchpipe plan` lists them all)",
            skipped.len() - most
        );
    }
    out
}

/// `not_applicable`'s prefix where lines start with a cell key and a state.
fn keyed_skip() -> String {
    format!("  {:<32}  {:<22}  ", "-", "not applicable")
}

fn drift_line(table: &mut String, changes: &[plan::diff::Change], on: OnDrift, complete: bool) {
    let what = match (on, complete) {
        (OnDrift::Refuse, true) => "kept as measured; `--on-drift redo` measures it again",
        (OnDrift::Refuse, false) => {
            "apply adds no runs until you choose `--on-drift keep` or `--on-drift redo`"
        }
        (OnDrift::Keep, _) => "--on-drift keep: its runs stay and count",
        (OnDrift::Redo, _) => "--on-drift redo: measured again",
    };
    let _ = writeln!(
        table,
        "  {:<32}  ! drift: the board changed since these runs ({}); {what}",
        "",
        plan::drift::summary(changes)
    );
}

fn why_lines(table: &mut String, why: Option<&plan::diff::Why>) {
    match why {
        None => {}
        Some(plan::diff::Why::New) => {
            let _ = writeln!(table, "  {:<32}  + new: no stored cell like it", "");
        }
        Some(plan::diff::Why::Redo) => {
            let _ = writeln!(
                table,
                "  {:<32}  ! redo: stored runs kept but no longer counted",
                ""
            );
        }
        Some(plan::diff::Why::Changed {
            nearest,
            same_address,
            diff,
        }) => {
            let what = if *same_address {
                "at this address"
            } else {
                "of this test on this board"
            };
            let n = diff.total();
            if n == 0 {
                let _ = writeln!(
                    table,
                    "  {:<32}  ~ same inputs as stored cell {nearest} {what}: the key encoding changed",
                    ""
                );
                return;
            }
            let _ = writeln!(
                table,
                "  {:<32}  ~ {n} input(s) differ from stored cell {nearest} {what}:",
                ""
            );
            for c in &diff.changes {
                let _ = writeln!(table, "  {:<32}      {c}", "");
            }
            if diff.more > 0 {
                let _ = writeln!(table, "  {:<32}      ... and {} more", "", diff.more);
            }
        }
    }
}

fn plan_json(
    ws: &Workspace,
    all_plans: &[(&Scenario, Plan)],
    v: &View<'_>,
    on_drift: OnDrift,
) -> Result<String> {
    let recipes: serde_json::Map<String, serde_json::Value> = recipes_used(ws, v)
        .into_iter()
        .map(|r| {
            let doc = serde_json::json!({
                "origin": r.source.origin,
                "file": r.file,
                "sha256": r.source.sha256,
            });
            (r.name.to_string(), doc)
        })
        .collect();
    let cells: Vec<_> = v
        .rows
        .iter()
        .map(|row| {
            let mut j = serde_json::json!({
                "scenario": row.scenario,
                "key": row.cell.key,
                "dir": row.cell.dir_name(),
                "address": row.cell.address,
                "state": row.state,
                "selected": row.selected,
            });
            if let Some(why) = &row.why {
                j["why"] = serde_json::json!(why);
            }
            if let Some(changes) = &row.drift {
                j["drift"] = serde_json::json!({ "changes": changes, "choice": on_drift });
            }
            j
        })
        .collect();
    let skipped: Vec<_> = all_plans.iter().flat_map(|(_, p)| &p.skipped).collect();
    let c = &v.counts;
    let doc = serde_json::json!({
        "format": PLAN_JSON_FORMAT,
        "cells": cells,
        "skipped": skipped,
        "recipes": recipes,
        "schedule": v.schedule,
        "summary": {
            "complete": c.complete, "partial": c.partial, "missing": c.missing,
            "failed": c.failed,
            "skipped_on_board": c.skipped,
            "skipped_by_only": c.not_selected,
            "measured_runs_left": c.runs_left,
            "estimated_seconds": v.schedule.estimate_seconds(),
        },
    });
    let mut s = serde_json::to_string_pretty(&doc).map_err(|e| Error::Other(e.to_string()))?;
    s.push('\n');
    Ok(crate::shown::json(s))
}

/// The schedule `apply` would walk now (the one `--dry-run` prints).
pub(super) fn schedule_now(ws: &Workspace, store: &Store, select: &Selection) -> Result<Schedule> {
    let all_plans = known_plans(ws, store)?;
    Ok(view(ws, &all_plans, store, select)?.schedule)
}

/// `apply --dry-run`: the steps apply would walk, per board, changing no board. With
/// `probe`, under each step that overwrites a device, what its board reports of it
/// (`apply::probe`, read-only), or that the board cannot be reached.
pub fn dry_run_text(
    ws: &Workspace,
    store: &Store,
    select: &Selection,
    probe: Option<&dyn crate::transport::Connector>,
) -> Result<String> {
    let all_plans = known_plans(ws, store)?;
    let v = view(ws, &all_plans, store, select)?;
    let reports = probe.map(|c| crate::apply::probe::disks(ws, &v.schedule, c));
    let mut out = v.schedule.text_with(|walk, step| {
        let disk = step.action.overwritten_device(walk).and_then(|(host, device)| {
            let said = reports.as_ref()?.get(&(host, device.to_string()))?;
            Some(format!("{device}: {said}"))
        });
        let root = step.action.needs_root().and_then(|_| {
            let user = not_root(ws.boards.get(walk)?)?;
            Some(format!(
                "needs root: {walk} logs in as {user} without become = \"sudo\", so apply refuses this board"
            ))
        });
        match (disk, root) {
            (Some(d), Some(r)) => Some(format!("{d}\n       {r}")),
            (d, r) => d.or(r),
        }
    });
    // What will not run, and why: "nothing to run" must not be all it says.
    out.push_str(&not_applicable(&all_plans, usize::MAX, &keyed_skip()));
    out.push_str(&recipe_lines(ws, &v));
    out.push_str(&tidy_lines(&v));
    out.push_str(&summary(&v));
    Ok(out)
}

/// The user a board file logs in as, when it names one other than root and no
/// `become = "sudo"`: its steps that need root will be refused (`apply::board`).
fn not_root(board: &crate::model::Board) -> Option<String> {
    match &board.connection {
        crate::model::Connection::Ssh(t) if !t.become_sudo => t
            .user
            .as_deref()
            .filter(|u| *u != "root")
            .map(|u| shown(u).into_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::failure::CellFailure;
    use crate::shown::{assert_inert, hostile, shows};
    use crate::store::Fingerprint;
    use crate::store::{FORMAT, RunKind, Sample};

    fn fingerprint(kernel: &str) -> Fingerprint {
        Fingerprint {
            kernel_release: kernel.into(),
            kernel_version: "#1".into(),
            os_release: BTreeMap::new(),
            firmware: None,
            boot_config: BTreeMap::new(),
        }
    }

    /// A store someone sent, whose failure cause, skip reason, stored inputs (keys and
    /// values, which `plan` diffs) and fingerprints hold every control character and a
    /// newline: `plan` and `plan --json` print none of them raw and start no line with
    /// them, and show each escaped.
    #[test]
    fn plan_prints_no_stored_control_character_raw() {
        let dir = std::env::temp_dir().join(format!("bp-plan-hostile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let ws = plan::fixtures::workspace();
        let cells = plan::expand(&ws, &ws.scenarios[0]).cells;
        assert!(cells.len() >= 4, "the fixture has cells to poison");
        store
            .begin(&cells[0])
            .unwrap()
            .record_failure(
                "s",
                1.0,
                &CellFailure::Refused {
                    reason: hostile("cause"),
                },
            )
            .unwrap();
        store
            .begin(&cells[1])
            .unwrap()
            .record_skip("s", 1.0, &hostile("skip"))
            .unwrap();
        // A stored cell at cells[2]'s address under other inputs: `plan` shows the diff.
        let mut inputs = cells[2].inputs.json().clone();
        inputs["board"]["model"] = hostile("diff").into();
        inputs[hostile("key")] = 1.into();
        let other = "0123456789abcdef0123456789abcdef";
        let sibling = dir.join(format!(
            "{other}-{}-{}",
            cells[2].address.test, cells[2].address.board
        ));
        std::fs::create_dir_all(&sibling).unwrap();
        let record = serde_json::json!({
            "format": 1, "key": other, "address": cells[2].address, "inputs": inputs,
        });
        std::fs::write(sibling.join("cell.json"), record.to_string()).unwrap();
        // A cell measured on a board that has drifted since.
        let mut w = store.begin(&cells[3]).unwrap();
        w.append(&Sample {
            format: FORMAT,
            seq: 1,
            kind: RunKind::Measured,
            session: "s".into(),
            started: 1.0,
            ended: 2.0,
            metrics: BTreeMap::new(),
            flags: vec![],
            telemetry: None,
            command: "true".into(),
            log: String::new(),
            order: None,
            board_seq: None,
        })
        .unwrap();
        store
            .adopt_fingerprint(&cells[3], &fingerprint(&hostile("then")))
            .unwrap();
        store
            .write_board_fingerprint(&cells[3].address.board, &fingerprint(&hostile("now")), "s")
            .unwrap();

        let text = plan_text(&ws, &store, false, &Selection::default()).unwrap();
        assert_inert("plan", &text, false);
        for tag in ["cause", "skip", "key"] {
            assert!(shows(&text, tag), "plan shows no {tag} text:\n{text}");
        }
        // A diff shows a value as JSON text, and so its C0 controls as JSON escapes.
        for tag in ["diff", "then", "now"] {
            let json_escaped = format!("\"{tag}\\u0000\\u0001");
            assert!(
                text.contains(&json_escaped),
                "plan shows no {tag} text:\n{text}"
            );
        }
        let json = plan_text(&ws, &store, true, &Selection::default()).unwrap();
        assert_inert("plan --json", &json, false);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
