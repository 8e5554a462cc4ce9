//! The adaptive run count: keep measuring a cell until its confidence interval is
//! narrow enough, between a minimum and a maximum number of runs.

use serde::Serialize;

use super::summarize;
use crate::model::Method;

/// True when the confidence interval's half-width is at most `target_rel` of |mean|
/// (0.02 = ±2%). Needs at least 2 finite samples. All-equal samples (half-width 0)
/// always reach the target, even at a mean of 0; otherwise a mean of 0 never does.
pub fn precision_reached(xs: &[f64], confidence: f64, target_rel: f64) -> bool {
    let Some(half) = summarize(xs, confidence).and_then(|s| s.ci_half.map(|h| (h, s.mean))) else {
        return false;
    };
    let (half, mean) = half;
    if half == 0.0 {
        return true;
    }
    mean != 0.0 && half / mean.abs() <= target_rel
}

/// Why a cell stops taking measured runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// A fixed count (no target) and `min` runs are done.
    MinReached,
    /// The precision target is met (at `min` runs or later).
    TargetReached,
    /// `max` runs are done without meeting the target.
    MaxReached,
}

/// What to do after the runs so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RunDecision {
    Continue,
    Stop(StopReason),
}

/// The stopping rule of a method's `runs = { min, max, target }`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunRule {
    pub min: usize,
    pub max: usize,
    /// Relative CI half-width to reach; None means "always `min` runs".
    pub target: Option<f64>,
    pub confidence: f64,
}

impl RunRule {
    pub fn from_method(method: &Method) -> Self {
        RunRule {
            min: method.runs.min as usize,
            max: method.runs.max as usize,
            target: method.runs.target,
            confidence: method.confidence,
        }
    }

    /// Decides from one metric's measured samples (warm-up runs excluded).
    ///
    /// Below `min` runs: continue. Without a target: stop at `min`. With one: stop when
    /// [`precision_reached`], else continue until `max` (a `max` below `min` counts as
    /// `min`, so a bad rule still terminates).
    pub fn decide(&self, samples: &[f64]) -> RunDecision {
        self.decide_all(&[samples])
    }

    /// Decides from several metrics at once (a recipe's primary metrics): the target is
    /// met only when every metric meets it. All metrics have the same run count in
    /// practice; the smallest count is used.
    pub fn decide_all(&self, metrics: &[&[f64]]) -> RunDecision {
        let n = metrics.iter().map(|m| m.len()).min().unwrap_or(0);
        if n < self.min {
            return RunDecision::Continue;
        }
        let Some(target) = self.target else {
            return RunDecision::Stop(StopReason::MinReached);
        };
        if !metrics.is_empty()
            && metrics
                .iter()
                .all(|m| precision_reached(m, self.confidence, target))
        {
            return RunDecision::Stop(StopReason::TargetReached);
        }
        if n >= self.max.max(self.min) {
            RunDecision::Stop(StopReason::MaxReached)
        } else {
            RunDecision::Continue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_for_the_right_reason() {
        let rule = RunRule {
            min: 3,
            max: 5,
            target: Some(0.02),
            confidence: 0.95,
        };
        let steady = [100.0, 100.1, 99.9];
        let noisy = [100.0, 130.0, 80.0, 120.0, 90.0];
        assert_eq!(rule.decide(&steady[..2]), RunDecision::Continue);
        assert_eq!(
            rule.decide(&steady),
            RunDecision::Stop(StopReason::TargetReached)
        );
        assert_eq!(rule.decide(&noisy[..4]), RunDecision::Continue);
        assert_eq!(
            rule.decide(&noisy),
            RunDecision::Stop(StopReason::MaxReached)
        );
        let fixed = RunRule {
            target: None,
            ..rule
        };
        assert_eq!(
            fixed.decide(&noisy[..3]),
            RunDecision::Stop(StopReason::MinReached)
        );
        assert_eq!(
            rule.decide_all(&[&steady, &noisy[..3]]),
            RunDecision::Continue,
            "one noisy metric keeps the cell running"
        );
        assert!(!precision_reached(&[1.0], 0.95, 0.5));
        assert!(precision_reached(&[0.0, 0.0], 0.95, 0.02));
    }
}
