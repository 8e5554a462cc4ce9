//! Cell keys: a sha256 over a canonical encoding of everything that can change a cell's
//! numbers, and nothing else.
//!
//! The encoding is written by hand (`canonical::CanonicalWriter`), in the spirit of a
//! Nix derivation's ATerm: typed values, records whose fields come in the order this
//! module lists them, maps in byte order of their keys, length-prefixed strings, floats
//! as their IEEE-754 bits and durations as integer nanoseconds. No serde feature, map
//! type or float formatter is involved, so nothing outside this module (with `key/`:
//! `identity.rs` the board, storage, link and cluster, `recipe.rs` the test and method),
//! `crate::canonical` and `cell/key.rs` (the hash) can change a key; in particular serde_json's `preserve_order`,
//! which any dependency can switch on through cargo's feature unification, reorders
//! JSON objects but not keys. The same `Input` tree renders `cell.json`'s `inputs`, so
//! what is recorded is what was hashed. Changing what goes in is a deliberate act: bump
//! `cell::ENCODING` and update the golden tests, because every stored cell gets a new key.
//! docs/FORMAT.md ("Cell keys") describes the bytes.

use std::collections::BTreeMap;

use crate::canonical::Input;

use crate::model::{
    Board, BoardName, Cluster, Filesystem, Image, Method, Network, ParamValue, Recipe, Storage,
};

mod identity;
mod recipe;

use identity::cluster_identity;
pub use identity::{BoardInputs, NetworkInputs, Others, StorageInputs, stored_members};
use recipe::{method_input, strings, test_input};

/// A board's cell as the model has it: what `cell_inputs` hashes.
pub struct BoardCell<'a> {
    pub image: &'a Image,
    pub board: &'a Board,
    pub storage: Option<&'a Storage>,
    pub filesystem: Option<&'a Filesystem>,
    pub network: Option<&'a Network>,
    pub recipe: &'a Recipe,
    pub params: &'a BTreeMap<String, ParamValue>,
    pub method: &'a Method,
}

/// The inputs of one cell, as hashed and as `cell.json` records them. Addresses,
/// credentials, run counts, comments, file names and key order are deliberately absent.
pub fn cell_inputs(c: &BoardCell<'_>) -> Input {
    inputs_of(&InputsOf {
        image: c.image,
        board: Some(&BoardInputs::of(c.board)),
        storage: c.storage.map(StorageInputs::of).as_ref(),
        filesystem: c.filesystem,
        network: c.network.map(NetworkInputs::of).as_ref(),
        recipe: c.recipe,
        params: c.params,
        method: c.method,
        others: Others::default(),
    })
}

/// What any system under test's cell is keyed by, in the key's order: a board
/// (`board`), or a cluster (`others`, with no board); a peer board when the recipe has
/// one (`others`); the board and storage as they go in.
pub struct InputsOf<'a> {
    pub image: &'a Image,
    pub board: Option<&'a BoardInputs>,
    pub storage: Option<&'a StorageInputs>,
    pub filesystem: Option<&'a Filesystem>,
    pub network: Option<&'a NetworkInputs>,
    pub recipe: &'a Recipe,
    pub params: &'a BTreeMap<String, ParamValue>,
    pub method: &'a Method,
    pub others: Others<'a>,
}

/// `cell_inputs` for any system under test.
pub fn inputs_of(c: &InputsOf<'_>) -> Input {
    let parts = Parts {
        test: test_input(c.recipe, c.params),
        method: method_input(c.method),
    };
    inputs_with(
        c.image,
        c.board,
        c.storage,
        c.filesystem,
        c.network,
        &parts,
        c.others,
    )
}

/// The parts of a cell's inputs that every cell of one test in one scenario has: a plan
/// makes them once per test, shared (`Input::shared`), rather than once per cell.
#[derive(Clone, Debug)]
pub struct Parts {
    pub test: Input,
    pub method: Input,
}

impl Parts {
    /// The parts of `recipe`'s cells with these parameters and method, shared.
    pub fn shared(
        recipe: &Recipe,
        params: &BTreeMap<String, ParamValue>,
        method: &Method,
    ) -> Parts {
        Parts {
            test: Input::shared(test_input(recipe, params)),
            method: Input::shared(method_input(method)),
        }
    }
}

/// The image: its identity (`sha256:...` of the declared file, or `installed:NAME`); for
/// a prepared image (`[images.NAME.firstboot]`), a record of that identity as `base` and
/// the preparation's part that can change numbers (`Firstboot::key_input`). An image
/// without preparation is the plain identity, so its cells keep their keys.
pub fn image_input(image: &Image) -> Input {
    let identity = Input::from(image.source.identity(&image.name));
    match &image.firstboot {
        None => identity,
        Some(f) => Input::record([("base", identity), ("firstboot", f.key_input())]),
    }
}

/// `inputs_of`, with the test's and method's parts made.
pub fn inputs_with(
    image: &Image,
    board: Option<&BoardInputs>,
    storage: Option<&StorageInputs>,
    filesystem: Option<&Filesystem>,
    network: Option<&NetworkInputs>,
    parts: &Parts,
    others: Others<'_>,
) -> Input {
    Input::record([
        ("image", image_input(image)),
        ("board", Input::from(board.map(BoardInputs::input))),
        // The medium is its name and model; the device path is an address (a loop
        // device number, a by-id link) that may change while the medium does not.
        ("storage", storage.map_or(Input::None, StorageInputs::input)),
        (
            "filesystem",
            Input::from(filesystem.map(|f| {
                Input::record([
                    ("kind", Input::from(&f.kind)),
                    ("mkfs_options", strings(&f.mkfs_options)),
                    ("mount_options", strings(&f.mount_options)),
                ])
            })),
        ),
        // The link is its name, kind and model (`NetworkInputs`), never its address.
        ("network", network.map_or(Input::None, NetworkInputs::input)),
        ("test", parts.test.clone()),
        ("method", parts.method.clone()),
        (
            "cluster",
            Input::from(others.cluster.map(|(c, m)| cluster_identity(c, m))),
        ),
        ("peer", Input::from(others.peer.map(BoardInputs::input))),
    ])
}

/// The members of `cluster` among `boards`, in its order (config checked they exist).
pub fn members_of<'a>(cluster: &Cluster, boards: &'a BTreeMap<BoardName, Board>) -> Vec<&'a Board> {
    cluster
        .members
        .iter()
        .filter_map(|m| boards.get(m))
        .collect()
}

#[cfg(test)]
mod tests;
