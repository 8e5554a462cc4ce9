//! Integration tests: the disk tests of issue 10: iozone's table read from real boards'
//! output through the shipped recipes, disk-1m on a lab board, raw-device tests once
//! per device, and cells that cannot apply skipped with their reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use benchpipe::model::{Recipe, TestName};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

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
