//! The report's tables on the fixture study: column order and labels, row labels,
//! scenario tables across tests with a pivot, and the Method section from the samples.
//! A report rendered from the store alone is `tests_stored.rs`.

use super::table::NOT_MEASURED;
use super::tests::{usb_against_sd, with_samples};
use super::*;
use crate::model::{Axis, ColumnSpec, RunOrder, TableSpec};
use crate::plan::expand;
use crate::store::{CellRecord, FORMAT};

/// Every cell of the plan measured with `values`, each with its `cell.json` record.
pub(super) fn measured(plan: &Plan, values: &[f64]) -> BTreeMap<CellKey, CellData> {
    plan.cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let xs: Vec<f64> = values.iter().map(|v| v + i as f64).collect();
            let mut d = with_samples(&xs);
            d.record = Some(CellRecord {
                format: FORMAT,
                key: c.key.clone(),
                address: c.address.clone(),
                inputs: c.inputs.json().clone().into(),
            });
            (c.key.clone(), d)
        })
        .collect()
}

pub(super) fn table<'r>(r: &'r Report, title: &str) -> &'r Table {
    r.tables
        .iter()
        .find(|t| t.title == title)
        .unwrap_or_else(|| panic!("no table {title}: {:#?}", r.tables))
}

/// The seed wrote `real | user | sys`: columns come in the recipe's order, under its
/// labels, and the scenario's label of a metric wins over the recipe's.
#[test]
fn columns_come_in_the_recipe_order_under_their_labels() {
    let (mut ws, mut scenario, _) = usb_against_sd();
    let xz = ws.recipes.get_mut(&"xz".into()).unwrap();
    let base = xz.metrics[0].clone();
    xz.metrics = ["real", "user", "sys"]
        .iter()
        .map(|n| MetricSpec {
            name: n.to_string(),
            label: Some(format!("{n} time")),
            unit: "s".into(),
            better: crate::model::Better::Lower,
            ..base.clone()
        })
        .collect();
    scenario
        .report
        .labels
        .metrics
        .insert(("xz".into(), "sys".into()), "system CPU".into());
    let plan = expand(&ws, &scenario);
    let mut data = measured(&plan, &[1.0, 1.1, 1.2]);
    for d in data.values_mut() {
        for s in &mut d.samples {
            let v = s.metrics["random_read"];
            s.metrics = BTreeMap::from([
                ("real".to_string(), v),
                ("user".to_string(), v * 3.0),
                ("sys".to_string(), v / 10.0),
            ]);
        }
    }
    let r = build(&ws, &scenario, &plan, &data);
    let t = table(&r, "xz");
    let labels: Vec<&str> = t.columns.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["real time", "user time", "system CPU"]);
    let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["real", "user", "sys"]);
    // Each value is its own metric's: user is three times real.
    let row = &t.rows[0];
    let (real, user) = (row.values[0].mean.unwrap(), row.values[1].mean.unwrap());
    assert!((user - 3.0 * real).abs() < 1e-9, "{row:?}");
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(
        md.contains("| board | real time (s) | user time (s) | system CPU (s) |"),
        "{md}"
    );
    assert!(md.contains("Lower is better."), "{md}");
}

