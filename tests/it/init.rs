//! Integration tests: `benchpipe init` in an empty directory outside the clone, against
//! a lab board (a namespace with a real sshd and loop disks), with a home of its own:
//! the user's key and known_hosts in `~/.ssh`, no agent.

use std::path::{Path, PathBuf};
use std::process::Output;

use benchpipe::transport::ssh::hostkey::HostKey;

use crate::lab::{Lab, text};
use crate::scratch::Scratch;

/// A home whose `~/.ssh` holds the lab's key as the default key, and `known_hosts`
/// (copied from the lab's when `known` is true).
pub(crate) fn home_for(lab: &Lab, tag: &str, known: bool) -> Scratch {
    use std::os::unix::fs::PermissionsExt;
    let home = Scratch::new(&format!("init-{tag}-home"));
    let ssh = home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::set_permissions(&ssh, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::copy(&lab.info.identity, ssh.join("id_ed25519")).unwrap();
    std::fs::set_permissions(
        ssh.join("id_ed25519"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    if known {
        std::fs::copy(&lab.info.known_hosts, ssh.join("known_hosts")).unwrap();
    }
    home
}

/// `benchpipe ARGS` in `cwd`, with `home` as HOME and no ssh-agent.
fn bp_in(cwd: &Path, home: &Path, args: &[&str]) -> Output {
    run_in(Path::new(env!("CARGO_BIN_EXE_benchpipe")), cwd, home, args)
}

/// `bp_in` with the binary `bin` (a copy, as a newcomer's).
pub(crate) fn run_in(bin: &Path, cwd: &Path, home: &Path, args: &[&str]) -> Output {
    // The copied binary was open for writing here; a child another test thread forked
    // meanwhile holds that descriptor until its own exec, and exec says "text file
    // busy" until then (rust-lang/rust#114554). Bounded retries outwait that window.
    for _ in 0..100 {
        match std::process::Command::new(bin)
            .args(args)
            .current_dir(cwd)
            .env("HOME", home)
            .env_remove("SSH_AUTH_SOCK")
            .env("NO_COLOR", "1")
            .output()
        {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            out => return out.unwrap(),
        }
    }
    panic!("{} stayed busy for 5 s", bin.display())
}

/// `text` with the commented `[[storage]]` block naming `device` uncommented.
pub(crate) fn uncomment(text: &str, device: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == format!("# device = \"{device}\""))
        .unwrap_or_else(|| panic!("no commented block for {device}:\n{text}"));
    let start = (0..at)
        .rev()
        .find(|&i| lines[i] == "# [[storage]]")
        .unwrap();
    let end = (at + 1..lines.len())
        .find(|&i| !lines[i].starts_with("# ") || lines[i].starts_with("# [["))
        .unwrap_or(lines.len());
    let mut out: Vec<String> = lines.iter().map(ToString::to_string).collect();
    for l in &mut out[start..end] {
        *l = l["# ".len()..].to_string();
    }
    out.join("\n") + "\n"
}

/// The model the machine says it is (lab boards share its /proc and /sys), read here
/// without benchpipe.
fn machine_model() -> String {
    for f in ["/proc/device-tree/model", "/sys/class/dmi/id/product_name"] {
        if let Ok(s) = std::fs::read_to_string(f) {
            let s = s.trim_matches(|c: char| c == '\0' || c.is_whitespace());
            if !s.is_empty() {
                return s.to_string();
            }
        }
    }
    format!("unknown {} board", std::env::consts::ARCH)
}

fn mem_total_mib() -> u64 {
    let m = std::fs::read_to_string("/proc/meminfo").unwrap();
    let line = m.lines().find(|l| l.starts_with("MemTotal:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib / 1024
}

pub(crate) fn one_board_lab() -> Option<Lab> {
    Lab::up_with_options(1, |o| {
        o.boot_bytes = 0;
        o.disks_per_board = 2;
    })
}

#[test]
fn init_describes_a_lab_board_that_check_accepts_with_a_disk_uncommented() {
    let Some(lab) = one_board_lab() else { return };
    let board = lab.board(0);
    let home = home_for(&lab, "probe", true);
    let ws_dir = Scratch::new("init-probe-ws");
    let ws = ws_dir.join("mine");
    let addr = board.address.to_string();
    let out = bp_in(
        &home,
        &home,
        &[
            "init",
            "--dir",
            ws.to_str().unwrap(),
            "--board",
            &format!("root@{addr}"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for next in [
        "benchpipe check scenarios/first.toml",
        "benchpipe apply --dry-run scenarios/first.toml",
        "benchpipe apply scenarios/first.toml",
    ] {
        assert!(stdout.contains(next), "{stdout}");
    }
    assert!(stdout.contains(&format!("cd {}", ws.display())), "{stdout}");
    let file = ws.join(format!("boards/{addr}.toml"));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(
        written.contains(&format!("\nmodel = {:?}\n", machine_model())),
        "{written}"
    );
    assert!(
        written.contains(&format!("\nmemory = \"{} MiB\"\n", mem_total_mib())),
        "{written}"
    );
    assert!(
        written.contains(&format!("\narch = {:?}\n", std::env::consts::ARCH)),
        "{written}"
    );
    assert!(
        written.contains(&format!(
            "[[network]]\nname = \"lan\"\naddress = \"{addr}\"\ninterface = \"eth0\"\nkind = \"wired\"\n"
        )),
        "{written}"
    );
    for d in &board.disks {
        let bytes = std::fs::metadata(&d.file).unwrap().len();
        let block = uncomment(&written, &d.device);
        assert!(
            block.contains(&format!("device = \"{}\"\n", d.device))
                && block.contains(&format!("\nsize = {bytes}\n")),
            "{} of {bytes} bytes:\n{written}",
            d.device
        );
    }
    for f in [".gitignore", "scenarios/first.toml"] {
        assert!(ws.join(f).is_file(), "{f}");
    }
    let check = bp_in(&ws, &home, &["check", "scenarios/first.toml"]);
    assert!(check.status.success(), "{}", text(&check));
    assert!(!text(&check).contains("warning"), "{}", text(&check));
    let disk = &board.disks[0];
    std::fs::write(&file, uncomment(&written, &disk.device)).unwrap();
    let check = bp_in(&ws, &home, &["check", "scenarios/first.toml"]);
    assert!(check.status.success(), "{}", text(&check));
    assert!(
        !text(&check).contains("warning"),
        "the uncommented disk is identified: {}",
        text(&check)
    );
    let dry = bp_in(&ws, &home, &["apply", "--dry-run", "scenarios/first.toml"]);
    assert!(dry.status.success(), "{}", text(&dry));
    let _ = std::fs::remove_dir_all(ws.parent().unwrap());
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn init_refuses_an_unknown_or_changed_host_key_and_records_one_only_when_asked() {
    let Some(lab) = one_board_lab() else { return };
    let board = lab.board(0);
    let addr = board.address.to_string();
    let home = home_for(&lab, "keys", false);
    let ws = Scratch::new("init-keys-ws");
    let host = format!("root@{addr}");
    let lab_key = std::fs::read_to_string(&lab.info.known_hosts)
        .unwrap()
        .lines()
        .find(|l| l.starts_with(&format!("{addr} ")))
        .map(|l| HostKey::parse(l.split_once(' ').unwrap().1).unwrap())
        .unwrap();
    let fingerprint = lab_key.fingerprint();

    let out = bp_in(&ws, &home, &["init", "--board", &host]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    for needle in [
        fingerprint.as_str(),
        "ssh-keyscan",
        "--accept-new-host-key",
        "ssh-keygen -lf",
    ] {
        assert!(said.contains(needle), "{needle}: {said}");
    }
    assert_eq!(
        std::fs::read_dir(&ws).unwrap().count(),
        0,
        "nothing written for a refused host"
    );

    // A different key recorded for the host: refused, also with --accept-new-host-key.
    let other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
    std::fs::write(home.join(".ssh/known_hosts"), format!("{addr} {other}\n")).unwrap();
    let out = bp_in(
        &ws,
        &home,
        &["init", "--accept-new-host-key", "--board", &host],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("does NOT match"), "{}", text(&out));
    assert_eq!(std::fs::read_dir(&ws).unwrap().count(), 0);

    std::fs::remove_file(home.join(".ssh/known_hosts")).unwrap();
    let out = bp_in(
        &ws,
        &home,
        &["init", "--accept-new-host-key", "--board", &host],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains(&fingerprint), "{}", text(&out));
    let recorded = std::fs::read_to_string(ws.join("known_hosts")).unwrap();
    assert_eq!(recorded, lab_key.known_hosts_line(&addr));
    assert!(
        !home.join(".ssh/known_hosts").exists(),
        "the user's file is not touched"
    );
    let written = std::fs::read_to_string(ws.join(format!("boards/{addr}.toml"))).unwrap();
    let named = std::fs::canonicalize(&ws).unwrap().join("known_hosts");
    assert!(
        written.contains(&format!("\nknown_hosts = {:?}\n", named.to_str().unwrap())),
        "{written}"
    );
    // The board file reaches the board with the recorded key.
    let pre = bp_in(&ws, &home, &["boards", "check", &addr]);
    assert!(text(&pre).contains("reachable ("), "{}", text(&pre));
    for p in [&ws, &home] {
        let _ = std::fs::remove_dir_all(p);
    }
}

#[test]
fn init_replaces_no_file_and_keeps_what_it_would_write_itself() {
    let home = Scratch::new("init-files-home");
    let ws = Scratch::new("init-files-ws");
    // An unrelated file is fine; no board: an example, a scenario and .gitignore.
    std::fs::write(ws.join("notes.txt"), "mine\n").unwrap();
    let out = bp_in(&ws, &home, &["init"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(ws.join("boards/example.toml.sample").is_file());
    assert!(
        !ws.join("boards")
            .read_dir()
            .unwrap()
            .any(|e| { e.unwrap().path().extension().is_some_and(|x| x == "toml") })
    );
    let scenario = std::fs::read_to_string(ws.join("scenarios/first.toml")).unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("benchpipe apply --dry-run scenarios/first.toml")
    );
    // Again: what is there as init writes it is kept, not an error.
    let again = bp_in(&ws, &home, &["init"]);
    assert!(again.status.success(), "{}", text(&again));

    // A board file of the same name, or a scenario of the user's: refused before any
    // host is asked (192.0.2.1 is TEST-NET-1: nothing answers there), nothing changed.
    std::fs::write(ws.join("boards/192.0.2.1.toml"), "# mine\n").unwrap();
    std::fs::write(ws.join("scenarios/first.toml"), "# mine too\n").unwrap();
    let before = listing(&ws);
    let out = bp_in(&ws, &home, &["init", "--board", "pi@192.0.2.1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    for f in ["boards/192.0.2.1.toml", "scenarios/first.toml"] {
        assert!(text(&out).contains(f), "{f}: {}", text(&out));
    }
    assert_eq!(listing(&ws), before);
    assert_eq!(
        std::fs::read_to_string(ws.join("boards/192.0.2.1.toml")).unwrap(),
        "# mine\n"
    );
    assert_ne!(scenario, "# mine too\n");
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "mine\n"
    );
    // A link where a file would go is no way through either.
    std::fs::remove_file(ws.join("scenarios/first.toml")).unwrap();
    std::os::unix::fs::symlink(home.join("victim"), ws.join("scenarios/first.toml")).unwrap();
    let out = bp_in(&ws, &home, &["init"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!home.join("victim").exists());
    for p in [&ws, &home] {
        let _ = std::fs::remove_dir_all(p);
    }
}

/// Every path under `dir` with its bytes.
fn listing(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn init_refuses_hostile_host_strings_with_exit_2_and_writes_nothing() {
    let home = Scratch::new("init-hostile-home");
    let ws_dir = Scratch::new("init-hostile-ws");
    let ws = ws_dir.join("new");
    let dir = ws.to_str().unwrap();
    for bad in [
        "-oProxyCommand=touch /tmp/bp-init-pwned",
        "root@-oProxyCommand=x",
        "pi@host;reboot",
        "$(touch /tmp/bp-init-pwned)",
        "`id`@host",
        "host\n[[storage]]",
        "evil\u{1b}]0;title\u{7}",
        "../../etc=host",
        "a/b",
        "host:0",
        "host:65536",
        "@host",
        "pi@",
        "",
        "[::1",
        "x".repeat(1000).as_str(),
    ] {
        // `--board=VALUE`: a value starting with `-` reaches init's own check, not clap's.
        let arg = format!("--board={bad}");
        let out = bp_in(&home, &home, &["init", "--dir", dir, &arg]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", text(&out));
        let said = text(&out);
        assert!(said.contains("--board"), "{bad:?}: {said}");
        assert!(
            !said.contains('\u{1b}') && !said.contains('\u{7}'),
            "{said:?}"
        );
        assert!(!ws.exists(), "{bad:?} made the workspace");
    }
    assert!(!Path::new("/tmp/bp-init-pwned").exists());
    let out = bp_in(
        &home,
        &home,
        &["init", "--dir", dir, "--board", "a=h1", "--board", "a=h2"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("a second board named `a`"),
        "{}",
        text(&out)
    );
    assert!(!ws.exists());
    let _ = std::fs::remove_dir_all(&home);
    let _ = std::fs::remove_dir_all(ws.parent().unwrap());
}
