//! Matrix expansion and cell keys: scenario -> the list of cells to measure. Pure, no I/O.
//!
//! A cell is one (image, board, storage, filesystem, test). Cells that cannot apply
//! (a storage the board lacks, formatting a storage with no device) are kept aside
//! with the reason, so `plan` can say why they are not there.

pub mod glob;
pub mod key;
pub mod state;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

pub use key::CellKey;

use crate::model::{
    AS_IS, BoardName, CellPattern, Filesystem, Flash, FsName, ImageName, ImageSource, Method,
    ParamValue, Scenario, StorageName, StorageRole, TestName, Workspace,
};

/// Where a cell sits in the matrix. `storage` and `filesystem` are None for tests
/// that do not touch storage.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
pub struct Address {
    pub image: ImageName,
    pub board: BoardName,
    pub storage: Option<StorageName>,
    pub filesystem: Option<FsName>,
    pub test: TestName,
}

impl Address {
    /// `test on board [storage/filesystem] (image)`, for messages.
    pub fn label(&self) -> String {
        let mut s = format!("{} on {}", self.test, self.board);
        if let Some(st) = &self.storage {
            s.push_str(&format!(" {st}"));
            if let Some(fs) = &self.filesystem {
                s.push_str(&format!("/{fs}"));
            }
        }
        s.push_str(&format!(" ({})", self.image));
        s
    }

    fn matches(&self, p: &CellPattern) -> bool {
        fn axis(p: &Option<String>, v: Option<&str>) -> bool {
            match (p, v) {
                (None, _) => true,
                (Some(p), Some(v)) => glob::matches(p, v),
                // A pattern on storage never matches a cell without storage.
                (Some(_), None) => false,
            }
        }
        axis(&p.image, Some(self.image.as_str()))
            && axis(&p.board, Some(self.board.as_str()))
            && axis(&p.storage, self.storage.as_ref().map(|s| s.as_str()))
            && axis(&p.filesystem, self.filesystem.as_ref().map(|s| s.as_str()))
            && axis(&p.test, Some(self.test.as_str()))
    }
}

/// One cell to measure: its address, identity and everything apply needs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub key: CellKey,
    pub address: Address,
    /// The canonical inputs document the key hashes; stored as `cell.json`'s `inputs`.
    pub inputs: Value,
    /// Template parameters: the recipe's defaults with the scenario's overrides.
    pub params: BTreeMap<String, ParamValue>,
    pub method: Method,
}

impl Cell {
    /// The store directory name: key, then test and board for people browsing it.
    pub fn dir_name(&self) -> String {
        format!("{}-{}-{}", self.key, self.address.test, self.address.board)
    }
}

/// A combination the matrix names that cannot be measured, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    pub address: Address,
    pub reason: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub skipped: Vec<Skipped>,
}

fn as_is() -> Filesystem {
    Filesystem {
        name: FsName::new(AS_IS),
        kind: AS_IS.to_string(),
        mkfs_options: Vec::new(),
        mount_options: Vec::new(),
    }
}

