//! Integration tests: a lab board that changes under benchpipe (its boot disk rewritten
//! and power-cycled, so its os-release changes) drifts; `plan` says so, and `apply`
//! refuses, keeps or redoes the cells measured before, as the user chooses, and records
//! the choice. They need root (the lab); without it they fail loudly.

use crate::scratch::Project;
use std::path::Path;
use std::process::Command;

use benchpipe::lab::image::{Compression, ImageSpec};
use benchpipe::lab::{self, PowerAction};
use benchpipe::transport::quote;
use serde_json::Value;

use crate::lab::{Lab, bp, text};

fn sh(cmd: &str) {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes `img` onto the board's boot disk and power-cycles it: the board then reports
/// the image's os-release, as after an upgrade done behind benchpipe's back.
fn boot(lab: &Lab, img: &Path) {
    let boot = lab
        .board(0)
        .boot
        .clone()
        .expect("the lab board has a boot disk");
    sh(&format!(
        "dd if={} of={} bs=4M conv=fsync status=none",
        quote::sh(&img.to_string_lossy()),
        quote::sh(&boot.device)
    ));
    let name = lab.board(0).name.to_string();
    let out = lab::power_with(&lab.root, &lab.options, &name, PowerAction::Cycle).unwrap();
    assert_eq!(out.booted, Some(true), "{out:?}");
}

/// Two recipes reporting the board's VERSION_ID, on the installed image, `runs` each.
fn project(lab: &Lab, runs: u32) {
    let name = lab.board(0).name.to_string();
    let mut p = Project::at(&lab.root);
    for test in ["osa", "osb"] {
        p = p.file(
            &format!("pipeline/{test}.toml"),
            r#"description = "the booted os-release's VERSION_ID, as a number"
uses_storage = false
[run]
command = '''. /etc/os-release && printf '{"version": %s}\n' "$VERSION_ID"'''
parse = "json"
[metrics]
version = { from = "version", unit = "VERSION_ID", better = "higher" }
"#,
        );
    }
    p.scenario(
        "drift",
        &format!(
            "title = \"drift\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{name}\"]\ntest = [\"osa\", \"osb\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = {runs}, max = {runs} }}\n"
        ),
    );
}

/// The cell directory of `test` under results/.
fn cell_dir(root: &Path, test: &str) -> std::path::PathBuf {
    std::fs::read_dir(root.join("results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            std::fs::read_to_string(p.join("cell.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|c| c["address"]["test"] == test)
        })
        .unwrap_or_else(|| panic!("no cell of {test}"))
}

