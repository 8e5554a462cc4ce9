//! A lab board's flashed boot disk read without mounting anything: its partition table
//! (MBR or GPT), named files of its FAT boot partition (the `fatfs` crate over a
//! read-only, bounded window of the device) and of its ext4 root partition (`debugfs`,
//! which resolves paths inside the image only). Every read is bounded.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use crate::transport::local::Local;
use crate::transport::{Transport, quote};

pub const SECTOR: u64 = 512;
/// The part of the disk the partition table must lie in (GPT entries included), and
/// the part that, all zero, means nothing was ever flashed.
pub const HEAD: usize = 1 << 20;
/// What reading the FAT partition may read from the device in all (a cyclic cluster
/// chain in a hostile image ends here).
const FAT_READ_BUDGET: u64 = 64 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Fat,
    Linux,
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// 1-based, as in the table.
    pub number: u32,
    pub kind: Kind,
    pub offset: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Table {
    /// The first MiB is all zero: nothing was ever flashed (the disk `lab up` made).
    Blank,
    Mbr(Vec<Partition>),
    Gpt(Vec<Partition>),
}

impl Table {
    pub fn partitions(&self) -> &[Partition] {
        match self {
            Table::Blank => &[],
            Table::Mbr(p) | Table::Gpt(p) => p,
        }
    }

    /// The boot partition: the first FAT one.
    pub fn boot(&self) -> Option<Partition> {
        self.partitions()
            .iter()
            .copied()
            .find(|p| p.kind == Kind::Fat)
    }

    /// The root partition: the first Linux one.
    pub fn root(&self) -> Option<Partition> {
        self.partitions()
            .iter()
            .copied()
            .find(|p| p.kind == Kind::Linux)
    }
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | (u64::from(u32_at(b, at + 4)) << 32)
}

/// A GPT type GUID in its on-disk (mixed-endian) bytes, from its text form.
fn guid(text: &str) -> [u8; 16] {
    let hex: Vec<u8> = text
        .bytes()
        .filter(|c| *c != b'-')
        .collect::<Vec<u8>>()
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap_or("00"), 16).unwrap_or(0))
        .collect();
    let mut g = [0u8; 16];
    let order = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
    for (i, &from) in order.iter().enumerate() {
        g[i] = hex.get(from).copied().unwrap_or(0);
    }
    g
}

const GPT_FAT: [&str; 2] = [
    "C12A7328-F81F-11D2-BA4B-00A0C93EC93B", // EFI system
    "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7", // basic data (FAT)
];
const GPT_LINUX: [&str; 3] = [
    "0FC63DAF-8483-4772-8E79-3D69D8477DE4", // Linux filesystem
    "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709", // root (x86-64)
    "B921B045-1DF0-41C3-AF44-4C6F280D3FAE", // root (aarch64)
];

/// The partition table in `head` (the disk's first `HEAD` bytes) of a disk of
/// `disk_bytes`; an error says why the disk holds none this lab boots.
pub fn table(head: &[u8], disk_bytes: u64) -> Result<Table, String> {
    if head.iter().all(|b| *b == 0) {
        return Ok(Table::Blank);
    }
    if head.len() < 2 * SECTOR as usize || head[510..512] != [0x55, 0xAA] {
        return Err("the boot disk holds no partition table (no MBR signature)".into());
    }
    let within = |offset: u64, bytes: u64| {
        bytes > 0
            && offset
                .checked_add(bytes)
                .is_some_and(|end| end <= disk_bytes)
    };
    let entries: Vec<&[u8]> = (0..4).map(|i| &head[446 + 16 * i..462 + 16 * i]).collect();
    if entries.iter().any(|e| e[4] == 0xEE) {
        return gpt(head, disk_bytes);
    }
    let mut parts = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let kind = match e[4] {
            0 => continue,
            0x01 | 0x04 | 0x06 | 0x0b | 0x0c | 0x0e | 0xef => Kind::Fat,
            0x83 => Kind::Linux,
            _ => Kind::Other,
        };
        let offset = u64::from(u32_at(e, 8)) * SECTOR;
        let bytes = u64::from(u32_at(e, 12)) * SECTOR;
        if !within(offset, bytes) || offset == 0 {
            return Err(format!(
                "MBR partition {} lies outside the {disk_bytes}-byte boot disk",
                i + 1
            ));
        }
        parts.push(Partition {
            number: i as u32 + 1,
            kind,
            offset,
            bytes,
        });
    }
    Ok(Table::Mbr(parts))
}

