//! The boot partition inside a raw image file: found in its MBR (`mbrman`) or GPT (read
//! here, bounded, CRC-checked), opened as FAT (`fatfs`) through a window of the file
//! that no read or write leaves, and its root directory's files read and written.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;

use super::files::BootFile;

/// The sector size partition tables count in on the images benchpipe flashes.
const SECTOR: u64 = 512;
/// The most GPT entries read: 128 is the standard, a larger table is refused.
const MAX_GPT_ENTRIES: u32 = 1024;
/// The largest GPT entry size accepted (the standard is 128).
const MAX_GPT_ENTRY: u32 = 1024;
/// The most of an existing boot file read back (`cmdline.txt`).
pub const MAX_READ: u64 = 64 * 1024;

/// MBR partition types of FAT filesystems (FAT12, FAT16, FAT32, their LBA forms, EFI).
const MBR_FAT: [u8; 7] = [0x01, 0x04, 0x06, 0x0b, 0x0c, 0x0e, 0xef];
/// GPT type GUIDs, as stored (mixed-endian): EFI System, Microsoft basic data.
const GPT_EFI: [u8; 16] = [
    0x28, 0x73, 0x2a, 0xc1, 0x1f, 0xf8, 0xd2, 0x11, 0xba, 0x4b, 0x00, 0xa0, 0xc9, 0x3e, 0xc9, 0x3b,
];
const GPT_BASIC_DATA: [u8; 16] = [
    0xa2, 0xa0, 0xd0, 0xeb, 0xe5, 0xb9, 0x33, 0x44, 0x87, 0xc0, 0x68, 0xb6, 0xb7, 0x26, 0x99, 0xc7,
];

/// Where the boot partition lies in the image file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    /// 1-based, as `fdisk` numbers it.
    pub number: u32,
    pub start: u64,
    pub len: u64,
    pub table: &'static str,
}

/// A byte range of a file as a file of its own: reads end at its end, writes past it
/// fail, so a damaged filesystem cannot write outside its partition.
pub struct Window<'f> {
    file: &'f File,
    start: u64,
    len: u64,
    pos: u64,
}

impl<'f> Window<'f> {
    pub fn new(file: &'f File, part: &Partition) -> Window<'f> {
        Window {
            file,
            start: part.start,
            len: part.len,
            pos: 0,
        }
    }
}

impl Read for Window<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let n = (buf.len() as u64).min(left) as usize;
        if n == 0 {
            return Ok(0);
        }
        let got = self.file.read_at(&mut buf[..n], self.start + self.pos)?;
        self.pos += got as u64;
        Ok(got)
    }
}

impl Write for Window<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pos + buf.len() as u64 > self.len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a write past the end of the boot partition",
            ));
        }
        let n = self.file.write_at(buf, self.start + self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Seek for Window<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let at = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match at {
            Some(n) if n <= self.len => {
                self.pos = n;
                Ok(n)
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a seek outside the boot partition",
            )),
        }
    }
}

fn read_exact_at(file: &File, at: u64, n: usize) -> io::Result<Vec<u8>> {
    let mut buf = vec![0; n];
    file.read_exact_at(&mut buf, at)?;
    Ok(buf)
}

/// Whether the partition's first sector is a FAT boot sector (jump, 0x55AA, and a FAT
/// bytes-per-sector), before `fatfs` is asked to open it.
fn looks_fat(file: &File, p: &Partition) -> bool {
    let Ok(b) = read_exact_at(file, p.start, 512) else {
        return false;
    };
    let bps = u16::from_le_bytes([b[11], b[12]]);
    matches!(b[0], 0xeb | 0xe9)
        && b[510] == 0x55
        && b[511] == 0xaa
        && matches!(bps, 512 | 1024 | 2048 | 4096)
}

/// The image's FAT boot partition: the first FAT partition of its MBR (a FAT type, or
/// partition 1 holding FAT), or of its GPT (EFI System or basic data holding FAT).
pub fn boot_partition(file: &File, image_len: u64) -> Result<Partition, String> {
    let mbr =
        read_exact_at(file, 0, 512).map_err(|e| format!("cannot read its first sector: {e}"))?;
    if mbr[510] != 0x55 || mbr[511] != 0xaa {
        return Err("it has no partition table (no MBR signature in its first sector)".into());
    }
    let header = mbrman::MBRHeader::read_from(&mut io::Cursor::new(&mbr))
        .map_err(|e| format!("its MBR cannot be read: {e}"))?;
    let entries: Vec<(usize, &mbrman::MBRPartitionEntry)> = header.iter().collect();
    if entries.iter().any(|(_, e)| e.sys == 0xee) {
        return gpt_boot_partition(file, image_len);
    }
    let mut candidates: Vec<Partition> = Vec::new();
    for (i, e) in &entries {
        if !e.is_used() {
            continue;
        }
        let part = Partition {
            number: *i as u32,
            start: u64::from(e.starting_lba) * SECTOR,
            len: u64::from(e.sectors) * SECTOR,
            table: "MBR",
        };
        if MBR_FAT.contains(&e.sys) || *i == 1 {
            candidates.push(part);
        }
    }
    pick(file, image_len, &candidates, "MBR")
}

