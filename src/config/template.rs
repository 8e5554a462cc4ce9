//! Checks command templates when they are loaded, so a typo in `{{ dri }}` is an error
//! with a position now rather than a failed cell hours into a study.

use std::collections::BTreeSet;

use toml::Spanned;

use super::Source;
use super::diag::Diagnostic;
use super::names;

/// Variables every recipe template receives (see docs/FORMAT.md).
pub const BUILTINS: [&str; 7] = ["dir", "device", "workdir", "board", "host", "run", "params"];

/// Checks that `template` parses, and, when `allowed` is given, that it uses no variable
/// outside it. Returns the top-level variables it uses.
pub fn check(
    src: &Source,
    template: &Spanned<String>,
    allowed: Option<&BTreeSet<String>>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeSet<String> {
    let env = minijinja::Environment::new();
    let parsed = match env.template_from_str(template.get_ref()) {
        Ok(t) => t,
        Err(e) => {
            let what = e
                .detail()
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string());
            let line = e
                .line()
                .map(|l| format!(" (line {l} of the template)"))
                .unwrap_or_default();
            diags.push(src.at_value(
                template,
                format!("bad command template{line}: {what}"),
            ).with_help("templates use minijinja syntax: `{{ name }}` inserts a value, shell-quoted"));
            return BTreeSet::new();
        }
    };
    let globals: BTreeSet<&str> = env.globals().map(|(name, _)| name).collect();
    let used: BTreeSet<String> = parsed
        .undeclared_variables(false)
        .into_iter()
        .filter(|v| !globals.contains(v.as_str()))
        .collect();
    if let Some(allowed) = allowed {
        for var in used.iter().filter(|v| !allowed.contains(*v)) {
            let help = names::help_for(var, allowed.iter().map(String::as_str), "variables");
            let span = word_span(&src.text, template.span(), var);
            diags.push(
                src.at(span, format!("unknown template variable `{var}`"))
                    .with_help(help),
            );
        }
    }
    used
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
