//! Exporters: the report model rendered as Markdown and HTML (templates); `report.json`
//! (`json.rs`) and `results.csv` (`csv.rs`) implement the same trait.
//!
//! The templates are embedded in the binary. A workspace may override either with a
//! file of its own (`reports/templates/index.html`, `index.md`, read by the caller:
//! nothing here does I/O); such a template is the user's input, so what goes wrong in it
//! is a diagnostic at its file and line (exit 2), and it renders with bounded fuel.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use minijinja::{Environment, UndefinedBehavior, Value};

use super::Report;
use crate::diag::{Diagnostic, Diagnostics};

/// Where a workspace's override templates are, relative to its root.
pub const TEMPLATE_DIR: &str = "reports/templates";
/// The names a template may have there: the Markdown and the HTML report.
pub const TEMPLATE_NAMES: [&str; 2] = ["index.md", "index.html"];
/// The most bytes an override template may have.
pub const TEMPLATE_MAX_BYTES: usize = 1 << 20;
/// The fuel an override template renders with (minijinja counts instructions): the
/// embedded templates as overrides render the 10,000-cell benchmark store's report
/// within it (`benches/report.rs`), and it runs out after about two seconds of a loop,
/// so a template that would loop for ages stops with a diagnostic instead.
pub const TEMPLATE_FUEL: u64 = 100_000_000;
/// The most bytes an override template may write. Fuel counts the work, not what is
/// written: a 90 MB string written in a loop of a few thousand steps was terabytes.
pub const TEMPLATE_MAX_OUTPUT: u64 = 1 << 30;

/// Why a report could not be rendered. An embedded template failing is a bug in
/// benchpipe; an override's failure is the user's (`Override`, at its file and line).
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
    /// A workspace's template does not parse or failed on this report.
    #[error("{0}")]
    Override(Box<Diagnostic>),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// The file being written failed (`Exporter::write_to`).
    #[error("{0}")]
    Write(#[from] std::io::Error),
}

/// `report` stops with the exporter's text, as before exporters had a type; an
/// override's mistake is bad input, like any other file's.
impl From<ExportError> for crate::error::Error {
    fn from(e: ExportError) -> Self {
        match e {
            ExportError::Override(d) => crate::error::Error::Config(Diagnostics(vec![*d])),
            e => crate::error::Error::Other(e.to_string()),
        }
    }
}

/// One report template: the embedded one, or a workspace's override.
#[derive(Clone, Debug)]
pub struct Template {
    /// `index.md` or `index.html`: the output file, and what decides escaping
    /// (minijinja's HTML autoescape for `.html`, `markdown_escape` for `.md`).
    pub name: &'static str,
    pub source: Cow<'static, str>,
    /// The override's file as diagnostics name it (`reports/templates/index.html` under
    /// the workspace root); None for the embedded template.
    pub file: Option<PathBuf>,
}

/// The templates a report renders with.
#[derive(Clone, Debug)]
pub struct Templates {
    pub markdown: Template,
    pub html: Template,
}

impl Templates {
    pub fn embedded() -> Templates {
        Templates {
            markdown: Template {
                name: "index.md",
                source: Cow::Borrowed(include_str!("templates/index.md")),
                file: None,
            },
            html: Template {
                name: "index.html",
                source: Cow::Borrowed(include_str!("templates/index.html")),
                file: None,
            },
        }
    }

    /// The template named `name` (one of `TEMPLATE_NAMES`) replaced by `source` from
    /// `file`: a diagnostic when it is too large or does not parse.
    pub fn with_override(
        mut self,
        name: &str,
        file: PathBuf,
        source: String,
    ) -> Result<Templates, ExportError> {
        if source.len() > TEMPLATE_MAX_BYTES {
            return Err(ExportError::Override(Box::new(Diagnostic::whole_file(
                file,
                format!(
                    "a report template may have at most {TEMPLATE_MAX_BYTES} bytes; this one has {}",
                    source.len()
                ),
            ))));
        }
        let slot = match name {
            "index.md" => &mut self.markdown,
            "index.html" => &mut self.html,
            other => unreachable!("no report template is called {other}"),
        };
        slot.source = Cow::Owned(source);
        slot.file = Some(file);
        environment(slot)?;
        Ok(self)
    }
}

