//! A cell's facts run by run, `<cell>/facts/<session>.json`: what the cell's opening in
//! each apply saw, beside `facts.json` (the latest, which everything else reads), so
//! that `history` can name the board fact that moved between two runs of one cell (a
//! nightly `apply --redo` measures the same cell again). Written with `facts.json`, the
//! newest [`MAX_RUN_FACTS`] kept; read bounded, and only when asked
//! (`Store::all_with_run_facts`); merged session by session.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::Merged;
use super::files::{ReadBuf, SharedFacts, bad, io, open_regular, sync_dir, write_atomic};
use super::runs::is_session;
use crate::error::{Error, Result};

/// The directory of a cell's facts per run.
pub const RUN_FACTS_DIR: &str = "facts";
/// The runs whose facts a cell keeps, and a read looks at: the newest, as many as
/// `history` looks at (`stats::MAX_CHANGE_POINTS_SERIES`).
pub const MAX_RUN_FACTS: usize = 365;
/// The most one run's facts may hold: a cell's facts are kilobytes (a cluster's, with
/// each member's, tens of them).
pub const MAX_RUN_FACTS_BYTES: u64 = 4 << 20;
/// The most one cell's facts of all its runs may hold together, as one store file may.
pub const MAX_CELL_RUN_FACTS_BYTES: u64 = super::MAX_FILE_BYTES;
/// The most entries of a cell's `facts/` looked at: far more than are ever kept.
const MAX_LISTED: usize = 1 << 16;

/// A session's place in time: its start, then its pid, as numbers (`999-1` is older
/// than `1000-1`); `is_session` holds each to 20 digits, which a u128 holds.
fn order_of(session: &str) -> (u128, u128) {
    let (a, b) = session.split_once('-').unwrap_or((session, ""));
    (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
}

/// The cell directory `cell`'s `facts/`, None when it has none. One that is a link (its
/// files would be read and written wherever it points) or no directory is refused.
pub(super) fn dir_of(cell: &Path) -> Result<Option<PathBuf>> {
    let dir = cell.join(RUN_FACTS_DIR);
    match fs::symlink_metadata(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&dir, e)),
        Ok(m) if m.file_type().is_symlink() => Err(bad(
            &dir,
            "a symbolic link, not a directory; benchpipe keeps a cell's facts of each run in a directory of its own",
        )),
        Ok(m) if !m.is_dir() => Err(bad(
            &dir,
            "not a directory; benchpipe keeps a cell's facts of each run in a directory of its own",
        )),
        Ok(_) => Ok(Some(dir)),
    }
}

/// The sessions whose facts `cell` holds, oldest first (names that are no session's
/// are not benchpipe's, and left alone).
pub(super) fn sessions(cell: &Path) -> Result<Vec<String>> {
    let Some(dir) = dir_of(cell)? else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in fs::read_dir(&dir).map_err(io(&dir))?.take(MAX_LISTED) {
        let e = e.map_err(io(&dir))?;
        let name = e.file_name();
        if let Some(session) = name.to_str().and_then(|n| n.strip_suffix(".json"))
            && is_session(session)
        {
            out.push(session.to_string());
        }
    }
    out.sort_by(|a, b| order_of(a).cmp(&order_of(b)).then_with(|| a.cmp(b)));
    Ok(out)
}

/// Writes `bytes` (the cell's `facts.json` as written now) as the facts of the run
/// `session` of the cell directory `cell`, then forgets the runs beyond the newest
/// [`MAX_RUN_FACTS`].
pub(super) fn write(cell: &Path, session: &str, bytes: &[u8]) -> Result<()> {
    if !is_session(session) {
        return Err(Error::Store(format!(
            "facts of a run named `{}`: not a session id",
            crate::shown::shown(session)
        )));
    }
    let dir = made(cell)?;
    write_atomic(&dir.join(format!("{session}.json")), bytes)?;
    prune(cell)
}

/// The cell's `facts/`, made when it has none (its entry synced into the cell's
/// directory, so that a crash keeps the files written into it).
fn made(cell: &Path) -> Result<PathBuf> {
    if let Some(dir) = dir_of(cell)? {
        return Ok(dir);
    }
    let dir = cell.join(RUN_FACTS_DIR);
    fs::create_dir(&dir).map_err(io(&dir))?;
    sync_dir(cell)?;
    Ok(dir)
}

