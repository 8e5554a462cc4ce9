//! A prepared image (`[images.NAME.firstboot]`) in the plan: what its cells' keys hold
//! of the preparation, and the schedule's derive step, left out with the flash when the
//! board already runs the prepared image.

use std::collections::BTreeMap;

use super::schedule::{Action, DoneWhen, Estimates, WalkAction, Work, build};
use super::*;
use crate::model::{
    Attachment, AuthorizedKey, BoardName, Firstboot, FirstbootKind, ImageSource, ImageUrl,
};

fn key(line: &str) -> AuthorizedKey {
    AuthorizedKey {
        line: line.into(),
        fingerprint: format!("SHA256:{line}"),
    }
}

pub(crate) fn firstboot() -> Firstboot {
    Firstboot {
        kind: FirstbootKind::CloudInit,
        user: "bench".into(),
        authorized_key: Some(key("ssh-ed25519 AAAA")),
        board_keys: BTreeMap::new(),
        sudo: true,
        password_hash: None,
        user_data: None,
        network_config: None,
        hostname: None,
    }
}

/// The fixture workspace with pi-1 flashed by `dd` with image `ubuntu` (prepared with
/// `fb`), the only image of the matrix.
pub(crate) fn workspace(fb: Option<Firstboot>) -> Workspace {
    let mut ws = fixtures::workspace();
    ws.boards.get_mut(&"pi-1".into()).unwrap().flash = Flash::Dd {
        via: "pi-2".into(),
        device: "/dev/sdz".into(),
    };
    let s = &mut ws.scenarios[0];
    s.images.insert(
        "ubuntu".into(),
        Image {
            name: "ubuntu".into(),
            source: ImageSource::Url {
                url: ImageUrl::new("https://example.invalid/ubuntu.img.xz"),
                sha256: "a".repeat(64),
                min_rate: None,
            },
            expect: crate::model::Expectations::default(),
            firstboot: fb,
        },
    );
    s.matrix.image = vec!["ubuntu".into()];
    s.matrix.board = vec!["pi-1".into()];
    ws
}

fn keys(ws: &Workspace) -> Vec<String> {
    expand(ws, &ws.scenarios[0])
        .cells
        .iter()
        .map(|c| c.key.to_string())
        .collect()
}

#[test]
fn a_prepared_images_key_names_its_base_and_what_can_change_a_number_not_credentials() {
    let plain = keys(&workspace(None));
    let prepared = keys(&workspace(Some(firstboot())));
    assert!(!plain.is_empty());
    for (a, b) in plain.iter().zip(&prepared) {
        assert_ne!(a, b, "a prepared image is another image");
    }
    // The cells' inputs: the base's identity and the preparation's kind.
    let ws = workspace(Some(firstboot()));
    let plan = expand(&ws, &ws.scenarios[0]);
    let json = plan.cells[0].inputs.json();
    assert_eq!(json["image"]["base"], format!("sha256:{}", "a".repeat(64)));
    assert_eq!(json["image"]["firstboot"]["kind"], "cloud-init");
    let text = serde_json::to_string(json).unwrap();
    assert!(!text.contains("AAAA") && !text.contains("bench"), "{text}");

    // Credentials and the host name change no key: another user, key, password, sudo.
    let mut same = firstboot();
    same.user = "ubuntu".into();
    same.authorized_key = Some(key("ssh-ed25519 BBBB"));
    same.password_hash = Some(crate::model::PasswordHash("$6$x$y".into()));
    same.sudo = false;
    same.hostname = Some("lab-{{ board }}".into());
    assert_eq!(keys(&workspace(Some(same))), prepared);
    // What runs on the board does: the kind, extra user-data, a network-config.
    let attachment = Attachment {
        text: "#cloud-config\npackages: [fio]\n".into(),
        sha256: "c".repeat(64),
    };
    for changed in [
        Firstboot {
            kind: FirstbootKind::Raspios,
            ..firstboot()
        },
        Firstboot {
            user_data: Some(attachment.clone()),
            ..firstboot()
        },
        Firstboot {
            network_config: Some(attachment.clone()),
            ..firstboot()
        },
    ] {
        assert_ne!(keys(&workspace(Some(changed))), prepared);
    }
}

