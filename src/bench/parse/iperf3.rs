//! `iperf3-json`: `iperf3 -J` -> iperf3's JSON report; `{"error": ...}` is an error.

use serde_json::Value;

use super::json::parse_json_document;
use super::{Keys, ParseError, Parser};
use crate::model::ParserOptions;

pub struct Iperf3Json;

impl Parser for Iperf3Json {
    fn name(&self) -> &'static str {
        "iperf3-json"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        parse_iperf3(stdout)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Roots(&["start", "intervals", "end"])
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        super::json::document_lines(text)
    }
}

/// iperf3 -J exits 0 with `{"error": ...}` when it cannot connect, so the exit status
/// alone does not tell a failed run.
fn parse_iperf3(stdout: &str) -> Result<Value, ParseError> {
    let doc = parse_json_document("iperf3-json", "iperf3's JSON report (iperf3 -J)", stdout)?;
    if let Some(err) = doc.get("error") {
        let message = match err {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return Err(ParseError::new(format!(
            "iperf3-json: iperf3 reported an error: {message}"
        )));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_report_with_exit_status_0_is_an_error() {
        let err = parse_iperf3(include_str!(
            "../../../tests/data/tool-outputs/iperf3-error.json"
        ))
        .unwrap_err()
        .0;
        assert!(
            err.contains("iperf3 reported an error: unable to connect"),
            "{err}"
        );
        let doc = parse_iperf3(include_str!(
            "../../../tests/data/tool-outputs/iperf3-up.json"
        ))
        .unwrap();
        assert!(doc["end"]["sum_received"]["bits_per_second"].is_number());
    }
}
