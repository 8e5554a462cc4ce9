//! Names: globs over board, storage and test names, and "did you mean" suggestions.

pub use crate::glob::{is_glob, matches as glob_match};

pub use crate::model::is_plain_name;

/// Refuses control characters in a text that reaches reports and terminals (titles,
/// descriptions, models). `newlines` allows line breaks and tabs, for descriptions.
pub fn control_free(text: &str, newlines: bool) -> Result<(), String> {
    match text
        .chars()
        .find(|&c| c.is_control() && !(newlines && matches!(c, '\n' | '\t' | '\r')))
    {
        Some(c) => Err(format!(
            "contains the control character U+{:04X}; it would reach reports and terminals",
            c as u32
        )),
        None => Ok(()),
    }
}

/// The closest candidate to `name`, if one is close enough to be a likely typo: by
/// strsim's optimal string alignment, where swapping two adjacent characters counts as
/// one edit (`ubs` is one typo away from `usb`, not two).
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let lower = name.to_lowercase();
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (strsim::osa_distance(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}

/// "did you mean `x`?" when there is a close candidate, else the list of what exists.
/// `what` is a plural phrase: "tests", "storage of the selected boards".
pub fn help_for<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str> + Clone,
    what: &str,
) -> String {
    if let Some(s) = did_you_mean(name, candidates.clone()) {
        format!("did you mean `{s}`?")
    } else {
        let all: Vec<String> = candidates.into_iter().map(|c| format!("`{c}`")).collect();
        if all.is_empty() {
            format!("there are no {what}")
        } else {
            format!("known {what}: {}", all.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("turing-cm3-*", "turing-cm3-1"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "ac"));
        assert!(glob_match("*-usb*", "kingston-usb3"));
        assert!(!glob_match("turing-*", "dramble-pi4-1"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exact2"));
        assert!(!glob_match(&"*a".repeat(50), &"a".repeat(40)));
    }

    #[test]
    fn plain_names() {
        for ok in ["pi4-1", "a.b", "x_y", "A1"] {
            assert!(is_plain_name(ok), "{ok}");
        }
        for bad in ["", "..", ".", "a..b", "-x", ".x", "a/b", "a b", "é"] {
            assert!(!is_plain_name(bad), "{bad}");
        }
        assert!(control_free("a\nb", true).is_ok());
        assert!(control_free("a\nb", false).is_err());
        assert!(control_free("a\u{1b}[31m", true).is_err());
    }

    #[test]
    fn suggestions() {
        // Two adjacent characters swapped are one typo (optimal string alignment).
        assert_eq!(did_you_mean("ubs", ["usb", "sd"]), Some("usb".into()));
        assert_eq!(
            did_you_mean("localhots", ["localhost", "pi4"]),
            Some("localhost".into())
        );
        assert_eq!(did_you_mean("zzz", ["localhost"]), None);
        assert_eq!(did_you_mean("XZ", ["xz"]), Some("xz".into()));
    }
}
