//! The cell vocabulary every layer uses: where a cell sits (`Address`), the cell itself
//! (`Cell`), its key (`CellKey`, `key.rs`) and a combination that cannot be a cell
//! (`Skipped`). Data only: `plan` makes cells, `store` files them, `apply` and `report`
//! read them. It sits just above `model` (a cell holds the model's method, image and
//! names) and imports nothing else of the crate but the leaves `canonical` and `glob`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::canonical::CellInputs;
use crate::glob;
use crate::model::{
    BoardName, CellPattern, Cluster, Filesystem, FsName, Image, ImageName, Method, NetworkName,
    ParamValue, StorageName, TestName,
};

mod key;

pub use key::{CellKey, ENCODING};

/// Where a cell sits in the matrix. `storage` and `filesystem` are None for tests
/// that do not touch storage.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
pub struct Address {
    pub image: ImageName,
    pub board: BoardName,
    pub storage: Option<StorageName>,
    pub filesystem: Option<FsName>,
    /// The link a networked test runs over, when the matrix has a `network` axis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkName>,
    pub test: TestName,
}

impl Address {
    /// Its first name that is no name a file could give (`model::is_plain_name`), as
    /// `(field, value)`: an address read back from a store is checked before its names
    /// make a path (`boards/<board>.facts.json`, a cell's directory).
    pub fn bad_name(&self) -> Option<(&'static str, &str)> {
        let names = [
            ("image", Some(self.image.as_str())),
            ("board", Some(self.board.as_str())),
            ("storage", self.storage.as_ref().map(StorageName::as_str)),
            ("filesystem", self.filesystem.as_ref().map(FsName::as_str)),
            ("network", self.network.as_ref().map(NetworkName::as_str)),
            ("test", Some(self.test.as_str())),
        ];
        names.into_iter().find_map(|(field, name)| {
            name.filter(|n| !crate::model::is_plain_name(n))
                .map(|n| (field, n))
        })
    }

    /// `test on board [storage/filesystem] (image)`, for messages.
    pub fn label(&self) -> String {
        let mut s = format!("{} on {}", self.test, self.board);
        if let Some(st) = &self.storage {
            let _ = write!(s, " {st}");
            if let Some(fs) = &self.filesystem {
                let _ = write!(s, "/{fs}");
            }
        }
        if let Some(n) = &self.network {
            let _ = write!(s, " over {n}");
        }
        let _ = write!(s, " ({})", self.image);
        s
    }

    /// Whether this address matches a pattern (globs; an absent axis matches all).
    pub fn matches(&self, p: &CellPattern) -> bool {
        fn axis(p: Option<&String>, v: Option<&str>) -> bool {
            match (p, v) {
                (None, _) => true,
                (Some(p), Some(v)) => glob::matches(p, v),
                // A pattern on storage never matches a cell without storage.
                (Some(_), None) => false,
            }
        }
        axis(p.image.as_ref(), Some(self.image.as_str()))
            && axis(p.board.as_ref(), Some(self.board.as_str()))
            && axis(
                p.storage.as_ref(),
                self.storage.as_ref().map(StorageName::as_str),
            )
            && axis(
                p.filesystem.as_ref(),
                self.filesystem.as_ref().map(FsName::as_str),
            )
            && axis(
                p.network.as_ref(),
                self.network.as_ref().map(NetworkName::as_str),
            )
            && axis(p.test.as_ref(), Some(self.test.as_str()))
    }
}

/// One cell to measure: its address, identity and everything apply needs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub key: CellKey,
    pub address: Address,
    /// The inputs the key hashes; their JSON form (`CellInputs::json`) is stored as
    /// `cell.json`'s `inputs`.
    pub inputs: CellInputs,
    /// Template parameters: the recipe's defaults with the scenario's overrides.
    pub params: BTreeMap<String, ParamValue>,
    pub method: Method,
    /// The filesystem to prepare on the cell's storage (`as-is` prepares nothing).
    pub filesystem: Option<Filesystem>,
    /// The image as its scenario declares it: what to flash and what to expect after
    /// boot (its identity is in the key, its expectations are not).
    pub image: Image,
    /// The cluster the cell's board axis value names, when it names one: its cells
    /// run on every member (the identity of the members is in the key).
    pub cluster: Option<Cluster>,
    /// The board its `on = "peer"` steps run on (its `peer` parameter).
    pub peer: Option<BoardName>,
    /// The size of the cell's own tmpfs, when its recipe has a `[tmpfs]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmpfs: Option<crate::model::TmpfsSize>,
}

impl Cell {
    /// The store directory name: key, then test and board for people browsing it.
    pub fn dir_name(&self) -> String {
        format!("{}-{}-{}", self.key, self.address.test, self.address.board)
    }
}

/// A combination the matrix names that cannot be measured, and why.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Skipped {
    pub address: Address,
    pub reason: String,
}
