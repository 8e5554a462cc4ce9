//! A file's TOML syntax error, told once: the parser recovers and goes on, but after one
//! missing `]` everything it reads next is garbage, so the rest it finds are echoes of
//! the first. Where that error lies inside a bracket opened on an earlier line, the
//! bracket is what the diagnostic points at.

use std::ops::Range;

/// The one syntax error worth telling of `errors` (the earliest in the file), as a span
/// and a message; `None` when there is none.
pub(super) fn first(text: &str, errors: &[toml::de::Error]) -> Option<(Range<usize>, String)> {
    let (span, e) = errors
        .iter()
        .enumerate()
        .map(|(i, e)| (e.span().unwrap_or(0..0), i, e))
        .min_by_key(|(span, i, _)| (span.start, *i))
        .map(|(span, _, e)| (span, e))?;
    let message = e.message().trim().to_string();
    match unclosed_before(text, span.start) {
        Some(open) => {
            let (kind, close) = if text.as_bytes()[open] == b'[' {
                ("array", ']')
            } else {
                ("inline table", '}')
            };
            let (line, _) = line_col(text, span.start);
            Some((
                open..open + 1,
                format!(
                    "this {kind} is never closed: a `{close}` is missing before line {line} (where the parser stopped: {message})"
                ),
            ))
        }
        None => Some((span, message)),
    }
}

/// The byte offset of the innermost `[` or `{` still open at `at`, when it opened on an
/// earlier line than `at`: a value that runs on into the lines after it. Strings and
/// comments are skipped; a `[` that starts a line outside any value is a table header.
/// One pass over at most `at` bytes.
fn unclosed_before(text: &str, at: usize) -> Option<usize> {
    let bytes = &text.as_bytes()[..at.min(text.len())];
    let mut open: Vec<usize> = Vec::new();
    let mut line_start = true;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'\n' => {
                line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => i = skip_string(bytes, i),
            b'[' if line_start && open.is_empty() => {
                // A table header: `[name]` or `[[name]]`, on its line.
                while i < bytes.len() && bytes[i] != b'\n' && bytes[i] != b'#' {
                    if bytes[i] == b'"' || bytes[i] == b'\'' {
                        i = skip_string(bytes, i);
                    } else {
                        i += 1;
                    }
                }
            }
            b'[' | b'{' => {
                open.push(i);
                i += 1;
            }
            b']' | b'}' => {
                open.pop();
                i += 1;
            }
            _ => i += 1,
        }
        line_start = false;
    }
    let innermost = *open.last()?;
    text[innermost..at.min(text.len())]
        .contains('\n')
        .then_some(innermost)
}

/// The offset just past the string starting at `i` (basic or literal, one-line or
/// multi-line), or the end of `bytes` when it never closes.
fn skip_string(bytes: &[u8], i: usize) -> usize {
    let q = bytes[i];
    let triple = bytes.get(i..i + 3) == Some(&[q, q, q][..]);
    let mut j = i + if triple { 3 } else { 1 };
    while j < bytes.len() {
        let b = bytes[j];
        if b == b'\\' && q == b'"' {
            j += 2;
            continue;
        }
        if triple {
            if bytes.get(j..j + 3) == Some(&[q, q, q][..]) {
                // A closing `"""` may be followed by up to two more quotes of the string.
                let mut end = j + 3;
                while end < bytes.len() && end < j + 5 && bytes[end] == q {
                    end += 1;
                }
                return end;
            }
        } else if b == q || b == b'\n' {
            return j + 1;
        }
        j += 1;
    }
    bytes.len()
}

/// 1-based line and column (in bytes) of `at`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..at.min(text.len())];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let col = at
        - before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;
    use toml::de::DeTable;

    fn told(text: &str) -> Option<(usize, usize, String)> {
        let (_, errors) = DeTable::parse_recoverable(text);
        let (span, message) = first(text, &errors)?;
        let (line, col) = line_col(text, span.start);
        Some((line, col, message))
    }

    #[test]
    fn a_missing_bracket_is_one_error_at_the_bracket() {
        let text = "title = \"t\"\n[matrix]\ntest = [\"xz\", \"disk\"\n\n[method]\nruns = 3\n";
        let (_, errors) = DeTable::parse_recoverable(text);
        assert!(errors.len() > 1, "the parser's own count: {}", errors.len());
        let (line, col, message) = told(text).unwrap();
        assert_eq!((line, col), (3, 8), "{message}");
        assert!(message.contains("array is never closed"), "{message}");
        assert!(
            message.contains("`]` is missing before line 5"),
            "{message}"
        );
    }

    #[test]
    fn brackets_in_strings_comments_and_headers_are_not_counted() {
        let text = "a = \"[\" # [\n[t]\nb = '''\n[\n'''\nc = [1,\n 2]\nd = { e = [1\nf = 2\n";
        let (line, col, message) = told(text).unwrap();
        assert_eq!((line, col), (8, 11), "{message}");
        let inline = "a = { b = 1,\nc = 2\n[t]\n";
        let (line, _, message) = told(inline).unwrap();
        assert_eq!(line, 1, "{message}");
        assert!(message.contains("inline table"), "{message}");
    }

    #[test]
    fn an_error_on_its_own_line_is_told_as_the_parser_says() {
        let (line, _, message) = told("a = 1\n[[storage]\nb = 2\n").unwrap();
        assert_eq!(line, 2);
        assert!(message.contains("expected `]`"), "{message}");
        let (line, _, message) = told("a = [1, 2\n").unwrap();
        assert_eq!(line, 1, "{message}");
    }
}
