//! Integration tests: the burn-in recipe (pipeline/burn-in.toml): stress-ng's metrics
//! parsed from its real output, and a short burn-in on a lab board keeping its
//! temperature and clock series and drawing it in the HTML report.

use crate::lab::{Lab, bp, text};
use crate::repo;

/// The regex parser of the shipped recipe on stress-ng's real stderr: the `cpu` row's
/// bogo-ops/s, both columns; stdout (empty for stress-ng) plays no part.
#[test]
fn burn_in_reads_bogo_ops_per_second_from_real_stress_ng_output() {
    let recipes = benchpipe::config::load_recipes(repo()).expect("the shipped recipes load");
    let r = &recipes[&"burn-in".into()];
    assert!(r.series, "burn-in keeps its series");
    let stderr = std::fs::read_to_string(
        repo().join("tests/data/tool-outputs/stress-ng-0.15.06-cpu-metrics-brief.stderr"),
    )
    .unwrap();
    let m = benchpipe::bench::metrics(r, "", &stderr).unwrap();
    assert_eq!(m["bogo_ops_per_s"], 893.29);
    assert_eq!(m["bogo_ops_per_s_cpu"], 1954.36);
    // A run that printed no metrics table is a parse failure, never a number.
    let cut: String = stderr
        .lines()
        .filter(|l| !l.contains("metrc"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(benchpipe::bench::metrics(r, "", &cut).is_err());
}

#[test]
fn a_short_burn_in_on_a_lab_board_stores_a_series_and_draws_it() {
    if std::process::Command::new("sh")
        .args(["-c", "command -v stress-ng"])
        .output()
        .map_or(true, |o| !o.status.success())
    {
        crate::cannot_run(
            "a_short_burn_in_on_a_lab_board_stores_a_series_and_draws_it",
            "stress-ng is not installed (apt-get install stress-ng)",
        );
        return;
    }
    let Some(lab) = Lab::up(1) else { return };
    let root = lab.root.clone();
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::copy(
        repo().join("pipeline/burn-in.toml"),
        root.join("pipeline/burn-in.toml"),
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"burn-in\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"burn-in\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n\
             [params.burn-in]\nseconds = 3\n",
            lab.board(0).name
        ),
    )
    .unwrap();
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let mut samples = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        if e.file_name().to_string_lossy().contains("burn-in") {
            let t = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
            samples.extend(
                t.lines()
                    .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()),
            );
        }
    }
    assert_eq!(samples.len(), 1, "{}", text(&out));
    let s = &samples[0];
    let v = s["metrics"]["bogo_ops_per_s"].as_f64().unwrap();
    assert!(v.is_finite() && v > 0.0, "bogo-ops/s = {v}");
    let series = s["telemetry"]["series"]
        .as_array()
        .expect("a series is stored");
    assert!(series.len() >= 2, "{s}");
    assert!(series.len() <= 240);
    let ts: Vec<f64> = series.iter().map(|p| p["t"].as_f64().unwrap()).collect();
    assert!(
        ts.windows(2).all(|w| w[0] <= w[1]) && ts[0] == 0.0,
        "{ts:?}"
    );
    // Temperature and clock are numbers where the board has them, null where not (the
    // lab's virtual machine may have neither), and the metrics follow.
    for p in series {
        for k in ["temp_c", "freq_mhz"] {
            assert!(
                p[k].is_null() || p[k].as_f64().is_some_and(f64::is_finite),
                "{p}"
            );
        }
    }
    let has_temp = series.iter().any(|p| p["temp_c"].is_number());
    assert_eq!(s["metrics"]["temp_max_c"].is_number(), has_temp, "{s}");
    let report = bp(&root, &["report", "scenarios/s.toml"]);
    assert!(report.status.success(), "{}", text(&report));
    let html = std::fs::read_to_string(root.join("reports/s/index.html")).unwrap();
    assert!(
        html.contains("temperature and clock over the last run"),
        "no series chart"
    );
    assert!(html.contains("CPU clock (MHz)"));
}
