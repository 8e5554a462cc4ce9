//! Tool output as a terminal shows it, and quoting it in messages: escape sequences
//! removed for matching, control bytes escaped for errors, long text cut to a line.

use super::EXCERPT_CHARS;
use std::fmt::Write as _;

/// Text as a terminal would show it, for parsers to match: escape sequences removed
/// (CSI `\e[0;1m`, OSC `\e]0;title\a`, charset selection `\e(B`, and other two-byte
/// `\e` sequences), a lone carriage return made a line break (progress lines that
/// overwrite themselves), and every other control character dropped except tab and
/// newline. Real hdparm logs from Raspberry Pi benchmark scripts carry `\e(B\e[m`
/// right after `MB/sec`.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameter and intermediate bytes, then one final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC, DCS, SOS, PM, APC: up to BEL or ST (`\e\\`).
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' {
                            break;
                        }
                        if c == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                // Character set designation takes one more character.
                Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '%' | '#') => {
                    chars.next();
                }
                _ => {}
            },
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' => out.push('\n'),
            // C1 CSI, the 8-bit form of `\e[`.
            '\u{9b}' => {
                for c in chars.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&c) {
                        break;
                    }
                }
            }
            '\t' | '\n' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` with every control character shown as an escape (`\x1b`, `\n`),
/// so that quoting tool output in a message can never drive a terminal.
pub fn escape_controls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

pub(super) fn quote_found(text: &str) -> String {
    if text.trim().is_empty() {
        "empty output".to_string()
    } else {
        format!("`{}`", excerpt(text, EXCERPT_CHARS))
    }
}

/// One line of at most `max` characters, whitespace runs collapsed.
pub(super) fn excerpt(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        collapsed
    } else {
        let cut: String = collapsed.chars().take(max).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse::ParseError;

    #[test]
    fn visible_text_is_what_a_terminal_shows() {
        for (raw, shown) in [
            ("= 41.90 MB/sec\u{1b}(B\u{1b}[m", "= 41.90 MB/sec"),
            (
                "\u{1b}[33mHDParm: 41.90\u{1b}(B\u{1b}[m\n",
                "HDParm: 41.90\n",
            ),
            ("\u{1b}[1;31;40mred\u{1b}[0m", "red"),
            ("\u{1b}]0;title\u{7}after", "after"),
            ("\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\", "link"),
            ("\u{9b}2Jclear", "clear"),
            ("10%\r20%\r30%\n", "10%\n20%\n30%\n"),
            ("dos line\r\nnext", "dos line\nnext"),
            ("tab\there\u{0}\u{7}\u{8}\u{7f}", "tab\there"),
            ("unfinished \u{1b}[", "unfinished "),
            ("lone \u{1b}", "lone "),
            ("日本語 ü", "日本語 ü"),
        ] {
            assert_eq!(visible(raw), shown, "{raw:?}");
        }
        assert_eq!(escape_controls("a\u{1b}[m\n\u{7}"), "a\\x1b[m\\n\\x07");
        assert_eq!(
            ParseError::new("x\u{1b}y").to_string(),
            "x\\x1by",
            "no control byte in a message"
        );
        assert_eq!(ParseError("x\u{1b}y".into()).to_string(), "x\\x1by");
    }
}
