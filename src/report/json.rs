//! `report.json`: the report as data, versioned by `format` and described by
//! `docs/report.schema.json`. Numbers are JSON numbers (a table cell's mean and interval,
//! a comparison's difference and p), text is only what a person reads (labels, reasons),
//! and nothing in it is formatted for display but the `text` fields that say so.

use serde::Serialize;

use super::export::{ExportError, Exporter};
use super::{ComparisonRow, Provenance, Report, Stat, Table};
use super::{Failed, Incomplete, Method, Skipped, Validity};

/// The version of `report.json`'s schema; bumped on any change a reader could trip on.
pub const REPORT_FORMAT: u32 = 1;

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
    precision: &'a super::PrecisionNotes,
    validity: &'a [Validity],
    incomplete: &'a [Incomplete],
    failed: &'a [Failed],
    skipped: &'a [Skipped],
    provenance: &'a [Provenance],
}

#[derive(Serialize)]
struct ScenarioDoc<'a> {
    name: &'a str,
    title: &'a str,
    description: Option<&'a str>,
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
struct ColumnDoc<'a> {
    test: &'a str,
    metric: &'a str,
    label: &'a str,
    unit: &'a str,
    /// `higher` or `lower`.
    better: &'static str,
    pivot: Option<&'a str>,
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

/// A comparison. The verdict is a kind and the statistics are numbers (null where
/// there is none: an unbounded side, too few runs); `difference`, `verdict_text` and
/// `p_text` keep the words the Markdown shows.
#[derive(Serialize)]
struct ComparisonDoc<'a> {
    metric: &'a str,
    unit: &'a str,
    better: &'static str,
    baseline: &'a str,
    candidate: &'a str,
    pooled: Option<&'a super::Pooled>,
    verdict: crate::stats::Verdict,
    significant: bool,
    numbers: NumbersDoc,
    difference: &'a str,
    verdict_text: &'a str,
    p_text: &'a str,
}

#[derive(Serialize)]
struct NumbersDoc {
    confidence: f64,
    noise_band: f64,
    baseline_n: usize,
    candidate_n: usize,
    baseline_mean: Option<f64>,
    candidate_mean: Option<f64>,
    ratio: Option<f64>,
    ratio_ci_low: Option<f64>,
    ratio_ci_high: Option<f64>,
    difference_pct: Option<f64>,
    ci_low_pct: Option<f64>,
    ci_high_pct: Option<f64>,
    symmetric_pct: Option<f64>,
    symmetric_ci_low_pct: Option<f64>,
    symmetric_ci_high_pct: Option<f64>,
    p: Option<f64>,
    runs_needed: Option<crate::stats::RunsNeeded>,
    baseline_outliers: crate::stats::OutlierCount,
    candidate_outliers: crate::stats::OutlierCount,
}

fn finite(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite())
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
        columns: t
            .columns
            .iter()
            .map(|c| ColumnDoc {
                test: &c.test,
                metric: &c.name,
                label: &c.label,
                unit: &c.unit,
                better: if c.better.starts_with("higher") {
                    "higher"
                } else {
                    "lower"
                },
                pivot: c.pivot.as_deref(),
            })
            .collect(),
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

fn comparison(c: &ComparisonRow) -> ComparisonDoc<'_> {
    ComparisonDoc {
        metric: &c.metric,
        unit: &c.unit,
        better: match c.better {
            crate::model::Better::Higher => "higher",
            crate::model::Better::Lower => "lower",
        },
        baseline: &c.baseline,
        candidate: &c.candidate,
        pooled: c.pooled.as_ref(),
        verdict: c.verdict,
        significant: c.significant,
        numbers: NumbersDoc {
            confidence: c.confidence,
            noise_band: c.noise_band,
            baseline_n: c.baseline_n,
            candidate_n: c.candidate_n,
            baseline_mean: finite(c.baseline_mean),
            candidate_mean: finite(c.candidate_mean),
            ratio: finite(c.ratio),
            ratio_ci_low: finite(c.ratio_ci_low),
            ratio_ci_high: finite(c.ratio_ci_high),
            difference_pct: finite(c.diff_pct),
            ci_low_pct: finite(c.ci_low_pct),
            ci_high_pct: finite(c.ci_high_pct),
            symmetric_pct: finite(c.symmetric_pct),
            symmetric_ci_low_pct: finite(c.symmetric_ci_low_pct),
            symmetric_ci_high_pct: finite(c.symmetric_ci_high_pct),
            p: finite(c.p),
            runs_needed: c.runs_needed,
            baseline_outliers: c.baseline_outliers,
            candidate_outliers: c.candidate_outliers,
        },
        difference: &c.difference,
        verdict_text: &c.verdict_text,
        p_text: &c.p_text,
    }
}

pub struct Json;

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "report.json"
    }
    fn weight(&self) -> u32 {
        3
    }
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), ExportError> {
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
        };
        use std::io::Write as _;
        // serde_json writes token by token: buffered here, so that `out` sees big writes.
        let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut *out);
        let mut json = serde_json::Serializer::with_formatter(&mut buffered, Indented::default());
        doc.serialize(&mut json).map_err(|e| {
            // The file's error, as every exporter reports it.
            if e.is_io() {
                ExportError::Write(e.into())
            } else {
                ExportError::Json(e)
            }
        })?;
        buffered.write_all(b"\n")?;
        buffered.flush()?;
        Ok(())
    }
}

/// serde_json's `PrettyFormatter` with its two-space indent, byte for byte, but writing
/// a line's break and indentation in one write where that writes one per level:
/// report.json is a million indented lines.
#[derive(Default)]
struct Indented {
    depth: usize,
    has_value: bool,
}

impl Indented {
    /// `,\n` (or `\n` when `first`) and the indentation of the current depth.
    fn line<W: ?Sized + std::io::Write>(&self, w: &mut W, first: bool) -> std::io::Result<()> {
        const LINE: &[u8; 66] =
            b",\n                                                                ";
        let from = usize::from(first);
        let width = 2 * self.depth;
        if 2 + width <= LINE.len() {
            return w.write_all(&LINE[from..2 + width]);
        }
        w.write_all(&LINE[from..2])?;
        (0..self.depth).try_for_each(|_| w.write_all(b"  "))
    }
}

impl serde_json::ser::Formatter for Indented {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b"[")
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line(w, true)?;
        }
        w.write_all(b"]")
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(b"{")
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line(w, true)?;
        }
        w.write_all(b"}")
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.line(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Indented;
    use serde::Serialize;

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
}
