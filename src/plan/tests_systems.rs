//! Tests of the cells of clusters and peers: what goes into their keys and what
//! cannot apply, and the schedule's holds.

use super::*;
use crate::model::{
    Cluster, ClusterStep, Connection, Endpoint, EndpointAt, Side, SshTarget, Where,
};

/// The fixture workspace with a cluster `c` of pi-1 and pi-2 on the board axis.
fn with_cluster(port: Option<u16>) -> Workspace {
    let mut ws = fixtures::workspace();
    let cluster = Cluster {
        name: BoardName::new("c"),
        members: vec![BoardName::new("pi-1"), BoardName::new("pi-2")],
        control: BoardName::new("pi-1"),
        endpoint: Endpoint {
            at: EndpointAt::Board(BoardName::new("pi-1")),
            port,
        },
        deploy: vec![ClusterStep {
            on: Where::Board(BoardName::new("pi-2")),
            command: "start app".into(),
            timeout: None,
        }],
        teardown: vec![],
    };
    let mut client = fixtures::recipe("client", false);
    client.run.on = Side::Controller;
    client.params.insert("port".into(), ParamValue::Int(5201));
    let mut server = fixtures::recipe("server", false);
    server.params.insert("port".into(), ParamValue::Int(5201));
    for r in [client, server] {
        ws.recipes.insert(r.name.clone(), r);
    }
    let s = &mut ws.scenarios[0];
    s.clusters.insert(cluster.name.clone(), cluster);
    s.matrix.board = vec![BoardName::new("c")];
    s.matrix.test = vec![
        TestName::new("disk-4k"),
        TestName::new("client"),
        TestName::new("server"),
    ];
    ws
}

fn cell<'p>(plan: &'p Plan, test: &str) -> &'p Cell {
    plan.cells
        .iter()
        .find(|c| c.address.test.as_str() == test)
        .unwrap()
}

#[test]
fn a_cluster_has_one_cell_per_test_and_no_storage() {
    let ws = with_cluster(None);
    let plan = expand(&ws, &ws.scenarios[0]);
    assert_eq!(plan.cells.len(), 2, "{:?}", plan.cells);
    assert!(plan.cells.iter().all(|c| c.address.storage.is_none()));
    assert_eq!(plan.skipped.len(), 1);
    assert!(
        plan.skipped[0]
            .reason
            .contains("test disk-4k uses storage, and cluster c has no storage axis"),
        "{:?}",
        plan.skipped
    );
    let c = cell(&plan, "client");
    assert_eq!(c.inputs.json()["board"], serde_json::Value::Null);
    assert_eq!(c.inputs.json()["cluster"]["members"][1]["name"], "pi-2");
    assert_eq!(c.inputs.json()["cluster"]["deploy"][0]["on"], "pi-2");
    assert!(c.cluster.is_some());
}

#[test]
fn a_clusters_key_holds_its_members_and_deploy_but_no_address() {
    let base = with_cluster(None);
    let k0 = cell(&expand(&base, &base.scenarios[0]), "client")
        .key
        .clone();
    let key = |edit: &dyn Fn(&mut Workspace)| {
        let mut ws = base.clone();
        edit(&mut ws);
        cell(&expand(&ws, &ws.scenarios[0]), "client").key.clone()
    };
    let host = key(&|ws| {
        for b in ws.boards.values_mut() {
            b.connection = Connection::Ssh(SshTarget {
                host: "192.0.2.9".into(),
                ..SshTarget::default()
            });
        }
    });
    assert_eq!(host, k0, "addresses are not inputs");
    let ingress = |h: &str| {
        let h = h.to_string();
        key(&move |ws: &mut Workspace| {
            let c = ws.scenarios[0]
                .clusters
                .get_mut(&BoardName::new("c"))
                .unwrap();
            c.endpoint.at = EndpointAt::Host(h.clone());
        })
    };
    assert_eq!(
        ingress("a.local"),
        ingress("10.0.0.9"),
        "an endpoint's host"
    );
    assert_ne!(ingress("a.local"), k0, "which member the clients hit");
    let model = key(&|ws| {
        ws.boards.get_mut(&BoardName::new("pi-2")).unwrap().model = "Raspberry Pi 5".into();
    });
    assert_ne!(model, k0, "a member's model");
    let deploy = key(&|ws| {
        let c = ws.scenarios[0]
            .clusters
            .get_mut(&BoardName::new("c"))
            .unwrap();
        c.deploy[0].command = "start another app".into();
    });
    assert_ne!(deploy, k0, "the deploy's text");
    let members = key(&|ws| {
        let c = ws.scenarios[0]
            .clusters
            .get_mut(&BoardName::new("c"))
            .unwrap();
        c.members.pop();
    });
    assert_ne!(members, k0, "who the members are");
    let control = key(&|ws| {
        let c = ws.scenarios[0]
            .clusters
            .get_mut(&BoardName::new("c"))
            .unwrap();
        c.control = BoardName::new("pi-2");
    });
    assert_ne!(control, k0, "where the board-side steps run");
}

