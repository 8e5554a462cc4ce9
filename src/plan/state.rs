//! How far along a cell is, judged from what the store holds. Pure: the caller reads the
//! store and passes the data in.

use serde::Serialize;

use crate::model::Method;
use crate::stats;
use crate::store::CellData;

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

/// Whether measured runs stop now, given each primary metric's values so far: the
/// method's `runs = { min, max, target }` rule (see `stats::RunRule`).
pub fn stop_rule(method: &Method, primaries: &[Vec<f64>], have: usize) -> Option<StopRule> {
    let rule = stats::RunRule::from_method(method);
    // A recipe whose primary metrics are absent from the samples still stops on count.
    let counts = [vec![0.0; have]];
    let metrics: Vec<&[f64]> = if primaries.is_empty() {
        counts.iter().map(Vec::as_slice).collect()
    } else {
        primaries.iter().map(Vec::as_slice).collect()
    };
    match rule.decide_all(&metrics) {
        stats::RunDecision::Stop(reason) => Some(reason),
        stats::RunDecision::Continue => None,
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
