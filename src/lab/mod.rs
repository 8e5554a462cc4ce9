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

pub use board::{DROP_COPIED_LOOP_MOUNTS, kill_sshd, start_sshd};
use board::{board_file, keygen, sshd_config, start_sshd_with, write_board_file};
pub use down::{down, down_with};
pub use link::{LAN_INTERFACE, LabLink, WIFI_INTERFACE};
use link::{shaped_link, subnet_addresses, used_subnets};
pub use power::{MARKERS, PowerAction, PowerOutcome, boot_log, power, power_with};

use std::fs;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
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

/// What the lab runs, with the Debian package each comes from.
const TOOLS: &[(&str, &str)] = &[
    ("ssh-keygen", "openssh-client"),
    ("ip", "iproute2"),
    ("tc", "iproute2"),
    ("losetup", "mount"),
    ("mkfs.ext4", "e2fsprogs"),
    // Power on reads a flashed image's root partition with it (`lab::disk`).
    ("debugfs", "e2fsprogs"),
];

/// Stops before building anything when a tool the lab runs is missing, naming the
/// package to install. The lab does not install them itself: openssh-server also
/// starts the machine's own sshd, which is the user's decision.
fn check_tools(o: &LabOptions) -> Result<(), Error> {
    let on_path = |tool: &str| {
        std::env::var_os("PATH")
            .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
    };
    let mut missing: Vec<(String, &str)> = Vec::new();
    if !o.sshd.is_file() {
        missing.push((o.sshd.display().to_string(), "openssh-server"));
    }
    for (tool, package) in TOOLS.iter().filter(|(t, _)| *t != "mkfs.ext4") {
        if !on_path(tool) {
            missing.push((tool.to_string(), package));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let tools: Vec<&str> = missing.iter().map(|(t, _)| t.as_str()).collect();
    let mut packages: Vec<&str> = missing.iter().map(|(_, p)| *p).collect();
    packages.dedup();
    Err(fail(format!(
        "the virtual lab needs {} (Debian package {}); install with: apt-get install {}",
        tools.join(", "),
        packages.join(", "),
        packages.join(" ")
    )))
}

/// Makes `.benchpipe/lab` a fresh, root-only directory: a leftover one (a crash before
/// its state was written) is removed when it is the running user's own, anything else
/// is refused. Everything `up` writes goes inside it, or is replaced by rename.
fn prepare_state_dir(root: &Path) -> Result<PathBuf, Error> {
    let dir = state_dir(root);
    let parent = dir.parent().unwrap_or(root);
    fs::create_dir_all(root).map_err(io(root))?;
    match fs::symlink_metadata(parent) {
        Ok(m) if m.file_type().is_symlink() || !m.is_dir() => {
            return Err(fail(format!(
                "{} is not a plain directory; the lab, running as root, follows no link",
                parent.display()
            )));
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fs::DirBuilder::new()
            .mode(0o755)
            .create(parent)
            .map_err(io(parent))?,
        Err(e) => return Err(Error::io(parent, e)),
    }
    match fs::symlink_metadata(&dir) {
        Ok(m) => {
            state::check_owned(&dir, &m, false)?;
            fs::remove_dir_all(&dir).map_err(io(&dir))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&dir, e)),
    }
    // Not create_dir_all: it must be this call that makes it.
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(io(&dir))?;
    Ok(dir)
}

/// Makes `dir` fresh and root-only: an old one is removed first (after its mounts).
fn fresh_private_dir(
    dir: &Path,
    remove_old: impl FnOnce(&Path) -> Result<(), Error>,
) -> Result<(), Error> {
    state::check_no_links(dir)?;
    if fs::symlink_metadata(dir).is_ok() {
        remove_old(dir)?;
    }
    fs::DirBuilder::new()
        .mode(0o700)
        .create(dir)
        .map_err(io(dir))
}

fn build(root: &Path, boards: usize, o: &LabOptions, info: &mut LabInfo) -> Result<(), Error> {
    let state = info.state_dir.clone();
    fs::DirBuilder::new()
        .mode(0o700)
        .create(state.join("disks"))
        .map_err(io(&state))?;
    keygen(&info.identity, "benchpipe-lab")?;
    let public = state.join("id_ed25519.pub");
    let public_key = fs::read(&public).map_err(io(&public))?;
    state::ensure_dir(Path::new(RUN_DIR), 0o755)?;
    let run = run_dir(&o.prefix);
    fresh_private_dir(&run, |d| fs::remove_dir_all(d).map_err(io(d)))?;
    let authorized = info.authorized_keys();
    state::write_new(&authorized, &public_key, 0o600)?;
    fs::create_dir_all("/run/sshd").map_err(io(Path::new("/run/sshd")))?;
    state::ensure_dir(Path::new(WORKDIRS), 0o755)?;

    let used = used_subnets()?;
    let mut next_subnet = o.first_subnet.max(1);
    let mut known_hosts = String::new();
    let mut free_subnet = || {
        while used.contains(&next_subnet) {
            next_subnet += 1;
        }
        if next_subnet >= (1 << 15) {
            return Err(fail("no free /30 left in 198.18.0.0/15"));
        }
        next_subnet += 1;
        Ok(next_subnet - 1)
    };
    for i in 1..=boards {
        let subnet = free_subnet()?;
        let mut board = state::expected_board(root, o, i, subnet);
        let wifi_subnet = free_subnet()?;
        let (wifi_controller, wifi_address) = subnet_addresses(wifi_subnet);
        board.wifi = Some(LabLink {
            subnet: wifi_subnet,
            controller_address: wifi_controller,
            address: wifi_address,
            rate_mbit: o.wifi_rate_mbit,
        });
        let (name, netns) = (board.name.to_string(), board.netns.clone());
        let (address, controller_address) = (board.address, board.controller_address);
        let dir = state.join(&name);
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(io(&dir))?;
        // Record first, build after: a crash half-way still leaves a complete recipe for `down`.
        info.boards.push(board.clone());
        state::write(info)?;

        cmd(&["ip", "netns", "add", &netns])?;
        let peer = format!("{netns}b");
        cmd(&[
            "ip", "link", "add", &netns, "type", "veth", "peer", "name", &peer,
        ])?;
        cmd(&["ip", "link", "set", &peer, "netns", &netns])?;
        cmd(&["ip", "-n", &netns, "link", "set", &peer, "name", "eth0"])?;
        let board_cidr = format!("{address}/30");
        let controller_cidr = format!("{controller_address}/30");
        cmd(&[
            "ip",
            "-n",
            &netns,
            "addr",
            "add",
            &board_cidr,
            "dev",
            "eth0",
        ])?;
        cmd(&["ip", "-n", &netns, "link", "set", "eth0", "up"])?;
        cmd(&["ip", "-n", &netns, "link", "set", "lo", "up"])?;
        cmd(&["ip", "addr", "add", &controller_cidr, "dev", &netns])?;
        cmd(&["ip", "link", "set", &netns, "up"])?;
        route_between_boards(&netns, controller_address)?;
        if let Some(link) = &board.wifi {
            shaped_link(&netns, link)?;
        }

        let workdir = PathBuf::from(&board.workdir);
        fresh_private_dir(&workdir, down::remove_workdir)?;
        crate::transport::workdir::mark_local(&workdir).map_err(io(&workdir))?;
        let boot = (o.boot_bytes > 0).then_some(0);
        for k in boot.into_iter().chain(1..=o.disks_per_board) {
            let (file, bytes) = match k {
                0 => (state::disk_image(root, &netns, 0), o.boot_bytes),
                _ => (state::disk_image(root, &netns, k), o.disk_bytes),
            };
            let f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&file)
                .map_err(io(&file))?;
            let direct = k > 0 && o.direct_io;
            if direct {
                write_through(&f, bytes).map_err(io(&file))?;
            } else {
                f.set_len(bytes).map_err(io(&file))?;
            }
            drop(f);
            let file_str = file.to_string_lossy().into_owned();
            let mut losetup = vec!["losetup", "--find", "--show"];
            if direct {
                losetup.push("--direct-io=on");
            }
            losetup.push(&file_str);
            let device = cmd(&losetup)?.stdout_str().trim().to_string();
            if direct {
                // mkfs discards the whole device, which a loop device passes on as
                // holes punched in its file: the disk must stay written.
                no_discard(&device)?;
            }
            let mut disk = match k {
                0 => power::boot_disk(root, &board, &device),
                _ => state::expected_disk(root, &board, k, &device),
            };
            disk.direct_io = direct;
            fs::DirBuilder::new()
                .mode(0o755)
                .create(&disk.path)
                .map_err(io(Path::new(&disk.path)))?;
            match k {
                0 => board.boot = Some(disk),
                _ => board.disks.push(disk),
            }
            if let Some(last) = info.boards.last_mut() {
                *last = board.clone();
            }
            state::write(info)?;
        }

        let host_key = dir.join("ssh_host_ed25519_key");
        keygen(&host_key, &name)?;
        let config = sshd_config(
            &host_key,
            &board.sshd_pid_file,
            &authorized.to_string_lossy(),
            address,
            "",
        );
        state::write_new(&board.sshd_config, config.as_bytes(), 0o600)?;
        start_sshd_with(&board, &o.sshd)?;
        let public = dir.join("ssh_host_ed25519_key.pub");
        let key = fs::read_to_string(&public).map_err(io(&public))?;
        let mut fields = key.split_whitespace();
        let (Some(kind), Some(blob)) = (fields.next(), fields.next()) else {
            return Err(fail(format!("{}: not a public key", public.display())));
        };
        known_hosts.push_str(&format!("{address} {kind} {blob}\n"));
        state::replace(&info.known_hosts, known_hosts.as_bytes(), 0o600)?;

        write_board_file(&board.board_file, &board_file(&board, info, root))?;
        board.sshd_running = true;
        if let Some(last) = info.boards.last_mut() {
            *last = board;
        }
        state::write(info)?;
    }
    Ok(())
}

/// Lets lab boards reach one another, as boards on one LAN do (a cluster's load
/// balancer and its app members, iperf3 from one board to another): the board routes
/// the lab's range through the controller, and the controller forwards what arrives on
/// this board's link only (the link's own `forwarding`, gone with the link; never the
/// machine-wide `ip_forward`).
fn route_between_boards(netns: &str, controller: Ipv4Addr) -> Result<(), Error> {
    let via = controller.to_string();
    cmd(&[
        "ip", "-n", netns, "route", "add", LAB_RANGE, "via", &via, "dev", "eth0",
    ])?;
    let knob = format!("/proc/sys/net/ipv4/conf/{netns}/forwarding");
    state::check_no_links(Path::new(&knob))?;
    fs::write(&knob, b"1").map_err(io(Path::new(&knob)))
}

/// The lab's addresses (RFC 2544's benchmarking range): boards route it to each other.
const LAB_RANGE: &str = "198.18.0.0/15";

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
