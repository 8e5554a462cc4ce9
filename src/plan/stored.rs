//! The cells a report shows of boards that have no board file any more (retired,
//! renamed, a lab torn down): rebuilt from what the store kept (`cell.json`: the address
//! and the inputs the key hashed, board model and storage included) and the scenario.
//! Pure: the caller reads the store.
//!
//! A stored cell counts for a scenario when its address lies in the scenario's matrix
//! (the board globs as written, since no file resolves them) and its key is the one the
//! scenario gives that address today: its board, storage, network, peer and cluster
//! members' inputs as stored, the rest (image, filesystem, test, parameters, method, a
//! cluster's definition) from the scenario and recipes. A cell measured under other
//! inputs is another cell, here as in `plan`. So a cluster whose member's file is gone,
//! or a cell whose peer's file is gone, still shows what it measured.

use std::collections::{BTreeMap, HashSet};

use super::key::{self, BoardInputs, NetworkInputs, StorageInputs};
use super::{Address, Cell, CellKey, Plan, Skipped, as_is, cell_params, glob};
use crate::canonical::CellInputs;
use crate::model::{
    AS_IS, Board, BoardName, CellPattern, FsName, ImageName, Recipe, Scenario, TestName,
};
use crate::store::{BoardFacts, CellData, CellRecord, PlanSkips};

/// A scenario's plan as a report needs it: `plan` (expanded from the board files) with
/// the stored cells and recorded plan skips of boards without a file, and every cell the
/// stored kernel facts say cannot run moved to the skipped (`known`).
pub fn for_report(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
    plan: Plan,
    data: &BTreeMap<CellKey, CellData>,
    recorded: &BTreeMap<BoardName, PlanSkips>,
    facts: &BTreeMap<BoardName, BoardFacts>,
) -> Plan {
    let mut plan = with_stored(boards, recipes, scenario, plan, data);
    for_report_given_stored(boards, recipes, scenario, &mut plan, recorded, facts);
    plan
}

/// The rest of `for_report`, given the plan `with_stored` made: the recorded plan skips
/// of boards without a file, and the cells the boards' kernel facts rule out.
pub fn for_report_given_stored(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
    plan: &mut Plan,
    recorded: &BTreeMap<BoardName, PlanSkips>,
    facts: &BTreeMap<BoardName, BoardFacts>,
) {
    add_skips(boards, recipes, scenario, plan, recorded);
    super::known::skip_known(plan, facts);
}

/// `plan` with, after its own cells, the stored cells of the scenario whose board has no
/// file in `boards`, in address order. Where the store holds several cells of one
/// address (the board file changed its model between applies), the one measured last
/// stands for it, as the board file would have chosen its current one: the sample that
/// ended last decides, then the key.
pub fn with_stored(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
    mut plan: Plan,
    data: &BTreeMap<CellKey, CellData>,
) -> Plan {
    // Most stored cells are planned ones. They are found by key, walking the store's
    // order beside the plan's cells sorted once by key, and their addresses compared.
    // A set of the planned addresses, made only when some cell is not found so, answers
    // the rest (it is only asked, never walked, so its order cannot show).
    let mut by_key: Vec<&Cell> = plan.cells.iter().collect();
    by_key.sort_unstable_by(|x, y| x.key.cmp(&y.key));
    let mut at = 0;
    let mut planned: Option<HashSet<&Address>> = None;
    let mut best: BTreeMap<Address, (f64, Cell)> = BTreeMap::new();
    for (key, d) in data {
        let Some(record) = &d.record else { continue };
        while by_key.get(at).is_some_and(|c| c.key < *key) {
            at += 1;
        }
        let found = by_key[at..]
            .iter()
            .take_while(|c| c.key == *key)
            .any(|c| c.address == record.address);
        if found
            || planned
                .get_or_insert_with(|| plan.cells.iter().map(|c| &c.address).collect())
                .contains(&record.address)
        {
            continue;
        }
        // A board with a file stands for its cells (the plan made them, or says why
        // not), unless the cell needs another board whose file is gone: its peer. A
        // cluster is no board: its cells come from here whenever the plan could not
        // make them (a member's file is gone).
        if boards.contains_key(&record.address.board)
            && stored_peer(record).is_none_or(|p| boards.contains_key(&BoardName::new(p)))
        {
            continue;
        }
        let Some(cell) = rebuild(recipes, scenario, record) else {
            continue;
        };
        let last = d
            .samples
            .iter()
            .map(|s| s.ended)
            .filter(|t| t.is_finite())
            .fold(f64::NEG_INFINITY, f64::max);
        let newer = match best.get(&cell.address) {
            None => true,
            Some((t, c)) => last > *t || (last == *t && cell.key > c.key),
        };
        if newer {
            best.insert(cell.address.clone(), (last, cell));
        }
    }
    drop((planned, by_key));
    // What the plan could not make for want of a board file, the store now stands for.
    plan.skipped.retain(|s| !best.contains_key(&s.address));
    plan.cells.extend(best.into_values().map(|(_, c)| c));
    plan
}

