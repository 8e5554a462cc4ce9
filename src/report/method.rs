//! The report's Method section: what the scenario asks (cool-down, warm-up, run rule,
//! confidence level, validity thresholds) and what the stored samples show was done (the
//! measured runs actually in the tables, the warm-ups, the run order).

use serde::Serialize;
use std::fmt::Write as _;

use super::cells::View;
use super::format::{duration_text, number, percent, trimmed};
use crate::model::{Cooldown, RunOrder, Scenario};
use crate::store::RunKind;

#[derive(Clone, Debug, Serialize)]
pub struct Method {
    /// `3 measured runs per cell` or `3 to 6 ...`: the runs that count in the tables.
    pub runs: String,
    /// The fewest and most runs counted in one measured cell (absent when none is).
    pub runs_min: Option<usize>,
    pub runs_max: Option<usize>,
    /// The scenario's rule: `3 measured runs`, or `3 to 12 ... until the 95% CI ...`.
    pub run_rule: String,
    pub warmup: String,
    /// The warm-up runs stored per measured cell, fewest and most.
    pub warmups_min: Option<usize>,
    pub warmups_max: Option<usize>,
    pub cooldown: String,
    /// The confidence level, as a fraction (0.95).
    pub confidence: f64,
    pub confidence_text: String,
    /// The run orders the samples record (`blocked`, `interleaved`), in that order.
    pub orders: Vec<String>,
    pub order: String,
    pub validity: String,
}

impl Method {
    /// The whole method as one line, as the seeds state theirs.
    pub fn line(&self) -> String {
        format!(
            "{} ({}); warm-up: {}; cool-down: {}; run order: {}; {}; {}.",
            self.runs,
            self.run_rule,
            self.warmup,
            self.cooldown,
            self.order,
            self.validity,
            self.confidence_text
        )
    }
}

fn range(values: &[usize], one: &str, many: &str) -> (String, Option<usize>, Option<usize>) {
    let (Some(lo), Some(hi)) = (values.iter().min(), values.iter().max()) else {
        return ("none yet".into(), None, None);
    };
    let noun = if *hi == 1 { one } else { many };
    let text = if lo == hi {
        format!("{lo} {noun}")
    } else {
        format!("{lo} to {hi} {many}")
    };
    (text, Some(*lo), Some(*hi))
}

pub(super) fn method(scenario: &Scenario, views: &[View]) -> Method {
    let m = &scenario.method;
    let measured: Vec<&View> = views.iter().filter(|v| v.measured() > 0).collect();
    // From the views' runs (each sample judged once): not the samples again.
    let counted: Vec<usize> = measured
        .iter()
        .map(|v| v.runs.iter().filter(|r| r.counts).count())
        .collect();
    let (runs, runs_min, runs_max) = range(&counted, "measured run", "measured runs");
    let runs = if runs_max.is_some() {
        format!("{runs} per cell in the tables")
    } else {
        "no measured runs yet".into()
    };
    let warmups: Vec<usize> = measured
        .iter()
        .map(|v| {
            v.runs
                .iter()
                .filter(|r| r.kind == RunKind::Warmup && r.current)
                .count()
        })
        .collect();
    let (stored_warmups, warmups_min, warmups_max) = range(&warmups, "run", "runs");

    let run_rule = if m.runs.min == m.runs.max || m.runs.target.is_none() {
        format!("the scenario asks for {} measured runs", m.runs.min)
    } else {
        format!(
            "{} to {} measured runs, until the {}% CI is within ±{}% of the mean",
            m.runs.min,
            m.runs.max,
            percent(m.confidence),
            percent(m.runs.target.unwrap_or(0.0))
        )
    };
    let mut warmup = match m.warmup.runs {
        0 => "none".to_string(),
        1 => "1 run before a cell's measured runs, discarded".to_string(),
        n => format!("{n} runs before a cell's measured runs, discarded"),
    };
    if let Some(d) = m.warmup.duration {
        let _ = write!(warmup, ", for at least {}", duration_text(d.as_secs_f64()));
    }
    if warmups_max.is_some() {
        let _ = write!(warmup, " ({stored_warmups} stored per cell)");
    }
    let mut cooldown = match &m.cooldown {
        Cooldown::None => "none".to_string(),
        Cooldown::Fixed { duration } => {
            format!("{} before each cell", duration_text(duration.as_secs_f64()))
        }
        Cooldown::UntilBelow {
            celsius,
            above_idle,
            max,
        } => format!(
            "until below {}{}°C (at most {})",
            if *above_idle {
                "the idle temperature + "
            } else {
                ""
            },
            number(*celsius),
            duration_text(max.as_secs_f64())
        ),
    };
    if let Some(gate) = &m.idle {
        let _ = write!(
            cooldown,
            ", then until the 1-minute load stayed below {} for {} (at most {})",
            number(gate.load_below),
            duration_text(gate.hold.as_secs_f64()),
            duration_text(gate.max.as_secs_f64())
        );
    }
    let mut seen = [false, false];
    for v in &measured {
        for s in v.data.measured() {
            match s.order {
                Some(RunOrder::Blocked) => seen[0] = true,
                Some(RunOrder::Interleaved) => seen[1] = true,
                None => {}
            }
        }
    }
    let orders: Vec<String> = [("blocked", seen[0]), ("interleaved", seen[1])]
        .into_iter()
        .filter(|(_, s)| *s)
        .map(|(o, _)| o.to_string())
        .collect();
    let order = match (seen[0], seen[1]) {
        (true, false) => "blocked (each cell's runs together), as the samples record".to_string(),
        (false, true) => {
            "interleaved (the cells of one storage setup took turns), as the samples record"
                .to_string()
        }
        (true, true) => {
            "blocked in some applies and interleaved in others, as the samples record".to_string()
        }
        (false, false) => format!(
            "not recorded in the samples (the scenario asks for {})",
            match m.order {
                RunOrder::Blocked => "blocked",
                RunOrder::Interleaved => "interleaved",
            }
        ),
    };
    Method {
        runs,
        runs_min,
        runs_max,
        run_rule,
        warmup,
        warmups_min,
        warmups_max,
        cooldown,
        confidence: m.confidence,
        confidence_text: format!(
            "values are mean ± {}% confidence interval half-width (Student's t), n = measured runs",
            percent(m.confidence)
        ),
        orders,
        order,
        validity: format!(
            "runs flagged as throttled, hot (above {}°C), swapping, under background load (above {}% of the CPU) or under-voltage are {} the statistics",
            trimmed(m.validity.hot_celsius),
            percent(m.validity.background_load),
            if m.validity.exclude_flagged {
                "left out of"
            } else {
                "kept in"
            }
        ),
    }
}