/// A template's environment, with the template added: strict about undefined values,
/// Markdown-escaping for `.md`, fuel for an override.
fn environment(t: &Template) -> Result<Environment<'_>, ExportError> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    if t.name.ends_with(".md") {
        env.set_formatter(|out, _state, value| {
            // Strings (nearly every value) are escaped as they are written; a safe one
            // (`|safe`, the rows `markdown_rows` escaped) is written as it is.
            let written = match value.as_str() {
                _ if let Some(chart) = super::ChartMarkup::of(value) => out.write_str(chart),
                Some(s) if value.is_safe() => out.write_str(s),
                Some(s) => MarkdownEscaped(s).write_with(|p| out.write_str(p)),
                None => MarkdownEscaped(&value.to_string()).write_with(|p| out.write_str(p)),
            };
            written.map_err(|_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write"))
        });
    }
    if t.name.ends_with(".html") {
        env.set_formatter(|out, state, value| {
            let write_failure =
                |_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write");
            // Text and fractional numbers (nearly every value of a page) are written
            // here as minijinja's own formatter writes them, without its `write!`s: a
            // big report writes a hundred thousand of them. Anything else, and every
            // value where auto-escaping is not HTML, goes to minijinja's.
            // A chart is markup benchpipe escaped as it drew it: written as it is.
            if let Some(chart) = super::ChartMarkup::of(value) {
                return out.write_str(chart).map_err(write_failure);
            }
            let html = matches!(state.auto_escape(), minijinja::AutoEscape::Html);
            if html && !value.is_safe() {
                if let Some(s) = value.as_str() {
                    return html_escaped(s, |p| out.write_str(p)).map_err(write_failure);
                }
                if value.is_number()
                    && !value.is_integer()
                    && let Ok(x) = f64::try_from(value.clone())
                {
                    return write_float(x, |p| {
                        html_escaped(p, |p| out.write_str(p)).map_err(write_failure)
                    });
                }
            }
            minijinja::escape_formatter(out, state, value)
        });
    }
    super::rows::add_filters(&mut env);
    super::lists::add_filters(&mut env);
    if t.file.is_some() {
        env.set_fuel(Some(TEMPLATE_FUEL));
    }
    env.add_template(t.name, &t.source)
        .map_err(|e| failure(t, e, None))?;
    Ok(env)
}

/// A float as minijinja writes it: as std's `{}` does, with `.0` added to a whole
/// number (`push_number` writes std's digits, without the formatter), and a number that
/// is not finite as minijinja's `Display` has it. Handed to `write` unescaped.
pub(super) fn write_float<E>(x: f64, write: impl FnOnce(&str) -> Result<(), E>) -> Result<(), E> {
    if !x.is_finite() {
        return write(&Value::from(x).to_string());
    }
    let mut text = String::with_capacity(24);
    super::format::push_number(&mut text, x);
    if !text.contains('.') {
        text.push_str(".0");
    }
    write(&text)
}

/// A template's error as the caller reports it: an override's at its file, line and
/// column (the failing expression underlined where minijinja knows it).
fn failure(t: &Template, e: minijinja::Error, rendering: Option<&'static str>) -> ExportError {
    let Some(file) = &t.file else {
        return match rendering {
            Some(name) => ExportError::Render { name, source: e },
            None => ExportError::Template(e),
        };
    };
    let what = match e.detail() {
        Some(d) => format!("{}: {d}", e.kind()),
        None => e.kind().to_string(),
    };
    let message = format!(
        "report template {}: {what}",
        if rendering.is_some() {
            "failed"
        } else {
            "does not parse"
        }
    );
    let span = e.range().or_else(|| {
        let line = e.line()?;
        let start: usize = t
            .source
            .split_inclusive('\n')
            .take(line - 1)
            .map(str::len)
            .sum();
        Some(start..start)
    });
    let d = match span {
        Some(span) => Diagnostic::at(file.clone(), &t.source, span, message),
        None => Diagnostic::whole_file(file.clone(), message),
    }
    .with_help(
        "the template context is documented in docs/TEMPLATES.md; \
         delete the file to use the embedded template",
    );
    ExportError::Override(Box::new(d))
}

/// The templates' context: the report as minijinja values, made from its serde form
/// (the context `docs/TEMPLATES.md` documents).
fn context(report: &Report) -> Value {
    Value::from(minijinja::value::Serde(report))
}

