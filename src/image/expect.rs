//! Checking a booted board against its image's `[images.NAME.expect]`: `/etc/os-release`
//! parsed as os-release(5) says, and `uname -m`; each difference is one line of cause.

use std::collections::BTreeMap;
use std::fmt;

use crate::model::Expectations;

/// One expectation the board does not meet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// `os_release.ID`, `uname_m`.
    pub what: String,
    pub expected: String,
    /// What the board shows; `None` when it shows nothing for it.
    pub actual: Option<String>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.actual {
            Some(a) => write!(
                f,
                "{}: expected {:?}, the board has {:?}",
                self.what, self.expected, a
            ),
            None => write!(
                f,
                "{}: expected {:?}, the board has none",
                self.what, self.expected
            ),
        }
    }
}

/// The differences between what the board shows and `expect`, in a stable order
/// (os-release keys sorted, then `uname_m`); empty when it meets them all.
/// `uname_m` is `uname -m`'s output (trimmed here).
pub fn check(expect: &Expectations, os_release: &str, uname_m: Option<&str>) -> Vec<Mismatch> {
    let os = parse_os_release(os_release);
    let mut out = Vec::new();
    for (k, want) in &expect.os_release {
        let got = os.get(k);
        if got != Some(want) {
            out.push(Mismatch {
                what: format!("os_release.{k}"),
                expected: want.clone(),
                actual: got.cloned(),
            });
        }
    }
    if let Some(want) = &expect.uname_m {
        let got = uname_m.map(str::trim).filter(|s| !s.is_empty());
        if got != Some(want.as_str()) {
            out.push(Mismatch {
                what: "uname_m".into(),
                expected: want.clone(),
                actual: got.map(str::to_string),
            });
        }
    }
    out
}

/// `KEY=value` lines of an os-release file: values unquoted (`"..."` with `\` escapes,
/// or `'...'`), comments and malformed lines skipped, a later key winning.
pub fn parse_os_release(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        let k = k.trim();
        if k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        out.insert(k.to_string(), unquote(v.trim()));
    }
    out
}

fn unquote(v: &str) -> String {
    let bytes = v.as_bytes();
    if v.len() >= 2 && bytes[0] == b'\'' && bytes[v.len() - 1] == b'\'' {
        return v[1..v.len() - 1].to_string();
    }
    if v.len() >= 2 && bytes[0] == b'"' && bytes[v.len() - 1] == b'"' {
        let mut out = String::new();
        let mut chars = v[1..v.len() - 1].chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some(n @ ('"' | '\\' | '$' | '`')) => out.push(n),
                    Some(n) => {
                        out.push('\\');
                        out.push(n);
                    }
                    None => out.push('\\'),
                },
                c => out.push(c),
            }
        }
        return out;
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RASPIOS: &str = r#"PRETTY_NAME="Raspbian GNU/Linux 11 (bullseye)"
NAME="Raspbian GNU/Linux"
VERSION_ID="11"
# a comment
VERSION="11 (bullseye)"
ID=raspbian
ID_LIKE=debian
HOME_URL='http://www.raspbian.org/'
QUOTED="say \"hi\" \$HOME"
not a line
"#;

    #[test]
    fn os_release_values_are_unquoted_as_os_release_5_says() {
        let os = parse_os_release(RASPIOS);
        assert_eq!(os["ID"], "raspbian");
        assert_eq!(os["VERSION_ID"], "11");
        assert_eq!(os["PRETTY_NAME"], "Raspbian GNU/Linux 11 (bullseye)");
        assert_eq!(os["HOME_URL"], "http://www.raspbian.org/");
        assert_eq!(os["QUOTED"], r#"say "hi" $HOME"#);
        assert_eq!(os.len(), 8);
    }

    #[test]
    fn each_unmet_expectation_is_one_line_of_cause() {
        let expect = Expectations {
            os_release: BTreeMap::from([
                ("ID".into(), "debian".into()),
                ("VERSION_ID".into(), "11".into()),
                ("VARIANT_ID".into(), "lite".into()),
            ]),
            uname_m: Some("aarch64".into()),
        };
        let m = check(&expect, RASPIOS, Some("armv7l\n"));
        let lines: Vec<String> = m.iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                r#"os_release.ID: expected "debian", the board has "raspbian""#,
                r#"os_release.VARIANT_ID: expected "lite", the board has none"#,
                r#"uname_m: expected "aarch64", the board has "armv7l""#,
            ]
        );
        let met = Expectations {
            os_release: BTreeMap::from([("ID".into(), "raspbian".into())]),
            uname_m: Some("armv7l".into()),
        };
        assert!(check(&met, RASPIOS, Some("armv7l\n")).is_empty());
        assert_eq!(check(&met, "", None).len(), 2);
        assert!(check(&Expectations::default(), "", None).is_empty());
    }
}
