//! Baseline-versus-candidate comparisons (`[[report.compare]]`): which cells pair up,
//! the pooled pairs of one board model, and each pair's verdict as a row of numbers.

use std::collections::BTreeMap;

use serde::Serialize;

use super::pairing::Pairing;
use crate::model::{Better, MetricSpec, Percent, Pool, Scenario, Workspace};
use crate::plan::state;
use crate::plan::{Address, Cell, CellKey, Plan};
use crate::stats::{self, Comparison, Incomparable, OutlierCount, RunsNeeded, Verdict, Words};
use crate::store::CellData;

/// One comparison: a candidate configuration against its baseline on one metric, or
/// (`pooled`) every board of one model at once. Numbers are numbers; `difference`,
/// `verdict_text` and `p_text` are their one rendering ([`stats::describe`]).
#[derive(Clone, Debug, Serialize)]
pub struct ComparisonRow {
    /// `test.metric`.
    pub metric: String,
    pub unit: String,
    /// Which direction is an improvement.
    pub better: Better,
    pub baseline: String,
    pub candidate: String,
    /// For a pooled row: the board model and the boards in it.
    pub pooled: Option<Pooled>,
    /// Runs that count on each side (all pooled boards' together).
    pub baseline_n: usize,
    pub candidate_n: usize,
    pub baseline_mean: Option<f64>,
    pub candidate_mean: Option<f64>,
    /// `mean(candidate) / mean(baseline)`; None when not comparable.
    pub ratio: Option<f64>,
    /// Fieller's interval of the ratio; None on an unbounded side.
    pub ratio_ci_low: Option<f64>,
    pub ratio_ci_high: Option<f64>,
    /// `(c - b) / |b| · 100`.
    pub diff_pct: Option<f64>,
    /// The interval of `diff_pct`; None on an unbounded side (or when not comparable).
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// The difference over the mean of both (the seed's "53% faster"); positive data
    /// only.
    pub symmetric_pct: Option<f64>,
    /// Its interval (the ratio's, mapped); None on an unbounded side.
    pub symmetric_ci_low_pct: Option<f64>,
    pub symmetric_ci_high_pct: Option<f64>,
    /// What `difference`'s headline percentage is of: `of-baseline` (`diff_pct`) or
    /// `of-mean` (`symmetric_pct`), as the comparison's `percent` asks.
    pub percent: Percent,
    /// Welch's two-sided p.
    pub p: Option<f64>,
    pub confidence: f64,
    /// This comparison's noise band, a fraction.
    pub noise_band: f64,
    pub verdict: Verdict,
    /// better or worse (p below 1 - confidence and beyond the noise band).
    pub significant: bool,
    /// Inconclusive: about how many runs per side (per board when pooled) would decide.
    pub runs_needed: Option<RunsNeeded>,
    /// Outliers among the runs that count (kept in the statistics), by the rule of
    /// `Report::outlier_rule`.
    pub baseline_outliers: OutlierCount,
    pub candidate_outliers: OutlierCount,
    /// `+42.9% (95% CI +38.0% .. +47.9%; +35.3% of the mean of both)`; for equivalent
    /// and inconclusive rows the interval only; for others why there is no comparison.
    pub difference: String,
    /// `faster (p = 0.0012, ...)`, `inconclusive: ...; about 12 runs per side ...`.
    pub verdict_text: String,
    /// `p = 0.0012`, or empty.
    pub p_text: String,
    /// The baseline's and the candidate's addresses (a pooled row's first pair's), for
    /// the Markdown's tables of comparisons (`compared.rs`), which label them.
    #[serde(skip)]
    pub sides: Option<(Address, Address)>,
}

/// The boards a pooled row stands for.
#[derive(Clone, Debug, Serialize)]
pub struct Pooled {
    pub model: String,
    pub boards: Vec<String>,
    /// Boards of the model left out, each with why (too few runs).
    pub left_out: Vec<String>,
}

