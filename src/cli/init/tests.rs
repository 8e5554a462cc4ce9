//! `benchpipe init`'s tests: host arguments, and the board files written from probed facts
//! (hostile ones too) checking as written and once uncommented.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use super::render::{self, Reach};
use super::*;
use crate::network::links::Link;
use crate::probe::Privilege;
use crate::storage::facts::StorageFacts;
use crate::storage::lsblk::Disk;

#[test]
fn host_arguments_are_checked_and_named() {
    let ok = |a: &str| parse_host(a).unwrap_or_else(|e| panic!("{a}: {e}"));
    let h = ok("pi@192.168.1.20");
    assert_eq!(
        (h.name.as_str(), h.user.as_deref(), h.host.as_str(), h.port),
        ("192.168.1.20", Some("pi"), "192.168.1.20", None)
    );
    let h = ok("pi4-1=root@pi4.local:2222");
    assert_eq!((h.name.as_str(), h.port), ("pi4-1", Some(2222)));
    assert_eq!(ok("v6=[fe80::1]:22").host, "fe80::1");
    for bad in [
        "",
        "-oProxyCommand=touch /tmp/x",
        "pi@",
        "@host",
        "host:0",
        "host:99999",
        "a b",
        "host\n[[storage]]",
        "x\u{1b}[31m",
        "$(reboot)",
        "`id`@host",
        "pi;rm@host",
        "../../etc=host",
        "../etc/passwd",
        "[fe80::1]",
        "[not-v6]:22",
        "a,b",
        "host'\"",
        &"h".repeat(400),
    ] {
        assert!(parse_host(bad).is_err(), "{bad:?} was taken");
    }
    let e = parse_host("x\u{1b}[31m").unwrap_err();
    assert!(!e.contains('\u{1b}'), "the refusal shows no control: {e:?}");
}

fn pi() -> HostFacts {
    let by_id = "usb-Samsung_Portable_SSD_T5_S49WNP0N120517A-0:0".to_string();
    HostFacts {
        model: Some("Raspberry Pi 4 Model B Rev 1.4 \"quoted\" \\".into()),
        arch: Some("aarch64".into()),
        memory_kib: Some(3884328),
        os_release: BTreeMap::from([(
            "PRETTY_NAME".to_string(),
            "Debian GNU/Linux 12 (bookworm)".to_string(),
        )]),
        user: Some("pi".into()),
        privilege: Privilege::PasswordlessSudo,
        ssh_address: Some("192.168.1.20".into()),
        disks: vec![
            Disk {
                name: "sda".into(),
                kind: "disk".into(),
                size: Some(500107862016),
                model: Some("Portable SSD T5".into()),
                serial: Some("S49WNP0N120517A".into()),
                tran: Some("usb".into()),
                ..Disk::default()
            },
            Disk {
                name: "sdb".into(),
                kind: "disk".into(),
                size: Some(1000204886016),
                ..Disk::default()
            },
            Disk {
                name: "mmcblk0".into(),
                kind: "disk".into(),
                size: Some(31914983424),
                mounts: vec!["/boot/firmware".into(), "/".into()],
                ..Disk::default()
            },
        ],
        disks_note: None,
        links: vec![
            Link {
                name: "eth0".into(),
                ipv4: vec!["192.168.1.20".into()],
                ..Link::default()
            },
            Link {
                name: "wlan0".into(),
                ipv4: vec!["192.168.1.21".into()],
                ..Link::default()
            },
        ],
        wireless: ["wlan0".to_string()].into(),
        disk_facts: BTreeMap::from([
            (
                "sda".to_string(),
                StorageFacts {
                    serial: Some("S49WNP0N120517A".into()),
                    size_bytes: Some(500107862016),
                    by_id: vec!["wwn-0x5002538e40a1b2c3".into(), by_id],
                    ..StorageFacts::default()
                },
            ),
            (
                "sdb".to_string(),
                StorageFacts {
                    // A by-id name no board file takes is not used.
                    by_id: vec!["usb-x\"y".into()],
                    size_bytes: Some(1000204886016),
                    ..StorageFacts::default()
                },
            ),
        ]),
    }
}

fn reach() -> Reach<'static> {
    Reach {
        name: "pi4-1",
        host: "192.168.1.20",
        port: None,
        user: "pi",
        identity: None,
        known_hosts: None,
    }
}

/// A workspace with `boards`, the starter scenario and the repository's recipes.
fn workspace(tag: &str, boards: &[(&str, String)]) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bp-init-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("boards")).unwrap();
    std::fs::create_dir_all(d.join("scenarios")).unwrap();
    std::os::unix::fs::symlink(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("pipeline"),
        d.join("pipeline"),
    )
    .unwrap();
    for (name, text) in boards {
        std::fs::write(d.join("boards").join(format!("{name}.toml")), text).unwrap();
    }
    std::fs::write(d.join(render::SCENARIO), render::scenario()).unwrap();
    d
}

