//! Small OS images for the lab, laid out as a Raspberry Pi's: an MBR, partition 1 a FAT
//! boot partition (mkfs.vfat, empty: no first-boot declaration, so a lab board that
//! boots it keeps SSH off until a preparation writes one), partition 2 a real ext4 root
//! (mkfs.ext4 -d) holding `/etc/os-release` and the lab's boot markers; optionally
//! compressed.
//!
//! The same spec gives the same bytes: the disk signature, FAT volume id, ext4 UUID and
//! hash seed derive from the spec, and mkfs's clocks and every file's times are pinned,
//! so a scenario can declare the image's sha256.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::{MARKERS, fail, io};
use crate::error::Error;
use crate::transport::local::Local;
use crate::transport::{Transport, quote};

/// What goes into an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSpec {
    /// os-release `ID`, `VERSION_ID` and `PRETTY_NAME`.
    pub id: String,
    pub version_id: String,
    /// The uncompressed image's length: the root partition takes what the partition
    /// table and the boot partition leave.
    pub bytes: u64,
    /// Firstboot makes a new SSH host key (see `lab::power`).
    pub new_host_key: bool,
    /// The image never boots on a lab board.
    pub no_boot: bool,
}

impl ImageSpec {
    pub fn new(id: &str, version_id: &str) -> ImageSpec {
        ImageSpec {
            id: id.into(),
            version_id: version_id.into(),
            bytes: 8 << 20,
            new_host_key: false,
            no_boot: false,
        }
    }

    fn os_release(&self) -> String {
        format!(
            "PRETTY_NAME=\"benchpipe lab image {id} {v}\"\nID={id}\nVERSION_ID=\"{v}\"\n",
            id = self.id,
            v = self.version_id
        )
    }

    /// A UUID-shaped digest of the spec: every distinct image gets its own UUID.
    fn uuid(&self) -> String {
        let h = Sha256::digest(format!("{self:?}").as_bytes());
        let x: String = h.iter().take(16).fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        });
        format!(
            "{}-{}-4{}-8{}-{}",
            &x[0..8],
            &x[8..12],
            &x[13..16],
            &x[17..20],
            &x[20..32]
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Xz,
    Gz,
    Zstd,
}

impl Compression {
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::None => ".img",
            Compression::Xz => ".img.xz",
            Compression::Gz => ".img.gz",
            Compression::Zstd => ".img.zst",
        }
    }

    fn command(self) -> Option<&'static str> {
        match self {
            Compression::None => None,
            Compression::Xz => Some("xz -T1 -6 -c"),
            Compression::Gz => Some("gzip -n -6 -c"),
            Compression::Zstd => Some("zstd -q -3 -c"),
        }
    }
}

fn sh(command: &str) -> Result<(), Error> {
    let out = Local::new().run(command, Some(Duration::from_secs(300)))?;
    if !out.exit.success() {
        return Err(fail(format!(
            "`{command}` failed ({}): {}",
            out.exit,
            out.stderr_str().trim()
        )));
    }
    Ok(())
}

/// Where the boot partition starts (sector 2048, as partitioners align it) and its size.
pub const BOOT_OFFSET: u64 = 1 << 20;
pub const BOOT_BYTES: u64 = 2 << 20;
/// Where the root partition starts; it runs to the image's end.
pub const ROOT_OFFSET: u64 = BOOT_OFFSET + BOOT_BYTES;

/// The MBR: partition 1 FAT32-LBA (0x0c, as Raspberry Pi OS writes it) over the boot
/// partition, partition 2 Linux (0x83) over the rest, with `signature`.
fn mbr(total: u64, signature: [u8; 4]) -> [u8; 512] {
    let mut m = [0u8; 512];
    m[440..444].copy_from_slice(&signature);
    let parts = [
        (0x0cu8, BOOT_OFFSET, BOOT_BYTES),
        (0x83, ROOT_OFFSET, total - ROOT_OFFSET),
    ];
    for (i, (kind, offset, bytes)) in parts.iter().enumerate() {
        let e = 446 + 16 * i;
        // CHS fields say "use the LBA ones", as for any disk past 8 GB.
        m[e + 1..e + 4].copy_from_slice(&[0xfe, 0xff, 0xff]);
        m[e + 4] = *kind;
        m[e + 5..e + 8].copy_from_slice(&[0xfe, 0xff, 0xff]);
        m[e + 8..e + 12].copy_from_slice(&((offset / 512) as u32).to_le_bytes());
        m[e + 12..e + 16].copy_from_slice(&((bytes / 512) as u32).to_le_bytes());
    }
    m[510] = 0x55;
    m[511] = 0xaa;
    m
}