/// A short name of a cell's configuration for comparison rows.
pub(super) fn config_label(a: &Address) -> String {
    label_with_board(a, a.board.as_str())
}

fn label_with_board(a: &Address, board: &str) -> String {
    let mut parts = vec![board.to_string()];
    if let Some(s) = &a.storage {
        parts.push(s.to_string());
    }
    if let Some(f) = &a.filesystem {
        parts.push(f.to_string());
    }
    if let Some(n) = &a.network {
        parts.push(n.to_string());
    }
    parts.push(a.image.to_string());
    parts.join(" / ")
}

/// The board model a cell was planned for (part of its inputs, so it needs no board
/// file); the board's name when the inputs lack one.
pub(super) fn board_model(cell: &Cell) -> String {
    cell.inputs.text("/board/model").map_or_else(
        || cell.address.board.to_string(),
        |m| crate::shown::shown(m).into_owned(),
    )
}

/// The runs of `cell` that count, by the tables' rule: a flagged run the method leaves
/// out of a table does not decide a comparison either.
pub(super) fn counted_values(
    cell: &Cell,
    spec: &MetricSpec,
    data: &BTreeMap<CellKey, CellData>,
) -> Vec<f64> {
    data.get(&cell.key)
        .map(|d| values_of(&cell.method, spec, d))
        .unwrap_or_default()
}

/// The values of `spec` in the runs of `d` that count under `method`.
pub(super) fn values_of(
    method: &crate::model::Method,
    spec: &MetricSpec,
    d: &CellData,
) -> Vec<f64> {
    state::counted(method, d)
        .filter_map(|s| spec.value(&s.metrics, s.ended - s.started))
        .collect()
}

/// The statement under the comparisons table: how rows are judged, and what each row's
/// percentage is of (`of_mean`: some row gives the difference over the mean of both).
pub fn method_text(scenario: &Scenario, of_mean: bool) -> String {
    let conf = super::percent(scenario.method.confidence);
    let alpha = super::trimmed(1.0 - scenario.method.confidence);
    let band = super::percent(scenario.precision.noise_band);
    let of_mean = if of_mean {
        "A comparison in percent of the mean of both means (percent = \"of-mean\") gives instead the difference over the mean of both means, (c - b) / ((c + b) / 2) = 2 (r - 1) / (r + 1) for the ratio r, with Fieller's interval of r mapped through it (the same coverage: the map is increasing); the verdict is judged alike. "
    } else {
        ""
    };
    format!(
        "Each difference is the candidate's mean over the baseline's, with Fieller's {conf}% confidence interval of that ratio (never beyond -100% for a positive metric). {of_mean}\
         Faster, slower, better or worse: Welch's t-test gives p < {alpha} and the difference lies beyond the ±{band}% noise band (boards drift that much between sessions); \
         equivalent: the whole interval lies inside the band; inconclusive: neither, with about how many runs per side would give 80% power to decide it at this spread. \
         A pooled row (pool = \"model\") weighs each board of the model equally with its own runs' spread: it is about the boards measured."
    )
}

