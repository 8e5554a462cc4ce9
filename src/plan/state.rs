//! How far along a cell is, judged from what the store holds. Pure: the caller reads the
//! store and passes the data in.

use serde::Serialize;

use crate::model::Method;
use crate::stats;
use crate::store::{CellData, RunKind, Sample};

use super::Cell;

pub use crate::stats::StopReason as StopRule;

/// What apply still owes a cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum CellState {
    Complete {
        have: usize,
        rule: StopRule,
    },
    Partial {
        have: usize,
        want: usize,
    },
    Missing {
        want: usize,
    },
    /// The last attempt found the test cannot apply on the board (`skip.json`): not a
    /// failure. The next apply checks again (the tool may be installed by then).
    Skipped {
        have: usize,
        want: usize,
        reason: String,
    },
    /// The last attempt failed; `have` measured runs are kept and the next apply retries.
    Failed {
        have: usize,
        want: usize,
        cause: crate::failure::CellFailure,
    },
}

impl CellState {
    pub fn is_complete(&self) -> bool {
        matches!(self, CellState::Complete { .. })
    }

    /// Measured runs still to take, at least (adaptive cells may take more).
    pub fn remaining(&self) -> usize {
        match self {
            CellState::Complete { .. } => 0,
            CellState::Partial { have, want }
            | CellState::Failed { have, want, .. }
            | CellState::Skipped { have, want, .. } => want.saturating_sub(*have),
            CellState::Missing { want } => *want,
        }
    }
}

/// Whether measured runs stop now, given each primary metric's values so far: the
/// method's `runs = { min, max, target }` rule (see `stats::RunRule`).
pub fn stop_rule(method: &Method, primaries: &[Vec<f64>], have: usize) -> Option<StopRule> {
    let rule = stats::RunRule::from_method(method);
    if primaries.is_empty() {
        // No metric to judge precision by: stop on the count alone, never claiming a
        // target was reached (an empty slice of values would look perfectly precise).
        return (have >= rule.min).then_some(StopRule::MinReached);
    }
    let metrics: Vec<&[f64]> = primaries.iter().map(Vec::as_slice).collect();
    match rule.decide_all(&metrics) {
        stats::RunDecision::Stop(reason) => Some(reason),
        stats::RunDecision::Continue => None,
    }
}

/// Whether a measured run counts in the statistics: always, unless the method excludes
/// flagged runs and this one is flagged. Flags are judged again from the stored
/// telemetry with the scenario's thresholds, so changing a threshold needs no rerun.
pub fn counts(method: &Method, sample: &Sample) -> bool {
    // Flags are judged only when they can matter.
    let flags = if method.validity.exclude_flagged {
        flags_of(method, sample)
    } else {
        Vec::new()
    };
    counts_with_flags(method, sample, &flags)
}

/// `counts`, for a run whose flags (`flags_of`) are already judged.
pub fn counts_with_flags(method: &Method, sample: &Sample, flags: &[String]) -> bool {
    sample.kind == RunKind::Measured && (!method.validity.exclude_flagged || flags.is_empty())
}

/// A run's validity flags under the method's thresholds.
/// The telemetry's flags are re-judged from the stored summary; any other stored flag
/// is a recipe's own (a metric's `flag`, judged from the run's numbers) and is kept.
pub fn flags_of(method: &Method, sample: &Sample) -> Vec<String> {
    let Some(mut flags) = sample
        .telemetry
        .as_ref()
        .and_then(|t| t.flags(&(&method.validity).into()))
    else {
        return sample.flags.clone();
    };
    for f in &sample.flags {
        if !crate::telemetry::FLAGS.contains(&f.as_str()) && !flags.contains(f) {
            flags.push(f.clone());
        }
    }
    flags
}

/// The measured runs that count in the statistics: those `counts` keeps, taken after
/// the cell's redo marker if it has one (`--redo`: earlier runs stay stored, uncounted).
pub fn counted<'d>(method: &'d Method, data: &'d CellData) -> impl Iterator<Item = &'d Sample> {
    data.samples
        .iter()
        .filter(move |s| data.is_current(s) && counts(method, s))
}

