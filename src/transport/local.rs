//! The controller itself as a target: commands run under `sh -c` through duct.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Exit, Transport, TransportError};

/// Process groups of commands running now, so that an interrupt can end them all.
static LIVE_GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Sends SIGTERM to every command the local transport is running (used on Ctrl-C).
pub fn terminate_all() {
    if let Ok(groups) = LIVE_GROUPS.lock() {
        for &pgid in groups.iter() {
            // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
            unsafe {
                libc::kill(-pgid, libc::SIGTERM);
            }
        }
    }
}

#[derive(Debug, Default)]
pub struct Local;

impl Local {
    pub fn new() -> Self {
        Local
    }
}

/// Whether the child `pid` has ended, without reaping it: while it is a zombie its pid
/// (and so its process group's id) cannot be reused, so the group can still be killed.
fn has_ended(pid: i32) -> bool {
    // SAFETY: waitid writes into the zeroed siginfo_t we own; WNOWAIT leaves the child
    // for duct to reap.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let rc = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        rc != 0 || info.si_pid() != 0
    }
}

fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory is involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGTERM => "TERM".into(),
        libc::SIGKILL => "KILL".into(),
        libc::SIGINT => "INT".into(),
        libc::SIGSEGV => "SEGV".into(),
        libc::SIGABRT => "ABRT".into(),
        libc::SIGPIPE => "PIPE".into(),
        libc::SIGHUP => "HUP".into(),
        other => format!("{other}"),
    }
}

/// How long output is still read after the command's group was killed.
const LINGER: Duration = Duration::from_secs(5);

