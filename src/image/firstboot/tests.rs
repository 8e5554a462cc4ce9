//! Derivations of real disk images: an MBR or a GPT made by `sfdisk`, a FAT boot
//! partition made by `mkfs.vfat`, the image compressed by the real `xz`; what was written
//! read back by `mtools` and checked by `fsck.vfat -n`, tools that share no code with
//! the derivation.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::image::tests::{Scratch, compress, have, local, path_source, quiet, sh};
use crate::image::{ImageError, fetch};
use crate::model::{Attachment, AuthorizedKey, FirstbootKind, PasswordHash, Preparation};
use crate::transport::quote;

use super::{derive, derived_files, record_of};

const TOOLS: [&str; 6] = ["sfdisk", "mkfs.vfat", "mcopy", "mtype", "fsck.vfat", "xz"];

/// Where the boot partition starts: sector 2048, as Raspberry Pi OS and Ubuntu lay it.
const BOOT_AT: u64 = 2048 * 512;

/// A public key made for these tests; its private half exists nowhere.
const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHtiZW5jaHBpcGUgdGVzdCBrZXkgb25seSAqKioqKio=";

fn key() -> AuthorizedKey {
    AuthorizedKey {
        line: KEY.into(),
        fingerprint: "SHA256:test".into(),
    }
}

fn prep(kind: FirstbootKind) -> Preparation {
    Preparation {
        kind,
        user: "bench".into(),
        key: key(),
        sudo: true,
        password_hash: None,
        user_data: None,
        network_config: None,
        hostname: "lab-1".into(),
    }
}

/// An 80 MiB disk image (sparse): a FAT boot partition (FAT32 under an MBR, FAT16 under
/// a GPT) holding `cmdline.txt`, then a Linux partition; its boot partition's bytes are
/// also returned as a file, for `fsck.vfat`.
fn disk(dir: &Path, gpt: bool) -> PathBuf {
    let img = dir.join(if gpt { "gpt.img" } else { "mbr.img" });
    let boot = dir.join("boot.fat");
    let _ = std::fs::remove_file(&boot);
    std::fs::write(
        dir.join("cmdline.txt"),
        "console=serial0,115200 console=tty1 root=PARTUUID=abcd-02 rootfstype=ext4 rootwait\n",
    )
    .unwrap();
    let (label, boot_type, fat) = if gpt {
        ("gpt", "C12A7328-F81F-11D2-BA4B-00A0C93EC93B", "-F 16")
    } else {
        ("dos", "c", "-F 32 -s 1")
    };
    sh(&format!(
        "cd '{d}' && rm -f '{i}' && truncate -s 80M '{i}' && \
         printf 'label: {label}\\nstart=2048, size=81920, type={boot_type}\\nstart=86016, size=40960, type={linux}\\n' | sfdisk -q '{i}' && \
         truncate -s 40M boot.fat && mkfs.vfat -n BOOT {fat} boot.fat >/dev/null && \
         MTOOLS_SKIP_CHECK=1 mcopy -i boot.fat cmdline.txt ::cmdline.txt && \
         dd if=boot.fat of='{i}' bs=1M seek=1 conv=notrunc,sparse status=none && \
         printf 'root filesystem here' | dd of='{i}' bs=1M seek=42 conv=notrunc status=none",
        d = dir.display(),
        i = img.display(),
        linux = if gpt {
            "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
        } else {
            "83"
        },
    ));
    img
}

/// A file of the image's boot partition as `mtype` reads it.
fn mtype(img: &Path, name: &str) -> Option<String> {
    let out = local(&format!(
        "MTOOLS_SKIP_CHECK=1 {}",
        quote::join(&[
            "mtype",
            "-i",
            &format!("{}@@{BOOT_AT}", img.display()),
            &format!("::{name}"),
        ])
    ));
    out.exit.success().then(|| out.stdout_str())
}

