//! POSIX shell quoting: the one way a value enters a command string.

/// Quotes `s` for a POSIX shell so that it reaches the command as one literal word.
///
/// Words made only of characters no shell treats specially are left bare, so that
/// logged commands stay readable; everything else is single-quoted, with embedded
/// single quotes written as `'\''`.
pub fn sh(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        if c == '\'' {
            out.push_str("'\\''");
        } else {
            out.push(c);
        }
    }
    out.push('\'');
    out
}

/// Quotes a path glob so that the shell expands its `*` and `?` and nothing else:
/// `/sys/class/thermal/thermal_zone*/temp` stays a glob, any other character is literal.
pub fn glob(pattern: &str) -> String {
    let mut out = String::new();
    let mut literal = String::new();
    for c in pattern.chars() {
        if c == '*' || c == '?' {
            if !literal.is_empty() {
                out.push_str(&sh(&literal));
                literal.clear();
            }
            out.push(c);
        } else {
            literal.push(c);
        }
    }
    if !literal.is_empty() {
        out.push_str(&sh(&literal));
    }
    out
}

/// Quotes each word and joins them with spaces.
pub fn join<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|w| sh(w.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_what_a_shell_would_interpret() {
        assert_eq!(sh("abc-1.2/x"), "abc-1.2/x");
        assert_eq!(sh(""), "''");
        assert_eq!(sh("a b"), "'a b'");
        assert_eq!(sh("; rm -rf /"), "'; rm -rf /'");
        assert_eq!(sh("$(id)"), "'$(id)'");
        assert_eq!(sh("it's"), "'it'\\''s'");
        assert_eq!(sh("~root"), "'~root'");
    }

    #[test]
    fn a_real_shell_sees_the_literal_value() {
        for v in [
            "; rm -rf /",
            "$(echo pwned)",
            "`id`",
            "a'b\"c",
            " spaced  out ",
            "\n",
            "*",
        ] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", sh(v)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), v);
        }
    }
}