/// The values of each primary metric among the runs that count.
pub fn primary_values(method: &Method, primary: &[String], data: &CellData) -> Vec<Vec<f64>> {
    primary
        .iter()
        .map(|m| {
            counted(method, data)
                .filter_map(|s| s.metrics.get(m).copied())
                .collect()
        })
        .collect()
}

/// The state of `cell` given what the store holds for it.
pub fn state(cell: &Cell, primary: &[String], data: &CellData) -> CellState {
    let have = counted(&cell.method, data).count();
    state_given(
        cell,
        &primary_values(&cell.method, primary, data),
        have,
        data,
    )
}

/// `state`, given the runs that count already judged: `have` of them, with these values
/// of each primary metric (a report judges every run once and passes them).
pub fn state_given(
    cell: &Cell,
    primary_values: &[Vec<f64>],
    have: usize,
    data: &CellData,
) -> CellState {
    let want = (cell.method.runs.min as usize).max(have.min(cell.method.runs.max as usize));
    if let Some(rule) = stop_rule(&cell.method, primary_values, have) {
        return CellState::Complete { have, rule };
    }
    let want = if have >= want { have + 1 } else { want };
    match (&data.failure, have) {
        (Some(f), _) => CellState::Failed {
            have,
            want,
            cause: f.failure.clone(),
        },
        (None, _) if data.skip.is_some() => CellState::Skipped {
            have,
            want,
            reason: data
                .skip
                .as_ref()
                .map(|s| s.reason.clone())
                .unwrap_or_default(),
        },
        (None, 0) => CellState::Missing { want },
        (None, _) => CellState::Partial { have, want },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{FORMAT, Redo};

    fn sample(seq: u32) -> Sample {
        Sample {
            format: FORMAT,
            seq,
            kind: RunKind::Measured,
            session: "s".into(),
            started: f64::from(seq),
            ended: f64::from(seq) + 1.0,
            metrics: [("v".to_string(), 1.0)].into(),
            flags: vec![],
            telemetry: None,
            command: "true".into(),
            log: format!("logs/{seq}.log"),
            order: None,
            board_seq: None,
        }
    }

    /// A stored skip is its own state, not a failure; the next apply checks again.
    #[test]
    fn a_stored_skip_is_skipped_with_its_reason_and_runs_remain() {
        let ws = crate::plan::fixtures::workspace();
        let cell = crate::plan::expand(&ws, &ws.scenarios[0]).cells.remove(0);
        let data = CellData {
            skip: Some(crate::store::Skip {
                format: FORMAT,
                session: "s".into(),
                at: 0.0,
                reason: "iozone is not installed on pi-1".into(),
            }),
            ..Default::default()
        };
        let st = state(&cell, &["random_read".to_string()], &data);
        assert_eq!(
            st,
            CellState::Skipped {
                have: 0,
                want: 3,
                reason: "iozone is not installed on pi-1".into()
            }
        );
        assert_eq!(st.remaining(), 3);
        assert!(!st.is_complete());
    }

    #[test]
    fn runs_before_a_redo_marker_stay_stored_but_do_not_count() {
        let method = Method::default();
        let mut data = CellData {
            samples: (1..=5).map(sample).collect(),
            ..Default::default()
        };
        assert_eq!(counted(&method, &data).count(), 5);
        data.redo = Some(Redo {
            format: FORMAT,
            after_seq: 3,
            at: 0.0,
            session: "r".into(),
        });
        let seqs: Vec<u32> = counted(&method, &data).map(|s| s.seq).collect();
        assert_eq!(seqs, [4, 5]);
        assert_eq!(data.measured_count(), 2);
        assert_eq!(data.samples.len(), 5);
        assert_eq!(data.superseded(), 3);
        let again = data.redone("plan");
        assert_eq!(counted(&method, &again).count(), 0);
        assert_eq!(again.redo.unwrap().after_seq, 5);
    }
}
