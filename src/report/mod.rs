//! Reports: a pure function of (scenario, plan, store contents) -> Markdown, HTML, JSON,
//! CSV.
//!
//! `build` makes a report model from the data; exporters render the model. Nothing here
//! reads the clock, the environment or the filesystem, and every collection is ordered,
//! so the same inputs give the same bytes on any machine. The plan may hold cells of
//! boards whose file is gone (`plan::stored`): everything shown comes from the scenario,
//! the recipes and what the store kept, never from a board file.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::{Axis, MetricSpec, Scenario, TestName, Workspace};
use crate::plan::{CellKey, Plan};
use crate::store::CellData;

mod across;
mod cells;
mod chart;
mod compare;
mod compared;
mod csv;
mod export;
mod format;
pub mod history;
mod history_csv;
mod history_section;
mod history_svg;
mod history_text;
mod json;
pub mod labels;
mod lazy;
mod legend;
mod lists;
mod members;
mod method;
pub mod pairing;
mod precision;
mod provenance;
mod rows;
mod run_metrics;
mod sections;
mod series;
mod shared;
mod table;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_compare;
#[cfg(test)]
mod tests_exports;
#[cfg(test)]
mod tests_history;
#[cfg(test)]
mod tests_history_section;
#[cfg(test)]
mod tests_hostile;
#[cfg(test)]
mod tests_provenance;
#[cfg(test)]
mod tests_stored;
#[cfg(test)]
mod tests_tables;

