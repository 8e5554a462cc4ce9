//! Preparing a board's declared scratch storage for a cell: mkfs and mount, refusing
//! anything undeclared, mounted elsewhere or holding the system.
//!
//! Only `role = "scratch"` storage with a `device` is ever formatted (the plan never
//! makes such a cell for boot storage). Before mkfs, on the board:
//! - the device must be a block device, and neither it, its partitions nor anything
//!   stacked on them (device-mapper holders) may be mounted, except benchpipe's own
//!   mount at the storage's path, nor hold `/`, `/boot` or another system mount, nor be
//!   active swap. Mounts come from `/proc/self/mountinfo` (major:minor and source), or
//!   from `lsblk` when that cannot be read; when neither answers, nothing is formatted.
//! - a mount is benchpipe's own only when it is of the device itself, carries the label
//!   benchpipe set at mkfs (`rules::label`) and its marker file (`rules::MARKER`);
//!   anything else at the path is the user's and is refused, never unmounted.
//! - the path, symlinks resolved, is no system directory and an empty directory.
//!
//! A mount in another mount namespace (a container, `ip netns exec`) is invisible to
//! the board's shell. There the kernel has the last word: mke2fs and mkfs.btrfs open
//! the device exclusively and refuse it while it is mounted anywhere, and `rules`
//! refuses the second `-F` that would make mke2fs go ahead anyway.
//!
//! An `as-is` cell formats nothing; if its storage declares a device, the path must
//! sit on that device, or the cell would measure whatever disk holds the path.

pub mod rules;

use std::collections::BTreeSet;
use std::time::Duration;

use crate::model::{AS_IS, Filesystem, Storage, StorageRole};
use crate::transport::{Transport, quote};

const STEP: Option<Duration> = Some(Duration::from_secs(600));

fn run(t: &mut dyn Transport, cmd: &str) -> Result<String, String> {
    let out = t.run(cmd, STEP).map_err(|e| e.to_string())?;
    if !out.exit.success() {
        return Err(format!(
            "`{cmd}` ended with {}: {}",
            out.exit,
            out.stderr_str().trim()
        ));
    }
    Ok(out.stdout_str())
}

/// One mounted filesystem as the board reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    /// `major:minor` in decimal; empty when only lsblk answered. 0:N (btrfs, tmpfs) says
    /// nothing about the device, so `source` is matched too.
    pub id: String,
    pub point: String,
    pub source: String,
}

