//! Reports: a pure function of (scenario, plan, store contents) -> Markdown, HTML, JSON.
//!
//! `build` makes a report model from the data; exporters render the model. Nothing here
//! reads the clock, the environment or the filesystem, and every collection is ordered,
//! so the same inputs give the same bytes on any machine.

use std::collections::BTreeMap;

use minijinja::{Environment, UndefinedBehavior, Value};
use serde::Serialize;

use crate::model::{Better, Cooldown, Scenario, Workspace};
use crate::plan::state::{self, CellState};
use crate::plan::{Address, Cell, CellKey, Plan};
use crate::stats;
use crate::store::CellData;

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
    /// Cells without enough data yet, with their state.
    pub incomplete: Vec<Incomplete>,
    pub skipped: Vec<String>,
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
pub struct ComparisonRow {
    pub metric: String,
    pub baseline: String,
    pub candidate: String,
    /// `+53.2% (95% CI +40.1% .. +66.3%)`, or why there is no comparison.
    pub difference: String,
    /// `p = 0.0012`.
    pub p: String,
    /// better / worse / no significant difference.
    pub verdict: String,
    pub significant: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Incomplete {
    pub cell: String,
    pub state: String,
}

/// Formats a number with 4 significant digits, no exponent for everyday magnitudes,
/// independent of locale.
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    let decimals = (3 - mag).clamp(0, 9) as usize;
    let s = format!("{x:.decimals$}");
    if s.starts_with("-0") && s.trim_start_matches(['-', '0', '.']).is_empty() {
        s[1..].to_string()
    } else {
        s
    }
}

fn duration_text(secs: f64) -> String {
    let s = secs.round() as u64;
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, m, _) => format!("{h} h {m} min"),
    }
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
    for test in &scenario.matrix.test {
        let Some(recipe) = ws.recipes.get(test) else {
            continue;
        };
        let primary = recipe.primary_metrics();
        let axes = varying_axes(
            plan.cells
                .iter()
                .filter(|c| &c.address.test == test)
                .map(|c| &c.address),
        );
        let mut rows = Vec::new();
        for cell in plan.cells.iter().filter(|c| &c.address.test == test) {
            let d = data.get(&cell.key).unwrap_or(&empty);
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
            if !st.is_complete() {
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
                        CellState::Complete { .. } => String::new(),
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
            let values = recipe
                .metrics
                .iter()
                .map(|m| {
                    let xs: Vec<f64> = state::counted(method, d)
                        .filter_map(|s| s.metrics.get(&m.name).copied())
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
            });
        }
        let charts = recipe
            .metrics
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
        tests.push(TestTable {
            charts,
            any_flagged: rows
                .iter()
                .any(|r: &Row| r.flagged_runs > 0 || r.warned_runs > 0),
            adaptive: scenario.method.runs.target.is_some(),
            test: test.to_string(),
            axes: axes.iter().map(|(n, _)| n.to_string()).collect(),
            description: recipe.description.clone(),
            metrics: recipe
                .metrics
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
            .collect(),
    }
}

type AxisFn = fn(&Address) -> String;

/// Escapes text for SVG/XML.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A horizontal bar chart: one bar per configuration at its mean, with a whisker for
/// its confidence interval. Pure and deterministic: fixed geometry, numbers printed
/// with fixed decimals, no ids that change between renders.
pub fn bar_chart(metric: &str, unit: &str, bars: &[(String, f64, f64)]) -> String {
    const LABEL_W: f64 = 260.0;
    const PLOT_W: f64 = 360.0;
    const ROW_H: f64 = 22.0;
    let top = bars
        .iter()
        .map(|(_, mean, ci)| mean + ci)
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let x = |v: f64| LABEL_W + (v.max(0.0) / top) * PLOT_W;
    let height = 28.0 + ROW_H * bars.len() as f64;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" \
         role=\"img\" aria-label=\"{} ({})\">\n\
         <text x=\"0\" y=\"14\" font-size=\"13\" font-weight=\"bold\">{} ({})</text>\n",
        LABEL_W + PLOT_W + 90.0,
        xml(metric),
        xml(unit),
        xml(metric),
        xml(unit)
    );
    for (i, (label, mean, ci)) in bars.iter().enumerate() {
        let y = 22.0 + ROW_H * i as f64;
        let (x0, xm) = (x(0.0), x(*mean));
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>\n\
             <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#6b8fc7\"/>\n",
            LABEL_W - 6.0,
            y + 13.0,
            xml(label),
            y + 3.0,
            (xm - x0).max(0.5),
            ROW_H - 8.0,
        ));
        if *ci > 0.0 {
            let (lo, hi) = (x(mean - ci), x(mean + ci));
            let mid = y + ROW_H / 2.0 - 1.0;
            svg.push_str(&format!(
                "<path d=\"M{lo:.1} {mid:.1}H{hi:.1}M{lo:.1} {:.1}V{:.1}M{hi:.1} {:.1}V{:.1}\" \
                 stroke=\"#222\" stroke-width=\"1.2\" fill=\"none\"/>\n",
                mid - 4.0,
                mid + 4.0,
                mid - 4.0,
                mid + 4.0
            ));
        }
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>\n",
            x(mean + ci) + 6.0,
            y + 13.0,
            xml(&number(*mean))
        ));
    }
    svg.push_str("</svg>");
    svg
}

