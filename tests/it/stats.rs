//! Integration tests: stats. Every expected number comes from tests/data/stats/reference.json,
//! computed by scipy outside the project (how: the file's `note` and README.md).

use std::path::PathBuf;

use benchpipe::model::Better;
use benchpipe::stats::{
    self, OutlierClass, RunDecision, RunRule, StatsError, StopReason, Verdict, compare, ministat,
    outliers, precision_reached, summarize, welch,
};
use serde_json::Value;

/// scipy and statrs agree to about this relative precision.
const REL: f64 = 1e-9;

fn reference() -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/stats/reference.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("reference.json is JSON")
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("reference field {key} missing in {v}"))
}

fn values(v: &Value) -> Vec<f64> {
    v["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn pair(v: &Value) -> (f64, f64) {
    (v[0].as_f64().expect("low"), v[1].as_f64().expect("high"))
}

#[track_caller]
fn close(got: f64, want: f64, what: &str) {
    let scale = got.abs().max(want.abs());
    assert!(
        (got - want).abs() <= REL * scale || (got - want).abs() < 1e-300,
        "{what}: got {got:e}, scipy {want:e} (relative error {:e})",
        (got - want).abs() / scale
    );
}

fn datasets(reference: &Value) -> Vec<(String, Vec<f64>, &Value)> {
    reference["datasets"]
        .as_array()
        .expect("datasets")
        .iter()
        .map(|d| (d["name"].as_str().expect("name").to_string(), values(d), d))
        .collect()
}

fn dataset(reference: &Value, name: &str) -> Vec<f64> {
    datasets(reference)
        .into_iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, v, _)| v)
        .unwrap_or_else(|| panic!("no dataset {name}"))
}

#[test]
fn reference_covers_the_hard_cases() {
    let reference = reference();
    let sets = datasets(&reference);
    assert!(sets.len() >= 10);
    let sizes: Vec<usize> = sets.iter().map(|(_, v, _)| v.len()).collect();
    assert!(sizes.contains(&2) && sizes.contains(&3) && sizes.iter().any(|&n| n >= 300));
    assert!(
        sets.iter().any(|(_, v, _)| v.iter().all(|x| *x == v[0])),
        "all-equal set"
    );
}

#[test]
fn summaries_match_scipy() {
    let reference = reference();
    let confidences: Vec<f64> = reference["confidences"]
        .as_array()
        .expect("confidences")
        .iter()
        .map(|c| c.as_f64().expect("number"))
        .collect();
    for (name, xs, want) in datasets(&reference) {
        for &c in &confidences {
            let s = summarize(&xs, c).unwrap_or_else(|| panic!("{name}: no summary"));
            assert_eq!(s.n as f64, num(want, "n"), "{name}");
            close(s.mean, num(want, "mean"), &format!("{name} mean"));
            if num(want, "sd") == 0.0 {
                assert_eq!(s.sd, 0.0, "{name} sd");
            } else {
                close(s.sd, num(want, "sd"), &format!("{name} sd"));
            }
            close(s.median, num(want, "median"), &format!("{name} median"));
            close(s.min, num(want, "min"), &format!("{name} min"));
            close(s.max, num(want, "max"), &format!("{name} max"));
            let (lo, hi) = s.ci().unwrap_or_else(|| panic!("{name}: no CI"));
            let (want_lo, want_hi) = pair(&want["ci"][c.to_string()]);
            close(lo, want_lo, &format!("{name} CI low at {c}"));
            close(hi, want_hi, &format!("{name} CI high at {c}"));
        }
        let sorted = {
            let mut v = xs.clone();
            v.sort_by(f64::total_cmp);
            v
        };
        let q1 = stats::quantile(&sorted, 0.25).expect("q1");
        let q3 = stats::quantile(&sorted, 0.75).expect("q3");
        close(q1, num(want, "q1"), &format!("{name} q1"));
        close(q3, num(want, "q3"), &format!("{name} q3"));
        let mad = stats::mad(&xs).expect("mad");
        if num(want, "mad") == 0.0 {
            assert_eq!(mad, 0.0, "{name} mad");
        } else {
            close(mad, num(want, "mad"), &format!("{name} mad"));
        }
    }
}