pub use across::{Across, AcrossConfig, Presence, Side, across, markdown as across_markdown};
pub use chart::{Bar, ChartLabels, ChartTitle, bar_chart};
pub use compare::{ComparisonRow, Pooled, comparisons};
pub use compared::{ComparedRow, ComparisonTable};
pub use csv::{CSV_COLUMNS, Csv, CsvRows};
pub use export::{
    ExportError, Exporter, Html, Markdown, SharedContext, TEMPLATE_DIR, TEMPLATE_FUEL,
    TEMPLATE_MAX_BYTES, TEMPLATE_MAX_OUTPUT, TEMPLATE_NAMES, Template, Templates, exporters,
    exporters_with, markdown_escape,
};
pub use format::{mean_ci, number, p_value, percent, trimmed};
pub use history_section::{HistorySection, HistoryTest, section as history_section};
pub use history_text::text as history_text;
pub use json::{Json, REPORT_FORMAT};
pub use method::Method;
pub use precision::{PrecisionNotes, WideInterval, WideValue};
pub use provenance::{Fact, Provenance, host_key_fingerprint};
pub use sections::{Count, Failed, Incomplete, Skipped, Validity, flag_words};

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub title: String,
    pub description: Option<String>,
    pub scenario: String,
    /// The method in one line (`Method::line`).
    pub methodology: String,
    pub method: Method,
    pub confidence_pct: String,
    /// The scenario's own tables (`[[report.table]]`), then one per test; shared with
    /// the template context, which reads them lazily (`lazy.rs`).
    #[serde(serialize_with = "lazy::serialize_tables")]
    pub tables: Vec<std::sync::Arc<Table>>,
    /// `[[report.compare]]`: candidates against their baseline, with significance.
    pub comparisons: Vec<ComparisonRow>,
    /// The comparisons as the Markdown shows them: a table per metric and percent
    /// convention, rows named by the tables' labels (`compared.rs`; not in report.json).
    pub comparison_tables: Vec<ComparisonTable>,
    /// Cells whose runs raised validity flags or warnings.
    pub validity: Vec<Validity>,
    /// How comparison rows are judged, in words (`compare::method_text`).
    pub comparison_method: String,
    /// Intervals wider than `[report] wide_ci` and what would narrow them; the outlier
    /// rule where outliers are counted (`precision.rs`).
    pub precision: PrecisionNotes,
    /// Cells without enough data yet, with their state.
    pub incomplete: Vec<Incomplete>,
    /// Cells whose last attempt failed, with the cause.
    pub failed: Vec<Failed>,
    /// Cells that cannot apply, with the reason: the plan's (a storage with no device)
    /// and those the last apply found on the board (a tool not installed).
    pub skipped: Vec<Skipped>,
    /// Per configuration, what produced its numbers, from the facts stored with its
    /// cells; a fact that differs between them is a warning (`provenance.rs`).
    pub provenance: Vec<Provenance>,
    /// The facts every configuration that records them shares, told once; the
    /// templates show these, then `provenance_own` (`shared.rs`; not in report.json).
    pub provenance_shared: Vec<Fact>,
    /// Per configuration, only the facts that are not in `provenance_shared`, its
    /// cells and warnings.
    pub provenance_own: Vec<Provenance>,
    /// The benchpipe that rendered the report (each configuration shows the one that
    /// measured it, where its facts say).
    pub benchpipe: String,
    /// Per test, the configurations measured in more than one run: their per-run means
    /// and change points (`history_section.rs`); None when there are none, and from
    /// `build` (the caller adds it from the store's runs: `history_section`). Left out
    /// of the template context when None, so a report without one has the context,
    /// and the bytes, it had before the section existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<HistorySection>,
    /// `results.csv`'s rows: every stored run of the report's cells, cell by cell with
    /// the cell's provenance (not in the templates' context).
    #[serde(skip)]
    pub csv_rows: CsvRows,
    /// The metric columns of `results.csv`: `(test, metric)` in table order.
    #[serde(skip)]
    pub sample_metrics: Vec<(String, MetricSpec)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Table {
    /// `test-xz`, `table-1`: unique in the report, for anchors.
    pub id: String,
    /// The test's name, or the scenario table's title.
    pub title: String,
    pub description: String,
    /// The tests whose cells the table shows.
    pub tests: Vec<String>,
    /// The axes a row stands for (the board when none varies).
    pub axes: Vec<String>,
    /// The first column's header: the axes, `board, storage`.
    pub row_header: String,
    /// The axis whose values are columns, if any.
    pub pivot: Option<String>,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    /// Whether rows say how many runs the precision target took.
    pub adaptive: bool,
    /// Whether any row has flagged runs (the table then shows a column for them).
    pub any_flagged: bool,
    /// The number of runs every value of the table has, if one (the Markdown says it
    /// once under the table); else `n_column`: each row says its own.
    pub same_n: Option<usize>,
    pub n_column: bool,
    /// The Markdown table's legend, a sentence each: n, the direction, a model every
    /// row shares, what each footnote mark of a value means (`legend.rs`).
    pub legend: Vec<String>,
    /// `config: note` for every row's drift choices, listed under the table.
    pub drift: Vec<String>,
    /// One inline SVG bar chart per column (mean with its confidence interval), for
    /// the HTML report; empty when there is nothing to draw.
    pub charts: Vec<Chart>,
}

/// A chart's SVG markup, which benchpipe escaped as it drew it. A template writes it as
/// it is (`export.rs`'s formatters know it). It is held in a minijinja object, which
/// takes the markup as drawn: a big report's charts are tens of megabytes, which a safe
/// string would copy once more, after the chart is drawn.
#[derive(Clone, Debug)]
pub struct Chart(minijinja::Value);

/// A chart's markup, as the template context holds it.
#[derive(Debug)]
pub(crate) struct ChartMarkup(String);

impl minijinja::value::Object for ChartMarkup {
    fn repr(self: &std::sync::Arc<Self>) -> minijinja::value::ObjectRepr {
        minijinja::value::ObjectRepr::Plain
    }
    /// As text, the markup (what `|safe` and `~` see).
    fn render(self: &std::sync::Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Chart {
    pub fn new(markup: String) -> Chart {
        Chart(minijinja::Value::from_object(ChartMarkup(markup)))
    }

    pub fn markup(&self) -> &str {
        ChartMarkup::of(&self.0).unwrap_or_default()
    }

    /// The chart as a template reads it (shared, not copied).
    pub(crate) fn value(&self) -> minijinja::Value {
        self.0.clone()
    }
}

impl ChartMarkup {
    /// The markup, when `value` is a chart.
    pub(crate) fn of(value: &minijinja::Value) -> Option<&str> {
        value
            .downcast_object_ref::<ChartMarkup>()
            .map(|m| m.0.as_str())
    }
}

impl Serialize for Chart {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.markup())
    }
}

