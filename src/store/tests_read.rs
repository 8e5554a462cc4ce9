//! How `Store::all` reads: cell.json's inputs kept as text read the same as parsed,
//! broken documents fail as they always did, and a cell directory is listed once.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use super::files::{parse_doc, parse_record};
use super::*;
use crate::plan;

/// cell.json as every benchpipe before `StoredJson` read it: inputs as a `Value`.
fn as_before(bytes: &[u8]) -> std::result::Result<(CellKey, Address, Value), String> {
    #[derive(Deserialize)]
    struct Parsed {
        #[allow(dead_code)]
        format: u32,
        key: CellKey,
        address: Address,
        inputs: Value,
    }
    parse_doc::<Parsed>(Path::new("cell.json"), None, bytes, FORMAT)
        .map(|p| (p.key, p.address, p.inputs))
        .map_err(|e| e.to_string())
}

fn now(bytes: &[u8]) -> std::result::Result<(CellKey, Address, Value), String> {
    parse_record(Path::new("cell.json"), bytes)
        .map(|r| (r.key, r.address, r.inputs.value().clone()))
        .map_err(|e| e.to_string())
}

fn record_doc(inputs: &str) -> String {
    let address = serde_json::to_string(&a_cell().address).unwrap();
    format!(
        "{{\"format\": 1, \"key\": \"{}\", \"address\": {address}, \"inputs\": {inputs}}}",
        "0".repeat(32)
    )
}

fn a_cell() -> plan::Cell {
    let ws = plan::fixtures::workspace();
    plan::expand(&ws, &ws.scenarios[0]).cells.remove(0)
}

#[test]
fn a_cell_json_reads_the_same_with_its_inputs_as_text_as_it_did_parsed() {
    let inputs = serde_json::to_string_pretty(a_cell().inputs.json()).unwrap();
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let mut docs = vec![
        record_doc(&inputs),
        record_doc("{\"a\": [1, -2, 3.5e3, \"\\u00e9\\n\", null, true, {}]}"),
        // What a Value refuses but the text's syntax allows: each an error, as before.
        record_doc("{\"n\": 1e999}"),
        record_doc(&deep),
        record_doc("{\"s\": \"\\ud800\"}"),
        record_doc("{\"a\": 1, }"),
        record_doc("{\"a\": 1}} trailing"),
    ];
    // A newer format is refused before its broken inputs are looked at.
    docs.push(record_doc("{\"n\": 1e999}").replace("\"format\": 1", "\"format\": 2"));
    // Two formats, none, one not a number; an inputs twice; no object at all.
    docs.push(record_doc("{}").replace("\"format\": 1", "\"format\": 1, \"format\": 1"));
    docs.push(record_doc("{}").replace("\"format\": 1,", ""));
    docs.push(record_doc("{}").replace("\"format\": 1", "\"format\": \"1\""));
    docs.push(record_doc("{}").replace('}', ", \"inputs\": {}}"));
    docs.push(format!("[{}]", record_doc("{}")));
    // An unknown field is ignored, even one a Value would refuse.
    docs.push(record_doc("{}").replace("\"format\": 1", "\"format\": 1, \"x\": [1e999]"));
    let mut errors = 0;
    for doc in &docs {
        let (before, now) = (as_before(doc.as_bytes()), now(doc.as_bytes()));
        assert_eq!(now, before, "{doc}");
        errors += usize::from(now.is_err());
    }
    assert_eq!(errors, docs.len() - 3, "every broken document was refused");
    assert_eq!(now(docs[0].as_bytes()).unwrap().2, *a_cell().inputs.json());
}

#[test]
fn inputs_kept_as_text_compare_and_serialise_as_their_value() {
    let doc = record_doc("{\"b\": [1, 2], \"a\": \"x\"}");
    let read = parse_record(Path::new("cell.json"), doc.as_bytes()).unwrap();
    let given = StoredJson::from(json!({"a": "x", "b": [1, 2]}));
    assert_eq!(read.inputs, given);
    assert_eq!(
        serde_json::to_string(&read.inputs).unwrap(),
        "{\"a\":\"x\",\"b\":[1,2]}"
    );
    assert_eq!(format!("{:?}", read.inputs), format!("{:?}", given.value()));
}

/// A cell directory is listed to find which of its files to open: the ones it holds
/// are all read, and a cell "directory" that is not one is an error naming its file.
#[test]
fn every_file_of_a_cell_is_read_and_a_file_in_place_of_its_directory_is_an_error() {
    let dir = std::env::temp_dir().join(format!("bp-store-listed-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let store = Store::open(&dir).unwrap();
    let cell = a_cell();
    let w = store.begin(&cell).unwrap();
    w.write_facts(
        &CellFacts {
            kernel: Some("k".into()),
            ..CellFacts::default()
        },
        "1-1",
    )
    .unwrap();
    w.record_skip("s", 1.0, "no tool").unwrap();
    store.mark_redo(&cell, "s").unwrap();
    let d = &store.all().unwrap()[&cell.key];
    assert_eq!(d.facts.as_ref().unwrap()["kernel"], "k");
    assert_eq!(d.skip.as_ref().unwrap().reason, "no tool");
    assert!(d.redo.is_none(), "nothing was stored to redo");
    assert_eq!(
        d.record.as_ref().unwrap().inputs.value(),
        cell.inputs.json()
    );
    assert_eq!(store.read(&cell).unwrap(), *d);

    fs::remove_dir_all(store.cell_dir(&cell)).unwrap();
    fs::write(store.cell_dir(&cell), b"not a directory").unwrap();
    let err = store.all().unwrap_err().to_string();
    assert!(
        err.contains(&format!("{}/cell.json", cell.dir_name())),
        "{err}"
    );
    let _ = fs::remove_dir_all(dir);
}

/// Cells whose facts.json holds the same bytes share one parsed value (a report then
/// finds them equal without walking them); other bytes get a value of their own, and
/// every cell reads the facts it was given.
#[test]
fn cells_with_the_same_facts_bytes_share_one_value_and_others_keep_their_own() {
    let dir = std::env::temp_dir().join(format!("bp-store-shared-facts-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let store = Store::open(&dir).unwrap();
    let ws = crate::plan::fixtures::workspace();
    let cells = crate::plan::expand(&ws, &ws.scenarios[0]).cells;
    assert!(cells.len() >= 3, "the fixture has three cells to store");
    let board = json!({"kernel": "Linux 6.6", "os_release": {"ID": "debian"}});
    let other = json!({"kernel": "Linux 6.12", "os_release": {"ID": "debian"}});
    for (cell, facts) in cells.iter().zip([&board, &board, &other]) {
        let facts = CellFacts::of_stored(facts);
        store
            .begin(cell)
            .unwrap()
            .write_facts(&facts, "1-1")
            .unwrap();
    }
    let all = store.all().unwrap();
    let facts = |i: usize| {
        all[&cells[i].key]
            .facts
            .clone()
            .expect("facts were written")
    };
    assert!(std::sync::Arc::ptr_eq(&facts(0), &facts(1)));
    assert!(!std::sync::Arc::ptr_eq(&facts(0), &facts(2)));
    assert_eq!(facts(0)["kernel"], "Linux 6.6");
    assert_eq!(facts(2)["kernel"], "Linux 6.12");
    // Read one by one, each cell's facts are the same values.
    for (i, cell) in cells.iter().take(3).enumerate() {
        assert_eq!(store.read(cell).unwrap().facts, Some(facts(i)));
    }
    let _ = fs::remove_dir_all(&dir);
}
