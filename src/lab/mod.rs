//! The virtual lab: boards made of network namespaces, each running a real sshd.
//!
//! `up` builds N boards on this machine: a namespace joined to the controller by a veth
//! pair with addresses in 198.18.0.0/15 (RFC 2544's benchmarking range), an sshd with its
//! own host key accepting a lab key, and loop-device "disks". Each board also has a
//! second link, a veth pair on a subnet of its own shaped by `tc` (tbf) to a Wi-Fi-like
//! rate, so that its board file declares `lan` and `wifi` networks. It writes the boards'
//! files and the lab's own known_hosts; the user's `~/.ssh` is never touched.
//! `down` removes all of it, from the state file and also by naming convention, so it
//! works after a crash. Every process in a board's namespace (sshd, its sessions, any
//! service a test left) is killed with the namespace. Root acts only on names and paths
//! the lab itself makes (see `state`): a planted state file or link changes nothing.

mod board;
pub mod declare;
pub mod disk;
mod down;
pub mod image;
mod link;
pub mod multipart;
mod power;
mod state;
mod up;

pub use board::{DROP_COPIED_LOOP_MOUNTS, kill_sshd, start_sshd};
use board::{board_file, keygen, sshd_config, start_sshd_with, write_board_file};
pub use down::{down, down_with};
pub use link::{LAN_INTERFACE, LabLink, WIFI_INTERFACE};
use link::{shaped_link, subnet_addresses, used_subnets};
pub use power::{MARKERS, PowerAction, PowerOutcome, boot_log, power, power_with};
use up::{build, check_tools, prepare_state_dir};

use std::fs;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::model::{BoardName, SshTarget};
use crate::transport::local::Local;
use crate::transport::{Output, Transport, quote};

/// The first line of every board file the lab writes; `down` removes only such files.
const BOARD_FILE_MARK: &str = "# Written by `benchpipe lab up`; `benchpipe lab down` removes it.";
const STATE_VERSION: u32 = 1;
/// Lab boards share the controller's filesystem, so each has a workdir of its own here.
const WORKDIRS: &str = "/var/tmp/benchpipe";
/// sshd's `StrictModes` accepts an authorized_keys file only on a path that root alone
/// can change, which a workspace under /home or /tmp is not; each lab keeps it here.
const RUN_DIR: &str = "/run/benchpipe-lab";
const DEFAULT_SSHD: &str = "/usr/sbin/sshd";

/// How a lab is named and sized. Tests use their own prefix so they never collide with
/// a user's lab or with each other.
#[derive(Clone, Debug)]
pub struct LabOptions {
    /// Prefix of namespace and veth names: `bp-lab` gives `bp-lab-1`.
    pub prefix: String,
    /// Prefix of board names: `lab` gives boards `lab-1`, `lab-2`, ...
    pub board_prefix: String,
    /// Loop-device disks per board (1 or 2).
    pub disks_per_board: usize,
    pub disk_bytes: u64,
    /// The boot disk's size (the flash target); 0 builds boards without one.
    pub boot_bytes: u64,
    /// The first /30 to try, counted in 198.18.0.0/15; used ones are skipped.
    pub first_subnet: u32,
    /// The sshd binary every board runs (tests name a missing one).
    pub sshd: PathBuf,
    /// The rate the second link (`wifi`) is shaped to, in Mbit/s, each way.
    pub wifi_rate_mbit: u32,
    /// `lab up --user NAME`: the boards log in as NAME, the user a flashed image's
    /// first-boot preparation declares, and are flashed from the controller (a board
    /// flashed with a prepared image lets in no one else). None: root, flashed
    /// through the board.
    pub login_user: Option<String>,
    /// `lab up --direct-io`: the scratch disks' files are written through (no holes)
    /// and attached with direct I/O, so a read of the loop device reaches the disk
    /// under the file rather than the page cache or a hole: hdparm can time it.
    pub direct_io: bool,
}

impl Default for LabOptions {
    fn default() -> Self {
        LabOptions {
            prefix: "bp-lab".into(),
            board_prefix: "lab".into(),
            disks_per_board: 2,
            // mkfs.xfs (xfsprogs 5.19 and later) refuses filesystems under 300 MB;
            // the files are sparse.
            disk_bytes: 320 << 20,
            boot_bytes: 64 << 20,
            first_subnet: 1,
            sshd: PathBuf::from(DEFAULT_SSHD),
            // About what the second seed's boards got over 802.11n (44 to 82 Mbit/s).
            wifi_rate_mbit: 50,
            login_user: None,
            direct_io: false,
        }
    }
}