/// A table column: one test's metric (and one pivot value).
#[derive(Clone, Debug, Serialize)]
pub struct Column {
    pub test: String,
    /// The metric's name.
    pub name: String,
    /// What the column is called: the scenario's label, the recipe's, or the name.
    pub label: String,
    /// The Markdown header: the label, the pivot value's, the unit, and an arrow for
    /// the direction when a table's columns do not share one.
    pub header: String,
    pub unit: String,
    /// "higher is better" / "lower is better".
    pub better: String,
    /// The pivot value's label, for a pivoted column.
    pub pivot: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// What the row is: its axes' labels, `Raspberry Pi 4 Model B, Kingston A400 SSD`.
    pub label: String,
    /// Values of the row's axes, in `Table::axes` order (names, not labels).
    pub config: Vec<String>,
    /// The Markdown row's cell per axis: the value's label, or its name when the
    /// table's legend says the model once.
    pub axis_cells: Vec<String>,
    /// The runs of its values, distinct counts in column order (`3`, `3/5`).
    pub n: String,
    /// The keys of the row's measured cells.
    pub keys: Vec<String>,
    /// One per column.
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
    /// `12.3 ± 0.4 MB/s (n=3, 1 flagged, 1 outlier)` or `—`.
    pub text: String,
    /// The value alone: `12.3 ± 0.4 MB/s`, or `—`.
    pub value: String,
    /// What a Markdown table cell shows: `12.3 ± 0.4` and footnote marks (`¹`), the
    /// unit in the header and the marks explained in the legend.
    pub brief: String,
    /// What the parentheses say: `n=3, 1 flagged, 1 outlier`, or empty.
    pub note: String,
    /// The key of the cell the value comes from.
    pub cell: Option<String>,
    pub n: usize,
    pub mean: Option<f64>,
    pub ci_half: Option<f64>,
    pub sd: Option<f64>,
    pub min: Option<f64>,
    pub median: Option<f64>,
    pub max: Option<f64>,
    /// Values classified as outliers (kept in the statistics, shown here).
    pub outliers: usize,
    /// Measured runs of the cell with a validity flag.
    pub flagged: usize,
    /// Of those, the runs left out of the statistics (`exclude_flagged`).
    pub excluded: usize,
}

impl Stat {
    pub fn empty() -> Stat {
        Stat {
            text: "—".into(),
            value: "—".into(),
            brief: "—".into(),
            note: String::new(),
            cell: None,
            n: 0,
            mean: None,
            ci_half: None,
            sd: None,
            min: None,
            median: None,
            max: None,
            outliers: 0,
            flagged: 0,
            excluded: 0,
        }
    }
}

