//! The schedule's shape on the code-built fixture workspace: each mount prepared once,
//! groups, sides, estimates, and the JSON schema (format 1) pinned.

use std::time::Duration;

use super::*;
use crate::model::{Method, Step as Command};
use crate::plan::{expand, fixtures};

fn schedule_of(ws: &Workspace) -> Schedule {
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
    // `build` borrows the cells only for the call.
    build(ws, &work, &Estimates::default())
}

fn actions(b: &BoardSteps) -> Vec<&Action> {
    b.steps.iter().map(|s| &s.action).collect()
}

#[test]
fn each_mount_is_prepared_once_and_unmounted_before_the_next() {
    let ws = fixtures::workspace();
    let s = schedule_of(&ws);
    assert_eq!(s.boards.len(), 2);
    for b in &s.boards {
        let mut open: Option<(&StorageName, &FsName)> = None;
        let mut seen = Vec::new();
        for a in actions(b) {
            match a {
                Action::Board(BoardAction::Mount {
                    storage,
                    filesystem,
                    ..
                }) => {
                    assert!(open.is_none(), "a mount inside another: {a:?}");
                    assert!(!seen.contains(&(storage, filesystem)), "mounted twice");
                    seen.push((storage, filesystem));
                    open = Some((storage, filesystem));
                }
                Action::Board(BoardAction::Unmount {
                    storage,
                    filesystem,
                }) => {
                    assert_eq!(open, Some((storage, filesystem)));
                    open = None;
                }
                Action::Cell(CellAction::Measure { .. } | CellAction::Setup { .. }) => {}
                _ => {}
            }
        }
        assert!(open.is_none(), "left mounted");
        // disk-4k on sd/as-is, usb/as-is and usb/ext4 (sd is the boot disk).
        assert_eq!(seen.len(), 3, "{seen:?}");
    }
}

#[test]
fn board_steps_come_first_and_serve_every_cell_of_the_board() {
    let ws = fixtures::workspace();
    let s = schedule_of(&ws);
    let b = &s.boards[0];
    let first: Vec<&str> = b.steps[..5]
        .iter()
        .map(|s| match s.action {
            Action::Board(BoardAction::Connect) => "connect",
            Action::Walk(WalkAction::ClaimWorkdir { controller: false }) => "claim",
            Action::Walk(WalkAction::Provision { .. }) => "provision",
            Action::Walk(WalkAction::StopLeftoverServices) => "stop-leftovers",
            Action::Board(BoardAction::GatherFacts) => "facts",
            _ => "other",
        })
        .collect();
    assert_eq!(
        first,
        ["connect", "claim", "provision", "stop-leftovers", "facts"]
    );
    let measured: usize = b
        .steps
        .iter()
        .filter(|s| matches!(s.action, Action::Cell(CellAction::Measure { .. })))
        .map(|s| s.cells.len())
        .sum();
    assert_eq!(b.steps[0].cells.len(), measured, "4 cells per board");
    assert_eq!(measured, 4);
}

#[test]
fn interleaved_cells_of_one_mount_share_one_cooldown_and_one_measure_step() {
    let mut ws = fixtures::workspace();
    // Two tests on the same mounts: disk-4k and a second storage test.
    let mut other = fixtures::recipe("disk-seq", true);
    other.exclusive = vec!["bus".into()];
    ws.recipes.insert(other.name.clone(), other);
    ws.scenarios[0].matrix.test.push(TestName::new("disk-seq"));
    ws.scenarios[0].method = Method {
        order: RunOrder::Interleaved,
        cooldown: Cooldown::Fixed {
            duration: Duration::from_secs(60),
        },
        ..Method::default()
    };
    let s = schedule_of(&ws);
    let b = &s.boards[0];
    let measures: Vec<&Step> = b
        .steps
        .iter()
        .filter(|s| matches!(s.action, Action::Cell(CellAction::Measure { .. })))
        .collect();
    // Three mounts with two tests each, and xz alone.
    let sizes: Vec<usize> = measures.iter().map(|m| m.cells.len()).collect();
    assert_eq!(sizes.iter().filter(|n| **n == 2).count(), 3, "{sizes:?}");
    for m in &measures {
        assert!(matches!(
            m.action,
            Action::Cell(CellAction::Measure {
                order: RunOrder::Interleaved,
                ..
            })
        ));
        if m.cells.len() == 2 {
            assert_eq!(m.resources, ["bus"], "the group holds its tests' resources");
        }
    }
    let cooldowns: Vec<&Step> = b
        .steps
        .iter()
        .filter(|s| matches!(s.action, Action::Cell(CellAction::Cooldown { .. })))
        .collect();
    assert_eq!(cooldowns.len(), measures.len(), "one cool-down per group");
    assert!(cooldowns.iter().all(|c| c.estimate_seconds == Some(60.0)));
    // No run history: the whole estimate is unknown, not an undercount.
    assert_eq!(s.estimate_seconds(), None);
}

