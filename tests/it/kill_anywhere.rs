//! Integration tests: kill -9 anywhere. One lab board's whole run (a flash of a lab
//! image, a scratch disk formatted ext4 and mounted, cool-downs, a service on a tmpfs,
//! measured runs) is cut with SIGKILL at more than 20 points, each resumed by the next
//! apply; after each kill every store file is whole and no completed sample is lost, and
//! the last apply leaves the store an uninterrupted run's, with nothing left running or
//! mounted on the board or the controller. They need root (the lab).

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use benchpipe::lab::LabBoard;
use benchpipe::lab::image::{Compression, ImageSpec};
use serde_json::Value;

use crate::flash::{file_sha256, flash_project};
use crate::lab::{Lab, bp, sh, text};
use crate::leftovers::{board_processes_where, processes_where};
use crate::scratch::Scratch;
use crate::xz::in_board;

/// Measured runs per cell: each a point a kill may land right after.
const RUNS: usize = 3;
/// The longest any one apply may take before the test calls it hung (a loaded machine,
/// 12 test threads beside it).
const HANG: Duration = Duration::from_secs(400);

/// A write to the mounted scratch disk, synced: its cells need the `mount` step.
pub(crate) const KWRITE: &str = r#"description = "kill-anywhere: a synced write to the mounted scratch disk"
uses_storage = true
[run]
on = "board"
command = '''dd if=/dev/zero of={{ dir }}/ka.bin bs=64k count=32 conv=fsync status=none && sleep 1 && printf '{"bytes": %s}\n' "$(stat -c %s {{ dir }}/ka.bin)"'''
parse = "json"
[metrics]
bytes = { from = "bytes", unit = "B", better = "higher" }
[[teardown]]
on = "board"
command = "rm -f {{ dir }}/ka.bin"
"#;

/// A service beating into the cell's tmpfs for the whole cell, read by each run.
const KSERVE: &str = r#"description = "kill-anywhere: a service beating into the cell's tmpfs"
uses_storage = false
[tmpfs]
size = 4
[[services]]
name = "kbeat"
on = "board"
command = "while :; do date +%s > {{ tmpfs }}/beat; sleep 0.2; done"
ready = "test -s {{ tmpfs }}/beat"
[run]
on = "board"
command = '''sleep 1; printf '{"beat": %s}\n' "$(cat {{ tmpfs }}/beat)"'''
parse = "json"
[metrics]
beat = { from = "beat", unit = "s", better = "higher" }
"#;

/// The lab's project: the flash project's board file, image and `osver` recipe, the two
/// recipes above, and `scenarios/k.toml` measuring all three on the flashed image.
fn project(lab: &Lab, img: &Path) {
    let board = flash_project(lab, &[("v1", img, "1")]);
    std::fs::write(lab.root.join("pipeline/kwrite.toml"), KWRITE).unwrap();
    std::fs::write(lab.root.join("pipeline/kserve.toml"), KSERVE).unwrap();
    std::fs::write(
        lab.root.join("scenarios/k.toml"),
        format!(
            "title = \"kill anywhere\"\n\
             [images.v1]\npath = \"{}\"\nsha256 = \"{}\"\n\
             [images.v1.firstboot]\nkind = \"none\"\n\
             [images.v1.expect]\nos_release = {{ ID = \"bpflash\", VERSION_ID = \"1\" }}\n\
             [filesystems.ext4]\nkind = \"ext4\"\n\
             [matrix]\nimage = [\"v1\"]\nboard = [\"{board}\"]\nstorage = [\"{disk}\"]\n\
             filesystem = [\"ext4\"]\ntest = [\"osver\", \"kwrite\", \"kserve\"]\n\
             [method]\ncooldown = \"2s\"\nwarmup = {{ runs = 0 }}\n\
             runs = {{ min = {RUNS}, max = {RUNS} }}\n",
            img.display(),
            file_sha256(img),
            disk = lab.board(0).disks[0].name,
        ),
    )
    .unwrap();
    let check = bp(&lab.root, &["check", "scenarios/k.toml"]);
    assert!(check.status.success(), "{}", text(&check));
}

