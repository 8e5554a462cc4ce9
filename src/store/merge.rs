//! `benchpipe store merge`: unions stores. Cells are content-addressed, so a cell one
//! store lacks is copied whole from the other (to a temporary name, then renamed); a
//! cell both hold alike is kept; a cell both hold with different runs is merged run by
//! run: a run is the same run when everything it recorded but its place in the file
//! (`seq`, `log`) is equal, and the runs the destination lacks are appended with their
//! logs, as an apply appends them. A cell whose board fingerprints differ or that
//! either store marked for a redo, and a board record that differs, are conflicts: the
//! destination's is kept, nothing is silently overwritten. Each store's run records
//! (its applies) are kept apart, by session, and so are a merged cell's facts of each
//! run (`run_facts.rs`): a run both hold with other facts is a conflict too.

use std::fs;
use std::path::Path;

use super::{CellData, CellWriter, Sample, Store, io};
use crate::cell::CellKey;
use crate::error::{Error, Result};

/// The most files one cell directory may hold to be copied (its runs' logs).
const MAX_CELL_FILES: usize = 100_000;

/// What a merge did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Merged {
    /// Cell directories and board records copied in.
    pub copied: Vec<String>,
    /// Held alike by both (or the destination holds every run of the source's): kept.
    pub same: usize,
    /// Cells both held with different runs, merged run by run: each with the runs added.
    pub runs_added: Vec<(String, usize)>,
    /// Held differently by both: the destination's kept, each with why.
    pub conflicts: Vec<String>,
    /// Board records both held as seen by different applies: the later one kept.
    pub records: Vec<String>,
    /// Runs' facts (`<cell>/facts/<session>.json`) added to cells both held.
    pub run_facts: usize,
}

/// Which of two board records is the later "last seen" one.
#[derive(Debug, PartialEq, Eq)]
enum Newer {
    /// Equal but for the apply that wrote them.
    Alike,
    Theirs,
    Ours,
    /// Not a record an apply's session dates, or unreadable: a conflict.
    Unknown,
}

/// The keys that name the apply which wrote a board record (`<start>-<pid>`).
const SESSION_KEYS: [&str; 2] = ["session", "verified_session"];

/// Compares two board records: a record of what an apply last saw of a board (its
/// fingerprint, the image it verified) is the later apply's, by its session's start.
fn newer_record(theirs: &Path, ours: &Path) -> Newer {
    let read = |p: &Path| -> Option<serde_json::Map<String, serde_json::Value>> {
        let bytes = fs::read(p).ok()?;
        match serde_json::from_slice(&bytes).ok()? {
            serde_json::Value::Object(o) => Some(o),
            _ => None,
        }
    };
    let (Some(mut a), Some(mut b)) = (read(theirs), read(ours)) else {
        return Newer::Unknown;
    };
    let started = |o: &mut serde_json::Map<String, serde_json::Value>| {
        let mut at = None;
        for k in SESSION_KEYS {
            if let Some(serde_json::Value::String(s)) = o.remove(k) {
                at = s.split('-').next().and_then(|t| t.parse::<f64>().ok());
            }
        }
        at
    };
    let (ta, tb) = (started(&mut a), started(&mut b));
    if a == b {
        return Newer::Alike;
    }
    match (ta, tb) {
        (Some(x), Some(y)) if x > y => Newer::Theirs,
        (Some(x), Some(y)) if x < y => Newer::Ours,
        _ => Newer::Unknown,
    }
}

impl Store {
    /// Merges `src` into this store; the caller holds both stores' locks. `src` is read
    /// first as any store is (`all`, its runs' facts too), so a broken or hostile one is
    /// refused whole.
    pub fn merge_from(&self, src: &Store) -> Result<Merged> {
        let mut merged = Merged::default();
        let cells = src.all_with_run_facts()?;
        let mine = self.all()?;
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
                super::run_facts::merge(&from, &to, &name, &mut merged)?;
            } else {
                let key = name.get(..32).and_then(CellKey::parse);
                let theirs = key.as_ref().and_then(|k| cells.get(k));
                let ours = key.as_ref().and_then(|k| mine.get(k));
                match (theirs, ours) {
                    (Some(theirs), Some(ours)) => {
                        if let Some(why) = why_not_by_run(theirs, ours) {
                            merged.conflicts.push(format!(
                                "cell {name}: both stores hold it with different runs, and {why}; kept this store's"
                            ));
                        } else {
                            // The runs' facts first: a run added is never without its own.
                            super::run_facts::merge(&from, &to, &name, &mut merged)?;
                            match add_runs(&from, &to, theirs, ours)? {
                                0 => merged.same += 1,
                                n => merged.runs_added.push((name, n)),
                            }
                        }
                    }
                    _ => merged.conflicts.push(format!(
                        "cell {name}: this store's directory holds no cell benchpipe can read; kept it"
                    )),
                }
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
                match newer_record(&from, &to) {
                    Newer::Alike => merged.same += 1,
                    Newer::Theirs => {
                        let bytes = fs::read(&from).map_err(io(&from))?;
                        super::files::write_atomic(&to, &bytes)?;
                        merged.records.push(format!(
                            "boards/{name}: the source's, seen later, replaces this store's"
                        ));
                    }
                    Newer::Ours => merged
                        .records
                        .push(format!("boards/{name}: this store's, seen later, is kept")),
                    Newer::Unknown => merged.conflicts.push(format!(
                        "boards/{name}: the stores' records differ; kept this store's"
                    )),
                }
            }
        }
        self.merge_runs(src, &mut merged)?;
        super::files::sync_dir(self.root())?;
        Ok(merged)
    }
}

