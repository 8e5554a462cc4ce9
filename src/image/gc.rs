//! Removing the image cache's entries nothing refers to (`benchpipe gc`): the files of
//! an image (`H`, `H.part`, `H.facts.json`, `H.stamps.json`), of a prepared image
//! (`K.derived.json`, `D.img`) or a dead process's temporary copy, whose image no
//! scenario given uses. Only regular files named as the cache names them are looked at,
//! never through a link; lock files stay (an empty file another process may hold).

use std::collections::BTreeSet;
use std::fs;
use std::io::Read;
use std::os::unix::io::AsRawFd;
use std::path::Path;

use super::Cache;

/// The most entries of the cache directory looked at.
const MAX_ENTRIES: usize = 100_000;

/// The suffixes of an image's own files, after its 64-hex name.
const SUFFIXES: [&str; 6] = [
    "",
    ".part",
    ".facts.json",
    ".stamps.json",
    ".img",
    ".derived.json",
];

/// A file of the cache nothing given refers to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CacheEntry {
    /// Its name in the cache directory.
    pub name: String,
    /// The 64-hex name of the image (or prepared image) it belongs to: its lock's.
    stem: String,
    pub bytes: u64,
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The image a cache file belongs to, and whether it is a temporary copy (`.K.<pid>-
/// <hex>.tmp`) with the pid of the process making it; `None` for a name the cache
/// does not make.
fn stem_of(name: &str) -> Option<(&str, Option<i32>)> {
    if let Some(tmp) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".tmp")) {
        let (stem, rest) = tmp.split_once('.')?;
        let pid = rest
            .split_once('-')?
            .0
            .parse::<i32>()
            .ok()
            .filter(|p| *p > 0)?;
        return is_hex64(stem).then_some((stem, Some(pid)));
    }
    let stem = name.get(..64)?;
    (is_hex64(stem) && SUFFIXES.contains(&&name[64..])).then_some((stem, None))
}

/// Whether a process with this pid runs on this machine.
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 sends nothing; it only asks whether the pid exists.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() == libc::EPERM }
}

impl Cache {
    /// The prepared image a kept derivation key names (its `K.derived.json`), so that
    /// `D.img` is kept with it.
    fn derived_of(&self, key: &str) -> Option<String> {
        let path = self.dir().join(format!("{key}.derived.json"));
        let meta = fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() {
            return None;
        }
        let mut text = String::new();
        fs::File::open(&path)
            .ok()?
            .take(64 * 1024)
            .read_to_string(&mut text)
            .ok()?;
        let v: serde_json::Value = serde_json::from_str(&text).ok()?;
        let d = v.get("derived_sha256")?.as_str()?;
        is_hex64(d).then(|| d.to_string())
    }

    /// The cache's files whose image is not in `keep` (declared sha256s and derivation
    /// keys; the prepared images kept keys name are added), and temporary copies whose
    /// process is gone. Empty when the cache directory does not exist.
    pub fn unreferenced(&self, keep: &BTreeSet<String>) -> std::io::Result<Vec<CacheEntry>> {
        let mut keep = keep.clone();
        let derived: Vec<String> = keep.iter().filter_map(|k| self.derived_of(k)).collect();
        keep.extend(derived);
        let entries = match fs::read_dir(self.dir()) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        for e in entries.take(MAX_ENTRIES) {
            let e = e?;
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let Some((stem, tmp_pid)) = stem_of(&name) else {
                continue;
            };
            let meta = fs::symlink_metadata(e.path())?;
            if !meta.is_file() {
                continue;
            }
            let gone = match tmp_pid {
                Some(pid) => !alive(pid),
                None => !keep.contains(stem),
            };
            if gone {
                out.push(CacheEntry {
                    stem: stem.to_string(),
                    name,
                    bytes: meta.len(),
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Removes one entry `unreferenced` listed, holding its image's lock (never one a
    /// fetch or a preparation holds now: that one is left, and `false` returned).
    pub fn remove_entry(&self, entry: &CacheEntry) -> std::io::Result<bool> {
        let lock_path = self.dir().join(format!("{}.lock", entry.stem));
        let lock = match crate::owned::open_own(&lock_path, false, 0o600) {
            Ok(f) => f,
            Err(e) => return Err(std::io::Error::other(e.to_string())),
        };
        // SAFETY: flock on a descriptor this function owns; no memory is passed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Ok(false);
        }
        let path = self.dir().join(&entry.name);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => fs::remove_file(&path)?,
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// `Path` of the cache a store uses, for messages relative to the store's parent.
pub fn shown(cache: &Cache, entry: &CacheEntry) -> String {
    let dir = cache.dir().file_name().map_or_else(
        || Path::new(super::DEFAULT_DIR).to_path_buf(),
        std::path::PathBuf::from,
    );
    dir.join(&entry.name).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::stem_of;

    #[test]
    fn only_the_names_the_cache_makes_are_its_entries() {
        let h = "ab".repeat(32);
        assert_eq!(stem_of(&h), Some((h.as_str(), None)));
        for s in [
            ".part",
            ".facts.json",
            ".stamps.json",
            ".img",
            ".derived.json",
        ] {
            assert_eq!(stem_of(&format!("{h}{s}")), Some((h.as_str(), None)), "{s}");
        }
        assert_eq!(
            stem_of(&format!(".{h}.4242-a1b2c3.tmp")),
            Some((h.as_str(), Some(4242)))
        );
        for other in [
            format!("{h}.lock"),
            format!("{h}.bak"),
            "AB".repeat(32),
            "notes.txt".to_string(),
            format!(".{h}.x-1.tmp"),
            format!(".{h}.0-1.tmp"),
            h[..63].to_string(),
        ] {
            assert_eq!(stem_of(&other), None, "{other}");
        }
    }
}
