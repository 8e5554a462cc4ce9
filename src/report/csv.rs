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

/// One stored run as `results.csv` has it. A big store has many runs per cell: the
/// cell's columns are made once and shared by its runs' rows, and a run's own columns
/// are kept as values, turned into text only as the file is written.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleRow {
    /// The cell's columns: its address (`scenario` to `cell`), then its provenance
    /// (`image_id` to `tools`), as text.
    pub cell: Arc<Vec<String>>,
    /// The run's own columns, `seq` to `warnings`.
    pub run: RunColumns,
    /// The run's value of each of its test's metrics (computed ones too): (its index
    /// in `Report::sample_metrics`, value).
    pub metrics: Vec<(usize, f64)>,
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
    let facts = view.data.facts.as_ref();
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

/// Every stored run of the report's cells, in report order of cells and store order of
/// runs. `metrics` are the tables' columns per test.
pub(super) fn rows(
    scenario: &Scenario,
    views: &[View],
    metrics: &[(String, MetricSpec)],
) -> Vec<SampleRow> {
    // Applies are numbered by their session, which starts with its start time: the
    // order they ran in, without showing when.
    let mut sessions: Vec<&str> = Vec::new();
    for s in views.iter().flat_map(|v| &v.data.samples) {
        // A cell's runs mostly share their apply: skip the repeats before sorting.
        if sessions.last() != Some(&s.session.as_str()) {
            sessions.push(&s.session);
        }
    }
    sessions.sort_unstable();
    sessions.dedup();
    let apply: BTreeMap<&str, usize> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (*s, i + 1))
        .collect();
    // Each test's metric columns, found once rather than per cell.
    let mut of_tests: BTreeMap<&str, Vec<(usize, &MetricSpec)>> = BTreeMap::new();
    for (i, (t, m)) in metrics.iter().enumerate() {
        of_tests.entry(t.as_str()).or_default().push((i, m));
    }
    let mut out = Vec::with_capacity(views.iter().map(|v| v.data.samples.len()).sum());
    let mut last_session: (&str, usize) = ("", 0);
    for v in views {
        let a = v.address();
        let test = a.test.to_string();
        let of_test = of_tests.get(test.as_str()).map_or(&[][..], Vec::as_slice);
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
        let cell = Arc::new(cell);
        for (s, judged) in v.data.samples.iter().zip(&v.runs) {
            if last_session.0 != s.session {
                last_session = (&s.session, apply[s.session.as_str()]);
            }
            let run = RunColumns {
                seq: s.seq,
                apply: last_session.1,
                kind: s.kind,
                current: judged.current,
                counted: judged.counts,
                order: s.order,
                board_seq: s.board_seq,
                duration_s: s.ended - s.started,
                flags: judged.flags.join(";"),
                warnings: judged.warnings.join(";"),
            };
            let seconds = s.ended - s.started;
            let metrics = of_test
                .iter()
                .filter_map(|(i, m)| Some((*i, m.value(&s.metrics, seconds)?)))
                .collect();
            out.push(SampleRow {
                cell: Arc::clone(&cell),
                run,
                metrics,
            });
        }
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

/// `n` in decimal, appended to `out`: `format!("{n}")` without the formatter, which a
/// big results.csv would call hundreds of thousands of times.
fn push_uint(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// An f64 as CSV and JSON readers take it back exactly (nothing when not finite),
/// appended to `out`: the shortest digits that read back as `x` (the nearest of them),
/// never with an exponent, byte for byte what `format!("{x}")` prints
/// (`numbers_are_written_as_std_displays_them` checks it).
pub(super) fn push_number(out: &mut String, x: f64) {
    use std::fmt::Write;
    if !x.is_finite() {
        return;
    }
    // zmij finds the same digits far faster than std, but where two candidates are
    // exactly as near it takes the even one and std the one further from zero: those
    // few, and numbers of 1e16 and more, std writes.
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(x);
    // Most numbers come from zmij as std lays them out (`53.21`, `-0.0015`): a point,
    // no exponent and no trailing zero. Those are written as they are.
    if let Some(decimals) = laid_out_as_std(text)
        && !is_tie(x, -(decimals as i32))
    {
        out.push_str(text);
        return;
    }
    match Shortest::of(text).filter(|s| !is_tie(x, s.exponent)) {
        Some(s) => s.push_to(out),
        None => {
            let _ = write!(out, "{x}");
        }
    }
}

/// The number of decimals of a number zmij wrote as std's `{}` would: with a point and
/// at least one decimal, the last not `0` (std writes `5.0` as `5`), and no exponent.
fn laid_out_as_std(text: &str) -> Option<usize> {
    // One pass over a few ASCII bytes: a multi-character `contains` and `split_once`
    // each searched the text again, for every number of a big results.csv.
    let bytes = text.as_bytes();
    let mut point = None;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'e' | b'E' => return None,
            b'.' => point = Some(i),
            _ => {}
        }
    }
    let decimals = bytes.len() - point? - 1;
    (decimals > 0 && bytes.last() != Some(&b'0')).then_some(decimals)
}

/// Whether `x` lies exactly halfway between two numbers of digits × 10^`exponent` (the
/// shortest digits at that exponent and a neighbour of as many): 2·|x|·10^-exponent is
/// then an odd integer. With |x| = m·2^e, that is m·5^j·2^(e+j+1) for j = -exponent,
/// odd exactly when 2^-(e+j+1) is the largest power of two dividing m (5^j is odd).
fn is_tie(x: f64, exponent: i32) -> bool {
    let bits = x.abs().to_bits();
    let (m, e) = match bits >> 52 {
        0 => (bits, -1074),
        b => ((bits & ((1 << 52) - 1)) | (1 << 52), b as i32 - 1075),
    };
    let p = e - exponent + 1;
    m != 0 && p <= 0 && m.trailing_zeros() as i32 == -p
}

