//! The one sanitiser of text benchpipe did not write itself (what a store someone sent
//! holds): every control character shown as its escape, and stored text bounded, with
//! the cut said. Every output that shows such text (the terminal, Markdown, HTML, CSV,
//! JSON) takes it through here.
//!
//! A control character is a C0 one (U+0000..U+001F, the newline and tab among them), DEL
//! or a C1 one (U+0080..U+009F): what `char::is_control` says. Each is shown as Rust
//! writes it (`\n`, `\t`, `\u{1b}`, `\u{9b}`), so an ESC sequence drives no terminal, a
//! newline starts no Markdown heading, a tab starts no spreadsheet formula, and a
//! reader still sees what was there. Pure: no I/O.

use std::borrow::Cow;
use std::sync::LazyLock;

use serde_json::Value;

/// The most bytes of one stored string read back (a failure's cause, a skip's reason,
/// a fact's value) and of one stored value shown: a 60 MB cause becomes 4 KiB of report,
/// not 63 MB of HTML and 126 MB of JSON.
pub const MAX_BYTES: usize = 4096;

/// The escapes of the 65 control characters: C0 (0..=31), DEL (32), C1 (33..=64).
static ESCAPES: LazyLock<Vec<String>> = LazyLock::new(|| {
    (0u32..0x20)
        .chain([0x7f])
        .chain(0x80..0xa0)
        .filter_map(char::from_u32)
        .map(|c| c.escape_debug().to_string())
        .collect()
});

/// How a control character is shown (`\n`, `\u{1b}`); None for any other character.
pub fn escape(c: char) -> Option<&'static str> {
    let i = match c as u32 {
        n @ 0..=0x1f => n,
        0x7f => 0x20,
        n @ 0x80..=0x9f => n - 0x80 + 0x21,
        _ => return None,
    };
    Some(ESCAPES[i as usize].as_str())
}

/// Where the first control character (`keep` aside) starts in `text`: found by a scan
/// of its bytes, since nearly all text has none. A C1 character is 0xC2 then a byte
/// below 0xA0; `±` (0xC2 0xB1) is passed over.
fn first_control(text: &str, keep: Option<u8>) -> Option<usize> {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().position(|(i, &b)| {
        ((b < 0x20 || b == 0x7f) && Some(b) != keep)
            || (b == 0xc2 && bytes.get(i + 1).is_some_and(|next| *next < 0xa0))
    })
}

/// Whether `text` holds a control character.
pub fn has_control(text: &str) -> bool {
    first_control(text, None).is_some()
}

/// How a control character is written in a document that keeps line breaks (a Markdown
/// or HTML page, an error message): the newline kept (None), a tab or carriage return
/// as a space (a description may hold them; `check` refuses any other), every other as
/// its escape. Stored text comes through `shown` first, so it holds none of them.
pub fn in_document(c: char) -> Option<&'static str> {
    match c {
        '\n' => None,
        '\t' | '\r' => Some(" "),
        c => escape(c),
    }
}

