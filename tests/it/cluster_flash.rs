//! Integration tests: a cluster whose image must be flashed, on the lab. Every member is
//! prepared for its own first boot, flashed from the controller, power-cycled, waited for
//! and verified before the cluster's cells; each member's flash is recorded with its
//! facts and its board state; a second apply flashes and measures nothing. They need
//! root (the lab); without it they fail loudly.

use std::path::Path;

use serde_json::Value;

use crate::firstboot::bench_lab;
use crate::flash::{apply, file_sha256};

fn text(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn a_clusters_members_are_each_flashed_with_their_own_first_boot_then_measured_once() {
    let lab = bench_lab(2, &[("bpflash-2", "2", "xz")]);
    let root = lab.root.clone();
    let (a, b) = (lab.board(0).name.to_string(), lab.board(1).name.to_string());
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/iperf3-all-boards.toml"),
        root.join("pipeline/iperf3-all-boards.toml"),
    )
    .unwrap();
    let sha = file_sha256(&root.join("images/bpflash-2.img.xz"));
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(
        root.join("scenarios/pair.toml"),
        format!(
            r#"title = "A flashed pair"
[images.bpflash-2]
path = "images/bpflash-2.img.xz"
sha256 = "{sha}"
[images.bpflash-2.expect]
os_release = {{ ID = "bpflash", VERSION_ID = "2" }}
[images.bpflash-2.firstboot]
kind = "cloud-init"
user = "bench"
sudo = true
[clusters.pair]
members = ["{a}", "{b}"]
[matrix]
image = ["bpflash-2"]
board = ["pair"]
test = ["iperf3-all-boards"]
[method]
cooldown = "0s"
warmup = {{ runs = 0 }}
runs = {{ min = 2, max = 2 }}
[params.iperf3-all-boards]
seconds = 1
"#
        ),
    )
    .unwrap();
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
    let cells: Vec<_> = std::fs::read_dir(root.join("results"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("cell.json").exists())
        .collect();
    assert_eq!(cells.len(), 1, "{said}");
    let dir = cells[0].path();
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap();
    let measured = samples
        .lines()
        .filter(|l| l.contains("\"measured\""))
        .count();
    assert_eq!(measured, 2, "{samples}");
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
