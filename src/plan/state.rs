//! How far along a cell is, judged from what the store holds. Pure: the caller reads the
//! store and passes the data in.

use serde::Serialize;

use crate::model::Method;
use crate::stats;
use crate::store::CellData;

use super::Cell;

/// Why measured runs stop (or must go on).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopRule {
    /// Fixed count reached (no precision target).
    Count,
    /// Every primary metric's CI half-width is within the target.
    Target,
    /// `max` runs taken without reaching the target.
    Max,
}

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
    /// The last attempt failed; `have` measured runs are kept and the next apply retries.
    Failed {
        have: usize,
        want: usize,
        cause: String,
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
            CellState::Partial { have, want } | CellState::Failed { have, want, .. } => {
                want.saturating_sub(*have)
            }
            CellState::Missing { want } => *want,
        }
    }
}

/// Whether measured runs should stop, given the values of each primary metric so far.
///
/// Runs stop at `min` without a precision target; with one, they go on past `min` until
/// every primary metric's confidence interval half-width is within `target` of its mean,
/// or `max` runs were taken.
pub fn stop_rule(method: &Method, primaries: &[Vec<f64>], have: usize) -> Option<StopRule> {
    let runs = &method.runs;
    if have < runs.min as usize {
        return None;
    }
    let Some(target) = runs.target else {
        return Some(StopRule::Count);
    };
    let precise = primaries
        .iter()
        .all(|xs| stats::precision_reached(xs, method.confidence, target));
    if precise {
        Some(StopRule::Target)
    } else if have >= runs.max as usize {
        Some(StopRule::Max)
    } else {
        None
    }
}

/// The values of each primary metric of `cell` among the measured samples.
pub fn primary_values(primary: &[String], data: &CellData) -> Vec<Vec<f64>> {
    primary
        .iter()
        .map(|m| {
            data.measured()
                .filter_map(|s| s.metrics.get(m).copied())
                .collect()
        })
        .collect()
}

/// The state of `cell` given what the store holds for it.
pub fn state(cell: &Cell, primary: &[String], data: &CellData) -> CellState {
    let have = data.measured_count();
    let want = (cell.method.runs.min as usize).max(have.min(cell.method.runs.max as usize));
    if let Some(rule) = stop_rule(&cell.method, &primary_values(primary, data), have) {
        return CellState::Complete { have, rule };
    }
    let want = if have >= want { have + 1 } else { want };
    match (&data.failure, have) {
        (Some(f), _) => CellState::Failed {
            have,
            want,
            cause: f.cause.clone(),
        },
        (None, 0) => CellState::Missing { want },
        (None, _) => CellState::Partial { have, want },
    }
}
