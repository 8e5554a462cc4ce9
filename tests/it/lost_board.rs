//! Integration tests: a board lost in the middle of each serving test (http, smb, nfs,
//! smb-fs). Every sshd process of the board is killed, the sessions' too, as a crash
//! or a pulled cable would end them. Then its cells fail as board-lost while the other
//! board finishes; no client of benchpipe's is left on the controller; and nothing is
//! left on the board: its guards stop the servers and unmount the tmpfs once the
//! session is gone, so no process outlives it. Once the board is back, the next apply
//! measures its cells and leaves nothing either.

use crate::scratch::Project;
use std::path::Path;
use std::time::{Duration, Instant};

use benchpipe::lab::{DROP_COPIED_LOOP_MOUNTS, LabBoard};

use crate::lab::{Lab, bp, text};

use crate::leftovers::{board_processes_left, board_processes_where, in_board_netns};
use crate::serving::{assert_nothing_left, clients_left};
use crate::xz::in_board;

const RUNS: usize = 6;

/// A lab workspace with the shipped serving recipes and a scenario of `test` on both
/// boards, `RUNS` measured runs each.
fn scenario(lab: &Lab, test: &str, params: &str) {
    let storage = if test == "smb-fs" {
        format!(
            "storage = [\"{}\"]\nfilesystem = [\"ext4\"]\n",
            lab.board(0).disks[0].name
        )
    } else {
        String::new()
    };
    Project::at(&lab.root).recipe(test).scenario(
        "s",
        &format!(
            "title = \"lost\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}\", \"{}\"]\n{storage}\
             test = [\"{test}\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = {RUNS}, max = {RUNS} }}\n\
             [params.{test}]\n{params}\n",
            lab.board(0).name,
            lab.board(1).name
        ),
    );
}

/// The store directory of the (one) cell of `board`.
fn cell_dir(root: &Path, board: &LabBoard) -> Option<std::path::PathBuf> {
    let suffix = format!("-{}", board.name);
    std::fs::read_dir(root.join("results"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(&suffix))
}

fn measured(root: &Path, board: &LabBoard) -> usize {
    cell_dir(root, board)
        .and_then(|d| std::fs::read_to_string(d.join("samples.jsonl")).ok())
        .map_or(0, |t| {
            t.lines().filter(|l| l.contains("\"measured\"")).count()
        })
}

/// benchpipe's tmpfs still mounted in the board's mount namespace, as any process of
/// the board sees it; none when no process of the board is left (the namespace is
/// gone with its mounts, as a rebooted board's).
fn tmpfs_left(board: &LabBoard) -> String {
    let mut left = String::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = e.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || !in_board_netns(board, &pid) {
            continue;
        }
        let info = std::fs::read_to_string(e.path().join("mountinfo")).unwrap_or_default();
        for l in info.lines().filter(|l| l.contains(" tmpfs benchpipe-")) {
            left.push_str(&format!("{pid}: {l}\n"));
        }
    }
    left
}

/// Runs `test` on two boards and loses board 0 once it has measured a run: every
/// sshd process of its network namespace is killed.
fn lose_board_during(test: &str, params: &str) {
    let Some(lab) = Lab::up(2) else { return };
    let (lost, other) = (lab.board(0).clone(), lab.board(1).clone());
    if test == "smb-fs" {
        for b in [&lost, &other] {
            in_board(b, DROP_COPIED_LOOP_MOUNTS);
        }
    }
    scenario(&lab, test, params);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(&lab.root)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output().unwrap());
    });
    let t0 = Instant::now();
    while measured(&lab.root, &lost) == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "{test}: board 0 never measured"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = benchpipe::lab::kill_sshd(&lost).unwrap();
    assert!(
        killed >= 2,
        "{test}: the listener and the session's: {killed}"
    );
    assert_eq!(
        sshd_left(&lost, Duration::from_secs(5)),
        "",
        "{test}: every sshd of the board is gone"
    );
    // Bounded: a board-lost walk must not hang on the dead session.
    let out = done
        .recv_timeout(Duration::from_secs(300))
        .unwrap_or_else(|_| panic!("{test}: apply hung after the board was lost"));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{test}: {all}");

    // The lost board's cell failed as board-lost, with its runs before the loss kept;
    // the other board measured all of its runs.
    let failure = cell_dir(&lab.root, &lost)
        .and_then(|d| std::fs::read_to_string(d.join("failure.json")).ok())
        .unwrap_or_default();
    assert!(
        failure.contains("\"board_lost\""),
        "{test}: {failure}\n{all}"
    );
    assert!(
        (1..RUNS).contains(&measured(&lab.root, &lost)),
        "{test}: {all}"
    );
    assert_eq!(measured(&lab.root, &other), RUNS, "{test}: {all}");

    // Nothing of benchpipe's is left on the controller...
    assert_eq!(clients_left(&lost), "", "{test}: clients on the controller");
    // ...nor on the board: every process of its namespace ends with its session (the
    // guards once they undid their servers and tmpfs), and the tmpfs mount points are
    // gone, which only an unmount allows.
    assert_eq!(
        board_processes_left(&lost, &[""], Duration::from_secs(90)),
        "",
        "{test}: processes outlived the board's session"
    );
    assert_eq!(tmpfs_left(&lost), "", "{test}");
    crate::serving::assert_workdir_clean(&lost);
    assert_nothing_left(&other);

    // Back again: the next apply measures the lost board's cell, and leaves nothing.
    benchpipe::lab::start_sshd(&lost).unwrap();
    if test == "smb-fs" {
        in_board(&lost, DROP_COPIED_LOOP_MOUNTS);
    }
    let rerun = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(rerun.status.success(), "{test}: {}", text(&rerun));
    assert_eq!(measured(&lab.root, &lost), RUNS, "{test}: {}", text(&rerun));
    assert_nothing_left(&lost);
}

#[test]
fn a_board_lost_during_http_fails_its_cell_and_leaves_nothing_running_or_mounted() {
    lose_board_during("http", "size_mib = 16");
}

#[test]
fn a_board_lost_during_smb_fails_its_cell_and_leaves_nothing_running_or_mounted() {
    lose_board_during("smb", "size_mib = 8");
}

#[test]
fn a_board_lost_during_nfs_fails_its_cell_and_leaves_nothing_running_or_mounted() {
    lose_board_during("nfs", "size_mib = 16");
}

#[test]
fn a_board_lost_during_smb_fs_fails_its_cell_and_leaves_nothing_running_or_mounted() {
    lose_board_during("smb-fs", "size_mib = 8");
}

/// The board's sshd processes (the listener, `sshd: root@notty` sessions) still running
/// after up to `wait`: those whose program is sshd, not every command line that names it
/// (a board-side script of benchpipe's mentions sshd in its text, and may still be
/// ending when the sshds are gone).
fn sshd_left(board: &LabBoard, wait: Duration) -> String {
    let sshd_program = |line: &str| {
        let program = line.split(' ').nth(1).unwrap_or("");
        let name = program.rsplit('/').next().unwrap_or(program);
        name == "sshd" || name == "sshd:" || name.starts_with("sshd-")
    };
    board_processes_where(board, &["sshd"], sshd_program, wait)
}
