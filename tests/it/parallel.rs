//! Integration tests: apply on the virtual lab over real SSH: boards in parallel,
//! exclusive resources, a board whose sshd dies mid-run, and the resume after it.

use crate::lab::bp;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::lab::Lab;
use crate::spine::text;

/// `benchpipe apply scenarios/s.toml` in the background, its stderr piped.
fn spawn_apply(root: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(root)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Every stored sample of `test`, with the board it ran on.
fn samples(root: &Path, test: &str) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(root.join("results")) else {
        return out;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(rest) = name.get(33..) else { continue };
        let Some(board) = rest.strip_prefix(&format!("{test}-")) else {
            continue;
        };
        let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for line in text.lines() {
            if let Ok(v) = serde_json::from_str(line) {
                out.push((board.to_string(), v));
            }
        }
    }
    out
}

fn write_project(lab: &Lab, tests: &[&str], runs: u32, recipes: &[(&str, &str)]) {
    lab.project_on_every_board(recipes, tests, runs);
}

const NET: &str = r#"description = "a client on the controller, like iperf3 -c: one board at a time"
uses_storage = false
exclusive = ["controller-network"]
[run]
on = "controller"
command = "sleep 0.3; echo '{\"value\": 1}'"
parse = "json"
[metrics]
value = { from = "value", unit = "x", better = "higher" }
"#;

const BUSY: &str = r#"description = "runs on the board, where boards work in parallel"
uses_storage = false
[run]
command = "sleep 0.5; echo '{\"value\": 1}'"
parse = "json"
[metrics]
value = { from = "value", unit = "x", better = "higher" }
"#;

/// Waits until board `index` has stored a sample of `test`, then kills its sshd, as a
/// crash mid-run would.
fn kill_sshd_after_first_sample(lab: &Lab, index: usize, test: &str) {
    let board = lab.board(index);
    let t0 = Instant::now();
    while !samples(&lab.root, test)
        .iter()
        .any(|(b, _)| *b == board.name.as_str())
    {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{} never started",
            board.name
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    benchpipe::lab::kill_sshd(board).unwrap();
}

fn interval(s: &serde_json::Value) -> (f64, f64) {
    (s["started"].as_f64().unwrap(), s["ended"].as_f64().unwrap())
}

#[test]
fn three_boards_run_in_parallel_and_exclusive_cells_never_overlap() {
    let Some(lab) = Lab::up(3) else { return };
    write_project(&lab, &["net", "busy"], 3, &[("net", NET), ("busy", BUSY)]);
    let apply = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));

    let net = samples(&lab.root, "net");
    assert_eq!(net.len(), 9, "3 boards x 3 runs");
    for (i, (ba, a)) in net.iter().enumerate() {
        for (bb, b) in &net[i + 1..] {
            let ((s1, e1), (s2, e2)) = (interval(a), interval(b));
            assert!(
                e1 <= s2 || e2 <= s1,
                "runs holding controller-network overlap: {ba} {s1}..{e1} and {bb} {s2}..{e2}"
            );
        }
    }
    // Without a shared resource, boards do work at the same time.
    let busy = samples(&lab.root, "busy");
    assert_eq!(busy.len(), 9);
    let overlapping = busy.iter().enumerate().any(|(i, (ba, a))| {
        busy[i + 1..].iter().any(|(bb, b)| {
            let ((s1, e1), (s2, e2)) = (interval(a), interval(b));
            ba != bb && s1 < e2 && s2 < e1
        })
    });
    assert!(overlapping, "no two boards ever ran at once: {busy:?}");
}

#[test]
fn a_board_whose_sshd_dies_fails_alone_and_a_rerun_completes_only_its_cell() {
    let Some(lab) = Lab::up(3) else { return };
    let slow = BUSY.replace("sleep 0.5", "sleep 0.7");
    write_project(&lab, &["slow"], 6, &[("slow", &slow)]);
    let child = spawn_apply(&lab.root);
    let victim = lab.board(0).name.to_string();
    kill_sshd_after_first_sample(&lab, 0, "slow");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("FAILED slow on {victim}")),
        "the victim's cell failed: {err}"
    );
    assert!(err.contains("1 failed"), "{err}");
    let per_board = |board: &str| {
        samples(&lab.root, "slow")
            .iter()
            .filter(|(b, s)| b == board && s["kind"] == "measured")
            .count()
    };
    for other in [&lab.board(1).name, &lab.board(2).name] {
        assert_eq!(per_board(other.as_str()), 6, "{other} finished: {err}");
    }
    let kept = per_board(&victim);
    assert!((1..6).contains(&kept), "{kept}");

    let plan = bp(&lab.root, &["plan", "scenarios/s.toml"]);
    let plan_text = String::from_utf8_lossy(&plan.stdout);
    assert!(plan_text.contains("last failure:"), "{plan_text}");
    assert!(plan_text.contains(&victim), "{plan_text}");

    benchpipe::lab::start_sshd(lab.board(0)).unwrap();
    let rerun = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(rerun.status.success(), "{}", text(&rerun));
    assert!(
        String::from_utf8_lossy(&rerun.stderr).contains("1 cell(s) to run, 2 already complete"),
        "{}",
        text(&rerun)
    );
    assert_eq!(per_board(&victim), 6);
}

