//! Tests of matrix expansion: include/exclude, collapsed axes, cells that cannot apply.

use super::*;
use std::time::Duration;

use crate::model::{CellPattern, Connection, Side, SshTarget};

fn keys(ws: &Workspace) -> Vec<String> {
    expand(ws, &ws.scenarios[0])
        .cells
        .iter()
        .map(|c| format!("{} {}", c.key, c.address.label()))
        .collect()
}

#[test]
fn expansion_collapses_storage_for_tests_that_do_not_use_it_and_skips_what_cannot_apply() {
    let ws = fixtures::workspace();
    let plan = expand(&ws, &ws.scenarios[0]);
    // Per board: disk-4k on sd/as-is, usb/as-is, usb/ext4 (sd/ext4 is boot: skipped), xz once.
    assert_eq!(plan.cells.len(), 8, "{:#?}", keys(&ws));
    assert_eq!(plan.skipped.len(), 2);
    assert!(
        plan.skipped[0].reason.contains("boot storage"),
        "{:?}",
        plan.skipped
    );
}

#[test]
fn exclude_removes_and_include_adds_back_like_a_ci_matrix() {
    let mut ws = fixtures::workspace();
    let m = &mut ws.scenarios[0].matrix;
    m.exclude.push(CellPattern {
        board: Some("pi-*".into()),
        filesystem: Some("ext4".into()),
        ..CellPattern::default()
    });
    m.include.push(CellPattern {
        board: Some("pi-2".into()),
        storage: Some("usb".into()),
        filesystem: Some("ext4".into()),
        test: Some("disk-4k".into()),
        ..CellPattern::default()
    });
    let labels: Vec<String> = expand(&ws, &ws.scenarios[0])
        .cells
        .iter()
        .map(|c| c.address.label())
        .collect();
    assert_eq!(
        labels,
        [
            "disk-4k on pi-1 sd/as-is (installed)",
            "disk-4k on pi-1 usb/as-is (installed)",
            "xz on pi-1 (installed)",
            "disk-4k on pi-2 sd/as-is (installed)",
            "disk-4k on pi-2 usb/as-is (installed)",
            "xz on pi-2 (installed)",
            "disk-4k on pi-2 usb/ext4 (installed)",
        ]
    );
}

#[test]
fn a_storage_the_board_lacks_and_an_image_it_cannot_flash_are_skipped_with_reasons() {
    let mut ws = fixtures::workspace();
    ws.boards
        .get_mut(&"pi-2".into())
        .unwrap()
        .storage
        .truncate(1);
    let s = &mut ws.scenarios[0];
    s.matrix.storage = vec!["usb".into()];
    s.images.insert(
        "raspios".into(),
        crate::model::Image {
            name: "raspios".into(),
            source: ImageSource::Url {
                url: crate::model::ImageUrl::new("https://example.invalid/raspios.img.xz"),
                sha256: "0".repeat(64),
                min_rate: None,
            },
            expect: crate::model::Expectations::default(),
            firstboot: None,
        },
    );
    s.matrix.image.push("raspios".into());
    let plan = expand(&ws, &ws.scenarios[0]);
    let reasons: Vec<&str> = plan.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert!(
        reasons.contains(&"board pi-2 has no storage matching `usb`"),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("must be flashed, but board pi-1 has no [flash]")),
        "{reasons:?}"
    );
    assert!(
        plan.cells
            .iter()
            .all(|c| c.address.image.as_str() == "installed")
    );
}

