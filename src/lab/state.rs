//! The lab's state file, and every file `lab up` writes as root.
//!
//! A workspace is the user's (often a cloned repository), and the lab runs as root, so
//! nothing read from it is trusted and nothing is written through a link planted in it:
//! - the state file is accepted only when root wrote it (owned by the running user,
//!   writable by nobody else, in a directory with the same property) and when every
//!   name and path in it is exactly what `lab up` makes for this workspace and prefix;
//! - files are created with O_NOFOLLOW and O_EXCL in the lab's own 0700 directory, and
//!   files that change are written to a fresh temporary file and renamed into place.

use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use super::{
    LabBoard, LabInfo, LabOptions, STATE_VERSION, WORKDIRS, check_options, fail, io, state_dir,
    subnet_addresses,
};
use crate::error::Error;
use crate::model::BoardName;
use crate::owned;

/// The state file is small; a larger one is not ours.
const MAX_STATE_BYTES: u64 = 4 << 20;

/// Refuses `path` unless it is a directory (or, with `file`, a regular file) that is no
/// link, owned by the running user and writable by nobody else (`crate::owned`).
pub(super) fn check_owned(path: &Path, meta: &fs::Metadata, file: bool) -> Result<(), Error> {
    Ok(owned::check_owned(path, meta, file)?)
}

/// Refuses a path with `..`, or with a symbolic link in any of its existing components.
pub(super) fn check_no_links(path: &Path) -> Result<(), Error> {
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(fail(format!(
            "{}: the lab uses only absolute paths without `..`",
            path.display()
        )));
    }
    let mut at = PathBuf::new();
    for c in path.components() {
        at.push(c);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(fail(format!(
                    "{} is a symbolic link; the lab follows no link",
                    at.display()
                )));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io(&at, e)),
        }
    }
    Ok(())
}

/// Creates the directory `path` with `mode`, or accepts it when it already exists as the
/// running user's own, unwritable by others. Its parent must exist.
pub(super) fn ensure_dir(path: &Path, mode: u32) -> Result<(), Error> {
    Ok(owned::ensure_dir(path, mode)?)
}

/// Creates `path` anew with `bytes`: never through a link, never over an existing file.
pub(super) fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    Ok(owned::write_new(path, bytes, mode)?)
}

/// Replaces `path` with `bytes` through a fresh temporary file beside it; a link at
/// `path` is replaced, never followed.
pub(super) fn replace(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Error> {
    Ok(owned::replace(path, bytes, mode)?)
}

/// Reads a regular file without following a link at `path`; `None` when it is missing.
pub(super) fn read_no_follow(
    path: &Path,
    limit: u64,
) -> Result<Option<(String, fs::Metadata)>, Error> {
    let f = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(fail(format!(
                "{} is a symbolic link; the lab follows no link in the workspace",
                path.display()
            )));
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta = f.metadata().map_err(io(path))?;
    if !meta.is_file() {
        return Err(fail(format!("{} is not a regular file", path.display())));
    }
    let mut text = String::new();
    f.take(limit).read_to_string(&mut text).map_err(io(path))?;
    Ok(Some((text, meta)))
}

/// The lab's state under `root`, refused unless root wrote it and every name and path
/// in it is one `lab up` makes for this workspace and `options`; `None` when there is none.
pub(super) fn read(root: &Path, options: &LabOptions) -> Result<Option<LabInfo>, Error> {
    let root = super::workspace(root)?;
    let dir = state_dir(&root);
    let path = dir.join("state.json");
    let refuse = |why: String| {
        fail(format!(
            "refusing the lab state file {}: {why}. `lab up` did not write it; if you trust \
             it, remove it and run `benchpipe lab down` again (which then removes the lab by \
             its names)",
            path.display()
        ))
    };
    for d in [dir.parent().unwrap_or(&dir), &dir] {
        match fs::symlink_metadata(d) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(refuse(format!("{} is a symbolic link", d.display())));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(d, e)),
        }
    }
    let meta = fs::symlink_metadata(&dir).map_err(io(&dir))?;
    let Some((text, file_meta)) = read_no_follow(&path, MAX_STATE_BYTES + 1)? else {
        return Ok(None);
    };
    check_owned(&dir, &meta, false).map_err(|e| refuse(e.to_string()))?;
    check_owned(&path, &file_meta, true).map_err(|e| refuse(e.to_string()))?;
    if text.len() as u64 > MAX_STATE_BYTES {
        return Err(refuse("it is larger than any state the lab writes".into()));
    }
    let info: LabInfo = serde_json::from_str(&text)
        .map_err(|e| fail(format!("{}: not a lab state file: {e}", path.display())))?;
    if info.version != STATE_VERSION {
        return Err(fail(format!(
            "{}: lab state version {} is not {STATE_VERSION}; remove the lab with the benchpipe that built it",
            path.display(),
            info.version
        )));
    }
    validate(&info, &root, options).map_err(|e| refuse(e.to_string()))?;
    Ok(Some(info))
}

