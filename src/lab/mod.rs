//! The virtual lab: boards made of network namespaces, each running a real sshd.
//!
//! `up` builds N boards on this machine: a namespace joined to the controller by a veth
//! pair with addresses in 198.18.0.0/15 (RFC 2544's benchmarking range), an sshd with its
//! own host key accepting a lab key, and loop-device "disks". It writes the boards'
//! files and the lab's own known_hosts; the user's `~/.ssh` is never touched.
//! `down` removes all of it, from the state file and also by naming convention, so it
//! works after a crash. Every process in a board's namespace (sshd, its sessions, any
//! service a test left) is killed with the namespace.

use std::fs;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    /// The first /30 to try, counted in 198.18.0.0/15; used ones are skipped.
    pub first_subnet: u32,
}

impl Default for LabOptions {
    fn default() -> Self {
        LabOptions {
            prefix: "bp-lab".into(),
            board_prefix: "lab".into(),
            disks_per_board: 2,
            disk_bytes: 256 << 20,
            first_subnet: 1,
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
        }
    }
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
    if !(1..=2).contains(&o.disks_per_board) {
        return Err(fail("a lab board has 1 or 2 disks"));
    }
    Ok(())
}

/// The /30 numbered `subnet` in 198.18.0.0/15: (controller, board) addresses.
fn subnet_addresses(subnet: u32) -> (Ipv4Addr, Ipv4Addr) {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + subnet * 4;
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

/// Subnets already holding an address on this machine (another lab, another test).
fn used_subnets() -> Result<Vec<u32>, Error> {
    let out = cmd(&["ip", "-o", "-4", "addr", "show"])?;
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0));
    let mut used = Vec::new();
    for line in out.stdout_str().lines() {
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == "inet"
                && let Some(addr) = words.next().and_then(|a| a.split('/').next())
                && let Ok(ip) = addr.parse::<Ipv4Addr>()
            {
                let n = u32::from(ip);
                if n >= base && n < base + (1 << 17) {
                    used.push((n - base) / 4);
                }
            }
        }
    }
    Ok(used)
}

fn read_state(root: &Path) -> Result<Option<LabInfo>, Error> {
    let path = state_dir(root).join("state.json");
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let info: LabInfo = serde_json::from_str(&text)
        .map_err(|e| fail(format!("{}: not a lab state file: {e}", path.display())))?;
    if info.version != STATE_VERSION {
        return Err(fail(format!(
            "{}: lab state version {} is not {STATE_VERSION}; remove the lab with the benchpipe that built it",
            path.display(),
            info.version
        )));
    }
    Ok(Some(info))
}

