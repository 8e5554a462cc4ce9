//! `results.csv`: one row per stored run of the report's cells (warm-ups too, each
//! marked), with the cell's address and provenance, then one column per metric. RFC 4180
//! quoting; numbers as Rust prints an f64 (the shortest text that reads back the same,
//! never an exponent), so the bytes are the same on every machine. docs/FORMAT.md
//! ("results.csv") lists the columns.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::Report;
use super::cells::View;
use super::export::{ExportError, Exporter};
use super::format::push_number;
use super::provenance::clean;
use crate::model::{MetricSpec, RunOrder, Scenario};
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

/// Of `CSV_COLUMNS`, the cell's (`scenario` to `cell`), then the run's (`seq` to
/// `warnings`); the provenance columns after them are the cell's too.
const CELL_COLUMNS: usize = 8;

/// One cell's rows of `results.csv`: the columns its runs share, made once, then each
/// run's own columns and metric values, kept as values and turned into text only as the
/// file is written (a big store has a hundred thousand runs).
#[derive(Clone, Debug, PartialEq)]
pub struct CellRows {
    /// The cell's columns: its address (`scenario` to `cell`), then its provenance
    /// (`image_id` to `tools`), as text.
    pub cell: Vec<String>,
    /// Its runs' own columns, `seq` to `warnings`, in store order.
    pub runs: Vec<RunColumns>,
    /// Its test's metrics, as indices in `Report::sample_metrics`: the columns of
    /// `values`.
    pub metrics: Arc<[usize]>,
    /// Each run's value of each of `metrics` (None where it has none), run by run.
    pub values: Vec<Option<f64>>,
}

/// The run's columns of a `results.csv` row (`seq` to `warnings`).
#[derive(Clone, Debug, PartialEq)]
pub struct RunColumns {
    pub seq: u32,
    /// The apply that took it, numbered in the order applies ran.
    pub apply: usize,
    pub kind: RunKind,
    pub current: bool,
    pub counted: bool,
    pub order: Option<RunOrder>,
    pub board_seq: Option<u64>,
    pub duration_s: f64,
    /// Its flags and warnings, `;`-separated.
    pub flags: String,
    pub warnings: String,
}

impl RunColumns {
    /// Appends the columns to a row, each as `push_field` writes it.
    fn write(&self, out: &mut String) {
        let yes_no = |b: bool| if b { "true" } else { "false" };
        push_uint(out, u64::from(self.seq));
        out.push(',');
        push_uint(out, self.apply as u64);
        out.push(',');
        out.push_str(match self.kind {
            RunKind::Warmup => "warmup",
            RunKind::Measured => "measured",
        });
        out.push(',');
        out.push_str(yes_no(self.current));
        out.push(',');
        out.push_str(yes_no(self.counted));
        out.push(',');
        out.push_str(match self.order {
            Some(RunOrder::Blocked) => "blocked",
            Some(RunOrder::Interleaved) => "interleaved",
            None => "",
        });
        out.push(',');
        if let Some(n) = self.board_seq {
            push_uint(out, n);
        }
        out.push(',');
        push_number(out, self.duration_s);
        out.push(',');
        push_field(out, &self.flags, false);
        out.push(',');
        push_field(out, &self.warnings, false);
    }
}

/// A cell's columns of a `results.csv` row as written: its address with the comma after
/// it, and its provenance with the comma before it. A cell's runs share them, so they
/// are quoted once per cell.
struct CellFields;

/// A cell's columns as `CellFields::of` writes them: before the run's, and after.
type CellText = (String, String);

impl CellFields {
    fn of(cell: &[String]) -> CellText {
        let (address, provenance) = cell.split_at(CELL_COLUMNS.min(cell.len()));
        let mut before = String::new();
        for v in address {
            push_field(&mut before, v, false);
            before.push(',');
        }
        let mut after = String::new();
        for v in provenance {
            after.push(',');
            push_field(&mut after, v, false);
        }
        (before, after)
    }
}

/// The text at a JSON pointer (`/os_release/PRETTY_NAME`), found step by step: serde's
/// `pointer` makes a String of each step, and a big report asks for every cell's facts.
fn str_at<'v>(v: &'v Value, pointer: &str) -> Option<&'v str> {
    let mut at = v;
    for step in pointer.strip_prefix('/')?.split('/') {
        at = at.get(step)?;
    }
    at.as_str()
}