/// The schedule of the workspace's first scenario, the store saying each board of
/// `at` runs its image.
fn built(ws: &Workspace, at: BTreeMap<BoardName, String>) -> super::schedule::Schedule {
    let plan = expand(ws, &ws.scenarios[0]);
    let work: Vec<Work<'_>> = plan
        .cells
        .iter()
        .map(|c| Work {
            cell: c,
            recipe: &ws.recipes[&c.address.test],
            runs_left: 3,
        })
        .collect();
    build(ws, &work, &Estimates::default().with_board_images(at))
}

fn schedule(ws: &Workspace, at: Option<String>) -> Vec<(Action, DoneWhen)> {
    let at = at.map(|i| BTreeMap::from([(BoardName::new("pi-1"), i)]));
    let s = built(ws, at.unwrap_or_default());
    s.boards[0]
        .steps
        .iter()
        .map(|s| (s.action.clone(), s.done_when))
        .collect()
}

#[test]
fn a_prepared_image_is_derived_after_its_fetch_and_not_flashed_on_a_board_that_runs_it() {
    let ws = workspace(Some(firstboot()));
    let steps = schedule(&ws, None);
    let labels: Vec<String> = steps.iter().take(4).map(|(a, _)| a.label()).collect();
    assert_eq!(labels[0], "fetch image ubuntu");
    assert_eq!(
        steps[1],
        (
            Action::Walk(WalkAction::Derive {
                image: "ubuntu".into(),
                firstboot: "cloud-init".into(),
                member: None,
            }),
            DoneWhen::Derived
        )
    );
    assert!(labels[2].starts_with("REFLASH with ubuntu"), "{labels:?}");
    let json = serde_json::to_value(&steps[1].0).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"action": "derive", "image": "ubuntu", "firstboot": "cloud-init"})
    );
    // A board that runs this preparation of the image: nothing is fetched, derived or
    // flashed.
    let image = &ws.scenarios[0].images[&"ubuntu".into()];
    let runs = image.runs_as(&"pi-1".into());
    assert!(runs.starts_with(&format!("sha256:{}+firstboot:", "a".repeat(64))));
    let again = schedule(&ws, Some(runs));
    assert!(
        again.iter().all(|(a, _)| !matches!(
            a,
            Action::Walk(
                WalkAction::FetchImage { .. }
                    | WalkAction::Derive { .. }
                    | WalkAction::Flash { .. }
            )
        )),
        "{again:?}"
    );
    // A board at the unprepared image (or another preparation) is flashed again.
    let base = image.source.identity(&image.name);
    let other = schedule(&ws, Some(base));
    assert!(
        other
            .iter()
            .any(|(a, _)| matches!(a, Action::Walk(WalkAction::Derive { .. })))
    );
    // An image without preparation has no derive step.
    let plain = schedule(&workspace(None), None);
    assert!(
        plain
            .iter()
            .all(|(a, _)| !matches!(a, Action::Walk(WalkAction::Derive { .. })))
    );
}

/// `workspace` with a cluster `pair` of pi-1 (flashed by dd) and pi-2 (by a command,
/// with no power cycle), measuring xz on the prepared image.
fn cluster_workspace() -> Workspace {
    let mut ws = workspace(Some(firstboot()));
    ws.boards.get_mut(&"pi-2".into()).unwrap().flash = Flash::Command {
        command: "flash {{ image }}".into(),
        via: None,
    };
    let s = &mut ws.scenarios[0];
    s.clusters.insert(
        "pair".into(),
        crate::model::Cluster {
            name: "pair".into(),
            members: vec!["pi-1".into(), "pi-2".into()],
            control: "pi-1".into(),
            endpoint: crate::model::Endpoint {
                at: crate::model::EndpointAt::Board("pi-1".into()),
                port: None,
            },
            deploy: Vec::new(),
            teardown: Vec::new(),
        },
    );
    s.matrix.board = vec!["pair".into()];
    s.matrix.test = vec!["xz".into()];
    ws
}