/// A number's shortest digits as zmij writes them: `digits` × 10^`exponent`, the digits
/// without leading or trailing zeros, the exponent at most 0.
struct Shortest {
    negative: bool,
    /// The digits are `buf[..len]` (ASCII); a double has at most 17.
    buf: [u8; 24],
    len: usize,
    exponent: i32,
}

impl Shortest {
    /// None for a zero or a number of 1e16 and more (a positive exponent).
    fn of(text: &str) -> Option<Shortest> {
        let (negative, text) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, power) = match text.split_once(['e', 'E']) {
            Some((m, e)) => (m, e.parse::<i32>().ok()?),
            None => (text, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut out = Shortest {
            negative,
            buf: [0; 24],
            len: 0,
            exponent: power - fraction.len() as i32,
        };
        // The digits of whole and fraction together, leading zeros left out.
        for &b in whole.as_bytes().iter().chain(fraction.as_bytes()) {
            if !b.is_ascii_digit() || out.len == out.buf.len() {
                return None;
            }
            if out.len == 0 && b == b'0' {
                continue;
            }
            out.buf[out.len] = b;
            out.len += 1;
        }
        while out.len > 0 && out.buf[out.len - 1] == b'0' {
            out.len -= 1;
            out.exponent += 1;
        }
        (out.len > 0 && out.exponent <= 0).then_some(out)
    }

    /// The digits as std's `{}` lays them out: `0.00015`, `15.5`, `-3`.
    fn push_to(&self, out: &mut String) {
        if self.negative {
            out.push('-');
        }
        let digits = &self.buf[..self.len];
        let point = digits.len() as i32 + self.exponent;
        // The digits are ASCII (`of` took nothing else), so they are always text.
        let push = |out: &mut String, bytes: &[u8]| {
            out.push_str(std::str::from_utf8(bytes).unwrap_or_default())
        };
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-point) as usize));
            push(out, digits);
        } else {
            let (whole, fraction) = digits.split_at(point as usize);
            push(out, whole);
            if !fraction.is_empty() {
                out.push('.');
                push(out, fraction);
            }
        }
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
        // The last row's cell, with its columns as written.
        let mut cell: Option<(&Arc<Vec<String>>, CellText)> = None;
        for row in &report.samples {
            if !cell
                .as_ref()
                .is_some_and(|(c, _)| Arc::ptr_eq(c, &row.cell))
            {
                cell = Some((&row.cell, CellFields::of(&row.cell)));
            }
            let Some((_, (address, provenance))) = &cell else {
                continue;
            };
            out.push_str(address);
            row.run.write(&mut out);
            out.push_str(provenance);
            values.iter_mut().for_each(|v| *v = None);
            // A column takes the row's first value of its name and unit.
            for (i, v) in row.metrics.iter().rev() {
                if let Some(Some(c)) = column_of.get(*i) {
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
        file.write_all(out.as_bytes())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{push_number, push_uint};

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

    fn check(x: f64) {
        let mut out = String::from("x");
        push_number(&mut out, x);
        let want = if x.is_finite() {
            format!("x{x}")
        } else {
            "x".to_string()
        };
        assert_eq!(out, want, "{x:e} ({:#x})", x.to_bits());
    }

    /// Zeros, non-finite values, the extremes, exact ties (2^-25 ends in ...3125),
    /// powers of two and ten and their neighbours, values of 1 to 17 digits at every
    /// scale, and millions of bit patterns over every exponent.
    #[test]
    fn numbers_are_written_as_std_displays_them() {
        for x in [
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::EPSILON,
            f64::from_bits(1),
            0.1,
            0.3,
            1.0 / 3.0,
            123.456,
            2.9802322387695313e-8,
            662936471232937.2,
            1e15,
            1e16,
            1e21,
            1e22,
            1e-5,
            1e-7,
            5e-324,
            9007199254740993.0,
        ] {
            check(x);
            check(-x);
        }
        for e in -1074..1024 {
            let p = 2f64.powi(e);
            for x in [p, p.next_up(), p.next_down(), 1.5 * p, 1.25 * p] {
                check(x);
            }
        }
        for e in -320..308 {
            let p: f64 = format!("1e{e}").parse().unwrap();
            for x in [p, p.next_up(), p.next_down(), 3.0 * p, 7.5 * p] {
                check(x);
            }
        }
        for k in 0..200_000u64 {
            check(k as f64 / 1000.0);
            check(k as f64 * 0.01 + 0.005);
            check(1.7e9 + k as f64 * 0.1 + 3.2 - (1.7e9 + k as f64 * 0.1));
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..3_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(f64::from_bits(x));
            // Values of 1 to 17 significant digits at every scale.
            let digits = 1 + (x % 17) as usize;
            let exponent = ((x >> 8) % 600) as i32 - 300;
            let short: f64 = format!("{:.*e}", digits - 1, f64::from_bits(x >> 2))
                .split('e')
                .next()
                .map(|m| format!("{m}e{exponent}"))
                .and_then(|t| t.parse().ok())
                .unwrap_or(0.0);
            check(short);
            // Halfway values: a dyadic mantissa at a scale where it has 16 or 17 digits.
            let tie = (x >> 11) as f64 * 2f64.powi(((x >> 3) % 60) as i32 - 70);
            check(tie);
        }
    }
}