/// One board of a running lab.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabBoard {
    pub name: BoardName,
    /// The network namespace, which is also the controller-side veth's name.
    pub netns: String,
    pub subnet: u32,
    pub controller_address: Ipv4Addr,
    pub address: Ipv4Addr,
    pub workdir: String,
    pub board_file: PathBuf,
    pub sshd_config: PathBuf,
    pub sshd_pid_file: PathBuf,
    /// (loop device, backing file, mount point declared in the board file)
    pub disks: Vec<LabDisk>,
    /// The boot disk `[flash]` writes and the power cycle boots (`power`).
    #[serde(default)]
    pub boot: Option<LabDisk>,
    /// The second, shaped link (`wlan0` in the namespace, `<netns>w` on the controller).
    #[serde(default)]
    pub wifi: Option<LabLink>,
    /// Whether the board's sshd is running (filled in by `status`).
    #[serde(skip)]
    pub sshd_running: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabDisk {
    pub name: String,
    pub device: String,
    pub file: PathBuf,
    pub path: String,
    /// Attached with direct I/O over a file with no holes (`LabOptions::direct_io`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub direct_io: bool,
}

/// What `up` built, as recorded in the state file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabInfo {
    pub version: u32,
    pub prefix: String,
    pub board_prefix: String,
    pub state_dir: PathBuf,
    /// The lab's private key (ed25519), authorised on every board.
    pub identity: PathBuf,
    /// The lab's own known_hosts, holding every board's host key.
    pub known_hosts: PathBuf,
    pub boards: Vec<LabBoard>,
    /// The user the board files log in as (`LabOptions::login_user`); None: root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_user: Option<String>,
    /// True when `up` found the lab already running and left it as it was.
    #[serde(skip)]
    pub already_up: bool,
}

impl LabInfo {
    /// The SSH target of a board, as its board file declares it.
    pub fn ssh_target(&self, board: &LabBoard) -> SshTarget {
        SshTarget {
            host: board.address.to_string(),
            port: Some(22),
            user: Some("root".into()),
            identity: Some(self.identity.clone()),
            password_env: None,
            known_hosts: Some(self.known_hosts.clone()),
            ..SshTarget::default()
        }
    }

    /// The keys every board's sshd accepts (the lab's own, and any a test adds).
    pub fn authorized_keys(&self) -> PathBuf {
        run_dir(&self.prefix).join("authorized_keys")
    }
}

fn run_dir(prefix: &str) -> PathBuf {
    Path::new(RUN_DIR).join(prefix)
}

/// The workspace as the lab names it: its real path (the user's own links resolved once,
/// deliberately), so that the state file records one spelling; the links checked after
/// this are only those inside the workspace, which a cloned repository can carry.
fn workspace(root: &Path) -> Result<PathBuf, Error> {
    match fs::canonicalize(root) {
        Ok(p) => Ok(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::path::absolute(root).map_err(io(root))
        }
        Err(e) => Err(Error::io(root, e)),
    }
}

/// Fills a disk's file with written zeros: a hole or an unwritten extent reads as zeros
/// without touching the disk, so only written blocks make a direct read a disk read.
fn write_through(f: &fs::File, bytes: u64) -> std::io::Result<()> {
    use std::io::Write;
    let chunk = vec![0u8; 1 << 20];
    let mut w = f;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        w.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    f.sync_all()
}

/// Turns off discard on a loop device (`/dev/loopN`), so its file keeps its blocks.
fn no_discard(device: &str) -> Result<(), Error> {
    let name = device.strip_prefix("/dev/").unwrap_or(device);
    if !is_loop_name(name) {
        return Err(fail(format!("{device}: not a loop device")));
    }
    let knob = PathBuf::from(format!("/sys/block/{name}/queue/discard_max_bytes"));
    fs::write(&knob, "0").map_err(io(&knob))
}

fn is_loop_name(name: &str) -> bool {
    name.strip_prefix("loop")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The lab's state directory under a workspace root.
pub fn state_dir(root: &Path) -> PathBuf {
    root.join(".benchpipe").join("lab")
}

fn fail(msg: impl Into<String>) -> Error {
    Error::Other(msg.into())
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

fn require_root() -> Result<(), Error> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(fail(
            "the virtual lab needs root: it creates network namespaces, veth links and loop \
             devices and starts sshd. Run `sudo benchpipe lab up` (or `lab down`).",
        ));
    }
    Ok(())
}

/// Runs a controller command; a non-zero exit is an error quoting its stderr.
fn cmd(words: &[&str]) -> Result<Output, Error> {
    let line = quote::join(words);
    let out = Local::new().run(&line, Some(Duration::from_secs(60)))?;
    if !out.exit.success() {
        return Err(fail(format!(
            "`{line}` failed ({}): {}",
            out.exit,
            out.stderr_str().trim()
        )));
    }
    Ok(out)
}

/// A machine-wide lock so that two `lab up`/`down` (say, parallel test binaries) do not
/// race for subnets and loop devices. Released when dropped.
struct LabLock(fs::File);

impl LabLock {
    fn take() -> Result<LabLock, Error> {
        let path = Path::new("/run/benchpipe-lab.lock");
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(io(path))?;
        // SAFETY: flock on a file descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(Error::io(path, std::io::Error::last_os_error()));
        }
        Ok(LabLock(file))
    }
}

impl Drop for LabLock {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}

