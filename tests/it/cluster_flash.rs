//! Integration tests: a cluster whose image must be flashed, on the lab. Every member is
//! prepared for its own first boot, flashed from the controller, power-cycled, waited for
//! and verified before the cluster's cells; each member's flash is recorded with its
//! facts and its board state; a second apply flashes and measures nothing. They need
//! root (the lab); without it they fail loudly.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::firstboot::{bench_lab, cell_dirs, measured_runs};
use crate::flash::{apply, file_sha256};

/// The shipped iperf3-all-boards recipe, and `scenarios/pair.toml` on the lab images
/// `root` holds (each prepared with cloud-init for bench, its VERSION_ID expected) with
/// `clusters` and the matrix lines `matrix`.
fn workspace(root: &Path, clusters: &[&str], matrix: &str) {
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/iperf3-all-boards.toml"),
        root.join("pipeline/iperf3-all-boards.toml"),
    )
    .unwrap();
    let mut text = String::from("title = \"Flashed clusters\"\n");
    for (name, version, file) in [
        ("bpflash-1", "1", "bpflash-1.img"),
        ("bpflash-2", "2", "bpflash-2.img.xz"),
    ] {
        let path = root.join("images").join(file);
        if !path.exists() {
            continue;
        }
        let sha = file_sha256(&path);
        let _ = write!(
            text,
            "[images.{name}]\npath = \"images/{file}\"\nsha256 = \"{sha}\"\n\
             [images.{name}.expect]\nos_release = {{ ID = \"bpflash\", VERSION_ID = \"{version}\" }}\n\
             [images.{name}.firstboot]\nkind = \"cloud-init\"\nuser = \"bench\"\nsudo = true\n"
        );
    }
    for c in clusters {
        text += c;
        text += "\n";
    }
    let _ = write!(
        text,
        "[matrix]\n{matrix}\ntest = [\"iperf3-all-boards\"]\n\
         [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
         [params.iperf3-all-boards]\nseconds = 1\n"
    );
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(root.join("scenarios/pair.toml"), text).unwrap();
}

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn a_clusters_members_are_each_flashed_with_their_own_first_boot_then_measured_once() {
    let lab = bench_lab(2, &[("bpflash-2", "2", "xz")]);
    let root = lab.root.clone();
    let (a, b) = (lab.board(0).name.to_string(), lab.board(1).name.to_string());
    workspace(
        &root,
        &[&format!("[clusters.pair]\nmembers = [\"{a}\", \"{b}\"]")],
        r#"image = ["bpflash-2"]
board = ["pair"]"#,
    );
    let sha = file_sha256(&root.join("images/bpflash-2.img.xz"));
    let dry = apply(&root, &["apply", "--dry-run", "scenarios/pair.toml"]);
    let said = text(&dry);
    assert!(dry.status.success(), "{said}");
    assert_eq!(said.matches("fetch image bpflash-2").count(), 1, "{said}");
    for m in [&a, &b] {
        assert!(
            said.contains(&format!("REFLASH member {m} with bpflash-2")),
            "{said}"
        );
        assert!(said.contains(&format!("power cycle member {m}")), "{said}");
    }

    let out = apply(&root, &["apply", "--no-report", "scenarios/pair.toml"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    // One preparation per member: each gets its own host name.
    assert_eq!(
        said.matches("derived the prepared image").count(),
        2,
        "{said}"
    );
    let cells = cell_dirs(&root);
    assert_eq!(cells.len(), 1, "{said}");
    let dir = &cells[0];
    assert_eq!(measured_runs(dir), 2, "{said}");
    let facts: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("facts.json")).unwrap()).unwrap();
    let mut hosts = Vec::new();
    for m in [&a, &b] {
        let flashed = &facts["members"][m.as_str()]["flashed"];
        assert_eq!(flashed["base_file_sha256"], sha.as_str(), "{facts:#}");
        assert_eq!(flashed["firstboot"]["user"], "bench", "{facts:#}");
        hosts.push(flashed["firstboot"]["hostname"].clone());
        // The member's state says it runs the prepared image: the next plan skips it.
        let state: Value = serde_json::from_str(
            &std::fs::read_to_string(root.join(format!("results/boards/{m}.json"))).unwrap(),
        )
        .unwrap();
        let identity = state["identity"].as_str().unwrap_or_default();
        assert!(
            identity.starts_with(&format!("sha256:{sha}+firstboot:")),
            "{state:#}"
        );
    }
    assert_ne!(hosts[0], hosts[1], "{facts:#}");

    let again = apply(&root, &["apply", "--no-report", "scenarios/pair.toml"]);
    let said = text(&again);
    assert!(again.status.success(), "{said}");
    assert!(
        !said.contains("[flash] command")
            && !said.contains("derived the prepared image")
            && !said.contains("run 1/"),
        "nothing derived, flashed or measured again: {said}"
    );
}

/// Two walks share a member: cluster `pair` (both boards) on bpflash-2, and cluster
/// `solo` (the first board) on bpflash-1, after `pair` ran on bpflash-1 alone. The store
/// says the shared board runs bpflash-1, but `pair`'s walk may reflash it first, so
/// `solo`'s flash stays in the plan and apply judges it when the walk gets there:
/// whichever walk goes first, every cell is measured on the image it names.
#[test]
fn a_member_another_walk_may_reflash_keeps_its_flash_steps_and_is_judged_when_reached() {
    let lab = bench_lab(2, &[("bpflash-1", "1", "none"), ("bpflash-2", "2", "xz")]);
    let root = lab.root.clone();
    let (a, b) = (lab.board(0).name.to_string(), lab.board(1).name.to_string());
    let clusters = [
        format!("[clusters.pair]\nmembers = [\"{a}\", \"{b}\"]"),
        format!("[clusters.solo]\nmembers = [\"{a}\"]"),
    ];
    let clusters: Vec<&str> = clusters.iter().map(String::as_str).collect();
    workspace(
        &root,
        &clusters,
        "image = [\"bpflash-1\", \"bpflash-2\"]\nboard = [\"pair\", \"solo\"]\n\
         exclude = [{ board = \"solo\", image = \"bpflash-2\" }]",
    );
    let first = apply(
        &root,
        &[
            "apply",
            "--no-report",
            "--only",
            "board=pair,image=bpflash-1",
            "scenarios/pair.toml",
        ],
    );
    assert!(first.status.success(), "{}", text(&first));
    let dry = apply(&root, &["apply", "--dry-run", "scenarios/pair.toml"]);
    let said = text(&dry);
    assert!(dry.status.success(), "{said}");
    // The shared board runs bpflash-1 by the store, yet solo's flash of it stays.
    assert!(
        said.contains(&format!("REFLASH member {a} with bpflash-1")),
        "{said}"
    );
    assert!(
        said.contains(&format!("REFLASH member {b} with bpflash-2")),
        "{said}"
    );
    let out = apply(&root, &["apply", "--no-report", "scenarios/pair.toml"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    let again = apply(&root, &["apply", "--no-report", "scenarios/pair.toml"]);
    let said_again = text(&again);
    assert!(again.status.success(), "{said_again}");
    assert!(
        !said_again.contains("run 1/"),
        "every cell was complete: {said_again}"
    );
}
