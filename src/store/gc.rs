//! Removing the cells no scenario refers to (`benchpipe gc`): only directories the
//! store made for a cell (named by a key, holding `cell.json`), found without following
//! a link, and removed without following one.

use std::collections::BTreeSet;
use std::fs;

use super::{Store, io};
use crate::cell::CellKey;
use crate::error::Result;

/// The most entries a store directory's listing or a cell's size walk looks at.
const MAX_ENTRIES: usize = 1_000_000;

/// A cell directory no scenario given refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreferenced {
    /// Its directory's name in the store (`<key>-<test>-<board>`).
    pub dir: String,
    /// The bytes of its files.
    pub bytes: u64,
}

impl Store {
    /// The store's cell directories whose key is not in `keep`, by name. Anything else
    /// in the store (boards/, status/, a file or a link named like a cell) is no cell
    /// of the store's and never listed.
    pub fn unreferenced(&self, keep: &BTreeSet<CellKey>) -> Result<Vec<Unreferenced>> {
        let entries = match fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(crate::error::Error::io(&self.root, e)),
        };
        let mut out = Vec::new();
        for entry in entries.take(MAX_ENTRIES) {
            let entry = entry.map_err(io(&self.root))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let Some(key) = name.get(..32).and_then(CellKey::parse) else {
                continue;
            };
            if keep.contains(&key) || name.as_bytes().get(32) != Some(&b'-') {
                continue;
            }
            let path = entry.path();
            let is_cell = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir())
                && fs::symlink_metadata(path.join("cell.json")).is_ok_and(|m| m.is_file());
            if is_cell {
                out.push(Unreferenced {
                    bytes: size_of(&path),
                    dir: name,
                });
            }
        }
        out.sort_by(|a, b| a.dir.cmp(&b.dir));
        Ok(out)
    }

    /// Removes an unreferenced cell's directory (`unreferenced` named it); the caller
    /// holds the store's lock. Links inside are removed, never followed.
    pub fn remove_cell_dir(&self, cell: &Unreferenced) -> Result<()> {
        let path = self.root.join(&cell.dir);
        let still_a_cell = !cell.dir.contains('/')
            && fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir())
            && fs::symlink_metadata(path.join("cell.json")).is_ok_and(|m| m.is_file());
        if !still_a_cell {
            return Err(crate::error::Error::Store(format!(
                "{}: no longer a cell's directory; left alone",
                crate::shown::one_line(&path.display().to_string())
            )));
        }
        fs::remove_dir_all(&path).map_err(io(&path))?;
        super::files::sync_dir(&self.root)
    }
}

/// The bytes of the files under `dir`, links not followed, at most `MAX_ENTRIES` looked at.
fn size_of(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    let mut seen = 0;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            seen += 1;
            if seen > MAX_ENTRIES {
                return total;
            }
            match e.metadata() {
                Ok(m) if m.is_dir() => todo.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}
