//! `benchpipe stats A.txt [B.txt ...]`: summaries of plain files of numbers and each
//! file's difference from the first, like FreeBSD's ministat. Text in, text out; the CLI
//! reads the files.

use serde::Serialize;
use std::fmt::Write as _;

use super::{
    Comparison, Incomparable, OUTLIER_RULE, OutlierCount, RatioInterval, Summary, WideCi, Words,
    compare, describe, describe_incomparable, summarize, wide_ci,
};
use crate::model::{Better, DEFAULT_NOISE_BAND, DEFAULT_WIDE_CI};

/// Why `benchpipe stats` refused its input. All are the user's to fix (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("stats: expected at least one file of numbers")]
    NoFiles,
    #[error("stats: the confidence must be between 0 and 1 (e.g. 0.95), got {0}")]
    Confidence(f64),
    /// `found` is the line's text, cut to 60 characters.
    #[error("{file}:{line}: expected one number per line, found `{found}`")]
    NotANumber {
        file: String,
        line: usize,
        found: String,
    },
    #[error("{file}: no numbers (only blank lines and comments)")]
    NoNumbers { file: String },
    #[error("{file}: no values to summarise")]
    NothingToSummarise { file: String },
    #[error("stats: cannot write JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Bad input to `stats` is a usage error, with the text above.
impl From<StatsError> for crate::error::Error {
    fn from(e: StatsError) -> Self {
        crate::error::Error::Usage(e.to_string())
    }
}

/// Bumped when the JSON document's shape changes. 2: ratio and Fieller interval,
/// four verdicts, runs needed, outliers and wide intervals.
const JSON_VERSION: u32 = 2;

#[derive(Serialize)]
struct Document<'a> {
    version: u32,
    confidence: f64,
    noise_band: f64,
    /// Intervals wider than this share of the mean get a warning.
    wide_ci: f64,
    outlier_rule: String,
    files: Vec<FileStats<'a>>,
    comparisons: Vec<FileComparison<'a>>,
}

#[derive(Serialize)]
struct FileStats<'a> {
    name: &'a str,
    n: usize,
    mean: f64,
    sd: f64,
    median: f64,
    min: f64,
    max: f64,
    /// None (null) when n < 2.
    ci_low: Option<f64>,
    ci_high: Option<f64>,
    outliers: OutlierCount,
    /// Present when the interval is wider than `wide_ci` of the mean.
    wide: Option<WideCi>,
}

#[derive(Serialize)]
struct FileComparison<'a> {
    baseline: &'a str,
    candidate: &'a str,
    /// mean(candidate) / mean(baseline), with Fieller's interval (null: unbounded).
    ratio: Option<f64>,
    ratio_ci_low: Option<f64>,
    ratio_ci_high: Option<f64>,
    diff_pct: Option<f64>,
    /// Null where the interval is unbounded on that side.
    ci_low_pct: Option<f64>,
    ci_high_pct: Option<f64>,
    t: Option<f64>,
    df: Option<f64>,
    p: Option<f64>,
    significant: bool,
    /// "higher", "lower", "equivalent", "inconclusive" or "not-comparable".
    verdict: &'static str,
    /// For an inconclusive verdict: about how many values per file would decide it.
    runs_needed: Option<usize>,
    /// `runs_needed` is a bound: more than that many.
    runs_needed_more_than: bool,
    /// The verdict in words, as the text output prints it.
    text: String,
    /// Why the files could not be compared, when they could not.
    note: Option<String>,
    #[serde(skip)]
    difference: String,
}

