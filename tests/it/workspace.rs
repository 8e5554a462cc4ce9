//! Integration tests: a workspace of one's own, outside the clone. It needs no
//! `pipeline/` (the built-in recipes stand in), a recipe file of its own replaces the
//! built-in of its name and `plan` says which was used, each cell's facts record the
//! recipe's text by its sha256, and the clone's `boards/` holds no one else's lab.

use std::fmt::Write as _;
use std::path::Path;

use sha2::Digest;

use crate::repo;
use crate::spine::{Project, text};

fn sha256_of(path: &Path) -> String {
    let digest = sha2::Sha256::digest(std::fs::read(path).unwrap());
    digest.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// A project of boards/ and scenarios/ only, in the temp dir: no pipeline/.
fn bare(tag: &str) -> Project {
    let p = Project::local(tag).local_scenario("s", &["xz"], 1, "");
    std::fs::remove_dir_all(p.dir.join("pipeline")).unwrap();
    p
}

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_workspace_without_pipeline_checks_plans_and_applies_with_the_built_in_recipes() {
    let p = bare("own-ws");
    let sha = sha256_of(&repo().join("pipeline/xz.toml"));
    let check = p.bp(&["check", "scenarios/s.toml"]);
    assert!(check.status.success(), "{}", text(&check));

    let said = format!(
        "Recipe xz: built-in (<built-in>/pipeline/xz.toml), sha256 {}",
        &sha[..12]
    );
    let plan = p.bp(&["plan", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    assert!(stdout(&plan).contains(&said), "{}", text(&plan));
    let dry = p.bp(&["apply", "--dry-run", "scenarios/s.toml"]);
    assert!(dry.status.success(), "{}", text(&dry));
    assert!(stdout(&dry).contains(&said), "{}", text(&dry));
    let json = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).expect("plan --json");
    assert_eq!(
        doc["recipes"]["xz"],
        serde_json::json!({"origin": "built-in", "file": "<built-in>/pipeline/xz.toml", "sha256": sha}),
        "{doc}"
    );

    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let cell = std::fs::read_dir(p.dir.join("results"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with("-xz-here"))
        .expect("the xz cell")
        .path();
    let facts: serde_json::Value =
        serde_json::from_slice(&std::fs::read(cell.join("facts.json")).unwrap()).unwrap();
    assert_eq!(facts["recipe"]["origin"], "built-in", "{facts}");
    assert_eq!(facts["recipe"]["sha256"], sha.as_str(), "{facts}");
    let md = std::fs::read_to_string(p.dir.join("reports/s/index.md")).unwrap();
    assert!(md.contains(&format!("built-in, sha256:{sha}")), "{md}");
}

/// The workspace's pipeline/xz.toml is used in place of the built-in, and plan, plan
/// --json and the dry run say so; a text that means the same keeps the cell's key.
#[test]
fn a_workspace_recipe_replaces_the_built_in_and_plan_says_so() {
    let p = bare("own-recipe");
    let key_of = |p: &Project| {
        let json = p.bp(&["plan", "--json", "scenarios/s.toml"]);
        assert!(json.status.success(), "{}", text(&json));
        let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        (doc["cells"][0]["key"].clone(), doc["recipes"]["xz"].clone())
    };
    let (built_in_key, _) = key_of(&p);
    let shipped = std::fs::read_to_string(repo().join("pipeline/xz.toml")).unwrap();
    let mine = shipped.replacen("description = ", "description = \"my xz\"\n#", 1);
    std::fs::create_dir_all(p.dir.join("pipeline")).unwrap();
    std::fs::write(p.dir.join("pipeline/xz.toml"), &mine).unwrap();
    let (key, recipe) = key_of(&p);
    assert_eq!(key, built_in_key, "a description changes no key");
    assert_eq!(recipe["origin"], "overrides", "{recipe}");
    assert_eq!(recipe["file"], "pipeline/xz.toml", "{recipe}");
    assert_eq!(
        recipe["sha256"].as_str(),
        Some(sha256_of(&p.dir.join("pipeline/xz.toml")).as_str())
    );
    for args in [&["plan"][..], &["apply", "--dry-run"]] {
        let out = p.bp(&[args, &["scenarios/s.toml"]].concat());
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            stdout(&out).contains(
                "Recipe xz: pipeline/xz.toml (the workspace's, in place of the built-in)"
            ),
            "{}",
            text(&out)
        );
    }
}

/// The clone's boards/ is the user's: the seed lab's boards live in examples/seeds/,
/// so `boards list` there shows only localhost (and boards `lab up` wrote), and
/// `boards check` with no names would reach no one else's address.
#[test]
fn the_clones_boards_are_the_users_own() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(["boards", "list"])
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let listed: Vec<String> = stdout(&out)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|b| !b.starts_with("lab-"))
        .collect();
    assert_eq!(listed, ["localhost"], "{}", text(&out));
    let seeds = repo().join("examples/seeds/boards");
    for b in ["dramble-pi4-1", "odroid-hc2-1", "rpi3-1", "turing-cm3-1"] {
        assert!(
            seeds.join(format!("{b}.toml")).is_file(),
            "{b} in examples/seeds/boards"
        );
    }
}
