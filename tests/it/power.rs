//! Integration tests: power metering on lab boards (real sshds in network namespaces)
//! through the real binary. No power meter exists here, so the meters are FAKES: a
//! file the board's sampler reads as a hwmon `power1_input`, and a smart plug whose
//! Shelly-shaped JSON answer real curl fetches from a file. The recipe under test
//! switches each fake to its load value while it runs and back to idle after.

use crate::lab::bp;
use crate::scratch::Scratch;
use std::path::{Path, PathBuf};

use crate::lab::Lab;
use crate::spine::text;

/// Measured samples of `test` per board name.
fn measured(root: &Path, test: &str, board: &str) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.ends_with(&format!("-{test}-{board}")) {
            continue;
        }
        let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if v["kind"] == "measured" {
                out.push(v);
            }
        }
    }
    out
}

/// Every 32-hex-digit word of a text: the cell keys `plan --json` shows.
fn keys(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .filter(|w| w.len() == 32)
        .map(str::to_string)
        .collect()
}

/// The fakes' directory, per board: `now` is what the meter reads, `idle` and `load`
/// what the recipe copies over it.
fn fakes(tag: &str, boards: &[(&str, &str, &str)]) -> Scratch {
    let dir = Scratch::new(&format!("power-{tag}"));
    for (board, idle, load) in boards {
        let d = dir.join(board);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("idle"), idle).unwrap();
        std::fs::write(d.join("load"), load).unwrap();
        std::fs::write(d.join("now"), idle).unwrap();
    }
    dir
}

/// A lab project whose `busy` test puts the board's fake meter at its load value for
/// the run (replacing the file whole, so no reader sees half of it).
fn project(lab: &Lab, fakes: &Path) {
    let d = fakes.display();
    let busy = format!(
        r#"description = "works for 4 s with the fake meter at its load value"
uses_storage = false
[run]
command = "cp {d}/{{{{ board }}}}/load {d}/{{{{ board }}}}/tmp && mv {d}/{{{{ board }}}}/tmp {d}/{{{{ board }}}}/now; sleep 4; cp {d}/{{{{ board }}}}/idle {d}/{{{{ board }}}}/tmp && mv {d}/{{{{ board }}}}/tmp {d}/{{{{ board }}}}/now; echo '{{\"value\": 20}}'"
parse = "json"
[metrics]
value = {{ from = "value", unit = "MB", better = "higher" }}
value_per_w = {{ per_watt = "value" }}
energy = {{ joules = true }}
"#
    );
    lab.project_on_every_board(&[("busy", &busy)], &["busy"], 2);
}

