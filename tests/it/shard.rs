//! Integration tests: `--shard K/N` on two local boards: plan shows disjoint shares that
//! cover the plan, applies of each share complete the study between them, and a bad
//! shard is refused.

use serde_json::Value;

use crate::spine::{Project, text};

/// Cell keys `plan --json` selects under `args`.
fn selected(p: &Project, args: &[&str]) -> Vec<String> {
    let mut all = vec!["plan", "--json"];
    all.extend(args);
    all.push("scenarios/s.toml");
    let out = p.bp(&all);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut keys: Vec<String> = doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["selected"] == true)
        .map(|c| c["dir"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys
}

#[test]
fn two_shards_split_the_plan_by_board_and_complete_it_between_them() {
    let p = Project::local("shard")
        .local_board("there", "board-work-there")
        .local_scenario("s", &["sleepy", "xz"], 1, "")
        .edit(
            "scenarios/s.toml",
            "board = [\"here\"]",
            "board = [\"here\", \"there\"]",
        );
    let all = selected(&p, &[]);
    assert_eq!(all.len(), 4, "{all:?}");
    let (one, two) = (
        selected(&p, &["--shard", "1/2"]),
        selected(&p, &["--shard", "2/2"]),
    );
    assert_eq!(one.len(), 2, "{one:?}");
    assert_eq!(two.len(), 2, "{two:?}");
    let mut union = [one.clone(), two.clone()].concat();
    union.sort();
    assert_eq!(union, all, "the shares cover the plan, once each");
    // Whole boards: each share's cells are of one board.
    assert!(one.iter().all(|d| d.ends_with("-here")), "{one:?}");
    assert!(two.iter().all(|d| d.ends_with("-there")), "{two:?}");
    for k in ["1/2", "2/2"] {
        let out = p.bp(&["apply", "--shard", k, "scenarios/s.toml"]);
        assert!(out.status.success(), "{k}: {}", text(&out));
        assert!(
            text(&out).contains("2 cell(s) to run"),
            "{k}: {}",
            text(&out)
        );
    }
    let plan = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    let doc: Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(doc["summary"]["complete"], 4, "{doc}");
    let bad = p.bp(&["apply", "--shard", "3/2", "scenarios/s.toml"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(text(&bad).contains("expected K/N"), "{}", text(&bad));
}
