//! Integration tests: recipes with two sides, applied on a lab board over real SSH: each
//! side provisions only its own `[needs]`, `controller_dir` is claimed for a run on the
//! controller, a service's `ready_timeout`, and `[facts]` in the stored facts.

use std::path::Path;
use std::process::{Command, Output};

use crate::lab::Lab;
use crate::spine::text;

/// A command that exists only on the controller: its directory is on benchpipe's PATH,
/// which the controller's commands inherit, and never on a lab board's sshd's PATH.
const CONTROLLER_ONLY: &str = "bp-controller-only";

fn bp(lab: &Lab, args: &[&str]) -> Output {
    let bin = lab.root.join("controller-bin");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(args))
        .current_dir(&lab.root)
        .env("NO_COLOR", "1")
        .env("PATH", path)
        .output()
        .unwrap()
}

/// The workspace: the controller-only tool, and a scenario of `test` on the lab's boards.
fn write_project(lab: &Lab, recipes: &[(&str, &str)], test: &str) {
    use std::os::unix::fs::PermissionsExt;
    let root = &lab.root;
    let bin = root.join("controller-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let tool = bin.join(CONTROLLER_ONLY);
    // `--version` for a fact; otherwise a measurement that holds only when the
    // directory it is given (the controller_dir) exists on the controller.
    std::fs::write(
        &tool,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bp-controller-only 1.2.3'; exit 0; }\n\
         test -d \"$1\" || { echo \"no directory $1\" >&2; exit 1; }\necho '{\"value\": 1}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    lab.project_on_every_board(recipes, &[test], 1);
}

/// A service on the board that is ready about 3 s after it starts; the measured run on
/// the controller needs a tool only the controller has, and its `controller_dir`.
const TWO_SIDED: &str = r#"description = "a server on the board, a client on the controller"
uses_storage = false

[needs.board]
commands = ["sh", "sleep"]

[needs.controller]
commands = ["bp-controller-only"]

[facts]
board_shell = "echo board-side {{ board }}"
client = { on = "controller", command = "bp-controller-only --version" }
broken = "echo partial; exit 3"

[[setup]]
command = "rm -f {{ workdir }}/slow-ready"

[[services]]
name = "slow"
command = "sleep 3; touch {{ workdir }}/slow-ready; exec sleep 600"
ready = "test -e {{ workdir }}/slow-ready"
ready_timeout = "20s"

[run]
on = "controller"
command = "bp-controller-only {{ controller_dir }}"
parse = "json"

[metrics]
value = { from = "value", unit = "x", better = "higher" }
"#;

fn cell_dirs(root: &Path, test: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(root.join("results"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .and_then(|n| n.get(33..))
                        .is_some_and(|rest| rest.starts_with(&format!("{test}-")))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The project's directory on the controller (its boards' `controller_dir`s) outlives
/// the lab; the test removes what it made.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn each_side_provisions_its_own_needs_waits_for_a_slow_service_and_stores_recipe_facts() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).name.to_string();
    let _controller_dir = RemoveOnDrop(lab.controller_dir(&board).parent().unwrap().to_path_buf());
    write_project(&lab, &[("two", TWO_SIDED)], "two");

    // (a) The controller-only tool is needed, and checked, on the controller alone;
    // (b) the service is ready after ~3 s, within its 20 s; the run finds controller_dir.
    let apply = bp(&lab, &["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let dirs = cell_dirs(&lab.root, "two");
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    let samples = std::fs::read_to_string(dirs[0].join("samples.jsonl")).unwrap();
    assert!(samples.contains("\"value\""), "{samples}");

    // (c) The recipe's facts, each from its own side; a failing one records nothing.
    let facts: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dirs[0].join("facts.json")).unwrap()).unwrap();
    let tools = &facts["tools"];
    assert_eq!(
        tools["board_shell"],
        format!("board-side {board}").as_str(),
        "{facts}"
    );
    assert_eq!(tools["client"], "bp-controller-only 1.2.3", "{facts}");
    assert!(tools.get("broken").is_none(), "{facts}");
    assert!(
        facts.get("fio").is_none() && facts.get("xz").is_none(),
        "{facts}"
    );

    // The same tool asked of the board is missing there, and no package is named to
    // install it: the cell is skipped with the reason, naming the board (issue 10).
    let on_board = TWO_SIDED.replace(
        "commands = [\"sh\", \"sleep\"]",
        "commands = [\"sh\", \"bp-controller-only\"]",
    );
    write_project(&lab, &[("board-lacks", &on_board)], "board-lacks");
    let refused = bp(&lab, &["apply", "scenarios/s.toml"]);
    assert_eq!(refused.status.code(), Some(0), "{}", text(&refused));
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        err.contains(&format!("bp-controller-only is not installed on {board}")),
        "the board checks its own needs: {err}"
    );

    // A ready_timeout shorter than the service takes fails the cell with the timeout.
    let impatient = TWO_SIDED.replace("ready_timeout = \"20s\"", "ready_timeout = \"1s\"");
    write_project(&lab, &[("impatient", &impatient)], "impatient");
    let timed_out = bp(&lab, &["apply", "scenarios/s.toml"]);
    assert_eq!(timed_out.status.code(), Some(1), "{}", text(&timed_out));
    let err = String::from_utf8_lossy(&timed_out.stderr);
    assert!(
        err.contains("service slow was not ready after 1 s"),
        "{err}"
    );
}

/// A recipe whose run is on the controller: its walk claims the board's directory there.
const ON_CONTROLLER: &str = r#"description = "a number, from the controller"
uses_storage = false
[params]
value = 1.5
[run]
on = "controller"
command = "echo '{\"value\": {{ value }} }'"
parse = "json"
[metrics]
value = { from = "value", unit = "s", better = "lower" }
"#;

/// Two projects on one controller that both name their board `here`: a walk removes the
/// secret directories a killed apply of its own project left, and never the other's.
/// (They shared `/var/tmp/benchpipe/controller/here`, so one project's walk took the
/// other's secrets and services away mid-cell.)
#[test]
fn two_projects_naming_a_board_alike_keep_their_controller_directories_apart() {
    let project = |tag: &str| {
        crate::spine::Project::local(tag)
            .file("pipeline/on-controller.toml", ON_CONTROLLER)
            .local_scenario("s", &["on-controller"], 1, "")
    };
    let (a, b) = (project("ctl-dir-a"), project("ctl-dir-b"));
    let dirs: Vec<std::path::PathBuf> = [&a, &b]
        .iter()
        .map(|p| benchpipe::apply::controller_dir(&p.dir.join("results"), "here").into())
        .collect();
    let _removed = dirs
        .iter()
        .map(|d| RemoveOnDrop(d.parent().unwrap().to_path_buf()))
        .collect::<Vec<_>>();
    assert_ne!(dirs[0], dirs[1]);
    let planted: Vec<std::path::PathBuf> = dirs
        .iter()
        .map(|d| d.join(format!("secrets-{}", "cd".repeat(16))))
        .collect();
    for (p, planted) in [&a, &b].into_iter().zip(&planted) {
        let out = p.bp(&["apply", "scenarios/s.toml"]);
        assert!(out.status.success(), "{}", text(&out));
        std::fs::create_dir(planted).unwrap();
        std::fs::write(planted.join("cookie"), "left=by-a-killed-apply\n").unwrap();
    }
    // A new cell in a: its walk starts by removing a's leftovers.
    std::fs::write(
        a.dir.join("scenarios/s.toml"),
        std::fs::read_to_string(a.dir.join("scenarios/s.toml")).unwrap()
            + "[params.on-controller]\nvalue = 2.5\n",
    )
    .unwrap();
    let out = a.bp(&["apply", "scenarios/s.toml"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("1 cell(s) to run"), "{said}");
    assert!(!planted[0].exists(), "a's leftover stays: {said}");
    assert!(
        planted[1].join("cookie").is_file(),
        "b's secrets were taken: {said}"
    );
}
