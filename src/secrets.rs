//! Secret values and their redaction (pure): which parts of a secret file's content
//! are redacted, and bytes with every known value replaced by `[secret NAME]`.
//!
//! A recipe's secrets (a generated password, a login cookie) are files a step writes
//! in the cell's secret directory on the controller; `apply/secrets.rs` reads them
//! after every command of the walk and redacts what the command printed before
//! anything is logged, parsed, stored or shown. What counts as a value of a file:
//! each of its lines (trimmed), and in a line of cookies (`a=b; c=d`) each value after
//! `=`, each also percent-decoded (`%7C` -> `|`, as PHP hands a cookie to the page).

use std::borrow::Cow;

/// A value shorter than this could not be told from other output: a secret line that
/// short is refused (`SecretError::TooShort`), and shorter parts of a line (a cookie's
/// value) are left as they are.
pub const MIN_LEN: usize = 8;

/// How much of a secret file is read: a password or a cookie is far smaller.
pub const MAX_FILE_BYTES: u64 = 64 * 1024;

/// A secret file whose content cannot be redacted safely.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error(
        "secret `{name}` holds a line shorter than {MIN_LEN} bytes, too short to tell from other output and so to redact; make it longer"
    )]
    TooShort { name: String },
    #[error("secret `{name}` is larger than {MAX_FILE_BYTES} bytes")]
    TooLarge { name: String },
}

/// The values to redact, each with its secret's name, longest first so that a value
/// inside another is never replaced first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Redactions {
    values: Vec<(Vec<u8>, String)>,
}

impl Redactions {
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Adds the values of a secret file's content; a value already known is kept once.
    pub fn add(&mut self, name: &str, content: &[u8]) -> Result<(), SecretError> {
        if content.len() as u64 > MAX_FILE_BYTES {
            return Err(SecretError::TooLarge { name: name.into() });
        }
        let text = String::from_utf8_lossy(content);
        for value in values_of(&text).map_err(|()| SecretError::TooShort { name: name.into() })? {
            let value = value.into_bytes();
            if !self.values.iter().any(|(v, _)| *v == value) {
                self.values.push((value, name.to_string()));
            }
        }
        self.values
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Ok(())
    }

    /// `bytes` with every value replaced by `[secret NAME]`.
    pub fn redact<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let mut out: Cow<'a, [u8]> = Cow::Borrowed(bytes);
        for (value, name) in &self.values {
            if let Some(replaced) = replace_all(&out, value, marker(name).as_bytes()) {
                out = Cow::Owned(replaced);
            }
        }
        out
    }

    /// `redact` for text.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
        }
    }

    /// Output kept as a head and a tail around dropped bytes: each part redacted, and
    /// also a value cut by the drop, whose start ends the head or whose end starts the
    /// tail (at least 4 bytes of it).
    pub fn redact_cut(&self, head: &[u8], tail: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let mut head = self.redact(head).into_owned();
        let mut tail = self.redact(tail).into_owned();
        for (value, name) in &self.values {
            let m = marker(name);
            if let Some(k) = (4..value.len())
                .rev()
                .find(|&k| head.ends_with(&value[..k]))
            {
                head.truncate(head.len() - k);
                head.extend_from_slice(m.as_bytes());
            }
            if let Some(k) = (4..value.len())
                .rev()
                .find(|&k| tail.starts_with(&value[value.len() - k..]))
            {
                tail.splice(..k, m.bytes());
            }
        }
        (head, tail)
    }
}

/// What stands where a secret's value was.
pub fn marker(name: &str) -> String {
    format!("[secret {name}]")
}

/// The values of a secret file's text (see the module's doc); `Err` when a non-empty
/// line is shorter than `MIN_LEN`.
fn values_of(text: &str) -> Result<Vec<String>, ()> {
    let mut out: Vec<String> = Vec::new();
    let push = |v: &str, out: &mut Vec<String>| {
        if v.len() >= MIN_LEN && !out.iter().any(|o| o == v) {
            out.push(v.to_string());
        }
        if let Some(d) = percent_decoded(v)
            && d.len() >= MIN_LEN
            && !out.contains(&d)
        {
            out.push(d);
        }
    };
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.len() < MIN_LEN {
            return Err(());
        }
        push(line, &mut out);
        for part in line.split(';') {
            if let Some((_, value)) = part.split_once('=') {
                push(value.trim(), &mut out);
            }
        }
    }
    Ok(out)
}

