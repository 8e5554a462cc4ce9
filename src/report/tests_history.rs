//! The history model on the fixture workspace: runs ordered by their start (recorded
//! or not), a configuration's points per run, the change at the run it starts with
//! the facts that moved, and the newest run's regression as a finding.

use std::collections::BTreeMap;

use super::history::{self, HistoryOptions};
use crate::plan::{expand, fixtures};
use crate::stats::{ChangeRule, ChangeTest, Verdict};
use crate::store::{CellData, CellRecord, FORMAT, RunKind, RunRecord, Sample};

/// A measured sample of `random_read` (the history tests' metric), shared with
/// `tests_history_section`.
pub(super) fn sample(seq: u32, session: &str, started: f64, v: f64) -> Sample {
    Sample {
        format: FORMAT,
        seq,
        kind: RunKind::Measured,
        session: session.into(),
        started,
        ended: started + 1.0,
        metrics: BTreeMap::from([("random_read".to_string(), v)]),
        flags: vec![],
        telemetry: None,
        command: "fio".into(),
        log: String::new(),
        order: None,
        board_seq: None,
    }
}

/// Runs of 3 samples around each of `levels`, one session per run, started 100 s apart;
/// runs from `new_version` on were made by benchpipe 0.2.0, the last run unrecorded.
fn store_of(
    levels: &[f64],
    new_version: usize,
) -> (BTreeMap<crate::plan::CellKey, CellData>, Vec<RunRecord>) {
    let ws = fixtures::workspace();
    let plan = expand(&ws, &ws.scenarios[0]);
    let cell = plan
        .cells
        .iter()
        .find(|c| c.address.test.as_str() == "disk-4k")
        .unwrap();
    let mut samples = Vec::new();
    let mut records = Vec::new();
    for (run, level) in levels.iter().enumerate() {
        let session = format!("{}-7", 1000 + run * 100);
        let started = (1000 + run * 100) as f64;
        let jitter = [0.0, 0.01, -0.01, 0.005, -0.004, 0.007][run % 6];
        for (i, f) in [0.99, 1.0, 1.01].iter().enumerate() {
            let seq = (run * 3 + i + 1) as u32;
            samples.push(sample(
                seq,
                &session,
                started + i as f64,
                level * f * (1.0 + jitter),
            ));
        }
        if run + 1 < levels.len() {
            records.push(RunRecord {
                format: FORMAT,
                session,
                started,
                version: if run >= new_version { "0.2.0" } else { "0.1.0" }.into(),
            });
        }
    }
    let data = CellData {
        record: Some(CellRecord {
            format: FORMAT,
            key: cell.key.clone(),
            address: cell.address.clone(),
            inputs: serde_json::json!({"test": "disk-4k"}).into(),
        }),
        samples,
        ..CellData::default()
    };
    (BTreeMap::from([(cell.key.clone(), data)]), records)
}

fn built(levels: &[f64], new_version: usize) -> history::History {
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let plan = expand(&ws, scenario);
    let (data, records) = store_of(levels, new_version);
    let options = HistoryOptions {
        rule: ChangeRule::default(),
        min_magnitude: None,
        metric: Some("disk-4k.random_read".into()),
    };
    history::build(&ws, scenario, &plan, &data, &records, &options)
}

#[test]
fn a_step_is_a_change_at_its_run_with_the_facts_that_moved() {
    let h = built(&[100.0, 100.0, 100.0, 100.0, 100.0, 70.0, 70.0, 70.0], 5);
    assert_eq!(h.runs.len(), 8);
    assert!(h.runs.windows(2).all(|w| w[0].started < w[1].started));
    assert!(h.runs[..7].iter().all(|r| r.recorded) && !h.runs[7].recorded);
    assert_eq!(h.series.len(), 1, "{h:?}");
    let s = &h.series[0];
    assert_eq!((s.points.len(), s.points[0].n), (8, 3));
    assert!(s.points[0].ci_low.is_some());
    assert_eq!(s.changes.len(), 1, "{:?}", s.changes);
    let c = &s.changes[0];
    assert_eq!(
        (c.point, c.test, c.direction),
        (5, ChangeTest::Segment, Verdict::Worse)
    );
    assert_eq!(c.basis, "runs");
    assert_eq!(c.verdict, Some(Verdict::Worse));
    assert!(
        c.ratio_ci
            .is_some_and(|r| r.bounded().is_some_and(|(_, h)| h < 0.8))
    );
    let benchpipe = c
        .facts
        .iter()
        .find(|f| f.name == "benchpipe")
        .expect("the version moved");
    assert_eq!(
        (benchpipe.before.as_deref(), benchpipe.after.as_deref()),
        (Some("0.1.0"), Some("0.2.0"))
    );
    assert!(
        h.findings.is_empty(),
        "the newest run starts nothing: {:?}",
        h.findings
    );
    let json = serde_json::to_value(&h).unwrap();
    assert_eq!(json["series"][0]["changes"][0]["direction"], "worse");
}

