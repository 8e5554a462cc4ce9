//! Local images: every format, zips, digests, damaged files, bombs, `file://` and paths.

use std::cell::Cell;
use std::io::Read;

use super::*;
use crate::image::{Format, ImageError, Phase, error_of, facts, facts_within, fetch, open};

fn read_all(f: &crate::image::Fetched, max: Option<u64>) -> Result<Vec<u8>, ImageError> {
    let mut s = open(f, max)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| error_of(e, f))?;
    Ok(out)
}

#[test]
fn every_format_streams_the_same_bytes_and_records_their_facts() {
    let t = "every_format_streams_the_same_bytes_and_records_their_facts";
    if !have(t, &["mkfs.ext4", "xz", "gzip", "zstd", "zip"]) {
        return;
    }
    let s = Scratch::new("formats");
    let img = ext4_image(&s.0, "debian", "12");
    let raw = std::fs::read(&img).unwrap();
    let raw_sha = sha256_of(&img);
    let cache = s.cache();
    for (file, format) in [
        (img.clone(), Format::Raw),
        (compress(&img, "xz"), Format::Xz),
        (compress(&img, "gz"), Format::Gzip),
        (compress(&img, "zst"), Format::Zstd),
        (compress(&img, "zip"), Format::Zip),
    ] {
        let f = fetch(&cache, "test", &path_source(&file), &quiet).unwrap();
        assert_eq!(f.sha256, sha256_of(&file));
        let bytes = read_all(&f, Some(raw.len() as u64)).unwrap();
        assert!(
            bytes == raw,
            "{format:?}: the stream differs from the raw image"
        );
        // The pass above recorded the facts; they are the raw image's size and hash.
        assert!(
            cache.facts_path(&f.sha256).exists(),
            "{format:?}: facts not cached"
        );
        let facts = facts(&f).unwrap();
        assert_eq!(facts.format, format);
        assert_eq!(
            facts.compressed_bytes,
            std::fs::metadata(&file).unwrap().len()
        );
        assert_eq!(facts.sha256, f.sha256);
        assert_eq!(facts.uncompressed_bytes, raw.len() as u64);
        assert_eq!(facts.uncompressed_sha256, raw_sha, "{format:?}");
    }
}

#[test]
fn facts_are_computed_by_one_pass_when_nothing_was_flashed() {
    let t = "facts_are_computed_by_one_pass_when_nothing_was_flashed";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("facts");
    let img = ext4_image(&s.0, "debian", "12");
    let xz = compress(&img, "xz");
    let f = fetch(&s.cache(), "test", &path_source(&xz), &quiet).unwrap();
    let facts = facts(&f).unwrap();
    assert_eq!(facts.uncompressed_sha256, sha256_of(&img));
    assert_eq!(facts.uncompressed_bytes, 8 << 20);
    // Cached: the same answer from the file beside the image.
    assert_eq!(crate::image::facts::cached(&f), Some(facts));
}

#[test]
fn a_zip_must_hold_exactly_one_img() {
    let t = "a_zip_must_hold_exactly_one_img";
    if !have(t, &["mkfs.ext4", "zip"]) {
        return;
    }
    let s = Scratch::new("zips");
    let img = ext4_image(&s.0, "debian", "12");
    let d = s.0.display();
    sh(&format!(
        "cd '{d}' && echo hi > README.txt && mkdir -p __MACOSX && echo fork > __MACOSX/._disk.img \
         && cp disk.img other.img \
         && zip -q none.zip README.txt \
         && zip -q one.zip README.txt disk.img __MACOSX/._disk.img \
         && zip -q two.zip disk.img other.img \
         && zip -q -0 stored.zip disk.img"
    ));
    let cache = s.cache();
    let open_zip = |name: &str| {
        let f = fetch(&cache, "pi", &path_source(&s.path(name)), &quiet).unwrap();
        read_all(&f, None)
    };
    let raw = std::fs::read(&img).unwrap();
    assert!(
        open_zip("one.zip").unwrap() == raw,
        "one.zip: not the image"
    );
    assert!(
        open_zip("stored.zip").unwrap() == raw,
        "stored.zip: not the image"
    );
    let e = open_zip("none.zip").unwrap_err().to_string();
    assert!(
        e.contains("image `pi`: the zip archive holds no .img file (it holds `README.txt`)"),
        "{e}"
    );
    let e = open_zip("two.zip").unwrap_err().to_string();
    assert!(
        e.contains("holds 2 .img files (`disk.img`, `other.img`); exactly one is needed"),
        "{e}"
    );
}