/// Rows are named by what the boards and media are, as the seeds name them: the stored
/// models, with a name where two share a model, and the scenario's labels first.
#[test]
fn rows_are_named_by_models_and_the_scenarios_labels() {
    let (mut ws, mut scenario, _) = usb_against_sd();
    ws.boards.get_mut(&"pi-2".into()).unwrap().model = "Raspberry Pi 3".into();
    let plan = expand(&ws, &scenario);
    let data = measured(&plan, &[10.0, 10.5, 10.2]);
    let r = build(&ws, &scenario, &plan, &data);
    let rows: Vec<&str> = table(&r, "disk-4k")
        .rows
        .iter()
        .map(|r| r.label.as_str())
        .collect();
    assert_eq!(
        rows,
        [
            "Raspberry Pi 4, Samsung Evo+ 32GB, as-is",
            "Raspberry Pi 4, usb, as-is",
            "Raspberry Pi 4, usb, ext4",
            "Raspberry Pi 3, Samsung Evo+ 32GB, as-is",
            "Raspberry Pi 3, usb, as-is",
            "Raspberry Pi 3, usb, ext4",
        ]
    );
    assert_eq!(
        table(&r, "disk-4k").row_header,
        "board, storage, filesystem"
    );

    scenario.report.labels.axes.insert(
        Axis::Storage,
        vec![("usb".into(), "Kingston USB 3.0 SSD, UASP on".into())],
    );
    scenario
        .report
        .labels
        .axes
        .insert(Axis::Board, vec![("pi-1".into(), "Pi 4".into())]);
    let r = build(&ws, &scenario, &plan, &data);
    let t = table(&r, "disk-4k");
    assert_eq!(
        t.rows[1].label,
        "Pi 4, Kingston USB 3.0 SSD, UASP on, as-is"
    );
    assert_eq!(t.rows[3].label, "Raspberry Pi 3, Samsung Evo+ 32GB, as-is");
    assert_eq!(
        t.rows[1].config,
        ["pi-1", "usb", "as-is"],
        "names stay data"
    );
}

/// A label the scenario gives several values (`"pi-*" = "Pi 4"`, or one equal to
/// another board's model) never makes two rows look the same: each gets its name after
/// the label, as a default label two boards share does; a label of one value stays.
#[test]
fn a_label_the_scenario_gives_several_values_keeps_their_rows_apart() {
    let (ws, mut scenario, _) = usb_against_sd();
    scenario
        .report
        .labels
        .axes
        .insert(Axis::Board, vec![("pi-*".into(), "Pi 4".into())]);
    scenario
        .report
        .labels
        .axes
        .insert(Axis::Storage, vec![("usb".into(), "Kingston SSD".into())]);
    let plan = expand(&ws, &scenario);
    let data = measured(&plan, &[10.0, 10.5, 10.2]);
    let r = build(&ws, &scenario, &plan, &data);
    let rows: Vec<&str> = table(&r, "disk-4k")
        .rows
        .iter()
        .map(|r| r.label.as_str())
        .collect();
    assert_eq!(
        rows,
        [
            "Pi 4 (pi-1), Samsung Evo+ 32GB, as-is",
            "Pi 4 (pi-1), Kingston SSD, as-is",
            "Pi 4 (pi-1), Kingston SSD, ext4",
            "Pi 4 (pi-2), Samsung Evo+ 32GB, as-is",
            "Pi 4 (pi-2), Kingston SSD, as-is",
            "Pi 4 (pi-2), Kingston SSD, ext4",
        ]
    );
    // One board labelled as the other's model: the two would look the same.
    scenario
        .report
        .labels
        .axes
        .insert(Axis::Board, vec![("pi-2".into(), "Raspberry Pi 4".into())]);
    let r = build(&ws, &scenario, &plan, &data);
    let t = table(&r, "disk-4k");
    assert_eq!(
        t.rows[0].label,
        "Raspberry Pi 4 (pi-1), Samsung Evo+ 32GB, as-is"
    );
    assert_eq!(
        t.rows[3].label,
        "Raspberry Pi 4 (pi-2), Samsung Evo+ 32GB, as-is"
    );
}

