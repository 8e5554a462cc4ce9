//! The reports' bytes, pinned: a synthetic store holding what a report shows (flags and
//! warnings judged from the runs' telemetry, a recipe's own flag, a telemetry value that
//! is not a summary, warm-ups, a redo, a failure after runs, a skip, missing and partial
//! cells, an adaptive target, watts and derived metrics, a series, drift, facts that
//! differ within a configuration, comparisons pooled per board model, a pivot, a board
//! whose file is gone) is written through the store's writer, read back as `report`
//! reads it, rendered, and compared byte for byte with `tests/data/report-bytes/`:
//! `report.json`, `results.csv`, `index.md`, `index.html`, and the model the templates render (`model.json`, the
//! charts left out: their inputs are the rows' numbers, and `chart.rs` has its own
//! tests). A speed-up of the report or of the store's reader must leave every byte as it
//! was. `BENCHPIPE_BLESS=1` rewrites the files (then read the diff).

use crate::scratch::Scratch;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use benchpipe::store::{CellFacts, FORMAT, Fingerprint, OnDrift, RunKind, Sample, Store};
use benchpipe::telemetry::power::PowerSummary;
use benchpipe::telemetry::summary::SeriesPoint;
use benchpipe::telemetry::{Range, TelemetrySummary};
use benchpipe::{check, cli, plan, report};
use serde_json::{Value, json};

fn pinned() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/report-bytes")
}

fn board(name: &str, model: &str, meter: bool) -> String {
    let meter = if meter {
        "[meter]\nfile = \"/sys/class/hwmon/hwmon2/power1_input\"\n"
    } else {
        ""
    };
    format!(
        "model = \"{model}\"\nlocal = true\nworkdir = \"/srv/bench/{name}\"\n{meter}\
         [[storage]]\nname = \"sd\"\nrole = \"scratch\"\npath = \"/srv/bench/{name}/sd\"\n\
         model = \"SanDisk Extreme 64GB\"\n\
         [[storage]]\nname = \"usb\"\nrole = \"scratch\"\npath = \"/srv/bench/{name}/usb\"\n\
         model = \"Kingston A400 240GB\"\n"
    )
}

/// Three boards (two of one model, one with a meter), three recipes, two scenarios
/// over the same cells judged differently.
fn project(dir: &Scratch) {
    dir.write("boards/b-1.toml", board("b-1", "Synthetic Pi 4", false));
    dir.write("boards/b-2.toml", board("b-2", "Synthetic Pi 4", false));
    dir.write("boards/b-3.toml", board("b-3", "Synthetic Rock 5B", true));
    dir.write(
        "pipeline/fio.toml",
        "description = \"random I/O\"\n[run]\ncommand = \"true\"\nparse = \"json\"\n\
         [metrics]\n\
         read = { from = \"r\", unit = \"MB/s\", better = \"higher\", primary = true }\n\
         write = { label = \"Random write\", from = \"w\", unit = \"MB/s\", better = \"higher\" }\n\
         seconds = { from = \"s\", unit = \"s\", better = \"lower\" }\n\
         errors = { from = \"e\", unit = \"errors\", better = \"lower\", flag = \"errors\" }\n\
         read_per_watt = { per_watt = \"read\" }\n\
         energy = { joules = true }\n",
    );
    dir.write("pipeline/dd.toml",
        "description = \"sequential write\"\n[run]\ncommand = \"true\"\nparse = \"json\"\n\
         [metrics]\nwrite = { label = \"Sequential write\", from = \"w\", unit = \"MB/s\", better = \"higher\" }\n",
    );
    dir.write(
        "pipeline/burn.toml",
        "description = \"burn-in\"\nuses_storage = false\nseries = true\n[run]\n\
         command = \"true\"\nparse = \"json\"\n\
         [metrics]\nops = { from = \"o\", unit = \"ops/s\", better = \"higher\" }\n",
    );
    dir.write("scenarios/syn-a.toml",
        "title = \"Synthetic A\"\ndescription = \"Every part of a report, from a synthetic store.\"\n\
         [images.os0]\ninstalled = true\n[images.os1]\ninstalled = true\n\
         [matrix]\nimage = [\"os0\", \"os1\"]\nboard = [\"b-*\"]\nstorage = [\"*\"]\n\
         filesystem = [\"as-is\"]\ntest = [\"fio\", \"dd\", \"burn\"]\n\
         [method]\nwarmup = { runs = 1 }\nruns = { min = 3, max = 3 }\n\
         [report]\nnoise_band = \"2%\"\nwide_ci = \"3%\"\n\
         [report.labels]\nboard = { \"b-1\" = \"Pi 4 (first)\" }\nmetric = { \"fio.read\" = \"Random read\" }\n\
         [[report.compare]]\nmetric = \"fio.read\"\nbaseline = { image = \"os0\" }\npool = \"model\"\n\
         [[report.compare]]\nmetric = \"fio.seconds\"\nbaseline = { storage = \"sd\" }\ncandidate = { storage = \"usb\" }\n\
         [[report.compare]]\nmetric = \"fio.power_w\"\nbaseline = { storage = \"sd\" }\ncandidate = { storage = \"usb\" }\n\
         [[report.table]]\ntitle = \"Read and write by medium\"\ncolumns = [\"fio.read\", \"dd.write\"]\n\
         rows = [\"board\"]\npivot = \"storage\"\n\
         [[report.table]]\ntitle = \"Across tests\"\ncolumns = [\"fio.read\", \"burn.ops\"]\n",
    );
    dir.write(
        "scenarios/syn-b.toml",
        "title = \"Synthetic B: flagged runs left out\"\n[images.os0]\ninstalled = true\n\
         [matrix]\nimage = [\"os0\"]\nboard = [\"b-*\"]\nstorage = [\"sd\"]\n\
         filesystem = [\"as-is\"]\ntest = [\"fio\"]\n\
         [method]\nwarmup = { runs = 1 }\nruns = { min = 3, max = 6, target = \"5%\" }\n\
         validity = { hot = \"70C\", background_load = \"5%\", exclude_flagged = true }\n",
    );
}