/// `fsck.vfat -n` of the image's boot partition, copied out: whether it is clean.
fn fsck_clean(img: &Path, dir: &Path) -> bool {
    let part = dir.join("check.fat");
    sh(&format!(
        "dd if='{}' of='{}' bs=1M skip=1 count=40 status=none",
        img.display(),
        part.display()
    ));
    let out = local(&quote::join(&["fsck.vfat", "-n", &part.to_string_lossy()]));
    if !out.exit.success() {
        eprintln!("{}", out.stdout_str());
    }
    out.exit.success()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn each_kind_writes_its_files_into_an_mbr_and_a_gpt_image_and_the_second_call_derives_nothing() {
    let t = "each_kind_writes_its_files_into_an_mbr_and_a_gpt_image_and_the_second_call_derives_nothing";
    if !have(t, &TOOLS) {
        return;
    }
    let s = Scratch::new("firstboot-kinds");
    let cache = s.cache();
    let mut last = None;
    for gpt in [false, true] {
        let img = disk(&s.0, gpt);
        // Through the decompressing stream, as a downloaded image is.
        let xz = compress(&img, "xz");
        let base = fetch(&cache, "raspios", &path_source(&xz), &quiet).unwrap();
        for kind in [
            FirstbootKind::CloudInit,
            FirstbootKind::Raspios,
            FirstbootKind::Armbian,
        ] {
            let p = prep(kind);
            let d = derive(&cache, &base, &p).unwrap();
            assert!(!d.reused, "{kind:?}: the first call derives");
            let out = &d.fetched.path;
            assert_eq!(d.record.derived_sha256, crate::image::tests::sha256_of(out));
            assert_eq!(d.fetched.sha256, d.record.derived_sha256);
            assert!(fsck_clean(out, &s.0), "{kind:?} gpt={gpt}: fsck.vfat -n");
            // What the base had is still there; the rest of the disk is untouched.
            let cmdline = mtype(out, "cmdline.txt").unwrap();
            let raw = std::fs::read(out).unwrap();
            assert!(contains(&raw, b"root filesystem here"));
            match kind {
                FirstbootKind::CloudInit => {
                    let ud = mtype(out, "user-data").unwrap();
                    assert!(ud.starts_with("#cloud-config\n"), "{ud}");
                    assert!(ud.contains(KEY) && ud.contains("name: \"bench\""), "{ud}");
                    assert!(ud.contains("hostname: \"lab-1\""), "{ud}");
                    let md = mtype(out, "meta-data").unwrap();
                    assert!(md.contains(&format!("benchpipe-{}", &d.record.derivation_key[..32])));
                    assert_eq!(mtype(out, "network-config"), None);
                    assert!(!cmdline.contains("systemd.run"), "{cmdline}");
                }
                FirstbootKind::Raspios => {
                    assert_eq!(mtype(out, "ssh").as_deref(), Some(""));
                    let uc = mtype(out, "userconf.txt").unwrap();
                    assert!(uc.starts_with("bench:$6$"), "{uc}");
                    assert!(mtype(out, "firstrun.sh").unwrap().contains(KEY));
                    assert!(
                        cmdline.starts_with(
                            "console=serial0,115200 console=tty1 root=PARTUUID=abcd-02"
                        ) && cmdline.trim_end().ends_with(super::files::SYSTEMD_RUN),
                        "{cmdline}"
                    );
                }
                FirstbootKind::Armbian => {
                    let t = mtype(out, "armbian_first_run.txt").unwrap();
                    assert!(t.contains(KEY) && t.contains("rm -f /root/.not_logged_in_yet"));
                    assert!(t.contains("\nPRESET_USER_NAME=bench\n"), "{t}");
                    assert_eq!(
                        mtype(out, super::files::ARMBIAN_KEY_FILE),
                        Some(format!("{KEY}\n"))
                    );
                }
            }
            // Read-only in the cache, and the base image left as it was.
            assert_eq!(std::fs::metadata(out).unwrap().mode() & 0o777, 0o400);
        }
        assert_eq!(crate::image::tests::sha256_of(&xz), base.sha256);
        last = Some(base);
    }
    // A second derivation of each finds the cache's: no new file, none rewritten.
    let before: BTreeMap<PathBuf, i64> = derived_files(&cache)
        .into_iter()
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap().mtime_nsec();
            (p, m)
        })
        .collect();
    assert_eq!(before.len(), 6, "{before:?}");
    // The same verified base (mkfs.vfat's volume id makes every new disk another).
    let base = last.unwrap();
    let again = derive(&cache, &base, &prep(FirstbootKind::CloudInit)).unwrap();
    assert!(again.reused, "the second call derives nothing");
    let after: BTreeMap<PathBuf, i64> = derived_files(&cache)
        .into_iter()
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap().mtime_nsec();
            (p, m)
        })
        .collect();
    assert_eq!(before, after);
    let key = prep(FirstbootKind::CloudInit).derivation_key(&base.sha256);
    let record = record_of(&cache, &key).unwrap();
    assert_eq!(record.derived_sha256, again.record.derived_sha256);
    assert_eq!(record.key_fingerprint, "SHA256:test");
}

