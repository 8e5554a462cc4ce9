//! cloud-init's MIME multipart user-data as the lab's boot step reads it: the
//! `text/cloud-config` parts merged in order under each part's `Merge-Type`, the way
//! cloud-init merges them; any other part (a script, boothook, `#include`, part handler,
//! nested multipart, an encoded body) refused with a log line. Pure and bounded: at most
//! `MAX_PARTS` parts of `MAX_HEADERS` header lines each, inside a file `declare` already
//! bounded; values are moved, never copied, so the merge holds no more than its parts.

use super::declare::Log;
use serde_norway::{Mapping, Value};

/// The most parts read; the rest are refused with one log line.
pub const MAX_PARTS: usize = 16;
/// The most header lines (folded ones counted) of the message or of one part.
pub const MAX_HEADERS: usize = 32;
/// RFC 5322's longest line, and RFC 2046's longest boundary.
const MAX_HEADER_LINE: usize = 998;
const MAX_BOUNDARY: usize = 70;

/// Whether user-data is a MIME message: its first line is a header cloud-init's MIME
/// reading starts from.
pub fn is_mime(t: &str) -> bool {
    let first = t.lines().next().unwrap_or("").to_ascii_lowercase();
    first.starts_with("content-type:") || first.starts_with("mime-version:")
}

/// How one part merges into what the parts before it declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Merge {
    /// `dict(replace)`: a key already set takes the part's value; `no_replace` keeps it.
    dict_replace: bool,
    /// `dict(recurse_list)`: a list already set is merged by `list`, not as a value.
    recurse_list: bool,
    list: ListMerge,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ListMerge {
    Replace,
    NoReplace,
    Append,
    Prepend,
}

/// cloud-init's default for a cloud-config part without `Merge-Type`:
/// `dict(replace)+list()+str()`.
const DEFAULT_MERGE: Merge = Merge {
    dict_replace: true,
    recurse_list: false,
    list: ListMerge::Replace,
};

/// A `Merge-Type` (or `merge_how`) string such as
/// `list(append)+dict(no_replace,recurse_list)+str()`; `None` for one the lab does not
/// model (the part is then refused: merging it otherwise would declare what cloud-init
/// would not).
fn merge_type(s: &str) -> Option<Merge> {
    let mut m = Merge {
        dict_replace: false,
        recurse_list: false,
        list: ListMerge::Replace,
    };
    for item in s.split('+').map(str::trim).take(8) {
        let (name, opts) = item.strip_suffix(')')?.split_once('(')?;
        let opts = opts.split(',').map(str::trim).filter(|o| !o.is_empty());
        match name.trim() {
            "dict" => {
                for o in opts {
                    match o {
                        "replace" => m.dict_replace = true,
                        "no_replace" => m.dict_replace = false,
                        "recurse_list" | "recurse_array" => m.recurse_list = true,
                        "recurse_dict" | "recurse_str" => {}
                        _ => return None,
                    }
                }
            }
            "list" => {
                for o in opts {
                    m.list = match o {
                        "append" => ListMerge::Append,
                        "prepend" => ListMerge::Prepend,
                        "replace" => ListMerge::Replace,
                        "no_replace" => ListMerge::NoReplace,
                        "recurse_dict" | "recurse_list" | "recurse_array" | "recurse_str" => m.list,
                        _ => return None,
                    };
                }
            }
            "str" => {}
            _ => return None,
        }
    }
    Some(m)
}

/// Merges `new` into `old` as cloud-init's dict merger does: a new key is added, a
/// mapping merged into a mapping key by key, a list into a list by `list` when
/// `recurse_list`, anything else replaced only under `dict(replace)`. `depth` bounds the
/// recursion (YAML nesting is bounded by the parser too).
fn merge_into(old: &mut Mapping, new: Mapping, how: Merge, depth: usize) {
    for (k, v) in new {
        let Some(slot) = old.get_mut(&k) else {
            old.insert(k, v);
            continue;
        };
        match (slot, v) {
            (Value::Mapping(o), Value::Mapping(n)) if depth < 32 => {
                merge_into(o, n, how, depth + 1);
            }
            (Value::Sequence(o), Value::Sequence(n)) if how.recurse_list => match how.list {
                ListMerge::Append => o.extend(n),
                ListMerge::Prepend => {
                    let mut n = n;
                    n.append(o);
                    *o = n;
                }
                ListMerge::Replace => *o = n,
                ListMerge::NoReplace => {}
            },
            (slot, v) => {
                if how.dict_replace {
                    *slot = v;
                }
            }
        }
    }
}

/// A header's value by lower-case name.
fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Header lines up to the first empty line, folded lines joined; `None` (logged) when
/// there are too many or one is too long.
fn headers<'t>(
    lines: &mut impl Iterator<Item = &'t str>,
    at: &str,
    log: &mut Log,
) -> Option<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (n, line) in lines.by_ref().enumerate() {
        if line.is_empty() {
            return Some(out);
        }
        if n >= MAX_HEADERS || line.len() > MAX_HEADER_LINE {
            log.say(format!(
                "{at}: more than {MAX_HEADERS} header lines or one over {MAX_HEADER_LINE} bytes: refused"
            ));
            return None;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, v)) = out.last_mut() {
                v.push(' ');
                v.push_str(line.trim());
            } else {
                log.say(format!("{at}: a folded line with no header: refused"));
                return None;
            }
        } else if let Some((name, value)) = line.split_once(':') {
            out.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        } else {
            log.say(format!(
                "{at}: a header line that is no `Name: value`: refused"
            ));
            return None;
        }
    }
    Some(out)
}

