//! `iperf3-text`: iperf3's human output (no `-J`) -> its end-of-test summary lines
//! (`sender`, `receiver`) as numbers; interval lines are never summed into a result.

use serde_json::Value;

use super::text::excerpt;
use super::{EXCERPT_CHARS, Keys, ParseError, Parser, numbers, parse_decimal};
use crate::model::ParserOptions;

/// The document's keys. `retransmits` comes only from a sender line that prints them.
pub const IPERF3_TEXT_KEYS: [&str; 7] = [
    "sender_bits_per_second",
    "receiver_bits_per_second",
    "sender_bytes",
    "receiver_bytes",
    "sender_seconds",
    "receiver_seconds",
    "retransmits",
];

pub struct Iperf3Text;

impl Parser for Iperf3Text {
    fn name(&self) -> &'static str {
        "iperf3-text"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        parse_iperf3_text(stdout)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Numbers(IPERF3_TEXT_KEYS.iter().map(ToString::to_string).collect())
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| l.trim_end().ends_with("sender") || l.trim_end().ends_with("receiver"))
            .collect()
    }
}

/// One parsed `[ID] a-b sec N unit R unit/sec [retr] role` line.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Line<'a> {
    pub(super) id: &'a str,
    pub(super) seconds: f64,
    pub(super) bytes: f64,
    pub(super) bits_per_second: f64,
    pub(super) retransmits: Option<f64>,
    pub(super) role: Option<&'a str>,
}

/// iperf's transfer units are binary (KBytes = KiB), its rates decimal (Kbits = 1000).
fn byte_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "Bytes" => 1.0,
        "KBytes" => 1024.0,
        "MBytes" => 1024.0 * 1024.0,
        "GBytes" => 1024.0 * 1024.0 * 1024.0,
        "TBytes" => 1024.0_f64.powi(4),
        _ => return None,
    })
}

fn bit_unit(unit: &str) -> Option<f64> {
    Some(match unit {
        "bits/sec" => 1.0,
        "Kbits/sec" => 1e3,
        "Mbits/sec" => 1e6,
        "Gbits/sec" => 1e9,
        "Tbits/sec" => 1e12,
        _ => return None,
    })
}

/// A line of iperf's table (iperf3's, and iperf 2's, whose rows have the same shape):
/// `[  5]   0.00-10.00  sec   112 MBytes  94.1 Mbits/sec    0    sender`. The id is the
/// bracketed text (`5`, `SUM`, `*1`, or `5][TX-C` for a bidirectional stream).
pub(super) fn table_line(line: &str) -> Option<Line<'_>> {
    let rest = line.trim().strip_prefix('[')?;
    let (first, mut rest) = rest.split_once(']')?;
    let mut id = first;
    // A bidirectional stream's second tag: `[  5][TX-C]`.
    if let Some(tagged) = rest.strip_prefix('[') {
        let (tag, after) = tagged.split_once(']')?;
        id = &line.trim()[1..first.len() + tag.len() + 3];
        rest = after;
    }
    let mut words = rest.split_whitespace();
    let (from, to) = words.next()?.split_once('-')?;
    let seconds = parse_decimal(to)? - parse_decimal(from)?;
    if words.next()? != "sec" {
        return None;
    }
    // Whole bytes and bit/s: the printed values have 3 or 4 digits, and 32.3e6 is
    // not exactly 32.3 * 1e6 in binary floating point.
    let bytes = (parse_decimal(words.next()?)? * byte_unit(words.next()?)?).round();
    let bits_per_second = (parse_decimal(words.next()?)? * bit_unit(words.next()?)?).round();
    let mut retransmits = None;
    let mut role = None;
    for w in words {
        match w {
            "sender" | "receiver" => role = Some(w),
            _ if role.is_none() && retransmits.is_none() => retransmits = w.parse::<f64>().ok(),
            _ => {}
        }
    }
    Some(Line {
        id: id.trim(),
        seconds,
        bytes,
        bits_per_second,
        retransmits,
        role,
    })
}

