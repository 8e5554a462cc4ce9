//! A lab board's boot disk and power: what "booting the flashed image" means in a lab.
//!
//! Each board gets a loop-device boot disk (`role = "boot"`, `[flash] method = "dd"`).
//! Power off kills every process in the board's namespace at once, as a power cut
//! would. Power on boots what the disk holds, deciding before sshd starts:
//! - a blank disk (its first MiB all zero, as `lab up` made it): the lab's own system,
//!   sshd accepting the lab's key for root;
//! - a flashed image: its partition table (MBR or GPT) names a FAT boot partition and
//!   an ext4 root (`lab::disk`, read without mounting). The root's `os-release` is
//!   bind-mounted over `/etc/os-release` in sshd's own mount namespace (SSH sessions
//!   see the flashed image's), and only the users and keys the boot partition declares
//!   may log in (`lab::declare`: cloud-init `user-data`, the Raspberry Pi OS files, an
//!   Armbian preset): a per-boot sshd config in the lab's root-only run directory with
//!   `AuthorizedKeysFile` holding exactly the declared keys, `AllowUsers` the declared
//!   users, `PasswordAuthentication no`. Lab boards share this machine's users, so a
//!   declared user other than root exists only in that sshd's mount namespace: a copy
//!   of `/etc/passwd` with the user added as an alias of root (uid 0) is bind-mounted
//!   there; no user of the machine is created or changed, no home directory touched.
//!   With no declaration, SSH stays off and the board does not answer, as a real Pi.
//!   The declared hostname is recorded (and bind-mounted over `/etc/hostname`), and
//!   the boot log says what was read, taken and refused. Nothing from the image runs.
//!
//! Markers in the image's `/etc/benchpipe-lab/` steer the boot further:
//! - `new-host-key`: a firstboot that makes a new SSH host key, once per flashed
//!   filesystem (its UUID); the lab's known_hosts keeps the old one.
//! - `no-boot`: the board never comes back (sshd is not started).

use std::fmt::Write as _;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::declare::{self, Declared, Log, Sources};
use super::disk::{self, Fat, Table};
use super::{LabBoard, LabDisk, LabOptions, fail, io, netns_pids, pid_alive, run_dir, state};
use crate::error::Error;

/// The marker directory inside a flashed image.
pub const MARKERS: &str = "etc/benchpipe-lab";
/// The most of the root partition's os-release the lab reads.
const MAX_OS_RELEASE: u64 = 64 << 10;
/// The most of this machine's /etc/passwd copied for a board.
const MAX_PASSWD: u64 = 4 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerAction {
    On,
    Off,
    Cycle,
}

/// What a power action did. A board that did not boot is not an error of the power
/// switch: like a real board, it simply does not answer afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerOutcome {
    /// After `on` or `cycle`: whether sshd came up. `None` after `off`.
    pub booted: Option<bool>,
    /// Why it did not boot, or that it was already on, or who may log in.
    pub note: Option<String>,
}

/// The boot disk's image file: numbered 0 so that `down` detaches it with the others.
pub(super) fn boot_disk(root: &Path, board: &LabBoard, device: &str) -> LabDisk {
    LabDisk {
        name: "boot".into(),
        device: device.to_string(),
        file: state::disk_image(root, &board.netns, 0),
        path: format!("{}/boot", board.workdir),
        direct_io: false,
    }
}

/// Where a board's boot step keeps its files (the UUID it last booted, and in `boot/`
/// this boot's sshd config, keys, passwd, os-release, hostname and log): under the
/// lab's root-only run directory, removed by `down`.
pub(super) fn boot_dir(board: &LabBoard) -> PathBuf {
    // Board namespaces are `PREFIX-N`.
    let prefix = board.netns.rsplit_once('-').map_or("", |(p, _)| p);
    run_dir(prefix).join(board.name.as_str())
}

/// The log of a board's last boot of a flashed image.
pub fn boot_log(board: &LabBoard) -> PathBuf {
    boot_dir(board).join("boot").join("boot.log")
}

