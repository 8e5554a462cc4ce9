//! OS images: fetched once into a cache and verified against their declared sha256
//! before any use, then read as one bounded, decompressed stream for flashing, with
//! their facts (sizes, hashes) recorded, and checked after boot against their
//! expectations.
//!
//! The flow a flash step follows:
//! 1. [`fetch`] the image (`path`, `file://` offline; http(s) into the [`Cache`], resumed);
//! 2. [`open`] it with the target device's size as bound ([`known_facts`] give the
//!    length up front once any pass has run), and stream it to the device, reading to
//!    the end: the stream fails on damaged data, past the bound, or if the file changed
//!    since `fetch` ([`error_of`] turns its `io::Error` back into an [`ImageError`]);
//! 3. [`facts`] (already recorded by that pass) give the uncompressed size and sha256
//!    that the device's read-back must match;
//! 4. after boot, [`expect::check`] compares os-release and `uname -m`.
//!
//! Files: `cache.rs` the cache's layout and locks, `fetch.rs` local files and the
//! dispatch, `http.rs` downloads, `format.rs` what a file is, `open.rs` the stream,
//! `archive.rs` a zip's one `.img`, `facts.rs`, `expect.rs`, `error.rs`; `firstboot/` the
//! prepared copy of an image whose first boot must find a user, a key and SSH on.

mod archive;
mod cache;
mod error;
pub mod expect;
mod facts;
mod fetch;
pub mod firstboot;
pub mod format;
pub mod gc;
mod http;
mod open;

use std::path::PathBuf;

pub use cache::{Cache, DEFAULT_DIR};
pub use error::{ImageError, Origin};
pub use facts::{
    ImageFacts, MAX_IMAGE_BYTES, cached as known_facts, facts, facts_within, measure,
    owned as error_of,
};
pub use fetch::{FetchProgress, Phase, fetch, file_url_path};
pub use firstboot::{Derived, derive};
pub use format::Format;
pub use http::{DEFAULT_MIN_RATE, MAX_DOWNLOAD};
pub(crate) use open::decoder;
pub use open::{open, open_hashed};

/// An image whose file was verified to have its declared sha256.
#[derive(Clone, Debug)]
pub struct Fetched {
    /// The image's name in the scenario, for messages.
    pub name: String,
    /// The url (shown redacted) or path as declared; its file name is checked against
    /// the format.
    pub origin: Origin,
    /// The verified file: the user's own file for `path` and `file://`, the cache's
    /// copy for http(s).
    pub path: PathBuf,
    /// Of the file as declared (compressed), lower-case hex.
    pub sha256: String,
    /// The file's size.
    pub bytes: u64,
    stamp: cache::Stamp,
    cache: Cache,
}

#[cfg(test)]
pub(crate) mod tests;
