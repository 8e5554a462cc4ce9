//! `hdparm`: `hdparm -t` / `-T` / `--direct -t` / `--direct -T` -> MB/sec per timing line.

use serde_json::{Map, Value};

use super::text::excerpt;
use super::{EXCERPT_CHARS, Keys, ParseError, Parser, json_number, parse_decimal};
use crate::model::ParserOptions;

pub struct Hdparm;

impl Parser for Hdparm {
    fn name(&self) -> &'static str {
        "hdparm"
    }
    fn parse(&self, _: &ParserOptions, stdout: &str, stderr: &str) -> Result<Value, ParseError> {
        parse_hdparm(stdout, stderr)
    }
    fn keys(&self, _: &ParserOptions) -> Keys {
        Keys::Numbers(HDPARM_KEYS.iter().map(ToString::to_string).collect())
    }
    fn result_lines<'a>(&self, _: &ParserOptions, text: &'a str) -> Vec<&'a str> {
        text.lines()
            .filter(|l| {
                let l = l.trim();
                l.starts_with("Timing ") && l.contains(" = ")
            })
            .collect()
    }
}

/// The hdparm parser's keys: `-T`, `--direct -T`, `-t`, `--direct -t`.
pub const HDPARM_KEYS: [&str; 4] = [
    "cached_reads",
    "direct_cached_reads",
    "buffered_reads",
    "direct_disk_reads",
];

/// `hdparm -t`, `-T`, `--direct -t` and `--direct -T` print one timing line each:
/// ` Timing buffered disk reads: 256 MB in  1.63 seconds = 157.41 MB/sec`.
/// The document has `buffered_reads` (-t), `direct_disk_reads` (--direct -t),
/// `cached_reads` (-T: memory, not the device) and `direct_cached_reads` (--direct
/// -T: the drive's cache), MB/sec as printed (hdparm's MB are MiB), each present when
/// its line is.
fn parse_hdparm(stdout: &str, stderr: &str) -> Result<Value, ParseError> {
    let mut doc = Map::new();
    for line in stdout.lines() {
        let Some((what, rest)) = line
            .trim()
            .strip_prefix("Timing ")
            .and_then(|l| l.split_once(':'))
        else {
            continue;
        };
        // -T reads the page cache (memory bandwidth); -T --direct reads the drive's own
        // cache through O_DIRECT; -t reads the device through the page cache, and
        // -t --direct bypasses it. Four different things, four keys.
        let direct = what.contains("O_DIRECT");
        let [cached, direct_cached, buffered, direct_disk] = HDPARM_KEYS;
        let key = match (what.contains("cached"), what.contains("disk"), direct) {
            (true, _, false) => cached,
            (true, _, true) => direct_cached,
            (false, true, false) => buffered,
            (false, true, true) => direct_disk,
            _ => continue,
        };
        // Very slow media are reported in kB/sec.
        let rate = rest.rsplit_once('=').and_then(|(_, r)| {
            let r = r.trim();
            match (r.strip_suffix("MB/sec"), r.strip_suffix("kB/sec")) {
                (Some(mb), _) => parse_decimal(mb),
                (None, Some(kb)) => parse_decimal(kb).map(|k| k / 1024.0),
                (None, None) => None,
            }
        });
        match rate {
            Some(r) => {
                doc.insert(key.to_string(), json_number(r));
            }
            None => {
                return Err(ParseError::new(format!(
                    "hdparm: expected `= N MB/sec` at the end of `{}`",
                    excerpt(line.trim(), EXCERPT_CHARS)
                )));
            }
        }
    }
    if doc.is_empty() {
        let said = stderr
            .trim()
            .lines()
            .chain(stdout.trim().lines())
            .last()
            .unwrap_or("");
        return Err(ParseError::new(format!(
            "hdparm: expected a `Timing ... reads: ... = N MB/sec` line, found none{}",
            if said.is_empty() {
                String::new()
            } else {
                format!("; it said `{}`", excerpt(said, EXCERPT_CHARS))
            }
        )));
    }
    Ok(Value::Object(doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_timing_line_has_its_key_and_kb_are_converted() {
        let doc = parse_hdparm(
            include_str!("../../../tests/data/tool-outputs/hdparm-t.txt"),
            "",
        )
        .unwrap();
        assert_eq!(doc, serde_json::json!({"buffered_reads": 157.41}));
        let doc = parse_hdparm(
            " Timing buffered disk reads:   2 MB in  3.00 seconds = 512.00 kB/sec\n",
            "",
        )
        .unwrap();
        assert_eq!(doc["buffered_reads"], 0.5);
        let err = parse_hdparm("", "/dev/sda: Permission denied\n")
            .unwrap_err()
            .0;
        assert!(
            err.contains("it said `/dev/sda: Permission denied`"),
            "{err}"
        );
    }
}
