//! Reports: a pure function of (scenario, plan, store contents) -> Markdown, HTML, JSON.
//!
//! `build` makes a report model from the data; exporters render the model. Nothing here
//! reads the clock, the environment or the filesystem, and every collection is ordered,
//! so the same inputs give the same bytes on any machine.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{Better, Cooldown, Scenario, Workspace};
use crate::plan::state::{self, CellState};
use crate::plan::{Address, CellKey, Plan};
use crate::stats;
use crate::store::CellData;

mod across;
mod chart;
mod compare;
mod export;
mod format;
mod precision;
mod provenance;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_compare;
#[cfg(test)]
mod tests_provenance;

pub use across::{Across, AcrossConfig, Presence, Side, across, markdown as across_markdown};
pub use chart::bar_chart;
pub use compare::{ComparisonRow, Pooled, comparisons};
pub use export::{ExportError, Exporter, Html, Json, Markdown, exporters, markdown_escape};
use format::duration_text;
pub use format::{mean_ci, number, p_value, percent, trimmed};
pub use precision::{PrecisionNotes, WideInterval, WideValue};
pub use provenance::{Fact, Provenance, host_key_fingerprint};

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub title: String,
    pub description: Option<String>,
    pub scenario: String,
    pub methodology: String,
    pub confidence_pct: String,
    pub tests: Vec<TestTable>,
    /// `[[report.compare]]`: candidates against their baseline, with significance.
    pub comparisons: Vec<ComparisonRow>,
    /// How comparison rows are judged, in words (`compare::method_text`).
    pub comparison_method: String,
    /// Intervals wider than `[report] wide_ci` and what would narrow them; the outlier
    /// rule where outliers are counted (`precision.rs`).
    pub precision: PrecisionNotes,
    /// Cells without enough data yet, with their state.
    pub incomplete: Vec<Incomplete>,
    /// Cells that cannot apply, with the reason: the plan's (a storage with no device)
    /// and those the last apply found on the board (a tool not installed).
    pub skipped: Vec<String>,
    /// Per configuration, what produced its numbers, from the facts stored with its
    /// cells; a fact that differs between them is a warning (`provenance.rs`).
    pub provenance: Vec<Provenance>,
    /// The benchpipe that rendered the report (each configuration shows the one that
    /// measured it, where its facts say).
    pub benchpipe: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct TestTable {
    pub test: String,
    /// The axes that vary among this table's rows (the board when none does).
    pub axes: Vec<String>,
    pub description: String,
    pub metrics: Vec<MetricHeader>,
    pub rows: Vec<Row>,
    /// Whether rows say how many runs the precision target took.
    pub adaptive: bool,
    /// Whether any row has flagged runs (the table then shows a column for them).
    pub any_flagged: bool,
    /// `config: note` for every row's drift choices, listed under the table.
    pub drift: Vec<String>,
    /// One inline SVG bar chart per metric (mean with its confidence interval), for
    /// the HTML report; empty when there is nothing to draw.
    pub charts: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MetricHeader {
    pub name: String,
    pub unit: String,
    /// "higher is better" / "lower is better".
    pub better: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Values of the varying axes, in `TestTable::axes` order.
    pub config: Vec<String>,
    pub key: String,
    pub values: Vec<Stat>,
    /// With a precision target: the runs taken and the rule that stopped them.
    pub runs: Option<String>,
    /// Measured runs with a validity flag (throttled, hot, swapping, ...).
    pub flagged_runs: usize,
    /// `2 of 5 (hot, swapping), excluded`, then the warned runs
    /// (`; 5 of 5 (throttle state unknown), included`), or empty.
    pub flagged: String,
    /// The distinct flags raised in this row's runs.
    pub flags: Vec<String>,
    /// Measured runs with a validity warning (`throttle state unknown`): shown like
    /// flags, never excluded.
    pub warned_runs: usize,
    /// The distinct warnings of this row's runs.
    pub warnings: Vec<String>,
    /// The board changed under the cell's runs, and what the user chose
    /// (`--on-drift keep|redo`), one line per choice.
    pub drift: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Stat {
    /// `12.3 ± 0.4 MB/s (n=3)` or `—`.
    pub text: String,
    pub n: usize,
    pub mean: Option<f64>,
    pub ci_half: Option<f64>,
    pub sd: Option<f64>,
    pub min: Option<f64>,
    pub median: Option<f64>,
    pub max: Option<f64>,
    /// Values classified as outliers (kept in the statistics, shown here).
    pub outliers: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Incomplete {
    pub cell: String,
    pub state: String,
}

/// What the user chose when the board changed under a cell's runs, one line each.
fn drift_notes(d: &CellData) -> Vec<String> {
    let Some(f) = &d.fingerprint else {
        return Vec::new();
    };
    f.decisions
        .iter()
        .map(|c| {
            let what = crate::plan::drift::summary(&crate::plan::drift::changes(&c.from, &c.to));
            match c.choice {
                crate::plan::drift::OnDrift::Redo => format!(
                    "the board changed ({what}); the {} run(s) before it no longer count (--on-drift redo)",
                    c.after_seq
                ),
                _ => format!(
                    "the board changed ({what}) after run {}; the runs before it are kept (--on-drift keep)",
                    c.after_seq
                ),
            }
        })
        .collect()
}

fn methodology(scenario: &Scenario) -> String {
    let m = &scenario.method;
    let mut parts = Vec::new();
    let runs = if m.runs.min == m.runs.max || m.runs.target.is_none() {
        format!("{} measured runs", m.runs.min)
    } else {
        format!(
            "{} to {} measured runs, until the {}% CI is within ±{}% of the mean",
            m.runs.min,
            m.runs.max,
            percent(m.confidence),
            percent(m.runs.target.unwrap_or(0.0))
        )
    };
    let total = m.warmup.runs + m.runs.min;
    if m.warmup.runs > 0 {
        parts.push(format!(
            "{total} runs, the first {} discarded as warm-up ({runs})",
            if m.warmup.runs == 1 {
                "one".to_string()
            } else {
                m.warmup.runs.to_string()
            }
        ));
    } else {
        parts.push(runs);
    }
    if let Some(d) = m.warmup.duration {
        parts.push(format!(
            "warm-up of at least {}",
            duration_text(d.as_secs_f64())
        ));
    }
    match &m.cooldown {
        Cooldown::None => {}
        Cooldown::Fixed { duration } => parts.push(format!(
            "{} cool-down before each cell",
            duration_text(duration.as_secs_f64())
        )),
        Cooldown::UntilBelow {
            celsius,
            above_idle,
            max,
        } => parts.push(format!(
            "cool-down until below {}{}°C (at most {})",
            if *above_idle {
                "the idle temperature + "
            } else {
                ""
            },
            number(*celsius),
            duration_text(max.as_secs_f64())
        )),
    }
    if let Some(gate) = &m.idle {
        parts.push(format!(
            "then until the 1-minute load stayed below {} for {} (at most {})",
            number(gate.load_below),
            duration_text(gate.hold.as_secs_f64()),
            duration_text(gate.max.as_secs_f64())
        ));
    }
    parts.push(format!(
        "runs flagged as throttled, hot (above {}°C), swapping, under background load (above {}% of the CPU) or under-voltage are {} the statistics",
        trimmed(m.validity.hot_celsius),
        percent(m.validity.background_load),
        if m.validity.exclude_flagged { "left out of" } else { "kept in" }
    ));
    parts.push(format!(
        "values are mean ± {}% confidence interval half-width (Student's t), n = measured runs",
        percent(m.confidence)
    ));
    parts.join("; ") + "."
}

/// The temperature and clock over a cell's last measured run, when it kept a series of
/// at least two points (`series = true` recipes).
fn series_chart_of(
    d: &CellData,
    axes: &[(&'static str, AxisFn)],
    address: &Address,
) -> Option<String> {
    let last = d.measured().last()?;
    let series = last.telemetry.as_ref()?.get("series")?.as_array()?;
    let num = |p: &serde_json::Value, k: &str| {
        p.get(k).and_then(|v| v.as_f64()).filter(|v| v.is_finite())
    };
    let points: Vec<(f64, Option<f64>, Option<f64>)> = series
        .iter()
        .filter_map(|p| Some((num(p, "t")?, num(p, "temp_c"), num(p, "freq_mhz"))))
        .collect();
    if points.len() < 2 {
        return None;
    }
    let label: Vec<String> = axes.iter().map(|(_, f)| f(address)).collect();
    let title = if label.is_empty() {
        "temperature and clock over the last run".to_string()
    } else {
        format!(
            "{}: temperature and clock over the last run",
            label.join(" / ")
        )
    };
    Some(chart::series_chart(&title, &points))
}

/// Builds the report model of one scenario from its plan and the store's data.
pub fn build(
    ws: &Workspace,
    scenario: &Scenario,
    plan: &Plan,
    data: &BTreeMap<CellKey, CellData>,
) -> Report {
    let empty = CellData::default();
    let mut tests = Vec::new();
    let mut incomplete = Vec::new();
    let mut skipped_on_board = Vec::new();
    for test in &scenario.matrix.test {
        let Some(recipe) = ws.recipes.get(test) else {
            continue;
        };
        let primary = recipe.primary_metrics();
        let metrics = table_metrics(recipe, plan, data, test);
        let axes = varying_axes(
            plan.cells
                .iter()
                .filter(|c| &c.address.test == test)
                .map(|c| &c.address),
        );
        let mut rows = Vec::new();
        let mut series_charts = Vec::new();
        for cell in plan.cells.iter().filter(|c| &c.address.test == test) {
            let d = data.get(&cell.key).unwrap_or(&empty);
            if recipe.series {
                series_charts.extend(series_chart_of(d, &axes, &cell.address));
            }
            let st = state::state(cell, &primary, d);
            let runs = match (&st, cell.method.runs.target) {
                (CellState::Complete { have, rule }, Some(_)) => Some(format!(
                    "{have}, {}",
                    match rule {
                        state::StopRule::TargetReached => "target reached",
                        state::StopRule::MaxReached => "max reached, target missed",
                        state::StopRule::MinReached => "min reached",
                    }
                )),
                _ => None,
            };
            // A cell the board cannot run is listed with the plan's skipped cells.
            if let CellState::Skipped { reason, .. } = &st {
                skipped_on_board.push(format!("{}: {reason}", cell.address.label()));
            } else if !st.is_complete() {
                incomplete.push(Incomplete {
                    cell: cell.address.label(),
                    state: match st {
                        CellState::Missing { .. } => "not measured".into(),
                        CellState::Partial { have, want } => {
                            format!("partial: {have} of {want} runs")
                        }
                        // The failure's text leaves out its log, whose name holds the
                        // failing session's start time.
                        CellState::Failed { have, want, cause } => {
                            format!("failed ({have} of {want} runs): {cause}")
                        }
                        CellState::Complete { .. } | CellState::Skipped { .. } => String::new(),
                    },
                });
            }
            if d.measured_count() == 0 {
                continue;
            }
            let method = &scenario.method;
            let flagged: Vec<String> = d
                .measured()
                .flat_map(|s| state::flags_of(method, s))
                .collect();
            let flagged_runs = d
                .measured()
                .filter(|s| !state::flags_of(method, s).is_empty())
                .count();
            let values = metrics
                .iter()
                .map(|m| {
                    let xs: Vec<f64> = state::counted(method, d)
                        .filter_map(|s| m.value(&s.metrics, s.ended - s.started))
                        .collect();
                    stat(&xs, method.confidence, &m.unit)
                })
                .collect();
            let mut kinds: Vec<String> = flagged;
            kinds.sort();
            kinds.dedup();
            let warnings_of = |s: &crate::store::Sample| {
                s.telemetry
                    .as_ref()
                    .map(crate::telemetry::warnings_of)
                    .unwrap_or_default()
            };
            let mut warnings: Vec<String> = d.measured().flat_map(warnings_of).collect();
            warnings.sort();
            warnings.dedup();
            let warned_runs = d.measured().filter(|s| !warnings_of(s).is_empty()).count();
            let mut flagged_text = Vec::new();
            if flagged_runs > 0 {
                flagged_text.push(format!(
                    "{flagged_runs} of {} ({}), {}",
                    d.measured_count(),
                    kinds.join(", "),
                    if method.validity.exclude_flagged {
                        "excluded"
                    } else {
                        "included"
                    }
                ));
            }
            if warned_runs > 0 {
                flagged_text.push(format!(
                    "{warned_runs} of {} ({}), included",
                    d.measured_count(),
                    warnings.join(", ")
                ));
            }
            rows.push(Row {
                config: axes.iter().map(|(_, f)| f(&cell.address)).collect(),
                key: cell.key.to_string(),
                values,
                runs,
                flagged: flagged_text.join("; "),
                flagged_runs,
                flags: kinds,
                warned_runs,
                warnings,
                drift: drift_notes(d),
            });
        }
        let mut charts: Vec<String> = metrics
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                let bars: Vec<(String, f64, f64)> = rows
                    .iter()
                    .filter_map(|r: &Row| {
                        let v = r.values.get(i)?;
                        Some((r.config.join(" / "), v.mean?, v.ci_half.unwrap_or(0.0)))
                    })
                    .collect();
                (!bars.is_empty()).then(|| bar_chart(&m.name, &m.unit, &bars))
            })
            .collect();
        charts.extend(series_charts);
        let drift = rows
            .iter()
            .flat_map(|r: &Row| {
                r.drift
                    .iter()
                    .map(|n| format!("{}: {n}", r.config.join(" / ")))
            })
            .collect();
        tests.push(TestTable {
            drift,
            charts,
            any_flagged: rows
                .iter()
                .any(|r: &Row| r.flagged_runs > 0 || r.warned_runs > 0),
            adaptive: scenario.method.runs.target.is_some(),
            test: test.to_string(),
            axes: axes.iter().map(|(n, _)| n.to_string()).collect(),
            description: recipe.description.clone(),
            metrics: metrics
                .iter()
                .map(|m| MetricHeader {
                    name: m.name.clone(),
                    unit: m.unit.clone(),
                    better: match m.better {
                        Better::Higher => "higher is better".into(),
                        Better::Lower => "lower is better".into(),
                    },
                })
                .collect(),
            rows,
        });
    }
    let comparisons = comparisons(ws, scenario, plan, data);
    Report {
        comparison_method: compare::method_text(scenario),
        precision: precision::notes(ws, scenario, plan, data),
        provenance: provenance::provenance(plan, data),
        benchpipe: env!("CARGO_PKG_VERSION").to_string(),
        comparisons,
        title: scenario.title.clone(),
        description: scenario.description.clone(),
        scenario: scenario.name.clone(),
        methodology: methodology(scenario),
        confidence_pct: percent(scenario.method.confidence),
        tests,
        incomplete,
        skipped: plan
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.address.label(), s.reason))
            .chain(skipped_on_board)
            .collect(),
    }
}

/// A test table's metrics: the recipe's, then idle and load watts when any of the
/// table's runs has them (a board with a `[meter]`).
fn table_metrics(
    recipe: &crate::model::Recipe,
    plan: &Plan,
    data: &BTreeMap<CellKey, CellData>,
    test: &crate::model::TestName,
) -> Vec<crate::model::MetricSpec> {
    let mut out = recipe.metrics.clone();
    let series = if recipe.series {
        crate::model::MetricSpec::series().to_vec()
    } else {
        Vec::new()
    };
    for power in crate::model::MetricSpec::power().into_iter().chain(series) {
        let measured = plan
            .cells
            .iter()
            .filter(|c| &c.address.test == test)
            .filter_map(|c| data.get(&c.key))
            .flat_map(|d| d.measured())
            .any(|s| s.metrics.contains_key(&power.name));
        if measured {
            out.push(power);
        }
    }
    out
}

type AxisFn = fn(&Address) -> String;

/// The axes whose value differs among `cells`, in matrix order; the board alone when
/// none does, so every table names what it measured.
fn varying_axes<'a>(
    cells: impl Iterator<Item = &'a Address> + Clone,
) -> Vec<(&'static str, AxisFn)> {
    let all: [(&'static str, AxisFn); 4] = [
        ("image", |a| a.image.to_string()),
        ("board", |a| a.board.to_string()),
        ("storage", |a| {
            a.storage
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_else(|| "—".into())
        }),
        ("filesystem", |a| {
            a.filesystem
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_else(|| "—".into())
        }),
    ];
    let varies = |f: &AxisFn| {
        let mut v: Vec<String> = cells.clone().map(f).collect();
        v.sort();
        v.dedup();
        v.len() > 1
    };
    let mut axes: Vec<_> = all.iter().filter(|(_, f)| varies(f)).copied().collect();
    if axes.is_empty() {
        axes.push(all[1]);
    }
    axes
}

fn stat(xs: &[f64], confidence: f64, unit: &str) -> Stat {
    match stats::summarize(xs, confidence) {
        None => Stat {
            text: "—".into(),
            n: 0,
            mean: None,
            ci_half: None,
            sd: None,
            min: None,
            median: None,
            max: None,
            outliers: 0,
        },
        Some(s) => {
            let outliers = stats::outliers(xs).len();
            let note = match outliers {
                0 => String::new(),
                1 => ", 1 outlier".to_string(),
                k => format!(", {k} outliers"),
            };
            let text = match s.ci_half {
                Some(h) => format!("{} {unit} (n={}{note})", mean_ci(s.mean, h), s.n),
                None => format!("{} {unit} (n={}{note})", number(s.mean), s.n),
            };
            Stat {
                text,
                n: s.n,
                mean: Some(s.mean),
                ci_half: s.ci_half,
                sd: Some(s.sd),
                min: Some(s.min),
                median: Some(s.median),
                max: Some(s.max),
                outliers,
            }
        }
    }
}
