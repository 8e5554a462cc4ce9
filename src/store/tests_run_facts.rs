//! A cell's facts per run on a temporary store: each apply's opening kept beside the
//! latest, the newest `MAX_RUN_FACTS` kept and read, merged session by session (a run
//! two stores saw differently a conflict), and gone with their cell.

use std::collections::BTreeSet;

use super::*;
use crate::plan;

fn temp_store(tag: &str) -> Store {
    let dir = std::env::temp_dir().join(format!("bp-store-runf-{tag}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    Store::open(dir).unwrap()
}

fn cells() -> Vec<plan::Cell> {
    let ws = plan::fixtures::workspace();
    plan::expand(&ws, &ws.scenarios[0]).cells
}

fn facts(kernel: &str) -> CellFacts {
    CellFacts {
        kernel: Some(kernel.into()),
        ..CellFacts::default()
    }
}

fn sample(seq: u32, session: &str) -> Sample {
    Sample {
        format: FORMAT,
        seq,
        kind: RunKind::Measured,
        session: session.into(),
        started: 1.0,
        ended: 2.0,
        metrics: BTreeMap::from([("random_read".to_string(), 1.0)]),
        flags: vec![],
        telemetry: None,
        command: "true".into(),
        log: String::new(),
        order: None,
        board_seq: None,
    }
}

/// The kernel each run saw, by session, as `all_with_run_facts` reads them.
fn kernels(store: &Store, cell: &plan::Cell) -> BTreeMap<String, String> {
    store.all_with_run_facts().unwrap()[&cell.key]
        .run_facts
        .iter()
        .map(|(s, f)| (s.clone(), f["kernel"].as_str().unwrap_or("").to_string()))
        .collect()
}

/// Each opening's facts stay as that run's, `facts.json` is the latest (the same
/// bytes), and only a read that asks gets them.
#[test]
fn each_run_s_facts_are_kept_beside_the_latest_and_read_when_asked() {
    let store = temp_store("round");
    let cell = cells().remove(0);
    for (session, kernel) in [("900-3", "6.1"), ("1000-2", "6.6"), ("1000-10", "6.12")] {
        store
            .begin(&cell)
            .unwrap()
            .write_facts(&facts(kernel), session)
            .unwrap();
    }
    assert_eq!(
        kernels(&store, &cell),
        BTreeMap::from([
            ("900-3".into(), "6.1".into()),
            ("1000-2".into(), "6.6".into()),
            ("1000-10".into(), "6.12".into()),
        ])
    );
    let dir = store.cell_dir(&cell);
    assert_eq!(
        fs::read(dir.join("facts.json")).unwrap(),
        fs::read(dir.join("facts/1000-10.json")).unwrap()
    );
    assert_eq!(
        run_facts::sessions(&dir).unwrap(),
        ["900-3", "1000-2", "1000-10"],
        "oldest first, by number"
    );
    let plain = &store.all().unwrap()[&cell.key];
    assert!(plain.run_facts.is_empty());
    assert_eq!(plain.facts.as_ref().unwrap()["kernel"], "6.12");
    // What is no session's is not benchpipe's: left alone, never read.
    fs::write(dir.join("facts/notes.json"), "not JSON").unwrap();
    fs::write(dir.join("facts/1-2-3.json"), "not JSON").unwrap();
    assert_eq!(kernels(&store, &cell).len(), 3);
    // A session that is no session id names no file.
    let err = store
        .begin(&cell)
        .unwrap()
        .write_facts(&facts("x"), "../../x")
        .unwrap_err();
    assert!(err.to_string().contains("not a session id"), "{err}");
    let _ = fs::remove_dir_all(store.root());
}

/// A cell keeps the newest `MAX_RUN_FACTS` runs' facts (the oldest go at the next
/// write), and a read looks at no more than those, however many lie there.
#[test]
fn the_newest_runs_facts_are_kept_and_read_and_no_more() {
    let store = temp_store("bound");
    let cell = cells().remove(0);
    store
        .begin(&cell)
        .unwrap()
        .write_facts(&facts("first"), "1-1")
        .unwrap();
    let dir = store.cell_dir(&cell);
    let doc = fs::read(dir.join("facts.json")).unwrap();
    for i in 2..=MAX_RUN_FACTS + 20 {
        fs::write(dir.join(format!("facts/{i}-1.json")), &doc).unwrap();
    }
    let read = kernels(&store, &cell);
    assert_eq!(read.len(), MAX_RUN_FACTS);
    assert!(!read.contains_key("20-1") && read.contains_key("21-1"));
    let newest = format!("{}-1", MAX_RUN_FACTS + 21);
    store
        .begin(&cell)
        .unwrap()
        .write_facts(&facts("newest"), &newest)
        .unwrap();
    let kept = run_facts::sessions(&dir).unwrap();
    assert_eq!(kept.len(), MAX_RUN_FACTS);
    assert_eq!(kept.first().map(String::as_str), Some("22-1"));
    assert_eq!(kept.last(), Some(&newest));
    assert_eq!(kernels(&store, &cell)[&newest], "newest");
    let _ = fs::remove_dir_all(store.root());
}

/// Merging unions the runs' facts of a cell both stores hold; a run both hold with
/// other facts is a conflict, the destination's kept; a cell only the source holds
/// comes with its runs' facts.
#[test]
fn merge_unions_runs_facts_and_a_run_seen_differently_is_a_conflict() {
    let (ours, theirs) = (temp_store("ours"), temp_store("theirs"));
    let mut all = cells();
    let (shared, only_theirs) = (all.remove(0), all.remove(0));
    let open = |store: &Store, cell: &plan::Cell, seq: u32, session: &str, kernel: &str| {
        let mut w = store.begin(cell).unwrap();
        w.write_facts(&facts(kernel), session).unwrap();
        w.append(&sample(seq, session)).unwrap();
    };
    open(&ours, &shared, 1, "100-1", "6.1");
    open(&ours, &shared, 2, "200-1", "6.6");
    open(&theirs, &shared, 1, "100-1", "6.1");
    open(&theirs, &shared, 2, "200-1", "6.6");
    open(&theirs, &shared, 3, "300-1", "6.12");
    open(&theirs, &only_theirs, 1, "300-1", "6.12");
    let merged = ours.merge_from(&theirs).unwrap();
    assert!(merged.conflicts.is_empty(), "{merged:?}");
    assert_eq!(merged.run_facts, 1, "{merged:?}");
    assert_eq!(merged.runs_added.len(), 1, "{merged:?}");
    let want = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(s, k)| ((*s).to_string(), (*k).to_string()))
            .collect()
    };
    assert_eq!(
        kernels(&ours, &shared),
        want(&[("100-1", "6.1"), ("200-1", "6.6"), ("300-1", "6.12")])
    );
    assert_eq!(kernels(&ours, &only_theirs), want(&[("300-1", "6.12")]));
    // Again: nothing more to add.
    let merged = ours.merge_from(&theirs).unwrap();
    assert_eq!((merged.run_facts, merged.conflicts.len()), (0, 0));

    // The source says run 200-1 saw another kernel: reported, ours kept.
    let path = theirs.cell_dir(&shared).join("facts/200-1.json");
    let doc = fs::read_to_string(&path).unwrap().replace("6.6", "6.7");
    fs::write(&path, doc).unwrap();
    let before = fs::read(ours.cell_dir(&shared).join("facts/200-1.json")).unwrap();
    let merged = ours.merge_from(&theirs).unwrap();
    assert_eq!(merged.conflicts.len(), 1, "{merged:?}");
    let c = &merged.conflicts[0];
    assert!(
        c.contains(&shared.dir_name()) && c.contains("facts/200-1.json"),
        "{c}"
    );
    assert_eq!(
        fs::read(ours.cell_dir(&shared).join("facts/200-1.json")).unwrap(),
        before
    );
    // The same facts written apart (another spacing) are the same run's.
    let value: serde_json::Value = serde_json::from_slice(&before).unwrap();
    fs::write(&path, value.to_string()).unwrap();
    let merged = ours.merge_from(&theirs).unwrap();
    assert!(merged.conflicts.is_empty(), "{merged:?}");
    let _ = fs::remove_dir_all(ours.root());
    let _ = fs::remove_dir_all(theirs.root());
}

/// `gc` removes a cell's runs' facts with it, and keeps a kept cell's.
#[test]
fn gc_removes_runs_facts_with_their_cell_and_keeps_a_kept_cell_s() {
    let store = temp_store("gc");
    let mut all = cells();
    let (gone, kept) = (all.remove(0), all.remove(0));
    for cell in [&gone, &kept] {
        for session in ["1-1", "2-1"] {
            store
                .begin(cell)
                .unwrap()
                .write_facts(&facts("6.6"), session)
                .unwrap();
        }
    }
    let unreferenced = store
        .unreferenced(&BTreeSet::from([kept.key.clone()]))
        .unwrap();
    assert_eq!(unreferenced.len(), 1);
    assert_eq!(unreferenced[0].dir, gone.dir_name());
    store.remove_cell_dir(&unreferenced[0]).unwrap();
    assert!(!store.cell_dir(&gone).exists());
    assert_eq!(kernels(&store, &kept).len(), 2);
    let _ = fs::remove_dir_all(store.root());
}
