//! Exporters: the report model rendered as Markdown, HTML (templates) and JSON.

use minijinja::{Environment, UndefinedBehavior, Value};

use super::Report;

/// One output format of a report.
pub trait Exporter {
    /// The file name the report is written under, in the report's directory.
    fn file_name(&self) -> &'static str;
    fn render(&self, report: &Report) -> Result<Vec<u8>, String>;
}

fn render_template(name: &str, source: &str, report: &Report) -> Result<Vec<u8>, String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    if name.ends_with(".md") {
        env.set_formatter(|out, _state, value| {
            let text = match value.as_str() {
                Some(s) => s.to_string(),
                None => value.to_string(),
            };
            out.write_str(&markdown_escape(&text))
                .map_err(|_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write"))
        });
    }
    env.add_template(name, source).map_err(|e| e.to_string())?;
    let tmpl = env.get_template(name).map_err(|e| e.to_string())?;
    let mut out = tmpl
        .render(Value::from(minijinja::value::Serde(report)))
        .map_err(|e| format!("rendering {name}: {e}"))?;
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out.into_bytes())
}

/// Makes a value inert in Markdown: no raw HTML or entities (`<`, `>`, `&`), no
/// table cell break (`|`), no code span, emphasis or link (`` ` ``, `*`, `[`, `]`), and
/// no control characters. Newlines stay, for multi-line descriptions.
pub fn markdown_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '|' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push('\n'),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

pub struct Markdown;
pub struct Html;
pub struct Json;

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "index.md"
    }
    fn render(&self, report: &Report) -> Result<Vec<u8>, String> {
        render_template("index.md", include_str!("templates/index.md"), report)
    }
}

impl Exporter for Html {
    fn file_name(&self) -> &'static str {
        "index.html"
    }
    fn render(&self, report: &Report) -> Result<Vec<u8>, String> {
        render_template("index.html", include_str!("templates/index.html"), report)
    }
}

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "report.json"
    }
    fn render(&self, report: &Report) -> Result<Vec<u8>, String> {
        let mut b = serde_json::to_vec_pretty(report).map_err(|e| e.to_string())?;
        b.push(b'\n');
        Ok(b)
    }
}

/// Every exporter, in the order files are written.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![Box::new(Markdown), Box::new(Html), Box::new(Json)]
}
