//! Integration tests: scratch storage on real loop devices: mkfs.ext4 and mkfs.btrfs for
//! filesystem cells, and the refusals that keep benchpipe from formatting the wrong disk.
//! They need root for losetup and mount; without it they fail loudly.

use crate::lab::sh;
use std::path::{Path, PathBuf};
use std::process::Command;

use benchpipe::storage::StorageError;

use crate::spine::Project;

/// A sparse file attached to a loop device, detached (and unmounted) on drop.
struct LoopDisk {
    device: String,
    file: PathBuf,
    mounted: Vec<PathBuf>,
}

impl LoopDisk {
    fn new(dir: &Path, mib: u64) -> LoopDisk {
        LoopDisk::named(dir, "disk", mib)
    }

    /// A blank disk backed by `dir/<name>.img`.
    fn named(dir: &Path, name: &str, mib: u64) -> LoopDisk {
        std::fs::create_dir_all(dir).unwrap();
        let file = dir.join(format!("{name}.img"));
        sh(&format!("truncate -s {mib}M '{}'", file.display()));
        LoopDisk::attach(file, "")
    }

    /// Attaches an existing image file; `losetup_flags` such as `-P` (scan partitions).
    fn attach(file: PathBuf, losetup_flags: &str) -> LoopDisk {
        // SAFETY: geteuid has no preconditions.
        assert!(
            unsafe { libc::geteuid() } == 0,
            "STORAGE TESTS NEED ROOT for losetup, mkfs and mount; they never pass silently"
        );
        let device = sh(&format!(
            "losetup {losetup_flags} --find --show '{}'",
            file.display()
        ));
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

/// A user's file that must survive whatever benchpipe refuses to do.
fn plant_precious(dir: &Path) {
    std::fs::write(dir.join("precious"), "keep me").unwrap();
}

fn assert_precious_kept(dir: &Path) {
    assert_eq!(
        std::fs::read_to_string(dir.join("precious")).unwrap(),
        "keep me"
    );
}

/// A loop disk holding a user's filesystem, mounted under `p0` with a precious file.
fn users_disk(p0: &Project) -> (LoopDisk, PathBuf) {
    let mut disk = LoopDisk::new(&p0.dir, 64);
    let elsewhere = p0.dir.join("someone-elses-data");
    disk.mount_elsewhere(&elsewhere);
    plant_precious(&elsewhere);
    (disk, elsewhere)
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
    // Three tests on each filesystem, and each filesystem is made once (issue 8: the
    // schedule orders work by (image, storage, filesystem)).
    assert_eq!(err.matches("format loop as ext4").count(), 1, "{err}");
    assert_eq!(err.matches("format loop as btrfs-lzo").count(), 1, "{err}");
    let samples = p.samples("disk-4k");
    assert_eq!(samples.len(), 4, "two cells of two runs");
    let runs = p.samples("dd-write");
    assert_eq!(runs.len(), 4, "dd-write");
    for s in &runs {
        assert!(
            s["metrics"]["sequential_write"].as_f64().unwrap() > 1.0,
            "{s}"
        );
    }
    // hdparm reads the raw device: one cell for the loop device whatever the
    // filesystems, skipped on the board since a loop device is no disk (issue 10).
    assert!(p.samples("hdparm").is_empty());
    assert_eq!(
        err.matches("SKIPPED hdparm on here loop (installed)")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("is a virtual block device (loop"), "{err}");
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
    let (disk, elsewhere) = users_disk(&p0);

    let p = project_with_disk("mounted", &disk);
    let apply = p.bp(&["apply", "scenarios/fs.toml"]);
    assert_eq!(apply.status.code(), Some(1));
    let err = String::from_utf8_lossy(&apply.stderr);
    assert!(
        err.contains(&format!("refusing to format {}", disk.device)),
        "{err}"
    );
    assert!(err.contains(&elsewhere.display().to_string()), "{err}");
    assert_precious_kept(&elsewhere);
    assert_eq!(
        sh(&format!("blkid -o value -s TYPE {}", disk.device)),
        "ext4"
    );
    assert!(p.samples("disk-4k").is_empty());
}

// ---- Destructive operations only on what was declared, and free (issue 7) ----

/// What blkid finds on `device` right now, probing the device itself (no cache):
/// `TYPE` of a filesystem, `PTTYPE` of a partition table; empty when nothing.
fn probe(device: &str, tag: &str) -> String {
    sh(&format!(
        "blkid -p -o value -s {tag} {device} 2>/dev/null || true"
    ))
}

/// A project whose local board `here` has one scratch storage `loop` declared by
/// `storage` (TOML lines after `name` and `role`), and a scenario `fs` that runs
/// dd-write once on `filesystems` (declared by `fs_toml`).
fn project(tag: &str, storage: &str, fs_toml: &str, filesystems: &[&str]) -> Project {
    let p = Project::new(tag);
    let w = p.dir.join("board-work");
    let board = format!(
        "model = \"test controller\"\nlocal = true\nworkdir = \"{w}\"\n\n\
         [[storage]]\nname = \"loop\"\nrole = \"scratch\"\n{storage}\n",
        w = w.display()
    );
    let fs: Vec<String> = filesystems.iter().map(|f| format!("\"{f}\"")).collect();
    let scenario = format!(
        "title = \"storage\"\n[images.installed]\ninstalled = true\n{fs_toml}\n\
         [matrix]\nimage = [\"installed\"]\nboard = [\"here\"]\nstorage = [\"loop\"]\n\
         filesystem = [{}]\ntest = [\"dd-write\"]\n\
         [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n\
         [params.dd-write]\nmib = 8\n",
        fs.join(", ")
    );
    p.write("boards/here.toml", &board)
        .write("scenarios/fs.toml", &scenario)
}

const EXT4: &str = "[filesystems.ext4]\nkind = \"ext4\"\n";

/// Runs benchpipe in `p` through `sh -c`, so that a test can first change the
/// environment: `prefix` is shell text run before `exec benchpipe ARGS`.
fn bp_after(p: &Project, prefix: &str, args: &[&str]) -> std::process::Output {
    let cmd = format!(
        "{prefix}\nexec '{}' {}",
        env!("CARGO_BIN_EXE_benchpipe"),
        crate::scripted(args).join(" ")
    );
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(&p.dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// A new mount namespace starts with copies of the mounts other tests hold at that
/// moment; a copy keeps its device busy after the other test unmounts it, and that
/// test's mkfs then fails. The lab's own script drops them (only copies: the originals
/// live in the other namespace).
use benchpipe::lab::DROP_COPIED_LOOP_MOUNTS;

/// Like `bp_after`, in a private mount namespace of its own: whatever the script or
/// a faulty benchpipe mounts there vanishes with it and never touches this machine.
fn bp_unshared(p: &Project, prefix: &str, args: &[&str]) -> std::process::Output {
    let cmd = format!(
        "{DROP_COPIED_LOOP_MOUNTS}\n{prefix}\nexec '{}' {}",
        env!("CARGO_BIN_EXE_benchpipe"),
        crate::scripted(args).join(" ")
    );
    Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", &cmd])
        .current_dir(&p.dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Replaces `from` with `to` in the project's board file.
fn edit_board(p: &Project, from: &str, to: &str) {
    let file = p.dir.join("boards/here.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(&file, text.replace(from, to)).unwrap();
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A directory of symlinks to every program in /usr/bin and /usr/sbin except lsblk:
/// a real system without lsblk (a busybox image has none), for PATH.
fn path_without_lsblk(dir: &Path) -> PathBuf {
    let bin = dir.join("bin-without-lsblk");
    std::fs::create_dir_all(&bin).unwrap();
    for d in ["/usr/bin", "/usr/sbin"] {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let name = e.file_name();
            if name == "lsblk" || bin.join(&name).exists() {
                continue;
            }
            std::os::unix::fs::symlink(e.path(), bin.join(&name)).unwrap();
        }
    }
    bin
}

#[test]
fn mkfs_options_cannot_name_a_second_device_at_check_or_in_prepare() {
    use benchpipe::model::{Filesystem, Storage, StorageRole};
    let p = Project::new("mkfs-opt-device");
    let disks = p.dir.join("disks");
    let disk = LoopDisk::named(&disks, "declared", 160);
    let other = LoopDisk::named(&disks, "undeclared", 160);
    let p = project(
        "mkfs-opt-device-ws",
        &format!("device = \"{}\"", disk.device),
        &format!(
            "[filesystems.btrfs]\nkind = \"btrfs\"\nmkfs_options = [\"{}\"]\n",
            other.device
        ),
        &["btrfs"],
    );
    let check = p.bp(&["check", "scenarios/fs.toml"]);
    let err = stderr(&check);
    assert_eq!(check.status.code(), Some(2), "{err}");
    assert!(err.contains("scenarios/fs.toml:6:17"), "{err}");
    assert!(err.contains("bad mkfs option"), "{err}");
    assert!(err.contains(&other.device), "{err}");
    let apply = p.bp(&["apply", "scenarios/fs.toml"]);
    assert_eq!(apply.status.code(), Some(2), "{}", stderr(&apply));
    assert_eq!(
        probe(&other.device, "TYPE"),
        "",
        "the undeclared disk was formatted"
    );
    assert_eq!(probe(&disk.device, "TYPE"), "");

    // Defense in depth: a model that did not come through `check` is refused too.
    let storage = Storage {
        name: "loop".into(),
        role: StorageRole::Scratch,
        device: Some(disk.device.clone()),
        path: p.dir.join("board-work/loop").display().to_string(),
        model: None,
        uas: None,
        driver: None,
        serial: None,
        size_bytes: None,
    };
    let mut t = benchpipe::transport::local::Local::new();
    for (mkfs, mount) in [
        (vec![other.device.clone()], vec![]),
        (vec!["-f".to_string(), "loop3".to_string()], vec![]),
        (vec![], vec![format!("loop={}", other.device)]),
    ] {
        let fs = Filesystem {
            name: "evil".into(),
            kind: "btrfs".into(),
            mkfs_options: mkfs.clone(),
            mount_options: mount.clone(),
        };
        let e = benchpipe::storage::prepare(&mut t, &storage, &fs).unwrap_err();
        assert!(
            matches!(e, StorageError::Refused { .. }),
            "{mkfs:?} {mount:?}: {e:?}"
        );
        assert!(e.to_string().contains("option"), "{mkfs:?} {mount:?}: {e}");
    }
    assert_eq!(
        probe(&other.device, "TYPE"),
        "",
        "the undeclared disk was formatted"
    );
    assert_eq!(probe(&disk.device, "TYPE"), "");
}

/// A symlink in /dev to a device, removed on drop.
struct DevLink(PathBuf);

impl DevLink {
    fn new(link: &str, device: &str) -> DevLink {
        let _ = std::fs::remove_file(link);
        std::os::unix::fs::symlink(device, link).unwrap();
        DevLink(PathBuf::from(link))
    }
}

impl Drop for DevLink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Writes a DOS partition table with one Linux partition (sectors 2048..) into `img`.
fn partition_table(img: &Path) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new().write(true).open(img).unwrap();
    let mut entry = vec![0u8, 0, 0, 0, 0x83, 0, 0, 0];
    entry.extend(2048u32.to_le_bytes());
    entry.extend(40960u32.to_le_bytes());
    f.seek(SeekFrom::Start(446)).unwrap();
    f.write_all(&entry).unwrap();
    f.seek(SeekFrom::Start(510)).unwrap();
    f.write_all(&[0x55, 0xaa]).unwrap();
}

#[test]
fn a_disk_whose_partition_holds_boot_is_never_formatted_even_without_lsblk() {
    let p = project("boot-part", "", EXT4, &["ext4"]);
    let img_dir = p.dir.join("disks");
    std::fs::create_dir_all(&img_dir).unwrap();
    let img = img_dir.join("bootdisk.img");
    sh(&format!("truncate -s 64M '{}'", img.display()));
    partition_table(&img);
    let disk = LoopDisk::attach(img, "-P");
    let part = format!("{}p1", disk.device);
    let name = part.trim_start_matches("/dev/").to_string();
    // The kernel adds the partition as it scans; partx asks again if it has not yet.
    for i in 0..50 {
        if Path::new(&format!("/sys/class/block/{name}")).exists() && Path::new(&part).exists() {
            break;
        }
        if i == 10 {
            let _ = Command::new("partx").args(["-a", &disk.device]).status();
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    sh(&format!("mkfs.ext4 -q -F {part}"));
    // Declared by a symlink, as /dev/disk/by-id names are: resolved on the board.
    let link = DevLink::new(
        &format!("/dev/bp-it-boot-{}", std::process::id()),
        &disk.device,
    );
    edit_board(
        &p,
        "role = \"scratch\"\n",
        &format!("role = \"scratch\"\ndevice = \"{}\"\n", link.0.display()),
    );
    let bin = path_without_lsblk(&p.dir);
    let apply = bp_unshared(
        &p,
        &format!(
            "set -e; mount {part} /boot; export PATH='{}'",
            bin.display()
        ),
        &["apply", "scenarios/fs.toml"],
    );
    let err = stderr(&apply);
    assert_eq!(apply.status.code(), Some(1), "{err}");
    assert!(err.contains("holds the system"), "{err}");
    assert!(err.contains("/boot"), "{err}");
    assert_eq!(
        probe(&disk.device, "PTTYPE"),
        "dos",
        "the partition table is gone"
    );
    assert_eq!(probe(&part, "TYPE"), "ext4");
}

#[test]
fn a_users_filesystem_at_the_declared_path_is_never_unmounted_or_formatted() {
    let p = Project::new("user-mount");
    let path = p.dir.join("board-work/loop");
    let p2 = project(
        "user-mount-ws",
        &format!("device = \"{{DEV}}\"\npath = \"{}\"", path.display()),
        EXT4,
        &["ext4"],
    );
    let mut disk = LoopDisk::new(&p.dir, 64);
    edit_board(&p2, "{DEV}", &disk.device);
    disk.mount_elsewhere(&path);
    plant_precious(&path);
    let apply = p2.bp(&["apply", "scenarios/fs.toml"]);
    let err = stderr(&apply);
    assert_eq!(apply.status.code(), Some(1), "{err}");
    assert!(err.contains("benchpipe did not mount it"), "{err}");
    assert_precious_kept(&path);
    assert!(
        !sh(&format!("findmnt -rn -S {} || true", disk.device)).is_empty(),
        "the user's mount was unmounted"
    );
}

#[test]
fn a_non_empty_directory_at_the_path_is_never_mounted_over() {
    let p = Project::new("nonempty");
    let disk = LoopDisk::new(&p.dir, 64);
    let path = p.dir.join("users-dir");
    std::fs::create_dir_all(&path).unwrap();
    plant_precious(&path);
    let p2 = project(
        "nonempty-ws",
        &format!(
            "device = \"{}\"\npath = \"{}\"",
            disk.device,
            path.display()
        ),
        EXT4,
        &["ext4"],
    );
    let apply = p2.bp(&["apply", "scenarios/fs.toml"]);
    let err = stderr(&apply);
    assert_eq!(apply.status.code(), Some(1), "{err}");
    assert!(err.contains("not empty"), "{err}");
    assert!(
        sh(&format!("findmnt -rn -S {} || true", disk.device)).is_empty(),
        "mounted over the user's directory"
    );
    assert_precious_kept(&path);
}

#[test]
fn a_path_that_resolves_to_a_system_directory_is_never_mounted_over() {
    let p = Project::new("system-link");
    let disk = LoopDisk::new(&p.dir, 64);
    let link = p.dir.join("innocent-looking");
    std::os::unix::fs::symlink("/srv", &link).unwrap();
    let p2 = project(
        "system-link-ws",
        &format!(
            "device = \"{}\"\npath = \"{}\"",
            disk.device,
            link.display()
        ),
        EXT4,
        &["ext4"],
    );
    // In a mount namespace of its own: a faulty benchpipe mounts over /srv only there.
    let apply = bp_unshared(&p2, "", &["apply", "scenarios/fs.toml"]);
    let err = stderr(&apply);
    assert_eq!(apply.status.code(), Some(1), "{err}");
    assert!(err.contains("resolves to /srv"), "{err}");
    assert_eq!(probe(&disk.device, "TYPE"), "", "formatted before refusing");
}

#[test]
fn benchpipe_takes_back_its_own_leftover_mount_and_nothing_else() {
    use benchpipe::model::{Filesystem, Storage, StorageRole};
    let p = Project::new("own-mount");
    let mut disk = LoopDisk::new(&p.dir, 160);
    let path = p.dir.join("mnt");
    disk.mounted.push(path.clone());
    let storage = Storage {
        name: "loop".into(),
        role: StorageRole::Scratch,
        device: Some(disk.device.clone()),
        path: path.display().to_string(),
        model: None,
        uas: None,
        driver: None,
        serial: None,
        size_bytes: None,
    };
    let fs = |kind: &str| Filesystem {
        name: kind.into(),
        kind: kind.into(),
        mkfs_options: vec![],
        mount_options: vec![],
    };
    let mut t = benchpipe::transport::local::Local::new();
    benchpipe::storage::prepare(&mut t, &storage, &fs("ext4")).unwrap();
    assert_eq!(probe(&disk.device, "LABEL"), "bp-loop");
    assert!(path.join(".benchpipe-mount").exists());
    // An apply killed before it unmounted leaves its mount: the next one takes it back.
    benchpipe::storage::prepare(&mut t, &storage, &fs("btrfs")).unwrap();
    assert_eq!(probe(&disk.device, "TYPE"), "btrfs");
    // Without the marker the filesystem is not benchpipe's, though the label says so.
    std::fs::remove_file(path.join(".benchpipe-mount")).unwrap();
    plant_precious(&path);
    let e = benchpipe::storage::prepare(&mut t, &storage, &fs("ext4")).unwrap_err();
    assert!(matches!(e, StorageError::Refused { .. }), "{e:?}");
    assert!(e.to_string().contains("benchpipe did not mount it"), "{e}");
    let e = benchpipe::storage::release(&mut t, &storage, &fs("btrfs")).unwrap_err();
    assert!(matches!(e, StorageError::Refused { .. }), "{e:?}");
    assert!(e.to_string().contains("not unmounting"), "{e}");
    assert_precious_kept(&path);
    // With its marker back, release unmounts it.
    std::fs::write(
        path.join(".benchpipe-mount"),
        benchpipe::storage::rules::marker_text("loop"),
    )
    .unwrap();
    benchpipe::storage::release(&mut t, &storage, &fs("btrfs")).unwrap();
    assert!(sh(&format!("findmnt -rn -S {} || true", disk.device)).is_empty());
}

#[test]
fn fake_lsblk_that_fails_does_not_hide_a_mount() {
    let p0 = Project::new("fake-lsblk");
    let (disk, elsewhere) = users_disk(&p0);
    let fake = p0.dir.join("fake-bin");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::write(fake.join("lsblk"), "#!/bin/sh\nexit 1\n").unwrap();
    sh(&format!("chmod +x '{}/lsblk'", fake.display()));
    let p = project(
        "fake-lsblk-ws",
        &format!("device = \"{}\"", disk.device),
        EXT4,
        &["ext4"],
    );
    let apply = bp_after(
        &p,
        &format!("export PATH=\"{}:$PATH\"", fake.display()),
        &["apply", "scenarios/fs.toml"],
    );
    let err = stderr(&apply);
    assert_eq!(apply.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("refusing to format {}", disk.device)),
        "{err}"
    );
    assert!(err.contains(&elsewhere.display().to_string()), "{err}");
    assert_precious_kept(&elsewhere);
}

#[test]
fn without_lsblk_mounts_come_from_mountinfo_and_without_either_nothing_is_formatted() {
    let p0 = Project::new("no-lsblk");
    let (mut disk, elsewhere) = users_disk(&p0);
    let bin = path_without_lsblk(&p0.dir);
    let p = project(
        "no-lsblk-ws",
        &format!("device = \"{}\"", disk.device),
        EXT4,
        &["ext4"],
    );
    let path = format!("export PATH='{}'", bin.display());
    let apply = bp_after(&p, &path, &["apply", "scenarios/fs.toml"]);
    let err = stderr(&apply);
    assert_eq!(apply.status.code(), Some(1), "{err}");
    assert!(err.contains(&elsewhere.display().to_string()), "{err}");
    assert_precious_kept(&elsewhere);

    // Unmounted, the disk is free, and mountinfo alone is enough to say so.
    sh(&format!("umount '{}'", elsewhere.display()));
    disk.mounted.clear();
    // ... but with /proc hidden as well, nobody can say, and nothing is formatted.
    let blind = bp_unshared(
        &p,
        &format!("set -e; mount -t tmpfs none /proc; {path}"),
        &["apply", "scenarios/fs.toml"],
    );
    let err = stderr(&blind);
    assert_eq!(blind.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot tell whether"), "{err}");
    assert_eq!(probe(&disk.device, "TYPE"), "ext4", "formatted blind");

    let apply = bp_after(&p, &path, &["apply", "scenarios/fs.toml"]);
    assert!(apply.status.success(), "{}", stderr(&apply));
    assert_eq!(p.samples("dd-write").len(), 1);
}

#[test]
fn as_is_on_a_path_off_the_declared_device_is_refused() {
    let p0 = Project::new("as-is-off");
    let disk = LoopDisk::new(&p0.dir, 64);
    // No path: the storage would be `<workdir>/mnt/loop`, on this machine's own disk.
    let p = project(
        "as-is-off-ws",
        &format!("device = \"{}\"", disk.device),
        "",
        &["as-is"],
    );
    let apply = p.bp(&["apply", "scenarios/fs.toml"]);
    let err = stderr(&apply);
    assert_eq!(apply.status.code(), Some(1), "{err}");
    assert!(err.contains("not on the declared device"), "{err}");
    assert!(p.samples("dd-write").is_empty());
}

/// Sectors written to `device` so far (/sys/class/block/NAME/stat, field 7).
fn sectors_written(device: &str) -> u64 {
    let name = device.trim_start_matches("/dev/");
    let stat = std::fs::read_to_string(format!("/sys/class/block/{name}/stat")).unwrap();
    stat.split_whitespace().nth(6).unwrap().parse().unwrap()
}

#[test]
fn as_is_on_the_mounted_device_measures_that_device() {
    let p = Project::new("as-is-on");
    let path = p.dir.join("users-mount");
    let p2 = project(
        "as-is-on-ws",
        &format!("device = \"{{DEV}}\"\npath = \"{}\"", path.display()),
        "",
        &["as-is"],
    );
    let mut disk = LoopDisk::new(&p.dir, 64);
    edit_board(&p2, "{DEV}", &disk.device);
    disk.mount_elsewhere(&path);
    let before = sectors_written(&disk.device);
    let apply = p2.bp(&["apply", "scenarios/fs.toml"]);
    assert!(apply.status.success(), "{}", stderr(&apply));
    assert_eq!(p2.samples("dd-write").len(), 1);
    let written = sectors_written(&disk.device) - before;
    assert!(
        written >= 8 * 2048,
        "only {written} sectors reached the device"
    );
}

#[test]
fn over_ssh_a_lab_disk_is_formatted_and_a_users_mount_there_refused() {
    let lab = crate::lab::Lab::up(1);
    let root = &lab.root;
    let board = lab.board(0).clone();
    let disk = &board.disks[0];
    // The board's sshd runs in a mount namespace of its own (`ip netns exec`).
    let sshd_pid = std::fs::read_to_string(&board.sshd_pid_file).unwrap();
    let in_board = |cmd: &str| {
        sh(&format!(
            "nsenter -t {} -m sh -c {}",
            sshd_pid.trim(),
            benchpipe::transport::quote::sh(cmd)
        ))
    };
    in_board(DROP_COPIED_LOOP_MOUNTS);
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/dd-write.toml"),
        root.join("pipeline/dd-write.toml"),
    )
    .unwrap();
    let scenario = |filesystems: &str| {
        format!(
            "title = \"lab storage\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\nmount_options = [\"noatime\"]\n\
             [filesystems.ext4-nj]\nkind = \"ext4\"\nmkfs_options = [\"-O^has_journal\"]\n\
             [filesystems.ext4-m0]\nkind = \"ext4\"\nmkfs_options = [\"-m0\"]\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}\"]\nstorage = [\"{}\"]\n\
             filesystem = [{filesystems}]\ntest = [\"dd-write\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n\
             [params.dd-write]\nmib = 8\n",
            board.name, disk.name
        )
    };
    let apply = |root: &Path| {
        Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(crate::scripted(&["apply", "scenarios/s.toml"]))
            .current_dir(root)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    std::fs::write(
        root.join("scenarios/s.toml"),
        scenario("\"ext4\", \"ext4-nj\""),
    )
    .unwrap();
    let out = apply(root);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(probe(&disk.device, "LABEL"), format!("bp-{}", disk.name));
    assert!(
        sh(&format!("findmnt -rn -S {} || true", disk.device)).is_empty(),
        "left mounted"
    );

    std::fs::write(root.join("scenarios/s.toml"), scenario("\"ext4-m0\"")).unwrap();
    let (d, p) = (&disk.device, &disk.path);

    // A mount in a namespace the board's shell cannot see (here: the controller's, as
    // `ip netns exec` gave the lab's sshd a mount namespace of its own): mountinfo
    // cannot tell, and the kernel's exclusive open makes mkfs refuse the busy device.
    sh(&format!(
        "mkfs.ext4 -q -F {d} && mount {d} '{p}' && echo keep > '{p}/precious'"
    ));
    let out = apply(root);
    let err = stderr(&out);
    let kept = std::fs::read_to_string(format!("{p}/precious"));
    sh(&format!("umount '{p}'"));
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(kept.unwrap(), "keep\n", "{err}");

    // The user mounts a filesystem of their own where the board sees it: refused.
    in_board(&format!("mount {d} '{p}'"));
    let out = apply(root);
    let err = stderr(&out);
    let kept = in_board(&format!("cat '{p}/precious'; umount '{p}'"));
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("benchpipe did not mount it"), "{err}");
    assert_eq!(kept, "keep");
}
