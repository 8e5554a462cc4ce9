//! `benchpipe history` on a store of several applies of a local board: a recipe prints
//! the values the test writes before each apply (`--redo` makes each apply a new run of
//! the same cell), so a regression starts at a known run; `--json`, and
//! `--fail-on regression` both ways.

use crate::spine::{Project, text};

/// The runs' base values: six at 1.0, a regression to 1.5 at the seventh (a run's
/// three measured values jitter by 1%, its mean by up to 1%).
const JITTER: [f64; 9] = [0.0, 0.01, -0.008, 0.004, -0.003, 0.006, 0.0, -0.005, 0.007];

/// A project whose `stepped` test prints, run by run, the lines of `values`.
fn project() -> Project {
    let p = Project::local("history");
    let dir = p.dir.display().to_string();
    let recipe = format!(
        "description = \"prints the next value the test wrote\"\nuses_storage = false\n\
         [run]\ncommand = '''n=$(cat {dir}/counter); n=$((n+1)); echo $n > {dir}/counter; \
         v=$(sed -n \"${{n}}p\" {dir}/values); echo \"{{\\\"value\\\": $v}}\"'''\n\
         parse = \"json\"\n[metrics]\nvalue = {{ from = \"value\", unit = \"s\", better = \"lower\" }}\n"
    );
    p.file("pipeline/stepped.toml", &recipe)
        .local_scenario("s", &["stepped"], 3, "")
}

/// One apply whose measured runs print around `base` (the warm-up first).
fn apply(p: &Project, run: usize, base: f64) {
    let mean = base * (1.0 + JITTER[run % JITTER.len()]);
    let values: Vec<String> = [mean, mean * 0.99, mean, mean * 1.01]
        .iter()
        .map(|v| format!("{v:.6}"))
        .collect();
    std::fs::write(p.dir.join("values"), values.join("\n") + "\n").unwrap();
    std::fs::write(p.dir.join("counter"), "0\n").unwrap();
    let mut args = vec!["apply", "--no-report"];
    if run > 0 {
        args.extend(["--redo", "test=stepped"]);
    }
    args.push("scenarios/s.toml");
    let out = p.bp(&args);
    assert!(out.status.success(), "apply {run}: {}", text(&out));
}

fn history_json(p: &Project, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let mut args = vec!["history", "--json", "scenarios/s.toml"];
    args.extend(extra);
    let out = p.bp(&args);
    let doc = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("history --json is JSON: {e}\n{}", text(&out)));
    (out.status.code(), doc)
}

/// The points (run numbers from 1) where the one series changes.
fn changes(doc: &serde_json::Value) -> Vec<u64> {
    let series = doc["scenarios"][0]["series"].as_array().expect("series");
    assert_eq!(series.len(), 1, "{doc}");
    series[0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["point"].as_u64().unwrap() + 1)
        .collect()
}

#[test]
fn history_finds_the_run_a_regression_starts_and_fails_on_it_only_then() {
    let p = project();
    for run in 0..6 {
        apply(&p, run, 1.0);
    }
    let (code, doc) = history_json(&p, &["--fail-on", "regression"]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(doc["format"], 1, "{doc}");
    let series = &doc["scenarios"][0]["series"][0];
    assert_eq!(series["points"].as_array().unwrap().len(), 6, "{doc}");
    assert_eq!(series["better"], "lower", "{doc}");
    assert!(series["points"][0]["ci_low"].is_number(), "{doc}");
    assert_eq!(changes(&doc), Vec::<u64>::new(), "{doc}");
    assert_eq!(doc["findings"], serde_json::json!([]), "{doc}");

    // Tonight's run regressed by half: a change at run 7, a finding, exit 3.
    apply(&p, 6, 1.5);
    let (code, doc) = history_json(&p, &["--fail-on", "regression"]);
    assert_eq!(code, Some(3), "{doc}");
    assert_eq!(changes(&doc), [7], "{doc}");
    let change = &doc["scenarios"][0]["series"][0]["changes"][0];
    assert_eq!(change["direction"], "worse", "{doc}");
    assert!(change["ratio"].as_f64().unwrap() > 1.4, "{doc}");
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{doc}");
    assert_eq!(findings[0]["kind"], "regression", "{doc}");
    assert_eq!(findings[0]["metric"], "value", "{doc}");
    // The text says where, and --findings writes the same finding.
    let out = p.bp(&[
        "history",
        "--metric",
        "stepped.value",
        "--fail-on",
        "regression",
        "--findings",
        "findings.json",
        "scenarios/s.toml",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("change at run 7"), "{}", text(&out));
    assert!(
        shown.contains("Regressions the newest run starts"),
        "{}",
        text(&out)
    );
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.dir.join("findings.json")).unwrap()).unwrap();
    assert_eq!(written["findings"], doc["findings"], "{written}");

    // Two more runs at the new level: the change stays at run 7, none elsewhere, and
    // the newest run starts nothing.
    apply(&p, 7, 1.5);
    apply(&p, 8, 1.5);
    let (code, doc) = history_json(&p, &["--fail-on", "regression"]);
    assert_eq!(code, Some(0), "{doc}");
    assert_eq!(changes(&doc), [7], "{doc}");
    assert_eq!(
        doc["scenarios"][0]["runs"].as_array().unwrap().len(),
        9,
        "{doc}"
    );
    let change = &doc["scenarios"][0]["series"][0]["changes"][0];
    assert_eq!(change["basis"], "runs", "{doc}");
    assert_eq!(change["verdict"], "worse", "{doc}");
    assert!(change["ci_low_pct"].as_f64().unwrap() > 30.0, "{doc}");

    // A metric no test has is refused.
    let out = p.bp(&["history", "--metric", "nope", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