#[test]
fn an_unknown_host_key_stops_apply_until_boards_trust_accepts_it() {
    let Some(lab) = Lab::up(1) else { return };
    write_project(&lab, &["busy"], 1, &[("busy", BUSY)]);
    let board = lab.board(0).name.to_string();
    let known_hosts = lab.info.known_hosts.clone();
    std::fs::write(&known_hosts, "").unwrap();

    let refused = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("SHA256:"), "the fingerprint is shown: {err}");
    assert!(
        err.contains(&format!("benchpipe boards trust {board}")),
        "says how to accept it: {err}"
    );
    assert!(samples(&lab.root, "busy").is_empty());

    // The refusal's own command, with the fingerprint it showed.
    let fingerprint = err
        .split("--fingerprint ")
        .nth(1)
        .and_then(|r| r.split(|c: char| c == '`' || c.is_whitespace()).next())
        .unwrap_or_else(|| panic!("no --fingerprint in: {err}"));
    let trust = bp(
        &lab.root,
        &["boards", "trust", &board, "--fingerprint", fingerprint],
    );
    assert!(trust.status.success(), "{}", text(&trust));
    let said = String::from_utf8_lossy(&trust.stdout);
    assert!(
        said.starts_with(&format!("trusted {board}: wrote ")) && said.contains(fingerprint),
        "{said}"
    );
    assert!(
        std::fs::read_to_string(&known_hosts)
            .unwrap()
            .contains("ssh-ed25519")
    );

    let apply = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    assert_eq!(samples(&lab.root, "busy").len(), 1);
}

#[test]
fn iperf3_runs_between_lab_boards_and_the_controller_and_its_servers_are_stopped() {
    let Some(lab) = Lab::up(2) else { return };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let up =
        std::fs::read_to_string(repo.join("pipeline/iperf3-board-to-controller.toml")).unwrap();
    let down =
        std::fs::read_to_string(repo.join("pipeline/iperf3-controller-to-board.toml")).unwrap();
    write_project(
        &lab,
        &["iperf3-board-to-controller", "iperf3-controller-to-board"],
        2,
        &[
            ("iperf3-board-to-controller", &up),
            ("iperf3-controller-to-board", &down),
        ],
    );
    let scenario = lab.root.join("scenarios/s.toml");
    let text_of = std::fs::read_to_string(&scenario).unwrap();
    std::fs::write(
        &scenario,
        text_of + "[params.iperf3-board-to-controller]\nseconds = 1\n[params.iperf3-controller-to-board]\nseconds = 1\n",
    )
    .unwrap();
    let apply = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    for test in ["iperf3-board-to-controller", "iperf3-controller-to-board"] {
        let runs = samples(&lab.root, test);
        assert_eq!(runs.len(), 4, "2 boards x 2 runs of {test}");
        for (board, s) in &runs {
            let mbit = s["metrics"]["throughput"].as_f64().unwrap();
            // Across a veth pair on this machine: well above a gigabit link.
            assert!(mbit > 100.0, "{test} on {board}: {mbit} Mbit/s");
        }
    }
    // One board at a time on the controller's network.
    let all: Vec<_> = ["iperf3-board-to-controller", "iperf3-controller-to-board"]
        .iter()
        .flat_map(|t| samples(&lab.root, t))
        .collect();
    for (i, (_, a)) in all.iter().enumerate() {
        for (_, b) in &all[i + 1..] {
            let ((s1, e1), (s2, e2)) = (interval(a), interval(b));
            assert!(e1 <= s2 || e2 <= s1, "iperf3 runs overlap");
        }
    }
    // Every server was stopped with its cell: nothing listens any more on a board.
    for b in &lab.info.boards {
        let out = Command::new("ip")
            .args(["netns", "exec", &b.netns, "ss", "-Hltn"])
            .output()
            .unwrap();
        let listening = String::from_utf8_lossy(&out.stdout);
        assert!(!listening.contains(":5201 "), "{}: {listening}", b.name);
    }
}