/// Parses `/proc/self/mountinfo` (proc(5)): field 3 is major:minor, field 5 the mount
/// point, and after the ` - ` separator come the type and the source.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let dash = fields.iter().position(|f| *f == "-")?;
            Some(Mount {
                id: fields.get(2)?.to_string(),
                point: unescape_octal(fields.get(4)?),
                source: unescape_octal(fields.get(dash + 2)?),
            })
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses `lsblk -nrpo NAME,MOUNTPOINT`: raw mode writes unsafe bytes as `\xHH`.
fn parse_lsblk(text: &str) -> Vec<Mount> {
    let unhex = |s: &str| {
        let b = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\'
                && b.get(i + 1) == Some(&b'x')
                && let Some(v) = s
                    .get(i + 2..i + 4)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 4;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    text.lines()
        .filter_map(|l| {
            let (name, point) = l.split_once(' ')?;
            (!point.trim().is_empty()).then(|| Mount {
                id: String::new(),
                point: unhex(point.trim()),
                source: unhex(name),
            })
        })
        .collect()
}

/// A block device on the board and everything a mount of it could show up as.
#[derive(Debug, Default)]
pub struct Device {
    /// The device node, symlinks (`/dev/disk/by-id/...`) resolved.
    pub real: String,
    /// major:minor of the device itself.
    pub own_id: Option<String>,
    /// major:minor of the device, its partitions and their holders.
    pub ids: BTreeSet<String>,
    /// Node paths of the same: `/dev/sda1`, `/dev/dm-0`, `/dev/mapper/vg-lv`.
    pub names: BTreeSet<String>,
}

impl Device {
    /// Whether `m` is a filesystem on this device, a partition of it or a holder.
    pub fn holds(&self, m: &Mount) -> bool {
        self.ids.contains(&m.id) || self.names.contains(&m.source)
    }

    /// Whether `m` is a filesystem on the whole device itself, as benchpipe mounts it.
    fn holds_directly(&self, m: &Mount) -> bool {
        m.source == self.real || (self.own_id.as_deref() == Some(m.id.as_str()))
    }
}

/// Parses the probe's output (see `probe`).
fn parse_probe(declared: &str, text: &str) -> Result<Device, String> {
    let mut d = Device::default();
    d.names.insert(declared.to_string());
    for line in text.lines() {
        let mut w = line.split_whitespace();
        match (w.next(), w.next()) {
            (Some("notblock"), r) => {
                return Err(format!(
                    "{declared} is not a block device on the board{}",
                    r.map(|r| format!(" (it resolves to {r})"))
                        .unwrap_or_default()
                ));
            }
            (Some("real"), Some(r)) => {
                d.real = r.to_string();
                d.names.insert(r.to_string());
            }
            (Some("dev"), Some(id)) => {
                if d.own_id.is_none() {
                    d.own_id = Some(id.to_string());
                }
                d.ids.insert(id.to_string());
                if let Some(name) = w.next() {
                    d.names.insert(format!("/dev/{name}"));
                }
                if let Some(dm) = w.next() {
                    d.names.insert(format!("/dev/mapper/{dm}"));
                }
            }
            (Some("hex"), Some(major)) => {
                let id = u64::from_str_radix(major, 16)
                    .ok()
                    .zip(w.next().and_then(|m| u64::from_str_radix(m, 16).ok()))
                    .map(|(a, b)| format!("{a}:{b}"));
                if let Some(id) = id {
                    d.own_id = Some(id.clone());
                    d.ids.insert(id);
                }
            }
            _ => {}
        }
    }
    if d.real.is_empty() || d.ids.is_empty() {
        return Err(format!(
            "cannot identify block device {declared} on the board (readlink -f, \
             /sys/class/block and stat gave nothing)"
        ));
    }
    Ok(d)
}

/// Resolves `device` on the board and lists what could hold it: the sysfs entries of
/// the device, its partitions, and holders of either (two levels: LVM on crypt).
pub(crate) fn probe(t: &mut dyn Transport, device: &str) -> Result<Device, String> {
    let script = format!(
        r#"r=$(readlink -f -- {dev}) || exit 3
[ -b "$r" ] || {{ echo "notblock $r"; exit 0; }}
echo "real $r"
n=${{r##*/}}; s=/sys/class/block/$n
if [ -r "$s/dev" ]; then
  for d in "$s" "$s/$n"*; do
    [ -r "$d/dev" ] || continue
    echo "dev $(cat "$d/dev") ${{d##*/}}"
    for h in "$d"/holders/* "$d"/holders/*/holders/*; do
      [ -r "$h/dev" ] || continue
      echo "dev $(cat "$h/dev") ${{h##*/}} $(cat "$h/dm/name" 2>/dev/null)"
    done
  done
else
  echo "hex $(stat -L -c '%t %T' -- "$r")"
fi"#,
        dev = quote::sh(device)
    );
    let out = run(t, &script).map_err(|e| format!("cannot resolve {device} on the board: {e}"))?;
    parse_probe(device, &out)
}

/// Where the board's mounts came from; lsblk knows only the mounts of one device.
pub(crate) enum Mounts {
    Info(Vec<Mount>),
    Lsblk(Vec<Mount>),
}

impl Mounts {
    pub(crate) fn all(&self) -> &[Mount] {
        match self {
            Mounts::Info(m) | Mounts::Lsblk(m) => m,
        }
    }
}

/// Every mount on the board, or lsblk's view of `dev` when mountinfo is unreadable.
/// Fails closed: when neither answers, nobody can say the device is free.
pub(crate) fn mounts(t: &mut dyn Transport, dev: &Device) -> Result<Mounts, String> {
    let info = run(t, "cat /proc/self/mountinfo");
    if let Ok(text) = &info
        && !text.trim().is_empty()
    {
        return Ok(Mounts::Info(parse_mountinfo(text)));
    }
    let lsblk = run(
        t,
        &format!("lsblk -nrpo NAME,MOUNTPOINT -- {}", quote::sh(&dev.real)),
    );
    match lsblk {
        // lsblk always lists the device itself; nothing at all means a broken lsblk.
        Ok(text) if !text.trim().is_empty() => Ok(Mounts::Lsblk(parse_lsblk(&text))),
        other => Err(format!(
            "cannot tell whether {} is mounted: /proc/self/mountinfo gave {} and lsblk \
             gave {}; refusing to format it",
            dev.real,
            info.err().unwrap_or_else(|| "nothing".into()),
            other.err().unwrap_or_else(|| "nothing".into()),
        )),
    }
}

/// Whether the device is in use as swap (`/proc/swaps`; absent means no swap).
pub(crate) fn swap_on(t: &mut dyn Transport, dev: &Device) -> Option<String> {
    let text = run(t, "cat /proc/swaps 2>/dev/null || true").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(unescape_octal)
        .find(|name| dev.names.contains(name))
}

/// `path` on the board with symlinks resolved; it must exist.
fn resolve(t: &mut dyn Transport, path: &str) -> Result<String, String> {
    let out = run(t, &format!("readlink -f -- {}", quote::sh(path)))?;
    let real = out.trim().to_string();
    if !real.starts_with('/') {
        return Err(format!("cannot resolve {path} on the board"));
    }
    Ok(real)
}

/// Whether the filesystem mounted at `path` is one benchpipe made for `storage`: its
/// label and its marker file both say so.
fn is_own(t: &mut dyn Transport, storage: &Storage, dev: &Device, path: &str) -> bool {
    let marker = run(
        t,
        &format!("cat -- {}", quote::sh(&format!("{path}/{}", rules::MARKER))),
    );
    if marker.as_deref() != Ok(rules::marker_text(storage.name.as_str()).as_str()) {
        return false;
    }
    let d = quote::sh(&dev.real);
    let label = run(
        t,
        &format!(
            "blkid -p -o value -s LABEL -- {d} 2>/dev/null || e2label {d} 2>/dev/null \
             || btrfs filesystem label {d} 2>/dev/null"
        ),
    );
    label.is_ok_and(|l| l.trim() == rules::label(storage.name.as_str()))
}

/// The mount holding `path` (a resolved path): the deepest mount point above it, the
/// last one mounted when several are stacked.
fn covering<'m>(mounts: &'m [Mount], path: &str) -> Option<&'m Mount> {
    let under = |point: &str| {
        point == "/"
            || path == point
            || path
                .strip_prefix(point)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    let mut best: Option<&Mount> = None;
    for m in mounts.iter().filter(|m| under(&m.point)) {
        if best.is_none_or(|b| m.point.len() >= b.point.len()) {
            best = Some(m);
        }
    }
    best
}