/// Why two stores' runs of one cell cannot be merged run by run, if they cannot.
fn why_not_by_run(theirs: &CellData, ours: &CellData) -> Option<&'static str> {
    if theirs.record != ours.record {
        return Some("their cell.json records differ");
    }
    if theirs.redo.is_some() || ours.redo.is_some() {
        // A redo marker counts runs by their place in one store's file.
        return Some("one of them marked it for a redo");
    }
    match (&theirs.fingerprint, &ours.fingerprint) {
        (Some(a), Some(b)) if a.fingerprint != b.fingerprint => {
            Some("the board's fingerprint differs between them (the board changed)")
        }
        _ => None,
    }
}

/// What makes a run the same run in two stores: all it recorded but its place.
fn identity(s: &Sample) -> Result<String> {
    let mut v = serde_json::to_value(s).map_err(|e| Error::Other(e.to_string()))?;
    if let Some(o) = v.as_object_mut() {
        o.remove("seq");
        o.remove("log");
    }
    Ok(v.to_string())
}

/// Appends to the cell `to` (this store's `ours`) the runs of `theirs` (at `from`) it
/// lacks, in their order, each with its log under its new number. Returns how many.
/// Each run is appended and synced as an apply appends one: a merge stopped midway
/// leaves whole runs, and the next merge adds only the ones still missing.
fn add_runs(from: &Path, to: &Path, theirs: &CellData, ours: &CellData) -> Result<usize> {
    let mut have = std::collections::BTreeSet::new();
    for s in &ours.samples {
        have.insert(identity(s)?);
    }
    let mut writer = CellWriter {
        dir: to.to_path_buf(),
        next_seq: super::read_samples(&to.join("samples.jsonl"))?.len() as u32 + 1,
    };
    let mut added = 0;
    for s in &theirs.samples {
        if !have.insert(identity(s)?) {
            continue;
        }
        let seq = writer.next_seq;
        let mut run = s.clone();
        run.seq = seq;
        run.log = match log_of(from, &s.log)? {
            Some(bytes) => writer.write_log(seq, &bytes)?,
            None => String::new(),
        };
        writer.append(&run)?;
        added += 1;
    }
    Ok(added)
}

/// The log a run names in its cell directory: a regular file under `logs/`, or none.
fn log_of(cell: &Path, rel: &str) -> Result<Option<Vec<u8>>> {
    let inside = rel.strip_prefix("logs/").is_some_and(|n| {
        !n.is_empty() && !n.contains('/') && n != "." && n != ".." && !n.contains('\0')
    });
    if !inside {
        return Ok(None);
    }
    let path = cell.join(rel);
    match fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => fs::read(&path).map(Some).map_err(io(&path)),
        _ => Ok(None),
    }
}

impl Store {
    /// The source's run records (`runs/`) this store lacks: its applies, kept apart.
    fn merge_runs(&self, src: &Store, merged: &mut Merged) -> Result<()> {
        let dir = self.root().join("runs");
        for run in src.runs()? {
            let name = format!("{}.json", run.session);
            let (from, to) = (src.root().join("runs").join(&name), dir.join(&name));
            if fs::symlink_metadata(&to).is_err() {
                fs::create_dir_all(&dir).map_err(io(&dir))?;
                let bytes = fs::read(&from).map_err(io(&from))?;
                super::files::write_atomic(&to, &bytes)?;
                merged.copied.push(format!("runs/{name}"));
            } else if same_file(&from, &to) {
                merged.same += 1;
            } else {
                merged.conflicts.push(format!(
                    "runs/{name}: the stores' records of this apply differ; kept this store's"
                ));
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::{Newer, newer_record};

    /// A board record of what an apply last saw is the later apply's; one no session
    /// dates, or alike but for the session, is not.
    #[test]
    fn the_later_apply_s_board_record_is_the_newer() {
        let dir = std::env::temp_dir().join(format!("bp-merge-newer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let old = write(
            "old",
            r#"{"board":"b","fingerprint":{"kernel":"6.1"},"session":"1700000000-12"}"#,
        );
        let new = write(
            "new",
            r#"{"board":"b","fingerprint":{"kernel":"6.6"},"session":"1800000000-7"}"#,
        );
        let same = write(
            "same",
            r#"{"board":"b","fingerprint":{"kernel":"6.1"},"session":"1900000000-3"}"#,
        );
        let undated = write("undated", r#"{"board":"b","scenarios":{"s":[]}}"#);
        let other = write("other", r#"{"board":"b","scenarios":{}}"#);
        assert_eq!(newer_record(&new, &old), Newer::Theirs);
        assert_eq!(newer_record(&old, &new), Newer::Ours);
        assert_eq!(newer_record(&same, &old), Newer::Alike);
        assert_eq!(newer_record(&undated, &other), Newer::Unknown);
        assert_eq!(newer_record(&dir.join("absent"), &old), Newer::Unknown);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