fn check_options(o: &LabOptions, boards: usize) -> Result<(), Error> {
    let ok_name = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    if !ok_name(&o.prefix) || o.prefix.len() > 10 {
        return Err(fail(format!(
            "lab prefix {:?} must be 1-10 characters of a-z, 0-9 and '-' (it names network links)",
            o.prefix
        )));
    }
    if !ok_name(&o.board_prefix) {
        return Err(fail(format!(
            "lab board prefix {:?} must be a-z, 0-9 and '-'",
            o.board_prefix
        )));
    }
    if boards == 0 || boards > 64 {
        return Err(fail(format!("the lab has 1 to 64 boards, not {boards}")));
    }
    if let Some(u) = &o.login_user {
        // What useradd takes, and never root (that is the default without --user).
        let ok = !u.is_empty()
            && u.len() <= 32
            && u != "root"
            && u.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b == b'_')
            && u.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !ok {
            return Err(fail(format!(
                "lab login user {u:?} must be a user name other than root: a-z, 0-9, '_' and '-', starting with a letter or '_', at most 32"
            )));
        }
    }
    if !(1..=2).contains(&o.disks_per_board) {
        return Err(fail("a lab board has 1 or 2 disks"));
    }
    if !(1..=10_000).contains(&o.wifi_rate_mbit) {
        return Err(fail("the lab's wifi link is shaped to 1 to 10000 Mbit/s"));
    }
    Ok(())
}

fn pid_alive(pid_file: &Path) -> bool {
    let Ok(text) = fs::read_to_string(pid_file) else {
        return false;
    };
    let Ok(pid) = text.trim().parse::<i32>() else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0 && unsafe { libc::kill(pid, 0) } == 0
}

/// The lab under `root`, with each board's sshd checked; `None` when there is none.
pub fn status(root: &Path) -> Result<Option<LabInfo>, Error> {
    status_with(root, &LabOptions::default())
}

pub fn status_with(root: &Path, options: &LabOptions) -> Result<Option<LabInfo>, Error> {
    let Some(mut info) = state::read(root, options)? else {
        return Ok(None);
    };
    for b in &mut info.boards {
        b.sshd_running = pid_alive(&b.sshd_pid_file);
    }
    Ok(Some(info))
}

/// `benchpipe lab up --boards N` with the default names (`lab-1`, netns `bp-lab-1`).
pub fn up(root: &Path, boards: usize) -> Result<LabInfo, Error> {
    up_with(root, boards, &LabOptions::default())
}

/// Builds the lab. A healthy lab of the same size is left alone (`already_up`); any
/// other existing lab under `root` is torn down and rebuilt. On failure, whatever was
/// built is removed again.
pub fn up_with(root: &Path, boards: usize, options: &LabOptions) -> Result<LabInfo, Error> {
    require_root()?;
    check_options(options, boards)?;
    check_tools(options)?;
    if let Some(existing) = status_with(root, options)? {
        let healthy = existing.boards.len() == boards
            && existing.prefix == options.prefix
            && existing.login_user == options.login_user
            && existing.boards.iter().all(|b| b.sshd_running);
        if healthy {
            return Ok(LabInfo {
                already_up: true,
                ..existing
            });
        }
        down_with(root, options)?;
    }
    let lock = LabLock::take()?;
    link::refuse_taken_prefix(options, boards)?;
    fs::create_dir_all(root).map_err(io(root))?;
    let root = workspace(root)?;
    let state = prepare_state_dir(&root)?;
    let mut info = LabInfo {
        version: STATE_VERSION,
        prefix: options.prefix.clone(),
        board_prefix: options.board_prefix.clone(),
        state_dir: state.clone(),
        identity: state.join("id_ed25519"),
        known_hosts: state.join("known_hosts"),
        boards: Vec::new(),
        login_user: options.login_user.clone(),
        already_up: false,
    };
    // Recorded before anything is built, so that `down` finds the prefix after a crash.
    state::write(&info)?;
    let built = build(&root, boards, options, &mut info);
    drop(lock);
    match built {
        Ok(()) => Ok(info),
        Err(e) => {
            let _ = down_with(&root, options);
            Err(e)
        }
    }
}

fn netns_pids(netns: &str) -> Result<Vec<i32>, Error> {
    let out = cmd(&["ip", "netns", "pids", netns])?;
    Ok(out
        .stdout_str()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect())
}

#[cfg(test)]
mod login_user_tests {
    use super::*;

    fn with(user: &str) -> Result<(), Error> {
        let o = LabOptions {
            login_user: Some(user.to_string()),
            ..LabOptions::default()
        };
        check_options(&o, 1)
    }

    /// `lab up --user`: a name useradd takes, never root (the default without it), never
    /// a word a board file or a shell would read as more than a name.
    #[test]
    fn lab_up_user_takes_plain_user_names_only() {
        for ok in ["bench", "_bench", "pi", "lab-user1"] {
            assert!(with(ok).is_ok(), "{ok}");
        }
        for bad in [
            "root",
            "",
            "Bench",
            "1pi",
            "a b",
            "x\"y",
            "-o",
            &"a".repeat(33),
        ] {
            assert!(with(bad).is_err(), "{bad:?}");
        }
    }
}