#[test]
fn a_password_is_written_only_hashed_and_a_changed_derived_file_is_derived_again() {
    use sha_crypt::password_hash::PasswordHasher;
    let t = "a_password_is_written_only_hashed_and_a_changed_derived_file_is_derived_again";
    if !have(t, &TOOLS) {
        return;
    }
    let s = Scratch::new("firstboot-password");
    let cache = s.cache();
    let img = disk(&s.0, false);
    let base = fetch(&cache, "ubuntu", &path_source(&img), &quiet).unwrap();
    let clear = "Sup3r-s3cret-Passw0rd";
    let hash = sha_crypt::ShaCrypt::SHA512
        .hash_password_with_salt(clear.as_bytes(), b"benchpipesalt")
        .unwrap()
        .to_string();
    let mut p = prep(FirstbootKind::CloudInit);
    p.password_hash = Some(PasswordHash(hash.clone()));
    p.user_data = Some(Attachment {
        text: "#cloud-config\npackages: [fio]\n".into(),
        sha256: "0".repeat(64),
    });
    p.network_config = Some(Attachment {
        text: "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n".into(),
        sha256: "1".repeat(64),
    });
    let d = derive(&cache, &base, &p).unwrap();
    let raw = std::fs::read(&d.fetched.path).unwrap();
    assert!(!contains(&raw, clear.as_bytes()), "the password in clear");
    let ud = mtype(&d.fetched.path, "user-data").unwrap();
    assert!(ud.contains(&hash), "{ud}");
    assert!(
        ud.contains("packages: [fio]") && ud.contains("multipart/mixed"),
        "{ud}"
    );
    assert_eq!(
        mtype(&d.fetched.path, "network-config").unwrap(),
        "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n"
    );
    // Nothing in the cache's records holds the hash or the key's text.
    for e in std::fs::read_dir(cache.dir()).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                !text.contains(&hash) && !text.contains(KEY),
                "{}",
                path.display()
            );
        }
    }
    // The derived file replaced by another: its record no longer vouches for it.
    let path = d.fetched.path.clone();
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"not the derived image").unwrap();
    let again = derive(&cache, &base, &p).unwrap();
    assert!(!again.reused, "a changed file is derived again");
    assert_eq!(
        crate::image::tests::sha256_of(&again.fetched.path),
        again.record.derived_sha256
    );
}

#[test]
fn an_image_without_a_fat_boot_partition_or_with_a_full_one_is_an_error_naming_it() {
    let t = "an_image_without_a_fat_boot_partition_or_with_a_full_one_is_an_error_naming_it";
    if !have(t, &TOOLS) {
        return;
    }
    let s = Scratch::new("firstboot-refusals");
    let cache = s.cache();
    // A bare ext4-like blob: no partition table.
    let bare = s.path("bare.img");
    std::fs::write(&bare, vec![7u8; 1 << 20]).unwrap();
    let base = fetch(&cache, "armbian", &path_source(&bare), &quiet).unwrap();
    let e = derive(&cache, &base, &prep(FirstbootKind::Armbian)).unwrap_err();
    assert!(matches!(e, ImageError::Prepare { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("image `armbian`") && msg.contains("no partition table"),
        "{msg}"
    );

    // A full boot partition: a filler file takes every free cluster.
    let img = disk(&s.0, false);
    {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&img)
            .unwrap();
        let part = super::boot_partition(&f, f.metadata().unwrap().len()).unwrap();
        let fs =
            fatfs::FileSystem::new(super::disk::Window::new(&f, &part), fatfs::FsOptions::new())
                .unwrap();
        let mut filler = fs.root_dir().create_file("filler.bin").unwrap();
        let chunk = vec![1u8; 64 * 1024];
        while std::io::Write::write_all(&mut filler, &chunk).is_ok() {}
        drop(filler);
        fs.unmount().unwrap();
    }
    let base = fetch(&cache, "ubuntu", &path_source(&img), &quiet).unwrap();
    let e = derive(&cache, &base, &prep(FirstbootKind::CloudInit))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("image `ubuntu`") && e.contains("too full"),
        "{e}"
    );
    // Nothing half-made is left behind.
    let left: Vec<String> = std::fs::read_dir(cache.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.ends_with(".img"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_hostile_gpt_header_is_refused_without_a_panic_or_a_huge_allocation() {
    let t = "a_hostile_gpt_header_is_refused_without_a_panic_or_a_huge_allocation";
    if !have(t, &TOOLS) {
        return;
    }
    let s = Scratch::new("firstboot-gpt");
    let img = disk(&s.0, true);
    let mut bytes = std::fs::read(&img).unwrap();
    // 2^31 entries of 128 bytes, with the header's CRC made right again.
    bytes[512 + 80..512 + 84].copy_from_slice(&(1u32 << 31).to_le_bytes());
    bytes[512 + 16..512 + 20].fill(0);
    let crc = crc32fast::hash(&bytes[512..512 + 92]);
    bytes[512 + 16..512 + 20].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&img, &bytes).unwrap();
    let f = std::fs::File::open(&img).unwrap();
    let e = super::boot_partition(&f, bytes.len() as u64).unwrap_err();
    assert!(e.contains("2147483648 entries"), "{e}");
    // A damaged CRC is refused too.
    bytes[512 + 16] ^= 1;
    std::fs::write(&img, &bytes).unwrap();
    let f = std::fs::File::open(&img).unwrap();
    let e = super::boot_partition(&f, bytes.len() as u64).unwrap_err();
    assert!(e.contains("CRC"), "{e}");
}
