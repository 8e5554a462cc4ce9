//! Integration tests: real boards as they come. Boards that are off or unroutable,
//! per-board connect timeouts, pinned host keys, jump hosts and sudo, against the lab's
//! real sshds in network namespaces.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use benchpipe::transport::local::Local;
use benchpipe::transport::{Transport, TransportError};

use crate::lab::Lab;

use crate::lab::{bp, text};

fn local(command: &str) -> benchpipe::transport::Output {
    Local::new()
        .run(command, Some(Duration::from_secs(30)))
        .unwrap()
}

/// Two one-value recipes and a scenario running both on `boards`.
fn echo_workspace(root: &Path, boards: &[&str]) {
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for name in ["echo", "echo2"] {
        std::fs::write(
            root.join(format!("pipeline/{name}.toml")),
            "description = \"a value\"\nuses_storage = false\n[run]\n\
             command = \"echo '{\\\"value\\\": 1}'\"\nparse = \"json\"\n[metrics]\n\
             value = { from = \"value\", unit = \"x\", better = \"higher\" }\n",
        )
        .unwrap();
    }
    let boards: Vec<String> = boards.iter().map(|b| format!("\"{b}\"")).collect();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"lab\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [{}]\ntest = [\"echo\", \"echo2\"]\n[method]\n\
             warmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n",
            boards.join(", ")
        ),
    )
    .unwrap();
}

fn failure_files(root: &Path) -> Vec<PathBuf> {
    let Ok(dir) = std::fs::read_dir(root.join("results")) else {
        return Vec::new();
    };
    dir.map(|e| e.unwrap().path().join("failure.json"))
        .filter(|p| p.exists())
        .collect()
}

/// A lab board's file with its `[ssh]` table's `host = ...` line rewritten, and
/// `extra` lines added to the table.
fn board_file_like(lab: &Lab, i: usize, host: &str, extra: &str) -> String {
    let b = lab.board(i);
    std::fs::read_to_string(&b.board_file)
        .unwrap()
        .replace(
            &format!("host = \"{}\"", b.address),
            &format!("host = \"{host}\"\n{extra}"),
        )
        .replace(
            &format!("\"{}\"", b.workdir),
            "\"/var/tmp/bp-realboards-copy\"",
        )
}

/// A board that refuses connections and one whose packets are dropped each give one
/// line with the real cause, their cells get no failure.json and stay missing in
/// `plan`, and the working board beside them completes its cells.
#[test]
fn unreachable_boards_are_one_line_each_with_the_tcp_cause_and_no_failed_cells() {
    let Some(lab) = Lab::up(2) else { return };
    let name = lab.board(0).name.to_string();
    // Nothing listens on port 1 of the controller: refused.
    std::fs::write(
        lab.root.join("boards/closed.toml"),
        "model = \"off\"\nworkdir = \"/var/tmp/bp-closed\"\n[ssh]\nhost = \"127.0.0.1\"\n\
         port = 1\nuser = \"root\"\n",
    )
    .unwrap();
    // Lab board 1 drops every reply to the controller: its SYN-ACKs go into a blackhole
    // route in its own namespace, as if the board were off behind a switch.
    let dark = lab.board(1);
    let out = local(&format!(
        "ip netns exec {} ip route add blackhole {}/32",
        dark.netns, dark.controller_address
    ));
    assert!(out.exit.success(), "{}", out.stderr_str());
    std::fs::write(
        lab.root.join("boards/dark.toml"),
        board_file_like(
            &lab,
            1,
            &dark.address.to_string(),
            "connect_timeout = \"1s\"",
        ),
    )
    .unwrap();
    echo_workspace(&lab.root, &[&name, "closed", "dark"]);

    let out = bp(&lab.root, &["apply", "scenarios/s.toml", "--no-report"]);
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("apply: 2 cell(s) completed, 0 already complete, 0 failed"),
        "{all}"
    );
    let summary = |board: &str| {
        stderr
            .lines()
            .find(|l| {
                l.trim_start()
                    .starts_with(&format!("board {board} unreachable: "))
            })
            .unwrap_or_else(|| panic!("no summary line for {board}: {all}"))
            .to_string()
    };
    let closed = summary("closed");
    assert!(
        closed.contains("connection refused") && closed.ends_with("; 2 cell(s) not run"),
        "{closed}"
    );
    let dark_line = summary("dark");
    assert!(
        dark_line.contains("timed out connecting (after 1 s")
            && dark_line.ends_with("; 2 cell(s) not run"),
        "{dark_line}"
    );
    assert!(!all.contains("handshake"), "TCP never connected: {all}");
    // The failed connect step's line and one summary line per board, never one per cell.
    for board in ["closed", "dark"] {
        let lines = stderr
            .lines()
            .filter(|l| {
                l.contains(board) && (l.contains("unreachable") || l.contains("cannot connect"))
            })
            .count();
        assert_eq!(lines, 2, "{board}: {all}");
    }
    assert_eq!(failure_files(&lab.root), Vec::<PathBuf>::new(), "{all}");

    let plan = bp(&lab.root, &["plan", "scenarios/s.toml"]);
    let plan_text = String::from_utf8_lossy(&plan.stdout).to_string();
    assert!(
        plan_text.contains("2 complete, 0 partial, 4 missing, 0 failed"),
        "{}",
        text(&plan)
    );
}

