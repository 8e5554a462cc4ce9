//! The image as a flash streams it: a source that dd hashes, or one that hashes itself,
//! counted, reported as progress, checked against a bmap, and cut at the device's end.

use std::io::Read;

use sha2::{Digest, Sha256};

use super::bmap::Mapped;
use super::{Phase, Progress};

/// An image stream that hashes what it yields (`image::open_hashed`'s does, for the
/// image's facts), so `write_with` need not hash the same bytes a second time.
pub trait SelfHashing: Read {
    /// The sha256 (hex) of every byte read, once the stream has ended (`Ok(0)`).
    fn sha256(&self) -> Option<String>;
}

/// The image `write_with` streams.
pub enum Source<'a> {
    /// Hashed by `write_with` as it goes.
    Plain(&'a mut dyn Read),
    /// Hashed by the stream itself.
    Hashed(&'a mut dyn SelfHashing),
}

/// The image as dd receives it: hashed, counted, reported, and cut at the device's end.
pub(super) struct Hashing<'a> {
    pub(super) inner: &'a mut dyn Read,
    /// `None` when the source hashes itself (`Source::Hashed`).
    pub(super) hash: Option<Sha256>,
    /// With a bmap: the mapped bytes' hash and any data outside them.
    pub(super) mapped: Option<Mapped>,
    pub(super) bytes: u64,
    pub(super) limit: u64,
    pub(super) total: Option<u64>,
    pub(super) progress: &'a dyn Fn(Progress),
    /// Why reading the image failed; the transport only sees an I/O error.
    pub(super) failed: Option<String>,
    pub(super) overflow: bool,
}

/// What `Hashing` found, without its borrow of the source.
pub(super) struct Streamed {
    pub(super) hash: Option<Sha256>,
    pub(super) mapped: Option<Mapped>,
    pub(super) bytes: u64,
    pub(super) failed: Option<String>,
    pub(super) overflow: bool,
}

impl Hashing<'_> {
    pub(super) fn streamed(self) -> Streamed {
        Streamed {
            hash: self.hash,
            mapped: self.mapped,
            bytes: self.bytes,
            failed: self.failed,
            overflow: self.overflow,
        }
    }
}

impl Read for Hashing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Err(e),
            Err(e) => {
                self.failed = Some(e.to_string());
                return Err(e);
            }
        };
        if self.bytes + n as u64 > self.limit {
            self.overflow = true;
            return Err(std::io::Error::other("the image is larger than the device"));
        }
        if let Some(h) = &mut self.hash {
            h.update(&buf[..n]);
        }
        if let Some(m) = &mut self.mapped {
            m.update(self.bytes, &buf[..n]);
        }
        self.bytes += n as u64;
        if n > 0 {
            (self.progress)(Progress {
                phase: Phase::Write,
                bytes: self.bytes,
                total: self.total,
            });
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canonical::hex;

    #[test]
    fn the_hashing_reader_stops_at_the_device_end_and_keeps_the_digest_of_what_it_passed() {
        let data = vec![5u8; 3000];
        let mut src = data.as_slice();
        let calls = std::cell::Cell::new(0);
        let progress = |_: Progress| calls.set(calls.get() + 1);
        let mut r = Hashing {
            inner: &mut src,
            hash: Some(Sha256::new()),
            mapped: None,
            bytes: 0,
            limit: 2048,
            total: None,
            progress: &progress,
            failed: None,
            overflow: false,
        };
        let mut buf = [0u8; 1024];
        assert_eq!(r.read(&mut buf).unwrap(), 1024);
        assert_eq!(r.read(&mut buf).unwrap(), 1024);
        assert!(r.read(&mut buf).is_err());
        assert!(r.overflow);
        assert_eq!(r.bytes, 2048);
        assert_eq!(calls.get(), 2);
        assert_eq!(
            hex(&r.hash.unwrap().finalize()),
            hex(&Sha256::digest(&data[..2048]))
        );
    }
}
