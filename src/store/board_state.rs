//! Per-board state in `results/boards/<board>.json`: the image the board was last seen
//! to run, verified against its expectations, and in which session. Flashing reads it
//! to know whether a board is already at the image a cell needs.

use serde::{Deserialize, Serialize};

use super::Store;
use super::files::{read_json, sync_dir, to_json_bytes, write_atomic};
use crate::error::Result;
use crate::model::BoardName;

/// What benchpipe last proved about a board.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoardState {
    pub format: u32,
    pub board: String,
    /// The image name in the scenario that was verified.
    pub image: String,
    /// The image's identity (`sha256:...`, or `installed:NAME`), as in the cell key.
    pub identity: String,
    /// The apply session that verified it.
    pub verified_session: String,
    /// The host key fingerprint accepted after benchpipe flashed the image, when the
    /// board opts in (`[flash] accept_new_host_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_key: Option<String>,
}

impl Store {
    fn board_state_path(&self, board: &BoardName) -> std::path::PathBuf {
        self.root.join("boards").join(format!("{board}.json"))
    }

    /// The board's last verified state; `None` when benchpipe never verified it.
    pub fn board_state(&self, board: &BoardName) -> Result<Option<BoardState>> {
        read_json(&self.board_state_path(board))
    }

    /// The image identity each of `boards` was last verified at (boards never verified,
    /// or left unverified by a flash, are absent).
    pub fn board_images<'b>(
        &self,
        boards: impl IntoIterator<Item = &'b BoardName>,
    ) -> Result<std::collections::BTreeMap<BoardName, String>> {
        let mut out = std::collections::BTreeMap::new();
        for b in boards {
            if let Some(s) = self.board_state(b)? {
                out.insert(b.clone(), s.identity);
            }
        }
        Ok(out)
    }

    /// Replaces the board's state atomically.
    pub fn write_board_state(&self, state: &BoardState) -> Result<()> {
        let dir = self.root.join("boards");
        std::fs::create_dir_all(&dir).map_err(|e| crate::error::Error::io(&dir, e))?;
        let path = self.board_state_path(&BoardName::new(state.board.as_str()));
        write_atomic(&path, &to_json_bytes(state)?)?;
        sync_dir(&dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_board_state_is_written_whole_and_read_back() {
        let dir = std::env::temp_dir().join(format!("bp-board-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let b = BoardName::new("pi-1");
        assert_eq!(store.board_state(&b).unwrap(), None);
        let s = BoardState {
            format: super::super::FORMAT,
            board: "pi-1".into(),
            image: "bookworm".into(),
            identity: "sha256:ab".into(),
            verified_session: "1-2".into(),
            host_key: None,
        };
        store.write_board_state(&s).unwrap();
        assert_eq!(store.board_state(&b).unwrap(), Some(s));
        // The cells' listing does not mistake boards/ for a cell.
        assert!(store.all().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
