//! Integration tests: the network recipes on the virtual lab over real SSH: iperf3
//! `--bidir` and iperf 2, servers on the boards, clients on the controller; nothing of
//! theirs is left running afterwards.

use crate::lab::bp;
use std::path::Path;

use crate::lab::Lab;
use crate::spine::text;

/// Each measured run's metrics of `test`, by board.
fn metrics(root: &Path, test: &str) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(board) = name
            .get(33..)
            .and_then(|r| r.strip_prefix(&format!("{test}-")))
        else {
            continue;
        };
        let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            out.push((board.to_string(), v["metrics"].clone()));
        }
    }
    out
}

#[test]
fn iperf3_bidir_and_iperf2_measure_both_ways_on_lab_boards_and_leave_nothing_running() {
    let lab = Lab::up(2);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for name in ["iperf3-bidir", "iperf"] {
        std::fs::copy(
            repo.join(format!("pipeline/{name}.toml")),
            root.join(format!("pipeline/{name}.toml")),
        )
        .unwrap();
    }
    // Ports of this test alone, so the process scan below finds no other test's iperf.
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"lab\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}-*\"]\ntest = [\"iperf3-bidir\", \"iperf\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.iperf3-bidir]\nseconds = 1\nport = 5273\n\
             [params.iperf]\nseconds = 1\nport = 5073\n",
            lab.options.board_prefix
        ),
    )
    .unwrap();
    let apply = bp(root, &["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));

    let bidir = metrics(root, "iperf3-bidir");
    assert_eq!(bidir.len(), 4, "2 boards x 2 runs: {bidir:?}");
    for (board, m) in &bidir {
        for key in ["download", "upload"] {
            let mbit = m[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{board}: no {key}: {m}"));
            assert!(mbit.is_finite() && mbit > 0.0, "{board} {key}: {mbit}");
        }
        // Two directions, two numbers: not one direction's rate reported twice.
        assert_ne!(m["download"], m["upload"], "{board}: {m}");
    }
    let v2 = metrics(root, "iperf");
    assert_eq!(v2.len(), 4, "2 boards x 2 runs: {v2:?}");
    for (board, m) in &v2 {
        let mbit = m["throughput"].as_f64().unwrap();
        assert!(mbit.is_finite() && mbit > 0.0, "{board}: {mbit}");
    }
    // The servers stopped with their cells, and no client outlived its run.
    let left = crate::processes_left(&["-p 5273", "-p 5073"]);
    assert!(left.trim().is_empty(), "left running: {left}");
}
