//! `regex`: a parser written as data. The recipe's `[parse_regex]` gives patterns with
//! named groups; each group a pattern captures becomes a key of the document, so a text
//! tool's output (wrk, ab, iperf2, smbclient) reaches metrics without Rust.
//!
//! Every pattern must match; when one matches more than once, its last match counts
//! (tools print progress before their summary). `^` and `$` match at line boundaries.
//! A capture that reads as a finite number is a number; any other capture is text,
//! which a metric cannot select (a unit, a name). A comma in a number is ambiguous
//! (`94,1` in a comma locale, `1,234` with a thousands separator), so it is text unless
//! `decimal_comma = true`, which reads the comma as the decimal point and makes a
//! capture holding a `.` text instead.
//!
//! Patterns come from files a user may not have written: config refuses patterns
//! that do not parse, have no named group, are longer than `MAX_PATTERN_BYTES`, nest
//! deeper than `NEST_LIMIT` or compile to more than `SIZE_LIMIT` bytes, and the regex
//! crate's matching is linear in the output's length, never exponential.

use std::ops::Range;

use ::regex::RegexBuilder;
use serde_json::{Map, Value};

use super::text::excerpt;
use super::{EXCERPT_CHARS, Keys, ParseError, Parser, json_number, parse_number};
use crate::model::{ParserOptions, RegexOptions, Stream};

/// Patterns per recipe.
pub const MAX_PATTERNS: usize = 32;
/// Bytes of one pattern's text.
pub const MAX_PATTERN_BYTES: usize = 2048;
/// The compiled program and each lazy DFA's cache: the regex crate's `size_limit`.
const SIZE_LIMIT: usize = 1 << 20;
/// Nested groups and repetitions.
const NEST_LIMIT: u32 = 32;

pub struct RegexParser;

impl Parser for RegexParser {
    fn name(&self) -> &'static str {
        "regex"
    }
    fn stream(&self, options: &ParserOptions) -> Stream {
        options.regex.as_ref().map_or(Stream::Stdout, |r| r.stream)
    }
    fn parse(
        &self,
        options: &ParserOptions,
        stdout: &str,
        stderr: &str,
    ) -> Result<Value, ParseError> {
        let Some(options) = &options.regex else {
            return Err(ParseError::new(
                "regex: no patterns: the recipe needs a `[parse_regex]` table",
            ));
        };
        let text = match options.stream {
            Stream::Stdout => stdout,
            Stream::Stderr => stderr,
        };
        parse_regex(options, text)
    }
    fn keys(&self, options: &ParserOptions) -> Keys {
        let names = options
            .regex
            .iter()
            .flat_map(|r| &r.patterns)
            .filter_map(|p| check_pattern(p).ok())
            .flatten()
            .collect();
        Keys::Numbers(names)
    }
    fn result_lines<'a>(&self, options: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        let regexes: Vec<::regex::Regex> = options
            .regex
            .iter()
            .flat_map(|r| &r.patterns)
            .filter_map(|p| compile(p).ok())
            .collect();
        text.lines()
            .filter(|l| regexes.iter().any(|re| re.is_match(l)))
            .collect()
    }
}

/// Why config refuses a pattern: where in the pattern's text, and what is wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct PatternError {
    /// A byte range of the pattern.
    pub span: Range<usize>,
    pub message: String,
    pub help: Option<String>,
}

impl PatternError {
    fn new(span: Range<usize>, message: impl Into<String>) -> Self {
        PatternError {
            span,
            message: message.into(),
            help: None,
        }
    }
    fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

/// Checks one pattern as config must before any run: it parses, it is bounded, and it
/// has named groups usable as metric keys. Returns the group names in order.
pub fn check_pattern(pattern: &str) -> Result<Vec<String>, PatternError> {
    let whole = 0..pattern.len();
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(PatternError::new(
            whole,
            format!(
                "the pattern is {} bytes long, more than {MAX_PATTERN_BYTES}",
                pattern.len()
            ),
        )
        .help(
            "match only the line that holds the result, e.g. `Requests/sec:\\s+(?P<rate>[0-9.]+)`",
        ));
    }
    let syntax = regex_syntax::ParserBuilder::new()
        .nest_limit(NEST_LIMIT)
        .multi_line(true)
        .build()
        .parse(pattern);
    if let Err(e) = syntax {
        let (span, kind) = match &e {
            regex_syntax::Error::Parse(e) => (
                e.span().start.offset..e.span().end.offset,
                e.kind().to_string(),
            ),
            regex_syntax::Error::Translate(e) => (
                e.span().start.offset..e.span().end.offset,
                e.kind().to_string(),
            ),
            other => (whole, other.to_string()),
        };
        return Err(PatternError::new(span, format!("invalid regular expression: {kind}"))
            .help("the syntax is the Rust regex crate's (https://docs.rs/regex): no look-around or backreferences; name a group `(?P<name>...)`"));
    }
    let re = compile(pattern).map_err(|e| PatternError::new(whole.clone(), e.to_string()))?;
    let names: Vec<String> = re.capture_names().flatten().map(str::to_string).collect();
    if names.is_empty() {
        return Err(PatternError::new(
            whole,
            "the pattern has no named group, so it gives no metric",
        )
        .help("name what to read, e.g. `Requests/sec:\\s+(?P<requests_per_sec>[0-9.]+)`; metrics then say `from = \"requests_per_sec\"`"));
    }
    if let Some(bad) = names.iter().find(|n| n.contains(['.', '[', ']'])) {
        let span = pattern
            .find(&format!("<{bad}>"))
            .map_or(whole, |i| i + 1..i + 1 + bad.len());
        return Err(PatternError::new(
            span,
            format!("group name `{bad}` holds `.`, `[` or `]`, which a metric path reads as steps"),
        )
        .help(format!(
            "use letters, digits and `_`, like `{}`",
            bad.replace(['.', '[', ']'], "_")
        )));
    }
    Ok(names)
}

