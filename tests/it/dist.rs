//! Integration tests: the release plan of cargo-dist (`dist plan`, as `.ci/run` installs
//! it) for the targets `dist-workspace.toml` names: an archive per target, each with its
//! checksum, and the binary in each.

use std::process::Command;

#[test]
fn dist_plan_makes_an_archive_with_a_checksum_for_each_linux_target() {
    let out = match Command::new("dist")
        .args(["plan", "--output-format=json", "--no-local-paths"])
        .current_dir(crate::repo())
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            crate::cannot_run(&crate::this_test(), &format!("dist (cargo-dist): {e}"));
            return;
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["dist_version"], "0.34.0", "dist-workspace.toml's pin");
    let artifacts = plan["artifacts"].as_object().unwrap();
    for target in ["x86_64-unknown-linux-gnu", "aarch64-unknown-linux-gnu"] {
        let archive = format!("benchpipe-{target}.tar.xz");
        let a = &artifacts[&archive];
        assert_eq!(a["kind"], "executable-zip", "{archive}: {a}");
        assert_eq!(a["checksum"], format!("{archive}.sha256"), "{a}");
        assert!(
            a["assets"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["kind"] == "executable" && x["name"] == "benchpipe"),
            "{a}"
        );
        assert_eq!(artifacts[&format!("{archive}.sha256")]["kind"], "checksum");
    }
    assert_eq!(artifacts["sha256.sum"]["kind"], "unified-checksum");
}
