//! Integration tests: two controllers' stores (`apply --shard` of each half into its
//! own store) merged into one, whose plan is complete and whose report has every cell
//! a single store's has; a store merged twice changes nothing; a cell both hold with
//! different runs is a conflict that keeps the destination's.

use serde_json::Value;

use crate::spine::{Project, text};

fn two_boards(tag: &str) -> Project {
    Project::local(tag)
        .local_board("there", "board-work-there")
        .local_scenario("s", &["sleepy"], 1, "")
        .edit(
            "scenarios/s.toml",
            "board = [\"here\"]",
            "board = [\"here\", \"there\"]",
        )
}

fn complete(p: &Project, store: &str) -> u64 {
    let out = p.bp(&["plan", "--json", "--store", store, "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["summary"]["complete"].as_u64().unwrap()
}

#[test]
fn two_shards_stores_merge_into_one_complete_store_and_conflicts_keep_the_destination() {
    let p = two_boards("merge");
    for (k, store) in [("1/2", "ctl-1"), ("2/2", "ctl-2")] {
        let out = p.bp(&[
            "apply",
            "--shard",
            k,
            "--store",
            store,
            "--no-report",
            "scenarios/s.toml",
        ]);
        assert!(out.status.success(), "{k}: {}", text(&out));
        assert_eq!(complete(&p, store), 1);
    }
    let out = p.bp(&["store", "merge", "ctl-1", "ctl-2", "--into", "results"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("ctl-1: ") && said.contains("0 conflict(s)"),
        "{said}"
    );
    assert_eq!(complete(&p, "results"), 2, "{said}");
    let report = p.bp(&["report", "scenarios/s.toml"]);
    assert!(report.status.success(), "{}", text(&report));
    let json: Value =
        serde_json::from_slice(&std::fs::read(p.dir.join("reports/s/report.json")).unwrap())
            .unwrap();
    // Both boards' rows, each with its measured run: a single store's report.
    let rows = json["tables"][0]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{json}");
    for row in rows {
        assert_eq!(row["values"][0]["n"], 1, "{row}");
    }
    // Again: nothing new, nothing conflicting.
    let again = p.bp(&["store", "merge", "ctl-1", "ctl-2", "--into", "results"]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("0 copied"), "{}", text(&again));
    // ctl-1's cell measured again (--redo): both hold it, with different runs.
    let redo = p.bp(&[
        "apply",
        "--shard",
        "1/2",
        "--store",
        "ctl-1",
        "--no-report",
        "--redo",
        "board=here",
        "scenarios/s.toml",
    ]);
    assert!(redo.status.success(), "{}", text(&redo));
    let before = std::fs::read_dir(p.dir.join("results"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with("-sleepy-here"))
        .map(|e| std::fs::read(e.path().join("samples.jsonl")).unwrap())
        .unwrap();
    let conflict = p.bp(&["store", "merge", "ctl-1", "--into", "results"]);
    let said = text(&conflict);
    assert_eq!(conflict.status.code(), Some(1), "{said}");
    assert!(
        said.contains("conflict: cell ")
            && said.contains("-sleepy-here: both stores hold it with different runs"),
        "{said}"
    );
    let after = std::fs::read_dir(p.dir.join("results"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with("-sleepy-here"))
        .map(|e| std::fs::read(e.path().join("samples.jsonl")).unwrap())
        .unwrap();
    assert_eq!(before, after, "the destination's cell was overwritten");
}