/// A short name of a cell's configuration for comparison rows.
fn config_label(a: &Address) -> String {
    let mut parts = vec![a.board.to_string()];
    if let Some(s) = &a.storage {
        parts.push(s.to_string());
    }
    if let Some(f) = &a.filesystem {
        parts.push(f.to_string());
    }
    parts.push(a.image.to_string());
    parts.join(" / ")
}

/// Pairs every candidate cell with the baseline cell it is compared to: the only
/// baseline when there is one, else the baseline that agrees on every axis neither
/// pattern names (so "UASP vs no UASP" pairs the same board and image).
pub fn comparisons(
    ws: &Workspace,
    scenario: &Scenario,
    plan: &Plan,
    data: &BTreeMap<CellKey, CellData>,
) -> Vec<ComparisonRow> {
    let mut rows = Vec::new();
    for c in &scenario.compare {
        let Some(recipe) = ws.recipes.get(&c.test) else {
            continue;
        };
        let Some(spec) = recipe.metrics.iter().find(|m| m.name == c.metric) else {
            continue;
        };
        let cells: Vec<_> = plan
            .cells
            .iter()
            .filter(|x| x.address.test == c.test)
            .collect();
        let baselines: Vec<_> = cells
            .iter()
            .filter(|x| x.address.matches(&c.baseline))
            .collect();
        let named = |axis: fn(&crate::model::CellPattern) -> &Option<String>| {
            axis(&c.baseline).is_some() || axis(&c.candidate).is_some()
        };
        let free: Vec<AxisFn> = [
            (
                named(|p| &p.image),
                (|a: &Address| a.image.to_string()) as AxisFn,
            ),
            (named(|p| &p.board), |a| a.board.to_string()),
            (named(|p| &p.storage), |a| format!("{:?}", a.storage)),
            (named(|p| &p.filesystem), |a| format!("{:?}", a.filesystem)),
        ]
        .into_iter()
        .filter(|(n, _)| !n)
        .map(|(_, f)| f)
        .collect();
        // The runs that count, by the same rule as the tables: a flagged run the method
        // leaves out of a table must not decide a comparison either.
        let values = |cell: &Cell| -> Vec<f64> {
            data.get(&cell.key)
                .map(|d| {
                    state::counted(&cell.method, d)
                        .filter_map(|s| s.metrics.get(&c.metric).copied())
                        .collect()
                })
                .unwrap_or_default()
        };
        for cand in cells
            .iter()
            .filter(|x| x.address.matches(&c.candidate) && !x.address.matches(&c.baseline))
        {
            let base = if baselines.len() == 1 {
                Some(baselines[0])
            } else {
                let same: Vec<_> = baselines
                    .iter()
                    .filter(|b| free.iter().all(|f| f(&b.address) == f(&cand.address)))
                    .collect();
                (same.len() == 1).then(|| *same[0])
            };
            let Some(base) = base else {
                continue;
            };
            let (b, x) = (values(base), values(cand));
            let mut row = ComparisonRow {
                metric: format!("{}.{}", c.test, c.metric),
                baseline: config_label(&base.address),
                candidate: config_label(&cand.address),
                difference: String::new(),
                p: String::new(),
                verdict: String::new(),
                significant: false,
            };
            match stats::compare(
                &b,
                &x,
                scenario.method.confidence,
                stats::DEFAULT_NOISE_BAND,
                spec.better,
            ) {
                Some(cmp) => {
                    // Write-ups often give the difference over the mean of both
                    // ("53% faster" for 172 -> 297 MB/s); shown too, so such numbers
                    // can be checked against this one.
                    let symmetric = (cmp.candidate_mean - cmp.baseline_mean)
                        / ((cmp.candidate_mean + cmp.baseline_mean) / 2.0)
                        * 100.0;
                    row.difference = format!(
                        "{:+.1}% ({}% CI {:+.1}% .. {:+.1}%; {:+.1}% of the mean of both)",
                        cmp.diff_pct,
                        percent(cmp.confidence),
                        cmp.ci_low_pct,
                        cmp.ci_high_pct,
                        symmetric
                    );
                    row.p = format!("p = {}", p_value(cmp.welch.p));
                    row.verdict = cmp.verdict.to_string();
                    row.significant = cmp.significant;
                }
                None => {
                    row.difference = format!(
                        "needs at least 2 runs on each side (have {} and {})",
                        b.len(),
                        x.len()
                    );
                    row.verdict = "not enough data".into();
                }
            }
            rows.push(row);
        }
    }
    rows
}

