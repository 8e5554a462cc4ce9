//! Integration tests: the shipped seed scenarios. The hardware studies
//! (`turing-pi-disk`, `sbc-xz-fs`) pass `check` and their plans name every cell of the
//! seeds' tables, with no hardware; the lab-shaped variants and `lab-storage` run as
//! shipped (only the board glob renamed to the test lab's prefix) on a lab of their
//! own, every cell completed with numbers or skipped with its reason.

use crate::lab::bp;
use crate::scratch::Scratch;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::lab::Lab;
use crate::repo;

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn copy_tomls(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "toml") {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// The seed workspace (examples/seeds/: the seeds' boards and scenarios) with the
/// repository's own boards and scenarios beside it, no pipeline/ (the built-in recipes
/// stand in), and an empty store. Not a `Project`, which makes a pipeline/.
pub(crate) fn workspace(tag: &str) -> Scratch {
    let root = Scratch::new(&format!("seeds-{tag}"));
    for d in ["boards", "scenarios"] {
        copy_tomls(&repo().join("examples/seeds").join(d), &root.join(d));
        copy_tomls(&repo().join(d), &root.join(d));
    }
    root
}

pub(crate) fn toml_of(path: &Path) -> toml::Table {
    std::fs::read_to_string(path).unwrap().parse().unwrap()
}

/// `plan --json` of a scenario after `check` accepted it.
pub(crate) fn plan(root: &Path, scenario: &str) -> Value {
    let check = bp(root, &["check", scenario]);
    assert!(
        check.status.success(),
        "check {scenario}: {}",
        stderr(&check)
    );
    let out = bp(root, &["plan", "--json", scenario]);
    assert!(out.status.success(), "plan {scenario}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each planned cell as (image, board, storage, filesystem, test); "-" for none.
fn addresses(plan: &Value) -> BTreeSet<[String; 5]> {
    plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let a = &c["address"];
            let f = |k: &str| a[k].as_str().unwrap_or("-").to_string();
            [
                f("image"),
                f("board"),
                f("storage"),
                f("filesystem"),
                f("test"),
            ]
        })
        .collect()
}

fn cell(image: &str, board: &str, storage: &str, fs: &str, test: &str) -> [String; 5] {
    [image, board, storage, fs, test].map(String::from)
}

#[test]
fn the_turing_pi_disk_study_plans_every_cell_of_the_first_seeds_disk_tables() {
    let root = workspace("turing");
    let doc = plan(&root, "scenarios/turing-pi-disk.toml");
    let got = addresses(&doc);
    // The seed's rows (disk table, UASP table, CM3+ table): board and storage, with the
    // filesystem it was measured on (the image's own for boot media, ext4 on the SSDs).
    let rows = [
        ("turing-cm3-1", "emmc", "image"),              // CM3+ 8 GB eMMC
        ("turing-cm3-2", "microsd", "image"),           // CM3+ microSD, Samsung Evo+
        ("turing-cm3-1", "kingston-usb", "ext4"),       // CM3+ Kingston USB SSD
        ("dramble-pi4-1", "microsd", "image"),          // Pi 4 microSD
        ("dramble-pi4-1", "kingston-usb3-bot", "ext4"), // Pi 4 USB 3.0 SSD w/o UASP
        ("dramble-pi4-1", "kingston-usb3-uas", "ext4"), // Pi 4 USB 3.0 SSD w/ UASP
        ("turing-cm3-1", "kingston-usb3-uas", "ext4"),  // CM3+ USB 3.0 SSD w/ UASP
    ];
    let mut want = BTreeSet::new();
    for image in ["hypriotos", "raspios-32", "raspios-64"] {
        for (board, storage, fs) in rows {
            for test in ["iozone", "dd-write"] {
                want.insert(cell(image, board, storage, fs, test));
            }
            // hdparm reads the raw device: no filesystem in its address.
            let hdparm = got
                .iter()
                .filter(|c| c[0] == image && c[1] == board && c[2] == storage && c[4] == "hdparm")
                .count();
            assert_eq!(hdparm, 1, "hdparm on {board} {storage} ({image}): {got:?}");
        }
    }
    let missing: Vec<_> = want.difference(&got).collect();
    assert!(
        missing.is_empty(),
        "cells of the seed's tables not planned: {missing:?}"
    );
    assert_eq!(
        got.len(),
        63,
        "7 rows x 3 tests x 3 images, nothing else: {got:?}"
    );
    for c in doc["cells"].as_array().unwrap() {
        assert_eq!(c["state"]["want"], 3, "3 measured runs: {c}");
    }

    // The method: 4 runs, the first discarded, after a 15-minute cool-down.
    let s = toml_of(&root.join("scenarios/turing-pi-disk.toml"));
    let m = &s["method"];
    assert_eq!(m["cooldown"].as_str(), Some("15m"));
    assert_eq!(m["warmup"]["runs"].as_integer(), Some(1));
    assert_eq!(m["runs"]["min"].as_integer(), Some(3));
    assert_eq!(m["runs"]["max"].as_integer(), Some(3));
    // The three images by url and a 64-hex-digit sha256.
    for image in ["hypriotos", "raspios-32", "raspios-64"] {
        let i = &s["images"][image];
        assert!(
            i["url"].as_str().unwrap().starts_with("https://"),
            "{image}"
        );
        let sha = i["sha256"].as_str().unwrap();
        assert!(
            sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()),
            "{image}"
        );
    }
    // UASP off against on: the seed's two cases, each a storage with its own device and
    // the driver it must run under; no board state (no command line edit) for them.
    let compares = s["report"]["compare"].as_array().unwrap();
    assert!(compares.iter().any(|c| {
        c["baseline"]["storage"].as_str() == Some("kingston-usb3-bot")
            && c["candidate"]["storage"].as_str() == Some("kingston-usb3-uas")
    }));
    let pi4 = toml_of(&root.join("boards/dramble-pi4-1.toml"));
    let storage = pi4["storage"].as_array().unwrap();
    let by_name = |n: &str| {
        storage
            .iter()
            .find(|s| s["name"].as_str() == Some(n))
            .unwrap()
    };
    let (bot, uas) = (by_name("kingston-usb3-bot"), by_name("kingston-usb3-uas"));
    assert_eq!(bot["driver"].as_str(), Some("usb-storage"));
    assert_eq!(uas["driver"].as_str(), Some("uas"));
    assert_ne!(bot["device"], uas["device"], "two cases, two USB devices");
    let schedule = doc["schedule"].to_string();
    assert!(
        !schedule.contains("\"uas\""),
        "no uas step for cases that are what they are: {schedule}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_sbc_study_plans_every_cell_of_the_second_seeds_xz_and_filesystem_tables() {
    let root = workspace("sbc");
    let doc = plan(&root, "scenarios/sbc-xz-fs.toml");
    let got = addresses(&doc);
    let boards = [
        ("rpi3-1", "raspbian-stretch"),
        ("opi-zero-plus-1", "armbian-stretch"),
        ("opi-one-plus-1", "armbian-stretch"),
        ("odroid-hc2-1", "ubuntu-bionic"),
    ];
    let mut want = BTreeSet::new();
    // The xz table: one row per board (xz uses no storage).
    for (board, image) in boards {
        want.insert(cell(image, board, "-", "-", "xz"));
    }
    // The seed's ODROID pinned to its fast cores.
    want.insert(cell("ubuntu-bionic", "odroid-hc2-1", "-", "-", "xz-pinned"));
    // The EXT4 vs BTRFS LZO table: every board's USB disk, and the HC2's SATA disk.
    let mut disks: Vec<(&str, &str, &str)> =
        boards.iter().map(|(b, i)| (*b, *i, "usb-hdd")).collect();
    disks.push(("odroid-hc2-1", "ubuntu-bionic", "sata-hdd"));
    for (board, image, storage) in disks {
        for fs in ["ext4", "btrfs-lzo"] {
            want.insert(cell(image, board, storage, fs, "fs-stack"));
        }
    }
    let missing: Vec<_> = want.difference(&got).collect();
    assert!(
        missing.is_empty(),
        "cells of the seed's tables not planned: {missing:?}"
    );
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(extra.is_empty(), "cells the seed has not: {extra:?}");

    let s = toml_of(&root.join("scenarios/sbc-xz-fs.toml"));
    assert_eq!(s["params"]["xz-pinned"]["threads"].as_str(), Some("4-7"));
    let lzo = s["filesystems"]["btrfs-lzo"]["mount_options"]
        .as_array()
        .unwrap();
    assert!(lzo.iter().any(|o| o.as_str() == Some("compress-force=lzo")));
    let compares = s["report"]["compare"].as_array().unwrap();
    assert!(compares.iter().any(|c| {
        c["baseline"]["filesystem"].as_str() == Some("ext4")
            && c["candidate"]["filesystem"].as_str() == Some("btrfs-lzo")
    }));
    let _ = std::fs::remove_dir_all(&root);
}

/// `fs-stack` is a local write and read on the board, and the sbc scenarios' reports say
/// so; the second seed's EXT4 vs BTRFS LZO table, a file through Samba, is `smb-fs`'s,
/// in the sbc-serving report under the seed's headings. Rendered from an empty store:
/// the names and tables are the scenario's, whatever was measured.
#[test]
fn the_sbc_reports_name_fs_stack_local_and_keep_the_seeds_samba_table_on_smb_fs() {
    let root = workspace("sbc-names");
    let out = bp(
        &root,
        &[
            "report",
            "--out",
            "reports",
            "scenarios/sbc-xz-fs.toml",
            "scenarios/sbc-serving.toml",
        ],
    );
    assert!(out.status.success(), "report: {}", stderr(&out));
    let md =
        |s: &str| std::fs::read_to_string(root.join("reports").join(s).join("index.md")).unwrap();
    let (xz_fs, serving) = (md("sbc-xz-fs"), md("sbc-serving"));
    // Every line of the xz-fs report that names ext4 vs btrfs-lzo says it is local, or
    // points to the Samba figure elsewhere.
    let head = xz_fs.lines().next().unwrap();
    assert!(head.contains("local ext4 vs btrfs-lzo"), "{head}");
    for line in xz_fs
        .lines()
        .filter(|l| l.to_lowercase().contains("btrfs lzo"))
    {
        assert!(line.contains("Samba") && line.contains("smb-fs"), "{line}");
    }
    assert!(
        xz_fs.contains("## Local write/read on the board: ext4 vs btrfs-lzo (not through Samba)"),
        "{xz_fs}"
    );
    assert!(
        xz_fs.contains("## fs-stack\n\nLocal, on the board (no network)"),
        "{xz_fs}"
    );
    // The seed's table, on smb-fs.
    let table = serving
        .split("## EXT4 vs BTRFS LZO through Samba\n")
        .nth(1)
        .expect("the seed's Samba table in the sbc-serving report");
    assert!(table.contains("(smb-fs)"), "{table}");
    let s = toml_of(&root.join("scenarios/sbc-serving.toml"));
    let tables = s["report"]["table"].as_array().unwrap();
    assert!(tables.iter().any(|t| {
        t["title"].as_str() == Some("EXT4 vs BTRFS LZO through Samba")
            && t["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c.as_str().unwrap())
                .collect::<Vec<_>>()
                == ["smb-fs.write", "smb-fs.read"]
            && t["labels"]["smb-fs.write"].as_str() == Some("Write MB/s")
            && t["labels"]["smb-fs.read"].as_str() == Some("Read MB/s")
    }));
    let _ = std::fs::remove_dir_all(&root);
}

/// The README's first command's scenario selects only localhost beside the seed boards:
/// no step of its schedule names another board.
#[test]
fn the_localhost_demo_plans_only_localhost_beside_the_seed_hardware_boards() {
    let root = workspace("localhost");
    let doc = plan(&root, "scenarios/localhost.toml");
    for c in doc["cells"].as_array().unwrap() {
        assert_eq!(c["address"]["board"], "localhost", "{c}");
    }
    let schedule = doc["schedule"].to_string();
    for other in ["turing-cm3", "dramble", "rpi3", "opi-", "odroid"] {
        assert!(
            !schedule.contains(other),
            "{other} in the schedule: {schedule}"
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// Runs a shipped lab scenario on a 1-board lab with two 320 MiB disks (mkfs.xfs wants
/// 300 MB), as shipped but for the board glob; returns the lab and the plan after.
fn run_shipped_on_a_lab(name: &str) -> Option<(Lab, Value, String)> {
    let lab = Lab::up_with_options(1, |o| {
        o.disks_per_board = 2;
        o.disk_bytes = 320 << 20;
    })?;
    let root = lab.root.clone();
    copy_tomls(&repo().join("pipeline"), &root.join("pipeline"));
    let shipped = std::fs::read_to_string(repo().join(format!("scenarios/{name}.toml"))).unwrap();
    assert_eq!(shipped.matches("board = [\"lab-*\"]").count(), 1, "{name}");
    let text = shipped.replace(
        "board = [\"lab-*\"]",
        &format!("board = [\"{}-*\"]", lab.options.board_prefix),
    );
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    let file = format!("scenarios/{name}.toml");
    std::fs::write(root.join(&file), text).unwrap();
    let check = bp(&root, &["check", &file]);
    assert!(check.status.success(), "{}", stderr(&check));
    let out = bp(&root, &["apply", &file]);
    let err = stderr(&out);
    assert!(out.status.success(), "apply {name}: {err}");
    let doc = plan(&root, &file);
    let s = &doc["summary"];
    for k in ["missing", "partial", "failed"] {
        assert_eq!(s[k], 0, "{k} cells after apply of {name}: {s}\n{err}");
    }
    Some((lab, doc, err))
}

/// Every stored cell's samples: each metric finite and not negative, and the test's
/// primary metrics above zero; returns how many cells were measured per test.
fn measured_cells(root: &Path) -> std::collections::BTreeMap<String, usize> {
    let mut per_test = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(e.path().join("cell.json")) else {
            continue;
        };
        let cell: Value = serde_json::from_str(&text).unwrap();
        let test = cell["address"]["test"].as_str().unwrap().to_string();
        assert!(
            !e.path().join("failure.json").exists(),
            "{}",
            e.path().display()
        );
        let recipe = toml_of(&repo().join(format!("pipeline/{test}.toml")));
        let samples = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        let mut n = 0;
        for line in samples.lines() {
            let sample: Value = serde_json::from_str(line).unwrap();
            for (metric, v) in sample["metrics"].as_object().unwrap() {
                let v = v.as_f64().unwrap();
                assert!(v.is_finite() && v >= 0.0, "{test}.{metric} = {v}: {cell}");
                // Metrics apply adds (watts, a series' maxima) are no recipe's.
                let primary = recipe["metrics"]
                    .get(metric.as_str())
                    .and_then(|m| m.get("primary"))
                    .and_then(toml::Value::as_bool)
                    .unwrap_or(false);
                assert!(!primary || v > 0.0, "{test}.{metric} = {v}: {cell}");
            }
            n += 1;
        }
        if n > 0 {
            *per_test.entry(test).or_insert(0) += 1;
        }
    }
    per_test
}

/// What was skipped at run time and why, as (test, reason), from the store's skip.json
/// (a tool that is not installed, a device that is no disk).
fn skip_reasons(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let (Ok(cell), Ok(skip)) = (
            std::fs::read_to_string(e.path().join("cell.json")),
            std::fs::read_to_string(e.path().join("skip.json")),
        ) else {
            continue;
        };
        let cell: Value = serde_json::from_str(&cell).unwrap();
        let skip: Value = serde_json::from_str(&skip).unwrap();
        out.push((
            cell["address"]["test"].as_str().unwrap().to_string(),
            skip["reason"].as_str().unwrap_or("").to_string(),
        ));
    }
    out
}

/// What the plan skips and why, as (test, reason): known before a run (a kernel
/// without f2fs, from the board's stored facts).
fn plan_skips(doc: &Value) -> Vec<(String, String)> {
    doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["address"]["test"].as_str().unwrap_or("").to_string(),
                s["reason"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn the_shipped_lab_storage_scenario_measures_every_storage_and_filesystem_and_skips_f2fs_with_its_reason()
 {
    let Some((lab, doc, err)) = run_shipped_on_a_lab("lab-storage") else {
        return;
    };
    let board = lab.board(0).name.to_string();
    let measured = measured_cells(&lab.root);
    // 2 disks x ext4, btrfs-lzo, xfs (f2fs skipped here) for each disk test; xz once.
    for test in ["disk-4k", "disk-1m", "dd-write", "fs-stack"] {
        assert_eq!(measured.get(test), Some(&6), "{test}: {measured:?}\n{err}");
    }
    assert_eq!(measured.get("xz"), Some(&1), "{measured:?}");
    let reason = format!("the kernel of {board} has no f2fs");
    let skipped = plan_skips(&doc);
    let f2fs = skipped.iter().filter(|(_, r)| *r == reason).count();
    assert_eq!(f2fs, 8, "2 disks x 4 disk tests on f2fs: {skipped:?}");

    // The report's disk table: one row per board, storage and filesystem, with 4K
    // random read and write.
    let report = bp(&lab.root, &["report", "scenarios/lab-storage.toml"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(lab.root.join("reports/lab-storage/index.md")).unwrap();
    let section = md
        .split("disk-4k")
        .nth(1)
        .unwrap_or_else(|| panic!("no disk-4k in {md}"));
    assert!(
        section.contains("4K random read (MB/s") && section.contains("4K random write (MB/s"),
        "{md}"
    );
    for disk in ["disk1", "disk2"] {
        for fs in ["ext4", "btrfs-lzo", "xfs"] {
            assert!(
                md.lines()
                    .any(|l| l.contains(&board) && l.contains(disk) && l.contains(fs)),
                "no row for {board} {disk} {fs} in:\n{md}"
            );
        }
    }
}

#[test]
fn the_shipped_lab_turing_pi_disk_scenario_runs_dd_and_iozone_and_skips_hdparm_with_its_reason() {
    const NAME: &str = "the_shipped_lab_turing_pi_disk_scenario_runs_dd_and_iozone_and_skips_hdparm_with_its_reason";
    if !crate::lab::sh("command -v iozone || true")
        .trim()
        .starts_with('/')
    {
        crate::cannot_run(
            NAME,
            "Debian's iozone3 (non-free) is not installed here: `.ci/run` installs it",
        );
        return;
    }
    let Some((lab, _doc, err)) = run_shipped_on_a_lab("lab-turing-pi-disk") else {
        return;
    };
    let measured = measured_cells(&lab.root);
    assert_eq!(measured.get("dd-write"), Some(&2), "{measured:?}\n{err}");
    assert_eq!(measured.get("iozone"), Some(&2), "{measured:?}\n{err}");
    let skipped = skip_reasons(&lab.root);
    let of = |t: &str| {
        skipped
            .iter()
            .filter(|(test, _)| test == t)
            .collect::<Vec<_>>()
    };
    assert_eq!(of("hdparm").len(), 2, "{skipped:?}");
    assert!(
        of("hdparm").iter().all(|(_, r)| !r.is_empty()),
        "{skipped:?}"
    );
}

#[test]
fn the_shipped_lab_sbc_scenario_measures_xz_pinned_and_unpinned_and_ext4_against_btrfs_lzo() {
    let Some((lab, _doc, err)) = run_shipped_on_a_lab("lab-sbc-xz-fs") else {
        return;
    };
    let measured = measured_cells(&lab.root);
    assert_eq!(measured.get("xz"), Some(&1), "{measured:?}\n{err}");
    assert_eq!(measured.get("xz-pinned"), Some(&1), "{measured:?}\n{err}");
    assert_eq!(
        measured.get("fs-stack"),
        Some(&4),
        "2 disks x 2 filesystems: {measured:?}"
    );
}

#[test]
fn the_shipped_lab_serving_scenario_serves_measures_the_network_and_leaves_nothing_running() {
    let Some((lab, _doc, err)) = run_shipped_on_a_lab("lab-serving") else {
        return;
    };
    let measured = measured_cells(&lab.root);
    for (test, cells) in [
        ("http", 1),
        ("smb", 1),
        ("nfs", 1),
        ("smb-fs", 2),
        ("iperf3-bidir", 1),
        ("iperf", 1),
        ("startup-nginx", 1),
        ("burn-in", 1),
    ] {
        assert_eq!(
            measured.get(test),
            Some(&cells),
            "{test}: {measured:?}\n{err}"
        );
    }
    crate::serving::assert_nothing_left(lab.board(0));
}

/// Each planned cell as (image, board, storage, filesystem, network, test); "-" for none.
fn addresses_with_network(plan: &Value) -> BTreeSet<[String; 6]> {
    plan["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let a = &c["address"];
            let f = |k: &str| a[k].as_str().unwrap_or("-").to_string();
            [
                f("image"),
                f("board"),
                f("storage"),
                f("filesystem"),
                f("network"),
                f("test"),
            ]
        })
        .collect()
}

#[test]
fn the_sbc_serving_study_plans_every_row_of_the_second_seeds_network_and_serving_tables() {
    let root = workspace("sbc-serving");
    let doc = plan(&root, "scenarios/sbc-serving.toml");
    let got = addresses_with_network(&doc);
    let image = |board: &str| match board {
        "rpi3-1" => "raspbian-stretch",
        "odroid-hc2-1" => "ubuntu-bionic",
        _ => "armbian-stretch",
    };
    let row = |board: &str, storage: &str, fs: &str, network: &str, test: &str| {
        [image(board), board, storage, fs, network, test].map(String::from)
    };
    let mut want = BTreeSet::new();
    // iperf3, UP and DOWN: Orange Pi Zero Plus (LAN), (Wi-Fi), Orange Pi One Plus,
    // RaspberryPi 3 (LAN), (Wi-Fi), ODROID-HC2 (LAN).
    for (board, network) in [
        ("opi-zero-plus-1", "lan"),
        ("opi-zero-plus-1", "wifi"),
        ("opi-one-plus-1", "lan"),
        ("rpi3-1", "lan"),
        ("rpi3-1", "wifi"),
        ("odroid-hc2-1", "lan"),
    ] {
        for test in ["iperf3-board-to-controller", "iperf3-controller-to-board"] {
            want.insert(row(board, "-", "-", network, test));
        }
    }
    // HTTP, NFS and Samba, over the cable: one row per board.
    let boards = [
        "opi-zero-plus-1",
        "opi-one-plus-1",
        "rpi3-1",
        "odroid-hc2-1",
    ];
    for board in boards {
        for test in ["http", "nfs", "smb"] {
            want.insert(row(board, "-", "-", "lan", test));
        }
    }
    // EXT4 vs BTRFS LZO through Samba: every board's USB disk, the HC2's SATA disk.
    let mut disks: Vec<(&str, &str)> = boards.iter().map(|b| (*b, "usb-hdd")).collect();
    disks.push(("odroid-hc2-1", "sata-hdd"));
    for (board, storage) in disks {
        for fs in ["ext4", "btrfs-lzo"] {
            want.insert(row(board, storage, fs, "lan", "smb-fs"));
        }
    }
    let missing: Vec<_> = want.difference(&got).collect();
    assert!(
        missing.is_empty(),
        "rows of the seed's tables not planned: {missing:?}"
    );
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(extra.is_empty(), "cells the seed has not: {extra:?}");
    // The boards without Wi-Fi: their wifi iperf3 cells are skipped, with the reason.
    for board in ["opi-one-plus-1", "odroid-hc2-1"] {
        let reason = format!("board {board} has no network matching `wifi`");
        let n = plan_skips(&doc)
            .iter()
            .filter(|(_, r)| *r == reason)
            .count();
        assert_eq!(n, 2, "iperf3 both ways on {board}: {:?}", plan_skips(&doc));
    }
    let s = toml_of(&root.join("scenarios/sbc-serving.toml"));
    let compares = s["report"]["compare"].as_array().unwrap();
    assert!(compares.iter().any(|c| {
        c["baseline"]["network"].as_str() == Some("lan")
            && c["candidate"]["network"].as_str() == Some("wifi")
    }));
    // The seed's iperf3 columns: UP is its `iperf3 -c BOARD` (the controller sends),
    // DOWN its `-R` (the board sends), in that order, labelled so.
    let labels = &s["report"]["labels"]["metric"];
    assert_eq!(
        labels["iperf3-controller-to-board.throughput"].as_str(),
        Some("UP (controller to board)")
    );
    assert_eq!(
        labels["iperf3-board-to-controller.throughput"].as_str(),
        Some("DOWN (board to controller)")
    );
    let tables = s["report"]["table"].as_array().unwrap();
    assert!(tables.iter().any(|t| {
        let columns: Vec<_> = t["columns"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c.as_str())
            .collect();
        columns
            == [
                "iperf3-controller-to-board.throughput",
                "iperf3-board-to-controller.throughput",
            ]
    }));
    // NFS, the seed's third server, is in the matrix.
    let tests = s["matrix"]["test"].as_array().unwrap();
    assert!(tests.iter().any(|t| t.as_str() == Some("nfs")));
    // `{{ host }}` of a cell is its link's address, which no key's inputs hold.
    for c in doc["cells"].as_array().unwrap() {
        assert!(
            !c["inputs"].to_string().contains("10.236.200."),
            "an address in a key's inputs: {c}"
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn the_shipped_lab_sbc_serving_scenario_measures_lan_and_wifi_and_serves_over_the_lan() {
    let Some((lab, _doc, err)) = run_shipped_on_a_lab("lab-sbc-serving") else {
        return;
    };
    let measured = measured_cells(&lab.root);
    for (test, cells) in [
        ("iperf3-board-to-controller", 2),
        ("iperf3-controller-to-board", 2),
        ("http", 1),
        ("nfs", 1),
        ("smb", 1),
        ("smb-fs", 2),
    ] {
        assert_eq!(
            measured.get(test),
            Some(&cells),
            "{test}: {measured:?}\n{err}"
        );
    }
    for test in ["iperf3-board-to-controller", "iperf3-controller-to-board"] {
        let runs = crate::network::by_network(&lab.root, test, "throughput");
        let mean = |net: &str| {
            let xs: Vec<f64> = runs.iter().filter(|r| r.0 == net).map(|r| r.1).collect();
            assert!(!xs.is_empty(), "{test} over {net}: {runs:?}");
            xs.iter().sum::<f64>() / xs.len() as f64
        };
        assert!(mean("wifi") < mean("lan"), "{test}: {runs:?}");
    }
    let report = bp(&lab.root, &["report", "scenarios/lab-sbc-serving.toml"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let md = std::fs::read_to_string(lab.root.join("reports/lab-sbc-serving/index.md")).unwrap();
    assert!(
        md.contains("wifi (wlan0, wifi)") && md.contains("qdisc tbf"),
        "{md}"
    );
    // The seed's iperf3 table: its UP and DOWN columns in its order, each saying the
    // path the data took, one row per board and link.
    let table = md
        .split("## iperf3: UP and DOWN")
        .nth(1)
        .unwrap_or_else(|| panic!("no seed iperf3 table:\n{md}"));
    let header = table
        .lines()
        .find(|l| l.starts_with("| board | network |"))
        .unwrap_or_else(|| panic!("no rows by board and network:\n{table}"));
    let up = header.find("| UP (controller to board) (Mbit/s");
    let down = header.find("| DOWN (board to controller) (Mbit/s");
    assert!(up.is_some() && up < down, "{header}");
    crate::serving::assert_nothing_left(lab.board(0));
}

/// The first seed's full-system study: each (hardware, app) K3s cluster gets the rows
/// the seed's table has, the seed's `iperf -c` runs to one node of each, every cluster
/// holds every one of its members, and the comparisons name the clusters.
#[test]
fn the_turing_pi_apps_study_plans_the_first_seeds_full_system_table() {
    let root = workspace("turing-pi-apps");
    let doc = plan(&root, "scenarios/turing-pi-apps.toml");
    let got: BTreeSet<(String, String)> = addresses(&doc)
        .into_iter()
        .map(|[_, board, _, _, test]| (board, test))
        .collect();
    let mut want = BTreeSet::new();
    for hw in ["turing", "dramble"] {
        for app in ["drupal", "wordpress"] {
            want.insert((format!("{hw}-{app}"), "http-load".to_string()));
        }
        // The authenticated rows: a login through the ingress, each app its own.
        want.insert((format!("{hw}-wordpress"), "wordpress-login".to_string()));
        want.insert((format!("{hw}-drupal"), "drupal-login".to_string()));
        want.insert((format!("{hw}-minecraft"), "startup-kubectl".to_string()));
        want.insert((format!("{hw}-minecraft"), "iperf3-all-boards".to_string()));
    }
    for node in ["turing-cm3-1", "dramble-pi4-1"] {
        want.insert((node.to_string(), "iperf".to_string()));
    }
    assert_eq!(got, want);
    let walks = doc["schedule"]["boards"].as_array().unwrap();
    let members = |walk: &str| -> Vec<String> {
        let w = walks
            .iter()
            .find(|w| w["board"] == walk)
            .unwrap_or_else(|| {
                panic!("no walk of {walk} in {walks:?}");
            });
        w["members"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.as_str().unwrap().to_string())
            .collect()
    };
    // The seed's Turing Pi: its seven CM3+ nodes.
    let cm3: Vec<String> = (1..=7).map(|n| format!("turing-cm3-{n}")).collect();
    assert_eq!(members("turing-drupal"), cm3);
    // The login's cells hit the endpoint as the chart's admin, with the password from
    // the controller's file, and are compared across the two clusters.
    let login: Vec<&Value> = doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["address"]["test"] == "wordpress-login")
        .collect();
    // The Turing Pi on its installed HypriotOS; the Dramble flashed with each image.
    let images: BTreeSet<(String, String)> = login
        .iter()
        .map(|c| {
            let a = &c["address"];
            (
                a["board"].as_str().unwrap().into(),
                a["image"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want: BTreeSet<(String, String)> = [
        ("turing-wordpress", "hypriotos-installed"),
        ("dramble-wordpress", "hypriotos"),
        ("dramble-wordpress", "raspios-32"),
        ("dramble-wordpress", "raspios-64"),
    ]
    .into_iter()
    .map(|(b, i)| (b.to_string(), i.to_string()))
    .collect();
    assert_eq!(images, want, "{login:?}");
    // Each Dramble member is flashed by its own [flash] command; no Turing member is.
    let flashes = |walk: &str| -> BTreeSet<String> {
        let w = walks.iter().find(|w| w["board"] == walk).unwrap();
        w["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["action"] == "flash-command")
            .map(|s| {
                format!(
                    "{} {}",
                    s["member"].as_str().unwrap(),
                    s["image"].as_str().unwrap()
                )
            })
            .collect()
    };
    let dramble = flashes("dramble-wordpress");
    assert_eq!(dramble.len(), 12, "{dramble:?}");
    assert!(dramble.contains("dramble-pi4-4 raspios-64"), "{dramble:?}");
    assert!(flashes("turing-wordpress").is_empty());
    let text = std::fs::read_to_string(root.join("scenarios/turing-pi-apps.toml")).unwrap();
    assert!(text.contains("metric = \"wordpress-login.authenticated\""));
    assert!(text.contains("metric = \"drupal-login.authenticated\""));
    // The seed's logged-in load, `ab -n 100 -c 10`, as the recipes' defaults and here.
    let s = toml_of(&root.join("scenarios/turing-pi-apps.toml"));
    for recipe in ["wordpress", "wordpress-login", "drupal", "drupal-login"] {
        let r = toml_of(&repo().join(format!("pipeline/{recipe}.toml")));
        let p = &r["params"];
        assert_eq!(p["ab_requests"].as_integer(), Some(100), "{recipe}");
        assert_eq!(p["ab_concurrency"].as_integer(), Some(10), "{recipe}");
        assert_eq!(p["login_connections"].as_integer(), Some(10), "{recipe}");
        // and the anonymous `wrk -t4 -c100 -d30`
        let wrk = (
            p["wrk_threads"].as_integer(),
            p["wrk_connections"].as_integer(),
            p["seconds"].as_integer(),
        );
        assert_eq!(wrk, (Some(4), Some(100), Some(30)), "{recipe}");
    }
    for login in ["wordpress-login", "drupal-login"] {
        let p = &s["params"][login];
        assert_eq!(p["login_tool"].as_str(), Some("ab"), "{login}");
        assert_eq!(p["ab_requests"].as_integer(), Some(100), "{login}");
    }
    assert_eq!(
        members("dramble-minecraft"),
        [
            "dramble-pi4-1",
            "dramble-pi4-2",
            "dramble-pi4-3",
            "dramble-pi4-4"
        ]
    );
    let _ = std::fs::remove_dir_all(&root);
}