/// Runs the `stats` command on `(name, contents)` pairs and returns what to print.
///
/// Each input holds one number per line; blank lines and `#` comments (whole-line or
/// trailing) are ignored. A line that is not a finite number is an error naming
/// `file:line` and the text. The first file is the baseline; every later file gets its
/// ratio to it and percent difference with Fieller's confidence interval, Welch's p and
/// a verdict ([`compare`]): higher or lower (p < 1 - confidence and outside the 2%
/// noise band), equivalent (the whole interval inside the band) or inconclusive, with
/// about how many values per file would decide it. The direction is unknown here, so
/// there is no better or worse. Each file's outliers are counted (the rule is printed)
/// and an interval wider than ±10% of the mean is a warning with the values that would
/// narrow it.
///
/// With `json`, returns a pretty-printed document with fixed keys (`version`,
/// `confidence`, `noise_band`, `wide_ci`, `outlier_rule`, `files`, `comparisons`);
/// numbers that do not exist (a CI with one sample, t when both variances are 0, an
/// unbounded side of an interval) are `null`.
pub fn ministat(
    inputs: &[(String, String)],
    confidence: f64,
    json: bool,
) -> Result<String, StatsError> {
    if inputs.is_empty() {
        return Err(StatsError::NoFiles);
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(StatsError::Confidence(confidence));
    }
    let mut samples = Vec::with_capacity(inputs.len());
    for (name, contents) in inputs {
        samples.push(read_numbers(name, contents)?);
    }
    let mut files = Vec::new();
    let mut summaries = Vec::new();
    for ((name, _), xs) in inputs.iter().zip(&samples) {
        let s = summarize(xs, confidence)
            .ok_or_else(|| StatsError::NothingToSummarise { file: name.clone() })?;
        let ci = s.ci();
        files.push(FileStats {
            name,
            n: s.n,
            mean: s.mean,
            sd: s.sd,
            median: s.median,
            min: s.min,
            max: s.max,
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            outliers: OutlierCount::of(xs),
            wide: wide_ci(&s, DEFAULT_WIDE_CI),
        });
        summaries.push(s);
    }
    let baseline = &inputs[0].0;
    let comparisons: Vec<FileComparison> = inputs
        .iter()
        .zip(&samples)
        .skip(1)
        .map(|((name, _), xs)| {
            let result = compare(
                &samples[0],
                xs,
                confidence,
                DEFAULT_NOISE_BAND,
                Better::Higher,
            );
            file_comparison(baseline, name, &summaries[0], result)
        })
        .collect();
    let doc = Document {
        version: JSON_VERSION,
        confidence,
        noise_band: DEFAULT_NOISE_BAND,
        wide_ci: DEFAULT_WIDE_CI,
        outlier_rule: OUTLIER_RULE.text(),
        files,
        comparisons,
    };
    if json {
        serde_json::to_string_pretty(&doc)
            .map(|mut s| {
                s.push('\n');
                s
            })
            .map_err(StatsError::Json)
    } else {
        Ok(render_text(&doc))
    }
}

fn read_numbers(name: &str, contents: &str) -> Result<Vec<f64>, StatsError> {
    let mut values = Vec::new();
    for (i, raw) in contents.lines().enumerate() {
        let text = raw.split('#').next().unwrap_or("").trim();
        if text.is_empty() {
            continue;
        }
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => values.push(v),
            _ => {
                return Err(StatsError::NotANumber {
                    file: name.to_string(),
                    line: i + 1,
                    found: raw.trim().chars().take(60).collect(),
                });
            }
        }
    }
    if values.is_empty() {
        return Err(StatsError::NoNumbers {
            file: name.to_string(),
        });
    }
    Ok(values)
}

fn file_comparison<'a>(
    baseline: &'a str,
    candidate: &'a str,
    base: &Summary,
    result: Result<Comparison, Incomparable>,
) -> FileComparison<'a> {
    match result {
        Ok(c) => {
            let words = describe(
                &c,
                Words::Direction,
                2,
                "values per file",
                crate::model::Percent::OfBaseline,
            );
            let (ratio_ci_low, ratio_ci_high) = match c.ratio_ci {
                RatioInterval::Interval { low, high } => (low, high),
                RatioInterval::Outside { .. } => (None, None),
            };
            FileComparison {
                baseline,
                candidate,
                ratio: Some(c.ratio),
                ratio_ci_low,
                ratio_ci_high,
                diff_pct: Some(c.diff_pct),
                ci_low_pct: c.ci_low_pct,
                ci_high_pct: c.ci_high_pct,
                t: Some(c.welch.t).filter(|t| t.is_finite()),
                df: Some(c.welch.df),
                p: Some(c.welch.p),
                significant: c.significant,
                verdict: match c.verdict {
                    super::Verdict::Better => "higher",
                    super::Verdict::Worse => "lower",
                    v => v.as_str(),
                },
                runs_needed: c.runs_needed.map(|r| r.runs),
                runs_needed_more_than: c.runs_needed.is_some_and(|r| r.more_than),
                text: words.verdict,
                note: None,
                difference: words.difference,
            }
        }
        Err(e) => {
            let note = match e {
                Incomparable::TooFewRuns { .. } => "each file needs at least 2 values".to_string(),
                Incomparable::ZeroBaseline => format!(
                    "the baseline mean is {}, so there is no percent difference",
                    num(base.mean)
                ),
                other => other.to_string(),
            };
            FileComparison {
                baseline,
                candidate,
                ratio: None,
                ratio_ci_low: None,
                ratio_ci_high: None,
                diff_pct: None,
                ci_low_pct: None,
                ci_high_pct: None,
                t: None,
                df: None,
                p: None,
                significant: false,
                verdict: "not-comparable",
                runs_needed: None,
                runs_needed_more_than: false,
                text: describe_incomparable(&e).verdict,
                note: Some(note),
                difference: String::new(),
            }
        }
    }
}

