//! `benchpipe store merge`: unions stores. Cells are content-addressed, so a cell one
//! store lacks is copied whole from the other (to a temporary name, then renamed); a
//! cell both hold alike is kept; a cell both hold with different runs, and a board
//! record that differs, are reported as conflicts and the destination's kept: nothing
//! is silently overwritten.

use std::fs;
use std::path::Path;

use super::{Store, io};
use crate::cell::CellKey;
use crate::error::{Error, Result};

/// The most files one cell directory may hold to be copied (its runs' logs).
const MAX_CELL_FILES: usize = 100_000;

/// What a merge did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Merged {
    /// Cell directories and board records copied in.
    pub copied: Vec<String>,
    /// Held alike by both: kept.
    pub same: usize,
    /// Held differently by both: the destination's kept, each with why.
    pub conflicts: Vec<String>,
}

impl Store {
    /// Merges `src` into this store; the caller holds both stores' locks. `src` is read
    /// first as any store is (`all`), so a broken or hostile one is refused whole.
    pub fn merge_from(&self, src: &Store) -> Result<Merged> {
        let mut merged = Merged::default();
        let cells = src.all()?;
        let mut names: Vec<String> = Vec::new();
        for entry in fs::read_dir(src.root()).map_err(io(src.root()))?.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if name
                .get(..32)
                .and_then(CellKey::parse)
                .is_some_and(|k| cells.contains_key(&k))
            {
                names.push(name);
            }
        }
        names.sort();
        for name in names {
            let (from, to) = (src.root().join(&name), self.root().join(&name));
            if fs::symlink_metadata(&to).is_err() {
                copy_dir(&from, &self.root().join(format!(".merge-{name}.tmp")), &to)?;
                merged.copied.push(name);
            } else if same_file(&from.join("samples.jsonl"), &to.join("samples.jsonl")) {
                merged.same += 1;
            } else {
                merged.conflicts.push(format!(
                    "cell {name}: both stores hold it with different runs; kept this store's"
                ));
            }
        }
        // Board records: the image verified, facts, fingerprints, plan skips.
        let boards = src.root().join("boards");
        let mut records: Vec<String> = fs::read_dir(&boards)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().to_str().map(str::to_string))
            .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
            .collect();
        records.sort();
        for name in records {
            let (from, to) = (boards.join(&name), self.root().join("boards").join(&name));
            if fs::symlink_metadata(&to).is_err() {
                let dir = self.root().join("boards");
                fs::create_dir_all(&dir).map_err(io(&dir))?;
                let bytes = fs::read(&from).map_err(io(&from))?;
                super::files::write_atomic(&to, &bytes)?;
                merged.copied.push(format!("boards/{name}"));
            } else if same_file(&from, &to) {
                merged.same += 1;
            } else {
                merged.conflicts.push(format!(
                    "boards/{name}: the stores' records differ; kept this store's"
                ));
            }
        }
        super::files::sync_dir(self.root())?;
        Ok(merged)
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::read(a), fs::read(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Copies the cell directory `from` to `tmp`, then renames it to `to`: the cell appears
/// whole or not at all. Only directories and regular files; anything else refuses.
fn copy_dir(from: &Path, tmp: &Path, to: &Path) -> Result<()> {
    if fs::symlink_metadata(tmp).is_ok() {
        fs::remove_dir_all(tmp).map_err(io(tmp))?;
    }
    let mut todo = vec![(from.to_path_buf(), tmp.to_path_buf())];
    let mut files = 0;
    while let Some((src, dst)) = todo.pop() {
        fs::create_dir(&dst).map_err(io(&dst))?;
        for e in fs::read_dir(&src).map_err(io(&src))? {
            let e = e.map_err(io(&src))?;
            files += 1;
            if files > MAX_CELL_FILES {
                return Err(Error::Store(format!(
                    "{}: more than {MAX_CELL_FILES} files",
                    from.display()
                )));
            }
            let kind = e.file_type().map_err(io(&e.path()))?;
            let target = dst.join(e.file_name());
            if kind.is_dir() {
                todo.push((e.path(), target));
            } else if kind.is_file() {
                fs::copy(e.path(), &target).map_err(io(&e.path()))?;
            } else {
                return Err(Error::Store(format!(
                    "{}: neither a file nor a directory; a store holds only those",
                    crate::shown::one_line(&e.path().display().to_string())
                )));
            }
        }
    }
    fs::rename(tmp, to).map_err(io(to))
}