/// The peer board a stored cell's inputs name, if any.
fn stored_peer(record: &CellRecord) -> Option<&str> {
    record.inputs.value().get("peer")?.get("name")?.as_str()
}

/// The cell `record` is under `scenario`, if the scenario has it.
fn rebuild(
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
    record: &CellRecord,
) -> Option<Cell> {
    let a = &record.address;
    let recipe = recipes.get(&a.test)?;
    if !in_matrix(recipes, scenario, recipe, a) {
        return None;
    }
    let image = scenario.images.get(&a.image)?;
    let stored = record.inputs.value();
    if let Some(cluster) = scenario.clusters.get(&a.board) {
        // Its members as the store kept them; the rest from the scenario.
        let members = key::stored_members(stored.get("cluster")?)?;
        let cell =
            super::systems::cluster_cell_of(recipe, scenario, image, cluster, a, || Ok(members))
                .ok()?;
        return (cell.key == record.key).then_some(cell);
    }
    let filesystem = match &a.filesystem {
        None => None,
        Some(f) if f.as_str() == AS_IS => Some(as_is()),
        Some(f) => Some(scenario.filesystems.get(f)?.clone()),
    };
    let board = BoardInputs::from_json(stored.get("board")?)?;
    let storage = StorageInputs::from_json(stored.get("storage")?)?;
    let network = NetworkInputs::from_json(stored.get("network")?)?;
    let peer = match stored.get("peer")? {
        serde_json::Value::Null => None,
        p => Some(BoardInputs::from_json(p)?),
    };
    // The address and the stored inputs must agree, as apply wrote them.
    let storage_name = storage.as_ref().map(|s| s.name.as_str());
    let network_name = network.as_ref().map(|n| n.name.as_str());
    if board.name != a.board.as_str()
        || storage_name != a.storage.as_ref().map(crate::model::StorageName::as_str)
        || network_name != a.network.as_ref().map(crate::model::NetworkName::as_str)
    {
        return None;
    }
    let params = cell_params(recipe, scenario);
    let inputs = key::inputs_of(&key::InputsOf {
        image,
        board: Some(&board),
        storage: storage.as_ref(),
        filesystem: filesystem.as_ref(),
        network: network.as_ref(),
        recipe,
        params: &params,
        method: &scenario.method,
        others: key::Others {
            cluster: None,
            peer: peer.as_ref(),
        },
    });
    let key = CellKey::of(&inputs);
    if key != record.key {
        return None;
    }
    // As `expand` resolves it; a size the parameters cannot give made no cell there.
    let tmpfs = match &recipe.tmpfs {
        None => None,
        Some(spec) => Some(crate::storage::tmpfs::resolve(&spec.size, &params).ok()?),
    };
    Some(Cell {
        key,
        address: a.clone(),
        inputs: CellInputs::new(inputs),
        params,
        method: scenario.method.clone(),
        filesystem,
        image: image.clone(),
        tmpfs,
        cluster: None,
        peer: peer.map(|p| BoardName::new(p.name)),
    })
}

/// Which values of an axis a block takes.
type Accepts<'a, T> = dyn Fn(&T) -> bool + 'a;
/// Whether an address's storage and filesystem fit its test, given a block's storages
/// and filesystems.
type Shape<'a> = dyn Fn(&Accepts<str>, &Accepts<FsName>) -> bool + 'a;

