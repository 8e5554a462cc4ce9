//! Tool output -> a JSON document -> metric values: the `Parser` trait, the registry of
//! parsers that `parse = "..."` names, and what they share. One file per parser, each
//! tested beside it and on output captured from the real tool (tests/it/parsers.rs);
//! the metric-path language that selects a number from a document is in `path.rs`.
//!
//! Adding a parser: write `<name>.rs` implementing `Parser`, add it to `REGISTRY` and
//! its name and version to `model::PARSERS` (the names model owns, in the same order),
//! add a fixture under tests/data/tool-outputs and a row in docs/FORMAT.md.

mod ab;
mod dd;
mod fio;
mod hdparm;
mod iozone;
mod iperf2;
mod iperf3;
mod iperf3_text;
mod json;
mod path;
pub mod regex;
mod text;
mod time;
mod wrk;
mod wrk_ab;
mod wrk_login;

use serde_json::{Map, Value};

use crate::model::{ParserOptions, ParserSpec, Stream};

pub use hdparm::HDPARM_KEYS;
pub use path::{PathError, SelectError, SelectorError, check_path, select, select_number};
pub use text::{escape_controls, visible};

use text::excerpt;

/// A parser of one tool's output. The registry holds one value of each; a parser with
/// options (`regex`) reads them from `ParserOptions`, the others ignore them.
pub trait Parser: Sync {
    /// The name a recipe gives in `parse = "..."`; part of the cell key. Its version
    /// (also key input) is `model::PARSERS`'s.
    fn name(&self) -> &'static str;
    /// The stream that holds the tool's result.
    fn stream(&self, _options: &ParserOptions) -> Stream {
        Stream::Stdout
    }
    /// The document metric paths select from. Both streams arrive as a terminal shows
    /// them (`visible`); a parser may read the other one to explain a failure.
    fn parse(
        &self,
        options: &ParserOptions,
        stdout: &str,
        stderr: &str,
    ) -> Result<Value, ParseError>;
    /// What a metric path can select, checked when the recipe is loaded.
    fn keys(&self, options: &ParserOptions) -> Keys;
    /// The lines of `text` that look like this parser's result, quoted when the result
    /// is found on the other stream.
    fn result_lines<'a>(&self, options: &ParserOptions, text: &'a str) -> Vec<&'a str>;
}

/// What a parser's document holds at its top level.
#[derive(Clone, Debug, PartialEq)]
pub enum Keys {
    /// Anything: a path is checked only when a run's document is there.
    Any,
    /// Numbers at these keys: a path is one of them, exactly.
    Numbers(Vec<String>),
    /// Objects or arrays at these keys: a path starts with one and goes on into it.
    Roots(&'static [&'static str]),
}

/// Every parser, by the name `parse = "..."` gives. Order is the order of the lists in
/// messages and docs.
pub static REGISTRY: &[&dyn Parser] = &[
    &fio::FioJson,
    &time::Time,
    &iperf3::Iperf3Json,
    &json::Json,
    &hdparm::Hdparm,
    &dd::Dd,
    &self::regex::RegexParser,
    &iozone::Iozone,
    &iperf3_text::Iperf3Text,
    &iperf2::Iperf2,
    &wrk::Wrk,
    &ab::Ab,
    &wrk_ab::WrkAb,
    &wrk_login::WrkLogin,
];

/// The registered parser of that name.
pub fn find(name: &str) -> Option<&'static dyn Parser> {
    REGISTRY.iter().copied().find(|p| p.name() == name)
}

/// The registered names, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> + Clone {
    REGISTRY.iter().map(|p| p.name())
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", escape_controls(.0))]
pub struct ParseError(pub String);

impl ParseError {
    /// An error whose text carries no control byte: each is shown escaped (`\x1b`).
    pub fn new(message: impl Into<String>) -> Self {
        ParseError(escape_controls(&message.into()).into_owned())
    }
}

/// How much of the found text an error quotes.
const EXCERPT_CHARS: usize = 80;

fn registered(spec: &ParserSpec) -> &'static dyn Parser {
    // A ParserName comes only from the registry, so the lookup cannot miss.
    find(spec.name()).unwrap_or(&json::Json)
}

