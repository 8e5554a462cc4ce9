//! First-boot preparation: a verified image with the files its first boot reads written
//! into its FAT boot partition, kept in the image cache as a raw image of its own, by
//! its content's sha256, beside a record mapping the preparation's derivation key to it,
//! so that a second apply derives nothing.
//!
//! Cache files, for a preparation with derivation key `K` giving an image of sha256 `D`:
//! - `D.img`          the prepared raw image, read-only, sparse where it is zero;
//! - `K.derived.json` [`Record`]: `D`, its size and stamp, and what was prepared (kind,
//!   user, key fingerprint, host name; never the key's text, a password or its hash);
//! - `K.lock`         held while `K` is derived.
//!
//! The steps of [`derive`]: the base image streamed through the bounded, verifying
//! `open` into a fresh temporary file (O_EXCL, zero blocks left as holes); its boot
//! partition found in the MBR or GPT and opened as FAT through a window of the file
//! (`disk.rs`); the kind's files written (`files.rs`); the result hashed, renamed to
//! `D.img` and recorded. No loop device, no mount, no root.

mod disk;
pub mod files;

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::cache::{Cache, Stamp, read_small};
use super::facts::{ImageFacts, MAX_IMAGE_BYTES};
use super::format::Format;
use super::open::BUF;
use super::{Fetched, ImageError, Origin};
use crate::canonical::hex;
use crate::model::{FirstbootKind, Preparation};
use crate::owned;

pub use disk::{Partition, boot_partition};

/// The record's format; another one is not read (the image is derived again).
const RECORD_FORMAT: u32 = 1;

/// `K.derived.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub format: u32,
    pub derivation_key: String,
    /// The base image's declared sha256.
    pub base_sha256: String,
    pub kind: String,
    pub user: String,
    pub key_fingerprint: String,
    pub hostname: String,
    /// The prepared raw image: its sha256, size and `stat` when written.
    pub derived_sha256: String,
    pub derived_bytes: u64,
    pub stamp: Stamp,
}

/// A prepared image: the file to flash (a verified raw image of the cache) and how it
/// came to be.
#[derive(Clone, Debug)]
pub struct Derived {
    pub fetched: Fetched,
    pub record: Record,
    /// Whether the cache already held it: nothing was derived.
    pub reused: bool,
}

fn prepare_error(name: &str, kind: FirstbootKind, why: impl Into<String>) -> ImageError {
    ImageError::Prepare {
        name: name.to_string(),
        kind: kind.name(),
        why: why.into(),
    }
}

fn record_path(cache: &Cache, key: &str) -> PathBuf {
    cache.dir().join(format!("{key}.derived.json"))
}

fn image_path(cache: &Cache, sha256: &str) -> PathBuf {
    cache.dir().join(format!("{sha256}.img"))
}

