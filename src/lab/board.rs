//! A lab board's own parts: its keys, its sshd and the board file that declares it.

use std::fmt::Write as _;
use std::fs;
use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{
    BOARD_FILE_MARK, DEFAULT_SSHD, LabBoard, LabInfo, cmd, fail, io, netns_pids, pid_alive, state,
};
use crate::error::Error;

pub(super) fn keygen(path: &Path, comment: &str) -> Result<(), Error> {
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

/// A board's sshd config; `authorized` is its `AuthorizedKeysFile` (`%u` for the user)
/// and `access` more lines (a flashed image's `AllowUsers`).
pub(super) fn sshd_config(
    host_key: &Path,
    pid_file: &Path,
    authorized: &str,
    address: Ipv4Addr,
    access: &str,
) -> String {
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
         StrictModes yes\n\
         PrintMotd no\n\
         PrintLastLog no\n\
         X11Forwarding no\n\
         LogLevel ERROR\n\
         SetEnv SHLVL=1\n\
         Subsystem sftp /usr/lib/openssh/sftp-server\n\
         {access}",
        host_key.display(),
        pid_file.display(),
        authorized
    )
}

/// Starts a board's sshd in its namespace and waits until it accepts connections.
pub fn start_sshd(board: &LabBoard) -> Result<(), Error> {
    start_sshd_with(board, Path::new(DEFAULT_SSHD))
}

/// Shell text that lazily unmounts, in the calling mount namespace only, every mount
/// of a loop device.
pub const DROP_COPIED_LOOP_MOUNTS: &str = r#"awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { print $5, $(i + 2); break } }' /proc/self/mountinfo | while read -r point source; do case "$source" in /dev/loop*) umount -l "$point" 2>/dev/null || true;; esac; done"#;

/// Boots the board (`power::boot`) and starts its sshd; an image that does not boot, or
/// keeps SSH off, is an error here (`lab power` reports it as an outcome instead).
pub(super) fn start_sshd_with(board: &LabBoard, sshd: &Path) -> Result<(), Error> {
    match super::power::boot(board)? {
        super::power::Boot::Up(up) => launch(board, sshd, &up),
        super::power::Boot::Off(why) => Err(fail(why)),
    }
}

