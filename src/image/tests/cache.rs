//! The image cache as root meets it: a directory someone else made or can write, and
//! links or FIFOs planted at the names it uses. Nothing outside is written through a
//! link, nothing hangs, and a directory not the user's own is refused.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;
use crate::image::{ImageError, facts, fetch};

/// A small raw image (any bytes, named `.img`): enough to fetch, open and measure.
fn raw_image(s: &Scratch) -> PathBuf {
    let img = s.path("disk.img");
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + 1) as u8).collect();
    std::fs::write(&img, bytes).unwrap();
    img
}

/// A directory outside the cache holding `victim`, whose bytes must never change.
fn outside(s: &Scratch) -> PathBuf {
    let dir = s.path("outside");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("victim"), "victim\n").unwrap();
    dir
}

fn victim_unchanged(dir: &Path) {
    assert_eq!(
        std::fs::read_to_string(dir.join("victim")).unwrap(),
        "victim\n"
    );
    let names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["victim"], "something was created outside");
}

#[test]
fn a_cache_directory_of_another_user_or_writable_by_others_is_refused() {
    let s = Scratch::new("cache-owner");
    let img = raw_image(&s);
    let cache = s.cache();
    std::fs::create_dir(cache.dir()).unwrap();
    std::fs::set_permissions(cache.dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = fetch(&cache, "pi", &path_source(&img), &quiet).unwrap_err();
    assert!(matches!(e, ImageError::Cache { .. }), "{e:?}");
    assert!(
        e.to_string()
            .contains("is writable by group or others (mode 777)"),
        "{e}"
    );
    std::fs::set_permissions(cache.dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(cache.dir(), Some(65534), Some(65534)).unwrap();
    let e = fetch(&cache, "pi", &path_source(&img), &quiet).unwrap_err();
    assert!(e.to_string().contains("is owned by uid 65534"), "{e}");
    // A link in its place is not followed.
    std::fs::remove_dir(cache.dir()).unwrap();
    let elsewhere = s.path("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, cache.dir()).unwrap();
    let e = fetch(&cache, "pi", &path_source(&img), &quiet).unwrap_err();
    assert!(e.to_string().contains("is a symbolic link"), "{e}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // Made by benchpipe: 0700, and used.
    std::fs::remove_file(cache.dir()).unwrap();
    fetch(&cache, "pi", &path_source(&img), &quiet).unwrap();
    let mode = std::fs::metadata(cache.dir()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

#[test]
fn links_planted_at_the_lock_and_the_stamps_temporary_file_are_not_followed() {
    let s = Scratch::new("cache-links");
    let img = raw_image(&s);
    let source = path_source(&img);
    let ImageSource::Path { sha256: sha, .. } = &source else {
        unreachable!()
    };
    let out = outside(&s);
    let cache = s.cache();
    std::fs::create_dir(cache.dir()).unwrap();
    std::fs::set_permissions(cache.dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    // The name the stamps were once written through (`H.stamps.tmp<pid>`).
    let tmp = cache
        .dir()
        .join(format!("{sha}.stamps.tmp{}", std::process::id()));
    std::os::unix::fs::symlink(out.join("victim"), &tmp).unwrap();
    fetch(&cache, "pi", &source, &quiet).unwrap();
    victim_unchanged(&out);
    // A link at the lock: refused, its target never created.
    let lock = cache.dir().join(format!("{sha}.lock"));
    std::fs::remove_file(&lock).unwrap();
    std::os::unix::fs::symlink(out.join("created-by-root"), &lock).unwrap();
    let e = fetch(&cache, "pi", &source, &quiet).unwrap_err();
    assert!(matches!(e, ImageError::Cache { .. }), "{e:?}");
    assert!(e.to_string().contains("is a symbolic link"), "{e}");
    victim_unchanged(&out);
}

/// Opens `fifo` for writing, without blocking, until `stop`: it succeeds only while
/// something has it open for reading, which it then sees end (so a reader blocked on
/// it is freed, and the test ends either way). True when that ever happened.
fn watch_fifo(fifo: PathBuf, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        use std::os::unix::fs::OpenOptionsExt;
        let mut opened = false;
        while !stop.load(Ordering::SeqCst) {
            // A writer's non-blocking open succeeds only while a reader holds the FIFO.
            // Once the cache has replaced it with its own regular file, the same open
            // succeeds on that file: only an open FIFO counts.
            use std::os::unix::fs::FileTypeExt;
            if std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo)
                .and_then(|f| f.metadata())
                .is_ok_and(|m| m.file_type().is_fifo())
            {
                opened = true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        opened
    })
}

#[test]
fn fifos_planted_at_the_stamps_and_facts_are_never_opened() {
    let s = Scratch::new("cache-fifo");
    let img = raw_image(&s);
    let source = path_source(&img);
    let ImageSource::Path { sha256: sha, .. } = &source else {
        unreachable!()
    };
    let cache = s.cache();
    std::fs::create_dir(cache.dir()).unwrap();
    std::fs::set_permissions(cache.dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut watchers = Vec::new();
    let stop = Arc::new(AtomicBool::new(false));
    for name in [format!("{sha}.stamps.json"), format!("{sha}.facts.json")] {
        let fifo = cache.dir().join(name);
        sh(&format!("mkfifo '{}'", fifo.display()));
        watchers.push(watch_fifo(fifo, stop.clone()));
    }
    let f = fetch(&cache, "pi", &source, &quiet).unwrap();
    let known = facts(&f).unwrap();
    assert_eq!(known.uncompressed_bytes, 200_000);
    stop.store(true, Ordering::SeqCst);
    for w in watchers {
        assert!(!w.join().unwrap(), "a FIFO in the cache was opened");
    }
    // Both were replaced by the files the cache writes.
    for name in [format!("{sha}.stamps.json"), format!("{sha}.facts.json")] {
        assert!(
            std::fs::symlink_metadata(cache.dir().join(name))
                .unwrap()
                .is_file()
        );
    }
}
