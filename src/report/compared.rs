//! The comparisons as the Markdown report shows them: one table per metric (and
//! percent convention), each stating its convention once above it; rows name their
//! configurations by the tables' labels, with a column per axis the rows differ in
//! and the compared axes' values as baseline and candidate.

use serde::Serialize;

use super::ComparisonRow;
use super::labels::{AxisLabels, value};
use crate::model::Axis;
use crate::model::Percent;
use crate::plan::Address;
use crate::stats::Verdict;

/// The order of a comparison table's axis columns.
const AXES: [Axis; 5] = [
    Axis::Board,
    Axis::Storage,
    Axis::Filesystem,
    Axis::Network,
    Axis::Image,
];

/// One metric's comparisons, of one percent convention.
#[derive(Clone, Debug, Serialize)]
pub struct ComparisonTable {
    /// `test.metric`.
    pub metric: String,
    /// `disk-4k: 4K random read (MB/s, higher is better)`.
    pub title: String,
    /// What every difference of the table is, said once.
    pub percent: String,
    /// The axes the rows' configurations differ in, besides the compared ones.
    pub axes: Vec<String>,
    pub rows: Vec<ComparedRow>,
    /// Sentences under the table: a model every row shares.
    pub legend: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ComparedRow {
    /// Per axis of the table, the row's label (a pooled row's board: `pooled: a, b`).
    pub axis_cells: Vec<String>,
    /// The compared axes' labels on each side.
    pub baseline: String,
    pub candidate: String,
    /// `+12.3% (+4.0% .. +21.1%)`, or `—` with no comparison.
    pub difference: String,
    /// `faster, p = 0.0012`; `inconclusive, p = 0.41; about 12 runs per side would
    /// decide`; or why there is no comparison.
    pub verdict: String,
    /// Whether the verdict is better or worse (shown in bold).
    pub significant: bool,
    /// The verdict's kind as a class name: `better`, `worse`, `equivalent`,
    /// `inconclusive`, `not-comparable`.
    pub kind: &'static str,
    /// `verdict` split after its first word (`faster`) for the HTML's verdict chip.
    pub word: String,
    pub detail: String,
    /// The difference's point in the table's convention, for sorting; none without one.
    pub sort: Option<f64>,
    /// A pooled row's boards left out of its pool, and why.
    pub left_out: Vec<String>,
}

/// The comparison rows as tables: consecutive rows of one metric and convention.
pub(super) fn tables(
    rows: &[ComparisonRow],
    labels: &AxisLabels,
    title_of: &dyn Fn(&str) -> String,
    confidence: &str,
) -> Vec<ComparisonTable> {
    let mut out: Vec<ComparisonTable> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let first = &rows[start];
        let end = rows[start..]
            .iter()
            .position(|r| r.metric != first.metric || r.percent != first.percent)
            .map_or(rows.len(), |k| start + k);
        out.push(table(&rows[start..end], labels, title_of, confidence));
        start = end;
    }
    out
}

fn differs(b: &Address, c: &Address, axis: Axis) -> bool {
    value(axis, b) != value(axis, c)
}

