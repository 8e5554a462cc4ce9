//! The controller itself as a target: commands run under `sh -c` through duct.

use std::io::{Read, Write};
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

fn pump(mut from: os_pipe::PipeReader, to: &mut dyn Write) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        to.write_all(&buf[..n])?;
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
        let started = Instant::now();
        let mut timed_out = false;
        let result = std::thread::scope(|s| {
            let err_thread = s.spawn(move || {
                let mut buf = Vec::new();
                let r = pump(err_r, &mut buf);
                (buf, r)
            });
            // stdout streams into the caller's sink on this thread; stderr is collected
            // on the other and written after, so neither pipe can fill up and block.
            let waiter = s.spawn(|| {
                loop {
                    match handle.try_wait() {
                        Ok(Some(_)) => return false,
                        Ok(None) => {}
                        Err(_) => return false,
                    }
                    if let Some(t) = timeout
                        && started.elapsed() >= t
                    {
                        // SAFETY: see terminate_all.
                        unsafe {
                            libc::kill(-pgid, libc::SIGKILL);
                        }
                        return true;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            });
            let out_result = pump(out_r, stdout);
            timed_out = waiter.join().unwrap_or(false);
            let (err_buf, err_result) = err_thread.join().unwrap_or((Vec::new(), Ok(())));
            stderr.write_all(&err_buf).and(err_result).and(out_result)
        });
        LIVE_GROUPS
            .lock()
            .map(|mut g| g.retain(|&p| p != pgid))
            .ok();
        let output = handle
            .wait()
            .map_err(|e| err(format!("waiting for command: {e}")))?;
        if timed_out {
            return Err(TransportError::Timeout {
                target: "localhost".into(),
                command: command.to_string(),
                after: timeout.unwrap_or_default(),
            });
        }
        result.map_err(|e| err(format!("reading output: {e}")))?;
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