/// The board file's `connect_timeout` bounds the connect, not the caller's timeout.
#[test]
fn the_board_files_connect_timeout_bounds_connecting() {
    let Some(lab) = Lab::up(1) else { return };
    let b = lab.board(0);
    let out = local(&format!(
        "ip netns exec {} ip route add blackhole {}/32",
        b.netns, b.controller_address
    ));
    assert!(out.exit.success(), "{}", out.stderr_str());
    let mut target = lab.target(0);
    target.connect_timeout = Some(Duration::from_millis(700));
    let started = std::time::Instant::now();
    let Err(e) = benchpipe::transport::ssh::SshTransport::connect_with(
        &b.name,
        &target,
        Duration::from_secs(60),
        crate::lab::options(),
    ) else {
        panic!("connected through a blackhole")
    };
    assert!(matches!(e, TransportError::Unreachable { .. }), "{e}");
    assert!(
        e.to_string().contains("timed out connecting (after 0.7 s"),
        "{e}"
    );
    // Far below the 60 s the caller allowed, far above 0.7 s: no timing is judged closer.
    assert!(started.elapsed() < Duration::from_secs(30), "{e}");
}

/// The board's real key, as the lab's known_hosts holds it: `ALGORITHM BASE64`.
fn real_host_key(lab: &Lab, i: usize) -> String {
    let address = lab.board(i).address.to_string();
    std::fs::read_to_string(&lab.info.known_hosts)
        .unwrap()
        .lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            (w.next() == Some(address.as_str())).then(|| w.collect::<Vec<_>>().join(" "))
        })
        .expect("the lab's known_hosts has the board")
}

