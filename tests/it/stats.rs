//! Integration tests: stats. Every expected number comes from tests/data/stats/reference.json,
//! computed by scipy outside the project (how: the file's `note` and README.md).

use crate::scratch::Scratch;
use std::path::PathBuf;

use benchpipe::model::Better;
use benchpipe::stats::{
    self, MAX_RUNS_ESTIMATE, OutlierClass, RatioInterval, RunDecision, RunRule, RunsNeeded,
    StatsError, StopReason, Verdict, compare, compare_strata, ministat, outliers,
    precision_reached, runs_for_precision, runs_to_detect, summarize, welch,
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
        .map_or_else(|| panic!("no dataset {name}"), |(_, v, _)| v)
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
    let pairs = reference["pairs"].as_array().expect("pairs");
    let has = |f: &dyn Fn(&Value) -> bool| pairs.iter().any(f);
    assert!(
        has(&|p| p["baseline"] == p["candidate"]),
        "identical samples"
    );
    assert!(
        has(&|p| p["ratio_ci"]["0.95"]["kind"] == "outside"),
        "a mean near zero"
    );
    assert!(
        has(&|p| num(p, "ratio") > 0.0 && p["positive"] == false),
        "negative metrics"
    );
    assert!(
        has(&|p| p["ratio_ci"]["0.95"]["high"].is_null()
            && p["ratio_ci"]["0.95"]["kind"] == "interval"),
        "an interval cut at 0, unbounded above"
    );
    for verdict in ["significant", "equivalent", "inconclusive"] {
        assert!(
            has(&|p| p["runs_needed"]["0.95"]["verdict"] == verdict),
            "{verdict}"
        );
    }
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

/// The reference's value at `key`, None for JSON null.
fn opt(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// A ratio bound: relative agreement, or absolute near 0 (a cut at 0, a root near it).
#[track_caller]
fn close_bound(got: Option<f64>, want: Option<f64>, what: &str) {
    match (got, want) {
        (Some(g), Some(w)) if (g - w).abs() <= 1e-12 => {}
        (Some(g), Some(w)) => close(g, w, what),
        (None, None) => {}
        (g, w) => panic!("{what}: got {g:?}, reference {w:?}"),
    }
}

/// Checks a comparison against a reference entry (a pair or strata): Welch's t, df and
/// p, Fieller's set of the ratio, the verdict and the runs needed, at every confidence.
fn check_comparison(label: &str, want: &Value, at: impl Fn(f64) -> stats::Comparison) {
    for (conf, ci) in want["ratio_ci"].as_object().expect("ratio_ci") {
        let c: f64 = conf.parse().expect("confidence key");
        let cmp = at(c);
        close(cmp.welch.df, num(want, "df"), &format!("{label} df"));
        close(cmp.welch.p, num(want, "p"), &format!("{label} p"));
        match opt(want, "t") {
            Some(t) => close(cmp.welch.t, t, &format!("{label} t")),
            None => assert!(cmp.welch.t.is_infinite(), "{label}: t {}", cmp.welch.t),
        }
        close(cmp.ratio, num(want, "ratio"), &format!("{label} ratio"));
        close(
            cmp.diff_pct,
            num(want, "diff_pct"),
            &format!("{label} diff_pct"),
        );
        match (ci["kind"].as_str(), cmp.ratio_ci) {
            (Some("interval"), RatioInterval::Interval { low, high }) => {
                close_bound(low, opt(ci, "low"), &format!("{label} ratio CI low at {c}"));
                close_bound(
                    high,
                    opt(ci, "high"),
                    &format!("{label} ratio CI high at {c}"),
                );
            }
            (Some("outside"), RatioInterval::Outside { below, above }) => {
                close(
                    below,
                    num(ci, "below"),
                    &format!("{label} excluded below at {c}"),
                );
                close(
                    above,
                    num(ci, "above"),
                    &format!("{label} excluded above at {c}"),
                );
                assert_eq!((cmp.ci_low_pct, cmp.ci_high_pct), (None, None), "{label}");
            }
            (kind, got) => panic!("{label} at {c}: reference {kind:?}, got {got:?}"),
        }
        // A positive metric's difference never reaches below -100%, and the difference
        // over the mean of both (the seed's "53% faster") has the ratio's interval,
        // mapped into (-200%, +200%); a side the ratio's interval leaves unbounded stays
        // unbounded (none), never a made-up +200%.
        if want["positive"].as_bool() == Some(true) {
            assert!(
                cmp.ci_low_pct.is_some_and(|l| l >= -100.0),
                "{label}: {cmp:?}"
            );
            let sym = |r: f64| 2.0 * (r - 1.0) / (r + 1.0) * 100.0;
            let (lo, hi) = (opt(ci, "low").map(sym), opt(ci, "high").map(sym));
            close_bound(
                cmp.symmetric_ci_low_pct,
                lo,
                &format!("{label} symmetric low"),
            );
            close_bound(
                cmp.symmetric_ci_high_pct,
                hi,
                &format!("{label} symmetric high"),
            );
        }
        let decided = &want["runs_needed"][conf];
        let verdict = match cmp.verdict {
            Verdict::Better | Verdict::Worse => "significant",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotComparable => "not comparable",
        };
        assert_eq!(
            Some(verdict),
            decided["verdict"].as_str(),
            "{label} at {c}: {cmp:?}"
        );
        let want_runs = decided["runs_needed"].as_object().map(|r| RunsNeeded {
            runs: r["runs"].as_u64().expect("runs") as usize,
            more_than: r["more_than"].as_bool().expect("more_than"),
        });
        assert_eq!(cmp.runs_needed, want_runs, "{label} at {c}");
    }
}

#[test]
fn welch_and_compare_match_scipy() {
    let reference = reference();
    let band = num(&reference, "noise_band");
    for p in reference["pairs"].as_array().expect("pairs") {
        let (b, c) = (
            p["baseline"].as_str().expect("b"),
            p["candidate"].as_str().expect("c"),
        );
        let label = format!("{c} vs {b}");
        let (base, cand) = (dataset(&reference, b), dataset(&reference, c));
        let w = welch(&cand, &base).unwrap_or_else(|| panic!("{label}: no Welch"));
        if let Some(t) = opt(p, "scipy_t") {
            close(w.t, t, &format!("{label} t"));
            close(w.df, num(p, "scipy_df"), &format!("{label} df"));
            close(w.p, num(p, "scipy_p"), &format!("{label} p"));
            // Welch's own interval of the difference of means: scipy's.
            for (conf, ci) in p["diff_ci"].as_object().expect("diff_ci") {
                let half = stats::t_quantile(conf.parse().unwrap(), w.df).unwrap() * w.se;
                let (lo, hi) = pair(ci);
                close(
                    half,
                    (hi - lo) / 2.0,
                    &format!("{label} Welch CI at {conf}"),
                );
            }
        }
        let swapped = welch(&base, &cand).expect("swapped");
        assert_eq!((swapped.t, swapped.p), (-w.t, w.p), "{label}: symmetric");
        check_comparison(&label, p, |conf| {
            compare(&base, &cand, conf, band, Better::Higher)
                .unwrap_or_else(|e| panic!("{label}: {e}"))
        });
    }
}

#[test]
fn pooled_boards_match_the_reference() {
    let reference = reference();
    let band = num(&reference, "noise_band");
    let strata = |v: &Value| -> Vec<Vec<f64>> {
        v.as_array()
            .expect("strata")
            .iter()
            .map(|s| {
                s.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect()
            })
            .collect()
    };
    for s in reference["strata"].as_array().expect("strata") {
        let label = s["name"].as_str().unwrap().to_string();
        let (b, c) = (strata(&s["baseline"]), strata(&s["candidate"]));
        let bv: Vec<&[f64]> = b.iter().map(Vec::as_slice).collect();
        let cv: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
        check_comparison(&label, s, |conf| {
            compare_strata(&bv, &cv, conf, band, Better::Higher)
                .unwrap_or_else(|e| panic!("{label}: {e}"))
        });
        if b.len() == 1 {
            let plain = compare(&b[0], &c[0], 0.95, band, Better::Higher).unwrap();
            let one = compare_strata(&bv, &cv, 0.95, band, Better::Higher).unwrap();
            assert_eq!(plain, one, "one board pooled is the plain comparison");
        }
    }
}

/// The runs that would decide a comparison: the documented rule exactly, and within a
/// run of statsmodels' noncentral-t power calculation.
#[test]
fn runs_to_decide_match_the_rule_and_statsmodels() {
    let reference = reference();
    for case in reference["power_cases"].as_array().expect("power_cases") {
        let got = runs_to_detect(
            num(case, "var_per_run"),
            num(case, "var_per_run_sq"),
            num(case, "effect"),
            num(case, "confidence"),
            2,
        )
        .expect("valid");
        let rule = &case["rule"];
        assert_eq!(
            (got.runs as u64, got.more_than),
            (
                rule["runs"].as_u64().unwrap(),
                rule["more_than"].as_bool().unwrap()
            ),
            "{case}"
        );
        if let Some(n) = opt(case, "statsmodels_n") {
            if n <= MAX_RUNS_ESTIMATE as f64 {
                assert!((got.runs as f64 - n.ceil()).abs() <= 1.0, "{case}: {got:?}");
            } else {
                assert!(got.more_than, "{case}");
            }
        }
    }
    for case in reference["precision_cases"]
        .as_array()
        .expect("precision_cases")
    {
        let xs = dataset(&reference, case["dataset"].as_str().unwrap());
        let got = runs_for_precision(
            num(case, "sd"),
            num(case, "mean"),
            num(case, "confidence"),
            num(case, "target"),
            xs.len() + 1,
        )
        .expect("valid");
        let want = &case["runs"];
        assert_eq!(
            (got.runs as u64, got.more_than),
            (
                want["runs"].as_u64().unwrap(),
                want["more_than"].as_bool().unwrap()
            ),
            "{case}"
        );
        let s = summarize(&xs, 0.95).unwrap();
        if let Some(w) = stats::wide_ci(&s, num(case, "target")) {
            assert_eq!(w.runs_needed, got, "{case}");
        }
    }
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
    assert_eq!(doc["version"], 2);
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
    close(num(cmp, "ratio"), num(want, "ratio"), "ratio");
    close(
        num(cmp, "ratio_ci_low"),
        num(&want["ratio_ci"]["0.95"], "low"),
        "ratio CI low",
    );
    close(
        num(cmp, "ci_low_pct"),
        (num(&want["ratio_ci"]["0.95"], "low") - 1.0) * 100.0,
        "diff CI low",
    );
    assert_eq!(cmp["significant"], true);
    assert_eq!(cmp["verdict"], "lower");
    assert!(doc["outlier_rule"].as_str().unwrap().contains("Tukey"));
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
        table[0].contains('N') && table[0].contains("95% CI of the mean"),
        "{out}"
    );
    // Right-aligned numeric columns end at the same character.
    let mean_end = |line: &str| line.find("  ").map(|_| line.len());
    assert!(table.iter().all(|l| mean_end(l).is_some()));
    assert!(table[4].contains("- (n < 2)"), "{out}");
    assert!(out.contains("wide.txt vs tight.txt:\n"), "{out}");
    assert!(
        out.contains("  inconclusive: no significant difference (p = "),
        "{out}"
    );
    assert!(
        out.contains("values per file would likely decide it"),
        "{out}"
    );
    assert!(
        out.contains("n2.txt vs tight.txt:") && out.contains("  lower (p = "),
        "{out}"
    );
    assert!(out.contains("beyond the ±2% noise band)"), "{out}");
    assert!(out.contains("Fieller)"), "{out}");
    assert!(
        out.contains("warning: wide.txt: the 95% CI is ±"),
        "a wide interval is warned about: {out}"
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
    let dir = Scratch::new("stats-cli");
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
    assert!(
        text.contains("  higher (p = "),
        "significant and higher: {text}"
    );

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
