//! `report.json` against its schema (`docs/report.schema.json`, checked here by a small
//! validator of the keywords it uses; `tests/it/reports.rs` runs Python's jsonschema on a
//! real store's report), and `results.csv`: one row per sample, quoted, exact numbers.

use serde_json::Value;

use super::tests::usb_against_sd;
use super::tests_provenance::cell_with_facts;
use super::*;

const SCHEMA: &str = include_str!("../../docs/report.schema.json");

/// The schema keywords `report.schema.json` uses, checked; any other keyword fails, so
/// the schema cannot grow past what this test checks.
fn check(schema: &Value, root: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        errors.push(format!("{at}: schema is not an object"));
        return;
    };
    let mut fail = |m: String| errors.push(format!("{at}: {m}"));
    let mut nested: Vec<(Value, Value, String)> = Vec::new();
    for (k, rule) in s {
        match k.as_str() {
            "$schema" | "$id" | "title" | "description" | "$defs" => {}
            "$ref" => {
                let name = rule.as_str().unwrap().strip_prefix("#/$defs/").unwrap();
                nested.push((root["$defs"][name].clone(), v.clone(), at.to_string()));
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(a) => a.iter().map(|t| t.as_str().unwrap()).collect(),
                    _ => unreachable!(),
                };
                let ok = types.iter().any(|t| match *t {
                    "object" => v.is_object(),
                    "array" => v.is_array(),
                    "string" => v.is_string(),
                    "number" => v.is_number(),
                    "integer" => v.is_u64() || v.is_i64(),
                    "boolean" => v.is_boolean(),
                    "null" => v.is_null(),
                    other => panic!("type {other}"),
                });
                if !ok {
                    fail(format!("{v} is not {types:?}"));
                }
            }
            "const" => {
                if v != rule {
                    fail(format!("{v} is not {rule}"));
                }
            }
            "enum" => {
                if !rule.as_array().unwrap().contains(v) {
                    fail(format!("{v} is not one of {rule}"));
                }
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                let (Some(x), Some(r)) = (v.as_f64(), rule.as_f64()) else {
                    continue;
                };
                let ok = match k.as_str() {
                    "minimum" => x >= r,
                    "maximum" => x <= r,
                    "exclusiveMinimum" => x > r,
                    _ => x < r,
                };
                if !ok {
                    fail(format!("{x} breaks {k} {r}"));
                }
            }
            "pattern" => {
                if let Some(t) = v.as_str()
                    && !regex::Regex::new(rule.as_str().unwrap())
                        .unwrap()
                        .is_match(t)
                {
                    fail(format!("{t:?} does not match {rule}"));
                }
            }
            "required" => {
                if let Some(o) = v.as_object() {
                    for r in rule.as_array().unwrap() {
                        if !o.contains_key(r.as_str().unwrap()) {
                            fail(format!("no {r}"));
                        }
                    }
                }
            }
            "properties" => {
                if let Some(o) = v.as_object() {
                    for (name, sub) in rule.as_object().unwrap() {
                        if let Some(x) = o.get(name) {
                            nested.push((sub.clone(), x.clone(), format!("{at}.{name}")));
                        }
                    }
                }
            }
            "additionalProperties" => {
                let Some(o) = v.as_object() else { continue };
                let known = s.get("properties").and_then(Value::as_object);
                for (name, x) in o {
                    if known.is_some_and(|p| p.contains_key(name)) {
                        continue;
                    }
                    match rule {
                        Value::Bool(false) => fail(format!("unexpected property {name}")),
                        sub => nested.push((sub.clone(), x.clone(), format!("{at}.{name}"))),
                    }
                }
            }
            "propertyNames" => {
                if let Some(o) = v.as_object() {
                    for name in o.keys() {
                        nested.push((
                            rule.clone(),
                            Value::from(name.as_str()),
                            format!("{at} key"),
                        ));
                    }
                }
            }
            "items" => {
                if let Some(a) = v.as_array() {
                    for (i, x) in a.iter().enumerate() {
                        nested.push((rule.clone(), x.clone(), format!("{at}[{i}]")));
                    }
                }
            }
            "oneOf" => {
                let passing = rule
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|sub| {
                        let mut e = Vec::new();
                        check(sub, root, v, at, &mut e);
                        e.is_empty()
                    })
                    .count();
                if passing != 1 {
                    fail(format!("{v} matches {passing} of oneOf"));
                }
            }
            other => panic!("report.schema.json uses `{other}`, which this test does not check"),
        }
    }
    for (sub, x, path) in nested {
        check(&sub, root, &x, &path, errors);
    }
}

pub(super) fn validate(doc: &Value) -> Vec<String> {
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    let mut errors = Vec::new();
    check(&schema, &schema, doc, "$", &mut errors);
    errors
}

/// The fixture study, measured, with facts, a comparison, a flagged run, a failure and a
/// skip: every section of the report has something in it.
pub(super) fn full_report() -> Report {
    full_report_with_kernel("Linux 6.1.0 aarch64")
}