/// The provenance columns of a cell, from its inputs and stored facts.
fn provenance(view: &View) -> Vec<String> {
    let inputs = &view.cell.inputs;
    let facts = view.data.facts.as_deref();
    let fact = |p: &str| facts.and_then(|f| str_at(f, p)).map(clean);
    let mount = inputs
        .texts("/filesystem/mount_options")
        .map(|a| a.join(","))
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
        inputs.text("/image").map(clean).unwrap_or_default(),
        inputs.text("/board/model").map(clean).unwrap_or_default(),
        inputs.text("/storage/model").map(clean).unwrap_or_default(),
        inputs
            .text("/filesystem/kind")
            .map(clean)
            .unwrap_or_default(),
        mount,
        fact("/kernel").unwrap_or_default(),
        fact("/os_release/PRETTY_NAME").unwrap_or_default(),
        fact("/storage/usb/driver").unwrap_or_default(),
        tools,
    ]
}

/// Where a row finds its value of one of its test's metric columns.
enum Source<'m> {
    /// The view's value of its recipe's metric at this index (`View::values_of_run`).
    Judged(usize),
    /// Looked up in the run's metrics: a column the recipe does not have as it is (one
    /// per member, watts, a series' temperature and clock).
    Lookup(&'m MetricSpec),
}