/// Renders `t` with `context`, a report's `context`, written to `out` as it renders;
/// the text ends with a newline.
fn write_context(
    t: &Template,
    context: Value,
    out: &mut dyn std::io::Write,
) -> Result<(), ExportError> {
    use std::io::Write as _;
    let env = environment(t)?;
    let tmpl = env.get_template(t.name).map_err(|e| failure(t, e, None))?;
    let mut out = LastByte {
        out,
        last: None,
        failed: None,
        room: t.file.as_ref().map(|_| TEMPLATE_MAX_OUTPUT),
        over: false,
    };
    // minijinja writes piece by piece: buffered here, so that `out` sees big writes.
    let mut buffered = std::io::BufWriter::with_capacity(1 << 16, &mut out);
    let rendered = tmpl.render_captured_to(context, &mut buffered).map(drop);
    let flushed = buffered.flush();
    drop(buffered);
    if out.over {
        let d = Diagnostic::whole_file(
            t.file.clone().unwrap_or_default(),
            format!("report template failed: it writes more than {TEMPLATE_MAX_OUTPUT} bytes"),
        );
        return Err(ExportError::Override(Box::new(d)));
    }
    // A write that failed is the file's error, not the template's.
    if let Some(e) = out.failed.take() {
        return Err(ExportError::Write(e));
    }
    flushed?;
    rendered.map_err(|e| failure(t, e, Some(t.name)))?;
    if out.last != Some(b'\n') {
        out.out.write_all(b"\n")?;
    }
    Ok(())
}

/// A writer that remembers the last byte written through it, and the first error; with
/// `room`, it takes that many bytes more, and none once a write would go `over` it.
struct LastByte<'w> {
    out: &'w mut dyn std::io::Write,
    last: Option<u8>,
    failed: Option<std::io::Error>,
    room: Option<u64>,
    over: bool,
}

impl std::io::Write for LastByte<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(room) = &mut self.room {
            if self.over || buf.len() as u64 > *room {
                self.over = true;
                return Err(std::io::Error::other("over TEMPLATE_MAX_OUTPUT"));
            }
            *room -= buf.len() as u64;
        }
        match self.out.write(buf) {
            Ok(n) => {
                if n > 0 {
                    self.last = Some(buf[n - 1]);
                }
                Ok(n)
            }
            Err(e) => {
                let kind = e.kind();
                self.failed.get_or_insert(e);
                Err(kind.into())
            }
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Renders an embedded template's `source` (tests render variants of it).
#[cfg(test)]
pub(super) fn render_template(
    name: &'static str,
    source: impl Into<Cow<'static, str>>,
    report: &Report,
) -> Result<Vec<u8>, ExportError> {
    Exporter::render(
        &Template {
            name,
            source: source.into(),
            file: None,
        },
        report,
    )
}

/// Checks that a filter (`filtered`, a template using it) writes for `report` byte for
/// byte what the template loop it replaced (`looped`) wrote, both as `name`.
#[cfg(test)]
pub(super) fn assert_filter_writes_the_loop(
    name: &'static str,
    looped: &str,
    filtered: &str,
    report: &Report,
    case: &str,
) {
    let a = render_template(name, looped.to_string(), report).unwrap();
    let b = render_template(name, filtered.to_string(), report).unwrap();
    assert_eq!(
        String::from_utf8(b).unwrap(),
        String::from_utf8(a).unwrap(),
        "{case}"
    );
}

/// One output format of a report.
pub trait Exporter {
    /// The file name the report is written under, in the report's directory.
    fn file_name(&self) -> &str;
    /// Writes the report to `out` as it renders, so that a big report's file is never
    /// held whole in memory.
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), ExportError>;
    /// Its rough share of the work when the exporters render one report side by
    /// side (larger takes longer): the largest start first, so that the cores finish
    /// together.
    fn weight(&self) -> u32 {
        1
    }
    /// The bytes `write_to` writes.
    fn render(&self, report: &Report) -> Result<Vec<u8>, ExportError> {
        let mut out = Vec::new();
        self.write_to(report, &mut out)?;
        Ok(out)
    }
}

/// Makes a value inert in Markdown: no raw HTML or entities (`<`, `>`, `&`), no
/// table cell break (`|`), no code span, emphasis or link (`` ` ``, `*`, `[`, `]`), and
/// no control characters (each as `shown::in_document` writes it: newlines stay, for
/// multi-line descriptions; a stored text comes through `shown` first, so it holds none).
pub fn markdown_escape(text: &str) -> String {
    MarkdownEscaped(text).to_string()
}

