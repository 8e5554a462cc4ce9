//! Checks command templates when they are loaded, so a typo in `{{ dri }}` is an error
//! with a position now rather than a failed cell hours into a study. Each template is
//! parsed, then rendered with typed sample values under strict undefined and the same
//! bounds as at run time, and every string value's place in the resulting shell text is
//! checked (`shell`): quoting holds only for a bare word.

use std::collections::BTreeSet;
use std::ops::Range;

use toml::Spanned;

use super::Source;
use super::names;
use super::shell::{self, Context};
use crate::bench::{self, Vars};
use crate::diag::Diagnostic;

/// Variables every recipe template receives (see docs/FORMAT.md): the names apply sets
/// (`bench::TemplateVars`).
pub const BUILTINS: [&str; 12] = bench::TemplateVars::NAMES;

/// Names a recipe parameter cannot take: the builtins, and `params`, which once named
/// a map of all parameters and must not quietly mean something else now.
pub fn reserved(name: &str) -> bool {
    BUILTINS.contains(&name)
        || name == "params"
        || name == super::members::PEER_HOST
        || name == super::members::PEER_DIR
}

/// Sample values of the builtins, typed as at run time (`TemplateVars::sample`).
pub fn sample_builtins() -> Vars {
    let mut v = Vars::new();
    bench::TemplateVars::sample().set_on(&mut v);
    v
}

/// Checks that `template` parses, includes nothing and uses no variable outside
/// `allowed`. Returns the top-level variables it uses, or None when it is unusable.
pub fn check(
    src: &Source,
    template: &Spanned<String>,
    allowed: &BTreeSet<String>,
    diags: &mut Vec<Diagnostic>,
) -> Option<BTreeSet<String>> {
    let env = minijinja::Environment::new();
    let parsed = match env.template_from_str(template.get_ref()) {
        Ok(t) => t,
        Err(e) => {
            let what = e.detail().map_or_else(|| e.to_string(), str::to_string);
            let line = e
                .line()
                .map(|l| format!(" (line {l} of the template)"))
                .unwrap_or_default();
            diags.push(src.at_value(
                template,
                format!("bad command template{line}: {what}"),
            ).with_help("templates use minijinja syntax: `{{ name }}` inserts a value, shell-quoted"));
            return None;
        }
    };
    let mut ok = true;
    for (at, tag) in block_tags(template.get_ref()) {
        if matches!(tag.as_str(), "include" | "import" | "from" | "extends") {
            let span = file_span(src, template, at..at + 2);
            diags.push(
                src.at(span, format!("`{{% {tag} %}}`: a command template cannot include, import or extend other templates"))
                    .with_help("write the command out in full, or use a parameter"),
            );
            ok = false;
        }
    }
    let globals: BTreeSet<&str> = env.globals().map(|(name, _)| name).collect();
    let used: BTreeSet<String> = parsed
        .undeclared_variables(false)
        .into_iter()
        .filter(|v| !globals.contains(v.as_str()))
        .collect();
    for var in used.iter().filter(|v| !allowed.contains(*v)) {
        let help = if var == "params" {
            "parameters are variables of their own: write `{{ size }}`, not `{{ params.size }}`"
                .to_string()
        } else {
            names::help_for(var, allowed.iter().map(String::as_str), "variables")
        };
        let span = word_span(&src.text, template.span(), var);
        diags.push(
            src.at(span, format!("unknown template variable `{var}`"))
                .with_help(help),
        );
        ok = false;
    }
    ok.then_some(used)
}

/// Renders `template` with `vars` (sample values) and refuses a string value in any
/// shell context where its quoting does not hold. Returns the template expressions
/// whose string value begins a shell word, where a value starting with `-` is an option.
pub fn check_rendered(
    src: &Source,
    template: &Spanned<String>,
    vars: &Vars,
    diags: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let text = template.get_ref();
    let (out, spans) = match bench::render_marked(text, vars) {
        Ok(r) => r,
        Err(e) => {
            diags.push(
                src.at_value(
                    template,
                    format!("this template fails when rendered with sample values: {}", e.reason()),
                )
                .with_help("check every name and attribute: only the documented variables exist, and they have no attributes"),
            );
            return Vec::new();
        }
    };
    let mut word_starts = Vec::new();
    let mut reported = BTreeSet::new();
    for landing in shell::landings(&out) {
        let Some(span) = spans
            .iter()
            .find(|s| s.output_range().contains(&landing.offset))
        else {
            continue;
        };
        let expr = text
            .get(span.source_range())
            .unwrap_or_default()
            .trim()
            .to_string();
        if landing.context == Context::Bare {
            if landing.starts_word {
                word_starts.push(expr);
            }
            continue;
        }
        let open = text[..span.source_range().start.min(text.len())]
            .rfind("{{")
            .unwrap_or(0);
        if !reported.insert(open) {
            continue;
        }
        let at = file_span(src, template, open..open + 2);
        diags.push(
            src.at(
                at,
                format!(
                    "`{{{{ {expr} }}}}` is inside {}, where shell quoting of a value does not hold: a value like `x'; touch /tmp/p; '` would run as code",
                    landing.context.describe()
                ),
            )
            .with_help("write each `{{ ... }}` that gives a string as a bare word: benchpipe quotes it (`--file={{ dir }}/x`, not `\"{{ dir }}/x\"`); only numbers and booleans may go inside quotes, `$((...))`, backticks, `${...}`, heredocs or comments"),
        );
    }
    word_starts
}

