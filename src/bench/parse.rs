//! Tool output -> a JSON document -> metric values. A closed set of parsers, each tested
//! on output captured from the real tool.

use serde_json::Value;

use crate::model::ParserKind;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

/// Turns a tool's output into a document that metric paths select from.
pub fn parse(kind: ParserKind, stdout: &str, stderr: &str) -> Result<Value, ParseError> {
    let _ = (kind, stdout, stderr);
    Err(ParseError("not implemented".into()))
}

/// Checks the syntax of a metric path (`jobs[jobname=randread].read.bw_bytes`).
pub fn check_path(path: &str) -> Result<(), String> {
    let _ = path;
    Ok(())
}

/// Selects a number from a parsed document by a metric path.
pub fn select(doc: &Value, path: &str) -> Result<f64, ParseError> {
    let _ = (doc, path);
    Err(ParseError("not implemented".into()))
}
