//! Exporters: the report model rendered as Markdown and HTML (templates); `report.json`
//! (`json.rs`) and `results.csv` (`csv.rs`) implement the same trait.

use minijinja::{Environment, UndefinedBehavior, Value};

use super::Report;

/// Why a report could not be rendered. The templates are built in, so any of these is a
/// bug in benchpipe, not in the user's files.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A built-in template does not parse.
    #[error("{0}")]
    Template(minijinja::Error),
    /// A built-in template failed on this report.
    #[error("rendering {name}: {source}")]
    Render {
        name: &'static str,
        #[source]
        source: minijinja::Error,
    },
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// `report` stops with the exporter's text, as before exporters had a type.
impl From<ExportError> for crate::error::Error {
    fn from(e: ExportError) -> Self {
        crate::error::Error::Other(e.to_string())
    }
}

/// One output format of a report.
pub trait Exporter {
    /// The file name the report is written under, in the report's directory.
    fn file_name(&self) -> &'static str;
    fn render(&self, report: &Report) -> Result<Vec<u8>, ExportError>;
}

pub(super) fn render_template(
    name: &'static str,
    source: &str,
    report: &Report,
) -> Result<Vec<u8>, ExportError> {
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
    env.add_template(name, source)
        .map_err(ExportError::Template)?;
    let tmpl = env.get_template(name).map_err(ExportError::Template)?;
    let mut out = tmpl
        .render(Value::from(minijinja::value::Serde(report)))
        .map_err(|source| ExportError::Render { name, source })?;
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

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "index.md"
    }
    fn render(&self, report: &Report) -> Result<Vec<u8>, ExportError> {
        render_template("index.md", include_str!("templates/index.md"), report)
    }
}

impl Exporter for Html {
    fn file_name(&self) -> &'static str {
        "index.html"
    }
    fn render(&self, report: &Report) -> Result<Vec<u8>, ExportError> {
        render_template("index.html", include_str!("templates/index.html"), report)
    }
}

/// Every exporter, in the order files are written.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(Markdown),
        Box::new(Html),
        Box::new(super::Json),
        Box::new(super::Csv),
    ]
}