/// `full_report`, its first cell's board reporting `kernel`.
fn full_report_with_kernel(kernel: &str) -> Report {
    let (ws, scenario, plan, data) = fixture_with_kernel(kernel);
    build(&ws, &scenario, &plan, &data)
}

/// What `full_report_with_kernel` builds its report from.
pub(super) fn fixture_with_kernel(
    kernel: &str,
) -> (
    crate::model::Workspace,
    crate::model::Scenario,
    crate::plan::Plan,
    BTreeMap<crate::plan::CellKey, CellData>,
) {
    let (ws, mut scenario, plan) = usb_against_sd();
    scenario.report.tables.push(crate::model::TableSpec {
        title: "Disk, storage as columns".into(),
        description: None,
        columns: vec![crate::model::ColumnSpec {
            test: "disk-4k".into(),
            metric: "random_read".into(),
            label: None,
        }],
        rows: Some(vec![crate::model::Axis::Board]),
        pivot: Some(crate::model::Axis::Storage),
        only: None,
    });
    let mut data = BTreeMap::new();
    for (i, c) in plan.cells.iter().enumerate() {
        let mut d = cell_with_facts(
            c,
            if i == 0 {
                kernel
            } else {
                "Linux 6.1.0 aarch64"
            },
        );
        for (j, s) in d.samples.iter_mut().enumerate() {
            s.metrics
                .insert("random_read".into(), 10.0 + i as f64 + j as f64 / 7.0);
            s.order = Some(crate::model::RunOrder::Blocked);
        }
        if i == 1 {
            d.samples[0].flags = vec!["hot".into()];
        }
        if i == 2 {
            d.samples.clear();
            d.failure = Some(crate::store::Failure {
                session: "s".into(),
                at: 0.0,
                failure: crate::failure::CellFailure::Legacy {
                    cause: "exit status 3: fio: cannot open file".into(),
                },
            });
        }
        data.insert(c.key.clone(), d);
    }
    (ws, scenario, plan, data)
}

#[test]
fn report_json_is_versioned_valid_against_its_schema_and_keeps_numbers_as_numbers() {
    let r = full_report();
    let doc: Value = serde_json::from_slice(&Json.render(&r).unwrap()).unwrap();
    let errors = validate(&doc);
    assert!(errors.is_empty(), "{errors:#?}\n{doc:#}");
    assert_eq!(doc["format"], REPORT_FORMAT);
    assert!(!doc["failed"].as_array().unwrap().is_empty(), "{doc:#}");
    assert!(!doc["skipped"].as_array().unwrap().is_empty(), "{doc:#}");
    assert!(!doc["validity"].as_array().unwrap().is_empty(), "{doc:#}");
    // A table value: numbers that agree with each other and with the model.
    let table = doc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "test-disk-4k")
        .unwrap();
    let v = &table["rows"][0]["values"][0];
    let (mean, lo, hi, half) = (
        v["mean"].as_f64().unwrap(),
        v["ci_low"].as_f64().unwrap(),
        v["ci_high"].as_f64().unwrap(),
        v["ci_half"].as_f64().unwrap(),
    );
    assert!((hi - lo - 2.0 * half).abs() < 1e-9 && (lo + half - mean).abs() < 1e-9);
    let model = &r
        .tables
        .iter()
        .find(|t| t.id == "test-disk-4k")
        .unwrap()
        .rows[0]
        .values[0];
    assert_eq!(model.mean, Some(mean));
    assert_eq!(table["rows"][0]["config"]["storage"], "sd");
    assert_eq!(table["columns"][0]["better"], "higher");
    let pivoted = &doc["tables"][0];
    assert_eq!(pivoted["pivot"], "storage");
    // The comparison's numbers are numbers, beside the words.
    let c = &doc["comparisons"][0];
    let n = &c["numbers"];
    assert!(
        n["p"].as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)),
        "{c}"
    );
    assert!(
        [
            "better",
            "worse",
            "equivalent",
            "inconclusive",
            "not-comparable"
        ]
        .contains(&c["verdict"].as_str().unwrap()),
        "{c}"
    );
    let ratio = n["candidate_mean"].as_f64().unwrap() / n["baseline_mean"].as_f64().unwrap();
    assert!((n["ratio"].as_f64().unwrap() - ratio).abs() < 1e-12, "{c}");
    assert!(c["difference"].as_str().unwrap().contains('%'));

    // The validator is no rubber stamp: a string where a number belongs, a missing
    // field and an unknown one are each an error.
    let mut bad = doc.clone();
    bad["tables"][1]["rows"][0]["values"][0]["mean"] = Value::from("12.3");
    bad["method"].as_object_mut().unwrap().remove("confidence");
    bad["surprise"] = Value::from(1);
    let errors = validate(&bad);
    assert_eq!(errors.len(), 3, "{errors:#?}");
}