#[test]
fn setup_and_teardown_split_by_side_in_recipe_order() {
    let mut ws = fixtures::workspace();
    let cmd = |on, c: &str| Command {
        on,
        command: c.into(),
        timeout: None,
        input: None,
    };
    let r = ws.recipes.get_mut(&TestName::new("xz")).unwrap();
    r.setup = vec![
        cmd(Side::Board, "a"),
        cmd(Side::Board, "b"),
        cmd(Side::Controller, "c"),
        cmd(Side::Board, "d"),
    ];
    r.setup_after_services = vec![
        cmd(Side::Board, "e"),
        cmd(Side::Controller, "f"),
        cmd(Side::Controller, "g"),
    ];
    r.services = vec![crate::model::ServiceSpec {
        name: "db".into(),
        on: Side::Board,
        command: "exec db".into(),
        ready: None,
        ready_timeout: std::time::Duration::from_secs(10),
    }];
    r.teardown = vec![cmd(Side::Controller, "x"), cmd(Side::Board, "y")];
    let s = schedule_of(&ws);
    let b = &s.boards[0];
    let setups: Vec<(Side, usize, usize, bool)> = b
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::Cell(CellAction::Setup {
                test,
                from,
                commands,
                after_services,
            }) if test.as_str() == "xz" => Some((s.side, *from, *commands, *after_services)),
            _ => None,
        })
        .collect();
    assert_eq!(
        setups,
        [
            (Side::Board, 0, 2, false),
            (Side::Controller, 2, 1, false),
            (Side::Board, 3, 1, false),
            (Side::Board, 0, 1, true),
            (Side::Controller, 1, 2, true)
        ]
    );
    // Setup, the service, then the setup after services, then the cool-down.
    let first = b
        .steps
        .iter()
        .position(|s| matches!(&s.action, Action::Cell(CellAction::Setup { test, .. }) if test.as_str() == "xz"))
        .unwrap();
    let order: Vec<&str> = b.steps[first..]
        .iter()
        .take_while(|s| !matches!(s.action, Action::Cell(CellAction::Cooldown { .. })))
        .chain(
            b.steps[first..]
                .iter()
                .find(|s| matches!(s.action, Action::Cell(CellAction::Cooldown { .. }))),
        )
        .filter_map(|s| match &s.action {
            Action::Cell(CellAction::Setup {
                after_services: false,
                ..
            }) => Some("setup"),
            Action::Cell(CellAction::StartService { .. }) => Some("service"),
            Action::Cell(CellAction::Setup {
                after_services: true,
                ..
            }) => Some("after"),
            Action::Cell(CellAction::Cooldown { .. }) => Some("cooldown"),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "setup", "setup", "setup", "service", "after", "after", "cooldown"
        ]
    );
    let teardowns: Vec<(Side, usize)> = b
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::Cell(CellAction::Teardown { test, from, .. }) if test.as_str() == "xz" => {
                Some((s.side, *from))
            }
            _ => None,
        })
        .collect();
    assert_eq!(teardowns, [(Side::Controller, 0), (Side::Board, 1)]);
    assert!(matches!(
        b.steps[1].action,
        Action::Walk(WalkAction::ClaimWorkdir { controller: true })
    ));
}

