//! Integration tests: the store's lock between two real applies: the second is refused
//! with who holds it, and a holder killed with SIGKILL leaves a lock the next takes back.

use std::time::{Duration, Instant};

use crate::spine::{Project, text};

/// A local project whose one cell sleeps `seconds` per run.
fn sleeping(tag: &str, seconds: u32) -> Project {
    Project::local(tag).local_scenario(
        "s",
        &["sleepy"],
        1,
        &format!("[params.sleepy]\nseconds = {seconds}\n"),
    )
}

/// Waits until `child` holds the project's store's lock: its record.
fn holder_of(p: &Project, child: &std::process::Child) -> Option<benchpipe::store::Holder> {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(120) {
        if let Ok(store) = benchpipe::store::Store::open_read(p.dir.join("results"))
            && let Some(h) = store.lock_holder()
            && h.pid == child.id()
        {
            return Some(h);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// A second apply on a held store is refused, naming the holder's pid, host, how long
/// and its command; the holder is undisturbed and completes.
#[test]
fn a_second_apply_is_refused_naming_who_holds_the_store() {
    let p = sleeping("lock-refused", 6);
    let mut child = p.spawn(&["apply", "scenarios/s.toml"]);
    let Some(holder) = holder_of(&p, &child) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("apply never took the lock");
    };
    assert!(holder.command.contains("apply"), "{holder:?}");
    let second = p.bp(&["apply", "scenarios/s.toml"]);
    let said = text(&second);
    assert_eq!(second.status.code(), Some(1), "{said}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    for want in [
        "is locked by another benchpipe apply (pid ".to_string(),
        format!("pid {} on {}, for ", child.id(), host.trim()),
        "apply --yes scenarios/s.toml)".to_string(),
    ] {
        assert!(said.contains(&want), "{want}: {said}");
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the holder was disturbed");
    assert!(
        benchpipe::store::Store::open_read(p.dir.join("results"))
            .unwrap()
            .lock_holder()
            .is_none(),
        "the lock outlived its holder"
    );
}

/// The holder killed with SIGKILL mid-run: nobody holds the lock after it (its record
/// stays in `.lock`, its lock went with it), and the next apply takes it and completes
/// the cell.
#[test]
fn a_lock_left_by_an_apply_killed_with_sigkill_is_taken_back() {
    let p = sleeping("lock-killed", 2);
    let mut child = p.spawn(&["apply", "scenarios/s.toml"]);
    let held = holder_of(&p, &child);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(held.is_some(), "apply never took the lock");
    let store = benchpipe::store::Store::open_read(p.dir.join("results")).unwrap();
    // A child the killed apply had forked and not yet exec'd holds the lock's
    // descriptor until its exec closes it: an instant, longer on a loaded machine.
    let t0 = Instant::now();
    while store.lock_holder().is_some() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(store.lock_holder(), None);
    assert!(
        std::fs::read_to_string(p.dir.join("results/.lock"))
            .unwrap()
            .contains(&format!("\"pid\":{}", child.id())),
        "the dead holder's record"
    );
    let out = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!p.samples("sleepy").is_empty());
}