/// What the user chose when the board changed under a cell's runs, one line each.
pub(super) fn drift_notes(d: &CellData) -> Vec<String> {
    let Some(f) = &d.fingerprint else {
        return Vec::new();
    };
    f.decisions
        .iter()
        .map(|c| {
            let what = crate::plan::drift::summary(&crate::plan::drift::changes(&c.from, &c.to));
            match c.choice {
                crate::store::OnDrift::Redo => format!(
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

/// The temperature and clock over a cell's last measured run, when it kept a series of
/// at least two points (`series = true` recipes).
fn series_chart_of(d: &CellData, label: &str) -> Option<String> {
    let last = d.measured().last()?;
    // As a value: one run per cell, and the same reading whichever form it is in.
    let telemetry = last.telemetry.as_ref()?.to_value();
    let series = telemetry.get("series")?.as_array()?;
    let num = |p: &serde_json::Value, k: &str| {
        p.get(k)
            .and_then(serde_json::Value::as_f64)
            .filter(|v| v.is_finite())
    };
    let points: Vec<(f64, Option<f64>, Option<f64>)> = series
        .iter()
        .filter_map(|p| Some((num(p, "t")?, num(p, "temp_c"), num(p, "freq_mhz"))))
        .collect();
    if points.len() < 2 {
        return None;
    }
    let title = if label.is_empty() {
        "temperature and clock over the last run".to_string()
    } else {
        format!("{label}: temperature and clock over the last run")
    };
    Some(series::series_chart(&title, &points))
}

/// `items` grouped by `key`: groups in the order of their first item, items in theirs.
/// The map only finds a key's group, so its order never shows in a report.
fn groups_in_order<T, K: Clone + Eq + std::hash::Hash>(
    items: impl IntoIterator<Item = T>,
    key: impl Fn(&T) -> K,
) -> Vec<(K, Vec<T>)> {
    let mut groups: Vec<(K, Vec<T>)> = Vec::new();
    let mut place: std::collections::HashMap<K, usize> = std::collections::HashMap::new();
    for item in items {
        let k = key(&item);
        if let Some(&i) = place.get(&k) {
            groups[i].1.push(item);
        } else {
            place.insert(k.clone(), groups.len());
            groups.push((k, vec![item]));
        }
    }
    groups
}

/// Builds the report model of one scenario from its plan and the store's data.
pub fn build(
    ws: &Workspace,
    scenario: &Scenario,
    plan: &Plan,
    data: &BTreeMap<CellKey, CellData>,
) -> Report {
    build_leaving(ws, scenario, plan, data).0
}

/// What building a report leaves to free: its views of the cells, a big report's
/// hundreds of thousands of small values. A caller with other work for every core (the
/// exporters) frees them beside that work, not before it (`build_leaving`).
pub struct Leftovers<'a> {
    /// Held only to be dropped.
    _views: Vec<cells::View<'a>>,
}

/// The data of a cell the store has nothing for.
static NO_DATA: std::sync::LazyLock<CellData> = std::sync::LazyLock::new(CellData::default);

/// The tests a report has a table and columns for, in their order: `matrix.test`'s, then
/// those that only an `include` brings in (a glob or a name outside `matrix.test`), in
/// the order of their first cell, so that no measured test is left out of the tables.
fn measured_tests<'a>(scenario: &'a Scenario, views: &'a [cells::View<'_>]) -> Vec<&'a TestName> {
    let mut out: Vec<&TestName> = scenario.matrix.test.iter().collect();
    let mut seen: std::collections::BTreeSet<&TestName> = out.iter().copied().collect();
    for v in views {
        let test = &v.address().test;
        if seen.insert(test) {
            out.push(test);
        }
    }
    out
}

/// `build`, leaving the views it built the report from to the caller to free.
pub fn build_leaving<'a>(
    ws: &'a Workspace,
    scenario: &Scenario,
    plan: &'a Plan,
    data: &'a BTreeMap<CellKey, CellData>,
) -> (Report, Leftovers<'a>) {
    use crate::parallel::Slot;
    let ordered = cells::order(scenario, plan.cells.iter());
    let views = cells::views(&ws.recipes, scenario, &ordered, data, &NO_DATA);
    let confidence = scenario.method.confidence;
    let label_of = |test: &TestName, m: &MetricSpec| {
        scenario
            .report
            .labels
            .metric(test, &m.name)
            .unwrap_or(m.label())
            .to_string()
    };

    // Each test's views, in report order, sorted out in one pass: a big report's views
    // lie far apart in memory, and a pass per test would walk them all again each time.
    let mut by_test: BTreeMap<&TestName, Vec<&cells::View>> = BTreeMap::new();
    for v in &views {
        by_test.entry(&v.address().test).or_default().push(v);
    }
    // Each test's columns, in matrix order: its table's and results.csv's.
    let mut test_columns = Vec::new();
    let mut sample_metrics = Vec::new();
    for test in measured_tests(scenario, &views) {
        let Some(recipe) = ws.recipes.get(test) else {
            continue;
        };
        let of_test = by_test.get(test).cloned().unwrap_or_default();
        let metrics = table_metrics(recipe, &of_test);
        for m in &metrics {
            sample_metrics.push((test.to_string(), m.clone()));
        }
        test_columns.push((test, recipe, of_test, metrics));
    }

    // The parts only read the views: a big report builds them on every core, as jobs
    // taken in turn by one thread per core, the longest first (results.csv's rows,
    // provenance, comparisons), then each test's table, so that the cores finish
    // together. Comparisons and provenance see the cells in report order, so that a
    // report made without board files lists them as one made with them does.
    // The rows' labels, made by the first table job that needs them (another waits for
    // them), so that the other jobs do not wait for them first.
    let axis_labels = std::sync::OnceLock::new();
    let labels =
        || axis_labels.get_or_init(|| labels::AxisLabels::new(&scenario.report.labels, &views));
    let csv_rows = Slot::default();
    let provenance = Slot::default();
    let comparisons = Slot::default();
    let validity = Slot::default();
    let method = Slot::default();
    let precision = Slot::default();
    let states = Slot::default();
    let own_tables = Slot::default();
    let test_tables: Vec<Slot<Table>> = test_columns.iter().map(|_| Slot::default()).collect();
    {
        let (views, labels, label_of) = (&views, &labels, &label_of);
        let sample_metrics = &sample_metrics;
        let mut parts: Vec<Box<dyn FnOnce() + Send + '_>> = vec![
            Box::new(|| csv_rows.set(csv::rows(scenario, views, sample_metrics))),
            Box::new(|| provenance.set(provenance::provenance(views))),
            Box::new(|| comparisons.set(compare::comparisons_of(ws, scenario, &ordered, data))),
            Box::new(|| validity.set(sections::validity(views))),
            Box::new(|| method.set(method::method(scenario, views))),
            Box::new(|| precision.set(precision::notes(ws, scenario, views))),
            Box::new(|| states.set(sections::states(scenario, plan, views))),
            Box::new(|| own_tables.set(scenario_tables(ws, scenario, views, labels(), label_of))),
        ];
        for (columns, slot) in test_columns.iter().zip(&test_tables) {
            parts.push(Box::new(move || {
                slot.set(test_table(columns, labels(), label_of, confidence));
            }));
        }
        crate::parallel::jobs(parts);
    }
    // Every job ran to its end, or `jobs` passed its panic on.
    let done = "every part of the report was built";
    let mut tables = own_tables.take().expect(done);
    tables.extend(test_tables.into_iter().map(|t| t.take().expect(done)));
    let (incomplete, failed, skipped) = states.take().expect(done);
    let (csv_rows, provenance, comparisons) = (
        csv_rows.take().expect(done),
        provenance.take().expect(done),
        comparisons.take().expect(done),
    );
    let (validity, method, precision) = (
        validity.take().expect(done),
        method.take().expect(done),
        precision.take().expect(done),
    );
    let (provenance_shared, provenance_own) = shared::split(&provenance);
    let title_of = |metric: &str| -> String {
        let (test, name) = metric.split_once('.').unwrap_or((metric, ""));
        let test: TestName = test.into();
        match ws.recipes.get(&test).and_then(|r| r.metric(name)) {
            Some(m) => {
                let better = match m.better {
                    crate::model::Better::Higher => "higher is better",
                    crate::model::Better::Lower => "lower is better",
                };
                format!("{test}: {} ({}, {better})", label_of(&test, &m), m.unit)
            }
            None => metric.to_string(),
        }
    };
    let comparison_tables =
        compared::tables(&comparisons, labels(), &title_of, &percent(confidence));
    let report = Report {
        provenance_shared,
        provenance_own,
        comparison_tables,
        comparison_method: compare::method_text(
            scenario,
            comparisons
                .iter()
                .any(|c| c.percent == crate::model::Percent::OfMean),
        ),
        precision,
        provenance,
        benchpipe: env!("CARGO_PKG_VERSION").to_string(),
        history: None,
        comparisons,
        title: scenario.title.clone(),
        description: scenario.description.clone(),
        scenario: scenario.name.clone(),
        methodology: method.line(),
        confidence_pct: percent(confidence),
        validity,
        csv_rows,
        sample_metrics,
        method,
        tables: tables.into_iter().map(std::sync::Arc::new).collect(),
        incomplete,
        failed,
        skipped,
    };
    (report, Leftovers { _views: views })
}