/// A row from a comparison's result.
pub(super) fn row(
    metric: String,
    spec: &MetricSpec,
    labels: (String, String),
    pooled: Option<Pooled>,
    (b, x): (&[&[f64]], &[&[f64]]),
    (confidence, noise_band): (f64, f64),
    percent: Percent,
) -> ComparisonRow {
    let result = stats::compare_strata(b, x, confidence, noise_band, spec.better);
    let per_side = if pooled.is_some() {
        "runs per side on each board"
    } else {
        "runs per side"
    };
    let words = Words::for_unit(&spec.unit);
    let outliers = |s: &[&[f64]]| {
        s.iter().fold(OutlierCount::default(), |acc, xs| {
            let c = OutlierCount::of(xs);
            OutlierCount {
                mild: acc.mild + c.mild,
                severe: acc.severe + c.severe,
            }
        })
    };
    let count = |s: &[&[f64]]| s.iter().map(|xs| xs.len()).sum::<usize>();
    let mut r = ComparisonRow {
        metric,
        unit: spec.unit.clone(),
        better: spec.better,
        baseline: labels.0,
        candidate: labels.1,
        pooled,
        baseline_n: count(b),
        candidate_n: count(x),
        baseline_mean: None,
        candidate_mean: None,
        ratio: None,
        ratio_ci_low: None,
        ratio_ci_high: None,
        diff_pct: None,
        ci_low_pct: None,
        ci_high_pct: None,
        symmetric_pct: None,
        symmetric_ci_low_pct: None,
        symmetric_ci_high_pct: None,
        percent,
        p: None,
        confidence,
        noise_band,
        verdict: Verdict::NotComparable,
        significant: false,
        runs_needed: None,
        baseline_outliers: outliers(b),
        candidate_outliers: outliers(x),
        difference: String::new(),
        verdict_text: String::new(),
        p_text: String::new(),
        sides: None,
    };
    match result {
        Ok(c) => fill(&mut r, &c, words, per_side),
        Err(e) => {
            let d = stats::describe_incomparable(&e);
            (r.difference, r.verdict_text) = (d.difference, d.verdict);
        }
    }
    r
}

/// Copies a comparison's numbers and words into a row.
pub(super) fn fill(r: &mut ComparisonRow, c: &Comparison, words: Words, per_side: &str) {
    let d = stats::describe(c, words, 1, per_side, r.percent);
    let (lo, hi) = match c.ratio_ci {
        stats::RatioInterval::Interval { low, high } => (low, high),
        stats::RatioInterval::Outside { .. } => (None, None),
    };
    r.baseline_mean = Some(c.baseline_mean);
    r.candidate_mean = Some(c.candidate_mean);
    r.ratio = Some(c.ratio);
    r.ratio_ci_low = lo;
    r.ratio_ci_high = hi;
    r.diff_pct = Some(c.diff_pct);
    r.ci_low_pct = c.ci_low_pct;
    r.ci_high_pct = c.ci_high_pct;
    r.symmetric_pct = c.symmetric_pct;
    r.symmetric_ci_low_pct = c.symmetric_ci_low_pct;
    r.symmetric_ci_high_pct = c.symmetric_ci_high_pct;
    r.p = Some(c.welch.p);
    r.p_text = format!("p = {}", super::p_value(c.welch.p));
    r.verdict = c.verdict;
    r.significant = c.significant;
    r.runs_needed = c.runs_needed;
    r.difference = d.difference;
    r.verdict_text = d.verdict;
}

/// Every candidate cell against the baseline cell [`Pairing`] pairs it with. With
/// `pool = "model"`, after a comparison's per-board rows come its pooled rows: the
/// pairs on one board (baseline and candidate on the same board) grouped by the
/// board's model and the other axes, one row per group of at least two boards, each
/// board one stratum of [`stats::compare_strata`].
pub fn comparisons(
    ws: &Workspace,
    scenario: &Scenario,
    plan: &Plan,
    data: &BTreeMap<CellKey, CellData>,
) -> Vec<ComparisonRow> {
    comparisons_of(ws, scenario, &plan.cells.iter().collect::<Vec<_>>(), data)
}

