//! `history.csv` and the History section's chart files (`history-<test>.svg`): the
//! exporters written beside a report only when it has a History section. The CSV has a
//! row per point of each series shown (docs/FORMAT.md, "history.csv"), written like
//! results.csv (RFC 4180, CRLF, every text through `csv::guard`).

use super::Report;
use super::csv::{csv_error, guard, writer};
use super::export::{ExportError, Exporter};
use super::format::push_number;
use super::history::{Change, Series};

/// The columns of history.csv, in order.
pub const HISTORY_CSV_COLUMNS: [&str; 26] = [
    "scenario",
    "test",
    "metric",
    "unit",
    "better",
    "image",
    "board",
    "storage",
    "filesystem",
    "network",
    "run",
    "session",
    "started",
    "benchpipe",
    "n",
    "mean",
    "ci_low",
    "ci_high",
    "change",
    "direction",
    "before_mean",
    "after_mean",
    "diff_pct",
    "ci_low_pct",
    "ci_high_pct",
    "facts",
];

/// history.csv.
pub struct HistoryCsv;

/// One test's chart of the History section, as a file of its own.
pub struct HistorySvg {
    /// Its place in the section's tests.
    pub test: usize,
    pub file: String,
}

/// The exporters of a report's History section: its charts and history.csv; none
/// without one.
pub fn exporters(report: &Report) -> Vec<Box<dyn Exporter + Send + Sync + '_>> {
    let Some(h) = &report.history else {
        return Vec::new();
    };
    let mut out: Vec<Box<dyn Exporter + Send + Sync>> = h
        .tests
        .iter()
        .enumerate()
        .map(|(i, t)| {
            Box::new(HistorySvg {
                test: i,
                file: t.file.clone(),
            }) as Box<dyn Exporter + Send + Sync>
        })
        .collect();
    out.push(Box::new(HistoryCsv));
    out
}

impl Exporter for HistorySvg {
    fn file_name(&self) -> &str {
        &self.file
    }
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), ExportError> {
        if let Some(t) = report.history.as_ref().and_then(|h| h.tests.get(self.test)) {
            out.write_all(t.chart.as_bytes())?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

fn number(x: Option<f64>) -> String {
    let mut s = String::new();
    if let Some(x) = x {
        push_number(&mut s, x);
    }
    s
}

impl Exporter for HistoryCsv {
    fn file_name(&self) -> &'static str {
        "history.csv"
    }
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), ExportError> {
        let mut csv = writer(out, 1 << 16);
        csv.write_record(HISTORY_CSV_COLUMNS).map_err(csv_error)?;
        if let Some(h) = &report.history {
            for t in &h.tests {
                for s in &t.series {
                    for (i, p) in s.points.iter().enumerate() {
                        let run = h.runs.get(p.run);
                        let change = s.changes.iter().find(|c| c.point == i);
                        let row = row(&report.scenario, s, p, run, change);
                        csv.write_record(&row).map_err(csv_error)?;
                    }
                }
            }
        }
        csv.flush()?;
        Ok(())
    }
}

/// A text field through `guard` (controls escaped, no formula); numbers are not.
fn text(s: &str) -> String {
    guard(s).into_owned()
}

/// A point's fields, in `HISTORY_CSV_COLUMNS` order.
fn row(
    scenario: &str,
    s: &Series,
    p: &super::history::Point,
    run: Option<&super::history::Run>,
    change: Option<&Change>,
) -> Vec<String> {
    let a = &s.address;
    let opt = |x: Option<&str>| text(x.unwrap_or_default());
    let better = match s.better {
        crate::model::Better::Higher => "higher",
        crate::model::Better::Lower => "lower",
    };
    let mut fields = vec![
        text(scenario),
        text(&s.test),
        text(&s.metric),
        text(&s.unit),
        better.to_string(),
        text(a.image.as_str()),
        text(a.board.as_str()),
        opt(a.storage.as_ref().map(crate::model::StorageName::as_str)),
        opt(a.filesystem.as_ref().map(crate::model::FsName::as_str)),
        opt(a.network.as_ref().map(crate::model::NetworkName::as_str)),
        (p.run + 1).to_string(),
        text(&p.session),
        number(run.map(|r| r.started)),
        opt(run.and_then(|r| r.version.as_deref())),
        p.n.to_string(),
        number(Some(p.mean)),
        number(p.ci_low),
        number(p.ci_high),
    ];
    match change {
        None => {
            fields.push("false".to_string());
            fields.extend(std::iter::repeat_n(String::new(), 7));
        }
        Some(c) => {
            fields.push("true".to_string());
            fields.push(
                match c.direction {
                    crate::stats::Verdict::Worse => "worse",
                    _ => "better",
                }
                .to_string(),
            );
            fields.push(number(Some(c.before_mean)));
            fields.push(number(Some(c.after_mean)));
            fields.push(number(c.diff_pct));
            fields.push(number(c.ci_low_pct));
            fields.push(number(c.ci_high_pct));
            let mut names: Vec<String> = c
                .facts
                .iter()
                .map(|f| super::history_svg::cut(&f.name, 120))
                .collect();
            if c.facts_more > 0 {
                names.push(format!("{} more", c.facts_more));
            }
            fields.push(text(&names.join("; ")));
        }
    }
    fields
}
