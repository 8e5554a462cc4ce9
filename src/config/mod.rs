//! Loading input files: raw TOML with spans -> validated `model` types, with diagnostics.

pub mod diag;

use std::path::{Path, PathBuf};

use crate::model::Workspace;
use diag::Diagnostics;

/// Finds the workspace root for scenario files: the nearest ancestor directory of the
/// first file that holds `boards/` or `pipeline/`, else the current directory.
pub fn find_root(files: &[PathBuf]) -> PathBuf {
    let start = files
        .first()
        .and_then(|f| f.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let start = if start.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        start
    };
    let mut dir = Some(start.as_path());
    while let Some(d) = dir {
        if d.join("boards").is_dir() || d.join("pipeline").is_dir() {
            return d.to_path_buf();
        }
        dir = d.parent();
    }
    PathBuf::from(".")
}

/// Loads the scenarios in `files`, with every board in `root/boards/` and every recipe
/// in `root/pipeline/`, and validates them together.
pub fn load(root: &Path, files: &[PathBuf]) -> Result<Workspace, Diagnostics> {
    let _ = (root, files);
    Err(Diagnostics(vec![diag::Diagnostic::whole_file(
        "config",
        "config loading is not implemented yet",
    )]))
}
