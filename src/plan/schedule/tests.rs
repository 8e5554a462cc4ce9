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
                Action::Mount {
                    storage,
                    filesystem,
                    ..
                } => {
                    assert!(open.is_none(), "a mount inside another: {a:?}");
                    assert!(!seen.contains(&(storage, filesystem)), "mounted twice");
                    seen.push((storage, filesystem));
                    open = Some((storage, filesystem));
                }
                Action::Unmount {
                    storage,
                    filesystem,
                } => {
                    assert_eq!(open, Some((storage, filesystem)));
                    open = None;
                }
                Action::Measure { .. } | Action::Setup { .. } => {}
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
            Action::Connect => "connect",
            Action::ClaimWorkdir { controller: false } => "claim",
            Action::Provision { .. } => "provision",
            Action::StopLeftoverServices => "stop-leftovers",
            Action::GatherFacts => "facts",
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
        .filter(|s| matches!(s.action, Action::Measure { .. }))
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
        .filter(|s| matches!(s.action, Action::Measure { .. }))
        .collect();
    // Three mounts with two tests each, and xz alone.
    let sizes: Vec<usize> = measures.iter().map(|m| m.cells.len()).collect();
    assert_eq!(sizes.iter().filter(|n| **n == 2).count(), 3, "{sizes:?}");
    for m in &measures {
        assert!(matches!(
            m.action,
            Action::Measure {
                order: RunOrder::Interleaved,
                ..
            }
        ));
        if m.cells.len() == 2 {
            assert_eq!(m.resources, ["bus"], "the group holds its tests' resources");
        }
    }
    let cooldowns: Vec<&Step> = b
        .steps
        .iter()
        .filter(|s| matches!(s.action, Action::Cooldown { .. }))
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
    };
    let r = ws.recipes.get_mut(&TestName::new("xz")).unwrap();
    r.setup = vec![
        cmd(Side::Board, "a"),
        cmd(Side::Board, "b"),
        cmd(Side::Controller, "c"),
        cmd(Side::Board, "d"),
    ];
    r.teardown = vec![cmd(Side::Controller, "x"), cmd(Side::Board, "y")];
    let s = schedule_of(&ws);
    let b = &s.boards[0];
    let setups: Vec<(Side, usize, usize)> = b
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::Setup {
                test,
                from,
                commands,
            } if test.as_str() == "xz" => Some((s.side, *from, *commands)),
            _ => None,
        })
        .collect();
    assert_eq!(
        setups,
        [
            (Side::Board, 0, 2),
            (Side::Controller, 2, 1),
            (Side::Board, 3, 1)
        ]
    );
    let teardowns: Vec<(Side, usize)> = b
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            Action::Teardown { test, from, .. } if test.as_str() == "xz" => Some((s.side, *from)),
            _ => None,
        })
        .collect();
    assert_eq!(teardowns, [(Side::Controller, 0), (Side::Board, 1)]);
    assert!(matches!(
        b.steps[1].action,
        Action::ClaimWorkdir { controller: true }
    ));
}

#[test]
fn the_json_of_a_step_is_pinned() {
    let ws = fixtures::workspace();
    let s = schedule_of(&ws);
    let mount = s.boards[0]
        .steps
        .iter()
        .find(|s| matches!(&s.action, Action::Mount { mkfs: true, .. }))
        .unwrap();
    let mut j = serde_json::to_value(mount).unwrap();
    j["cells"] = serde_json::json!(["KEY"]);
    assert_eq!(
        j,
        serde_json::json!({
            "action": "mount", "image": "installed", "storage": "usb", "filesystem": "ext4",
            "mkfs": true, "cells": ["KEY"], "side": "board", "done_when": "mounted",
            "estimate_seconds": null
        })
    );
    assert_eq!(serde_json::to_value(&s).unwrap()["format"], 1);
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
                Action::Mount {
                    storage,
                    filesystem,
                    mkfs,
                    ..
                } => Some((storage.to_string(), filesystem.to_string(), *mkfs)),
                _ => None,
            })
            .collect();
        let unmounts = actions(b)
            .into_iter()
            .filter(|a| matches!(a, Action::Unmount { .. }))
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
