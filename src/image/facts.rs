//! An image's facts (format, compressed and uncompressed size and sha256), computed by
//! one streaming pass and kept in the cache beside the file, keyed by its sha256.

use std::io::{self, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::format::Format;
use super::open::Stream;
use super::{Fetched, ImageError, cache};

/// The most an image may decompress to when no device bounds it (facts, and `open`
/// callers that know no size): 256 GiB, beyond any SD card or eMMC image.
pub const MAX_IMAGE_BYTES: u64 = 256 << 30;

/// Bumped when the fields change; a cached file of another version is recomputed.
const VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageFacts {
    pub format: Format,
    /// The file as declared (the bytes the scenario's sha256 is of).
    pub compressed_bytes: u64,
    pub sha256: String,
    /// What is written to the device.
    pub uncompressed_bytes: u64,
    pub uncompressed_sha256: String,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    version: u32,
    #[serde(flatten)]
    facts: ImageFacts,
}

/// The image's facts: from the cache, else from one full pass over the decompressed
/// stream, bounded by [`MAX_IMAGE_BYTES`]. Flashing through [`super::open`] records them
/// as a side effect, so after a flash this costs nothing.
pub fn facts(f: &Fetched) -> Result<ImageFacts, ImageError> {
    facts_within(f, MAX_IMAGE_BYTES)
}

/// [`facts`] with another bound: an image decompressing past `max` is refused.
pub fn facts_within(f: &Fetched, max: u64) -> Result<ImageFacts, ImageError> {
    if let Some(known) = cached(f) {
        return Ok(known);
    }
    let mut s = Stream::open(f, Some(max))?;
    let mut buf = vec![0u8; 1 << 20];
    while s.read(&mut buf).map_err(|e| owned(e, f))? > 0 {}
    s.facts.take().ok_or_else(|| {
        ImageError::io(
            &f.name,
            &f.path,
            io::Error::other("the stream ended without facts"),
        )
    })
}

/// The image's facts from one full pass now, bounded by `max`, whatever the cache says:
/// what a flash checks a copy it did not make against. The facts found replace the
/// cache's (the file itself was verified by its declared sha256).
pub fn measure(f: &Fetched, max: u64) -> Result<ImageFacts, ImageError> {
    let mut s = Stream::open(f, Some(max))?;
    s.known = None;
    let mut buf = vec![0u8; 1 << 20];
    while s.read(&mut buf).map_err(|e| owned(e, f))? > 0 {}
    let found = s.facts.take().ok_or_else(|| {
        ImageError::io(
            &f.name,
            &f.path,
            io::Error::other("the stream ended without facts"),
        )
    })?;
    if cached(f).as_ref() != Some(&found) {
        store(&f.cache.facts_path(&f.sha256), &found)
            .map_err(|e| ImageError::io(&f.name, f.cache.facts_path(&f.sha256), e))?;
    }
    Ok(found)
}

/// The `ImageError` an image stream's `io::Error` carries, or the error as an I/O error
/// of the image's file.
pub fn owned(e: io::Error, f: &Fetched) -> ImageError {
    if ImageError::from_io(&e).is_some() {
        let inner = e.into_inner().expect("checked above");
        return *inner.downcast::<ImageError>().expect("checked above");
    }
    ImageError::io(&f.name, &f.path, e)
}

/// The facts cached for this image, if a whole pass recorded them: costs one small
/// read, so a flash can learn the image's length up front when it is known.
pub fn cached(f: &Fetched) -> Option<ImageFacts> {
    let bytes = cache::read_small(&f.cache.facts_path(&f.sha256))?;
    let disk: OnDisk = serde_json::from_slice(&bytes).ok()?;
    (disk.version == VERSION
        && disk.facts.sha256 == f.sha256
        && disk.facts.compressed_bytes == f.bytes)
        .then_some(disk.facts)
}

pub(super) fn store(path: &Path, facts: &ImageFacts) -> io::Result<()> {
    let disk = OnDisk {
        version: VERSION,
        facts: facts.clone(),
    };
    let json = serde_json::to_vec_pretty(&disk).map_err(io::Error::other)?;
    // The cache directory exists: `fetch` made or accepted it.
    Ok(crate::owned::replace(path, &json, 0o600)?)
}
