//! Integration tests: the web-app recipes on a LAN they share with other machines. A
//! second lab board (its own network namespace, routed to the first through the
//! controller) knocks on the first board's WordPress all the while its cell is set up
//! and measured; the board's listening sockets and its daemons' users are sampled
//! meanwhile.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use benchpipe::lab::LabBoard;
use serde_json::Value;

use crate::lab::{Lab, bp, text};
use crate::repo;

/// wordpress.toml's default `port`.
const PORT: u16 = 8090;

/// A board's network namespace, as its sshd's.
fn netns_of(board: &LabBoard) -> PathBuf {
    let pid = std::fs::read_to_string(&board.sshd_pid_file).unwrap();
    PathBuf::from(format!("/proc/{}/ns/net", pid.trim()))
}

/// What one knock from the other board got: `refused` (nothing listened), `timeout`, or
/// the HTTP status line's code.
fn knock(to: SocketAddr) -> String {
    let Ok(mut s) = TcpStream::connect_timeout(&to, Duration::from_secs(2)) else {
        return "refused".into();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!(
        "GET /wp-admin/install.php HTTP/1.0\r\nHost: {}:{}\r\n\r\n",
        to.ip(),
        to.port()
    );
    if s.write_all(request.as_bytes()).is_err() {
        return "write-failed".into();
    }
    let mut head = [0u8; 64];
    let mut got = 0;
    while got < head.len() {
        match s.read(&mut head[got..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    let line = String::from_utf8_lossy(&head[..got]).to_string();
    line.split_whitespace()
        .nth(1)
        .map_or_else(|| format!("no-status: {line:?}"), str::to_string)
}

/// Knocks from inside `netns` (this thread joins it) until `done`: every answer seen.
fn knocking(netns: PathBuf, to: SocketAddr, done: Arc<AtomicBool>) -> BTreeMap<String, usize> {
    let ns = std::fs::File::open(&netns).unwrap();
    // SAFETY: a valid descriptor of a network namespace; setns moves this thread only.
    assert_eq!(
        unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) },
        0
    );
    let mut seen = BTreeMap::new();
    while !done.load(Ordering::SeqCst) {
        *seen.entry(knock(to)).or_insert(0) += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    seen
}

/// The local addresses listening on `port` in a namespace, from a process of it: its
/// /proc/PID/net/tcp and tcp6 (hex `ADDR:PORT`, state 0A).
fn listening_on(pid: &str, port: u16) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(state)) = (f.get(1), f.get(3)) else {
                continue;
            };
            let Some((addr, p)) = local.split_once(':') else {
                continue;
            };
            if *state == "0A" && u16::from_str_radix(p, 16) == Ok(port) {
                let shown = match u32::from_str_radix(addr, 16) {
                    Ok(a) if addr.len() == 8 => Ipv4Addr::from(a.swap_bytes()).to_string(),
                    _ => format!("[{addr}]"),
                };
                out.insert(shown);
            }
        }
    }
    out
}

/// The site's daemons in the namespace `ns`, as (what, uid, command line): php-fpm's
/// workers and master, nginx's workers and master, mariadbd.
fn daemons_in(ns: &Path) -> BTreeSet<(String, u32, String)> {
    let want = std::fs::read_link(ns).unwrap();
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let p = e.path();
        if std::fs::read_link(p.join("ns/net")).ok().as_ref() != Some(&want) {
            continue;
        }
        let cmd = std::fs::read(p.join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let what = if cmd.starts_with("php-fpm: pool ") {
            "php-fpm worker"
        } else if cmd.starts_with("php-fpm: master") {
            "php-fpm master"
        } else if cmd.starts_with("nginx: worker") {
            "nginx worker"
        } else if cmd.starts_with("nginx: master") {
            "nginx master"
        } else if cmd.starts_with("mariadbd") && cmd.contains("--datadir") {
            // Not the facts' `mariadbd --version`: the server.
            "mariadbd"
        } else {
            continue;
        };
        let status = std::fs::read_to_string(p.join("status")).unwrap_or_default();
        let uid = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|u| u.parse().ok());
        if let Some(uid) = uid {
            out.insert((what.to_string(), uid, cmd.chars().take(160).collect()));
        }
    }
    out
}