#[test]
fn ctrl_c_ends_a_long_run_on_the_board_runs_teardown_and_keeps_the_store_whole() {
    use std::io::{BufRead, BufReader};
    let Some(lab) = Lab::up(1) else { return };
    let marker = lab.root.join("torn-down");
    let long = format!(
        r#"description = "a run far longer than anyone waits"
uses_storage = false
[run]
command = "sleep 3002; echo '{{\"value\": 1}}'"
parse = "json"
[metrics]
value = {{ from = "value", unit = "x", better = "higher" }}
[[teardown]]
command = "touch {}"
"#,
        marker.display()
    );
    write_project(&lab, &["long"], 2, &[("long", &long)]);
    let mut child = spawn_apply(&lab.root);
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = String::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("run 1/2") {
            break;
        }
    }
    // The run is on its way on the board.
    let t0 = Instant::now();
    while crate::processes_matching(&["sleep 3002"]).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "never started: {seen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let interrupted_at = Instant::now();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(128 + libc::SIGINT),
        "{seen}{}",
        rest.join("\n")
    );
    assert!(
        interrupted_at.elapsed() < Duration::from_secs(20),
        "apply kept waiting for the board's command"
    );
    assert!(
        crate::processes_left(&["sleep 3002"]).is_empty(),
        "the board's command survived Ctrl-C"
    );
    assert!(marker.exists(), "teardown ran after the interrupt");
    assert!(
        rest.join("\n").contains("interrupted"),
        "{}",
        rest.join("\n")
    );
    assert!(samples(&lab.root, "long").is_empty(), "no partial sample");
}

#[test]
fn a_board_lost_in_an_interleaved_group_fails_every_unfinished_cell_of_it() {
    let Some(lab) = Lab::up(1) else { return };
    let slow = BUSY.replace("sleep 0.5", "sleep 0.7");
    write_project(
        &lab,
        &["slow", "slower"],
        6,
        &[("slow", &slow), ("slower", &slow)],
    );
    let scenario = lab.root.join("scenarios/s.toml");
    let text_before = std::fs::read_to_string(&scenario).unwrap();
    std::fs::write(&scenario, format!("{text_before}order = \"interleaved\"\n")).unwrap();
    let child = spawn_apply(&lab.root);
    kill_sshd_after_first_sample(&lab, 0, "slow");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    // Both cells of the group failed with the board's cause: neither is "interrupted".
    assert!(err.contains("2 failed"), "{err}");
    assert!(!err.to_lowercase().contains("interrupted"), "{err}");
    for test in ["slow", "slower"] {
        assert!(
            err.contains(&format!("FAILED {test} on")),
            "{test} is recorded failed: {err}"
        );
    }
    let plan = bp(&lab.root, &["plan", "scenarios/s.toml"]);
    let plan_text = String::from_utf8_lossy(&plan.stdout);
    assert_eq!(plan_text.matches("last failure:").count(), 2, "{plan_text}");
}

/// A connection lost during a setup step is the board's loss, as in a run: the cell
/// records `board_lost`, and the board's next cell fails with the same cause untried.
#[test]
fn a_board_lost_during_setup_fails_its_cells_as_board_lost() {
    let Some(lab) = Lab::up(1) else { return };
    let marker = lab.root.join("setup-started");
    let hangs = BUSY.replace(
        "[run]",
        &format!(
            "[[setup]]\ncommand = \"touch '{}'; sleep 20\"\n[run]",
            marker.display()
        ),
    );
    write_project(
        &lab,
        &["hangs", "later"],
        1,
        &[("hangs", &hangs), ("later", BUSY)],
    );
    let child = spawn_apply(&lab.root);
    let t0 = Instant::now();
    while !marker.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "setup never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    benchpipe::lab::kill_sshd(lab.board(0)).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let failures: Vec<(String, serde_json::Value)> = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("failure.json").exists())
        .map(|e| {
            let f = std::fs::read_to_string(e.path().join("failure.json")).unwrap();
            (
                e.file_name().to_string_lossy().to_string(),
                serde_json::from_str(&f).unwrap(),
            )
        })
        .collect();
    assert_eq!(failures.len(), 2, "{failures:?}\n{}", text(&out));
    for (cell, f) in &failures {
        assert_eq!(f["failure"]["kind"], "board_lost", "{cell}: {f}");
    }
    assert_eq!(
        failures[0].1["failure"], failures[1].1["failure"],
        "one cause for both cells"
    );
}
