//! Integration tests: `apply --plan FILE`, a plan saved from `plan --json` applied only
//! while it is what would run, each case a saved plan and the change made after it.

use crate::spine::{Project, text};

/// A local project with the `sleepy` test, two measured runs, its plan saved.
fn saved(tag: &str) -> Project {
    let p = Project::local(tag).local_scenario("s", &["sleepy"], 2, "");
    let out = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(p.dir.join("plan.json"), &out.stdout).unwrap();
    p
}

/// The sleepy cell's stored runs, warm-up included (none before a store exists).
fn samples(p: &Project) -> usize {
    if p.dir.join("results").is_dir() {
        p.samples("sleepy").len()
    } else {
        0
    }
}

/// A current plan runs; a second apply of the same plan is refused as stale (the
/// store changed: its cell is complete now), names the cell and what changed, exits 2
/// and runs nothing.
#[test]
fn a_saved_plan_runs_once_and_is_stale_after() {
    let p = saved("saved-plan-once");
    let out = p.bp(&["apply", "--plan", "plan.json", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let measured = samples(&p);
    assert!(measured >= 2, "{measured}: {}", text(&out));
    let again = p.bp(&["apply", "--plan", "plan.json", "scenarios/s.toml"]);
    let said = text(&again);
    assert_eq!(again.status.code(), Some(2), "{said}");
    assert!(
        said.contains("plan.json: the saved plan is stale"),
        "{said}"
    );
    assert!(said.contains("-sleepy-here: state was"), "{said}");
    assert_eq!(samples(&p), measured, "a stale plan ran: {said}");
    // Made again, it is current: nothing left to run, and it says so.
    let out = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    std::fs::write(p.dir.join("plan.json"), &out.stdout).unwrap();
    let out = p.bp(&["apply", "--plan", "plan.json", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(samples(&p), measured);
}

/// Each change after the plan was saved, and what the refusal says; nothing runs.
#[test]
fn a_plan_changed_under_it_is_refused_with_what_changed() {
    type Change = fn(&Project) -> Vec<String>;
    let cases: [(&str, Change, &str); 5] = [
        (
            "a recipe's file",
            |p| {
                let rel = "pipeline/sleepy.toml";
                let t = std::fs::read_to_string(p.dir.join(rel)).unwrap();
                std::fs::write(p.dir.join(rel), t.replace("seconds = 0.1", "seconds = 0.2"))
                    .unwrap();
                vec![]
            },
            "recipe sleepy: its file changed",
        ),
        (
            "another test in the matrix",
            |p| {
                let rel = "scenarios/s.toml";
                let t = std::fs::read_to_string(p.dir.join(rel)).unwrap();
                std::fs::write(
                    p.dir.join(rel),
                    t.replace("test = [\"sleepy\"]", "test = [\"sleepy\", \"xz\"]"),
                )
                .unwrap();
                vec![]
            },
            "-xz-here: new",
        ),
        (
            "another --only",
            |_| vec!["--only".into(), "test=xz".into()],
            "selected was true, is false",
        ),
        (
            "not JSON",
            |p| {
                std::fs::write(p.dir.join("plan.json"), "{\n  \"format\": 2,\n  oops\n}\n")
                    .unwrap();
                vec![]
            },
            "plan.json:3:3: expected a plan saved by `benchpipe plan --json`: key must be a string",
        ),
        (
            "another format",
            |p| {
                std::fs::write(p.dir.join("plan.json"), "{\"format\": 1, \"cells\": []}\n")
                    .unwrap();
                vec![]
            },
            "plan.json: expected a plan of format 2 (`benchpipe plan --json`), found format 1",
        ),
    ];
    for (i, (what, change, said)) in cases.into_iter().enumerate() {
        let p = saved(&format!("saved-plan-change-{i}"));
        let extra = change(&p);
        let mut args = vec!["apply", "--plan", "plan.json"];
        args.extend(extra.iter().map(String::as_str));
        args.push("scenarios/s.toml");
        let out = p.bp(&args);
        let t = text(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {t}");
        assert!(t.contains(said), "{what}: {t}");
        assert_eq!(samples(&p), 0, "{what}: ran: {t}");
    }
}

/// The same plan re-indented by a tool is the same plan; `--dry-run` checks it too.
#[test]
fn a_reformatted_plan_is_the_same_plan_and_dry_run_checks_it() {
    let p = saved("saved-plan-reformatted");
    let plan: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.dir.join("plan.json")).unwrap()).unwrap();
    std::fs::write(
        p.dir.join("plan.json"),
        serde_json::to_string(&plan).unwrap(),
    )
    .unwrap();
    let dry = p.bp(&[
        "apply",
        "--dry-run",
        "--plan",
        "plan.json",
        "scenarios/s.toml",
    ]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert_eq!(samples(&p), 0, "a dry run measured");
    let dry = p.bp(&[
        "apply",
        "--dry-run",
        "--plan",
        "plan.json",
        "--only",
        "test=xz",
        "scenarios/s.toml",
    ]);
    assert_eq!(dry.status.code(), Some(2), "{}", text(&dry));
    let out = p.bp(&["apply", "--plan", "plan.json", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(samples(&p) >= 2);
}
