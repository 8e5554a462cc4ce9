//! The report's lists beside the tables: validity warnings per cell, cells that are not
//! complete, failed ones with their cause, and those that cannot apply with the reason.

use serde::Serialize;

use super::cells::{Place, View, place};
use crate::model::Scenario;
use crate::plan::Plan;
use crate::plan::state::CellState;
use crate::shown::shown;

/// A cell whose measured runs raised validity flags or warnings.
#[derive(Clone, Debug, Serialize)]
pub struct Validity {
    /// `xz on pi-1 (installed)`.
    pub cell: String,
    pub key: String,
    pub test: String,
    pub measured: usize,
    /// Each flag (throttled, hot, swapping, background-load, under-voltage, ...) with
    /// the number of runs that raised it.
    pub flags: Vec<Count>,
    /// Warnings (throttle state unknown, power unknown): shown, never excluding a run.
    pub warnings: Vec<Count>,
    /// Whether flagged runs are left out of the statistics.
    pub excluded: bool,
    /// `2 of 3 runs hot, 1 of 3 swapping (left out of the statistics); 3 of 3 throttle
    /// state unknown (kept)`.
    pub text: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Count {
    pub name: String,
    pub runs: usize,
}

/// Cells without enough data yet: not measured, or partly.
#[derive(Clone, Debug, Serialize)]
pub struct Incomplete {
    pub cell: String,
    pub key: String,
    pub test: String,
    pub runs: usize,
    pub wanted: usize,
    /// `not measured`, `partial: 1 of 3 runs`.
    pub state: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Failed {
    pub cell: String,
    pub key: String,
    pub test: String,
    pub runs: usize,
    pub wanted: usize,
    /// The typed failure's one rendering (`failure::CellFailure`'s Display).
    pub cause: String,
    /// `broken on here (installed): failed (0 of 2 runs): exit status 3: ...`.
    pub text: String,
}

/// A cell that cannot apply: the plan's (a storage with no device) or the board's (a
/// tool not installed, recorded by the last apply).
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    pub cell: String,
    /// The stored cell's key; none for a combination the plan never made a cell of.
    pub key: Option<String>,
    pub test: String,
    pub reason: String,
    /// `cell: reason`.
    pub text: String,
}

/// What a flag is called in words (`background-load` is "under load").
pub fn flag_words(flag: &str) -> &str {
    match flag {
        "background-load" => "under load",
        "under-voltage-occurred" => "under-voltage (occurred since boot)",
        other => other,
    }
}

pub(super) fn validity(views: &[View]) -> Vec<Validity> {
    views
        .iter()
        .filter(|v| v.flagged_runs > 0 || v.warned_runs > 0)
        .map(|v| {
            let n = v.measured();
            let each = |counts: &[(String, usize)]| -> Vec<String> {
                counts
                    .iter()
                    .map(|(k, r)| format!("{r} of {n} runs {}", flag_words(k)))
                    .collect()
            };
            let mut text = Vec::new();
            if v.flagged_runs > 0 {
                text.push(format!(
                    "{} ({} the statistics)",
                    each(&v.flag_counts).join(", "),
                    if v.excluded { "left out of" } else { "kept in" }
                ));
            }
            if v.warned_runs > 0 {
                text.push(format!("{} (kept)", each(&v.warning_counts).join(", ")));
            }
            let counts = |c: &[(String, usize)]| {
                c.iter()
                    .map(|(k, r)| Count {
                        name: k.clone(),
                        runs: *r,
                    })
                    .collect()
            };
            Validity {
                cell: v.address().label(),
                key: v.cell.key.to_string(),
                test: v.address().test.to_string(),
                measured: n,
                flags: counts(&v.flag_counts),
                warnings: counts(&v.warning_counts),
                excluded: v.excluded,
                text: text.join("; "),
            }
        })
        .collect()
}

/// The cells that are not complete, split into incomplete, failed and skipped; the
/// plan's skipped combinations and the cells the board skipped are listed together, in
/// report order.
pub(super) fn states(
    scenario: &Scenario,
    plan: &Plan,
    views: &[View],
) -> (Vec<Incomplete>, Vec<Failed>, Vec<Skipped>) {
    let mut incomplete = Vec::new();
    let mut failed = Vec::new();
    let mut skipped: Vec<(Place, Skipped)> = plan
        .skipped
        .iter()
        .map(|s| {
            // A retired board's reasons come from the store (`plan::stored`).
            let reason = shown(&s.reason).into_owned();
            (
                place(scenario, &s.address),
                Skipped {
                    cell: s.address.label(),
                    key: None,
                    test: s.address.test.to_string(),
                    text: format!("{}: {reason}", s.address.label()),
                    reason,
                },
            )
        })
        .collect();
    for v in views {
        if matches!(v.state, CellState::Complete { .. }) {
            continue;
        }
        let (cell, key, test) = (
            v.address().label(),
            v.cell.key.to_string(),
            v.address().test.to_string(),
        );
        match &v.state {
            CellState::Complete { .. } => {}
            // What the store says of a cell (its skip's reason, its failure's cause) is
            // shown on one line, controls escaped and bounded: the store may be
            // someone else's.
            CellState::Skipped { reason, .. } => {
                let reason = shown(reason).into_owned();
                skipped.push((
                    place(scenario, v.cell_address()),
                    Skipped {
                        text: format!("{cell}: {reason}"),
                        cell,
                        key: Some(key),
                        test,
                        reason,
                    },
                ));
            }
            // The failure's text leaves out its log, whose name holds the failing
            // session's start time.
            CellState::Failed { have, want, cause } => {
                let cause = shown(&cause.to_string()).into_owned();
                failed.push(Failed {
                    text: format!("{cell}: failed ({have} of {want} runs): {cause}"),
                    cell,
                    key,
                    test,
                    runs: *have,
                    wanted: *want,
                    cause,
                });
            }
            CellState::Missing { want } => incomplete.push(Incomplete {
                cell,
                key,
                test,
                runs: 0,
                wanted: *want,
                state: "not measured".into(),
            }),
            CellState::Partial { have, want } => incomplete.push(Incomplete {
                cell,
                key,
                test,
                runs: *have,
                wanted: *want,
                state: format!("partial: {have} of {want} runs"),
            }),
        }
    }
    skipped.sort_by(|a, b| a.0.cmp(&b.0));
    (
        incomplete,
        failed,
        skipped.into_iter().map(|(_, s)| s).collect(),
    )
}