fn table(
    rows: &[ComparisonRow],
    labels: &AxisLabels,
    title_of: &dyn Fn(&str) -> String,
    confidence: &str,
) -> ComparisonTable {
    let first = &rows[0];
    let sides: Vec<Option<&(Address, Address)>> = rows.iter().map(|r| r.sides.as_ref()).collect();
    // Columns: the axes no row compares whose values vary over the table's rows.
    let compared = |axis: Axis| sides.iter().flatten().any(|(b, c)| differs(b, c, axis));
    let axes: Vec<Axis> = AXES
        .into_iter()
        .filter(|a| !compared(*a))
        .filter(|a| {
            let mut values = sides.iter().flatten().map(|(b, _)| value(*a, b));
            let one = values.next();
            values.any(|v| Some(v) != one)
        })
        .collect();
    let mut legend = Vec::new();
    let mut cells: Vec<Vec<String>> = vec![Vec::new(); rows.len()];
    for a in &axes {
        // (name, label) per row; a pooled row's board is all its boards.
        let column: Vec<(String, String)> = rows
            .iter()
            .map(|r| match (&r.sides, &r.pooled) {
                (Some(_), Some(p)) if *a == Axis::Board => {
                    let boards = p.boards.join(", ");
                    (
                        format!("pooled: {boards}"),
                        format!("{} (pooled: {boards})", p.model),
                    )
                }
                (Some((b, _)), _) => (value(*a, b).to_string(), labels.of(*a, b)),
                (None, _) => (String::new(), String::new()),
            })
            .collect();
        let unpooled: Vec<(&str, &str)> = column
            .iter()
            .zip(rows)
            .filter(|(_, r)| r.pooled.is_none() || *a != Axis::Board)
            .map(|((n, l), _)| (n.as_str(), l.as_str()))
            .collect();
        let (_, note) = super::legend::axis_cells(&unpooled);
        let by_name = note.is_some();
        legend.extend(note);
        for (cell, (name, label)) in cells.iter_mut().zip(column) {
            cell.push(if by_name { name } else { label });
        }
    }
    let side = |a: &Address, b: &Address| -> String {
        AXES.iter()
            .filter(|x| differs(a, b, **x))
            .map(|x| labels.of(*x, a))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let compared_rows = rows
        .iter()
        .zip(cells)
        .map(|(r, axis_cells)| {
            let (baseline, candidate) = match &r.sides {
                Some((b, c)) => (side(b, c), side(c, b)),
                None => (r.baseline.clone(), r.candidate.clone()),
            };
            let verdict = verdict(r);
            let (word, detail) = match verdict.find([',', ';']) {
                Some(at) if r.verdict != Verdict::NotComparable => (
                    verdict[..at].to_string(),
                    verdict[at..]
                        .trim_start_matches([',', ';', ' '])
                        .to_string(),
                ),
                _ if r.verdict == Verdict::NotComparable => {
                    ("not comparable".to_string(), verdict.clone())
                }
                _ => (verdict.clone(), String::new()),
            };
            ComparedRow {
                axis_cells,
                baseline,
                candidate,
                difference: difference(r),
                significant: r.significant,
                kind: kind(r.verdict),
                word,
                detail,
                sort: point(r),
                left_out: r
                    .pooled
                    .as_ref()
                    .map(|p| p.left_out.clone())
                    .unwrap_or_default(),
                verdict,
            }
        })
        .collect();
    let of = match first.percent {
        Percent::OfBaseline => "in percent of the baseline's mean",
        Percent::OfMean => "in percent of the mean of both means",
    };
    ComparisonTable {
        metric: first.metric.clone(),
        title: title_of(&first.metric),
        percent: format!(
            "Difference: the candidate's mean against the baseline's, {of}, with its {confidence}% confidence interval."
        ),
        axes: axes.iter().map(|a| a.name().to_string()).collect(),
        rows: compared_rows,
        legend,
    }
}

/// A percentage as the comparisons write it: a sign, one decimal.
fn pct(x: f64) -> String {
    let s = format!("{x:+.1}%");
    if s == "-0.0%" || s == "+0.0%" {
        "0.0%".into()
    } else {
        s
    }
}

/// The verdict's class name, as report.json spells it.
fn kind(v: Verdict) -> &'static str {
    match v {
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::Equivalent => "equivalent",
        Verdict::Inconclusive => "inconclusive",
        Verdict::NotComparable => "not-comparable",
    }
}

/// The difference's point in the row's convention, when it has a finite one.
fn point(r: &ComparisonRow) -> Option<f64> {
    if r.verdict == Verdict::NotComparable || r.ratio.is_none() {
        return None;
    }
    match r.percent {
        Percent::OfBaseline => r.diff_pct,
        Percent::OfMean => r.symmetric_pct,
    }
    .filter(|p| p.is_finite())
}

/// The row's difference in its table's one convention, with its interval.
fn difference(r: &ComparisonRow) -> String {
    if r.verdict == Verdict::NotComparable || r.ratio.is_none() {
        return "—".into();
    }
    let (point, low, high) = match r.percent {
        Percent::OfBaseline => (r.diff_pct, r.ci_low_pct, r.ci_high_pct),
        Percent::OfMean => (
            r.symmetric_pct,
            r.symmetric_ci_low_pct,
            r.symmetric_ci_high_pct,
        ),
    };
    let Some(point) = point.filter(|p| p.is_finite()) else {
        return "— (a value is not above 0)".into();
    };
    let unbounded = r.ratio_ci_low.is_none() && r.ratio_ci_high.is_none();
    let interval = match (
        low.filter(|x| x.is_finite()),
        high.filter(|x| x.is_finite()),
    ) {
        _ if unbounded => "unbounded".to_string(),
        (Some(l), Some(h)) => format!("{} .. {}", pct(l), pct(h)),
        (Some(l), None) => format!("≥ {}", pct(l)),
        (None, Some(h)) => format!("≤ {}", pct(h)),
        (None, None) => "unbounded".to_string(),
    };
    format!("{} ({interval})", pct(point))
}

/// The verdict in a few words, with p and, when inconclusive, the runs that would
/// likely decide it; why there is no comparison as the row says it.
fn verdict(r: &ComparisonRow) -> String {
    let p = r.p.filter(|p| p.is_finite()).map(super::p_value);
    let p = p.map(|p| format!(", p = {p}")).unwrap_or_default();
    match r.verdict {
        Verdict::Better | Verdict::Worse => {
            let word = r.verdict_text.split(' ').next().unwrap_or_default();
            format!("{word}{p}")
        }
        Verdict::Equivalent => format!("equivalent{p}"),
        Verdict::Inconclusive => {
            let per_side = if r.pooled.is_some() {
                "runs per side on each board"
            } else {
                "runs per side"
            };
            let more = r
                .runs_needed
                .map(|n| format!("; {} {per_side} would likely decide it", n.text()))
                .unwrap_or_default();
            format!("inconclusive{p}{more}")
        }
        Verdict::NotComparable => r.verdict_text.clone(),
    }
}
