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

/// results.csv's rows after its header, as text: made as the report is built, on every
/// core beside its other parts, rather than as the file is written (a big store has a
/// hundred thousand runs, and this is the file's whole work). In pieces of about
/// `CHUNK` bytes, so that no one buffer is copied as it grows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CsvRows(Vec<String>);

impl CsvRows {
    /// The rows' text, piece by piece.
    pub fn pieces(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }
}

/// The size of a piece of `CsvRows`.
const CHUNK: usize = 1 << 16;

/// A run's columns of its row (`seq` to `warnings`), appended with a comma before each.
fn push_run(out: &mut String, run: &super::cells::Run, apply: usize) {
    let yes_no = |b: bool| if b { "true" } else { "false" };
    out.push(',');
    push_uint(out, u64::from(run.seq));
    out.push(',');
    push_uint(out, apply as u64);
    out.push(',');
    out.push_str(match run.kind {
        RunKind::Warmup => "warmup",
        RunKind::Measured => "measured",
    });
    out.push(',');
    out.push_str(yes_no(run.current));
    out.push(',');
    out.push_str(yes_no(run.counts));
    out.push(',');
    out.push_str(match run.order {
        Some(RunOrder::Blocked) => "blocked",
        Some(RunOrder::Interleaved) => "interleaved",
        None => "",
    });
    out.push(',');
    if let Some(n) = run.board_seq {
        push_uint(out, n);
    }
    out.push(',');
    push_number(out, run.seconds);
    for list in [&run.flags, &run.warnings] {
        out.push(',');
        // `;`-separated; most runs have none or one, which need no joining.
        match list.as_slice() {
            [] => {}
            [one] => push_field(out, one, false),
            several => push_field(out, &several.join(";"), false),
        }
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

/// What a row's provenance columns are made from: the cell's stored facts and the
/// inputs they show. Neighbouring cells (one board and image, its tests and storage)
/// mostly have the same, and so the same columns: `rows` makes them once for all.
struct Sources<'v> {
    facts: Option<&'v std::sync::Arc<Value>>,
    image: Option<&'v str>,
    board_model: Option<&'v str>,
    storage_model: Option<&'v str>,
    filesystem_kind: Option<&'v str>,
    mount_options: Option<Vec<&'v str>>,
}

impl<'v> Sources<'v> {
    fn of(view: &View<'v>) -> Sources<'v> {
        let inputs = &view.cell.inputs;
        Sources {
            facts: view.data.facts.as_ref(),
            // A prepared image's inputs are a record: its base image's identity here.
            image: inputs.text("/image").or_else(|| inputs.text("/image/base")),
            board_model: inputs.text("/board/model"),
            storage_model: inputs.text("/storage/model"),
            filesystem_kind: inputs.text("/filesystem/kind"),
            mount_options: inputs.texts("/filesystem/mount_options"),
        }
    }

    /// Whether `other` makes the same columns: the same inputs shown, and the same
    /// stored facts (the store shares the facts of cells whose facts are the same bytes,
    /// so one `Arc` is compared without its contents; equal contents in two also agree).
    fn same_as(&self, other: &Sources) -> bool {
        let facts = match (self.facts, other.facts) {
            (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b) || a == b,
            (None, None) => true,
            _ => false,
        };
        facts
            && self.image == other.image
            && self.board_model == other.board_model
            && self.storage_model == other.storage_model
            && self.filesystem_kind == other.filesystem_kind
            && self.mount_options == other.mount_options
    }
}

/// The provenance columns of a cell, from its inputs and stored facts.
fn provenance(sources: &Sources) -> Vec<String> {
    let facts = sources.facts.map(|f| &**f);
    let fact = |p: &str| facts.and_then(|f| str_at(f, p)).map(clean);
    let mount = sources
        .mount_options
        .as_ref()
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
    let input = |text: Option<&str>| text.map(clean).unwrap_or_default();
    vec![
        input(sources.image),
        input(sources.board_model),
        input(sources.storage_model),
        input(sources.filesystem_kind),
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
) -> CsvRows {
    rows_made(scenario, views, metrics, true)
}

/// `rows`; `reuse` takes a cell's provenance columns from the cell before it when
/// `Sources::same_as` says they are the same (the tests compare with every cell's own).
fn rows_made(
    scenario: &Scenario,
    views: &[View],
    metrics: &[(String, MetricSpec)],
    reuse: bool,
) -> CsvRows {
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
    // the file's columns they land in.
    let columns = metric_columns(metrics);
    let mut of_tests: BTreeMap<&str, (Vec<&MetricSpec>, Vec<Option<usize>>)> = BTreeMap::new();
    for (t, m) in metrics {
        let (specs, landing) = of_tests.entry(t.as_str()).or_default();
        specs.push(m);
        landing.push(
            columns
                .iter()
                .position(|(n, u)| n == &m.name && u == &m.unit),
        );
    }
    let no_metrics = (Vec::new(), Vec::new());
    let mut values: Vec<Option<f64>> = vec![None; columns.len()];
    let mut pieces = Vec::new();
    let mut out = String::with_capacity(CHUNK + CHUNK / 4);
    let (mut address, mut after) = (String::new(), String::new());
    let mut last_sources: Option<Sources> = None;
    for v in views {
        let a = v.address();
        let (of_test, landing) = of_tests.get(a.test.as_str()).unwrap_or(&no_metrics);
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
        // The cell's columns, quoted once for all its runs: its address before the
        // run's, its provenance after.
        address.clear();
        for (i, text) in [
            scenario.name.as_str(),
            a.test.as_str(),
            a.image.as_str(),
            a.board.as_str(),
            a.storage.as_ref().map_or("", |x| x.as_str()),
            a.filesystem.as_ref().map_or("", |x| x.as_str()),
            a.network.as_ref().map_or("", |x| x.as_str()),
            v.cell.key.as_str(),
        ]
        .into_iter()
        .enumerate()
        {
            if i > 0 {
                address.push(',');
            }
            push_field(&mut address, text, false);
        }
        // The provenance columns, made again only where they may differ from the
        // last cell's.
        let made_of = Sources::of(v);
        if !(reuse && last_sources.as_ref().is_some_and(|l| l.same_as(&made_of))) {
            after.clear();
            for text in provenance(&made_of) {
                after.push(',');
                push_field(&mut after, &text, false);
            }
        }
        last_sources = Some(made_of);
        let applies: Vec<usize> = v.sessions.iter().map(|s| apply_of(s)).collect();
        let samples = &v.data.samples;
        // The views' runs, not the samples: only a column the view did not judge looks
        // into its sample.
        for (k, run) in v.runs.iter().enumerate() {
            out.push_str(&address);
            push_run(
                &mut out,
                run,
                applies.get(run.session).copied().unwrap_or(0),
            );
            out.push_str(&after);
            values.iter_mut().for_each(|x| *x = None);
            let judged = v.values_of_run(k);
            // A column takes the row's first value of its name and unit.
            for (source, column) in sources.iter().zip(landing).rev() {
                let value = match source {
                    Source::Judged(i) => judged.get(*i).copied().flatten(),
                    Source::Lookup(spec) => samples
                        .get(k)
                        .and_then(|s| spec.value(&s.metrics, run.seconds)),
                };
                if let (Some(c), Some(x)) = (column, value) {
                    values[*c] = Some(x);
                }
            }
            for x in &values {
                out.push(',');
                if let Some(x) = x {
                    push_number(&mut out, *x);
                }
            }
            out.push_str("\r\n");
            if out.len() >= CHUNK {
                pieces.push(std::mem::replace(
                    &mut out,
                    String::with_capacity(CHUNK + CHUNK / 4),
                ));
            }
        }
    }
    if !out.is_empty() {
        pieces.push(out);
    }
    CsvRows(pieces)
}

/// A field as RFC 4180 wants it, on one line with every control character as `shown`
/// escapes it (a spreadsheet takes a leading tab or carriage return, and a terminal an
/// ESC). Text a spreadsheet would run as a formula (an `=`, `+`, `-` or `@` first, after
/// any white space) gets a leading `'`, as OWASP advises: values from a board or a
/// store someone sent are hostile.
fn field(text: &str, numeric: bool) -> String {
    let text = crate::shown::one_line(text);
    let guarded = if !numeric && formula(&text) {
        format!("'{text}")
    } else {
        text.into_owned()
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

/// Whether a spreadsheet would read `text` as a formula.
fn formula(text: &str) -> bool {
    text.trim_start().starts_with(['=', '+', '-', '@'])
}

/// `field`, appended to `out`; a field that needs no quoting is copied as it is.
fn push_field(out: &mut String, text: &str, numeric: bool) {
    // The characters that need quoting or escaping are ASCII or C1 controls: a scan of
    // the bytes finds them (a `contains` of four chars decodes every character, for
    // each cell's every field).
    let plain = !text
        .bytes()
        .any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r' | 0x7f | 0xc2) || b < 0x20)
        && !text.starts_with(' ')
        && !text.ends_with(' ')
        && (numeric || !formula(text));
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

/// The metric columns: each (name, unit) of `metrics` (`Report::sample_metrics`) once,
/// in the tables' order, headed `name (unit)`.
pub(super) fn metric_columns(metrics: &[(String, MetricSpec)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (_, m) in metrics {
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
        // Its rows were made with the report: only the header is left to make, so it
        // is the shortest, and runs last.
        0
    }
    fn write_to(&self, report: &Report, file: &mut dyn std::io::Write) -> Result<(), ExportError> {
        let header: Vec<String> = CSV_COLUMNS
            .iter()
            .map(|c| c.to_string())
            .chain(
                metric_columns(&report.sample_metrics)
                    .iter()
                    .map(|(n, u)| format!("{n} ({u})")),
            )
            .map(|h| field(&h, false))
            .collect();
        file.write_all(header.join(",").as_bytes())?;
        file.write_all(b"\r\n")?;
        for piece in report.csv_rows.pieces() {
            file.write_all(piece.as_bytes())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{field, push_field, push_uint, rows_made};
    use crate::report::cells;
    use crate::store::CellData;

    /// The provenance columns a cell takes from the cell before it are the ones made
    /// for it alone: where neighbours' facts differ (another kernel), are the same
    /// bytes in another value, and where their inputs differ (another storage).
    #[test]
    fn provenance_columns_taken_from_the_last_cell_are_each_cells_own() {
        let kernels = ["Linux 6.1.0 aarch64", "Linux 9.9.9 \"other\", x86_64"];
        for (kernel, same_inputs) in kernels.into_iter().flat_map(|k| [(k, false), (k, true)]) {
            let (ws, scenario, mut plan, mut data) =
                crate::report::tests_exports::fixture_with_kernel(kernel);
            // Every cell showing the first one's inputs: neighbours differ by their
            // facts alone.
            if same_inputs {
                let first = plan.cells[0].inputs.clone();
                plan.cells.iter_mut().for_each(|c| c.inputs = first.clone());
            }
            // Two cells whose facts are equal values in two `Arc`s.
            let copies: Vec<_> = data.keys().skip(3).take(2).cloned().collect();
            for k in copies {
                if let Some(f) = data.get_mut(&k).and_then(|d| d.facts.as_mut()) {
                    *f = std::sync::Arc::new((**f).clone());
                }
            }
            let ordered = cells::order(&scenario, plan.cells.iter());
            let empty = CellData::default();
            let views = cells::views(&ws.recipes, &scenario, &ordered, &data, &empty);
            let text = |reuse: bool| rows_made(&scenario, &views, &[], reuse).0.concat();
            let (reused, own) = (text(true), text(false));
            assert!(own.contains(kernel.split(' ').nth(1).unwrap()), "{own}");
            assert!(own.contains("uas") && own.lines().count() > 8, "{own}");
            assert_eq!(reused, own, "{kernel}, the same inputs: {same_inputs}");
        }
    }

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