fn cluster_schedule(ws: &Workspace, at: BTreeMap<BoardName, String>) -> Vec<Action> {
    let skipped = expand(ws, &ws.scenarios[0]).skipped;
    assert!(skipped.is_empty(), "{skipped:?}");
    let s = built(ws, at);
    assert_eq!(s.boards.len(), 1);
    s.boards[0].steps.iter().map(|s| s.action.clone()).collect()
}

#[test]
fn a_clusters_members_are_each_prepared_and_flashed_after_one_fetch_then_connected() {
    let ws = cluster_workspace();
    let steps = cluster_schedule(&ws, BTreeMap::new());
    let labels: Vec<String> = steps.iter().map(Action::label).collect();
    let at = |prefix: &str| {
        labels
            .iter()
            .position(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {labels:#?}"))
    };
    assert_eq!(labels[0], "fetch image ubuntu");
    assert_eq!(
        labels.iter().filter(|l| l.starts_with("fetch")).count(),
        1,
        "{labels:#?}"
    );
    // pi-1: derive, dd, power cycle; pi-2: derive, its command (which reboots it).
    let order = [
        at("prepare ubuntu's first boot (cloud-init) for member pi-1"),
        at("REFLASH member pi-1 with ubuntu: dd to /dev/sdz"),
        at("power cycle member pi-1"),
        at("prepare ubuntu's first boot (cloud-init) for member pi-2"),
        at("REFLASH member pi-2 with ubuntu: the board's [flash] command"),
        at("connect member pi-1"),
        at("connect member pi-2"),
        at("provision xz"),
        at("verify image ubuntu"),
        at("arm the guards"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{labels:#?}");
    assert!(!labels.contains(&"power cycle member pi-2".to_string()));
    let json = serde_json::to_value(&steps[order[1]]).unwrap();
    assert_eq!(json["member"], "pi-1", "{json}");
    assert_eq!(json["action"], "flash", "{json}");
    // A member already at the prepared image is left as it is; the other is flashed.
    let image = &ws.scenarios[0].images[&"ubuntu".into()];
    let pi1 = BoardName::new("pi-1");
    let steps = cluster_schedule(&ws, BTreeMap::from([(pi1.clone(), image.runs_as(&pi1))]));
    let labels: Vec<String> = steps.iter().map(Action::label).collect();
    assert!(
        labels.iter().all(|l| !l.contains("member pi-1")
            || l.starts_with("connect")
            || l.starts_with("gather")),
        "{labels:#?}"
    );
    assert!(labels.iter().any(|l| l.starts_with("REFLASH member pi-2")));
    // Both at it: nothing fetched, derived or flashed.
    let pi2 = BoardName::new("pi-2");
    let both = BTreeMap::from([
        (pi1.clone(), image.runs_as(&pi1)),
        (pi2.clone(), image.runs_as(&pi2)),
    ]);
    let steps = cluster_schedule(&ws, both);
    assert!(
        steps.iter().all(|a| !matches!(
            a,
            Action::Walk(
                WalkAction::FetchImage { .. }
                    | WalkAction::Derive { .. }
                    | WalkAction::Flash { .. }
                    | WalkAction::FlashCommand { .. }
                    | WalkAction::PowerCycle { .. }
            )
        )),
        "{steps:#?}"
    );
}

#[test]
fn a_cluster_member_without_a_flash_method_makes_the_flashed_images_cells_not_applicable() {
    let mut ws = cluster_workspace();
    ws.boards.get_mut(&"pi-2".into()).unwrap().flash = Flash::None;
    let plan = expand(&ws, &ws.scenarios[0]);
    assert!(plan.cells.is_empty());
    let why: Vec<&str> = plan.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(
        why,
        ["image ubuntu must be flashed, but board pi-2 has no [flash] method"],
        "{why:?}"
    );
}
