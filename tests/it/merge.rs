//! Integration tests: two controllers' stores (`apply --shard` of each half into its
//! own store) merged into one, whose plan is complete and whose report has every cell
//! a single store's has; a store merged twice changes nothing; a cell both hold with
//! different runs is merged run by run, unless a redo marks it: then a conflict that
//! keeps the destination's. On the lab, two controllers at once over SSH.

use serde_json::Value;

use crate::spine::{Project, text};

fn two_boards(tag: &str) -> Project {
    Project::local(tag)
        .local_board("there", "board-work-there")
        .local_scenario("s", &["sleepy"], 1, "")
        .edit(
            "scenarios/s.toml",
            "board = [\"here\"]",
            "board = [\"here\", \"there\"]",
        )
}

fn complete(p: &Project, store: &str) -> u64 {
    let out = p.bp(&["plan", "--json", "--store", store, "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["summary"]["complete"].as_u64().unwrap()
}

#[test]
fn two_shards_stores_merge_into_one_complete_store_and_conflicts_keep_the_destination() {
    let p = two_boards("merge");
    for (k, store) in [("1/2", "ctl-1"), ("2/2", "ctl-2")] {
        let out = p.bp(&[
            "apply",
            "--shard",
            k,
            "--store",
            store,
            "--no-report",
            "scenarios/s.toml",
        ]);
        assert!(out.status.success(), "{k}: {}", text(&out));
        assert_eq!(complete(&p, store), 1);
    }
    let out = p.bp(&["store", "merge", "ctl-1", "ctl-2", "--into", "results"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("ctl-1: ") && said.contains("0 conflict(s)"),
        "{said}"
    );
    assert_eq!(complete(&p, "results"), 2, "{said}");
    // Each controller's apply is a run of the merged store, and every sample names one.
    let runs: Vec<String> = std::fs::read_dir(p.dir.join("results/runs"))
        .unwrap()
        .flatten()
        .map(|e| {
            e.file_name()
                .to_string_lossy()
                .trim_end_matches(".json")
                .to_string()
        })
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    for s in p.samples("sleepy") {
        assert!(
            runs.contains(&s["session"].as_str().unwrap().to_string()),
            "{s}"
        );
    }
    let report = p.bp(&["report", "scenarios/s.toml"]);
    assert!(report.status.success(), "{}", text(&report));
    let json: Value =
        serde_json::from_slice(&std::fs::read(p.dir.join("reports/s/report.json")).unwrap())
            .unwrap();
    // Both boards' rows, each with its measured run: a single store's report.
    let rows = json["tables"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{json}");
    for row in rows {
        assert_eq!(row["values"][0]["n"], 1, "{row}");
    }
    // Again: nothing new, nothing conflicting.
    let again = p.bp(&["store", "merge", "ctl-1", "ctl-2", "--into", "results"]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("0 copied"), "{}", text(&again));
    // ctl-1's cell measured again (--redo): both hold it, with different runs.
    let redo = p.bp(&[
        "apply",
        "--shard",
        "1/2",
        "--store",
        "ctl-1",
        "--no-report",
        "--redo",
        "board=here",
        "scenarios/s.toml",
    ]);
    assert!(redo.status.success(), "{}", text(&redo));
    let before = std::fs::read_dir(p.dir.join("results"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with("-sleepy-here"))
        .map(|e| std::fs::read(e.path().join("samples.jsonl")).unwrap())
        .unwrap();
    let conflict = p.bp(&["store", "merge", "ctl-1", "--into", "results"]);
    let said = text(&conflict);
    assert_eq!(conflict.status.code(), Some(1), "{said}");
    assert!(
        said.contains("conflict: cell ")
            && said.contains("-sleepy-here: both stores hold it with different runs, and one of them marked it for a redo"),
        "{said}"
    );
    let after = std::fs::read_dir(p.dir.join("results"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with("-sleepy-here"))
        .map(|e| std::fs::read(e.path().join("samples.jsonl")).unwrap())
        .unwrap();
    assert_eq!(before, after, "the destination's cell was overwritten");
}

fn cell_dir(p: &Project, store: &str) -> std::path::PathBuf {
    std::fs::read_dir(p.dir.join(store))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with("-sleepy-here"))
        .map(|e| e.path())
        .unwrap()
}

fn samples(p: &Project, store: &str) -> Vec<Value> {
    std::fs::read_to_string(cell_dir(p, store).join("samples.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Two controllers measured one cell, each run its own (one store a copy of the other
/// whose measured run was lost, then measured again): the merge appends the runs the
/// destination lacks, with their logs, numbered after its own; merged again, nothing.
#[test]
fn a_cell_both_stores_hold_with_different_runs_merges_run_by_run() {
    let p = Project::local("merge-runs").local_scenario("s", &["sleepy"], 1, "");
    let apply = |store: &str| {
        let out = p.bp(&["apply", "--store", store, "--no-report", "scenarios/s.toml"]);
        assert!(out.status.success(), "{store}: {}", text(&out));
    };
    apply("ctl-1");
    let copy = std::process::Command::new("cp")
        .args(["-a", "ctl-1", "ctl-2"])
        .current_dir(&p.dir)
        .status()
        .unwrap();
    assert!(copy.success());
    let kept: Vec<String> = samples(&p, "ctl-2")
        .iter()
        .filter(|s| s["kind"] != "measured")
        .map(ToString::to_string)
        .collect();
    std::fs::write(
        cell_dir(&p, "ctl-2").join("samples.jsonl"),
        kept.join("\n") + "\n",
    )
    .unwrap();
    apply("ctl-2");
    let ours = samples(&p, "ctl-1");
    let theirs = samples(&p, "ctl-2");
    let measured = |v: &[Value]| v.iter().filter(|s| s["kind"] == "measured").count();
    assert_eq!((measured(&ours), measured(&theirs)), (1, 1));

    let out = p.bp(&["store", "merge", "ctl-2", "--into", "ctl-1"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 merged run by run"), "{said}");
    // ctl-2's own apply's record copied; the first apply's record and the board's
    // (which differs only by the apply that wrote it) alike.
    assert!(
        said.contains("1 copied, 1 merged run by run, 2 already alike, 0 conflict(s)"),
        "{said}"
    );
    let new = theirs.len() - kept.len();
    assert!(
        said.contains(&format!("-sleepy-here: {new} run(s) added")),
        "{said}"
    );
    let merged = samples(&p, "ctl-1");
    assert_eq!(merged.len(), ours.len() + new, "{merged:?}");
    assert_eq!(measured(&merged), 2);
    for (i, s) in merged.iter().enumerate() {
        assert_eq!(s["seq"].as_u64(), Some(i as u64 + 1), "{s}");
        let log = cell_dir(&p, "ctl-1").join(s["log"].as_str().unwrap());
        assert!(log.is_file(), "{s}");
    }
    // The added runs are theirs, values and times, in their order.
    let strip = |s: &Value| {
        let mut s = s.clone();
        s.as_object_mut().unwrap().remove("seq");
        s.as_object_mut().unwrap().remove("log");
        s
    };
    let added: Vec<Value> = merged[ours.len()..].iter().map(strip).collect();
    let from: Vec<Value> = theirs[kept.len()..].iter().map(strip).collect();
    assert_eq!(added, from);
    let again = p.bp(&["store", "merge", "ctl-2", "--into", "ctl-1"]);
    let said = text(&again);
    assert!(again.status.success(), "{said}");
    assert!(
        said.contains("0 copied, 0 merged run by run, 4 already alike, 0 conflict(s)"),
        "{said}"
    );
    assert_eq!(samples(&p, "ctl-1").len(), merged.len());
}

const NAP: &str = r#"description = "waits on the board, then prints a number"
uses_storage = false
[run]
command = "sleep 0.2; echo '{\"value\": 1}'"
parse = "json"
[metrics]
value = { from = "value", unit = "x", better = "higher" }
"#;

/// A report's structure without its numbers: each table's title and, per row, its
/// labels and each value's run count.
fn structure(p: &Project, out: &str) -> Value {
    let json: Value =
        serde_json::from_slice(&std::fs::read(p.dir.join(format!("{out}/s/report.json"))).unwrap())
            .unwrap();
    let tables = json["tables"].as_array().unwrap();
    Value::Array(
        tables
            .iter()
            .map(|t| {
                let rows: Vec<Value> = t["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| {
                        let mut r = r.clone();
                        let ns: Vec<Value> = r["values"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|v| v["n"].clone())
                            .collect();
                        r["values"] = Value::Array(ns);
                        r
                    })
                    .collect();
                serde_json::json!({ "title": t["title"], "rows": rows })
            })
            .collect(),
    )
}

/// Two controllers at once on the lab, each applying its shard into a store of its own
/// over SSH; their stores merged give the report a single controller's store gives,
/// number for number of runs, row for row.
#[test]
fn two_controllers_on_the_lab_merge_into_a_single_controllers_report() {
    let Some(lab) = crate::lab::Lab::up(4) else {
        return;
    };
    let p = lab.project_on_every_board(&[("nap", NAP)], &["nap"], 2);
    let shards: Vec<_> = [("1/2", "ctl-1"), ("2/2", "ctl-2")]
        .iter()
        .map(|(k, store)| {
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
                .args(crate::scripted(&[
                    "apply",
                    "--shard",
                    k,
                    "--store",
                    store,
                    "--no-report",
                    "scenarios/s.toml",
                ]))
                .current_dir(&p.dir)
                .env("NO_COLOR", "1")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            (*k, child)
        })
        .collect();
    for (k, child) in shards {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{k}: {}", text(&out));
    }
    let (one, two) = (complete(&p, "ctl-1"), complete(&p, "ctl-2"));
    assert!(one > 0 && two > 0 && one + two == 4, "{one} + {two}");
    let merged = p.bp(&["store", "merge", "ctl-1", "ctl-2", "--into", "results"]);
    assert!(merged.status.success(), "{}", text(&merged));
    assert_eq!(complete(&p, "results"), 4);

    let single = p.bp(&[
        "apply",
        "--store",
        "single",
        "--no-report",
        "scenarios/s.toml",
    ]);
    assert!(single.status.success(), "{}", text(&single));
    for (store, out) in [("results", "reports"), ("single", "reports-single")] {
        let r = p.bp(&["report", "--store", store, "--out", out, "scenarios/s.toml"]);
        assert!(r.status.success(), "{}", text(&r));
    }
    let (merged, single) = (structure(&p, "reports"), structure(&p, "reports-single"));
    assert_eq!(merged, single);
    assert_eq!(
        merged[0]["rows"].as_array().map(Vec::len),
        Some(4),
        "{merged}"
    );
}
