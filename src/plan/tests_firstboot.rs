//! A prepared image (`[images.NAME.firstboot]`) in the plan: what its cells' keys hold
//! of the preparation, and the schedule's derive step, left out with the flash when the
//! board already runs the prepared image.

use std::collections::BTreeMap;

use super::schedule::{Action, DoneWhen, Estimates, Work, build};
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
            expect: Default::default(),
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

fn schedule(ws: &Workspace, at: Option<String>) -> Vec<(Action, DoneWhen)> {
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
    let estimates = Estimates::default().with_board_images(
        at.map(|i| BTreeMap::from([(BoardName::new("pi-1"), i)]))
            .unwrap_or_default(),
    );
    let s = build(ws, &work, &estimates);
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
            Action::Derive {
                image: "ubuntu".into(),
                firstboot: "cloud-init".into()
            },
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
            Action::FetchImage { .. } | Action::Derive { .. } | Action::Flash { .. }
        )),
        "{again:?}"
    );
    // A board at the unprepared image (or another preparation) is flashed again.
    let base = image.source.identity(&image.name);
    let other = schedule(&ws, Some(base));
    assert!(
        other
            .iter()
            .any(|(a, _)| matches!(a, Action::Derive { .. }))
    );
    // An image without preparation has no derive step.
    let plain = schedule(&workspace(None), None);
    assert!(
        plain
            .iter()
            .all(|(a, _)| !matches!(a, Action::Derive { .. }))
    );
}
