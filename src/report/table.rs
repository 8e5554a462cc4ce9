//! Tables: per test one row per configuration and one column per metric, and the
//! scenario's own tables (`[[report.table]]`), whose columns can come from several tests
//! and whose pivot axis turns values into columns (boards as rows, storage as columns).

use std::fmt::Write as _;

use super::cells::View;
use super::chart::{Bar, ChartLabels, ChartTitle};
use super::format::{mean_ci, number};
use super::labels::{AxisLabels, value};
use super::legend::Marks;
use super::{Column, Row, Stat, Table};
use crate::model::{Axis, Better, MetricSpec, TestName};
use crate::stats;

/// One column asked for: a test's metric and what to call it.
pub(super) struct Want {
    pub test: TestName,
    pub metric: MetricSpec,
    pub label: String,
}

/// What a table shows, before its cells are looked up.
pub(super) struct Shape {
    pub id: String,
    pub title: String,
    pub description: String,
    pub columns: Vec<Want>,
    pub rows: Option<Vec<Axis>>,
    pub pivot: Option<Axis>,
    /// One bar chart per column (the per-test tables).
    pub charts: bool,
}

/// The row axes: those asked for, plus those that must be added, in matrix order, so
/// that no two cells of one test and pivot value share a row (so by default the axes
/// that vary within a test: a raw-device test's missing filesystem does not split the
/// rows of a table it shares with a file test). Never empty: the board (the image when
/// the board is the pivot) names a lone row.
fn row_axes(shape: &Shape, cells: &[&View]) -> Vec<Axis> {
    let mut axes = shape.rows.clone().unwrap_or_default();
    // The cells that would share a row: grouped by test, pivot value and the axes so
    // far, each added axis splitting the groups further (only which axes vary within
    // some group is asked, so the groups' order never shows).
    let mut groups = Groups::one(cells);
    groups.split(None);
    if let Some(p) = shape.pivot {
        groups.split(Some(p));
    }
    for a in &axes {
        groups.split(Some(*a));
    }
    loop {
        let wanted = |a: &Axis| Some(*a) != shape.pivot && !axes.contains(a);
        // Only groups of several cells can vary.
        let extra = Axis::ALL
            .into_iter()
            .find(|a| wanted(a) && groups.several().any(|g| varies(g, *a)));
        match extra {
            Some(a) => {
                axes.push(a);
                groups.split(Some(a));
            }
            None => break,
        }
    }
    if axes.is_empty() {
        let lone = if shape.pivot == Some(Axis::Board) {
            Axis::Image
        } else {
            Axis::Board
        };
        axes.push(lone);
    }
    axes
}

/// Whether some cell's value of `axis` is not the first cell's.
fn varies(cells: &[&View], axis: Axis) -> bool {
    let mut values = cells.iter().map(|c| value(axis, c.address()));
    let first = values.next();
    values.any(|v| Some(v) != first)
}

/// Cells in groups: each group a range of `cells`, its cells side by side.
struct Groups<'v, 'a> {
    cells: Vec<&'v View<'a>>,
    ranges: Vec<std::ops::Range<usize>>,
}

impl<'v, 'a> Groups<'v, 'a> {
    fn one(cells: &[&'v View<'a>]) -> Self {
        Groups {
            cells: cells.to_vec(),
            ranges: std::iter::once(0..cells.len()).collect(),
        }
    }

    /// The groups of several cells.
    fn several(&self) -> impl Iterator<Item = &[&'v View<'a>]> {
        self.ranges
            .iter()
            .filter(|r| r.len() > 1)
            .map(|r| &self.cells[r.clone()])
    }

    /// Splits each group into the runs of cells with one value of `axis` (the test's
    /// name for None).
    fn split(&mut self, axis: Option<Axis>) {
        let key = |c: &View<'a>| -> &'a str {
            match axis {
                Some(a) => value(a, c.cell_address()),
                None => c.cell_address().test.as_str(),
            }
        };
        let mut ranges = Vec::with_capacity(self.ranges.len());
        for r in std::mem::take(&mut self.ranges) {
            if r.len() < 2 {
                ranges.push(r);
                continue;
            }
            let group = &mut self.cells[r.clone()];
            group.sort_by(|x, y| key(x).cmp(key(y)));
            let mut start = r.start;
            for run in group.chunk_by(|x, y| key(x) == key(y)) {
                ranges.push(start..start + run.len());
                start += run.len();
            }
        }
        self.ranges = ranges;
    }
}