/// A number that varies by cell, run and metric, the same every time.
fn noise(cell: usize, seq: u32, metric: u64) -> f64 {
    let mut x = ((cell as u64 + 7) * 0x9E37_79B9_7F4A_7C15) ^ (u64::from(seq) << 32) ^ metric;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    (x % 1000) as f64 / 1000.0
}

fn fingerprint(kernel: &str) -> Fingerprint {
    Fingerprint {
        kernel_release: kernel.into(),
        kernel_version: format!("#1 SMP PREEMPT {kernel}"),
        os_release: BTreeMap::from([("ID".into(), "debian".into())]),
        firmware: None,
        boot_config: BTreeMap::new(),
    }
}

/// The telemetry of run `seq` of cell `i`, as apply stores it (the summary as a value).
fn telemetry(i: usize, seq: u32, meter: bool, series: bool) -> Value {
    let h = noise(i, seq, 99);
    let mut t = TelemetrySummary {
        samples: 4,
        seconds: 3.0,
        temp_c: Some(Range {
            min: 50.0,
            max: 60.0 + 30.0 * h,
            mean: 55.0,
        }),
        freq_mhz_min: Some(1500.0),
        freq_mhz_max: Some(1800.0),
        load1_max: Some(1.0 + h),
        swap_in_pages: Some(0),
        swap_out_pages: Some(if (i + seq as usize).is_multiple_of(9) {
            12
        } else {
            0
        }),
        cpus: Some(4),
        busy_cpu_seconds: Some(3.2),
        test_cpu_seconds: Some(3.0),
        background_cpu_seconds: Some(0.2),
        background_fraction: Some(0.12 * h),
        throttled_first: Some(0),
        throttled_seen: Some(if (i * 3 + seq as usize).is_multiple_of(11) {
            0x4_0004
        } else {
            0
        }),
        governors: vec!["ondemand".into()],
        kernel_log: Some("read".into()),
        ..TelemetrySummary::default()
    };
    if i % 6 == 1 && seq.is_multiple_of(2) {
        t.throttled_state = Some("unknown".into());
        t.throttled_error = Some("vcgencmd get_throttled failed: exit 255".into());
    }
    if meter {
        let failed = i.is_multiple_of(5) && seq == 2;
        t.power = Some(PowerSummary {
            source: "file /sys/class/hwmon/hwmon2/power1_input".into(),
            idle_w: Some(2.5 + h),
            idle_samples: 5,
            power_w: (!failed).then_some(5.0 + 2.0 * h),
            power_w_min: Some(4.5),
            power_w_max: Some(7.5),
            load_samples: 3,
            error: failed.then(|| "read failed: no such file".into()),
        });
    }
    if series {
        t.series = (0..5)
            .map(|k| SeriesPoint {
                t: f64::from(k),
                temp_c: Some(55.0 + f64::from(k) + h),
                freq_mhz: (k != 2).then_some(1800.0 - 10.0 * f64::from(k)),
            })
            .collect();
    }
    serde_json::to_value(&t).unwrap()
}

