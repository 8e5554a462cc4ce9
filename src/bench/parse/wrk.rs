//! `wrk`: wrk's text report -> requests, requests/s, latency and the error counts;
//! the lines wrk prints only when they are not zero (`Socket errors`, `Non-2xx or 3xx
//! responses`) read as 0 when absent.

use serde_json::Value;

use super::text::excerpt;
use super::{EXCERPT_CHARS, Keys, ParseError, Parser, numbers, parse_number};
use crate::model::ParserOptions;

/// Every key the document can hold; the `latency_p*` ones only with `--latency`.
pub(super) const KEYS: [&str; 20] = [
    "threads",
    "connections",
    "requests",
    "seconds",
    "read_bytes",
    "requests_per_second",
    "transfer_bytes_per_second",
    "latency_avg_s",
    "latency_stdev_s",
    "latency_max_s",
    "latency_p50_s",
    "latency_p75_s",
    "latency_p90_s",
    "latency_p99_s",
    "non_2xx_or_3xx",
    "socket_errors",
    "socket_errors_connect",
    "socket_errors_read",
    "socket_errors_write",
    "socket_errors_timeout",
];

pub struct Wrk;

impl Parser for Wrk {
    fn name(&self) -> &'static str {
        "wrk"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        parse_wrk(stdout)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Numbers(KEYS.iter().map(ToString::to_string).collect())
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| l.trim_start().starts_with("Requests/sec:"))
            .collect()
    }
}

/// wrk's durations: `604.87us`, `1.42ms`, `1.14s`, `2.50m`, `1.00h`, in seconds. The
/// decimal exponent is written into the number before it is read, so `114.00us` is the
/// double nearest 114e-6, not 114 times the double nearest 1e-6.
fn seconds(text: &str) -> Option<f64> {
    let t = text.trim();
    let (num, exp, scale) = if let Some(n) = t.strip_suffix("us") {
        (n, "e-6", 1.0)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, "e-3", 1.0)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, "", 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, "", 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, "", 3600.0)
    } else {
        return None;
    };
    let n = num.trim();
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    parse_number(&format!("{n}{exp}")).map(|v| v * scale)
}

/// wrk's byte counts, 1024-based whatever they say: `27.09MB`, `12.00KB`, `0.00B`.
fn bytes(text: &str) -> Option<f64> {
    let t = text.trim().strip_suffix('B')?;
    let (num, scale) = match t.chars().last()? {
        'K' => (&t[..t.len() - 1], 1024f64),
        'M' => (&t[..t.len() - 1], 1024f64.powi(2)),
        'G' => (&t[..t.len() - 1], 1024f64.powi(3)),
        'T' => (&t[..t.len() - 1], 1024f64.powi(4)),
        'P' => (&t[..t.len() - 1], 1024f64.powi(5)),
        _ => (t, 1.0),
    };
    parse_number(num).map(|v| v * scale)
}

/// `connect 0, read 32124, write 0, timeout 0` -> the four counts.
fn socket_errors(rest: &str) -> Option<[f64; 4]> {
    let mut out = [0.0; 4];
    let names = ["connect", "read", "write", "timeout"];
    let parts: Vec<&str> = rest.split(',').map(str::trim).collect();
    if parts.len() != 4 {
        return None;
    }
    for (i, (part, name)) in parts.iter().zip(names).enumerate() {
        let n = part.strip_prefix(name)?.trim();
        out[i] = n.parse::<u64>().ok()? as f64;
    }
    Some(out)
}

