//! Integration tests: the xz recipe (pipeline/xz.toml), the seed's method: its corpus
//! (the same bytes from every awk, compressing like text) and, on real lab boards, the
//! tmpfs it makes and removes, after a success, a failure and an interrupt.

use crate::scratch::Scratch;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use benchpipe::bench::{Vars, render};
use benchpipe::lab::LabBoard;
use sha2::{Digest, Sha256};

use crate::lab::{Lab, bp, text};
use crate::repo;

/// The recipe's setup step that writes the corpus, rendered for `workdir` (its tmpfs at
/// `workdir/xz-c`) and a size.
fn corpus_command(workdir: &Path, mib: i64) -> String {
    let recipes = benchpipe::config::load_recipes(repo()).expect("the shipped recipes load");
    let xz = &recipes[&"xz".into()];
    let mut vars = Vars::new();
    vars.params(&xz.params)
        .set("workdir", workdir.to_string_lossy().to_string())
        .set("tmpfs", workdir.join("xz-c").to_string_lossy().to_string())
        .set("corpus_mib", mib)
        .set("cell", "c");
    render(&xz.setup[0].command, &vars).unwrap()
}

/// The corpus written by the recipe's own command with `awk` being `awk_command`.
fn corpus_with(awk_command: &str, mib: i64) -> Vec<u8> {
    let dir = Scratch::new(&format!("corpus-{mib}"));
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::create_dir_all(dir.join("work/xz-c")).unwrap();
    let shim = dir.join("bin/awk");
    std::fs::write(&shim, format!("#!/bin/sh\nexec {awk_command} \"$@\"\n")).unwrap();
    Command::new("chmod").arg("+x").arg(&shim).status().unwrap();
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("sh")
        .arg("-c")
        .arg(corpus_command(&dir.join("work"), mib))
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{awk_command}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(dir.join("work/xz-c/corpus")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Two boards get the same corpus whatever awk they have (Debian's and Raspberry Pi
/// OS's mawk, gawk, busybox's): the sha256 is pinned, so a change to the generator is
/// a visible change of every xz cell's input.
#[test]
fn the_corpus_is_the_same_bytes_from_mawk_gawk_and_busybox_awk() {
    const ONE_MIB: &str = "bccfa49d7863a978548bd2763df03bcf7168b8304970c542b64967e6950234d4";
    for awk in ["mawk", "gawk", "busybox awk"] {
        let program = awk.split(' ').next().unwrap();
        if Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {program}"))
            .output()
            .map_or(true, |o| !o.status.success())
        {
            crate::cannot_run(
                "the_corpus_is_the_same_bytes_from_mawk_gawk_and_busybox_awk",
                &format!("{program} is not installed (apt-get install {program})"),
            );
            return;
        }
        let corpus = corpus_with(awk, 1);
        assert_eq!(corpus.len(), 1 << 20, "{awk}");
        assert_eq!(sha256_hex(&corpus), ONE_MIB, "{awk}");
    }
}

/// The corpus is text-like: printable words and lines, and xz -6e compresses it by a
/// factor real text has (3 to 10), not like random bytes (1) or a repeated block (100+).
#[test]
fn the_corpus_compresses_like_text() {
    let corpus = corpus_with("mawk", 8);
    assert_eq!(corpus.len(), 8 << 20);
    assert!(
        corpus
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b" .\n".contains(&b)),
        "only words, spaces, full stops and line breaks"
    );
    let mut xz = Command::new("xz")
        .args(["-6e", "-T1", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = xz.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(&corpus).unwrap();
    });
    let out = xz.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(out.status.success());
    let ratio = f64::from(8 << 20) / out.stdout.len() as f64;
    assert!((3.0..10.0).contains(&ratio), "xz -6e ratio {ratio:.2}");
}

/// What the board's mount namespace says is mounted at `point` (`ip netns exec` gave
/// the lab's sshd a namespace of its own, so the controller's view would not do).
pub fn board_mounts(board: &LabBoard, point: &str) -> String {
    let pid = std::fs::read_to_string(&board.sshd_pid_file).unwrap();
    let out = Command::new("nsenter")
        .args([
            "-t",
            pid.trim(),
            "-m",
            "findmnt",
            "-rn",
            "-o",
            "FSTYPE,SOURCE",
            "-M",
            point,
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Runs `cmd` in the board's mount namespace.
pub fn in_board(board: &LabBoard, cmd: &str) -> std::process::Output {
    let pid = std::fs::read_to_string(&board.sshd_pid_file).unwrap();
    Command::new("nsenter")
        .args(["-t", pid.trim(), "-m", "sh", "-c", cmd])
        .output()
        .unwrap()
}

/// A lab workspace with the shipped recipe and a scenario for board 0.
fn xz_scenario(lab: &Lab, params: &str) -> PathBuf {
    let root = lab.root.clone();
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::copy(
        repo().join("pipeline/xz.toml"),
        root.join("pipeline/xz.toml"),
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"xz\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"xz\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.xz]\n{params}\n",
            lab.board(0).name
        ),
    )
    .unwrap();
    root
}

fn xz_samples(root: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        if e.file_name().to_string_lossy().contains("-xz-") {
            let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
            out.extend(text.lines().map(|l| serde_json::from_str(l).unwrap()));
        }
    }
    out
}

/// Where the cell of the scenario in `root` mounts its tmpfs: `<workdir>/xz-<cell key>`.
fn tmpfs_point(root: &Path, board: &LabBoard) -> String {
    let plan = bp(root, &["plan", "--json", "scenarios/s.toml"]);
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("plan --json");
    format!(
        "{}/xz-{}",
        board.workdir,
        plan["cells"][0]["key"].as_str().unwrap()
    )
}

/// Every tmpfs benchpipe's recipes made (source `benchpipe-*`) still mounted in the board's workdir.
pub fn benchpipe_tmpfs(board: &LabBoard) -> String {
    let out = in_board(board, "findmnt -rn -t tmpfs -o SOURCE,TARGET");
    // Lab boards share the controller's mounts: only this board's workdir tells its
    // tmpfs from another test's lab running at the same time.
    let workdir = format!("{}/", board.workdir.trim_end_matches('/'));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.starts_with("benchpipe-")
                && l.split_once(' ')
                    .is_some_and(|(_, target)| target.starts_with(&workdir))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn xz_on_a_lab_board_compresses_on_its_tmpfs_and_removes_it() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let root = xz_scenario(&lab, "corpus_mib = 3\nthreads = \"0\"");
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let samples = xz_samples(&root);
    assert_eq!(samples.len(), 2, "{}", text(&out));
    for s in &samples {
        for m in ["real", "user", "sys"] {
            let v = s["metrics"][m].as_f64().unwrap();
            assert!(v.is_finite() && v >= 0.0, "{m} = {v}");
        }
        // 3 MiB at -6e take a measurable time on any machine.
        assert!(s["metrics"]["real"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["metrics"]["user"].as_f64().unwrap() > 0.0, "{s}");
    }
    let point = tmpfs_point(&root, &board);
    assert_eq!(board_mounts(&board, &point), "", "the tmpfs is gone");
    assert_eq!(benchpipe_tmpfs(&board), "");
    assert!(
        !Path::new(&point).exists(),
        "its mount point is removed too"
    );
}

/// The run fails (taskset refuses a CPU the board does not have): the cell fails, and
/// the teardown still removes the tmpfs.
#[test]
fn a_failing_xz_run_still_removes_its_tmpfs() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let root = xz_scenario(&lab, "corpus_mib = 1\nthreads = \"4095\"");
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("affinity"),
        "taskset said why: {}",
        text(&out)
    );
    assert!(xz_samples(&root).is_empty());
    assert_eq!(benchpipe_tmpfs(&board), "", "the tmpfs is gone");
}

/// The user's own corpus: streamed from the controller, checked by sha256 on the board;
/// a wrong digest fails the cell before anything is measured.
#[test]
fn a_users_corpus_is_copied_to_the_board_and_checked_by_sha256() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let corpus = crate::xorshift_bytes(2 << 20, 7)
        .iter()
        .map(|b| b"abcdefgh \n"[(*b % 10) as usize])
        .collect::<Vec<u8>>();
    std::fs::write(lab.root.join("mine.txt"), &corpus).unwrap();
    let good = sha256_hex(&corpus);
    let root = xz_scenario(
        &lab,
        &format!(
            "corpus = \"mine.txt\"\ncorpus_sha256 = \"{}\"",
            good.to_uppercase()
        ),
    );
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(xz_samples(&root).len(), 2);
    assert_eq!(benchpipe_tmpfs(&board), "");

    let wrong = sha256_hex(b"something else");
    let root = xz_scenario(
        &lab,
        &format!("corpus = \"mine.txt\"\ncorpus_sha256 = \"{wrong}\""),
    );
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains(&format!(
            "the corpus on the board has sha256 {good}, expected {wrong}"
        )),
        "{}",
        text(&out)
    );
    assert_eq!(benchpipe_tmpfs(&board), "");
}

