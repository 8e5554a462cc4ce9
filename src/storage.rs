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

pub mod cmdline;
pub mod facts;
pub mod identity;
pub mod lsblk;
pub mod lsusb;
mod mounts;
pub mod rules;
#[cfg(test)]
mod tests;
pub mod tmpfs;

use mounts::covering;
pub use mounts::{Device, Mount, parse_mountinfo};
pub(crate) use mounts::{Mounts, mounts, probe, swap_on};

use std::time::Duration;

use crate::failure::CellFailure;
use crate::model::{Filesystem, Storage, StorageRole};
use crate::transport::{Exit, Transport, TransportError, quote};

const STEP: Option<Duration> = Some(Duration::from_secs(600));

/// Why storage was not prepared or released. The texts are what users see, so a
/// `During` reads as "what benchpipe was doing: what went wrong".
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// benchpipe will not touch the storage: undeclared, in use, holding the system, not
    /// benchpipe's own, or not the device the board file names.
    #[error("{reason}")]
    Refused { reason: String },
    /// A command on the board ended unsuccessfully.
    #[error("`{command}` ended with {exit}: {stderr}")]
    Failed {
        command: String,
        exit: Exit,
        /// The command's stderr, trimmed.
        stderr: String,
    },
    /// The board could not run a command at all.
    #[error("{0}")]
    Transport(#[from] TransportError),
    /// One of the above, with what benchpipe was doing when it happened.
    #[error("{context}: {source}")]
    During {
        context: String,
        #[source]
        source: Box<StorageError>,
    },
}

impl StorageError {
    pub fn refused(reason: impl Into<String>) -> StorageError {
        StorageError::Refused {
            reason: reason.into(),
        }
    }

    fn during(self, context: impl Into<String>) -> StorageError {
        StorageError::During {
            context: context.into(),
            source: Box::new(self),
        }
    }

    /// The error under any `During` layers: what actually went wrong.
    pub fn cause(&self) -> &StorageError {
        match self {
            StorageError::During { source, .. } => source.cause(),
            other => other,
        }
    }
}

/// A cell whose storage failed stores the error's text, as users have always seen it.
impl From<StorageError> for CellFailure {
    fn from(e: StorageError) -> CellFailure {
        CellFailure::Storage {
            message: e.to_string(),
        }
    }
}

fn run(t: &mut dyn Transport, cmd: &str) -> Result<String, StorageError> {
    let out = t.run(cmd, STEP)?;
    if !out.exit.success() {
        return Err(StorageError::Failed {
            command: cmd.to_string(),
            stderr: out.stderr_str().trim().to_string(),
            exit: out.exit,
        });
    }
    Ok(out.stdout_str())
}

/// `path` on the board with symlinks resolved; it must exist.
fn resolve(t: &mut dyn Transport, path: &str) -> Result<String, StorageError> {
    let out = run(t, &format!("readlink -f -- {}", quote::sh(path)))?;
    let real = out.trim().to_string();
    if !real.starts_with('/') {
        return Err(StorageError::refused(format!(
            "cannot resolve {path} on the board"
        )));
    }
    Ok(real)
}

/// Whether the filesystem mounted at `path` is one benchpipe made for `storage`: its
/// label and its marker file both say so.
fn is_own(
    t: &mut dyn Transport,
    storage: &Storage,
    fs: &Filesystem,
    dev: &Device,
    path: &str,
) -> bool {
    let label = rules::label_for(&fs.kind, storage.name.as_str());
    is_own_labelled(t, storage, dev, path, &[label])
}

