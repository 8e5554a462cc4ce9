//! `ab`: ApacheBench's report -> requests/s, time per request, and the failures by
//! kind; the lines ab prints only when they are not zero (the failures' breakdown,
//! `Write errors`, `Non-2xx responses`) read as 0 when absent.

use serde_json::Value;

use super::text::excerpt;
use super::{EXCERPT_CHARS, Keys, ParseError, Parser, numbers, parse_number};
use crate::model::ParserOptions;

pub(super) const KEYS: [&str; 18] = [
    "concurrency",
    "seconds",
    "complete_requests",
    "failed_requests",
    "failed_connect",
    "failed_receive",
    "failed_length",
    "failed_exceptions",
    "write_errors",
    "non_2xx",
    "socket_errors",
    "keepalive_requests",
    "document_bytes",
    "total_bytes",
    "html_bytes",
    "requests_per_second",
    "time_per_request_ms",
    "transfer_kib_per_second",
];

pub struct Ab;

impl Parser for Ab {
    fn name(&self) -> &'static str {
        "ab"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        parse_ab(stdout)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Numbers(KEYS.iter().map(ToString::to_string).collect())
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| l.starts_with("Requests per second:"))
            .collect()
    }
}

/// The leading number of `value`: `0.014 seconds`, `14420.65 [#/sec] (mean)`.
fn first_number(value: &str) -> Option<f64> {
    parse_number(value.split_whitespace().next()?)
}

/// `(Connect: 0, Receive: 0, Length: 191, Exceptions: 0)` -> the four counts.
fn breakdown(line: &str) -> Option<[f64; 4]> {
    let inner = line.trim().strip_prefix('(')?.strip_suffix(')')?;
    let mut out = [0.0; 4];
    let names = ["Connect:", "Receive:", "Length:", "Exceptions:"];
    let parts: Vec<&str> = inner.split(',').map(str::trim).collect();
    if parts.len() != 4 {
        return None;
    }
    for (i, (part, name)) in parts.iter().zip(names).enumerate() {
        out[i] = part.strip_prefix(name)?.trim().parse::<u64>().ok()? as f64;
    }
    Some(out)
}