/// `text` HTML-escaped as minijinja's auto-escaping does (`&`, `<`, `>`, `"`, `'` and
/// `/`, as `minijinja::HtmlEscape` writes them), and every control character as
/// `shown::in_document` writes it (a page is read in terminals too, where a raw ESC or
/// BEL acts), handed to `write` in pieces.
pub(super) fn html_escaped<E>(
    text: &str,
    mut write: impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let replacement = |c: char| match c {
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '&' => Some("&amp;"),
        '"' => Some("&quot;"),
        '\'' => Some("&#x27;"),
        '/' => Some("&#x2f;"),
        c => crate::shown::in_document(c),
    };
    // Most values (numbers, labels) have nothing to escape: found by a scan of their
    // bytes (every escaped character is ASCII, or a C1 control) and written whole.
    let special = |b: u8| b.is_ascii() && replacement(char::from(b)).is_some();
    let Some(at) = super::chart::first_of(text, special) else {
        return write(text);
    };
    write(&text[..at])?;
    super::chart::write_replaced(&text[at..], replacement, write)
}

/// `markdown_escape` as it is written: the Markdown template's every value goes through
/// it, so text needing no escape (most of it) is written whole, without a copy.
pub(super) struct MarkdownEscaped<'a>(pub &'a str);

/// Whether a byte is one `MarkdownEscaped` changes: an escaped character, a C0 control
/// but the newline, or DEL (C1 controls are found by `first_of`, which passes over `±`).
fn markdown_special(b: u8) -> bool {
    (b < 0x20 && b != b'\n')
        || matches!(
            b,
            b'<' | b'>' | b'&' | b'\\' | b'`' | b'*' | b'|' | b'[' | b']' | 0x7f
        )
}

impl MarkdownEscaped<'_> {
    /// Hands the escaped text to `write` in pieces: straight to a template's output,
    /// without `write!`'s formatting machinery (a big report writes a hundred thousand
    /// values).
    pub(super) fn write_with<E>(
        &self,
        mut write: impl FnMut(&str) -> Result<(), E>,
    ) -> Result<(), E> {
        let text = self.0;
        let Some(at) = super::chart::first_of(text, markdown_special) else {
            return write(text);
        };
        write(&text[..at])?;
        let replacement = |c: char| match c {
            '<' => Some("&lt;"),
            '>' => Some("&gt;"),
            '&' => Some("&amp;"),
            '\\' => Some("\\\\"),
            '`' => Some("\\`"),
            '*' => Some("\\*"),
            '|' => Some("\\|"),
            '[' => Some("\\["),
            ']' => Some("\\]"),
            c => crate::shown::in_document(c),
        };
        super::chart::write_replaced(&text[at..], replacement, write)
    }
}

impl std::fmt::Display for MarkdownEscaped<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write_with(|s| f.write_str(s))
    }
}

pub struct Markdown;
pub struct Html;

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "index.md"
    }
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), ExportError> {
        write_context(&Templates::embedded().markdown, context(report), out)
    }
}

impl Exporter for Html {
    fn file_name(&self) -> &'static str {
        "index.html"
    }
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), ExportError> {
        write_context(&Templates::embedded().html, context(report), out)
    }
}

/// A template's report: the embedded one or an override.
impl Exporter for Template {
    fn file_name(&self) -> &str {
        self.name
    }
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), ExportError> {
        write_context(self, context(report), out)
    }
}

/// Every exporter, in the order files are written, with the embedded templates.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    exporters_with(&Templates::embedded())
}

/// Every exporter, with these templates.
pub fn exporters_with(templates: &Templates) -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(templates.markdown.clone()),
        Box::new(templates.html.clone()),
        Box::new(super::Json),
        Box::new(super::Csv),
    ]
}

impl Templates {
    /// Every exporter, with these templates, to render `report`: its template context
    /// is made once, by the first template to render, for both templates (converting a
    /// big report into minijinja values costs about a third of rendering a template
    /// from them), and the other exporters need not wait for it.
    pub fn exporters_for<'r>(
        &'r self,
        report: &'r Report,
        context: &SharedContext,
    ) -> Vec<Box<dyn Exporter + Send + Sync + 'r>> {
        let prepared = |template| Prepared {
            template,
            report,
            context: Arc::clone(&context.0),
        };
        let mut all: Vec<Box<dyn Exporter + Send + Sync + 'r>> = vec![
            Box::new(prepared(&self.markdown)),
            Box::new(prepared(&self.html)),
            Box::new(super::Json),
            Box::new(super::Csv),
        ];
        all.extend(super::history_csv::exporters(report));
        all
    }
}