/// `is_own`, with the label any of `labels`.
fn is_own_labelled(
    t: &mut dyn Transport,
    storage: &Storage,
    dev: &Device,
    path: &str,
    labels: &[String],
) -> bool {
    let marker = run(
        t,
        &format!("cat -- {}", quote::sh(&format!("{path}/{}", rules::MARKER))),
    );
    if marker.ok().as_deref() != Some(rules::marker_text(storage.name.as_str()).as_str()) {
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
    label.is_ok_and(|l| labels.iter().any(|want| l.trim() == want))
}

/// The rules `check` applies, again: a model built another way cannot slip past them.
fn refuse_undeclared(storage: &Storage, fs: &Filesystem) -> Result<(), StorageError> {
    let name = &storage.name;
    if let Some(why) = rules::storage_path(
        &storage.path,
        storage.device.is_some() && storage.role == StorageRole::Scratch,
    ) {
        return Err(StorageError::refused(format!(
            "storage {name}: path {}: {why}",
            storage.path
        )));
    }
    if let Some(why) = storage.device.as_deref().and_then(rules::device_path) {
        return Err(StorageError::refused(format!("storage {name}: {why}")));
    }
    for o in &fs.mkfs_options {
        if let Some(why) = rules::mkfs_option(o).or_else(|| rules::mkfs_option_for(&fs.kind, o)) {
            return Err(StorageError::refused(format!(
                "filesystem {}: mkfs option {why}",
                fs.name
            )));
        }
    }
    for o in &fs.mount_options {
        if let Some(why) = rules::mount_option(o) {
            return Err(StorageError::refused(format!(
                "filesystem {}: {why}",
                fs.name
            )));
        }
    }
    Ok(())
}

/// An `as-is` storage with a device must really be that device at its path.
fn check_as_is(
    t: &mut dyn Transport,
    storage: &Storage,
    kind: &str,
    device: &str,
) -> Result<(), StorageError> {
    let dev = probe(t, device).map_err(|e| e.during(format!("storage {}", storage.name)))?;
    let Mounts::Info(all) = mounts(t, &dev)? else {
        return Err(StorageError::refused(format!(
            "storage {}: cannot verify that {} is on {device} without /proc/self/mountinfo",
            storage.name, storage.path
        )));
    };
    let path = resolve(t, &storage.path)?;
    match covering(&all, &path) {
        Some(m) if dev.holds(m) => Ok(()),
        m => Err(StorageError::refused(format!(
            "storage {}: {} is on {}, not on the declared device {device}; with filesystem \
             `{kind}` benchpipe measures whatever holds the path, so mount {device} at {} \
             first, or use a filesystem that benchpipe formats",
            storage.name,
            storage.path,
            m.map_or_else(
                || "an unknown filesystem".into(),
                |m| format!("{} (mounted at {})", m.source, m.point)
            ),
            storage.path
        ))),
    }
}

/// What holds `path` on the board, recorded beside the cells measured there: findmnt's
/// type, source and mount point, or where findmnt is missing (busybox) `stat -f`'s
/// type. `None` when neither answers.
pub fn filesystem_at(t: &mut dyn Transport, path: &str) -> Option<serde_json::Value> {
    let p = quote::sh(path);
    let out = run(
        t,
        &format!("findmnt -n -P -o FSTYPE,SOURCE,TARGET -T {p} 2>/dev/null | head -n 1"),
    );
    if let Ok(line) = &out {
        let fields = parse_pairs(line);
        if fields.contains_key("FSTYPE") {
            return Some(serde_json::json!({
                "type": fields["FSTYPE"],
                "source": fields.get("SOURCE"),
                "mount_point": fields.get("TARGET"),
            }));
        }
    }
    let out = run(t, &format!("stat -f -c %T -- {p}")).ok()?;
    let kind = out.trim();
    (!kind.is_empty()).then(|| serde_json::json!({ "type": kind }))
}

/// `KEY="value"` pairs as `findmnt -P` prints them (values have `"` and `\` escaped
/// as `\x22`, `\x5c`, which are kept as printed).
fn parse_pairs(line: &str) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut rest = line.trim();
    while let Some((key, after)) = rest.split_once("=\"") {
        let Some(end) = after.find('"') else { break };
        out.insert(key.trim().to_string(), after[..end].to_string());
        rest = &after[end + 1..];
    }
    out
}