/// One run of cell `i`, its metrics as the recipe's parser and apply would give them.
fn sample(i: usize, cell: &plan::Cell, seq: u32, kind: RunKind, meter: bool) -> Sample {
    let test = cell.address.test.as_str();
    let base = 40.0 + (i % 13) as f64 * 3.0;
    // Some cells are noisy, so that their intervals are wide and outliers show.
    let spread = if i.is_multiple_of(4) { 25.0 } else { 2.0 };
    let mut metrics = BTreeMap::new();
    let v = |m: u64| base + spread * noise(i, seq, m);
    match test {
        "fio" => {
            let outlier = if i.is_multiple_of(8) && seq == 4 {
                200.0
            } else {
                0.0
            };
            metrics.insert("read".to_string(), v(1) + outlier);
            metrics.insert("write".to_string(), v(2) / 2.0);
            metrics.insert("seconds".to_string(), v(3) / 10.0);
            metrics.insert(
                "errors".to_string(),
                if (i + seq as usize).is_multiple_of(10) {
                    2.0
                } else {
                    0.0
                },
            );
        }
        "dd" => {
            metrics.insert("write".to_string(), v(4) * 2.0);
        }
        _ => {
            metrics.insert("ops".to_string(), v(5) * 100.0);
        }
    }
    let series = test == "burn";
    let mut tel = telemetry(i, seq, meter, series);
    if series {
        metrics.insert("temp_max_c".to_string(), 59.0 + noise(i, seq, 6));
        metrics.insert("freq_mean_mhz".to_string(), 1790.0);
    }
    if let Some(p) = tel.get("power").cloned() {
        let p: PowerSummary = serde_json::from_value(p).unwrap();
        for (name, w) in p.metrics() {
            metrics.insert(name.to_string(), w);
        }
    }
    let mut flags: Vec<String> = Vec::new();
    if metrics.get("errors").is_some_and(|e| *e > 0.0) {
        flags.push("errors".into());
    }
    // A value that is not a telemetry summary: its stored flags stand as they are.
    if i == 3 && seq == 3 {
        tel = json!({ "samples": "four", "note": "an older sampler" });
        flags.push("hot".into());
    }
    let started = 1_700_000_000.0 + (i * 100) as f64 + f64::from(seq) * 7.0;
    Sample {
        format: FORMAT,
        seq,
        kind,
        session: if seq > 4 {
            "1700000900-17".into()
        } else {
            "1700000000-42".into()
        },
        started,
        ended: started + 3.0 + noise(i, seq, 7),
        metrics,
        flags,
        telemetry: Some(tel.into()),
        command: format!("fio --filename=/srv/bench/{i}/x"),
        log: format!("logs/{seq:04}.log"),
        order: Some(if i.is_multiple_of(2) {
            benchpipe::model::RunOrder::Blocked
        } else {
            benchpipe::model::RunOrder::Interleaved
        }),
        board_seq: Some(u64::from(seq) + i as u64),
    }
}

fn facts(i: usize, cell: &plan::Cell) -> Value {
    // Two kernels within one configuration (fio and dd of one board, storage and image).
    let kernel = if cell.address.board.as_str() == "b-2"
        && cell.address.test.as_str() == "dd"
        && cell.address.image.as_str() == "os1"
    {
        "Linux 6.6.32+rpt-rpi-v8 aarch64"
    } else {
        "Linux 6.6.31+rpt-rpi-v8 aarch64"
    };
    let mut f = json!({
        "benchpipe": "0.1.0", "board": cell.address.board.as_str(),
        "cpu_model": "Cortex-A72", "cpus": "4", "kernel": kernel,
        "memory_kib": "3884852", "model": "Raspberry Pi 4 Model B Rev 1.4",
        "os_release": { "ID": "debian", "VERSION_ID": "12", "PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)" },
        "packages": { "installed": { "fio": "3.33-3" }, "manager": "apt" },
        "tools": { "fio": "fio-3.33\nsecond line" },
        "storage_filesystem": { "mount_point": "/mnt/x", "source": "/dev/sda1", "type": "ext4" },
    });
    if cell.address.storage.is_some() {
        f["storage"] = json!({
            "device": "/dev/sda", "model": "A400", "vendor": "KINGSTON",
            "rotational": false, "size_bytes": 240057409536u64, "scheduler": "mq-deadline",
            "usb": { "driver": if i.is_multiple_of(2) { "uas" } else { "usb-storage" }, "speed": "5000M", "id": "174c:55aa" },
        });
    }
    f
}