/// The rules `check` applies, again: a model built another way cannot slip past them.
fn refuse_undeclared(storage: &Storage, fs: &Filesystem) -> Result<(), String> {
    let name = &storage.name;
    if let Some(why) = rules::storage_path(
        &storage.path,
        storage.device.is_some() && storage.role == StorageRole::Scratch,
    ) {
        return Err(format!("storage {name}: path {}: {why}", storage.path));
    }
    if let Some(why) = storage.device.as_deref().and_then(rules::device_path) {
        return Err(format!("storage {name}: {why}"));
    }
    for o in &fs.mkfs_options {
        if let Some(why) = rules::mkfs_option(o) {
            return Err(format!("filesystem {}: mkfs option {why}", fs.name));
        }
    }
    for o in &fs.mount_options {
        if let Some(why) = rules::mount_option(o) {
            return Err(format!("filesystem {}: {why}", fs.name));
        }
    }
    Ok(())
}

/// An `as-is` storage with a device must really be that device at its path.
fn check_as_is(t: &mut dyn Transport, storage: &Storage, device: &str) -> Result<(), String> {
    let dev = probe(t, device).map_err(|e| format!("storage {}: {e}", storage.name))?;
    let Mounts::Info(all) = mounts(t, &dev)? else {
        return Err(format!(
            "storage {}: cannot verify that {} is on {device} without /proc/self/mountinfo",
            storage.name, storage.path
        ));
    };
    let path = resolve(t, &storage.path)?;
    match covering(&all, &path) {
        Some(m) if dev.holds(m) => Ok(()),
        m => Err(format!(
            "storage {}: {} is on {}, not on the declared device {device}; with filesystem \
             `{AS_IS}` benchpipe measures whatever holds the path, so mount {device} at {} \
             first, or use a filesystem that benchpipe formats",
            storage.name,
            storage.path,
            m.map(|m| format!("{} (mounted at {})", m.source, m.point))
                .unwrap_or_else(|| "an unknown filesystem".into()),
            storage.path
        )),
    }
}

