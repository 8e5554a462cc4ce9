//! A store someone sent: each text the store holds (facts, keys and values; flags; a
//! failure's cause; a skip's reason; a board's fingerprint and drift; the board model of
//! the inputs; a retired board's plan skips) carrying every C0 and C1 control, DEL and a
//! newline reaches no report file raw, breaks no line, starts no formula, and a long one
//! is cut and says so.

use serde_json::Value;

use super::tests::usb_against_sd;
use super::tests_provenance::cell_with_facts;
use super::*;
use crate::failure::CellFailure;
use crate::shown::{assert_inert, hostile, shows};
use crate::store::{CellFingerprint, DriftDecision, Failure, Fingerprint, OnDrift, Skip};
use crate::transport::Exit;

/// `value` with `hostile` after each of its texts.
fn poisoned(value: &Value, tag: &str) -> Value {
    match value {
        Value::String(s) => Value::String(format!("{s}{}", hostile(tag))),
        Value::Array(a) => Value::Array(a.iter().map(|v| poisoned(v, tag)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), poisoned(v, tag)))
                .collect(),
        ),
        v => v.clone(),
    }
}

fn fingerprint(kernel: &str) -> Fingerprint {
    Fingerprint {
        kernel_release: kernel.into(),
        kernel_version: format!("#1 {kernel}"),
        os_release: BTreeMap::from([("ID".to_string(), kernel.to_string())]),
        firmware: Some(kernel.into()),
        boot_config: BTreeMap::from([(kernel.to_string(), kernel.to_string())]),
    }
}

/// The fixture study, every stored text poisoned, and `big` bytes of cause on the
/// failed cell.
fn hostile_report(big: usize) -> Report {
    let (mut ws, mut scenario, _) = usb_against_sd();
    for b in ws.boards.values_mut() {
        b.model = format!("Pi{}", hostile("model"));
    }
    scenario = ws
        .scenarios
        .iter()
        .find(|s| s.name == scenario.name)
        .unwrap()
        .clone();
    let mut plan = crate::plan::expand(&ws, &scenario);
    assert!(plan.cells.len() >= 4, "the fixture has cells to poison");
    let mut data = BTreeMap::new();
    for (i, c) in plan.cells.iter().enumerate() {
        let mut d = cell_with_facts(c, &hostile("kernel"));
        let mut facts = poisoned(d.facts.as_deref().unwrap(), "fact");
        // Keys a report shows: a tool's and a package's names.
        facts["tools"][hostile("toolkey")] = Value::from("1.0");
        facts["packages"]["installed"][hostile("packagekey")] = Value::from("1.0");
        d.facts = Some(facts.into());
        for (j, s) in d.samples.iter_mut().enumerate() {
            s.metrics.insert("random_read".into(), 10.0 + i as f64);
            s.flags = vec![[hostile("flag"), "\t=1+1".into(), " -2+3".into()][j % 3].clone()];
        }
        d.fingerprint = Some(CellFingerprint {
            format: 1,
            fingerprint: fingerprint(&hostile("now")),
            decisions: vec![DriftDecision {
                choice: OnDrift::Keep,
                after_seq: 1,
                from: fingerprint("6.1"),
                to: fingerprint(&hostile("drift")),
                at: 0.0,
                session: hostile("session"),
            }],
        });
        match i {
            1 => {
                d.samples.clear();
                let exit = Exit {
                    code: Some(3),
                    signal: None,
                };
                let mut cause = CellFailure::step_failed("run", "fio", &exit, "");
                if let CellFailure::StepFailed {
                    step, stderr_tail, ..
                } = &mut cause
                {
                    *step = hostile("step");
                    *stderr_tail = vec![hostile("tail"), "x".repeat(big)].into();
                }
                d.failure = Some(Failure {
                    session: "s".into(),
                    at: 0.0,
                    failure: cause,
                });
            }
            2 => {
                d.samples.clear();
                d.skip = Some(Skip {
                    format: 1,
                    session: "s".into(),
                    at: 0.0,
                    reason: hostile("skip"),
                });
            }
            _ => {}
        }
        data.insert(c.key.clone(), d);
    }
    // What a retired board's recorded plan skips say (`plan::stored::add_skips`).
    let address = plan.cells[0].address.clone();
    plan.skipped.push(crate::plan::Skipped {
        address,
        reason: hostile("planskip"),
    });
    build(&ws, &scenario, &plan, &data)
}

/// Every file of the report: no control character but the line breaks the format
/// makes, no stored line that starts a line of its own, no formula, and the poisoned
/// texts there (escaped) so that the test sees them.
#[test]
fn every_control_character_in_a_stored_text_reaches_no_report_raw() {
    let report = hostile_report(0);
    for exporter in exporters() {
        let name = exporter.file_name();
        let text = String::from_utf8(exporter.render(&report).unwrap()).unwrap();
        assert_inert(name, &text, name == "results.csv");
        // Each kind of poisoned text is in each file that shows it, escaped.
        let kinds: &[&str] = match name {
            "results.csv" => &["flag", "kernel", "fact", "toolkey", "model"],
            _ => &[
                "flag",
                "kernel",
                "fact",
                "toolkey",
                "packagekey",
                "step",
                "skip",
                "planskip",
                "drift",
                "model",
            ],
        };
        for kind in kinds {
            assert!(shows(&text, kind), "{name} shows no {kind} text");
        }
        assert!(!text.contains("<b>x</b>") || name != "index.html");
    }
    // No spreadsheet formula: a flag starting with a tab or a sign is text.
    let csv = String::from_utf8(Csv.render(&report).unwrap()).unwrap();
    let rows = super::tests_exports::parse_csv(&csv);
    let flags = rows[0].iter().position(|c| c == "flags").unwrap();
    let mut seen = BTreeMap::new();
    for row in &rows[1..] {
        for field in row.iter().filter(|f| !f.is_empty()) {
            assert!(
                !field.trim_start().starts_with(['=', '+', '@']),
                "a formula in results.csv: {field:?}"
            );
        }
        let flag = row[flags].as_str();
        if !flag.is_empty() {
            *seen.entry(flag.get(..4).unwrap_or(flag)).or_insert(0) += 1;
            assert!(
                flag.starts_with("flag\\0") || flag == "\\t=1+1" || flag == "' -2+3",
                "{flag:?}"
            );
        }
    }
    assert_eq!(seen.len(), 3, "a row of each flag: {seen:?}");
}

/// A cause of a megabyte is shown cut, saying so, in every file of the report.
#[test]
fn a_long_stored_text_is_cut_in_every_report_file_and_says_so() {
    let report = hostile_report(1 << 20);
    for exporter in exporters() {
        let name = exporter.file_name();
        let bytes = exporter.render(&report).unwrap();
        let small = hostile_report(0);
        let base = exporter.render(&small).unwrap().len();
        // The cut cause is at most `MAX_BYTES`, where it appears (twice in report.json:
        // the cause and the line).
        assert!(
            bytes.len() < base + 3 * crate::shown::MAX_BYTES,
            "{name}: {} bytes against {base}",
            bytes.len()
        );
        if name != "results.csv" {
            let text = String::from_utf8(bytes).unwrap();
            assert!(text.contains("[cut: "), "{name} says nothing was cut");
        }
    }
}