/// The prepared image `base` gives with `prep`: the cache's, when its record names a
/// derived file still there as written; otherwise derived now. `base` is verified
/// (`fetch`); the derived image is flashed as any raw image is, so its read-back proves
/// the prepared bytes.
pub fn derive(cache: &Cache, base: &Fetched, prep: &Preparation) -> Result<Derived, ImageError> {
    let key = prep.derivation_key(&base.sha256);
    let _lock = cache
        .lock(&key)
        .map_err(|e| ImageError::cache(&base.name, e))?;
    if let Some(found) = cached(cache, base, &key) {
        return Ok(found);
    }
    let password_hash = match (&prep.password_hash, prep.kind) {
        (Some(h), _) => Some(h.0.clone()),
        // userconf.txt needs one: a random password's, which nobody knows.
        (None, FirstbootKind::Raspios) => {
            Some(unknown_password_hash().map_err(|why| prepare_error(&base.name, prep.kind, why))?)
        }
        (None, _) => None,
    };
    let tmp = Temp::new(cache, &key).map_err(|e| ImageError::cache(&base.name, e))?;
    let len = copy_sparse(base, &tmp.file)?;
    let failed = |why: String| prepare_error(&base.name, prep.kind, why);
    let part = disk::boot_partition(&tmp.file, len).map_err(&failed)?;
    let cmdline = match prep.kind {
        FirstbootKind::Raspios => disk::read_file(&tmp.file, &part, "cmdline.txt")
            .map_err(&failed)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()),
        _ => None,
    };
    let written = files::Written {
        prep,
        password_hash: password_hash.as_deref(),
        derivation_key: &key,
    };
    let boot = files::boot_files(&written, cmdline.as_deref()).map_err(&failed)?;
    // fatfs on a damaged filesystem may panic: that is this image's error, not a crash.
    let wrote = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        disk::write_files(&tmp.file, &part, &boot)
    }))
    .unwrap_or_else(|_| Err("its boot partition's FAT filesystem is damaged".into()));
    wrote.map_err(&failed)?;
    tmp.file
        .sync_all()
        .map_err(|e| ImageError::io(&base.name, &tmp.path, e))?;
    let sha = hash_file(&tmp.file).map_err(|e| ImageError::io(&base.name, &tmp.path, e))?;
    let dest = image_path(cache, &sha);
    let mut perms = tmp
        .file
        .metadata()
        .map_err(|e| ImageError::io(&base.name, &tmp.path, e))?
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o400);
    fs::set_permissions(&tmp.path, perms)
        .and_then(|()| owned::rename_into_place(&tmp.path, &dest))
        .map_err(|e| ImageError::io(&base.name, &dest, e))?;
    tmp.kept();
    let meta = fs::symlink_metadata(&dest).map_err(|e| ImageError::io(&base.name, &dest, e))?;
    let record = Record {
        format: RECORD_FORMAT,
        derivation_key: key.clone(),
        base_sha256: base.sha256.clone(),
        kind: prep.kind.name().into(),
        user: prep.user.clone(),
        key_fingerprint: prep.key.fingerprint.clone(),
        hostname: prep.hostname.clone(),
        derived_sha256: sha.clone(),
        derived_bytes: len,
        stamp: Stamp::of(&meta),
    };
    let json = serde_json::to_vec_pretty(&record)
        .map_err(|e| ImageError::io(&base.name, record_path(cache, &key), io::Error::other(e)))?;
    owned::replace(&record_path(cache, &key), &json, 0o600)
        .map_err(|e| ImageError::cache(&base.name, e))?;
    // A raw image's facts are its own size and sha256: the flash knows its length.
    let _ = super::facts::store(
        &cache.facts_path(&sha),
        &ImageFacts {
            format: Format::Raw,
            compressed_bytes: len,
            sha256: sha.clone(),
            uncompressed_bytes: len,
            uncompressed_sha256: sha.clone(),
        },
    );
    Ok(Derived {
        fetched: fetched_of(cache, base, &record),
        record,
        reused: false,
    })
}

/// The cache's derivation `key`, when its record reads and names a file of ours that is
/// still as it was written (same `stat`, so the same bytes).
fn cached(cache: &Cache, base: &Fetched, key: &str) -> Option<Derived> {
    let bytes = read_small(&record_path(cache, key))?;
    let record: Record = serde_json::from_slice(&bytes).ok()?;
    let sha_ok = record.derived_sha256.len() == 64
        && record
            .derived_sha256
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    if record.format != RECORD_FORMAT
        || record.derivation_key != key
        || record.base_sha256 != base.sha256
        || !sha_ok
    {
        return None;
    }
    let meta = fs::symlink_metadata(image_path(cache, &record.derived_sha256)).ok()?;
    if !meta.is_file() || meta.uid() != owned::euid() || Stamp::of(&meta) != record.stamp {
        return None;
    }
    Some(Derived {
        fetched: fetched_of(cache, base, &record),
        record,
        reused: true,
    })
}

