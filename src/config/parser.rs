//! Validates a recipe's parser: `[run] parse` against the registry in `bench::parse`
//! (with "did you mean"), and the options of the parsers that take them
//! (`[parse_regex]`, each pattern checked as it will run, errors inside the pattern).

use std::collections::BTreeSet;

use toml::Spanned;

use super::{Source, names, raw, template};
use crate::diag::Diagnostic;
use crate::model::{ParserName, ParserOptions, ParserSpec, RegexOptions, Stream};

/// `[run] parse`, a name from the parser registry, and the options of the parser that
/// takes them (`[parse_regex]`). None when either is wrong.
pub fn validate(
    src: &Source,
    raw: &raw::Recipe,
    diags: &mut Vec<Diagnostic>,
) -> Option<ParserSpec> {
    let parse = &raw.run.get_ref().parse;
    let wanted = parse.get_ref();
    let name = ParserName::get(wanted);
    if name.is_none() {
        let names = crate::bench::parse::names();
        let all: Vec<String> = names.clone().map(|p| format!("`{p}`")).collect();
        let help = names::did_you_mean(wanted, names).map_or_else(
            || format!("parsers: {}", all.join(", ")),
            |s| format!("did you mean `{s}`?"),
        );
        diags.push(
            src.at_value(
                parse,
                format!(
                    "unknown parser `{wanted}`; expected one of {}",
                    all.join(", ")
                ),
            )
            .with_help(help),
        );
    }
    let regex = match (&raw.parse_regex, name.map(ParserName::as_str)) {
        (Some(table), Some("regex")) => Some(regex_options(src, table, diags)?),
        (Some(table), Some(_)) => {
            diags.push(
                src.at_value(
                    table,
                    format!("`[parse_regex]` is for `parse = \"regex\"`, and this recipe says `parse = \"{wanted}\"`"),
                )
                .with_help("remove `[parse_regex]`, or set `parse = \"regex\"` in `[run]`"),
            );
            None
        }
        (None, Some("regex")) => {
            diags.push(
                src.at_value(parse, "`parse = \"regex\"` needs a `[parse_regex]` table with the patterns to read")
                    .with_help("add e.g. `[parse_regex]` with `pattern = 'Requests/sec:\\s+(?P<requests_per_sec>[0-9.]+)'`; each named group is a key `from` can select"),
            );
            return None;
        }
        // An unknown parser is reported above; its options mean nothing yet.
        (_, None) | (None, Some(_)) => None,
    };
    Some(ParserSpec {
        name: name?,
        options: ParserOptions { regex },
    })
}

/// `[parse_regex]`: `pattern` or `patterns` (not both), each checked as the regex parser
/// will run it, with the caret on the offending part of the pattern.
fn regex_options(
    src: &Source,
    table: &Spanned<raw::ParseRegex>,
    diags: &mut Vec<Diagnostic>,
) -> Option<RegexOptions> {
    use crate::bench::parse::regex::{MAX_PATTERNS, check_pattern};
    let start = diags.len();
    let t = table.get_ref();
    let patterns: Vec<&Spanned<String>> = match (&t.pattern, &t.patterns) {
        (Some(one), None) => vec![one],
        (None, Some(list)) => {
            if list.get_ref().is_empty() {
                diags.push(src.at_value(list, "`patterns` is empty: give at least one pattern"));
            } else if list.get_ref().len() > MAX_PATTERNS {
                diags.push(src.at_value(
                    list,
                    format!(
                        "{} patterns is more than {MAX_PATTERNS}",
                        list.get_ref().len()
                    ),
                ));
            }
            list.get_ref().iter().collect()
        }
        (Some(one), Some(_)) => {
            diags.push(
                src.at_value(one, "give `pattern` or `patterns`, not both")
                    .with_help("put every pattern in `patterns = [...]`"),
            );
            Vec::new()
        }
        (None, None) => {
            diags.push(
                src.at_value(table, "`[parse_regex]` has no `pattern` or `patterns`")
                    .with_help(
                        "add e.g. `pattern = 'Requests/sec:\\s+(?P<requests_per_sec>[0-9.]+)'`",
                    ),
            );
            Vec::new()
        }
    };
    let mut seen = BTreeSet::new();
    for pattern in &patterns {
        match check_pattern(pattern.get_ref()) {
            Ok(names) => {
                for name in names {
                    if !seen.insert(name.clone()) {
                        let span = template::file_span(src, pattern, {
                            let text = pattern.get_ref();
                            let at = text.find(&format!("<{name}>")).map_or(0, |i| i + 1);
                            at..at + name.len()
                        });
                        diags.push(src.at(
                            span,
                            format!("group `{name}` is named in an earlier pattern too: each key has one source"),
                        ));
                    }
                }
            }
            Err(e) => {
                let span = template::file_span(src, pattern, e.span.clone());
                let mut d = src.at(span, format!("bad pattern: {}", e.message));
                if let Some(help) = e.help {
                    d = d.with_help(help);
                }
                diags.push(d);
            }
        }
    }
    let stream = match &t.stream {
        None => Stream::Stdout,
        Some(s) => match s.get_ref().as_str() {
            "stdout" => Stream::Stdout,
            "stderr" => Stream::Stderr,
            other => {
                diags.push(src.at_value(
                    s,
                    format!("unknown stream `{other}`; expected `stdout` or `stderr`"),
                ));
                Stream::Stdout
            }
        },
    };
    if diags.len() > start {
        return None;
    }
    Some(RegexOptions {
        patterns: patterns.iter().map(|p| p.get_ref().clone()).collect(),
        stream,
        decimal_comma: t.decimal_comma.as_ref().is_some_and(|d| *d.get_ref()),
    })
}