/// Turns a tool's output into a document that metric paths select from. Both streams
/// are matched as a terminal shows them (`visible`). When the result is not on the
/// stream the parser reads but the other stream holds it (a command that redirects
/// it), the error says so.
pub fn parse(spec: &ParserSpec, stdout: &str, stderr: &str) -> Result<Value, ParseError> {
    let parser = registered(spec);
    let options = &spec.options;
    let (stdout, stderr) = (visible(stdout), visible(stderr));
    let err = match parser.parse(options, &stdout, &stderr) {
        Ok(doc) => return Ok(doc),
        Err(e) => e,
    };
    // The same parser with the streams swapped: does the other one hold the result?
    let (read, other, other_result) = match parser.stream(options) {
        Stream::Stderr => (
            "stderr",
            ("stdout", &stdout),
            parser.parse(options, "", &stdout),
        ),
        Stream::Stdout => (
            "stdout",
            ("stderr", &stderr),
            parser.parse(options, &stderr, ""),
        ),
    };
    if other_result.is_err() {
        return Err(err);
    }
    let lines = parser.result_lines(options, other.1);
    let n = lines.len();
    Err(ParseError::new(format!(
        "{tool}: no {tool} result on {read}, where it is read; {name} has {n} line{s} that look{v} like it: `{first}` (redirected by the command?); {err}",
        tool = parser.name(),
        name = other.0,
        s = if n == 1 { "" } else { "s" },
        v = if n == 1 { "s" } else { "" },
        first = excerpt(lines.first().copied().unwrap_or_default(), EXCERPT_CHARS),
        err = err.0,
    )))
}

/// Why a metric path can never select anything from what a parser produces.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnreachablePath {
    /// The path does not parse.
    #[error(transparent)]
    Syntax(#[from] PathError),
    /// The parser gives a number at `key`, and the path goes on into it.
    #[error("`{key}` is a number; the path must be just `{key}`")]
    StepsIntoANumber { key: String },
    /// The parser gives an object or array at `key`, and the path stops there.
    #[error("`{key}` is not a number: go on into it, like `{key}[0]....`")]
    StopsAtAnObject { key: String },
    /// The parser gives numbers at fixed keys, and the path names none of them.
    #[error("expected one of {}", quoted_list(.keys))]
    NoSuchNumber { keys: Vec<String> },
    /// The parser's document starts with these keys, and the path with none of them.
    #[error("a path here starts with one of {}", quoted_list(.keys))]
    NoSuchRoot { keys: Vec<String> },
    /// A combined parser's part (`wrk+ab`'s `wrk`) holds fixed keys, and the path names
    /// none of them.
    #[error("{detail}")]
    NotInPart { detail: String },
}