#[test]
fn an_image_is_planned_on_a_board_that_flashes_and_skipped_where_its_method_is_missing() {
    let mut ws = fixtures::workspace();
    ws.boards.get_mut(&"pi-1".into()).unwrap().flash = crate::model::Flash::Tpi {
        via: "bmc".into(),
        node: 2,
        dir: crate::model::TPI_DEFAULT_DIR.into(),
    };
    let s = &mut ws.scenarios[0];
    s.images.insert(
        "raspios".into(),
        crate::model::Image {
            name: "raspios".into(),
            source: ImageSource::Url {
                url: crate::model::ImageUrl::new("https://example.invalid/raspios.img.xz"),
                sha256: "0".repeat(64),
                min_rate: None,
            },
            expect: crate::model::Expectations {
                os_release: BTreeMap::from([("ID".into(), "raspbian".into())]),
                uname_m: None,
            },
            firstboot: None,
        },
    );
    s.matrix.image.push("raspios".into());
    let plan = expand(&ws, &ws.scenarios[0]);
    assert!(
        plan.skipped
            .iter()
            .any(|s| s.reason
                == "image raspios must be flashed, but board pi-2 has no [flash] method"),
        "{:?}",
        plan.skipped
    );
    // pi-1 flashes with tpi: its raspios cells are planned, pi-2's are not.
    let raspios: Vec<&str> = plan
        .cells
        .iter()
        .filter(|c| c.address.image.as_str() == "raspios")
        .map(|c| c.address.board.as_str())
        .collect();
    assert!(
        !raspios.is_empty() && raspios.iter().all(|b| *b == "pi-1"),
        "{raspios:?}"
    );
}

#[test]
fn a_test_reading_the_device_skips_storage_without_one() {
    let mut ws = fixtures::workspace();
    ws.recipes.get_mut(&"disk-4k".into()).unwrap().uses_device = true;
    for b in ws.boards.values_mut() {
        b.storage[1].device = None;
    }
    ws.scenarios[0].matrix.filesystem = vec![FsName::new(AS_IS)];
    let plan = expand(&ws, &ws.scenarios[0]);
    let storages: Vec<_> = plan
        .cells
        .iter()
        .filter_map(|c| c.address.storage.as_ref().map(ToString::to_string))
        .collect();
    assert_eq!(storages, ["sd", "sd"]);
    assert!(
        plan.skipped.iter().any(|s| s.reason
            == "test disk-4k reads the storage's block device, but storage usb declares no device"),
        "{:?}",
        plan.skipped
    );
}

/// A raw-device test (`uses_storage = "device"`) has one cell per device, with no
/// filesystem, also on boot storage (it only reads); its key does not change with the
/// filesystems the matrix lists, and `bound` counts it once per storage.
#[test]
fn a_raw_device_test_runs_once_per_device_whatever_the_filesystems() {
    let mut ws = fixtures::workspace();
    let mut hdparm = fixtures::recipe("hdparm", true);
    hdparm.raw_device = true;
    hdparm.uses_device = true;
    hdparm.run.command = "hdparm -t {{ device }}".into();
    ws.recipes.insert(hdparm.name.clone(), hdparm);
    ws.scenarios[0].matrix.test.push(TestName::new("hdparm"));
    let plan = expand(&ws, &ws.scenarios[0]);
    let raw: Vec<&Cell> = plan
        .cells
        .iter()
        .filter(|c| c.address.test.as_str() == "hdparm")
        .collect();
    let labels: Vec<String> = raw.iter().map(|c| c.address.label()).collect();
    assert_eq!(
        labels,
        [
            "hdparm on pi-1 sd (installed)",
            "hdparm on pi-1 usb (installed)",
            "hdparm on pi-2 sd (installed)",
            "hdparm on pi-2 usb (installed)"
        ]
    );
    assert!(
        raw.iter()
            .all(|c| c.filesystem.is_none() && c.inputs.json()["filesystem"].is_null())
    );
    // Per board: disk-4k on 3 (storage, filesystem), xz once, hdparm on 2 devices.
    let b = bound(&ws.boards, &ws.recipes, &ws.scenarios[0]);
    assert_eq!(b.cells, 2 * (2 * 2 + 1 + 2));
    assert_eq!(plan.cells.len(), 2 * (3 + 1 + 2));
    let keys_with = |filesystems: &[&str]| -> Vec<CellKey> {
        let mut ws = ws.clone();
        ws.scenarios[0].matrix.filesystem = filesystems.iter().map(|f| FsName::new(*f)).collect();
        expand(&ws, &ws.scenarios[0])
            .cells
            .into_iter()
            .filter(|c| c.address.test.as_str() == "hdparm")
            .map(|c| c.key)
            .collect()
    };
    let all = keys_with(&[AS_IS, "ext4"]);
    assert_eq!(all.len(), 4);
    assert_eq!(keys_with(&["ext4"]), all);
    assert_eq!(keys_with(&[AS_IS]), all);
    // A filesystem exclude does not remove a cell that has no filesystem.
    ws.scenarios[0].matrix.exclude.push(CellPattern {
        filesystem: Some("ext4".into()),
        ..CellPattern::default()
    });
    let plan = expand(&ws, &ws.scenarios[0]);
    assert_eq!(
        plan.cells
            .iter()
            .filter(|c| c.address.test.as_str() == "hdparm")
            .count(),
        4
    );
}

