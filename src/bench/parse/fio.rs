//! `fio-json`: `fio --output-format=json` -> fio's JSON report; a failed job is an error.

use serde_json::Value;

use super::json::first_json_value;
use super::text::{excerpt, quote_found};
use super::{EXCERPT_CHARS, Keys, ParseError, Parser};
use crate::model::ParserOptions;

pub struct FioJson;

impl Parser for FioJson {
    fn name(&self) -> &'static str {
        "fio-json"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        parse_fio(stdout)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Roots(&["jobs", "disk_util"])
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        super::json::document_lines(text)
    }
}

/// fio prints notes and per-job errors (`fio: pid=..., err=28/...`) before its JSON, so
/// parsing starts at the first `{`; the skipped text is kept to explain a failed job.
fn parse_fio(stdout: &str) -> Result<Value, ParseError> {
    let Some(start) = stdout.find('{') else {
        return Err(ParseError::new(format!(
            "fio-json: expected fio's JSON report on stdout (fio --output-format=json), \
             found no `{{` in {}",
            quote_found(stdout)
        )));
    };
    let preamble = stdout[..start].trim();
    let doc = first_json_value("fio-json", "fio's JSON report", &stdout[start..])?;
    let Some(jobs) = doc.get("jobs").and_then(Value::as_array) else {
        return Err(ParseError::new(format!(
            "fio-json: expected a `jobs` array in fio's JSON report, found {}",
            quote_found(&stdout[start..])
        )));
    };
    for (i, job) in jobs.iter().enumerate() {
        let code = job.get("error").and_then(Value::as_i64).unwrap_or(0);
        if code != 0 {
            let name = job
                .get("jobname")
                .and_then(Value::as_str)
                .map_or_else(|| format!("#{i}"), |n| format!("`{n}`"));
            let detail = if preamble.is_empty() {
                String::new()
            } else {
                format!("; fio said: {}", excerpt(preamble, 2 * EXCERPT_CHARS))
            };
            return Err(ParseError::new(format!(
                "fio-json: job {name} failed with error {code} ({}){detail}",
                errno_name(code)
            )));
        }
    }
    Ok(doc)
}

/// fio reports errno values; naming the common ones saves a trip to errno.h.
fn errno_name(code: i64) -> &'static str {
    match code {
        1 => "EPERM, operation not permitted",
        2 => "ENOENT, no such file or directory",
        5 => "EIO, input/output error",
        12 => "ENOMEM, out of memory",
        13 => "EACCES, permission denied",
        22 => "EINVAL, invalid argument (O_DIRECT unsupported here?)",
        28 => "ENOSPC, no space left on device",
        30 => "EROFS, read-only file system",
        _ => "an errno value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_before_the_report_are_skipped_and_a_failed_job_is_named() {
        let doc = parse_fio(include_str!(
            "../../../tests/data/tool-outputs/fio-warning-before-json.json"
        ))
        .unwrap();
        assert_eq!(doc["jobs"][0]["jobname"], "randread");
        let err = parse_fio(include_str!(
            "../../../tests/data/tool-outputs/fio-job-error.json"
        ))
        .unwrap_err()
        .0;
        assert!(
            err.contains("job `fullwrite` failed with error 28 (ENOSPC"),
            "{err}"
        );
        assert!(parse_fio("{\"jobs\": 5}").is_err());
    }
}
