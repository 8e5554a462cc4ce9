//! Building a lab: the tools it needs checked, its private state directory, and each
//! board's namespace, links, routes, loop disks, host key and sshd (`build`).

use std::fmt::Write as _;
use std::fs;
use std::net::Ipv4Addr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::{
    Error, LabInfo, LabLink, LabOptions, RUN_DIR, WORKDIRS, board_file, cmd, down, fail, io,
    keygen, no_discard, power, run_dir, shaped_link, sshd_config, start_sshd_with, state,
    state_dir, subnet_addresses, used_subnets, write_board_file, write_through,
};

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
pub(super) fn check_tools(o: &LabOptions) -> Result<(), Error> {
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
pub(super) fn prepare_state_dir(root: &Path) -> Result<PathBuf, Error> {
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

pub(super) fn build(
    root: &Path,
    boards: usize,
    o: &LabOptions,
    info: &mut LabInfo,
) -> Result<(), Error> {
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
    passable(Path::new(WORKDIRS))?;

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
        let _ = writeln!(known_hosts, "{address} {kind} {blob}");
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

/// Makes the lab boards' shared workdir parent passable by every user: a board's
/// services drop to their own user (MariaDB, php-fpm and nginx as www-data) and must
/// reach the directory their recipe opens to them below the board's workdir. A parent a
/// claim of an older benchpipe made 0700 would stop them. Only the search bits are
/// added; `ensure_dir` has checked the directory is ours and nobody else may write in it.
fn passable(dir: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    let meta = fs::symlink_metadata(dir).map_err(io(dir))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o011 != 0o011 {
        fs::set_permissions(dir, fs::Permissions::from_mode(mode | 0o011)).map_err(io(dir))?;
    }
    Ok(())
}
