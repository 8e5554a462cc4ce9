//! `iperf2`: iperf 2's client report, CSV (`-y C`) or text -> `bits_per_second`,
//! `bytes`, `seconds` of the whole test (never an interval's, never a sum of them).

use serde_json::Value;

use super::iperf3_text::table_line;
use super::text::excerpt;
use super::{EXCERPT_CHARS, Keys, ParseError, Parser, numbers, parse_decimal};
use crate::model::ParserOptions;

const KEYS: [&str; 3] = ["bits_per_second", "bytes", "seconds"];

pub struct Iperf2;

impl Parser for Iperf2 {
    fn name(&self) -> &'static str {
        "iperf2"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        parse_iperf2(stdout)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Numbers(KEYS.iter().map(ToString::to_string).collect())
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| csv_line(l).is_some() || table_line(l).is_some())
            .collect()
    }
}

/// One report: which stream (`SUM`/`-1` for the total of `-P` streams), when it began
/// and ended, bytes and bit/s.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Report {
    sum: bool,
    from: f64,
    to: f64,
    bytes: f64,
    bits_per_second: f64,
}

/// `20240101120000,10.0.0.1,44610,10.0.0.2,5001,1,0.0-2.0,1249902652,4948913933`:
/// 9 fields; the 6th the stream id (-1 the sum), the last bit/s. Exact, unlike the text.
fn csv_line(line: &str) -> Option<Report> {
    let f: Vec<&str> = line.trim().split(',').collect();
    if f.len() < 9 {
        return None;
    }
    let (from, to) = f[6].split_once('-')?;
    Some(Report {
        sum: f[5].trim() == "-1",
        from: from.parse().ok()?,
        to: to.parse().ok()?,
        bytes: f[7].parse().ok()?,
        bits_per_second: f[8].parse().ok()?,
    })
}

fn text_report(line: &str) -> Option<Report> {
    let l = table_line(line)?;
    let (from, _) = line
        .split_once(']')?
        .1
        .split_whitespace()
        .next()?
        .split_once('-')?;
    let from = parse_decimal(from)?;
    Some(Report {
        sum: l.id == "SUM" || l.id.starts_with("SUM"),
        from,
        to: from + l.seconds,
        bytes: l.bytes,
        bits_per_second: l.bits_per_second,
    })
}

/// The whole test's report: with `-i` iperf prints interval reports before it, so the
/// report from 0 that ends last is the test's; with `-P` the sum's. iperf 2 exits 0
/// when it cannot connect, so a missing report is an error that quotes its words.
fn parse_iperf2(stdout: &str) -> Result<Value, ParseError> {
    let csv: Vec<Report> = stdout.lines().filter_map(csv_line).collect();
    let reports = if csv.is_empty() {
        stdout.lines().filter_map(text_report).collect()
    } else {
        csv
    };
    let from_start = reports.iter().filter(|r| r.from == 0.0);
    let sums: Vec<&Report> = from_start.clone().filter(|r| r.sum).collect();
    let pool: Vec<&Report> = if sums.is_empty() {
        from_start.collect()
    } else {
        sums
    };
    let Some(best) = pool.iter().copied().max_by(|a, b| a.to.total_cmp(&b.to)) else {
        let said = stdout
            .lines()
            .find(|l| l.contains("failed") || l.contains("refused") || l.contains("error"))
            .or_else(|| stdout.trim().lines().last());
        return Err(ParseError::new(format!(
            "iperf2: expected iperf 2's report (`-y C` CSV, or `[ ID] 0.0-10.0 sec ... bits/sec`), found none; {}",
            match said {
                Some(l) => format!("it said `{}`", excerpt(l.trim(), EXCERPT_CHARS)),
                None => "stdout was empty".to_string(),
            }
        )));
    };
    let streams = pool.iter().filter(|r| r.to == best.to).count();
    if !best.sum && streams > 1 {
        return Err(ParseError::new(format!(
            "iperf2: {streams} streams' reports and no sum (`[SUM]`, or id -1 in CSV); expected one stream or iperf's sum"
        )));
    }
    let seconds = best.to - best.from;
    if seconds <= 0.0 {
        return Err(ParseError::new(
            "iperf2: the report covers 0 s; run longer (-t)",
        ));
    }
    Ok(numbers([
        ("bits_per_second", best.bits_per_second),
        ("bytes", best.bytes),
        ("seconds", seconds),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    #[test]
    fn csv_and_text_reports_are_read_and_a_failed_connect_is_an_error() {
        let doc = parse_iperf2(include_str!(
            "../../../tests/data/tool-outputs/iperf2-csv.txt"
        ))
        .unwrap();
        assert_eq!(doc["bits_per_second"], 4948913933_i64);
        assert_eq!(doc["bytes"], 1249902652_i64);
        let doc =
            parse_iperf2(include_str!("../../../tests/data/tool-outputs/iperf2.txt")).unwrap();
        assert_eq!(doc["bits_per_second"], 4.55e9);
        let doc = parse_iperf2(include_str!(
            "../../../tests/data/tool-outputs/iperf2-reverse.txt"
        ))
        .unwrap();
        assert_eq!(doc["bits_per_second"], 5.71e9);
        let err = parse_iperf2("connect failed: Connection refused\n")
            .unwrap_err()
            .0;
        assert!(
            err.contains("it said `connect failed: Connection refused`"),
            "{err}"
        );
    }

    #[test]
    fn the_whole_test_wins_over_intervals_and_the_sum_over_streams() {
        let csv = "\
1,a,1,b,2,3,0.0-1.0,100,800
1,a,1,b,2,4,0.0-1.0,100,800
1,a,1,b,2,-1,0.0-1.0,200,1600
1,a,1,b,2,3,1.0-2.0,100,800
1,a,1,b,2,3,0.0-2.0,300,1200
1,a,1,b,2,4,0.0-2.0,300,1200
1,a,1,b,2,-1,0.0-2.0,600,2400
";
        let doc = parse_iperf2(csv).unwrap();
        assert_eq!(doc["bits_per_second"], 2400);
        assert_eq!(doc["seconds"], 2);
        let no_sum: String =
            csv.lines()
                .filter(|l| !l.contains(",-1,"))
                .fold(String::new(), |mut out, l| {
                    let _ = writeln!(out, "{l}");
                    out
                });
        let err = parse_iperf2(&no_sum).unwrap_err().0;
        assert!(err.contains("2 streams' reports and no sum"), "{err}");
    }
}