#[test]
fn the_newest_run_alone_is_a_finding_when_it_regressed() {
    let h = built(&[100.0, 100.0, 100.0, 100.0, 100.0, 70.0], 9);
    let c = &h.series[0].changes;
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!((c[0].point, c[0].test), (5, ChangeTest::Newest));
    assert_eq!(c[0].basis, "samples");
    assert_eq!(h.findings.len(), 1, "{h:?}");
    assert_eq!(h.findings[0].kind, "regression");
    // Better, not worse: no finding.
    let h = built(&[100.0, 100.0, 100.0, 100.0, 100.0, 130.0], 9);
    assert_eq!(h.series[0].changes.len(), 1);
    assert!(h.findings.is_empty());
    // A flat history has no change.
    let h = built(&[100.0; 7], 9);
    assert!(h.series[0].changes.is_empty() && h.findings.is_empty());
    let text = super::history_text(&[h]);
    assert!(text.contains("no change point"), "{text}");
}

/// A cell of a new image at the address continues the series (its facts differ
/// across the change); a cell of another method, at the same address, is left out.
#[test]
fn a_new_images_cell_continues_the_series_and_another_methods_does_not() {
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let plan = expand(&ws, scenario);
    let cell = plan
        .cells
        .iter()
        .find(|c| c.address.test.as_str() == "disk-4k")
        .unwrap();
    let (mut data, records) = store_of(&[100.0; 6], 9);
    let with = |inputs: serde_json::Value, key: &str, level: f64, kernel: &str| {
        let samples = (6..9u32)
            .flat_map(|run| {
                let session = format!("{}-7", 1000 + run * 100);
                (0..3u32).map(move |i| {
                    let started = f64::from(1000 + run * 100 + i);
                    sample(
                        run * 3 + i + 1,
                        &session,
                        started,
                        level
                            * (1.0 + 0.01 * (f64::from(i) - 1.0))
                            * (1.0 + 0.003 * f64::from(run)),
                    )
                })
            })
            .collect();
        let key = crate::plan::CellKey::parse(key).unwrap();
        let d = CellData {
            record: Some(CellRecord {
                format: FORMAT,
                key: key.clone(),
                address: cell.address.clone(),
                inputs: inputs.into(),
            }),
            samples,
            facts: Some(std::sync::Arc::new(
                serde_json::json!({ "format": 1, "kernel": kernel }),
            )),
            ..CellData::default()
        };
        (key, d)
    };
    let first = data.values_mut().next().unwrap();
    first.record.as_mut().unwrap().inputs = cell.inputs.json().clone().into();
    first.facts = Some(std::sync::Arc::new(
        serde_json::json!({ "format": 1, "kernel": "6.1" }),
    ));
    let mut new_image = cell.inputs.json().clone();
    new_image["image"] = serde_json::json!("sha256:abc");
    let mut other_method = cell.inputs.json().clone();
    other_method["method"] = serde_json::json!({ "warmup_runs": 9 });
    for (k, d) in [
        with(new_image, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 70.0, "6.6"),
        with(
            other_method,
            "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
            1000.0,
            "6.1",
        ),
    ] {
        data.insert(k, d);
    }
    let options = HistoryOptions {
        rule: ChangeRule::default(),
        min_magnitude: None,
        metric: Some("random_read".into()),
    };
    let h = history::build(&ws, scenario, &plan, &data, &records, &options);
    let s = &h.series[0];
    assert_eq!(s.points.len(), 9, "{s:?}");
    assert!(
        s.points.iter().all(|p| p.mean < 200.0),
        "another method's runs joined: {s:?}"
    );
    assert_eq!(s.changes.len(), 1, "{:?}", s.changes);
    let names: Vec<&str> = s.changes[0].facts.iter().map(|f| f.name.as_str()).collect();
    for want in ["cell", "facts.kernel", "inputs.image"] {
        assert!(names.contains(&want), "{want}: {names:?}");
    }
}

/// Each run's own facts (`facts/<session>.json`) name the board fact that moved at a
/// change of one cell: the kernel of the run before and of the run after, not the
/// latest one both would read in `facts.json`. A run without facts of its own (a store
/// older than them) reads the latest for both sides, as before.
#[test]
fn a_change_of_one_cell_names_the_fact_its_run_saw_move() {
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let plan = expand(&ws, scenario);
    let levels = [100.0, 100.0, 100.0, 100.0, 100.0, 70.0, 70.0, 70.0];
    let (mut data, records) = store_of(&levels, 9);
    let d = data.values_mut().next().unwrap();
    let kernel = |k: &str| std::sync::Arc::new(serde_json::json!({ "format": 1, "kernel": k }));
    // The kernel moved at run 6; the latest opening (facts.json) saw a later one still.
    d.facts = Some(kernel("6.12"));
    d.run_facts = (0..levels.len())
        .map(|run| {
            let k = if run < 5 { "6.1" } else { "6.6" };
            (format!("{}-7", 1000 + run * 100), kernel(k))
        })
        .collect();
    let options = HistoryOptions {
        rule: ChangeRule::default(),
        min_magnitude: None,
        metric: Some("disk-4k.random_read".into()),
    };
    let h = history::build(&ws, scenario, &plan, &data, &records, &options);
    let c = &h.series[0].changes;
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!(c[0].point, 5);
    let moved: Vec<_> = c[0]
        .facts
        .iter()
        .map(|f| (f.name.as_str(), f.before.as_deref(), f.after.as_deref()))
        .collect();
    assert_eq!(moved, [("facts.kernel", Some("6.1"), Some("6.6"))]);

    // The run before has no facts of its own: the latest for both, no fact moved.
    let d = data.values_mut().next().unwrap();
    d.run_facts.remove("1400-7");
    let h = history::build(&ws, scenario, &plan, &data, &records, &options);
    let c = &h.series[0].changes;
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(c[0].facts.is_empty(), "{:?}", c[0].facts);
}
