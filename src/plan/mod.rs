//! Matrix expansion and cell keys: scenario -> the list of cells to measure. Pure, no I/O.
//!
//! A cell is one (image, board, storage, filesystem, network, test); a raw-device test
//! (`uses_storage = "device"`) has no filesystem, and a test that does not use the
//! network (or a matrix without a `network` axis) has no network. Cells that cannot apply
//! (a storage the board lacks, formatting a storage with no device) are kept aside
//! with the reason, so `plan` can say why they are not there.

mod bound;
pub mod diff;
pub mod drift;
use crate::canonical::CellInputs;
use crate::glob;
pub mod key;
pub mod known;
pub mod schedule;
pub mod select;
pub mod shard;
pub mod state;
pub mod stored;
mod systems;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

pub use bound::{Bound, bound};
// The cell vocabulary moved to `crate::cell`; these names stay for plan's users above
// it (apply, report, cli, tests: 45 files), as the plan's own words for its cells.
pub use crate::cell::{Address, Cell, CellKey, Skipped};

use crate::model::{
    AS_IS, Board, BoardName, Filesystem, Flash, FsName, Image, ImageName, ImageSource, NetworkName,
    ParamValue, Recipe, Scenario, StorageName, StorageRole, TestName, Workspace,
};

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub skipped: Vec<Skipped>,
}

pub(crate) fn as_is() -> Filesystem {
    Filesystem {
        name: FsName::new(AS_IS),
        kind: AS_IS.to_string(),
        mkfs_options: Vec::new(),
        mount_options: Vec::new(),
    }
}

/// The most cells a matrix may expand to unless raised (`--max-cells`): more is surely
/// a mistake, and expanding it would take the machine's memory.
pub const DEFAULT_MAX_CELLS: u64 = 100_000;

/// The axes of one block of combinations: the matrix itself, or one `include`.
struct Block {
    images: Vec<ImageName>,
    boards: Vec<BoardName>,
    storages: Vec<String>,
    /// Network patterns; empty: no network axis.
    networks: Vec<String>,
    filesystems: Vec<FsName>,
    tests: Vec<TestName>,
}

/// The matrix's blocks: the matrix, then each `include`, which adds combinations back
/// (even excluded ones), with each unnamed axis taking the matrix's values, as CI
/// matrices do.
fn blocks(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
) -> Vec<Block> {
    let m = &scenario.matrix;
    let mut out = vec![Block {
        images: m.image.clone(),
        boards: m.board.clone(),
        storages: m.storage.clone(),
        networks: m.network.clone(),
        filesystems: m.filesystem.clone(),
        tests: m.test.clone(),
    }];
    for inc in &m.include {
        let pick = |p: &Option<String>, all: Vec<String>, known: Vec<String>| -> Vec<String> {
            match p {
                None => all,
                Some(p) => known.into_iter().filter(|k| glob::matches(p, k)).collect(),
            }
        };
        let mut known_fs: Vec<String> = scenario.filesystems.keys().map(|x| x.0.clone()).collect();
        known_fs.push(AS_IS.to_string());
        out.push(Block {
            images: pick(
                &inc.image,
                m.image.iter().map(|x| x.0.clone()).collect(),
                scenario.images.keys().map(|x| x.0.clone()).collect(),
            )
            .into_iter()
            .map(ImageName)
            .collect(),
            boards: pick(
                &inc.board,
                m.board.iter().map(|x| x.0.clone()).collect(),
                boards.keys().map(|x| x.0.clone()).collect(),
            )
            .into_iter()
            .map(BoardName)
            .collect(),
            storages: match &inc.storage {
                None => m.storage.clone(),
                Some(p) => vec![p.clone()],
            },
            networks: match &inc.network {
                None => m.network.clone(),
                Some(p) => vec![p.clone()],
            },
            filesystems: pick(
                &inc.filesystem,
                m.filesystem.iter().map(|x| x.0.clone()).collect(),
                known_fs,
            )
            .into_iter()
            .map(FsName)
            .collect(),
            tests: pick(
                &inc.test,
                m.test.iter().map(|x| x.0.clone()).collect(),
                recipes.keys().map(|x| x.0.clone()).collect(),
            )
            .into_iter()
            .map(TestName)
            .collect(),
        });
    }
    out
}

/// Below this many cells a plan is made on one thread.
const CELLS_PER_THREAD_MIN: usize = 512;

/// Expands one scenario's matrix into cells, in a stable order (board, then the
/// matrix's own order of image, test, storage, filesystem), so that plans and run
/// orders are reproducible. Callers bound the size first (`bound`).
pub fn expand(ws: &Workspace, scenario: &Scenario) -> Plan {
    expand_in(&ws.boards, &ws.recipes, scenario)
}