/// WordPress on one lab board, while a second board knocks on its port all along
/// (from the cell's setup, through the install, the login and the runs, to the
/// teardown): the second board is never answered with a page, only refused (before
/// the install nothing listens on the board's address) or forbidden (403) once nginx
/// listens, and it does get a 403, so the knocks reached nginx. The controller measures
/// the site. Meanwhile the board listens on the port at its own address only, never on
/// every address, and php-fpm's workers, nginx's workers and MariaDB run as www-data,
/// never root. Nothing is left afterwards.
#[test]
fn wordpress_answers_the_controller_alone_and_never_shows_its_installer_to_another_board() {
    let Some(lab) = Lab::up(2) else { return };
    let (target, other) = (lab.board(0).clone(), lab.board(1).clone());
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::copy(
        repo().join("pipeline/wordpress.toml"),
        root.join("pipeline/wordpress.toml"),
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"a LAN\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"wordpress\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 1 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.wordpress]\nposts = 3\nphp_workers = 2\ninnodb_buffer_pool_mib = 32\n\
             seconds = 3\nwrk_threads = 1\nwrk_connections = 2\nlogin_seconds = 4\n\
             login_threads = 1\nlogin_connections = 2\n",
            target.name
        ),
    )
    .unwrap();
    let to = SocketAddr::from((target.address, PORT));
    let target_ns = netns_of(&target);
    let sshd = std::fs::read_to_string(&target.sshd_pid_file)
        .unwrap()
        .trim()
        .to_string();
    let done = Arc::new(AtomicBool::new(false));
    let knocker = {
        let (ns, done) = (netns_of(&other), done.clone());
        std::thread::spawn(move || knocking(ns, to, done))
    };
    let sampled = Arc::new(Mutex::new((BTreeSet::new(), BTreeSet::new())));
    let sampler = {
        let (sampled, done, ns) = (sampled.clone(), done.clone(), target_ns.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                let listening = listening_on(&sshd, PORT);
                let daemons = daemons_in(&ns);
                let mut s = sampled.lock().unwrap();
                s.0.extend(listening);
                s.1.extend(daemons);
                drop(s);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let out = bp(root, &["apply", "scenarios/s.toml"]);
    done.store(true, Ordering::SeqCst);
    let answers = knocker.join().unwrap();
    sampler.join().unwrap();
    let output = text(&out);
    assert!(out.status.success(), "{output}");
    // The controller measured the site, logged in, with no error.
    let measured: Vec<Value> = crate::webapp::samples(root)
        .into_iter()
        .filter(|(_, s)| s["kind"] == "measured")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(measured.len(), 2, "{output}");
    for s in &measured {
        assert!(s["metrics"]["authenticated"].as_f64().unwrap() > 0.0, "{s}");
        assert_eq!(s["metrics"]["anonymous_non_2xx"], 0.0, "{s}");
    }
    // The other board: refused, or forbidden, never a page; and it was forbidden. A
    // connection closed with no status line (nginx stopping at the teardown as a knock
    // comes in, on a loaded machine) shows no page either: only a status other than
    // 403 is one.
    let pages: Vec<(&String, &usize)> = answers
        .iter()
        .filter(|(a, _)| a.len() == 3 && a.bytes().all(|b| b.is_ascii_digit()) && *a != "403")
        .collect();
    assert!(
        pages.is_empty(),
        "the other board got {pages:?} (all: {answers:?})"
    );
    assert!(
        answers.contains_key("403"),
        "never reached nginx: {answers:?}"
    );
    let (listening, daemons) = sampled.lock().unwrap().clone();
    assert_eq!(
        listening,
        BTreeSet::from([target.address.to_string()]),
        "listening on port {PORT}"
    );
    for what in [
        "php-fpm worker",
        "nginx worker",
        "mariadbd",
        "php-fpm master",
        "nginx master",
    ] {
        let uids: Vec<u32> = daemons
            .iter()
            .filter(|(w, _, _)| w == what)
            .map(|(_, u, _)| *u)
            .collect();
        assert!(!uids.is_empty(), "no {what} seen: {daemons:?}");
        if !what.ends_with("master") {
            assert!(!uids.contains(&0), "{what} ran as root: {daemons:?}");
        }
    }
    crate::webapp::assert_nothing_left(&lab, &target);
    // The workdir is closed to www-data again.
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&target.workdir).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o700, "{}", target.workdir);
}
