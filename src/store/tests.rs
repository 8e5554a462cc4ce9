//! The store on a temporary directory: round trips, torn lines and formats.

use super::*;
use crate::plan;

fn temp_store(tag: &str) -> Store {
    let dir = std::env::temp_dir().join(format!("bp-store-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    Store::open(dir).unwrap()
}

fn sample(seq: u32, kind: RunKind, v: f64) -> Sample {
    Sample {
        format: FORMAT,
        seq,
        kind,
        session: "s".into(),
        started: 1.0,
        ended: 2.0,
        metrics: BTreeMap::from([("random_read".to_string(), v)]),
        flags: vec![],
        telemetry: None,
        command: "true".into(),
        log: format!("logs/{seq:04}.log"),
        order: None,
        board_seq: None,
    }
}

fn a_cell() -> plan::Cell {
    let ws = plan::fixtures::workspace();
    plan::expand(&ws, &ws.scenarios[0]).cells.remove(0)
}

#[test]
fn a_torn_last_line_is_ignored_then_cut_off() {
    let store = temp_store("torn");
    let cell = a_cell();
    let mut w = store.begin(&cell).unwrap();
    w.append(&sample(1, RunKind::Warmup, 1.0)).unwrap();
    w.append(&sample(2, RunKind::Measured, 2.0)).unwrap();
    // A crash in the middle of the third append.
    let path = store.cell_dir(&cell).join("samples.jsonl");
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"format\":1,\"seq\":3,\"ki").unwrap();
    drop(f);

    let data = store.read(&cell).unwrap();
    assert_eq!(data.samples.len(), 2);
    assert_eq!(data.measured_count(), 1);

    let mut w = store.begin(&cell).unwrap();
    assert_eq!(w.next_seq(), 3);
    w.append(&sample(3, RunKind::Measured, 3.0)).unwrap();
    let data = store.read(&cell).unwrap();
    assert_eq!(data.samples.len(), 3);
    assert_eq!(data.samples[2].metrics["random_read"], 3.0);
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    let _ = fs::remove_dir_all(store.root());
}

#[test]
fn a_newer_format_is_refused_with_a_clear_message() {
    let store = temp_store("newer");
    let cell = a_cell();
    store.begin(&cell).unwrap();
    let path = store.cell_dir(&cell).join("cell.json");
    fs::write(&path, b"{\"format\": 99}").unwrap();
    let err = store.read(&cell).unwrap_err().to_string();
    assert!(err.contains("format 99 is newer"), "{err}");
    let _ = fs::remove_dir_all(store.root());
}

/// A FIFO planted where a store file belongs would block `plan` and `report` for
/// ever (reading waits for a writer); a symlink could point anywhere. Both are refused.
#[test]
fn a_fifo_or_symlink_in_the_store_is_refused_without_blocking() {
    let store = temp_store("fifo");
    let cell = a_cell();
    store.begin(&cell).unwrap();
    let samples = store.cell_dir(&cell).join("samples.jsonl");
    let c = std::ffi::CString::new(samples.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = store.clone();
    let cell2 = cell.clone();
    std::thread::spawn(move || {
        let _ = tx.send(reader.read(&cell2).map(|_| ()).map_err(|e| e.to_string()));
    });
    // Generous: a blocked read never answers at all.
    let got = rx.recv_timeout(std::time::Duration::from_secs(30));
    let err = got
        .expect("reading the store blocked on a FIFO")
        .unwrap_err();
    assert!(err.contains("not a regular file"), "{err}");
    fs::remove_file(&samples).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", store.cell_dir(&cell).join("facts.json")).unwrap();
    assert!(store.read(&cell).is_err());
    let _ = fs::remove_dir_all(store.root());
}

#[test]
fn a_failure_is_recorded_and_cleared_by_the_next_sample() {
    let store = temp_store("failure");
    let cell = a_cell();
    let mut w = store.begin(&cell).unwrap();
    let failure = CellFailure::Transport {
        message: "fio: no such file".into(),
    };
    w.record_failure("s", 1.0, &failure).unwrap();
    assert_eq!(store.read(&cell).unwrap().failure.unwrap().failure, failure);
    w.append(&sample(1, RunKind::Measured, 1.0)).unwrap();
    assert!(store.read(&cell).unwrap().failure.is_none());
    assert_eq!(store.all().unwrap().len(), 1);
    let _ = fs::remove_dir_all(store.root());
}

#[test]
fn the_lock_is_exclusive_and_shared_by_its_holder() {
    let store = temp_store("lock");
    let held = store.lock().unwrap();
    // Another apply opens the store anew.
    let other = Store::open(store.root()).unwrap();
    let err = other
        .lock()
        .err()
        .expect("second lock must fail")
        .to_string();
    assert!(err.contains("locked"), "{err}");
    // The holder takes it again (apply --plan, then the walk), a clone too.
    let again = store.lock().unwrap();
    let cloned = store.clone().lock().unwrap();
    drop(held);
    assert!(other.lock().is_err(), "released while still held");
    drop((again, cloned));
    other.lock().unwrap();
    let _ = fs::remove_dir_all(store.root());
}

/// `lock_holder` probes the lock (a shared flock for an instant): `status` run in a
/// loop beside the timer's apply must never make that apply refuse.
#[test]
fn probing_the_lock_never_makes_a_taker_refuse() {
    let store = temp_store("lock-probe");
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let prober = {
        let (store, done) = (Store::open(store.root()).unwrap(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                let _ = store.lock_holder();
            }
        })
    };
    for i in 0..300 {
        let taker = Store::open(store.root()).unwrap();
        if let Err(e) = taker.lock() {
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            prober.join().unwrap();
            panic!("take {i}: {e}");
        }
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    prober.join().unwrap();
    let _ = fs::remove_dir_all(store.root());
}

/// skip.json holds the last attempt's reason; a failure or a stored run replaces it,
/// and a skip replaces a failure: the store holds what the last attempt found.
#[test]
fn a_skip_is_stored_apart_from_failures_and_each_replaces_the_other() {
    let store = temp_store("skip");
    let cell = a_cell();
    let mut w = store.begin(&cell).unwrap();
    let failure = crate::failure::CellFailure::Interrupted;
    w.record_failure("s1", 1.0, &failure).unwrap();
    w.record_skip("s2", 2.0, "iozone is not installed on pi-1")
        .unwrap();
    let d = store.read(&cell).unwrap();
    assert!(d.failure.is_none(), "a skip replaces the failure");
    let skip = d.skip.unwrap();
    assert_eq!(skip.reason, "iozone is not installed on pi-1");
    assert_eq!((skip.format, skip.session.as_str()), (FORMAT, "s2"));
    w.record_failure("s3", 3.0, &failure).unwrap();
    let d = store.read(&cell).unwrap();
    assert!(d.skip.is_none() && d.failure.is_some());
    w.record_skip("s4", 4.0, "r").unwrap();
    w.append(&sample(1, RunKind::Measured, 1.0)).unwrap();
    let d = store.read(&cell).unwrap();
    assert!(d.skip.is_none() && d.failure.is_none());
    let _ = fs::remove_dir_all(store.root());
}

/// `all` reads cells on several threads: every cell comes back with its own samples,
/// and of two broken cells the error names the one first in key order, whichever a
/// thread reached first.
#[test]
fn all_reads_every_cell_on_its_threads_and_names_the_first_broken_one_in_key_order() {
    let store = temp_store("all");
    let template = a_cell();
    let cells: Vec<plan::Cell> = (0..700u32)
        .map(|i| {
            let mut c = template.clone();
            c.key = crate::plan::CellKey::parse(&format!("{:032x}", u128::from(i) * 7919)).unwrap();
            c
        })
        .collect();
    for (i, c) in cells.iter().enumerate() {
        let mut w = store.begin(c).unwrap();
        w.append(&sample(1, RunKind::Measured, i as f64)).unwrap();
    }
    let all = store.all().unwrap();
    assert_eq!(all.len(), cells.len());
    for (i, c) in cells.iter().enumerate() {
        assert_eq!(all[&c.key].samples[0].metrics["random_read"], i as f64);
    }
    for i in [650, 20] {
        fs::write(
            store.cell_dir(&cells[i]).join("cell.json"),
            b"{\"format\": 1, ",
        )
        .unwrap();
    }
    for _ in 0..3 {
        let err = store.all().unwrap_err().to_string();
        assert!(err.contains(&cells[20].dir_name()), "{err}");
    }
    let _ = fs::remove_dir_all(store.root());
}

/// The samples file is checked as UTF-8 once, whole lines only: a line that is not
/// UTF-8 is still the one error, named by its line, a torn tail cut in the middle of a
/// character is still ignored, and a newer line is still refused.
#[test]
fn samples_read_through_one_utf8_check_fail_and_skip_as_line_by_line() {
    let store = temp_store("utf8");
    let cell = a_cell();
    let mut w = store.begin(&cell).unwrap();
    w.append(&sample(1, RunKind::Measured, 1.0)).unwrap();
    w.append(&sample(2, RunKind::Measured, 2.0)).unwrap();
    let path = store.cell_dir(&cell).join("samples.jsonl");
    let good = fs::read(&path).unwrap();
    let read = |bytes: &[u8]| {
        fs::write(&path, bytes).unwrap();
        store
            .read(&cell)
            .map(|d| d.samples.len())
            .map_err(|e| e.to_string())
    };
    assert_eq!(read(&good), Ok(2));

    // A torn tail whose last byte starts a two-byte character.
    let mut torn = good.clone();
    torn.extend_from_slice(b"{\"format\":1,\"session\":\"\xc3");
    assert_eq!(read(&torn), Ok(2));

    // The second line's session not UTF-8: the error names line 2, as serde_json
    // reading that line alone words it.
    let text = String::from_utf8(good.clone()).unwrap();
    let second = text
        .lines()
        .nth(1)
        .unwrap()
        .replace("\"session\":\"s\"", "\"session\":\"\u{1}\"");
    let mut bad = format!("{}\n", text.lines().next().unwrap()).into_bytes();
    bad.extend(
        second
            .as_bytes()
            .iter()
            .map(|&b| if b == 1 { 0xff } else { b }),
    );
    bad.push(b'\n');
    let alone = serde_json::from_slice::<Sample>(&bad[bad.len() - second.len() - 1..])
        .unwrap_err()
        .to_string();
    let err = read(&bad).unwrap_err();
    assert!(
        err.contains(":2: ") && err.ends_with(&alone),
        "{err} / {alone}"
    );

    // A line of a newer format among good ones.
    let newer = text.replacen("{\"format\":1,", "{\"format\":2,", 2);
    let newer = newer.replacen("{\"format\":2,", "{\"format\":1,", 1);
    let err = read(newer.as_bytes()).unwrap_err();
    assert!(err.contains("format 2 is newer"), "{err}");
    let _ = fs::remove_dir_all(store.root());
}

/// A cell's facts.json, parsed once: its format checked from the value, with the
/// errors the two-pass read gave.
#[test]
fn facts_read_in_one_pass_refuse_what_the_two_pass_read_refused() {
    let store = temp_store("facts");
    let cell = a_cell();
    store.begin(&cell).unwrap();
    let path = store.cell_dir(&cell).join("facts.json");
    let read = |bytes: &str| {
        fs::write(&path, bytes).unwrap();
        store
            .read(&cell)
            .map(|d| d.facts)
            .map_err(|e| e.to_string())
    };
    let facts = read("{\"format\": 1, \"kernel\": \"Linux 6.6\"}")
        .unwrap()
        .unwrap();
    assert_eq!(facts["kernel"], "Linux 6.6");
    for (doc, says) in [
        ("{\"format\": 2, \"kernel\": \"x\"}", "format 2 is newer"),
        ("{\"kernel\": \"x\"}", "no format field"),
        ("{\"format\": \"1\"}", "no format field"),
        ("[1, 2]", "trailing characters"),
        ("{\"format\": 1,", "EOF while parsing"),
    ] {
        let err = read(doc).unwrap_err();
        let two_pass = files::parse_doc::<serde_json::Value>(&path, None, doc.as_bytes(), FORMAT)
            .unwrap_err()
            .to_string();
        assert_eq!(err, two_pass, "{doc}");
        assert!(err.contains(says), "{doc}: {err}");
    }
    let _ = fs::remove_dir_all(store.root());
}
