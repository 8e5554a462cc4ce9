//! The pure rules about storage that both `check` and the board side enforce: which
//! mkfs and mount options are options only, which devices and paths may be declared,
//! when a scratch device overlaps boot storage, and how benchpipe marks its own mounts.
//!
//! `config/` refuses a violation at file:line:col; `storage::prepare` refuses it again
//! before it runs anything, so a model built some other way cannot slip past.

/// Mount points that hold the system. benchpipe never mounts a scratch device over one,
/// never formats a device mounted at one, and refuses them as a storage's `path` when
/// that storage has a `device`. `/mnt` and `/media` are left out: they exist for mounts.
pub const SYSTEM_MOUNTS: &[&str] = &[
    "/",
    "/bin",
    "/boot",
    "/boot/efi",
    "/boot/firmware",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/nix",
    "/nix/store",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/snap",
    "/srv",
    "/sys",
    "/tmp",
    "/usr",
    "/usr/local",
    "/var",
    "/var/cache",
    "/var/lib",
    "/var/log",
    "/var/tmp",
];

/// Trees of kernel interfaces: no storage path may lie inside them.
pub const KERNEL_TREES: &[&str] = &["/proc", "/sys", "/dev"];

/// The file benchpipe writes at the root of every filesystem it makes and mounts.
pub const MARKER: &str = ".benchpipe-mount";

/// The label benchpipe gives a filesystem it makes for `storage` (ext4 allows 16 bytes;
/// storage names are plain ASCII, so a byte cut is a char cut).
pub fn label(storage: &str) -> String {
    let mut l = format!("bp-{storage}");
    l.truncate(16);
    l
}

/// The label for a filesystem of `kind`: `label`, cut to the 12 bytes XFS allows.
pub fn label_for(kind: &str, storage: &str) -> String {
    let mut l = label(storage);
    if kind == "xfs" {
        l.truncate(12);
    }
    l
}

/// The mkfs binary for a kind benchpipe makes, and the flag that lets it overwrite an
/// old filesystem (given once; each tool still refuses a mounted device).
pub fn mkfs_of(kind: &str) -> Option<(&'static str, &'static str, &'static str)> {
    // (binary, force flag, label flag)
    match kind {
        "ext4" => Some(("mkfs.ext4", "-F", "-L")),
        "btrfs" => Some(("mkfs.btrfs", "-f", "-L")),
        "xfs" => Some(("mkfs.xfs", "-f", "-L")),
        "f2fs" => Some(("mkfs.f2fs", "-f", "-l")),
        _ => None,
    }
}

/// Why `opt` is refused for mkfs of `kind` in particular: options of that tool that name
/// another device or file, or set the label.
pub fn mkfs_option_for(kind: &str, opt: &str) -> Option<String> {
    let short = |flag: char| {
        opt.strip_prefix('-')
            .is_some_and(|c| !c.starts_with('-') && c.starts_with(flag))
    };
    match kind {
        // mkfs.xfs: `-d name=`, `-l logdev=`, `-r rtdev=` name devices or files, `-p`
        // a prototype file, `-c options=` a config file.
        "xfs" => {
            for tag in ["name=", "logdev=", "rtdev=", "options="] {
                if opt.contains(tag) {
                    return Some(format!(
                        "`{opt}` names another device or file (`{tag}`); mkfs touches only the declared device"
                    ));
                }
            }
            (short('p') || short('c')).then(|| {
                format!("`{opt}` makes mkfs.xfs read a file; mkfs touches only the declared device")
            })
        }
        // mkfs.f2fs: `-c` adds a device, `-l` sets the label.
        "f2fs" if short('c') => Some(format!(
            "`{opt}` adds another device; mkfs touches only the declared device"
        )),
        "f2fs" if short('l') => Some(format!(
            "`{opt}` sets the label, which benchpipe sets itself to recognise its own filesystems"
        )),
        _ => None,
    }
}

/// What the marker file holds for `storage`: a mount is benchpipe's own only when it
/// carries this text and the label.
pub fn marker_text(storage: &str) -> String {
    format!(
        "benchpipe made and mounted this filesystem for storage {storage}; it formats it again at will\n"
    )
}

/// `path` without trailing slashes (`/` stays `/`).
fn trimmed(path: &str) -> &str {
    let t = path.trim_end_matches('/');
    if t.is_empty() { "/" } else { t }
}