fn pick(
    file: &File,
    image_len: u64,
    candidates: &[Partition],
    table: &str,
) -> Result<Partition, String> {
    for p in candidates {
        if p.len == 0 || p.start.checked_add(p.len).is_none_or(|end| end > image_len) {
            continue;
        }
        if looks_fat(file, p) {
            return Ok(*p);
        }
    }
    Err(format!(
        "its {table} has no FAT boot partition (a FAT partition, or partition 1 holding FAT, inside the image)"
    ))
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// The GPT at LBA 1, its header's and its entries' CRCs checked, its size bounded.
fn gpt_boot_partition(file: &File, image_len: u64) -> Result<Partition, String> {
    let h = read_exact_at(file, SECTOR, SECTOR as usize)
        .map_err(|e| format!("cannot read its GPT header: {e}"))?;
    if &h[..8] != b"EFI PART" {
        return Err("its protective MBR announces a GPT, but LBA 1 holds no GPT header".into());
    }
    let size = le32(&h, 12) as usize;
    if !(92..=SECTOR as usize).contains(&size) {
        return Err(format!("its GPT header claims {size} bytes"));
    }
    let mut zeroed = h[..size].to_vec();
    zeroed[16..20].fill(0);
    if crc32fast::hash(&zeroed) != le32(&h, 16) {
        return Err("its GPT header's CRC does not match".into());
    }
    let entries_lba = le64(&h, 72);
    let count = le32(&h, 80);
    let entry = le32(&h, 84);
    if count > MAX_GPT_ENTRIES
        || !(128..=MAX_GPT_ENTRY).contains(&entry)
        || !entry.is_multiple_of(128)
    {
        return Err(format!(
            "its GPT claims {count} entries of {entry} bytes (at most {MAX_GPT_ENTRIES} of 128 to {MAX_GPT_ENTRY})"
        ));
    }
    let at = entries_lba
        .checked_mul(SECTOR)
        .filter(|a| *a < image_len)
        .ok_or("its GPT entries lie outside the image")?;
    let table = read_exact_at(file, at, (count * entry) as usize)
        .map_err(|e| format!("cannot read its GPT entries: {e}"))?;
    if crc32fast::hash(&table) != le32(&h, 88) {
        return Err("its GPT entries' CRC does not match".into());
    }
    let mut candidates = Vec::new();
    for (i, e) in table.chunks_exact(entry as usize).enumerate() {
        let kind = &e[..16];
        if kind != GPT_EFI && kind != GPT_BASIC_DATA {
            continue;
        }
        let (first, last) = (le64(e, 32), le64(e, 40));
        if last < first {
            continue;
        }
        let (Some(start), Some(len)) = (
            first.checked_mul(SECTOR),
            (last - first)
                .checked_add(1)
                .and_then(|n| n.checked_mul(SECTOR)),
        ) else {
            continue;
        };
        candidates.push(Partition {
            number: i as u32 + 1,
            start,
            len,
            table: "GPT",
        });
    }
    pick(file, image_len, &candidates, "GPT")
}

type Fs<'f> = fatfs::FileSystem<Window<'f>>;

fn open_fs<'f>(file: &'f File, part: &Partition) -> Result<Fs<'f>, String> {
    fatfs::FileSystem::new(Window::new(file, part), fatfs::FsOptions::new()).map_err(|e| {
        format!(
            "its boot partition ({} partition {}) is not a FAT filesystem fatfs can open: {e}",
            part.table, part.number
        )
    })
}

/// A file of the partition's root directory, at most `MAX_READ` bytes; `None` when
/// there is none.
pub fn read_file(file: &File, part: &Partition, name: &str) -> Result<Option<Vec<u8>>, String> {
    let fs = open_fs(file, part)?;
    let root = fs.root_dir();
    let mut f = match root.open_file(name) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot open {name} on its boot partition: {e}")),
    };
    let mut out = Vec::new();
    (&mut f)
        .take(MAX_READ + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot read {name} on its boot partition: {e}"))?;
    if out.len() as u64 > MAX_READ {
        return Err(format!(
            "{name} on its boot partition is larger than {MAX_READ} bytes"
        ));
    }
    Ok(Some(out))
}

/// Writes `files` into the partition's root directory, each replacing any file of that
/// name, after checking they fit: a partition too full is an error before anything is
/// written.
pub fn write_files(file: &File, part: &Partition, files: &[BootFile]) -> Result<(), String> {
    let fs = open_fs(file, part)?;
    let stats = fs
        .stats()
        .map_err(|e| format!("cannot read its boot partition's free space: {e}"))?;
    let cluster = u64::from(stats.cluster_size());
    let free = u64::from(stats.free_clusters()) * cluster;
    // Whole clusters per file, and one more for a directory entry's growth; files
    // replaced give their clusters back only once truncated, so none is counted.
    let need: u64 = files
        .iter()
        .map(|f| (f.bytes.len() as u64).div_ceil(cluster).max(1) * cluster)
        .sum::<u64>()
        + cluster;
    if need > free {
        return Err(format!(
            "its boot partition is too full: {need} bytes needed for {}, {free} free",
            files.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
        ));
    }
    let root = fs.root_dir();
    for f in files {
        let mut out = root
            .create_file(f.name)
            .map_err(|e| format!("cannot create {} on its boot partition: {e}", f.name))?;
        out.truncate()
            .and_then(|()| out.write_all(&f.bytes))
            .and_then(|()| out.flush())
            .map_err(|e| format!("cannot write {} on its boot partition: {e}", f.name))?;
    }
    drop(root);
    fs.unmount()
        .map_err(|e| format!("cannot finish writing its boot partition: {e}"))
}