/// `{% name` tags of a template source: (byte offset of `{%`, name).
fn block_tags(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("{%") {
        let at = from + found;
        let rest = text[at + 2..]
            .trim_start_matches(['-', '+', '~'])
            .trim_start();
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        out.push((at, name));
        from = at + 2;
    }
    out
}

/// The file span of a byte range of a template given as a TOML string: walks the
/// string literal's escapes so that the caret lands on the template text itself.
/// Falls back to the whole value when the literal cannot be followed.
pub fn file_span(src: &Source, template: &Spanned<String>, range: Range<usize>) -> Range<usize> {
    let whole = template.span();
    let map = literal_offsets(src.text.get(whole.clone()).unwrap_or_default());
    match map {
        Some(map) if map.len() == template.get_ref().len() + 1 => {
            let start = whole.start + map[range.start.min(map.len() - 1)];
            let end = whole.start + map[range.end.min(map.len() - 1)];
            start..end.max(start)
        }
        _ => whole,
    }
}

/// For a TOML string literal (with its quotes), the raw offset of each decoded byte
/// offset, plus one entry for the end.
fn literal_offsets(raw: &str) -> Option<Vec<usize>> {
    let (open, basic) = if raw.starts_with("\"\"\"") {
        (3, true)
    } else if raw.starts_with("'''") {
        (3, false)
    } else if raw.starts_with('"') {
        (1, true)
    } else if raw.starts_with('\'') {
        (1, false)
    } else {
        return None;
    };
    let body = raw.get(open..raw.len().checked_sub(open)?)?;
    let mut map = Vec::with_capacity(body.len() + 1);
    let mut i = 0;
    // A newline right after the opening of a multi-line string is not part of it.
    if open == 3 {
        if body.starts_with("\r\n") {
            i = 2;
        } else if body.starts_with('\n') {
            i = 1;
        }
    }
    let bytes = body.as_bytes();
    while i < body.len() {
        if basic && bytes[i] == b'\\' {
            let next = *bytes.get(i + 1)?;
            let (len, decoded) = match next {
                b'u' => (
                    6,
                    char::from_u32(u32::from_str_radix(body.get(i + 2..i + 6)?, 16).ok()?)?
                        .len_utf8(),
                ),
                b'U' => (
                    10,
                    char::from_u32(u32::from_str_radix(body.get(i + 2..i + 10)?, 16).ok()?)?
                        .len_utf8(),
                ),
                b'x' => (
                    4,
                    char::from_u32(u32::from_str_radix(body.get(i + 2..i + 4)?, 16).ok()?)?
                        .len_utf8(),
                ),
                b' ' | b'\t' | b'\n' | b'\r' => {
                    // A line-ending backslash: it and the whitespace after it vanish.
                    let mut j = i + 1;
                    while j < body.len() && matches!(bytes[j], b' ' | b'\t' | b'\n' | b'\r') {
                        j += 1;
                    }
                    i = j;
                    continue;
                }
                _ => (2, 1),
            };
            for _ in 0..decoded {
                map.push(open + i);
            }
            i += len;
        } else {
            map.push(open + i);
            i += 1;
        }
    }
    map.push(open + body.len());
    Some(map)
}

/// The first whole-word occurrence of `word` inside `span` of `text`, else all of `span`:
/// points the caret at the variable rather than at the whole command.
pub fn word_span(text: &str, span: std::ops::Range<usize>, word: &str) -> std::ops::Range<usize> {
    let Some(slice) = text.get(span.clone()) else {
        return span;
    };
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(found) = slice[from..].find(word) {
        let start = from + found;
        let end = start + word.len();
        let before_ok = !slice[..start].chars().next_back().is_some_and(is_ident);
        let after_ok = !slice[end..].chars().next().is_some_and(is_ident);
        if before_ok && after_ok {
            return span.start + start..span.start + end;
        }
        from = end;
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `check` allows exactly the names apply sets for a cell (`TemplateVars`), and
    /// renders with a value for each.
    #[test]
    fn the_builtins_check_allows_are_the_ones_apply_sets() {
        let mut allowed = BUILTINS.to_vec();
        allowed.sort_unstable();
        let mut applied = Vars::new();
        bench::TemplateVars::sample().set_on(&mut applied);
        assert_eq!(applied.names().collect::<Vec<_>>(), allowed);
        let samples = sample_builtins();
        assert_eq!(samples.names().collect::<Vec<_>>(), allowed);
    }

    #[test]
    fn literal_offsets_follow_escapes() {
        let raw = r#""a\"{{ x }}""#;
        let map = literal_offsets(raw).unwrap();
        // decoded: a"{{ x }}
        assert_eq!(map[2], 4);
        assert_eq!(&raw[map[2]..map[2] + 2], "{{");
        let raw = "'''\nab{{ x }}'''";
        let map = literal_offsets(raw).unwrap();
        assert_eq!(&raw[map[2]..map[2] + 2], "{{");
        let raw = "\"\\u00e9{{ x }}\"";
        let map = literal_offsets(raw).unwrap();
        assert_eq!(&raw[map[2]..map[2] + 2], "{{");
    }

    #[test]
    fn tags_are_found() {
        let tags = block_tags("a {%- include 'x' %} {% if y %}{% endif %}");
        let names: Vec<&str> = tags.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["include", "if", "endif"]);
    }
}