/// The seed's disk table: boards as rows, storage as columns, one metric; a filesystem
/// that varies within a board and storage splits the row rather than hiding a cell.
#[test]
fn a_scenario_table_pivots_storage_into_columns() {
    let (ws, mut scenario, _) = usb_against_sd();
    scenario.report.tables.push(TableSpec {
        title: "Disk".into(),
        description: Some("4K random read per medium".into()),
        columns: vec![ColumnSpec {
            test: "disk-4k".into(),
            metric: "random_read".into(),
            label: Some("4K Random Read".into()),
        }],
        rows: Some(vec![Axis::Board]),
        pivot: Some(Axis::Storage),
        only: None,
    });
    let plan = expand(&ws, &scenario);
    let data = measured(&plan, &[10.0, 10.5, 10.2]);
    let r = build(&ws, &scenario, &plan, &data);
    let t = &r.tables[0];
    assert_eq!((t.id.as_str(), t.title.as_str()), ("table-1", "Disk"));
    assert_eq!(
        t.axes,
        ["board", "filesystem"],
        "ext4 only on usb: a row of its own"
    );
    let headers: Vec<String> = t
        .columns
        .iter()
        .map(|c| format!("{}, {}", c.label, c.pivot.clone().unwrap()))
        .collect();
    assert_eq!(
        headers,
        ["4K Random Read, Samsung Evo+ 32GB", "4K Random Read, usb"]
    );
    let cells: Vec<Vec<usize>> = t
        .rows
        .iter()
        .map(|r| r.values.iter().map(|v| v.n).collect())
        .collect();
    // pi-1 as-is (sd, usb), pi-1 ext4 (usb only: sd is boot), likewise pi-2.
    assert_eq!(cells, [[3, 3], [0, 3], [3, 3], [0, 3]]);
    assert_eq!(t.rows[1].values[0].text, "—");
    assert_eq!(t.rows[0].label, "Raspberry Pi 4 (pi-1), as-is");
    // Each value names its cell, which is the one at that board, storage and filesystem.
    let key = t.rows[0].values[1].cell.as_deref().unwrap();
    let cell = plan.cells.iter().find(|c| c.key.as_str() == key).unwrap();
    assert_eq!(
        cell.address.label(),
        "disk-4k on pi-1 usb/as-is (installed)"
    );
    // Without ext4 the table is the seed's: one row per board.
    scenario.matrix.filesystem.retain(|f| f.as_str() == "as-is");
    let plan = expand(&ws, &scenario);
    let r = build(&ws, &scenario, &plan, &measured(&plan, &[10.0, 10.5, 10.2]));
    assert_eq!(r.tables[0].axes, ["board"]);
    assert_eq!(r.tables[0].rows.len(), 2);
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(
        md.contains("## Disk\n\n4K random read per medium\n\n| board | 4K Random Read, Samsung Evo+ 32GB (MB/s) | 4K Random Read, usb (MB/s) |"),
        "{md}"
    );
}

/// Columns from two tests share a row per configuration; a test without storage has
/// rows of its own rather than a value copied into every storage's row.
#[test]
fn a_scenario_table_spans_tests() {
    let (ws, mut scenario, _) = usb_against_sd();
    scenario.matrix.filesystem.retain(|f| f.as_str() == "as-is");
    scenario.report.tables.push(TableSpec {
        title: "Everything".into(),
        description: None,
        columns: vec![
            ColumnSpec {
                test: "xz".into(),
                metric: "random_read".into(),
                label: Some("xz".into()),
            },
            ColumnSpec {
                test: "disk-4k".into(),
                metric: "random_read".into(),
                label: None,
            },
        ],
        rows: None,
        pivot: None,
        only: None,
    });
    let plan = expand(&ws, &scenario);
    let r = build(&ws, &scenario, &plan, &measured(&plan, &[5.0, 5.1, 5.2]));
    let t = &r.tables[0];
    assert_eq!(t.tests, ["xz", "disk-4k"]);
    assert_eq!(t.axes, ["board", "storage"]);
    let filled: Vec<(String, Vec<bool>)> = t
        .rows
        .iter()
        .map(|r| (r.label.clone(), r.values.iter().map(|v| v.n > 0).collect()))
        .collect();
    assert_eq!(filled.len(), 6, "{filled:?}");
    assert!(
        filled
            .iter()
            .all(|(_, f)| f.iter().filter(|x| **x).count() == 1)
    );
    assert!(
        filled.iter().any(|(l, f)| l.ends_with(", —") && f[0]),
        "{filled:?}"
    );
}

