//! `results.csv`: one row per stored run of the report's cells (warm-ups too, each
//! marked), with the cell's address and provenance, then one column per metric. Written
//! by the `csv` crate's writer (RFC 4180 quoting, CRLF), every text field through one
//! guard first (`guard`: controls escaped, no formula); numbers as Rust prints an f64 (the shortest text that reads back the same,
//! never an exponent), so the bytes are the same on every machine. docs/FORMAT.md
//! ("results.csv") lists the columns.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::Value;

use super::Report;
use super::cells::View;
use super::export::{ExportError, Exporter};
use super::format::push_number;
use super::provenance::clean;
use crate::model::{MetricSpec, RunOrder, Scenario};
use crate::store::{CellFacts, RunKind, Scalar};

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

/// results.csv's rows after its header, as UTF-8 bytes: made as the report is built, on
/// every core beside its other parts, rather than as the file is written (a big store
/// has a hundred thousand runs, and this is the file's whole work). In pieces of about
/// `CHUNK` bytes (the csv writer's buffer, each piece one of its flushes), so that no
/// one buffer is copied as it grows; a piece may end inside a character.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CsvRows(Vec<Vec<u8>>);

impl CsvRows {
    /// The rows' bytes, piece by piece.
    pub fn pieces(&self) -> impl Iterator<Item = &[u8]> {
        self.0.iter().map(Vec::as_slice)
    }
}

/// Where the csv writer's flushes go: each one a piece of `CsvRows`.
#[derive(Default)]
struct Pieces(Vec<Vec<u8>>);

impl std::io::Write for Pieces {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.push(buf.to_vec());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A csv writer as results.csv wants one: RFC 4180 quoting where a field needs it, CRLF
/// line ends, and records of any length (the header and rows agree by construction).
pub(super) fn writer<W: std::io::Write>(out: W, buffer: usize) -> csv::Writer<W> {
    csv::WriterBuilder::new()
        .terminator(csv::Terminator::CRLF)
        .quote_style(csv::QuoteStyle::Necessary)
        .flexible(true)
        .buffer_capacity(buffer)
        .from_writer(out)
}

/// One row's fields, written through the csv writer: text already through `guard`,
/// numbers made in `scratch`. Writing into `Pieces` cannot fail, so neither can these.
struct Row<'w> {
    csv: &'w mut csv::Writer<Pieces>,
    scratch: String,
}

impl Row<'_> {
    fn field(&mut self, text: &str) {
        let _ = self.csv.write_field(text);
    }
    fn uint(&mut self, n: u64) {
        let _ = self.csv.write_field(itoa::Buffer::new().format(n));
    }
    fn number(&mut self, x: f64) {
        self.scratch.clear();
        push_number(&mut self.scratch, x);
        let _ = self.csv.write_field(&self.scratch);
    }
    fn end(&mut self) {
        let _ = self.csv.write_record(None::<&[u8]>);
    }
}

/// The size of a piece of `CsvRows`.
const CHUNK: usize = 1 << 16;

