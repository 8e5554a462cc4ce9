//! The report's provenance section, on the fixture study with stored facts.

use super::tests::{usb_against_sd, with_samples};
use super::*;
use crate::plan::Cell;
use crate::store::CellRecord;

/// Facts as apply stores them (`apply/facts.rs`, the mount and storage steps).
pub(super) fn stored_facts(kernel: &str) -> serde_json::Value {
    serde_json::json!({
        "board": "pi-1", "model": "Raspberry Pi 4 Model B Rev 1.4",
        "benchpipe": "0.1.0",
        "kernel": kernel,
        "os_release": {"PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)", "ID": "debian",
                       "VERSION_ID": "12", "HOME_URL": "https://www.debian.org/"},
        "cpus": "4", "cpu_model": " Cortex-A72", "governor": "ondemand",
        "memory_kib": "3884376",
        "tools": {"fio": "fio-3.33\n"},
        "packages": {"manager": "apt", "installed": {"fio": "3.33-3"}},
        "flashed": {"file_sha256": "ab", "written_bytes": 4096, "written_sha256": "cd",
                    "bmap_mapped_bytes": 2048,
                    "accepted_host_key": "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"},
        "storage": {"device": "/dev/sda", "real": "/dev/sda", "disk": "sda", "partition": false,
                    "size_bytes": 500107862016u64, "rotational": false, "scheduler": "mq-deadline",
                    "vendor": "Kingston", "model": "SA400S37", "serial": "50026B77",
                    "backing_file": "/var/tmp/secret/backing.img",
                    "usb": {"device": "2-1", "interface": "2-1:1.0", "driver": "uas",
                            "driver_from": "sysfs", "speed": "5000M", "id": "174c:55aa"}},
        "storage_filesystem": {"type": "ext4", "source": "/dev/sda1", "mount_point": "/mnt/x"},
        "format": 1
    })
}

/// A measured cell with its record and facts.
pub(super) fn cell_with_facts(cell: &Cell, kernel: &str) -> CellData {
    let mut d = with_samples(&[10.0, 10.2, 9.9]);
    d.record = Some(CellRecord {
        format: 1,
        key: cell.key.clone(),
        address: cell.address.clone(),
        inputs: cell.inputs.json().clone().into(),
    });
    d.facts = Some(stored_facts(kernel).into());
    d
}

/// Two tests measured on one configuration (pi-1, usb, ext4) under two kernels: the
/// provenance says so, as a warning, and shows both kernels with their tests.
#[test]
fn two_kernels_within_one_configuration_are_a_warning() {
    let (ws, scenario, mut plan) = usb_against_sd();
    let first = plan
        .cells
        .iter()
        .position(|c| c.address.label() == "disk-4k on pi-2 usb/ext4 (installed)")
        .expect("the fixture has pi-2 usb/ext4");
    // The same configuration under a second test, as a wider matrix would have it.
    let mut other = plan.cells[first].clone();
    other.address.test = "disk-4k-again".into();
    other.key = CellKey::parse("0123456789abcdef0123456789abcdef").unwrap();
    plan.cells.push(other.clone());
    let mut data = BTreeMap::new();
    data.insert(
        plan.cells[first].key.clone(),
        cell_with_facts(&plan.cells[first], "Linux 6.1.0-rpi7-rpi-v8 aarch64"),
    );
    data.insert(
        other.key.clone(),
        cell_with_facts(&other, "Linux 6.6.20-rpi-v8 aarch64"),
    );
    let r = build(&ws, &scenario, &plan, &data);
    assert_eq!(r.provenance.len(), 1, "{:#?}", r.provenance);
    let p = &r.provenance[0];
    assert_eq!(p.config, "pi-2 / usb / ext4 / installed");
    assert_eq!(
        p.warnings,
        vec![
            "kernel differs between the cells of pi-2 / usb / ext4 / installed: \
             Linux 6.1.0-rpi7-rpi-v8 aarch64 (disk-4k); Linux 6.6.20-rpi-v8 aarch64 (disk-4k-again)"
                .to_string()
        ]
    );
    let fact = |n: &str| {
        p.facts
            .iter()
            .find(|f| f.name == n)
            .unwrap_or_else(|| panic!("no {n}: {:#?}", p.facts))
    };
    assert!(fact("kernel").differs);
    assert!(!fact("os-release").differs);
    assert_eq!(
        fact("os-release").value,
        "Debian GNU/Linux 12 (bookworm) (debian 12)"
    );
    assert_eq!(fact("tool fio").value, "fio-3.33");
    assert_eq!(fact("package fio (board, apt)").value, "3.33-3");
    assert_eq!(fact("board model").value, "Raspberry Pi 4 Model B Rev 1.4");
    assert_eq!(fact("storage model").value, "Kingston SA400S37");
    assert_eq!(fact("storage size").value, "465.8 GiB");
    assert_eq!(fact("storage kind").value, "non-rotational");
    assert_eq!(fact("USB driver").value, "uas (from sysfs)");
    assert_eq!(fact("USB link speed").value, "5000M");
    assert_eq!(fact("filesystem").value, "ext4");
    assert_eq!(fact("path is on").value, "ext4");
    assert_eq!(fact("benchpipe").value, "0.1.0");
    assert_eq!(
        fact("host key accepted after the flash").value,
        "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"
    );
    assert_eq!(
        fact("image").value,
        "as installed on the board (not flashed by benchpipe)"
    );
    assert_eq!(fact("mount options").value, "noatime", "the fixture's ext4");
    assert_eq!(p.cells.len(), 2);
    assert!(p.cells[1] == "disk-4k-again 0123456789ab", "{:?}", p.cells);

    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(md.contains("## Provenance"), "{md}");
    assert!(
        md.contains(
            "> **Warning:** kernel differs between the cells of pi-2 / usb / ext4 / installed"
        ),
        "{md}"
    );
    let html = String::from_utf8(Html.render(&r).unwrap()).unwrap();
    assert!(
        html.contains("<strong>Warning:</strong> kernel differs"),
        "{html}"
    );
    // No device node, board path or backing file of the host reaches a report.
    for text in [
        &md,
        &html,
        &String::from_utf8(Json.render(&r).unwrap()).unwrap(),
    ] {
        for leak in ["/dev/sda", "/var/tmp", "/mnt/x", "backing"] {
            assert!(!text.contains(leak), "{leak} in {text}");
        }
    }
}

