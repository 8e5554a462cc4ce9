//! The cells of the systems under test beyond one board: a cluster's (a value of the
//! board axis: no storage, its members' identities in the key, a flashed image written
//! to every member)
//! and a board's peer (the board its `on = "peer"` steps run on).

use std::collections::BTreeMap;

use super::{Address, CannotMeasure, Cell, CellKey, key};
use crate::canonical::CellInputs;
use crate::model::{
    Board, BoardName, Cluster, Image, ImageSource, PEER_PARAM, ParamValue, Recipe, Scenario, Side,
};

/// The board a recipe's peer steps run on, from its `peer` parameter.
pub(super) fn peer_of<'b>(
    boards: &'b BTreeMap<BoardName, Board>,
    recipe: &Recipe,
    params: &BTreeMap<String, ParamValue>,
    a: &Address,
) -> Result<Option<&'b Board>, CannotMeasure> {
    if !recipe.sides().contains(&Side::Peer) {
        return Ok(None);
    }
    let name = match params.get(PEER_PARAM) {
        Some(ParamValue::Str(s)) => s.clone(),
        _ => String::new(),
    };
    if name == a.board.as_str() {
        return Err(CannotMeasure::PeerIsBoard {
            test: a.test.clone(),
            board: a.board.clone(),
        });
    }
    boards
        .get(&BoardName::new(name.clone()))
        .map(Some)
        .ok_or(CannotMeasure::UnknownPeer {
            test: a.test.clone(),
            peer: name,
        })
}

/// A cell of a cluster: no storage, no peer; an image to flash needs a flash method on
/// every member; the endpoint's port, when given, is the recipe's `port` parameter.
pub(super) fn cluster_cell(
    boards: &BTreeMap<BoardName, Board>,
    recipe: &Recipe,
    scenario: &Scenario,
    image: &Image,
    cluster: &Cluster,
    a: &Address,
) -> Result<Cell, CannotMeasure> {
    if !matches!(image.source, ImageSource::Installed)
        && let Some(m) = key::members_of(cluster, boards)
            .into_iter()
            .find(|m| matches!(m.flash, crate::model::Flash::None))
    {
        return Err(CannotMeasure::NoFlashMethod {
            image: a.image.clone(),
            board: m.name.clone(),
        });
    }
    let members = || {
        let members = key::members_of(cluster, boards);
        if members.len() != cluster.members.len() {
            let missing = cluster
                .members
                .iter()
                .find(|m| !boards.contains_key(*m))
                .cloned()
                .unwrap_or_else(|| cluster.name.clone());
            return Err(CannotMeasure::UnknownBoard(missing));
        }
        Ok(members.into_iter().map(key::BoardInputs::of).collect())
    };
    cluster_cell_of(recipe, scenario, image, cluster, a, members)
}

/// `cluster_cell`, with its members' identities from `members` (their board files', or
/// as the store kept them: `plan::stored`), asked for once the cell's shape is known.
pub(super) fn cluster_cell_of(
    recipe: &Recipe,
    scenario: &Scenario,
    image: &Image,
    cluster: &Cluster,
    a: &Address,
    members: impl FnOnce() -> Result<Vec<key::BoardInputs>, CannotMeasure>,
) -> Result<Cell, CannotMeasure> {
    if recipe.uses_storage {
        return Err(CannotMeasure::ClusterStorage {
            test: a.test.clone(),
            cluster: cluster.name.clone(),
        });
    }
    if recipe.sides().contains(&Side::Peer) {
        return Err(CannotMeasure::ClusterPeer {
            test: a.test.clone(),
            cluster: cluster.name.clone(),
        });
    }
    let mut params = super::cell_params(recipe, scenario);
    // A client (every step on the controller, no service of its own) hits the
    // endpoint: its `port` is the endpoint's. A test that serves has a port of its own.
    let client = recipe.sides().iter().all(|s| *s == Side::Controller);
    if let Some(port) = cluster.endpoint.port
        && client
        && params.contains_key("port")
    {
        params.insert("port".into(), ParamValue::Int(i64::from(port)));
    }
    let members = members()?;
    if recipe.tmpfs.is_some() {
        return Err(CannotMeasure::ClusterTmpfs {
            test: a.test.clone(),
            cluster: cluster.name.clone(),
        });
    }
    let inputs = key::inputs_of(&key::InputsOf {
        image,
        board: None,
        storage: None,
        filesystem: None,
        network: None,
        recipe,
        params: &params,
        method: &scenario.method,
        others: key::Others {
            cluster: Some((cluster, &members)),
            peer: None,
        },
    });
    Ok(Cell {
        key: CellKey::of(&inputs),
        address: a.clone(),
        inputs: CellInputs::new(inputs),
        params,
        method: scenario.method.clone(),
        filesystem: None,
        image: image.clone(),
        cluster: Some(cluster.clone()),
        peer: None,
        tmpfs: None,
    })
}