/// One test's table: a row per configuration, a column per metric, a bar chart per
/// metric (and a series chart per configuration for a `series` recipe).
fn test_table(
    (test, recipe, of_test, metrics): &(
        &TestName,
        &crate::model::Recipe,
        Vec<&cells::View>,
        Vec<MetricSpec>,
    ),
    labels: &labels::AxisLabels,
    label_of: &(dyn Fn(&TestName, &MetricSpec) -> String + Sync),
    confidence: f64,
) -> Table {
    let shape = table::Shape {
        id: format!("test-{test}"),
        title: test.to_string(),
        description: recipe.description.clone(),
        columns: metrics
            .iter()
            .map(|metric| table::Want {
                label: label_of(test, metric),
                test: (*test).clone(),
                metric: metric.clone(),
            })
            .collect(),
        rows: None,
        pivot: None,
        charts: true,
    };
    // Its test's cells, sorted out of the views once for every table: a big report's
    // views lie far apart in memory.
    let mut t = table::build(shape, of_test, labels, confidence);
    if recipe.series {
        let axes: Vec<Axis> = t.axes.iter().filter_map(|a| Axis::parse(a)).collect();
        t.charts.extend(
            of_test
                .iter()
                .filter(|v| v.measured() > 0)
                .filter_map(|v| series_chart_of(v.data, &labels.row(&axes, v.address())))
                .map(Chart::new),
        );
    }
    t
}

