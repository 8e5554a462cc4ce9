//! Integration test: issue 39's first hour, end to end, as a newcomer would walk it.
//! The release binary alone, copied out of the clone, in an empty directory: `init`
//! against a lab board (standing in for a Pi at home), a disk named in the board file,
//! `check`, `plan`, a dry run whose destructive step names the disk as the board reports
//! it, `apply --yes`, and a report whose Markdown matches a snapshot a reviewer would
//! paste (its numbers, the board's address and the machine's facts filtered out).

use crate::init::{home_for, one_board_lab, run_in as run, uncomment};
use crate::lab::text;
use crate::scratch::Scratch;

/// The report's Markdown as a reviewer reads it, without what changes from run to run:
/// its title, method and the tests' tables, with the board's address, every measured
/// number and the marks of flagged runs (load on a shared machine) made placeholders;
/// the sections that list only what this run's numbers happened to be (wide intervals,
/// validity warnings, provenance) left out, and the disk named DISK.
fn filtered(md: &str, addr: &str, disk: &str) -> String {
    const MARKS: &str = "¹²³⁴⁵⁶⁷⁸⁹⁰";
    let mut sections = md.split("\n## ");
    let mut kept = vec![sections.next().unwrap_or_default().to_string()];
    for s in sections {
        let title = s.lines().next().unwrap_or_default();
        if ["Method", "xz", "disk-4k"].contains(&title) {
            kept.push(s.to_string());
        }
    }
    // The disk's name is the loop device's, whichever the lab got.
    let text = kept
        .join("\n## ")
        .replace(addr, "BOARD")
        .replace(&format!("| {disk} |"), "| DISK |");
    let mut out = String::new();
    for line in text.lines() {
        // A legend's sentences about marks are as volatile as the marks.
        let line = match line.find(|c| MARKS.contains(c)) {
            Some(i) if !line.starts_with('|') => line[..i].trim_end(),
            _ => line,
        };
        // Marks, and the commas between them ("7.1¹,²"), go.
        let raw: Vec<char> = line.chars().collect();
        let chars: Vec<char> = raw
            .iter()
            .enumerate()
            .filter(|&(i, c)| {
                let mark = |j: usize| raw.get(j).is_some_and(|m| MARKS.contains(*m));
                let between = *c == ',' && i > 0 && mark(i - 1) && mark(i + 1);
                !(MARKS.contains(*c) || between)
            })
            .map(|(_, c)| *c)
            .collect();
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            let in_word = k > 0 && (chars[k - 1].is_alphanumeric() || "-_".contains(chars[k - 1]));
            if c.is_ascii_digit() && !in_word {
                let start = k;
                while k < chars.len() && (chars[k].is_ascii_digit() || chars[k] == '.') {
                    k += 1;
                }
                // "4K random" is a name, not a measurement.
                if k < chars.len() && chars[k].is_alphabetic() {
                    out.extend(&chars[start..k]);
                } else {
                    out.push('N');
                }
                continue;
            }
            out.push(c);
            k += 1;
        }
        out.push('\n');
    }
    out
}

#[test]
fn a_newcomers_first_hour_from_init_to_a_report_worth_pasting() {
    let Some(lab) = one_board_lab() else { return };
    let board = lab.board(0);
    let addr = board.address.to_string();
    let home = home_for(&lab, "hour", true);
    // The release binary alone: no clone, no pipeline/ beside it.
    let bin_dir = Scratch::new("first_hour-hour-bin");
    let bin = bin_dir.join("benchpipe");
    std::fs::copy(env!("CARGO_BIN_EXE_benchpipe"), &bin).unwrap();
    let ws = Scratch::new("first_hour-hour-ws");
    assert_eq!(
        std::fs::read_dir(&ws).unwrap().count(),
        0,
        "an empty directory"
    );
    let bp = |args: &[&str]| run(&bin, &ws, &home, args);

    let out = bp(&["init", "--board", &format!("root@{addr}")]);
    assert!(out.status.success(), "{}", text(&out));
    // Name the second lab disk in the board file, as the comments say.
    let file = ws.join(format!("boards/{addr}.toml"));
    let disk = &board.disks[1];
    let written = uncomment(&std::fs::read_to_string(&file).unwrap(), &disk.device);
    let at = written
        .find(&format!("device = \"{}\"", disk.device))
        .unwrap();
    let name_at = written[..at].rfind("\nname = \"").unwrap() + "\nname = \"".len();
    let storage = written[name_at..].split('"').next().unwrap().to_string();
    std::fs::write(&file, &written).unwrap();
    // ... and measure it formatted ext4 beside the system disk, quickly.
    let scenario = ws.join("scenarios/first.toml");
    let s = std::fs::read_to_string(&scenario)
        .unwrap()
        .replace(
            "storage = [\"system\"]\nfilesystem = [\"as-is\"]",
            &format!(
                "storage = [\"system\", \"{storage}\"]\nfilesystem = [\"as-is\", \"ext4\"]\n\
                 exclude = [{{ storage = \"system\", filesystem = \"ext4\" }}, \
                 {{ storage = \"{storage}\", filesystem = \"as-is\" }}]"
            ),
        )
        .replace(
            "# [filesystems.ext4]\n# kind = \"ext4\"",
            "[filesystems.ext4]\nkind = \"ext4\"",
        )
        .replace("cooldown = \"30s\"", "cooldown = \"0s\"")
        .replace(
            "runs = { min = 3, max = 10, target = \"5%\" }",
            "runs = { min = 3, max = 3 }",
        )
        .replace("corpus_mib = 32", "corpus_mib = 4")
        .replace("size = \"64M\"\nruntime = 5", "size = \"16M\"\nruntime = 1");
    assert!(
        s.contains(&format!("\"{storage}\"]")) && s.contains("\n[filesystems.ext4]"),
        "the starter scenario changed shape:\n{s}"
    );
    std::fs::write(&scenario, s).unwrap();

    let out = bp(&["check", "scenarios/first.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("warning"), "{}", text(&out));
    let out = bp(&["plan", "scenarios/first.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("disk-4k on {addr} {storage}/ext4 (installed)")),
        "{}",
        text(&out)
    );
    let out = bp(&["apply", "--dry-run", "scenarios/first.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let dry = text(&out);
    let size = std::fs::metadata(&disk.file).unwrap().len();
    assert!(
        dry.contains(&format!("format {storage} as ext4"))
            && dry.contains(&disk.device)
            && dry.contains(&format!("{size} bytes"))
            && dry.contains("the board reports: model unknown, serial none"),
        "the format step names the device and what the board reports of it:\n{dry}"
    );
    // No terminal here: without --yes nothing is formatted; with it, everything runs.
    let out = bp(&["apply", "scenarios/first.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = bp(&["apply", "--yes", "scenarios/first.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(ws.join("reports/first/index.md")).unwrap();
    insta::assert_snapshot!("first_hour_report_md", filtered(&md, &addr, &storage));

    for d in [&ws, &bin_dir, &home] {
        let _ = std::fs::remove_dir_all(d);
    }
}
