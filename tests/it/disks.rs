//! Integration tests: the disk tests of issue 10: iozone's table read from real boards'
//! output through the shipped recipes, disk-1m on a lab board, raw-device tests once
//! per device, and cells that cannot apply skipped with their reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::repo;
use benchpipe::model::{Recipe, TestName};

fn fixture(name: &str) -> String {
    let path = repo().join("tests/data/tool-outputs").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn shipped(name: &str) -> Recipe {
    let mut all = benchpipe::config::load_recipes(repo()).unwrap_or_else(|d| panic!("{d}"));
    all.remove(&TestName::new(name))
        .unwrap_or_else(|| panic!("no pipeline/{name}.toml"))
}

fn metrics_of(recipe: &str, file: &str) -> Result<BTreeMap<String, f64>, String> {
    benchpipe::bench::metrics(&shipped(recipe), &fixture(file), "").map_err(|e| e.to_string())
}

/// iozone prints kB/s; the write-ups divide by 1024 and call it MB/s.
fn mb(kb_per_s: f64) -> f64 {
    kb_per_s / 1024.0
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn iozone_recipes_read_real_boards_tables_in_write_up_megabytes() {
    // The seed's command on three Raspberry Pi 4 storages (pi-storage-benchmark logs,
    // colour codes and all): every column present, and one genuine zero.
    let cases: &[(&str, [f64; 6])] = &[
        (
            "real-sbc-pibench-rpi4-kingston-a400-usb.log",
            [26108.0, 30373.0, 31869.0, 31842.0, 17181.0, 29774.0],
        ),
        (
            "real-sbc-pibench-rpi4-samsung-fitplus-usb3.log",
            [10696.0, 12957.0, 14985.0, 0.0, 11129.0, 10138.0],
        ),
        (
            "real-sbc-pibench-rpi4-sandisk-sd32g.log",
            [2251.0, 2288.0, 8810.0, 8814.0, 7353.0, 3432.0],
        ),
    ];
    let names = [
        "write",
        "rewrite",
        "read",
        "reread",
        "random_read",
        "random_write",
    ];
    for (file, printed) in cases {
        let got = metrics_of("iozone", file).unwrap_or_else(|e| panic!("{file}: {e}"));
        for (name, kb) in names.iter().zip(printed) {
            assert!(close(got[*name], mb(*kb)), "{file} {name}: {}", got[*name]);
        }
    }
    // Geerling's pair on a CM4's NVMe: two tables in one output, told apart by record
    // length, with the read and reread columns blank (no -i 1).
    let got = metrics_of("iozone-1m", "real-sbc-diskbench-cm4-nvme-sn570.txt").unwrap();
    for (name, kb) in [
        ("random_read_1m", 379221.0),
        ("random_write_1m", 387988.0),
        ("random_read_4k", 43020.0),
        ("random_write_4k", 81960.0),
        ("write_1m", 385198.0),
    ] {
        assert!(close(got[name], mb(kb)), "{name}: {}", got[name]);
    }
    // The units say how the number was made.
    for recipe in ["iozone", "iozone-1m"] {
        for m in &shipped(recipe).metrics {
            assert_eq!(m.unit, "MB/s (kB/s / 1024)", "{recipe}.{}", m.name);
        }
    }
}

#[test]
fn a_blank_iozone_column_is_no_number_and_the_error_names_the_metric() {
    // The seed's recipe wants read and reread, which Geerling's runs leave blank: that
    // is a clear error, never a zero.
    let err = metrics_of("iozone", "real-sbc-diskbench-cm4-nvme-sn570.txt").unwrap_err();
    assert!(err.contains("read"), "{err}");
    assert!(err.contains("no key"), "{err}");
    // Output that holds no table at all.
    let err = metrics_of("iozone", "dd-write.txt").unwrap_err();
    assert!(err.contains("kB  reclen"), "{err}");
}

/// Every stored cell of `test` under `root`: its cell.json, and what else its directory
/// holds (samples, skip.json, failure.json).
struct Stored {
    storage: Option<String>,
    filesystem: Option<String>,
    samples: Vec<serde_json::Value>,
    skip: Option<serde_json::Value>,
    failure: bool,
}

fn stored(root: &Path, test: &str) -> Vec<Stored> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(root.join("results")) else {
        return out;
    };
    for e in entries.flatten() {
        let dir = e.path();
        let Ok(cell) = std::fs::read_to_string(dir.join("cell.json")) else {
            continue;
        };
        let cell: serde_json::Value = serde_json::from_str(&cell).unwrap();
        if cell["address"]["test"] != test {
            continue;
        }
        let text = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap_or_default();
        out.push(Stored {
            storage: cell["address"]["storage"].as_str().map(str::to_string),
            filesystem: cell["address"]["filesystem"].as_str().map(str::to_string),
            samples: text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
            skip: std::fs::read_to_string(dir.join("skip.json"))
                .ok()
                .map(|s| serde_json::from_str(&s).unwrap()),
            failure: dir.join("failure.json").exists(),
        });
    }
    out
}

/// A real tmpfs mounted for the test, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=16m", "bp-it-tmpfs"])
            .arg(at)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount -t tmpfs {}", at.display());
        Tmpfs(at.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn out_text(o: &std::process::Output) -> String {
    crate::spine::text(o)
}

/// dd-write on a directory on tmpfs is skipped on the board (its `[[requires]]` check),
/// recorded in skip.json, not failure.json; the same test on a disk directory runs;
/// hdparm on storage without a device is not applicable at plan time. Plan and the
/// report show both reasons, and apply exits 0: a skip is not a failure.
#[test]
fn a_test_that_cannot_apply_is_skipped_with_its_reason_in_store_plan_and_report() {
    if !crate::need_root("a tmpfs mount") {
        return;
    }
    let p = crate::spine::Project::local("skip-tmpfs");
    let shm = p.dir.join("shm");
    let work = p.dir.join("board-work");
    let p = p
        .file(
            "boards/here.toml",
            &format!(
                "model = \"test controller\"\nlocal = true\nworkdir = \"{w}\"\n\n\
                 [[storage]]\nname = \"scratch\"\nrole = \"scratch\"\npath = \"{w}/scratch\"\n\n\
                 [[storage]]\nname = \"shm\"\nrole = \"scratch\"\npath = \"{s}\"\n",
                w = work.display(),
                s = shm.display()
            ),
        )
        .file(
            "scenarios/x.toml",
            "title = \"skips\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"here\"]\nstorage = [\"scratch\", \"shm\"]\n\
             test = [\"dd-write\", \"hdparm\"]\n[method]\nwarmup = { runs = 0 }\n\
             runs = { min = 2, max = 2 }\n[params.dd-write]\nmib = 8\n",
        );
    // Dropped before the project, which removes its directory.
    let _tmpfs = Tmpfs::mount(&shm);
    let apply = p.bp(&["apply", "scenarios/x.toml"]);
    assert!(apply.status.success(), "{}", out_text(&apply));
    let err = String::from_utf8_lossy(&apply.stderr);
    assert!(err.contains("SKIPPED dd-write on here shm/as-is"), "{err}");

    let cells = stored(&p.dir, "dd-write");
    assert_eq!(cells.len(), 2);
    for c in &cells {
        assert!(!c.failure, "a skip is no failure");
        if let Some("scratch") = c.storage.as_deref() {
            assert!(c.skip.is_none());
            assert_eq!(c.samples.len(), 2);
            for s in &c.samples {
                let v = s["metrics"]["sequential_write"].as_f64().unwrap();
                assert!(v > 0.0 && v.is_finite(), "{s}");
            }
        } else {
            assert!(c.samples.is_empty());
            let reason = c.skip.as_ref().unwrap()["reason"]
                .as_str()
                .unwrap()
                .to_string();
            assert_eq!(
                reason,
                format!(
                    "{} is on tmpfs: what dd writes there stays in memory and never reaches a disk",
                    shm.display()
                )
            );
        }
    }
    // hdparm needs a device: decided at plan time, nothing stored.
    assert!(stored(&p.dir, "hdparm").is_empty());

    let plan = p.bp(&["plan", "scenarios/x.toml"]);
    let text = String::from_utf8_lossy(&plan.stdout);
    assert!(text.contains("skipped (0 of 2)"), "{text}");
    assert!(
        text.contains("skipped by the last apply: ") && text.contains("is on tmpfs"),
        "{text}"
    );
    assert!(
        text.contains("hdparm on here shm (installed) [test hdparm reads the storage's block device, but storage shm declares no device]"),
        "{text}"
    );
    assert!(text.contains(", 1 skipped on the board;"), "{text}");
    let json = p.bp(&["plan", "--json", "scenarios/x.toml"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["summary"]["skipped_on_board"], 1, "{doc}");
    assert_eq!(doc["summary"]["failed"], 0, "{doc}");

    let md = std::fs::read_to_string(p.dir.join("reports/x/index.md")).unwrap();
    assert!(
        md.contains("dd-write on here shm/as-is (installed): ") && md.contains("is on tmpfs"),
        "{md}"
    );
    assert!(md.contains("declares no device"), "{md}");
}

/// The recipes' `uses_storage` forms, and a filesystem comparison of a raw-device test,
/// which `check` refuses: its cells have no filesystem to compare.
#[test]
fn raw_device_recipes_are_checked_and_planned_once_per_device() {
    let p = crate::spine::Project::local("rawdev");
    let work = p.dir.join("board-work");
    let scenario = |compare: &str| {
        format!(
            "title = \"raw\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\n[filesystems.btrfs-lzo]\nkind = \"btrfs\"\n\
             mount_options = [\"compress=lzo\"]\n[matrix]\nimage = [\"installed\"]\n\
             board = [\"here\"]\nstorage = [\"usb\"]\nfilesystem = [\"ext4\", \"btrfs-lzo\"]\n\
             test = [\"hdparm\", \"dd-write\"]\n{compare}"
        )
    };
    let p = p
        .file(
            "boards/here.toml",
            &format!(
                "model = \"test controller\"\nlocal = true\nworkdir = \"{w}\"\n\n\
                 [[storage]]\nname = \"usb\"\nrole = \"scratch\"\ndevice = \"/dev/disk/by-id/usb-none\"\n\
                 path = \"{w}/usb\"\n",
                w = work.display()
            ),
        )
        .file("scenarios/r.toml", &scenario(""));
    let plan = p.bp(&["plan", "--json", "scenarios/r.toml"]);
    assert!(plan.status.success(), "{}", out_text(&plan));
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let cells = doc["cells"].as_array().unwrap();
    let hdparm: Vec<_> = cells
        .iter()
        .filter(|c| c["address"]["test"] == "hdparm")
        .collect();
    assert_eq!(hdparm.len(), 1, "{doc}");
    assert!(hdparm[0]["address"]["filesystem"].is_null());
    assert_eq!(hdparm[0]["address"]["storage"], "usb");
    let dd = cells
        .iter()
        .filter(|c| c["address"]["test"] == "dd-write")
        .count();
    assert_eq!(dd, 2, "a file-writing test still runs per filesystem");

    // No filesystem comparison of a raw-device test; across storages is fine.
    let p = p.file(
        "scenarios/r.toml",
        &scenario(
            "[[report.compare]]\nmetric = \"hdparm.buffered_read\"\n\
             baseline = { filesystem = \"ext4\" }\ncandidate = { filesystem = \"btrfs-lzo\" }\n",
        ),
    );
    let check = p.bp(&["check", "scenarios/r.toml"]);
    assert_eq!(check.status.code(), Some(2), "{}", out_text(&check));
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(
        err.contains("test `hdparm` reads the raw device (`uses_storage = \"device\"`): its cells have no filesystem, so there is no filesystem comparison to draw"),
        "{err}"
    );
    assert!(err.contains("scenarios/r.toml:"), "{err}");
    let p = p.file(
        "scenarios/r.toml",
        &scenario(
            "[[report.compare]]\nmetric = \"dd-write.sequential_write\"\n\
             baseline = { filesystem = \"ext4\" }\n",
        ),
    );
    let check = p.bp(&["check", "scenarios/r.toml"]);
    assert!(check.status.success(), "{}", out_text(&check));
    let cmp = p.bp(&[
        "compare",
        "scenarios/r.toml",
        "--metric",
        "hdparm.buffered_read",
        "--baseline",
        "filesystem=ext4",
    ]);
    assert_eq!(cmp.status.code(), Some(2), "{}", out_text(&cmp));
    assert!(
        String::from_utf8_lossy(&cmp.stderr).contains("no filesystem comparison to draw"),
        "{}",
        out_text(&cmp)
    );

    // A raw-device recipe cannot write files in `dir`, and uses_storage takes four forms.
    let p = p.file("scenarios/r.toml", &scenario("")).edit(
        "pipeline/hdparm.toml",
        "hdparm -t {{ device }}",
        "hdparm -t {{ device }} > {{ dir }}/x",
    );
    let check = p.bp(&["check", "scenarios/r.toml"]);
    assert_eq!(check.status.code(), Some(2), "{}", out_text(&check));
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(
        err.contains("pipeline/hdparm.toml:") && err.contains("`dir` is a filesystem's directory"),
        "{err}"
    );
    let p = p
        .edit(
            "pipeline/hdparm.toml",
            "hdparm -t {{ device }} > {{ dir }}/x",
            "hdparm -t {{ device }}",
        )
        .edit(
            "pipeline/hdparm.toml",
            "\nuses_storage = \"device\"",
            "\nuses_storage = \"disk\"",
        );
    let check = p.bp(&["check", "scenarios/r.toml"]);
    assert_eq!(check.status.code(), Some(2), "{}", out_text(&check));
    let err = String::from_utf8_lossy(&check.stderr);
    assert!(
        err.contains("expected true, false, \"filesystem\" or \"device\""),
        "{err}"
    );
    // `true` (the old form) keeps the filesystem axis: backward compatible.
    let p = p.edit(
        "pipeline/hdparm.toml",
        "\nuses_storage = \"disk\"",
        "\nuses_storage = true",
    );
    let plan = p.bp(&["plan", "--json", "scenarios/r.toml"]);
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let n = doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["address"]["test"] == "hdparm")
        .count();
    assert_eq!(n, 2, "{doc}");
}

/// On a lab board over SSH: disk-1m and the seed's iozone measure the loop disk
/// formatted ext4 (plausible numbers, iozone's package version recorded with its
/// section); hdparm on the loop device is skipped by its check as a virtual block
/// device, and the board's other cells go on. Nothing fails.
#[test]
fn on_a_lab_board_disk_1m_and_iozone_measure_while_hdparm_is_skipped_with_its_reason() {
    const NAME: &str =
        "on_a_lab_board_disk_1m_and_iozone_measure_while_hdparm_is_skipped_with_its_reason";
    let which = Command::new("sh")
        .args([
            "-c",
            "dpkg-query -W -f='${Section}' iozone3 && command -v iozone",
        ])
        .output()
        .unwrap();
    if !which.status.success() {
        crate::cannot_run(
            NAME,
            "Debian's iozone3 (non-free) is not installed here: `.ci/run` installs it",
        );
        return;
    }
    let Some(lab) = crate::lab::Lab::up(1) else {
        return;
    };
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for r in ["disk-1m", "iozone", "hdparm"] {
        std::fs::copy(
            repo().join(format!("pipeline/{r}.toml")),
            root.join(format!("pipeline/{r}.toml")),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"lab disks\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\n[matrix]\nimage = [\"installed\"]\n\
             board = [\"{}-*\"]\nstorage = [\"disk1\"]\nfilesystem = [\"ext4\"]\n\
             test = [\"disk-1m\", \"iozone\", \"hdparm\"]\n[method]\nwarmup = {{ runs = 0 }}\n\
             runs = {{ min = 2, max = 2 }}\n[params.disk-1m]\nsize = \"16M\"\nruntime = 1\n\
             [params.iozone]\nsize = \"4M\"\n",
            lab.options.board_prefix
        ),
    )
    .unwrap();
    // A value in apply's environment, like a password a board file names by variable:
    // it must reach neither the store's facts nor a report.
    let canary = "canary-8f3e1d0b-secret";
    let apply = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(root)
        .env("NO_COLOR", "1")
        .env("BENCHPIPE_TEST_SUDO_PASSWORD", canary)
        .output()
        .unwrap();
    assert!(apply.status.success(), "{}", out_text(&apply));

    let disk = stored(root, "disk-1m");
    assert_eq!(disk.len(), 1);
    assert_eq!(disk[0].filesystem.as_deref(), Some("ext4"));
    assert_eq!(disk[0].samples.len(), 2);
    for s in &disk[0].samples {
        for m in [
            "sequential_read",
            "sequential_write",
            "random_read",
            "random_write",
        ] {
            let v = s["metrics"][m].as_f64().unwrap_or(f64::NAN);
            assert!(v > 0.0 && v.is_finite(), "{m}: {s}");
        }
    }
    let iozone = stored(root, "iozone");
    assert_eq!(iozone.len(), 1);
    assert_eq!(iozone[0].samples.len(), 2, "{}", out_text(&apply));
    for s in &iozone[0].samples {
        for m in ["random_read", "random_write", "write", "read"] {
            let v = s["metrics"][m].as_f64().unwrap_or(f64::NAN);
            assert!(v > 0.0 && v.is_finite(), "{m}: {s}");
        }
    }
    let hdparm = stored(root, "hdparm");
    assert_eq!(hdparm.len(), 1, "one cell per device");
    assert!(hdparm[0].filesystem.is_none());
    assert!(hdparm[0].samples.is_empty() && !hdparm[0].failure);
    let reason = hdparm[0].skip.as_ref().unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains("is a virtual block device (loop") && reason.contains("not a disk"),
        "{reason}"
    );

    let plan = crate::lab::bp(root, &["plan", "scenarios/s.toml"]);
    let text = String::from_utf8_lossy(&plan.stdout);
    assert!(text.contains("virtual block device"), "{text}");
    let md = std::fs::read_to_string(root.join("reports/s/index.md")).unwrap();
    // The package iozone came from, with its section, in the provenance.
    assert!(md.contains("(non-free/utils)"), "{md}");
    provenance_of_the_lab_board(root, &md, canary);
}

/// `lab up --direct-io`: a loop disk in direct-I/O mode over a file with every block
/// written is a disk hdparm can time (its reads reach the disk under the file), also
/// after a format, which must not punch holes in the file through discard. A plain
/// lab disk stays refused (the test above).
#[test]
fn on_a_direct_io_lab_disk_hdparm_measures_also_after_a_format() {
    let Some(lab) = crate::lab::Lab::up_with_options(1, |o| {
        o.disks_per_board = 1;
        o.direct_io = true;
    }) else {
        return;
    };
    let root = &lab.root;
    let board = std::fs::read_to_string(&lab.board(0).board_file).unwrap();
    assert!(board.contains("direct I/O"), "{board}");
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for r in ["hdparm", "dd-write"] {
        std::fs::copy(
            repo().join(format!("pipeline/{r}.toml")),
            root.join(format!("pipeline/{r}.toml")),
        )
        .unwrap();
    }
    // dd-write formats the disk first (ext4), then hdparm reads the raw device.
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"direct\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\n[matrix]\nimage = [\"installed\"]\n\
             board = [\"{}-*\"]\nstorage = [\"disk1\"]\nfilesystem = [\"ext4\"]\n\
             test = [\"dd-write\", \"hdparm\"]\n[method]\nwarmup = {{ runs = 0 }}\n\
             runs = {{ min = 2, max = 2 }}\n[params.dd-write]\nmib = 16\n",
            lab.options.board_prefix
        ),
    )
    .unwrap();
    let apply = crate::lab::bp(root, &["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", out_text(&apply));
    let file = &lab.board(0).disks[0].file;
    let meta = std::fs::metadata(file).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert!(
        meta.blocks() * 512 >= meta.len(),
        "the format left holes in the disk's file: {} of {} bytes allocated",
        meta.blocks() * 512,
        meta.len()
    );
    let hdparm = stored(root, "hdparm");
    assert_eq!(hdparm.len(), 1, "{}", out_text(&apply));
    assert!(hdparm[0].skip.is_none(), "{:?}", hdparm[0].skip);
    assert_eq!(hdparm[0].samples.len(), 2, "{}", out_text(&apply));
    for s in &hdparm[0].samples {
        let v = s["metrics"]["buffered_read"].as_f64().unwrap_or(f64::NAN);
        assert!(v > 0.0 && v.is_finite(), "{s}");
    }
}