/// Expands one scenario's matrix into cells, in a stable order (board, then the
/// matrix's own order of image, test, storage, filesystem), so that plans and run
/// orders are reproducible.
pub fn expand(ws: &Workspace, scenario: &Scenario) -> Plan {
    let m = &scenario.matrix;
    let mut candidates: BTreeSet<Address> = BTreeSet::new();
    let mut order: Vec<Address> = Vec::new();
    let mut skipped = Vec::new();
    let mut push = |a: Address, order: &mut Vec<Address>| {
        if candidates.insert(a.clone()) {
            order.push(a);
        }
    };

    // Every combination of the axes; storage globs are matched per board.
    let product = |images: &[ImageName],
                   boards: &[BoardName],
                   storages: &[String],
                   filesystems: &[FsName],
                   tests: &[TestName],
                   skipped: &mut Vec<Skipped>|
     -> Vec<Address> {
        let mut out = Vec::new();
        for board_name in boards {
            let Some(board) = ws.boards.get(board_name) else {
                continue;
            };
            for image in images {
                for test in tests {
                    let Some(recipe) = ws.recipes.get(test) else {
                        continue;
                    };
                    if !recipe.uses_storage {
                        out.push(Address {
                            image: image.clone(),
                            board: board_name.clone(),
                            storage: None,
                            filesystem: None,
                            test: test.clone(),
                        });
                        continue;
                    }
                    for pattern in storages {
                        let matching: Vec<_> = board
                            .storage
                            .iter()
                            .filter(|s| glob::matches(pattern, s.name.as_str()))
                            .collect();
                        if matching.is_empty() {
                            skipped.push(Skipped {
                                address: Address {
                                    image: image.clone(),
                                    board: board_name.clone(),
                                    storage: Some(StorageName::new(pattern.clone())),
                                    filesystem: None,
                                    test: test.clone(),
                                },
                                reason: format!(
                                    "board {board_name} has no storage matching `{pattern}`"
                                ),
                            });
                        }
                        for st in matching {
                            for fs in filesystems {
                                out.push(Address {
                                    image: image.clone(),
                                    board: board_name.clone(),
                                    storage: Some(st.name.clone()),
                                    filesystem: Some(fs.clone()),
                                    test: test.clone(),
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    };

    for a in product(
        &m.image,
        &m.board,
        &m.storage,
        &m.filesystem,
        &m.test,
        &mut skipped,
    ) {
        if !m.exclude.iter().any(|p| a.matches(p)) {
            push(a, &mut order);
        }
    }
    // `include` adds combinations back (even excluded ones), with each unnamed axis
    // taking the matrix's values, as CI matrices do.
    for inc in &m.include {
        let pick = |p: &Option<String>, all: Vec<String>, known: Vec<String>| -> Vec<String> {
            match p {
                None => all,
                Some(p) => known.into_iter().filter(|k| glob::matches(p, k)).collect(),
            }
        };
        let names = |v: &[_]| -> Vec<String> { v.iter().map(|x: &String| x.clone()).collect() };
        let images: Vec<ImageName> = pick(
            &inc.image,
            m.image.iter().map(|x| x.0.clone()).collect(),
            scenario.images.keys().map(|x| x.0.clone()).collect(),
        )
        .into_iter()
        .map(ImageName)
        .collect();
        let boards: Vec<BoardName> = pick(
            &inc.board,
            m.board.iter().map(|x| x.0.clone()).collect(),
            ws.boards.keys().map(|x| x.0.clone()).collect(),
        )
        .into_iter()
        .map(BoardName)
        .collect();
        let storages = match &inc.storage {
            None => names(&m.storage),
            Some(p) => vec![p.clone()],
        };
        let mut known_fs: Vec<String> = scenario.filesystems.keys().map(|x| x.0.clone()).collect();
        known_fs.push(AS_IS.to_string());
        let filesystems: Vec<FsName> = pick(
            &inc.filesystem,
            m.filesystem.iter().map(|x| x.0.clone()).collect(),
            known_fs,
        )
        .into_iter()
        .map(FsName)
        .collect();
        let tests: Vec<TestName> = pick(
            &inc.test,
            m.test.iter().map(|x| x.0.clone()).collect(),
            ws.recipes.keys().map(|x| x.0.clone()).collect(),
        )
        .into_iter()
        .map(TestName)
        .collect();
        for a in product(
            &images,
            &boards,
            &storages,
            &filesystems,
            &tests,
            &mut skipped,
        ) {
            push(a, &mut order);
        }
    }

    let mut cells = Vec::with_capacity(order.len());
    for a in order {
        match make_cell(ws, scenario, &a) {
            Ok(c) => cells.push(c),
            Err(reason) => skipped.push(Skipped { address: a, reason }),
        }
    }
    // Stable and grouped by board: each board's worker walks its cells in this order.
    cells.sort_by(|x, y| x.address.board.cmp(&y.address.board));
    Plan { cells, skipped }
}

/// Builds a cell, or says why this combination cannot be measured.
fn make_cell(ws: &Workspace, scenario: &Scenario, a: &Address) -> Result<Cell, String> {
    let board = ws
        .boards
        .get(&a.board)
        .ok_or_else(|| format!("unknown board {}", a.board))?;
    let recipe = ws
        .recipes
        .get(&a.test)
        .ok_or_else(|| format!("unknown test {}", a.test))?;
    let image = scenario
        .images
        .get(&a.image)
        .ok_or_else(|| format!("unknown image {}", a.image))?;
    if !matches!(image.source, ImageSource::Installed) && board.flash == Flash::None {
        return Err(format!(
            "image {} must be flashed, but board {} has no [flash] method",
            a.image, a.board
        ));
    }
    let storage = match &a.storage {
        None => None,
        Some(name) => Some(
            board
                .storage(name)
                .ok_or_else(|| format!("board {} has no storage {name}", a.board))?,
        ),
    };
    let filesystem = match &a.filesystem {
        None => None,
        Some(fs) if fs.as_str() == AS_IS => Some(as_is()),
        Some(fs) => {
            let f = scenario
                .filesystems
                .get(fs)
                .ok_or_else(|| format!("unknown filesystem {fs}"))?;
            let st = storage.ok_or("a filesystem needs a storage")?;
            if st.role == StorageRole::Boot {
                return Err(format!(
                    "storage {} is the boot storage; benchpipe never formats it",
                    st.name
                ));
            }
            if st.device.is_none() {
                return Err(format!(
                    "storage {} has no device, so it cannot be formatted as {fs}",
                    st.name
                ));
            }
            Some(f.clone())
        }
    };
    let mut params = recipe.params.clone();
    if let Some(over) = scenario.params.get(&a.test) {
        for (k, v) in over {
            params.insert(k.clone(), v.clone());
        }
    }
    let inputs = key::cell_inputs(
        image,
        board,
        storage,
        filesystem.as_ref(),
        recipe,
        &params,
        &scenario.method,
    );
    Ok(Cell {
        key: CellKey::of(&inputs),
        address: a.clone(),
        inputs,
        params,
        method: scenario.method.clone(),
    })
}
