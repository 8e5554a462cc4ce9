//! `report.json`: the report as data, versioned by `format` and described by
//! `docs/report.schema.json`. Numbers are JSON numbers (a table cell's mean and interval,
//! a comparison's difference and p), text is only what a person reads (labels, reasons),
//! and nothing in it is formatted for display but the `text` fields that say so.

use serde::Serialize;

use super::export::{ExportError, Exporter};
use super::{ComparisonRow, Report, Row, Stat, Table};

/// The version of `report.json`'s schema; bumped on any change a reader could trip on.
pub const REPORT_FORMAT: u32 = 1;

#[derive(Serialize)]
struct ScenarioDoc<'a> {
    name: &'a str,
    title: &'a str,
    description: Option<&'a str>,
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
    /// What `difference`'s headline percentage is of: `of-baseline` or `of-mean`.
    percent: crate::model::Percent,
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

fn columns(t: &Table) -> Vec<ColumnDoc<'_>> {
    t.columns
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
        .collect()
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
        percent: c.percent,
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

/// The History section (`report.history`): the runs and, per test, its chart's file
/// and the series of `benchpipe history --json` with two runs or more.
#[derive(Serialize)]
struct HistoryDoc<'a> {
    confidence: f64,
    max_pvalue: f64,
    min_magnitude: f64,
    runs: &'a [super::history::Run],
    tests: Vec<HistoryTestDoc<'a>>,
}

#[derive(Serialize)]
struct HistoryTestDoc<'a> {
    test: &'a str,
    chart: &'a str,
    series: &'a [super::history::Series],
}

fn history(h: &super::HistorySection) -> HistoryDoc<'_> {
    HistoryDoc {
        confidence: h.confidence,
        max_pvalue: h.max_pvalue,
        min_magnitude: h.min_magnitude,
        runs: &h.runs,
        tests: h
            .tests
            .iter()
            .map(|t| HistoryTestDoc {
                test: &t.test,
                chart: &t.file,
                series: &t.series,
            })
            .collect(),
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
        let mut o = Out {
            buf: Vec::with_capacity(Out::FLUSH_AT + (Out::FLUSH_AT >> 2)),
            out,
        };
        o.raw(b"{");
        o.field(1, true, "format", &REPORT_FORMAT)?;
        o.field(1, false, "benchpipe", &report.benchpipe)?;
        let scenario = ScenarioDoc {
            name: &report.scenario,
            title: &report.title,
            description: report.description.as_deref(),
        };
        o.field(1, false, "scenario", &scenario)?;
        o.field(1, false, "method", &report.method)?;
        o.key(1, false, "tables");
        o.array(1, &report.tables, |o, t| o.table(t))?;
        let comparisons: Vec<ComparisonDoc> = report.comparisons.iter().map(comparison).collect();
        o.field(1, false, "comparisons", &comparisons)?;
        o.field(1, false, "precision", &report.precision)?;
        o.field(1, false, "validity", &report.validity)?;
        o.field(1, false, "incomplete", &report.incomplete)?;
        o.field(1, false, "failed", &report.failed)?;
        o.field(1, false, "skipped", &report.skipped)?;
        o.field(1, false, "provenance", &report.provenance)?;
        // Only where the store has one: a report of one apply is as it was.
        if let Some(h) = &report.history {
            o.field(1, false, "history", &history(h))?;
        }
        o.raw(b"\n}\n");
        o.out.write_all(&o.buf)?;
        o.out.flush()?;
        Ok(())
    }
}

/// report.json as it is written: the tables' rows, nearly all of a big report's bytes,
/// by hand, token by token as serde_json with `Indented` writes them; every other part
/// through serde at its depth. Written to `buf`, which goes to `out` in big writes.
/// `Doc` is the whole document through serde, which the tests compare it with.
struct Out<'w> {
    buf: Vec<u8>,
    out: &'w mut dyn std::io::Write,
}

