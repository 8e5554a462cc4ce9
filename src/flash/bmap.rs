//! Block maps (`bmaptool create`'s `.bmap`): which blocks of an image hold data. Where
//! the flash host has `bmaptool` and the image ships a `.bmap`, `dd::write_with` lets
//! bmaptool write only those blocks (it checks each range's sha256 as it reads them),
//! and verification reads back only those ranges.
//!
//! The bmap is not covered by the image's sha256, so it is not trusted: while the image
//! streams, the controller checks that every byte outside the mapped ranges is zero (a
//! block bmaptool skips must be one the image leaves empty) and hashes the mapped bytes,
//! which the host's read-back of the same ranges must match.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::FlashError;
use super::dd::CHECK;
use crate::transport::{Transport, quote};

/// The largest `.bmap` read: a multi-GiB image's map is a few hundred KiB.
const MAX_BMAP_BYTES: u64 = 16 << 20;

/// A parsed block map: the image's size and its mapped byte ranges, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bmap {
    /// Where it was read (messages only).
    pub path: PathBuf,
    pub image_bytes: u64,
    pub block_bytes: u64,
    /// Mapped byte ranges `[start, end)`, ascending, not overlapping, within the image.
    pub ranges: Vec<(u64, u64)>,
    /// The text parsed: what the flash host's bmaptool gets, not the file read again.
    pub text: String,
}

impl Bmap {
    /// The bytes the ranges cover.
    pub fn mapped_bytes(&self) -> u64 {
        self.ranges.iter().map(|(s, e)| e - s).sum()
    }

    /// The ranges as the host's read-back takes them, one line each: the first block,
    /// the blocks to read and the bytes of them to keep (the image may end mid-block).
    pub fn read_back_lines(&self) -> String {
        let bs = self.block_bytes;
        self.ranges.iter().fold(String::new(), |mut out, (s, e)| {
            let _ = writeln!(out, "{} {} {}", s / bs, (e - s).div_ceil(bs), e - s);
            out
        })
    }
}

/// The `.bmap` shipped beside `image`: `IMAGE.bmap`, else, for a compressed image, the
/// name without its compression suffix plus `.bmap` (`x.img.xz` -> `x.img.bmap`), as
/// bmaptool looks for it. `None` when there is none.
pub fn beside(image: &Path) -> Option<PathBuf> {
    let name = image.file_name()?.to_str()?;
    let mut candidates = vec![format!("{name}.bmap")];
    for ext in [".xz", ".gz", ".zst", ".zip", ".bz2"] {
        if let Some(stem) = name.strip_suffix(ext) {
            candidates.push(format!("{stem}.bmap"));
        }
    }
    // What is there, link or not: `read` refuses anything but a regular file.
    candidates
        .into_iter()
        .map(|c| image.with_file_name(c))
        .find(|p| std::fs::symlink_metadata(p).is_ok_and(|m| !m.is_dir()))
}