/// Whether the matrix (or one of its includes) names this address, with board globs
/// matched as written; excludes remove from the matrix, not from includes, as in
/// `expand`.
fn in_matrix(
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
    recipe: &Recipe,
    a: &Address,
) -> bool {
    let m = &scenario.matrix;
    // The storage and filesystem an address of this test has, given the block's.
    let shape = |storages: &Accepts<str>, filesystems: &Accepts<FsName>| match (
        &a.storage,
        &a.filesystem,
    ) {
        (None, None) => !recipe.uses_storage,
        (Some(s), None) => recipe.uses_storage && recipe.raw_device && storages(s.as_str()),
        (Some(s), Some(f)) => {
            recipe.uses_storage && !recipe.raw_device && storages(s.as_str()) && filesystems(f)
        }
        (None, Some(_)) => false,
    };
    // A networked test's cell has a link exactly when its block has a network axis.
    let link = |patterns: &[String]| match &a.network {
        None => !recipe.uses_network || patterns.is_empty(),
        Some(n) => recipe.uses_network && patterns.iter().any(|p| glob::matches(p, n.as_str())),
    };
    let main = m.image.contains(&a.image)
        && link(&m.network)
        && m.board_patterns
            .iter()
            .any(|p| glob::matches(p, a.board.as_str()))
        && m.test.contains(&a.test)
        && shape(&|s| m.storage.iter().any(|p| glob::matches(p, s)), &|f| {
            m.filesystem.contains(f)
        })
        && !m.exclude.iter().any(|p| a.matches(p));
    main || m.include.iter().any(|inc| {
        let networks = match &inc.network {
            None => m.network.clone(),
            Some(p) => vec![p.clone()],
        };
        link(&networks) && in_include(recipes, scenario, inc, a, &shape)
    })
}

/// Whether one `include` names the address: each axis it names is a glob over what
/// exists, each it leaves out takes the matrix's values.
fn in_include(
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
    inc: &CellPattern,
    a: &Address,
    shape: &Shape,
) -> bool {
    let m = &scenario.matrix;
    let image = |i: &ImageName| match &inc.image {
        None => m.image.contains(i),
        Some(p) => glob::matches(p, i.as_str()) && scenario.images.contains_key(i),
    };
    let board = |b: &str| match &inc.board {
        None => m.board_patterns.iter().any(|p| glob::matches(p, b)),
        Some(p) => glob::matches(p, b),
    };
    let test = |t: &TestName| match &inc.test {
        None => m.test.contains(t),
        Some(p) => glob::matches(p, t.as_str()) && recipes.contains_key(t),
    };
    let storage = |s: &str| match &inc.storage {
        None => m.storage.iter().any(|p| glob::matches(p, s)),
        Some(p) => glob::matches(p, s),
    };
    let filesystem = |f: &FsName| match &inc.filesystem {
        None => m.filesystem.contains(f),
        Some(p) => {
            glob::matches(p, f.as_str())
                && (f.as_str() == AS_IS || scenario.filesystems.contains_key(f))
        }
    };
    image(&a.image) && board(a.board.as_str()) && test(&a.test) && shape(&storage, &filesystem)
}

/// Adds to `plan.skipped` what apply recorded its plan could not make a cell of on boards
/// that have no file now (`Store::record_plan_skips`), where the scenario still names
/// the image, board and test.
pub fn add_skips(
    boards: &BTreeMap<BoardName, Board>,
    recipes: &BTreeMap<TestName, Recipe>,
    scenario: &Scenario,
    plan: &mut Plan,
    recorded: &BTreeMap<BoardName, PlanSkips>,
) {
    for (board, skips) in recorded {
        if boards.contains_key(board) {
            continue;
        }
        let Some(entries) = skips.scenarios.get(&scenario.name) else {
            continue;
        };
        for s in entries {
            if &s.address.board == board && names(recipes, scenario, &s.address) {
                plan.skipped.push(Skipped {
                    address: s.address.clone(),
                    reason: s.reason.clone(),
                });
            }
        }
    }
}

/// Whether the matrix or an include names the address's image, board and test (a
/// skipped combination's storage is a pattern and its filesystem may be absent).
fn names(recipes: &BTreeMap<TestName, Recipe>, scenario: &Scenario, a: &Address) -> bool {
    let m = &scenario.matrix;
    let board = |p: &Option<String>| match p {
        None => m
            .board_patterns
            .iter()
            .any(|g| glob::matches(g, a.board.as_str())),
        Some(g) => glob::matches(g, a.board.as_str()),
    };
    let main = m.image.contains(&a.image) && board(&None) && m.test.contains(&a.test);
    main || m.include.iter().any(|inc| {
        let image = match &inc.image {
            None => m.image.contains(&a.image),
            Some(g) => glob::matches(g, a.image.as_str()) && scenario.images.contains_key(&a.image),
        };
        let test = match &inc.test {
            None => m.test.contains(&a.test),
            Some(g) => glob::matches(g, a.test.as_str()) && recipes.contains_key(&a.test),
        };
        image && board(&inc.board) && test
    })
}