/// Starts sshd in the board's namespace with `up`'s config and bind mounts, and waits
/// until it accepts connections.
pub(super) fn launch(board: &LabBoard, sshd: &Path, up: &super::power::Up) -> Result<(), Error> {
    use crate::transport::quote::sh;
    let _ = fs::remove_file(&board.sshd_pid_file);
    let log = board.sshd_config.with_file_name("sshd.log");
    let mut binds = String::new();
    for (file, over) in &up.binds {
        let _ = writeln!(
            binds,
            "if [ -f {o} ]; then mount --bind {f} {o} || exit 1; fi",
            f = sh(&file.to_string_lossy()),
            o = sh(over)
        );
    }
    // `ip netns exec` gives sshd a mount namespace holding copies of every mount of the
    // moment; on a host whose root is private (containers), those copies never see the
    // host's unmounts and would pin other programs' loop devices for the board's life.
    // The board needs none of them, so its namespace lets go of loop-device mounts first.
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
        "sh",
        "-c",
        &format!("{DROP_COPIED_LOOP_MOUNTS}\n{binds}exec \"$@\""),
        "sh",
        &sshd.to_string_lossy(),
        "-f",
        &up.config.to_string_lossy(),
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

pub(super) fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

pub(super) fn board_file(board: &LabBoard, info: &LabInfo, root: &Path) -> String {
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
         user = {user}\n\
         identity = {identity}\n\
         known_hosts = {known_hosts}\n",
        user = toml_str(info.login_user.as_deref().unwrap_or("root")),
        ns = board.netns,
        addr = board.address,
        model = toml_str("benchpipe virtual lab board"),
        arch = toml_str(std::env::consts::ARCH),
        workdir = toml_str(&board.workdir),
        host = toml_str(&board.address.to_string()),
        identity = toml_str(&info.identity.to_string_lossy()),
        known_hosts = toml_str(&info.known_hosts.to_string_lossy()),
    );
    if let Some(boot) = &board.boot {
        // Logged in as a first-boot user, the board cannot flash itself before its
        // first prepared image: the controller writes the boot disk, as an SD card
        // writer would.
        let flash = match &info.login_user {
            None => format!(
                "# Flashing: dd through the board itself, as from a maintenance OS; the\n\
                 # power cycle boots the image written to the boot disk.\n\
                 [flash]\n\
                 method = \"dd\"\n\
                 via = {via}\n\
                 device = {device}\n",
                via = toml_str(board.name.as_str()),
                device = toml_str(&boot.device),
            ),
            Some(_) => format!(
                "# Flashing: the controller writes the boot disk (an SD card writer's\n\
                 # job); the power cycle boots it.\n\
                 [flash]\n\
                 method = \"command\"\n\
                 command = {command}\n",
                command = toml_str(&format!(
                    "dd if={{{{ image }}}} of={} bs=4M conv=fsync status=none",
                    boot.device
                )),
            ),
        };
        let _ = write!(
            s,
            "\n{flash}\
             \n\
             [power]\n\
             cycle = {cycle}\n\
             \n\
             [[storage]]\n\
             name = {name}\n\
             role = \"boot\"\n\
             device = {device}\n\
             path = {path}\n\
             model = {model}\n",
            device = toml_str(&boot.device),
            cycle = toml_str(&power_cycle_command(board, info, root)),
            name = toml_str(&boot.name),
            path = toml_str(&boot.path),
            model = toml_str("loop device on a sparse file (the lab's boot disk)"),
        );
    }
    let _ = write!(
        s,
        "\n# The links tests reach the board over (`network = [\"lan\", \"wifi\"]` in a\n\
         # scenario): the veth SSH uses, and a second one shaped by tc.\n\
         [[network]]\n\
         name = \"lan\"\n\
         address = {}\n\
         interface = {}\n\
         kind = \"wired\"\n\
         model = {}\n",
        toml_str(&board.address.to_string()),
        toml_str(super::LAN_INTERFACE),
        toml_str("veth pair to the controller"),
    );
    if let Some(w) = &board.wifi {
        let _ = write!(
            s,
            "\n[[network]]\n\
             name = \"wifi\"\n\
             address = {}\n\
             interface = {}\n\
             kind = \"wifi\"\n\
             model = {}\n",
            toml_str(&w.address.to_string()),
            toml_str(super::WIFI_INTERFACE),
            toml_str(&format!(
                "veth pair shaped by tc tbf to {} Mbit/s each way (a stand-in for Wi-Fi)",
                w.rate_mbit
            )),
        );
    }
    for d in &board.disks {
        let _ = write!(
            s,
            "\n[[storage]]\n\
             name = {}\n\
             role = \"scratch\"\n\
             device = {}\n\
             path = {}\n\
             model = {}\n",
            toml_str(&d.name),
            toml_str(&d.device),
            toml_str(&d.path),
            toml_str(if d.direct_io {
                "loop device with direct I/O on the controller's disk"
            } else {
                "loop device on a sparse file"
            }),
        );
        // A loop device has no serial; its size (its file's) tells it from another.
        if let Ok(m) = fs::metadata(&d.file) {
            let _ = writeln!(s, "size = {}", m.len());
        }
    }
    s
}

/// Writes a board file into the workspace's `boards/`, replacing only a file the lab
/// wrote (never a user's board, never through a link).
pub(super) fn write_board_file(path: &Path, text: &str) -> Result<(), Error> {
    if let Some(dir) = path.parent() {
        match fs::symlink_metadata(dir) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(fail(format!(
                    "{} is a symbolic link; the lab, running as root, follows no link",
                    dir.display()
                )));
            }
            Ok(_) => {}
            Err(_) => fs::create_dir(dir).map_err(io(dir))?,
        }
    }
    let ours = match state::read_no_follow(path, 1 << 20) {
        Ok(None) => true,
        Ok(Some((old, _))) => old.starts_with(BOARD_FILE_MARK),
        Err(_) => false,
    };
    if !ours {
        return Err(fail(format!(
            "{} exists and the lab did not write it (or it is a link); move it away, or give \
             the lab another board prefix",
            path.display()
        )));
    }
    state::replace(path, text.as_bytes(), 0o644)
}

/// The `[power] cycle` of a lab board: this benchpipe (when it runs as `benchpipe`, else
/// the one on PATH) powering the board off and on, naming the lab's prefixes when they
/// are not the defaults.
fn power_cycle_command(board: &LabBoard, info: &LabInfo, root: &Path) -> String {
    use crate::transport::quote::sh;
    let exe = std::env::current_exe()
        .ok()
        .filter(|p| p.file_name().is_some_and(|n| n == "benchpipe"))
        .map_or_else(|| "benchpipe".into(), |p| sh(&p.to_string_lossy()));
    let defaults = super::LabOptions::default();
    let mut cmd = format!(
        "{exe} lab power cycle {} --root {}",
        sh(board.name.as_str()),
        sh(&root.to_string_lossy())
    );
    if info.prefix != defaults.prefix || info.board_prefix != defaults.board_prefix {
        let _ = write!(
            cmd,
            " --prefix {} --board-prefix {}",
            sh(&info.prefix),
            sh(&info.board_prefix)
        );
    }
    cmd
}
