//! Integration tests: a scratch storage that declares its disk (`size`, `serial`) is
//! formatted only when the device the board file names reports that disk; a lab board's
//! file declares each loop disk's size.

use std::path::Path;
use std::process::Command;

use crate::lab::{Lab, sh};

fn label(device: &str) -> String {
    sh(&format!("blkid -o value -s LABEL {device} || true"))
        .trim()
        .to_string()
}
/// `scenarios/s.toml` in a lab workspace: the built-in dd-write once on `disk` of
/// `board`, formatted ext4 (a format step, the destructive step these tests judge).
pub(crate) fn dd_write_scenario(root: &Path, board: &str, disk: &str) {
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"dd-write\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{board}\"]\nstorage = [\"{disk}\"]\n\
             filesystem = [\"ext4\"]\ntest = [\"dd-write\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n\
             [params.dd-write]\nmib = 8\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_device_of_another_size_than_declared_is_never_formatted() {
    let Some(lab) = Lab::up(1) else { return };
    let root = &lab.root;
    let board = lab.board(0).clone();
    let disk = &board.disks[0];
    let bytes = std::fs::metadata(&disk.file).unwrap().len();
    let file = std::fs::read_to_string(&board.board_file).unwrap();
    let declared = format!("size = {bytes}\n");
    assert!(
        file.contains(&declared),
        "the lab declares its disks' sizes: {file}"
    );
    dd_write_scenario(root, board.name.as_str(), &disk.name);
    let apply = || {
        Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(crate::scripted(&["apply", "scenarios/s.toml"]))
            .current_dir(root)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    // The user's own filesystem is on the device, and the board file declares a disk of
    // twice its size: it is another disk, so nothing is formatted.
    sh(&format!("mkfs.ext4 -q -F -L users {}", disk.device));
    std::fs::write(
        &board.board_file,
        file.replace(&declared, &format!("size = {}\n", bytes * 2)),
    )
    .unwrap();
    let out = apply();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "is {bytes} bytes, the board file declares {}",
            bytes * 2
        )) && err.contains("nothing was formatted or measured"),
        "{err}"
    );
    assert_eq!(label(&disk.device), "users", "{err}");
    // The declared size is the device's: formatted and measured.
    std::fs::write(&board.board_file, &file).unwrap();
    let out = apply();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    assert_eq!(label(&disk.device), format!("bp-{}", disk.name), "{err}");
}

/// A raw-device test (`uses_storage = "device"`, like hdparm) has no mount step: its
/// device is judged when its cell opens, and another disk than the declared one is
/// never read.
#[test]
fn a_raw_device_test_never_reads_a_device_of_another_size_than_declared() {
    let Some(lab) = Lab::up(1) else { return };
    let root = &lab.root;
    let board = lab.board(0).clone();
    let disk = &board.disks[0];
    let bytes = std::fs::metadata(&disk.file).unwrap().len();
    let file = std::fs::read_to_string(&board.board_file).unwrap();
    let declared = format!("size = {bytes}\n");
    assert!(file.contains(&declared), "{file}");
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    // It leaves a mark on the board when it reads the device.
    let mark = root.join("raw-read");
    std::fs::write(
        root.join("pipeline/raw.toml"),
        format!(
            "description = \"one block of the raw device\"\nuses_storage = \"device\"\n[run]\n\
             command = '''dd if={{{{ device }}}} of=/dev/null bs=4096 count=1 2>/dev/null && \
             touch {} && printf '{{\"read\": 1}}\\n' '''\nparse = \"json\"\n[metrics]\n\
             read = {{ from = \"read\", unit = \"block\", better = \"higher\" }}\n",
            mark.display()
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"raw\"\n[images.installed]\ninstalled = true\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}\"]\nstorage = [\"{}\"]\n\
             test = [\"raw\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n",
            board.name, disk.name
        ),
    )
    .unwrap();
    let apply = || crate::lab::bp(root, &["apply", "--no-report", "scenarios/s.toml"]);
    std::fs::write(
        &board.board_file,
        file.replace(&declared, &format!("size = {}\n", bytes * 2)),
    )
    .unwrap();
    let out = apply();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "is {bytes} bytes, the board file declares {}",
            bytes * 2
        )) && err.contains("the device was not read"),
        "{err}"
    );
    assert!(!mark.exists(), "the device was read: {err}");
    // The declared size is the device's: read.
    std::fs::write(&board.board_file, &file).unwrap();
    let out = apply();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    assert!(mark.exists(), "{err}");
}