/// The rows of every stored run of the report's cells, cell by cell in report order,
/// runs in store order. `metrics` are the tables' columns per test.
pub(super) fn rows(
    scenario: &Scenario,
    views: &[View],
    metrics: &[(String, MetricSpec)],
) -> Vec<CellRows> {
    // Applies are numbered by their session, which starts with its start time: the
    // order they ran in, without showing when.
    let mut sessions: Vec<&str> = views
        .iter()
        .flat_map(|v| v.sessions.iter().copied())
        .collect();
    sessions.sort_unstable();
    sessions.dedup();
    let apply_of = |session: &str| sessions.binary_search(&session).map_or(0, |i| i + 1);
    // Each test's metric columns, found once rather than per cell: as specs, and as
    // the indices in `metrics` its cells' rows share.
    let mut specs: BTreeMap<&str, (Vec<&MetricSpec>, Vec<usize>)> = BTreeMap::new();
    for (i, (t, m)) in metrics.iter().enumerate() {
        let (of_test, indices) = specs.entry(t.as_str()).or_default();
        of_test.push(m);
        indices.push(i);
    }
    let of_tests: BTreeMap<&str, (Vec<&MetricSpec>, Arc<[usize]>)> = specs
        .into_iter()
        .map(|(t, (of_test, indices))| (t, (of_test, indices.into())))
        .collect();
    let no_metrics = (Vec::new(), Arc::from([]));
    let mut out = Vec::with_capacity(views.len());
    for v in views {
        let a = v.address();
        let test = a.test.to_string();
        let (of_test, metric_indices) = of_tests.get(test.as_str()).unwrap_or(&no_metrics);
        // A column the view judged already is taken from it: the same value
        // `MetricSpec::value` gives, which depends only on the name and the derivation.
        let sources: Vec<Source> = of_test
            .iter()
            .map(|spec| {
                match v
                    .metrics
                    .iter()
                    .position(|m| m.name == spec.name && m.derive == spec.derive)
                {
                    Some(i) => Source::Judged(i),
                    None => Source::Lookup(spec),
                }
            })
            .collect();
        let mut cell = vec![
            scenario.name.clone(),
            test,
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
        cell.extend(provenance(v));
        let applies: Vec<usize> = v.sessions.iter().map(|s| apply_of(s)).collect();
        let samples = &v.data.samples;
        let mut runs = Vec::with_capacity(v.runs.len());
        let mut values = Vec::with_capacity(v.runs.len() * sources.len());
        // The views' runs, not the samples: only a column the view did not judge looks
        // into its sample.
        for (k, judged) in v.runs.iter().enumerate() {
            runs.push(RunColumns {
                seq: judged.seq,
                apply: applies.get(judged.session).copied().unwrap_or(0),
                kind: judged.kind,
                current: judged.current,
                counted: judged.counts,
                order: judged.order,
                board_seq: judged.board_seq,
                duration_s: judged.seconds,
                flags: judged.flags.join(";"),
                warnings: judged.warnings.join(";"),
            });
            let judged_values = v.values_of_run(k);
            values.extend(sources.iter().map(|source| {
                match source {
                    Source::Judged(i) => judged_values.get(*i).copied().flatten(),
                    Source::Lookup(spec) => samples
                        .get(k)
                        .and_then(|s| spec.value(&s.metrics, judged.seconds)),
                }
            }));
        }
        out.push(CellRows {
            cell,
            runs,
            metrics: Arc::clone(metric_indices),
            values,
        });
    }
    out
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
    // The characters that need quoting are ASCII: a scan of the bytes finds them (a
    // `contains` of four chars decodes every character, for each cell's every field).
    let plain = !text
        .bytes()
        .any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && (numeric || !text.starts_with(['=', '+', '-', '@']));
    if plain {
        out.push_str(text);
    } else {
        out.push_str(&field(text, numeric));
    }
}

/// `n` in decimal, appended to `out`: `format!("{n}")` without the formatter, which a
/// big results.csv would call hundreds of thousands of times.
fn push_uint(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
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
    fn weight(&self) -> u32 {
        // After the page and report.json, before the Markdown: on two cores a big
        // report's page and results.csv take about as long as the other two.
        2
    }
    fn write_to(&self, report: &Report, file: &mut dyn std::io::Write) -> Result<(), ExportError> {
        // Rows are made in a buffer, handed on whenever it holds this much.
        const CHUNK: usize = 1 << 16;
        let columns = metric_columns(report);
        let mut out = String::new();
        let header: Vec<String> = CSV_COLUMNS
            .iter()
            .map(|c| c.to_string())
            .chain(columns.iter().map(|(n, u)| format!("{n} ({u})")))
            .map(|h| field(&h, false))
            .collect();
        out.push_str(&header.join(","));
        out.push_str("\r\n");
        // Each of `sample_metrics` in its column, found once rather than per value.
        let column_of: Vec<Option<usize>> = report
            .sample_metrics
            .iter()
            .map(|(_, m)| {
                columns
                    .iter()
                    .position(|(n, u)| n == &m.name && u == &m.unit)
            })
            .collect();
        let mut values: Vec<Option<f64>> = vec![None; columns.len()];
        for rows in &report.samples {
            let (address, provenance) = CellFields::of(&rows.cell);
            let width = rows.metrics.len();
            for (k, run) in rows.runs.iter().enumerate() {
                out.push_str(&address);
                run.write(&mut out);
                out.push_str(&provenance);
                values.iter_mut().for_each(|v| *v = None);
                // A column takes the row's first value of its name and unit.
                let of_run = rows.values.get(k * width..(k + 1) * width).unwrap_or(&[]);
                for (i, v) in rows.metrics.iter().zip(of_run).rev() {
                    if let (Some(Some(c)), Some(v)) = (column_of.get(*i), v) {
                        values[*c] = Some(*v);
                    }
                }
                for v in &values {
                    out.push(',');
                    if let Some(v) = v {
                        push_number(&mut out, *v);
                    }
                }
                out.push_str("\r\n");
                if out.len() >= CHUNK {
                    file.write_all(out.as_bytes())?;
                    out.clear();
                }
            }
        }
        file.write_all(out.as_bytes())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{field, push_field, push_uint};

    /// A field is appended as `field` quotes it, whatever it holds.
    #[test]
    fn push_field_appends_what_field_makes() {
        for text in [
            "",
            "plain",
            "a,b",
            "say \"hi\"",
            "two\nlines",
            "cr\r",
            " lead",
            "trail ",
            "=1+2",
            "+x",
            "-3",
            "@me",
            "é, ü",
            "±0.5",
            "tab\there",
        ] {
            for numeric in [false, true] {
                let mut out = String::from("x,");
                push_field(&mut out, text, numeric);
                assert_eq!(out, format!("x,{}", field(text, numeric)), "{text:?}");
            }
        }
    }

    #[test]
    fn integers_are_written_as_std_displays_them() {
        let mut samples = vec![0, 1, 9, 10, 99, 100, 4242, u64::from(u32::MAX), u64::MAX];
        samples.extend((0..64).map(|b| 1u64 << b));
        samples.extend((0..64).map(|b| (1u64 << b) - 1));
        for n in samples {
            let mut out = String::from("x");
            push_uint(&mut out, n);
            assert_eq!(out, format!("x{n}"));
        }
    }
}