/// `comparisons` of the cells in the order given (a report's, with no copy of them).
pub(super) fn comparisons_of(
    ws: &Workspace,
    scenario: &Scenario,
    plan_cells: &[&Cell],
    data: &BTreeMap<CellKey, CellData>,
) -> Vec<ComparisonRow> {
    let mut rows = Vec::new();
    for c in &scenario.compare {
        let Some(recipe) = ws.recipes.get(&c.test) else {
            continue;
        };
        let Some(spec) = recipe.metric(&c.metric) else {
            continue;
        };
        let spec = &spec;
        // A raw-device test's cells have no filesystem: a difference between
        // filesystems would be noise (config and the CLI refuse to ask for one).
        if recipe.raw_device
            && (c.baseline.filesystem.is_some() || c.candidate.filesystem.is_some())
        {
            continue;
        }
        let noise_band = c.noise_band.unwrap_or(scenario.precision.noise_band);
        let confidence = scenario.method.confidence;
        let metric = format!("{}.{}", c.test, c.metric);
        let mut pairs = Vec::new();
        for (base, cand) in Pairing::of(c, plan_cells).pairs() {
            let (b, x) = (
                counted_values(base, spec, data),
                counted_values(cand, spec, data),
            );
            let mut r = row(
                metric.clone(),
                spec,
                (config_label(&base.address), config_label(&cand.address)),
                None,
                (&[&b], &[&x]),
                (confidence, noise_band),
                c.percent,
            );
            r.sides = Some((base.address.clone(), cand.address.clone()));
            rows.push(r);
            pairs.push((base, cand, b, x));
        }
        if c.pool == Some(Pool::Model) {
            rows.extend(pooled_rows(
                &metric,
                spec,
                &pairs,
                (confidence, noise_band),
                c.percent,
            ));
        }
    }
    rows
}

type Pair<'a> = (&'a Cell, &'a Cell, Vec<f64>, Vec<f64>);

/// One row per (board model, the pair's other axes) with at least two boards.
fn pooled_rows(
    metric: &str,
    spec: &MetricSpec,
    pairs: &[Pair<'_>],
    (confidence, noise_band): (f64, f64),
    percent: Percent,
) -> Vec<ComparisonRow> {
    let mut groups: BTreeMap<(String, String, String), Vec<&Pair<'_>>> = BTreeMap::new();
    for p in pairs {
        let (base, cand) = (p.0, p.1);
        let model = board_model(cand);
        if base.address.board != cand.address.board || board_model(base) != model {
            continue;
        }
        let key = (
            model.clone(),
            label_with_board(&base.address, &model),
            label_with_board(&cand.address, &model),
        );
        groups.entry(key).or_default().push(p);
    }
    let mut rows = Vec::new();
    for ((model, _, _), members) in groups {
        let (used, short): (Vec<_>, Vec<_>) = members
            .into_iter()
            .partition(|p| p.2.len() >= 2 && p.3.len() >= 2);
        if used.len() + short.len() < 2 {
            continue;
        }
        let boards: Vec<String> = used.iter().map(|p| p.1.address.board.to_string()).collect();
        let first = used.first().or(short.first()).map(|p| (p.0, p.1));
        let Some((base, cand)) = first else {
            continue;
        };
        let who = if boards.is_empty() {
            format!("{model} (pooled)")
        } else {
            format!("{model} (pooled: {})", boards.join(", "))
        };
        let (base_label, cand_label) = (
            label_with_board(&base.address, &who),
            label_with_board(&cand.address, &who),
        );
        let left_out = short
            .iter()
            .map(|p| {
                format!(
                    "{}: {}",
                    p.1.address.board,
                    Incomparable::TooFewRuns {
                        baseline: p.2.len(),
                        candidate: p.3.len()
                    }
                )
            })
            .collect();
        // Every board too short: the row is "not comparable", with their run counts.
        let strata = if used.is_empty() { &short } else { &used };
        let b: Vec<&[f64]> = strata.iter().map(|p| p.2.as_slice()).collect();
        let x: Vec<&[f64]> = strata.iter().map(|p| p.3.as_slice()).collect();
        let pooled = Pooled {
            model,
            boards,
            left_out,
        };
        let mut r = row(
            metric.to_string(),
            spec,
            (base_label, cand_label),
            Some(pooled),
            (&b, &x),
            (confidence, noise_band),
            percent,
        );
        r.sides = Some((base.address.clone(), cand.address.clone()));
        rows.push(r);
    }
    rows
}