/// Where a lab state file differs from what `lab up` would have written.
#[derive(Debug, thiserror::Error)]
pub(super) enum StateMismatch {
    #[error(
        "it names prefixes {prefix:?}/{board_prefix:?}, not this lab's {want_prefix:?}/{want_board_prefix:?}"
    )]
    Prefixes {
        prefix: String,
        board_prefix: String,
        want_prefix: String,
        want_board_prefix: String,
    },
    /// Its names would not pass `lab up`'s own checks.
    #[error("{0}")]
    Options(Error),
    #[error("{what} is {}, not {}", got.display(), expected.display())]
    Path {
        what: &'static str,
        got: PathBuf,
        expected: PathBuf,
    },
    #[error(
        "board {index} names {name:?} in namespace {netns:?}, not {want_name:?} in {want_netns:?}"
    )]
    Board {
        index: usize,
        /// The name as text: `{:?}` of a `BoardName` would print `BoardName("..")`.
        name: String,
        netns: String,
        want_name: String,
        want_netns: String,
    },
    #[error("board {name} has addresses outside its subnet")]
    Addresses { name: BoardName },
    #[error("board {name} has {count} disks")]
    Disks { name: BoardName, count: usize },
    #[error("board {name} has disk {disk:?} on {device:?}")]
    Disk {
        name: BoardName,
        disk: String,
        device: String,
    },
}