fn gpt(head: &[u8], disk_bytes: u64) -> Result<Table, String> {
    let h = &head[SECTOR as usize..2 * SECTOR as usize];
    if &h[0..8] != b"EFI PART" {
        return Err("a protective MBR without a GPT header".into());
    }
    let entries_lba = u64_at(h, 72);
    let count = u32_at(h, 80);
    let size = u32_at(h, 84);
    if !(128..=1024).contains(&size) || !size.is_multiple_of(8) || count > 256 {
        return Err(format!(
            "a GPT header with {count} entries of {size} bytes, which no partitioner writes"
        ));
    }
    let start = entries_lba.saturating_mul(SECTOR);
    let end = start.saturating_add(u64::from(count) * u64::from(size));
    if entries_lba < 2 || end > head.len() as u64 {
        return Err("GPT entries outside the disk's first MiB".into());
    }
    let fat: Vec<[u8; 16]> = GPT_FAT.iter().map(|g| guid(g)).collect();
    let linux: Vec<[u8; 16]> = GPT_LINUX.iter().map(|g| guid(g)).collect();
    let mut parts = Vec::new();
    for i in 0..count as usize {
        let e = &head[start as usize + i * size as usize..][..size as usize];
        let t: [u8; 16] = e[0..16].try_into().unwrap_or([0; 16]);
        if t == [0; 16] {
            continue;
        }
        let kind = if fat.contains(&t) {
            Kind::Fat
        } else if linux.contains(&t) {
            Kind::Linux
        } else {
            Kind::Other
        };
        let (first, last) = (u64_at(e, 32), u64_at(e, 40));
        let bytes = last
            .checked_sub(first)
            .and_then(|n| n.checked_add(1))
            .and_then(|n| n.checked_mul(SECTOR));
        let offset = first.checked_mul(SECTOR);
        let (Some(offset), Some(bytes)) = (offset, bytes) else {
            return Err(format!("GPT partition {} has no valid extent", i + 1));
        };
        if offset == 0 || offset.checked_add(bytes).is_none_or(|end| end > disk_bytes) {
            return Err(format!(
                "GPT partition {} lies outside the {disk_bytes}-byte boot disk",
                i + 1
            ));
        }
        parts.push(Partition {
            number: i as u32 + 1,
            kind,
            offset,
            bytes,
        });
    }
    Ok(Table::Gpt(parts))
}

/// The disk's first `HEAD` bytes (fewer on a smaller disk) and its size.
pub fn head(device: &Path) -> io::Result<(Vec<u8>, u64)> {
    let mut f = File::open(device)?;
    let bytes = f.seek(SeekFrom::End(0))?;
    let mut head = vec![0u8; HEAD.min(bytes as usize)];
    f.read_exact_at(&mut head, 0)?;
    Ok((head, bytes))
}

/// A partition of the device as a disk of its own, for `fatfs`: reads stay inside it
/// and within a budget, and nothing is ever written.
struct Window {
    file: File,
    base: u64,
    len: u64,
    pos: u64,
    budget: u64,
}

impl Read for Window {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let n = (buf.len() as u64).min(left).min(1 << 20) as usize;
        if n == 0 {
            return Ok(0);
        }
        if self.budget < n as u64 {
            return Err(io::Error::other(
                "read more of the boot partition than any sound FAT needs",
            ));
        }
        let got = self.file.read_at(&mut buf[..n], self.base + self.pos)?;
        self.pos += got as u64;
        self.budget -= got as u64;
        Ok(got)
    }
}

impl Write for Window {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the lab only reads a flashed boot partition",
        ))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for Window {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let at = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
        };
        match at {
            Some(n) if n <= self.len => {
                self.pos = n;
                Ok(n)
            }
            _ => Err(io::Error::other("seek outside the boot partition")),
        }
    }
}

