//! Integration tests: `benchpipe status` beside a real apply: running (phase, cell, the
//! lock's holder), done with a failed cell's cause, and stopped after SIGKILL.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::spine::{Project, text};

fn status_json(p: &Project) -> Value {
    let out = p.bp(&["status", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The one board's status in `status --json` once `ready` holds of it.
fn wait_for(p: &Project, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        let doc = status_json(p);
        if let Some(b) = doc["boards"].as_array().and_then(|b| b.first())
            && ready(b)
        {
            return doc;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "{what}: {doc}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Mid-run: the board is running a measured run of its cell, for some seconds, under
/// the apply's lock; after: done, its cells counted, the failed one with its cause,
/// and the lock free.
#[test]
fn status_shows_the_running_walk_then_what_it_did_and_why_a_cell_failed() {
    let p = Project::local("status-run").local_scenario(
        "s",
        &["sleepy", "broken"],
        2,
        "[params.sleepy]\nseconds = 2\n",
    );
    let child = p.spawn(&["apply", "scenarios/s.toml"]);
    let doc = wait_for(&p, "a measured run", |b| {
        b["phase"].as_str().is_some_and(|ph| ph.starts_with("run "))
    });
    let b = &doc["boards"][0];
    assert_eq!(b["state"], "running", "{doc}");
    assert_eq!(b["board"], "here");
    assert!(
        b["cell"].as_str().unwrap().starts_with("sleepy on here"),
        "{doc}"
    );
    assert_eq!(
        doc["lock"]["pid"].as_u64(),
        Some(u64::from(child.id())),
        "{doc}"
    );
    let text_now = p.bp(&["status"]);
    let said = String::from_utf8_lossy(&text_now.stdout).to_string();
    assert!(
        said.contains(&format!("locked by pid {}", child.id())),
        "{said}"
    );
    assert!(
        said.contains("here") && said.contains("running  run "),
        "{said}"
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "the broken cell fails the apply"
    );
    let doc = status_json(&p);
    let b = &doc["boards"][0];
    assert_eq!(doc["lock"], Value::Null, "{doc}");
    assert_eq!(b["state"], "done", "{doc}");
    assert_eq!(
        (
            b["cells"].as_u64(),
            b["completed"].as_u64(),
            b["failed"].as_u64()
        ),
        (Some(2), Some(1), Some(1)),
        "{doc}"
    );
    let said = String::from_utf8_lossy(&p.bp(&["status"]).stdout).to_string();
    assert!(said.contains("not locked"), "{said}");
    assert!(said.contains("1 of 2 cell(s) done, 1 failed"), "{said}");
    assert!(
        said.lines()
            .any(|l| l.starts_with("  broken on here") && l.contains("fio: cannot open file")),
        "{said}"
    );
}

/// An apply killed with SIGKILL mid-phase: its walk shows as stopped where it was, and
/// nobody holds the lock.
#[test]
fn a_walk_whose_apply_was_killed_shows_as_stopped_where_it_was() {
    let p = Project::local("status-killed").local_scenario(
        "s",
        &["sleepy"],
        1,
        "[params.sleepy]\nseconds = 30\n",
    );
    let mut child = p.spawn(&["apply", "scenarios/s.toml"]);
    wait_for(&p, "a run", |b| {
        b["phase"].as_str().is_some_and(|ph| ph.contains("1/1"))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    // A child the killed apply forked and had not yet exec'd holds the lock an instant
    // longer (see store_lock.rs).
    let t0 = Instant::now();
    let mut doc = status_json(&p);
    while doc["lock"] != Value::Null && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
        doc = status_json(&p);
    }
    let b = &doc["boards"][0];
    assert_eq!(b["state"], "stopped", "{doc}");
    assert_eq!(doc["lock"], Value::Null);
    let said = String::from_utf8_lossy(&p.bp(&["status"]).stdout).to_string();
    assert!(said.contains("stopped"), "{said}");
    assert!(
        said.contains("its apply ended there without finishing"),
        "{said}"
    );
}

/// Before any apply, and on a store named but missing.
#[test]
fn status_before_any_apply_says_so_and_a_missing_store_is_bad_input() {
    let p = Project::local("status-empty");
    let out = p.bp(&["status"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("no walk recorded yet"), "{said}");
    let out = p.bp(&["status", "--store", "nowhere"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