fn write_state(info: &LabInfo) -> Result<(), Error> {
    let path = info.state_dir.join("state.json");
    let tmp = info.state_dir.join("state.json.tmp");
    let text = serde_json::to_string_pretty(info).map_err(|e| fail(e.to_string()))?;
    fs::write(&tmp, text).map_err(io(&tmp))?;
    fs::rename(&tmp, &path).map_err(io(&path))
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
    let Some(mut info) = read_state(root)? else {
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
    if let Some(existing) = status(root)? {
        let healthy = existing.boards.len() == boards
            && existing.prefix == options.prefix
            && existing.boards.iter().all(|b| b.sshd_running);
        if healthy {
            return Ok(LabInfo {
                already_up: true,
                ..existing
            });
        }
        down(root)?;
    }
    let lock = LabLock::take()?;
    let root = std::path::absolute(root).map_err(io(root))?;
    let state = state_dir(&root);
    fs::create_dir_all(state.join("disks")).map_err(io(&state))?;
    let mut info = LabInfo {
        version: STATE_VERSION,
        prefix: options.prefix.clone(),
        board_prefix: options.board_prefix.clone(),
        state_dir: state.clone(),
        identity: state.join("id_ed25519"),
        known_hosts: state.join("known_hosts"),
        boards: Vec::new(),
        already_up: false,
    };
    // Recorded before anything is built, so that `down` finds the prefix after a crash.
    write_state(&info)?;
    let built = build(&root, boards, options, &mut info);
    drop(lock);
    match built {
        Ok(()) => Ok(info),
        Err(e) => {
            let _ = down(&root);
            Err(e)
        }
    }
}

fn build(root: &Path, boards: usize, o: &LabOptions, info: &mut LabInfo) -> Result<(), Error> {
    let state = info.state_dir.clone();
    let _ = fs::remove_file(&info.identity);
    let _ = fs::remove_file(state.join("id_ed25519.pub"));
    keygen(&info.identity, "benchpipe-lab")?;
    let authorized = state.join("authorized_keys");
    let public = state.join("id_ed25519.pub");
    fs::copy(&public, &authorized).map_err(io(&authorized))?;
    fs::create_dir_all("/run/sshd").map_err(io(Path::new("/run/sshd")))?;
    let boards_dir = root.join("boards");
    fs::create_dir_all(&boards_dir).map_err(io(&boards_dir))?;

    let used = used_subnets()?;
    let mut next_subnet = o.first_subnet.max(1);
    let mut known_hosts = String::new();
    for i in 1..=boards {
        while used.contains(&next_subnet) {
            next_subnet += 1;
        }
        if next_subnet >= (1 << 15) {
            return Err(fail("no free /30 left in 198.18.0.0/15"));
        }
        let subnet = next_subnet;
        next_subnet += 1;
        let (controller_address, address) = subnet_addresses(subnet);
        let name = format!("{}-{i}", o.board_prefix);
        let netns = format!("{}-{i}", o.prefix);
        let dir = state.join(&name);
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        let workdir = format!("{WORKDIRS}/{name}");
        let mut board = LabBoard {
            name: BoardName::new(&name),
            netns: netns.clone(),
            subnet,
            controller_address,
            address,
            workdir: workdir.clone(),
            board_file: boards_dir.join(format!("{name}.toml")),
            sshd_config: dir.join("sshd_config"),
            sshd_pid_file: dir.join("sshd.pid"),
            disks: Vec::new(),
            sshd_running: false,
        };
        // Record first, build after: a crash half-way still leaves a complete recipe for `down`.
        info.boards.push(board.clone());
        write_state(info)?;

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

        fs::create_dir_all(&workdir).map_err(io(Path::new(&workdir)))?;
        crate::transport::workdir::mark_local(Path::new(&workdir))
            .map_err(io(Path::new(&workdir)))?;
        for k in 1..=o.disks_per_board {
            let file = state.join("disks").join(format!("{netns}-d{k}.img"));
            let f = fs::File::create(&file).map_err(io(&file))?;
            f.set_len(o.disk_bytes).map_err(io(&file))?;
            drop(f);
            let file_str = file.to_string_lossy().into_owned();
            let device = cmd(&["losetup", "--find", "--show", &file_str])?
                .stdout_str()
                .trim()
                .to_string();
            let path = format!("{workdir}/disk{k}");
            fs::create_dir_all(&path).map_err(io(Path::new(&path)))?;
            board.disks.push(LabDisk {
                name: format!("disk{k}"),
                device,
                file,
                path,
            });
            if let Some(last) = info.boards.last_mut() {
                *last = board.clone();
            }
            write_state(info)?;
        }

        let host_key = dir.join("ssh_host_ed25519_key");
        let _ = fs::remove_file(&host_key);
        let _ = fs::remove_file(dir.join("ssh_host_ed25519_key.pub"));
        keygen(&host_key, &name)?;
        let config = sshd_config(&host_key, &board.sshd_pid_file, &authorized, address);
        fs::write(&board.sshd_config, config).map_err(io(&board.sshd_config))?;
        start_sshd(&board)?;
        let public = dir.join("ssh_host_ed25519_key.pub");
        let key = fs::read_to_string(&public).map_err(io(&public))?;
        let mut fields = key.split_whitespace();
        let (Some(kind), Some(blob)) = (fields.next(), fields.next()) else {
            return Err(fail(format!("{}: not a public key", public.display())));
        };
        known_hosts.push_str(&format!("{address} {kind} {blob}\n"));
        fs::write(&info.known_hosts, &known_hosts).map_err(io(&info.known_hosts))?;

        let text = board_file(&board, info);
        fs::write(&board.board_file, text).map_err(io(&board.board_file))?;
        board.sshd_running = true;
        if let Some(last) = info.boards.last_mut() {
            *last = board;
        }
        write_state(info)?;
    }
    Ok(())
}

fn keygen(path: &Path, comment: &str) -> Result<(), Error> {
    let p = path.to_string_lossy();
    cmd(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-C",
        comment,
        "-f",
        &p,
    ])?;
    Ok(())
}