/// One kernel for every cell of a configuration is no warning.
#[test]
fn the_same_facts_in_every_cell_are_no_warning() {
    let (ws, scenario, plan) = usb_against_sd();
    let data: BTreeMap<_, _> = plan
        .cells
        .iter()
        .map(|c| (c.key.clone(), cell_with_facts(c, "Linux 6.1.0 aarch64")))
        .collect();
    let r = build(&ws, &scenario, &plan, &data);
    assert!(!r.provenance.is_empty());
    assert!(
        r.provenance.iter().all(|p| p.warnings.is_empty()),
        "{:#?}",
        r.provenance
    );
}

/// A host key shows only as its fingerprint, computed as `ssh-keygen -l` does.
#[test]
fn a_host_key_shows_as_its_sha256_fingerprint() {
    // Expected: `ssh-keygen -l -f` on this public key (a throwaway lab key).
    let key =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA4Xa6br3rtsvJErskKS4A9SLiIlDdMZUYkd9ZavhNmj lab";
    assert_eq!(
        host_key_fingerprint(key).as_deref(),
        Some("SHA256:QGhkiYzSUX6CZOT0Fq+9dG1/g3yxYUnKx17AD2eKaFA")
    );
    assert_eq!(
        host_key_fingerprint("SHA256:abc+/=").as_deref(),
        Some("SHA256:abc+/")
    );
    assert_eq!(host_key_fingerprint("hunter2 password"), None);
    assert_eq!(host_key_fingerprint("SHA256:a b"), None);
}

/// A cell of image `ubuntu` prepared for cloud-init with extra user-data, measured, its
/// facts as apply stores them after flashing the prepared image.
fn prepared_cell() -> (
    crate::model::Workspace,
    crate::model::Scenario,
    crate::plan::Plan,
    BTreeMap<CellKey, CellData>,
) {
    let fb = crate::model::Firstboot {
        user_data: Some(crate::model::Attachment {
            text: "#cloud-config\npackages: [fio]\n".into(),
            sha256: "c".repeat(64),
        }),
        ..crate::plan::tests_firstboot::firstboot()
    };
    let ws = crate::plan::tests_firstboot::workspace(Some(fb));
    let scenario = ws.scenarios[0].clone();
    let plan = crate::plan::expand(&ws, &scenario);
    let mut data = BTreeMap::new();
    for c in &plan.cells {
        let mut d = cell_with_facts(c, "Linux 6.1.0 aarch64");
        let mut facts = stored_facts("Linux 6.1.0 aarch64");
        facts["flashed"] = serde_json::json!({
            "file_sha256": "a".repeat(64), "method": "dd",
            "written_bytes": 4096, "written_sha256": "d".repeat(64),
            "base_file_sha256": "a".repeat(64),
            "firstboot": {"kind": "cloud-init", "user": "bench",
                          "key_fingerprint": "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
                          "hostname": "pi-1", "derivation_key": "e".repeat(64),
                          "derived_sha256": "d".repeat(64), "derived_bytes": 4096},
        });
        d.facts = Some(facts.into());
        data.insert(c.key.clone(), d);
    }
    (ws, scenario, plan, data)
}