/// Writes every cell of `cells` through the store's writer, each in its own way.
fn fill(store: &Store, cells: &[plan::Cell]) {
    for (i, cell) in cells.iter().enumerate() {
        if i == 13 {
            continue; // never measured
        }
        let meter = cell.address.board.as_str() == "b-3";
        let mut w = store.begin(cell).unwrap();
        if i == 11 {
            w.record_skip("1700000000-42", 1.0, "fio is not installed on b-x")
                .unwrap();
            continue;
        }
        let measured: u32 = match i {
            15 => 2, // partial
            i if i.is_multiple_of(7) => 5,
            _ => 3,
        };
        let mut seq = 1;
        w.append(&sample(i, cell, seq, RunKind::Warmup, meter))
            .unwrap();
        for _ in 0..measured {
            seq += 1;
            w.append(&sample(i, cell, seq, RunKind::Measured, meter))
                .unwrap();
        }
        w.write_facts(&CellFacts::of_stored(&facts(i, cell)), "1700000000-42")
            .unwrap();
        if i == 5 {
            // Measured again: the runs so far stay stored and no longer count.
            store.mark_redo(cell, "1700000500-7").unwrap();
            for _ in 0..3 {
                seq += 1;
                w.append(&sample(i, cell, seq, RunKind::Measured, meter))
                    .unwrap();
            }
        }
        if i == 9 {
            let cause = benchpipe::failure::CellFailure::Timeout {
                command: "fio --name=t".into(),
                after_secs: 600.0,
            };
            w.record_failure("1700000900-17", 2.0, &cause).unwrap();
        }
        if i == 17 {
            store
                .adopt_fingerprint(cell, &fingerprint("6.6.31"))
                .unwrap();
            store
                .record_drift(cell, OnDrift::Keep, &fingerprint("6.6.32"), "1700000900-17")
                .unwrap();
        } else if i.is_multiple_of(3) {
            store
                .adopt_fingerprint(cell, &fingerprint("6.6.31"))
                .unwrap();
        }
    }
}

/// Where two byte strings first differ, as lines.
fn first_difference(want: &[u8], got: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(want), String::from_utf8_lossy(got));
    a.split('\n')
        .zip(b.split('\n'))
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .map_or_else(
            || {
                format!(
                    "one is a prefix of the other ({} and {} bytes)",
                    a.len(),
                    b.len()
                )
            },
            |(i, (x, y))| format!("line {}:\n  - {x}\n  + {y}", i + 1),
        )
}

/// The model the templates render, as JSON, its charts left out.
fn model_json(model: &report::Report) -> Vec<u8> {
    let mut v = serde_json::to_value(model).unwrap();
    for t in v["tables"].as_array_mut().unwrap() {
        let n = t["charts"].as_array().map_or(0, Vec::len);
        t["charts"] = json!(format!("{n} chart(s), not pinned here"));
    }
    let mut out = serde_json::to_vec_pretty(&v).unwrap();
    out.push(b'\n');
    out
}

#[test]
fn reports_of_a_synthetic_store_are_the_pinned_bytes() {
    let dir = Scratch::new("report-bytes");
    project(&dir);
    let files: Vec<PathBuf> = ["syn-a", "syn-b"]
        .iter()
        .map(|s| dir.join(format!("scenarios/{s}.toml")))
        .collect();
    let ws = check::load(&dir, &files).expect("the synthetic project loads");
    let cells = plan::expand(&ws, &ws.scenarios[0]).cells;
    let store = Store::open(dir.join("results")).unwrap();
    fill(&store, &cells);
    // b-3's file is gone: its cells come from the store alone.
    std::fs::remove_file(dir.join("boards/b-3.toml")).unwrap();

    let data = store.all().unwrap();
    let ws = check::load_for_report(&dir, &files, 100_000, &cli::stored_names(&data))
        .expect("the project loads for a report");
    let out = dir.join("reports");
    cli::write_reports(&ws, &store, &out).unwrap();
    let mut got: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for (scenario, plan) in cli::report_plans(&ws, &store, &data).unwrap() {
        let model = report::build(&ws, scenario, &plan, &data);
        got.insert(format!("{}/model.json", scenario.name), model_json(&model));
        for file in ["report.json", "results.csv", "index.md", "index.html"] {
            let bytes = std::fs::read(out.join(&scenario.name).join(file)).unwrap();
            got.insert(format!("{}/{file}", scenario.name), bytes);
        }
    }
    if std::env::var_os("BENCHPIPE_BLESS").is_some_and(|v| v == "1") {
        for (rel, bytes) in &got {
            let p = pinned().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
    }
    let mut diffs = Vec::new();
    for (rel, bytes) in &got {
        match std::fs::read(pinned().join(rel)) {
            Err(e) => diffs.push(format!("{rel}: not pinned ({e})")),
            Ok(want) if &want != bytes => {
                diffs.push(format!("{rel}: {}", first_difference(&want, bytes)));
            }
            Ok(_) => {}
        }
    }
    drop(dir);
    assert!(
        diffs.is_empty(),
        "the reports differ from tests/data/report-bytes/ (pinned first, now second); \
         if the change is meant, run with BENCHPIPE_BLESS=1 and read the diff:\n{}",
        diffs.join("\n")
    );
}
