//! Integration tests: filesystem kinds on real lab boards: xfs made on a loop disk with
//! the real mkfs.xfs, once per (image, storage, filesystem), and unmounted after; f2fs
//! skipped with its reason where the board's kernel has none (this machine's has none);
//! `as-flashed` measuring the image's own filesystem at a path, never formatted.

use crate::lab::{bp, sh};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::lab::Lab;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Every stored cell of `test`: its cell.json and its directory.
fn cells(root: &Path, test: &str) -> Vec<(Value, PathBuf)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(root.join("results")) else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(text) = std::fs::read_to_string(e.path().join("cell.json")) else {
            continue;
        };
        let cell: Value = serde_json::from_str(&text).unwrap();
        if cell["address"]["test"] == test {
            out.push((cell, e.path()));
        }
    }
    out
}

fn samples(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn copy_recipes(root: &Path, names: &[&str]) {
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for n in names {
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("pipeline/{n}.toml")),
            root.join(format!("pipeline/{n}.toml")),
        )
        .unwrap();
    }
}

#[test]
fn xfs_is_made_once_and_unmounted_f2fs_skipped_with_the_kernels_reason_and_as_flashed_measured_in_place()
 {
    // This machine's kernel has no f2fs (and no module for it): the skip is the point of
    // the test. A kernel that gains f2fs makes this test fail rather than pass quietly.
    let filesystems = std::fs::read_to_string("/proc/filesystems").unwrap();
    assert!(
        !filesystems.split_whitespace().any(|w| w == "f2fs"),
        "this machine's kernel mounts f2fs: the lab can no longer show the skip"
    );
    assert!(
        filesystems.split_whitespace().any(|w| w == "xfs"),
        "this machine's kernel has no xfs: {filesystems}"
    );
    let Some(lab) = Lab::up_with_disks(1, Some(320 << 20)) else {
        return;
    };
    let root = &lab.root;
    let board = lab.board(0).clone();
    let disk = &board.disks[0];
    copy_recipes(root, &["dd-write", "disk-4k"]);
    // The image's own filesystem: a directory on the board's root filesystem (lab
    // boards share this machine's).
    let in_image = format!("{}/in-image", board.workdir);
    let mut board_file = std::fs::read_to_string(&board.board_file).unwrap();
    let _ = write!(
        board_file,
        "\n[[storage]]\nname = \"rootfs\"\nrole = \"boot\"\npath = \"{in_image}\"\n"
    );
    std::fs::write(&board.board_file, board_file).unwrap();
    let scenario = format!(
        "title = \"filesystem kinds\"\n[images.installed]\ninstalled = true\n\
         [filesystems.xfs]\nkind = \"xfs\"\nmount_options = [\"noatime\"]\n\
         [filesystems.f2fs]\nkind = \"f2fs\"\n\
         [filesystems.image]\nkind = \"as-flashed\"\n\
         [matrix]\nimage = [\"installed\"]\nboard = [\"{b}\"]\n\
         storage = [\"{d}\", \"rootfs\"]\nfilesystem = [\"xfs\", \"f2fs\", \"image\"]\n\
         test = [\"dd-write\", \"disk-4k\"]\n\
         exclude = [{{ storage = \"rootfs\", filesystem = \"xfs\" }}, \
                    {{ storage = \"rootfs\", filesystem = \"f2fs\" }}, \
                    {{ storage = \"{d}\", filesystem = \"image\" }}]\n\
         [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n\
         [params.dd-write]\nmib = 8\n[params.disk-4k]\nsize = \"4M\"\nruntime = 1\n",
        b = board.name,
        d = disk.name
    );
    std::fs::write(root.join("scenarios/fs.toml"), scenario).unwrap();
    let check = bp(root, &["check", "scenarios/fs.toml"]);
    assert!(check.status.success(), "{}", stderr(&check));

    let out = bp(root, &["apply", "scenarios/fs.toml"]);
    let err = stderr(&out);
    // Skipped cells are no failure: apply succeeds.
    assert!(out.status.success(), "{err}");
    assert!(err.contains(", 0 failed, 2 skipped"), "{err}");
    let reason = format!("the kernel of {} has no f2fs", board.name);
    for test in ["dd-write", "disk-4k"] {
        let line = format!(
            "skipped: {test} on {} {}/f2fs (installed): {reason}",
            board.name, disk.name
        );
        assert!(err.contains(&line), "no `{line}` in:\n{err}");
    }
    // Made once for both tests (the schedule groups cells by their mount), never for
    // f2fs or as-flashed.
    assert_eq!(
        err.matches(&format!("format {} as xfs", disk.name)).count(),
        1,
        "{err}"
    );
    assert!(!err.contains("as f2fs"), "{err}");
    assert!(!err.contains("format rootfs"), "{err}");
    assert_eq!(
        sh(&format!("blkid -p -o value -s TYPE {}", disk.device)),
        "xfs"
    );
    assert_eq!(
        sh(&format!("blkid -p -o value -s LABEL {}", disk.device)),
        benchpipe::storage::rules::label_for("xfs", &disk.name)
    );
    assert!(
        sh(&format!("findmnt -rn -S {} || true", disk.device)).is_empty(),
        "left mounted"
    );

    // Every stored cell: xfs and as-flashed measured, with what held the path as a
    // fact; f2fs never opened and never failed.
    let root_type = sh(&format!("findmnt -n -o FSTYPE -T '{in_image}'"));
    let mut measured = 0;
    for test in ["dd-write", "disk-4k"] {
        for (cell, dir) in cells(root, test) {
            let fs = cell["address"]["filesystem"].as_str().unwrap().to_string();
            assert!(!dir.join("failure.json").exists(), "{}", dir.display());
            if fs == "f2fs" {
                // A skip is kept as its reason (`skip.json`), never as a run or failure.
                let skip = std::fs::read_to_string(dir.join("skip.json")).unwrap();
                assert!(skip.contains("has no f2fs"), "{skip}");
                assert!(!dir.join("samples.jsonl").exists(), "{}", dir.display());
                continue;
            }
            let facts: Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("facts.json")).unwrap())
                    .unwrap();
            let want = if fs == "xfs" {
                "xfs"
            } else {
                root_type.as_str()
            };
            assert_eq!(facts["storage_filesystem"]["type"], want, "{fs}: {facts}");
            let runs = samples(&dir);
            assert_eq!(runs.len(), 1, "{test} on {fs}");
            for (_, v) in runs[0]["metrics"].as_object().unwrap() {
                let v = v.as_f64().unwrap();
                assert!(v.is_finite() && v > 0.0, "{test} on {fs}: {v}");
            }
            measured += 1;
        }
    }
    assert_eq!(measured, 4, "xfs and as-flashed, two tests each");
    assert!(
        Path::new(&in_image).is_dir(),
        "as-flashed leaves the image's directory"
    );

    // The plan knows the skip from the store's board facts: the f2fs cells are
    // skipped with the kernel's reason, not missing, and nothing is left to run.
    let plan = bp(root, &["plan", "scenarios/fs.toml"]);
    let text = String::from_utf8_lossy(&plan.stdout).to_string();
    assert!(plan.status.success(), "{}", stderr(&plan));
    assert_eq!(text.matches(&format!("[{reason}]")).count(), 2, "{text}");
    assert!(
        text.contains("4 complete, 0 partial, 0 missing, 0 failed"),
        "{text}"
    );
    let json = bp(root, &["plan", "--json", "scenarios/fs.toml"]);
    let doc: Value = serde_json::from_slice(&json.stdout).unwrap();
    let reasons: Vec<&str> = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["reason"].as_str())
        .filter(|r| *r == reason)
        .collect();
    assert_eq!(reasons.len(), 2, "{doc}");
    let again = bp(root, &["apply", "scenarios/fs.toml"]);
    let err = stderr(&again);
    assert!(again.status.success(), "{err}");
    assert!(!err.contains("format "), "nothing to make again: {err}");
}