/// `text` with each control character written as `replace` says (None: kept).
fn replaced(
    text: &str,
    keep: Option<u8>,
    replace: impl Fn(char) -> Option<&'static str>,
) -> Cow<'_, str> {
    let Some(at) = first_control(text, keep) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 8);
    out.push_str(&text[..at]);
    for c in text[at..].chars() {
        match replace(c) {
            Some(e) => out.push_str(e),
            None => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` on one line with every control character as its escape; not cut (a CSV
/// field, a JSON-quoted diff value: text whose length its maker bounds).
pub fn one_line(text: &str) -> Cow<'_, str> {
    replaced(text, None, escape)
}

/// `text` in a document that keeps line breaks, each control character as
/// `in_document` writes it.
pub fn in_lines(text: &str) -> Cow<'_, str> {
    replaced(text, Some(b'\n'), in_document)
}

/// `in_lines`, of an owned text: given back as it is when it needs nothing.
pub fn into_lines(text: String) -> String {
    match in_lines(&text) {
        Cow::Borrowed(_) => None,
        Cow::Owned(o) => Some(o),
    }
    .unwrap_or(text)
}

/// A stored value as it may be shown anywhere: on one line, every control character
/// as its escape, and at most `MAX_BYTES`, a cut said at its end.
pub fn shown(text: &str) -> Cow<'_, str> {
    let line = one_line(text);
    if line.len() <= MAX_BYTES {
        return line;
    }
    let mut s = line.into_owned();
    bound(&mut s);
    Cow::Owned(s)
}

/// `shown`, of an owned text: given back as it is when it needs nothing.
pub fn into_shown(text: String) -> String {
    if text.len() <= MAX_BYTES && first_control(&text, None).is_none() {
        return text;
    }
    shown(&text).into_owned()
}

/// What ends a cut text: the `…` and how long the whole was.
fn cut_note(total: usize) -> String {
    format!("… [cut: {total} bytes]")
}

/// Cuts `s` to at most `MAX_BYTES` (on a character boundary), the cut said at its end;
/// whether it was cut. Control characters are left as they are: a string read back
/// from the store keeps its meaning, and is escaped where it is shown.
pub fn bound(s: &mut String) -> bool {
    if s.len() <= MAX_BYTES {
        return false;
    }
    let note = cut_note(s.len());
    let mut end = MAX_BYTES - note.len();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s.push_str(&note);
    true
}

/// `bound` on every string of a JSON value, object keys too (a document read back from
/// the store). serde_json's parser nests at most 128 deep, so neither does this walk.
pub fn bound_value(v: &mut Value) {
    match v {
        Value::String(s) => {
            bound(s);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_value),
        Value::Object(map) => {
            if map.keys().any(|k| k.len() > MAX_BYTES) {
                *map = std::mem::take(map)
                    .into_iter()
                    .map(|(mut k, v)| {
                        bound(&mut k);
                        (k, v)
                    })
                    .collect();
            }
            map.values_mut().for_each(bound_value);
        }
        _ => {}
    }
}

/// A piece of a JSON string's text as serde_json hands it to a formatter (C0 controls,
/// quotes and backslashes escaped already), written with DEL and the C1 controls as
/// `\u00XX` escapes, as `json` writes them.
pub fn write_json_fragment<W: ?Sized + std::io::Write>(
    w: &mut W,
    fragment: &str,
) -> std::io::Result<()> {
    let Some(at) = first_control(fragment, None) else {
        return w.write_all(fragment.as_bytes());
    };
    w.write_all(&fragment.as_bytes()[..at])?;
    let mut buf = [0u8; 4];
    for c in fragment[at..].chars() {
        match c as u32 {
            n @ 0x7f..=0x9f => write!(w, "\\u{n:04x}")?,
            _ => w.write_all(c.encode_utf8(&mut buf).as_bytes())?,
        }
    }
    Ok(())
}

/// JSON text with DEL and the C1 controls as `\u00XX` escapes: serde_json escapes C0
/// ones itself and writes these raw, and a terminal acts on a raw C1 CSI (U+009B) as on
/// ESC `[`. Outside strings JSON text holds only ASCII, so every one is in a string.
pub fn json(text: String) -> String {
    if first_control(&text, None).is_none() {
        return text;
    }
    let mut out = Vec::with_capacity(text.len() + 16);
    let _ = write_json_fragment(&mut out, &text);
    String::from_utf8(out).unwrap_or(text)
}

/// Every control character: C0, DEL and C1.
#[cfg(test)]
pub(crate) fn controls() -> impl Iterator<Item = char> {
    (0u32..0x20)
        .chain([0x7f])
        .chain(0x80..0xa0)
        .filter_map(char::from_u32)
}

/// A hostile stored text for tests: `tag`, every control character, then a line that
/// would be a Markdown heading, a tab and a formula, and markup.
#[cfg(test)]
pub(crate) fn hostile(tag: &str) -> String {
    let controls: String = controls().collect();
    format!("{tag}{controls}\n# INJECTED heading\n\t=1+1 <b>x</b>")
}

/// Checks that `text`, an output named `name`, holds no control character but its own
/// line breaks (`\r\n` ones where `crlf`), and that no `hostile` text started a line.
#[cfg(test)]
pub(crate) fn assert_inert(name: &str, text: &str, crlf: bool) {
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| c.is_control() && c != '\n' && !(crlf && c == '\r'))
        .collect();
    assert!(raw.is_empty(), "{name} holds raw {raw:?}");
    if crlf {
        assert!(
            !text.replace("\r\n", "").contains('\r'),
            "{name}: a bare CR"
        );
    }
    for line in text.lines() {
        let l = line.trim_start_matches(['-', ' ', '"', '>', '|', '[']);
        assert!(
            !l.starts_with("# INJECTED") && !l.starts_with("INJECTED"),
            "{name}: a stored newline started a line: {line}"
        );
    }
}

/// Whether `text` shows `tag`'s `hostile` text, escaped (looked for without the
/// backslashes a format may quote).
#[cfg(test)]
pub(crate) fn shows(text: &str, tag: &str) -> bool {
    text.replace('\\', "")
        .contains(&format!("{tag}0u{{1}}u{{2}}"))
}

/// A span of seconds as a person reads it: `12s`, `3m12s`, `2h05m`.
pub fn short_duration(seconds: u64) -> String {
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, seconds % 3600 / 60),
    }
}

/// `short_duration` of an estimate in seconds, rounded up; nothing below zero.
pub fn short_secs(seconds: f64) -> String {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "clamped to 0..=u32::MAX seconds first: a century is enough"
    )]
    let whole = seconds.ceil().clamp(0.0, f64::from(u32::MAX)) as u64;
    short_duration(whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_character_is_shown_as_its_escape_and_nothing_else_is() {
        let all: String = controls().collect();
        assert_eq!(all.chars().count(), 65);
        let text = format!("a{all}b");
        let shown = shown(&text);
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        let want: String = controls().map(|c| c.escape_debug().to_string()).collect();
        assert_eq!(shown, format!("a{want}b"));
        assert_eq!(escape('\u{1b}'), Some("\\u{1b}"));
        assert_eq!(escape('\n'), Some("\\n"));
        assert_eq!(escape('\u{9b}'), Some("\\u{9b}"));
        for c in ['a', ' ', '±', '\u{a0}', 'é', '—', '😀', '\u{2028}'] {
            assert_eq!(escape(c), None, "{c:?}");
            let text = format!("x{c}y");
            assert!(matches!(one_line(&text), Cow::Borrowed(_)), "{c:?}");
        }
        // Only the newline stays in a document that keeps lines; a tab and a carriage
        // return are spaces there.
        let lines = in_lines(&text);
        assert_eq!(lines.matches('\n').count(), 1);
        assert!(!lines.chars().any(|c| c.is_control() && c != '\n'));
        assert_eq!(in_lines("a\tb\r\nc\u{1b}"), "a b \nc\\u{1b}");
    }

    #[test]
    fn a_stored_string_longer_than_the_bound_is_cut_and_says_so() {
        let long = "é".repeat(40_000);
        let shown = shown(&long);
        assert!(shown.len() <= MAX_BYTES, "{}", shown.len());
        assert!(shown.ends_with("… [cut: 80000 bytes]"), "{shown}");
        // Shown again, it is the same: nothing is cut twice.
        assert_eq!(super::shown(&shown), shown);
        let mut s = long.clone();
        assert!(bound(&mut s));
        assert_eq!(s, shown);
        let mut short = "x".repeat(MAX_BYTES);
        assert!(!bound(&mut short));
        // Escapes count: a text of controls is cut by what it shows.
        let esc = "\u{1b}".repeat(MAX_BYTES);
        assert!(super::shown(&esc).len() <= MAX_BYTES);
    }

    #[test]
    fn every_string_and_key_of_a_value_is_bounded() {
        let big = "x".repeat(MAX_BYTES * 3);
        let mut v = serde_json::json!({
            "a": big, "b": [1, big, {"c": big}], big.clone(): true, "n": 5
        });
        bound_value(&mut v);
        let text = v.to_string();
        assert!(text.len() < MAX_BYTES * 6, "{}", text.len());
        assert_eq!(v["n"], 5);
        assert!(v["a"].as_str().unwrap().ends_with("bytes]"));
        assert_eq!(v.as_object().unwrap().len(), 4);
    }

    #[test]
    fn json_text_escapes_del_and_c1_as_serde_escapes_c0() {
        let all: String = controls().collect();
        let text = json(serde_json::to_string(&all).unwrap());
        assert!(!text.chars().any(char::is_control), "{text}");
        let back: String = serde_json::from_str(&text).unwrap();
        assert_eq!(back, all);
        let plain = serde_json::to_string("± plain").unwrap();
        assert_eq!(json(plain.clone()), plain);
    }
}