/// Formats `storage` as `fs` and mounts it at the storage's path. `as-is` only makes
/// sure the path exists, and that it lies on the storage's device if it declares one.
pub fn prepare(t: &mut dyn Transport, storage: &Storage, fs: &Filesystem) -> Result<(), String> {
    refuse_undeclared(storage, fs)?;
    let path = quote::sh(&storage.path);
    if fs.kind == AS_IS {
        run(t, &format!("mkdir -p -- {path}"))?;
        if let Some(device) = &storage.device {
            check_as_is(t, storage, device)?;
        }
        return Ok(());
    }
    let name = &storage.name;
    if storage.role != StorageRole::Scratch {
        return Err(format!(
            "storage {name} is {:?} storage; only scratch storage is formatted",
            storage.role
        ));
    }
    let Some(device) = &storage.device else {
        return Err(format!("storage {name} declares no device to format"));
    };
    let (mkfs, force) = match fs.kind.as_str() {
        "ext4" => ("mkfs.ext4", "-F"),
        "btrfs" => ("mkfs.btrfs", "-f"),
        other => return Err(format!("filesystem kind {other} is not supported")),
    };
    let dev = probe(t, device).map_err(|e| format!("storage {name}: {e}"))?;
    let mounts = mounts(t, &dev)?;
    let on_dev: Vec<&Mount> = mounts.all().iter().filter(|m| dev.holds(m)).collect();
    if let Some(m) = on_dev
        .iter()
        .find(|m| rules::system_mount(&m.point).is_some())
    {
        return Err(format!(
            "refusing to format {device} (storage {name}): it holds the system \
             ({} is mounted at {})",
            m.source, m.point
        ));
    }
    if let Some(swap) = swap_on(t, &dev) {
        return Err(format!(
            "refusing to format {device} (storage {name}): {swap} is in use as swap"
        ));
    }
    run(t, &format!("mkdir -p -- {path}"))?;
    let real_path = resolve(t, &storage.path)?;
    if let Some(why) = rules::system_mount(&real_path) {
        return Err(format!(
            "refusing to mount storage {name} at {} (it resolves to {real_path}): {why}",
            storage.path
        ));
    }
    if let Some(other) = on_dev.iter().find(|m| m.point != real_path) {
        return Err(format!(
            "refusing to format {device} (storage {name}): it is mounted at {}, \
             which benchpipe did not mount",
            other.point
        ));
    }
    let at_path: Vec<&Mount> = mounts
        .all()
        .iter()
        .filter(|m| m.point == real_path)
        .collect();
    if !at_path.is_empty() {
        let own = at_path.len() == 1
            && dev.holds_directly(at_path[0])
            && is_own(t, storage, &dev, &real_path);
        if !own {
            return Err(format!(
                "refusing to format {device} (storage {name}): {} is mounted at {}, and \
                 benchpipe did not mount it (no label {} and marker {}); unmount it \
                 yourself if it may be formatted",
                at_path[0].source,
                storage.path,
                rules::label(name.as_str()),
                rules::MARKER
            ));
        }
        run(t, &format!("umount -- {}", quote::sh(&real_path)))?;
    }
    let rp = quote::sh(&real_path);
    let listing = run(t, &format!("ls -A -- {rp}"))?;
    if !listing.trim().is_empty() {
        return Err(format!(
            "refusing to mount storage {name} at {}: the directory is not empty, and \
             mounting over it would hide its files",
            storage.path
        ));
    }
    // Right after an unmount, udev's probe of the device can hold it open for a
    // moment, and mkfs refuses a busy device: let udev settle, and retry briefly.
    // mke2fs and mkfs.btrfs both parse with getopt, so `--` ends the options and the
    // device after it is the only operand; the label goes first so that a user option
    // missing its value can swallow only `--`, never the label or the device.
    run(
        t,
        &format!(
            "i=0; while :; do \
               udevadm settle 2>/dev/null; \
               {mkfs} -q {force} -L {label} {opts} -- {dev} && break; \
               i=$((i + 1)); [ $i -lt 5 ] || exit 1; sleep 1; \
             done",
            label = quote::sh(&rules::label(name.as_str())),
            opts = quote::join(&fs.mkfs_options),
            dev = quote::sh(&dev.real),
        ),
    )?;
    let options = if fs.mount_options.is_empty() {
        String::new()
    } else {
        format!("-o {}", quote::sh(&fs.mount_options.join(",")))
    };
    run(
        t,
        &format!(
            "mount -t {} {options} -- {} {rp} && printf '%s' {} > {}",
            quote::sh(&fs.kind),
            quote::sh(&dev.real),
            quote::sh(&rules::marker_text(name.as_str())),
            quote::sh(&format!("{real_path}/{}", rules::MARKER)),
        ),
    )?;
    Ok(())
}

