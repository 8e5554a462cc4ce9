//! Small OS images for the lab: a real ext4 filesystem (mkfs.ext4 -d) holding an
//! `/etc/os-release`, and the lab's boot markers, optionally compressed.
//!
//! The same spec gives the same bytes: the filesystem's UUID and hash seed derive
//! from the spec, and mke2fs's clock and every file's times are pinned, so a scenario
//! can declare the image's sha256.

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
    /// The filesystem's size: the uncompressed image's length.
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
        let x: String = h.iter().take(16).map(|b| format!("{b:02x}")).collect();
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

/// Builds `dir/NAME.img` (then compressed to `NAME.img.xz` etc., the plain file
/// removed) and returns the path. Needs mkfs.ext4 (e2fsprogs 1.43+ for `-d`) and the
/// compressor; no root.
pub fn build(
    dir: &Path,
    name: &str,
    spec: &ImageSpec,
    compression: Compression,
) -> Result<PathBuf, Error> {
    if spec.bytes < 1 << 20 || !spec.bytes.is_multiple_of(4096) {
        return Err(fail(format!(
            "an image is at least 1 MiB and whole 4 KiB blocks, not {} bytes",
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
    let uuid = spec.uuid();
    let st = quote::sh(&staging.to_string_lossy());
    let im = quote::sh(&img.to_string_lossy());
    // Pinned times (files and mke2fs's clock), UUID and hash seed: same spec, same bytes.
    let made = sh(&format!(
        "find {st} -exec touch -h -d @1700000000 {{}} + && \
         E2FSPROGS_FAKE_TIME=1700000000 mkfs.ext4 -q -F -b 4096 -L bp-lab-image \
         -U {uuid} -E hash_seed={uuid},root_owner=0:0 -d {st} {im} {}k",
        spec.bytes / 1024
    ));
    // mke2fs copies each file's ctime, which nobody can set; debugfs pins it after.
    let made = made.and_then(|()| {
        let mut cmds = String::from("sif / ctime @1700000000\nsif /lost+found ctime @1700000000\n");
        let mut dirs = vec![staging.clone()];
        while let Some(d) = dirs.pop() {
            for e in fs::read_dir(&d).map_err(io(&d))?.flatten() {
                let p = e.path();
                if let Ok(rel) = p.strip_prefix(&staging) {
                    cmds.push_str(&format!("sif /{} ctime @1700000000\n", rel.display()));
                }
                if p.is_dir() {
                    dirs.push(p);
                }
            }
        }
        let file = dir.join(format!(".{name}.debugfs"));
        fs::write(&file, cmds).map_err(io(&file))?;
        let pinned = sh(&format!(
            "E2FSPROGS_FAKE_TIME=1700000000 debugfs -w -f {} {im} >/dev/null",
            quote::sh(&file.to_string_lossy())
        ));
        let _ = fs::remove_file(&file);
        pinned
    });
    let _ = fs::remove_dir_all(&staging);
    made?;
    let Some(compress) = compression.command() else {
        return Ok(img);
    };
    let out = dir.join(format!("{name}{}", compression.suffix()));
    sh(&format!(
        "{compress} {im} > {}",
        quote::sh(&out.to_string_lossy())
    ))?;
    fs::remove_file(&img).map_err(io(&img))?;
    Ok(out)
}