/// The statistics of one metric over one cell's counted runs.
fn stat_of(view: &View, metric: &MetricSpec, confidence: f64, marks: &Marks) -> Stat {
    let counted = view.counted_of(metric, confidence);
    let mut st = judged_stat(
        counted.summary.as_ref(),
        counted.outliers.total(),
        &metric.unit,
        view.flagged_runs,
        view.excluded,
    );
    st.cell = Some(view.cell.key.to_string());
    if st.n == 0 && metric.needs_meter() {
        // A measured cell without watts: its board has no meter (or it could not be
        // read). Said in words, so the empty cell is never taken for a number.
        st.text = NOT_MEASURED.into();
        st.value = NOT_MEASURED.into();
        st.brief = NOT_MEASURED.into();
    }
    // A value with no runs that count has nothing for a mark to qualify.
    if st.n > 0 {
        marks.push(view, st.outliers, &mut st.brief);
    }
    st
}

/// What a table cell of watts says for a measured cell that has none.
pub(super) const NOT_MEASURED: &str = "not measured";

/// The cells of the shape's tests, in report order.
pub(super) fn cells_of<'v, 'a>(shape: &Shape, views: &'v [View<'a>]) -> Vec<&'v View<'a>> {
    views
        .iter()
        .filter(|v| shape.columns.iter().any(|c| c.test == v.address().test))
        .collect()
}