#[test]
fn golden_keys() {
    // Pinned: a change here means every stored cell gets a new key. Do it only on
    // purpose, with a new `key::ENCODING`.
    //
    // Changed twice. From benchpipe-cell-v1 to v2: v1 hashed serde_json's output and
    // relied on its `preserve_order` feature staying off, which any dependency can
    // switch on; and `idle`, `services` and `parse_regex` had been added to v1
    // without a bump. v2 is `canonical::CanonicalWriter`, with every field always present.
    // v3 added the test's `before_run` steps after `setup`; the v2 keys were
    // b1e2564f..., 18ce5500..., 726dd468..., a90e31b2..., 72c72452..., 044bb906...,
    // 894fe5cb..., ba351674... in this order.
    // The v1 keys were ada66502..., dc38ed9d..., e897d2d9..., 968237b3...,
    // 96154fbe..., fdd0a64f..., e50c25ec..., c845deb0... in this order.
    // Changed again, to v3: the `network` field (a networked cell's link), the test's
    // `setup_after_services` and `before_run` steps, clusters and peer boards (`cluster`,
    // `peer`, the run's and metrics' `per_member`, `sum_of`). The v2 keys were
    // b1e2564f..., 18ce5500..., 726dd468..., a90e31b2..., 72c72452..., 044bb906...,
    // 894fe5cb..., ba351674... in this order.
    let ws = fixtures::workspace();
    let got = keys(&ws);
    let want = [
        "ff40b9c9acb95ce9de1033e3d313bcc7 disk-4k on pi-1 sd/as-is (installed)",
        "1b9fe88f4138c800ce4b6a5b2bec6b3b disk-4k on pi-1 usb/as-is (installed)",
        "cca261133b9a9860e7fb714df9c5b48b disk-4k on pi-1 usb/ext4 (installed)",
        "a3f1e67a659516d4bdd76ff29dc02b58 xz on pi-1 (installed)",
        "91af838f15d36d315bbf1d4f47835446 disk-4k on pi-2 sd/as-is (installed)",
        "6ef63f92a41c9f59b961b38827c56e2a disk-4k on pi-2 usb/as-is (installed)",
        "f0055f00f5e797162f8447f610f7f766 disk-4k on pi-2 usb/ext4 (installed)",
        "c2ef3eadc5c41512ca727a34e383725d xz on pi-2 (installed)",
    ];
    assert_eq!(got, want);
}