fn fetched_of(cache: &Cache, base: &Fetched, record: &Record) -> Fetched {
    let path = image_path(cache, &record.derived_sha256);
    Fetched {
        name: base.name.clone(),
        origin: Origin::Path(path.clone()),
        path,
        sha256: record.derived_sha256.clone(),
        bytes: record.derived_bytes,
        stamp: record.stamp.clone(),
        cache: cache.clone(),
    }
}

/// A temporary file in the cache, created anew (O_EXCL, no link followed) and removed
/// unless kept.
struct Temp {
    path: PathBuf,
    file: File,
    keep: bool,
}

impl Temp {
    fn new(cache: &Cache, key: &str) -> Result<Temp, owned::OwnedError> {
        let path = cache.dir().join(format!(
            ".{key}.{}-{}.tmp",
            std::process::id(),
            crate::transport::random_hex::<6>()
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .custom_flags_nofollow()
            .open(&path)
            .map_err(|source| owned::OwnedError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(Temp {
            path,
            file,
            keep: false,
        })
    }

    fn kept(mut self) {
        self.keep = true;
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}

trait NoFollow {
    fn custom_flags_nofollow(&mut self) -> &mut Self;
}

impl NoFollow for std::fs::OpenOptions {
    fn custom_flags_nofollow(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.mode(0o600).custom_flags(libc::O_NOFOLLOW)
    }
}

/// The base image's decompressed bytes into `out`, through the bounded stream that
/// checks them against the verified file; all-zero blocks become holes. Returns the
/// length.
fn copy_sparse(base: &Fetched, mut out: &File) -> Result<u64, ImageError> {
    let mut stream = super::open(base, Some(MAX_IMAGE_BYTES))?;
    let mut buf = vec![0u8; BUF];
    let mut len = 0u64;
    let io_err = |e: io::Error| super::facts::owned(e, base);
    loop {
        let mut filled = 0;
        while filled < buf.len() {
            match stream.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_err(e)),
            }
        }
        if filled == 0 {
            break;
        }
        let chunk = &buf[..filled];
        if chunk.iter().all(|b| *b == 0) {
            out.seek(SeekFrom::Current(filled as i64))
                .map_err(|e| ImageError::io(&base.name, &base.path, e))?;
        } else {
            out.write_all(chunk)
                .map_err(|e| ImageError::io(&base.name, &base.path, e))?;
        }
        len += filled as u64;
    }
    out.set_len(len)
        .map_err(|e| ImageError::io(&base.name, &base.path, e))?;
    Ok(len)
}

fn hash_file(file: &File) -> io::Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; BUF];
    let mut at = 0u64;
    loop {
        let n = std::os::unix::fs::FileExt::read_at(file, &mut buf, at)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        at += n as u64;
    }
    Ok(hex(&h.finalize()))
}

/// A SHA-512 crypt hash of 32 random bytes that are then forgotten: an account with a
/// password nobody knows, logged into by key only.
fn unknown_password_hash() -> Result<String, String> {
    use sha_crypt::password_hash::PasswordHasher;
    let mut secret = [0u8; 48];
    // SAFETY: getrandom writes at most `len` bytes into the buffer we own.
    let n = unsafe { libc::getrandom(secret.as_mut_ptr().cast(), secret.len(), 0) };
    if n != secret.len() as isize {
        return Err("the system gave no random bytes for the account's unknown password".into());
    }
    let (password, salt) = secret.split_at(32);
    let hash = sha_crypt::ShaCrypt::SHA512
        .hash_password_with_salt(password, salt)
        .map_err(|e| format!("cannot hash the account's unknown password: {e}"))?;
    secret.fill(0);
    Ok(hash.to_string())
}

/// The derived images and records in the cache, for a test to count derivations by.
#[cfg(test)]
pub(crate) fn derived_files(cache: &Cache) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(cache.dir())
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "img"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[cfg(test)]
pub(crate) fn record_of(cache: &Cache, key: &str) -> Option<Record> {
    serde_json::from_slice(&read_small(&record_path(cache, key))?).ok()
}

#[cfg(test)]
mod tests;
