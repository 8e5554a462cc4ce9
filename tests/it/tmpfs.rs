//! Integration tests: a recipe's `[tmpfs]` (`storage::tmpfs`): the schedule's steps
//! around a cell (walked by a recording fake transport, and shown by `plan --json` and
//! `apply --dry-run`), and on a real lab board the mount itself (its source name,
//! marker, mode and size), the refusals (a non-empty directory, a link, more than the
//! board's memory), each leaving nothing mounted and what it found untouched.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use benchpipe::apply::{self, Event, Progress, StepStatus};
use benchpipe::lab::LabBoard;
use benchpipe::store::Store;
use benchpipe::transport::fake::{FakeConnector, Log, Reply};

use crate::lab::{Lab, bp, text};
use crate::xz::{benchpipe_tmpfs, board_mounts, in_board};

/// A recipe with a tmpfs of `mib + 1` MiB that writes into it and reports its size in
/// bytes and its mode, after checking its source name and marker.
const RECIPE: &str = r#"description = "a cell's own tmpfs"
uses_storage = false
[params]
mib = 8
[tmpfs]
size = "{{ mib + 1 }}"
[[setup]]
command = "head -c 1048576 /dev/zero > {{ tmpfs }}/f"
[run]
command = """
test "$(findmnt -no SOURCE -M {{ tmpfs }})" = benchpipe-tmp && test -f {{ tmpfs }}/.benchpipe-tmpfs && \
printf '{"bytes": %s, "mode": %s}\n' "$(findmnt -bno SIZE -M {{ tmpfs }})" "$(stat -c %a {{ tmpfs }})" # RUN
"""
parse = "json"
[[teardown]]
command = "rm -f {{ tmpfs }}/f"
[metrics]
bytes = { from = "bytes", unit = "B", better = "higher" }
mode = { from = "mode", unit = "octal", better = "higher" }
"#;

