//! The error type every command returns, and its exit codes.

use std::path::PathBuf;

use crate::diag::Diagnostics;
use crate::transport::TransportError;

/// Exit codes: 0 success, 1 a run failed (some cells failed, a tool broke),
/// 2 bad input (a file, an argument, a store holding what benchpipe does not write), so
/// scripts can tell "fix your files" from "the lab had a bad day"; 3 a regression
/// (`history --fail-on regression`).
pub const EXIT_FAILURE: u8 = 1;
pub const EXIT_BAD_INPUT: u8 = 2;
/// `history --fail-on regression`: the newest run starts a regression (3, so a script
/// tells it from a run or input that failed).
pub const EXIT_REGRESSION: u8 = 3;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Problems in the input files, each with file:line:col.
    #[error("{0}")]
    Config(Diagnostics),
    /// A bad argument or combination of arguments.
    #[error("{0}")]
    Usage(String),
    /// The path on one line, its controls escaped (`shown`): a store someone sent may
    /// name a directory with a newline or an ESC sequence.
    #[error("{}: {source}", crate::shown::one_line(&path.display().to_string()))]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Transport(#[from] TransportError),
    /// The store holds something benchpipe cannot read (a newer format, a broken file, a
    /// link, a name that is none): bad input, like a broken board file. The text names
    /// the file and what was expected, on one line and bounded (`store::files::bad`).
    #[error("store: {0}")]
    Store(String),
    /// Some cells failed; the others completed. Details were printed as they happened.
    #[error("{failed} of {total} cells failed")]
    CellsFailed { failed: usize, total: usize },
    /// Some boards could not be reached; their cells were not run (and did not fail).
    #[error("{boards} board(s) unreachable; {cells} cell(s) not run")]
    BoardsUnreachable { boards: usize, cells: usize },
    /// `boards check` or `boards power`: some boards failed; each printed its line.
    #[error("{failed} of {total} boards failed")]
    BoardsFailed { failed: usize, total: usize },
    /// `history --fail-on regression` found regressions the newest run starts.
    #[error("{0} regression(s) start at the newest run")]
    Regressions(usize),
    #[error("interrupted; the store is consistent and the next apply resumes")]
    Interrupted,
    #[error("{0}")]
    Other(String),
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Config(_) | Error::Usage(_) | Error::Store(_) => EXIT_BAD_INPUT,
            Error::Regressions(_) => EXIT_REGRESSION,
            _ => EXIT_FAILURE,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    /// A path from a store someone sent (a directory named with a newline and an ESC
    /// sequence) is named on one line, its controls escaped.
    #[test]
    fn an_io_error_names_its_path_on_one_line() {
        let e = super::Error::io(
            "results/x\n# y\u{1b}[2J/cell.json",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert_eq!(
            e.to_string(),
            "results/x\\n# y\\u{1b}[2J/cell.json: permission denied"
        );
        assert_eq!(e.exit_code(), super::EXIT_FAILURE);
        let bad = super::Error::Store("x".into());
        assert_eq!(bad.exit_code(), super::EXIT_BAD_INPUT);
    }
}
