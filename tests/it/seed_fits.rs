//! Integration tests: what the seeds' boards can take and how the seed studies read,
//! with no hardware: each board file says what its CPU runs (`arch`) and how much memory
//! it has, and `check` and `plan` hold the shipped studies to it (an image a board cannot
//! run, a tmpfs it cannot hold); the Turing Pi's seven CM3+ nodes.

use std::collections::BTreeSet;
use std::path::Path;

use crate::lab::bp;
use crate::repo;
use crate::seeds::{plan, stderr, toml_of, workspace};

/// Replaces `find` (which must be there once) by `replace` in the workspace's `file`.
fn edit(root: &Path, file: &str, find: &str, replace: &str) {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches(find).count(), 1, "{file}: {find}");
    std::fs::write(&path, text.replace(find, replace)).unwrap();
}

/// The 1-based line of `file` that starts with `start`.
fn line_of(root: &Path, file: &str, start: &str) -> usize {
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    1 + text
        .lines()
        .position(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("{file}: no line {start}"))
}

/// The running architecture is the image's, the CPU's capabilities the board's: the
/// seed's Pi 4s and CM3+s run its 64-bit and 32-bit images alike, so the shipped disk
/// study passes `check`; a Dramble board file that says its CPU runs 32-bit code only
/// (as the Dramble files once did) is refused at the 64-bit image's `uname_m`, by
/// `check` and by `plan`, naming the board file. The ODROID-HC2's Exynos runs 32-bit
/// code only, and says so.
#[test]
fn check_refuses_an_image_a_seed_board_cannot_run_and_passes_64_bit_on_64_bit_capable_boards() {
    let root = workspace("arch");
    plan(&root, "scenarios/turing-pi-disk.toml");
    for b in [
        "dramble-pi4-1",
        "turing-cm3-1",
        "turing-cm3-2",
        "rpi3-1",
        "opi-zero-plus-1",
    ] {
        let board = toml_of(&root.join(format!("boards/{b}.toml")));
        let arch: Vec<&str> = board["arch"]
            .as_array()
            .unwrap_or_else(|| panic!("{b}: {board}"))
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(arch, ["aarch64", "armv7l"], "{b}");
    }
    assert_eq!(
        toml_of(&root.join("boards/odroid-hc2-1.toml"))["arch"].as_str(),
        Some("armv7l")
    );
    edit(
        &root,
        "boards/dramble-pi4-1.toml",
        "arch = [\"aarch64\", \"armv7l\"]",
        "arch = \"armv7l\"",
    );
    let at = format!(
        "scenarios/turing-pi-disk.toml:{}:11",
        line_of(
            &root,
            "scenarios/turing-pi-disk.toml",
            "uname_m = \"aarch64\""
        )
    );
    for cmd in ["check", "plan"] {
        let out = bp(&root, &[cmd, "scenarios/turing-pi-disk.toml"]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        let err = stderr(&out);
        for want in [
            at.as_str(),
            "image `raspios-64` runs `aarch64` (its `uname_m`), which board `dramble-pi4-1` cannot run",
            "boards/dramble-pi4-1.toml declares arch = [\"armv7l\"]",
        ] {
            assert!(err.contains(want), "{cmd}: {want}\n{err}");
        }
        // One error for the pair, not one per cell.
        assert_eq!(err.matches("cannot run").count(), 1, "{err}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A tmpfs is RAM: the Orange Pi Zero Plus has 512 MiB, so the smb recipe's tmpfs for the
/// seed's 250 MB file (the file read and one written back: 508 MiB) is refused by
/// `check` and `plan` at `[params.smb]`, naming the board and its memory; the shipped
/// study asks a size every seed board holds, and passes.
#[test]
fn check_refuses_a_tmpfs_a_seed_board_cannot_hold_and_the_shipped_study_fits() {
    let root = workspace("memory");
    plan(&root, "scenarios/sbc-serving.toml");
    plan(&root, "scenarios/sbc-xz-fs.toml");
    let zero = toml_of(&root.join("boards/opi-zero-plus-1.toml"));
    assert_eq!(zero["memory"].as_str(), Some("512 MiB"));
    edit(
        &root,
        "scenarios/sbc-serving.toml",
        "[params.smb]\nsize_mib = 160\n",
        "[params.smb]\nsize_mib = 250\n",
    );
    let at = format!(
        "scenarios/sbc-serving.toml:{}:9",
        line_of(&root, "scenarios/sbc-serving.toml", "[params.smb]")
    );
    for cmd in ["check", "plan"] {
        let out = bp(&root, &[cmd, "scenarios/sbc-serving.toml"]);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {}", stderr(&out));
        let err = stderr(&out);
        for want in [
            at.as_str(),
            "the tmpfs of `smb` takes 508 MiB, more than board `opi-zero-plus-1` can hold",
            "boards/opi-zero-plus-1.toml declares memory = \"512 MiB\"",
        ] {
            assert!(err.contains(want), "{cmd}: {want}\n{err}");
        }
        // The boards with 1 GiB and more hold it.
        assert_eq!(err.matches("can hold").count(), 1, "{err}");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// The seed's Turing Pi had seven CM3+ nodes: seven board files of one shape (the
/// module, its 1 GiB, what its CPU runs, the node power command), each at an address of
/// its own.
#[test]
fn the_seven_cm3_nodes_of_the_seeds_turing_pi_are_shipped_alike() {
    let mut hosts = BTreeSet::new();
    for n in 1..=7 {
        let b = toml_of(&repo().join(format!("examples/seeds/boards/turing-cm3-{n}.toml")));
        assert!(
            b["model"].as_str().unwrap().contains("Compute Module 3+"),
            "{n}: {b}"
        );
        assert_eq!(b["memory"].as_str(), Some("1 GiB"), "{n}");
        assert_eq!(b["arch"].as_array().map(Vec::len), Some(2), "{n}");
        assert!(
            b["power"]["cycle"]
                .as_str()
                .unwrap()
                .contains("turing-node-power cycle {{ board }}"),
            "{n}"
        );
        assert!(
            hosts.insert(b["ssh"]["host"].as_str().unwrap().to_string()),
            "{n}"
        );
    }
    assert!(
        !repo()
            .join("examples/seeds/boards/turing-cm3-8.toml")
            .exists()
    );
}