/// A run's columns of its row, `seq` to `warnings`.
fn write_run(row: &mut Row, run: &super::cells::Run, apply: usize) {
    let yes_no = |b: bool| if b { "true" } else { "false" };
    row.uint(u64::from(run.seq));
    row.uint(apply as u64);
    row.field(match run.kind {
        RunKind::Warmup => "warmup",
        RunKind::Measured => "measured",
    });
    row.field(yes_no(run.current));
    row.field(yes_no(run.counts));
    row.field(match run.order {
        Some(RunOrder::Blocked) => "blocked",
        Some(RunOrder::Interleaved) => "interleaved",
        None => "",
    });
    match run.board_seq {
        Some(n) => row.uint(n),
        None => row.field(""),
    }
    row.number(run.seconds);
    for list in [&run.flags, &run.warnings] {
        // `;`-separated; most runs have none or one, which need no joining.
        match list.as_slice() {
            [] => row.field(""),
            [one] => row.field(&guard(one)),
            several => row.field(&guard(&several.join(";"))),
        }
    }
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
    // Read as the report's provenance reads them: typed, a fact of another type absent.
    let facts = sources.facts.map(|f| CellFacts::of_stored(f));
    let facts = facts.as_ref();
    let text = |s: Option<&Scalar>| s.and_then(Scalar::as_text).map(clean).unwrap_or_default();
    let mount = sources
        .mount_options
        .as_ref()
        .map(|a| a.join(","))
        .unwrap_or_default();
    let tools = facts.map_or_else(String::new, |f| {
        f.tools
            .iter()
            .filter_map(|(k, v)| {
                let line = v
                    .as_text()?
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())?;
                Some(format!("{k}={}", clean(line)))
            })
            .collect::<Vec<_>>()
            .join("; ")
    });
    let input = |text: Option<&str>| text.map(clean).unwrap_or_default();
    vec![
        input(sources.image),
        input(sources.board_model),
        input(sources.storage_model),
        input(sources.filesystem_kind),
        mount,
        text(facts.and_then(|f| f.kernel.as_ref())),
        text(
            facts
                .and_then(|f| f.os_release.as_ref())
                .and_then(|o| o.get("PRETTY_NAME")),
        ),
        text(facts.and_then(|f| f.storage.as_ref()?.usb.as_ref()?.driver.as_ref())),
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
    let mut csv = writer(Pieces::default(), CHUNK);
    let mut row = Row {
        csv: &mut csv,
        scratch: String::new(),
    };
    let (mut address, mut after): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
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
        // The cell's columns, guarded once for all its runs: its address before the
        // run's, its provenance after.
        address.clear();
        address.extend(
            [
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
            .map(|text| guard(text).into_owned()),
        );
        // The provenance columns, made again only where they may differ from the
        // last cell's.
        let made_of = Sources::of(v);
        if !(reuse && last_sources.as_ref().is_some_and(|l| l.same_as(&made_of))) {
            after.clear();
            after.extend(provenance(&made_of).iter().map(|t| guard(t).into_owned()));
        }
        last_sources = Some(made_of);
        let applies: Vec<usize> = v.sessions.iter().map(|s| apply_of(s)).collect();
        let samples = &v.data.samples;
        // The views' runs, not the samples: only a column the view did not judge looks
        // into its sample.
        for (k, run) in v.runs.iter().enumerate() {
            for f in &address {
                row.field(f);
            }
            write_run(
                &mut row,
                run,
                applies.get(run.session).copied().unwrap_or(0),
            );
            for f in &after {
                row.field(f);
            }
            values.fill(None);
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
                match x {
                    Some(x) => row.number(*x),
                    None => row.field(""),
                }
            }
            row.end();
        }
    }
    // The last flush; `Pieces` takes every write, so this cannot fail.
    CsvRows(csv.into_inner().map(|p| p.0).unwrap_or_default())
}

/// The one guard every text field of results.csv passes before the csv writer quotes
/// it: on one line with every control character as `shown` escapes it (a spreadsheet
/// takes a leading tab, carriage return or NUL, and a terminal an ESC), and text a
/// spreadsheet would run as a formula (`formula`) with a leading `'`, as OWASP and ASVS
/// advise: values from a board or a store someone sent are hostile.
pub(super) fn guard(text: &str) -> Cow<'_, str> {
    let text = crate::shown::one_line(text);
    if formula(&text) {
        Cow::Owned(format!("'{text}"))
    } else {
        text
    }
}

