//! What an image file is (raw, xz, gzip, zstd or zip), from its first bytes, checked
//! against what its name says: a name and bytes that disagree are refused, not guessed.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// An uncompressed disk image: written as it is.
    Raw,
    Xz,
    Gzip,
    Zstd,
    /// A zip archive holding exactly one `.img`.
    Zip,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Raw => "raw",
            Format::Xz => "xz",
            Format::Gzip => "gzip",
            Format::Zstd => "zstd",
            Format::Zip => "zip",
        }
    }
}

/// How many leading bytes [`sniff`] looks at.
pub const HEAD: usize = 8;

/// The format the first bytes show. `Err` names a compression benchpipe recognises but
/// does not read; anything without a known magic is raw.
pub fn sniff(head: &[u8]) -> Result<Format, &'static str> {
    const MAGIC: [(&[u8], Result<Format, &str>); 8] = [
        (b"\xFD7zXZ\x00", Ok(Format::Xz)),
        (b"\x1F\x8B", Ok(Format::Gzip)),
        (b"\x28\xB5\x2F\xFD", Ok(Format::Zstd)),
        (b"PK\x03\x04", Ok(Format::Zip)),
        // An empty archive, or one whose first entry is elsewhere: still a zip.
        (b"PK\x05\x06", Ok(Format::Zip)),
        (b"BZh", Err("bzip2")),
        (b"\x04\x22\x4D\x18", Err("lz4")),
        (b"7z\xBC\xAF\x27\x1C", Err("7z")),
    ];
    for (magic, format) in MAGIC {
        if head.starts_with(magic) {
            return format;
        }
    }
    Ok(Format::Raw)
}

/// The format the file name's suffix claims, if it claims one. `origin` is a path or a
/// URL (whose query and fragment are ignored).
pub fn from_name(origin: &str) -> Option<Format> {
    let path = origin.split(['?', '#']).next().unwrap_or(origin);
    let file = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    let by_suffix: [(&str, Format); 8] = [
        (".img", Format::Raw),
        (".iso", Format::Raw),
        (".raw", Format::Raw),
        (".xz", Format::Xz),
        (".gz", Format::Gzip),
        (".zst", Format::Zstd),
        (".zstd", Format::Zstd),
        (".zip", Format::Zip),
    ];
    by_suffix
        .iter()
        .find(|(s, _)| file.ends_with(s))
        .map(|(_, f)| *f)
}

/// The format of an image whose name is `origin` and whose file starts with `head`:
/// the bytes decide; a name that claims another format is refused, since flashing a
/// compressed file raw (or the reverse) writes a disk that never boots.
pub fn detect(origin: &str, head: &[u8]) -> Result<Format, String> {
    if head.is_empty() {
        return Err("the file is empty".into());
    }
    let by_bytes = sniff(head).map_err(|other| {
        format!("the file is {other}-compressed; supported are .img, .img.xz, .img.gz, .img.zst and .zip")
    })?;
    match from_name(origin) {
        Some(named) if named != by_bytes => Err(match by_bytes {
            Format::Raw => format!(
                "the name says {} but the data is not {} (it starts with {})",
                named.as_str(),
                named.as_str(),
                hex(head)
            ),
            _ => format!(
                "the name says {} but the data is {}",
                if named == Format::Raw {
                    "raw (.img)"
                } else {
                    named.as_str()
                },
                by_bytes.as_str()
            ),
        }),
        _ => Ok(by_bytes),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take(HEAD)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_magic_bytes_decide_the_format() {
        assert_eq!(sniff(b"\xFD7zXZ\x00\x00\x04"), Ok(Format::Xz));
        assert_eq!(sniff(b"\x1F\x8B\x08\x00"), Ok(Format::Gzip));
        assert_eq!(sniff(b"\x28\xB5\x2F\xFD\x04"), Ok(Format::Zstd));
        assert_eq!(sniff(b"PK\x03\x04\x14\x00"), Ok(Format::Zip));
        assert_eq!(sniff(b"PK\x05\x06"), Ok(Format::Zip));
        // An MBR's boot code, an ext4 image's zeroed first block: raw.
        assert_eq!(sniff(b"\xFA\x31\xC0\x8E"), Ok(Format::Raw));
        assert_eq!(sniff(&[0u8; 8]), Ok(Format::Raw));
        assert_eq!(sniff(b"BZh91AY&"), Err("bzip2"));
    }

    #[test]
    fn the_name_is_read_from_a_path_or_a_url_without_its_query() {
        assert_eq!(from_name("/srv/raspios.img.xz"), Some(Format::Xz));
        assert_eq!(
            from_name("https://h/x/raspios.IMG.GZ?download=1#top"),
            Some(Format::Gzip)
        );
        assert_eq!(from_name("file:///srv/a.img.zst"), Some(Format::Zstd));
        assert_eq!(from_name("a.img"), Some(Format::Raw));
        assert_eq!(from_name("https://h/archive.zip"), Some(Format::Zip));
        assert_eq!(from_name("https://h/download?id=3"), None);
        assert_eq!(from_name("https://h/xz/image"), None);
    }

    #[test]
    fn a_name_and_bytes_that_disagree_are_refused_not_guessed() {
        let xz = b"\xFD7zXZ\x00\x00\x04";
        assert_eq!(detect("a.img.xz", xz), Ok(Format::Xz));
        // No suffix: the bytes alone decide.
        assert_eq!(detect("https://h/download?id=3", xz), Ok(Format::Xz));
        let e = detect("a.img", xz).unwrap_err();
        assert!(e.contains("raw (.img)") && e.contains("data is xz"), "{e}");
        let e = detect("a.img.gz", xz).unwrap_err();
        assert!(e.contains("name says gzip but the data is xz"), "{e}");
        let e = detect("a.img.xz", &[0u8; 8]).unwrap_err();
        assert!(e.contains("not xz") && e.contains("00 00"), "{e}");
        let e = detect("a.img.bz2", b"BZh91AY&").unwrap_err();
        assert!(
            e.contains("bzip2-compressed") && e.contains(".img.zst"),
            "{e}"
        );
        assert_eq!(detect("a.img", b"").unwrap_err(), "the file is empty");
    }
}