/// Unmounts what `prepare` mounted; nothing for `as-is`. A filesystem at the path that
/// is not benchpipe's own (someone mounted over it meanwhile) is left alone.
pub fn release(t: &mut dyn Transport, storage: &Storage, fs: &Filesystem) -> Result<(), String> {
    if fs.kind == AS_IS {
        return Ok(());
    }
    let Some(device) = &storage.device else {
        return Ok(());
    };
    let p = quote::sh(&storage.path);
    if run(t, &format!("test -d {p}")).is_err() {
        return Ok(());
    }
    let real_path = resolve(t, &storage.path)?;
    let dev = probe(t, device)?;
    let mounts = mounts(t, &dev)?;
    let at_path: Vec<&Mount> = mounts
        .all()
        .iter()
        .filter(|m| m.point == real_path)
        .collect();
    match at_path.as_slice() {
        [] => Ok(()),
        [m] if dev.holds_directly(m) && is_own(t, storage, &dev, &real_path) => {
            run(t, &format!("umount -- {}", quote::sh(&real_path))).map(|_| ())
        }
        _ => Err(format!(
            "not unmounting {}: what is mounted there is not the filesystem benchpipe made",
            storage.path
        )),
    }
}

#[cfg(test)]
mod tests {
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
            ids: ids.iter().map(|s| s.to_string()).collect(),
            names: names.iter().map(|s| s.to_string()).collect(),
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
}
