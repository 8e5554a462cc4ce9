//! The report's History section on the fixture workspace: a store of eight applies
//! whose cell is replaced at the sixth (a new image, a new benchpipe) renders the
//! section in all four formats (snapshots), marks the change in the chart with the
//! facts that moved, escapes the store's hostile text everywhere, and a store of one
//! apply renders no section at all.

use std::collections::BTreeMap;

use super::tests_history::sample;
use super::{Exporter, Html, Json, Markdown, Report};
use crate::plan::{CellKey, expand, fixtures};
use crate::store::{CellData, CellRecord, FORMAT, RunRecord};

/// What the store says where it is hostile: a version, an image's identity and a fact's
/// name, each trying markup, a table cell's end and a line break.
const EVIL_VERSION: &str = "0.2.0<script>alert(1)</script>|x";
const EVIL_IMAGE: &str = "installed:<img src=x onerror=alert(2)>";
const EVIL_FACT: &str = "<b onclick=\"alert(3)\">uname</b>|\n*boom*";

/// Eight applies of the scenario's disk-4k cell, three samples each around 100, then
/// from the sixth on around 70 in a new cell (another image, facts of its own) and by
/// another benchpipe; `runs` of them only.
fn store(runs: usize) -> (BTreeMap<CellKey, CellData>, Vec<RunRecord>) {
    let ws = fixtures::workspace();
    let plan = expand(&ws, &ws.scenarios[0]);
    let cell = plan
        .cells
        .iter()
        .find(|c| c.address.test.as_str() == "disk-4k")
        .unwrap();
    let mut inputs_b = cell.inputs.json().clone();
    inputs_b["image"] = serde_json::json!(EVIL_IMAGE);
    let key_b = CellKey::parse("0123456789abcdef0123456789abcdef").unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut records = Vec::new();
    for run in 0..runs {
        let session = format!("{}-7", 1000 + run * 100);
        let started = (1000 + run * 100) as f64;
        let level = if run < 5 { 100.0 } else { 70.0 };
        let jitter = [0.0, 0.01, -0.01, 0.005, -0.004, 0.007][run % 6];
        for (i, f) in [0.99, 1.0, 1.01].iter().enumerate() {
            let s = sample(
                (run * 3 + i + 1) as u32,
                &session,
                started + i as f64,
                level * f * (1.0 + jitter),
            );
            if run < 5 { &mut a } else { &mut b }.push(s);
        }
        records.push(RunRecord {
            format: FORMAT,
            session,
            started,
            version: if run < 5 { "0.0.9" } else { EVIL_VERSION }.into(),
        });
    }
    let facts = |kernel: &str, name: &str| {
        let mut k = serde_json::Map::new();
        k.insert("release".into(), kernel.into());
        k.insert(name.into(), kernel.into());
        Some(std::sync::Arc::new(
            serde_json::json!({ "format": 1, "kernel": k }),
        ))
    };
    let mut data = BTreeMap::new();
    data.insert(
        cell.key.clone(),
        CellData {
            record: Some(CellRecord {
                format: FORMAT,
                key: cell.key.clone(),
                address: cell.address.clone(),
                inputs: cell.inputs.json().clone().into(),
            }),
            samples: a,
            facts: facts("6.1.0", "version"),
            ..CellData::default()
        },
    );
    if !b.is_empty() {
        data.insert(
            key_b.clone(),
            CellData {
                record: Some(CellRecord {
                    format: FORMAT,
                    key: key_b,
                    address: cell.address.clone(),
                    inputs: inputs_b.into(),
                }),
                samples: b,
                facts: facts("6.6.0", EVIL_FACT),
                ..CellData::default()
            },
        );
    }
    (data, records)
}