/// The template context of one report for `Templates::exporters_for`, made by the first
/// template to render. It outlives the exporters, so that its owner frees it where it
/// likes: a big report's is hundreds of thousands of values.
#[derive(Clone, Default)]
pub struct SharedContext(Arc<OnceLock<Value>>);

/// A template with the context of one report, shared with the other templates of
/// `Templates::exporters_for`. It holds the report borrowed, so the report the context
/// is made from is that one, unchanged, as long as it lives; any other report gets its
/// own context, as `Template` renders it.
struct Prepared<'r> {
    template: &'r Template,
    report: &'r Report,
    context: Arc<OnceLock<Value>>,
}

impl Exporter for Prepared<'_> {
    fn file_name(&self) -> &str {
        self.template.name
    }
    fn weight(&self) -> u32 {
        // The page is a long render, and makes the context both templates share: the
        // Markdown, the shortest, starts last, by when the context is made.
        if self.template.name.ends_with(".html") {
            4
        } else {
            1
        }
    }
    fn write_to(&self, report: &Report, out: &mut dyn std::io::Write) -> Result<(), ExportError> {
        if std::ptr::eq(report, self.report) {
            let context = self.context.get_or_init(|| context(self.report));
            write_context(self.template, context.clone(), out)
        } else {
            write_context(self.template, context(report), out)
        }
    }
}

#[cfg(test)]
mod tests {
    /// The escaping `MarkdownEscaped` replaced, char by char into a new `String`.
    fn reference(text: &str) -> String {
        let mut out = String::new();
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
                '\t' | '\r' => out.push(' '),
                c if c.is_control() => out.push_str(&c.escape_debug().to_string()),
                c => out.push(c),
            }
        }
        out
    }

    /// Every pair of characters from a set holding each class of them escapes as the
    /// character-by-character version did, also where nothing needs escaping.
    #[test]
    fn markdown_escaping_written_in_place_is_the_char_by_char_one() {
        let chars = [
            'a', ' ', '<', '>', '&', '\\', '`', '*', '|', '[', ']', '\n', '\t', '\r', '\u{7f}',
            '\u{80}', '\u{85}', '\u{9f}', '\u{a0}', 'é', '±', '—', '😀',
        ];
        for a in chars {
            for b in chars {
                let text = format!("x{a}{b}y{a}");
                assert_eq!(super::markdown_escape(&text), reference(&text), "{text:?}");
            }
        }
        assert_eq!(
            super::markdown_escape("plain 12.5 ± 0.3 MB/s"),
            "plain 12.5 ± 0.3 MB/s"
        );
    }

    /// The HTML page's formatter writes every kind of value as minijinja's own does:
    /// text with and without each escaped character, floats of every shape, integers,
    /// none, booleans, safe text, lists, and text in an `autoescape false` block.
    #[test]
    fn the_html_formatter_writes_what_minijinjas_own_writes() {
        use minijinja::Value;
        let template = super::Template {
            name: "index.html",
            source: "{{ v }}|{% autoescape false %}{{ v }}{% endautoescape %}".into(),
            file: None,
        };
        let ours = super::environment(&template).unwrap();
        let mut theirs = minijinja::Environment::new();
        theirs.add_template("index.html", &template.source).unwrap();
        let mut values: Vec<Value> = [
            "",
            "plain",
            "MB/s",
            "<b>&\"quoted\"</b>",
            "it's",
            "a/b/c",
            "53.6 ± 2.1",
            "—",
            "12",
        ]
        .into_iter()
        .map(Value::from)
        .collect();
        for x in [
            0.0,
            -0.0,
            1.0,
            -3.0,
            53.585,
            5.5828999999999995,
            0.1 + 0.2,
            1e-7,
            123456.789,
            1e15,
            1e16,
            1e21,
            -2.5e-300,
            f64::MAX,
            f64::MIN_POSITIVE,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            values.push(Value::from(x));
        }
        values.extend([
            Value::from(7u64),
            Value::from(-7i64),
            Value::from(()),
            Value::from(true),
            Value::from_safe_string("<svg/>".into()),
            Value::from(vec![Value::from("a/b"), Value::from(1.5)]),
        ]);
        for v in values {
            let render = |env: &minijinja::Environment| {
                env.get_template("index.html")
                    .unwrap()
                    .render(minijinja::context! { v => v.clone() })
                    .unwrap()
            };
            assert_eq!(render(&ours), render(&theirs), "{v:?}");
        }
    }
}