/// Compares every name and path of `info` with the one `lab up` would make.
fn validate(info: &LabInfo, root: &Path, o: &LabOptions) -> Result<(), StateMismatch> {
    if info.prefix != o.prefix || info.board_prefix != o.board_prefix {
        return Err(StateMismatch::Prefixes {
            prefix: info.prefix.clone(),
            board_prefix: info.board_prefix.clone(),
            want_prefix: o.prefix.clone(),
            want_board_prefix: o.board_prefix.clone(),
        });
    }
    check_options(o, info.boards.len().max(1)).map_err(StateMismatch::Options)?;
    let dir = state_dir(root);
    let want = |what: &'static str, got: &Path, expected: &Path| {
        if got == expected {
            Ok(())
        } else {
            Err(StateMismatch::Path {
                what,
                got: got.to_path_buf(),
                expected: expected.to_path_buf(),
            })
        }
    };
    want("state_dir", &info.state_dir, &dir)?;
    want("identity", &info.identity, &dir.join("id_ed25519"))?;
    want("known_hosts", &info.known_hosts, &dir.join("known_hosts"))?;
    for (i, b) in info.boards.iter().enumerate() {
        let expected = expected_board(root, o, i + 1, b.subnet);
        let LabBoard {
            name,
            netns,
            subnet,
            controller_address,
            address,
            workdir,
            board_file,
            sshd_config,
            sshd_pid_file,
            disks,
            boot,
            wifi,
            sshd_running: _,
        } = b;
        if name != &expected.name || netns != &expected.netns {
            return Err(StateMismatch::Board {
                index: i + 1,
                name: name.as_str().to_string(),
                netns: netns.clone(),
                want_name: expected.name.as_str().to_string(),
                want_netns: expected.netns.clone(),
            });
        }
        if !(1..(1 << 15)).contains(subnet)
            || *controller_address != expected.controller_address
            || *address != expected.address
        {
            return Err(StateMismatch::Addresses { name: name.clone() });
        }
        if let Some(l) = wifi {
            let (controller, board) = subnet_addresses(l.subnet);
            if !(1..(1 << 15)).contains(&l.subnet)
                || l.subnet == *subnet
                || l.controller_address != controller
                || l.address != board
                || !(1..=10_000).contains(&l.rate_mbit)
            {
                return Err(StateMismatch::Addresses { name: name.clone() });
            }
        }
        want(
            "a workdir",
            Path::new(workdir),
            Path::new(&expected.workdir),
        )?;
        want("a board file", board_file, &expected.board_file)?;
        want("an sshd config", sshd_config, &expected.sshd_config)?;
        want("an sshd pid file", sshd_pid_file, &expected.sshd_pid_file)?;
        if disks.len() > 2 {
            return Err(StateMismatch::Disks {
                name: name.clone(),
                count: disks.len(),
            });
        }
        for (k, d) in disks.iter().enumerate() {
            let e = expected_disk(root, &expected, k + 1, &d.device);
            if d.name != e.name || !is_loop_device(&d.device) {
                return Err(StateMismatch::Disk {
                    name: name.clone(),
                    disk: d.name.clone(),
                    device: d.device.clone(),
                });
            }
            want("a disk image", &d.file, &e.file)?;
            want("a disk path", Path::new(&d.path), Path::new(&e.path))?;
        }
        if let Some(d) = boot {
            let e = super::power::boot_disk(root, &expected, &d.device);
            if d.name != e.name || !is_loop_device(&d.device) {
                return Err(StateMismatch::Disk {
                    name: name.clone(),
                    disk: d.name.clone(),
                    device: d.device.clone(),
                });
            }
            want("a boot disk image", &d.file, &e.file)?;
            want("a boot disk path", Path::new(&d.path), Path::new(&e.path))?;
        }
    }
    Ok(())
}

/// `/dev/loopN`, nothing else.
pub(super) fn is_loop_device(device: &str) -> bool {
    device
        .strip_prefix("/dev/loop")
        .is_some_and(|n| !n.is_empty() && n.len() < 8 && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Board `i` (from 1) as `lab up` makes it, before its disks.
pub(super) fn expected_board(root: &Path, o: &LabOptions, i: usize, subnet: u32) -> LabBoard {
    let name = format!("{}-{i}", o.board_prefix);
    let dir = state_dir(root).join(&name);
    let (controller_address, address) = subnet_addresses(subnet);
    LabBoard {
        name: crate::model::BoardName::new(&name),
        netns: format!("{}-{i}", o.prefix),
        subnet,
        controller_address,
        address,
        workdir: format!("{WORKDIRS}/{name}"),
        board_file: root.join("boards").join(format!("{name}.toml")),
        sshd_config: dir.join("sshd_config"),
        sshd_pid_file: dir.join("sshd.pid"),
        disks: Vec::new(),
        boot: None,
        wifi: None,
        sshd_running: false,
    }
}

/// Disk `k` (from 1) of `board` as `lab up` makes it.
pub(super) fn expected_disk(
    root: &Path,
    board: &LabBoard,
    k: usize,
    device: &str,
) -> super::LabDisk {
    super::LabDisk {
        name: format!("disk{k}"),
        device: device.to_string(),
        file: disk_image(root, &board.netns, k),
        path: format!("{}/disk{k}", board.workdir),
        direct_io: false,
    }
}

/// The image file behind disk `k` of the board in namespace `netns`.
pub(super) fn disk_image(root: &Path, netns: &str, k: usize) -> PathBuf {
    state_dir(root)
        .join("disks")
        .join(format!("{netns}-d{k}.img"))
}

/// Writes the state file (root-only) through a fresh temporary file.
pub(super) fn write(info: &LabInfo) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(info).map_err(|e| fail(e.to_string()))?;
    replace(&info.state_dir.join("state.json"), text.as_bytes(), 0o600)
}
