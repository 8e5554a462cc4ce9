//! Integration tests: a cluster's cells run by the one cell runner a board's walk uses,
//! on lab boards: its runs raise the recipe's own flags, its `before_run` commands run
//! before every run, and its measured runs are taken in the order `plan --json` shows.

use std::path::Path;

use serde_json::Value;

use crate::lab::{Lab, bp, text};

/// A recipe whose every run on the control member says how many `before_run` marks
/// its member holds and whether its `after = "services"` setup ran, and whose first
/// measured run reports an error (`errors` raises `probe-errors`).
const PROBE: &str = r#"
description = "test recipe: before_run marks counted by the run, an error on run 1"
uses_storage = false

[[services]]
name = "idle"
on = "members"
command = "exec sleep 600"

[[setup]]
on = "members"
after = "services"
command = "echo up > {{ workdir }}/after-{{ cell }}"

[[before_run]]
on = "members"
command = "echo x >> {{ workdir }}/before-{{ cell }}"

[run]
on = "board"
timeout = "1m"
parse = "json"
command = '''
b=$(cat {{ workdir }}/before-{{ cell }} 2>/dev/null | wc -l)
a=$(cat {{ workdir }}/after-{{ cell }} 2>/dev/null | wc -l)
printf '{"value": 1, "before": %s, "after": %s, "errors": %s}\n' "$b" "$a" "{% if run == 1 %}1{% else %}0{% endif %}"
'''

[[teardown]]
on = "members"
command = "rm -f {{ workdir }}/before-{{ cell }} {{ workdir }}/after-{{ cell }}"

[metrics]
value = { label = "value", from = "value", unit = "x", better = "higher", primary = true }
before = { label = "before_run marks", from = "before", unit = "marks", better = "higher" }
after = { label = "after-services setup", from = "after", unit = "lines", better = "higher" }
errors = { label = "errors", from = "errors", unit = "errors", better = "lower", flag = "probe-errors" }
"#;

/// A two-member cluster with a deploy that does nothing, and two probe tests whose
/// cells take their runs in turns.
fn workspace(lab: &Lab) -> String {
    let (b1, b2) = (&lab.board(0).name, &lab.board(1).name);
    let scenario = format!(
        r#"
title = "a cluster's cells through the one cell runner"

[images.installed]
installed = true

[clusters.lab-cx]
members = ["{b1}", "{b2}"]
endpoint = {{ board = "{b1}" }}

[[clusters.lab-cx.deploy]]
on = "{b1}"
command = "true"

[[clusters.lab-cx.teardown]]
on = "{b1}"
command = "true"

[matrix]
image = ["installed"]
board = ["lab-cx"]
test = ["probe-a", "probe-b"]

[method]
cooldown = "0s"
order = "interleaved"
warmup = {{ runs = 0 }}
runs = {{ min = 3, max = 3 }}
"#
    );
    lab.project()
        .file("pipeline/probe-a.toml", PROBE)
        .file("pipeline/probe-b.toml", PROBE)
        .scenario("cx", &scenario);
    "scenarios/cx.toml".to_string()
}

/// `(key, samples)` of every stored cell.
fn stored(root: &Path) -> Vec<(String, Vec<Value>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let Ok(cell) = std::fs::read_to_string(e.path().join("cell.json")) else {
            continue;
        };
        let cell: Value = serde_json::from_str(&cell).unwrap();
        let samples = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        let samples = samples
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        out.push((cell["key"].as_str().unwrap().to_string(), samples));
    }
    out
}

/// `(key, samples)` of each stored cell.
type Cells = Vec<(String, Vec<Value>)>;

