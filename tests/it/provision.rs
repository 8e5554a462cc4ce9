//! Integration tests: provisioning on a real lab board (Debian, so apt): a package its
//! lists lack fails only the cells of the recipe that needs it, with that cause, and
//! the other recipes' cells are measured.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::lab::Lab;

#[test]
fn a_package_apt_cannot_find_fails_only_the_cells_of_the_recipe_that_needs_it_and_versions_are_facts()
 {
    let Some(lab) = Lab::up(1) else { return };
    let root = &lab.root;
    let board = lab.board(0).clone();
    // The premise: the lab board (this machine) has neither the command nor the
    // package, and apt's lists do not know the package.
    let ghost = "benchpipe-no-such-package";
    let dpkg = Command::new("dpkg-query")
        .args(["-W", ghost])
        .output()
        .unwrap();
    assert!(!dpkg.status.success(), "{ghost} is installed");
    let cache = Command::new("apt-cache")
        .args(["show", ghost])
        .output()
        .unwrap();
    assert!(!cache.status.success(), "apt knows {ghost}");
    for d in ["pipeline", "scenarios"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/dd-write.toml"),
        root.join("pipeline/dd-write.toml"),
    )
    .unwrap();
    std::fs::write(
        root.join("pipeline/ghost.toml"),
        format!(
            "description = \"needs a package no distribution has\"\nuses_storage = false\n\
             [needs]\napt = [\"{ghost}\"]\ndnf = [\"{ghost}\"]\ncommands = [\"benchpipe-ghost-tool\"]\n\
             [run]\non = \"board\"\ncommand = \"benchpipe-ghost-tool\"\nparse = \"dd\"\n\
             [metrics]\nrate = {{ from = \"bytes_per_second\", unit = \"B/s\", better = \"higher\" }}\n"
        ),
    )
    .unwrap();
    let mut board_file = std::fs::read_to_string(&board.board_file).unwrap();
    let _ = write!(
        board_file,
        "\n[[storage]]\nname = \"rootfs\"\nrole = \"boot\"\npath = \"{}/rootfs\"\n",
        board.workdir
    );
    std::fs::write(&board.board_file, board_file).unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"provisioning\"\n[images.installed]\ninstalled = true\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}\"]\nstorage = [\"rootfs\"]\n\
             test = [\"ghost\", \"dd-write\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n\
             [params.dd-write]\nmib = 8\n",
            board.name
        ),
    )
    .unwrap();
    let bp = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(crate::scripted(args))
            .current_dir(root)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let out = bp(&["apply", "scenarios/s.toml"]);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    let cause = format!("package {ghost} not available from apt on {}", board.name);
    assert!(
        err.contains("1 cell(s) completed, 0 already complete, 1 failed"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "failed: ghost on {} (installed): {cause}",
            board.name
        )),
        "{err}"
    );
    // The other recipe's cell ran, with a plausible number.
    let mut seen = 0;
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.contains("-dd-write-") {
            let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap();
            let s: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
            let v = s["metrics"]["sequential_write"].as_f64().unwrap();
            assert!(v.is_finite() && v > 0.0, "{s}");
            // The version of the package the recipe names, as dpkg has it installed.
            let facts: Value = serde_json::from_str(
                &std::fs::read_to_string(e.path().join("facts.json")).unwrap(),
            )
            .unwrap();
            let dpkg = Command::new("dpkg-query")
                .args(["-W", "-f=${Version}", "coreutils"])
                .output()
                .unwrap();
            let version = String::from_utf8_lossy(&dpkg.stdout).to_string();
            assert!(!version.is_empty());
            assert_eq!(facts["packages"]["manager"], "apt", "{facts}");
            assert_eq!(
                facts["packages"]["installed"]["coreutils"],
                version.as_str(),
                "{facts}"
            );
            seen += 1;
        }
        if name.contains("-ghost-") {
            let f: Value = serde_json::from_str(
                &std::fs::read_to_string(e.path().join("failure.json")).unwrap(),
            )
            .unwrap();
            assert_eq!(f["failure"]["kind"], "package_unavailable", "{f}");
            assert_eq!(f["failure"]["manager"], "apt", "{f}");
            assert_eq!(f["cause"], cause.as_str(), "{f}");
        }
    }
    assert_eq!(seen, 1, "dd-write measured");
    let plan = bp(&["plan", "scenarios/s.toml"]);
    let text = String::from_utf8_lossy(&plan.stdout).to_string();
    assert!(text.contains(&format!("last failure: {cause}")), "{text}");
    assert!(
        text.contains("1 complete, 0 partial, 0 missing, 1 failed"),
        "{text}"
    );
}

#[test]
fn needs_name_packages_per_package_manager_and_a_flat_apt_list_still_means_apt_alone() {
    use benchpipe::model::{PackageManager, Side};
    let p = crate::spine::Project::local("needs-families")
        .file(
            "pipeline/families.toml",
            "description = \"packages per family\"\nuses_storage = false\n\
             [needs]\napt = [\"fio\"]\ndnf = [\"fio\", \"perl-Time-HiRes\"]\napk = [\"fio\"]\n\
             pacman = [\"fio\"]\ncommands = [\"fio\"]\n\
             [run]\ncommand = \"echo '{\\\"v\\\": 1}'\"\nparse = \"json\"\n\
             [metrics]\nv = { from = \"v\", unit = \"s\", better = \"lower\" }\n",
        )
        .file(
            "scenarios/s.toml",
            "title = \"t\"\n[images.installed]\ninstalled = true\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"here\"]\nstorage = [\"scratch\"]\ntest = [\"families\", \"dd-write\"]\n",
        );
    let ws = benchpipe::check::load(&p.dir, &[p.dir.join("scenarios/s.toml")])
        .unwrap_or_else(|e| panic!("{e}"));
    let needs = &ws.recipes[&"families".into()].needs[&Side::Board];
    assert_eq!(needs.packages_for(PackageManager::Apt), ["fio"]);
    assert_eq!(
        needs.packages_for(PackageManager::Dnf),
        ["fio", "perl-Time-HiRes"]
    );
    assert_eq!(needs.packages_for(PackageManager::Apk), ["fio"]);
    assert_eq!(needs.packages_for(PackageManager::Pacman), ["fio"]);
    // dd-write's recipe names apt alone, as every recipe did before: nothing else.
    let dd = &ws.recipes[&"dd-write".into()].needs[&Side::Board];
    assert_eq!(dd.packages_for(PackageManager::Apt), ["coreutils"]);
    for m in [
        PackageManager::Dnf,
        PackageManager::Apk,
        PackageManager::Pacman,
    ] {
        assert!(dd.packages_for(m).is_empty(), "{m}");
    }
}
