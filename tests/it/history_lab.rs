//! `benchpipe history` over nightly-like applies (`apply --redo`, the same cell each
//! time) on a real lab board, where one night the board's tool is upgraded (its version
//! a fact the recipe's `[facts]` reads on the board, not part of the cell key) and its
//! figure moves with it: the change point is at that run and names the tool's version
//! as it was just before and just after (each run's own facts, `facts/<session>.json`),
//! and there is no change point elsewhere. Needs root (the lab).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::lab::{Lab, bp, text};

/// The base values' jitter per run, so that no two runs' means are equal.
const JITTER: [f64; 8] = [0.0, 0.01, -0.008, 0.004, -0.003, 0.006, -0.005, 0.007];

/// The tool at `version` (what the board runs): `--version` says it, and a run prints
/// the next of the values the test wrote.
fn install_tool(dir: &Path, version: &str) {
    let d = dir.display();
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo \"bptool {version}\"; exit 0; fi\n\
         n=$(cat {d}/counter); n=$((n+1)); echo $n > {d}/counter\n\
         printf '{{\"value\": %s}}\\n' \"$(sed -n \"${{n}}p\" {d}/values)\"\n"
    );
    let path = dir.join("bptool");
    // A new file renamed over the old one: the board never runs a half-written tool.
    let tmp = dir.join("bptool.new");
    std::fs::write(&tmp, script).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

/// One night's apply: the tool's three measured runs print around `base`.
fn night(lab: &Lab, dir: &Path, run: usize, base: f64) {
    let mean = base * (1.0 + JITTER[run % JITTER.len()]);
    let values: Vec<String> = [mean * 0.99, mean, mean * 1.01]
        .iter()
        .map(|v| format!("{v:.6}"))
        .collect();
    std::fs::write(dir.join("values"), values.join("\n") + "\n").unwrap();
    std::fs::write(dir.join("counter"), "0\n").unwrap();
    let mut args = vec!["apply", "--no-report"];
    if run > 0 {
        args.extend(["--redo", "test=bptool"]);
    }
    args.push("scenarios/nightly.toml");
    let out = bp(&lab.root, &args);
    assert!(out.status.success(), "night {run}: {}", text(&out));
}

#[test]
fn a_board_fact_that_moved_at_a_nightly_run_is_named_at_its_change_point() {
    let Some(lab) = Lab::up(1) else { return };
    let dir = lab.root.join("tool");
    std::fs::create_dir_all(&dir).unwrap();
    install_tool(&dir, "1.0");
    let tool = dir.join("bptool").display().to_string();
    let recipe = format!(
        "description = \"the tool's figure; its version a fact\"\nuses_storage = false\n\
         [run]\ncommand = \"{tool} run\"\nparse = \"json\"\n\
         [metrics]\nvalue = {{ from = \"value\", unit = \"s\", better = \"lower\" }}\n\
         [facts]\nbptool = \"{tool} --version\"\n"
    );
    lab.project()
        .file("pipeline/bptool.toml", &recipe)
        .scenario(
            "nightly",
            &format!(
                "title = \"nightly\"\n[images.installed]\ninstalled = true\n[matrix]\n\
                 image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"bptool\"]\n\
                 [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\n\
                 runs = {{ min = 3, max = 3 }}\n",
                lab.board(0).name
            ),
        );
    // Five nights on tool 1.0; then it is upgraded, and its figure is half again.
    for run in 0..5 {
        night(&lab, &dir, run, 1.0);
    }
    install_tool(&dir, "2.0");
    for run in 5..8 {
        night(&lab, &dir, run, 1.5);
    }

    // One cell all along, its facts kept run by run.
    let results = lab.root.join("results");
    let cells: Vec<_> = std::fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("cell.json").is_file())
        .collect();
    assert_eq!(cells.len(), 1, "{cells:?}");
    assert_eq!(
        std::fs::read_dir(cells[0].join("facts")).unwrap().count(),
        8
    );

    let out = bp(&lab.root, &["history", "--json", "scenarios/nightly.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("history --json is JSON: {e}\n{}", text(&out)));
    let h = &doc["scenarios"][0];
    assert_eq!(h["runs"].as_array().unwrap().len(), 8, "{doc}");
    let series = h["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{doc}");
    assert_eq!(series[0]["points"].as_array().unwrap().len(), 8, "{doc}");
    let changes = series[0]["changes"].as_array().unwrap();
    // Exactly one change, at the sixth night (`point` indexes the points from 0).
    let at: Vec<u64> = changes
        .iter()
        .map(|c| c["point"].as_u64().unwrap())
        .collect();
    assert_eq!(at, [5], "{doc}");
    let c = &changes[0];
    assert_eq!(c["direction"], "worse", "{doc}");
    assert_eq!(c["session"], h["runs"][5]["session"], "{doc}");
    assert_eq!(c["before_session"], h["runs"][4]["session"], "{doc}");
    let tool_fact = c["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == "facts.tools.bptool")
        .unwrap_or_else(|| panic!("the tool's version is not among the change's facts: {doc}"));
    assert_eq!(tool_fact["before"], "bptool 1.0", "{doc}");
    assert_eq!(tool_fact["after"], "bptool 2.0", "{doc}");
    // The same cell on both sides: no key, input or benchpipe moved.
    for f in c["facts"].as_array().unwrap() {
        let name = f["name"].as_str().unwrap();
        assert!(
            name.starts_with("facts."),
            "{name} moved within one cell: {doc}"
        );
    }
}