#[test]
fn zip_entry_names_reach_error_text_escaped() {
    let t = "zip_entry_names_reach_error_text_escaped";
    if !have(t, &["python3"]) {
        return;
    }
    let s = Scratch::new("zip-names");
    let d = s.0.display();
    // An entry compressed with bzip2 (refused, naming it) whose name holds ESC and BEL.
    sh(&format!(
        "cd '{d}' && python3 -c 'import zipfile\n\
z = zipfile.ZipFile(\"esc.zip\", \"w\", zipfile.ZIP_BZIP2)\n\
z.writestr(\"\\x1b[2Jwiped\\x07.img\", b\"x\" * 100)\n\
z.close()'"
    ));
    let f = fetch(&s.cache(), "pi", &path_source(&s.path("esc.zip")), &quiet).unwrap();
    let e = read_all(&f, None).unwrap_err().to_string();
    assert!(!e.contains('\u{1b}') && !e.contains('\u{7}'), "{e:?}");
    assert!(
        e.contains("compresses `\\u{1b}[2Jwiped\\u{7}.img` with"),
        "{e}"
    );
}

#[test]
fn a_sha256_mismatch_names_both_digests_and_gives_no_image() {
    let t = "a_sha256_mismatch_names_both_digests_and_gives_no_image";
    if !have(t, &["mkfs.ext4"]) {
        return;
    }
    let s = Scratch::new("mismatch");
    let img = ext4_image(&s.0, "debian", "12");
    let declared = "ab".repeat(32);
    let source = ImageSource::Path {
        path: img.clone(),
        sha256: declared.clone(),
    };
    let e = fetch(&s.cache(), "raspios", &source, &quiet).unwrap_err();
    assert!(matches!(e, ImageError::Mismatch { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains(&declared) && msg.contains(&sha256_of(&img)),
        "{msg}"
    );
    assert!(
        msg.contains("image `raspios`: sha256 mismatch") && msg.contains("nothing was flashed"),
        "{msg}"
    );
}

#[test]
fn a_truncated_or_damaged_image_is_a_clear_error_not_a_panic() {
    let t = "a_truncated_or_damaged_image_is_a_clear_error_not_a_panic";
    if !have(t, &["mkfs.ext4", "xz", "gzip", "zstd", "zip"]) {
        return;
    }
    let s = Scratch::new("corrupt");
    let img = ext4_image(&s.0, "debian", "12");
    let cache = s.cache();
    for (ext, format) in [
        ("xz", "xz"),
        ("gz", "gzip"),
        ("zst", "zstd"),
        ("zip", "zip"),
    ] {
        let whole = std::fs::read(compress(&img, ext)).unwrap();
        let cut = s.path(&format!("cut.img.{ext}"));
        std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
        let mut damaged = whole.clone();
        let mid = damaged.len() / 2;
        damaged[mid] ^= 0x55;
        damaged[mid + 1] ^= 0x55;
        let bad = s.path(&format!("bad.img.{ext}"));
        std::fs::write(&bad, &damaged).unwrap();
        for file in [cut, bad] {
            let f = fetch(&cache, "pi", &path_source(&file), &quiet).unwrap();
            let e = read_all(&f, None).unwrap_err();
            let msg = e.to_string();
            match &e {
                ImageError::Corrupt { format: got, .. } => {
                    assert_eq!(*got, format, "{msg}");
                    assert!(
                        msg.starts_with(&format!("image `pi`: corrupt {format} data: ")),
                        "{msg}"
                    );
                }
                // A zip cut in half has lost its central directory.
                ImageError::Archive { .. } if ext == "zip" => {
                    assert!(msg.contains("zip archive cannot be read"), "{msg}");
                }
                _ => panic!("{}: {e:?}", file.display()),
            }
        }
    }
}

#[test]
fn a_decompression_bomb_stops_at_the_bound() {
    let t = "a_decompression_bomb_stops_at_the_bound";
    if !have(t, &["zstd", "head", "mkfs.ext4"]) {
        return;
    }
    let s = Scratch::new("bomb");
    // 1 GiB of zeros, a few tens of KiB compressed.
    let bomb = s.path("bomb.img.zst");
    sh(&format!(
        "head -c 1073741824 /dev/zero | zstd -q -1 -c > '{}'",
        bomb.display()
    ));
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
    let f = fetch(&s.cache(), "bomb", &path_source(&bomb), &quiet).unwrap();
    let max = 64u64 << 20;
    let mut stream = open(&f, Some(max)).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut seen = 0u64;
    let e = loop {
        match stream.read(&mut buf) {
            Ok(0) => panic!("the bomb ended within the bound"),
            Ok(n) => seen += n as u64,
            Err(e) => break e,
        }
    };
    assert!(seen <= max, "{seen} bytes passed the {max}-byte bound");
    let msg = error_of(e, &f).to_string();
    assert_eq!(
        msg,
        format!(
            "image `bomb`: decompresses to more than {max} bytes (the most it may be here); refused"
        )
    );
    assert!(matches!(
        facts_within(&f, max),
        Err(ImageError::TooLarge { .. })
    ));
    assert!(
        crate::image::facts::cached(&f).is_none(),
        "a refused pass recorded facts"
    );
    // A raw image larger than the bound is refused before a byte is read.
    let img = ext4_image(&s.0, "debian", "12");
    let f = fetch(&s.cache(), "raw", &path_source(&img), &quiet).unwrap();
    assert!(matches!(
        open(&f, Some(1 << 20)),
        Err(ImageError::TooLarge { max: 1048576, .. })
    ));
}

#[test]
fn file_urls_and_plain_paths_work_offline_and_are_hashed_once() {
    let t = "file_urls_and_plain_paths_work_offline_and_are_hashed_once";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("local");
    let img = ext4_image(&s.0, "debian", "12");
    let spaced = s.path("my image.img.xz");
    std::fs::rename(compress(&img, "xz"), &spaced).unwrap();
    let sha = sha256_of(&spaced);
    let url = format!("file://{}", spaced.display()).replace(' ', "%20");
    let cache = s.cache();
    let hashed = Cell::new(0);
    let count = |p: crate::image::FetchProgress| {
        if p.phase == Phase::Verify && p.done == 0 {
            hashed.set(hashed.get() + 1);
        }
    };
    let by_url = ImageSource::Url {
        url: crate::model::ImageUrl::new(url.clone()),
        sha256: sha.clone(),
        min_rate: None,
    };
    let f = fetch(&cache, "pi", &by_url, &count).unwrap();
    assert_eq!(f.path, spaced);
    assert_eq!(f.origin.to_string(), url);
    assert_eq!(hashed.get(), 1);
    assert_eq!(read_all(&f, None).unwrap(), std::fs::read(&img).unwrap());
    // The same file again, by path: its stamp says it is unchanged, so no second hash.
    let by_path = ImageSource::Path {
        path: spaced.clone(),
        sha256: sha.clone(),
    };
    fetch(&cache, "pi", &by_path, &count).unwrap();
    assert_eq!(hashed.get(), 1, "an unchanged file was hashed again");
    // The file changes after it was verified: open refuses, fetch hashes and refuses.
    sh(&format!("printf x >> '{}'", spaced.display()));
    let e = open(&f, None)
        .err()
        .expect("a changed file opened")
        .to_string();
    assert!(
        e.contains("changed after it was verified (its size changed)"),
        "{e}"
    );
    assert!(matches!(
        fetch(&cache, "pi", &by_path, &count),
        Err(ImageError::Mismatch { .. })
    ));
    // Missing files and other hosts are clear errors.
    let missing = ImageSource::Path {
        path: s.path("nope.img"),
        sha256: sha.clone(),
    };
    let e = fetch(&cache, "pi", &missing, &quiet)
        .unwrap_err()
        .to_string();
    assert!(e.ends_with("nope.img: no such file"), "{e}");
    let remote = ImageSource::Url {
        url: crate::model::ImageUrl::new("file://server/share/a.img"),
        sha256: sha.clone(),
        min_rate: None,
    };
    let e = fetch(&cache, "pi", &remote, &quiet)
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs an absolute path on this machine"), "{e}");
    let e = fetch(&cache, "pi", &ImageSource::Installed, &quiet)
        .unwrap_err()
        .to_string();
    assert!(e.contains("an installed image has no file to fetch"), "{e}");
}

#[test]
fn the_bytes_decide_the_format_and_a_lying_name_is_refused() {
    let t = "the_bytes_decide_the_format_and_a_lying_name_is_refused";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("names");
    let img = ext4_image(&s.0, "debian", "12");
    let xz = compress(&img, "xz");
    let nameless = s.path("download");
    std::fs::copy(&xz, &nameless).unwrap();
    let f = fetch(&s.cache(), "pi", &path_source(&nameless), &quiet).unwrap();
    assert_eq!(read_all(&f, None).unwrap(), std::fs::read(&img).unwrap());
    let liar = s.path("liar.img");
    std::fs::copy(&xz, &liar).unwrap();
    let f = fetch(&s.cache(), "pi", &path_source(&liar), &quiet).unwrap();
    let e = open(&f, None)
        .err()
        .expect("a lying name opened")
        .to_string();
    assert_eq!(e, "image `pi`: the name says raw (.img) but the data is xz");
}

#[test]
fn a_file_written_while_it_streams_or_facts_that_disagree_fail_at_the_end() {
    let t = "a_file_written_while_it_streams_or_facts_that_disagree_fail_at_the_end";
    if !have(t, &["mkfs.ext4", "gzip"]) {
        return;
    }
    let s = Scratch::new("changing");
    let img = ext4_image(&s.0, "debian", "12");
    let gz = compress(&img, "gz");
    let cache = s.cache();
    for file in [&img, &gz] {
        // An old mtime, so that the write below changes it whatever the clock's grain.
        sh(&format!("touch -d 2020-01-01 '{}'", file.display()));
        let f = fetch(&cache, "pi", &path_source(file), &quiet).unwrap();
        let mut stream = open(&f, None).unwrap();
        let mut first = vec![0u8; 4096];
        stream.read_exact(&mut first).unwrap();
        // Written in place, same size: only the stamp's times tell.
        sh(&format!(
            "printf 'x' | dd of='{}' bs=1 seek=100 conv=notrunc status=none",
            file.display()
        ));
        let e = error_of(stream.read_to_end(&mut Vec::new()).unwrap_err(), &f);
        let msg = e.to_string();
        assert!(
            msg.contains("changed after it was verified (it was modified while it was read)"),
            "{msg}"
        );
        assert!(
            crate::image::facts::cached(&f).is_none(),
            "facts recorded from a changed file"
        );
    }
    // Cached facts that the bytes no longer give: the stream says so at its end.
    let gz = compress(&img, "gz");
    let f = fetch(&cache, "pi", &path_source(&gz), &quiet).unwrap();
    let good = facts(&f).unwrap();
    let facts_file = cache.facts_path(&f.sha256);
    let text = std::fs::read_to_string(&facts_file).unwrap();
    std::fs::write(
        &facts_file,
        text.replace(&good.uncompressed_sha256, &"e".repeat(64)),
    )
    .unwrap();
    let e = read_all(&f, None).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "it now decompresses to {} bytes with sha256 {}",
            good.uncompressed_bytes, good.uncompressed_sha256
        )),
        "{e}"
    );
    // Known facts bound the stream before a byte is read.
    std::fs::write(&facts_file, text).unwrap();
    assert!(matches!(
        open(&f, Some(1 << 20)),
        Err(ImageError::TooLarge { .. })
    ));
}
