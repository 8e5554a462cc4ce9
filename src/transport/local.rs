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
            &raw mut info,
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

/// This process's anchor for guards (`guard::local_anchor`), read once.
fn local_anchor() -> &'static str {
    static ANCHOR: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ANCHOR.get_or_init(super::guard::local_anchor)
}

/// How long output is still read after the command's group was killed.
const LINGER: Duration = Duration::from_secs(5);

/// Moves both pipes into their sinks on this thread (poll(2), so neither pipe can fill
/// up and block the other, and nothing is buffered here) until both close. When the
/// shell ends, the rest of its process group is killed, so a background child holding
/// a pipe open cannot keep the command alive; on timeout the whole group is. Returns
/// whether the command timed out.
/// Input being fed to a command's stdin: the pipe's write end (non-blocking) and what
/// is read but not yet written.
struct Feed<'a> {
    pipe: os_pipe::PipeWriter,
    source: &'a mut dyn Read,
    pending: Vec<u8>,
    at: usize,
}

impl Feed<'_> {
    /// Moves what the pipe takes now; `Ok(false)` once the input is all written (or the
    /// command closed its stdin), when the pipe is to be closed.
    fn pump(&mut self) -> std::io::Result<bool> {
        // Bounded, so that a fast reader cannot keep the caller from its timeout.
        for _ in 0..16 {
            if self.at == self.pending.len() {
                self.pending.resize(FEED_CHUNK, 0);
                let n = loop {
                    match self.source.read(&mut self.pending) {
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        r => break r?,
                    }
                };
                self.pending.truncate(n);
                self.at = 0;
                if n == 0 {
                    return Ok(false);
                }
            }
            match self.pipe.write(&self.pending[self.at..]) {
                Ok(n) => self.at += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // The command closed its stdin (or ended): the rest is not wanted.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }
}

const FEED_CHUNK: usize = 1 << 20;

fn drain(
    pgid: i32,
    command: &str,
    timeout: Option<Duration>,
    pipes: [os_pipe::PipeReader; 2],
    sinks: &mut [&mut dyn Write; 2],
    mut feed: Option<Feed<'_>>,
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
            feed = None;
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
            feed = None;
        }
        if pipes.iter().all(Option::is_none) && feed.is_none() {
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
        if let Some(f) = &feed {
            fds.push(libc::pollfd {
                fd: f.pipe.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            });
        }
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
        if let Some(f) = &mut feed {
            let ready = fds
                .iter()
                .any(|p| p.fd == f.pipe.as_raw_fd() && p.revents != 0);
            if ready {
                match f.pump() {
                    Ok(true) => {}
                    // Dropping the write end is the command's EOF.
                    Ok(false) => feed = None,
                    Err(e) => {
                        kill_group(pgid);
                        return Err(err(format!("feeding the input of `{command}`: {e}")));
                    }
                }
            }
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
        run_local(command, timeout, None, stdout, stderr)
    }

    fn exec_input(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdin: &mut dyn Read,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        run_local(command, timeout, Some(stdin), stdout, stderr)
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

/// The shell every local command runs under: a watcher in the command's process group
/// reads fd 3 (the read end of a pipe whose write end only benchpipe holds) and, at its
/// end of file, when benchpipe has ended without ending the command (kill -9), kills
/// the group; then `$1` runs as `sh -c` would run it, without fd 3. A command that
/// ends normally has its group, the watcher with it, killed by `drain`.
const WATCHED: &str = r#"{ while read -r _ <&3; do :; done; kill -s KILL 0; } </dev/null >/dev/null 2>&1 &
exec 3<&-
exec sh -c "$1""#;

/// In the child before exec: the watch pipe's read end `fd` as fd 3, open across exec.
fn watch_on_fd_3(fd: i32) -> std::io::Result<()> {
    // SAFETY: dup2 and fcntl on descriptors of this (forked) process; no memory involved.
    let rc = unsafe {
        if fd == 3 {
            let flags = libc::fcntl(3, libc::F_GETFD);
            libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC)
        } else {
            libc::dup2(fd, 3)
        }
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `command` under `sh -c` in its own process group, with stdin from `input` (or
/// /dev/null), draining its output into the sinks.
fn run_local(
    command: &str,
    timeout: Option<Duration>,
    input: Option<&mut dyn Read>,
    stdout: &mut dyn Write,
    stderr: &mut dyn Write,
) -> Result<Exit, TransportError> {
    use std::os::unix::process::ExitStatusExt;
    let err = |reason: String| TransportError::Other {
        target: "localhost".into(),
        reason,
    };
    let (out_r, out_w) = os_pipe::pipe().map_err(|e| err(format!("pipe: {e}")))?;
    let (err_r, err_w) = os_pipe::pipe().map_err(|e| err(format!("pipe: {e}")))?;
    let (feed, stdin_r) = match input {
        Some(source) => {
            let (r, w) = os_pipe::pipe().map_err(|e| err(format!("pipe: {e}")))?;
            // SAFETY: fcntl on a pipe fd we own; a bigger pipe means fewer wake-ups
            // when streaming images (failure leaves the default size, which works).
            unsafe {
                libc::fcntl(w.as_raw_fd(), libc::F_SETPIPE_SZ, FEED_CHUNK as libc::c_int);
                let flags = libc::fcntl(w.as_raw_fd(), libc::F_GETFL);
                libc::fcntl(w.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
            }
            let feed = Feed {
                pipe: w,
                source,
                pending: Vec::new(),
                at: 0,
            };
            (Some(feed), Some(r))
        }
        None => (None, None),
    };
    // The group ends with benchpipe however benchpipe ends (kill -9 too): its watcher
    // reads fd 3, a pipe whose only writer is this process, and kills the group at its
    // end of file (`WATCHED`).
    let (watch_r, watch_w) = os_pipe::pipe().map_err(|e| err(format!("pipe: {e}")))?;
    let watch_fd = watch_r.as_raw_fd();
    // Its own process group, so that a timeout or interrupt ends the whole tree
    // (sh and everything it started), not just the shell.
    let base = duct::cmd("sh", ["-c", WATCHED, "sh", command])
        .env(super::guard::ANCHOR_ENV, local_anchor());
    let base = match stdin_r {
        Some(r) => base.stdin_file(r),
        None => base.stdin_null(),
    };
    let expr = base
        .stdout_file(out_w)
        .stderr_file(err_w)
        .unchecked()
        .before_spawn(move |c| {
            c.process_group(0);
            // SAFETY: between fork and exec only dup2 and fcntl run, both
            // async-signal-safe, on a descriptor this process holds open until the spawn.
            unsafe {
                c.pre_exec(move || watch_on_fd_3(watch_fd));
            }
            Ok(())
        });
    let handle = expr
        .start()
        .map_err(|e| err(format!("cannot start sh: {e}")))?;
    drop(watch_r);
    // The expression holds the write ends until it is dropped; drop it so the
    // readers see EOF when the command ends.
    drop(expr);
    let pids = handle.pids();
    let pgid = pids.first().copied().unwrap_or(0) as i32;
    LIVE_GROUPS.lock().map(|mut g| g.push(pgid)).ok();
    let result = drain(
        pgid,
        command,
        timeout,
        [out_r, err_r],
        &mut [stdout, stderr],
        feed,
    );
    // Whatever the command left running in its group (`sleep 300 &`) ends with it.
    kill_group(pgid);
    LIVE_GROUPS
        .lock()
        .map(|mut g| g.retain(|&p| p != pgid))
        .ok();
    let output = handle
        .wait()
        .map_err(|e| err(format!("waiting for command: {e}")))?;
    drop(watch_w);
    let timed_out = result?;
    if timed_out {
        return Err(TransportError::Timeout {
            target: "localhost".into(),
            command: command.to_string(),
            after: timeout.unwrap_or_default(),
        });
    }
    Ok(Exit {
        code: output.status.code(),
        signal: output.status.signal().map(signal_name),
    })
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
    fn exec_input_streams_stdin_to_its_end_then_eof() {
        let data: Vec<u8> = (0..5_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let exit = Local
            .exec_input(
                "wc -c; echo done >&2",
                None,
                &mut data.as_slice(),
                &mut out,
                &mut err,
            )
            .unwrap();
        assert!(exit.success());
        assert_eq!(String::from_utf8_lossy(&out).trim(), "5000000");
        assert_eq!(err, b"done\n");
    }

    #[test]
    fn exec_input_stops_feeding_a_command_that_ended_early() {
        let mut endless = std::io::repeat(7u8);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let exit = Local
            .exec_input(
                "head -c 10 >/dev/null; exit 4",
                None,
                &mut endless,
                &mut out,
                &mut err,
            )
            .unwrap();
        assert_eq!(exit.code, Some(4));
    }

    #[test]
    fn exec_input_times_out_on_endless_input() {
        let mut endless = std::io::repeat(0u8);
        let r = Local.exec_input(
            "cat >/dev/null",
            Some(Duration::from_millis(300)),
            &mut endless,
            &mut Vec::new(),
            &mut Vec::new(),
        );
        assert!(matches!(r, Err(TransportError::Timeout { .. })), "{r:?}");
    }

    #[test]
    fn reports_a_signal_death() {
        let out = Local.run("kill -KILL $$", None).unwrap();
        assert_eq!(out.exit.signal.as_deref(), Some("KILL"));
    }
}
