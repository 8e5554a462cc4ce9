//! The targets of what benchpipe reads back or is handed: a store file of a cell, read
//! as `Store::read` reads it and reported on; an OS image, compressed or zipped,
//! decompressed as a flash streams it; a report template override, rendered.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;
use std::sync::OnceLock;

use crate::cell::CellKey;
use crate::model::Workspace;
use crate::plan::Plan;
use crate::report::{self, Exporter};
use crate::store::{CELL_FILES, CellData, Sample};

/// The demo workspace (this machine as a board, xz and 4K random I/O), loaded once,
/// with its plan.
struct Demo {
    ws: Workspace,
    plan: Plan,
}

fn demo() -> &'static Demo {
    static DEMO: OnceLock<Demo> = OnceLock::new();
    DEMO.get_or_init(|| {
        let texts = crate::config::texts::Texts {
            boards: &[(
                "boards/localhost.toml",
                include_str!("../../boards/localhost.toml"),
            )],
            scenarios: &[(
                "scenarios/localhost.toml",
                include_str!("../../scenarios/localhost.toml"),
            )],
            ..Default::default()
        };
        let ws = crate::check::load_texts(texts, crate::plan::DEFAULT_MAX_CELLS)
            .expect("the demo workspace loads");
        let plan = crate::plan::expand(&ws, &ws.scenarios[0]);
        Demo { ws, plan }
    })
}

/// Every report file of the demo scenario with `data`, rendered by every exporter.
fn report_of(data: &BTreeMap<CellKey, CellData>) {
    let d = demo();
    let model = report::build(&d.ws, &d.ws.scenarios[0], &d.plan, data);
    for e in report::exporters() {
        e.render(&model)
            .expect("an embedded exporter renders any store");
    }
}

/// A cell's store file: the first line names it (`cell.json`, `samples.jsonl`,
/// `facts.json`, `failure.json`, `redo.json`, `skip.json`, `fingerprint.json`; any
/// other line picks one by its first byte), the rest is its bytes. What the store
/// refuses is bad input naming the file (exit 2); what it takes is the first cell's
/// data in the demo's report, rendered whole.
pub fn store(data: &[u8]) {
    let (name, bytes) = super::split_first_line(data);
    let name = super::text(name);
    let name = CELL_FILES
        .iter()
        .copied()
        .find(|n| *n == name)
        .unwrap_or_else(|| {
            CELL_FILES[name.bytes().next().map_or(0, usize::from) % CELL_FILES.len()]
        });
    let cell = match crate::store::cell_file_of_bytes(name, bytes) {
        Ok(cell) => cell,
        Err(e) => {
            assert_eq!(e.exit_code(), crate::error::EXIT_BAD_INPUT, "{e}");
            let message = e.to_string();
            assert!(message.contains(&format!("{name}:")), "{message}");
            assert!(!message.contains('\n'), "{message}");
            return;
        }
    };
    if let Some(record) = &cell.record {
        let _ = (record.inputs.value(), record.inputs.text());
    }
    if let Some(facts) = &cell.facts {
        let _ = crate::store::CellFacts::of_stored(facts);
    }
    for s in &cell.samples {
        check_sample(s);
    }
    let Some(first) = demo().plan.cells.first() else {
        return;
    };
    report_of(&BTreeMap::from([(first.key.clone(), cell)]));
}

fn check_sample(s: &Sample) {
    if let Some(t) = &s.telemetry {
        let _ = t.summary();
        let _ = t.to_value();
        let _ = t.flags(&crate::telemetry::summary::Thresholds::default());
    }
}

/// The most an image target decompresses: past it the stream is cut, as a flash's
/// target device cuts it.
const MAX_IMAGE_BYTES: u64 = 8 << 20;

/// An OS image as fetched: its format told by its first bytes, as the image stream
/// tells it, then decompressed (xz, gzip, zstd, or a zip's one `.img`) to its end or
/// to `MAX_IMAGE_BYTES`, whichever comes first; a zip entry whose header says it is
/// larger is refused before it is read.
pub fn image_archive(data: &[u8]) {
    let Ok(format) = crate::image::format::sniff(data) else {
        return;
    };
    let input = std::io::Cursor::new(data.to_vec());
    let Ok(stream) = crate::image::decoder("fuzz.img", format, input, Some(MAX_IMAGE_BYTES)) else {
        return;
    };
    let mut sink = vec![0u8; 64 * 1024];
    let mut stream = stream.take(MAX_IMAGE_BYTES + 1);
    while let Ok(n) = stream.read(&mut sink) {
        if n == 0 {
            break;
        }
    }
}

/// A report template override: the first byte chooses `index.md` (even) or
/// `index.html` (odd), the rest is the template, rendered as `report` renders it
/// (bounded fuel and output) with the demo's report of three runs per cell. An
/// override that fails is a diagnostic at its file.
pub fn report_template(data: &[u8]) {
    let Some((&which, source)) = data.split_first() else {
        return;
    };
    let name = report::TEMPLATE_NAMES[usize::from(which % 2)];
    let file = PathBuf::from(report::TEMPLATE_DIR).join(name);
    let source = super::text(source).into_owned();
    let templates = match report::Templates::embedded().with_override(name, file.clone(), source) {
        Ok(t) => t,
        Err(e) => return assert_override_error(&e, &file),
    };
    let template = if which % 2 == 0 {
        &templates.markdown
    } else {
        &templates.html
    };
    // Written through, kept nowhere: what an override writes need not fit in memory.
    if let Err(e) = template.write_to(measured_report(), &mut std::io::sink()) {
        assert_override_error(&e, &file);
    }
}

/// What a failing override gives: one diagnostic at its file.
fn assert_override_error(e: &report::ExportError, file: &std::path::Path) {
    match e {
        report::ExportError::Override(d) => assert_eq!(d.file, file, "{d}"),
        other => panic!("an override failed with no diagnostic: {other}"),
    }
}

/// The demo's report with three measured runs of every cell.
fn measured_report() -> &'static report::Report {
    static REPORT: OnceLock<report::Report> = OnceLock::new();
    REPORT.get_or_init(|| {
        let d = demo();
        let data: BTreeMap<CellKey, CellData> = d
            .plan
            .cells
            .iter()
            .map(|c| {
                let recipe = &d.ws.recipes[&c.address.test];
                let samples = (1..=3)
                    .map(|seq| Sample {
                        format: crate::store::FORMAT,
                        seq,
                        kind: crate::store::RunKind::Measured,
                        session: "fuzz".into(),
                        started: f64::from(seq),
                        ended: f64::from(seq) + 1.0,
                        metrics: recipe
                            .metrics
                            .iter()
                            .map(|m| (m.name.clone(), 10.0 + f64::from(seq)))
                            .collect(),
                        flags: Vec::new(),
                        telemetry: None,
                        command: "true".into(),
                        log: format!("logs/{seq}.log"),
                        order: None,
                        board_seq: None,
                    })
                    .collect();
                let cell = CellData {
                    samples,
                    ..CellData::default()
                };
                (c.key.clone(), cell)
            })
            .collect();
        report::build(&d.ws, &d.ws.scenarios[0], &d.plan, &data)
    })
}
