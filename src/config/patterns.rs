//! A recipe's `[param_patterns]`: the form a string parameter's value must have (a CPU
//! list, a digest), checked when the recipe and each scenario's override are loaded, so
//! a malformed value is an error at its file:line:col rather than a failed run.

use std::collections::BTreeMap;

use regex::{Regex, RegexBuilder};
use toml::Spanned;

use super::{Source, raw};
use crate::diag::Diagnostic;
use crate::model::{ParamPattern, ParamValue};

/// Bounds like the regex parser's: a pattern is a check, never a heavy program.
const SIZE_LIMIT: usize = 1 << 20;
const NEST_LIMIT: u32 = 32;
const MAX_PATTERN_BYTES: usize = 2048;

/// The pattern, matching a value whole.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!("longer than {MAX_PATTERN_BYTES} bytes"));
    }
    let build = |p: &str| {
        RegexBuilder::new(p)
            .size_limit(SIZE_LIMIT)
            .dfa_size_limit(SIZE_LIMIT)
            .nest_limit(NEST_LIMIT)
            .build()
            .map_err(|e| e.to_string())
    };
    // Alone first, so an error's caret points into the pattern as written.
    build(pattern)?;
    build(&format!("^(?:{pattern})$"))
}

/// Checks a regex a board's `grep -E` will run: it compiles (bounded, like any pattern)
/// and uses nothing that POSIX ERE reads differently from the regex crate or lacks
/// (Perl classes, `(?` groups, lazy quantifiers), so `check` judges what runs.
pub fn ere(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("it is empty, and would match every line".into());
    }
    if value.contains(['\n', '\r']) {
        return Err("it holds a line break; a log line never does".into());
    }
    compile(value)?;
    let b = value.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() => {
                let c = b[i + 1] as char;
                if c.is_ascii_alphanumeric() {
                    return Err(format!(
                        "`\\{c}` at byte {i} is not POSIX ERE; write a bracket class like [0-9] or [[:space:]]"
                    ));
                }
                i += 2;
                continue;
            }
            b'(' if b.get(i + 1) == Some(&b'?') => {
                return Err(format!("`(?` at byte {i} is not POSIX ERE"));
            }
            b'?' | b'+' | b'*' | b'}' if matches!(b.get(i + 1), Some(b'?' | b'+')) && i > 0 => {
                return Err(format!(
                    "a lazy or possessive quantifier at byte {i} is not POSIX ERE"
                ));
            }
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// Checks `[param_patterns]` against the recipe's params, and each default against its
/// pattern.
pub(super) fn recipe(
    src: &Source,
    raw: &BTreeMap<Spanned<String>, Spanned<raw::ParamPattern>>,
    raw_params: &BTreeMap<Spanned<String>, Spanned<toml::Value>>,
    params: &BTreeMap<String, ParamValue>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<String, ParamPattern> {
    let mut out = BTreeMap::new();
    for (name, spec) in raw {
        let spec = spec.get_ref();
        match params.get(name.get_ref()) {
            Some(ParamValue::Str(_)) => {}
            Some(_) => {
                diags.push(src.at_value(
                    name,
                    format!(
                        "`{}` is not a string parameter: a pattern checks strings only",
                        name.get_ref()
                    ),
                ));
                continue;
            }
            None => {
                diags.push(
                    src.at_value(
                        name,
                        format!("no parameter `{}` in [params]", name.get_ref()),
                    )
                    .with_help("a pattern checks a parameter the recipe declares"),
                );
                continue;
            }
        }
        if let Err(e) = compile(spec.pattern.get_ref()) {
            diags.push(src.at_value(&spec.pattern, format!("bad pattern: {e}")));
            continue;
        }
        if let Err(e) = super::names::control_free(spec.expected.get_ref(), false) {
            diags.push(src.at_value(&spec.expected, format!("`expected` {e}")));
            continue;
        }
        let pattern = ParamPattern {
            pattern: spec.pattern.get_ref().clone(),
            expected: spec.expected.get_ref().clone(),
            regex: spec.regex.as_ref().is_some_and(|r| *r.get_ref()),
            private_file: spec.private_file.as_ref().is_some_and(|r| *r.get_ref()),
        };
        if let Some((_, value)) = raw_params
            .iter()
            .find(|(k, _)| k.get_ref() == name.get_ref())
        {
            check(src, name.get_ref(), &pattern, value, diags);
        }
        out.insert(name.get_ref().clone(), pattern);
    }
    out
}

/// Refuses a string value that does not match the parameter's pattern, at the value.
pub(super) fn check(
    src: &Source,
    name: &str,
    pattern: &ParamPattern,
    value: &Spanned<toml::Value>,
    diags: &mut Vec<Diagnostic>,
) {
    let toml::Value::String(s) = value.get_ref() else {
        return;
    };
    // Compiled when the recipe was loaded; a failure here is impossible, and then
    // nothing is refused rather than everything.
    let Ok(re) = compile(&pattern.pattern) else {
        return;
    };
    if pattern.regex
        && let Err(e) = ere(s)
    {
        diags.push(
            src.at_value(value, format!("parameter `{name}` = {s:?} is not a usable regex: {e}"))
                .with_help("it is matched by `grep -E` on the board: POSIX ERE, e.g. `Done \\(.*\\)! For help`"),
        );
        return;
    }
    if !re.is_match(s) {
        diags.push(
            src.at_value(
                value,
                format!("parameter `{name}` = {s:?}: expected {}", pattern.expected),
            )
            .with_help(format!(
                "the recipe's [param_patterns] wants it to match `{}`",
                pattern.pattern
            )),
        );
    } else if pattern.private_file
        && let Err(e) = crate::private_file::check_path(s)
    {
        diags.push(
            src.at_value(value, format!("parameter `{name}` = {s:?} is refused as a private file: {e}"))
                .with_help("benchpipe reads it as root: name a file owned by you in a directory only root or you can write, reached through no link"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::compile;

    /// A pattern matches a value whole, with `|` alternatives inside the whole.
    #[test]
    fn a_pattern_matches_the_whole_value() {
        let cpus = compile("([0-9]+(-[0-9]+)?)(,[0-9]+(-[0-9]+)?)*|").unwrap();
        for ok in ["", "4-7", "0,2", "0-1,4-7"] {
            assert!(cpus.is_match(ok), "{ok:?}");
        }
        for bad in ["4-x", "-4", "4-7;rm", "4,", " 4", "4\n"] {
            assert!(!cpus.is_match(bad), "{bad:?}");
        }
        assert!(compile("(").is_err());
        assert!(compile(&"a".repeat(3000)).is_err());
    }

    /// A log line's regex is checked as grep -E will read it.
    #[test]
    fn a_log_regex_is_refused_where_grep_e_would_read_it_otherwise() {
        for ok in [
            r"Done \(.*\)! For help",
            "start worker process",
            r"ready for connections\.",
            "a[0-9]+b",
        ] {
            assert_eq!(super::ere(ok), Ok(()), "{ok:?}");
        }
        for bad in ["", "(", r"\d+ ready", r"(?i)done", "a.*?b", "x\ny"] {
            assert!(super::ere(bad).is_err(), "{bad:?}");
        }
    }
}
