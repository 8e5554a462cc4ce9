//! Getting an image's bytes and proving them: a plain path or `file://` URL is verified
//! where it lies (offline, no copy); an http(s) URL is downloaded into the cache
//! (`http.rs`). Either way the sha256 of the file as declared must match before any use.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::cache::{Cache, Stamp};
use super::{Fetched, ImageError, Origin, http};
use crate::canonical::hex;
use crate::model::ImageSource;

/// What a fetch is doing, for a progress bar: downloading, or hashing to verify.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Download,
    Verify,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FetchProgress {
    pub phase: Phase,
    pub done: u64,
    pub total: Option<u64>,
}

/// How often progress is reported, in bytes.
pub(super) const PROGRESS_EVERY: u64 = 8 << 20;

/// The image `name` declared by `source`, verified against its sha256.
///
/// - `path = "..."` (relative to the current directory) and `url = "file:///..."`: the
///   file is hashed where it lies and used in place; the cache records its `stat`
///   (`H.stamps.json`), so an unchanged file is not hashed again, and [`super::open`]
///   refuses it if it changed since.
/// - `url = "http(s)://..."`: downloaded once into `cache` as `H.part`, resumed from its
///   length with a `Range` request after a break, verified, then renamed to `H`.
///
/// A digest that differs is [`ImageError::Mismatch`] naming both; a download that fails
/// leaves the partial file for the next fetch to resume.
pub fn fetch(
    cache: &Cache,
    name: &str,
    source: &ImageSource,
    progress: &dyn Fn(FetchProgress),
) -> Result<Fetched, ImageError> {
    let (url, sha256, min_rate) = match source {
        ImageSource::Installed => {
            return Err(ImageError::BadSource {
                name: name.into(),
                origin: Origin::Installed,
                why: "an installed image has no file to fetch".into(),
            });
        }
        ImageSource::Path { path, sha256 } => {
            return local(
                cache,
                name,
                &Origin::Path(path.clone()),
                path,
                sha256,
                progress,
            );
        }
        ImageSource::Url {
            url,
            sha256,
            min_rate,
        } => (url, sha256.as_str(), *min_rate),
    };
    let origin = Origin::Url(url.clone());
    let lower = url.for_download().to_ascii_lowercase();
    if lower.starts_with("file://") {
        let path = file_url_path(url.for_download()).map_err(|why| ImageError::BadSource {
            name: name.into(),
            origin: origin.clone(),
            why,
        })?;
        return local(cache, name, &origin, &path, sha256, progress);
    }
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(ImageError::BadSource {
            name: name.into(),
            origin,
            why: "expected http://, https:// or file://".into(),
        });
    }
    let blob = cache.blob(sha256);
    let lock = cache.lock(sha256).map_err(|e| ImageError::cache(name, e))?;
    match fs::symlink_metadata(&blob) {
        Ok(m) if m.is_file() => {
            match local_locked(cache, name, &origin, &blob, sha256, progress) {
                Err(ImageError::Mismatch { .. }) => {
                    // The cache's own copy went bad: fetch it again rather than fail
                    // forever.
                    fs::remove_file(&blob).map_err(|e| ImageError::io(name, &blob, e))?;
                }
                other => return other,
            }
        }
        // Not a file the cache made (a link, a FIFO): removed, never followed.
        Ok(m) if !m.is_dir() => {
            fs::remove_file(&blob).map_err(|e| ImageError::io(name, &blob, e))?;
        }
        Ok(_) => {
            return Err(ImageError::Cache {
                name: name.into(),
                why: format!("{} is a directory, not an image", blob.display()),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(ImageError::io(name, &blob, e)),
    }
    let pace = http::Pace::new(min_rate.unwrap_or(http::DEFAULT_MIN_RATE));
    http::download(cache, name, url, sha256, pace, progress)?;
    let fetched = local_locked(cache, name, &origin, &blob, sha256, progress);
    drop(lock);
    fetched
}

/// A file on this machine: verified where it lies.
fn local(
    cache: &Cache,
    name: &str,
    origin: &Origin,
    path: &Path,
    sha256: &str,
    progress: &dyn Fn(FetchProgress),
) -> Result<Fetched, ImageError> {
    let _lock = cache.lock(sha256).map_err(|e| ImageError::cache(name, e))?;
    local_locked(cache, name, origin, path, sha256, progress)
}

fn local_locked(
    cache: &Cache,
    name: &str,
    origin: &Origin,
    path: &Path,
    sha256: &str,
    progress: &dyn Fn(FetchProgress),
) -> Result<Fetched, ImageError> {
    let meta = fs::metadata(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => ImageError::NotFound {
            name: name.into(),
            path: path.into(),
        },
        _ => ImageError::io(name, path, e),
    })?;
    if !meta.is_file() {
        return Err(ImageError::BadSource {
            name: name.into(),
            origin: origin.clone(),
            why: format!("{} is not a regular file", path.display()),
        });
    }
    let full = fs::canonicalize(path).map_err(|e| ImageError::io(name, path, e))?;
    let stamp = Stamp::of(&meta);
    if !cache.stamped(sha256, &full, &stamp) {
        let actual = sha256_file(&full, progress).map_err(|e| ImageError::io(name, path, e))?;
        let after = fs::metadata(&full).map_err(|e| ImageError::io(name, path, e))?;
        if let Some(why) = Stamp::of(&after).differs(&stamp) {
            return Err(ImageError::Changed {
                name: name.into(),
                path: path.into(),
                why: format!("{why} while it was hashed"),
            });
        }
        if actual != sha256 {
            return Err(ImageError::Mismatch {
                name: name.into(),
                origin: origin.clone(),
                expected: sha256.into(),
                actual,
            });
        }
        cache
            .add_stamp(sha256, &full, stamp.clone())
            .map_err(|e| ImageError::cache(name, e))?;
    }
    Ok(Fetched {
        name: name.into(),
        origin: origin.clone(),
        path: full,
        sha256: sha256.into(),
        bytes: meta.len(),
        stamp,
        cache: cache.clone(),
    })
}

/// The sha256 of a whole file, reporting progress as it goes.
pub(super) fn sha256_file(path: &Path, progress: &dyn Fn(FetchProgress)) -> io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    // Not blocked by a FIFO swapped in since the caller's `stat`: refused below.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let total = meta.len();
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let (mut done, mut shown) = (0u64, 0u64);
    progress(FetchProgress {
        phase: Phase::Verify,
        done: 0,
        total: Some(total),
    });
    loop {
        let n = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        done += n as u64;
        if done - shown >= PROGRESS_EVERY {
            shown = done;
            progress(FetchProgress {
                phase: Phase::Verify,
                done,
                total: Some(total),
            });
        }
    }
    progress(FetchProgress {
        phase: Phase::Verify,
        done,
        total: Some(total),
    });
    Ok(hex(&hasher.finalize()))
}

