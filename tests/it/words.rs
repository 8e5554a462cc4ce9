//! Integration tests: errors in words (issue 39). What `boards check` says, run as the
//! real binary: a transport error as what happened, its likely cause and what to try,
//! never libssh2's raw `[Session(-43)] Failed getting banner`.

use std::io::Read;
use std::net::TcpListener;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A workspace under the system temp dir, removed on drop.
struct Ws(PathBuf);

impl Ws {
    fn new(tag: &str) -> Ws {
        let d = std::env::temp_dir().join(format!("bp-words-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("boards")).unwrap();
        Ws(d)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.0.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn bp(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(args)
            .current_dir(&self.0)
            .env("HOME", &self.0)
            .env_remove("SSH_AUTH_SOCK")
            .output()
            .unwrap()
    }
}

impl Drop for Ws {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
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
                                (&linger as *const libc::linger).cast(),
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
