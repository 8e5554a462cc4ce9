//! report.json's tests, and the reference they hold it to: the whole document through
//! serde (`Doc`), whose bytes the hand-written tables must be.

use serde::Serialize;

use super::{
    ColumnDoc, ComparisonDoc, Exporter, Indented, Json, REPORT_FORMAT, ScenarioDoc, columns,
    comparison, finite,
};
use crate::report::{
    Failed, Incomplete, Method, Provenance, Report, Skipped, Stat, Table, Validity,
};

/// report.json as serde writes the whole `Doc`, with `Indented`.
fn through_serde(report: &Report) -> Vec<u8> {
    let doc = Doc {
        format: REPORT_FORMAT,
        benchpipe: &report.benchpipe,
        scenario: ScenarioDoc {
            name: &report.scenario,
            title: &report.title,
            description: report.description.as_deref(),
        },
        method: &report.method,
        tables: report.tables.iter().map(|t| table(t)).collect(),
        comparisons: report.comparisons.iter().map(comparison).collect(),
        precision: &report.precision,
        validity: &report.validity,
        incomplete: &report.incomplete,
        failed: &report.failed,
        skipped: &report.skipped,
        provenance: &report.provenance,
        history: report.history.as_ref().map(super::history),
    };
    let mut out = Vec::new();
    doc.serialize(&mut serde_json::Serializer::with_formatter(
        &mut out,
        Indented::default(),
    ))
    .unwrap();
    out.push(b'\n');
    out
}

/// The rows written by hand are the bytes serde writes for the whole document: for
/// the fixture study, and for its tables with every kind of value a row can hold
/// (text to escape, numbers that are not finite, empty lists, a row with fewer axis
/// values than axes or an axis named twice, no rows, no tables) and rows enough to
/// pass the flush size.
#[test]
fn the_hand_written_tables_are_serdes_bytes() {
    let mut report = crate::report::tests_exports::full_report();
    let mut cases = vec![("the fixture", report.clone())];
    let hostile = "q\"b\\s\u{1}\n\t\u{1f}±\u{7f}</script>";
    {
        let t = std::sync::Arc::make_mut(&mut report.tables[0]);
        t.axes.push("board".into());
        t.axes.push(hostile.into());
        let row = t.rows[0].clone();
        let mut odd = row.clone();
        odd.label = hostile.into();
        odd.config = vec![hostile.into()];
        odd.keys = Vec::new();
        odd.runs = Some(hostile.into());
        odd.flags = vec![hostile.into(), String::new()];
        odd.warnings = vec!["w".into()];
        odd.drift = vec![hostile.into()];
        odd.values = vec![
            Stat {
                mean: Some(f64::NAN),
                ci_half: Some(f64::INFINITY),
                sd: Some(-0.0),
                min: Some(1e300),
                median: Some(5e-324),
                max: Some(f64::NEG_INFINITY),
                cell: None,
                text: hostile.into(),
                ..Stat::empty()
            },
            Stat::empty(),
        ];
        let mut empty = row.clone();
        empty.values = Vec::new();
        empty.config = Vec::new();
        t.rows.push(odd);
        t.rows.push(empty);
        for _ in 0..2000 {
            t.rows.push(row.clone());
        }
    }
    cases.push(("hostile and many rows", report.clone()));
    std::sync::Arc::make_mut(&mut report.tables[0]).rows.clear();
    cases.push(("a table without rows", report.clone()));
    report.tables.clear();
    cases.push(("no tables", report));
    for (case, report) in cases {
        let ours = Json.render(&report).unwrap();
        let reference = through_serde(&report);
        assert!(
            ours == reference,
            "{case}: report.json differs from serde's"
        );
    }
}