/// How sshd starts: its config, and files bind-mounted over the board's own view.
pub(super) struct Up {
    pub config: PathBuf,
    /// (file in the boot directory, the path it covers, only when that exists)
    pub binds: Vec<(PathBuf, &'static str)>,
    pub note: Option<String>,
}

pub(super) enum Boot {
    Up(Up),
    /// The board stays silent: why.
    Off(String),
}

/// Decides what power on boots, and writes this boot's files.
pub(super) fn boot(board: &LabBoard) -> Result<Boot, Error> {
    let lab = || {
        Boot::Up(Up {
            config: board.sshd_config.clone(),
            binds: Vec::new(),
            note: None,
        })
    };
    let Some(disk) = &board.boot else {
        return Ok(lab());
    };
    let device = Path::new(&disk.device);
    if !state::is_loop_device(&disk.device) {
        return Err(fail(format!(
            "{}: {} is no loop device",
            board.name, disk.device
        )));
    }
    let (head, bytes) = disk::head(device).map_err(io(device))?;
    let table = match disk::table(&head, bytes) {
        Ok(Table::Blank) => return Ok(lab()),
        Ok(t) => t,
        Err(why) => return Ok(Boot::Off(format!("{}: does not boot: {why}", board.name))),
    };
    let dir = boot_dir(board);
    state::check_no_links(&dir)?;
    state::ensure_dir(&dir, 0o700)?;
    let this = dir.join("boot");
    if fs::symlink_metadata(&this).is_ok() {
        fs::remove_dir_all(&this).map_err(io(&this))?;
    }
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&this)
        .map_err(io(&this))?;
    let mut log = Log::default();
    let decided = decide(board, &disk.device, &table, &dir, &this, &mut log);
    let mut text = log.0.join("\n");
    text.push('\n');
    state::write_new(&this.join("boot.log"), text.as_bytes(), 0o600)?;
    decided
}

fn decide(
    board: &LabBoard,
    device: &str,
    table: &Table,
    dir: &Path,
    this: &Path,
    log: &mut Log,
) -> Result<Boot, Error> {
    let off = |why: String| Ok(Boot::Off(format!("{}: {why}", board.name)));
    let Some(root) = table.root() else {
        log.say("no Linux root partition: the image does not boot");
        return off("does not boot: the boot disk has no Linux root partition".into());
    };
    let Some(uuid) = disk::ext4_uuid(Path::new(device), &root) else {
        log.say("the root partition holds no ext4: the image does not boot");
        return off(format!(
            "does not boot: partition {} holds no filesystem this board boots",
            root.number
        ));
    };
    let file =
        |path: &str, limit: u64, log: &mut Log| match disk::ext4_file(device, &root, path, limit) {
            Ok(f) => f,
            Err(e) => {
                log.say(format!("root partition: {e}: refused"));
                None
            }
        };
    if file(&format!("/{MARKERS}/no-boot"), 4096, log).is_some() {
        log.say(format!("{MARKERS}/no-boot: the image does not boot"));
        return off(format!(
            "the flashed image does not boot ({MARKERS}/no-boot)"
        ));
    }
    let os_release = file("/etc/os-release", MAX_OS_RELEASE, log)
        .or_else(|| file("/usr/lib/os-release", MAX_OS_RELEASE, log));
    let armbian_root = file("/root/.not_logged_in_yet", declare::MAX_FILE, log);
    let fat = if let Some(p) = table.boot() {
        match Fat::open(Path::new(device), &p) {
            Ok(f) => Some(f),
            Err(e) => {
                log.say(format!("boot partition: {e}"));
                None
            }
        }
    } else {
        log.say("no FAT boot partition");
        None
    };
    let read = |name: &str| match &fat {
        Some(f) => f.read(name, declare::MAX_FILE),
        None => Ok(None),
    };
    let src = Sources {
        boot: &read,
        armbian_root,
    };
    let declared = declare::declared(&src, log);
    let Some(d) = declared.filter(|d| d.ssh) else {
        return off(format!(
            "SSH stays off: the flashed boot partition declares no user and key to let in \
             (no cloud-init user-data, no Raspberry Pi OS ssh file or firstrun.sh, no Armbian \
             preset), as on a real board; boot log: {}",
            boot_log(board).display()
        ));
    };
    // A new host key once per flashed filesystem.
    let key = board.sshd_config.with_file_name("ssh_host_ed25519_key");
    let booted = dir.join("booted-uuid");
    let last = state::read_no_follow(&booted, 64)
        .ok()
        .flatten()
        .map(|(t, _)| t);
    if file(&format!("/{MARKERS}/new-host-key"), 4096, log).is_some()
        && last.as_deref() != Some(uuid.as_str())
    {
        for f in [key.clone(), key.with_extension("pub")] {
            match fs::remove_file(&f) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&f, e)),
            }
        }
        super::board::keygen(&key, board.name.as_str())?;
        log.say("new-host-key: made a new SSH host key");
    }
    state::replace(&booted, uuid.as_bytes(), 0o600)?;
    Ok(Boot::Up(write_boot(
        board, &d, os_release, this, &key, log,
    )?))
}