/// The report of `runs` applies, with its History section as `report` adds it.
fn report(runs: usize) -> Report {
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let plan = expand(&ws, scenario);
    let (data, records) = store(runs);
    let mut r = super::build(&ws, scenario, &plan, &data);
    r.history = super::history_section(&ws, scenario, &plan, &data, &records);
    r
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

/// The rendering benchpipe's version is the only thing a build changes.
fn filtered(text: &str) -> String {
    text.replace(env!("CARGO_PKG_VERSION"), "[version]")
}

/// `text` from the line starting `from` to the line before the next starting `until`.
fn part<'t>(text: &'t str, from: &str, until: &str) -> &'t str {
    let start = text
        .find(from)
        .unwrap_or_else(|| panic!("no {from:?} in\n{text}"));
    let rest = &text[start..];
    let end = rest[from.len()..]
        .find(until)
        .map_or(rest.len(), |e| e + from.len());
    &rest[..end]
}

fn file(r: &Report, name: &str) -> String {
    let exporters = super::history_csv::exporters(r);
    let e = exporters
        .iter()
        .find(|e| e.file_name() == name)
        .unwrap_or_else(|| panic!("no exporter writes {name}"));
    text(e.render(r).unwrap())
}

#[test]
fn history_section_snapshots() {
    let r = report(8);
    let h = r.history.as_ref().expect("eight runs have a history");
    assert_eq!(h.tests.len(), 1, "{h:?}");
    assert_eq!(h.tests[0].file, "history-disk-4k.svg");
    let md = text(Markdown.render(&r).unwrap());
    let html = text(Html.render(&r).unwrap());
    let json: serde_json::Value = serde_json::from_slice(&Json.render(&r).unwrap()).unwrap();
    let errors = super::tests_exports::validate(&json);
    assert!(errors.is_empty(), "{errors:#?}");
    insta::assert_snapshot!("history_md", filtered(part(&md, "## History", "\n## ")));
    insta::assert_snapshot!(
        "history_html",
        filtered(part(&html, "<section id=\"history\">", "</section>"))
    );
    insta::assert_snapshot!(
        "history_json",
        filtered(&serde_json::to_string_pretty(&json["history"]).unwrap())
    );
    insta::assert_snapshot!("history_csv", filtered(&file(&r, "history.csv")));
    insta::assert_snapshot!("history_svg", file(&r, "history-disk-4k.svg"));
    // The same store renders the same bytes.
    let again = report(8);
    assert_eq!(text(Markdown.render(&again).unwrap()), md);
    assert_eq!(text(Html.render(&again).unwrap()), html);
    assert_eq!(
        file(&again, "history-disk-4k.svg"),
        file(&r, "history-disk-4k.svg")
    );
}

#[test]
fn the_chart_marks_the_change_at_its_run_and_names_the_facts_that_moved() {
    let r = report(8);
    let t = &r.history.as_ref().unwrap().tests[0];
    let s = &t.series[0];
    assert_eq!(s.points.len(), 8);
    assert_eq!(s.changes.len(), 1, "{:?}", s.changes);
    assert_eq!(s.changes[0].point, 5);
    let svg = file(&r, "history-disk-4k.svg");
    assert_eq!(svg.matches("<path class=\"change\"").count(), 1, "{svg}");
    let label = svg
        .split("<text class=\"change-label\"")
        .nth(1)
        .and_then(|l| l.split("</text>").next())
        .expect("a label at the mark");
    assert!(
        label.contains(">-29.6%: benchpipe, facts.kernel."),
        "{label}"
    );
    // The run it starts is numbered under the plot, and in the description.
    assert!(svg.contains("a change at run 6: "), "{svg}");
    assert!(svg.contains(">6</text>"), "{svg}");
    // The row says where and what; the facts table lists each fact that moved.
    assert_eq!(t.rows.len(), 1);
    assert_eq!(t.rows[0].run, Some(6));
    assert_eq!(t.rows[0].direction, "worse");
    let names: Vec<&str> = t.facts.iter().map(|f| f.name.as_str()).collect();
    assert!(names.contains(&"benchpipe"), "{names:?}");
    assert!(names.contains(&"inputs.image"), "{names:?}");
    // The page draws it inline, one figure per configuration and metric.
    let html = text(Html.render(&r).unwrap());
    assert_eq!(
        html.matches("<figure class=\"chart\"><svg").count(),
        t.series.len() + r.tables.iter().map(|t| t.charts.len()).sum::<usize>(),
    );
    assert!(html.contains("<a href=\"#history\">History</a>"));
    let md = text(Markdown.render(&r).unwrap());
    assert!(md.contains("](history-disk-4k.svg)"), "{md}");
}

