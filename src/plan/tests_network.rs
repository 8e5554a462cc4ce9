//! Tests of the network axis: a networked test per declared link, none for the others,
//! a board without the link skipped with the reason, and what of a link is in the key.

use super::*;
use crate::model::{CellPattern, LinkKind, Network};

fn link(name: &str, address: &str, interface: &str, kind: LinkKind) -> Network {
    Network {
        name: NetworkName::new(name),
        address: address.into(),
        interface: interface.into(),
        kind: Some(kind),
        model: None,
    }
}

/// pi-1 has `lan` and `wifi`, pi-2 only `lan`; `iperf` uses the network, `xz` does not.
fn workspace(networks: &[&str]) -> Workspace {
    let mut ws = fixtures::workspace();
    let pi1 = ws.boards.get_mut(&"pi-1".into()).unwrap();
    pi1.network = vec![
        link("lan", "10.0.0.1", "eth0", LinkKind::Wired),
        link("wifi", "10.0.1.1", "wlan0", LinkKind::Wifi),
    ];
    let pi2 = ws.boards.get_mut(&"pi-2".into()).unwrap();
    pi2.network = vec![link("lan", "10.0.0.2", "eth0", LinkKind::Wired)];
    let mut iperf = fixtures::recipe("iperf", false);
    iperf.uses_network = true;
    iperf.run.command = "iperf3 -c {{ host }}".into();
    ws.recipes.insert(iperf.name.clone(), iperf);
    let m = &mut ws.scenarios[0].matrix;
    m.test = vec![TestName::new("iperf"), TestName::new("xz")];
    m.network = networks.iter().map(ToString::to_string).collect();
    ws
}

fn labels(plan: &Plan) -> Vec<String> {
    plan.cells.iter().map(|c| c.address.label()).collect()
}

#[test]
fn a_networked_test_runs_once_per_link_and_others_get_no_network() {
    let ws = workspace(&["lan", "wifi"]);
    let plan = expand(&ws, &ws.scenarios[0]);
    assert_eq!(
        labels(&plan),
        [
            "iperf on pi-1 over lan (installed)",
            "iperf on pi-1 over wifi (installed)",
            "xz on pi-1 (installed)",
            "iperf on pi-2 over lan (installed)",
            "xz on pi-2 (installed)",
        ]
    );
    assert_eq!(plan.skipped.len(), 1, "{:?}", plan.skipped);
    assert_eq!(
        plan.skipped[0].reason,
        "board pi-2 has no network matching `wifi`"
    );
    assert_eq!(
        bound(&ws.boards, &ws.recipes, &ws.scenarios[0]).cells,
        5,
        "the bound counts each board's links"
    );
    // Without the axis, today's cells: the SSH host, no network.
    let ws = workspace(&[]);
    let plan = expand(&ws, &ws.scenarios[0]);
    assert!(plan.cells.iter().all(|c| c.address.network.is_none()));
    assert_eq!(plan.cells.len(), 4);
    assert!(
        plan.cells
            .iter()
            .all(|c| c.inputs.json()["network"].is_null())
    );
    // A glob picks every matching link.
    let ws = workspace(&["*"]);
    assert_eq!(expand(&ws, &ws.scenarios[0]).cells.len(), 5);
}

#[test]
fn exclude_and_include_name_the_network_axis() {
    let mut ws = workspace(&["lan", "wifi"]);
    let m = &mut ws.scenarios[0].matrix;
    m.exclude.push(CellPattern {
        network: Some("wifi".into()),
        ..CellPattern::default()
    });
    let plan = expand(&ws, &ws.scenarios[0]);
    assert!(
        labels(&plan).iter().all(|l| !l.contains("over wifi")),
        "{:?}",
        labels(&plan)
    );
    let m = &mut ws.scenarios[0].matrix;
    m.include.push(CellPattern {
        board: Some("pi-1".into()),
        test: Some("iperf".into()),
        network: Some("wifi".into()),
        ..CellPattern::default()
    });
    let plan = expand(&ws, &ws.scenarios[0]);
    assert!(
        labels(&plan).contains(&"iperf on pi-1 over wifi (installed)".to_string()),
        "{:?}",
        labels(&plan)
    );
    // A storage pattern never matches a cell without storage, nor a network one a cell
    // without a network.
    let xz = plan
        .cells
        .iter()
        .find(|c| c.address.test.as_str() == "xz")
        .unwrap();
    assert!(!xz.address.matches(&CellPattern {
        network: Some("*".into()),
        ..CellPattern::default()
    }));
}

#[test]
fn the_key_holds_the_links_name_kind_and_model_but_not_its_address_or_interface() {
    const WIFI: &str = "iperf on pi-1 over wifi (installed)";
    let key_of = |ws: &Workspace, label: &str| {
        expand(ws, &ws.scenarios[0])
            .cells
            .into_iter()
            .find(|c| c.address.label() == label)
            .map(|c| c.key)
            .unwrap()
    };
    let base = workspace(&["lan", "wifi"]);
    let k0 = key_of(&base, WIFI);
    let lan = key_of(&base, "iperf on pi-1 over lan (installed)");
    assert_ne!(k0, lan, "two links, two cells");
    let change = |f: &dyn Fn(&mut Network)| {
        let mut ws = base.clone();
        let pi1 = ws.boards.get_mut(&"pi-1".into()).unwrap();
        f(&mut pi1.network[1]);
        key_of(&ws, WIFI)
    };
    assert_eq!(change(&|n| n.address = "192.0.2.9".into()), k0, "address");
    assert_eq!(change(&|n| n.interface = "wlp1s0".into()), k0, "interface");
    assert_ne!(change(&|n| n.kind = Some(LinkKind::Wired)), k0, "kind");
    assert_ne!(change(&|n| n.model = Some("AX200".into())), k0, "model");
    let doc = expand(&base, &base.scenarios[0])
        .cells
        .into_iter()
        .find(|c| c.address.label() == WIFI)
        .unwrap()
        .inputs;
    assert_eq!(
        doc.json()["network"],
        serde_json::json!({"name": "wifi", "kind": "wifi", "model": null})
    );
    // The xz cells, which use no network, keep one key whatever the axis says.
    let xz = |ws: &Workspace| key_of(ws, "xz on pi-1 (installed)");
    assert_eq!(xz(&base), xz(&workspace(&[])));
}
