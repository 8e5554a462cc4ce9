//! Tests of `image` on real files: ext4 images made with mkfs.ext4, compressed with the
//! real xz, gzip, zstd and zip, fetched, opened and checked byte for byte.

mod cache;
mod http;
mod local;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Cache;
use crate::model::ImageSource;

/// A directory of its own for one test, removed when dropped.
pub(super) struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("bp-image-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn cache(&self) -> Cache {
        Cache::new(self.path("cache"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub(crate) use crate::testing::{have, local};

pub(super) fn sh(script: &str) {
    let out = local(&format!("set -e\n{script}"));
    assert!(out.exit.success(), "{script}\n{}", out.stderr_str());
}

/// A small real image: an 8 MiB ext4 filesystem made by mkfs.ext4 from a directory
/// holding `/etc/os-release` with this ID and VERSION_ID.
pub(super) fn ext4_image(dir: &Path, id: &str, version_id: &str) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(
        root.join("etc/os-release"),
        format!("PRETTY_NAME=\"Test {id} {version_id}\"\nID={id}\nVERSION_ID=\"{version_id}\"\n"),
    )
    .unwrap();
    let img = dir.join("disk.img");
    let _ = std::fs::remove_file(&img);
    sh(&format!(
        "truncate -s 8M '{i}' && mkfs.ext4 -q -F -E root_owner=0:0 -d '{r}' '{i}'",
        i = img.display(),
        r = root.display()
    ));
    img
}

/// `img` compressed by the real tool for `ext` (`xz`, `gz`, `zst`, `zip`), beside it.
pub(super) fn compress(img: &Path, ext: &str) -> PathBuf {
    let out = PathBuf::from(format!("{}.{ext}", img.display()));
    let (i, o) = (img.display(), out.display());
    let _ = std::fs::remove_file(&out);
    sh(&match ext {
        "xz" => format!("xz -T1 -c '{i}' > '{o}'"),
        "gz" => format!("gzip -c '{i}' > '{o}'"),
        "zst" => format!("zstd -q -c '{i}' > '{o}'"),
        "zip" => format!(
            "cd '{}' && zip -q '{o}' '{}'",
            img.parent().unwrap().display(),
            img.file_name().unwrap().to_string_lossy()
        ),
        _ => unreachable!(),
    });
    out
}

pub(super) fn sha256_of(path: &Path) -> String {
    crate::canonical::hex(&Sha256::digest(std::fs::read(path).unwrap()))
}

pub(super) fn path_source(path: &Path) -> ImageSource {
    ImageSource::Path {
        path: path.into(),
        sha256: sha256_of(path),
    }
}

pub(super) fn quiet(_: super::FetchProgress) {}
