//! The decompressed image as one bounded stream: raw, xz, gzip, zstd or a zip's one
//! `.img`, read straight from the verified file with no temporary copy; it fails past
//! its size bound and, at its end, checks or records the image's facts.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::PathBuf;

use sha2::{Digest, Sha256};

use crate::canonical::hex;

use super::cache::Stamp;
use super::facts::{self, ImageFacts};
use super::format::{self, Format};
use super::{Fetched, ImageError, archive};

/// Read buffer for compressed input: large, since images are gigabytes.
pub(super) const BUF: usize = 1 << 20;

/// The most memory the xz decoder may take: `xz -9` needs 65 MiB, and a header asking
/// for more is refused rather than trusted.
const XZ_MEMLIMIT: u64 = 512 << 20;

/// The decompressed bytes of an image file of `format` (`name` in messages), read from
/// `input` at its start: not yet bounded by `max`, but a zip's entry whose header
/// already says it is larger is refused. `Stream` bounds and checks what it gives;
/// the fuzz targets read it from memory (`crate::fuzzing`).
pub(crate) fn decoder<R: Read + Seek + Send + 'static>(
    name: &str,
    format: Format,
    input: R,
    max: Option<u64>,
) -> Result<Box<dyn Read + Send>, ImageError> {
    let corrupt = |format, cause: String| ImageError::Corrupt {
        name: name.to_string(),
        format,
        cause,
    };
    Ok(match format {
        Format::Raw => Box::new(input),
        Format::Xz => {
            let stream = liblzma::stream::Stream::new_stream_decoder(
                XZ_MEMLIMIT,
                liblzma::stream::CONCATENATED,
            )
            .map_err(|e| corrupt("xz", e.to_string()))?;
            Box::new(liblzma::bufread::XzDecoder::new_stream(
                BufReader::with_capacity(BUF, input),
                stream,
            ))
        }
        Format::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(
            BufReader::with_capacity(BUF, input),
        )),
        Format::Zstd => Box::new(
            zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(BUF, input))
                .map_err(|e| corrupt("zstd", e.to_string()))?,
        ),
        Format::Zip => archive::open_entry(name, input, max)?,
    })
}

/// The decompressed bytes of a fetched image. `max` (the target device's size) bounds
/// them: past it the stream fails with [`ImageError::TooLarge`], so a decompression bomb
/// costs neither disk nor memory.
///
/// Read it to its end (`Ok(0)`): only there is a damaged or cut file noticed, and the
/// image's uncompressed size and sha256 checked against [`super::facts`] (a file that
/// changed since it was verified fails with [`ImageError::Changed`]) or recorded as them.
/// Errors are `io::Error`s holding an [`ImageError`] ([`ImageError::from_io`]).
pub fn open(f: &Fetched, max: Option<u64>) -> Result<Box<dyn Read + Send>, ImageError> {
    Ok(Box::new(Stream::open(f, max)?))
}

/// [`open`] as a stream that hashes itself: at its end its sha256 is the image's
/// uncompressed sha256, so a flash need not hash the same bytes again.
pub fn open_hashed(
    f: &Fetched,
    max: Option<u64>,
) -> Result<Box<dyn crate::flash::dd::SelfHashing + Send>, ImageError> {
    Ok(Box::new(Stream::open(f, max)?))
}

impl crate::flash::dd::SelfHashing for Stream {
    fn sha256(&self) -> Option<String> {
        self.facts.as_ref().map(|f| f.uncompressed_sha256.clone())
    }
}

pub(super) struct Stream {
    inner: Box<dyn Read + Send>,
    name: String,
    path: PathBuf,
    format: Format,
    max: Option<u64>,
    done: u64,
    hasher: Sha256,
    compressed: (u64, String),
    /// The cache's facts, which the pass must match (`None`: it records its own).
    pub(super) known: Option<ImageFacts>,
    /// The image file (a second handle) and its stamp when verified.
    watch: (File, Stamp),
    /// Set at the end: what this pass found.
    pub(super) facts: Option<ImageFacts>,
    cache_facts: PathBuf,
}