/// Moves both pipes into their sinks on this thread (poll(2), so neither pipe can fill
/// up and block the other, and nothing is buffered here) until both close. When the
/// shell ends, the rest of its process group is killed, so a background child holding
/// a pipe open cannot keep the command alive; on timeout the whole group is. Returns
/// whether the command timed out.
fn drain(
    pgid: i32,
    command: &str,
    timeout: Option<Duration>,
    pipes: [os_pipe::PipeReader; 2],
    sinks: [&mut dyn Write; 2],
) -> Result<bool, TransportError> {
    let err = |reason: String| TransportError::Other {
        target: "localhost".into(),
        reason,
    };
    let started = Instant::now();
    let mut pipes = pipes.map(Some);
    let mut buf = vec![0u8; 64 * 1024];
    let mut ended: Option<Instant> = None;
    let mut timed_out = false;
    loop {
        if ended.is_none() && has_ended(pgid) {
            ended = Some(Instant::now());
            kill_group(pgid);
        }
        // A process that left the group (`setsid x &`) may hold a pipe open for long;
        // what it writes after the command ended is not the command's output.
        if ended.is_some_and(|at| at.elapsed() > LINGER) {
            return Ok(timed_out);
        }
        if ended.is_none()
            && !timed_out
            && let Some(t) = timeout
            && started.elapsed() >= t
        {
            timed_out = true;
            kill_group(pgid);
        }
        if pipes.iter().all(Option::is_none) {
            if ended.is_some() {
                return Ok(timed_out);
            }
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let mut fds: Vec<libc::pollfd> = pipes
            .iter()
            .flatten()
            .map(|p| libc::pollfd {
                fd: p.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: `fds` is a valid array of pollfd for the duration of the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 20) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                kill_group(pgid);
                return Err(err(format!("poll: {e}")));
            }
            continue;
        }
        for (i, slot) in pipes.iter_mut().enumerate() {
            let Some(pipe) = slot else { continue };
            let ready = fds
                .iter()
                .any(|f| f.fd == pipe.as_raw_fd() && f.revents != 0);
            if !ready {
                continue;
            }
            match pipe.read(&mut buf) {
                Ok(0) => *slot = None,
                Ok(n) => {
                    if let Err(e) = sinks[i].write_all(&buf[..n]) {
                        kill_group(pgid);
                        return Err(err(format!("writing output of `{command}`: {e}")));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    kill_group(pgid);
                    return Err(err(format!("reading output: {e}")));
                }
            }
        }
    }
}

impl Transport for Local {
    fn target(&self) -> String {
        "localhost".to_string()
    }

    fn exec(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        let err = |reason: String| TransportError::Other {
            target: "localhost".into(),
            reason,
        };
        let (out_r, out_w) = os_pipe::pipe().map_err(|e| err(format!("pipe: {e}")))?;
        let (err_r, err_w) = os_pipe::pipe().map_err(|e| err(format!("pipe: {e}")))?;
        // Its own process group, so that a timeout or interrupt ends the whole tree
        // (sh and everything it started), not just the shell.
        let expr = duct::cmd("sh", ["-c", command])
            .stdin_null()
            .stdout_file(out_w)
            .stderr_file(err_w)
            .unchecked()
            .before_spawn(|c| {
                c.process_group(0);
                Ok(())
            });
        let handle = expr
            .start()
            .map_err(|e| err(format!("cannot start sh: {e}")))?;
        // The expression holds the write ends until it is dropped; drop it so the
        // readers see EOF when the command ends.
        drop(expr);
        let pids = handle.pids();
        let pgid = pids.first().copied().unwrap_or(0) as i32;
        LIVE_GROUPS.lock().map(|mut g| g.push(pgid)).ok();
        let result = drain(pgid, command, timeout, [out_r, err_r], [stdout, stderr]);
        // Whatever the command left running in its group (`sleep 300 &`) ends with it.
        kill_group(pgid);
        LIVE_GROUPS
            .lock()
            .map(|mut g| g.retain(|&p| p != pgid))
            .ok();
        let output = handle
            .wait()
            .map_err(|e| err(format!("waiting for command: {e}")))?;
        let timed_out = result?;
        if timed_out {
            return Err(TransportError::Timeout {
                target: "localhost".into(),
                command: command.to_string(),
                after: timeout.unwrap_or_default(),
            });
        }
        use std::os::unix::process::ExitStatusExt;
        Ok(Exit {
            code: output.status.code(),
            signal: output.status.signal().map(signal_name),
        })
    }

    fn upload(&mut self, local: &Path, remote: &str) -> Result<(), TransportError> {
        std::fs::copy(local, remote)
            .map(|_| ())
            .map_err(|e| TransportError::Other {
                target: "localhost".into(),
                reason: format!("copy {} -> {remote}: {e}", local.display()),
            })
    }

    fn download(&mut self, remote: &str, local: &Path) -> Result<(), TransportError> {
        std::fs::copy(remote, local)
            .map(|_| ())
            .map_err(|e| TransportError::Other {
                target: "localhost".into(),
                reason: format!("copy {remote} -> {}: {e}", local.display()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_exit_code_stdout_and_stderr_apart() {
        let out = Local.run("echo out; echo err >&2; exit 3", None).unwrap();
        assert_eq!(out.stdout_str(), "out\n");
        assert_eq!(out.stderr_str(), "err\n");
        assert_eq!(out.exit.code, Some(3));
        assert!(!out.exit.success());
    }

    #[test]
    fn a_timeout_kills_the_whole_process_tree() {
        let t0 = Instant::now();
        let r = Local.run(
            "sleep 30 & sleep 30; echo never",
            Some(Duration::from_millis(300)),
        );
        assert!(matches!(r, Err(TransportError::Timeout { .. })), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn large_stderr_does_not_block_stdout() {
        let out = Local
            .run("head -c 3000000 /dev/zero >&2; echo done", None)
            .unwrap();
        assert_eq!(out.stderr.len(), 3_000_000);
        assert_eq!(out.stdout_str(), "done\n");
    }

    #[test]
    fn reports_a_signal_death() {
        let out = Local.run("kill -KILL $$", None).unwrap();
        assert_eq!(out.exit.signal.as_deref(), Some("KILL"));
    }
}
