//! The schedule's walk, checked step by step against a recording fake transport
//! (`transport::fake`): no board, no tool runs. A table of scenarios (images x
//! filesystems x tests, blocked and interleaved, a board lost midway, Ctrl-C) pins the
//! exact steps walked, their order and their fate, and `plan --json` must show the
//! same steps apply walks. The real lab tests (lab::, storage::, parallel::) stay.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use benchpipe::apply::{self, Event, Progress, StepStatus};
use benchpipe::store::Store;
use benchpipe::transport::fake::{FakeConnector, Log, Reply, Script};

/// A project of fake boards `b1` (and `b2`), each with a scratch disk `sd`; tests
/// `alpha` (on the disk: setup, a board service, teardown on both sides) and `beta`
/// (no storage); images os1 and os2; filesystems ext4 and btrfs.
fn project(tag: &str, boards: &[&str], images: &[&str], order: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bp-it-fake-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["boards", "pipeline", "scenarios"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let write = |rel: &str, text: &str| std::fs::write(dir.join(rel), text).unwrap();
    for b in boards {
        write(
            &format!("boards/{b}.toml"),
            &format!(
                "model = \"fake board\"\nlocal = true\nworkdir = \"/var/tmp/bp-fake/{b}\"\n\
                 [[storage]]\nname = \"sd\"\nrole = \"scratch\"\ndevice = \"/dev/fake-sd\"\n"
            ),
        );
    }
    write(
        "pipeline/alpha.toml",
        r#"description = "a test on the disk, with a service and two-sided teardown"
[[setup]]
command = "touch {{ dir }}/alpha-ready"
[[services]]
name = "srv"
on = "board"
command = "sleep 1000"
ready = "true"
[run]
command = "echo RUN-alpha"
parse = "json"
[[teardown]]
on = "controller"
command = "echo TEARDOWN-controller {{ board }}"
[[teardown]]
on = "board"
command = "rm -f {{ dir }}/alpha-ready"
[metrics]
v = { from = "v", unit = "s", better = "lower" }
"#,
    );
    write(
        "pipeline/beta.toml",
        r#"description = "a test without storage"
uses_storage = false
[run]
command = '''printf '{"v": 2.5}\n' # RUN-beta'''
parse = "json"
[metrics]
v = { from = "v", unit = "s", better = "lower" }
"#,
    );
    let image_tables: String = images.iter().fold(String::new(), |mut out, i| {
        let _ = write!(out, "[images.{i}]\ninstalled = true\n");
        out
    });
    let list = |v: &[&str]| {
        v.iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    write(
        "scenarios/s.toml",
        &format!(
            "title = \"fake\"\n{image_tables}\
             [filesystems.ext4]\nkind = \"ext4\"\n[filesystems.btrfs]\nkind = \"btrfs\"\n\
             [matrix]\nimage = [{}]\nboard = [{}]\nstorage = [\"sd\"]\n\
             filesystem = [\"ext4\", \"btrfs\"]\ntest = [\"alpha\", \"beta\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 1 }}\n\
             runs = {{ min = 2, max = 2 }}\norder = \"{order}\"\n",
            list(images),
            list(boards)
        ),
    );
    dir
}

/// What a fake board answers: enough of the storage probes for a scratch disk that is
/// free, and a JSON sample for every run.
fn board_replies(command: &str) -> Reply {
    if command.starts_with("r=$(readlink -f") {
        return Reply::Ok("real /dev/fake-sd\ndev 8:0 fake-sd\n".into());
    }
    if command == "cat /proc/self/mountinfo" {
        return Reply::Ok("22 1 254:1 / / rw - ext4 /dev/root rw\n".into());
    }
    if let Some(path) = command.strip_prefix("readlink -f -- ") {
        return Reply::Ok(format!("{}\n", path.trim_matches('\'')));
    }
    if command.contains("RUN-") {
        return Reply::Ok("{\"v\": 2.5}\n".into());
    }
    Reply::Ok(String::new())
}

/// Records each step walked as `board: label [status]`, and each cell's end.
#[derive(Default)]
struct Recorder {
    lines: Mutex<Vec<String>>,
}

impl Progress for Recorder {
    fn event(&self, e: Event<'_>) {
        let line = match e {
            Event::Step {
                board,
                step,
                status,
                ..
            } => {
                let status = match status {
                    StepStatus::Ran => "ran".to_string(),
                    StepStatus::Done => "done".to_string(),
                    StepStatus::Skipped { reason } => format!("skipped: {reason}"),
                    StepStatus::Failed { cause } => format!("FAILED: {cause}"),
                };
                format!("{board}: {} [{status}]", step.action.label())
            }
            Event::CellDone { board, cell, .. } => format!("{board}: = done {}", cell.label()),
            Event::CellFailed {
                board, cell, cause, ..
            } => format!("{board}: = failed {}: {cause}", cell.label()),
            _ => return,
        };
        self.lines.lock().unwrap().push(line);
    }
}

struct Walked {
    steps: Vec<String>,
    commands: Vec<String>,
    outcome: apply::Outcome,
    store: PathBuf,
}

impl Walked {
    /// The walked steps of one board.
    fn of(&self, board: &str) -> Vec<&str> {
        let prefix = format!("{board}: ");
        self.steps
            .iter()
            .filter_map(|l| l.strip_prefix(&prefix))
            .collect()
    }
}

fn walk(dir: &Path, script: Script, stop: &Arc<AtomicBool>) -> Walked {
    let ws = benchpipe::check::load(dir, &[dir.join("scenarios/s.toml")]).expect("loads");
    let cells: Vec<_> = benchpipe::cli::plans(&ws)
        .into_iter()
        .flat_map(|(_, p)| p.cells)
        .collect();
    let store_dir = dir.join("results");
    let store = Store::open(&store_dir).unwrap();
    let log: Log = Arc::new(Mutex::new(Vec::new()));
    let connector = FakeConnector {
        script,
        log: log.clone(),
    };
    let recorder = Recorder::default();
    let outcome = apply::apply_with(&ws, &cells, &store, &recorder, stop, &connector).unwrap();
    let steps = recorder.lines.into_inner().unwrap();
    let commands = log.lock().unwrap().clone();
    Walked {
        steps,
        commands,
        outcome,
        store: store_dir,
    }
}

fn script(f: impl Fn(&str, &str) -> Reply + Send + Sync + 'static) -> Script {
    Arc::new(f)
}

fn assert_steps(got: &[&str], want: &str) {
    let want: Vec<&str> = want
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(got, &want[..], "\nwalked:\n{}\n", got.join("\n"));
}

// The steps every board starts with.
const BOARD_START: &str = "
    connect [ran]
    claim workdir (and the controller's) [ran]
    provision alpha, beta [ran]
    stop leftover services [ran]
    gather facts [ran]
";

/// One blocked cell of alpha under a mounted filesystem: open and set up, its service,
/// cool-down, warm-up, two measured runs, then cleanup on both sides and the unmount,
/// after which the cell's fate is final.
fn alpha_blocked(image: &str, fs: &str) -> String {
    format!(
        "
    set up alpha (1 command(s)) [ran]
    start srv for alpha [ran]
    cool-down: none [ran]
    warm up alpha (1 run(s)) [ran]
    measure 2 run(s), blocked [ran]
    stop srv for alpha [ran]
    tear down alpha (1 command(s)) [ran]
    tear down alpha (1 command(s)) [ran]
    unmount sd ({fs}) [ran]
    = done alpha on b1 sd/{fs} ({image})
    "
    )
}

#[test]
fn fake_transport_blocked_walk_formats_each_image_and_filesystem_once() {
    let dir = project("blocked", &["b1"], &["os1", "os2"], "blocked");
    let w = walk(
        &dir,
        script(|_, c| board_replies(c)),
        &Arc::new(AtomicBool::new(false)),
    );
    let mut want = BOARD_START.to_string();
    for image in ["os1", "os2"] {
        for fs in ["ext4", "btrfs"] {
            let _ = writeln!(
                want,
                "format sd as {fs} ({image}) on /dev/fake-sd (no serial declared, no size declared) [ran]"
            );
            want.push_str(&alpha_blocked(image, fs));
        }
        let _ = write!(
            want,
            "open beta [ran]
             cool-down: none [ran]
             warm up beta (1 run(s)) [ran]
             measure 2 run(s), blocked [ran]
             = done beta on b1 ({image})
            "
        );
    }
    assert_steps(&w.of("b1"), &want);
    assert_eq!(w.outcome.completed, 6);
    assert!(w.outcome.failed.is_empty());
    // mkfs ran once per (image, filesystem), and every run reached the board.
    let mkfs = |kind: &str| {
        w.commands
            .iter()
            .filter(|c| c.contains(&format!("mkfs.{kind} -q")))
            .count()
    };
    assert_eq!((mkfs("ext4"), mkfs("btrfs")), (2, 2), "{:#?}", w.commands);
    let runs = w.commands.iter().filter(|c| c.contains("RUN-")).count();
    assert_eq!(runs, 6 * 3, "one warm-up and two measured runs per cell");
    // The controller's teardown ran on the controller, once per alpha cell.
    let controller_teardowns = w
        .commands
        .iter()
        .filter(|c| c.starts_with("controller: ") && c.contains("TEARDOWN-controller"))
        .count();
    assert_eq!(controller_teardowns, 4);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fake_transport_interleaved_walk_takes_turns_within_each_mount() {
    let dir = project("interleaved", &["b1"], &["os1"], "interleaved");
    let w = walk(
        &dir,
        script(|_, c| board_replies(c)),
        &Arc::new(AtomicBool::new(false)),
    );
    let mut want = BOARD_START.to_string();
    for fs in ["ext4", "btrfs"] {
        let _ = write!(
            want,
            "format sd as {fs} (os1) on /dev/fake-sd (no serial declared, no size declared) [ran]
             set up alpha (1 command(s)) [ran]
             start srv for alpha [ran]
             cool-down: none [ran]
             warm up alpha (1 run(s)) [ran]
             measure 2 run(s), interleaved [ran]
             stop srv for alpha [ran]
             tear down alpha (1 command(s)) [ran]
             tear down alpha (1 command(s)) [ran]
             unmount sd ({fs}) [ran]
             = done alpha on b1 sd/{fs} (os1)
            "
        );
    }
    want.push_str(
        "open beta [ran]
         cool-down: none [ran]
         warm up beta (1 run(s)) [ran]
         measure 2 run(s), interleaved [ran]
         = done beta on b1 (os1)
        ",
    );
    assert_steps(&w.of("b1"), &want);
    assert_eq!(w.outcome.completed, 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fake_transport_board_lost_midway_fails_its_cells_and_still_tears_down_the_controller_side() {
    let dir = project("lost", &["b1", "b2"], &["os1"], "blocked");
    // b2 goes away during its second measured run of its first cell; b1 is untouched.
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let w = walk(
        &dir,
        script(move |target, c| {
            if target == "b2" && c.contains("RUN-") && counter.fetch_add(1, Ordering::SeqCst) >= 2 {
                return Reply::Lost;
            }
            board_replies(c)
        }),
        &Arc::new(AtomicBool::new(false)),
    );
    let lost = "b2: connection lost: fake: connection lost";
    // The controller's teardown of the cell in flight runs; the board's cannot.
    let want = format!(
        "{BOARD_START}
         format sd as ext4 (os1) on /dev/fake-sd (no serial declared, no size declared) [ran]
         set up alpha (1 command(s)) [ran]
         start srv for alpha [ran]
         cool-down: none [ran]
         warm up alpha (1 run(s)) [ran]
         measure 2 run(s), blocked [FAILED: {lost}]
         stop srv for alpha [skipped: the board is lost]
         tear down alpha (1 command(s)) [ran]
         tear down alpha (1 command(s)) [skipped: the board is lost]
         unmount sd (ext4) [skipped: the board is lost]
         = failed alpha on b2 sd/ext4 (os1): {lost}
         format sd as btrfs (os1) on /dev/fake-sd (no serial declared, no size declared) [skipped: the board is lost]
         set up alpha (1 command(s)) [skipped: the board is lost]
         start srv for alpha [skipped: the board is lost]
         cool-down: none [skipped: the board is lost]
         warm up alpha (1 run(s)) [skipped: the board is lost]
         measure 2 run(s), blocked [skipped: the board is lost]
         stop srv for alpha [skipped: the board is lost]
         tear down alpha (1 command(s)) [done]
         tear down alpha (1 command(s)) [skipped: the board is lost]
         unmount sd (btrfs) [skipped: the board is lost]
         = failed alpha on b2 sd/btrfs (os1): {lost}
         open beta [skipped: the board is lost]
         cool-down: none [skipped: the board is lost]
         warm up beta (1 run(s)) [skipped: the board is lost]
         measure 2 run(s), blocked [skipped: the board is lost]
         = failed beta on b2 (os1): {lost}
        "
    );
    assert_steps(&w.of("b2"), &want);
    assert_eq!(w.outcome.failed.len(), 3, "{:?}", w.outcome.failed);
    assert_eq!(w.outcome.completed, 3, "b1 goes on: {:#?}", w.of("b1"));
    assert!(w.of("b1").iter().all(|l| !l.contains("FAILED")));
    // The lost board's cells carry the typed cause in the store.
    let failures = std::fs::read_dir(&w.store)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("failure.json")).ok())
        .filter(|f| f.contains("\"board_lost\""))
        .count();
    assert_eq!(failures, 3);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fake_transport_ctrl_c_stops_the_walk_and_still_cleans_up() {
    let dir = project("interrupt", &["b1"], &["os1"], "blocked");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let runs = Arc::new(AtomicUsize::new(0));
    let w = walk(
        &dir,
        script(move |_, c| {
            // Ctrl-C arrives during the first measured run (the second run command).
            if c.contains("RUN-") && runs.fetch_add(1, Ordering::SeqCst) == 1 {
                flag.store(true, Ordering::SeqCst);
            }
            board_replies(c)
        }),
        &stop,
    );
    let want = format!(
        "{BOARD_START}
         format sd as ext4 (os1) on /dev/fake-sd (no serial declared, no size declared) [ran]
         set up alpha (1 command(s)) [ran]
         start srv for alpha [ran]
         cool-down: none [ran]
         warm up alpha (1 run(s)) [ran]
         measure 2 run(s), blocked [FAILED: interrupted]
         stop srv for alpha [ran]
         tear down alpha (1 command(s)) [ran]
         tear down alpha (1 command(s)) [ran]
         unmount sd (ext4) [ran]
         format sd as btrfs (os1) on /dev/fake-sd (no serial declared, no size declared) [skipped: interrupted]
         set up alpha (1 command(s)) [skipped: interrupted]
         start srv for alpha [skipped: interrupted]
         cool-down: none [skipped: interrupted]
         warm up alpha (1 run(s)) [skipped: interrupted]
         measure 2 run(s), blocked [skipped: interrupted]
         stop srv for alpha [done]
         tear down alpha (1 command(s)) [done]
         tear down alpha (1 command(s)) [done]
         unmount sd (btrfs) [done]
         open beta [skipped: interrupted]
         cool-down: none [skipped: interrupted]
         warm up beta (1 run(s)) [skipped: interrupted]
         measure 2 run(s), blocked [skipped: interrupted]
        "
    );
    assert_steps(&w.of("b1"), &want);
    assert!(w.outcome.interrupted);
    assert!(w.outcome.failed.is_empty(), "an interrupt is no failure");
    // The run cut short by the interrupt was not recorded; the warm-up was.
    let samples: usize = std::fs::read_dir(&w.store)
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("samples.jsonl")).ok())
        .map(|s| s.lines().count())
        .sum();
    assert_eq!(samples, 1);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fake_transport_walks_exactly_the_steps_plan_json_shows() {
    let dir = project("same", &["b1"], &["os1", "os2"], "interleaved");
    let plan = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .current_dir(&dir)
        .args(["plan", "--json", "scenarios/s.toml"])
        .output()
        .unwrap();
    assert!(plan.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(doc["format"], 2);
    assert_eq!(doc["schedule"]["format"], 1);
    let planned: Vec<String> = doc["schedule"]["boards"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["action"].as_str().unwrap().to_string())
        .collect();
    let w = walk(
        &dir,
        script(|_, c| board_replies(c)),
        &Arc::new(AtomicBool::new(false)),
    );
    let walked: Vec<&str> = w
        .of("b1")
        .into_iter()
        .filter(|l| !l.starts_with("= "))
        .collect();
    assert_eq!(planned.len(), walked.len(), "{planned:#?}\n{walked:#?}");
    // Each walked label belongs to its planned action, in the same order.
    for (p, l) in planned.iter().zip(&walked) {
        let first = match p.as_str() {
            "connect" => "connect",
            "claim-workdir" => "claim",
            "provision" => "provision",
            "stop-leftover-services" => "stop leftover",
            "gather-facts" => "gather",
            "mount" => "format",
            "setup" if l.starts_with("open") => "open",
            "setup" => "set up",
            "start-service" => "start",
            "cooldown" => "cool-down",
            "warm-up" => "warm up",
            "measure" => "measure",
            "stop-service" => "stop",
            "teardown" => "tear down",
            "unmount" => "unmount",
            other => panic!("unknown action {other}"),
        };
        assert!(l.starts_with(first), "planned {p}, walked {l}");
    }
    // A second plan shows nothing left: no steps at all.
    let again = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .current_dir(&dir)
        .args(["plan", "--json", "scenarios/s.toml"])
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(doc["schedule"]["boards"], serde_json::json!([]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn apply_dry_run_prints_the_steps_and_touches_neither_board_nor_store() {
    // b1 is the local machine (a real board); apply would claim its workdir.
    let dir = project("dry-run", &["b1"], &["os1"], "blocked");
    let workdir = Path::new("/var/tmp/bp-fake/b1");
    let _ = std::fs::remove_dir_all(workdir);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .current_dir(&dir)
        .args(["apply", "--dry-run", "scenarios/s.toml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("board b1: 29 step(s)\n"), "{text}");
    for line in [
        "1. connect",
        "6. format sd as ext4 (os1)",
        "measure 2 run(s), blocked",
        "unmount sd (btrfs)",
    ] {
        assert!(text.contains(line), "{line}:\n{text}");
    }
    assert!(text.contains("Plan: 3 cell(s)"), "{text}");
    assert!(!workdir.exists(), "dry-run claimed the board's workdir");
    assert!(!dir.join("results").exists(), "dry-run wrote the store");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The project above with `expect = { os_release = { ID = ID } }` on image os1.
fn expecting(tag: &str, id: &str) -> PathBuf {
    let dir = project(tag, &["b1"], &["os1"], "blocked");
    let s = dir.join("scenarios/s.toml");
    let text = std::fs::read_to_string(&s).unwrap().replace(
        "[images.os1]\ninstalled = true\n",
        &format!(
            "[images.os1]\ninstalled = true\nexpect = {{ os_release = {{ ID = \"{id}\" }} }}\n"
        ),
    );
    std::fs::write(&s, text).unwrap();
    dir
}

#[test]
fn fake_transport_an_image_that_does_not_match_its_expectations_is_never_measured() {
    let dir = expecting("mismatch", "raspbian");
    let w = walk(
        &dir,
        script(|_, c| match c {
            c if c.contains("/etc/os-release") => {
                Reply::Ok("ID=debian\nVERSION_ID=\"12\"\n".into())
            }
            c => board_replies(c),
        }),
        &Arc::new(AtomicBool::new(false)),
    );
    let steps = w.of("b1");
    assert_eq!(
        steps[5],
        "verify image os1 (ID=raspbian) [FAILED: board does not run image os1: os_release.ID is \"debian\", expected \"raspbian\"]"
    );
    assert!(
        steps[6..].iter().all(|s| !s.contains("[ran]")),
        "{steps:#?}"
    );
    assert_eq!(w.outcome.failed.len(), 3);
    assert_eq!(w.commands.iter().filter(|c| c.contains("RUN-")).count(), 0);
    assert!(!w.store.join("boards/b1.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_local_machine_is_verified_against_its_real_os_release() {
    // This machine's own /etc/os-release: the local board needs no fake.
    let id = std::fs::read_to_string("/etc/os-release")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("ID=")
                .map(|v| v.trim_matches('"').to_string())
        })
        .expect("an ID in /etc/os-release");
    for (want, ok) in [(id.as_str(), true), ("not-this-os", false)] {
        let dir = expecting(&format!("local-{ok}"), want);
        // Only beta (no storage, no service) on the local machine.
        let s = dir.join("scenarios/s.toml");
        let text = std::fs::read_to_string(&s)
            .unwrap()
            .replace("test = [\"alpha\", \"beta\"]", "test = [\"beta\"]");
        std::fs::write(&s, text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .current_dir(&dir)
            .args(crate::scripted(&[
                "apply",
                "--no-report",
                "scenarios/s.toml",
            ]))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let state = std::fs::read_to_string(dir.join("results/boards/b1.json"));
        if ok {
            assert!(out.status.success(), "{err}");
            let state: serde_json::Value = serde_json::from_str(&state.unwrap()).unwrap();
            assert_eq!(state["image"], "os1");
            assert_eq!(state["identity"], "installed:os1");
        } else {
            assert_eq!(out.status.code(), Some(1), "{err}");
            assert!(
                err.contains(&format!(
                    "os_release.ID is \"{id}\", expected \"not-this-os\""
                )),
                "{err}"
            );
            assert!(
                state.is_err(),
                "a failed verification is not recorded as the board's state"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