/// Reads and parses a `.bmap` file, as the store reads its own: a regular file, no link
/// followed, no FIFO waited on.
pub fn read(path: &Path) -> Result<Bmap, String> {
    use std::io::Read;
    let mut text = String::new();
    let (file, _) = crate::store::open_regular(path)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{}: no such file", path.display()))?;
    file.take(MAX_BMAP_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if text.len() as u64 > MAX_BMAP_BYTES {
        return Err(format!(
            "{}: larger than {MAX_BMAP_BYTES} bytes",
            path.display()
        ));
    }
    parse(&text)
        .map(|mut b| {
            b.path = path.to_path_buf();
            b
        })
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// The text between `<tag>` (attributes allowed) and `</tag>`, from `from`.
fn element<'t>(text: &'t str, tag: &str, from: usize) -> Option<(&'t str, usize)> {
    let open = format!("<{tag}");
    let mut at = from;
    loop {
        let start = at + text[at..].find(&open)?;
        let after = start + open.len();
        // `<Range` must not match `<RangeX`.
        if !matches!(
            text[after..].chars().next(),
            Some('>' | ' ' | '\t' | '\n' | '\r')
        ) {
            at = after;
            continue;
        }
        let body = after + text[after..].find('>')? + 1;
        let close = format!("</{tag}>");
        let end = body + text[body..].find(&close)?;
        return Some((&text[body..end], end + close.len()));
    }
}

fn number(text: &str, tag: &str) -> Result<u64, String> {
    let (v, _) = element(text, tag, 0).ok_or_else(|| format!("no <{tag}>"))?;
    v.trim()
        .parse()
        .map_err(|_| format!("<{tag}> is not a number: {:?}", v.trim()))
}

/// Parses bmap format 1.x or 2.x: `ImageSize`, `BlockSize` and the `BlockMap`'s
/// `<Range>a-b</Range>` or `<Range>a</Range>` (inclusive block numbers).
pub fn parse(text: &str) -> Result<Bmap, String> {
    let (_, _) = element(text, "bmap", 0).ok_or("not a bmap: no <bmap> element")?;
    let image_bytes = number(text, "ImageSize")?;
    let block_bytes = number(text, "BlockSize")?;
    if block_bytes == 0 || block_bytes % 512 != 0 {
        return Err(format!(
            "<BlockSize> {block_bytes} is not a multiple of 512"
        ));
    }
    let (map, _) = element(text, "BlockMap", 0).ok_or("no <BlockMap>")?;
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    let mut at = 0;
    while let Some((body, next)) = element(map, "Range", at) {
        at = next;
        let body = body.trim();
        let (a, b) = body.split_once('-').unwrap_or((body, body));
        let parse = |v: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| format!("a <Range> is not block numbers: {body:?}"))
        };
        let (a, b) = (parse(a)?, parse(b)?);
        let start = a.checked_mul(block_bytes).ok_or("a <Range> overflows")?;
        let end = b
            .checked_add(1)
            .and_then(|b| b.checked_mul(block_bytes))
            .ok_or("a <Range> overflows")?
            .min(image_bytes);
        if b < a || start >= image_bytes {
            return Err(format!("a <Range> lies outside the image: {body:?}"));
        }
        if ranges.last().is_some_and(|(_, e)| *e > start) {
            return Err(format!("<Range>s overlap or are out of order at {body:?}"));
        }
        ranges.push((start, end));
    }
    Ok(Bmap {
        path: PathBuf::new(),
        image_bytes,
        block_bytes,
        ranges,
        text: text.to_string(),
    })
}

/// Follows the image stream against a bmap: hashes the mapped bytes and finds the first
/// non-zero byte outside them.
#[derive(Clone, Debug)]
pub struct Mapped {
    ranges: Vec<(u64, u64)>,
    /// The first range not wholly passed yet.
    next: usize,
    hash: Sha256,
    /// The offset of the first non-zero byte outside the ranges.
    pub stray: Option<u64>,
}

impl Mapped {
    pub fn new(bmap: &Bmap) -> Mapped {
        Mapped {
            ranges: bmap.ranges.clone(),
            next: 0,
            hash: Sha256::new(),
            stray: None,
        }
    }

    /// `data` is the stream's bytes from `offset` on, in order.
    pub fn update(&mut self, mut offset: u64, mut data: &[u8]) {
        while !data.is_empty() {
            while self
                .ranges
                .get(self.next)
                .is_some_and(|(_, e)| *e <= offset)
            {
                self.next += 1;
            }
            let (take, mapped) = match self.ranges.get(self.next) {
                Some((s, e)) if *s <= offset => ((e - offset) as usize, true),
                Some((s, _)) => ((s - offset) as usize, false),
                None => (data.len(), false),
            };
            let take = take.min(data.len());
            let (here, rest) = data.split_at(take);
            if mapped {
                self.hash.update(here);
            } else if self.stray.is_none()
                && let Some(i) = here.iter().position(|b| *b != 0)
            {
                self.stray = Some(offset + i as u64);
            }
            offset += take as u64;
            data = rest;
        }
    }

    /// The sha256 (hex) of the mapped bytes seen.
    pub fn sha256(&self) -> String {
        crate::canonical::hex(&self.hash.clone().finalize())
    }
}

