//! Integration tests: a board's `[[health]]` checks on the local board: one that fails
//! skips the board's cells with its reason and measures nothing; the next apply checks
//! again and, healthy, runs them. `plan` shows the step. A lab cluster's member's
//! checks skip the cluster's cells the same way.

use crate::spine::{Project, text};

#[test]
fn a_board_that_fails_its_health_check_is_skipped_with_the_reason_then_runs_once_healthy() {
    let p = Project::local("health").local_scenario("s", &["sleepy"], 2, "");
    let flag = p.dir.join("ok");
    let check = format!(
        "[[health]]\nname = \"flag\"\ncommand = \"test -e {} || {{ echo no flag >&2; exit 3; }}\"\n\n[[storage]]",
        flag.display()
    );
    let p = p.edit("boards/here.toml", "[[storage]]", &check);

    let plan = p.bp(&["apply", "--dry-run", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    assert!(
        String::from_utf8_lossy(&plan.stdout).contains("health check: flag"),
        "{}",
        text(&plan)
    );
    let out = p.bp(&["apply", "--no-report", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("board here failed its health check `flag` (exit status 3: no flag)"),
        "{err}"
    );
    assert!(err.contains("1 skipped"), "{err}");
    assert!(p.samples("sleepy").is_empty(), "nothing measured");

    std::fs::write(&flag, "").unwrap();
    let out = p.bp(&["apply", "--no-report", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("1 cell(s) completed"),
        "{}",
        text(&out)
    );
    assert_eq!(p.samples("sleepy").len(), 3);
}

const ONE: &str = r#"description = "prints a number on the cluster's first member"
uses_storage = false
[run]
on = "board"
command = "echo '{\"value\": 1}'"
parse = "json"
[metrics]
value = { from = "value", unit = "x", better = "higher" }
"#;

/// A cluster member's `[[health]]` checks run on it after the image is verified: one
/// that fails skips the cluster's cells with the member named, nothing deployed or
/// measured; healthy, the next apply runs them.
#[test]
fn a_cluster_member_that_fails_its_health_check_skips_the_clusters_cells() {
    let Some(lab) = crate::lab::Lab::up(2) else {
        return;
    };
    let (b1, b2) = (&lab.board(0).name, &lab.board(1).name);
    let flag = lab.root.join("member-ok");
    let board_file = lab.root.join(format!("boards/{b2}.toml"));
    let mut text_of = std::fs::read_to_string(&board_file).unwrap();
    text_of.push_str(&format!(
        "\n[[health]]\nname = \"flag\"\ncommand = \"test -e {} || {{ echo no flag >&2; exit 3; }}\"\n",
        flag.display()
    ));
    std::fs::write(&board_file, text_of).unwrap();
    let p = lab.project().file("pipeline/one.toml", ONE).scenario(
        "c",
        &format!(
            "title = \"a cluster\"\n[images.installed]\ninstalled = true\n\
             [clusters.lab-ch]\nmembers = [\"{b1}\", \"{b2}\"]\n\
             [[clusters.lab-ch.deploy]]\non = \"{b1}\"\ncommand = \"touch {deployed}\"\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"lab-ch\"]\ntest = [\"one\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n",
            deployed = lab.root.join("deployed").display()
        ),
    );
    let dry = p.bp(&["apply", "--dry-run", "scenarios/c.toml"]);
    assert!(
        String::from_utf8_lossy(&dry.stdout)
            .contains(&format!("health check of member {b2}: flag")),
        "{}",
        text(&dry)
    );
    let out = p.bp(&["apply", "--no-report", "scenarios/c.toml"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "board {b2} failed its health check `flag` (exit status 3: no flag)"
        )),
        "{said}"
    );
    assert!(said.contains("1 skipped"), "{said}");
    assert!(
        !lab.root.join("deployed").exists(),
        "deployed on an unhealthy cluster"
    );
    let measured = |p: &Project| {
        let out = p.bp(&["plan", "--json", "scenarios/c.toml"]);
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        doc["summary"]["complete"].as_u64().unwrap()
    };
    assert_eq!(measured(&p), 0);

    std::fs::write(&flag, "").unwrap();
    let out = p.bp(&["apply", "--no-report", "scenarios/c.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(lab.root.join("deployed").exists());
    assert_eq!(measured(&p), 1, "{}", text(&out));
}