/// `admin%7C1700%7Cabc` -> `admin|1700|abc`; None when nothing is encoded or the
/// result is not UTF-8.
fn percent_decoded(v: &str) -> Option<String> {
    if !v.contains('%') {
        return None;
    }
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let hex = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok().filter(|d| d != v)
}

/// `hay` with every `needle` replaced, or None when it holds none.
fn replace_all(hay: &[u8], needle: &[u8], with: &[u8]) -> Option<Vec<u8>> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    let mut out: Option<Vec<u8>> = None;
    let mut last = 0;
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        if hay[i] == needle[0] && &hay[i..i + needle.len()] == needle {
            let o = out.get_or_insert_with(|| Vec::with_capacity(hay.len()));
            o.extend_from_slice(&hay[last..i]);
            o.extend_from_slice(with);
            i += needle.len();
            last = i;
        } else {
            i += 1;
        }
    }
    let mut o = out?;
    o.extend_from_slice(&hay[last..]);
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, content: &str) -> Redactions {
        let mut r = Redactions::default();
        r.add(name, content.as_bytes()).unwrap();
        r
    }

    #[test]
    fn a_password_is_replaced_wherever_it_appears() {
        let r = r("admin_password", "Zq3xY7pLm2Nw8Rt4\n");
        let got = r.redact_str("login Zq3xY7pLm2Nw8Rt4 failed; pwd=Zq3xY7pLm2Nw8Rt4.");
        assert_eq!(
            got,
            "login [secret admin_password] failed; pwd=[secret admin_password]."
        );
        assert!(matches!(r.redact_str("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn cookie_values_are_redacted_alone_and_percent_decoded() {
        let line =
            "wordpress_logged_in_ab12=admin%7C1700000000%7CtokenTOKEN%7Chmac0123; wp_sec=short";
        let r = r("cookie", line);
        let value = "admin%7C1700000000%7CtokenTOKEN%7Chmac0123";
        let decoded = "admin|1700000000|tokenTOKEN|hmac0123";
        for text in [line, value, decoded] {
            let got = r.redact_str(text);
            assert!(!got.contains("tokenTOKEN"), "{got}");
        }
        // The cookie's name alone is no secret, nor a value too short to tell.
        assert_eq!(
            r.redact_str("wordpress_logged_in_ab12 short"),
            "wordpress_logged_in_ab12 short"
        );
    }

    #[test]
    fn a_short_or_huge_secret_is_refused() {
        let mut r = Redactions::default();
        assert!(matches!(
            r.add("pw", b"abc\n"),
            Err(SecretError::TooShort { .. })
        ));
        assert!(matches!(
            r.add("pw", &vec![b'a'; MAX_FILE_BYTES as usize + 1]),
            Err(SecretError::TooLarge { .. })
        ));
        // An empty file (not written yet) has nothing to redact.
        r.add("pw", b"").unwrap();
        assert!(r.is_empty());
    }

    #[test]
    fn a_value_cut_by_dropped_output_is_redacted_on_both_sides() {
        let r = r("pw", "0123456789abcdef");
        let (h, t) = r.redact_cut(b"head 0123456", b"9abcdef tail");
        assert_eq!(h, b"head [secret pw]");
        assert_eq!(t, b"[secret pw] tail");
        let (h, t) = r.redact_cut(b"head 012", b"ef tail");
        assert_eq!(
            (h.as_slice(), t.as_slice()),
            (&b"head 012"[..], &b"ef tail"[..])
        );
    }

    #[test]
    fn longer_values_go_first_and_bytes_need_not_be_utf8() {
        let mut r = Redactions::default();
        r.add("a", b"abcdefgh").unwrap();
        r.add("b", b"xxabcdefghxx").unwrap();
        let got = r.redact(b"\xff xxabcdefghxx abcdefgh");
        assert_eq!(&*got, b"\xff [secret b] [secret a]");
    }
}