/// The report's provenance of a real lab board (a network namespace on this host):
/// this host's kernel and os-release, fio's version, the loop disk's facts and the ext4
/// made on it, and no secret, local path or device node.
fn provenance_of_the_lab_board(root: &Path, md: &str, canary: &str) {
    let section = md
        .split("## Provenance")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_else(|| panic!("no provenance section: {md}"));
    let uname = Command::new("uname").arg("-srm").output().unwrap();
    let kernel = String::from_utf8_lossy(&uname.stdout).trim().to_string();
    assert!(
        section.contains(&format!("| kernel | {kernel} |")),
        "{section}"
    );
    let os = std::fs::read_to_string("/etc/os-release").unwrap();
    let pretty = os
        .lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .unwrap()
        .trim_matches('"');
    assert!(
        section.contains(&format!("| os-release | {pretty} (")),
        "{section}"
    );
    let fio = Command::new("fio").arg("--version").output().unwrap();
    let fio = String::from_utf8_lossy(&fio.stdout).trim().to_string();
    assert!(
        section.contains(&format!("| tool fio | {fio} |")),
        "{section}"
    );
    assert!(
        section.contains("| package fio (board, apt) | "),
        "{section}"
    );
    // The loop disk: its size, kind and scheduler, as sysfs said them.
    for row in [
        "| storage size | ",
        "| storage kind | ",
        "| I/O scheduler | ",
    ] {
        assert!(section.contains(row), "{row}: {section}");
    }
    assert!(section.contains("| filesystem | ext4 |"), "{section}");
    assert!(section.contains("| path is on | ext4 |"), "{section}");
    assert!(
        section.contains(&format!("| benchpipe | {} |", env!("CARGO_PKG_VERSION"))),
        "{section}"
    );
    assert!(section.contains("| cells | disk-1m "), "{section}");
    assert!(
        !section.contains("Warning"),
        "one cell, nothing differs: {section}"
    );
    for name in ["index.md", "index.html", "report.json"] {
        let text = std::fs::read_to_string(root.join("reports/s").join(name)).unwrap();
        for leak in [canary, root.to_str().unwrap(), "PASSWORD"] {
            assert!(!text.contains(leak), "{leak} in {name}");
        }
    }
    // The loop device's node and backing file stay out of the provenance (the hdparm
    // skip's reason elsewhere names the device on purpose).
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("reports/s/report.json")).unwrap())
            .unwrap();
    let provenance = json["provenance"].to_string();
    assert!(provenance.contains("ext4"), "{provenance}");
    for leak in ["/dev/", "/tmp/", ".img"] {
        assert!(!section.contains(leak), "{leak}: {section}");
        assert!(!provenance.contains(leak), "{leak}: {provenance}");
    }
    for cell in std::fs::read_dir(root.join("results")).unwrap() {
        let facts = cell.unwrap().path().join("facts.json");
        if let Ok(text) = std::fs::read_to_string(&facts) {
            assert!(!text.contains(canary), "{}", facts.display());
        }
    }
}