#[test]
fn the_endpoints_port_is_a_clients_port_and_not_a_servers() {
    let ws = with_cluster(Some(8080));
    let plan = expand(&ws, &ws.scenarios[0]);
    assert_eq!(cell(&plan, "client").params["port"], ParamValue::Int(8080));
    assert_eq!(cell(&plan, "server").params["port"], ParamValue::Int(5201));
}

/// The fixture workspace whose one test, `peer-test`, runs on pi-2 as its peer.
fn with_peer() -> Workspace {
    let mut ws = fixtures::workspace();
    let mut r = fixtures::recipe("peer-test", false);
    r.run.on = Side::Peer;
    r.params.insert(
        crate::model::PEER_PARAM.into(),
        ParamValue::Str("pi-2".into()),
    );
    ws.recipes.insert(r.name.clone(), r);
    ws.scenarios[0].matrix.test = vec![TestName::new("peer-test")];
    ws
}

#[test]
fn a_peer_is_in_the_key_and_a_board_is_no_peer_of_itself() {
    let mut ws = with_peer();
    let plan = expand(&ws, &ws.scenarios[0]);
    assert_eq!(plan.cells.len(), 1);
    let c = &plan.cells[0];
    assert_eq!(c.address.board.as_str(), "pi-1");
    assert_eq!(c.peer, Some(BoardName::new("pi-2")));
    assert_eq!(c.inputs.json()["peer"]["model"], "Raspberry Pi 4");
    assert!(
        plan.skipped[0]
            .reason
            .contains("the peer of test peer-test on pi-2 is pi-2 itself"),
        "{:?}",
        plan.skipped
    );
    let k0 = c.key.clone();
    ws.boards.get_mut(&BoardName::new("pi-2")).unwrap().model = "Raspberry Pi 5".into();
    let plan = expand(&ws, &ws.scenarios[0]);
    assert_ne!(plan.cells[0].key, k0, "the peer's model is an input");
}

/// Walks that need a board in common hold it; a walk alone with its boards holds none.
#[test]
fn walks_hold_the_boards_another_walk_needs() {
    let mut ws = with_cluster(None);
    ws.scenarios[0].matrix.board = vec![BoardName::new("c"), BoardName::new("pi-2")];
    ws.scenarios[0].matrix.test = vec![TestName::new("client")];
    let plan = expand(&ws, &ws.scenarios[0]);
    let recipe = &ws.recipes[&TestName::new("client")];
    let work: Vec<schedule::Work<'_>> = plan
        .cells
        .iter()
        .map(|c| schedule::Work {
            cell: c,
            recipe,
            runs_left: 3,
        })
        .collect();
    let s = schedule::build(&ws, &work, &schedule::Estimates::default());
    assert_eq!(s.boards.len(), 2);
    let first = |b: &schedule::BoardSteps| b.steps[0].action.clone();
    let c = s.boards.iter().find(|b| b.board.as_str() == "c").unwrap();
    let pi2 = s
        .boards
        .iter()
        .find(|b| b.board.as_str() == "pi-2")
        .unwrap();
    assert_eq!(
        first(c),
        schedule::Action::Hold(schedule::Hold {
            boards: vec![BoardName::new("pi-2")]
        }),
        "pi-1 is the cluster's alone: only pi-2 is held"
    );
    assert_eq!(
        first(pi2),
        schedule::Action::Hold(schedule::Hold {
            boards: vec![BoardName::new("pi-2")]
        })
    );
    assert_eq!(
        c.members,
        vec![BoardName::new("pi-1"), BoardName::new("pi-2")]
    );
    // Alone, nothing is held.
    ws.scenarios[0].matrix.board = vec![BoardName::new("c")];
    let plan = expand(&ws, &ws.scenarios[0]);
    let work: Vec<schedule::Work<'_>> = plan
        .cells
        .iter()
        .map(|c| schedule::Work {
            cell: c,
            recipe,
            runs_left: 3,
        })
        .collect();
    let s = schedule::build(&ws, &work, &schedule::Estimates::default());
    assert!(
        !matches!(
            s.boards[0].steps[0].action,
            schedule::Action::Hold(schedule::Hold { .. })
        ),
        "{:?}",
        s.boards[0].steps[0]
    );
}

