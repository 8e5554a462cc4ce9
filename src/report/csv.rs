//! `results.csv`: one row per stored run of the report's cells (warm-ups too, each
//! marked), with the cell's address and provenance, then one column per metric. RFC 4180
//! quoting; numbers as Rust prints an f64 (the shortest text that reads back the same,
//! never an exponent), so the bytes are the same on every machine. docs/FORMAT.md
//! ("results.csv") lists the columns.

use std::collections::BTreeMap;

use serde_json::Value;

use super::Report;
use super::cells::View;
use super::export::{ExportError, Exporter};
use super::provenance::clean;
use crate::model::{MetricSpec, RunOrder, Scenario};
use crate::plan::state;
use crate::store::RunKind;

/// The columns before the metrics, in order.
pub const CSV_COLUMNS: [&str; 27] = [
    "scenario",
    "test",
    "image",
    "board",
    "storage",
    "filesystem",
    "network",
    "cell",
    "seq",
    "apply",
    "kind",
    "current",
    "counted",
    "order",
    "board_seq",
    "duration_s",
    "flags",
    "warnings",
    "image_id",
    "board_model",
    "storage_model",
    "filesystem_kind",
    "mount_options",
    "kernel",
    "os_release",
    "usb_driver",
    "tools",
];

/// One stored run as `results.csv` has it.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleRow {
    /// The fixed columns but the metrics, in `CSV_COLUMNS` order, as text.
    pub fields: Vec<String>,
    /// The run's value of each of its test's metrics (computed ones too): (name, unit,
    /// value).
    pub metrics: Vec<(String, String, f64)>,
}