fn add_meter(lab: &Lab, i: usize, meter: &str) {
    let b = lab.board(i);
    let file = if b.board_file.is_absolute() {
        b.board_file.clone()
    } else {
        lab.root.join(&b.board_file)
    };
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str(&format!("\n[meter]\n{meter}idle = \"2s\"\n"));
    std::fs::write(&file, text).unwrap();
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn fake_power_file_and_fake_smart_plug_give_separate_idle_and_load_watts() {
    let Some(lab) = Lab::up(2) else { return };
    let (b0, b1) = (lab.board(0).name.to_string(), lab.board(1).name.to_string());
    let shelly = |w: f64| {
        include_str!("../data/power/shelly-switch-getstatus.json").replace("4.87", &w.to_string())
    };
    let f = fakes(
        "ok",
        &[
            (&b0, "3750000\n", "5290000\n"),
            (&b1, &shelly(3.4), &shelly(4.87)),
        ],
    );
    project(&lab, &f);
    let before = bp(&lab.root, &["plan", "scenarios/s.toml", "--json"]);
    assert!(before.status.success(), "{}", text(&before));

    add_meter(&lab, 0, &format!("file = \"{}/{b0}/now\"\n", f.display()));
    add_meter(
        &lab,
        1,
        &format!(
            "command = \"curl -fsS --max-time 2 file://{}/{b1}/now\"\njson = \"apower\"\n",
            f.display()
        ),
    );
    let after = bp(&lab.root, &["plan", "scenarios/s.toml", "--json"]);
    assert!(after.status.success(), "{}", text(&after));
    let k = keys(&String::from_utf8_lossy(&after.stdout));
    assert_eq!(k.len(), 2, "{}", text(&after));
    assert_eq!(
        keys(&String::from_utf8_lossy(&before.stdout)),
        k,
        "a meter changes no cell key"
    );

    let apply = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    // The sampler's file (board side, µW) and the plug's JSON (controller side, W).
    for (board, idle, load, source) in [
        (&b0, 3.75, 5.29, "file "),
        (&b1, 3.4, 4.87, "controller command"),
    ] {
        let samples = measured(&lab.root, "busy", board);
        assert_eq!(samples.len(), 2, "{board}");
        for s in &samples {
            let p = &s["telemetry"]["power"];
            assert!(p["source"].as_str().unwrap().starts_with(source), "{s}");
            assert!(p.get("error").is_none(), "{s}");
            // Idle readings are all the fake's idle value; those of the run are its
            // load value, but for a reading at either edge that may catch the idle
            // value: the mean lies between, the top is the load value.
            assert!(close(p["idle_w"].as_f64().unwrap(), idle), "{s}");
            assert!(p["idle_samples"].as_u64().unwrap() >= 1, "{s}");
            assert!(close(p["power_w_max"].as_f64().unwrap(), load), "{s}");
            assert!(p["power_w_min"].as_f64().unwrap() >= idle - 1e-6, "{s}");
            let w = p["power_w"].as_f64().unwrap();
            assert!(w > idle + 1e-6 && w <= load + 1e-6, "{s}");
            // The same means are the sample's metrics, beside the parsed one.
            assert_eq!(s["metrics"]["power_w"], p["power_w"], "{s}");
            assert_eq!(s["metrics"]["idle_w"], p["idle_w"], "{s}");
            assert_eq!(s["metrics"]["value"], 20.0, "{s}");
            assert!(
                s["metrics"].get("value_per_w").is_none(),
                "derived, never stored: {s}"
            );
        }
    }

    let report = bp(&lab.root, &["report", "scenarios/s.toml"]);
    assert!(report.status.success(), "{}", text(&report));
    let md = std::fs::read_to_string(lab.root.join("reports/s/index.md")).unwrap();
    for column in [
        "| idle power (W) ↓ |",
        "| power (W) ↓ |",
        "value_per_w",
        "energy",
        "MB/W",
        "(J)",
        "n = 2 measured runs per value.",
    ] {
        assert!(md.contains(column), "{column}\n{md}");
    }
    assert!(!md.contains("power unknown"), "{md}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lab.root.join("reports/s/report.json")).unwrap(),
    )
    .unwrap();
    let table = &json["tables"][0];
    let names: Vec<&str> = table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["value", "value_per_w", "energy", "idle_w", "power_w"],
        "the recipe's order, then the meter's: {table}"
    );
    for row in table["rows"].as_array().unwrap() {
        let v = |i: usize| row["values"][i]["mean"].as_f64().unwrap();
        // value / power_w and power_w × seconds, from the same runs.
        assert!(
            v(1) > 20.0 / 5.29 - 1e-6 && v(1) < 20.0 / 3.4 + 1e-6,
            "{row}"
        );
        assert!(
            v(2) > 3.4 * 4.0 - 1e-6,
            "at least 4 s at no less than idle: {row}"
        );
        assert_eq!(row["values"][4]["n"], 2, "{row}");
    }
}

#[test]
fn fake_meters_that_fail_warn_on_the_sample_and_the_cell_completes() {
    let Some(lab) = Lab::up(2) else { return };
    let (b0, b1) = (lab.board(0).name.to_string(), lab.board(1).name.to_string());
    let f = fakes("broken", &[(&b0, "1\n", "2\n"), (&b1, "1\n", "2\n")]);
    project(&lab, &f);
    add_meter(&lab, 0, &format!("file = \"{}/{b0}/gone\"\n", f.display()));
    add_meter(
        &lab,
        1,
        &format!(
            "command = \"curl -fsS --max-time 2 file://{}/{b1}/gone\"\n",
            f.display()
        ),
    );
    let apply = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(
        apply.status.success(),
        "a broken meter fails no cell: {}",
        text(&apply)
    );
    for (board, why) in [
        (&b0, "not a readable regular file"),
        (&b1, "the meter's command failed (exit status 37)"),
    ] {
        let samples = measured(&lab.root, "busy", board);
        assert_eq!(samples.len(), 2, "{board}");
        for s in &samples {
            let err = s["telemetry"]["power"]["error"]
                .as_str()
                .unwrap_or_default();
            assert!(err.contains(why), "{s}");
            assert!(s["metrics"].get("power_w").is_none(), "{s}");
            assert_eq!(s["metrics"]["value"], 20.0, "{s}");
        }
    }
    let report = bp(&lab.root, &["report", "scenarios/s.toml"]);
    assert!(report.status.success(), "{}", text(&report));
    let md = std::fs::read_to_string(lab.root.join("reports/s/index.md")).unwrap();
    assert!(md.contains("2 of 2 runs power unknown (kept)"), "{md}");
    assert!(
        md.contains("some runs: power unknown (kept in the statistics)"),
        "{md}"
    );
    assert!(
        !md.contains("power (W"),
        "no watts column without watts: {md}"
    );
}

