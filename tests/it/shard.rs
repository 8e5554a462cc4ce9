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

/// Boards flashed through one host (a Turing Pi BMC, a dd helper) are one unit: that
/// host flashes one board at a time and must see one controller. Dealt by name alone,
/// `a` and `b` would go to different shares.
#[test]
fn boards_flashed_through_one_host_fall_in_one_share() {
    let flashed = "\n[flash]\nmethod = \"command\"\ncommand = \"true\"\nvia = \"bmc.example\"\n\n[power]\ncycle = \"true\"\n";
    let mut p = Project::local("shard-via");
    for b in ["a", "b", "c"] {
        p = p.local_board(b, &format!("board-work-{b}"));
    }
    for b in ["a", "b"] {
        let file = p.dir.join(format!("boards/{b}.toml"));
        let mut text = std::fs::read_to_string(&file).unwrap();
        text = text.replacen("\n[[storage]]", &format!("{flashed}\n[[storage]]"), 1);
        std::fs::write(&file, text).unwrap();
    }
    let p = p.local_scenario("s", &["sleepy"], 1, "").edit(
        "scenarios/s.toml",
        "board = [\"here\"]",
        "board = [\"a\", \"b\", \"c\"]",
    );
    let check = p.bp(&["check", "scenarios/s.toml"]);
    assert!(check.status.success(), "{}", text(&check));
    let (one, two) = (
        selected(&p, &["--shard", "1/2"]),
        selected(&p, &["--shard", "2/2"]),
    );
    assert_eq!(one.len(), 2, "{one:?}");
    assert!(one.iter().any(|d| d.ends_with("-a")), "{one:?}");
    assert!(one.iter().any(|d| d.ends_with("-b")), "{one:?}");
    assert_eq!(two.len(), 1, "{two:?}");
    assert!(two[0].ends_with("-c"), "{two:?}");
}