/// The method line states the runs in the tables (6 after a second apply, where the
/// scenario asks for 3), the warm-ups stored and the run order the samples record.
#[test]
fn the_method_states_the_runs_in_the_tables_and_their_order() {
    let (ws, scenario, plan) = usb_against_sd();
    let mut data = measured(&plan, &[1.0, 1.1, 1.2, 1.0, 1.1, 1.3]);
    for d in data.values_mut() {
        let mut warm = d.samples[0].clone();
        warm.kind = crate::store::RunKind::Warmup;
        d.samples.insert(0, warm.clone());
        d.samples.insert(4, warm);
        for (i, s) in d.samples.iter_mut().enumerate() {
            s.seq = i as u32 + 1;
            s.order = Some(RunOrder::Interleaved);
        }
    }
    // One cell was measured by one apply only: a warm-up and 3 runs.
    let first = plan.cells[0].key.clone();
    data.get_mut(&first).unwrap().samples.truncate(4);
    let r = build(&ws, &scenario, &plan, &data);
    let m = &r.method;
    assert_eq!((m.runs_min, m.runs_max), (Some(3), Some(6)), "{m:?}");
    assert_eq!(m.runs, "3 to 6 measured runs per cell in the tables");
    assert_eq!(m.run_rule, "the scenario asks for 3 measured runs");
    assert_eq!((m.warmups_min, m.warmups_max), (Some(1), Some(2)));
    assert_eq!(m.orders, ["interleaved"]);
    assert!(m.order.starts_with("interleaved"), "{m:?}");
    assert!(
        r.methodology
            .starts_with("3 to 6 measured runs per cell in the tables (the scenario asks for 3"),
        "{}",
        r.methodology
    );
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(
        md.contains("- Measured runs: 3 to 6 measured runs per cell"),
        "{md}"
    );
    assert!(md.contains("- Run order: interleaved"), "{md}");
}

/// Flagged runs are marked in the cell they count in, and the validity section lists
/// every flag and warning with its runs.
#[test]
fn flagged_runs_are_marked_in_their_cell_and_listed_under_validity() {
    let (ws, scenario, plan) = usb_against_sd();
    let mut data = measured(&plan, &[14.2, 14.5, 14.8]);
    let first = plan.cells[0].key.clone();
    let d = data.get_mut(&first).unwrap();
    d.samples[0].flags = vec!["hot".into(), "background-load".into()];
    d.samples[1].flags = vec!["hot".into()];
    let t = crate::telemetry::TelemetrySummary {
        throttled_state: Some("unknown".into()),
        throttled_error: Some("vcgencmd get_throttled failed: exit 255".into()),
        ..Default::default()
    };
    d.samples[2].telemetry = Some(serde_json::to_value(&t).unwrap().into());
    let r = build(&ws, &scenario, &plan, &data);
    let v = &table(&r, "disk-4k").rows[0].values[0];
    assert_eq!((v.flagged, v.excluded, v.n), (2, 0, 3));
    assert!(v.text.ends_with("(n=3, 2 flagged)"), "{}", v.text);
    assert_eq!(r.validity.len(), 1, "{:#?}", r.validity);
    let w = &r.validity[0];
    assert_eq!(
        w.text,
        "1 of 3 runs under load, 2 of 3 runs hot (kept in the statistics); 1 of 3 runs throttle state unknown (kept)"
    );
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(
        md.contains(
            "## Validity warnings\n\n- disk-4k on pi-1 sd/as-is (installed): 1 of 3 runs under load"
        ),
        "{md}"
    );
}

