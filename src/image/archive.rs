//! A zipped image: the archive's one `.img` entry as a stream, read in place from the
//! archive (stored or deflate), its CRC-32 and size checked at the end.
//!
//! The `zip` crate only reads the central directory (zip64 included); the entry's bytes
//! are read here from its data offset, so the stream owns its file and no entry is
//! extracted to disk first.

use std::io::{self, BufReader, Read, Seek, SeekFrom};

use ::zip::{CompressionMethod, ZipArchive};

use super::ImageError;

/// One entry's place in the archive and what its header promises.
#[derive(Debug)]
struct Entry {
    name: String,
    data_start: u64,
    compressed: u64,
    size: u64,
    crc32: u32,
    deflated: bool,
}

/// The decompressed bytes of the archive's only `.img`. Refuses an archive with no
/// `.img` or several (naming them), an encrypted entry, or a method other than stored
/// and deflate; with `max`, refuses an entry whose header already says it is larger.
pub(super) fn open_entry<R: Read + Seek + Send + 'static>(
    name: &str,
    mut file: R,
    max: Option<u64>,
) -> Result<Box<dyn Read + Send>, ImageError> {
    let bad = |why: String| ImageError::Archive {
        name: name.to_string(),
        why,
    };
    let entry = {
        let mut zip =
            ZipArchive::new(&mut file).map_err(|e| bad(format!("cannot be read: {e}")))?;
        let mut images = Vec::new();
        let mut others = Vec::new();
        for i in 0..zip.len() {
            let f = zip
                .by_index_raw(i)
                .map_err(|e| bad(format!("has an unreadable entry {i}: {e}")))?;
            let entry_name = f
                .name()
                .map(std::borrow::Cow::into_owned)
                .unwrap_or_default();
            if f.is_dir() || ignored(&entry_name) {
                continue;
            }
            if !entry_name.to_ascii_lowercase().ends_with(".img") {
                others.push(entry_name);
                continue;
            }
            if f.encrypted() {
                return Err(bad(format!(
                    "encrypts `{}`; an image must be readable without a password",
                    shown(&entry_name)
                )));
            }
            let method = f.compression();
            let deflated = if method == CompressionMethod::DEFLATE {
                true
            } else if method == CompressionMethod::STORE {
                false
            } else {
                return Err(bad(format!(
                    "compresses `{}` with {method:?}; only stored and deflate entries are read",
                    shown(&entry_name)
                )));
            };
            images.push(Entry {
                data_start: f.data_start().ok_or_else(|| {
                    bad(format!("has no data offset for `{}`", shown(&entry_name)))
                })?,
                compressed: f.compressed_size(),
                size: f.size(),
                crc32: f.crc32(),
                deflated,
                name: entry_name,
            });
        }
        match images.len() {
            1 => images.pop().expect("one entry"),
            0 => {
                let shown = list(&others);
                return Err(bad(if others.is_empty() {
                    "holds no .img file (it is empty)".into()
                } else {
                    format!("holds no .img file (it holds {shown})")
                }));
            }
            n => {
                let names: Vec<String> = images.into_iter().map(|e| e.name).collect();
                return Err(bad(format!(
                    "holds {n} .img files ({}); exactly one is needed",
                    list(&names)
                )));
            }
        }
    };
    if let Some(max) = max
        && entry.size > max
    {
        return Err(ImageError::TooLarge {
            name: name.to_string(),
            max,
        });
    }
    file.seek(SeekFrom::Start(entry.data_start))
        .map_err(|e| bad(format!("cannot seek to `{}`: {e}", shown(&entry.name))))?;
    let raw = BufReader::with_capacity(super::open::BUF, file.take(entry.compressed));
    let inner: Box<dyn Read + Send> = if entry.deflated {
        Box::new(flate2::bufread::DeflateDecoder::new(raw))
    } else {
        Box::new(raw)
    };
    Ok(Box::new(Checked {
        inner,
        name: name.to_string(),
        crc: crc32fast::Hasher::new(),
        len: 0,
        entry,
    }))
}

/// Entries a zip tool adds beside the content: macOS resource forks and metadata.
fn ignored(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    name.starts_with("__MACOSX/") || base.starts_with("._")
}

/// The longest entry name shown, in characters: a zip name may be 64 KiB.
const MAX_SHOWN: usize = 120;

/// An entry name as error text shows it, like other names (`escape_debug`): control
/// bytes and quotes escaped, cut after [`MAX_SHOWN`] characters.
fn shown(name: &str) -> String {
    let escaped: String = name.escape_debug().collect();
    match escaped.char_indices().nth(MAX_SHOWN) {
        Some((cut, _)) => format!("{}... ({} bytes)", &escaped[..cut], name.len()),
        None => escaped,
    }
}

fn list(names: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s: Vec<String> = names
        .iter()
        .take(SHOWN)
        .map(|n| format!("`{}`", shown(n)))
        .collect();
    if names.len() > SHOWN {
        s.push(format!("and {} more", names.len() - SHOWN));
    }
    s.join(", ")
}

/// The entry's bytes, failing at the end when they are not the size and CRC-32 the
/// archive recorded: a cut or damaged archive is an error, never a short image.
struct Checked {
    inner: Box<dyn Read + Send>,
    name: String,
    crc: crc32fast::Hasher,
    len: u64,
    entry: Entry,
}

impl Read for Checked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.crc.update(&buf[..n]);
            self.len += n as u64;
            if self.len > self.entry.size {
                return Err(self.corrupt(format!(
                    "`{}` holds more than the {} bytes its header records",
                    shown(&self.entry.name),
                    self.entry.size
                )));
            }
            return Ok(n);
        }
        if self.len != self.entry.size {
            return Err(self.corrupt(format!(
                "`{}` ends after {} of its {} bytes",
                shown(&self.entry.name),
                self.len,
                self.entry.size
            )));
        }
        let crc = self.crc.clone().finalize();
        if crc != self.entry.crc32 {
            return Err(self.corrupt(format!(
                "`{}` has CRC-32 {crc:08x}, its header records {:08x}",
                shown(&self.entry.name),
                self.entry.crc32
            )));
        }
        Ok(0)
    }
}

impl Checked {
    fn corrupt(&self, cause: String) -> io::Error {
        ImageError::Corrupt {
            name: self.name.clone(),
            format: "zip",
            cause,
        }
        .into_io()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_names_are_escaped_and_cut_like_other_names() {
        assert_eq!(shown("os.img"), "os.img");
        assert_eq!(shown("a\u{1b}[2Jb\n.img"), "a\\u{1b}[2Jb\\n.img");
        let long = "x".repeat(5000) + ".img";
        let s = shown(&long);
        assert!(s.len() < 200 && s.ends_with("... (5004 bytes)"), "{s}");
        assert_eq!(list(&["\u{7}".into()]), "`\\u{7}`");
    }
}