/// A p-value for people: 3 significant digits, scientific below 0.001.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.2e}")
    } else {
        format!("{p:.3}")
    }
}

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

/// A number without needless trailing zeros: 80.0 -> "80", 0.5 -> "0.5".
pub fn trimmed(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A fraction as a percentage without needless digits: 0.95 -> "95", 0.025 -> "2.5".
pub fn percent(fraction: f64) -> String {
    trimmed(fraction * 100.0)
}

/// `mean ± half`, with the half-width to two significant digits and the mean rounded
/// to the same decimal place, so no digit is shown that the interval says is noise.
pub fn mean_ci(mean: f64, half: f64) -> String {
    if !(half.is_finite() && half > 0.0 && mean.is_finite()) {
        return format!("{} ± {}", number(mean), number(half));
    }
    let decimals = (1 - half.log10().floor() as i32).clamp(0, 9) as usize;
    format!("{mean:.decimals$} ± {half:.decimals$}")
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

/// One output format of a report.
pub trait Exporter {
    /// The file name the report is written under, in the report's directory.
    fn file_name(&self) -> &'static str;
    fn render(&self, report: &Report) -> Result<Vec<u8>, String>;
}

fn render_template(name: &str, source: &str, report: &Report) -> Result<Vec<u8>, String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    if name.ends_with(".md") {
        env.set_formatter(|out, _state, value| {
            let text = match value.as_str() {
                Some(s) => s.to_string(),
                None => value.to_string(),
            };
            out.write_str(&markdown_escape(&text))
                .map_err(|_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write"))
        });
    }
    env.add_template(name, source).map_err(|e| e.to_string())?;
    let tmpl = env.get_template(name).map_err(|e| e.to_string())?;
    let mut out = tmpl
        .render(Value::from(minijinja::value::Serde(report)))
        .map_err(|e| format!("rendering {name}: {e}"))?;
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out.into_bytes())
}

/// Makes a value inert in Markdown: no raw HTML or entities (`<`, `>`, `&`), no
/// table cell break (`|`), no code span, emphasis or link (`` ` ``, `*`, `[`, `]`), and
/// no control characters. Newlines stay, for multi-line descriptions.
pub fn markdown_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '|' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push('\n'),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

pub struct Markdown;
pub struct Html;
pub struct Json;

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "index.md"
    }
    fn render(&self, report: &Report) -> Result<Vec<u8>, String> {
        render_template("index.md", include_str!("templates/index.md"), report)
    }
}

