//! Integration tests: a board's `[[health]]` checks on the local board: one that fails
//! skips the board's cells with its reason and measures nothing; the next apply checks
//! again and, healthy, runs them. `plan` shows the step.

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
