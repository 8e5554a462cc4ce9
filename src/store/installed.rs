//! Per-board record in `results/boards/<board>.installed.json` of what benchpipe's
//! provisioning did there: the packages it installed, the units their install enabled
//! that it disabled again, and whether it brought its own `policy-rc.d` or kept the
//! board's. What an install leaves behind can be found and undone from it.

use serde::{Deserialize, Serialize};

use super::Store;
use super::files::{read_json, sync_dir, to_json_bytes, write_atomic};
use crate::error::Result;
use crate::model::BoardName;

/// At most this many installs are kept per board, the newest.
pub const MAX_INSTALLS: usize = 64;
/// At most this many names are kept per list of one install.
pub const MAX_NAMES: usize = 512;

/// One provisioning install on one side of a board's walk.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Install {
    /// The apply session.
    pub session: String,
    /// Where: the board or peer's name, a cluster member's, or `the controller`.
    pub side: String,
    /// The package manager (`apt`).
    pub manager: String,
    /// `benchpipe` (it wrote /usr/sbin/policy-rc.d and removed it) or `kept` (the
    /// board's own forbade daemons to start, and was left as it was).
    pub policy: String,
    /// Packages this install added (dependencies included).
    pub packages: Vec<String>,
    /// Units (or init scripts, `init.d/NAME`) the install enabled and benchpipe
    /// disabled again.
    pub disabled: Vec<String>,
    /// What an earlier install, interrupted, had left and this one took back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovered_packages: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recovered_disabled: Vec<String>,
}

/// The file: every install benchpipe made on the board, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Installed {
    pub format: u32,
    pub board: String,
    pub installs: Vec<Install>,
}

impl Store {
    fn installed_path(&self, board: &BoardName) -> std::path::PathBuf {
        self.root
            .join("boards")
            .join(format!("{board}.installed.json"))
    }

    /// What benchpipe installed on the board; `None` when it never installed anything.
    pub fn installed(&self, board: &BoardName) -> Result<Option<Installed>> {
        read_json(&self.installed_path(board))
    }

    /// Adds an install to the board's record (the oldest dropped past `MAX_INSTALLS`),
    /// replacing the file atomically.
    pub fn record_install(&self, board: &BoardName, mut install: Install) -> Result<()> {
        for list in [
            &mut install.packages,
            &mut install.disabled,
            &mut install.recovered_packages,
            &mut install.recovered_disabled,
        ] {
            list.truncate(MAX_NAMES);
        }
        let mut doc = self.installed(board)?.unwrap_or_else(|| Installed {
            format: super::FORMAT,
            board: board.to_string(),
            installs: Vec::new(),
        });
        doc.installs.push(install);
        let over = doc.installs.len().saturating_sub(MAX_INSTALLS);
        doc.installs.drain(..over);
        let dir = self.root.join("boards");
        std::fs::create_dir_all(&dir).map_err(|e| crate::error::Error::io(&dir, e))?;
        write_atomic(&self.installed_path(board), &to_json_bytes(&doc)?)?;
        sync_dir(&dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installs_are_appended_bounded_and_read_back() {
        let dir = std::env::temp_dir().join(format!("bp-installed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let b = BoardName::new("pi-1");
        assert_eq!(store.installed(&b).unwrap(), None);
        for i in 0..MAX_INSTALLS + 3 {
            store
                .record_install(
                    &b,
                    Install {
                        session: format!("s{i}"),
                        side: "pi-1".into(),
                        manager: "apt".into(),
                        policy: "benchpipe".into(),
                        packages: vec!["x".to_string(); MAX_NAMES + 5],
                        ..Install::default()
                    },
                )
                .unwrap();
        }
        let doc = store.installed(&b).unwrap().unwrap();
        assert_eq!(doc.installs.len(), MAX_INSTALLS);
        assert_eq!(doc.installs[0].session, "s3");
        assert_eq!(doc.installs[0].packages.len(), MAX_NAMES);
        // The cells' listing does not mistake it for a cell.
        assert!(store.all().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