/// The local path a `file://` URL names: `file:///p` or `file://localhost/p`, with
/// `%XX` escapes decoded.
pub fn file_url_path(url: &str) -> Result<PathBuf, String> {
    use std::os::unix::ffi::OsStringExt;
    let rest = &url["file://".len()..];
    let rest = if rest.len() >= 9 && rest[..9].eq_ignore_ascii_case("localhost") {
        &rest[9..]
    } else {
        rest
    };
    if !rest.starts_with('/') {
        return Err("a file:// URL needs an absolute path on this machine (file:///path)".into());
    }
    let rest = rest.split(['?', '#']).next().unwrap_or(rest);
    let mut bytes = Vec::with_capacity(rest.len());
    let mut it = rest.bytes();
    while let Some(b) = it.next() {
        if b != b'%' {
            bytes.push(b);
            continue;
        }
        let h = [it.next(), it.next()];
        let digit = |c: Option<u8>| c.and_then(|c| (c as char).to_digit(16));
        match (digit(h[0]), digit(h[1])) {
            (Some(a), Some(b)) => bytes.push((a * 16 + b) as u8),
            _ => return Err("a bad %-escape (expected two hexadecimal digits)".into()),
        }
    }
    if bytes.contains(&0) {
        return Err("the path contains a NUL byte".into());
    }
    Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_name_absolute_local_paths() {
        assert_eq!(file_url_path("file:///srv/a.img"), Ok("/srv/a.img".into()));
        assert_eq!(
            file_url_path("file://localhost/srv/a.img"),
            Ok("/srv/a.img".into())
        );
        assert_eq!(
            file_url_path("file:///srv/my%20image.img.xz"),
            Ok("/srv/my image.img.xz".into())
        );
        assert!(
            file_url_path("file://server/share/a.img")
                .unwrap_err()
                .contains("absolute path")
        );
        assert!(
            file_url_path("file:///a%2")
                .unwrap_err()
                .contains("%-escape")
        );
        assert!(file_url_path("file:///a%00b").unwrap_err().contains("NUL"));
    }
}