/// The scenario's own tables (`[[report.table]]`), in its order.
fn scenario_tables(
    ws: &Workspace,
    scenario: &Scenario,
    views: &[cells::View],
    labels: &labels::AxisLabels,
    label_of: &dyn Fn(&TestName, &MetricSpec) -> String,
) -> Vec<Table> {
    let confidence = scenario.method.confidence;
    let mut tables = Vec::new();
    for (i, spec) in scenario.report.tables.iter().enumerate() {
        let columns = spec
            .columns
            .iter()
            .filter_map(|c| {
                let metric = ws.recipes.get(&c.test)?.metric(&c.metric)?;
                Some(table::Want {
                    label: c
                        .label
                        .clone()
                        .unwrap_or_else(|| label_of(&c.test, &metric)),
                    test: c.test.clone(),
                    metric,
                })
            })
            .collect();
        let shape = table::Shape {
            id: format!("table-{}", i + 1),
            title: spec.title.clone(),
            description: spec.description.clone().unwrap_or_default(),
            columns,
            rows: spec.rows.clone(),
            pivot: spec.pivot,
            charts: false,
        };
        let mut cells = table::cells_of(&shape, views);
        if let Some(only) = &spec.only {
            cells.retain(|v| v.address().matches(only));
        }
        tables.push(table::build(shape, &cells, labels, confidence));
    }
    tables
}

/// A test table's metrics: the recipe's, in its order (a per-member one as a column
/// per member), then idle and load watts and a series' temperature and clock when any
/// of the table's runs has them.
fn table_metrics(recipe: &crate::model::Recipe, views: &[&cells::View]) -> Vec<MetricSpec> {
    let cells: Vec<&crate::plan::Cell> = views.iter().map(|v| v.cell).collect();
    let mut out = members::per_member_columns(recipe, &cells);
    let series = if recipe.series {
        MetricSpec::series().to_vec()
    } else {
        Vec::new()
    };
    let seen = views
        .iter()
        .fold(cells::OptionalMetrics::default(), |seen, v| {
            seen.union(v.optional_metrics)
        });
    out.extend(
        MetricSpec::power()
            .into_iter()
            .chain(series)
            .filter(|m| seen.has(&m.name)),
    );
    out
}