/// The sum over rails with both a current and a voltage line, paired by name.
fn pmic_rails_watts(text: &str) -> f64 {
    let mut amps = std::collections::BTreeMap::new();
    let mut volts = std::collections::BTreeMap::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(name), Some(reading)) = (f.next(), f.next()) else {
            continue;
        };
        let value: f64 = reading
            .rsplit('=')
            .next()
            .unwrap()
            .trim_end_matches(['A', 'V'])
            .parse()
            .unwrap();
        match (name.strip_suffix("_A"), name.strip_suffix("_V")) {
            (Some(rail), _) => amps.insert(rail.to_string(), value),
            (_, Some(rail)) => volts.insert(rail.to_string(), value),
            _ => None,
        };
    }
    amps.iter()
        .filter_map(|(r, a)| volts.get(r).map(|v| a * v))
        .sum()
}

/// A Pi 5's PMIC through a FAKE `vcgencmd` (no Pi here) printing real
/// `pmic_read_adc` output: the board's sampler sums the rails at every tick.
#[test]
fn fake_vcgencmd_pmic_read_adc_gives_the_rails_sum_idle_and_during_the_run() {
    use benchpipe::model::{Board, BoardName, Connection, Flash, Meter, MeterSource};
    use benchpipe::telemetry::{Probe, SamplerOptions, Thresholds};
    use benchpipe::transport::Transport;
    use benchpipe::transport::local::Local;

    let dir = Scratch::new("power-pmic");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/power/pmic_read_adc-pi5.txt");
    let fake = bin.join("vcgencmd");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase $1 in\n  pmic_read_adc) cat '{}' ;;\n  get_throttled) echo throttled=0x0 ;;\n  *) exit 2 ;;\nesac\n",
            data.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let board = Board {
        name: BoardName::new("pi5"),
        file: PathBuf::from("boards/pi5.toml"),
        model: "fake Pi 5".into(),
        arch: Vec::new(),
        memory: None,
        memory_mib: None,
        connection: Connection::Local,
        flash: Flash::None,
        power: None,
        meter: None,
        storage: Vec::new(),
        network: Vec::new(),
        workdir: dir.join("work").display().to_string(),
        thermal: None,
        accept_new_host_key: false,
        boot_cmdline: None,
        health: Vec::new(),
        labgrid: None,
    };
    let options = SamplerOptions {
        path_prefix: Some(bin.display().to_string()),
        meter: Some(Meter {
            source: MeterSource::Pmic,
            idle: std::time::Duration::from_secs(2),
        }),
        ..SamplerOptions::default()
    };
    let mut t = Local::new();
    let probe = Probe::start_with(&mut t, &board, "pmic", &options).unwrap();
    let out = t.run(&probe.wrap("sleep 2"), None).unwrap();
    assert!(out.exit.success(), "{}", out.stderr_str());
    let done = probe.finish(&mut t, &Thresholds::default()).unwrap();
    let p = done.summary.power.expect("a power summary");
    let want = pmic_rails_watts(&std::fs::read_to_string(&data).unwrap());
    assert_eq!(p.source, "vcgencmd pmic_read_adc", "{}", done.trace);
    assert_eq!(p.error, None, "{}", done.trace);
    assert!(p.idle_samples >= 1 && p.load_samples >= 1, "{}", done.trace);
    assert!((p.idle_w.unwrap() - want).abs() < 1e-5, "{p:?} vs {want}");
    assert!((p.power_w.unwrap() - want).abs() < 1e-5, "{p:?} vs {want}");
}
