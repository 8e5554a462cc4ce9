//! Integration tests: a board whose apply was killed in its last cell's cleanup, with
//! nothing left to measure, is still walked by the next apply to take back what the
//! killed one left (`plan::schedule::tidy`).

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::lab::{Lab, bp, sh, text};

/// kill_anywhere's synced write to the mounted scratch disk, its teardown lingering so
/// that a kill lands in the cell's cleanup with the disk still mounted.
fn kwrite() -> String {
    let lingering = crate::kill_anywhere::KWRITE.replace(
        "rm -f {{ dir }}/ka.bin\"",
        "rm -f {{ dir }}/ka.bin; sleep 20\"",
    );
    assert_ne!(lingering, crate::kill_anywhere::KWRITE);
    lingering
}

/// Whether the lab board's scratch disk is mounted, as the board sees it (its mount
/// namespace) or the controller does.
fn mounted(board: &benchpipe::lab::LabBoard, device: &str) -> bool {
    let on_board = crate::xz::in_board(board, "findmnt -rn -o SOURCE");
    String::from_utf8_lossy(&on_board.stdout)
        .lines()
        .chain(sh("findmnt -rn -o SOURCE").lines())
        .any(|l| l.trim() == device)
}

#[test]
fn a_board_left_mounted_by_an_apply_killed_in_its_last_cleanup_is_tidied_by_the_next() {
    if !crate::need_root("losetup, mount and the lab") {
        return;
    }
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let disk = &board.disks[0];
    lab.project()
        .file("pipeline/kwrite.toml", &kwrite())
        .scenario(
            "s",
            &format!(
                "title = \"tidy\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}\"]\nstorage = [\"{}\"]\n\
             filesystem = [\"ext4\"]\ntest = [\"kwrite\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n",
                board.name, disk.name
            ),
        );
    // The apply, killed once its only cell's teardown runs: measured, still mounted.
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(["apply", "--yes", "--no-report", "scenarios/s.toml"])
        .current_dir(&lab.root)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(stderr).lines() {
        let Ok(line) = line else { break };
        let teardown = line.contains("kwrite on") && line.contains("teardown");
        lines.push(line);
        if teardown {
            break;
        }
    }
    // The teardown lingers 20 s: the kill lands inside it, the disk still mounted.
    std::thread::sleep(Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        mounted(&board, &disk.device),
        "the killed apply left the disk mounted: {lines:#?}"
    );

    // Nothing to measure, but the board is walked to take its leftovers back.
    let plan = bp(&lab.root, &["plan", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let shown = text(&plan);
    assert!(shown.contains(&format!("Tidy {}:", board.name)), "{shown}");
    let again = bp(&lab.root, &["apply", "--no-report", "scenarios/s.toml"]);
    let out = text(&again);
    assert!(again.status.success(), "{out}");
    assert!(out.contains("unmounted the leftover"), "{out}");
    assert!(
        !mounted(&board, &disk.device),
        "{out}\n{}",
        sh("findmnt -rn")
    );
    let status = bp(&lab.root, &["status", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let walk = doc["boards"]
        .as_array()
        .and_then(|b| b.iter().find(|w| w["board"] == board.name.as_str()))
        .cloned()
        .unwrap_or_default();
    assert_eq!(walk["ended"], true, "{doc}");
    // Walked once: a third apply has nothing to tidy.
    let third = bp(&lab.root, &["plan", "scenarios/s.toml"]);
    assert!(!text(&third).contains("Tidy "), "{}", text(&third));
}