/// The FAT boot partition, opened read-only.
pub struct Fat(fatfs::FileSystem<Window>);

impl Fat {
    pub fn open(device: &Path, part: &Partition) -> Result<Fat, String> {
        let file = File::open(device).map_err(|e| format!("{}: {e}", device.display()))?;
        let window = Window {
            file,
            base: part.offset,
            len: part.bytes,
            pos: 0,
            budget: FAT_READ_BUDGET,
        };
        // fatfs trusts its input in places: a panic on a hostile image is a refusal.
        let opened = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            fatfs::FileSystem::new(window, fatfs::FsOptions::new())
        }));
        match opened {
            Ok(Ok(fs)) => Ok(Fat(fs)),
            Ok(Err(e)) => Err(format!(
                "partition {} is no FAT filesystem the lab reads: {e}",
                part.number
            )),
            Err(_) => Err(format!(
                "partition {} is a FAT filesystem the lab cannot read",
                part.number
            )),
        }
    }

    /// The file `name` in the partition's top directory (any case, as FAT names are):
    /// `Ok(None)` when there is none, an error when it is larger than `limit` or
    /// unreadable. `name` is one plain name, never a path.
    pub fn read(&self, name: &str, limit: u64) -> Result<Option<Vec<u8>>, String> {
        if name.is_empty() || name.contains(['/', '\\']) || name.len() > 255 {
            return Err(format!("{name:?} is not a file name on the boot partition"));
        }
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let root = self.0.root_dir();
            let mut found = None;
            for entry in root.iter().take(4096) {
                let entry = entry?;
                if entry.is_file() && entry.file_name().eq_ignore_ascii_case(name) {
                    found = Some(entry);
                    break;
                }
            }
            let Some(entry) = found else {
                return Ok(None);
            };
            if entry.len() > limit {
                return Ok(Some(Err(entry.len())));
            }
            let mut bytes = Vec::new();
            entry.to_file().take(limit + 1).read_to_end(&mut bytes)?;
            Ok::<_, io::Error>(Some(Ok(bytes)))
        }));
        match read {
            Ok(Ok(None)) => Ok(None),
            Ok(Ok(Some(Ok(bytes)))) if bytes.len() as u64 <= limit => Ok(Some(bytes)),
            Ok(Ok(Some(Ok(_)))) => Err(format!("{name} is larger than {limit} bytes")),
            Ok(Ok(Some(Err(len)))) => Err(format!(
                "{name} holds {len} bytes, more than the {limit} the lab reads"
            )),
            Ok(Err(e)) => Err(format!("{name}: {e}")),
            Err(_) => Err(format!("{name}: the FAT filesystem is damaged")),
        }
    }
}

/// The ext4 root partition's UUID from its superblock, `None` when it holds no ext4.
pub fn ext4_uuid(device: &Path, part: &Partition) -> Option<String> {
    let f = File::open(device).ok()?;
    let mut sb = [0u8; 1024];
    f.read_exact_at(&mut sb, part.offset.checked_add(1024)?)
        .ok()?;
    if sb[0x38..0x3a] != [0x53, 0xEF] {
        return None;
    }
    Some(sb[0x68..0x78].iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    }))
}