/// A prepared image's provenance: the base image as the scenario declares it, a line
/// for its first boot (the kind and extra user-data's digest from the cell's key, the
/// user, key fingerprint and host name the flash wrote, the prepared image's digest),
/// and never the key's text.
#[test]
fn a_prepared_images_provenance_shows_its_base_its_preparation_and_the_prepared_digest() {
    let (ws, scenario, plan, data) = prepared_cell();
    assert!(!plan.cells.is_empty());
    let r = build(&ws, &scenario, &plan, &data);
    let p = &r.provenance[0];
    let fact = |n: &str| {
        p.facts
            .iter()
            .find(|f| f.name == n)
            .map_or_else(|| panic!("no {n}: {:#?}", p.facts), |f| f.value.clone())
    };
    assert_eq!(fact("image"), format!("sha256:{}", "a".repeat(64)));
    assert_eq!(
        fact("first boot"),
        format!(
            "prepared for cloud-init, extra user-data sha256:{}, user bench, key \
             SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU, host name pi-1; prepared \
             image sha256:{}",
            "c".repeat(64),
            "d".repeat(64)
        )
    );
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(
        md.contains("| first boot | prepared for cloud-init"),
        "{md}"
    );
    assert!(!md.contains("ssh-ed25519 AAAA"), "{md}");
}

/// results.csv's image columns of a prepared image: `image` its name, `image_id` the base
/// image it was made from (its identity, as for an unprepared one), never the inputs'
/// record of base and preparation.
#[test]
fn the_csv_image_column_of_a_prepared_image_is_its_base() {
    let (ws, scenario, plan, data) = prepared_cell();
    let r = build(&ws, &scenario, &plan, &data);
    let csv = String::from_utf8(r.csv_rows.pieces().flatten().copied().collect()).unwrap();
    let column = |name: &str| {
        crate::report::csv::CSV_COLUMNS
            .iter()
            .position(|c| *c == name)
            .unwrap()
    };
    let rows: Vec<&str> = csv.lines().collect();
    assert!(!rows.is_empty(), "no rows: {csv}");
    for row in rows {
        // The fixture's fields hold no comma or quote up to these columns.
        let fields: Vec<&str> = row.split(',').collect();
        assert_eq!(fields[column("image")], "ubuntu", "{row}");
        assert_eq!(
            fields[column("image_id")],
            format!("sha256:{}", "a".repeat(64)),
            "{row}"
        );
    }
    assert!(
        !csv.contains("firstboot") && !csv.contains("cloud-init") && !csv.contains('{'),
        "{csv}"
    );
}

/// Each test's recipe shows under its own name, as the cell's facts record it (built in,
/// or the workspace's file) with its text's sha256: two tests with two recipes in one
/// configuration are no warning.
#[test]
fn each_tests_recipe_shows_built_in_or_its_file_with_its_sha256() {
    let (ws, scenario, mut plan) = usb_against_sd();
    let first = plan
        .cells
        .iter()
        .position(|c| c.address.label() == "disk-4k on pi-2 usb/ext4 (installed)")
        .expect("the fixture has pi-2 usb/ext4");
    let mut other = plan.cells[first].clone();
    other.address.test = "disk-4k-again".into();
    other.key = CellKey::parse("0123456789abcdef0123456789abcdef").unwrap();
    plan.cells.push(other.clone());
    let with_recipe = |cell: &Cell, recipe: serde_json::Value| {
        let mut d = cell_with_facts(cell, "Linux 6.1.0 aarch64");
        let mut facts = stored_facts("Linux 6.1.0 aarch64");
        facts["recipe"] = recipe;
        d.facts = Some(facts.into());
        d
    };
    let (a, b) = ("a".repeat(64), "b".repeat(64));
    let mut data = BTreeMap::new();
    data.insert(
        plan.cells[first].key.clone(),
        with_recipe(
            &plan.cells[first],
            serde_json::json!({"file": "<built-in>/pipeline/disk-4k.toml", "origin": "built-in", "sha256": a}),
        ),
    );
    data.insert(
        other.key.clone(),
        with_recipe(
            &other,
            serde_json::json!({"file": "pipeline/disk-4k-again.toml", "origin": "workspace", "sha256": b}),
        ),
    );
    let r = build(&ws, &scenario, &plan, &data);
    let p = &r.provenance[0];
    assert!(p.warnings.is_empty(), "{:#?}", p.warnings);
    let fact = |n: &str| {
        p.facts
            .iter()
            .find(|f| f.name == n)
            .unwrap_or_else(|| panic!("no {n}: {:#?}", p.facts))
            .value
            .clone()
    };
    assert_eq!(fact("recipe disk-4k"), format!("built-in, sha256:{a}"));
    assert_eq!(
        fact("recipe disk-4k-again"),
        format!("pipeline/disk-4k-again.toml, sha256:{b}")
    );
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(md.contains(&format!("built-in, sha256:{a}")), "{md}");
}

