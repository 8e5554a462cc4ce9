//! `dd`: GNU dd's summary on stderr -> `bytes`, `seconds`, `bytes_per_second`.

use serde_json::Value;

use super::text::excerpt;
use super::{EXCERPT_CHARS, Keys, ParseError, Parser, numbers, parse_decimal};
use crate::model::{ParserOptions, Stream};

const KEYS: [&str; 3] = ["bytes", "seconds", "bytes_per_second"];

pub struct Dd;

impl Parser for Dd {
    fn name(&self) -> &'static str {
        "dd"
    }
    fn stream(&self, _: &ParserOptions) -> Stream {
        Stream::Stderr
    }
    fn parse(&self, _: &ParserOptions, _stdout: &str, stderr: &str) -> Result<Value, ParseError> {
        parse_dd(stderr)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Numbers(KEYS.iter().map(ToString::to_string).collect())
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| l.contains(" bytes") && l.contains("copied,"))
            .collect()
    }
}

/// GNU dd's last line on stderr: `335544320 bytes (336 MB, 320 MiB) copied, 3.56692 s,
/// 94.1 MB/s`. The rate is recomputed from bytes and seconds, exactly, rather than taken
/// from dd's rounded and unit-varying text.
fn parse_dd(stderr: &str) -> Result<Value, ParseError> {
    for line in stderr.lines().rev() {
        let Some((bytes, rest)) = line.trim().split_once(" bytes") else {
            continue;
        };
        let Some(after) = rest.split_once("copied,").map(|(_, a)| a) else {
            continue;
        };
        let seconds = after
            .trim()
            .split_once(" s")
            .and_then(|(s, _)| parse_decimal(s));
        let bytes = bytes.trim().parse::<u64>().ok();
        if let (Some(bytes), Some(seconds)) = (bytes, seconds) {
            if seconds <= 0.0 {
                return Err(ParseError::new(format!(
                    "dd: the copy took {seconds} s, too short to measure; copy more data"
                )));
            }
            return Ok(numbers([
                ("bytes", bytes as f64),
                ("seconds", seconds),
                ("bytes_per_second", bytes as f64 / seconds),
            ]));
        }
    }
    Err(ParseError::new(format!(
        "dd: expected GNU dd's `N bytes (...) copied, S s, R MB/s` line on stderr, found none; {}",
        match stderr.trim().lines().last() {
            Some(l) => format!("the last line is `{}`", excerpt(l, EXCERPT_CHARS)),
            None => "stderr was empty".to_string(),
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_is_recomputed_and_decimal_commas_read() {
        let doc = parse_dd(include_str!(
            "../../../tests/data/tool-outputs/dd-comma-decimal-rpi4.txt"
        ))
        .unwrap();
        assert_eq!(doc["seconds"], 17.3846);
        assert_eq!(doc["bytes_per_second"], 335544320.0 / 17.3846);
        let err = parse_dd("1 bytes copied, 0 s, 1 B/s\n").unwrap_err().0;
        assert!(err.contains("too short to measure"), "{err}");
    }
}
