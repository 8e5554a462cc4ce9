//! Integration tests: the first format of a lab board's disk is asked for, like
//! `terraform apply`: refused without a terminal unless `--yes`, run on a real pty only
//! after "yes", and never asked again once the store records the board.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::lab::{Lab, sh};

fn label(device: &str) -> String {
    sh(&format!("blkid -o value -s LABEL {device} || true"))
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// benchpipe with no terminal (stdin closed), `args` exactly as given (no `--yes`
/// added: the tests' own helpers add it).
fn unattended(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(args)
        .current_dir(root)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// benchpipe on a real pty (util-linux `script`), `answer` typed on it.
fn on_a_terminal(root: &Path, args: &str, answer: &str) -> Output {
    let command = format!("{} {args}", env!("CARGO_BIN_EXE_benchpipe"));
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(root)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The tty keeps the line until apply reads it.
    child
        .stdin
        .take()
        .unwrap()
        .write_all(answer.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_first_format_of_an_untouched_board_is_asked_for_and_then_never_again() {
    if Command::new("script").arg("--version").output().is_err() {
        crate::cannot_run(
            "confirm",
            "util-linux `script` (a real pty) is not installed",
        );
        return;
    }
    let Some(lab) = Lab::up(1) else { return };
    let root = &lab.root;
    let board = lab.board(0).clone();
    let disk = &board.disks[0];
    crate::identity::dd_write_scenario(root, board.name.as_str(), &disk.name);
    sh(&format!("mkfs.ext4 -q -F -L users {}", disk.device));

    // The dry run names the device each format overwrites and what its board reports of
    // it; a board it cannot reach is said, and the run still prints.
    let bytes = std::fs::metadata(&disk.file).unwrap().len();
    let gone = std::fs::read_to_string(&board.board_file)
        .unwrap()
        .replace("port = 22", "port = 1");
    std::fs::write(root.join("boards/gone.toml"), gone).unwrap();
    let both = std::fs::read_to_string(root.join("scenarios/s.toml"))
        .unwrap()
        .replace(
            &format!("board = [\"{}\"]", board.name),
            &format!("board = [\"{}\", \"gone\"]", board.name),
        );
    std::fs::write(root.join("scenarios/dry.toml"), both).unwrap();
    let out = unattended(root, &["apply", "--dry-run", "scenarios/dry.toml"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!(
            "{}: the board reports: model unknown, serial none, {bytes} bytes",
            disk.device
        )) && said.contains(&format!("{}: gone unreachable (", disk.device))
            && said.contains("board gone:"),
        "{said}"
    );
    std::fs::remove_file(root.join("boards/gone.toml")).unwrap();
    std::fs::remove_file(root.join("scenarios/dry.toml")).unwrap();
    let untouched = |why: &str| {
        assert_eq!(label(&disk.device), "users", "{why}");
        assert!(
            !root.join("results/store.json").exists(),
            "{why}: the store was made"
        );
    };

    // No terminal, no --yes: refused with the step, its device and --yes; nothing done.
    let out = unattended(root, &["apply", "--no-report", "scenarios/s.toml"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!("{}: format {} as ext4", board.name, disk.name))
            && said.contains(&disk.device)
            && said.contains("--yes")
            && said.contains("nothing was done"),
        "{said}"
    );
    untouched(&said);

    // A terminal: anything but "yes" does nothing.
    let out = on_a_terminal(root, "apply --no-report scenarios/s.toml", "no\n");
    let said = text(&out);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("Enter a value") && said.contains("apply cancelled"),
        "{said}"
    );
    untouched(&said);

    // "yes" on the terminal: formatted and measured.
    let out = on_a_terminal(root, "apply --no-report scenarios/s.toml", "yes\n");
    let said = text(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("Enter a value"), "{said}");
    assert_eq!(label(&disk.device), format!("bp-{}", disk.name), "{said}");

    // The store records the disk now: formatted again with no question, no terminal.
    let redo = [
        "apply",
        "--no-report",
        "--redo",
        "test=dd-write",
        "scenarios/s.toml",
    ];
    let out = unattended(root, &redo);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    // Another store, which has never seen the board: asked again, and --yes answers for
    // a script.
    let other = [
        "apply",
        "--no-report",
        "--store",
        "other",
        "scenarios/s.toml",
    ];
    let out = unattended(root, &other);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let mut yes = other.to_vec();
    yes.insert(1, "--yes");
    let out = unattended(root, &yes);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(root.join("other/store.json").exists(), "{}", text(&out));
}