#[test]
fn the_stores_hostile_text_is_escaped_in_every_format() {
    let r = report(8);
    let md = text(Markdown.render(&r).unwrap());
    let html = text(Html.render(&r).unwrap());
    let svg = file(&r, "history-disk-4k.svg");
    let csv = file(&r, "history.csv");
    let history_md = part(&md, "## History", "\n## ");
    let history_html = part(&html, "<section id=\"history\">", "</section>");
    for (what, body) in [
        ("md", history_md),
        ("html", history_html),
        ("svg", svg.as_str()),
    ] {
        for raw in ["<script", "<img", "<b ", "\n*boom"] {
            assert!(!body.contains(raw), "{what} holds {raw:?}:\n{body}");
        }
        // Markdown shows a quote as it is: without a raw `<` no attribute is made.
        if what != "md" {
            assert!(!body.contains("onclick=\""), "{what}:\n{body}");
        }
    }
    assert!(history_md.contains("0.2.0&lt;script&gt;alert(1)&lt;/script&gt;\\|x"));
    assert!(history_html.contains("0.2.0&lt;script&gt;alert(1)&lt;&#x2f;script&gt;|x"));
    assert!(history_html.contains("&lt;b onclick=&quot;alert(3)&quot;&gt;uname"));
    // The chart names the fact in its mark's label or description, escaped.
    assert!(
        svg.contains("&lt;b onclick=&quot;alert(3)&quot;&gt;uname"),
        "{svg}"
    );
    // A Markdown table row stays one row of its columns (8, or 6 in the facts
    // table): every `|` of stored text is escaped.
    for line in history_md.lines().filter(|l| l.starts_with('|')) {
        let bars = line.replace("\\|", "").matches('|').count();
        assert!(bars == 9 || bars == 7, "{line}");
    }
    // The CSV's fields hold no raw line break, and the JSON reads back the text.
    assert!(!csv.contains("\n*boom"), "{csv}");
    let json: serde_json::Value = serde_json::from_slice(&Json.render(&r).unwrap()).unwrap();
    let facts = &json["history"]["tests"][0]["series"][0]["changes"][0]["facts"];
    assert!(
        facts
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["after"] == EVIL_VERSION),
        "{facts}"
    );
}

#[test]
fn a_store_of_one_apply_has_no_history_section_and_renders_as_before() {
    let one = report(1);
    assert!(one.history.is_none());
    assert!(super::history_csv::exporters(&one).is_empty());
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let plan = expand(&ws, scenario);
    let (data, _) = store(1);
    let plain = super::build(&ws, scenario, &plan, &data);
    for e in [&Markdown as &dyn Exporter, &Html, &Json] {
        let a = text(e.render(&one).unwrap());
        assert_eq!(a, text(e.render(&plain).unwrap()));
        assert!(!a.contains("History") && !a.contains("\"history\""), "{a}");
    }
    // Two applies, but the second measured no metric of this configuration: one
    // run of it, and no section either.
    let (mut data, records) = store(6);
    for d in data.values_mut() {
        for s in d.samples.iter_mut().filter(|s| s.session != "1000-7") {
            s.metrics = BTreeMap::from([("something_else".to_string(), 1.0)]);
        }
    }
    let mut r = super::build(&ws, scenario, &plan, &data);
    r.history = super::history_section(&ws, scenario, &plan, &data, &records);
    assert!(r.history.is_none());
}
