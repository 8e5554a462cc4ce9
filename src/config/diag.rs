//! Diagnostics for input files: `file:line:col`, the offending line with a caret, a hint.

use std::fmt;
use std::path::PathBuf;

/// One problem in one input file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file, relative to the working directory as the user named it.
    pub file: PathBuf,
    /// 1-based line and column; 0 when the problem concerns the whole file.
    pub line: usize,
    pub col: usize,
    /// What is wrong and what was expected: "unknown board `x`; expected one of ...".
    pub message: String,
    /// The source line, shown with a caret under `col`.
    pub source_line: Option<String>,
    /// Width of the caret underline (at least 1).
    pub width: usize,
    /// "did you mean `y`?" and similar.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic about a byte range of `text` (as `toml::Spanned` gives).
    pub fn at(
        file: impl Into<PathBuf>,
        text: &str,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        // Spans come from the TOML parser and are on char boundaries, but a slice at a
        // wrong one would panic, so round down rather than trust it.
        let floor = |mut i: usize| {
            i = i.min(text.len());
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let start = floor(span.start);
        let line_start = text[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
        let line_end = text[start..]
            .find('\n')
            .map(|i| start + i)
            .unwrap_or(text.len());
        let line = text[..start].matches('\n').count() + 1;
        let col = text[line_start..start].chars().count() + 1;
        let end = floor(span.end).clamp(start, line_end);
        let width = text[start..end].chars().count().max(1);
        Diagnostic {
            file: file.into(),
            line,
            col,
            message: message.into(),
            source_line: Some(
                text[line_start..line_end]
                    .trim_end_matches('\r')
                    .to_string(),
            ),
            width,
            help: None,
        }
    }

    /// A diagnostic about a whole file (it cannot be read, say).
    pub fn whole_file(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Diagnostic {
            file: file.into(),
            line: 0,
            col: 0,
            message: message.into(),
            source_line: None,
            width: 1,
            help: None,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            writeln!(f, "error: {}: {}", self.file.display(), self.message)?;
        } else {
            writeln!(f, "error: {}", self.message)?;
            writeln!(
                f,
                "  --> {}:{}:{}",
                self.file.display(),
                self.line,
                self.col
            )?;
            if let Some(src) = &self.source_line {
                let gutter = self.line.to_string().len();
                writeln!(f, "{:gutter$} |", "")?;
                writeln!(f, "{} | {}", self.line, src)?;
                writeln!(
                    f,
                    "{:gutter$} | {}{}",
                    "",
                    " ".repeat(self.col.saturating_sub(1)),
                    "^".repeat(self.width)
                )?;
            }
        }
        if let Some(help) = &self.help {
            writeln!(f, "  = help: {help}")?;
        }
        Ok(())
    }
}

/// All problems found in one load; reported together so one run shows every mistake.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            write!(f, "{d}")?;
        }
        let n = self.0.len();
        write!(
            f,
            "{n} error{} in input files",
            if n == 1 { "" } else { "s" }
        )
    }
}

impl std::error::Error for Diagnostics {}
