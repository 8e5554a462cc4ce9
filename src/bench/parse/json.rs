//! `json`: any JSON document on stdout, taken whole; and the JSON reading the tools'
//! parsers share (errors that say where the document broke).

use serde_json::Value;

use super::text::excerpt;
use super::{EXCERPT_CHARS, Keys, ParseError, Parser};
use crate::model::ParserOptions;

pub struct Json;

impl Parser for Json {
    fn name(&self) -> &'static str {
        "json"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        parse_json_document("json", "a JSON document on stdout", stdout)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Any
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        document_lines(text)
    }
}

/// A JSON document's lines: from the first `{` or `[` on, blank lines left out.
pub(super) fn document_lines(text: &str) -> Vec<&str> {
    let text = text.find(['{', '[']).map_or("", |i| &text[i..]);
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

pub(super) fn parse_json_document(
    parser: &str,
    expected: &str,
    text: &str,
) -> Result<Value, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError::new(format!(
            "{parser}: expected {expected}, found empty output"
        )));
    }
    serde_json::from_str(text).map_err(|e| json_error(parser, expected, text, &e))
}

/// Reads the first JSON value and ignores whatever follows it (fio can print more
/// error lines after its report).
pub(super) fn first_json_value(
    parser: &str,
    expected: &str,
    text: &str,
) -> Result<Value, ParseError> {
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match values.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(json_error(parser, expected, text, &e)),
        None => Err(ParseError::new(format!(
            "{parser}: expected {expected}, found empty output"
        ))),
    }
}

fn json_error(parser: &str, expected: &str, text: &str, e: &serde_json::Error) -> ParseError {
    let near = text_near(text, e.line(), e.column());
    let what = if e.is_eof() {
        "the JSON ends early (truncated output?)".to_string()
    } else {
        format!("invalid JSON: {e}")
    };
    ParseError::new(format!(
        "{parser}: expected {expected}; {what}; near `{}`",
        excerpt(&near, EXCERPT_CHARS)
    ))
}

/// The text around a serde_json error position (1-based line, column).
fn text_near(text: &str, line: usize, column: usize) -> String {
    let mut offset = 0usize;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            offset += column.min(l.len());
            break;
        }
        offset += l.len();
    }
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let half = EXCERPT_CHARS / 2;
    let before: Vec<char> = text[..end].chars().collect();
    let from = before.len().saturating_sub(half);
    let mut near: String = before[from..].iter().collect();
    near.extend(text[end..].chars().take(half));
    near
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_where_the_document_broke() {
        let doc = Json.parse(
            &ParserOptions::default(),
            include_str!("../../../tests/data/tool-outputs/curl-json.json"),
            "",
        );
        assert!(doc.unwrap()["speed_download"].is_number());
        let err = parse_json_document("json", "x", "{\"a\": [1, 2")
            .unwrap_err()
            .0;
        assert!(
            err.contains("ends early") && err.contains("near `{\"a\": [1, 2`"),
            "{err}"
        );
        let err = parse_json_document("json", "x", " \n").unwrap_err().0;
        assert!(err.contains("empty output"), "{err}");
        assert_eq!(
            first_json_value("j", "x", "{} trailing").unwrap(),
            serde_json::json!({})
        );
    }
}
