//! Directories and files benchpipe writes where others could plant things (the lab's
//! state, the image cache): a directory is used only when it is the running user's and
//! writable by nobody else, and reached through directories nobody else can change; a
//! file is created with O_EXCL|O_NOFOLLOW, replaced through a fresh temporary file, and
//! opened for writing only when it is a regular file of its own, never through a link.
//! `replace_with` is benchpipe's one whole-file write by rename, the store's included.
//!
//! The same rules as a board's workdir claim (`transport::workdir`, a shell script run
//! on the board); reads of such files go through the store's typed, bounded reads
//! (`store::open_regular`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a directory or file was not used: an I/O error, or a refusal saying what is
/// wrong with it (its whole message names the path).
#[derive(Debug, thiserror::Error)]
pub enum OwnedError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    Refused(String),
}

impl From<OwnedError> for crate::error::Error {
    fn from(e: OwnedError) -> Self {
        match e {
            OwnedError::Io { path, source } => crate::error::Error::Io { path, source },
            OwnedError::Refused(why) => crate::error::Error::Other(why),
        }
    }
}

impl From<OwnedError> for io::Error {
    fn from(e: OwnedError) -> Self {
        match e {
            OwnedError::Io { source, .. } => source,
            refused @ OwnedError::Refused(_) => {
                io::Error::new(io::ErrorKind::PermissionDenied, refused.to_string())
            }
        }
    }
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> OwnedError + '_ {
    move |source| OwnedError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The effective uid: whose files and directories are trusted.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}

