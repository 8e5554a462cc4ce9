//! The image cache: a directory beside the store holding downloaded images by their
//! sha256, partial downloads, computed facts and verification stamps, with one lock per
//! image so that boards fetching the same image at once download it once.
//!
//! Layout, for an image whose declared sha256 is `H`:
//! - `H`            the verified file as declared (compressed), read-only;
//! - `H.part`       a download in progress, resumed from its length;
//! - `H.facts.json` [`super::ImageFacts`], written after one full streaming pass;
//! - `H.stamps.json` the local files verified to have sha256 `H`, with what `stat` said
//!   then, so an unchanged file is not hashed again;
//! - `H.lock`       held (flock) while `H` is fetched or its files are written.
//!
//! The cache decides what is flashed, as root: it is used only as the running user's
//! own directory (`crate::owned`), every file in it is created or opened through no
//! link, and read back with the store's typed, bounded reads.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::owned::{self, OwnedError};

/// The cache directory's name beside the store, unless `--image-cache` says otherwise.
pub const DEFAULT_DIR: &str = "image-cache";

#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    /// `image-cache/` beside the store directory (`results/` -> `image-cache/`).
    pub fn beside_store(store: &Path) -> Cache {
        let parent = store.parent().unwrap_or(Path::new("."));
        Cache::new(parent.join(DEFAULT_DIR))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where a downloaded image with this (lower-case hex) sha256 is kept.
    pub fn blob(&self, sha256: &str) -> PathBuf {
        self.dir.join(sha256)
    }

    pub(super) fn part(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.part"))
    }

    pub(super) fn facts_path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.facts.json"))
    }

    fn stamps_path(&self, sha256: &str) -> PathBuf {
        self.dir.join(format!("{sha256}.stamps.json"))
    }

    /// Makes the cache directory (0700: it decides what is flashed) or accepts it only
    /// as the running user's own, writable by nobody else and reached through
    /// directories nobody else can change: the rules of a board's workdir.
    pub(super) fn ensure(&self) -> Result<(), OwnedError> {
        if let Some(parent) = self.dir.parent()
            && !parent.as_os_str().is_empty()
            && fs::symlink_metadata(parent).is_err()
        {
            fs::create_dir_all(parent).map_err(|source| OwnedError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        }
        owned::check_ancestors(&self.dir)?;
        owned::ensure_dir(&self.dir, 0o700)
    }

    /// Takes this image's lock, making the cache directory on first use (`ensure`).
    /// Blocks while another fetch of the same image runs. The lock file is opened
    /// through no link and only when it is a regular file of this user's.
    pub(super) fn lock(&self, sha256: &str) -> Result<Lock, OwnedError> {
        self.ensure()?;
        let path = self.dir.join(format!("{sha256}.lock"));
        let file = owned::open_own(&path, false, 0o600)?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(OwnedError::Io {
                path,
                source: io::Error::last_os_error(),
            });
        }
        Ok(Lock { _file: file })
    }

    /// The length of the partial download to resume: 0 when there is none. Anything at
    /// `H.part` but a regular file of this user's with one name (a link, a FIFO) is
    /// removed, never followed; the caller holds the lock.
    pub(super) fn part_len(&self, sha256: &str) -> Result<u64, OwnedError> {
        let part = self.part(sha256);
        let io_err = |source| OwnedError::Io {
            path: part.clone(),
            source,
        };
        match fs::symlink_metadata(&part) {
            Ok(m) if m.is_dir() => Err(OwnedError::Refused(format!(
                "{} is a directory, not a partial download",
                part.display()
            ))),
            Ok(m) if m.is_file() && m.uid() == owned::euid() && m.nlink() == 1 => Ok(m.len()),
            Ok(_) => fs::remove_file(&part).map(|()| 0).map_err(io_err),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(io_err(e)),
        }
    }

    /// Whether `path` is the file `stamp` recorded as verified for `sha256`.
    pub(super) fn stamped(&self, sha256: &str, path: &Path, stamp: &Stamp) -> bool {
        self.stamps(sha256).get(&key(path)) == Some(stamp)
    }

    /// Records that `path`, as `stat` shows it now, was verified to have `sha256`.
    pub(super) fn add_stamp(
        &self,
        sha256: &str,
        path: &Path,
        stamp: Stamp,
    ) -> Result<(), OwnedError> {
        let mut all = self.stamps(sha256);
        all.insert(key(path), stamp);
        let json = serde_json::to_vec_pretty(&all).map_err(|e| OwnedError::Io {
            path: self.stamps_path(sha256),
            source: io::Error::other(e),
        })?;
        owned::replace(&self.stamps_path(sha256), &json, 0o600)
    }

    fn stamps(&self, sha256: &str) -> BTreeMap<String, Stamp> {
        read_small(&self.stamps_path(sha256))
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }
}

/// A small cache file (facts, stamps), read as the store reads its own files
/// (`store::open_regular`: no link, no FIFO or device, bounded): `None` when it is
/// absent or anything but such a file, which the next write replaces.
pub(super) fn read_small(path: &Path) -> Option<Vec<u8>> {
    // Not even opened when `lstat` shows a FIFO or a link.
    if !fs::symlink_metadata(path).ok()?.is_file() {
        return None;
    }
    let (file, len) = crate::store::open_regular(path).ok()??;
    let mut bytes = Vec::with_capacity(len.min(crate::store::MAX_FILE_BYTES) as usize + 1);
    file.take(crate::store::MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

fn key(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Held while an image's cache files are written; released when dropped.
pub(super) struct Lock {
    _file: File,
}

/// What `stat` says of a file: a change of its contents changes `ctime` (which no user
/// can set back), so an equal stamp means the verified bytes are still there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub len: u64,
    pub dev: u64,
    pub ino: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl Stamp {
    pub fn of(meta: &fs::Metadata) -> Stamp {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Stamp {
            len: meta.len(),
            dev: meta.dev(),
            ino: meta.ino(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The first difference from `other`, in words, for the "changed after it was
    /// verified" message.
    pub fn differs(&self, other: &Stamp) -> Option<&'static str> {
        if self.len != other.len {
            Some("its size changed")
        } else if (self.dev, self.ino) != (other.dev, other.ino) {
            Some("it was replaced")
        } else if (self.mtime_ns, self.ctime_ns) != (other.mtime_ns, other.ctime_ns) {
            Some("it was modified")
        } else {
            None
        }
    }
}

/// Bytes free for an unprivileged writer in the filesystem holding `dir`, when the
/// system says.
pub(super) fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes only into the zeroed struct we pass; the path is a valid
    // NUL-terminated string that outlives the call.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &raw mut s) } != 0 {
        return None;
    }
    Some(s.f_bavail as u64 * s.f_frsize as u64)
}