/// Writes this boot's sshd config, key files, passwd, os-release and hostname, each a
/// new file in the fresh boot directory (O_EXCL, no link followed).
fn write_boot(
    board: &LabBoard,
    d: &Declared,
    os_release: Option<Vec<u8>>,
    this: &Path,
    host_key: &Path,
    log: &mut Log,
) -> Result<Up, Error> {
    let keys = this.join("keys");
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&keys)
        .map_err(io(&keys))?;
    let mut binds = Vec::new();
    for u in &d.users {
        let mut text = u.keys.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        state::write_new(&keys.join(&u.name), text.as_bytes(), 0o600)?;
        log.say(format!(
            "{} ({}): {} key(s) may log in",
            u.name,
            d.kinds.join(", "),
            u.keys.len()
        ));
    }
    let aliases: Vec<&str> = d
        .users
        .iter()
        .map(|u| u.name.as_str())
        .filter(|n| *n != "root")
        .collect();
    if !aliases.is_empty() {
        let passwd = Path::new("/etc/passwd");
        let (machine, _) = state::read_no_follow(passwd, MAX_PASSWD)?
            .ok_or_else(|| fail("/etc/passwd is missing"))?;
        let mut text: String = machine
            .lines()
            .filter(|l| !aliases.contains(&l.split(':').next().unwrap_or("")))
            .fold(String::new(), |mut out, l| {
                let _ = writeln!(out, "{l}");
                out
            });
        for a in &aliases {
            let _ = writeln!(text, "{a}:x:0:0:benchpipe lab board user:/root:/bin/sh");
        }
        let file = this.join("passwd");
        state::write_new(&file, text.as_bytes(), 0o644)?;
        binds.push((file, "/etc/passwd"));
    }
    if let Some(os) = os_release {
        let file = this.join("os-release");
        state::write_new(&file, &os, 0o644)?;
        binds.push((file, "/etc/os-release"));
    }
    if let Some(h) = &d.hostname {
        let file = this.join("hostname");
        state::write_new(&file, format!("{h}\n").as_bytes(), 0o644)?;
        binds.push((file, "/etc/hostname"));
        log.say(format!("hostname: {h}"));
    }
    let access = if d.users.is_empty() {
        log.say("SSH is on, but no user is declared: nobody may log in");
        "DenyUsers *\n".to_string()
    } else {
        let names: Vec<&str> = d.users.iter().map(|u| u.name.as_str()).collect();
        format!("AllowUsers {}\n", names.join(" "))
    };
    let config = super::board::sshd_config(
        host_key,
        &board.sshd_pid_file,
        &format!("{}/%u", keys.display()),
        board.address,
        &access,
    );
    let file = this.join("sshd_config");
    state::write_new(&file, config.as_bytes(), 0o600)?;
    let names: Vec<&str> = d.users.iter().map(|u| u.name.as_str()).collect();
    Ok(Up {
        config: file,
        binds,
        note: Some(format!(
            "SSH on ({}); may log in: {}",
            d.kinds.join(", "),
            if names.is_empty() {
                "nobody".into()
            } else {
                names.join(", ")
            }
        )),
    })
}

/// `benchpipe lab power on|off|cycle BOARD` for the lab under `root`.
pub fn power(root: &Path, board: &str, action: PowerAction) -> Result<PowerOutcome, Error> {
    power_with(root, &LabOptions::default(), board, action)
}

pub fn power_with(
    root: &Path,
    options: &LabOptions,
    board: &str,
    action: PowerAction,
) -> Result<PowerOutcome, Error> {
    super::require_root()?;
    let Some(info) = super::status_with(root, options)? else {
        return Err(fail(format!("no lab under {}", root.display())));
    };
    let Some(b) = info.boards.iter().find(|b| b.name.as_str() == board) else {
        let names: Vec<&str> = info.boards.iter().map(|b| b.name.as_str()).collect();
        return Err(fail(format!(
            "the lab has no board {board:?}; its boards: {}",
            names.join(", ")
        )));
    };
    match action {
        PowerAction::Off => {
            off(b)?;
            Ok(PowerOutcome {
                booted: None,
                note: None,
            })
        }
        PowerAction::On if b.sshd_running => Ok(PowerOutcome {
            booted: Some(true),
            note: Some("already on".into()),
        }),
        PowerAction::On => on(b, options),
        PowerAction::Cycle => {
            off(b)?;
            on(b, options)
        }
    }
}

/// A power cut: every process in the namespace gets SIGKILL at once.
fn off(board: &LabBoard) -> Result<(), Error> {
    let started = Instant::now();
    loop {
        let pids = netns_pids(&board.netns)?;
        if pids.is_empty() && !pid_alive(&board.sshd_pid_file) {
            let _ = std::fs::remove_file(&board.sshd_pid_file);
            return Ok(());
        }
        for pid in &pids {
            // SAFETY: kill(2) on pids listed as members of the board's namespace.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        if started.elapsed() > Duration::from_secs(10) {
            return Err(fail(format!(
                "{}: processes {pids:?} survived SIGKILL",
                board.name
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn on(board: &LabBoard, options: &LabOptions) -> Result<PowerOutcome, Error> {
    match boot(board)? {
        // The image's own refusal means "does not come back", not a lab fault.
        Boot::Off(why) => Ok(PowerOutcome {
            booted: Some(false),
            note: Some(why),
        }),
        Boot::Up(up) => {
            super::board::launch(board, &options.sshd, &up)?;
            Ok(PowerOutcome {
                booted: Some(true),
                note: up.note,
            })
        }
    }
}
