//! The parts of a scenario's `[images.NAME]` that the image library reads: the source
//! URL's scheme and the `[images.NAME.expect]` table, validated with file:line:col.

use toml::Spanned;

use super::{Source, names, raw, units};
use crate::diag::Diagnostic;
use crate::model::Expectations;

/// The schemes `image::fetch` can read.
const SCHEMES: [&str; 3] = ["https://", "http://", "file://"];

/// `uname -m` spellings people reach for that `uname -m` never prints, with the one it does.
const NOT_UNAME: [(&str, &str); 6] = [
    ("arm64", "aarch64"),
    ("amd64", "x86_64"),
    ("x64", "x86_64"),
    ("armhf", "armv7l"),
    ("armel", "armv6l"),
    ("i386", "i686"),
];

/// The longest value benchpipe compares: os-release values are short lines.
const MAX_VALUE: usize = 200;

/// `min_rate = "100kB/s"`: for an http(s) `url` only (`url` is `None` for another
/// source), within `units::RATE_RANGE`.
pub(super) fn min_rate(
    src: &Source,
    url: Option<&Spanned<String>>,
    rate: Option<&Spanned<String>>,
    diags: &mut Vec<Diagnostic>,
) -> Option<u64> {
    let rate = rate?;
    let http = url.is_some_and(|u| {
        let lower = u.get_ref().to_ascii_lowercase();
        lower.starts_with("http://") || lower.starts_with("https://")
    });
    if !http {
        diags.push(
            src.at_value(
                rate,
                "`min_rate` applies only to an http:// or https:// `url`",
            )
            .with_help("a local file (`path` or `file://`) is not downloaded: remove `min_rate`"),
        );
        return None;
    }
    units::parse_rate(rate.get_ref())
        .map_err(|e| diags.push(src.at_value(rate, e)))
        .ok()
}

/// Refuses a url no fetcher reads, before anything is downloaded.
pub(super) fn check_url(src: &Source, url: &Spanned<String>, diags: &mut Vec<Diagnostic>) {
    let u = url.get_ref();
    if let Err(e) = names::control_free(u, false) {
        diags.push(src.at_value(url, format!("bad image url: {e}")));
        return;
    }
    let lower = u.to_ascii_lowercase();
    match SCHEMES.iter().find(|s| lower.starts_with(**s)) {
        None => diags.push(
            src.at_value(
                url,
                format!(
                    "unsupported image url `{}`: expected http://, https:// or file://",
                    crate::model::redact_url(u)
                ),
            )
            .with_help("a local file can also be given as `path = \"...\"`"),
        ),
        Some(s) if lower.len() == s.len() => diags.push(src.at_value(
            url,
            format!("image url `{}` names no file", crate::model::redact_url(u)),
        )),
        Some(_) if u.chars().any(char::is_whitespace) => diags.push(
            src.at_value(
                url,
                format!(
                    "image url `{}` contains a space",
                    crate::model::redact_url(u)
                ),
            )
            .with_help("write it percent-encoded, as `%20`"),
        ),
        Some(_) => {}
    }
}

/// `[images.NAME.expect]`: each os-release key upper case as os-release(5) spells them,
/// each value a short one-line text, `uname_m` a word `uname -m` could print.
pub(super) fn expectations(
    src: &Source,
    raw: Option<&raw::Expect>,
    diags: &mut Vec<Diagnostic>,
) -> Expectations {
    let Some(raw) = raw else {
        return Expectations::default();
    };
    let mut out = Expectations::default();
    for (key, value) in &raw.os_release {
        let k = key.get_ref();
        let good_key = k.starts_with(|c: char| c.is_ascii_uppercase())
            && k.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if !good_key {
            let upper = k.to_ascii_uppercase();
            let mut d = src.at_value(
                key,
                format!("bad os_release key `{k}`: os-release names are upper-case letters, digits and `_`, starting with a letter"),
            );
            if upper != *k && !upper.is_empty() {
                d = d.with_help(format!("write `{upper}`"));
            }
            diags.push(d);
            continue;
        }
        if let Some(why) = bad_value(value.get_ref()) {
            diags.push(src.at_value(value, format!("bad expected os_release.{k}: {why}")));
            continue;
        }
        out.os_release.insert(k.clone(), value.get_ref().clone());
    }
    if let Some(m) = &raw.uname_m
        && uname_word(src, m, "expected uname_m", diags)
    {
        out.uname_m = Some(m.get_ref().clone());
    }
    out
}

/// Checks a word `uname -m` prints (an image's `uname_m`, one of a board's `arch`);
/// `what` names the key in messages. Returns whether it is one.
pub(super) fn uname_word(
    src: &Source,
    m: &Spanned<String>,
    what: &str,
    diags: &mut Vec<Diagnostic>,
) -> bool {
    let v = m.get_ref();
    if let Some(why) = bad_value(v) {
        diags.push(src.at_value(m, format!("bad {what}: {why}")));
    } else if let Some((_, real)) = NOT_UNAME.iter().find(|(alias, _)| alias == v) {
        diags.push(
            src.at_value(m, format!("`{v}` is not what `uname -m` prints"))
                .with_help(format!("write `{real}` (`{v}` is a package architecture)")),
        );
    } else if !v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        diags.push(src.at_value(
            m,
            format!("bad {what} `{v}`: expected one word like `aarch64`, `armv7l` or `x86_64`"),
        ));
    } else {
        return true;
    }
    false
}

fn bad_value(v: &str) -> Option<String> {
    if v.is_empty() {
        return Some("empty; an empty expectation checks nothing".into());
    }
    if v.len() > MAX_VALUE {
        return Some(format!("{} bytes long; at most {MAX_VALUE}", v.len()));
    }
    names::control_free(v, false).err()
}