/// Parses a CSV document as RFC 4180 says (quotes, doubled quotes, CRLF).
pub(super) fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = vec![];
    let mut row = vec![];
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    rows
}

#[test]
fn results_csv_has_one_row_per_sample_with_provenance_and_exact_numbers() {
    let r = full_report();
    let csv = String::from_utf8(Csv.render(&r).unwrap()).unwrap();
    let rows = parse_csv(&csv);
    let header = &rows[0];
    assert_eq!(&header[..CSV_COLUMNS.len()], CSV_COLUMNS);
    assert_eq!(&header[CSV_COLUMNS.len()..], ["random_read (MB/s)"]);
    let stored: usize = 8 * 3 - 3; // 8 cells with 3 runs, one failed without any.
    assert_eq!(rows.len() - 1, stored);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let first = &rows[1];
    assert_eq!(first[col("kernel")], "Linux 6.1.0 aarch64");
    assert_eq!(first[col("os_release")], "Debian GNU/Linux 12 (bookworm)");
    assert_eq!(first[col("usb_driver")], "uas");
    assert_eq!(first[col("tools")], "fio=fio-3.33");
    assert_eq!(first[col("board_model")], "Raspberry Pi 4");
    assert_eq!(first[col("kind")], "measured");
    assert_eq!(first[col("order")], "blocked");
    // Every value reads back as the f64 the report's statistics used.
    let table = r.tables.iter().find(|t| t.id == "test-disk-4k").unwrap();
    let key = table.rows[0].keys[0].clone();
    let xs: Vec<f64> = rows[1..]
        .iter()
        .filter(|row| row[col("cell")] == key && row[col("counted")] == "true")
        .map(|row| row[col("random_read (MB/s)")].parse().unwrap())
        .collect();
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    assert_eq!(xs.len(), 3);
    assert!((mean - table.rows[0].values[0].mean.unwrap()).abs() < 1e-12);
    // A field with a comma, a quote or a line break is quoted; one a spreadsheet would
    // run as a formula is not left to start with `=`.
    // The cell's columns (kernel among them) are its runs' together.
    let r = full_report_with_kernel("=HYPERLINK(\"x\"), 1");
    let csv = String::from_utf8(Csv.render(&r).unwrap()).unwrap();
    assert!(csv.contains(",\"'=HYPERLINK(\"\"x\"\"), 1\","), "{csv}");
    let rows = parse_csv(&csv);
    assert_eq!(rows[1][col("kernel")], "'=HYPERLINK(\"x\"), 1");
    assert!(rows.iter().all(|r| r.len() == header.len()));
}

/// The exporters `write_reports` uses, with one template context made for both
/// templates, give the bytes of the exporters made without it, for the report they were
/// made for and (each converting its own) for another.
#[test]
fn exporters_sharing_one_context_render_what_each_renders_alone() {
    let r = full_report();
    let mut other = full_report();
    other.title = "another <report>".into();
    let templates = Templates::embedded();
    let prepared = templates.exporters_for(&r, &SharedContext::default());
    let alone = exporters_with(&templates);
    assert_eq!(prepared.len(), alone.len());
    for (p, a) in prepared.iter().zip(&alone) {
        assert_eq!(p.file_name(), a.file_name());
        assert_eq!(
            p.render(&r).unwrap(),
            a.render(&r).unwrap(),
            "{}",
            a.file_name()
        );
        let theirs = a.render(&other).unwrap();
        assert_eq!(p.render(&other).unwrap(), theirs, "{}", a.file_name());
        if a.file_name().starts_with("index") {
            assert_ne!(
                theirs,
                a.render(&r).unwrap(),
                "{}: the title shows",
                a.file_name()
            );
        }
    }
}

/// A file written as it renders holds the bytes `render` gives, for every exporter, and
/// a file that cannot be written is the file's error (`ExportError::Write`), not the
/// template's.
#[test]
fn exporters_write_to_a_file_the_bytes_they_render() {
    struct Failing;
    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let r = full_report();
    let templates = Templates::embedded();
    for e in templates.exporters_for(&r, &SharedContext::default()) {
        let mut written = Vec::new();
        e.write_to(&r, &mut written).unwrap();
        assert_eq!(written, e.render(&r).unwrap(), "{}", e.file_name());
        assert_eq!(written.last(), Some(&b'\n'), "{}", e.file_name());
        match e.write_to(&r, &mut Failing) {
            Err(ExportError::Write(err)) => assert_eq!(err.to_string(), "disk full"),
            other => panic!("{}: {other:?}", e.file_name()),
        }
    }
    // A template whose text does not end with a newline gets one, written or rendered.
    let bare = super::export::render_template("index.md", "{{ title }}", &r).unwrap();
    assert_eq!(bare.last(), Some(&b'\n'));
    assert_eq!(memchr::memchr_iter(b'\n', &bare).count(), 1);
}