impl Exporter for Html {
    fn file_name(&self) -> &'static str {
        "index.html"
    }
    fn render(&self, report: &Report) -> Result<Vec<u8>, String> {
        render_template("index.html", include_str!("templates/index.html"), report)
    }
}

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "report.json"
    }
    fn render(&self, report: &Report) -> Result<Vec<u8>, String> {
        let mut b = serde_json::to_vec_pretty(report).map_err(|e| e.to_string())?;
        b.push(b'\n');
        Ok(b)
    }
}

/// Every exporter, in the order files are written.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![Box::new(Markdown), Box::new(Html), Box::new(Json)]
}

#[cfg(test)]
mod tests {
    use super::number;
    use super::*;
    use crate::model::CellPattern;
    use crate::plan::{expand, fixtures};
    use crate::store::{FORMAT, RunKind, Sample};

    fn with_samples(values: &[f64]) -> CellData {
        CellData {
            samples: values
                .iter()
                .enumerate()
                .map(|(i, v)| Sample {
                    format: FORMAT,
                    seq: i as u32 + 1,
                    kind: RunKind::Measured,
                    session: "s".into(),
                    started: 1000.0 + i as f64,
                    ended: 1001.0 + i as f64,
                    metrics: BTreeMap::from([("random_read".to_string(), *v)]),
                    flags: vec![],
                    telemetry: None,
                    command: "fio".into(),
                    log: String::new(),
                    order: None,
                    board_seq: None,
                })
                .collect(),
            ..CellData::default()
        }
    }

    /// The fixture study with one comparison: USB storage against the SD card.
    fn usb_against_sd() -> (
        crate::model::Workspace,
        crate::model::Scenario,
        crate::plan::Plan,
    ) {
        let mut ws = fixtures::workspace();
        ws.scenarios[0].compare.push(crate::model::Compare {
            test: "disk-4k".into(),
            metric: "random_read".into(),
            baseline: CellPattern {
                storage: Some("sd".into()),
                ..CellPattern::default()
            },
            candidate: CellPattern {
                storage: Some("usb".into()),
                filesystem: Some("as-is".into()),
                ..CellPattern::default()
            },
        });
        let scenario = ws.scenarios[0].clone();
        let plan = expand(&ws, &scenario);
        (ws, scenario, plan)
    }

    /// The seed's UASP table (14.41 vs 20.59 MB/s 4K random read), as three runs each.
    #[test]
    fn a_compare_row_says_how_much_better_and_whether_it_is_significant() {
        let (ws, scenario, plan) = usb_against_sd();
        let mut data = BTreeMap::new();
        for c in &plan.cells {
            let v: &[f64] = match (
                c.address.storage.as_ref().map(|s| s.as_str()),
                c.address.board.as_str(),
            ) {
                (Some("sd"), "pi-1") => &[14.2, 14.5, 14.53],
                (Some("usb"), "pi-1") => &[20.4, 20.7, 20.67],
                (Some("sd"), "pi-2") => &[14.2, 14.5, 14.53],
                (Some("usb"), "pi-2") => &[14.0, 14.9, 14.33],
                _ => &[1.0, 1.1, 1.2],
            };
            data.insert(c.key.clone(), with_samples(v));
        }
        let r = build(&ws, &scenario, &plan, &data);
        assert_eq!(r.comparisons.len(), 2, "{:#?}", r.comparisons);
        let pi1 = &r.comparisons[0];
        assert_eq!(pi1.baseline, "pi-1 / sd / as-is / installed");
        assert_eq!(pi1.candidate, "pi-1 / usb / as-is / installed");
        assert!(
            pi1.difference.starts_with("+42.9% (95% CI"),
            "{}",
            pi1.difference
        );
        assert_eq!(pi1.verdict, "better");
        assert!(pi1.significant);
        let pi2 = &r.comparisons[1];
        assert!(!pi2.significant, "{pi2:?}");
        assert_eq!(pi2.verdict, "no significant difference");
        assert!(
            pi1.difference.contains("+35.3% of the mean of both"),
            "the seed's 35%: {}",
            pi1.difference
        );
        let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
        assert!(md.contains("| disk-4k.random_read | pi-1 / sd / as-is / installed | pi-1 / usb / as-is / installed | +42.9%"), "{md}");
        assert!(md.contains("**better**"), "{md}");
    }