/// Facts every configuration shares are told once, in one table; each configuration
/// then lists only what differs (here the kernel of one board), and its cells.
#[test]
fn shared_provenance_is_told_once_and_each_configuration_only_what_differs() {
    let (ws, scenario, plan) = usb_against_sd();
    let data: BTreeMap<_, _> = plan
        .cells
        .iter()
        .map(|c| {
            let kernel = if c.address.board.as_str() == "pi-2" {
                "Linux 6.6.0 aarch64"
            } else {
                "Linux 6.1.0 aarch64"
            };
            (c.key.clone(), cell_with_facts(c, kernel))
        })
        .collect();
    let r = build(&ws, &scenario, &plan, &data);
    assert!(r.provenance.len() >= 2, "{:#?}", r.provenance);
    let source = Templates::embedded().markdown.source;
    let md = super::export::render_template("index.md", source, &r).unwrap();
    let md = String::from_utf8(md).unwrap();
    // The board model is the same everywhere: one row, not one per configuration.
    assert_eq!(md.matches("| board model |").count(), 1, "{md}");
    assert_eq!(md.matches("| memory |").count(), 1, "{md}");
    assert!(r.provenance_shared.iter().any(|f| f.name == "memory"));
    // The kernel differs between the boards: per configuration, with its value.
    assert!(r.provenance_shared.iter().all(|f| f.name != "kernel"));
    assert_eq!(md.matches("| kernel |").count(), r.provenance.len(), "{md}");
    assert!(md.contains("| kernel | Linux 6.6.0 aarch64 |"), "{md}");
    for p in &r.provenance_own {
        assert!(p.facts.iter().all(|f| f.name != "memory"), "{p:#?}");
        assert!(!p.cells.is_empty());
    }
}

/// A stored fact of another type reads as absent in results.csv and in the provenance
/// alike, and only that fact: an os-release with one odd entry still names the OS, a
/// storage with an odd id still its USB driver, an odd tool leaves the others.
#[test]
fn an_odd_entry_of_a_stored_fact_leaves_the_rest_of_it_in_the_csv_and_the_provenance() {
    let (ws, scenario, plan) = usb_against_sd();
    let mut facts = stored_facts("Linux 6.1.0 aarch64");
    facts["os_release"]["ODD"] = serde_json::json!(["x"]);
    facts["storage"]["usb"]["id"] = serde_json::json!({"x": 1});
    facts["storage"]["size_bytes"] = serde_json::json!("big");
    facts["tools"]["odd"] = serde_json::json!({"x": 1});
    let mut data = BTreeMap::new();
    for cell in &plan.cells {
        let mut d = cell_with_facts(cell, "");
        d.facts = Some(facts.clone().into());
        data.insert(cell.key.clone(), d);
    }
    let r = build(&ws, &scenario, &plan, &data);
    let csv = String::from_utf8(r.csv_rows.pieces().flatten().copied().collect()).unwrap();
    let rows = super::tests_exports::parse_csv(&csv);
    let col = |name: &str| {
        crate::report::csv::CSV_COLUMNS
            .iter()
            .position(|c| *c == name)
            .unwrap()
    };
    assert!(!rows.is_empty(), "no rows: {csv}");
    for row in &rows {
        assert_eq!(row[col("os_release")], "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(row[col("usb_driver")], "uas");
        assert_eq!(row[col("tools")], "fio=fio-3.33");
    }
    // The same facts in every configuration: told once, shared.
    let shared = &r.provenance_shared;
    let fact = |n: &str| shared.iter().find(|f| f.name == n).map(|f| &f.value);
    assert_eq!(
        fact("os-release").map(String::as_str),
        Some("Debian GNU/Linux 12 (bookworm) (debian 12)"),
        "{shared:#?}"
    );
    assert_eq!(fact("tool fio").map(String::as_str), Some("fio-3.33"));
    assert_eq!(fact("tool odd"), None, "{shared:#?}");
}
