//! Diagnostics for input files: `file:line:col`, an excerpt of the line with a caret, a
//! hint. Bounded: an excerpt is a window around the column, and a load prints at most
//! `MAX_SHOWN` diagnostics, so a huge one-line file cannot make the output huge.

use std::fmt;
use std::path::PathBuf;

/// Characters of the source line shown on each side of the caret's column.
const EXCERPT_HALF: usize = 40;
/// Diagnostics printed; the rest are counted ("and N more").
pub const MAX_SHOWN: usize = 50;

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
    /// A window of the source line around `col` (`…` marks a cut), shown with a caret.
    pub source_line: Option<String>,
    /// 1-based column of the caret within `source_line`.
    pub caret_col: usize,
    /// Width of the caret underline (at least 1).
    pub width: usize,
    /// "did you mean `y`?" and similar.
    pub help: Option<String>,
    /// A warning is printed but does not fail the load.
    pub warning: bool,
}

/// Where each line of a text starts, computed once per file, so that finding the line
/// and column of a span does not rescan the text (which made many diagnostics on a long
/// file quadratic).
#[derive(Clone, Debug, Default)]
pub struct LineIndex {
    starts: Vec<usize>,
    /// Whether each line is ASCII: then a column is a byte offset, with no char count.
    ascii: Vec<bool>,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        let mut ascii = Vec::new();
        let mut line_ascii = true;
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                starts.push(i + 1);
                ascii.push(line_ascii);
                line_ascii = true;
            } else if !b.is_ascii() {
                line_ascii = false;
            }
        }
        ascii.push(line_ascii);
        LineIndex { starts, ascii }
    }
}

impl Diagnostic {
    /// A diagnostic about a byte range of `text` (as `toml::Spanned` gives).
    pub fn at(
        file: impl Into<PathBuf>,
        text: &str,
        span: std::ops::Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        Self::at_indexed(file, text, &LineIndex::new(text), span, message)
    }

    /// Like `at`, with the text's line index computed once by the caller.
    pub fn at_indexed(
        file: impl Into<PathBuf>,
        text: &str,
        index: &LineIndex,
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
        let line_idx = match index.starts.binary_search(&start) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let line_start = index.starts.get(line_idx).copied().unwrap_or(0).min(start);
        let line_end = index
            .starts
            .get(line_idx + 1)
            .map_or(text.len(), |s| s - 1)
            .max(start);
        let ascii = index.ascii.get(line_idx).copied().unwrap_or(false);
        let col = if ascii {
            start - line_start + 1
        } else {
            text[line_start..start].chars().count() + 1
        };
        let end = floor(span.end).clamp(start, line_end);

        // The excerpt: at most EXCERPT_HALF characters each side of the caret.
        let before: Vec<(usize, char)> = text[line_start..start]
            .char_indices()
            .rev()
            .take(EXCERPT_HALF + 1)
            .collect();
        let (from, cut_left) = if before.len() > EXCERPT_HALF {
            (line_start + before[EXCERPT_HALF - 1].0, true)
        } else {
            (line_start, false)
        };
        let line_text = text[start..line_end].trim_end_matches('\r');
        let mut to = start + line_text.len();
        let mut cut_right = false;
        if let Some((i, _)) = line_text.char_indices().nth(EXCERPT_HALF) {
            to = start + i;
            cut_right = true;
        }
        let width = text[start..end.min(to).max(start)].chars().count().max(1);
        let mut excerpt = String::new();
        if cut_left {
            excerpt.push('…');
        }
        // Tabs and control characters would shift or garble the caret line.
        excerpt.extend(text[from..to].chars().map(printable));
        if cut_right {
            excerpt.push('…');
        }
        let caret_col = text[from..start].chars().count() + 1 + usize::from(cut_left);
        Diagnostic {
            file: file.into(),
            line: line_idx + 1,
            col,
            message: message.into(),
            source_line: Some(excerpt),
            caret_col,
            width,
            help: None,
            warning: false,
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
            caret_col: 0,
            width: 1,
            help: None,
            warning: false,
        }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Leaves the line's excerpt out, keeping `file:line:col`: for a value that must not
    /// be printed (a clear password given where only a hash is taken).
    pub fn without_excerpt(mut self) -> Self {
        self.source_line = None;
        self
    }

    /// Makes this a warning: printed, but the load still succeeds.
    pub fn as_warning(mut self) -> Self {
        self.warning = true;
        self
    }
}

/// A character as shown in an excerpt: control characters become `�`, a tab a space.
fn printable(c: char) -> char {
    match c {
        '\t' => ' ',
        c if c.is_control() => '\u{fffd}',
        c => c,
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = if self.warning { "warning" } else { "error" };
        if self.line == 0 {
            writeln!(f, "{level}: {}: {}", self.file.display(), self.message)?;
        } else {
            writeln!(f, "{level}: {}", self.message)?;
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
                    " ".repeat(self.caret_col.saturating_sub(1)),
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

/// All problems found in one load; reported together so one run shows every mistake
/// (the first `MAX_SHOWN` of them in full).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Only the errors (warnings do not fail a load).
    pub fn errors(&self) -> usize {
        self.0.iter().filter(|d| !d.warning).count()
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in self.0.iter().take(MAX_SHOWN) {
            write!(f, "{d}")?;
        }
        if self.0.len() > MAX_SHOWN {
            writeln!(f, "... and {} more", self.0.len() - MAX_SHOWN)?;
        }
        let n = self.errors();
        write!(
            f,
            "{n} error{} in input files",
            if n == 1 { "" } else { "s" }
        )
    }
}

impl std::error::Error for Diagnostics {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_to_a_window_around_the_column() {
        let text = format!("a = [{}\"bad\"]\n", "\"x\", ".repeat(20_000));
        let at = text.find("\"bad\"").unwrap();
        let d = Diagnostic::at("f.toml", &text, at..at + 5, "bad");
        assert_eq!((d.line, d.col), (1, at + 1));
        let shown = d.source_line.as_deref().unwrap();
        assert!(shown.chars().count() <= 2 * EXCERPT_HALF + 2, "{shown}");
        assert!(shown.starts_with('…'), "{shown}");
        let caret_at: String = shown.chars().skip(d.caret_col - 1).take(5).collect();
        assert_eq!(caret_at, "\"bad\"");
    }

    #[test]
    fn columns_count_characters_and_lines_are_found_by_index() {
        let text = "x = 1\nname = \"ä\" # é\ny = 2";
        let at = text.find('#').unwrap();
        let d = Diagnostic::at("f.toml", text, at..at + 1, "m");
        assert_eq!((d.line, d.col), (2, 12));
        assert_eq!(d.source_line.as_deref(), Some("name = \"ä\" # é"));
        assert_eq!(d.caret_col, 12);
        let end = Diagnostic::at("f.toml", text, text.len()..text.len(), "m");
        assert_eq!((end.line, end.col), (3, 6));
    }

    #[test]
    fn at_most_fifty_are_shown() {
        let many = Diagnostics(
            (0..120)
                .map(|i| Diagnostic::whole_file("f.toml", format!("problem {i}")))
                .collect(),
        );
        let text = many.to_string();
        assert!(text.contains("problem 49") && !text.contains("problem 50"));
        assert!(text.contains("and 70 more"), "{text}");
        assert!(text.ends_with("120 errors in input files"));
    }
}