/// Every depth, the empty containers and the one past the one-write indentation
/// (33 levels) come out as serde_json's own pretty printer writes them.
#[test]
fn indented_writes_what_serde_jsons_pretty_printer_writes() {
    let mut v = serde_json::json!({"a": [], "b": {}, "c": [1, {"d": null, "e": [true, "x"]}]});
    for depth in 0..40 {
        v = serde_json::json!({"level": depth, "inner": [v.clone(), {}], "empty": []});
    }
    let mut ours = Vec::new();
    v.serialize(&mut serde_json::Serializer::with_formatter(
        &mut ours,
        Indented::default(),
    ))
    .unwrap();
    assert_eq!(
        String::from_utf8(ours).unwrap(),
        serde_json::to_string_pretty(&v).unwrap()
    );
}

/// The whole document as serde would write it: the reference the hand-written tables
/// are tested against (`write_to` writes the same bytes).
#[derive(Serialize)]
struct Doc<'a> {
    format: u32,
    /// The benchpipe that rendered it.
    benchpipe: &'a str,
    scenario: ScenarioDoc<'a>,
    method: &'a Method,
    tables: Vec<TableDoc<'a>>,
    comparisons: Vec<ComparisonDoc<'a>>,
    /// Intervals wider than `[report] wide_ci`, and the outlier rule.
    precision: &'a crate::report::PrecisionNotes,
    validity: &'a [Validity],
    incomplete: &'a [Incomplete],
    failed: &'a [Failed],
    skipped: &'a [Skipped],
    provenance: &'a [Provenance],
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<super::HistoryDoc<'a>>,
}

#[derive(Serialize)]
struct TableDoc<'a> {
    id: &'a str,
    title: &'a str,
    description: &'a str,
    tests: &'a [String],
    row_axes: &'a [String],
    pivot: Option<&'a str>,
    columns: Vec<ColumnDoc<'a>>,
    rows: Vec<RowDoc<'a>>,
}

#[derive(Serialize)]
struct RowDoc<'a> {
    label: &'a str,
    /// The row's axis values by axis name.
    config: std::collections::BTreeMap<&'a str, &'a str>,
    cells: &'a [String],
    runs: Option<&'a str>,
    flagged_runs: usize,
    warned_runs: usize,
    flags: &'a [String],
    warnings: &'a [String],
    drift: &'a [String],
    values: Vec<ValueDoc<'a>>,
}

/// A table cell: its statistics as numbers, and the text a reader sees.
#[derive(Serialize)]
struct ValueDoc<'a> {
    cell: Option<&'a str>,
    n: usize,
    mean: Option<f64>,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
    ci_half: Option<f64>,
    sd: Option<f64>,
    min: Option<f64>,
    median: Option<f64>,
    max: Option<f64>,
    outliers: usize,
    flagged: usize,
    excluded: usize,
    text: &'a str,
}

fn value(s: &Stat) -> ValueDoc<'_> {
    let (lo, hi) = match (s.mean, s.ci_half) {
        (Some(m), Some(h)) => (Some(m - h), Some(m + h)),
        _ => (None, None),
    };
    ValueDoc {
        cell: s.cell.as_deref(),
        n: s.n,
        mean: finite(s.mean),
        ci_low: finite(lo),
        ci_high: finite(hi),
        ci_half: finite(s.ci_half),
        sd: finite(s.sd),
        min: finite(s.min),
        median: finite(s.median),
        max: finite(s.max),
        outliers: s.outliers,
        flagged: s.flagged,
        excluded: s.excluded,
        text: &s.text,
    }
}

fn table(t: &Table) -> TableDoc<'_> {
    TableDoc {
        id: &t.id,
        title: &t.title,
        description: &t.description,
        tests: &t.tests,
        row_axes: &t.axes,
        pivot: t.pivot.as_deref(),
        columns: columns(t),
        rows: t
            .rows
            .iter()
            .map(|r| RowDoc {
                label: &r.label,
                config: t
                    .axes
                    .iter()
                    .map(String::as_str)
                    .zip(r.config.iter().map(String::as_str))
                    .collect(),
                cells: &r.keys,
                runs: r.runs.as_deref(),
                flagged_runs: r.flagged_runs,
                warned_runs: r.warned_runs,
                flags: &r.flags,
                warnings: &r.warnings,
                drift: &r.drift,
                values: r.values.iter().map(value).collect(),
            })
            .collect(),
    }
}