/// Why `path` may not be where a scratch device is mounted, if it may not.
pub fn system_mount(path: &str) -> Option<String> {
    let p = trimmed(path);
    if SYSTEM_MOUNTS.contains(&p) {
        return Some(format!("`{p}` is a system directory"));
    }
    kernel_tree(p)
}

/// Why `path` lies inside a kernel interface tree, if it does.
pub fn kernel_tree(path: &str) -> Option<String> {
    let p = trimmed(path);
    KERNEL_TREES
        .iter()
        .find(|t| p == **t || p.starts_with(&format!("{t}/")))
        .map(|t| format!("`{p}` lies in `{t}`, a kernel interface, not storage"))
}

/// Why `path` is not an acceptable storage `path`, if it is not; `mounted` says
/// benchpipe mounts a device there (scratch storage with a device).
pub fn storage_path(path: &str, mounted: bool) -> Option<String> {
    if trimmed(path) == "/" {
        return Some("`/` is the whole system, not a directory for tests".into());
    }
    if path.split('/').any(|c| c == "..") {
        return Some("`..` is not allowed in a storage path".into());
    }
    if mounted {
        return system_mount(path).map(|why| {
            format!("{why}; benchpipe mounts the storage's device here, hiding what is there")
        });
    }
    kernel_tree(path)
}

/// Why `device` is not an acceptable block device path, if it is not.
pub fn device_path(device: &str) -> Option<String> {
    if trimmed(device) == "/" {
        return Some("`/` is not a block device".into());
    }
    if !device.starts_with("/dev/") || device.len() <= "/dev/".len() {
        return Some(format!(
            "`{device}` is not under /dev: a device is a block device node such as \
             /dev/sda or /dev/disk/by-id/..."
        ));
    }
    if device.split('/').any(|c| c == "..") {
        return Some("`..` is not allowed in a device path".into());
    }
    if device.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Some("a device path has no spaces or control characters".into());
    }
    None
}

/// `/dev//sda/` and `/dev/./sda` are `/dev/sda`.
pub fn normalize(device: &str) -> String {
    let parts: Vec<&str> = device
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    format!("/{}", parts.join("/"))
}

/// The whole disk a partition's name belongs to, by the kernel's naming rules:
/// `/dev/sda1` -> `/dev/sda`, `/dev/mmcblk0p2` -> `/dev/mmcblk0`, `/dev/nvme0n1p1` ->
/// `/dev/nvme0n1`, and udev's `/dev/disk/by-id/X-part1` -> `/dev/disk/by-id/X`.
/// `None` for a name that is not a partition's (or that naming cannot tell).
pub fn whole_disk(device: &str) -> Option<String> {
    let dev = normalize(device);
    let (dir, name) = dev.rsplit_once('/')?;
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let stem = &name[..name.len() - digits];
    if dir.starts_with("/dev/disk") {
        return stem
            .strip_suffix("-part")
            .filter(|s| !s.is_empty())
            .map(|s| format!("{dir}/{s}"));
    }
    if dir != "/dev" {
        return None;
    }
    // mmcblk0p2, nvme0n1p1, loop0p1, md0p1: a `p` after a digit introduces the number.
    if let Some(disk) = stem.strip_suffix('p')
        && disk.ends_with(|c: char| c.is_ascii_digit())
    {
        return Some(format!("/dev/{disk}"));
    }
    // sda1, vdb2, hda1, xvda1: the letters name the disk, the digits the partition.
    for prefix in ["sd", "vd", "hd", "xvd"] {
        if let Some(letters) = stem.strip_prefix(prefix)
            && !letters.is_empty()
            && letters.chars().all(|c| c.is_ascii_lowercase())
        {
            return Some(format!("/dev/{stem}"));
        }
    }
    None
}

/// Whether formatting `scratch` could touch `boot`: the same device, the whole disk
/// holding it, or one of its partitions. Two different partitions of one disk do not
/// overlap (a spare partition on the boot disk is legitimate scratch).
pub fn overlaps(scratch: &str, boot: &str) -> bool {
    let (a, b) = (normalize(scratch), normalize(boot));
    a == b || whole_disk(&a).as_deref() == Some(&b) || whole_disk(&b).as_deref() == Some(&a)
}