/// A cell as the store keeps it: its record (address, key and inputs), no runs.
fn stored_data(plan: &Plan) -> BTreeMap<CellKey, crate::store::CellData> {
    plan.cells
        .iter()
        .map(|c| {
            let d = crate::store::CellData {
                record: Some(crate::store::CellRecord {
                    format: 1,
                    key: c.key.clone(),
                    address: c.address.clone(),
                    inputs: c.inputs.json().clone().into(),
                }),
                ..Default::default()
            };
            (c.key.clone(), d)
        })
        .collect()
}

/// The plan a report makes of `ws` and the store's `data`, board files as `ws` has them.
fn report_plan(ws: &Workspace, data: &BTreeMap<CellKey, crate::store::CellData>) -> Plan {
    let scenario = &ws.scenarios[0];
    stored::for_report(
        &ws.boards,
        &ws.recipes,
        scenario,
        expand(ws, scenario),
        data,
        &BTreeMap::new(),
        &BTreeMap::new(),
    )
}

fn keys(plan: &Plan) -> Vec<(String, CellKey)> {
    let mut k: Vec<_> = plan
        .cells
        .iter()
        .map(|c| (c.address.label(), c.key.clone()))
        .collect();
    k.sort();
    k
}

/// A lab torn down after a cluster's run: the plan cannot make the cluster's cells (a
/// member's file is gone), so the report takes them from the store, the same cells with
/// the same keys, members and no "unknown board" left among the skipped. A cluster
/// whose definition changed since has other cells: the stored ones do not stand in.
#[test]
fn a_clusters_stored_cells_stand_in_when_a_members_file_is_gone() {
    let mut ws = with_cluster(Some(8080));
    // As a scenario file writes it (the plan reads the resolved `board`).
    ws.scenarios[0].matrix.board_patterns = vec!["c".into()];
    let planned = expand(&ws, &ws.scenarios[0]);
    let data = stored_data(&planned);
    assert_eq!(
        keys(&report_plan(&ws, &data)),
        keys(&planned),
        "with every file"
    );

    ws.boards.remove(&BoardName::new("pi-2"));
    let without = expand(&ws, &ws.scenarios[0]);
    assert!(without.cells.is_empty(), "{:?}", without.cells);
    assert!(
        without.skipped.iter().any(|s| s.reason.contains("pi-2")),
        "{:?}",
        without.skipped
    );
    let report = report_plan(&ws, &data);
    assert_eq!(keys(&report), keys(&planned));
    assert!(report.cells.iter().all(|c| c.cluster.is_some()));
    assert_eq!(
        cell(&report, "client").params["port"],
        ParamValue::Int(8080),
        "parameters as the plan made them"
    );
    assert!(
        report.skipped.iter().all(|s| !s.reason.contains("pi-2")),
        "{:?}",
        report.skipped
    );
    assert!(
        report
            .skipped
            .iter()
            .any(|s| s.reason.contains("uses storage")),
        "what could never apply still says so: {:?}",
        report.skipped
    );

    // Every file gone: the same.
    ws.boards.clear();
    assert_eq!(keys(&report_plan(&ws, &data)), keys(&planned));

    // The deploy changed: another cluster, whose cells the store does not hold.
    ws.scenarios[0]
        .clusters
        .get_mut(&BoardName::new("c"))
        .unwrap()
        .deploy[0]
        .command = "start the new app".into();
    assert!(report_plan(&ws, &data).cells.is_empty());
}