/// Ctrl-C while the corpus is being written: the teardown still unmounts the tmpfs.
#[test]
fn an_interrupted_xz_setup_still_removes_its_tmpfs() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    // Big enough that its generation is still running when the signal comes.
    let root = xz_scenario(&lab, "corpus_mib = 1024");
    let point = tmpfs_point(&root, &board);
    let child = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(&root)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while board_mounts(&board, &point) != "tmpfs benchpipe-xz" {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the tmpfs was never mounted"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill with a pid we spawned and have not waited for.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(board_mounts(&board, &point), "", "{}", text(&out));
    assert!(xz_samples(&root).is_empty());
}

/// A tmpfs a killed apply left (benchpipe's source name and marker) is unmounted and
/// made anew; a mount of anyone else's at that place is refused and left alone.
#[test]
fn a_leftover_tmpfs_is_replaced_and_a_foreign_mount_left_alone() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let root = xz_scenario(&lab, "corpus_mib = 1");
    let point = tmpfs_point(&root, &board);
    let mounted = in_board(
        &board,
        &format!(
            "mkdir -p {point} && mount -t tmpfs benchpipe-xz {point} && touch {point}/.benchpipe-tmpfs"
        ),
    );
    assert!(mounted.status.success(), "{mounted:?}");
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(board_mounts(&board, &point), "", "no stacked leftovers");

    let mounted = in_board(
        &board,
        &format!(
            "mkdir -p {point} && mount -t tmpfs users-own {point} && echo keep > {point}/precious"
        ),
    );
    assert!(mounted.status.success(), "{mounted:?}");
    let root = xz_scenario(&lab, "corpus_mib = 1");
    let out = bp(&root, &["apply", "--redo", "test=xz", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("a mount benchpipe did not make"),
        "{}",
        text(&out)
    );
    assert_eq!(
        board_mounts(&board, &point),
        "tmpfs users-own",
        "left mounted"
    );
    let kept = in_board(&board, &format!("cat {point}/precious; umount {point}"));
    assert_eq!(String::from_utf8_lossy(&kept.stdout), "keep\n");
}