/// Why the bounded engine refuses a pattern.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CompileError {
    /// The compiled program would be over `limit` bytes (`SIZE_LIMIT`).
    #[error(
        "the pattern compiles to more than {limit} bytes; use fewer or smaller repetitions \
         (`\\d{{1000}}`), or ASCII classes (`[0-9]` rather than Unicode `\\d`, `(?-u:\\w)`)"
    )]
    TooBig { limit: usize },
    /// The regex crate does not parse it.
    #[error("invalid regular expression: {0}")]
    Invalid(::regex::Error),
}

/// The bounded engine: a pattern that would compile too large is an error, not a hang.
fn compile(pattern: &str) -> Result<::regex::Regex, CompileError> {
    RegexBuilder::new(pattern)
        .multi_line(true)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .nest_limit(NEST_LIMIT)
        .build()
        .map_err(|e| match e {
            ::regex::Error::CompiledTooBig(limit) => CompileError::TooBig { limit },
            other => CompileError::Invalid(other),
        })
}

fn parse_regex(options: &RegexOptions, text: &str) -> Result<Value, ParseError> {
    let mut doc = Map::new();
    for (i, pattern) in options.patterns.iter().enumerate() {
        let re = compile(pattern).map_err(|e| ParseError::new(format!("regex: {e}")))?;
        let Some(caps) = re.captures_iter(text).last() else {
            let last = text.trim().lines().last();
            return Err(ParseError::new(format!(
                "regex: pattern {n} `{p}` matched nothing on {stream}; {found}",
                n = i + 1,
                p = excerpt(pattern, EXCERPT_CHARS),
                stream = options.stream.name(),
                found = match last {
                    Some(l) => format!("its last line is `{}`", excerpt(l, EXCERPT_CHARS)),
                    None => format!("{} was empty", options.stream.name()),
                }
            )));
        };
        for name in re.capture_names().flatten() {
            if let Some(m) = caps.name(name) {
                doc.insert(name.to_string(), value(m.as_str(), options.decimal_comma));
            }
        }
    }
    Ok(Value::Object(doc))
}