#[test]
fn golden_canonical_bytes() {
    // The whole encoding of one cell, so that a changed key shows which field moved.
    // Its key, computed outside the project:
    // python3 -c "import hashlib,sys; print(hashlib.sha256(b'benchpipe-cell-v3\x00'
    //   + sys.stdin.buffer.read()).hexdigest()[:32])" < bytes
    let ws = fixtures::workspace();
    let scenario = &ws.scenarios[0];
    let board = &ws.boards[&"pi-1".into()];
    let recipe = &ws.recipes[&"xz".into()];
    let inputs = key::cell_inputs(&key::BoardCell {
        image: &scenario.images[&"installed".into()],
        board,
        storage: None,
        filesystem: None,
        network: None,
        recipe,
        params: &recipe.params,
        method: &scenario.method,
    });
    let want = concat!(
        "r9:",
        "s5:images19:installed:installed",
        "s5:boardr3:s4:names4:pi-1s5:models14:Raspberry Pi 4s4:archs7:aarch64",
        "s7:storagen",
        "s10:filesystemn",
        "s7:networkn",
        "s4:testr11:",
        "s4:names2:xz",
        "s5:setupl0:",
        "s20:setup_after_servicesl0:",
        "s10:before_runl0:",
        "s3:runr3:s2:ons5:boards7:commands44:fio --size={{ size }} --filename={{ dir }}/f",
        "s10:per_memberb0",
        "s8:teardownl0:",
        "s6:paramsm1:s4:sizes3:64M",
        "s6:parserr2:s4:names8:fio-jsons7:versioni1;",
        "s11:parse_regexn",
        "s7:metricsl1:r5:s4:names11:random_read",
        "s4:froms36:jobs[jobname=randread].read.bw_bytes",
        "s5:scalef3eb0c6f7a0b5ed8d", // 1e-6
        "s10:per_memberb0",
        "s6:sum_ofn",
        "s8:servicesl0:",
        "s6:methodr4:",
        "s8:cooldowns4:none",
        "s4:idlen",
        "s11:warmup_runsi1;",
        "s8:warmup_sn",
        "s7:clustern",
        "s4:peern",
    );
    assert_eq!(
        String::from_utf8(crate::canonical::canonical_bytes(&inputs)).unwrap(),
        want
    );
    assert_eq!(
        CellKey::of(&inputs).as_str(),
        "a3f1e67a659516d4bdd76ff29dc02b58",
        "the key of xz on pi-1 in golden_keys"
    );
}