/// Whether a spreadsheet would read `text` as a formula: an `=`, `+`, `-` or `@` first,
/// after any white space.
fn formula(text: &str) -> bool {
    text.trim_start().starts_with(['=', '+', '-', '@'])
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

/// A csv writer's error, which over a file is the file's.
pub(super) fn csv_error(e: csv::Error) -> ExportError {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e.into(),
        other => std::io::Error::other(format!("{other:?}")).into(),
    }
}

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
            .map(ToString::to_string)
            .chain(
                metric_columns(&report.sample_metrics)
                    .iter()
                    .map(|(n, u)| format!("{n} ({u})")),
            )
            .map(|h| guard(&h).into_owned())
            .collect();
        let mut csv = writer(&mut *file, 1 << 12);
        csv.write_record(&header).map_err(csv_error)?;
        csv.flush()?;
        drop(csv);
        for piece in report.csv_rows.pieces() {
            file.write_all(piece)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Pieces, Row, guard, rows_made, writer};
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
            let text = |reuse: bool| {
                String::from_utf8(rows_made(&scenario, &views, &[], reuse).0.concat()).unwrap()
            };
            let (reused, own) = (text(true), text(false));
            assert!(own.contains(kernel.split(' ').nth(1).unwrap()), "{own}");
            assert!(own.contains("uas") && own.lines().count() > 8, "{own}");
            assert_eq!(reused, own, "{kernel}, the same inputs: {same_inputs}");
        }
    }

    /// Every text field passes one guard: whatever a stored string starts with (each
    /// character OWASP and ASVS name: `=`, `+`, `-`, `@`, tab, carriage return, NUL;
    /// white space before a sign; a newline), the field as a spreadsheet reads it back
    /// starts with no formula character and no control, and holds the text escaped.
    #[test]
    fn the_guard_leaves_no_field_a_formula_or_a_control_first() {
        let leads = [
            "=",
            "+",
            "-",
            "@",
            "\t",
            "\r",
            "\0",
            "\n",
            " =",
            "\t=",
            "\r=",
            " \t@",
            "\u{a0}=",
            "\u{3000}+",
            "\u{85}=",
            "\u{1b}[2J=",
        ];
        for lead in leads {
            let text = format!("{lead}1+1, \"x\"");
            let mut csv = writer(Pieces::default(), 64);
            let _ = csv.write_field("first");
            let _ = csv.write_field(&*guard(&text));
            let _ = csv.write_record(None::<&[u8]>);
            let bytes = csv.into_inner().map(|p| p.0.concat()).unwrap();
            let mut reader = ::csv::ReaderBuilder::new()
                .has_headers(false)
                .from_reader(bytes.as_slice());
            for record in reader.records() {
                let field = record.unwrap()[1].to_string();
                let start = field.trim_start();
                assert!(
                    !start.starts_with(['=', '+', '-', '@']),
                    "{lead:?}: {field:?}"
                );
                assert!(!field.chars().any(char::is_control), "{lead:?}: {field:?}");
                assert!(field.ends_with("1+1, \"x\""), "{lead:?}: {field:?}");
            }
        }
    }

    /// The csv writer quotes as results.csv always did where a field needs it: a comma,
    /// a quote (doubled); text needing none is written as it is.
    #[test]
    fn fields_are_quoted_only_where_rfc_4180_needs_it() {
        for (text, want) in [
            ("", ""),
            ("plain", "plain"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("two\nlines", "two\\nlines"),
            ("=1+2", "'=1+2"),
            ("é, ü", "\"é, ü\""),
            ("±0.5", "±0.5"),
            ("tab\there", "tab\\there"),
        ] {
            let mut csv = writer(Pieces::default(), 64);
            let _ = csv.write_field("x");
            let _ = csv.write_field(&*guard(text));
            let _ = csv.write_record(None::<&[u8]>);
            let bytes = csv.into_inner().map(|p| p.0.concat()).unwrap();
            assert_eq!(
                String::from_utf8(bytes).unwrap(),
                format!("x,{want}\r\n"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn integers_are_written_as_std_displays_them() {
        let mut samples = vec![0, 1, 9, 10, 99, 100, 4242, u64::from(u32::MAX), u64::MAX];
        samples.extend((0..64).map(|b| 1u64 << b));
        samples.extend((0..64).map(|b| (1u64 << b) - 1));
        let mut csv = writer(Pieces::default(), 64);
        let mut row = Row {
            csv: &mut csv,
            scratch: String::new(),
        };
        for &n in &samples {
            row.uint(n);
        }
        row.end();
        let bytes = csv.into_inner().map(|p| p.0.concat()).unwrap();
        let want: Vec<String> = samples.iter().map(u64::to_string).collect();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            format!("{}\r\n", want.join(","))
        );
    }
}
