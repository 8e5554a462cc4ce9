//! A report rendered from the store alone, with no board file, is the report made with
//! them, byte for byte; stored cells under other inputs or of unselected boards stay out.

use super::tests::usb_against_sd;
use super::tests_provenance::cell_with_facts;
use super::tests_tables::{measured, table};
use super::*;
use crate::model::{ColumnSpec, TableSpec};
use crate::plan::{expand, fixtures};

/// A report made from the store alone, without any board file, is the report made with
/// them, byte for byte, in every format; a stored cell under other inputs, or of a board
/// the matrix does not select, is not part of it.
#[test]
fn a_report_from_the_store_alone_is_the_report_with_the_board_files() {
    let (mut ws, mut scenario, _) = usb_against_sd();
    scenario.report.tables.push(TableSpec {
        title: "Disk".into(),
        description: None,
        columns: vec![ColumnSpec {
            test: "disk-4k".into(),
            metric: "random_read".into(),
            label: None,
        }],
        rows: Some(vec![Axis::Board]),
        pivot: Some(Axis::Storage),
        only: None,
    });
    let plan = expand(&ws, &scenario);
    let mut data = measured(&plan, &[20.0, 20.4, 20.6]);
    for c in &plan.cells {
        let f = cell_with_facts(c, "Linux 6.1.0 aarch64");
        let d = data.get_mut(&c.key).unwrap();
        d.facts = f.facts;
    }
    // Stored cells the scenario does not have now: one measured with other parameters,
    // and one measured earlier under another board model (the board file was edited
    // since; without it, the cell measured last stands for the address).
    let mut other_params = fixtures::workspace();
    other_params.scenarios[0].params.insert(
        "disk-4k".into(),
        BTreeMap::from([(
            "size".to_string(),
            crate::model::ParamValue::Str("8M".into()),
        )]),
    );
    let mut other_model = fixtures::workspace();
    other_model.boards.get_mut(&"pi-1".into()).unwrap().model = "Raspberry Pi 5".into();
    for w in [other_params, other_model] {
        let s = w.scenarios[0].clone();
        let c = expand(&w, &s).cells.remove(0);
        assert!(!data.contains_key(&c.key));
        let mut d = measured(
            &Plan {
                cells: vec![c.clone()],
                skipped: vec![],
            },
            &[1.0, 2.0],
        )
        .remove(&c.key)
        .unwrap();
        for s in &mut d.samples {
            (s.started, s.ended) = (s.started - 500.0, s.ended - 500.0);
        }
        data.insert(c.key.clone(), d);
    }
    let with_files = build(&ws, &scenario, &plan, &data);

    // What apply records of the plan: the combinations it cannot make cells of.
    let store_dir = std::env::temp_dir().join(format!("bp-report-skips-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&store_dir);
    let store = crate::store::Store::open(&store_dir).unwrap();
    for b in ws.boards.keys() {
        let mine: Vec<_> = plan
            .skipped
            .iter()
            .filter(|s| &s.address.board == b)
            .cloned()
            .collect();
        store.record_plan_skips(b, &scenario.name, &mine).unwrap();
    }
    let recorded = store.all_plan_skips(ws.boards.keys()).unwrap();
    let _ = std::fs::remove_dir_all(&store_dir);
    assert!(
        !plan.skipped.is_empty(),
        "the boot storage is not formatted: skipped"
    );
    let boards = std::mem::take(&mut ws.boards);
    let from_store = crate::plan::stored::for_report(
        &ws.boards,
        &ws.recipes,
        &scenario,
        Plan::default(),
        &data,
        &recorded,
        &BTreeMap::new(),
    );
    assert_eq!(
        from_store.cells.len(),
        plan.cells.len(),
        "neither stale cell is the scenario's"
    );
    let alone = build(&ws, &scenario, &from_store, &data);
    for e in exporters() {
        let (a, b) = (e.render(&with_files).unwrap(), e.render(&alone).unwrap());
        assert!(
            a == b,
            "{} differs:\n{}\n---\n{}",
            e.file_name(),
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b)
        );
    }
    // Board files back, one of them renamed: its stored cells still show, once.
    ws.boards = boards;
    let pi2 = ws.boards.remove(&"pi-2".into()).unwrap();
    ws.boards.insert(
        "pi-9".into(),
        crate::model::Board {
            name: "pi-9".into(),
            ..pi2
        },
    );
    scenario.matrix.board = vec!["pi-1".into(), "pi-9".into()];
    let plan = crate::plan::stored::with_stored(
        &ws.boards,
        &ws.recipes,
        &scenario,
        expand(&ws, &scenario),
        &data,
    );
    let r = build(&ws, &scenario, &plan, &data);
    let t = table(&r, "disk-4k");
    assert!(t.rows.iter().any(|r| r.config[0] == "pi-2"), "{t:#?}");
    assert!(
        r.incomplete.iter().any(|i| i.cell.contains("pi-9")),
        "{:#?}",
        r.incomplete
    );
    // A matrix that no longer selects pi-2 drops its stored cells too.
    scenario.matrix.board_patterns = vec!["pi-1".into(), "pi-9".into()];
    let plan = crate::plan::stored::with_stored(
        &ws.boards,
        &ws.recipes,
        &scenario,
        expand(&ws, &scenario),
        &data,
    );
    assert!(
        plan.cells
            .iter()
            .all(|c| c.address.board.as_str() != "pi-2")
    );
}