#[test]
fn keys_ignore_addresses_and_credentials_but_not_what_changes_numbers() {
    type Change = Box<dyn Fn(&mut Workspace)>;
    let base = fixtures::workspace();
    let k0 = keys(&base);

    let mut ws = base.clone();
    for b in ws.boards.values_mut() {
        b.connection = Connection::Ssh(SshTarget {
            host: "192.0.2.7".into(),
            port: Some(2222),
            user: Some("root".into()),
            identity: Some("/root/.ssh/other".into()),
            password_env: Some("PW".into()),
            known_hosts: None,
            ..SshTarget::default()
        });
        b.file = "elsewhere/b.toml".into();
        b.workdir = "/other".into();
        b.storage[1].device = Some("/dev/loop7".into());
        b.storage[1].path = "/mnt/elsewhere".into();
    }
    ws.scenarios[0].method.runs.min = 10;
    ws.scenarios[0].method.runs.max = 20;
    ws.scenarios[0].method.validity.hot_celsius = 70.0;
    ws.scenarios[0].title = "Another title".into();
    ws.scenarios[0].file = "scenarios/renamed.toml".into();
    for r in ws.recipes.values_mut() {
        r.file = "pipeline/elsewhere.toml".into();
        r.description = "described otherwise".into();
        r.run.timeout = Some(Duration::from_secs(5));
        // A metric's label and the order metrics are declared in are the report's.
        r.metrics[0].label = Some("4K random read".into());
        let mut second = r.metrics[0].clone();
        second.name = "a_second_parsed_metric".into();
        r.metrics.push(second);
        // Metrics derived from stored values measure nothing new.
        let of = r.metrics[0].name.clone();
        r.metrics.push(crate::model::MetricSpec {
            name: "per_w".into(),
            label: None,
            from: String::new(),
            scale: 1.0,
            unit: "x/W".into(),
            better: crate::model::Better::Higher,
            primary: false,
            derive: Some(crate::model::Derived::PerWatt(of)),
            member: crate::model::MemberMetric::Whole,
            flag: None,
        });
    }
    // A power meter adds readings beside the numbers; it changes none of them.
    for b in ws.boards.values_mut() {
        b.meter = Some(crate::model::Meter {
            source: crate::model::MeterSource::File {
                path: "/sys/class/hwmon/hwmon0/power1_input".into(),
                scale: 1e-6,
            },
            idle: Duration::from_secs(5),
        });
    }
    let with_second = keys(&ws);
    assert_ne!(with_second, k0, "a second parsed metric is an input");
    // Declared before the first one instead: the same keys.
    for r in ws.recipes.values_mut() {
        r.metrics.swap(0, 1);
        r.metrics[0].label = Some("reordered".into());
    }
    assert_eq!(
        keys(&ws),
        with_second,
        "metric order and labels are not inputs"
    );
    for r in ws.recipes.values_mut() {
        r.metrics.remove(0);
    }
    assert_eq!(
        keys(&ws),
        k0,
        "addresses, credentials, run counts, timeouts, titles, file names, power meters, metric labels and derived metrics are not inputs"
    );

    let changes: Vec<(&str, Change)> = vec![
        (
            "recipe text",
            Box::new(|w| {
                w.recipes
                    .get_mut(&"disk-4k".into())
                    .unwrap()
                    .run
                    .command
                    .push_str(" --direct=1");
            }),
        ),
        (
            "board model",
            Box::new(|w| w.boards.get_mut(&"pi-1".into()).unwrap().model = "Raspberry Pi 5".into()),
        ),
        (
            "storage model",
            Box::new(|w| {
                w.boards.get_mut(&"pi-1".into()).unwrap().storage[1].model =
                    Some("Samsung T7".into());
            }),
        ),
        (
            "mount options",
            Box::new(|w| {
                w.scenarios[0]
                    .filesystems
                    .get_mut(&"ext4".into())
                    .unwrap()
                    .mount_options = vec![];
            }),
        ),
        (
            "warm-up",
            Box::new(|w| w.scenarios[0].method.warmup.runs = 2),
        ),
        (
            "params",
            Box::new(|w| {
                w.scenarios[0].params.insert(
                    "disk-4k".into(),
                    [(
                        "size".to_string(),
                        crate::model::ParamValue::Str("128M".into()),
                    )]
                    .into(),
                );
            }),
        ),
        (
            "cool-down",
            Box::new(|w| {
                w.scenarios[0].method.cooldown = crate::model::Cooldown::Fixed {
                    duration: Duration::from_secs(1),
                }
            }),
        ),
        (
            "idle gate",
            Box::new(|w| {
                w.scenarios[0].method.idle = Some(crate::model::IdleGate {
                    load_below: 0.5,
                    hold: Duration::from_secs(30),
                    max: Duration::from_secs(600),
                });
            }),
        ),
        (
            "services",
            Box::new(|w| {
                w.recipes.get_mut(&"xz".into()).unwrap().services =
                    vec![crate::model::ServiceSpec {
                        name: "iperf3".into(),
                        on: Side::Controller,
                        command: "iperf3 -s".into(),
                        ready: None,
                        ready_timeout: Duration::from_secs(10),
                    }];
            }),
        ),
        (
            "metric scale",
            Box::new(|w| w.recipes.get_mut(&"xz".into()).unwrap().metrics[0].scale = 1e-3),
        ),
    ];
    for (what, change) in changes {
        let mut ws = base.clone();
        change(&mut ws);
        let k = keys(&ws);
        let differ = k.iter().zip(&k0).filter(|(a, b)| a != b).count();
        assert!(differ > 0, "changing the {what} must change some keys");
    }
}