fn write_project(dir: &Path, board_file: &str, board: &str, params: &str) {
    for sub in ["boards", "pipeline", "scenarios"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    if !board_file.is_empty() {
        std::fs::write(dir.join(format!("boards/{board}.toml")), board_file).unwrap();
    }
    std::fs::write(dir.join("pipeline/tmp.toml"), RECIPE).unwrap();
    std::fs::write(
        dir.join("scenarios/s.toml"),
        format!(
            "title = \"tmpfs\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{board}\"]\ntest = [\"tmp\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.tmp]\n{params}\n"
        ),
    )
    .unwrap();
}

fn fake_project(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bp-it-tmpfs-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    write_project(
        &dir,
        "model = \"fake board\"\nlocal = true\nworkdir = \"/var/tmp/bp-fake-tmpfs/b1\"\n",
        "b1",
        "",
    );
    dir
}

#[derive(Default)]
struct Recorder {
    lines: Mutex<Vec<String>>,
}

impl Progress for Recorder {
    fn event(&self, e: Event<'_>) {
        if let Event::Step { step, status, .. } = e {
            let status = match status {
                StepStatus::Ran => "ran".to_string(),
                StepStatus::Done => "done".to_string(),
                StepStatus::Skipped { reason } => format!("skipped: {reason}"),
                StepStatus::Failed { .. } => "FAILED".to_string(),
            };
            self.lines
                .lock()
                .unwrap()
                .push(format!("{} [{status}]", step.action.label()));
        }
    }
}

/// Walks the project with a fake board answering by `reply`; the steps and the log.
fn walk(dir: &Path, reply: fn(&str) -> Reply) -> (Vec<String>, Vec<String>) {
    let ws = benchpipe::check::load(dir, &[dir.join("scenarios/s.toml")]).expect("loads");
    let cells: Vec<_> = benchpipe::cli::plans(&ws)
        .into_iter()
        .flat_map(|(_, p)| p.cells)
        .collect();
    let store = Store::open(dir.join("results")).unwrap();
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let connector = FakeConnector {
        script: Arc::new(move |_, c| reply(c)),
        log: log.clone(),
    };
    let recorder = Recorder::default();
    let stop = AtomicBool::new(false);
    apply::apply_with(&ws, &cells, &store, &recorder, &stop, &connector).unwrap();
    let steps = recorder.lines.into_inner().unwrap();
    let commands = log.lock().unwrap().clone();
    (steps, commands)
}

fn cell_steps(steps: &[String]) -> Vec<&str> {
    steps
        .iter()
        .map(String::as_str)
        .skip_while(|l| !l.starts_with("mount a tmpfs"))
        .collect()
}

#[test]
fn fake_transport_the_tmpfs_is_mounted_before_setup_and_unmounted_after_teardown_also_after_a_failed_run()
 {
    let dir = fake_project("walk");
    let ok = |c: &str| {
        if c.contains("# RUN") {
            Reply::Ok("{\"bytes\": 1, \"mode\": 700}\n".into())
        } else {
            Reply::Ok(String::new())
        }
    };
    let (steps, commands) = walk(&dir, ok);
    assert_eq!(
        cell_steps(&steps),
        [
            "mount a tmpfs of 9 MiB for tmp [ran]",
            "set up tmp (1 command(s)) [ran]",
            "cool-down: none [ran]",
            "measure 2 run(s), blocked [ran]",
            "tear down tmp (1 command(s)) [ran]",
            "unmount the tmpfs of tmp [ran]",
        ],
        "{steps:#?}"
    );
    let mount = commands
        .iter()
        .find(|c| c.contains("mount -t tmpfs"))
        .expect("a mount");
    assert!(
        mount.contains("size=9m") && mount.contains("mode=0700"),
        "{mount}"
    );
    assert!(mount.contains("/var/tmp/bp-fake-tmpfs/b1/tmp-"), "{mount}");
    assert!(
        mount.contains("s=benchpipe-tmp\n"),
        "the source name: {mount}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    // The run fails: the tmpfs is unmounted all the same.
    let dir = fake_project("failing");
    let failing = |c: &str| {
        if c.contains("# RUN") {
            Reply::Fail(3, "no".into())
        } else {
            Reply::Ok(String::new())
        }
    };
    let (steps, _) = walk(&dir, failing);
    assert!(
        steps.iter().any(|l| l == "unmount the tmpfs of tmp [ran]"),
        "{steps:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);

    // The mount is refused: nothing to unmount, the setup never runs.
    let dir = fake_project("refused");
    let refused = |c: &str| {
        if c.contains("mount -t tmpfs") {
            Reply::Fail(3, "a mount benchpipe did not make".into())
        } else {
            Reply::Ok(String::new())
        }
    };
    let (steps, commands) = walk(&dir, refused);
    assert_eq!(
        cell_steps(&steps),
        [
            "mount a tmpfs of 9 MiB for tmp [FAILED]",
            "set up tmp (1 command(s)) [skipped: its cells failed]",
            "cool-down: none [skipped: its cells failed]",
            "measure 2 run(s), blocked [skipped: its cells failed]",
            "tear down tmp (1 command(s)) [done]",
            "unmount the tmpfs of tmp [done]",
        ],
        "{steps:#?}"
    );
    // Neither the teardown nor an unmount touched what was there.
    assert!(
        !commands
            .iter()
            .any(|c| c.contains("left alone") || c.contains("rm -f /var/tmp/bp-fake-tmpfs/b1/tmp-")),
        "{commands:#?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plan_json_and_dry_run_show_the_tmpfs_steps_with_their_size() {
    let dir = fake_project("plan");
    let plan = bp(&dir, &["plan", "--json", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let steps = doc["schedule"]["boards"][0]["steps"].as_array().unwrap();
    let mount = steps
        .iter()
        .find(|s| s["action"] == "mount-tmpfs")
        .expect("mount-tmpfs");
    assert_eq!(mount["size"], serde_json::json!({ "mib": 9 }));
    assert_eq!(mount["test"], "tmp");
    let at = |a: &str| steps.iter().position(|s| s["action"] == a).unwrap();
    assert!(at("mount-tmpfs") < at("setup"));
    assert!(at("teardown") < at("unmount-tmpfs"));
    // A scenario's parameter sizes it.
    let s = dir.join("scenarios/s.toml");
    let t = std::fs::read_to_string(&s).unwrap();
    std::fs::write(&s, format!("{t}mib = 99\n")).unwrap();
    let dry = bp(&dir, &["apply", "--dry-run", "scenarios/s.toml"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let out = String::from_utf8_lossy(&dry.stdout);
    assert!(out.contains("mount a tmpfs of 100 MiB for tmp"), "{out}");
    assert!(out.contains("unmount the tmpfs of tmp"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The lab board's point for the scenario's one cell.
fn point(root: &Path, board: &LabBoard) -> String {
    let plan = bp(root, &["plan", "--json", "scenarios/s.toml"]);
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("plan --json");
    format!(
        "{}/tmp-{}",
        board.workdir,
        doc["cells"][0]["key"].as_str().unwrap()
    )
}

fn lab_project(lab: &Lab, params: &str) {
    write_project(&lab.root, "", lab.board(0).name.as_str(), params);
}

fn samples(root: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        out.extend(text.lines().map(|l| serde_json::from_str(l).unwrap()));
    }
    out
}

#[test]
fn on_a_lab_board_the_cells_tmpfs_is_benchpipes_own_of_its_size_and_gone_afterwards() {
    let lab = Lab::up(1);
    let board = lab.board(0).clone();
    lab_project(&lab, "");
    let point = point(&lab.root, &board);
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let samples = samples(&lab.root);
    assert_eq!(samples.len(), 2, "{}", text(&out));
    for s in &samples {
        assert_eq!(s["metrics"]["bytes"], 9.0 * 1048576.0, "{s}");
        assert_eq!(s["metrics"]["mode"], 700.0, "{s}");
    }
    assert_eq!(board_mounts(&board, &point), "", "unmounted");
    assert!(!Path::new(&point).exists(), "its mount point is removed");
    assert_eq!(benchpipe_tmpfs(&board), "");
    assert_eq!(
        crate::serving::board_processes_left(
            &board,
            &["benchpipe-guard"],
            std::time::Duration::from_secs(15)
        ),
        "",
        "the guard ends once the tmpfs is gone"
    );
}

/// What is at the cell's place is not benchpipe's: a non-empty directory, a link. The
/// cell fails with the reason; nothing is mounted, and what was there is untouched.
#[test]
fn a_non_empty_directory_or_a_link_at_the_tmpfs_is_refused_and_left_alone() {
    let lab = Lab::up(1);
    let board = lab.board(0).clone();
    lab_project(&lab, "");
    let point = point(&lab.root, &board);
    std::fs::create_dir_all(&point).unwrap();
    std::fs::write(format!("{point}/precious"), "keep").unwrap();
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("is not an empty directory"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read_to_string(format!("{point}/precious")).unwrap(),
        "keep"
    );
    assert_eq!(benchpipe_tmpfs(&board), "");
    std::fs::remove_dir_all(&point).unwrap();

    let target = lab.root.join("elsewhere");
    std::fs::create_dir_all(&target).unwrap();
    std::os::unix::fs::symlink(&target, &point).unwrap();
    let out = bp(
        &lab.root,
        &["apply", "--redo", "test=tmp", "scenarios/s.toml"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("is a symbolic link"), "{}", text(&out));
    assert!(
        std::fs::symlink_metadata(&point).unwrap().is_symlink(),
        "the link is left"
    );
    assert_eq!(benchpipe_tmpfs(&board), "");
    std::fs::remove_file(&point).unwrap();
}

/// A tmpfs larger than the board's available memory (within the bounds `check` knows):
/// refused on the board with both numbers, nothing mounted.
#[test]
fn a_tmpfs_larger_than_the_boards_available_memory_is_refused() {
    let lab = Lab::up(1);
    let board = lab.board(0).clone();
    lab_project(&lab, "mib = 262143");
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("a tmpfs of 262144 MiB")
            && text(&out).contains("MiB of memory available (MemAvailable)"),
        "{}",
        text(&out)
    );
    assert_eq!(benchpipe_tmpfs(&board), "");
    let listed = in_board(&board, &format!("ls -A {}", board.workdir));
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains("tmp-"),
        "{listed:?}"
    );
}