/// A peer's file gone (a lab torn down, a board retired): the cells that ran on it as
/// the peer come from the store, peer and all; with the board's own file gone too, the
/// same. Another peer in the scenario makes other cells.
#[test]
fn a_peer_cells_stored_cell_stands_in_when_the_peers_file_is_gone() {
    let mut ws = with_peer();
    let planned = expand(&ws, &ws.scenarios[0]);
    assert_eq!(planned.cells.len(), 1);
    let data = stored_data(&planned);

    ws.boards.remove(&BoardName::new("pi-2"));
    assert!(expand(&ws, &ws.scenarios[0]).cells.is_empty());
    let report = report_plan(&ws, &data);
    assert_eq!(keys(&report), keys(&planned));
    assert_eq!(report.cells[0].peer, Some(BoardName::new("pi-2")));
    assert!(
        report
            .skipped
            .iter()
            .all(|s| s.address != planned.cells[0].address),
        "{:?}",
        report.skipped
    );

    ws.boards.clear();
    assert_eq!(keys(&report_plan(&ws, &data)), keys(&planned));

    ws.scenarios[0].params.insert(
        TestName::new("peer-test"),
        BTreeMap::from([(
            crate::model::PEER_PARAM.to_string(),
            ParamValue::Str("pi-3".into()),
        )]),
    );
    assert!(
        report_plan(&ws, &data).cells.is_empty(),
        "a cell with another peer is another cell"
    );
}

#[test]
fn a_walk_acquires_the_labgrid_place_of_each_board_it_needs_after_its_hold() {
    let mut ws = with_cluster(None);
    for b in ["pi-1", "pi-2"] {
        ws.boards.get_mut(&BoardName::new(b)).unwrap().labgrid =
            Some(crate::model::labgrid::LabgridPlace {
                coordinator: "lab:20408".into(),
                place: format!("place-{b}"),
                wait: std::time::Duration::ZERO,
            });
    }
    ws.scenarios[0].matrix.board = vec![BoardName::new("c"), BoardName::new("pi-2")];
    ws.scenarios[0].matrix.test = vec![TestName::new("client")];
    let plan = expand(&ws, &ws.scenarios[0]);
    let recipe = &ws.recipes[&TestName::new("client")];
    let work: Vec<schedule::Work<'_>> = plan
        .cells
        .iter()
        .map(|c| schedule::Work {
            cell: c,
            recipe,
            runs_left: 3,
        })
        .collect();
    let s = schedule::build(&ws, &work, &schedule::Estimates::default());
    // (acquire?, place) of each reserve step, in the walk's order.
    let reserves = |name: &str| -> Vec<(bool, String)> {
        let b = s.boards.iter().find(|b| b.board.as_str() == name).unwrap();
        assert!(matches!(b.steps[0].action, schedule::Action::Hold(_)));
        assert!(matches!(
            b.steps[1].action,
            schedule::Action::Reserve(schedule::Reserve::AcquireLabgridPlace { .. })
        ));
        assert!(matches!(
            b.steps.last().unwrap().action,
            schedule::Action::Reserve(schedule::Reserve::ReleaseLabgridPlace { .. })
        ));
        b.steps
            .iter()
            .filter_map(|s| match &s.action {
                schedule::Action::Reserve(schedule::Reserve::AcquireLabgridPlace {
                    place, ..
                }) => Some((true, place.clone())),
                schedule::Action::Reserve(schedule::Reserve::ReleaseLabgridPlace {
                    place, ..
                }) => Some((false, place.clone())),
                _ => None,
            })
            .collect()
    };
    let r = |a: bool, p: &str| (a, p.to_string());
    assert_eq!(
        reserves("c"),
        [
            r(true, "place-pi-1"),
            r(true, "place-pi-2"),
            r(false, "place-pi-2"),
            r(false, "place-pi-1")
        ],
        "a cluster's walk reserves every member's place, releasing in reverse"
    );
    assert_eq!(
        reserves("pi-2"),
        [r(true, "place-pi-2"), r(false, "place-pi-2")]
    );
}
