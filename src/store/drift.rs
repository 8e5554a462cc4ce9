//! Board fingerprints in the store: the records (`Fingerprint`, the `OnDrift` choice;
//! `plan::drift` compares them), the one a cell's runs were taken under, with the
//! drift choices made for it (`<cell>/fingerprint.json`), and the one each board was
//! last seen with (`boards/<board>.fingerprint.json`), which `plan` compares without
//! touching the board.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::files::{read_json, sync_dir, to_json_bytes, write_atomic};
use super::{FORMAT, Store, now};
use crate::cell::Cell;
use crate::error::{Error, Result};
use crate::model::BoardName;

/// The facts of a board that change numbers without changing a cell's inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v` (the build: a rebuilt kernel of the same release differs here).
    pub kernel_version: String,
    /// `/etc/os-release`, every key.
    #[serde(default)]
    pub os_release: BTreeMap<String, String>,
    /// `vcgencmd version`, where it runs; `None` where it is absent or fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub firmware: Option<String>,
    /// sha256 of each of `BOOT_CONFIG_FILES` the board has, by path.
    #[serde(default)]
    pub boot_config: BTreeMap<String, String>,
}

/// What to do with a cell whose runs were taken on a board that has changed since.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum OnDrift {
    /// Add no runs to it (it fails, saying how to choose); a complete cell stays as it is.
    #[default]
    Refuse,
    /// Keep its runs and add new ones under the new fingerprint.
    Keep,
    /// Measure it again: its runs stay stored but no longer count (as `--redo`).
    Redo,
}

impl std::fmt::Display for OnDrift {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OnDrift::Refuse => "refuse",
            OnDrift::Keep => "keep",
            OnDrift::Redo => "redo",
        })
    }
}

/// `fingerprint.json`: the board as the cell's current runs saw it (or as a `keep`
/// accepted it), and every drift choice made for the cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellFingerprint {
    pub format: u32,
    pub fingerprint: Fingerprint,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<DriftDecision>,
}

impl CellFingerprint {
    pub fn new(fingerprint: Fingerprint) -> Self {
        CellFingerprint {
            format: FORMAT,
            fingerprint,
            decisions: Vec::new(),
        }
    }
}

/// A choice made for a drifted cell (`apply --on-drift keep|redo`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DriftDecision {
    /// `keep` or `redo`.
    pub choice: OnDrift,
    /// The cell's last sample `seq` when the choice was made: the runs up to it were
    /// taken under `from`.
    pub after_seq: u32,
    pub from: Fingerprint,
    pub to: Fingerprint,
    /// When, as Unix seconds, and by which invocation (provenance only).
    pub at: f64,
    pub session: String,
}

/// `boards/<board>.fingerprint.json`: the board as apply last saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoardSeen {
    pub format: u32,
    pub board: String,
    pub fingerprint: Fingerprint,
    pub session: String,
}

impl Store {
    fn seen_path(&self, board: &BoardName) -> std::path::PathBuf {
        self.root
            .join("boards")
            .join(format!("{board}.fingerprint.json"))
    }

    /// The fingerprint each of `boards` was last seen with (boards never seen are absent).
    pub fn board_fingerprints<'b>(
        &self,
        boards: impl IntoIterator<Item = &'b BoardName>,
    ) -> Result<std::collections::BTreeMap<BoardName, Fingerprint>> {
        let mut out = std::collections::BTreeMap::new();
        for b in boards {
            if let Some(s) = read_json::<BoardSeen>(&self.seen_path(b))? {
                out.insert(b.clone(), s.fingerprint);
            }
        }
        Ok(out)
    }

    /// Records the board's fingerprint as seen now.
    pub fn write_board_fingerprint(
        &self,
        board: &BoardName,
        fingerprint: &Fingerprint,
        session: &str,
    ) -> Result<()> {
        let dir = self.root.join("boards");
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let seen = BoardSeen {
            format: FORMAT,
            board: board.to_string(),
            fingerprint: fingerprint.clone(),
            session: session.to_string(),
        };
        write_atomic(&self.seen_path(board), &to_json_bytes(&seen)?)?;
        sync_dir(&dir)
    }

    /// Records the fingerprint the cell's runs are taken under from now on, when the
    /// cell has none yet or no current runs (after a redo, or nothing measured); a cell
    /// whose current runs saw another board keeps its own until a choice is recorded.
    pub fn adopt_fingerprint(&self, cell: &Cell, fingerprint: &Fingerprint) -> Result<()> {
        let data = self.read(cell)?;
        let current = data.samples.iter().any(|s| data.is_current(s));
        let doc = match data.fingerprint {
            None => CellFingerprint::new(fingerprint.clone()),
            Some(f) if &f.fingerprint == fingerprint || current => return Ok(()),
            Some(mut f) => {
                f.fingerprint = fingerprint.clone();
                f
            }
        };
        let dir = self.cell_dir(cell);
        write_atomic(&dir.join("fingerprint.json"), &to_json_bytes(&doc)?)
    }

    /// Records the user's choice for a drifted cell: `redo` marks its runs as no longer
    /// counting (as `--redo`), and either way the cell's fingerprint becomes `to`.
    pub fn record_drift(
        &self,
        cell: &Cell,
        choice: OnDrift,
        to: &Fingerprint,
        session: &str,
    ) -> Result<()> {
        let data = self.read(cell)?;
        let Some(mut doc) = data.fingerprint else {
            return Ok(());
        };
        if choice == OnDrift::Redo {
            self.mark_redo(cell, session)?;
        }
        doc.decisions.push(DriftDecision {
            choice,
            after_seq: data.samples.iter().map(|s| s.seq).max().unwrap_or(0),
            from: std::mem::replace(&mut doc.fingerprint, to.clone()),
            to: to.clone(),
            at: now(),
            session: session.to_string(),
        });
        let dir = self.cell_dir(cell);
        write_atomic(&dir.join("fingerprint.json"), &to_json_bytes(&doc)?)
    }
}