/// Reads wrk's report wherever it is in the output (after a priming request's output,
/// before another tool's report). Two reports in one output are refused: which one
/// would a metric mean?
pub(super) fn parse_wrk(text: &str) -> Result<Value, ParseError> {
    let mut pairs: Vec<(&str, f64)> = Vec::new();
    let mut rps: Option<f64> = None;
    let mut reports = 0;
    let mut non_2xx = 0.0;
    let mut sockets = [0.0; 4];
    let mut in_distribution = false;
    for line in text.lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("Requests/sec:") {
            reports += 1;
            rps = parse_number(rest);
            if rps.is_none() {
                return Err(ParseError::new(format!(
                    "wrk: cannot read the rate in `{}`",
                    excerpt(l, EXCERPT_CHARS)
                )));
            }
        } else if let Some(rest) = l.strip_prefix("Transfer/sec:") {
            if let Some(b) = bytes(rest) {
                pairs.push(("transfer_bytes_per_second", b));
            }
        } else if let Some((t, c)) = l.split_once(" threads and ") {
            if let (Ok(t), Some(Ok(c))) = (
                t.trim().parse::<u64>(),
                c.strip_suffix(" connections")
                    .map(|c| c.trim().parse::<u64>()),
            ) {
                pairs.push(("threads", t as f64));
                pairs.push(("connections", c as f64));
            }
        } else if l == "Latency Distribution" {
            in_distribution = true;
            continue;
        } else if let Some(rest) = l.strip_prefix("Latency ") {
            // `Latency   604.87us    1.42ms  17.19ms   91.88%`
            let f: Vec<&str> = rest.split_whitespace().collect();
            if let [avg, stdev, max, ..] = f.as_slice() {
                for (k, v) in [
                    ("latency_avg_s", avg),
                    ("latency_stdev_s", stdev),
                    ("latency_max_s", max),
                ] {
                    if let Some(s) = seconds(v) {
                        pairs.push((k, s));
                    }
                }
            }
        } else if in_distribution && let Some((p, v)) = l.split_once('%') {
            let key = match p.trim() {
                "50" => Some("latency_p50_s"),
                "75" => Some("latency_p75_s"),
                "90" => Some("latency_p90_s"),
                "99" => Some("latency_p99_s"),
                _ => None,
            };
            if let (Some(k), Some(s)) = (key, seconds(v)) {
                pairs.push((k, s));
            }
            continue;
        } else if let Some((n, rest)) = l.split_once(" requests in ") {
            // `118369 requests in 2.10s, 27.09MB read`
            let (d, read) = rest.split_once(", ").unwrap_or((rest, ""));
            if let Ok(n) = n.trim().parse::<u64>() {
                pairs.push(("requests", n as f64));
            }
            if let Some(s) = seconds(d) {
                pairs.push(("seconds", s));
            }
            if let Some(b) = read.strip_suffix(" read").and_then(bytes) {
                pairs.push(("read_bytes", b));
            }
        } else if let Some(rest) = l.strip_prefix("Socket errors:") {
            sockets = socket_errors(rest).ok_or_else(|| {
                ParseError::new(format!(
                    "wrk: cannot read the socket errors in `{}`",
                    excerpt(l, EXCERPT_CHARS)
                ))
            })?;
        } else if let Some(rest) = l.strip_prefix("Non-2xx or 3xx responses:") {
            non_2xx = rest.trim().parse::<u64>().map_err(|_| {
                ParseError::new(format!(
                    "wrk: cannot read the count in `{}`",
                    excerpt(l, EXCERPT_CHARS)
                ))
            })? as f64;
        }
        in_distribution = false;
    }
    let Some(rps) = rps else {
        return Err(ParseError::new(format!(
            "wrk: expected wrk's report (`Requests/sec: N`), found none; {}",
            match text.trim().lines().last() {
                Some(l) => format!("the last line is `{}`", excerpt(l, EXCERPT_CHARS)),
                None => "the output was empty".to_string(),
            }
        )));
    };
    if reports > 1 {
        return Err(ParseError::new(format!(
            "wrk: the output holds {reports} wrk reports; a metric must come from one"
        )));
    }
    // wrk counts only the requests answered before its time is up and prints zeros for
    // the latency of none: with no answer and no error, nothing was measured (every
    // response takes longer than the run), and a rate of 0 would be a false finding.
    let requests = pairs.iter().find(|(k, _)| *k == "requests").map(|p| p.1);
    if requests == Some(0.0) && non_2xx == 0.0 && sockets.iter().all(|s| *s == 0.0) {
        let secs = pairs.iter().find(|(k, _)| *k == "seconds").map(|p| p.1);
        return Err(ParseError::new(format!(
            "wrk: no request was answered in the run's {} and none failed: each response \
             takes longer than the run; run wrk longer or with fewer connections",
            secs.map_or_else(|| "time".to_string(), |s| format!("{s}s"))
        )));
    }
    pairs.push(("requests_per_second", rps));
    pairs.push(("non_2xx_or_3xx", non_2xx));
    pairs.push(("socket_errors", sockets.iter().sum()));
    for (k, v) in [
        "socket_errors_connect",
        "socket_errors_read",
        "socket_errors_write",
        "socket_errors_timeout",
    ]
    .into_iter()
    .zip(sockets)
    {
        pairs.push((k, v));
    }
    Ok(numbers(pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let p = format!(
            "{}/tests/data/tool-outputs/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&p).unwrap()
    }

    #[test]
    fn a_clean_report_has_zero_errors_and_its_rate() {
        let d = parse_wrk(&fixture("wrk-small.txt")).unwrap();
        assert_eq!(d["requests_per_second"], 12657.97);
        assert_eq!(d["requests"], 38299);
        assert_eq!(d["seconds"], 3.03);
        assert_eq!(d["threads"], 2);
        assert_eq!(d["connections"], 10);
        assert_eq!(d["latency_avg_s"].as_f64().unwrap(), 1.20e-3);
        assert_eq!(d["latency_max_s"].as_f64().unwrap(), 11.69e-3);
        assert_eq!(d["read_bytes"].as_f64().unwrap(), 8.77 * 1024.0 * 1024.0);
        assert_eq!(d["non_2xx_or_3xx"], 0);
        assert_eq!(d["socket_errors"], 0);
        assert!(d.get("latency_p50_s").is_none());
    }

    #[test]
    fn the_latency_distribution_and_mixed_units() {
        let d = parse_wrk(&fixture("wrk-latency.txt")).unwrap();
        assert_eq!(d["latency_p50_s"].as_f64().unwrap(), 114.00e-6);
        assert_eq!(d["latency_p99_s"].as_f64().unwrap(), 6.97e-3);
        let d = parse_wrk(&fixture("wrk.txt")).unwrap();
        assert_eq!(d["latency_p99_s"].as_f64().unwrap(), 1.40);
        assert_eq!(d["latency_max_s"].as_f64().unwrap(), 1.40);
        assert_eq!(d["read_bytes"].as_f64().unwrap(), 2.18 * 1024f64.powi(3));
    }

    #[test]
    fn lines_printed_only_when_not_zero_are_read() {
        let d = parse_wrk(&fixture("wrk-404.txt")).unwrap();
        assert_eq!(d["non_2xx_or_3xx"], 17194);
        assert_eq!(d["socket_errors"], 0);
        let d = parse_wrk(&fixture("wrk-socket-errors.txt")).unwrap();
        assert_eq!(d["socket_errors"], 32124);
        assert_eq!(d["socket_errors_read"], 32124);
        assert_eq!(d["socket_errors_connect"], 0);
        assert_eq!(d["requests_per_second"], 0);
    }

    #[test]
    fn a_lua_done_line_after_the_report_changes_nothing() {
        let d = parse_wrk(&fixture("wrk-lua-json.txt")).unwrap();
        assert_eq!(d["requests_per_second"], 12.71);
        assert_eq!(d["requests"], 27);
    }

    #[test]
    fn a_run_that_no_answer_ended_in_is_no_measurement() {
        let slow = fixture("wrk-socket-errors.txt").replace(
            "  Socket errors: connect 0, read 32124, write 0, timeout 0\n",
            "",
        );
        let e = parse_wrk(&slow).unwrap_err();
        assert!(
            e.0.contains("no request was answered in the run's 2.1s"),
            "{e}"
        );
    }

    #[test]
    fn no_report_or_two_are_errors() {
        let e = parse_wrk(&fixture("wrk-refused.txt")).unwrap_err();
        assert!(e.0.contains("unable to connect"), "{e}");
        let two = format!("{}{}", fixture("wrk.txt"), fixture("wrk-small.txt"));
        assert!(parse_wrk(&two).unwrap_err().0.contains("2 wrk reports"));
        let bad = "  Socket errors: connect x, read 0, write 0, timeout 0\nRequests/sec: 1\n";
        assert!(parse_wrk(bad).is_err());
    }
}