fn sshd_config(host_key: &Path, pid_file: &Path, authorized: &Path, address: Ipv4Addr) -> String {
    // SetEnv SHLVL=1: bash sources the controller's ~/.bashrc for commands sshd runs,
    // unless it is already a nested shell. A lab board shares the controller's files,
    // and a bashrc that waits on a lock (pyenv's rehash does) would hang every command.
    format!(
        "# benchpipe lab board sshd\n\
         ListenAddress {address}:22\n\
         HostKey {}\n\
         PidFile {}\n\
         AuthorizedKeysFile {}\n\
         PermitRootLogin prohibit-password\n\
         PubkeyAuthentication yes\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         UsePAM no\n\
         StrictModes no\n\
         PrintMotd no\n\
         PrintLastLog no\n\
         X11Forwarding no\n\
         LogLevel ERROR\n\
         SetEnv SHLVL=1\n\
         Subsystem sftp /usr/lib/openssh/sftp-server\n",
        host_key.display(),
        pid_file.display(),
        authorized.display()
    )
}

/// Starts a board's sshd in its namespace and waits until it accepts connections.
pub fn start_sshd(board: &LabBoard) -> Result<(), Error> {
    let _ = fs::remove_file(&board.sshd_pid_file);
    let log = board.sshd_config.with_file_name("sshd.log");
    // A command's process group is killed when it ends, and sshd daemonizes by forking
    // then calling setsid: the daemon could be caught in between. `setsid -w` moves it
    // into a session of its own first, and waits for sshd's parent to exit.
    cmd(&[
        "setsid",
        "-w",
        "ip",
        "netns",
        "exec",
        &board.netns,
        "/usr/sbin/sshd",
        "-f",
        &board.sshd_config.to_string_lossy(),
        "-E",
        &log.to_string_lossy(),
    ])?;
    let addr = std::net::SocketAddr::from((board.address, 22));
    let started = Instant::now();
    loop {
        if pid_alive(&board.sshd_pid_file)
            && std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
        {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(10) {
            let log_text = fs::read_to_string(&log).unwrap_or_default();
            return Err(fail(format!(
                "{}: sshd did not start listening on {addr} within 10 s: {}",
                board.name,
                log_text.trim()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills every sshd process of a board (the listener and each session's), as a crash
/// would; commands running under them lose their channel. Returns how many were killed.
pub fn kill_sshd(board: &LabBoard) -> Result<usize, Error> {
    let mut killed = 0;
    for pid in netns_pids(&board.netns)? {
        let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "sshd" {
            // SAFETY: kill(2) on a pid we just listed; no memory involved.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            killed += 1;
        }
    }
    Ok(killed)
}

fn netns_pids(netns: &str) -> Result<Vec<i32>, Error> {
    let out = cmd(&["ip", "netns", "pids", netns])?;
    Ok(out
        .stdout_str()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect())
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn board_file(board: &LabBoard, info: &LabInfo) -> String {
    let mut s = format!(
        "{BOARD_FILE_MARK}\n\
         # A virtual board: network namespace {ns}, sshd on {addr}.\n\
         model = {model}\n\
         arch = {arch}\n\
         workdir = {workdir}\n\
         \n\
         [ssh]\n\
         host = {host}\n\
         port = 22\n\
         user = \"root\"\n\
         identity = {identity}\n\
         known_hosts = {known_hosts}\n",
        ns = board.netns,
        addr = board.address,
        model = toml_str("benchpipe virtual lab board"),
        arch = toml_str(std::env::consts::ARCH),
        workdir = toml_str(&board.workdir),
        host = toml_str(&board.address.to_string()),
        identity = toml_str(&info.identity.to_string_lossy()),
        known_hosts = toml_str(&info.known_hosts.to_string_lossy()),
    );
    for d in &board.disks {
        s.push_str(&format!(
            "\n[[storage]]\n\
             name = {}\n\
             role = \"scratch\"\n\
             device = {}\n\
             path = {}\n\
             model = {}\n",
            toml_str(&d.name),
            toml_str(&d.device),
            toml_str(&d.path),
            toml_str("loop device on a sparse file"),
        ));
    }
    s
}

/// `benchpipe lab down`: removes the lab under `root`, and anything else named with its
/// prefix (`bp-lab-*` by default) that a crashed run left behind.
pub fn down(root: &Path) -> Result<(), Error> {
    down_with(root, &LabOptions::default())
}

pub fn down_with(root: &Path, options: &LabOptions) -> Result<(), Error> {
    require_root()?;
    let _lock = LabLock::take()?;
    let state = read_state(root).ok().flatten();
    let prefix = state
        .as_ref()
        .map(|s| s.prefix.clone())
        .unwrap_or_else(|| options.prefix.clone());
    let ours = |name: &str| {
        name.strip_prefix(&prefix)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let mut problems = Vec::new();

    // Namespaces: every process in them (sshd, sessions, services) dies with them.
    let mut namespaces: Vec<String> = state
        .iter()
        .flat_map(|s| s.boards.iter().map(|b| b.netns.clone()))
        .collect();
    if let Ok(out) = cmd(&["ip", "netns", "list"]) {
        for line in out.stdout_str().lines() {
            if let Some(name) = line.split_whitespace().next()
                && ours(name)
                && !namespaces.iter().any(|n| n == name)
            {
                namespaces.push(name.to_string());
            }
        }
    }
    for ns in &namespaces {
        if !Path::new("/run/netns").join(ns).exists() {
            continue;
        }
        if let Err(e) = kill_namespace_processes(ns) {
            problems.push(e.to_string());
        }
        if let Err(e) = cmd(&["ip", "netns", "delete", ns]) {
            problems.push(e.to_string());
        }
    }

    // Controller-side veths normally vanish with their peer; sweep any left.
    if let Ok(out) = cmd(&["ip", "-o", "link", "show"]) {
        for line in out.stdout_str().lines() {
            let Some(name) = line.split(':').nth(1) else {
                continue;
            };
            let name = name.trim().split('@').next().unwrap_or("");
            if (ours(name) || name.strip_suffix('b').is_some_and(ours))
                && let Err(e) = cmd(&["ip", "link", "delete", name])
            {
                problems.push(e.to_string());
            }
        }
    }

    // Loop devices whose backing file follows our naming, unmounted first.
    let disk_name = |file: &str| {
        let base = file.rsplit('/').next().unwrap_or("");
        let base = base.strip_suffix(" (deleted)").unwrap_or(base);
        base.strip_suffix(".img")
            .and_then(|b| b.rsplit_once("-d"))
            .is_some_and(|(ns, k)| ours(ns) && k.bytes().all(|c| c.is_ascii_digit()))
    };
    for (device, _) in loop_devices()?.into_iter().filter(|(_, f)| disk_name(f)) {
        if let Err(e) = detach_loop(&device) {
            problems.push(e.to_string());
        }
    }

    // Workdirs: those recorded, and `WORKDIRS/BOARDPREFIX-N` swept by name, since only
    // lab boards keep their workdir on the controller.
    let board_prefix = state
        .as_ref()
        .map(|s| s.board_prefix.clone())
        .unwrap_or_else(|| options.board_prefix.clone());
    let mut workdirs: Vec<PathBuf> = state
        .iter()
        .flat_map(|s| s.boards.iter().map(|b| PathBuf::from(&b.workdir)))
        .collect();
    if let Ok(entries) = fs::read_dir(WORKDIRS) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let numbered = name
                .strip_prefix(&board_prefix)
                .and_then(|r| r.strip_prefix('-'))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            if numbered && !workdirs.contains(&e.path()) {
                workdirs.push(e.path());
            }
        }
    }
    for w in workdirs.iter().filter(|w| w.starts_with(WORKDIRS)) {
        if let Err(e) = remove_workdir(w) {
            problems.push(e.to_string());
        }
    }
    if let Some(s) = &state {
        for b in &s.boards {
            let is_ours = fs::read_to_string(&b.board_file)
                .map(|t| t.starts_with(BOARD_FILE_MARK))
                .unwrap_or(false);
            if is_ours {
                let _ = fs::remove_file(&b.board_file);
            }
        }
    }
    let dir = state_dir(root);
    if dir.exists()
        && let Err(e) = fs::remove_dir_all(&dir)
    {
        problems.push(format!("{}: {e}", dir.display()));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(fail(format!(
            "lab down left problems behind:\n  {}",
            problems.join("\n  ")
        )))
    }
}

/// Unmounts whatever is mounted at or below `dir` on the controller (deepest first), so
/// that removing it never reaches into a mounted filesystem, then removes it.
fn remove_workdir(dir: &Path) -> Result<(), Error> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut below: Vec<String> = mountinfo
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .map(|m| m.replace("\\040", " "))
        .filter(|m| Path::new(m).starts_with(dir))
        .collect();
    below.sort_by_key(|m| std::cmp::Reverse(m.len()));
    for m in below {
        if cmd(&["umount", &m]).is_err() {
            cmd(&["umount", "-l", &m])?;
        }
    }
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// Ends every process in a namespace: SIGTERM first, so that a shell in the middle of
/// something (a lock file, a temporary file) can clean up, then SIGKILL after a second.
fn kill_namespace_processes(ns: &str) -> Result<(), Error> {
    let started = Instant::now();
    let mut signal = libc::SIGTERM;
    loop {
        let pids = netns_pids(ns)?;
        if pids.is_empty() {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(1) {
            signal = libc::SIGKILL;
        }
        for pid in &pids {
            // SAFETY: kill(2) on pids listed as members of our namespace.
            unsafe {
                libc::kill(*pid, signal);
            }
        }
        if started.elapsed() > Duration::from_secs(6) {
            return Err(fail(format!(
                "processes {pids:?} in namespace {ns} survived SIGKILL"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// (device, backing file) of every loop device.
fn loop_devices() -> Result<Vec<(String, String)>, Error> {
    let out = cmd(&[
        "losetup",
        "--list",
        "--noheadings",
        "--raw",
        "-O",
        "NAME,BACK-FILE",
    ])?;
    Ok(out
        .stdout_str()
        .lines()
        .filter_map(|l| {
            let (dev, file) = l.split_once(' ')?;
            Some((dev.to_string(), file.replace("\\x20", " ")))
        })
        .collect())
}

/// Unmounts everything mounted from `device` on the controller, then detaches it and
/// waits until the kernel has let it go.
fn detach_loop(device: &str) -> Result<(), Error> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if fields.get(dash + 2) == Some(&device)
            && let Some(mount_point) = fields.get(4)
        {
            let mp = mount_point.replace("\\040", " ");
            if cmd(&["umount", &mp]).is_err() {
                cmd(&["umount", "-l", &mp])?;
            }
        }
    }
    let started = Instant::now();
    loop {
        let attached = loop_devices()?.iter().any(|(d, _)| d == device);
        if !attached {
            return Ok(());
        }
        // A device still held (a mount namespace being torn down) detaches on last close.
        let _ = cmd(&["losetup", "-d", device]);
        if started.elapsed() > Duration::from_secs(10) {
            return Err(fail(format!("loop device {device} is still attached")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