fn str_at<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// The provenance columns of a cell, from its inputs and stored facts.
fn provenance(view: &View) -> Vec<String> {
    let inputs = &view.cell.inputs;
    let facts = view.data.facts.as_ref();
    let fact = |p: &str| facts.and_then(|f| str_at(f, p)).map(clean);
    let mount = inputs
        .pointer("/filesystem/mount_options")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let tools = facts
        .and_then(|f| f.get("tools"))
        .and_then(Value::as_object)
        .map(|t| {
            t.iter()
                .filter_map(|(k, v)| {
                    let line = v.as_str()?.lines().map(str::trim).find(|l| !l.is_empty())?;
                    Some(format!("{k}={}", clean(line)))
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default();
    vec![
        str_at(inputs, "/image").map(clean).unwrap_or_default(),
        str_at(inputs, "/board/model")
            .map(clean)
            .unwrap_or_default(),
        str_at(inputs, "/storage/model")
            .map(clean)
            .unwrap_or_default(),
        str_at(inputs, "/filesystem/kind")
            .map(clean)
            .unwrap_or_default(),
        mount,
        fact("/kernel").unwrap_or_default(),
        fact("/os_release/PRETTY_NAME").unwrap_or_default(),
        fact("/storage/usb/driver").unwrap_or_default(),
        tools,
    ]
}

/// Every stored run of the report's cells, in report order of cells and store order of
/// runs. `metrics` are the tables' columns per test.
pub(super) fn rows(
    scenario: &Scenario,
    views: &[View],
    metrics: &[(String, MetricSpec)],
) -> Vec<SampleRow> {
    // Applies are numbered by their session, which starts with its start time: the
    // order they ran in, without showing when.
    let mut sessions: Vec<&str> = views
        .iter()
        .flat_map(|v| v.data.samples.iter().map(|s| s.session.as_str()))
        .collect();
    sessions.sort();
    sessions.dedup();
    let apply: BTreeMap<&str, usize> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, i + 1))
        .collect();
    let mut out = Vec::new();
    for v in views {
        let a = v.address();
        let test = a.test.to_string();
        let of_test: Vec<&MetricSpec> = metrics
            .iter()
            .filter(|(t, _)| *t == test)
            .map(|(_, m)| m)
            .collect();
        // The cell's columns, made once and copied into each of its runs' rows.
        let cell = [
            scenario.name.clone(),
            test.clone(),
            a.image.to_string(),
            a.board.to_string(),
            a.storage
                .as_ref()
                .map(|x| x.to_string())
                .unwrap_or_default(),
            a.filesystem
                .as_ref()
                .map(|x| x.to_string())
                .unwrap_or_default(),
            a.network
                .as_ref()
                .map(|x| x.to_string())
                .unwrap_or_default(),
            v.cell.key.to_string(),
        ];
        let prov = provenance(v);
        let method = &v.cell.method;
        for s in &v.data.samples {
            let current = v.data.is_current(s);
            let mut fields = Vec::with_capacity(CSV_COLUMNS.len());
            fields.extend(cell.iter().cloned());
            fields.extend([
                s.seq.to_string(),
                apply[s.session.as_str()].to_string(),
                match s.kind {
                    RunKind::Warmup => "warmup".into(),
                    RunKind::Measured => "measured".into(),
                },
                current.to_string(),
                (current && state::counts(method, s)).to_string(),
                match s.order {
                    Some(RunOrder::Blocked) => "blocked".into(),
                    Some(RunOrder::Interleaved) => "interleaved".into(),
                    None => String::new(),
                },
                s.board_seq.map(|n| n.to_string()).unwrap_or_default(),
                number(s.ended - s.started),
                state::flags_of(method, s).join(";"),
                s.telemetry
                    .as_ref()
                    .map(|t| t.warnings())
                    .unwrap_or_default()
                    .join(";"),
            ]);
            fields.extend(prov.iter().cloned());
            let seconds = s.ended - s.started;
            let metrics = of_test
                .iter()
                .filter_map(|m| {
                    Some((
                        m.name.clone(),
                        m.unit.clone(),
                        m.value(&s.metrics, seconds)?,
                    ))
                })
                .collect();
            out.push(SampleRow { fields, metrics });
        }
    }
    out
}

/// An f64 as CSV and JSON readers take it back exactly; empty when not finite.
fn number(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        String::new()
    }
}

/// A field as RFC 4180 wants it. Text a spreadsheet would run as a formula (a leading
/// `=`, `+`, `-`, `@`) gets a leading `'`, as OWASP advises: values from a board are
/// hostile.
fn field(text: &str, numeric: bool) -> String {
    let guarded = if !numeric && text.starts_with(['=', '+', '-', '@']) {
        format!("'{text}")
    } else {
        text.to_string()
    };
    if guarded.contains([',', '"', '\n', '\r'])
        || guarded.starts_with(' ')
        || guarded.ends_with(' ')
    {
        format!("\"{}\"", guarded.replace('"', "\"\""))
    } else {
        guarded
    }
}

/// `field`, appended to `out`; a field that needs no quoting is copied as it is.
fn push_field(out: &mut String, text: &str, numeric: bool) {
    let plain = !text.contains([',', '"', '\n', '\r'])
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && (numeric || !text.starts_with(['=', '+', '-', '@']));
    if plain {
        out.push_str(text);
    } else {
        out.push_str(&field(text, numeric));
    }
}

/// `number`, appended to `out`.
fn push_number(out: &mut String, x: f64) {
    use std::fmt::Write;
    if x.is_finite() {
        let _ = write!(out, "{x}");
    }
}

/// The metric columns: each (name, unit) once, in the tables' order, headed `name (unit)`.
pub(super) fn metric_columns(report: &Report) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (_, m) in &report.sample_metrics {
        let c = (m.name.clone(), m.unit.clone());
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

pub struct Csv;

impl Exporter for Csv {
    fn file_name(&self) -> &'static str {
        "results.csv"
    }
    fn render(&self, report: &Report) -> Result<Vec<u8>, ExportError> {
        let columns = metric_columns(report);
        let numeric = ["seq", "apply", "board_seq", "duration_s"];
        let mut out = String::new();
        let header: Vec<String> = CSV_COLUMNS
            .iter()
            .map(|c| c.to_string())
            .chain(columns.iter().map(|(n, u)| format!("{n} ({u})")))
            .map(|h| field(&h, false))
            .collect();
        out.push_str(&header.join(","));
        out.push_str("\r\n");
        let numeric: Vec<bool> = CSV_COLUMNS.iter().map(|c| numeric.contains(c)).collect();
        for row in &report.samples {
            for (i, (v, numeric)) in row.fields.iter().zip(&numeric).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_field(&mut out, v, *numeric);
            }
            for (name, unit) in &columns {
                out.push(',');
                if let Some((_, _, v)) = row.metrics.iter().find(|(n, u, _)| n == name && u == unit)
                {
                    push_number(&mut out, *v);
                }
            }
            out.push_str("\r\n");
        }
        Ok(out.into_bytes())
    }
}
