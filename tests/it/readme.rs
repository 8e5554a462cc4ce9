//! Integration tests: README.md's real-board walk-through is real input. Its board and
//! scenario files, taken from the README as written (only the published digest it
//! leaves for the reader to paste is filled in), pass `check`, and `plan` and
//! `apply --dry-run` show the walk it promises: the download, the first-boot
//! preparation, the flash through the Turing Pi BMC, the boot check and the tests.
//! Nothing is run on a board (the board is hardware).

use crate::scratch::Scratch;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::lab::text;
use crate::repo;

/// The fenced blocks of `lang` in the README section titled `title`, in order.
fn blocks(readme: &str, title: &str, lang: &str) -> Vec<String> {
    let start = readme
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("README.md has no section {title:?}"));
    let section = &readme[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
    let mut out = Vec::new();
    let mut rest = section;
    let fence = format!("```{lang}\n");
    while let Some(i) = rest.find(&fence) {
        let body = &rest[i + fence.len()..];
        let end = body.find("```").expect("a closed fence");
        out.push(body[..end].to_string());
        rest = &body[end..];
    }
    out
}

/// A workspace holding the README's blocks, each written to the file its first line
/// names (the one thing the reader fills in, a published digest, filled), with the
/// clone's recipes and a HOME whose SSH key the blocks' boards would use. Not a
/// `Project`: the README's blocks, not the test, say which files there are.
fn workspace(files: &[String], tag: &str) -> (Scratch, PathBuf, Vec<String>) {
    let root = Scratch::new(&format!("readme-{tag}"));
    let home = root.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let keygen = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(home.join(".ssh/id_ed25519"))
        .output()
        .unwrap();
    assert!(keygen.status.success(), "{}", text(&keygen));
    let mut names = Vec::new();
    for f in files {
        let name = f
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# "))
            .unwrap_or_else(|| panic!("a block names its file on its first line:\n{f}"))
            .split(" (")
            .next()
            .unwrap()
            .trim()
            .to_string();
        let body = f.replace(
            "sha256 = \"...\"",
            &format!("sha256 = \"{}\"", "a".repeat(64)),
        );
        let path = root.join(&name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body).unwrap();
        names.push(name);
    }
    // The recipes of the clone the README is read in.
    let copy = Command::new("cp")
        .arg("-r")
        .arg(repo().join("pipeline"))
        .arg(&root)
        .output()
        .unwrap();
    assert!(copy.status.success(), "{}", text(&copy));
    (root, home, names)
}

fn bp(root: &Scratch, home: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(args)
        .current_dir(root)
        .env("HOME", home)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (out.status.code(), text(&out))
}

