//! Integration tests: the fs-stack recipe (pipeline/fs-stack.toml) on a real lab board's
//! loop disk, through ext4 and btrfs with lzo: write and read rates, and nothing left
//! behind (the tmpfs holding the source block, the file, the mount).

use std::path::Path;

use benchpipe::lab::DROP_COPIED_LOOP_MOUNTS;

use crate::lab::{Lab, bp, text};
use crate::xz::{benchpipe_tmpfs, board_mounts, in_board};

fn samples(root: &Path) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let cell = std::fs::read_to_string(e.path().join("cell.json")).unwrap_or_default();
        let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for l in text.lines() {
            out.push((cell.clone(), serde_json::from_str(l).unwrap()));
        }
    }
    out
}

/// A lab workspace with the shipped recipe and a scenario on board 0's disk.
fn fs_stack_scenario(lab: &Lab, filesystems: &str, params: &str) {
    let board = lab.board(0);
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/fs-stack.toml"),
        root.join("pipeline/fs-stack.toml"),
    )
    .unwrap();
    // Lab disks are 64 MiB: btrfs needs mixed block groups below about 114 MiB.
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"fs-stack\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\n\
             [filesystems.btrfs-lzo]\nkind = \"btrfs\"\nmkfs_options = [\"--mixed\"]\nmount_options = [\"compress=lzo\"]\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}\"]\nstorage = [\"{}\"]\n\
             filesystem = [{filesystems}]\ntest = [\"fs-stack\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.fs-stack]\n{params}\n",
            board.name, board.disks[0].name
        ),
    )
    .unwrap();
}

#[test]
fn fs_stack_writes_and_reads_through_ext4_and_btrfs_lzo_on_a_lab_disk() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let disk = &board.disks[0];
    in_board(&board, DROP_COPIED_LOOP_MOUNTS);
    let root = &lab.root;
    fs_stack_scenario(&lab, "\"ext4\", \"btrfs-lzo\"", "mib = 24\nblock_mib = 5");
    let out = bp(root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let samples = samples(root);
    assert_eq!(
        samples.len(),
        4,
        "two runs on each filesystem: {}",
        text(&out)
    );
    for fs in ["\"ext4\"", "\"btrfs\""] {
        assert_eq!(
            samples.iter().filter(|(cell, _)| cell.contains(fs)).count(),
            2,
            "{fs}"
        );
    }
    for (_, s) in &samples {
        for m in ["write", "read"] {
            let v = s["metrics"][m].as_f64().unwrap();
            assert!(v.is_finite() && v > 0.0, "{m} = {v} MB/s: {s}");
        }
    }
    assert_eq!(benchpipe_tmpfs(&board), "", "the tmpfs is gone");
    let left: Vec<_> = std::fs::read_dir(&board.workdir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("fs-stack-"))
        .collect();
    assert!(left.is_empty(), "mount points left: {left:?}");
    assert_eq!(
        board_mounts(&board, &disk.path),
        "",
        "the disk is unmounted"
    );
}

/// The file does not fit the 64 MiB disk: the run fails, and the teardown still removes
/// the tmpfs; the disk is unmounted.
#[test]
fn a_failing_fs_stack_run_still_removes_its_tmpfs() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    in_board(&board, DROP_COPIED_LOOP_MOUNTS);
    fs_stack_scenario(&lab, "\"ext4\"", "mib = 100\nblock_mib = 4");
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("No space left on device"),
        "{}",
        text(&out)
    );
    assert!(samples(&lab.root).is_empty());
    assert_eq!(benchpipe_tmpfs(&board), "", "the tmpfs is gone");
    assert_eq!(
        board_mounts(&board, &board.disks[0].path),
        "",
        "the disk is unmounted"
    );
}
