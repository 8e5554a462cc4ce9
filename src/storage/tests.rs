//! Parsing mountinfo, lsblk and the device probe, and finding the covering mount.

use super::mounts::{parse_lsblk, parse_probe, probe};
use super::*;

const INFO: &str = "\
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
30 27 179:1 / /boot/firmware rw - vfat /dev/mmcblk0p1 rw
31 27 0:45 / /mnt/with\\040space rw - btrfs /dev/loop7 rw
32 27 7:3 /sub /var/tmp/bp/dir rw shared:1 - ext4 /dev/loop3 rw
33 32 0:50 / /var/tmp/bp/dir/deeper rw - tmpfs tmpfs rw
";

fn dev(ids: &[&str], names: &[&str]) -> Device {
    Device {
        real: names[0].to_string(),
        own_id: Some(ids[0].to_string()),
        ids: ids.iter().map(ToString::to_string).collect(),
        names: names.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn mountinfo_gives_ids_points_and_sources() {
    let m = parse_mountinfo(INFO);
    assert_eq!(m.len(), 5);
    assert_eq!(m[2].point, "/mnt/with space");
    assert_eq!(m[2].source, "/dev/loop7");
    assert_eq!(m[3].id, "7:3");
    assert_eq!(m[3].point, "/var/tmp/bp/dir");
}

/// Found by fuzzing (`fuzz/corpus/board_output/mountinfo-octal-over-a-byte`): `\777`
/// overflowed the byte it was read into (a panic with overflow checks, a wrong byte
/// without).
#[test]
fn an_octal_escape_over_a_byte_stays_as_written() {
    let m = parse_mountinfo("1 2 3:4 / /a\\777b\\400\\377 rw - ext4 /dev/x\\040y rw\n");
    assert_eq!(m[0].point, "/a\\777b\\400\u{fffd}");
    assert_eq!(m[0].source, "/dev/x y");
}

#[test]
fn a_disk_is_found_under_its_partitions_and_btrfs_by_source() {
    let m = parse_mountinfo(INFO);
    let mmc = dev(
        &["179:0", "179:1", "179:2"],
        &["/dev/mmcblk0", "/dev/mmcblk0p1"],
    );
    let on: Vec<_> = m.iter().filter(|x| mmc.holds(x)).collect();
    assert_eq!(on.len(), 1);
    assert!(rules::system_mount(&on[0].point).is_some());
    let vda = dev(&["254:0"], &["/dev/vda"]);
    assert!(m.iter().any(|x| vda.holds(x) && x.point == "/"));
    let loop7 = dev(&["7:7"], &["/dev/loop7"]);
    assert!(
        m.iter().any(|x| loop7.holds(x)),
        "btrfs is 0:N, matched by source"
    );
}

#[test]
fn the_covering_mount_is_the_deepest() {
    let m = parse_mountinfo(INFO);
    assert_eq!(covering(&m, "/var/tmp/bp/dir/x").unwrap().id, "7:3");
    assert_eq!(covering(&m, "/var/tmp/bp/dir").unwrap().id, "7:3");
    assert_eq!(covering(&m, "/var/tmp/bp/dirx").unwrap().id, "254:0");
    assert_eq!(covering(&m, "/var/tmp/bp/dir/deeper/f").unwrap().id, "0:50");
    assert_eq!(covering(&m, "/home/pi").unwrap().point, "/");
}

#[test]
fn probe_output_becomes_a_device() {
    let d = parse_probe(
        "/dev/disk/by-id/usb-X",
        "real /dev/sda\ndev 8:0 sda\ndev 8:1 sda1\ndev 253:0 dm-0 vg-data\n",
    )
    .unwrap();
    assert_eq!(d.real, "/dev/sda");
    assert_eq!(d.own_id.as_deref(), Some("8:0"));
    for n in [
        "/dev/sda1",
        "/dev/dm-0",
        "/dev/mapper/vg-data",
        "/dev/disk/by-id/usb-X",
    ] {
        assert!(d.names.contains(n), "{n}");
    }
    assert!(parse_probe("/dev/x", "notblock /dev/x\n").is_err());
    assert!(parse_probe("/dev/x", "").is_err());
    let hex = parse_probe("/dev/x", "real /dev/x\nhex b3 1\n").unwrap();
    assert!(hex.ids.contains("179:1"));
}

#[test]
fn lsblk_raw_output_unescapes() {
    let m = parse_lsblk("/dev/loop0 \n/dev/loop0p1 /mnt/a\\x20b\n");
    assert_eq!(m.len(), 1);
    assert_eq!(m[0].point, "/mnt/a b");
    assert_eq!(m[0].source, "/dev/loop0p1");
}

#[test]
fn a_failed_command_keeps_its_exit_and_stderr_and_reads_as_before() {
    let mut t = crate::transport::local::Local::new();
    let e = run(&mut t, "echo no >&2; exit 3").unwrap_err();
    let StorageError::Failed {
        command,
        exit,
        stderr,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(
        (command.as_str(), exit.code, stderr.as_str()),
        ("echo no >&2; exit 3", Some(3), "no")
    );
    assert_eq!(
        e.to_string(),
        format!("`echo no >&2; exit 3` ended with {exit}: no")
    );
}

#[test]
fn a_probe_says_what_it_was_doing_and_keeps_the_cause() {
    let mut t = crate::transport::local::Local::new();
    let e = probe(&mut t, "/nonexistent/dir/disk").unwrap_err();
    assert!(
        matches!(e.cause(), StorageError::Failed { exit, .. } if exit.code == Some(3)),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with("cannot resolve /nonexistent/dir/disk on the board: `"),
        "{e}"
    );
    let e = probe(&mut t, "/dev/null").unwrap_err();
    assert!(matches!(e, StorageError::Refused { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "/dev/null is not a block device on the board (it resolves to /dev/null)"
    );
}

#[test]
fn findmnt_pairs_give_type_source_and_mount_point() {
    // Real `findmnt -n -P -o FSTYPE,SOURCE,TARGET -T /tmp` output of this machine, and
    // one with a space and a quote in the mount point, which findmnt escapes.
    let p = parse_pairs("FSTYPE=\"ext4\" SOURCE=\"/dev/vda\" TARGET=\"/\"\n");
    assert_eq!(p["FSTYPE"], "ext4");
    assert_eq!(p["SOURCE"], "/dev/vda");
    assert_eq!(p["TARGET"], "/");
    let p = parse_pairs("FSTYPE=\"xfs\" SOURCE=\"/dev/loop3\" TARGET=\"/mnt/a b\\x22c\"");
    assert_eq!(p["FSTYPE"], "xfs");
    assert_eq!(p["TARGET"], "/mnt/a b\\x22c");
    assert!(parse_pairs("").is_empty());
    assert!(parse_pairs("garbage without pairs").is_empty());
}

#[test]
fn filesystem_at_names_what_holds_a_path_on_this_machine() {
    use crate::transport::local::Local;
    let mut t = Local::new();
    let got = filesystem_at(&mut t, "/").expect("findmnt or stat answers for /");
    // The root's type as the kernel's mountinfo says it.
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let root = info
        .lines()
        .find(|l| l.split_whitespace().nth(4) == Some("/"))
        .unwrap();
    let fstype = root
        .split(" - ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    assert_eq!(got["type"], fstype, "{got}");
    assert_eq!(got["mount_point"], "/", "{got}");
}
