//! The report's warnings about its own numbers: a table value whose confidence
//! interval is wider than `[report] wide_ci` of its mean, and what would narrow it; and
//! the outlier rule, stated wherever outliers are counted.

use std::collections::BTreeMap;

use serde::Serialize;

use super::compare::{config_label, counted_values};
use crate::model::{Cooldown, Scenario, Workspace};
use crate::plan::{CellKey, Plan, state};
use crate::stats::{self, OutlierCount, RunsNeeded};
use crate::store::CellData;

/// One table value whose interval is wider than the scenario allows.
#[derive(Clone, Debug, Serialize)]
pub struct WideInterval {
    pub test: String,
    /// The configuration, as comparison rows name it.
    pub config: String,
    pub metric: String,
    pub unit: String,
    pub n: usize,
    pub mean: f64,
    pub ci_half: f64,
    /// `ci_half / |mean|`.
    pub half_rel: f64,
    /// `[report] wide_ci`.
    pub limit: f64,
    /// Runs that would narrow it to `limit` at this spread (the √n rule).
    pub runs_needed: RunsNeeded,
    /// Measured runs with a validity flag kept in the statistics (with
    /// `exclude_flagged` they are out already and not counted here).
    pub flagged_kept: usize,
    pub flags: Vec<String>,
    pub outliers: OutlierCount,
    /// The warning and what would narrow it, in words.
    pub text: String,
}

/// What the report says about the precision of its numbers.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PrecisionNotes {
    /// `[report] wide_ci`, a fraction.
    pub wide_ci: f64,
    pub wide: Vec<WideInterval>,
    /// The outlier rule ([`stats::OUTLIER_RULE`]), when any table value or comparison
    /// has outliers; None otherwise.
    pub outlier_rule: Option<String>,
}

/// Every table value (test, cell, recipe metric) whose interval's half-width is more
/// than `[report] wide_ci` of its mean, in matrix and plan order, from the runs that
/// count (the tables' rule).
pub fn notes(
    ws: &Workspace,
    scenario: &Scenario,
    plan: &Plan,
    data: &BTreeMap<CellKey, CellData>,
) -> PrecisionNotes {
    let limit = scenario.precision.wide_ci;
    let confidence = scenario.method.confidence;
    let mut out = PrecisionNotes {
        wide_ci: limit,
        ..PrecisionNotes::default()
    };
    let mut any_outliers = false;
    for test in &scenario.matrix.test {
        let Some(recipe) = ws.recipes.get(test) else {
            continue;
        };
        for cell in plan.cells.iter().filter(|c| &c.address.test == test) {
            let Some(d) = data.get(&cell.key) else {
                continue;
            };
            for spec in &recipe.metrics {
                let xs = counted_values(cell, spec, data);
                let outliers = OutlierCount::of(&xs);
                any_outliers |= outliers.total() > 0;
                let Some(summary) = stats::summarize(&xs, confidence) else {
                    continue;
                };
                let Some(wide) = stats::wide_ci(&summary, limit) else {
                    continue;
                };
                let method = &cell.method;
                let flagged: Vec<_> = state::counted(method, d)
                    .map(|s| state::flags_of(method, s))
                    .filter(|f| !f.is_empty())
                    .collect();
                let mut flags: Vec<String> = flagged.iter().flatten().cloned().collect();
                flags.sort();
                flags.dedup();
                let mut w = WideInterval {
                    test: test.to_string(),
                    config: config_label(&cell.address),
                    metric: spec.name.clone(),
                    unit: spec.unit.clone(),
                    n: summary.n,
                    mean: summary.mean,
                    ci_half: summary.ci_half.unwrap_or(0.0),
                    half_rel: wide.half_rel,
                    limit,
                    runs_needed: wide.runs_needed,
                    flagged_kept: flagged.len(),
                    flags,
                    outliers,
                    text: String::new(),
                };
                w.text = advice(&w, scenario);
                out.wide.push(w);
            }
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
            any_outliers |= plan
                .cells
                .iter()
                .filter(|x| x.address.test == c.test)
                .any(|x| OutlierCount::of(&counted_values(x, &spec, data)).total() > 0);
        }
    }
    out.outlier_rule = any_outliers.then(|| stats::OUTLIER_RULE.text());
    out
}

/// The warning in words: how wide, and what would narrow it.
fn advice(w: &WideInterval, scenario: &Scenario) -> String {
    let pct = |f: f64| super::number(f * 100.0);
    let limit = super::percent(w.limit);
    let conf = super::percent(scenario.method.confidence);
    let mut ways = vec![format!(
        "{} runs at this spread (the interval narrows with the square root of the runs; `runs = {{ min = N }}` or a `target`)",
        w.runs_needed.text()
    )];
    ways.push(
        "longer runs (a larger size or runtime parameter) average out short stalls".to_string(),
    );
    let no_cooldown = matches!(scenario.method.cooldown, Cooldown::None);
    if no_cooldown || scenario.method.idle.is_none() {
        ways.push(
            "a cool-down or an idle gate before the runs (`[method] cooldown`, `idle`) keeps heat and background work out".to_string(),
        );
    }
    if w.flagged_kept > 0 {
        ways.push(format!(
            "{} flagged run(s) ({}) are kept in; `validity = {{ exclude_flagged = true }}` leaves them out",
            w.flagged_kept,
            w.flags.join(", ")
        ));
    }
    if w.outliers.total() > 0 {
        ways.push(format!(
            "{} among these runs: look at their logs",
            w.outliers.text()
        ));
    }
    format!(
        "{} {} on {}: {} {} (n={}), the {conf}% CI is ±{}% of the mean, wider than ±{limit}%. What would narrow it: {}.",
        w.test,
        w.metric,
        w.config,
        super::mean_ci(w.mean, w.ci_half),
        w.unit,
        w.n,
        pct(w.half_rel),
        ways.join("; ")
    )
}