#[test]
fn welch_and_compare_match_scipy() {
    let reference = reference();
    for p in reference["pairs"].as_array().expect("pairs") {
        let (b, c) = (
            p["baseline"].as_str().expect("b"),
            p["candidate"].as_str().expect("c"),
        );
        let label = format!("{c} vs {b}");
        let (base, cand) = (dataset(&reference, b), dataset(&reference, c));
        let w = welch(&cand, &base).unwrap_or_else(|| panic!("{label}: no Welch"));
        close(w.t, num(p, "t"), &format!("{label} t"));
        close(w.df, num(p, "df"), &format!("{label} df"));
        close(w.p, num(p, "p"), &format!("{label} p"));
        let swapped = welch(&base, &cand).expect("swapped");
        assert_eq!((swapped.t, swapped.p), (-w.t, w.p), "{label}: symmetric");
        for (conf, ci) in p["diff_pct_ci"].as_object().expect("diff_pct_ci") {
            let conf: f64 = conf.parse().expect("confidence key");
            let cmp = compare(&base, &cand, conf, 0.02, Better::Higher)
                .unwrap_or_else(|| panic!("{label}: no comparison"));
            close(
                cmp.diff_pct,
                num(p, "diff_pct"),
                &format!("{label} diff_pct"),
            );
            let (lo, hi) = pair(ci);
            close(
                cmp.ci_low_pct,
                lo,
                &format!("{label} diff CI low at {conf}"),
            );
            close(
                cmp.ci_high_pct,
                hi,
                &format!("{label} diff CI high at {conf}"),
            );
            let expect_significant = num(p, "p") < 1.0 - conf && num(p, "diff_pct").abs() > 2.0;
            assert_eq!(cmp.significant, expect_significant, "{label} at {conf}");
        }
    }
}

#[test]
fn verdicts_take_the_direction_into_account() {
    let reference = reference();
    let slower = dataset(&reference, "xz_real_a");
    let faster = dataset(&reference, "xz_real_b");
    // xz_real_b is about 1.9% faster: significant p, but inside the 2% noise band.
    let c = compare(&slower, &faster, 0.95, 0.02, Better::Lower).expect("comparable");
    assert!(c.welch.p < 0.05);
    assert_eq!(c.verdict, Verdict::NoSignificantDifference);
    let c = compare(&slower, &faster, 0.95, 0.01, Better::Lower).expect("comparable");
    assert_eq!(c.verdict, Verdict::Better);
    let c = compare(&slower, &faster, 0.95, 0.01, Better::Higher).expect("comparable");
    assert_eq!(c.verdict, Verdict::Worse);
    let (a, b) = (
        dataset(&reference, "fio_bw_a"),
        dataset(&reference, "fio_bw_b"),
    );
    let c = compare(&a, &b, 0.95, 0.02, Better::Higher).expect("comparable");
    assert_eq!(
        (c.verdict, c.verdict.to_string().as_str()),
        (Verdict::Worse, "worse")
    );
}

#[test]
fn zero_variance_on_both_sides() {
    let same = welch(&[5.0; 4], &[5.0; 3]).expect("enough samples");
    assert_eq!((same.t, same.p), (0.0, 1.0));
    let apart = welch(&[5.0; 4], &[6.0; 3]).expect("enough samples");
    assert_eq!((apart.t, apart.p), (f64::NEG_INFINITY, 0.0));
    let c = compare(&[5.0; 4], &[6.0; 3], 0.95, 0.02, Better::Higher).expect("comparable");
    assert_eq!(
        (c.diff_pct, c.ci_low_pct, c.ci_high_pct),
        (20.0, 20.0, 20.0)
    );
    assert_eq!(c.verdict, Verdict::Better);
}