/// The cluster's plan (`plan --json`) and its apply, on a fresh lab.
fn plan_and_apply() -> Option<(Lab, Value, Cells)> {
    let lab = Lab::up(2)?;
    let file = workspace(&lab);
    let plan = bp(&lab.root, &["plan", "--json", &file]);
    assert!(plan.status.success(), "{}", text(&plan));
    let plan: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let out = bp(&lab.root, &["apply", &file]);
    assert!(out.status.success(), "{}", text(&out));
    let cells = stored(&lab.root);
    assert_eq!(cells.len(), 2, "{cells:?}");
    Some((lab, plan, cells))
}

/// A cluster's runs are flagged by their recipe's `metric_flags` (as http-load's
/// `http-errors`), its `before_run` commands run before every run, on every member of
/// their side (the run counts the marks they left), and its `after = "services"` setup
/// is that one's commands.
#[test]
fn a_cluster_run_raises_its_recipes_flag_and_runs_before_run_first() {
    let Some((_lab, _plan, cells)) = plan_and_apply() else {
        return;
    };
    for (key, samples) in &cells {
        let measured: Vec<&Value> = samples.iter().filter(|s| s["kind"] == "measured").collect();
        assert_eq!(measured.len(), 3, "{key}: {samples:?}");
        for s in measured {
            let index = s["seq"].as_u64().unwrap();
            let flags: Vec<&str> = s["flags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f.as_str().unwrap())
                .collect();
            let errors = s["metrics"]["errors"].as_f64().unwrap();
            assert_eq!(
                flags.contains(&"probe-errors"),
                errors > 0.0,
                "{key}: the recipe's flag, raised exactly on the run with errors: {s}"
            );
            assert_eq!(errors > 0.0, index == 1, "{key}: {s}");
            assert_eq!(
                s["metrics"]["after"], 1.0,
                "{key}: the after-services setup: {s}"
            );
            // before_run ran before this run and every one before it.
            assert_eq!(
                s["metrics"]["before"].as_f64().unwrap(),
                index as f64,
                "{key}: before_run marks before run {index}: {s}"
            );
        }
    }
}

/// The cluster's measured runs, in the order its walk took them (`board_seq`), are the
/// ones `plan --json`'s `measure` steps give: their cells in turns, in the step's
/// order, each until its runs are taken.
#[test]
fn a_cluster_walk_takes_its_runs_in_plan_json_order() {
    let Some((_lab, plan, cells)) = plan_and_apply() else {
        return;
    };
    let walk = plan["schedule"]["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["board"] == "lab-cx")
        .unwrap_or_else(|| panic!("no cluster walk: {plan}"));
    let runs: std::collections::BTreeMap<&str, usize> = cells
        .iter()
        .map(|(k, s)| {
            let n = s.iter().filter(|s| s["kind"] == "measured").count();
            (k.as_str(), n)
        })
        .collect();
    let mut planned: Vec<(String, &str)> = Vec::new();
    for step in walk["steps"].as_array().unwrap() {
        if step["action"] != "measure" {
            continue;
        }
        let keys: Vec<&str> = step["cells"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        let order = step["order"].as_str().unwrap();
        let mut left: Vec<usize> = keys.iter().map(|k| runs[k]).collect();
        while left.iter().any(|n| *n > 0) {
            for (k, n) in keys.iter().zip(left.iter_mut()) {
                if *n > 0 {
                    *n -= 1;
                    planned.push((k.to_string(), order));
                }
            }
        }
    }
    assert_eq!(
        planned.len(),
        6,
        "two cells of three runs in one measure step: {plan}"
    );
    let mut taken: Vec<(u64, String, String)> = cells
        .iter()
        .flat_map(|(k, s)| {
            s.iter().filter(|s| s["kind"] == "measured").map(move |s| {
                (
                    s["board_seq"].as_u64().unwrap(),
                    k.clone(),
                    s["order"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    taken.sort();
    let taken: Vec<(String, &str)> = taken
        .iter()
        .map(|(_, k, o)| (k.clone(), o.as_str()))
        .collect();
    assert_eq!(taken, planned, "runs as taken against plan --json's");
}