/// `expand`, given the boards and recipes rather than a whole workspace.
pub fn expand_in(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
) -> Plan {
    let m = &scenario.matrix;
    let mut candidates: BTreeSet<Address> = BTreeSet::new();
    let mut order: Vec<Address> = Vec::new();
    let mut skipped = Vec::new();

    for (i, block) in blocks(boards, recipes, scenario).iter().enumerate() {
        let excludes = if i == 0 { m.exclude.as_slice() } else { &[] };
        for board_name in &block.boards {
            if scenario.clusters.contains_key(board_name) {
                for image in &block.images {
                    for test in block.tests.iter().filter(|t| recipes.contains_key(*t)) {
                        let a = Address {
                            image: image.clone(),
                            board: board_name.clone(),
                            storage: None,
                            filesystem: None,
                            network: None,
                            test: test.clone(),
                        };
                        if !excludes.iter().any(|p| a.matches(p)) && candidates.insert(a.clone()) {
                            order.push(a);
                        }
                    }
                }
                continue;
            }
            let Some(board) = boards.get(board_name) else {
                continue;
            };
            for image in &block.images {
                for test in &block.tests {
                    let Some(recipe) = recipes.get(test) else {
                        continue;
                    };
                    let mut push = |a: Address| {
                        if !excludes.iter().any(|p| a.matches(p)) && candidates.insert(a.clone()) {
                            order.push(a);
                        }
                    };
                    // The links a networked test runs over: each network the board
                    // declares that a pattern names; none without a network axis.
                    let mut networks: Vec<Option<NetworkName>> = Vec::new();
                    if recipe.uses_network && !block.networks.is_empty() {
                        for pattern in &block.networks {
                            let matching: Vec<_> = board
                                .network
                                .iter()
                                .filter(|n| glob::matches(pattern, n.name.as_str()))
                                .collect();
                            let address = Address {
                                image: image.clone(),
                                board: board_name.clone(),
                                storage: None,
                                filesystem: None,
                                network: Some(NetworkName::new(pattern.clone())),
                                test: test.clone(),
                            };
                            // A combination the scenario excludes is not news: only
                            // what it asks for and cannot have is listed.
                            if matching.is_empty() && !excludes.iter().any(|p| address.matches(p)) {
                                skipped.push(Skipped {
                                    address,
                                    reason: CannotMeasure::NoNetworkMatching {
                                        board: board_name.clone(),
                                        pattern: pattern.clone(),
                                    }
                                    .to_string(),
                                });
                            }
                            for n in matching {
                                if !networks.contains(&Some(n.name.clone())) {
                                    networks.push(Some(n.name.clone()));
                                }
                            }
                        }
                    } else {
                        networks.push(None);
                    }
                    for network in networks {
                        let at =
                            |storage: Option<StorageName>, filesystem: Option<FsName>| Address {
                                image: image.clone(),
                                board: board_name.clone(),
                                storage,
                                filesystem,
                                network: network.clone(),
                                test: test.clone(),
                            };
                        if !recipe.uses_storage {
                            push(at(None, None));
                            continue;
                        }
                        for pattern in &block.storages {
                            let matching: Vec<_> = board
                                .storage
                                .iter()
                                .filter(|s| glob::matches(pattern, s.name.as_str()))
                                .collect();
                            if matching.is_empty() {
                                skipped.push(Skipped {
                                    address: at(Some(StorageName::new(pattern.clone())), None),
                                    reason: CannotMeasure::NoStorageMatching {
                                        board: board_name.clone(),
                                        pattern: pattern.clone(),
                                    }
                                    .to_string(),
                                });
                            }
                            for st in matching {
                                // A raw-device test reads the device whatever filesystem
                                // is on it: one cell per device, with no filesystem.
                                if recipe.raw_device {
                                    push(at(Some(st.name.clone()), None));
                                    continue;
                                }
                                for fs in &block.filesystems {
                                    push(at(Some(st.name.clone()), Some(fs.clone())));
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    // Each cell's key hashes its inputs: a big matrix's cells are made on every core.
    // The test's and method's parts of the inputs, made once per test and shared by its
    // cells.
    let mut shared: BTreeMap<TestName, key::Parts> = BTreeMap::new();
    for a in &order {
        if let (false, Some(recipe)) = (shared.contains_key(&a.test), recipes.get(&a.test)) {
            let params = cell_params(recipe, scenario);
            let parts = key::Parts::shared(recipe, &params, &scenario.method);
            shared.insert(a.test.clone(), parts);
        }
    }
    let made = crate::parallel::map(&order, CELLS_PER_THREAD_MIN, |a| {
        make_cell(boards, recipes, scenario, a, &shared)
    });
    let mut cells = Vec::with_capacity(order.len());
    for (a, made) in order.into_iter().zip(made) {
        match made {
            Ok(c) => cells.push(c),
            Err(e) => skipped.push(Skipped {
                address: a,
                reason: e.to_string(),
            }),
        }
    }
    // Stable and grouped by board: each board's worker walks its cells in this order.
    // By a key taken once, so that a big plan's cells are moved once each, not at every
    // step of a merge.
    cells.sort_by_cached_key(|c| c.address.board.clone());
    Plan { cells, skipped }
}

/// Why a combination the matrix names cannot be measured: `Skipped::reason` is its text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CannotMeasure {
    #[error("unknown board {0}")]
    UnknownBoard(BoardName),
    #[error("unknown test {0}")]
    UnknownTest(TestName),
    #[error("unknown image {0}")]
    UnknownImage(ImageName),
    #[error("unknown filesystem {0}")]
    UnknownFilesystem(FsName),
    /// A storage pattern of the matrix matches none of the board's storages.
    #[error("board {board} has no storage matching `{pattern}`")]
    NoStorageMatching { board: BoardName, pattern: String },
    /// A network pattern of the matrix matches none of the board's `[[network]]`.
    #[error("board {board} has no network matching `{pattern}`")]
    NoNetworkMatching { board: BoardName, pattern: String },
    #[error("board {board} has no network {network}")]
    NoSuchNetwork {
        board: BoardName,
        network: NetworkName,
    },
    #[error("board {board} has no storage {storage}")]
    NoSuchStorage {
        board: BoardName,
        storage: StorageName,
    },
    #[error("image {image} must be flashed, but board {board} has no [flash] method")]
    NoFlashMethod { image: ImageName, board: BoardName },
    #[error(
        "test {test} reads the storage's block device, but storage {storage} declares no device"
    )]
    NoDeviceToRead {
        test: TestName,
        storage: StorageName,
    },
    #[error("a filesystem needs a storage")]
    FilesystemWithoutStorage,
    #[error("storage {storage} is the boot storage; benchpipe never formats it")]
    BootStorage { storage: StorageName },
    /// The board's kernel cannot mount the filesystem: probed before mkfs, and known
    /// from the store's board facts thereafter (`known`).
    #[error("the kernel of {board} has no {kind}")]
    KernelLacks { board: BoardName, kind: String },
    #[error("storage {storage} has no device, so it cannot be formatted as {filesystem}")]
    NoDeviceToFormat {
        storage: StorageName,
        filesystem: FsName,
    },
    /// A cluster has no storage axis: its cells touch no storage.
    #[error("test {test} uses storage, and cluster {cluster} has no storage axis")]
    ClusterStorage { test: TestName, cluster: BoardName },
    #[error("test {test} runs a step on a peer board; a cluster's tests run on its members")]
    ClusterPeer { test: TestName, cluster: BoardName },
    #[error("the peer of test {test} on {board} is {board} itself")]
    PeerIsBoard { test: TestName, board: BoardName },
    #[error("the peer `{peer}` of test {test} is no board")]
    UnknownPeer { test: TestName, peer: String },
    /// The recipe's `[tmpfs] size` gives no usable size with the cell's parameters
    /// (`check` refuses this first).
    #[error("the tmpfs of {test}: {reason}")]
    TmpfsSize { test: TestName, reason: String },
    #[error("test {test} mounts a tmpfs of its own, and cluster {cluster} has no storage axis")]
    ClusterTmpfs { test: TestName, cluster: BoardName },
}

/// Builds a cell, or says why this combination cannot be measured.
fn make_cell(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
    a: &Address,
    shared: &BTreeMap<TestName, key::Parts>,
) -> Result<Cell, CannotMeasure> {
    let recipe = recipes
        .get(&a.test)
        .ok_or_else(|| CannotMeasure::UnknownTest(a.test.clone()))?;
    let image = scenario
        .images
        .get(&a.image)
        .ok_or_else(|| CannotMeasure::UnknownImage(a.image.clone()))?;
    if let Some(cluster) = scenario.clusters.get(&a.board) {
        return systems::cluster_cell(boards, recipe, scenario, image, cluster, a);
    }
    let board = boards
        .get(&a.board)
        .ok_or_else(|| CannotMeasure::UnknownBoard(a.board.clone()))?;
    if !matches!(image.source, ImageSource::Installed) {
        let (image, board_name) = (a.image.clone(), a.board.clone());
        match &board.flash {
            Flash::None => {
                return Err(CannotMeasure::NoFlashMethod {
                    image,
                    board: board_name,
                });
            }
            Flash::Dd { .. } | Flash::Command { .. } | Flash::Tpi { .. } => {}
        }
    }
    let storage = match &a.storage {
        None => None,
        Some(name) => Some(
            board
                .storage(name)
                .ok_or_else(|| CannotMeasure::NoSuchStorage {
                    board: a.board.clone(),
                    storage: name.clone(),
                })?,
        ),
    };
    let network = match &a.network {
        None => None,
        Some(name) => Some(
            board
                .network(name)
                .ok_or_else(|| CannotMeasure::NoSuchNetwork {
                    board: a.board.clone(),
                    network: name.clone(),
                })?,
        ),
    };
    if let Some(st) = storage
        && recipe.uses_device
        && st.device.is_none()
    {
        return Err(CannotMeasure::NoDeviceToRead {
            test: a.test.clone(),
            storage: st.name.clone(),
        });
    }
    let filesystem = match &a.filesystem {
        None => None,
        Some(fs) if fs.as_str() == AS_IS => Some(as_is()),
        Some(fs) => {
            let f = scenario
                .filesystems
                .get(fs)
                .ok_or_else(|| CannotMeasure::UnknownFilesystem(fs.clone()))?;
            let st = storage.ok_or(CannotMeasure::FilesystemWithoutStorage)?;
            // `as-flashed` formats nothing: any storage, boot included, and any path.
            if !f.is_made() {
                let found = Found {
                    recipe,
                    scenario,
                    image,
                    board,
                    storage,
                    network,
                    address: a,
                };
                return finish(&found, Some(f.clone()), (boards, shared));
            }
            if st.role == StorageRole::Boot {
                return Err(CannotMeasure::BootStorage {
                    storage: st.name.clone(),
                });
            }
            if st.device.is_none() {
                return Err(CannotMeasure::NoDeviceToFormat {
                    storage: st.name.clone(),
                    filesystem: fs.clone(),
                });
            }
            Some(f.clone())
        }
    };
    let found = Found {
        recipe,
        scenario,
        image,
        board,
        storage,
        network,
        address: a,
    };
    finish(&found, filesystem, (boards, shared))
}

/// A cell's template parameters: the recipe's defaults with the scenario's overrides.
fn cell_params(recipe: &Recipe, scenario: &Scenario) -> BTreeMap<String, ParamValue> {
    let mut params = recipe.params.clone();
    if let Some(over) = scenario.params.get(&recipe.name) {
        for (k, v) in over {
            params.insert(k.clone(), v.clone());
        }
    }
    params
}

/// What an address's axes were found to be, before the filesystem is judged.
struct Found<'a> {
    recipe: &'a Recipe,
    scenario: &'a Scenario,
    image: &'a Image,
    board: &'a Board,
    storage: Option<&'a crate::model::Storage>,
    network: Option<&'a crate::model::Network>,
    address: &'a Address,
}

/// The cell of an address whose inputs are all found and allowed.
fn finish(
    found: &Found<'_>,
    filesystem: Option<Filesystem>,
    (boards, shared): (&BTreeMap<BoardName, Board>, &BTreeMap<TestName, key::Parts>),
) -> Result<Cell, CannotMeasure> {
    let &Found {
        recipe,
        scenario,
        image,
        board,
        storage,
        network,
        address: a,
    } = found;
    let params = cell_params(recipe, scenario);
    let peer = systems::peer_of(boards, recipe, &params, a)?;
    let tmpfs = match &recipe.tmpfs {
        None => None,
        Some(spec) => Some(crate::storage::tmpfs::resolve(&spec.size, &params).map_err(
            |reason| CannotMeasure::TmpfsSize {
                test: a.test.clone(),
                reason,
            },
        )?),
    };
    let parts = match shared.get(&a.test) {
        Some(p) => p.clone(),
        None => key::Parts::shared(recipe, &params, &scenario.method),
    };
    let peer_identity = peer.map(key::BoardInputs::of);
    let inputs = key::inputs_with(
        image,
        Some(&key::BoardInputs::of(board)),
        storage.map(key::StorageInputs::of).as_ref(),
        filesystem.as_ref(),
        network.map(key::NetworkInputs::of).as_ref(),
        &parts,
        key::Others {
            cluster: None,
            peer: peer_identity.as_ref(),
        },
    );
    Ok(Cell {
        key: CellKey::of(&inputs),
        address: a.clone(),
        inputs: CellInputs::new(inputs),
        params,
        method: scenario.method.clone(),
        filesystem,
        image: image.clone(),
        cluster: None,
        peer: peer.map(|p| p.name.clone()),
        tmpfs,
    })
}

#[cfg(test)]
pub(crate) mod fixtures;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_systems;

#[cfg(test)]
mod tests_network;

#[cfg(test)]
pub(crate) mod tests_firstboot;
