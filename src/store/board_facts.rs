//! What benchpipe learnt about a board's kernel per image, in
//! `results/boards/<board>.facts.json`: the filesystems it can or cannot mount. The plan
//! reads it to show a cell its kernel cannot run as skipped, with the reason, before
//! anything runs again (`plan::known`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Store;
use super::files::{read_json, sync_dir, to_json_bytes, write_atomic};
use crate::error::Result;
use crate::model::BoardName;

/// The board's facts, per image identity (`sha256:...` or `installed:NAME`, as in the
/// cell key): a flashed image brings its own kernel.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BoardFacts {
    pub format: u32,
    pub board: String,
    #[serde(default)]
    pub images: BTreeMap<String, KernelFacts>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelFacts {
    /// Filesystem kind -> whether the kernel can mount it (`/proc/filesystems`, or a
    /// module `modprobe -n` finds), as probed before mkfs.
    #[serde(default)]
    pub filesystems: BTreeMap<String, bool>,
}

impl Store {
    fn board_facts_path(&self, board: &BoardName) -> std::path::PathBuf {
        self.root.join("boards").join(format!("{board}.facts.json"))
    }

    /// The board's recorded facts; `None` when nothing was probed yet.
    pub fn board_facts(&self, board: &BoardName) -> Result<Option<BoardFacts>> {
        read_json(&self.board_facts_path(board))
    }

    /// Every board's recorded facts, for `boards`.
    pub fn all_board_facts<'b>(
        &self,
        boards: impl IntoIterator<Item = &'b BoardName>,
    ) -> Result<BTreeMap<BoardName, BoardFacts>> {
        let mut out = BTreeMap::new();
        for b in boards {
            if let Some(f) = self.board_facts(b)? {
                out.insert(b.clone(), f);
            }
        }
        Ok(out)
    }

    /// Records whether the board's kernel at `identity` mounts `kind`. Only the board's
    /// own worker writes its file, under apply's lock.
    pub fn record_kernel_filesystem(
        &self,
        board: &BoardName,
        identity: &str,
        kind: &str,
        supported: bool,
    ) -> Result<()> {
        let mut facts = self.board_facts(board)?.unwrap_or_else(|| BoardFacts {
            format: super::FORMAT,
            board: board.to_string(),
            images: BTreeMap::new(),
        });
        facts
            .images
            .entry(identity.to_string())
            .or_default()
            .filesystems
            .insert(kind.to_string(), supported);
        let dir = self.root.join("boards");
        std::fs::create_dir_all(&dir).map_err(|e| crate::error::Error::io(&dir, e))?;
        write_atomic(&self.board_facts_path(board), &to_json_bytes(&facts)?)?;
        sync_dir(&dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_facts_accumulate_per_image_and_are_not_cells() {
        let dir = std::env::temp_dir().join(format!("bp-board-facts-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let b = BoardName::new("pi-1");
        assert_eq!(store.board_facts(&b).unwrap(), None);
        store
            .record_kernel_filesystem(&b, "installed:x", "f2fs", false)
            .unwrap();
        store
            .record_kernel_filesystem(&b, "installed:x", "xfs", true)
            .unwrap();
        store
            .record_kernel_filesystem(&b, "sha256:ab", "f2fs", true)
            .unwrap();
        let f = store.board_facts(&b).unwrap().unwrap();
        assert!(!f.images["installed:x"].filesystems["f2fs"]);
        assert!(f.images["installed:x"].filesystems["xfs"]);
        assert!(f.images["sha256:ab"].filesystems["f2fs"]);
        assert!(store.all().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
