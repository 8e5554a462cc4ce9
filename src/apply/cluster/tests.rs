//! A cluster walk's cell values, on a cluster built from the plan's fixture boards.

use std::sync::atomic::AtomicBool;

use super::ClusterWorker;
use crate::apply::resources::Resources;
use crate::apply::worker::Worker;
use crate::bench::{TemplateVars, Vars};
use crate::model::{BoardName, Cluster, Endpoint, EndpointAt};
use crate::network::addresses::{BIND_ADDRESS, CONTROLLER_ADDRESS};

/// The names a cell's values hold beside its parameters.
fn names(vars: &Vars, cell: &crate::plan::Cell) -> Vec<String> {
    vars.names()
        .filter(|n| !cell.params.contains_key(*n))
        .map(str::to_string)
        .collect()
}

/// A cluster cell's values, on the controller and on each member, are the names
/// `check` allows (`TemplateVars`), as a board cell's are: no name a template `check`
/// passes is undefined on a member, and none is set that `check` refuses. (No tmpfs:
/// `plan` gives a cluster no test with one; no addresses: the recipe reads none.)
#[test]
fn a_cluster_cells_values_are_the_names_check_allows_at_every_place() {
    let ws = crate::plan::fixtures::workspace();
    let cell = crate::plan::expand(&ws, &ws.scenarios[0])
        .cells
        .into_iter()
        .next()
        .expect("the fixture has cells");
    let recipe = &ws.recipes[&cell.address.test];
    assert!(!recipe.uses_addresses && recipe.tmpfs.is_none());
    let members: Vec<&crate::model::Board> = ws.boards.values().collect();
    let names_of: Vec<BoardName> = members.iter().map(|b| b.name.clone()).collect();
    let cluster = Cluster {
        name: BoardName::new("c"),
        members: names_of.clone(),
        control: names_of[0].clone(),
        endpoint: Endpoint {
            at: EndpointAt::Board(names_of[0].clone()),
            port: None,
        },
        deploy: vec![],
        teardown: vec![],
    };
    let as_board = crate::plan::fixtures::board("c", "cluster");
    let dir = std::env::temp_dir().join(format!("bp-cluster-vars-{}", std::process::id()));
    let store = crate::store::Store::open(&dir).unwrap();
    let (stop, resources, held) = (
        AtomicBool::new(false),
        Resources::default(),
        Resources::default(),
    );
    let progress = crate::progress::Lines { quiet: true };
    let cw = ClusterWorker {
        w: Worker {
            board: &as_board,
            root: &ws.root,
            boards: &ws.boards,
            store: &store,
            progress: &progress,
            stop: &stop,
            session: "s",
            resources: &resources,
            held: &held,
            connector: &crate::transport::RealConnector,
            on_drift: crate::store::OnDrift::default(),
            deadline: None,
        },
        cluster: &cluster,
        members,
        control: 0,
    };
    let (controller, per_member) = cw.cell_vars(&cell, recipe).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut allowed: Vec<&str> = TemplateVars::NAMES
        .into_iter()
        .filter(|n| !["tmpfs", BIND_ADDRESS, CONTROLLER_ADDRESS].contains(n))
        .collect();
    allowed.sort_unstable();
    assert_eq!(names(&controller, &cell), allowed, "on the controller");
    assert_eq!(per_member.len(), 2);
    for (m, vars) in names_of.iter().zip(&per_member) {
        assert_eq!(names(vars, &cell), allowed, "on {m}");
        assert_eq!(vars.string("board").as_deref(), Some(m.as_str()));
        // The cell's secret directory is the controller's, as a board cell's is.
        assert_eq!(vars.string("secrets"), controller.string("secrets"));
    }
    assert_eq!(controller.string("board").as_deref(), Some("c"));
}