/// Why `opt` is not a plain mkfs option, if it is not. An option and its value are
/// one item (`-Lname` is refused below, but `-O^has_journal`, `--nodesize=16k` pass):
/// a separate word would be a positional argument, which mkfs takes as a device.
pub fn mkfs_option(opt: &str) -> Option<String> {
    if !opt.starts_with('-') || opt == "-" {
        return Some(format!(
            "`{opt}` is not an option: mkfs options start with `-`, and anything else \
             is a device or size that mkfs would act on"
        ));
    }
    if opt == "--" || opt.starts_with("-- ") {
        return Some("`--` would end the options; benchpipe puts the device after it".into());
    }
    if opt.contains('/') {
        return Some(format!(
            "`{opt}` names a path; mkfs options may not name devices or files"
        ));
    }
    if opt.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Some(format!(
            "`{opt}` holds a space or control character; write one option per item"
        ));
    }
    for tag in ["device=", "LABEL=", "UUID=", "PARTUUID=", "PARTLABEL="] {
        if opt.contains(tag) {
            return Some(format!(
                "`{opt}` names another device (`{tag}`); mkfs touches only the declared device"
            ));
        }
    }
    // benchpipe passes mke2fs `-F` once; a second `-F` makes it format a device that
    // is in use or mounted, which is the kernel's last word when a mount lives in a
    // mount namespace the board's shell cannot see. In a cluster of short flags, `F`
    // counts until the first option that takes a value (the rest is that value).
    if let Some(cluster) = opt.strip_prefix('-').filter(|c| !c.starts_with('-'))
        && cluster
            .chars()
            .take_while(|c| "cjnqvDFKSV".contains(*c))
            .any(|c| c == 'F')
    {
        return Some(format!(
            "`{opt}` forces mke2fs a second time (benchpipe gives `-F` once), which formats even a mounted device"
        ));
    }
    if opt.starts_with("-L") || opt.starts_with("--label") {
        return Some(format!(
            "`{opt}` sets the label, which benchpipe sets itself to recognise its own filesystems"
        ));
    }
    None
}

/// Mount options that would name a device or file outside the filesystem, or change
/// what `mount` does (bind, move, remount, helpers).
const MOUNT_DENIED: &[&str] = &[
    "loop",
    "offset",
    "sizelimit",
    "encryption",
    "device",
    "journal_path",
    "journal_dev",
    "helper",
    "uhelper",
    "bind",
    "rbind",
    "move",
    "remount",
];

