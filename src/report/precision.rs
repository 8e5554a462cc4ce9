//! The report's warnings about its own numbers: table values whose confidence interval
//! is wider than `[report] wide_ci` of their mean, and what would narrow them; and the
//! outlier rule, stated wherever outliers are counted.

use serde::Serialize;
use std::fmt::Write as _;

use super::cells::View;
use super::compare::config_label;
use crate::model::{Cooldown, Scenario, Workspace};
use crate::stats::{self, OutlierCount, RunsNeeded};

/// One table value whose interval is wider than the scenario allows.
#[derive(Clone, Debug, Serialize)]
pub struct WideValue {
    pub metric: String,
    pub unit: String,
    pub n: usize,
    pub mean: f64,
    pub ci_half: f64,
    /// `ci_half / |mean|`.
    pub half_rel: f64,
    /// Runs that would narrow it to the limit at this spread (the √n rule).
    pub runs_needed: RunsNeeded,
    pub outliers: OutlierCount,
}

/// A table row (one configuration of one test) with values wider than allowed.
#[derive(Clone, Debug, Serialize)]
pub struct WideInterval {
    pub test: String,
    /// The configuration, as comparison rows name it.
    pub config: String,
    pub values: Vec<WideValue>,
    /// The most runs any of its values needs.
    pub runs_needed: RunsNeeded,
    /// Measured runs with a validity flag kept in the statistics (with
    /// `exclude_flagged` they are out already and not counted here).
    pub flagged_kept: usize,
    pub flags: Vec<String>,
    /// The warning in words.
    pub text: String,
}

/// What the report says about the precision of its numbers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PrecisionNotes {
    /// `[report] wide_ci`, a fraction.
    pub wide_ci: f64,
    /// What narrows an interval, in words, for the scenario's method; empty when no
    /// value is too wide.
    pub advice: String,
    pub wide: Vec<WideInterval>,
    /// The outlier rule ([`stats::OUTLIER_RULE`]), when any table value or comparison
    /// has outliers; None otherwise.
    pub outlier_rule: Option<String>,
}

/// Every table row (test, cell) with a recipe metric whose interval's half-width is
/// more than `[report] wide_ci` of its mean, in matrix and plan order, from the runs
/// that count (the tables' rule).
pub(super) fn notes(ws: &Workspace, scenario: &Scenario, views: &[View]) -> PrecisionNotes {
    let limit = scenario.precision.wide_ci;
    let confidence = scenario.method.confidence;
    let mut out = PrecisionNotes {
        wide_ci: limit,
        ..PrecisionNotes::default()
    };
    let mut any_outliers = false;
    for test in super::measured_tests(scenario, views) {
        let Some(recipe) = ws.recipes.get(test) else {
            continue;
        };
        for view in views.iter().filter(|v| &v.address().test == test) {
            let cell = view.cell;
            let mut values = Vec::new();
            for spec in &recipe.metrics {
                let counted = view.counted_of(spec, confidence);
                let outliers = counted.outliers;
                any_outliers |= outliers.total() > 0;
                let Some(summary) = &counted.summary else {
                    continue;
                };
                if let Some(wide) = stats::wide_ci(summary, limit) {
                    values.push(WideValue {
                        metric: spec.name.clone(),
                        unit: spec.unit.clone(),
                        n: summary.n,
                        mean: summary.mean,
                        ci_half: summary.ci_half.unwrap_or(0.0),
                        half_rel: wide.half_rel,
                        runs_needed: wide.runs_needed,
                        outliers,
                    });
                }
            }
            let Some(runs_needed) = values
                .iter()
                .map(|v| v.runs_needed)
                .max_by_key(|r| (r.more_than, r.runs))
            else {
                continue;
            };
            let flagged: Vec<&Vec<String>> = view
                .runs
                .iter()
                .filter(|r| r.counts && !r.flags.is_empty())
                .map(|r| &r.flags)
                .collect();
            let mut flags: Vec<String> = flagged.iter().copied().flatten().cloned().collect();
            flags.sort();
            flags.dedup();
            let mut w = WideInterval {
                test: test.to_string(),
                config: config_label(&cell.address),
                values,
                runs_needed,
                flagged_kept: flagged.len(),
                flags,
                text: String::new(),
            };
            w.text = line(&w);
            out.wide.push(w);
        }
    }
    for c in &scenario.compare {
        // A compared metric that is not a recipe metric (watts) may hold outliers the
        // loop above did not see.
        let Some(recipe) = ws.recipes.get(&c.test) else {
            continue;
        };
        if recipe.metrics.iter().any(|m| m.name == c.metric) {
            continue;
        }
        if let Some(spec) = recipe.metric(&c.metric) {
            any_outliers |= views
                .iter()
                .filter(|x| x.address().test == c.test)
                .any(|x| OutlierCount::of(&x.values(&spec)).total() > 0);
        }
    }
    if !out.wide.is_empty() {
        out.advice = advice(scenario);
    }
    out.outlier_rule = any_outliers.then(|| stats::OUTLIER_RULE.text());
    out
}

/// What narrows any interval, said once above the list.
fn advice(scenario: &Scenario) -> String {
    let m = &scenario.method;
    let mut ways = vec![
        "more runs: an interval narrows with the square root of their number (runs = { min = N }, or a target); each line says about how many would do at its spread".to_string(),
        "longer runs (a larger size or runtime parameter) average out short stalls".to_string(),
    ];
    if matches!(m.cooldown, Cooldown::None) || m.idle.is_none() {
        ways.push(
            "a cool-down or an idle gate before the runs ([method] cooldown, idle) keeps heat and background work out".to_string(),
        );
    }
    if !m.validity.exclude_flagged {
        ways.push(
            "flagged runs are kept in the statistics: validity = { exclude_flagged = true } leaves them out".to_string(),
        );
    }
    format!(
        "Values whose {}% CI is wider than ±{}% of the mean. What would narrow them: {}.",
        super::percent(m.confidence),
        super::percent(scenario.precision.wide_ci),
        ways.join("; ")
    )
}

/// One row's warning: its wide values and what is particular to it.
fn line(w: &WideInterval) -> String {
    let values: Vec<String> = w
        .values
        .iter()
        .map(|v| {
            let mut s = format!(
                "{} {} {} (n={}, ±{}%",
                v.metric,
                super::mean_ci(v.mean, v.ci_half),
                v.unit,
                v.n,
                super::number(v.half_rel * 100.0)
            );
            if v.outliers.total() > 0 {
                let _ = write!(s, ", {}", v.outliers.text());
            }
            s.push(')');
            s
        })
        .collect();
    let mut s = format!(
        "{} on {}: {}; {} runs would narrow {}",
        w.test,
        w.config,
        values.join(", "),
        w.runs_needed.text(),
        if w.values.len() == 1 { "it" } else { "them" }
    );
    if w.flagged_kept > 0 {
        let _ = write!(
            s,
            "; {} flagged run(s) ({}) kept in",
            w.flagged_kept,
            w.flags.join(", ")
        );
    }
    s.push('.');
    s
}
