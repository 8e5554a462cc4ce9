//! Integration tests: errors in words (issue 39). What `boards check` says, run as the
//! real binary: a transport error as what happened, its likely cause and what to try,
//! never libssh2's raw `[Session(-43)] Failed getting banner`; and what apply will do for
//! a missing tool, from the same decision provisioning takes.

use crate::scratch::Scratch;
use std::io::Read;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::cannot_run;
use crate::repo;

/// A workspace whose HOME is itself (no ssh-agent): `benchpipe` run there sees no
/// user's keys or configuration.
struct Ws(Scratch);

impl Ws {
    fn new(tag: &str) -> Ws {
        let d = Scratch::new(&format!("words-{tag}"));
        std::fs::create_dir_all(d.join("boards")).unwrap();
        Ws(d)
    }

    fn write(&self, rel: &str, text: &str) {
        self.0.write(rel, text);
    }

    fn bp(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(crate::scripted(args))
            .current_dir(&self.0)
            .env("HOME", &self.0)
            .env_remove("SSH_AUTH_SOCK")
            .output()
            .unwrap()
    }
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A port that takes TCP connections and resets each at once, before any SSH banner
/// (as sshd does past MaxStartups, or a board still bringing sshd up): libssh2's
/// "[Session(-43)] Failed getting banner". Serves until dropped.
struct Resetter {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Resetter {
    fn new() -> Resetter {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        // Wait for the client's banner, so that its receive is what
                        // meets the reset (an RST with data unread, SO_LINGER 0).
                        let _ = s.set_nonblocking(false);
                        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                        let _ = s.read(&mut [0u8; 64]);
                        let linger = libc::linger {
                            l_onoff: 1,
                            l_linger: 0,
                        };
                        // SAFETY: a valid socket and a linger struct of the size given.
                        unsafe {
                            libc::setsockopt(
                                s.as_raw_fd(),
                                libc::SOL_SOCKET,
                                libc::SO_LINGER,
                                (&raw const linger).cast(),
                                std::mem::size_of::<libc::linger>() as libc::socklen_t,
                            );
                        }
                        drop(s);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Resetter {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Resetter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `boards check` of a board whose SSH port resets the connection before the banner:
/// its line said `[Session(-43)] Failed getting banner`; it says what happened, the
/// likely causes and what to try.
#[test]
fn boards_check_says_in_words_why_a_board_closed_before_its_ssh_banner() {
    let server = Resetter::new();
    let ws = Ws::new("banner");
    let kh = ws.0.join("known_hosts");
    std::fs::write(&kh, "").unwrap();
    ws.write(
        "boards/early.toml",
        &format!(
            "model = \"a board still booting\"\n\n[ssh]\nhost = \"127.0.0.1\"\nport = {}\n\
             user = \"root\"\nknown_hosts = \"{}\"\nconnect_timeout = \"10s\"\n",
            server.port,
            kh.display()
        ),
    );
    let out = ws.bp(&["boards", "check", "early"]);
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(line.starts_with("early  FAIL  unreachable"), "{said}");
    assert!(
        line.contains("the connection was closed before the SSH server greeted us"),
        "{said}"
    );
    assert!(line.contains("still booting"), "{said}");
    assert!(line.contains("journalctl -u ssh"), "{said}");
    assert!(
        !said.contains("[Session(") && !said.contains("Failed getting banner"),
        "{said}"
    );
}

/// A recipe needing `command`, from `needs` (a `[needs]` table's lines).
fn recipe(command: &str, needs: &str) -> String {
    format!(
        "description = \"needs {command}\"\n[needs]\ncommands = [\"{command}\"]\n{needs}\n\
         [run]\non = \"board\"\ncommand = \"{command}\"\nparse = \"time\"\n\
         [metrics]\nreal = {{ from = \"real\", unit = \"s\", better = \"lower\" }}\n"
    )
}

/// `boards check` said of every missing tool "apply installs them with apt-get", also of
/// iozone on a Debian board, whose iozone3 is outside main: apply reads it from non-free
/// through private lists. It now says, per tool, what provisioning's own decision is:
/// the same `route` apply takes. The board is this machine (root, apt), asked only
/// read-only questions; the tools are names no system has.
#[test]
fn boards_check_says_what_apply_does_for_each_missing_tool() {
    let os = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
    let apt = Command::new("sh")
        .args(["-c", "command -v apt-cache && apt-cache show xz-utils"])
        .output()
        .is_ok_and(|o| o.status.success());
    // SAFETY: geteuid has no preconditions.
    if !apt || unsafe { libc::geteuid() } != 0 {
        return cannot_run(
            "words::boards_check_says_what_apply_does_for_each_missing_tool",
            "the controller stands for a Debian board: it needs apt with xz-utils listed, and root",
        );
    }
    let ws = Ws::new("routes");
    ws.write(
        "boards/here.toml",
        &std::fs::read_to_string(repo().join("boards/localhost.toml")).unwrap(),
    );
    ws.write(
        "pipeline/outside-main.toml",
        &recipe(
            "bp-words-absent-1",
            "apt = [\"bp-words-absent-package\"]\napt_non_free = [\"bp-words-absent-package\"]",
        ),
    );
    ws.write(
        "pipeline/in-main.toml",
        &recipe("bp-words-absent-2", "apt = [\"xz-utils\"]"),
    );
    ws.write(
        "pipeline/alpine-only.toml",
        &recipe("bp-words-absent-3", "apk = [\"bp-words-absent-package\"]"),
    );
    let out = ws.bp(&["boards", "check", "here"]);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(
            "bp-words-absent-1 (outside-main): apply installs bp-words-absent-package from "
        ),
        "{said}"
    );
    assert!(
        said.contains("which the board's apt sources lack: read from its own mirror through private lists, /etc/apt left as it is"),
        "{said}"
    );
    let component = if os.contains("ubuntu") {
        "multiverse"
    } else {
        "non-free"
    };
    assert!(
        said.contains(&format!("bp-words-absent-package from {component},")),
        "{said}"
    );
    assert!(
        said.contains("bp-words-absent-2 (in-main): apply runs `apt-get install xz-utils`"),
        "{said}"
    );
    assert!(
        said.contains("bp-words-absent-3 (alpine-only): the recipe names no apt package for it: apply skips its cells"),
        "{said}"
    );
    assert!(!said.contains("installs them with apt-get"), "{said}");
}