/// Every reason a combination cannot be measured, by its variant, with the text
/// `plan` shows (the texts of the `String`s `make_cell` returned before).
#[test]
fn cannot_measure_says_why_by_variant_with_the_same_text() {
    use CannotMeasure as C;
    let mut ws = fixtures::workspace();
    ws.boards.get_mut(&"pi-2".into()).unwrap().storage[1].device = None;
    ws.recipes.get_mut(&"xz".into()).unwrap().uses_device = true;
    ws.scenarios[0].images.insert(
        "raspios".into(),
        crate::model::Image {
            name: "raspios".into(),
            source: ImageSource::Url {
                url: crate::model::ImageUrl::new("https://example.invalid/raspios.img.xz"),
                sha256: "0".repeat(64),
                min_rate: None,
            },
            expect: crate::model::Expectations::default(),
            firstboot: None,
        },
    );
    let at =
        |board: &str, storage: Option<&str>, fs: Option<&str>, test: &str, image: &str| Address {
            image: image.into(),
            board: board.into(),
            storage: storage.map(StorageName::new),
            filesystem: fs.map(FsName::new),
            network: None,
            test: test.into(),
        };
    let cases: Vec<(Address, C, &str)> = vec![
        (
            at("pi-9", None, None, "xz", "installed"),
            C::UnknownBoard("pi-9".into()),
            "unknown board pi-9",
        ),
        (
            at("pi-1", None, None, "gzip", "installed"),
            C::UnknownTest("gzip".into()),
            "unknown test gzip",
        ),
        (
            at("pi-1", None, None, "xz", "nope"),
            C::UnknownImage("nope".into()),
            "unknown image nope",
        ),
        (
            at("pi-1", None, None, "xz", "raspios"),
            C::NoFlashMethod {
                image: "raspios".into(),
                board: "pi-1".into(),
            },
            "image raspios must be flashed, but board pi-1 has no [flash] method",
        ),
        (
            at("pi-1", Some("nvme"), None, "disk-4k", "installed"),
            C::NoSuchStorage {
                board: "pi-1".into(),
                storage: StorageName::new("nvme"),
            },
            "board pi-1 has no storage nvme",
        ),
        (
            at("pi-2", Some("usb"), None, "xz", "installed"),
            C::NoDeviceToRead {
                test: "xz".into(),
                storage: StorageName::new("usb"),
            },
            "test xz reads the storage's block device, but storage usb declares no device",
        ),
        (
            at("pi-1", Some("usb"), Some("zfs"), "disk-4k", "installed"),
            C::UnknownFilesystem(FsName::new("zfs")),
            "unknown filesystem zfs",
        ),
        (
            at("pi-1", None, Some("ext4"), "disk-4k", "installed"),
            C::FilesystemWithoutStorage,
            "a filesystem needs a storage",
        ),
        (
            at("pi-1", Some("sd"), Some("ext4"), "disk-4k", "installed"),
            C::BootStorage {
                storage: StorageName::new("sd"),
            },
            "storage sd is the boot storage; benchpipe never formats it",
        ),
        (
            at("pi-2", Some("usb"), Some("ext4"), "disk-4k", "installed"),
            C::NoDeviceToFormat {
                storage: StorageName::new("usb"),
                filesystem: FsName::new("ext4"),
            },
            "storage usb has no device, so it cannot be formatted as ext4",
        ),
    ];
    let s = &ws.scenarios[0];
    for (a, want, text) in cases {
        let got = make_cell(&ws.boards, &ws.recipes, s, &a, &BTreeMap::new()).unwrap_err();
        assert_eq!(got, want, "{}", a.label());
        assert_eq!(got.to_string(), text);
    }
    let e = C::NoStorageMatching {
        board: "pi-2".into(),
        pattern: "usb*".into(),
    };
    assert_eq!(e.to_string(), "board pi-2 has no storage matching `usb*`");
}