/// The seed's ODROID comparison as a user would write it: a copy of the recipe pinned
/// with `threads`, taking turns with the unpinned one (interleaved). Each cell has a
/// tmpfs of its own (`xz-<cell key>`), so neither setup unmounts the other's corpus.
#[test]
fn two_xz_cells_taking_turns_on_one_board_keep_their_own_tmpfs() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let root = xz_scenario(&lab, "corpus_mib = 1");
    std::fs::copy(
        repo().join("pipeline/xz.toml"),
        root.join("pipeline/xz-pinned.toml"),
    )
    .unwrap();
    let s = std::fs::read_to_string(root.join("scenarios/s.toml")).unwrap();
    let s = s
        .replace("test = [\"xz\"]", "test = [\"xz\", \"xz-pinned\"]")
        .replace("[method]\n", "[method]\norder = \"interleaved\"\n")
        + "[params.xz-pinned]\ncorpus_mib = 1\nthreads = \"0\"\n";
    std::fs::write(root.join("scenarios/s.toml"), s).unwrap();
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let mut cells = 0;
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.contains("-xz") {
            let runs = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap();
            assert_eq!(runs.lines().count(), 2, "{name}");
            cells += 1;
        }
    }
    assert_eq!(cells, 2);
    assert_eq!(benchpipe_tmpfs(&board), "");
}
