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

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

    /// Takes this image's lock, creating the cache directory (0700: it decides what is
    /// flashed) on first use. Blocks while another fetch of the same image runs.
    pub(super) fn lock(&self, sha256: &str) -> io::Result<Lock> {
        if !self.dir.is_dir() {
            fs::create_dir_all(&self.dir)?;
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o700))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(format!("{sha256}.lock")))?;
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Lock { _file: file })
    }

    /// Whether `path` is the file `stamp` recorded as verified for `sha256`.
    pub(super) fn stamped(&self, sha256: &str, path: &Path, stamp: &Stamp) -> bool {
        self.stamps(sha256).get(&key(path)) == Some(stamp)
    }

    /// Records that `path`, as `stat` shows it now, was verified to have `sha256`.
    pub(super) fn add_stamp(&self, sha256: &str, path: &Path, stamp: Stamp) -> io::Result<()> {
        let mut all = self.stamps(sha256);
        all.insert(key(path), stamp);
        let json = serde_json::to_vec_pretty(&all).map_err(io::Error::other)?;
        write_atomic(&self.stamps_path(sha256), &json)
    }

    fn stamps(&self, sha256: &str) -> BTreeMap<String, Stamp> {
        fs::read(self.stamps_path(sha256))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }
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
        let ns = |s: i64, n: i64| s as i128 * 1_000_000_000 + n as i128;
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

/// Writes `bytes` to `path` through a temporary file and a rename: a reader sees the old
/// file or the new one, never half of one.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    fs::rename(&tmp, path).inspect_err(|_| {
        let _ = fs::remove_file(&tmp);
    })
}

/// Bytes free for an unprivileged writer in the filesystem holding `dir`, when the
/// system says.
pub(super) fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes only into the zeroed struct we pass; the path is a valid
    // NUL-terminated string that outlives the call.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    Some(s.f_bavail as u64 * s.f_frsize as u64)
}
