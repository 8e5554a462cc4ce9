//! What the board says about a device and its mounts: the device's sysfs entries and
//! holders, mountinfo or lsblk, swap, and which mount covers a path.

use std::collections::BTreeSet;

use super::{StorageError, run};
use crate::transport::{Transport, quote};

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

/// mountinfo writes space, tab, newline and backslash as `\ooo`: a byte, so at most
/// `\377`; a larger one is no escape and stays as written (it overflowed the byte).
pub(super) fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && (b'0'..=b'3').contains(&b[i + 1])
            && b[i + 2..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
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
pub(super) fn parse_lsblk(text: &str) -> Vec<Mount> {
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
    pub(super) fn holds_directly(&self, m: &Mount) -> bool {
        m.source == self.real || (self.own_id.as_deref() == Some(m.id.as_str()))
    }
}

/// Parses the probe's output (see `probe`).
pub(super) fn parse_probe(declared: &str, text: &str) -> Result<Device, StorageError> {
    let mut d = Device::default();
    d.names.insert(declared.to_string());
    for line in text.lines() {
        let mut w = line.split_whitespace();
        match (w.next(), w.next()) {
            (Some("notblock"), r) => {
                return Err(StorageError::refused(format!(
                    "{declared} is not a block device on the board{}",
                    r.map(|r| format!(" (it resolves to {r})"))
                        .unwrap_or_default()
                )));
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
        return Err(StorageError::refused(format!(
            "cannot identify block device {declared} on the board (readlink -f, \
             /sys/class/block and stat gave nothing)"
        )));
    }
    Ok(d)
}

/// Resolves `device` on the board and lists what could hold it: the sysfs entries of
/// the device, its partitions, and holders of either (two levels: LVM on crypt).
pub(crate) fn probe(t: &mut dyn Transport, device: &str) -> Result<Device, StorageError> {
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
    let out =
        run(t, &script).map_err(|e| e.during(format!("cannot resolve {device} on the board")))?;
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
pub(crate) fn mounts(t: &mut dyn Transport, dev: &Device) -> Result<Mounts, StorageError> {
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
        other => Err(StorageError::refused(format!(
            "cannot tell whether {} is mounted: /proc/self/mountinfo gave {} and lsblk \
             gave {}; refusing to format it",
            dev.real,
            info.err()
                .map_or_else(|| "nothing".into(), |e| e.to_string()),
            other
                .err()
                .map_or_else(|| "nothing".into(), |e| e.to_string()),
        ))),
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

/// The mount holding `path` (a resolved path): the deepest mount point above it, the
/// last one mounted when several are stacked.
pub(super) fn covering<'m>(mounts: &'m [Mount], path: &str) -> Option<&'m Mount> {
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