fn quoted_list(keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks that a (syntactically valid) metric path can select something from what
/// the parser produces: the fixed keys of the line parsers, the top-level keys of the
/// tools' JSON reports, the named groups of the regex parser's patterns. The generic
/// `json` parser takes any path.
pub fn check_path_for(spec: &ParserSpec, path: &str) -> Result<(), UnreachablePath> {
    let first = path::first_key(path)?;
    let (keys, whole): (Vec<String>, bool) = match registered(spec).keys(&spec.options) {
        Keys::Any => return Ok(()),
        Keys::Numbers(keys) => (keys, true),
        Keys::Roots(keys) => (keys.iter().map(ToString::to_string).collect(), false),
    };
    match first {
        Some((key, steps)) if keys.contains(&key) => {
            if whole && steps > 1 {
                Err(UnreachablePath::StepsIntoANumber { key })
            } else if !whole && steps == 1 {
                Err(UnreachablePath::StopsAtAnObject { key })
            } else if let Some(detail) = match spec.name() {
                "wrk+ab" => wrk_ab::check_part(path),
                "wrk+login" => wrk_login::check_part(path),
                _ => None,
            } {
                Err(UnreachablePath::NotInPart { detail })
            } else {
                Ok(())
            }
        }
        _ if whole => Err(UnreachablePath::NoSuchNumber { keys }),
        _ => Err(UnreachablePath::NoSuchRoot { keys }),
    }
}

/// A finite number; `NaN` and `inf` are not measurements.
fn parse_number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Some boards print decimals with a comma (`3,56692 s`, `94,1 MB/s`): the locale's,
/// not a thousands separator, in the tools' summaries.
fn parse_decimal(text: &str) -> Option<f64> {
    parse_number(&text.replace(',', "."))
}

/// Integers stay integers so the document reads like the tool's output.
fn json_number(v: f64) -> Value {
    if v.fract() == 0.0 && v.abs() < 9.0e15 {
        Value::from(v as i64)
    } else {
        serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// A document of numbers at fixed keys, as the line parsers make.
fn numbers<'a>(pairs: impl IntoIterator<Item = (&'a str, f64)>) -> Value {
    let mut doc = Map::new();
    for (key, value) in pairs {
        doc.insert(key.to_string(), json_number(value));
    }
    Value::Object(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_found() {
        let mut seen = std::collections::BTreeSet::new();
        for p in REGISTRY {
            assert!(seen.insert(p.name()), "{} registered twice", p.name());
            assert_eq!(find(p.name()).map(super::Parser::name), Some(p.name()));
            assert_eq!(
                crate::model::ParserName::get(p.name()).map(crate::model::ParserName::as_str),
                Some(p.name())
            );
        }
        assert!(find("nope").is_none());
        assert!(crate::model::ParserName::get("Time").is_none());
    }

    /// The registry holds a parser of each name model knows, in its order.
    #[test]
    fn the_registry_is_models_list_of_parsers() {
        let registered: Vec<&str> = REGISTRY.iter().map(|p| p.name()).collect();
        let known: Vec<&str> = crate::model::PARSERS.iter().map(|(n, _)| *n).collect();
        assert_eq!(registered, known);
    }

    /// The names and versions are key input: changing one re-runs every stored cell.
    #[test]
    fn names_and_versions_are_those_keys_were_made_with() {
        assert_eq!(
            crate::model::PARSERS,
            [
                ("fio-json", 1),
                ("time", 1),
                ("iperf3-json", 1),
                ("json", 1),
                ("hdparm", 1),
                ("dd", 1),
                ("regex", 1),
                ("iozone", 1),
                ("iperf3-text", 1),
                ("iperf2", 1),
                ("wrk", 1),
                ("ab", 1),
                ("wrk+ab", 1),
                ("wrk+login", 1)
            ]
        );
    }

    #[test]
    fn odd_input_gives_errors_not_panics() {
        let nasty = [
            "",
            "{",
            "日本語{\"é\": [",
            "{\"jobs\": 5}",
            "{\"jobs\": [{\"error\": \"x\"}]}",
            "ü ü ü ü",
            "1 2 3 ∞",
            "\u{0}{}",
            "[1,2]",
            "{\"error\": {\"code\": 1}}",
        ];
        for text in nasty {
            for spec in ParserSpec::all() {
                let _ = parse(&spec, text, text);
                let _ = check_path_for(&spec, text);
            }
            let _ = check_path(text);
            let _ = select(&serde_json::json!({"a": [1]}), text);
        }
        let spec = |n| ParserSpec::named(n).unwrap();
        assert!(parse(&spec("fio-json"), "{\"jobs\": 5}", "").is_err());
        let err = parse(&spec("iperf3-json"), "{\"error\": {\"code\": 1}}", "").unwrap_err();
        assert!(err.0.contains("{\"code\":1}"), "{err}");
    }

    #[test]
    fn paths_are_checked_against_the_keys_a_parser_produces() {
        let spec = |n| ParserSpec::named(n).unwrap();
        assert_eq!(check_path_for(&spec("time"), "real"), Ok(()));
        assert_eq!(
            check_path_for(&spec("fio-json"), "jobs[0].read.iops"),
            Ok(())
        );
        assert_eq!(check_path_for(&spec("json"), "anything[0].x"), Ok(()));
        assert_eq!(check_path_for(&spec("hdparm"), "cached_reads"), Ok(()));
        assert_eq!(check_path_for(&spec("dd"), "bytes_per_second"), Ok(()));
    }

    /// Each case of `UnreachablePath`, by variant, with the text config shows.
    #[test]
    fn unreachable_paths_say_why_by_variant_with_the_same_text() {
        let spec = |n| ParserSpec::named(n).unwrap();
        let e = check_path_for(&spec("time"), "elapsed").unwrap_err();
        assert!(matches!(&e, UnreachablePath::NoSuchNumber { keys } if keys[0] == "real"));
        assert_eq!(
            e.to_string(),
            "expected one of `real`, `user`, `sys`, `max_rss_kib`"
        );
        let e = check_path_for(&spec("time"), "real.x").unwrap_err();
        assert_eq!(e, UnreachablePath::StepsIntoANumber { key: "real".into() });
        assert_eq!(
            e.to_string(),
            "`real` is a number; the path must be just `real`"
        );
        let e = check_path_for(&spec("fio-json"), "jobs").unwrap_err();
        assert_eq!(e, UnreachablePath::StopsAtAnObject { key: "jobs".into() });
        assert_eq!(
            e.to_string(),
            "`jobs` is not a number: go on into it, like `jobs[0]....`"
        );
        let e = check_path_for(&spec("iperf3-json"), "sum.x").unwrap_err();
        assert!(matches!(e, UnreachablePath::NoSuchRoot { .. }), "{e:?}");
        assert!(
            e.to_string()
                .starts_with("a path here starts with one of `start`, "),
            "{e}"
        );
        let e = check_path_for(&spec("time"), "a..b").unwrap_err();
        assert!(
            matches!(
                e,
                UnreachablePath::Syntax(PathError::EmptyKey { character: 3, .. })
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "metric path `a..b`, character 3: empty key (two dots, or a dot at the end?)"
        );
    }
}