/// Removes the facts of the oldest runs beyond the newest [`MAX_RUN_FACTS`]: history
/// looks at no more, and a cell measured every night for years holds no more.
fn prune(cell: &Path) -> Result<()> {
    let all = sessions(cell)?;
    let extra = all.len().saturating_sub(MAX_RUN_FACTS);
    for s in &all[..extra] {
        let path = cell.join(RUN_FACTS_DIR).join(format!("{s}.json"));
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(Error::io(&path, e));
            }
            _ => {}
        }
    }
    Ok(())
}

/// One run's facts file read whole through `buf`, bounded: None when absent; a link, a
/// FIFO, a directory or a file over [`MAX_RUN_FACTS_BYTES`] refused.
fn read_one<'b>(path: &Path, buf: &'b mut ReadBuf) -> Result<Option<&'b [u8]>> {
    let Some((file, len)) = open_regular(path)? else {
        return Ok(None);
    };
    if len > MAX_RUN_FACTS_BYTES {
        return Err(bad(
            path,
            format_args!("{len} bytes, more than the {MAX_RUN_FACTS_BYTES} a run's facts may hold"),
        ));
    }
    buf.fill(file, len).map(Some).map_err(io(path))
}

/// Gives `f` each of the newest [`MAX_RUN_FACTS`] runs' facts of `cell`, oldest first:
/// its session, path and bytes. More than [`MAX_CELL_RUN_FACTS_BYTES`] together are
/// refused.
fn each(
    cell: &Path,
    buf: &mut ReadBuf,
    mut f: impl FnMut(&str, &Path, &[u8]) -> Result<()>,
) -> Result<()> {
    let all = sessions(cell)?;
    let mut total = 0u64;
    for s in &all[all.len().saturating_sub(MAX_RUN_FACTS)..] {
        let path = cell.join(RUN_FACTS_DIR).join(format!("{s}.json"));
        let Some(bytes) = read_one(&path, buf)? else {
            continue;
        };
        total += bytes.len() as u64;
        if total > MAX_CELL_RUN_FACTS_BYTES {
            return Err(bad(
                &path,
                format_args!(
                    "the cell's facts of its runs hold more than the {MAX_CELL_RUN_FACTS_BYTES} bytes a cell's may hold together"
                ),
            ));
        }
        f(s, &path, bytes)?;
    }
    Ok(())
}

/// The facts of the cell directory `cell`'s newest runs, by session, each parsed as
/// `facts.json` is (`SharedFacts`: the same bytes give the same shared value).
pub(super) fn read(
    cell: &Path,
    buf: &mut ReadBuf,
    shared: &SharedFacts,
) -> Result<BTreeMap<String, Arc<Value>>> {
    let mut out = BTreeMap::new();
    each(cell, buf, |session, path, bytes| {
        out.insert(session.to_string(), shared.parse(path, bytes)?);
        Ok(())
    })?;
    Ok(out)
}

/// Adds to the cell directory `to` the runs' facts of `from` it lacks. A run both hold
/// with other facts is a conflict, `to`'s kept: facts are what a run saw, and two
/// stores that saw one run differently cannot both be right.
pub(super) fn merge(from: &Path, to: &Path, cell: &str, merged: &mut Merged) -> Result<()> {
    let mut buf = ReadBuf::default();
    let mut theirs = Vec::new();
    each(from, &mut buf, |session, _, bytes| {
        theirs.push((session.to_string(), bytes.to_vec()));
        Ok(())
    })?;
    if theirs.is_empty() {
        return Ok(());
    }
    let dir = made(to)?;
    for (session, bytes) in theirs {
        let path = dir.join(format!("{session}.json"));
        match read_one(&path, &mut buf)? {
            None => {
                write_atomic(&path, &bytes)?;
                merged.run_facts += 1;
            }
            Some(ours) if alike(ours, &bytes) => {}
            Some(_) => merged.conflicts.push(format!(
                "cell {cell}: {RUN_FACTS_DIR}/{session}.json: the stores' facts of this run differ; kept this store's"
            )),
        }
    }
    prune(to)
}

/// Whether two documents say the same: the same bytes, or the same JSON written apart.
fn alike(a: &[u8], b: &[u8]) -> bool {
    a == b
        || matches!(
            (serde_json::from_slice::<Value>(a), serde_json::from_slice::<Value>(b)),
            (Ok(x), Ok(y)) if x == y
        )
}