fn render_text(doc: &Document) -> String {
    let pct = |c: f64| format!("{}%", num(c * 100.0));
    let ci_title = format!("{} CI of the mean", pct(doc.confidence));
    let header: Vec<String> = [
        "",
        "N",
        "Mean",
        "SD",
        "Median",
        "Min",
        "Max",
        ci_title.as_str(),
    ]
    .iter()
    .map(ToString::to_string)
    .collect();
    let mut rows = vec![header];
    for f in &doc.files {
        let ci = match (f.ci_low, f.ci_high) {
            (Some(lo), Some(hi)) => format!("{} .. {}", num(lo), num(hi)),
            _ => "- (n < 2)".to_string(),
        };
        rows.push(vec![
            f.name.to_string(),
            f.n.to_string(),
            num(f.mean),
            num(f.sd),
            num(f.median),
            num(f.min),
            num(f.max),
            ci,
        ]);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c == 0 || c == columns - 1 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
            line.push_str("  ");
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let mut notes = Vec::new();
    for f in &doc.files {
        if f.outliers.total() > 0 {
            notes.push(format!("{}: {}", f.name, f.outliers.text()));
        }
    }
    if !notes.is_empty() {
        let _ = write!(
            out,
            "\noutliers: {} ({})\n",
            notes.join(", "),
            doc.outlier_rule
        );
    }
    for f in &doc.files {
        if let Some(w) = &f.wide {
            let _ = write!(
                out,
                "\nwarning: {}: the {} CI is ±{}% of the mean, wider than ±{}%; {} values at this spread would narrow it\n",
                f.name,
                pct(doc.confidence),
                num(w.half_rel * 100.0),
                pct(w.limit),
                w.runs_needed.text()
            );
        }
    }
    for c in &doc.comparisons {
        out.push('\n');
        let _ = writeln!(out, "{} vs {}:", c.candidate, c.baseline);
        if let (Some(r), Some(df), Some(p)) = (c.ratio, c.df, c.p) {
            let t = c.t.map_or("±inf".to_string(), num);
            let _ = writeln!(out, "  difference {}", c.difference);
            let bound = |b: Option<f64>| b.map_or("unbounded".to_string(), num);
            let _ = writeln!(
                out,
                "  ratio {} ({} CI {} .. {}, Fieller)",
                num(r),
                pct(doc.confidence),
                bound(c.ratio_ci_low),
                bound(c.ratio_ci_high)
            );
            let _ = writeln!(out, "  Welch t = {t}, df = {}, p = {}", num(df), p_value(p));
            let _ = writeln!(out, "  {}", c.text);
        } else {
            let note = c.note.as_deref().unwrap_or("not comparable");
            let _ = writeln!(out, "  not comparable: {note}");
        }
    }
    out
}

/// Six significant digits, no exponent for everyday magnitudes.
fn num(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor();
    if !(-5.0..15.0).contains(&magnitude) {
        return format!("{x:.5e}");
    }
    let decimals = (5.0 - magnitude).clamp(0.0, 12.0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn p_value(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else if p < 1e-3 {
        format!("{p:.2e}")
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, contents: &str) -> (String, String) {
        (name.to_string(), contents.to_string())
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let err = ministat(
            &[input("A.txt", "# runs\n1.0\n\n2.0 # warm\nfast\n")],
            0.95,
            false,
        )
        .expect_err("a word is not a number");
        assert_eq!(
            err.to_string(),
            "A.txt:5: expected one number per line, found `fast`"
        );
        let err = ministat(&[input("B.txt", "# nothing\n")], 0.95, false).expect_err("empty");
        assert!(
            matches!(&err, StatsError::NoNumbers { file } if file == "B.txt"),
            "{err:?}"
        );
        assert!(err.to_string().contains("B.txt: no numbers"), "{err}");
        assert!(matches!(
            ministat(&[], 0.95, false),
            Err(StatsError::NoFiles)
        ));
        assert!(matches!(
            ministat(&[input("A", "1\n2\n")], 95.0, false),
            Err(StatsError::Confidence(c)) if c == 95.0
        ));
    }

    #[test]
    fn number_format() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(0.0311448231), "0.0311448");
        assert_eq!(num(123456.789), "123457");
        assert_eq!(num(-2.5), "-2.5");
        assert_eq!(p_value(0.000820931), "8.21e-4");
    }
}