/// Why `opt` is not a plain mount option, if it is not. Allowed: `name` or
/// `name=value`, where the name is letters, digits, `_`, `-`, `.` and the value
/// letters, digits and `_ . : + @ -` (no `/`, `,` or `=`): `noatime`,
/// `compress=zstd:3`, `commit=60`, `errors=remount-ro`.
pub fn mount_option(opt: &str) -> Option<String> {
    let (name, value) = match opt.split_once('=') {
        Some((n, v)) => (n, Some(v)),
        None => (opt, None),
    };
    let name_ok = name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    let value_ok = value.is_none_or(|v| {
        !v.is_empty()
            && v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.:+@-".contains(c))
    });
    if !name_ok || !value_ok {
        return Some(format!(
            "`{opt}` is not a plain mount option: expected `name` or `name=value` with \
             letters, digits and `_ . : + @ -` (no paths, commas or spaces)"
        ));
    }
    let lower = name.to_ascii_lowercase();
    if MOUNT_DENIED.contains(&lower.as_str()) || lower.starts_with("x-") {
        return Some(format!(
            "mount option `{name}` names another device or file, or changes what mount \
             does; benchpipe mounts only the declared device at the storage's path"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_map_to_their_disks() {
        for (part, disk) in [
            ("/dev/sda1", Some("/dev/sda")),
            ("/dev/sdab12", Some("/dev/sdab")),
            ("/dev/mmcblk0p2", Some("/dev/mmcblk0")),
            ("/dev/nvme0n1p1", Some("/dev/nvme0n1")),
            ("/dev/loop3p1", Some("/dev/loop3")),
            ("/dev/xvda1", Some("/dev/xvda")),
            (
                "/dev/disk/by-id/usb-Foo_123-0:0-part1",
                Some("/dev/disk/by-id/usb-Foo_123-0:0"),
            ),
            ("/dev/sda", None),
            ("/dev/mmcblk0", None),
            ("/dev/nvme0n1", None),
            ("/dev/loop3", None),
            ("/dev/disk/by-id/usb-Foo_123", None),
            ("/dev/mapper/vg-root1", None),
        ] {
            assert_eq!(whole_disk(part).as_deref(), disk, "{part}");
        }
    }

    #[test]
    fn scratch_overlapping_boot_is_seen_both_ways() {
        assert!(overlaps("/dev/mmcblk0", "/dev/mmcblk0"));
        assert!(overlaps("/dev//mmcblk0/", "/dev/mmcblk0"));
        assert!(overlaps("/dev/mmcblk0p2", "/dev/mmcblk0"));
        assert!(overlaps("/dev/mmcblk0", "/dev/mmcblk0p2"));
        assert!(overlaps("/dev/sda", "/dev/sda1"));
        assert!(overlaps("/dev/nvme0n1p1", "/dev/nvme0n1"));
        assert!(!overlaps("/dev/sda", "/dev/mmcblk0"));
        assert!(!overlaps("/dev/sda2", "/dev/sda1"));
        assert!(!overlaps("/dev/sdb", "/dev/sda"));
        assert!(!overlaps("/dev/mmcblk1", "/dev/mmcblk0p1"));
    }

    #[test]
    fn xfs_and_f2fs_options_that_name_files_devices_or_the_label_are_refused() {
        for (kind, ok) in [("xfs", "-mcrc=1"), ("xfs", "-dagcount=4"), ("f2fs", "-O")] {
            assert_eq!(mkfs_option_for(kind, ok), None, "{kind} {ok}");
        }
        for (kind, bad) in [
            ("xfs", "-dname=other.img"),
            ("xfs", "-llogdev=sdb1"),
            ("xfs", "-rrtdev=sdc"),
            ("xfs", "-pproto"),
            ("xfs", "-coptions=x"),
            ("f2fs", "-csdb"),
            ("f2fs", "-lmine"),
        ] {
            assert!(mkfs_option_for(kind, bad).is_some(), "{kind} {bad}");
        }
        assert_eq!(mkfs_option_for("ext4", "-lbadblocks"), None);
        assert_eq!(mkfs_of("xfs").map(|m| m.0), Some("mkfs.xfs"));
        assert_eq!(mkfs_of("as-flashed"), None);
    }

    #[test]
    fn mkfs_options_are_options_only() {
        for ok in [
            "-O^has_journal",
            "--nodesize=16k",
            "-m0",
            "-Estride=4,stripe_width=8",
            "-K",
        ] {
            assert_eq!(mkfs_option(ok), None, "{ok}");
        }
        for bad in [
            "/dev/loop243",
            "loop243",
            "16k",
            "-",
            "--",
            "-d/etc",
            "--rootdir=/home",
            "-Jdevice=LABEL=j",
            "-L",
            "-Lmine",
            "--label=x",
            "-F",
            "-qF",
            "-O has_journal",
            "",
        ] {
            assert!(mkfs_option(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn mount_options_are_plain_names_and_values() {
        for ok in [
            "noatime",
            "compress=lzo",
            "compress=zstd:3",
            "commit=60",
            "errors=remount-ro",
            "space_cache=v2",
        ] {
            assert_eq!(mount_option(ok), None, "{ok}");
        }
        for bad in [
            "loop=/dev/loop1",
            "loop",
            "offset=4096",
            "device=/dev/sdb",
            "journal_path=/dev/sdb",
            "bind",
            "X-mount.mkdir",
            "x-mount.owner=root",
            "noatime,loop",
            "subvol=a/b",
            "ro ",
            "",
            "=x",
            "a=",
            "uhelper=udisks2",
        ] {
            assert!(mount_option(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn system_directories_and_kernel_trees_are_refused() {
        for p in [
            "/",
            "/usr",
            "/usr/",
            "/boot/firmware",
            "/proc/1",
            "/sys/kernel",
            "/dev/shm",
            "/var",
        ] {
            assert!(storage_path(p, true).is_some(), "{p}");
        }
        assert!(storage_path("/", false).is_some());
        assert!(storage_path("/proc/x", false).is_some());
        assert!(storage_path("/a/../usr", false).is_some());
        assert_eq!(storage_path("/home", false), None);
        assert_eq!(storage_path("/mnt/usb", true), None);
        assert_eq!(storage_path("/var/tmp/benchpipe/pi/mnt/usb", true), None);
        assert!(device_path("/").is_some());
        assert!(device_path("/home/sda").is_some());
        assert!(device_path("/dev/").is_some());
        assert!(device_path("/dev/../etc/x").is_some());
        assert_eq!(device_path("/dev/disk/by-id/usb-X-0:0"), None);
    }

    #[test]
    fn labels_fit_ext4() {
        assert_eq!(label("usb"), "bp-usb");
        assert_eq!(label("a-very-long-storage-name").len(), 16);
        assert_eq!(label_for("xfs", "a-very-long-storage-name"), "bp-a-very-lo");
        assert_eq!(label_for("f2fs", "usb"), "bp-usb");
    }
}