/// The regular file `path` (absolute, inside the image) of the ext4 root partition,
/// read with debugfs (no mount; symbolic links are never followed out of the image):
/// `Ok(None)` when it is missing or not a regular file.
pub fn ext4_file(
    device: &str,
    part: &Partition,
    path: &str,
    limit: u64,
) -> Result<Option<Vec<u8>>, String> {
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    let dir = if dir.is_empty() { "/" } else { dir };
    let spec = format!("{device}?offset={}", part.offset);
    let run = |request: String| {
        let line = format!(
            "debugfs -c -R {} {} 2>/dev/null",
            quote::sh(&request),
            quote::sh(&spec)
        );
        Local::new()
            .run(&line, Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())
    };
    // `ls -p`: `/inode/mode/uid/gid/name/size/` a line; a name holds no '/'.
    let listing = run(format!("ls -p {dir}"))?;
    let entry = listing.stdout_str().lines().find_map(|l| {
        let f: Vec<&str> = l.split('/').collect();
        (f.len() == 8 && f[5] == name).then(|| (f[2].to_string(), f[6].to_string()))
    });
    let Some((mode, size)) = entry else {
        return Ok(None);
    };
    if !mode.starts_with("100") {
        return Ok(None);
    }
    let size: u64 = size.parse().map_err(|_| format!("{path}: no size"))?;
    if size > limit {
        return Err(format!(
            "{path} holds {size} bytes, more than the {limit} the lab reads"
        ));
    }
    let out = run(format!("cat {path}"))?;
    if out.stdout.len() as u64 > limit {
        return Err(format!("{path} is larger than {limit} bytes"));
    }
    Ok(Some(out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mbr(entries: &[(u8, u32, u32)]) -> Vec<u8> {
        let mut d = vec![0u8; HEAD];
        for (i, (t, start, len)) in entries.iter().enumerate() {
            let e = 446 + 16 * i;
            d[e + 4] = *t;
            d[e + 8..e + 12].copy_from_slice(&start.to_le_bytes());
            d[e + 12..e + 16].copy_from_slice(&len.to_le_bytes());
        }
        d[510] = 0x55;
        d[511] = 0xAA;
        d
    }

    #[test]
    fn an_mbr_gives_the_fat_boot_and_linux_root_partitions() {
        let d = mbr(&[(0x0c, 2048, 4096), (0x83, 6144, 10240)]);
        let t = table(&d, 8 << 20).unwrap();
        assert_eq!(
            t.boot(),
            Some(Partition {
                number: 1,
                kind: Kind::Fat,
                offset: 1 << 20,
                bytes: 2 << 20
            })
        );
        assert_eq!(t.root().unwrap().offset, 3 << 20);
        assert_eq!(table(&vec![0u8; HEAD], 8 << 20).unwrap(), Table::Blank);
    }

    #[test]
    fn a_partition_beyond_the_disk_or_no_signature_is_refused() {
        let d = mbr(&[(0x0c, 2048, u32::MAX)]);
        assert!(table(&d, 8 << 20).unwrap_err().contains("outside"));
        let mut d = mbr(&[(0x0c, 2048, 4096)]);
        d[511] = 0;
        assert!(
            table(&d, 8 << 20)
                .unwrap_err()
                .contains("no partition table")
        );
        // A whole-disk filesystem (the old lab image): no table.
        let mut d = vec![0u8; HEAD];
        d[1024 + 0x38] = 0x53;
        assert!(table(&d, 8 << 20).is_err());
    }

    #[test]
    fn a_gpt_gives_its_partitions_by_type_guid() {
        let mut d = mbr(&[(0xEE, 1, u32::MAX)]);
        let h = SECTOR as usize;
        d[h..h + 8].copy_from_slice(b"EFI PART");
        d[h + 72..h + 80].copy_from_slice(&2u64.to_le_bytes());
        d[h + 80..h + 84].copy_from_slice(&128u32.to_le_bytes());
        d[h + 84..h + 88].copy_from_slice(&128u32.to_le_bytes());
        let put = |d: &mut Vec<u8>, i: usize, g: &str, first: u64, last: u64| {
            let e = 1024 + 128 * i;
            d[e..e + 16].copy_from_slice(&guid(g));
            d[e + 32..e + 40].copy_from_slice(&first.to_le_bytes());
            d[e + 40..e + 48].copy_from_slice(&last.to_le_bytes());
        };
        put(&mut d, 0, GPT_FAT[1], 2048, 6143);
        put(&mut d, 1, GPT_LINUX[0], 6144, 16383);
        let t = table(&d, 8 << 20).unwrap();
        assert!(matches!(t, Table::Gpt(_)));
        assert_eq!(t.boot().unwrap().bytes, 2 << 20);
        assert_eq!(t.root().unwrap().number, 2);
        // The EFI system partition's GUID as sgdisk writes it (type EF00).
        assert_eq!(
            guid(GPT_FAT[0])[..4],
            [0x28, 0x73, 0x2a, 0xc1],
            "mixed-endian"
        );
        let mut bad = d.clone();
        bad[h + 84..h + 88].copy_from_slice(&7u32.to_le_bytes());
        assert!(table(&bad, 8 << 20).is_err());
    }
}