/// Reads ab's report wherever it is in the output. `socket_errors` is what went wrong
/// on the wire: connect, receive and exception failures and write errors; `Length`
/// failures are not among them (a dynamic page's length differs from the first
/// response's without anything failing), and non-2xx responses are counted apart.
pub(super) fn parse_ab(text: &str) -> Result<Value, ParseError> {
    let mut pairs: Vec<(&str, f64)> = Vec::new();
    let mut rps = None;
    let mut reports = 0;
    let mut failed = [0.0; 4];
    let mut write_errors = 0.0;
    let mut non_2xx = 0.0;
    let mut time_per_request = None;
    let mut after_failed = false;
    for line in text.lines() {
        let failed_line = after_failed;
        after_failed = false;
        if failed_line && line.trim_start().starts_with('(') {
            failed = breakdown(line).ok_or_else(|| {
                ParseError::new(format!(
                    "ab: cannot read the failures in `{}`",
                    excerpt(line, EXCERPT_CHARS)
                ))
            })?;
            continue;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let count = || {
            value.trim().parse::<u64>().map(|n| n as f64).map_err(|_| {
                ParseError::new(format!(
                    "ab: cannot read the count in `{}`",
                    excerpt(line, EXCERPT_CHARS)
                ))
            })
        };
        match name {
            "Requests per second" => {
                reports += 1;
                rps = first_number(value);
            }
            "Concurrency Level" => pairs.push(("concurrency", count()?)),
            "Time taken for tests" => {
                if let Some(v) = first_number(value) {
                    pairs.push(("seconds", v));
                }
            }
            "Complete requests" => pairs.push(("complete_requests", count()?)),
            "Failed requests" => {
                pairs.push(("failed_requests", count()?));
                after_failed = true;
            }
            "Write errors" => write_errors = count()?,
            "Non-2xx responses" => non_2xx = count()?,
            "Keep-Alive requests" => pairs.push(("keepalive_requests", count()?)),
            "Document Length" => {
                if let Some(v) = first_number(value) {
                    pairs.push(("document_bytes", v));
                }
            }
            "Total transferred" => {
                if let Some(v) = first_number(value) {
                    pairs.push(("total_bytes", v));
                }
            }
            "HTML transferred" => {
                if let Some(v) = first_number(value) {
                    pairs.push(("html_bytes", v));
                }
            }
            // Twice: the mean per request, then across all concurrent requests.
            "Time per request" if time_per_request.is_none() => {
                time_per_request = first_number(value);
            }
            "Transfer rate" => {
                if let Some(v) = first_number(value) {
                    pairs.push(("transfer_kib_per_second", v));
                }
            }
            _ => {}
        }
    }
    let Some(rps) = rps else {
        return Err(ParseError::new(format!(
            "ab: expected ab's report (`Requests per second: N`), found none; {}",
            match text.trim().lines().last() {
                Some(l) => format!("the last line is `{}`", excerpt(l, EXCERPT_CHARS)),
                None => "the output was empty".to_string(),
            }
        )));
    };
    if reports > 1 {
        return Err(ParseError::new(format!(
            "ab: the output holds {reports} ab reports; a metric must come from one"
        )));
    }
    pairs.push(("requests_per_second", rps));
    if let Some(t) = time_per_request {
        pairs.push(("time_per_request_ms", t));
    }
    let [connect, receive, length, exceptions] = failed;
    pairs.push(("failed_connect", connect));
    pairs.push(("failed_receive", receive));
    pairs.push(("failed_length", length));
    pairs.push(("failed_exceptions", exceptions));
    pairs.push(("write_errors", write_errors));
    pairs.push(("non_2xx", non_2xx));
    pairs.push((
        "socket_errors",
        connect + receive + exceptions + write_errors,
    ));
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
    fn a_clean_report() {
        let d = parse_ab(&fixture("ab.txt")).unwrap();
        assert_eq!(d["requests_per_second"], 11.56);
        assert_eq!(d["time_per_request_ms"], 864.870);
        assert_eq!(d["complete_requests"], 200);
        assert_eq!(d["concurrency"], 10);
        assert_eq!(d["seconds"], 17.297);
        assert_eq!(d["transfer_kib_per_second"], 591999.52);
        assert_eq!(d["total_bytes"], 10485811400u64);
        for k in [
            "failed_requests",
            "non_2xx",
            "socket_errors",
            "write_errors",
        ] {
            assert_eq!(d[k], 0, "{k}");
        }
    }

    #[test]
    fn non_2xx_responses_and_length_failures_are_counted_apart() {
        let d = parse_ab(&fixture("ab-non-2xx.txt")).unwrap();
        assert_eq!(d["non_2xx"], 200);
        assert_eq!(d["failed_requests"], 0);
        assert_eq!(d["socket_errors"], 0);
        let d = parse_ab(&fixture("ab-length-failures.txt")).unwrap();
        assert_eq!(d["failed_requests"], 191);
        assert_eq!(d["failed_length"], 191);
        assert_eq!(d["socket_errors"], 0);
        assert_eq!(d["non_2xx"], 0);
    }

    #[test]
    fn the_breakdown_and_write_errors_make_socket_errors() {
        let text = fixture("ab.txt").replace(
            "Failed requests:        0\n",
            "Failed requests:        7\n   (Connect: 2, Receive: 3, Length: 1, Exceptions: 1)\nWrite errors:           4\n",
        );
        let d = parse_ab(&text).unwrap();
        assert_eq!(d["socket_errors"], 2 + 3 + 1 + 4);
        assert_eq!(d["failed_length"], 1);
    }

    #[test]
    fn no_report_or_two_are_errors() {
        let e = parse_ab(&fixture("ab-refused.txt")).unwrap_err();
        assert!(e.0.contains("Connection refused"), "{e}");
        let two = format!("{}{}", fixture("ab.txt"), fixture("ab-non-2xx.txt"));
        assert!(parse_ab(&two).unwrap_err().0.contains("2 ab reports"));
    }
}