/// The summary lines after iperf3's `- - -` rule. With several streams (`-P`) the
/// `[SUM]` lines are the result; with one, its own lines. A run whose summary is
/// missing (cut short, or only the intervals captured) is an error, never the sum
/// or mean of its interval lines, which would be a number iperf3 did not report.
fn parse_iperf3_text(stdout: &str) -> Result<Value, ParseError> {
    if let Some(line) = stdout.lines().find(|l| l.contains("iperf3: error")) {
        return Err(ParseError::new(format!(
            "iperf3-text: iperf3 reported an error: `{}`",
            excerpt(line.trim(), EXCERPT_CHARS)
        )));
    }
    let lines: Vec<Line> = stdout.lines().filter_map(table_line).collect();
    if lines.iter().any(|l| l.id.contains("][")) {
        return Err(ParseError::new(
            "iperf3-text: this is a bidirectional run (`[TX-C]`/`[RX-C]` streams); read it with -J and `iperf3-json` (end.sum_received and end.sum_received_bidir_reverse)",
        ));
    }
    let summary: Vec<&Line> = lines.iter().filter(|l| l.role.is_some()).collect();
    if summary.is_empty() {
        let intervals = lines.len();
        return Err(ParseError::new(if intervals > 0 {
            format!(
                "iperf3-text: no summary lines (`... sender`, `... receiver`) after {intervals} interval line{s}: the run ended early or its end was not captured; interval lines are not summed into a result",
                s = if intervals == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "iperf3-text: expected iperf3's summary lines (`[ ID] Interval ... sender`/`receiver`), found none; {}",
                match stdout.trim().lines().last() {
                    Some(l) => format!("the last line is `{}`", excerpt(l, EXCERPT_CHARS)),
                    None => "stdout was empty".to_string(),
                }
            )
        }));
    }
    let sum: Vec<&Line> = summary.iter().copied().filter(|l| l.id == "SUM").collect();
    let chosen = if sum.is_empty() {
        let mut ids: Vec<&str> = summary.iter().map(|l| l.id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() > 1 {
            return Err(ParseError::new(format!(
                "iperf3-text: summary lines of {} streams and no `[SUM]` lines; expected one stream or iperf3's `[SUM]` totals",
                ids.len()
            )));
        }
        summary
    } else {
        sum
    };
    let mut pairs: Vec<(&str, f64)> = Vec::new();
    for (role, prefix) in [("sender", "sender_"), ("receiver", "receiver_")] {
        let Some(l) = chosen.iter().rev().find(|l| l.role == Some(role)) else {
            continue;
        };
        let keys: [&str; 3] = match prefix {
            "sender_" => ["sender_bits_per_second", "sender_bytes", "sender_seconds"],
            _ => [
                "receiver_bits_per_second",
                "receiver_bytes",
                "receiver_seconds",
            ],
        };
        pairs.push((keys[0], l.bits_per_second));
        pairs.push((keys[1], l.bytes));
        pairs.push((keys[2], l.seconds));
        if role == "sender"
            && let Some(r) = l.retransmits
        {
            pairs.push(("retransmits", r));
        }
    }
    Ok(numbers(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;

    #[test]
    fn the_summary_lines_are_read_and_a_missing_summary_is_an_error() {
        let doc = parse_iperf3_text(include_str!(
            "../../../tests/data/tool-outputs/iperf3-text-rpi4.txt"
        ))
        .unwrap();
        assert_eq!(doc["sender_bits_per_second"], 99.3e6);
        assert_eq!(doc["receiver_bits_per_second"], 98.6e6);
        assert_eq!(doc["retransmits"], 0);
        assert_eq!(doc["receiver_bytes"], 118 * 1024 * 1024);
        let err = parse_iperf3_text(include_str!(
            "../../../tests/data/tool-outputs/real-sbc-iperf3-opizero2-eth-nosummary.txt"
        ))
        .unwrap_err()
        .0;
        assert!(err.contains("no summary lines"), "{err}");
        assert!(err.contains("after 10 interval lines"), "{err}");
    }

    #[test]
    fn sum_lines_win_over_streams_and_errors_are_quoted() {
        let text = "\
[  5]   0.00-1.00   sec  1.00 MBytes  8.39 Mbits/sec    0             sender
[  7]   0.00-1.00   sec  1.00 MBytes  8.39 Mbits/sec    0             sender
[SUM]   0.00-1.00   sec  2.00 MBytes  16.8 Mbits/sec    0             sender
[  5]   0.00-1.00   sec  1.00 MBytes  8.39 Mbits/sec                  receiver
[  7]   0.00-1.00   sec  1.00 MBytes  8.39 Mbits/sec                  receiver
[SUM]   0.00-1.00   sec  2.00 MBytes  16.7 Mbits/sec                  receiver
";
        let doc = parse_iperf3_text(text).unwrap();
        assert_eq!(doc["receiver_bits_per_second"], 16.7e6);
        let no_sum: String =
            text.lines()
                .filter(|l| !l.starts_with("[SUM]"))
                .fold(String::new(), |mut out, l| {
                    let _ = writeln!(out, "{l}");
                    out
                });
        let err = parse_iperf3_text(&no_sum).unwrap_err().0;
        assert!(err.contains("2 streams and no `[SUM]`"), "{err}");
        let err =
            parse_iperf3_text("iperf3: error - unable to connect to server: Connection refused\n")
                .unwrap_err()
                .0;
        assert!(err.contains("Connection refused"), "{err}");
        let err = parse_iperf3_text("").unwrap_err().0;
        assert!(err.contains("stdout was empty"), "{err}");
    }
}