/// The commands of a section's `sh` blocks, comments dropped.
fn commands(readme: &str, title: &str) -> Vec<String> {
    blocks(readme, title, "sh")
        .concat()
        .lines()
        .filter_map(|l| l.split('#').next())
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn readmes_own_boards_section_checks_clean_and_names_the_disk_it_would_format() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let title = "Your own boards";
    let first_screen: String = readme.lines().take(60).collect::<Vec<_>>().join("\n");
    assert!(
        first_screen.contains(&format!("## {title}")),
        "a newcomer finds how to describe their own boards on the first screen"
    );
    let files = blocks(&readme, title, "toml");
    let (root, home, names) = workspace(&files, "own");
    assert_eq!(names, ["boards/pi4-1.toml", "scenarios/sd-vs-ssd.toml"]);
    // "(and pi4-2.toml beside it)": the second board is the first one renamed.
    let one = std::fs::read_to_string(root.join("boards/pi4-1.toml")).unwrap();
    std::fs::write(
        root.join("boards/pi4-2.toml"),
        one.replace("pi4-1", "pi4-2"),
    )
    .unwrap();
    let said = commands(&readme, title);
    assert_eq!(
        said,
        [
            "benchpipe check scenarios/sd-vs-ssd.toml",
            "benchpipe apply --dry-run scenarios/sd-vs-ssd.toml",
            "benchpipe apply scenarios/sd-vs-ssd.toml",
            "benchpipe report scenarios/sd-vs-ssd.toml",
        ]
    );
    let (code, out) = bp(&root, &home, &["check", "scenarios/sd-vs-ssd.toml"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("2 board(s)") && out.contains("6 cell(s)") && !out.contains("warning"),
        "as written: two boards, xz and the disk test on each disk, nothing to warn of: {out}"
    );
    let (code, out) = bp(
        &root,
        &home,
        &["apply", "--dry-run", "scenarios/sd-vs-ssd.toml"],
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("/dev/disk/by-id/usb-Samsung_PSSD_T7_S5T1NS0R123456M-0:0")
            && out.contains("S5T1NS0R123456M"),
        "the format step names the disk: {out}"
    );
}

#[test]
fn readmes_real_board_walk_through_checks_and_plans_download_preparation_flash_and_tests() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let title = "Real boards: from a downloaded image to a report";
    let files = blocks(&readme, title, "toml");
    assert_eq!(files.len(), 2, "a board file and a scenario");
    let (root, home, names) = workspace(&files, "walk");
    assert_eq!(names, ["boards/pi-1.toml", "scenarios/pi-xz.toml"]);
    let bp = |args: &[&str]| bp(&root, &home, args);
    // The commands the README's walk-through gives, in its order.
    let said = commands(&readme, title);
    assert_eq!(
        said,
        [
            "benchpipe check scenarios/pi-xz.toml",
            "benchpipe plan scenarios/pi-xz.toml",
            "benchpipe apply scenarios/pi-xz.toml",
            "benchpipe report scenarios/pi-xz.toml",
        ]
    );
    let (code, out) = bp(&["check", "scenarios/pi-xz.toml"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("1 board(s)") && out.contains("2 cell(s)"),
        "{out}"
    );
    let (code, out) = bp(&["plan", "scenarios/pi-xz.toml"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("xz on pi-1 (raspios)"), "{out}");
    assert!(out.contains("disk-4k on pi-1 sd/as-is (raspios)"), "{out}");
    let (code, out) = bp(&["apply", "--dry-run", "scenarios/pi-xz.toml"]);
    assert_eq!(code, Some(0), "{out}");
    let order = [
        "fetch image raspios",
        "prepare raspios's first boot (raspios)",
        "REFLASH with raspios: tpi flash node 1 on BMC bmc",
        "power cycle",
        "connect",
        "provision disk-4k, xz",
        "verify image raspios (ID=debian, VERSION_ID=12, uname -m=aarch64)",
        "measure 3 run(s)",
    ];
    let mut at = 0;
    for step in order {
        let i = out[at..]
            .find(step)
            .unwrap_or_else(|| panic!("no {step:?} after byte {at} of:\n{out}"));
        at += i + step.len();
    }
    // Without the preparation the walk would flash a board that never answers: `check`
    // says so before anything is written.
    let scenario = root.join("scenarios/pi-xz.toml");
    let s = std::fs::read_to_string(&scenario).unwrap();
    let cut = s.find("[images.raspios.firstboot]").unwrap();
    let end = s[cut..].find("\n\n").map_or(s.len(), |e| cut + e);
    std::fs::write(&scenario, format!("{}{}", &s[..cut], &s[end..])).unwrap();
    let (code, out) = bp(&["check", "scenarios/pi-xz.toml"]);
    assert_eq!(code, Some(0), "a warning: {out}");
    assert!(
        out.contains("warning: image `raspios` is flashed without `[images.raspios.firstboot]`")
            && out.contains("scenarios/pi-xz.toml:4:9"),
        "{out}"
    );
    let (code, out) = bp(&["apply", "--dry-run", "scenarios/pi-xz.toml"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("prepare raspios's first boot"), "{out}");
}
