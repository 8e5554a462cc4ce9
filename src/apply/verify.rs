//! Proof that a board runs the image its cells name: the scenario's `expect` fields
//! against the board's `/etc/os-release`, before any of those cells is measured.

use std::collections::BTreeMap;
use std::time::Duration;

use super::worker::Worker;
use crate::failure::CellFailure;
use crate::model::ImageName;
use crate::transport::Transport;

/// os-release is a few hundred bytes; a board's file is never read past this.
const OS_RELEASE_MAX: usize = 64 * 1024;

impl Worker<'_> {
    /// Reads the board's os-release and compares the expected fields.
    pub(super) fn verify_image(
        &self,
        t: &mut dyn Transport,
        image: &ImageName,
        expect: &BTreeMap<String, String>,
    ) -> Result<(), CellFailure> {
        self.phase(None, format!("verify image {image}"));
        let out = t.run(
            &format!("head -c {OS_RELEASE_MAX} /etc/os-release"),
            Some(Duration::from_secs(30)),
        )?;
        if !out.exit.success() {
            return Err(CellFailure::step_failed(
                format!("verify image {image}"),
                "head -c ... /etc/os-release",
                &out.exit,
                &out.stderr_str(),
            ));
        }
        let found = parse_os_release(&out.stdout_str());
        mismatch(image, expect, &found).map_or(Ok(()), Err)
    }
}

/// The first expected field the board's os-release does not match, as a failure.
fn mismatch(
    image: &ImageName,
    expect: &BTreeMap<String, String>,
    found: &BTreeMap<String, String>,
) -> Option<CellFailure> {
    expect.iter().find_map(|(key, want)| {
        let got = found.get(key);
        (got != Some(want)).then(|| CellFailure::ImageMismatch {
            image: image.to_string(),
            field: format!("os-release {key}"),
            expected: want.clone(),
            found: got.map(|g| g.chars().take(80).collect()),
        })
    })
}

/// `KEY=value` lines of os-release(5): values may be quoted with `"` or `'`, and `\`
/// escapes the next character inside double quotes; comments and blank lines are skipped.
pub(super) fn parse_os_release(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, raw)) = line.split_once('=') else {
            continue;
        };
        let value = if let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            let mut v = String::new();
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        v.push(n);
                    }
                } else {
                    v.push(c);
                }
            }
            v
        } else if let Some(inner) = raw.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')) {
            inner.to_string()
        } else {
            raw.to_string()
        };
        out.insert(key.trim().to_string(), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RASPBIAN: &str = r#"PRETTY_NAME="Raspbian GNU/Linux 11 (bullseye)"
NAME="Raspbian GNU/Linux"
VERSION_ID="11"
VERSION="11 (bullseye)"
# a comment
ID=raspbian
ID_LIKE=debian
HOME_URL='http://www.raspbian.org/'
QUOTED="a \"b\" c"
"#;

    #[test]
    fn os_release_values_are_unquoted() {
        let f = parse_os_release(RASPBIAN);
        assert_eq!(f["ID"], "raspbian");
        assert_eq!(f["VERSION_ID"], "11");
        assert_eq!(f["PRETTY_NAME"], "Raspbian GNU/Linux 11 (bullseye)");
        assert_eq!(f["HOME_URL"], "http://www.raspbian.org/");
        assert_eq!(f["QUOTED"], "a \"b\" c");
    }

    #[test]
    fn the_first_differing_or_missing_field_is_the_mismatch() {
        let found = parse_os_release(RASPBIAN);
        let image = ImageName::new("bookworm");
        let ok = BTreeMap::from([("ID".to_string(), "raspbian".to_string())]);
        assert_eq!(mismatch(&image, &ok, &found), None);
        let wrong = BTreeMap::from([("VERSION_ID".to_string(), "12".to_string())]);
        let f = mismatch(&image, &wrong, &found).unwrap();
        assert_eq!(
            f.to_string(),
            "board does not run image bookworm: os-release VERSION_ID is \"11\", expected \"12\""
        );
        let absent = BTreeMap::from([("VARIANT".to_string(), "lite".to_string())]);
        let f = mismatch(&image, &absent, &found).unwrap();
        assert!(
            f.to_string()
                .ends_with("os-release VARIANT is absent, expected \"lite\"")
        );
    }
}