/// Refuses `path` unless it is a directory (or, with `file`, a regular file) that is no
/// link, owned by the running user and writable by nobody else. `meta` is its
/// `symlink_metadata`.
pub fn check_owned(path: &Path, meta: &fs::Metadata, file: bool) -> Result<(), OwnedError> {
    let kind = if file { "file" } else { "directory" };
    let refuse = |why: String| Err(OwnedError::Refused(format!("{} {why}", path.display())));
    if meta.file_type().is_symlink() {
        return refuse("is a symbolic link; benchpipe follows no link where it writes".into());
    }
    if (file && !meta.is_file()) || (!file && !meta.is_dir()) {
        return refuse(format!("is not a {kind}"));
    }
    if meta.uid() != euid() {
        return refuse(format!(
            "is owned by uid {}, not by uid {} running benchpipe; benchpipe trusts only a {kind} of its own user",
            meta.uid(),
            euid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return refuse(format!(
            "is writable by group or others (mode {:o}); benchpipe trusts only a {kind} nobody else can change (chmod go-w)",
            meta.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Refuses `dir` unless every directory on the way to it (after resolving links) is
/// owned by root or the running user and, when others may write in it, is root's and
/// sticky (as `/tmp`): otherwise someone else could swap what lies below it.
pub fn check_ancestors(dir: &Path) -> Result<(), OwnedError> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let real = fs::canonicalize(parent).map_err(io_at(parent))?;
    let me = euid();
    let mut at = PathBuf::new();
    for c in real.components() {
        at.push(c);
        let m = fs::metadata(&at).map_err(io_at(&at))?;
        let (uid, mode) = (m.uid(), m.mode());
        if uid != 0 && uid != me {
            return Err(OwnedError::Refused(format!(
                "{} is owned by uid {uid}, not by root or uid {me}: {} below it could be swapped",
                at.display(),
                dir.display()
            )));
        }
        if mode & 0o022 != 0 && !(uid == 0 && mode & 0o1000 != 0) {
            return Err(OwnedError::Refused(format!(
                "{} is writable by others (mode {:o}): {} below it could be swapped",
                at.display(),
                mode & 0o7777,
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Creates the directory `path` with `mode` (its parent must exist), or accepts it when
/// it already exists as the running user's own, unwritable by others.
pub fn ensure_dir(path: &Path, mode: u32) -> Result<(), OwnedError> {
    match fs::DirBuilder::new().mode(mode).create(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            let meta = fs::symlink_metadata(path).map_err(io_at(path))?;
            check_owned(path, &meta, false)
        }
        Err(e) => Err(OwnedError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

/// Creates `path` anew, for writing: never through a link, never over an existing file.
pub fn create_new(path: &Path, mode: u32) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Creates `path` anew with `bytes` (`create_new`).
pub fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), OwnedError> {
    let mut f = create_new(path, mode).map_err(io_at(path))?;
    f.write_all(bytes).map_err(io_at(path))
}

/// Opens the existing file `path` for writing (appending, with `append`), or creates it
/// (with `mode`, no link followed): refused unless it is a regular file of the running
/// user with no other name (a hard link to another file would be written through).
/// Never blocks on a FIFO.
pub fn open_own(path: &Path, append: bool, mode: u32) -> Result<File, OwnedError> {
    let f = OpenOptions::new()
        .write(true)
        .append(append)
        .create(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => OwnedError::Refused(format!(
                "{} is a symbolic link; benchpipe follows no link where it writes",
                path.display()
            )),
            _ => OwnedError::Io {
                path: path.to_path_buf(),
                source: e,
            },
        })?;
    let meta = f.metadata().map_err(io_at(path))?;
    check_owned(path, &meta, true)?;
    if meta.nlink() != 1 {
        return Err(OwnedError::Refused(format!(
            "{} has {} names (hard links); benchpipe writes only a file of its own",
            path.display(),
            meta.nlink()
        )));
    }
    Ok(f)
}

/// Replaces `path` with `bytes` through a fresh temporary file beside it (`replace_with`).
pub fn replace(path: &Path, bytes: &[u8], mode: u32) -> Result<(), OwnedError> {
    replace_with(path, mode, |f| f.write_all(bytes).map_err(io_at(path)))
}

/// Replaces `path` with what `write` puts in a fresh temporary file beside it (made with
/// `create_new` and `mode`, its name unguessable), synced and renamed into place, the
/// directory synced after: a reader sees the old file or the new one, a crash leaves
/// one of them, and a link at `path` is replaced, never followed. A failed write
/// removes the temporary file and leaves `path` as it was. The one place benchpipe
/// writes a whole file by rename (the store's files, the lab's state, the image cache,
/// known_hosts, reports).
pub fn replace_with<E: From<OwnedError>>(
    path: &Path,
    mode: u32,
    write: impl FnOnce(&mut File) -> Result<(), E>,
) -> Result<(), E> {
    let (tmp, mut f) = temporary_beside(path, mode)?;
    let written = write(&mut f).and_then(|()| {
        f.sync_all()
            .and_then(|()| fs::rename(&tmp, path))
            .map_err(|e| E::from(io_at(path)(e)))
    });
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
        return written;
    }
    sync_parent(path).map_err(E::from)
}

/// Gives the finished file `from` the name `to` (a rename in one directory, replacing
/// what `to` was) and syncs the directory: for a file built in place under a temporary
/// name and named only once verified (an image's download, a prepared image).
pub fn rename_into_place(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)?;
    sync_parent(to).map_err(io::Error::from)
}

fn sync_parent(path: &Path) -> Result<(), OwnedError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_at(dir))
}

/// Writes `bytes` to `path`, which must not exist yet: whole (written and synced in a
/// fresh temporary file beside it, then given its name with `link(2)`, which never
/// replaces anything, not even a dangling link), or not at all. An existing `path` is
/// an `AlreadyExists` error and is left as it was.
pub fn publish_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), OwnedError> {
    let (tmp, mut f) = temporary_beside(path, mode)?;
    let written = f
        .write_all(bytes)
        .and_then(|()| f.sync_all())
        .and_then(|()| fs::hard_link(&tmp, path));
    let _ = fs::remove_file(&tmp);
    written.map_err(io_at(path))?;
    sync_parent(path)
}

/// A new file beside `path` under an unguessable name (`create_new`), for writing.
fn temporary_beside(path: &Path, mode: u32) -> Result<(PathBuf, File), OwnedError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    loop {
        let tmp = dir.join(format!(
            ".{base}.{}-{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            crate::transport::random_hex::<6>()
        ));
        match create_new(&tmp, mode) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_at(&tmp)(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bp-owned-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o700)).unwrap();
        d
    }

    #[test]
    fn publish_new_never_replaces_a_file_or_a_link_and_leaves_no_temporary() {
        let d = scratch("publish");
        let p = d.join("board.toml");
        publish_new(&p, b"one", 0o644).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"one");
        let e = publish_new(&p, b"two", 0o644).unwrap_err();
        assert!(
            matches!(&e, OwnedError::Io { source, .. } if source.kind() == io::ErrorKind::AlreadyExists),
            "{e}"
        );
        assert_eq!(fs::read(&p).unwrap(), b"one");
        let link = d.join("link.toml");
        std::os::unix::fs::symlink(d.join("victim"), &link).unwrap();
        assert!(publish_new(&link, b"x", 0o644).is_err());
        assert!(
            !d.join("victim").exists(),
            "nothing written through the link"
        );
        let left: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 2, "{left:?}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn replace_is_whole_or_not_at_all_and_replaces_a_link_without_following_it() {
        let d = scratch("replace");
        let p = d.join("state.json");
        replace(&p, b"one", 0o600).unwrap();
        replace(&p, b"two", 0o600).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        // A write that fails part-way leaves the old file and no temporary.
        let e = replace_with(&p, 0o600, |f: &mut File| {
            f.write_all(b"half").map_err(io_at(&p))?;
            Err(OwnedError::Refused("stopped".into()))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "stopped");
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let link = d.join("link.json");
        std::os::unix::fs::symlink(d.join("victim"), &link).unwrap();
        replace(&link, b"x", 0o600).unwrap();
        assert!(
            !d.join("victim").exists(),
            "nothing written through the link"
        );
        assert_eq!(fs::read(&link).unwrap(), b"x");
        let mut left: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        left.sort();
        assert_eq!(left, ["link.json", "state.json"], "no temporary left");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_directory_of_another_user_or_writable_by_others_is_refused() {
        let d = scratch("dir");
        let sub = d.join("c");
        ensure_dir(&sub, 0o700).unwrap();
        ensure_dir(&sub, 0o700).unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o777)).unwrap();
        let e = ensure_dir(&sub, 0o700).unwrap_err().to_string();
        assert!(e.contains("writable by group or others (mode 777)"), "{e}");
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&sub, Some(65534), None).unwrap();
        let e = ensure_dir(&sub, 0o700).unwrap_err().to_string();
        assert!(e.contains("is owned by uid 65534"), "{e}");
        std::os::unix::fs::symlink(&d, d.join("l")).unwrap();
        let e = ensure_dir(&d.join("l"), 0o700).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        // Below a directory others may write in (not root's sticky /tmp): refused.
        let open = d.join("open");
        fs::create_dir(&open).unwrap();
        fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
        let e = check_ancestors(&open.join("cache"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("writable by others (mode 777)"), "{e}");
        check_ancestors(&d.join("cache")).unwrap();
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn files_are_written_through_no_link_and_no_second_name() {
        let d = scratch("files");
        let victim = d.join("victim");
        fs::write(&victim, "victim\n").unwrap();
        std::os::unix::fs::symlink(&victim, d.join("link")).unwrap();
        assert!(write_new(&d.join("link"), b"x", 0o600).is_err());
        let e = open_own(&d.join("link"), true, 0o600).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        fs::hard_link(&victim, d.join("hard")).unwrap();
        let e = open_own(&d.join("hard"), true, 0o600).unwrap_err();
        assert!(e.to_string().contains("2 names"), "{e}");
        replace(&d.join("link"), b"new", 0o600).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "victim\n");
        assert_eq!(fs::read_to_string(d.join("link")).unwrap(), "new");
        assert!(!fs::symlink_metadata(d.join("link")).unwrap().is_symlink());
        let mut f = open_own(&d.join("new"), true, 0o600).unwrap();
        f.write_all(b"ok").unwrap();
        assert_eq!(fs::read_to_string(d.join("new")).unwrap(), "ok");
        let _ = fs::remove_dir_all(&d);
    }
}