fn versions(root: &Path, test: &str) -> Vec<f64> {
    std::fs::read_to_string(cell_dir(root, test).join("samples.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["metrics"]["version"]
                .as_f64()
                .unwrap()
        })
        .collect()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

const SCENARIO: &str = "scenarios/drift.toml";

#[test]
fn a_board_whose_os_release_changed_drifts_and_apply_refuses_keeps_or_redoes_as_chosen() {
    let Some(lab) = Lab::up(1) else { return };
    let root = lab.root.clone();
    let dir = root.join("images");
    std::fs::create_dir_all(&dir).unwrap();
    let build = |v: &str| {
        crate::firstboot::lab_ready(
            &lab,
            &dir,
            v,
            &ImageSpec::new("bpdrift", v),
            Compression::None,
        )
    };
    let (v1, v2) = (build("1"), build("2"));
    let board = lab.board(0).name.to_string();
    boot(&lab, &v1);
    project(&lab, 2);
    let out = bp(&root, &["apply", "--no-report", SCENARIO]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(versions(&root, "osa"), [1.0, 1.0]);
    let cell = json(&cell_dir(&root, "osa").join("fingerprint.json"));
    assert_eq!(
        cell["fingerprint"]["os_release"]["VERSION_ID"], "1",
        "{cell}"
    );
    assert!(
        !cell["fingerprint"]["kernel_release"]
            .as_str()
            .unwrap()
            .is_empty()
    );
    let seen = root.join(format!("results/boards/{board}.fingerprint.json"));
    assert_eq!(json(&seen)["fingerprint"]["os_release"]["VERSION_ID"], "1");
    let plan = bp(&root, &["plan", SCENARIO]);
    assert!(!text(&plan).contains("drift"), "{}", text(&plan));

    // The board is upgraded behind benchpipe's back, and the cells want more runs (the
    // run count is not in the key: the same cells, now partial).
    boot(&lab, &v2);
    project(&lab, 4);
    let out = bp(&root, &["apply", "--no-report", SCENARIO]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("the board changed since apply last saw it"),
        "{said}"
    );
    assert!(
        said.contains("changed since this cell's 2 run(s)"),
        "{said}"
    );
    assert!(
        said.contains("--on-drift keep") && said.contains("--on-drift redo"),
        "{said}"
    );
    assert_eq!(
        versions(&root, "osa"),
        [1.0, 1.0],
        "no run added to a drifted cell"
    );
    assert_eq!(versions(&root, "osb"), [1.0, 1.0]);
    assert_eq!(json(&seen)["fingerprint"]["os_release"]["VERSION_ID"], "2");

    // Plan now knows (from the board's last-seen fingerprint) and says what apply does.
    let plan = text(&bp(&root, &["plan", SCENARIO]));
    let drifted: Vec<&str> = plan
        .lines()
        .filter(|l| l.contains("! drift: the board changed since these runs ("))
        .collect();
    assert_eq!(drifted.len(), 2, "{plan}");
    assert!(
        drifted
            .iter()
            .all(|l| l.contains(r#"os_release.VERSION_ID: "1" -> "2""#)),
        "{plan}"
    );
    assert!(
        plan.contains("apply adds no runs until you choose"),
        "{plan}"
    );
    let pj = bp(&root, &["plan", "--json", "--on-drift", "keep", SCENARIO]);
    let pj: Value = serde_json::from_slice(&pj.stdout).unwrap();
    let drift = &pj["cells"][0]["drift"];
    assert_eq!(drift["choice"], "keep", "{pj}");
    let paths: Vec<&str> = drift["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"os_release.VERSION_ID"), "{pj}");

    // keep: the runs stay and new ones are added; the choice is recorded with both
    // fingerprints and where the runs changed board.
    let out = bp(
        &root,
        &[
            "apply",
            "--no-report",
            "--on-drift",
            "keep",
            "--only",
            "test=osa",
            SCENARIO,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(versions(&root, "osa"), [1.0, 1.0, 2.0, 2.0]);
    let fa = json(&cell_dir(&root, "osa").join("fingerprint.json"));
    let d = &fa["decisions"][0];
    assert_eq!(d["choice"], "keep", "{fa}");
    assert_eq!(d["after_seq"], 2);
    assert_eq!(d["from"]["os_release"]["VERSION_ID"], "1");
    assert_eq!(d["to"]["os_release"]["VERSION_ID"], "2");
    assert_eq!(fa["fingerprint"]["os_release"]["VERSION_ID"], "2");

    // redo: the runs stay stored but no longer count; four new ones are taken.
    let out = bp(
        &root,
        &[
            "apply",
            "--no-report",
            "--on-drift",
            "redo",
            "--only",
            "test=osb",
            SCENARIO,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(versions(&root, "osb"), [1.0, 1.0, 2.0, 2.0, 2.0, 2.0]);
    let b = cell_dir(&root, "osb");
    assert_eq!(json(&b.join("redo.json"))["after_seq"], 2);
    assert_eq!(
        json(&b.join("fingerprint.json"))["decisions"][0]["choice"],
        "redo"
    );
    let plan = text(&bp(&root, &["plan", SCENARIO]));
    assert!(!plan.contains("drift"), "{plan}");
    assert_eq!(plan.matches("complete (4 runs)").count(), 2, "{plan}");
    // The report shows both choices.
    let out = bp(&root, &["report", SCENARIO]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(root.join("reports/drift/index.md")).unwrap();
    assert!(
        md.contains("after run 2; the runs before it are kept (--on-drift keep)"),
        "{md}"
    );
    assert!(
        md.contains("the 2 run(s) before it no longer count (--on-drift redo)"),
        "{md}"
    );

    // Complete cells drift too: back to v1, seen by an apply that redoes only osa. osb,
    // complete and untouched, is shown drifted and redone before the walk on request.
    boot(&lab, &v1);
    let out = bp(
        &root,
        &["apply", "--no-report", "--redo", "test=osa", SCENARIO],
    );
    assert!(out.status.success(), "{}", text(&out));
    let plan = text(&bp(&root, &["plan", SCENARIO]));
    assert_eq!(plan.matches("! drift").count(), 1, "{plan}");
    assert!(
        plan.contains("kept as measured; `--on-drift redo` measures it again"),
        "{plan}"
    );
    let out = bp(
        &root,
        &["apply", "--no-report", "--on-drift", "redo", SCENARIO],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(&versions(&root, "osb")[6..], [1.0, 1.0, 1.0, 1.0]);
    let fb = json(&b.join("fingerprint.json"));
    assert_eq!(fb["decisions"][1]["choice"], "redo", "{fb}");
    assert_eq!(fb["decisions"][1]["after_seq"], 6, "{fb}");
    assert!(!text(&bp(&root, &["plan", SCENARIO])).contains("drift"));
}