impl Out<'_> {
    /// `buf` goes to the file when it has this many bytes (after a row, or a part).
    const FLUSH_AT: usize = 1 << 16;

    fn raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    fn flush_if_full(&mut self) -> Result<(), ExportError> {
        if self.buf.len() >= Self::FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// `,\n` (or `\n` when `first`) and the indentation of `depth`, as `Indented` writes.
    fn line(&mut self, depth: usize, first: bool) {
        let _ = write_line(&mut self.buf, depth, first);
    }

    /// An object's key at `depth`: its line, the name and `: `. Names are this
    /// module's own, with nothing to escape.
    fn key(&mut self, depth: usize, first: bool, name: &str) {
        self.line(depth, first);
        self.raw(b"\"");
        self.raw(name.as_bytes());
        self.raw(b"\": ");
    }

    /// A key and its value written by serde, nested values indented below `depth`.
    fn field<T: Serialize + ?Sized>(
        &mut self,
        depth: usize,
        first: bool,
        name: &str,
        value: &T,
    ) -> Result<(), ExportError> {
        self.key(depth, first, name);
        let formatter = Indented {
            depth,
            has_value: false,
        };
        value.serialize(&mut serde_json::Serializer::with_formatter(
            &mut self.buf,
            formatter,
        ))?;
        self.flush_if_full()
    }

    /// An array whose items are at `depth + 1`, each written by `item`; `[]` when empty.
    fn array<'t, T>(
        &mut self,
        depth: usize,
        items: &'t [T],
        mut item: impl FnMut(&mut Self, &'t T) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        if items.is_empty() {
            self.raw(b"[]");
            return Ok(());
        }
        self.raw(b"[");
        for (i, x) in items.iter().enumerate() {
            self.line(depth + 1, i == 0);
            item(self, x)?;
        }
        self.line(depth, true);
        self.raw(b"]");
        Ok(())
    }

    /// A string as serde_json writes it: escaped only where it has a quote, a
    /// backslash or a control character (rare in a report: looked for first), DEL and
    /// C1 ones too (`Indented`).
    fn str(&mut self, text: &str) {
        if text.bytes().any(|b| b == b'"' || b == b'\\') || crate::shown::has_control(text) {
            let _ = text.serialize(&mut serde_json::Serializer::with_formatter(
                &mut self.buf,
                Indented::default(),
            ));
        } else {
            self.raw(b"\"");
            self.raw(text.as_bytes());
            self.raw(b"\"");
        }
    }

    fn opt_str(&mut self, text: Option<&str>) {
        match text {
            Some(t) => self.str(t),
            None => self.raw(b"null"),
        }
    }

    fn count(&mut self, n: usize) {
        use serde_json::ser::Formatter as _;
        let _ = serde_json::ser::CompactFormatter.write_u64(&mut self.buf, n as u64);
    }

    /// A number, or `null` where there is none or it is not finite (`finite`).
    fn number(&mut self, x: Option<f64>) {
        use serde_json::ser::Formatter as _;
        match finite(x) {
            Some(v) => {
                let _ = serde_json::ser::CompactFormatter.write_f64(&mut self.buf, v);
            }
            None => self.raw(b"null"),
        }
    }

    fn strings(&mut self, depth: usize, items: &[String]) {
        let _ = self.array(depth, items, |o, s| {
            o.str(s);
            Ok(())
        });
    }

    /// A table (`TableDoc`), its object starting here, its fields at depth 3.
    fn table(&mut self, t: &Table) -> Result<(), ExportError> {
        const D: usize = 3;
        self.raw(b"{");
        self.field(D, true, "id", &t.id)?;
        self.field(D, false, "title", &t.title)?;
        self.field(D, false, "description", &t.description)?;
        self.field(D, false, "tests", &t.tests)?;
        self.field(D, false, "row_axes", &t.axes)?;
        self.field(D, false, "pivot", &t.pivot)?;
        self.field(D, false, "columns", &columns(t))?;
        self.key(D, false, "rows");
        let mut config = Vec::with_capacity(t.axes.len());
        self.array(D, &t.rows, |o, r| {
            o.row(&t.axes, r, &mut config);
            o.flush_if_full()
        })?;
        self.line(D - 1, true);
        self.raw(b"}");
        Ok(())
    }

    /// A row (`RowDoc`), its object starting here, its fields at depth 5. `config` is
    /// room for its axis values, reused from row to row.
    fn row<'r>(&mut self, axes: &'r [String], r: &'r Row, config: &mut Vec<(&'r str, &'r str)>) {
        const D: usize = 5;
        self.raw(b"{");
        self.key(D, true, "label");
        self.str(&r.label);
        // As a `BTreeMap` of the axes' names writes them: in byte order, and where a
        // name came twice, its last value.
        config.clear();
        config.extend(
            axes.iter()
                .map(String::as_str)
                .zip(r.config.iter().map(String::as_str)),
        );
        config.sort_by(|a, b| a.0.cmp(b.0));
        let mut at = 0;
        while at < config.len() {
            let mut last = at;
            while last + 1 < config.len() && config[last + 1].0 == config[at].0 {
                last += 1;
            }
            config.swap(at, last);
            config.drain((at + 1)..=last);
            at += 1;
        }
        self.key(D, false, "config");
        if config.is_empty() {
            self.raw(b"{}");
        } else {
            self.raw(b"{");
            for (i, (name, value)) in config.iter().enumerate() {
                self.line(D + 1, i == 0);
                self.str(name);
                self.raw(b": ");
                self.str(value);
            }
            self.line(D, true);
            self.raw(b"}");
        }
        self.key(D, false, "cells");
        self.strings(D, &r.keys);
        self.key(D, false, "runs");
        self.opt_str(r.runs.as_deref());
        self.key(D, false, "flagged_runs");
        self.count(r.flagged_runs);
        self.key(D, false, "warned_runs");
        self.count(r.warned_runs);
        self.key(D, false, "flags");
        self.strings(D, &r.flags);
        self.key(D, false, "warnings");
        self.strings(D, &r.warnings);
        self.key(D, false, "drift");
        self.strings(D, &r.drift);
        self.key(D, false, "values");
        let _ = self.array(D, &r.values, |o, s| {
            o.value(s);
            Ok(())
        });
        self.line(D - 1, true);
        self.raw(b"}");
    }

    /// A table cell (`ValueDoc`), its object starting here, its fields at depth 7.
    fn value(&mut self, s: &Stat) {
        const D: usize = 7;
        let (lo, hi) = match (s.mean, s.ci_half) {
            (Some(m), Some(h)) => (Some(m - h), Some(m + h)),
            _ => (None, None),
        };
        self.raw(b"{");
        self.key(D, true, "cell");
        self.opt_str(s.cell.as_deref());
        self.key(D, false, "n");
        self.count(s.n);
        for (name, x) in [
            ("mean", s.mean),
            ("ci_low", lo),
            ("ci_high", hi),
            ("ci_half", s.ci_half),
            ("sd", s.sd),
            ("min", s.min),
            ("median", s.median),
            ("max", s.max),
        ] {
            self.key(D, false, name);
            self.number(x);
        }
        self.key(D, false, "outliers");
        self.count(s.outliers);
        self.key(D, false, "flagged");
        self.count(s.flagged);
        self.key(D, false, "excluded");
        self.count(s.excluded);
        self.key(D, false, "text");
        self.str(&s.text);
        self.line(D - 1, true);
        self.raw(b"}");
    }
}

mod indented;

use indented::{Indented, write_line};

#[cfg(test)]
mod tests;
