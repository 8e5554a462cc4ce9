//! `wrk+ab`: one output holding a wrk report and an ab report, as the web-app recipes'
//! runs print (anonymous load with wrk, then authenticated load with ab) -> the
//! document `{"wrk": {...}, "ab": {...}}`, each part what the `wrk` and `ab` parsers
//! make of the same output.

use serde_json::{Map, Value};

use super::{Keys, ParseError, Parser};
use crate::model::ParserOptions;

pub struct WrkAb;

/// The document's two parts, each the document of the parser of that name.
pub(super) const ROOTS: &[&str] = &["wrk", "ab"];

impl Parser for WrkAb {
    fn name(&self) -> &'static str {
        "wrk+ab"
    }
    // Bump with either part's parser: the document holds both.
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        let mut doc = Map::new();
        doc.insert("wrk".into(), super::wrk::parse_wrk(stdout)?);
        doc.insert("ab".into(), super::ab::parse_ab(stdout)?);
        Ok(Value::Object(doc))
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Roots(ROOTS)
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| {
                l.trim_start().starts_with("Requests/sec:") || l.starts_with("Requests per second:")
            })
            .collect()
    }
}

/// A path into one part must name one of that part's keys: `wrk.requests_per_second`.
pub(super) fn check_part(path: &str) -> Option<String> {
    check_in_parts(
        path,
        &[("wrk", &super::wrk::KEYS), ("ab", &super::ab::KEYS)],
    )
}

/// The check of a path into a document made of named parts (`wrk+ab`, `wrk+login`):
/// a known part's key must be one it holds; an unknown part is left to the caller.
pub(super) fn check_in_parts(path: &str, parts: &[(&str, &[&str])]) -> Option<String> {
    let (root, rest) = path.split_once('.')?;
    let keys = parts.iter().find(|(name, _)| *name == root)?.1;
    (!keys.contains(&rest)).then(|| {
        format!(
            "`{root}.{rest}`: {root}'s part holds {}",
            keys.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
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
    fn both_reports_in_one_output() {
        let out = format!("{}{}", fixture("wrk-404.txt"), fixture("ab-non-2xx.txt"));
        let d = WrkAb.parse(&ParserOptions::default(), &out, "").unwrap();
        assert_eq!(d["wrk"]["non_2xx_or_3xx"], 17194);
        assert_eq!(d["wrk"]["requests_per_second"], 17144.83);
        assert_eq!(d["ab"]["non_2xx"], 200);
        assert_eq!(d["ab"]["requests_per_second"], 14420.65);
    }

    #[test]
    fn either_report_missing_is_an_error_naming_its_tool() {
        let e = WrkAb
            .parse(&ParserOptions::default(), &fixture("wrk.txt"), "")
            .unwrap_err();
        assert!(e.0.starts_with("ab: "), "{e}");
        let e = WrkAb
            .parse(&ParserOptions::default(), &fixture("ab.txt"), "")
            .unwrap_err();
        assert!(e.0.starts_with("wrk: "), "{e}");
    }

    #[test]
    fn paths_into_a_part_are_checked_by_its_keys() {
        assert_eq!(check_part("wrk.requests_per_second"), None);
        assert_eq!(check_part("ab.non_2xx"), None);
        assert!(
            check_part("ab.requests")
                .unwrap()
                .contains("`complete_requests`")
        );
    }
}