impl Stream {
    pub(super) fn open(f: &Fetched, max: Option<u64>) -> Result<Stream, ImageError> {
        let io_err = |e| ImageError::io(&f.name, &f.path, e);
        // Not blocked by a FIFO swapped in since `fetch`: the stamp below refuses it.
        let mut file = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&f.path)
                .map_err(io_err)?
        };
        let meta = file.metadata().map_err(io_err)?;
        if let Some(why) = Stamp::of(&meta).differs(&f.stamp) {
            return Err(ImageError::Changed {
                name: f.name.clone(),
                path: f.path.clone(),
                why: why.into(),
            });
        }
        let mut head = Vec::with_capacity(format::HEAD);
        (&mut file)
            .take(format::HEAD as u64)
            .read_to_end(&mut head)
            .map_err(io_err)?;
        file.seek(SeekFrom::Start(0)).map_err(io_err)?;
        let format =
            format::detect(&f.origin.to_string(), &head).map_err(|why| ImageError::Format {
                name: f.name.clone(),
                why,
            })?;
        let too_large = |max| ImageError::TooLarge {
            name: f.name.clone(),
            max,
        };
        let known = facts::cached(f);
        if let (Some(m), Some(k)) = (max, &known)
            && k.uncompressed_bytes > m
        {
            return Err(too_large(m));
        }
        // The same open file, to ask at the end whether it was written to meanwhile.
        let watch = file.try_clone().map_err(io_err)?;
        let input = Tagged {
            file,
            name: f.name.clone(),
            path: f.path.clone(),
        };
        if format == Format::Raw
            && let Some(m) = max
            && meta.len() > m
        {
            return Err(too_large(m));
        }
        let inner = decoder(&f.name, format, input, max)?;
        Ok(Stream {
            inner,
            name: f.name.clone(),
            path: f.path.clone(),
            format,
            max,
            done: 0,
            hasher: Sha256::new(),
            compressed: (f.bytes, f.sha256.clone()),
            known,
            watch: (watch, f.stamp.clone()),
            facts: None,
            cache_facts: f.cache.facts_path(&f.sha256),
        })
    }

    /// An error from the decoder, named: the file's own I/O errors and errors already
    /// typed pass through; anything else the decoder says is corrupt data.
    fn label(&self, e: io::Error) -> io::Error {
        if e.kind() == io::ErrorKind::Interrupted || ImageError::from_io(&e).is_some() {
            return e;
        }
        let cause = match e.kind() {
            io::ErrorKind::UnexpectedEof => format!("the file ends early ({e})"),
            _ => e.to_string(),
        };
        ImageError::Corrupt {
            name: self.name.clone(),
            format: self.format.as_str(),
            cause,
        }
        .into_io()
    }

    fn finish(&mut self) -> io::Result<()> {
        let found = ImageFacts {
            format: self.format,
            compressed_bytes: self.compressed.0,
            sha256: self.compressed.1.clone(),
            uncompressed_bytes: self.done,
            uncompressed_sha256: hex(&self.hasher.clone().finalize()),
        };
        let changed = |why: String| {
            ImageError::Changed {
                name: self.name.clone(),
                path: self.path.clone(),
                why,
            }
            .into_io()
        };
        // A write to the file while it streamed changes its ctime; facts from such a
        // pass would vouch for bytes nobody verified.
        let now = self.watch.0.metadata()?;
        if let Some(why) = Stamp::of(&now).differs(&self.watch.1) {
            return Err(changed(format!("{why} while it was read")));
        }
        if self.format == Format::Raw && found.uncompressed_sha256 != found.sha256 {
            return Err(changed(format!(
                "it read as sha256 {}, not the verified {}",
                found.uncompressed_sha256, found.sha256
            )));
        }
        match &self.known {
            Some(k) if *k != found => {
                return Err(changed(format!(
                    "it now decompresses to {} bytes with sha256 {}, not {} bytes with sha256 {}",
                    found.uncompressed_bytes,
                    found.uncompressed_sha256,
                    k.uncompressed_bytes,
                    k.uncompressed_sha256
                )));
            }
            Some(_) => {}
            // Best effort: facts not written are computed again next time.
            None => {
                let _ = facts::store(&self.cache_facts, &found);
            }
        }
        self.facts = Some(found);
        Ok(())
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.facts.is_some() || buf.is_empty() {
            return Ok(0);
        }
        let n = self.inner.read(buf).map_err(|e| self.label(e))?;
        if n == 0 {
            self.finish()?;
            return Ok(0);
        }
        self.done += n as u64;
        if let Some(max) = self.max
            && self.done > max
        {
            return Err(ImageError::TooLarge {
                name: self.name.clone(),
                max,
            }
            .into_io());
        }
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// The image file, its read and seek errors typed as I/O errors of this path (so the
/// decoders above pass them through rather than calling the data corrupt).
struct Tagged {
    file: File,
    name: String,
    path: PathBuf,
}

impl Tagged {
    fn tag(&self, e: io::Error) -> io::Error {
        if e.kind() == io::ErrorKind::Interrupted {
            e
        } else {
            ImageError::io(&self.name, &self.path, e).into_io()
        }
    }
}

impl Read for Tagged {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf).map_err(|e| self.tag(e))
    }
}

impl Seek for Tagged {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.file.seek(pos).map_err(|e| self.tag(e))
    }
}
