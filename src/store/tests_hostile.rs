//! A store someone sent, read back: long texts bounded and said to be cut, names held to
//! the board-file rule before they make a path, allocation by what was read, links in
//! place of cells refused, and every such store an error of bad input (exit 2) naming
//! its file.

use serde_json::json;

use super::files::samples_capacity;
use super::*;
use crate::plan;

fn temp_store(tag: &str) -> Store {
    let dir = std::env::temp_dir().join(format!("bp-store-hostile-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    Store::open(dir).unwrap()
}

fn a_cell() -> plan::Cell {
    let ws = plan::fixtures::workspace();
    plan::expand(&ws, &ws.scenarios[0]).cells.remove(0)
}

/// A failure's cause, a skip's reason, facts (values and keys) and a board's state of
/// megabytes each are read back as at most `MAX_BYTES` each, ending with the cut.
#[test]
fn every_long_stored_text_is_read_back_bounded_and_says_where_it_was_cut() {
    let store = temp_store("bound");
    let cell = a_cell();
    let dir = store.cell_dir(&cell);
    store.begin(&cell).unwrap();
    let big = "x".repeat(3 << 20);
    let max = crate::shown::MAX_BYTES;
    let cut = |s: &str| s.len() <= max && s.ends_with(&format!("… [cut: {} bytes]", big.len()));
    let doc = json!({"format": 4, "session": big, "at": 1.0,
                     "failure": {"kind": "refused", "reason": big}});
    fs::write(dir.join("failure.json"), doc.to_string()).unwrap();
    let doc = json!({"format": 1, "session": "s", "at": 1.0, "reason": big});
    fs::write(dir.join("skip.json"), doc.to_string()).unwrap();
    let doc = json!({"format": 1, "kernel": big, "tools": {big.clone(): big}});
    fs::write(dir.join("facts.json"), doc.to_string()).unwrap();
    let d = store.read(&cell).unwrap();
    let failure = d.failure.unwrap();
    assert!(cut(&failure.session));
    let crate::failure::CellFailure::Refused { reason } = &failure.failure else {
        panic!("{:?}", failure.failure);
    };
    assert!(cut(reason), "{}", reason.len());
    assert!(cut(&d.skip.unwrap().reason));
    let facts = d.facts.unwrap();
    assert!(cut(facts["kernel"].as_str().unwrap()));
    let (key, value) = facts["tools"].as_object().unwrap().iter().next().unwrap();
    assert!(cut(key) && cut(value.as_str().unwrap()));
    // A document no longer than the bound reads as it is.
    let doc = json!({"format": 1, "session": "s", "at": 1.0, "reason": "short"});
    fs::write(dir.join("skip.json"), doc.to_string()).unwrap();
    assert_eq!(store.read(&cell).unwrap().skip.unwrap().reason, "short");

    let state = json!({"format": 1, "board": "pi-1", "image": big, "identity": big,
                       "verified_session": "s"});
    fs::create_dir_all(store.root().join("boards")).unwrap();
    fs::write(store.root().join("boards/pi-1.json"), state.to_string()).unwrap();
    let s = store
        .board_state(&crate::model::BoardName::new("pi-1"))
        .unwrap()
        .unwrap();
    assert!(cut(&s.image) && cut(&s.identity));
    let _ = fs::remove_dir_all(store.root());
}

/// A name a board file could not have, in any field of a stored address (a path up and
/// out, an absolute one, a separator, a control character), is refused before the
/// store makes a path of it: bad input naming cell.json and the field.
#[test]
fn a_stored_address_whose_name_is_no_board_file_name_is_refused() {
    let store = temp_store("names");
    let cell = a_cell();
    store.begin(&cell).unwrap();
    let path = store.cell_dir(&cell).join("cell.json");
    let good: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    for field in ["board", "test", "image", "storage", "filesystem"] {
        for bad in [
            "../../x/trav",
            "/tmp/trav",
            "a/b",
            "..",
            ".hidden",
            "-o",
            "x\u{1b}[2J",
            "",
        ] {
            let mut doc = good.clone();
            doc["address"][field] = bad.into();
            fs::write(&path, doc.to_string()).unwrap();
            let err = store.all().unwrap_err();
            assert_eq!(err.exit_code(), crate::error::EXIT_BAD_INPUT, "{err}");
            let text = err.to_string();
            assert!(
                text.contains("cell.json") && text.contains(&format!("address.{field} `")),
                "{text}"
            );
            assert!(!text.chars().any(char::is_control), "{text:?}");
        }
    }
    fs::write(&path, good.to_string()).unwrap();
    assert_eq!(store.all().unwrap().len(), 1);
    let _ = fs::remove_dir_all(store.root());
}

/// The samples vector is sized by what was read: a file of bare newlines (or of lines
/// too short to be samples) reserves no more than its bytes can make.
#[test]
fn samples_are_reserved_by_the_bytes_read_not_the_newlines_counted() {
    let newlines = vec![b'\n'; 64 << 20];
    assert!(samples_capacity(&newlines) <= newlines.len() / 100);
    assert_eq!(samples_capacity(b"{}\n{}\n"), 0);
    let short = "{\"format\":1}\n".repeat(1000);
    assert_eq!(samples_capacity(short.as_bytes()), short.len() / 100);
    // Real lines, each over the least a sample takes: one slot each.
    let store = temp_store("capacity");
    let cell = a_cell();
    let mut w = store.begin(&cell).unwrap();
    for seq in 1..=5 {
        w.append(&Sample {
            format: FORMAT,
            seq,
            kind: RunKind::Warmup,
            session: String::new(),
            started: 0.0,
            ended: 0.0,
            metrics: BTreeMap::new(),
            flags: vec![],
            telemetry: None,
            command: String::new(),
            log: String::new(),
            order: None,
            board_seq: None,
        })
        .unwrap();
    }
    let bytes = fs::read(store.cell_dir(&cell).join("samples.jsonl")).unwrap();
    assert_eq!(samples_capacity(&bytes), 5);
    assert_eq!(store.read(&cell).unwrap().samples.len(), 5);
    // A file of bare newlines is an error at its first line, of bad input.
    fs::write(
        store.cell_dir(&cell).join("samples.jsonl"),
        &newlines[..1 << 20],
    )
    .unwrap();
    let err = store.read(&cell).unwrap_err();
    assert_eq!(err.exit_code(), crate::error::EXIT_BAD_INPUT);
    assert!(err.to_string().contains("samples.jsonl:1:"), "{err}");
    let _ = fs::remove_dir_all(store.root());
}

/// What the store holds that benchpipe never writes there is bad input (exit 2),
/// naming the file: a broken or newer document, a FIFO, a link for a file or for a
/// cell's directory, a file for a cell's directory.
#[test]
fn a_broken_store_is_bad_input_naming_its_file() {
    let store = temp_store("exit");
    let cell = a_cell();
    store.begin(&cell).unwrap();
    let dir = store.cell_dir(&cell);
    let expect = |what: &str, name: &str| {
        let err = store.all().unwrap_err();
        assert_eq!(
            err.exit_code(),
            crate::error::EXIT_BAD_INPUT,
            "{what}: {err}"
        );
        assert!(err.to_string().contains(name), "{what}: {err}");
    };
    fs::write(dir.join("skip.json"), b"{\"format\": 1, \"reason\": 3}").unwrap();
    expect("a field of the wrong type", "skip.json");
    fs::write(dir.join("skip.json"), b"{\"format\": 9}").unwrap();
    expect("a newer format", "skip.json");
    fs::remove_file(dir.join("skip.json")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", dir.join("facts.json")).unwrap();
    expect("a link", "facts.json");
    fs::remove_file(dir.join("facts.json")).unwrap();
    let c = std::ffi::CString::new(dir.join("redo.json").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    expect("a FIFO", "redo.json");
    fs::remove_file(dir.join("redo.json")).unwrap();
    // The cell's directory moved elsewhere, and a link left in its place.
    let elsewhere = store.root().with_extension("elsewhere");
    let _ = fs::remove_dir_all(&elsewhere);
    fs::rename(&dir, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
    expect("a link for a cell", &cell.dir_name());
    fs::remove_file(&dir).unwrap();
    fs::write(&dir, b"not a directory").unwrap();
    expect("a file for a cell", "cell.json");
    let _ = fs::remove_dir_all(store.root());
    let _ = fs::remove_dir_all(&elsewhere);
}

/// A cell's facts per run are read as hostile input too, by the one read that reads
/// them (`all_with_run_facts`; reports read none and are not stopped): a link, a FIFO
/// (without blocking), a directory, a file over the bound, a newer format, more than a
/// cell's bytes together, a link or a file in place of `facts/`: bad input naming the
/// file. No write goes through a link in place of `facts/`, and a long text is cut.
#[test]
fn a_cell_s_facts_per_run_benchpipe_did_not_write_are_refused_naming_them() {
    use std::os::unix::fs::symlink;
    let store = temp_store("runfacts");
    let cell = a_cell();
    let w = store.begin(&cell).unwrap();
    w.write_facts(&CellFacts::default(), "1-1").unwrap();
    let facts = store.cell_dir(&cell).join(RUN_FACTS_DIR);
    let expect = |what: &str, name: &str| {
        let err = store.all_with_run_facts().unwrap_err();
        assert_eq!(
            err.exit_code(),
            crate::error::EXIT_BAD_INPUT,
            "{what}: {err}"
        );
        assert!(err.to_string().contains(name), "{what}: {err}");
        assert!(store.all().is_ok(), "{what}: a report reads no run's facts");
    };
    symlink("/etc/passwd", facts.join("2-1.json")).unwrap();
    expect("a link", "2-1.json");
    fs::remove_file(facts.join("2-1.json")).unwrap();
    let c = std::ffi::CString::new(facts.join("3-1.json").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    expect("a FIFO", "3-1.json");
    fs::remove_file(facts.join("3-1.json")).unwrap();
    fs::create_dir(facts.join("4-1.json")).unwrap();
    expect("a directory", "4-1.json");
    fs::remove_dir(facts.join("4-1.json")).unwrap();
    let f = fs::File::create(facts.join("5-1.json")).unwrap();
    f.set_len(MAX_RUN_FACTS_BYTES + 1).unwrap();
    expect("too large", "5-1.json");
    fs::remove_file(facts.join("5-1.json")).unwrap();
    fs::write(facts.join("6-1.json"), b"{\"format\": 9}").unwrap();
    expect("a newer format", "6-1.json");
    fs::write(facts.join("6-1.json"), b"[").unwrap();
    expect("not JSON", "6-1.json");
    fs::remove_file(facts.join("6-1.json")).unwrap();

    // Each under the bound, more than a cell's together: refused at the one that
    // passes it.
    let mut padded = b"{\"format\": 1}".to_vec();
    padded.resize(usize::try_from(MAX_RUN_FACTS_BYTES).unwrap(), b' ');
    let n = MAX_CELL_RUN_FACTS_BYTES / MAX_RUN_FACTS_BYTES + 1;
    for i in 0..n {
        fs::write(facts.join(format!("{}-1.json", 10 + i)), &padded).unwrap();
    }
    expect("too much together", "may hold together");
    for i in 0..n {
        fs::remove_file(facts.join(format!("{}-1.json", 10 + i))).unwrap();
    }

    // A long text is cut, as in facts.json.
    let big = "x".repeat(3 << 20);
    let doc = json!({"format": 1, "kernel": big});
    fs::write(facts.join("7-1.json"), doc.to_string()).unwrap();
    let d = &store.all_with_run_facts().unwrap()[&cell.key];
    let kernel = d.run_facts["7-1"]["kernel"].as_str().unwrap();
    assert!(kernel.len() <= crate::shown::MAX_BYTES, "{}", kernel.len());

    // `facts/` a link to a directory elsewhere: refused, read or written, and nothing
    // is written there.
    let elsewhere = store.root().with_extension("runfacts-elsewhere");
    let _ = fs::remove_dir_all(&elsewhere);
    fs::create_dir_all(&elsewhere).unwrap();
    fs::remove_dir_all(&facts).unwrap();
    symlink(&elsewhere, &facts).unwrap();
    expect("a link for facts/", "facts");
    let err = w.write_facts(&CellFacts::default(), "8-1").unwrap_err();
    assert_eq!(err.exit_code(), crate::error::EXIT_BAD_INPUT, "{err}");
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
    fs::remove_file(&facts).unwrap();
    fs::write(&facts, b"not a directory").unwrap();
    expect("a file for facts/", "facts");
    let _ = fs::remove_dir_all(store.root());
    let _ = fs::remove_dir_all(&elsewhere);
}