    /// A run whose throttle state is unknown is counted and shown like a flagged
    /// one, and stays in the statistics even when flagged runs are left out.
    #[test]
    fn a_throttle_state_unknown_is_a_warning_that_excludes_nothing() {
        let (ws, mut scenario, _) = usb_against_sd();
        scenario.method.validity.exclude_flagged = true;
        let plan = expand(&ws, &scenario);
        let mut data = BTreeMap::new();
        for c in &plan.cells {
            let mut d = with_samples(&[14.2, 14.5, 14.53]);
            for (i, s) in d.samples.iter_mut().enumerate() {
                let mut t = crate::telemetry::TelemetrySummary::default();
                if i < 2 {
                    t.throttled_state = Some("unknown".into());
                    t.throttled_error = Some("vcgencmd get_throttled failed: exit 255".into());
                }
                if i == 2 {
                    t.swap_out_pages = Some(10);
                }
                s.telemetry = Some(serde_json::to_value(&t).unwrap());
            }
            data.insert(c.key.clone(), d);
        }
        let r = build(&ws, &scenario, &plan, &data);
        let row = &r.tests[0].rows[0];
        assert_eq!(
            row.flagged,
            "1 of 3 (swapping), excluded; 2 of 3 (throttle state unknown), included"
        );
        assert_eq!((row.flagged_runs, row.warned_runs), (1, 2));
        assert_eq!(row.values[0].n, 2, "only the swapping run is left out");
        assert!(r.tests[0].any_flagged);
        let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
        assert!(
            md.contains("2 of 3 (throttle state unknown), included"),
            "{md}"
        );
    }

    /// Flagged runs that the method leaves out of the tables must not decide a
    /// comparison either: nine throttled runs would otherwise make the USB "better".
    #[test]
    fn comparisons_leave_out_the_flagged_runs_the_tables_leave_out() {
        let (mut ws, _, _) = usb_against_sd();
        ws.scenarios[0].method.validity.exclude_flagged = true;
        let scenario = ws.scenarios[0].clone();
        let plan = expand(&ws, &scenario);
        let mut data = BTreeMap::new();
        for c in &plan.cells {
            let usb = c
                .address
                .storage
                .as_ref()
                .is_some_and(|s| s.as_str() == "usb");
            let mut d = with_samples(if usb {
                &[
                    14.0, 14.9, 14.33, 30.0, 30.1, 30.2, 29.9, 30.0, 30.1, 30.2, 29.9, 30.0,
                ]
            } else {
                &[14.2, 14.5, 14.53]
            });
            if usb {
                for s in &mut d.samples[3..] {
                    s.flags = vec!["throttled".into()];
                }
            }
            data.insert(c.key.clone(), d);
        }
        let r = build(&ws, &scenario, &plan, &data);
        assert!(!r.comparisons.is_empty());
        for row in &r.comparisons {
            assert_eq!(row.verdict, "no significant difference", "{row:?}");
        }
    }