/// A pinned key stands instead of known_hosts: the real key connects with an empty
/// known_hosts, another key is refused naming both fingerprints.
#[test]
fn a_pinned_host_key_is_the_key_expected_and_another_is_refused() {
    let Some(lab) = Lab::up(1) else { return };
    let b = lab.board(0);
    let empty = lab.root.join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    let mut target = lab.target(0);
    target.known_hosts = Some(empty);
    let connect = |target: &benchpipe::model::SshTarget| {
        benchpipe::transport::ssh::SshTransport::connect_with(
            &b.name,
            target,
            Duration::from_secs(20),
            crate::lab::options(),
        )
    };
    target.host_key = Some(real_host_key(&lab, 0));
    let mut t = connect(&target).unwrap_or_else(|e| panic!("the pinned real key: {e}"));
    assert_eq!(t.run("echo pinned", None).unwrap().stdout_str(), "pinned\n");

    let other = lab.root.join("other_key");
    let out = local(&format!(
        "ssh-keygen -q -t ed25519 -N '' -f {} && cat {}.pub",
        other.display(),
        other.display()
    ));
    assert!(out.exit.success(), "{}", out.stderr_str());
    let wrong = out.stdout_str();
    target.host_key = Some(wrong.trim().to_string());
    let Err(e) = connect(&target) else {
        panic!("a wrong pinned key was accepted")
    };
    let real = benchpipe::transport::ssh::hostkey::HostKey::parse(&real_host_key(&lab, 0)).unwrap();
    let wrong = benchpipe::transport::ssh::hostkey::HostKey::parse(&wrong).unwrap();
    assert!(matches!(e, TransportError::HostKey { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains(&real.fingerprint()) && msg.contains(&wrong.fingerprint()),
        "{msg}"
    );
    assert!(msg.contains("pins"), "{msg}");
}

/// Local users for a test, with sudoers entries; removed on drop, also on panic.
struct Users(Vec<String>);

impl Users {
    /// `name` with a home, a shell and an unlocked (but unusable) password field, so
    /// that the lab's sshd (UsePAM no) lets it log in with the lab's key.
    fn add(&mut self, name: &str, sudoers: &str, password: Option<&str>) {
        let out = local(&format!(
            "useradd -m -s /bin/sh {name} && usermod -p '*' {name} && \
             printf '%s\\n' '{sudoers}' > /etc/sudoers.d/{name} && chmod 0440 /etc/sudoers.d/{name}"
        ));
        self.0.push(name.to_string());
        assert!(out.exit.success(), "{}", out.stderr_str());
        if let Some(p) = password {
            let out = local(&format!("printf '%s:%s\\n' {name} {p} | chpasswd"));
            assert!(out.exit.success(), "{}", out.stderr_str());
        }
    }
}

impl Drop for Users {
    fn drop(&mut self) {
        for u in &self.0 {
            local(&format!(
                "rm -f /etc/sudoers.d/{u}; pkill -KILL -u {u}; userdel -r {u} 2>/dev/null; true"
            ));
        }
    }
}

/// A board whose login user is not root: with NOPASSWD sudo, `become = "sudo"` runs
/// every command as root (check says so, and apply runs a cell); a user whose sudo
/// asks for a password is refused with the cause, unless `sudo_password_env` names a
/// variable holding the right password; a wrong one is refused at once.
#[test]
fn become_sudo_runs_commands_as_root_and_refuses_clearly_when_sudo_wants_a_password() {
    if !Path::new("/usr/bin/sudo").exists() {
        crate::cannot_run(
            "become_sudo_runs_commands_as_root_and_refuses_clearly_when_sudo_wants_a_password",
            "sudo is not installed (apt-get install sudo)",
        );
        return;
    }
    let Some(lab) = Lab::up(1) else { return };
    let pid = std::process::id() % 100_000;
    let (np, pw) = (format!("bpnp{pid}"), format!("bppw{pid}"));
    let mut users = Users(Vec::new());
    users.add(&np, &format!("{np} ALL=(ALL) NOPASSWD: ALL"), None);
    users.add(&pw, &format!("{pw} ALL=(ALL) ALL"), Some("s3cret-Pw"));
    // sshd reads AuthorizedKeysFile as the login user: let them read the lab's
    // (public keys only).
    let keys = lab.info.authorized_keys();
    let out = local(&format!(
        "chmod 0755 {} && chmod 0644 {}",
        keys.parent().unwrap().display(),
        keys.display()
    ));
    assert!(out.exit.success(), "{}", out.stderr_str());
    let b = lab.board(0);
    let file = |user: &str, extra: &str, workdir: &str| {
        std::fs::read_to_string(&b.board_file)
            .unwrap()
            .replace("user = \"root\"", &format!("user = \"{user}\"\n{extra}"))
            .replace(&format!("\"{}\"", b.workdir), &format!("\"{workdir}\""))
    };
    let become_ = "become = \"sudo\"";
    let boards = [
        ("np", file(&np, become_, "/var/tmp/bp-become-np")),
        ("plain", file(&np, "", "/var/tmp/bp-become-plain")),
        ("pw", file(&pw, become_, "/var/tmp/bp-become-pw")),
        (
            "pwenv",
            file(
                &pw,
                &format!("{become_}\nsudo_password_env = \"BP_TEST_SUDO_PW\""),
                "/var/tmp/bp-become-pwenv",
            ),
        ),
        (
            "pwbad",
            file(
                &pw,
                &format!("{become_}\nsudo_password_env = \"BP_TEST_SUDO_BAD\""),
                "/var/tmp/bp-become-pwbad",
            ),
        ),
    ];
    std::fs::remove_file(&b.board_file).unwrap();
    for (name, text) in &boards {
        std::fs::write(lab.root.join(format!("boards/{name}.toml")), text).unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(["boards", "check"])
        .current_dir(&lab.root)
        .env("NO_COLOR", "1")
        .env("BP_TEST_SUDO_PW", "s3cret-Pw")
        .env("BP_TEST_SUDO_BAD", "not-the-password")
        .output()
        .unwrap();
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let line = |board: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{board}  ")))
            .unwrap_or_else(|| panic!("no line for {board}: {all}"))
            .to_string()
    };
    let l = line("np");
    assert!(
        l.starts_with("np  ok")
            && l.contains(&format!("login {np}, root through sudo (become works)")),
        "{l}"
    );
    let l = line("plain");
    assert!(
        l.contains(&format!("login {np}")) && l.contains("not root"),
        "{l}"
    );
    let l = line("pw");
    assert!(
        l.starts_with("pw  FAIL")
            && l.contains("sudo needs a password on pw; set sudo_password_env or allow NOPASSWD"),
        "{l}"
    );
    let l = line("pwenv");
    assert!(
        l.starts_with("pwenv  ok") && l.contains(&format!("login {pw}, root through sudo")),
        "{l}"
    );
    let l = line("pwbad");
    assert!(
        l.starts_with("pwbad  FAIL")
            && l.contains("did not accept the password from $BP_TEST_SUDO_BAD"),
        "{l}"
    );
    assert!(
        !all.contains("s3cret-Pw") && !all.contains("not-the-password"),
        "{all}"
    );

    // apply through sudo: the workdir is claimed, tools checked, the cell runs as root.
    echo_workspace(&lab.root, &["np"]);
    std::fs::write(
        lab.root.join("pipeline/echo.toml"),
        "description = \"uid\"\nuses_storage = false\n[run]\n\
         command = \"echo {\\\\\\\"value\\\\\\\": $(id -u)}\"\nparse = \"json\"\n[metrics]\n\
         value = { from = \"value\", unit = \"x\", better = \"lower\" }\n",
    )
    .unwrap();
    let out = bp(&lab.root, &["apply", "scenarios/s.toml", "--no-report"]);
    assert!(out.status.success(), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let run = stderr
        .lines()
        .find(|l| l.contains("echo on np") && l.contains("value="))
        .unwrap_or_else(|| panic!("no run: {}", text(&out)));
    assert!(run.ends_with("value=0"), "the run was not root: {run}");
    let owner = local("stat -c %U /var/tmp/bp-become-np").stdout_str();
    assert_eq!(owner.trim(), "root");

    // A cell's tmpfs needs root: the board that logs in as a user without become is
    // refused before any step, with the steps that need root; the other goes on.
    std::fs::write(
        lab.root.join("pipeline/tmp.toml"),
        "description = \"a tmpfs\"\nuses_storage = false\n[tmpfs]\nsize = 8\n[run]\n\
         command = \"echo '{\\\"value\\\": 1}'\"\nparse = \"json\"\n[metrics]\n\
         value = { from = \"value\", unit = \"x\", better = \"higher\" }\n",
    )
    .unwrap();
    std::fs::write(
        lab.root.join("scenarios/root.toml"),
        "title = \"root\"\n[images.installed]\ninstalled = true\n[matrix]\n\
         image = [\"installed\"]\nboard = [\"plain\", \"np\"]\ntest = [\"tmp\"]\n\
         [method]\nwarmup = { runs = 0 }\nruns = { min = 1, max = 1 }\n",
    )
    .unwrap();
    local("rm -rf /var/tmp/bp-become-plain");
    // The dry run says so from the board file already.
    let dry = bp(&lab.root, &["apply", "--dry-run", "scenarios/root.toml"]);
    let said = text(&dry);
    assert!(
        said.contains(&format!(
            "needs root: plain logs in as {np} without become = \"sudo\", so apply refuses this board"
        )) && !said.contains("needs root: np "),
        "{said}"
    );
    let out = bp(&lab.root, &["apply", "scenarios/root.toml", "--no-report"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("board plain logs in as {np} (uid "))
            && said.contains(
                "not root, and these steps need root: mount a tmpfs of 8 MiB for tmp (mount)"
            )
            && said.contains("set become = \"sudo\"")
            && !said.contains("must be superuser"),
        "{said}"
    );
    assert!(
        !Path::new("/var/tmp/bp-become-plain").exists(),
        "a step ran on the refused board: {said}"
    );
    assert!(
        said.lines()
            .any(|l| l.contains("tmp on np") && l.contains("value=1")),
        "the board with become did not go on: {said}"
    );
    local("rm -rf /var/tmp/bp-become-np /var/tmp/bp-become-plain");
    drop(users);
}

/// Threads of this process whose name says they pump a jump host's channel.
fn jump_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("jump "))
        })
        .count()
}