#[test]
fn the_json_of_a_step_is_pinned() {
    let ws = fixtures::workspace();
    let s = schedule_of(&ws);
    let mount = s.boards[0]
        .steps
        .iter()
        .find(|s| {
            matches!(
                &s.action,
                Action::Board(BoardAction::Mount { mkfs: true, .. })
            )
        })
        .unwrap();
    let mut j = serde_json::to_value(mount).unwrap();
    j["cells"] = serde_json::json!(["KEY"]);
    assert_eq!(
        j,
        serde_json::json!({
            "action": "mount", "image": "installed", "storage": "usb", "filesystem": "ext4",
            "mkfs": true, "device": "/dev/disk/by-id/usb-Kingston",
            "cells": ["KEY"], "side": "board", "done_when": "mounted",
            "estimate_seconds": null
        })
    );
    assert_eq!(serde_json::to_value(&s).unwrap()["format"], 1);
    // What a format writes, named: the device and what the board file says it is.
    assert_eq!(
        mount.action.label(),
        "format usb as ext4 (installed) on /dev/disk/by-id/usb-Kingston (no serial declared, no size declared)"
    );
}

#[test]
fn a_tpi_board_is_flashed_through_its_bmc_then_power_cycled_before_it_connects() {
    let mut ws = fixtures::workspace();
    ws.boards.get_mut(&"pi-1".into()).unwrap().flash = crate::model::Flash::Tpi {
        via: "bmc".into(),
        node: 2,
        dir: crate::model::TPI_DEFAULT_DIR.into(),
    };
    let s = &mut ws.scenarios[0];
    s.images.insert(
        "raspios".into(),
        crate::model::Image {
            name: "raspios".into(),
            source: ImageSource::Url {
                url: crate::model::ImageUrl::new("https://example.invalid/raspios.img.xz"),
                sha256: "0".repeat(64),
                min_rate: None,
            },
            expect: Expectations::default(),
            firstboot: None,
        },
    );
    s.matrix.image = vec!["raspios".into()];
    let sched = schedule_of(&ws);
    let b = sched
        .boards
        .iter()
        .find(|b| b.board.as_str() == "pi-1")
        .expect("pi-1 is scheduled");
    let labels: Vec<String> = b.steps[..4].iter().map(|s| s.action.label()).collect();
    assert_eq!(
        labels,
        [
            "fetch image raspios",
            "REFLASH with raspios: tpi flash node 2 on BMC bmc",
            "power cycle",
            "connect"
        ]
    );
    let json = serde_json::to_value(&b.steps[1].action).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"action": "flash-tpi", "image": "raspios", "via": "bmc", "node": 2})
    );
    // pi-2 has no flash method: its cells are not planned, so it gets no steps.
    assert!(sched.boards.iter().all(|b| b.board.as_str() != "pi-2"));
}

