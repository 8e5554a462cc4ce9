//! Integration tests: scratch storage on real loop devices: mkfs.ext4 and mkfs.btrfs for
//! filesystem cells, and the refusals that keep benchpipe from formatting the wrong disk.
//! They need root for losetup and mount; without it they fail loudly.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::spine::Project;

/// A sparse file attached to a loop device, detached (and unmounted) on drop.
struct LoopDisk {
    device: String,
    file: PathBuf,
    mounted: Vec<PathBuf>,
}

fn sh(cmd: &str) -> String {
    let out = Command::new("sh").arg("-c").arg(cmd).output().unwrap();
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl LoopDisk {
    fn new(dir: &Path, mib: u64) -> LoopDisk {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            panic!("STORAGE TESTS NEED ROOT for losetup, mkfs and mount; they never pass silently");
        }
        let file = dir.join("disk.img");
        sh(&format!("truncate -s {mib}M '{}'", file.display()));
        let device = sh(&format!("losetup --find --show '{}'", file.display()));
        LoopDisk {
            device,
            file,
            mounted: Vec::new(),
        }
    }

    fn mount_elsewhere(&mut self, at: &Path) {
        std::fs::create_dir_all(at).unwrap();
        sh(&format!("mkfs.ext4 -q -F {}", self.device));
        sh(&format!("mount {} '{}'", self.device, at.display()));
        self.mounted.push(at.to_path_buf());
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        for m in &self.mounted {
            let _ = Command::new("umount").arg(m).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

fn project_with_disk(tag: &str, disk: &LoopDisk) -> Project {
    let p = Project::new(tag);
    let work = p.dir.join("board-work");
    let board = format!(
        "model = \"test controller\"\nlocal = true\nworkdir = \"{w}\"\n\n\
         [[storage]]\nname = \"scratch\"\nrole = \"scratch\"\npath = \"{w}/scratch\"\n\n\
         [[storage]]\nname = \"loop\"\nrole = \"scratch\"\ndevice = \"{d}\"\npath = \"{w}/loop\"\n\
         model = \"loop device\"\n",
        w = work.display(),
        d = disk.device
    );
    p.write("boards/here.toml", &board).write(
        "scenarios/fs.toml",
        "title = \"filesystems\"\n[images.installed]\ninstalled = true\n\
         [filesystems.ext4]\nkind = \"ext4\"\nmount_options = [\"noatime\"]\n\
         [filesystems.btrfs-lzo]\nkind = \"btrfs\"\nmount_options = [\"compress=lzo\"]\n\
         [matrix]\nimage = [\"installed\"]\nboard = [\"here\"]\nstorage = [\"loop\"]\n\
         filesystem = [\"ext4\", \"btrfs-lzo\"]\ntest = [\"disk-4k\", \"hdparm\", \"dd-write\"]\n\
         [method]\nwarmup = { runs = 0 }\nruns = { min = 2, max = 2 }\n\
         [params.disk-4k]\nsize = \"4M\"\nruntime = 1\n[params.dd-write]\nmib = 16\n",
    )
}

#[test]
fn filesystem_cells_format_the_declared_device_with_real_mkfs_and_unmount_after() {
    let p0 = Project::new("mkfs-scratch");
    let mut disk = LoopDisk::new(&p0.dir, 160);
    disk.mounted.clear();
    let p = project_with_disk("mkfs", &disk);
    let apply = p.bp(&["apply", "scenarios/fs.toml"]);
    assert!(
        apply.status.success(),
        "{}",
        String::from_utf8_lossy(&apply.stderr)
    );
    let err = String::from_utf8_lossy(&apply.stderr);
    assert!(err.contains("format loop as ext4"), "{err}");
    assert!(err.contains("format loop as btrfs-lzo"), "{err}");
    let samples = p.samples("disk-4k");
    assert_eq!(samples.len(), 4, "two cells of two runs");
    for (test, metric) in [
        ("hdparm", "buffered_read"),
        ("dd-write", "sequential_write"),
    ] {
        let runs = p.samples(test);
        assert_eq!(runs.len(), 4, "{test}");
        for s in &runs {
            assert!(s["metrics"][metric].as_f64().unwrap() > 1.0, "{test}: {s}");
        }
    }
    // The last filesystem made is btrfs, and benchpipe unmounted it when done.
    assert_eq!(
        sh(&format!("blkid -o value -s TYPE {}", disk.device)),
        "btrfs"
    );
    assert!(
        sh(&format!("findmnt -rn -S {} || true", disk.device)).is_empty(),
        "left mounted"
    );
}

#[test]
fn a_device_mounted_elsewhere_is_never_formatted() {
    let p0 = Project::new("mounted-scratch");
    let mut disk = LoopDisk::new(&p0.dir, 64);
    let elsewhere = p0.dir.join("someone-elses-data");
    disk.mount_elsewhere(&elsewhere);
    std::fs::write(elsewhere.join("precious"), "keep me").unwrap();

    let p = project_with_disk("mounted", &disk);
    let apply = p.bp(&["apply", "scenarios/fs.toml"]);
    assert_eq!(apply.status.code(), Some(1));
    let err = String::from_utf8_lossy(&apply.stderr);
    assert!(
        err.contains(&format!("refusing to format {}", disk.device)),
        "{err}"
    );
    assert!(err.contains(&elsewhere.display().to_string()), "{err}");
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("precious")).unwrap(),
        "keep me"
    );
    assert_eq!(
        sh(&format!("blkid -o value -s TYPE {}", disk.device)),
        "ext4"
    );
    assert!(p.samples("disk-4k").is_empty());
}