/// Formats `storage` as `fs` and mounts it at the storage's path. `as-is` and
/// `as-flashed` only make sure the path exists, and that it lies on the storage's
/// device if it declares one.
pub fn prepare(
    t: &mut dyn Transport,
    storage: &Storage,
    fs: &Filesystem,
) -> Result<(), StorageError> {
    refuse_undeclared(storage, fs)?;
    let path = quote::sh(&storage.path);
    if !fs.is_made() {
        run(t, &format!("mkdir -p -- {path}"))?;
        if let Some(device) = &storage.device {
            check_as_is(t, storage, &fs.kind, device)?;
        }
        return Ok(());
    }
    let name = &storage.name;
    if storage.role != StorageRole::Scratch {
        return Err(StorageError::refused(format!(
            "storage {name} is {:?} storage; only scratch storage is formatted",
            storage.role
        )));
    }
    let Some(device) = &storage.device else {
        return Err(StorageError::refused(format!(
            "storage {name} declares no device to format"
        )));
    };
    let Some((mkfs, force, label_flag)) = rules::mkfs_of(&fs.kind) else {
        return Err(StorageError::refused(format!(
            "filesystem kind {} is not supported",
            fs.kind
        )));
    };
    let dev = probe(t, device).map_err(|e| e.during(format!("storage {name}")))?;
    let mounts = mounts(t, &dev)?;
    let on_dev: Vec<&Mount> = mounts.all().iter().filter(|m| dev.holds(m)).collect();
    if let Some(m) = on_dev
        .iter()
        .find(|m| rules::system_mount(&m.point).is_some())
    {
        return Err(StorageError::refused(format!(
            "refusing to format {device} (storage {name}): it holds the system \
             ({} is mounted at {})",
            m.source, m.point
        )));
    }
    if let Some(swap) = swap_on(t, &dev) {
        return Err(StorageError::refused(format!(
            "refusing to format {device} (storage {name}): {swap} is in use as swap"
        )));
    }
    run(t, &format!("mkdir -p -- {path}"))?;
    let real_path = resolve(t, &storage.path)?;
    if let Some(why) = rules::system_mount(&real_path) {
        return Err(StorageError::refused(format!(
            "refusing to mount storage {name} at {} (it resolves to {real_path}): {why}",
            storage.path
        )));
    }
    if let Some(other) = on_dev.iter().find(|m| m.point != real_path) {
        return Err(StorageError::refused(format!(
            "refusing to format {device} (storage {name}): it is mounted at {}, \
             which benchpipe did not mount",
            other.point
        )));
    }
    let at_path: Vec<&Mount> = mounts
        .all()
        .iter()
        .filter(|m| m.point == real_path)
        .collect();
    if !at_path.is_empty() {
        let own = at_path.len() == 1
            && dev.holds_directly(at_path[0])
            && is_own(t, storage, fs, &dev, &real_path);
        if !own {
            return Err(StorageError::refused(format!(
                "refusing to format {device} (storage {name}): {} is mounted at {}, and \
                 benchpipe did not mount it (no label {} and marker {}); unmount it \
                 yourself if it may be formatted",
                at_path[0].source,
                storage.path,
                rules::label_for(&fs.kind, name.as_str()),
                rules::MARKER
            )));
        }
        run(t, &format!("umount -- {}", quote::sh(&real_path)))?;
    }
    let rp = quote::sh(&real_path);
    let listing = run(t, &format!("ls -A -- {rp}"))?;
    if !listing.trim().is_empty() {
        return Err(StorageError::refused(format!(
            "refusing to mount storage {name} at {}: the directory is not empty, and \
             mounting over it would hide its files",
            storage.path
        )));
    }
    // Right after an unmount, udev's probe of the device can hold it open for a
    // moment, and mkfs refuses a busy device: let udev settle, and retry briefly.
    // mke2fs, mkfs.btrfs, mkfs.xfs and mkfs.f2fs all parse with getopt, so `--` ends
    // the options and the device after it is the only operand; the label goes first so
    // that a user option missing its value can swallow only `--`, never the label or
    // the device.
    run(
        t,
        &format!(
            "i=0; while :; do \
               udevadm settle 2>/dev/null; \
               {mkfs} -q {force} {label_flag} {label} {opts} -- {dev} && break; \
               i=$((i + 1)); [ $i -lt 5 ] || exit 1; sleep 1; \
             done",
            label = quote::sh(&rules::label_for(&fs.kind, name.as_str())),
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

/// A scratch storage's path resolved on the board, its device, and what is mounted at
/// the path; `None` when the path is no directory (nothing was ever mounted there).
fn mounted_at(
    t: &mut dyn Transport,
    storage: &Storage,
    device: &str,
) -> Result<Option<(String, Device, Vec<Mount>)>, StorageError> {
    if run(t, &format!("test -d {}", quote::sh(&storage.path))).is_err() {
        return Ok(None);
    }
    let real_path = resolve(t, &storage.path)?;
    let dev = probe(t, device)?;
    let at_path: Vec<Mount> = mounts(t, &dev)?
        .all()
        .iter()
        .filter(|m| m.point == real_path)
        .cloned()
        .collect();
    Ok(Some((real_path, dev, at_path)))
}

/// Unmounts the filesystem a killed apply left mounted at a scratch storage's path, of
/// whatever kind it made it: only a mount of the device itself carrying benchpipe's
/// label and marker for the storage, as `release` would. Returns whether it unmounted
/// one; anything else there is left alone.
pub fn release_leftover(t: &mut dyn Transport, storage: &Storage) -> Result<bool, StorageError> {
    if storage.role != StorageRole::Scratch {
        return Ok(false);
    }
    let Some(device) = &storage.device else {
        return Ok(false);
    };
    let Some((real_path, dev, at_path)) = mounted_at(t, storage, device)? else {
        return Ok(false);
    };
    let name = storage.name.as_str();
    let labels = [rules::label(name), rules::label_for("xfs", name)];
    match at_path.as_slice() {
        [m] if dev.holds_directly(m) && is_own_labelled(t, storage, &dev, &real_path, &labels) => {
            run(t, &format!("umount -- {}", quote::sh(&real_path)))?;
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// Unmounts what `prepare` mounted; nothing for `as-is`. A filesystem at the path that
/// is not benchpipe's own (someone mounted over it meanwhile) is left alone.
pub fn release(
    t: &mut dyn Transport,
    storage: &Storage,
    fs: &Filesystem,
) -> Result<(), StorageError> {
    if !fs.is_made() {
        return Ok(());
    }
    let Some(device) = &storage.device else {
        return Ok(());
    };
    let Some((real_path, dev, at_path)) = mounted_at(t, storage, device)? else {
        return Ok(());
    };
    match at_path.as_slice() {
        [] => Ok(()),
        [m] if dev.holds_directly(m) && is_own(t, storage, fs, &dev, &real_path) => {
            run(t, &format!("umount -- {}", quote::sh(&real_path))).map(|_| ())
        }
        _ => Err(StorageError::refused(format!(
            "not unmounting {}: what is mounted there is not the filesystem benchpipe made",
            storage.path
        ))),
    }
}