/// Seed 1's power row: a column of watts shows the mean where the cell's runs have them
/// (a board with a `[meter]`) and says "not measured" where a measured cell has none,
/// never a number; the metric's own column is untouched.
#[test]
fn a_column_of_watts_says_not_measured_for_a_cell_without_a_meter() {
    let (ws, mut scenario, _) = usb_against_sd();
    scenario.matrix.filesystem.retain(|f| f.as_str() == "as-is");
    let column = |metric: &str| ColumnSpec {
        test: "disk-4k".into(),
        metric: metric.into(),
        label: None,
    };
    scenario.report.tables.push(TableSpec {
        title: "Power".into(),
        description: None,
        columns: vec![column("random_read"), column("power_w")],
        rows: None,
        pivot: None,
        only: None,
    });
    let plan = expand(&ws, &scenario);
    let mut data = measured(&plan, &[5.0, 5.1, 5.2]);
    // The first disk-4k cell's board has a meter: its runs carry watts.
    let metered = plan
        .cells
        .iter()
        .find(|c| c.address.test.as_str() == "disk-4k")
        .unwrap()
        .key
        .clone();
    for (i, s) in data
        .get_mut(&metered)
        .unwrap()
        .samples
        .iter_mut()
        .enumerate()
    {
        s.metrics.insert("power_w".into(), 4.8 + i as f64 * 0.1);
    }
    let r = build(&ws, &scenario, &plan, &data);
    let t = table(&r, "Power");
    let cells: Vec<(Option<&str>, &str, usize)> = t
        .rows
        .iter()
        .map(|r| {
            (
                r.values[1].cell.as_deref(),
                r.values[1].text.as_str(),
                r.values[0].n,
            )
        })
        .collect();
    assert!(cells.len() >= 2, "{cells:?}");
    for (cell, text, n) in &cells {
        assert_eq!(
            *n, 3,
            "the metric's own column keeps its numbers: {cells:?}"
        );
        if *cell == Some(metered.as_str()) {
            assert!(text.starts_with("4.9"), "{cells:?}");
        } else {
            assert_eq!(*text, NOT_MEASURED, "{cells:?}");
        }
    }
}

/// Seed 1's `iperf` reaches its scenario only through `include`: a test outside
/// `matrix.test` that is measured still gets its table and its results.csv column.
#[test]
fn a_test_only_an_include_brings_in_gets_its_table_and_its_csv_column() {
    let (mut ws, mut scenario, _) = usb_against_sd();
    let xz = ws.recipes.get_mut(&"xz".into()).unwrap();
    xz.metrics[0].name = "real".into();
    xz.metrics[0].unit = "s".into();
    scenario.matrix.test = vec!["disk-4k".into()];
    scenario.matrix.include.push(crate::model::CellPattern {
        board: Some("pi-1".into()),
        test: Some("xz".into()),
        ..crate::model::CellPattern::default()
    });
    let plan = expand(&ws, &scenario);
    assert!(plan.cells.iter().any(|c| c.address.test.as_str() == "xz"));
    let mut data = measured(&plan, &[1.0, 1.1, 1.2]);
    for (k, d) in &mut data {
        let cell = plan.cells.iter().find(|c| &c.key == k).unwrap();
        if cell.address.test.as_str() == "xz" {
            for s in &mut d.samples {
                let v = s.metrics.remove("random_read").unwrap();
                s.metrics.insert("real".into(), v);
            }
        }
    }
    let r = build(&ws, &scenario, &plan, &data);
    let t = table(&r, "xz");
    assert_eq!(t.rows.len(), 1, "{t:#?}");
    assert!(t.rows[0].values[0].mean.is_some(), "{t:#?}");
    let csv = String::from_utf8(Csv.render(&r).unwrap()).unwrap();
    let rows = super::tests_exports::parse_csv(&csv);
    let col = rows[0].iter().position(|h| h == "real (s)");
    let col = col.unwrap_or_else(|| panic!("no xz column: {:?}", rows[0]));
    let filled = rows[1..].iter().filter(|r| !r[col].is_empty()).count();
    assert_eq!(filled, 3, "{csv}");
}