/// With a bmap: whether the host has `bmaptool`; if so, the bmap and its read-back
/// ranges uploaded into a fresh temporary directory there (`mktemp -d`).
pub(super) fn bmap_on_host(
    t: &mut dyn Transport,
    bmap: &Bmap,
    expected_len: Option<u64>,
) -> Result<Option<(Bmap, String)>, FlashError> {
    if let Some(len) = expected_len
        && len != bmap.image_bytes
    {
        return Err(FlashError::Image(format!(
            "the bmap {} describes a {}-byte image, but the image is {len} bytes",
            bmap.path.display(),
            bmap.image_bytes
        )));
    }
    if !t
        .run("command -v bmaptool >/dev/null 2>&1", CHECK)
        .is_ok_and(|o| o.exit.success())
    {
        return Ok(None);
    }
    let host = t.target();
    let host_err = |what: &str, reason: String| FlashError::Host {
        host: host.clone(),
        what: what.to_string(),
        reason,
    };
    let out = t.run("mktemp -d /tmp/benchpipe-bmap.XXXXXXXX", CHECK)?;
    let dir = out.stdout_str().trim().to_string();
    let valid = dir
        .strip_prefix("/tmp/benchpipe-bmap.")
        .is_some_and(|r| r.len() == 8 && r.bytes().all(|b| b.is_ascii_alphanumeric()));
    if !out.exit.success() || !valid {
        return Err(host_err(
            "a temporary directory",
            format!("mktemp gave {dir:?}"),
        ));
    }
    // Sent from memory: no staging copy on the controller, where root would write it.
    let lines = bmap.read_back_lines();
    for (name, bytes) in [
        ("image.bmap", bmap.text.as_bytes()),
        ("ranges", lines.as_bytes()),
    ] {
        let mut err = Vec::new();
        let sent = t.exec_input(
            &format!("cat > {}", quote::sh(&format!("{dir}/{name}"))),
            CHECK,
            &mut &bytes[..],
            &mut std::io::sink(),
            &mut err,
        );
        let failed = match sent {
            Ok(exit) if exit.success() => None,
            Ok(exit) => Some(host_err(
                "sending the bmap",
                format!("{exit}: {}", String::from_utf8_lossy(&err).trim()),
            )),
            Err(e) => Some(e.into()),
        };
        if let Some(e) = failed {
            remove_host_dir(t, &dir);
            return Err(e);
        }
    }
    Ok(Some((bmap.clone(), dir)))
}

/// Removes the temporary directory `bmap_on_host` made (its exact name, checked there).
pub(super) fn remove_host_dir(t: &mut dyn Transport, dir: &str) {
    let _ = t.run(&format!("rm -rf -- {}", quote::sh(dir)), CHECK);
}