/// A Content-Type's lower-case media type and one parameter's value, quotes removed.
fn media_type(ct: &str) -> String {
    ct.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

fn parameter(ct: &str, name: &str) -> Option<String> {
    ct.split(';').skip(1).find_map(|p| {
        let (n, v) = p.split_once('=')?;
        (n.trim().eq_ignore_ascii_case(name)).then(|| {
            let v = v.trim();
            v.strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v)
                .to_string()
        })
    })
}

/// RFC 2046's boundary: 1 to 70 of its characters, not ending in a space.
fn boundary_ok(b: &str) -> bool {
    (1..=MAX_BOUNDARY).contains(&b.len())
        && !b.ends_with(' ')
        && b.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"'()+_,-./:=? ".contains(&c))
}

/// The merged cloud-config of a multipart `user-data`, or `None` (logged) when it holds
/// none the lab takes. Each refused part is named by its number and media type.
pub fn merged(t: &str, log: &mut Log) -> Option<Value> {
    let mut lines = t.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let top = headers(&mut lines, "user-data", log)?;
    let ct = header(&top, "content-type").unwrap_or("");
    if media_type(ct) != "multipart/mixed" {
        log.say(format!(
            "user-data: a MIME message of type {:?}, not multipart/mixed: refused",
            crate::shown::one_line(&media_type(ct))
                .chars()
                .take(60)
                .collect::<String>()
        ));
        return None;
    }
    let Some(boundary) = parameter(ct, "boundary").filter(|b| boundary_ok(b)) else {
        log.say("user-data: multipart/mixed without a boundary RFC 2046 allows: refused");
        return None;
    };
    let (open, close) = (format!("--{boundary}"), format!("--{boundary}--"));
    // Parts as line ranges; the preamble before the first delimiter and the epilogue
    // after the last are ignored, as in every MIME reader.
    let mut parts: Vec<Vec<&str>> = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    let mut closed = false;
    let mut dropped = 0usize;
    for line in lines {
        let bare = line.trim_end_matches([' ', '\t']);
        if bare == close {
            closed = true;
            break;
        }
        if bare == open {
            if let Some(p) = current.take() {
                parts.push(p);
            }
            if parts.len() >= MAX_PARTS {
                dropped += 1;
                continue;
            }
            current = Some(Vec::new());
        } else if let Some(p) = current.as_mut() {
            p.push(line);
        }
    }
    if let Some(p) = current.take() {
        parts.push(p);
    }
    if !closed {
        log.say("user-data: the multipart has no closing boundary: read to its end");
    }
    if dropped > 0 {
        log.say(format!(
            "user-data: more than {MAX_PARTS} parts: {dropped} refused"
        ));
    }
    let mut config = Mapping::new();
    let mut taken = 0usize;
    for (i, part) in parts.into_iter().enumerate() {
        if let Some(m) = part_config(i + 1, &part, log) {
            let (how, body) = m;
            merge_into(&mut config, body, how, 0);
            taken += 1;
        }
    }
    if taken == 0 {
        log.say("user-data: no text/cloud-config part the lab takes: nothing declared");
        return None;
    }
    log.say(format!(
        "user-data: multipart: {taken} text/cloud-config part(s) merged"
    ));
    Some(Value::Mapping(config))
}

/// One part's cloud-config and how it merges, or `None` with its refusal logged.
fn part_config(n: usize, part: &[&str], log: &mut Log) -> Option<(Merge, Mapping)> {
    let at = format!("user-data part {n}");
    let mut lines = part.iter().copied();
    let hs = headers(&mut lines, &at, log)?;
    let body: Vec<&str> = lines.collect();
    let body = body.join("\n");
    let ct = header(&hs, "content-type").map(media_type);
    let first = body.lines().next().map(str::trim_end);
    let cloud_config = match ct.as_deref() {
        Some("text/cloud-config") => true,
        // cloud-init tells an untyped or text/plain part by how it starts.
        None | Some("text/plain") => first == Some("#cloud-config"),
        _ => false,
    };
    if !cloud_config {
        let what = ct.unwrap_or_else(|| "text/plain".into());
        log.say(format!(
            "{at}: {} is not text/cloud-config (a script, boothook, include, part handler or \
             nested multipart): refused; the lab runs nothing from the image",
            crate::shown::one_line(&what)
                .chars()
                .take(60)
                .collect::<String>()
        ));
        return None;
    }
    match header(&hs, "content-transfer-encoding").map(str::to_ascii_lowercase) {
        None => {}
        Some(e) if ["7bit", "8bit", "binary"].contains(&e.as_str()) => {}
        Some(_) => {
            log.say(format!(
                "{at}: an encoded body (base64, quoted-printable): refused; the lab reads plain text parts"
            ));
            return None;
        }
    }
    let doc: Value = match serde_norway::from_str(&body) {
        Ok(v) => v,
        Err(e) => {
            log.say(format!("{at}: not YAML the lab reads: {e}: refused"));
            return None;
        }
    };
    let mut body = match doc {
        Value::Mapping(m) => m,
        Value::Null => Mapping::new(),
        _ => {
            log.say(format!("{at}: not a mapping: refused"));
            return None;
        }
    };
    let declared = body
        .remove("merge_how")
        .or_else(|| body.remove("merge_type"));
    let how = match (header(&hs, "merge-type"), declared) {
        (_, Some(Value::String(s))) => merge_type(&s),
        (_, Some(_)) => None,
        (Some(h), None) => merge_type(h),
        (None, None) => Some(DEFAULT_MERGE),
    };
    let Some(how) = how else {
        log.say(format!(
            "{at}: a merge type the lab does not model: refused"
        ));
        return None;
    };
    Some((how, body))
}

#[cfg(test)]
#[path = "multipart_tests.rs"]
mod tests;
