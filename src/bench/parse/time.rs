//! `time`: GNU time `-f '%e %U %S %M'` on stderr -> `real`, `user`, `sys`, `max_rss_kib`.

use serde_json::Value;

use super::text::excerpt;
use super::{EXCERPT_CHARS, Keys, ParseError, Parser, numbers, parse_number};
use crate::model::{ParserOptions, Stream};

const KEYS: [&str; 4] = ["real", "user", "sys", "max_rss_kib"];

pub struct Time;

impl Parser for Time {
    fn name(&self) -> &'static str {
        "time"
    }
    fn stream(&self, _: &ParserOptions) -> Stream {
        Stream::Stderr
    }
    fn parse(&self, _: &ParserOptions, _stdout: &str, stderr: &str) -> Result<Value, ParseError> {
        parse_time(stderr)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Numbers(KEYS.iter().map(ToString::to_string).collect())
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| {
                let fields: Vec<&str> = l.split_whitespace().collect();
                fields.len() == 4 && fields.iter().all(|f| parse_number(f).is_some())
            })
            .collect()
    }
}

/// GNU time writes its line after everything the timed command wrote to stderr, and
/// after "Command exited with non-zero status N", so the last matching line is the one.
fn parse_time(stderr: &str) -> Result<Value, ParseError> {
    for line in stderr.lines().rev() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() != 4 {
            continue;
        }
        let parsed: Option<Vec<f64>> = fields.iter().map(|f| parse_number(f)).collect();
        if let Some(n) = parsed {
            return Ok(numbers(KEYS.into_iter().zip(n)));
        }
    }
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    let found = match last {
        Some(line) => {
            let fields = line.split_whitespace().count();
            format!(
                "the last line, `{}` ({fields} field{})",
                excerpt(line, EXCERPT_CHARS),
                if fields == 1 { "" } else { "s" }
            )
        }
        None => "an empty stderr".to_string(),
    };
    Err(ParseError::new(format!(
        "time: expected a line of 4 numbers on stderr from GNU time -f '%e %U %S %M' \
         (real user sys max_rss_kib), found none; {found}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_of_four_numbers_is_the_result() {
        let failed = include_str!("../../../tests/data/tool-outputs/xz-time-failed-command.txt");
        let doc = parse_time(failed).unwrap();
        assert_eq!(doc["max_rss_kib"], 1920);
        let doc = parse_time("1 2 3 4\nnoise\n0.5 0.25 0 100\n").unwrap();
        assert_eq!(
            doc,
            serde_json::json!({"real": 0.5, "user": 0.25, "sys": 0, "max_rss_kib": 100})
        );
        let err = parse_time("1 2 3 nan\n").unwrap_err().0;
        assert!(err.contains("`1 2 3 nan` (4 fields)"), "{err}");
    }
}