/// Loads the workspace as `check` does: the errors, or the warnings.
fn check(d: &std::path::Path) -> std::result::Result<Vec<String>, String> {
    crate::check::load(d, &[d.join(render::SCENARIO)])
        .map(|ws| {
            let cells: usize = crate::cli::plans(&ws)
                .iter()
                .map(|(_, p)| p.cells.len())
                .sum();
            assert!(cells > 0, "the starter scenario plans cells");
            ws.warnings
        })
        .map_err(|e| e.to_string())
}

/// The text with the commented block holding `device` uncommented.
fn uncomment(text: &str, device: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == format!("# device = \"{device}\""))
        .unwrap_or_else(|| panic!("no block for {device} in:\n{text}"));
    let start = (0..at)
        .rev()
        .find(|&i| lines[i] == "# [[storage]]")
        .unwrap();
    let end = (at..lines.len())
        .find(|&i| !lines[i].starts_with("# ") || lines[i].starts_with("# [[") && i > at)
        .unwrap_or(lines.len());
    let mut out: Vec<String> = lines.iter().map(ToString::to_string).collect();
    for l in &mut out[start..end] {
        *l = l.strip_prefix("# ").unwrap().to_string();
    }
    out.join("\n") + "\n"
}

#[test]
fn a_board_file_checks_as_written_and_with_each_free_disk_uncommented() {
    let text = render::board_file(&reach(), &pi());
    assert!(
        text.contains("model = \"Raspberry Pi 4 Model B Rev 1.4 \\\"quoted\\\" \\\\\"\n"),
        "{text}"
    );
    assert!(text.contains("memory = \"3793 MiB\""), "{text}");
    assert!(text.contains("become = \"sudo\""), "{text}");
    assert!(
        text.contains(
            "name = \"lan\"\naddress = \"192.168.1.20\"\ninterface = \"eth0\"\nkind = \"wired\""
        ),
        "{text}"
    );
    assert!(
        text.contains("# interface = \"wlan0\"\n# kind = \"wifi\""),
        "{text}"
    );
    assert!(
        text.contains("In use, never a scratch device: mmcblk0"),
        "{text}"
    );
    let d = workspace("board", &[("pi4-1", text.clone())]);
    assert_eq!(check(&d), Ok(vec![]), "{text}");
    let ssd = "/dev/disk/by-id/usb-Samsung_Portable_SSD_T5_S49WNP0N120517A-0:0";
    for device in [ssd, "/dev/sdb"] {
        let edited = uncomment(&text, device);
        std::fs::write(d.join("boards/pi4-1.toml"), &edited).unwrap();
        assert_eq!(check(&d), Ok(vec![]), "{edited}");
        let ws = crate::check::load(&d, &[d.join(render::SCENARIO)]).unwrap();
        let board = &ws.boards[&BoardName::new("pi4-1")];
        let st = board
            .storage
            .iter()
            .find(|s| s.device.as_deref() == Some(device))
            .unwrap();
        assert!(st.serial.is_some() || st.size_bytes.is_some(), "{st:?}");
    }
    let edited = uncomment(&text, ssd);
    assert!(
        edited.contains("serial = \"S49WNP0N120517A\"\nsize = 500107862016"),
        "{edited}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn hostile_facts_stay_inside_their_strings_and_comments() {
    let mut h = pi();
    h.model = Some("x\"\n[[storage]]\nname = \"evil\"".into());
    h.os_release.insert(
        "PRETTY_NAME".into(),
        "Debian\n[flash]\nmethod = \"dd\"".into(),
    );
    h.disks[2].mounts = vec!["/mnt/a\nmodel = \"evil\"".into()];
    h.disks[0].model = Some("m\u{1b}[2J".into());
    let text = render::board_file(&reach(), &h);
    let d = workspace("hostile", &[("pi4-1", text.clone())]);
    assert_eq!(check(&d), Ok(vec![]), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("[flash]") || l.starts_with("name = \"evil\"")),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_root_board_without_disks_links_or_model_still_checks() {
    let h = HostFacts {
        model: None,
        arch: None,
        memory_kib: None,
        os_release: BTreeMap::new(),
        user: None,
        privilege: Privilege::SudoWithPassword,
        ssh_address: None,
        disks: vec![],
        disks_note: Some("no disks listed: lsblk printed no JSON".into()),
        links: vec![],
        wireless: std::collections::BTreeSet::new(),
        disk_facts: BTreeMap::new(),
    };
    let text = render::board_file(&reach(), &h);
    assert!(text.contains("model = \"unknown unknown board\""), "{text}");
    assert!(text.contains("# become = \"sudo\""), "{text}");
    let d = workspace("bare", &[("pi4-1", text.clone())]);
    assert_eq!(check(&d), Ok(vec![]), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_example_board_checks_once_uncommented() {
    // The prose ends at the first `#` line; below it each line is a line of TOML.
    let example = render::example_board();
    let (_, body) = example.split_once("\n#\n").unwrap();
    let text: String = body
        .lines()
        .map(|l| {
            l.strip_prefix("# ")
                .unwrap_or(if l == "#" { "" } else { l })
        })
        .fold(String::new(), |mut out, l| {
            let _ = writeln!(out, "{l}");
            out
        });
    let d = workspace("example", &[("pi4-1", text.clone())]);
    assert_eq!(check(&d), Ok(vec![]), "{text}");
    let _ = std::fs::remove_dir_all(&d);
}
