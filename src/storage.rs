//! Preparing a board's declared scratch storage for a cell: mkfs and mount, refusing
//! anything undeclared, mounted elsewhere or holding the system.
//!
//! Only `role = "scratch"` storage with a `device` is ever formatted (the plan never
//! makes such a cell for boot storage). Before mkfs the device must be a block device,
//! with no mounted filesystem on it or its partitions except benchpipe's own mount at
//! the storage's path.

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

/// Mount points of `device` and of its partitions, as the board sees them.
fn mounts_of(t: &mut dyn Transport, device: &str) -> Result<Vec<String>, String> {
    let out = run(
        t,
        &format!(
            "lsblk -nro MOUNTPOINT -- {} 2>/dev/null || true",
            quote::sh(device)
        ),
    )?;
    Ok(out
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// Formats `storage` as `fs` and mounts it at the storage's path. `as-is` only makes
/// sure the path exists.
pub fn prepare(t: &mut dyn Transport, storage: &Storage, fs: &Filesystem) -> Result<(), String> {
    let path = quote::sh(&storage.path);
    if fs.kind == AS_IS {
        run(t, &format!("mkdir -p -- {path}"))?;
        return Ok(());
    }
    if storage.role != StorageRole::Scratch {
        return Err(format!(
            "storage {} is {:?} storage; only scratch storage is formatted",
            storage.name, storage.role
        ));
    }
    let Some(device) = &storage.device else {
        return Err(format!(
            "storage {} declares no device to format",
            storage.name
        ));
    };
    let dev = quote::sh(device);
    run(t, &format!("test -b {dev}")).map_err(|_| {
        format!(
            "storage {}: {device} is not a block device on the board",
            storage.name
        )
    })?;
    let mounts = mounts_of(t, device)?;
    if let Some(other) = mounts.iter().find(|m| **m != storage.path) {
        return Err(format!(
            "refusing to format {device} (storage {}): it is mounted at {other}, \
             which benchpipe did not mount",
            storage.name
        ));
    }
    if !mounts.is_empty() {
        run(t, &format!("umount -- {path}"))?;
    }
    let (mkfs, force) = match fs.kind.as_str() {
        "ext4" => ("mkfs.ext4", "-F"),
        "btrfs" => ("mkfs.btrfs", "-f"),
        other => return Err(format!("filesystem kind {other} is not supported")),
    };
    // Right after an unmount, udev's probe of the device can hold it open for a
    // moment, and mkfs refuses a busy device: let udev settle, and retry briefly.
    run(
        t,
        &format!(
            "i=0; while :; do \
               udevadm settle 2>/dev/null; \
               {mkfs} -q {force} {opts} {dev} && break; \
               i=$((i + 1)); [ $i -lt 5 ] || exit 1; sleep 1; \
             done",
            opts = quote::join(&fs.mkfs_options)
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
            "mkdir -p -- {path} && mount -t {} {options} {dev} {path}",
            quote::sh(&fs.kind)
        ),
    )?;
    Ok(())
}

/// Unmounts what `prepare` mounted; nothing for `as-is`.
pub fn release(t: &mut dyn Transport, storage: &Storage, fs: &Filesystem) -> Result<(), String> {
    if fs.kind == AS_IS {
        return Ok(());
    }
    run(
        t,
        &format!(
            "if mountpoint -q {p}; then umount -- {p}; fi",
            p = quote::sh(&storage.path)
        ),
    )
    .map(|_| ())
}
