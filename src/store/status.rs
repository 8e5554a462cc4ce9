//! What each board's walk is doing, in `results/status/<board>.json`: replaced whole at
//! every phase by the apply holding the store's lock, so `benchpipe status` reads it
//! while that apply runs and after it died (the lock then tells a live walk from a dead
//! one). A view only: the store's cells stay what counts.

use serde::{Deserialize, Serialize};

use super::files::{read_json, to_json_bytes, write_atomic};
use super::{FORMAT, Store};
use crate::error::{Error, Result};

/// The most failed cells a status lists (the count goes on).
pub const MAX_FAILED_LISTED: usize = 20;

/// The most status files read: one per board or cluster of a study.
const MAX_STATUS_FILES: usize = 4096;

/// One board's (or cluster's) walk, as its apply last recorded it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WalkStatus {
    pub format: u32,
    pub board: String,
    /// The apply's session (`<start>-<pid>`).
    pub session: String,
    /// Unix seconds: when the walk started, and when its current phase did.
    pub started: u64,
    pub phase_since: u64,
    /// `connect`, `provision`, `cool-down`, `run 2/5`, ...; `done` once ended.
    pub phase: String,
    /// The cell the phase is of (its label), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    /// Cells the walk set out to run, and what became of them so far.
    pub cells: usize,
    pub completed: usize,
    pub skipped: usize,
    pub failed: usize,
    /// Cells `--deadline` left for lack of time (absent in statuses written before).
    #[serde(default)]
    pub left: usize,
    /// The first `MAX_FAILED_LISTED` failed cells and their causes.
    #[serde(default)]
    pub failures: Vec<FailedCell>,
    /// The walk reached its end (every cell done, failed or skipped, or the board lost).
    pub ended: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailedCell {
    pub cell: String,
    pub cause: String,
}

impl Store {
    /// Replaces the walk's status atomically. The caller holds the store's lock.
    pub fn write_walk_status(&self, status: &WalkStatus) -> Result<()> {
        let name = &status.board;
        if name.is_empty() || name.starts_with('.') || name.contains(['/', '\0']) {
            return Err(Error::Store(format!(
                "a walk status for `{name}`: not a board name"
            )));
        }
        let dir = self.root.join("status");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let path = dir.join(format!("{}.json", status.board));
        // `write_atomic` syncs the directory it renames in: a status needs no more.
        write_atomic(&path, &to_json_bytes(status)?)
    }

    /// Every walk status the store holds, by board name; none before any apply.
    pub fn walk_statuses(&self) -> Result<Vec<WalkStatus>> {
        let dir = self.root.join("status");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in entries.flatten().take(MAX_STATUS_FILES) {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            if let Some(s) = read_json::<WalkStatus>(&path)? {
                out.push(s);
            }
        }
        out.sort_by(|a, b| a.board.cmp(&b.board));
        Ok(out)
    }
}

/// The status's format: the store's.
pub fn new_status(board: &str, session: &str, cells: usize, at: u64) -> WalkStatus {
    WalkStatus {
        format: FORMAT,
        board: board.to_string(),
        session: session.to_string(),
        started: at,
        phase_since: at,
        phase: "start".into(),
        cells,
        ..WalkStatus::default()
    }
}