#[test]
fn uas_states_are_grouped_after_the_boards_other_cells_and_restored_once() {
    use crate::model::Uas;
    let mut ws = fixtures::workspace();
    let plain = schedule_of(&ws);
    let pi1 = BoardName::new("pi-1");
    let b = ws.boards.get_mut(&pi1).unwrap();
    b.boot_cmdline = Some("/boot/firmware/cmdline.txt".into());
    let mut bot = b.storage[1].clone();
    bot.name = StorageName::new("usb-bot");
    bot.uas = Some(Uas {
        enabled: false,
        usb_id: None,
    });
    b.storage[1].uas = Some(Uas {
        enabled: true,
        usb_id: Some("174c:55aa".into()),
    });
    b.storage.push(bot);
    let s = schedule_of(&ws);
    // pi-2 declares no uas: its steps are what they were.
    assert_eq!(s.boards[1], plain.boards[1]);
    let b = &s.boards[0];
    let labels: Vec<String> = b
        .steps
        .iter()
        .filter(|s| {
            matches!(
                s.action,
                Action::Board(
                    BoardAction::Uas { .. }
                        | BoardAction::RestoreCmdline
                        | BoardAction::Mount { .. }
                )
            )
        })
        .map(|s| s.action.label())
        .collect();
    assert_eq!(
        labels,
        [
            "check sd as-is (installed)",
            "USB driver of usb-bot: usb-storage (kernel command line, power cycle, verify)",
            "check usb-bot as-is (installed)",
            "format usb-bot as ext4 (installed) on /dev/disk/by-id/usb-Kingston (no serial declared, no size declared)",
            "USB driver of usb: uas (kernel command line, power cycle, verify)",
            "check usb as-is (installed)",
            "format usb as ext4 (installed) on /dev/disk/by-id/usb-Kingston (no serial declared, no size declared)",
            "restore the kernel command line (power cycle if it changed)",
        ]
    );
    // Each uas step serves its group's cells; the restore serves them all, after them.
    let uas: Vec<&Step> = b
        .steps
        .iter()
        .filter(|s| matches!(s.action, Action::Board(BoardAction::Uas { .. })))
        .collect();
    assert_eq!((uas[0].cells.len(), uas[1].cells.len()), (2, 2));
    assert_eq!(uas[0].done_when, DoneWhen::DriverAsWanted);
    let restore = b.steps.last().unwrap();
    assert_eq!(restore.done_when, DoneWhen::NothingToUndo);
    assert!(restore.action.is_cleanup());
    assert_eq!(restore.cells.len(), 4);
    // The keys: storage without uas keeps its key; uas on and off differ.
    let key_of = |ws: &Workspace, storage: &str, fs: &str| {
        crate::plan::expand(ws, &ws.scenarios[0])
            .cells
            .into_iter()
            .find(|c| {
                c.address.board == pi1
                    && c.address
                        .storage
                        .as_ref()
                        .is_some_and(|s| s.as_str() == storage)
                    && c.filesystem.as_ref().is_some_and(|f| f.name.as_str() == fs)
            })
            .unwrap()
            .key
    };
    let before = fixtures::workspace();
    assert_eq!(key_of(&ws, "sd", "as-is"), key_of(&before, "sd", "as-is"));
    assert_ne!(key_of(&ws, "usb", "ext4"), key_of(&before, "usb", "ext4"));
    let mut off = ws.clone();
    off.boards.get_mut(&pi1).unwrap().storage[1].uas = Some(Uas {
        enabled: false,
        usb_id: Some("174c:55aa".into()),
    });
    assert_ne!(key_of(&ws, "usb", "ext4"), key_of(&off, "usb", "ext4"));
}

#[test]
fn xfs_f2fs_and_as_flashed_are_each_prepared_once_and_only_the_made_ones_format() {
    let mut ws = fixtures::workspace();
    let s = &mut ws.scenarios[0];
    for (name, kind) in [("xfs", "xfs"), ("f2fs", "f2fs"), ("image", "as-flashed")] {
        s.filesystems.insert(
            FsName::new(name),
            crate::model::Filesystem {
                name: FsName::new(name),
                kind: kind.into(),
                mkfs_options: vec![],
                mount_options: vec![],
            },
        );
    }
    s.matrix.filesystem = ["xfs", "f2fs", "image"].map(FsName::new).to_vec();
    let plan = expand(&ws, &ws.scenarios[0]);
    // as-flashed applies to the boot storage too; xfs and f2fs only to scratch.
    assert!(
        plan.cells.iter().any(|c| c
            .address
            .storage
            .as_ref()
            .is_some_and(|s| s.as_str() == "sd")
            && c.address
                .filesystem
                .as_ref()
                .is_some_and(|f| f.as_str() == "image")),
        "{:?}",
        plan.skipped
    );
    let s = schedule_of(&ws);
    for b in &s.boards {
        let mounts: Vec<(String, String, bool)> = actions(b)
            .into_iter()
            .filter_map(|a| match a {
                Action::Board(BoardAction::Mount {
                    storage,
                    filesystem,
                    mkfs,
                    ..
                }) => Some((storage.to_string(), filesystem.to_string(), *mkfs)),
                _ => None,
            })
            .collect();
        let unmounts = actions(b)
            .into_iter()
            .filter(|a| matches!(a, Action::Board(BoardAction::Unmount { .. })))
            .count();
        let mut want = vec![
            ("sd".to_string(), "image".to_string(), false),
            ("usb".into(), "xfs".into(), true),
            ("usb".into(), "f2fs".into(), true),
            ("usb".into(), "image".into(), false),
        ];
        let mut got = mounts.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "each (storage, filesystem) once");
        assert_eq!(unmounts, mounts.len());
    }
}