/// `only` narrows a scenario table to the cells it names (the seed's UASP table holds
/// the Pi 4's two cases, not every board's media); the per-test tables keep them all.
#[test]
fn a_scenario_table_with_only_shows_just_the_cells_it_names() {
    let (ws, mut scenario, _) = usb_against_sd();
    scenario.matrix.filesystem.retain(|f| f.as_str() == "as-is");
    scenario.report.tables.push(TableSpec {
        title: "USB on pi-1".into(),
        description: None,
        columns: vec![ColumnSpec {
            test: "disk-4k".into(),
            metric: "random_read".into(),
            label: None,
        }],
        rows: Some(vec![Axis::Board, Axis::Storage]),
        pivot: None,
        only: Some(crate::model::CellPattern {
            board: Some("pi-1".into()),
            storage: Some("us*".into()),
            ..Default::default()
        }),
    });
    let plan = expand(&ws, &scenario);
    let r = build(&ws, &scenario, &plan, &measured(&plan, &[10.0, 10.5, 10.2]));
    let configs: Vec<&Vec<String>> = r.tables[0].rows.iter().map(|r| &r.config).collect();
    assert_eq!(configs, [&vec!["pi-1".to_string(), "usb".to_string()]]);
    let all = table(&r, "disk-4k");
    assert_eq!(all.rows.len(), 4, "the test's own table keeps every cell");
}

/// A Markdown table has a column per axis that varies in it, by the axes' labels, the
/// unit in the header and `mean ± CI` alone in each cell; n is said once under the
/// table when every value has the same, else in a column.
#[test]
fn a_markdown_table_has_a_column_per_varying_axis_and_says_n_once() {
    let (ws, scenario, plan) = usb_against_sd();
    let data = measured(&plan, &[10.0, 10.5, 10.2]);
    let r = build(&ws, &scenario, &plan, &data);
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    // disk-4k varies board, storage and filesystem; xz only the board.
    assert!(
        md.contains("| board | storage | filesystem | random_read (MB/s) |\n|---|---|---|---:|\n| pi-1 | Samsung Evo+ 32GB | as-is | 10.23 ± 0.63 |\n"),
        "{md}"
    );
    assert!(
        md.contains("| board | random_read (MB/s) |\n|---|---:|\n| pi-1 |"),
        "{md}"
    );
    assert!(
        md.contains(
            "\n\nn = 3 measured runs per value. Higher is better. pi-1, pi-2: Raspberry Pi 4.\n"
        ),
        "{md}"
    );
    let table_lines = || md.lines().filter(|l| l.starts_with("| pi-"));
    assert!(
        table_lines().all(|l| !l.contains("MB/s") && !l.contains("n=")),
        "{md}"
    );

    // One cell with a fourth run: each row says its n.
    let mut data = data;
    let first = plan
        .cells
        .iter()
        .find(|c| c.address.test.as_str() == "disk-4k")
        .unwrap();
    data.insert(first.key.clone(), with_samples(&[10.0, 10.5, 10.2, 10.3]));
    let r = build(&ws, &scenario, &plan, &data);
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(
        md.contains("| board | storage | filesystem | random_read (MB/s) | n |"),
        "{md}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| pi-1 |") && l.ends_with(" | 4 |")),
        "{md}"
    );
    assert!(
        md.contains("| 16.23 ± 0.63 | 3 |\n\nHigher is better. pi-1, pi-2: Raspberry Pi 4.\n"),
        "{md}"
    );

    // With a precision target the `runs` column says each row's count: no `n` beside it.
    let mut plan = plan;
    for c in &mut plan.cells {
        c.method.runs.target = Some(0.05);
    }
    let r = build(&ws, &scenario, &plan, &data);
    let md = String::from_utf8(Markdown.render(&r).unwrap()).unwrap();
    assert!(
        md.contains("| board | storage | filesystem | random_read (MB/s) | runs |"),
        "{md}"
    );
    assert!(!md.contains("| n |"), "{md}");
}