/// The address a board's sshd saw the session come from.
fn client_address(t: &mut benchpipe::transport::ssh::SshTransport) -> String {
    let out = t.run("echo $SSH_CONNECTION", None).unwrap();
    out.stdout_str()
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string()
}

/// A jump host from the board file or from ~/.ssh/config carries the session: the
/// board sees it come from the jump host (here the board itself, from its own address)
/// instead of the controller. Both hops' host keys are checked strictly.
#[test]
fn proxy_jump_from_the_board_file_or_ssh_config_carries_the_session_with_strict_keys() {
    let Some(lab) = Lab::up(2) else { return };
    let b = lab.board(0);
    let (board_addr, controller_addr) = (b.address.to_string(), b.controller_address.to_string());
    let connect = |target: &benchpipe::model::SshTarget, options| {
        benchpipe::transport::ssh::SshTransport::connect_with(
            &b.name,
            target,
            Duration::from_secs(20),
            options,
        )
    };
    let mut direct = connect(&lab.target(0), crate::lab::options()).unwrap();
    assert_eq!(client_address(&mut direct), controller_addr);

    let mut target = lab.target(0);
    target.proxy_jump = Some(format!("root@{board_addr}:22"));
    let mut jumped = connect(&target, crate::lab::options()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(client_address(&mut jumped), board_addr);
    // The bridge carries bulk data both ways intact.
    let data = crate::xorshift_bytes(3 << 20, 9);
    let file = lab.root.join("jump-data");
    std::fs::write(&file, &data).unwrap();
    let remote = lab.root.join("jump-data-remote");
    jumped.upload(&file, &remote.to_string_lossy()).unwrap();
    assert_eq!(std::fs::read(&remote).unwrap(), data);
    let out = jumped
        .run(&format!("sha256sum < {}", remote.display()), None)
        .unwrap();
    assert!(out.exit.success());
    assert!(
        jump_threads() >= 1,
        "the bridge's pump thread is not named as expected"
    );
    drop(jumped);

    let config = lab.root.join("ssh_config");
    std::fs::write(
        &config,
        format!(
            "Host viajump\n  HostName {board_addr}\n  User root\n  ProxyJump root@{board_addr}\n"
        ),
    )
    .unwrap();
    let alias = benchpipe::model::SshTarget {
        host: "viajump".into(),
        identity: Some(lab.info.identity.clone()),
        known_hosts: Some(lab.info.known_hosts.clone()),
        ..Default::default()
    };
    let mut options = crate::lab::options();
    options.ssh_config = Some(config);
    let mut via_config = connect(&alias, options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(client_address(&mut via_config), board_addr);
    drop(via_config);
    // Each bridge's pump thread ends with its session (no thread per reconnect left).
    let t0 = std::time::Instant::now();
    while jump_threads() > 0 && t0.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(jump_threads(), 0, "pump threads outlived their sessions");

    // A jump host that is off: the cause names that hop.
    let mut target = lab.target(0);
    target.proxy_jump = Some("root@127.0.0.1:1".into());
    let Err(e) = connect(&target, crate::lab::options()) else {
        panic!("connected through a closed jump host")
    };
    assert!(matches!(e, TransportError::Unreachable { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("jump host root@127.0.0.1:1: root@127.0.0.1:1: connection refused"),
        "{e}"
    );

    // The jump hop: board 1 as the jump host, under a known_hosts without its key.
    let jump_addr = lab.board(1).address.to_string();
    let only_board_0: String = std::fs::read_to_string(&lab.info.known_hosts)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with(&format!("{board_addr} ")))
        .fold(String::new(), |mut out, l| {
            let _ = writeln!(out, "{l}");
            out
        });
    let kh = lab.root.join("known_hosts_board_0");
    std::fs::write(&kh, only_board_0).unwrap();
    let mut target = lab.target(0);
    target.known_hosts = Some(kh);
    target.proxy_jump = Some(format!("root@{jump_addr}"));
    let Err(e) = connect(&target, crate::lab::options()) else {
        panic!("an unknown jump host was accepted")
    };
    assert!(matches!(e, TransportError::HostKey { .. }), "{e}");
    assert!(
        e.to_string().contains("jump host") && e.to_string().contains(&jump_addr),
        "{e}"
    );

    // The board's hop: through a trusted jump, a board offering another key than the
    // one pinned is refused.
    let other = lab.root.join("other_key");
    let out = local(&format!(
        "ssh-keygen -q -t ed25519 -N '' -f {0} && cat {0}.pub",
        other.display()
    ));
    assert!(out.exit.success(), "{}", out.stderr_str());
    let mut target = lab.target(0);
    target.proxy_jump = Some(format!("root@{board_addr}"));
    target.host_key = Some(out.stdout_str().trim().to_string());
    let Err(e) = connect(&target, crate::lab::options()) else {
        panic!("a wrong key behind a jump host was accepted")
    };
    assert!(
        matches!(e, TransportError::HostKey { .. }) && e.to_string().contains("pins"),
        "{e}"
    );
}