/// A capture as a number when it reads as one without guessing what a separator means.
fn value(text: &str, decimal_comma: bool) -> Value {
    let number = if decimal_comma {
        (!text.contains('.'))
            .then(|| parse_number(&text.replacen(',', ".", 1)))
            .flatten()
    } else if text.contains(',') {
        None
    } else {
        parse_number(text)
    };
    number.map_or_else(|| Value::String(text.to_string()), json_number)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(patterns: &[&str]) -> RegexOptions {
        RegexOptions {
            patterns: patterns.iter().map(ToString::to_string).collect(),
            stream: Stream::Stdout,
            decimal_comma: false,
        }
    }

    #[test]
    fn named_groups_of_the_last_match_become_keys() {
        let wrk = include_str!("../../../tests/data/tool-outputs/wrk.txt");
        let doc = parse_regex(
            &options(&[
                r"^Requests/sec:\s+(?P<requests_per_sec>[0-9.]+)$",
                r"^Transfer/sec:\s+(?P<transfer>[0-9.]+)(?P<unit>[KMG]?B)$",
            ]),
            wrk,
        )
        .unwrap();
        assert_eq!(
            doc,
            serde_json::json!({"requests_per_sec": 13.32, "transfer": 726.86, "unit": "MB"})
        );
        let doc = parse_regex(&options(&[r"(?P<n>\d+)%"]), "10%\n20%\n30%\n").unwrap();
        assert_eq!(doc["n"], 30, "the last match counts");
        // A group that takes no part in the match is absent.
        let doc = parse_regex(&options(&[r"a(?P<x>\d)?(?P<y>b)"]), "ab").unwrap();
        assert_eq!(doc, serde_json::json!({"y": "b"}));
    }

    #[test]
    fn a_pattern_that_matches_nothing_is_an_error_that_quotes_the_output() {
        let err = parse_regex(
            &options(&[r"x", r"Requests/sec:\s+(?P<r>[0-9.]+)"]),
            "xyz\nlast line\n",
        )
        .unwrap_err()
        .0;
        assert!(err.contains("pattern 2 `Requests/sec:"), "{err}");
        assert!(err.contains("its last line is `last line`"), "{err}");
        let err = parse_regex(&options(&[r"(?P<r>1)"]), "").unwrap_err().0;
        assert!(err.contains("stdout was empty"), "{err}");
    }

    #[test]
    fn commas_are_read_only_when_the_recipe_says_what_they_mean() {
        assert_eq!(value("94.1", false), serde_json::json!(94.1));
        assert_eq!(value("94,1", false), serde_json::json!("94,1"));
        assert_eq!(value("1,234", false), serde_json::json!("1,234"));
        assert_eq!(value("94,1", true), serde_json::json!(94.1));
        assert_eq!(value("1.234,5", true), serde_json::json!("1.234,5"));
        assert_eq!(value("12", true), serde_json::json!(12));
        assert_eq!(value("NaN", false), serde_json::json!("NaN"));
        assert_eq!(value(" 7 ", false), serde_json::json!(7));
    }

    #[test]
    fn check_refuses_bad_unnamed_unbounded_and_pathlike_patterns() {
        assert_eq!(
            check_pattern(r"(?P<a>\d+) (?<b>x)"),
            Ok(vec!["a".to_string(), "b".to_string()])
        );
        let e = check_pattern(r"rate: (?P<r>[0-9.]+").unwrap_err();
        assert!(e.message.contains("unclosed group"), "{e:?}");
        assert_eq!(e.span.start, 6, "{e:?}");
        let e = check_pattern(r"(?P<r>\d)\1").unwrap_err();
        assert!(e.message.contains("invalid regular expression"), "{e:?}");
        let e = check_pattern(r"(?=x)(?P<r>\d)").unwrap_err();
        assert!(e.message.contains("look-around"), "{e:?}");
        let e = check_pattern(r"Requests/sec:\s+([0-9.]+)").unwrap_err();
        assert!(e.message.contains("no named group"), "{e:?}");
        let e = check_pattern(r"(?P<a.b>\d)").unwrap_err();
        assert!(e.message.contains("`a.b`"), "{e:?}");
        assert_eq!(e.span, 4..7);
        let e = check_pattern(r"(?P<r>\w{1000}){1000}").unwrap_err();
        assert!(e.message.contains("compiles to more than"), "{e:?}");
        let e = check_pattern(&"(".repeat(40)).unwrap_err();
        assert!(e.message.contains("invalid"), "{e:?}");
        let e = check_pattern(&format!("(?P<r>{})", "a".repeat(MAX_PATTERN_BYTES))).unwrap_err();
        assert!(e.message.contains("bytes long"), "{e:?}");
    }

    /// The two ways the bounded engine refuses a pattern, by variant, with the texts
    /// config and a run show.
    #[test]
    fn compile_errors_say_too_big_or_invalid_by_variant_with_the_same_text() {
        let e = compile(r"(?P<r>\w{1000}){1000}").unwrap_err();
        assert_eq!(e, CompileError::TooBig { limit: SIZE_LIMIT });
        assert_eq!(
            e.to_string(),
            format!(
                "the pattern compiles to more than {SIZE_LIMIT} bytes; use fewer or smaller \
                 repetitions (`\\d{{1000}}`), or ASCII classes (`[0-9]` rather than Unicode \
                 `\\d`, `(?-u:\\w)`)"
            )
        );
        let e = compile(r"(?P<r>\d)\1").unwrap_err();
        let CompileError::Invalid(inner) = &e else {
            panic!("{e:?}")
        };
        assert_eq!(
            e.to_string(),
            format!("invalid regular expression: {inner}")
        );
        // A run whose recipe holds such a pattern says so as the parser's error.
        let options = RegexOptions {
            patterns: vec![r"(?P<r>\d)\1".into()],
            stream: Stream::Stdout,
            decimal_comma: false,
        };
        let run = parse_regex(&options, "1").unwrap_err();
        assert_eq!(run, ParseError::new(format!("regex: {e}")));
    }
}