/// The table of `shape` over `cells`: the cells of its tests in report order
/// (`cells_of`; a per-test table is given its test's, sorted out once for every table).
pub(super) fn build<'a>(
    shape: Shape,
    cells: &[&View<'a>],
    labels: &AxisLabels,
    confidence: f64,
) -> Table {
    let axes = row_axes(&shape, cells);
    let marks = Marks::of(cells);
    let pivots: Vec<String> = match shape.pivot {
        None => vec![String::new()],
        Some(p) => {
            let mut seen: Vec<String> = Vec::new();
            for c in cells {
                let v = value(p, c.address());
                if !seen.iter().any(|s| s == v) {
                    seen.push(v.to_string());
                }
            }
            seen
        }
    };
    let key_of = |c: &View<'a>| -> Vec<&'a str> {
        axes.iter().map(|a| value(*a, c.cell_address())).collect()
    };
    let pivot = shape.pivot;
    let pivot_of =
        move |c: &View<'a>| -> &'a str { pivot.map_or("", |p| value(p, c.cell_address())) };

    // Columns: each metric, then within it each pivot value. Their direction is said
    // once under the table when they share it, else by an arrow in each header.
    let one_direction = shape
        .columns
        .windows(2)
        .all(|w| w[0].metric.better == w[1].metric.better);
    let mut columns = Vec::new();
    let mut slots: Vec<(&TestName, &MetricSpec, &str)> = Vec::new();
    for w in &shape.columns {
        for p in &pivots {
            let pivot_label = shape.pivot.and_then(|axis| {
                cells
                    .iter()
                    .find(|c| pivot_of(c) == p)
                    .map(|c| labels.of(axis, c.address()))
            });
            let mut header = w.label.clone();
            if let Some(p) = &pivot_label {
                header.push_str(", ");
                header.push_str(p);
            }
            // `read IOPS (IOPS)` says it twice.
            let unit = w.metric.unit.as_str();
            let says_unit = w.label == unit || w.label.ends_with(&format!(" {unit}"));
            if !unit.is_empty() && !says_unit {
                let _ = write!(header, " ({})", w.metric.unit);
            }
            if !one_direction {
                header.push_str(match w.metric.better {
                    Better::Higher => " ↑",
                    Better::Lower => " ↓",
                });
            }
            columns.push(Column {
                header,
                test: w.test.to_string(),
                name: w.metric.name.clone(),
                label: w.label.clone(),
                unit: w.metric.unit.clone(),
                better: match w.metric.better {
                    Better::Higher => "higher is better".into(),
                    Better::Lower => "lower is better".into(),
                },
                pivot: pivot_label,
            });
            slots.push((&w.test, &w.metric, p.as_str()));
        }
    }

    // Rows: the distinct row keys with a measured cell, in report order.
    let order = super::groups_in_order(cells.iter().copied(), |c| key_of(c));
    // A row holds several cells when the table spans tests or pivots an axis.
    let mut tests: Vec<&TestName> = shape.columns.iter().map(|c| &c.test).collect();
    tests.sort();
    tests.dedup();
    let several = tests.len() > 1 || shape.pivot.is_some();
    let mut rows = Vec::new();
    for (k, group) in order {
        let measured: Vec<&View> = group.iter().copied().filter(|c| c.measured() > 0).collect();
        let Some(first) = measured.first() else {
            continue;
        };
        let values = slots
            .iter()
            .map(|(test, metric, p)| {
                measured
                    .iter()
                    .find(|c| &c.address().test == *test && pivot_of(c) == *p)
                    .map_or_else(Stat::empty, |c| stat_of(c, metric, confidence, &marks))
            })
            .collect();
        // What each cell of the row says, named by its test (and pivot) when there are
        // several.
        let name = |c: &View| {
            let mut n = c.address().test.to_string();
            if let Some(p) = shape.pivot {
                n = format!("{n}, {}", labels.of(p, c.address()));
            }
            n
        };
        let notes = |f: &dyn Fn(&View) -> Option<String>| -> Option<String> {
            let parts: Vec<String> = measured
                .iter()
                .filter_map(|c| {
                    f(c).map(|t| {
                        if several {
                            format!("{}: {t}", name(c))
                        } else {
                            t
                        }
                    })
                })
                .collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        };
        let mut flags: Vec<String> = measured.iter().flat_map(|c| c.flags.clone()).collect();
        flags.sort();
        flags.dedup();
        let mut warnings: Vec<String> = measured.iter().flat_map(|c| c.warnings.clone()).collect();
        warnings.sort();
        warnings.dedup();
        let mut ns: Vec<usize> = Vec::new();
        for v in &values {
            let v: &Stat = v;
            if v.n > 0 && !ns.contains(&v.n) {
                ns.push(v.n);
            }
        }
        rows.push(Row {
            axis_cells: axes
                .iter()
                .map(|a| labels.of(*a, first.address()))
                .collect(),
            n: ns
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("/"),
            label: labels.row(&axes, first.address()),
            config: k.iter().map(ToString::to_string).collect(),
            keys: measured.iter().map(|c| c.cell.key.to_string()).collect(),
            values,
            runs: notes(&|c| c.runs_text()),
            flagged: notes(&|c| Some(c.flagged_text()).filter(|t| !t.is_empty()))
                .unwrap_or_default(),
            flagged_runs: measured.iter().map(|c| c.flagged_runs).sum(),
            flags,
            warned_runs: measured.iter().map(|c| c.warned_runs).sum(),
            warnings,
            drift: measured
                .iter()
                .flat_map(|c| super::drift_notes(c.data))
                .collect(),
        });
    }
    let charts = if shape.charts {
        let level = super::percent(confidence);
        // The rows' labels, shared by the table's charts.
        let mut labels = ChartLabels::new(rows.iter().map(|r| r.label.as_str()).collect());
        columns
            .iter()
            .enumerate()
            .filter_map(|(i, col)| {
                let bars: Vec<Bar> = rows
                    .iter()
                    .enumerate()
                    .filter_map(|(row, r)| {
                        let v = r.values.get(i)?;
                        Some(Bar {
                            label: row,
                            mean: v.mean.filter(|m| m.is_finite())?,
                            ci_half: v.ci_half.filter(|h| h.is_finite()),
                            note: &v.note,
                        })
                    })
                    .collect();
                let subtitle = format!("mean and {level}% CI per configuration, {}", col.better);
                let title = ChartTitle {
                    metric: &col.label,
                    unit: &col.unit,
                    subtitle: &subtitle,
                };
                (!bars.is_empty())
                    .then(|| super::Chart::new(super::bar_chart(&title, &mut labels, &bars)))
            })
            .collect()
    } else {
        Vec::new()
    };
    let direction = one_direction
        .then(|| shape.columns.first().map(|w| w.metric.better))
        .flatten();
    let (same_n, legend) = legend_of(&mut rows, cells, &marks, direction);
    let adaptive = cells.iter().any(|c| c.cell.method.runs.target.is_some());
    let drift = rows
        .iter()
        .flat_map(|r| r.drift.iter().map(|n| format!("{}: {n}", r.label)))
        .collect();
    Table {
        id: shape.id,
        title: shape.title,
        description: shape.description,
        tests: {
            let mut t: Vec<String> = Vec::new();
            for c in &shape.columns {
                if !t.contains(&c.test.to_string()) {
                    t.push(c.test.to_string());
                }
            }
            t
        },
        axes: axes.iter().map(|a| a.name().to_string()).collect(),
        row_header: axes.iter().map(|a| a.name()).collect::<Vec<_>>().join(", "),
        pivot: shape.pivot.map(|p| p.name().to_string()),
        any_flagged: rows.iter().any(|r| r.flagged_runs > 0 || r.warned_runs > 0),
        // With a precision target the `runs` column already says each row's count.
        n_column: same_n.is_none() && !adaptive && rows.iter().any(|r| !r.n.is_empty()),
        same_n,
        legend,
        adaptive,
        columns,
        rows,
        drift,
        charts,
    }
}