/// Tukey's fences from scipy's quartiles, applied here independently of the library.
#[test]
fn outliers_agree_with_fences_from_reference_quartiles() {
    let reference = reference();
    for (name, xs, want) in datasets(&reference) {
        let (q1, q3) = (num(want, "q1"), num(want, "q3"));
        let iqr = q3 - q1;
        let found = outliers(&xs);
        for (i, &x) in xs.iter().enumerate() {
            let beyond = (q1 - x).max(x - q3).max(0.0);
            let tukey = if beyond > 3.0 * iqr {
                Some(OutlierClass::Severe)
            } else if beyond > 1.5 * iqr {
                Some(OutlierClass::Mild)
            } else {
                None
            };
            let got = found.iter().find(|o| o.index == i);
            assert_eq!(got.and_then(|o| o.tukey), tukey, "{name}[{i}] = {x}");
            if tukey.is_some() {
                assert_eq!(got.map(|o| o.value), Some(x));
            }
        }
    }
    let spiky = dataset(&reference, "with_outlier");
    let flagged: Vec<(usize, OutlierClass)> = outliers(&spiky)
        .iter()
        .map(|o| (o.index, o.class))
        .collect();
    assert_eq!(flagged, vec![(5, OutlierClass::Severe)]);
}

#[test]
fn precision_rule_matches_reference_intervals() {
    let reference = reference();
    for (name, xs, want) in datasets(&reference) {
        let (lo, hi) = pair(&want["ci"]["0.95"]);
        let rel = (hi - lo) / 2.0 / num(want, "mean").abs();
        for target in [0.001, 0.01, 0.02, 0.05, 0.2] {
            // Skip targets within rounding distance of the true relative width.
            if (rel - target).abs() < 1e-9 {
                continue;
            }
            assert_eq!(
                precision_reached(&xs, 0.95, target),
                rel <= target,
                "{name}: relative half-width {rel}, target {target}"
            );
        }
    }
}

#[test]
fn adaptive_rule_walks_a_sample_stream() {
    let reference = reference();
    let rule = RunRule {
        min: 3,
        max: 20,
        target: Some(0.02),
        confidence: 0.95,
    };
    let tight = dataset(&reference, "tight");
    let decisions: Vec<RunDecision> = (0..=tight.len())
        .map(|n| rule.decide(&tight[..n]))
        .collect();
    assert_eq!(decisions[2], RunDecision::Continue);
    assert_eq!(decisions[3], RunDecision::Stop(StopReason::TargetReached));
    let wide = dataset(&reference, "wide");
    assert_eq!(rule.decide(&wide), RunDecision::Continue);
    let short = RunRule { max: 5, ..rule };
    assert_eq!(
        short.decide(&wide),
        RunDecision::Stop(StopReason::MaxReached)
    );
}

fn lines_of(xs: &[f64]) -> String {
    xs.iter().map(|x| format!("{x}\n")).collect()
}

