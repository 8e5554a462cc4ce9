//! `wrk+login`: the web-app recipes' runs: anonymous load with wrk, then logged-in load
//! with wrk (its Lua script reads the cookie from a file, so the cookie is on no
//! command line) or, when a scenario asks for the seed's exact tool, with ab (`-C`:
//! on ab's command line) -> `{"wrk": {...}, "login": {...}}`: `wrk` what the `wrk`
//! parser makes of the first report, `login` the second report's numbers under names
//! both tools give.

use serde_json::{Map, Value};

use super::{Keys, ParseError, Parser, json_number};
use crate::model::ParserOptions;

pub struct WrkLogin;

/// The document's two parts.
pub(super) const ROOTS: &[&str] = &["wrk", "login"];

/// The logged-in part's numbers. `non_2xx` is what the tool counts: wrk responses of
/// 400 and above, ab every response that is not 2xx; `latency_avg_s` is wrk's mean
/// latency or ab's mean time per request.
pub(super) const LOGIN_KEYS: [&str; 5] = [
    "requests_per_second",
    "requests",
    "latency_avg_s",
    "non_2xx",
    "socket_errors",
];

/// Where a tool's report starts: wrk's `Running 30s test @ URL`, ab's banner.
fn report_start(line: &str) -> Option<Tool> {
    if line.starts_with("Running ") && line.contains(" test @ ") {
        Some(Tool::Wrk)
    } else if line.starts_with("This is ApacheBench") {
        Some(Tool::Ab)
    } else {
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Tool {
    Wrk,
    Ab,
}

/// The reports of `text`, each with its tool, in order; what comes before the first
/// (a priming request's words) is nobody's.
fn reports(text: &str) -> Vec<(Tool, String)> {
    let mut out: Vec<(Tool, String)> = Vec::new();
    for line in text.lines() {
        if let Some(tool) = report_start(line) {
            out.push((tool, String::new()));
        }
        if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

impl Parser for WrkLogin {
    fn name(&self) -> &'static str {
        "wrk+login"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, _stderr: &str) -> Result<Value, ParseError> {
        let found = reports(stdout);
        let tools: Vec<&str> = found
            .iter()
            .map(|(t, _)| if *t == Tool::Wrk { "wrk" } else { "ab" })
            .collect();
        let [(Tool::Wrk, anonymous), login] = found.as_slice() else {
            return Err(ParseError::new(format!(
                "wrk+login: expected wrk's report (the anonymous load), then wrk's or ab's (the logged-in load); the output holds {}",
                if tools.is_empty() {
                    "no report".to_string()
                } else {
                    format!("these, in order: {}", tools.join(", "))
                }
            )));
        };
        let anonymous = super::wrk::parse_wrk(anonymous)?;
        let login = match login {
            (Tool::Wrk, text) => {
                let d = super::wrk::parse_wrk(text)?;
                [
                    ("requests_per_second", d["requests_per_second"].clone()),
                    ("requests", d["requests"].clone()),
                    ("latency_avg_s", d["latency_avg_s"].clone()),
                    ("non_2xx", d["non_2xx_or_3xx"].clone()),
                    ("socket_errors", d["socket_errors"].clone()),
                ]
            }
            (Tool::Ab, text) => {
                let d = super::ab::parse_ab(text)?;
                let latency = d["time_per_request_ms"]
                    .as_f64()
                    .map_or(Value::Null, |ms| json_number(ms / 1000.0));
                [
                    ("requests_per_second", d["requests_per_second"].clone()),
                    ("requests", d["complete_requests"].clone()),
                    ("latency_avg_s", latency),
                    ("non_2xx", d["non_2xx"].clone()),
                    ("socket_errors", d["socket_errors"].clone()),
                ]
            }
        };
        let login: Map<String, Value> = login
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let mut doc = Map::new();
        doc.insert("wrk".into(), anonymous);
        doc.insert("login".into(), Value::Object(login));
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

/// A path into one part must name one of that part's keys: `login.requests_per_second`.
pub(super) fn check_part(path: &str) -> Option<String> {
    super::wrk_ab::check_in_parts(path, &[("wrk", &super::wrk::KEYS), ("login", &LOGIN_KEYS)])
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

    /// Real output of the recipes' run shape (tests/data/tool-outputs/README.md): the
    /// anonymous requests all refused, the logged-in ones (the Lua script's cookie) not.
    #[test]
    fn real_output_of_an_anonymous_and_a_logged_in_wrk() {
        let d = WrkLogin
            .parse(&ParserOptions::default(), &fixture("wrk-login.txt"), "")
            .unwrap();
        assert_eq!(d["wrk"]["non_2xx_or_3xx"], 101322);
        assert_eq!(d["wrk"]["requests_per_second"], 101196.62);
        assert_eq!(d["login"]["non_2xx"], 0);
        assert_eq!(d["login"]["requests"], 118300);
        assert_eq!(d["login"]["requests_per_second"], 107539.3);
        assert_eq!(d["login"]["latency_avg_s"].as_f64().unwrap(), 282.51e-6);
    }

    #[test]
    fn anonymous_wrk_then_logged_in_wrk() {
        let out = format!(
            "priming\n{}{}",
            fixture("wrk-small.txt"),
            fixture("wrk-404.txt")
        );
        let d = WrkLogin.parse(&ParserOptions::default(), &out, "").unwrap();
        assert_eq!(d["wrk"]["requests_per_second"], 12657.97);
        assert_eq!(d["wrk"]["non_2xx_or_3xx"], 0);
        assert_eq!(d["login"]["requests_per_second"], 17144.83);
        assert_eq!(d["login"]["non_2xx"], 17194);
        assert_eq!(d["login"]["socket_errors"], 0);
        assert!(d["login"]["latency_avg_s"].as_f64().unwrap() > 0.0);
        assert!(d["login"]["requests"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn anonymous_wrk_then_logged_in_ab() {
        let out = format!("{}{}", fixture("wrk-404.txt"), fixture("ab-non-2xx.txt"));
        let d = WrkLogin.parse(&ParserOptions::default(), &out, "").unwrap();
        assert_eq!(d["wrk"]["non_2xx_or_3xx"], 17194);
        assert_eq!(d["login"]["requests_per_second"], 14420.65);
        assert_eq!(d["login"]["non_2xx"], 200);
        let ab = super::super::ab::parse_ab(&fixture("ab-non-2xx.txt")).unwrap();
        assert_eq!(
            d["login"]["latency_avg_s"].as_f64().unwrap(),
            ab["time_per_request_ms"].as_f64().unwrap() / 1000.0
        );
        assert_eq!(d["login"]["requests"], ab["complete_requests"]);
    }

    #[test]
    fn a_missing_or_extra_report_is_an_error_listing_what_was_found() {
        for (out, found) in [
            (fixture("wrk.txt"), "these, in order: wrk"),
            (
                format!("{}{}", fixture("ab.txt"), fixture("wrk.txt")),
                "ab, wrk",
            ),
            (
                format!(
                    "{}{}{}",
                    fixture("wrk.txt"),
                    fixture("wrk-small.txt"),
                    fixture("ab.txt")
                ),
                "wrk, wrk, ab",
            ),
            ("nothing\n".to_string(), "no report"),
        ] {
            let e = WrkLogin
                .parse(&ParserOptions::default(), &out, "")
                .unwrap_err();
            assert!(e.0.contains(found), "{e}");
        }
    }

    #[test]
    fn paths_into_a_part_are_checked_by_its_keys() {
        assert_eq!(check_part("wrk.requests_per_second"), None);
        assert_eq!(check_part("login.non_2xx"), None);
        assert!(
            check_part("login.time_per_request_ms")
                .unwrap()
                .contains("`latency_avg_s`")
        );
    }
}