/// Builds `dir/NAME.img` (then compressed to `NAME.img.xz` etc., the plain file
/// removed) and returns the path. Needs mkfs.vfat (dosfstools), mkfs.ext4 (e2fsprogs
/// 1.43+ for `-d`) and the compressor; no root.
pub fn build(
    dir: &Path,
    name: &str,
    spec: &ImageSpec,
    compression: Compression,
) -> Result<PathBuf, Error> {
    if spec.bytes < ROOT_OFFSET + (1 << 20)
        || !spec.bytes.is_multiple_of(4096)
        || spec.bytes > 2 << 40
    {
        return Err(fail(format!(
            "an image is at least 4 MiB and whole 4 KiB blocks, not {} bytes",
            spec.bytes
        )));
    }
    let plain = |v: &str| {
        !v.is_empty()
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    };
    if !plain(&spec.id) || !plain(&spec.version_id) || !plain(name) {
        return Err(fail(format!(
            "image name, ID and VERSION_ID are a-z, A-Z, 0-9, '.', '_' and '-' (got {name:?}, {:?}, {:?})",
            spec.id, spec.version_id
        )));
    }
    fs::create_dir_all(dir).map_err(io(dir))?;
    let staging = dir.join(format!(".{name}.tree"));
    let _ = fs::remove_dir_all(&staging);
    let etc = staging.join("etc");
    fs::create_dir_all(staging.join(MARKERS)).map_err(io(&staging))?;
    fs::write(etc.join("os-release"), spec.os_release()).map_err(io(&etc))?;
    if spec.new_host_key {
        fs::write(staging.join(MARKERS).join("new-host-key"), "").map_err(io(&staging))?;
    }
    if spec.no_boot {
        fs::write(staging.join(MARKERS).join("no-boot"), "").map_err(io(&staging))?;
    }
    let img = dir.join(format!("{name}.img"));
    let _ = fs::remove_file(&img);
    let root = dir.join(format!(".{name}.root"));
    let boot = dir.join(format!(".{name}.boot"));
    let _ = fs::remove_file(&root);
    let _ = fs::remove_file(&boot);
    let made = root_fs(dir, name, spec, &staging, &root)
        .and_then(|()| boot_fs(spec, &boot))
        .and_then(|()| assemble(&img, spec, &boot, &root));
    let _ = fs::remove_dir_all(&staging);
    let _ = fs::remove_file(&root);
    let _ = fs::remove_file(&boot);
    made?;
    compress(&img, compression)
}

/// Compresses the plain image `img` (`NAME.img`) to `NAME.img.xz` etc. beside it, the
/// plain file removed, and returns the path; `Compression::None` keeps `img` as it is.
pub fn compress(img: &Path, compression: Compression) -> Result<PathBuf, Error> {
    let Some(command) = compression.command() else {
        return Ok(img.to_path_buf());
    };
    let out = img.with_file_name(format!(
        "{}{}",
        img.file_stem().unwrap_or_default().to_string_lossy(),
        compression.suffix()
    ));
    sh(&format!(
        "{command} {} > {}",
        quote::sh(&img.to_string_lossy()),
        quote::sh(&out.to_string_lossy())
    ))?;
    fs::remove_file(img).map_err(io(img))?;
    Ok(out)
}

/// The ext4 root partition's filesystem in `file`, from `staging`.
fn root_fs(
    dir: &Path,
    name: &str,
    spec: &ImageSpec,
    staging: &Path,
    file: &Path,
) -> Result<(), Error> {
    let uuid = spec.uuid();
    let st = quote::sh(&staging.to_string_lossy());
    let im = quote::sh(&file.to_string_lossy());
    // Pinned times (files and mke2fs's clock), UUID and hash seed: same spec, same bytes.
    sh(&format!(
        "find {st} -exec touch -h -d @1700000000 {{}} + && \
         E2FSPROGS_FAKE_TIME=1700000000 mkfs.ext4 -q -F -b 4096 -L bp-lab-root \
         -U {uuid} -E hash_seed={uuid},root_owner=0:0 -d {st} {im} {}k",
        (spec.bytes - ROOT_OFFSET) / 1024
    ))?;
    // mke2fs copies each file's ctime, which nobody can set; debugfs pins it after.
    let mut cmds = String::from("sif / ctime @1700000000\nsif /lost+found ctime @1700000000\n");
    let mut dirs = vec![staging.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in fs::read_dir(&d).map_err(io(&d))?.flatten() {
            let p = e.path();
            if let Ok(rel) = p.strip_prefix(staging) {
                let _ = writeln!(cmds, "sif /{} ctime @1700000000", rel.display());
            }
            if p.is_dir() {
                dirs.push(p);
            }
        }
    }
    let script = dir.join(format!(".{name}.debugfs"));
    fs::write(&script, cmds).map_err(io(&script))?;
    let pinned = sh(&format!(
        "E2FSPROGS_FAKE_TIME=1700000000 debugfs -w -f {} {im} >/dev/null",
        quote::sh(&script.to_string_lossy())
    ));
    let _ = fs::remove_file(&script);
    pinned
}

/// The empty FAT boot partition's filesystem in `file`: its volume id from the spec,
/// its times pinned (`--invariant`).
fn boot_fs(spec: &ImageSpec, file: &Path) -> Result<(), Error> {
    let volume_id = &spec.uuid()[..8];
    sh(&format!(
        "mkfs.vfat --invariant -i {volume_id} -n BOOT -C {} {} >/dev/null",
        quote::sh(&file.to_string_lossy()),
        BOOT_BYTES / 1024
    ))
}

/// The image: the MBR, then each partition's filesystem at its offset.
fn assemble(img: &Path, spec: &ImageSpec, boot: &Path, root: &Path) -> Result<(), Error> {
    use std::io::{Seek, SeekFrom, Write};
    let digest = Sha256::digest(format!("{spec:?}").as_bytes());
    let signature = [digest[16], digest[17], digest[18], digest[19]];
    let mut out = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(img)
        .map_err(io(img))?;
    out.set_len(spec.bytes).map_err(io(img))?;
    out.write_all(&mbr(spec.bytes, signature))
        .map_err(io(img))?;
    for (file, offset, bytes) in [
        (boot, BOOT_OFFSET, BOOT_BYTES),
        (root, ROOT_OFFSET, spec.bytes - ROOT_OFFSET),
    ] {
        let mut f = fs::File::open(file).map_err(io(file))?;
        let len = f.metadata().map_err(io(file))?.len();
        if len != bytes {
            return Err(fail(format!(
                "{} is {len} bytes, not the partition's {bytes}",
                file.display()
            )));
        }
        out.seek(SeekFrom::Start(offset)).map_err(io(img))?;
        std::io::copy(&mut f, &mut out).map_err(io(img))?;
    }
    out.sync_all().map_err(io(img))
}
