//! Integration tests: `apply --deadline` / `--max-duration` on the local board: a cell
//! whose steps' estimates (a fixed cool-down; the store's history of runs) cannot end
//! in time does not start, the summary and `status` say so, and the next apply runs it.

use crate::spine::{Project, text};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// `fast` needs no cool-down and has no history: it runs. `cooled` waits an hour
/// first: with half an hour it is left, not failed, and stays missing in the plan.
#[test]
fn a_cell_whose_fixed_cool_down_cannot_end_in_time_is_left_for_the_next_apply() {
    let p = Project::local("deadline-cool")
        .local_scenario("fast", &["sleepy"], 2, "")
        .local_scenario("cooled", &["sleepy"], 2, "")
        .edit(
            "scenarios/cooled.toml",
            "[method]\n",
            "[method]\ncooldown = \"1h\"\n",
        );
    let out = p.bp(&[
        "apply",
        "--max-duration",
        "30m",
        "--no-report",
        "scenarios/fast.toml",
        "scenarios/cooled.toml",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(err.contains("1 cell(s) completed"), "{err}");
    assert!(
        err.contains("left for lack of time: its steps take about 1h00m"),
        "{err}"
    );
    assert!(err.contains("1 cell(s) left for lack of time"), "{err}");
    assert!(!p.dir.join("results").join("failures").exists());
    let plan = p.bp(&["plan", "scenarios/cooled.toml"]);
    let said = String::from_utf8_lossy(&plan.stdout);
    assert!(said.contains("1 missing"), "{said}");
    let status = p.bp(&["status"]);
    let said = String::from_utf8_lossy(&status.stdout);
    assert!(said.contains("1 left for lack of time"), "{said}");
    // A deadline already passed starts nothing.
    let out = p.bp(&[
        "apply",
        "--deadline",
        "2020-01-01T00:00:00Z",
        "--no-report",
        "scenarios/fast.toml",
        "scenarios/cooled.toml",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stderr(&out).contains("0 cell(s) completed, 1 already complete"));
}

/// After `sleepy` ran for a second a run, a new cell of it (other parameters) is
/// estimated from that history: four runs of a second do not fit in three seconds.
/// With time enough, the same apply runs it.
#[test]
fn a_cell_the_store_history_says_cannot_end_in_time_does_not_start() {
    let p = Project::local("deadline-history")
        .local_scenario("first", &["sleepy"], 2, "[params.sleepy]\nseconds = 1\n")
        .local_scenario(
            "second",
            &["sleepy"],
            3,
            "[params.sleepy]\nseconds = 1\nvalue = 2\n",
        );
    let out = p.bp(&["apply", "--no-report", "scenarios/first.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = p.bp(&[
        "apply",
        "--max-duration",
        "3s",
        "--no-report",
        "scenarios/second.toml",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    assert!(err.contains("LEFT sleepy on here"), "{err}");
    assert!(err.contains("0 cell(s) completed"), "{err}");
    let out = p.bp(&[
        "apply",
        "--max-duration",
        "1h",
        "--no-report",
        "scenarios/second.toml",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains("1 cell(s) completed"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_deadline_that_is_no_time_is_refused_with_exit_2() {
    let p = Project::local("deadline-bad").local_scenario("s", &["sleepy"], 2, "");
    for (flag, value, said) in [
        (
            "--deadline",
            "tomorrow",
            "--deadline: bad time `tomorrow`: expected an RFC 3339 time",
        ),
        (
            "--deadline",
            "2026-12-08T06:00:00",
            "expected an RFC 3339 time with its offset",
        ),
        (
            "--max-duration",
            "6 hours",
            "--max-duration: bad duration `6 hours`",
        ),
    ] {
        let out = p.bp(&["apply", flag, value, "scenarios/s.toml"]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(stderr(&out).contains(said), "{}", text(&out));
        assert!(!p.dir.join("results").exists(), "nothing ran");
    }
}

/// A cluster's deploy is judged by how long it took last time: with less time left than
/// that, the cluster's cells are left before anything is deployed; with time enough,
/// the same apply deploys and runs them.
#[test]
fn a_clusters_deploy_that_took_longer_than_the_time_left_deploys_nothing() {
    let Some(lab) = crate::lab::Lab::up(2) else {
        return;
    };
    let (b1, b2) = (&lab.board(0).name, &lab.board(1).name);
    let deploys = lab.root.join("deploys");
    let p = lab
        .project()
        .file(
            "pipeline/one.toml",
            "description = \"prints a number\"\nuses_storage = false\n[run]\non = \"board\"\n\
             command = \"echo '{\\\"value\\\": 1}'\"\nparse = \"json\"\n\
             [metrics]\nvalue = { from = \"value\", unit = \"x\", better = \"higher\" }\n",
        )
        .scenario(
            "c",
            &format!(
                "title = \"a slow deploy\"\n[images.installed]\ninstalled = true\n\
                 [clusters.lab-dl]\nmembers = [\"{b1}\", \"{b2}\"]\n\
                 [[clusters.lab-dl.deploy]]\non = \"controller\"\n\
                 command = \"sleep 4; echo deployed >> {}\"\n\
                 [matrix]\nimage = [\"installed\"]\nboard = [\"lab-dl\"]\ntest = [\"one\"]\n\
                 [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n",
                deploys.display()
            ),
        );
    let deployed = || {
        std::fs::read_to_string(&deploys)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let out = p.bp(&["apply", "--no-report", "scenarios/c.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(deployed(), 1);
    let redo = |within: &str| {
        p.bp(&[
            "apply",
            "--redo",
            "test=one",
            "--max-duration",
            within,
            "--no-report",
            "scenarios/c.toml",
        ])
    };
    let out = redo("3s");
    let err = stderr(&out);
    assert!(out.status.success(), "{}", text(&out));
    assert!(err.contains("LEFT one on lab-dl"), "{err}");
    assert!(err.contains("1 cell(s) left for lack of time"), "{err}");
    assert_eq!(deployed(), 1, "deployed with no time to measure: {err}");
    let out = redo("10m");
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains("1 cell(s) completed"),
        "{}",
        text(&out)
    );
    assert_eq!(deployed(), 2);
}