/// Where a kill lands: the first progress line holding every one of `line`'s words,
/// then `after` (a pause, or until a run's sample reaches the store).
struct Target {
    line: &'static [&'static str],
    after: After,
}

#[derive(Clone, Copy)]
enum After {
    Millis(u64),
    /// Killed the moment a samples file grows: inside the store's append.
    SampleWrite,
}

const fn at(line: &'static [&'static str], ms: u64) -> Target {
    Target {
        line,
        after: After::Millis(ms),
    }
}

const fn on_write(line: &'static [&'static str]) -> Target {
    Target {
        line,
        after: After::SampleWrite,
    }
}

/// The kill points, each hit once: every apply resumes the one killed before it and is
/// killed at the first target left that it reaches (the first listed, of those a line
/// matches); the apply that reaches none finishes the run. A cell's store writes leave
/// it a run to do, so that its later targets stay ahead.
const TARGETS: &[Target] = &[
    // The flash: as dd starts, while it writes, while it reads back, right after the
    // read-back, in the power cycle, in the wait for the boot, at the verification.
    at(&["] flash v1 to"], 0),
    at(&["] flash v1 to"], 250),
    at(&["] flash v1: verifying"], 0),
    at(&["] flashed "], 0),
    at(&["] power cycle"], 100),
    at(&["] wait for boot"], 300),
    at(&["] verify image v1"], 0),
    // osver: the cell measuring the flashed image.
    at(&["osver on", "cool-down"], 100),
    on_write(&["osver on", ": run "]),
    // The service on its tmpfs.
    at(&["kserve on", "mount a tmpfs"], 0),
    at(&["kserve on", "start service"], 0),
    at(&["kserve on", "start service"], 150),
    at(&["kserve on", "cool-down"], 500),
    at(&["kserve on", ": run "], 200),
    on_write(&["kserve on", ": run "]),
    at(&["kserve on", ": run "], 700),
    on_write(&["kserve on", ": run "]),
    // Its last run done, the cell stops its service and unmounts its tmpfs.
    at(&["kserve on", "teardown"], 0),
    // The scratch disk's mkfs and mount, and the cell on it.
    at(&["kwrite on", "format disk1"], 0),
    at(&["kwrite on", "format disk1"], 150),
    at(&["kwrite on", "format disk1"], 400),
    at(&["kwrite on", "cool-down"], 0),
    at(&["kwrite on", "cool-down"], 1200),
    at(&["kwrite on", ": run "], 300),
    on_write(&["kwrite on", ": run "]),
    at(&["kwrite on", ": run "], 600),
    on_write(&["kwrite on", ": run "]),
    // Its last run done: the disk is still mounted.
    at(&["kwrite on", "teardown"], 0),
];

/// What one killed apply did: the target, the phase the kill hit (from the last line
/// the apply printed), and its lines.
struct Kill {
    target: String,
    phase: String,
    lines: Vec<String>,
}

/// The phase a progress line says the walk is in.
fn phase_of(line: &str) -> String {
    let has = |w: &str| line.contains(w);
    let phase = if has("] flash v1 to") || has("] flash v1: ") {
        "flash"
    } else if has("] flashed ") || has("] power cycle") {
        "power cycle"
    } else if has("] wait for") {
        "boot"
    } else if has("verify image") {
        "verify image"
    } else if has("format ") {
        "mount"
    } else if has("tmpfs") {
        "tmpfs"
    } else if has("start service") {
        "service"
    } else if has("cool-down") {
        "cool-down"
    } else if has(": run ") {
        "measured run"
    } else if has("measured run took") {
        "between runs"
    } else if has("teardown") || has("unmount") {
        "cleanup"
    } else {
        return format!("other ({line})");
    };
    phase.to_string()
}

/// apply, started with its progress lines on a pipe read by a thread.
fn start_apply(root: &Path, store: &str) -> (std::process::Child, Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&[
            "apply",
            "--no-report",
            "--store",
            store,
            "scenarios/k.toml",
        ]))
        .current_dir(root)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Every line still to come from a dead or ending apply.
fn drain(rx: &Receiver<String>, lines: &mut Vec<String>) {
    loop {
        match rx.recv_timeout(HANG) {
            Ok(l) => lines.push(l),
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => panic!("apply's stderr stayed open: {lines:#?}"),
        }
    }
}