/// sha256 of the device's mapped ranges, in order, read on the host past the page cache.
pub(super) fn read_back_mapped(
    t: &mut dyn Transport,
    real: &str,
    bmap: &Bmap,
    dir: &str,
    direct: bool,
) -> Result<String, FlashError> {
    let dev = quote::sh(real);
    let iflag = if direct { " iflag=direct" } else { "" };
    let cmd = format!(
        "blockdev --flushbufs {dev} 2>/dev/null; while read -r s c b; do \
         dd if={dev} bs={} skip=\"$s\" count=\"$c\"{iflag} 2>/dev/null | head -c \"$b\"; \
         done < {} | sha256sum",
        bmap.block_bytes,
        quote::sh(&format!("{dir}/ranges"))
    );
    super::dd::digest_of(t, &cmd, real)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `bmaptool create` (bmap-tools 3.6) wrote for a 64 MiB image holding a fresh
    /// ext4 (`tests/data/bmap/ext4-64m.bmap`).
    const REAL: &str = include_str!("../../tests/data/bmap/ext4-64m.bmap");

    #[test]
    fn a_real_bmap_parses_to_its_ranges() {
        let b = parse(REAL).unwrap();
        assert_eq!(b.image_bytes, 64 << 20);
        assert_eq!(b.block_bytes, 4096);
        assert_eq!(b.ranges.len(), 9);
        assert_eq!(b.ranges[0], (0, 67 * 4096));
        assert_eq!(b.ranges[3], (2048 * 4096, 2049 * 4096), "a single block");
        assert_eq!(b.mapped_bytes(), 1119 * 4096, "its MappedBlocksCount");
        assert!(b.read_back_lines().starts_with("0 67 274432\n68 2 8192\n"));
    }

    #[test]
    fn a_bmap_that_lies_outside_the_image_or_overlaps_is_refused() {
        let doc = |size: u64, ranges: &str| {
            format!(
                "<bmap version=\"2.0\"><ImageSize> {size} </ImageSize><BlockSize> 4096 </BlockSize>\
                 <BlockMap>{ranges}</BlockMap></bmap>"
            )
        };
        assert!(parse(&doc(8192, "<Range> 0-1 </Range>")).is_ok());
        assert!(
            parse(&doc(8192, "<Range> 2 </Range>")).is_err(),
            "past the end"
        );
        assert!(parse(&doc(16384, "<Range> 1-2 </Range><Range> 2 </Range>")).is_err());
        assert!(parse(&doc(8192, "<Range> 1-0 </Range>")).is_err());
        assert!(parse(&doc(8192, "<Range> x </Range>")).is_err());
        assert!(parse("<xml/>").is_err());
        // The last block may be partial: the range ends with the image.
        let b = parse(&doc(5000, "<Range> 0-1 </Range>")).unwrap();
        assert_eq!(b.ranges, [(0, 5000)]);
        assert_eq!(b.read_back_lines(), "0 2 5000\n");
    }

    #[test]
    fn the_mapped_hash_covers_only_the_ranges_and_a_stray_byte_outside_is_found() {
        let b = parse(
            "<bmap><ImageSize>4096</ImageSize><BlockSize>512</BlockSize><BlockMap>\
             <Range>1</Range><Range>3-4</Range></BlockMap></bmap>",
        )
        .unwrap();
        let mut image = vec![0u8; 4096];
        image[512..1024].fill(7);
        image[1536..2560].fill(9);
        let mut whole = Mapped::new(&b);
        whole.update(0, &image);
        // Fed in odd pieces, the same.
        let mut pieces = Mapped::new(&b);
        let mut at = 0;
        for chunk in image.chunks(333) {
            pieces.update(at, chunk);
            at += chunk.len() as u64;
        }
        let mut mapped = image[512..1024].to_vec();
        mapped.extend_from_slice(&image[1536..2560]);
        let want = crate::canonical::hex(&Sha256::digest(&mapped));
        assert_eq!(whole.sha256(), want);
        assert_eq!(pieces.sha256(), want);
        assert_eq!(whole.stray, None);
        image[3000] = 1;
        let mut stray = Mapped::new(&b);
        stray.update(0, &image);
        assert_eq!(stray.stray, Some(3000));
    }

    #[test]
    fn the_bmap_reaches_the_host_through_no_file_root_writes_on_the_controller() {
        let t = "the_bmap_reaches_the_host_through_no_file_root_writes_on_the_controller";
        if !crate::testing::have(t, &["bmaptool"]) {
            return;
        }
        let b = parse(REAL).unwrap();
        // Links at the names the staging copies once had: a victim must not change.
        let dir = std::env::temp_dir().join(format!("bp-bmap-stage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "victim\n").unwrap();
        let base = std::env::temp_dir().join(format!(
            "benchpipe-bmap-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let planted = [base.with_extension("bmap"), base.with_extension("ranges")];
        for p in &planted {
            let _ = std::fs::remove_file(p);
            std::os::unix::fs::symlink(&victim, p).unwrap();
        }
        let mut host = crate::transport::local::Local;
        let got = bmap_on_host(&mut host, &b, None);
        for p in &planted {
            let _ = std::fs::remove_file(p);
        }
        let (_, on_host) = got.unwrap().expect("bmaptool is there");
        let sent = std::fs::read_to_string(format!("{on_host}/image.bmap")).unwrap();
        let ranges = std::fs::read_to_string(format!("{on_host}/ranges")).unwrap();
        remove_host_dir(&mut host, &on_host);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "victim\n");
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(sent, REAL);
        assert_eq!(ranges, b.read_back_lines());
    }
}