/// A metric's statistics, the text a table cell shows: `mean ± CI unit (n=…)`, with
/// flagged runs and outliers marked, from the values' summary and number of outliers.
fn judged_stat(
    summary: Option<&stats::Summary>,
    outliers: usize,
    unit: &str,
    flagged: usize,
    excluded: bool,
) -> Stat {
    let Some(s) = summary else {
        return Stat {
            flagged,
            excluded: if excluded { flagged } else { 0 },
            ..Stat::empty()
        };
    };
    // Written piece by piece: a big report has tens of thousands of these.
    let mut note = String::with_capacity(32);
    let _ = write!(note, "n={}", s.n);
    match (flagged, excluded) {
        (0, _) => {}
        (k, true) => {
            let _ = write!(note, ", {k} flagged left out");
        }
        (k, false) => {
            let _ = write!(note, ", {k} flagged");
        }
    }
    match outliers {
        0 => {}
        1 => note.push_str(", 1 outlier"),
        k => {
            let _ = write!(note, ", {k} outliers");
        }
    }
    let brief = match s.ci_half {
        Some(h) => mean_ci(s.mean, h),
        None => number(s.mean),
    };
    let mut value = brief.clone();
    value.push(' ');
    value.push_str(unit);
    let mut text = String::with_capacity(value.len() + note.len() + 3);
    text.push_str(&value);
    text.push_str(" (");
    text.push_str(&note);
    text.push(')');
    Stat {
        text,
        value,
        brief,
        note,
        cell: None,
        n: s.n,
        mean: Some(s.mean),
        ci_half: s.ci_half,
        sd: Some(s.sd),
        min: Some(s.min),
        median: Some(s.median),
        max: Some(s.max),
        outliers,
        flagged,
        excluded: if excluded { flagged } else { 0 },
    }
}

/// What the Markdown table says once: each row's axis cells (given its labels), and
/// the legend under the table (n when every value has the same, the direction when
/// every column has it, models said once, the marks); the n every value has, if one.
fn legend_of(
    rows: &mut [Row],
    cells: &[&View],
    marks: &Marks,
    direction: Option<Better>,
) -> (Option<usize>, Vec<String>) {
    let mut legend = Vec::new();
    let mut ns = rows
        .iter()
        .flat_map(|r| r.values.iter().map(|v| v.n))
        .filter(|n| *n > 0);
    let same_n = ns.next().filter(|first| ns.all(|n| n == *first));
    if let Some(n) = same_n {
        legend.push(format!(
            "n = {n} measured run{} per value.",
            if n == 1 { "" } else { "s" }
        ));
    }
    legend.push(
        match direction {
            Some(Better::Higher) => "Higher is better.",
            Some(Better::Lower) => "Lower is better.",
            None => "↑ higher is better, ↓ lower is better.",
        }
        .to_string(),
    );
    let axes = rows.first().map_or(0, |r| r.axis_cells.len());
    for i in 0..axes {
        let column: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.config[i].as_str(), r.axis_cells[i].as_str()))
            .collect();
        let (shown, note) = super::legend::axis_cells(&column);
        legend.extend(note);
        for (r, text) in rows.iter_mut().zip(shown) {
            r.axis_cells[i] = text;
        }
    }
    let any_outliers = rows.iter().any(|r| r.values.iter().any(|v| v.outliers > 0));
    legend.extend(marks.legend(cells, any_outliers));
    (same_n, legend)
}