    #[test]
    fn titles_and_descriptions_are_inert_in_markdown() {
        let (mut ws, _, _) = usb_against_sd();
        ws.scenarios[0].title = "<script>alert(1)</script> | a & b `x` [l](http://e)".into();
        ws.scenarios[0].description = Some("<img src=x onerror=alert(1)>\nline".into());
        ws.recipes.get_mut(&"xz".into()).unwrap().description = "*x* <b>".into();
        let scenario = ws.scenarios[0].clone();
        let plan = expand(&ws, &scenario);
        let r = build(&ws, &scenario, &plan, &BTreeMap::new());
        let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
        assert!(
            !md.contains("<script") && !md.contains("<img") && !md.contains("<b>"),
            "{md}"
        );
        assert!(
            md.starts_with(
                "# &lt;script&gt;alert(1)&lt;/script&gt; \\| a &amp; b \\`x\\` \\[l\\](http://e)\n"
            ),
            "{md}"
        );
        assert!(
            md.contains("&lt;img src=x onerror=alert(1)&gt;\nline"),
            "{md}"
        );
        assert!(md.contains("\\*x\\* &lt;b&gt;"), "{md}");
    }

    #[test]
    fn numbers_have_four_significant_digits() {
        assert_eq!(number(12.3456), "12.35");
        assert_eq!(number(0.012345), "0.01235");
        assert_eq!(number(123456.0), "123456");
        assert_eq!(number(9.0), "9.000");
        assert_eq!(number(-0.00001), "-0.00001000");
        assert_eq!(number(0.0), "0");
    }

    /// The whole report of a small study, as Markdown and HTML. Nothing in a report is
    /// volatile (no clock, no absolute path), so the snapshots are compared whole.
    #[test]
    fn report_snapshots() {
        let (ws, scenario, plan) = usb_against_sd();
        let mut data = BTreeMap::new();
        for (i, c) in plan.cells.iter().enumerate() {
            // One cell left unmeasured, to show the "Not complete" section.
            if i == 2 {
                continue;
            }
            let base = 10.0 + i as f64 * 3.0;
            data.insert(
                c.key.clone(),
                with_samples(&[base, base * 1.02, base * 0.97, base * 1.01]),
            );
        }
        let r = build(&ws, &scenario, &plan, &data);
        insta::assert_snapshot!(
            "report_md",
            String::from_utf8(Markdown.render(&r).unwrap()).unwrap()
        );
        insta::assert_snapshot!(
            "report_html",
            String::from_utf8(Html.render(&r).unwrap()).unwrap()
        );
    }

    #[test]
    fn a_bar_chart_scales_to_the_widest_interval_and_escapes_labels() {
        use super::bar_chart;
        let svg = bar_chart(
            "random_read",
            "MB/s",
            &[
                ("pi <1> & co".into(), 10.0, 2.0),
                ("pi-2".into(), 20.0, 4.0),
            ],
        );
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("pi &lt;1&gt; &amp; co"), "{svg}");
        // 24 (20 + 4) is the full 360 px plot: the second bar is 300 px, the first 150.
        assert!(svg.contains("width=\"300.0\""), "{svg}");
        assert!(svg.contains("width=\"150.0\""), "{svg}");
        assert_eq!(
            svg,
            bar_chart(
                "random_read",
                "MB/s",
                &[
                    ("pi <1> & co".into(), 10.0, 2.0),
                    ("pi-2".into(), 20.0, 4.0)
                ]
            )
        );
    }

    #[test]
    fn the_interval_decides_the_digits_of_the_mean() {
        use super::{mean_ci, percent};
        assert_eq!(mean_ci(181.7, 56.18), "182 ± 56");
        assert_eq!(mean_ci(6.337, 0.5353), "6.34 ± 0.54");
        assert_eq!(mean_ci(0.07, 0.02484), "0.070 ± 0.025");
        assert_eq!(mean_ci(44367.0, 13716.0), "44367 ± 13716");
        assert_eq!(percent(0.95), "95");
        assert_eq!(percent(0.025), "2.5");
    }
}