/// The total length of every samples file of the store.
fn samples_bytes(store: &Path) -> u64 {
    std::fs::read_dir(store)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::metadata(e.path().join("samples.jsonl")).ok())
        .map(|m| m.len())
        .sum()
}

/// Runs one apply of the store; kills it at the first of `targets` it gets to, which
/// is taken off the list. `Err` holds the lines of an apply that ended by itself
/// before reaching any, and its exit code.
fn apply_until(
    root: &Path,
    targets: &mut Vec<&Target>,
) -> Result<Kill, (Vec<String>, Option<i32>)> {
    let store = root.join("results");
    let (mut child, rx) = start_apply(root, "results");
    let t0 = Instant::now();
    let mut lines = Vec::new();
    let reached = loop {
        match rx.recv_timeout(HANG.saturating_sub(t0.elapsed())) {
            Ok(l) => {
                let hit = targets
                    .iter()
                    .position(|t| t.line.iter().all(|w| l.contains(w)));
                lines.push(l);
                if let Some(i) = hit {
                    break Some(targets.remove(i));
                }
            }
            Err(RecvTimeoutError::Disconnected) => break None,
            Err(RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("apply hung: {lines:#?}");
            }
        }
    };
    let Some(target) = reached else {
        let status = child.wait().unwrap();
        return Err((lines, status.code()));
    };
    let mut phase = None;
    match target.after {
        After::Millis(ms) => std::thread::sleep(Duration::from_millis(ms)),
        After::SampleWrite => {
            let before = samples_bytes(&store);
            while samples_bytes(&store) == before {
                if t0.elapsed() > HANG {
                    let _ = child.kill();
                    panic!("no sample was written: {lines:#?}");
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            phase = Some("store write".to_string());
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    drain(&rx, &mut lines);
    let last = lines.last().cloned().unwrap_or_default();
    Ok(Kill {
        target: format!(
            "{:?} {}",
            target.line,
            match target.after {
                After::Millis(ms) => format!("+{ms} ms"),
                After::SampleWrite => "sample write".into(),
            }
        ),
        phase: phase.unwrap_or_else(|| phase_of(&last)),
        lines,
    })
}

/// Every file of the store parses whole: each JSON file as JSON, each samples file as
/// whole lines of JSON ending in a newline. Returns each cell's samples text.
fn whole_store(store: &Path) -> BTreeMap<String, String> {
    let mut samples = BTreeMap::new();
    let mut dirs = vec![store.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                dirs.push(path);
                continue;
            }
            if name.ends_with(".json") {
                let t = std::fs::read_to_string(&path).unwrap();
                serde_json::from_str::<Value>(&t)
                    .unwrap_or_else(|e| panic!("{}: {e}: {t:?}", path.display()));
            } else if name == "samples.jsonl" {
                let t = std::fs::read_to_string(&path).unwrap();
                assert!(
                    t.is_empty() || t.ends_with('\n'),
                    "{} ends in a torn line: {t:?}",
                    path.display()
                );
                for l in t.lines() {
                    serde_json::from_str::<Value>(l)
                        .unwrap_or_else(|e| panic!("{}: {e}: {l:?}", path.display()));
                }
                samples.insert(path.display().to_string(), t);
            }
        }
    }
    samples
}

/// Files a replace left half-written beside their place (`.NAME.PID-N-HEX.tmp`).
fn temporaries(store: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![store.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else if e.file_name().to_string_lossy().ends_with(".tmp") {
                out.push(e.path().display().to_string());
            }
        }
    }
    out
}

/// Measured samples per cell (by its directory's name), of every cell in the store.
fn measured_per_cell(store: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(store).unwrap().flatten() {
        if !e.path().join("cell.json").exists() {
            continue;
        }
        let t = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        let n = t.lines().filter(|l| l.contains("\"measured\"")).count();
        out.insert(e.file_name().to_string_lossy().to_string(), n);
    }
    out
}

fn measured_lines(lines: &[String]) -> usize {
    lines
        .iter()
        .filter(|l| l.contains(": measured run took"))
        .count()
}

/// The store's lock is free: a child the killed apply forked and had not yet exec'd
/// holds it an instant longer (see store_lock.rs).
fn lock_free(root: &Path) {
    let t0 = Instant::now();
    loop {
        let out = bp(root, &["status", "--json"]);
        assert!(
            out.status.success(),
            "status reads the store: {}",
            text(&out)
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        if doc["lock"] == Value::Null {
            return;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "{doc}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn board_identity(root: &Path, board: &LabBoard) -> Option<String> {
    let p = root.join(format!("results/boards/{}.json", board.name));
    let t = std::fs::read_to_string(p).ok()?;
    let v: Value = serde_json::from_str(&t).unwrap();
    v["identity"].as_str().map(str::to_string)
}

/// What is left of benchpipe's on the board and the controller once the last apply
/// ended: processes, mounts (the scratch disk, a tmpfs, anything in the workdir), and
/// loop devices beyond the lab's own.
fn leftovers(lab: &Lab, board: &LabBoard) -> String {
    let mut left = String::new();
    let sshd = |line: &str| {
        let program = line.split(' ').nth(1).unwrap_or("");
        program.starts_with("sshd") || program.ends_with("/sshd")
    };
    let wait = Duration::from_secs(30);
    let on_board = board_processes_where(board, &[""], |l| !sshd(l), wait);
    if !on_board.is_empty() {
        left.push_str(&format!("processes on the board:\n{on_board}"));
    }
    let names = [board.name.as_str(), board.workdir.as_str()];
    let on_controller = processes_where(
        &names,
        |pid, cmd| !sshd(&format!("{pid} {cmd}")) && !crate::leftovers::in_board_netns(board, pid),
        wait,
    );
    if !on_controller.is_empty() {
        left.push_str(&format!("processes on the controller:\n{on_controller}"));
    }
    let devices: Vec<&str> = board
        .disks
        .iter()
        .chain(board.boot.iter())
        .map(|d| d.device.as_str())
        .collect();
    let mounted = |table: &str, whose: &str, left: &mut String| {
        for l in table.lines() {
            let mut f = l.split(' ');
            let (source, target) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
            if devices.contains(&source) || target.starts_with(&board.workdir) {
                left.push_str(&format!("mounted on the {whose}: {l}\n"));
            }
        }
    };
    let out = in_board(board, "findmnt -rn -o SOURCE,TARGET");
    mounted(&String::from_utf8_lossy(&out.stdout), "board", &mut left);
    mounted(&sh("findmnt -rn -o SOURCE,TARGET"), "controller", &mut left);
    let ours: BTreeSet<String> = board
        .disks
        .iter()
        .chain(board.boot.iter())
        .map(|d| d.file.display().to_string())
        .collect();
    let root = lab.root.display().to_string();
    for l in sh("losetup -a -n -O NAME,BACK-FILE").lines() {
        let back = l.split_whitespace().nth(1).unwrap_or("");
        if back.starts_with(&root) && !ours.contains(back) {
            left.push_str(&format!("loop device: {l}\n"));
        }
    }
    left
}

#[test]
fn kill_anywhere_a_lab_run_cut_by_sigkill_at_every_phase_resumes_to_the_uninterrupted_store() {
    if !crate::need_root("losetup, mount and the lab") {
        return;
    }
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let dir = Scratch::new("kill-anywhere");
    // 24 MiB: long enough on the wire that a kill lands inside dd and its read-back.
    let spec = ImageSpec {
        bytes: 24 << 20,
        ..ImageSpec::new("bpflash", "1")
    };
    let img = crate::firstboot::lab_ready(&lab, &dir, "v1", &spec, Compression::None);
    project(&lab, &img);
    let t_all = Instant::now();

    // The uninterrupted run, in a store of its own.
    let t0 = Instant::now();
    let reference = bp(
        &lab.root,
        &[
            "apply",
            "--no-report",
            "--store",
            "reference",
            "scenarios/k.toml",
        ],
    );
    assert!(reference.status.success(), "{}", text(&reference));
    let uninterrupted = t0.elapsed();

    let want = measured_per_cell(&lab.root.join("reference"));
    assert_eq!(want.len(), 3, "{want:?}");
    assert!(want.values().all(|&n| n == RUNS), "{want:?}");

    // The same run, killed at each target in turn, each apply resuming the last.
    let store = lab.root.join("results");
    let mut kills: Vec<Kill> = Vec::new();
    let mut before: BTreeMap<String, String> = BTreeMap::new();
    let mut redo_flash = false;
    let mut flashes_redone = 0;
    let mut targets: Vec<&Target> = TARGETS.iter().collect();
    let last = loop {
        let kill = match apply_until(&lab.root, &mut targets) {
            Ok(k) => k,
            Err(end) => break end,
        };
        let all = kill.lines.join("\n");
        // A flash that was not verified before the kill is redone, and proven again.
        if redo_flash {
            assert!(all.contains("flash v1 to"), "the flash was trusted: {all}");
            if all.contains("verified by read-back") {
                flashes_redone += 1;
            }
        }
        lock_free(&lab.root);
        let after = whole_store(&store);
        // No completed sample lost: every samples file grows, never changes what it
        // held; each run the apply said it recorded is there, and at most one more.
        for (path, old) in &before {
            let new = after.get(path).map_or("", String::as_str);
            assert!(
                new.starts_with(old.as_str()),
                "{path}: {old:?} became {new:?}"
            );
        }
        let count = |m: &BTreeMap<String, String>| -> usize {
            m.values()
                .map(|t| t.lines().filter(|l| l.contains("\"measured\"")).count())
                .sum()
        };
        let (was, now, said) = (count(&before), count(&after), measured_lines(&kill.lines));
        assert!(
            now >= was + said && now <= was + said + 1,
            "{was} measured before, {said} recorded by this apply, {now} stored: {all}"
        );
        let verified = format!("sha256:{}", file_sha256(&img));
        redo_flash = board_identity(&lab.root, &board).as_deref() != Some(verified.as_str());
        if kill.phase == "flash" {
            assert!(redo_flash, "a flash killed midway counts as done: {all}");
        }
        eprintln!(
            "kill {}: {} -> {} ({} measured stored; last line: {})",
            kills.len() + 1,
            kill.target,
            kill.phase,
            now,
            kill.lines.last().map_or("", String::as_str)
        );
        before = after;
        kills.push(kill);
    };

    // The last apply, which reached none of the targets left, finished the run.
    let (lines, code) = last;
    let last = lines.join("\n");
    assert_eq!(code, Some(0), "{last}");
    if redo_flash {
        assert!(
            last.contains("verified by read-back"),
            "the flash was trusted: {last}"
        );
        flashes_redone += 1;
    }
    whole_store(&store);
    assert_eq!(measured_per_cell(&store), want, "{last}");
    assert_eq!(
        board_identity(&lab.root, &board),
        Some(format!("sha256:{}", file_sha256(&img)))
    );
    assert!(
        flashes_redone >= 1,
        "no killed flash was redone and verified"
    );
    let phases: BTreeSet<&str> = kills.iter().map(|k| k.phase.as_str()).collect();
    for want in [
        "flash",
        "mount",
        "cool-down",
        "service",
        "measured run",
        "store write",
    ] {
        assert!(phases.contains(want), "no kill hit {want}: {phases:?}");
    }
    assert!(kills.len() >= 20, "{} kills", kills.len());
    assert_eq!(leftovers(&lab, &board), "", "left after the last apply");
    assert_eq!(temporaries(&store), Vec::<String>::new());
    eprintln!(
        "{} kills over {phases:?} in {:?} (uninterrupted run {uninterrupted:?})",
        kills.len(),
        t_all.elapsed()
    );
}

/// A command on the controller (a local board's run) ends with an apply killed by
/// SIGKILL; before its watcher, `sleep` ran on to its end.
#[test]
fn kill_anywhere_a_controller_command_ends_with_its_killed_apply() {
    let p = crate::spine::Project::local("ka-local").local_scenario(
        "s",
        &["sleepy"],
        1,
        "[params.sleepy]\nseconds = 313.25\n",
    );
    let mut child = p.spawn(&["apply", "scenarios/s.toml"]);
    let t0 = Instant::now();
    while crate::processes_matching(&["sleep 313.25"]).is_empty() {
        assert!(t0.elapsed() < HANG, "the run never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(crate::processes_left(&["sleep 313.25"]), "");
}