#[test]
fn ministat_json_reports_reference_values() {
    let reference = reference();
    let a = dataset(&reference, "fio_bw_a");
    let b = dataset(&reference, "fio_bw_b");
    let inputs = vec![
        (
            "A.txt".to_string(),
            format!("# fio randread B/s\n{}", lines_of(&a)),
        ),
        (
            "B.txt".to_string(),
            format!("\n{}  # last run\n", lines_of(&b).trim_end()),
        ),
    ];
    let out = ministat(&inputs, 0.95, true).expect("valid inputs");
    let doc: Value = serde_json::from_str(&out).expect("ministat --json is JSON");
    assert_eq!(doc["version"], 1);
    let want_a = &datasets(&reference)
        .into_iter()
        .find(|d| d.0 == "fio_bw_a")
        .expect("a")
        .2
        .clone();
    close(num(&doc["files"][0], "mean"), num(want_a, "mean"), "A mean");
    close(
        num(&doc["files"][0], "ci_low"),
        pair(&want_a["ci"]["0.95"]).0,
        "A CI low",
    );
    assert_eq!(doc["files"][1]["n"], 5);
    let want = reference["pairs"]
        .as_array()
        .expect("pairs")
        .iter()
        .find(|p| p["baseline"] == "fio_bw_a" && p["candidate"] == "fio_bw_b")
        .expect("pair in reference");
    let cmp = &doc["comparisons"][0];
    assert_eq!(
        (cmp["baseline"].as_str(), cmp["candidate"].as_str()),
        (Some("A.txt"), Some("B.txt"))
    );
    close(num(cmp, "p"), num(want, "p"), "p");
    close(num(cmp, "diff_pct"), num(want, "diff_pct"), "diff_pct");
    close(
        num(cmp, "ci_low_pct"),
        pair(&want["diff_pct_ci"]["0.95"]).0,
        "diff CI low",
    );
    assert_eq!(cmp["verdict"], "significant");
}

#[test]
fn ministat_text_is_aligned_and_says_the_verdict() {
    let reference = reference();
    let inputs: Vec<(String, String)> = ["tight", "wide", "n2"]
        .iter()
        .map(|n| (format!("{n}.txt"), lines_of(&dataset(&reference, n))))
        .chain([("one.txt".to_string(), "7\n".to_string())])
        .collect();
    let out = ministat(&inputs, 0.95, false).expect("valid inputs");
    let table: Vec<&str> = out.lines().take(5).collect();
    assert!(
        table[0].contains("N") && table[0].contains("95% CI of the mean"),
        "{out}"
    );
    // Right-aligned numeric columns end at the same character.
    let mean_end = |line: &str| line.find("  ").map(|_| line.len());
    assert!(table.iter().all(|l| mean_end(l).is_some()));
    assert!(table[4].contains("- (n < 2)"), "{out}");
    assert!(out.contains("wide.txt vs tight.txt:\n"), "{out}");
    assert!(out.contains("no significant difference"), "{out}");
    assert!(
        out.contains("n2.txt vs tight.txt:") && out.contains("  significant (p < 0.05 and outside"),
        "{out}"
    );
    assert!(
        out.contains("one.txt vs tight.txt:\n  not comparable: each file needs at least 2 values"),
        "{out}"
    );
}

#[test]
fn ministat_rejects_bad_lines_with_file_and_line() {
    let inputs = vec![
        ("A.txt".to_string(), "1.0\n2.0\n".to_string()),
        ("runs/B.txt".to_string(), "1.0\n\n# c\n1,5\n".to_string()),
    ];
    let err = ministat(&inputs, 0.95, false).expect_err("1,5 is not a number");
    assert!(
        matches!(&err, StatsError::NotANumber { file, line: 4, found } if file == "runs/B.txt" && found == "1,5"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "runs/B.txt:4: expected one number per line, found `1,5`"
    );
}

#[test]
fn the_stats_command_reads_files_and_exits_2_on_a_bad_line() {
    let dir = std::env::temp_dir().join(format!("bp-stats-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The seed's UASP table, 4K random read, as three runs each around its means.
    std::fs::write(dir.join("bot.txt"), "# without UASP\n14.2\n14.5\n14.53\n").unwrap();
    std::fs::write(
        dir.join("uasp.txt"),
        "20.4\n20.7 # a trailing comment\n20.67\n",
    )
    .unwrap();
    std::fs::write(dir.join("bad.txt"), "1.0\nfast\n").unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .arg("stats")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let out = run(&["bot.txt", "uasp.txt"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("difference +42.89%"), "{text}");
    assert!(text.contains("significant"), "{text}");

    let out = run(&["--confidence", "0.99", "--json", "bot.txt", "uasp.txt"]);
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["confidence"], 0.99);

    let out = run(&["bot.txt", "bad.txt"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.txt:2") && err.contains("fast"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
