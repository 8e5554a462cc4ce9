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

/// The board's controller_dir outlives the lab; the test removes what it made.
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
    let _controller_dir = RemoveOnDrop(format!("/var/tmp/benchpipe/controller/{board}").into());
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
