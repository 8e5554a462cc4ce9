//! `become = "sudo"`: every command on the board runs as root through sudo, never
//! interactively. Whether sudo needs a password is asked once per transport; when it
//! does, the password comes from the environment variable `sudo_password_env` names
//! and goes to sudo on the channel's stdin, never on a command line, in a log or a file.
//!
//! All board commands go through sudo, not a chosen few: mkfs, mount, apt-get, the
//! telemetry sampler and services must run as the same user that owns the workdir
//! and the pid files, as they would over a root login.

use std::io::Write;
use std::time::{Duration, Instant};

use super::SshTransport;
use crate::transport::{Transport, TransportError, quote};

/// How sudo runs on this board, once asked.
#[derive(Clone)]
pub(super) enum Sudo {
    /// NOPASSWD (or still-valid credentials that `-n` accepted).
    NoPassword,
    /// sudo reads this from stdin (`-S`) before the command sees its stdin.
    Password(Secret),
}

/// A password that never shows in `Debug` output.
#[derive(Clone)]
pub(super) struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl Sudo {
    /// The exec request for `command` (already a /bin/sh command line) under sudo.
    /// `-k` makes sudo ask for the password every time, so that the password line is
    /// always read by sudo and never reaches the command's stdin.
    pub(super) fn request(&self, command: &str) -> String {
        match self {
            Sudo::NoPassword => format!("exec sudo -n -- /bin/sh -c {}", quote::sh(command)),
            Sudo::Password(_) => {
                format!("exec sudo -S -k -p '' -- /bin/sh -c {}", quote::sh(command))
            }
        }
    }

    /// What goes to the channel's stdin first.
    pub(super) fn stdin_prefix(&self) -> Option<Vec<u8>> {
        match self {
            Sudo::NoPassword => None,
            Sudo::Password(Secret(p)) => Some(format!("{p}\n").into_bytes()),
        }
    }
}

impl SshTransport {
    /// Finds out, once, how sudo runs for the login user, with sudo not yet in force.
    pub(super) fn probe_sudo(&mut self) -> Result<(), TransportError> {
        if !self.target.become_sudo || self.sudo.is_some() {
            return Ok(());
        }
        let quick = Some(self.timeout.max(Duration::from_secs(10)));
        let out = self.run("sudo -n true", quick)?;
        if out.exit.success() {
            self.sudo = Some(Sudo::NoPassword);
            return Ok(());
        }
        let stderr = out.stderr_str();
        let board = self.board.to_string();
        let fail = |reason: String| TransportError::Become {
            target: board.clone(),
            reason,
        };
        if out.exit.code == Some(127) {
            return Err(fail(format!(
                "become = \"sudo\", but {} has no sudo: {}",
                self.board,
                stderr.trim()
            )));
        }
        if !stderr.contains("password") {
            return Err(fail(format!(
                "sudo refused {} on {}: {}",
                self.resolved.user,
                self.board,
                stderr.trim()
            )));
        }
        let Some(var) = self.target.sudo_password_env.clone() else {
            return Err(fail(format!(
                "sudo needs a password on {}; set sudo_password_env or allow NOPASSWD",
                self.board
            )));
        };
        let Ok(password) = std::env::var(&var) else {
            return Err(fail(format!(
                "sudo needs a password on {}, and the environment variable {var} \
                 (sudo_password_env) is not set",
                self.board
            )));
        };
        self.sudo = Some(Sudo::Password(Secret(password)));
        let proof = self.prove_root(quick);
        match proof {
            Ok((true, _)) => Ok(()),
            other => {
                self.sudo = None;
                let why = match other {
                    Ok((_, stderr)) => stderr,
                    Err(e) => e.to_string(),
                };
                Err(fail(format!(
                    "sudo on {} did not accept the password from ${var}: {why}",
                    self.board
                )))
            }
        }
    }

    /// Runs `id -u` through sudo with stdin closed after the password, so that a wrong
    /// password ends sudo at once instead of leaving it waiting for another try.
    fn prove_root(&mut self, timeout: Option<Duration>) -> Result<(bool, String), TransportError> {
        let mut channel = self.start("id -u")?;
        let deadline = Some(Instant::now() + self.timeout.max(Duration::from_secs(10)));
        if let Err(stop) = self.retry(deadline, |_| channel.send_eof()) {
            return Err(self.lost(&stop));
        }
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let exit = self.drain(&mut channel, "id -u", timeout, &mut out, &mut err)?;
        let root = exit.success() && String::from_utf8_lossy(&out).trim() == "0";
        Ok((root, String::from_utf8_lossy(&err).trim().to_string()))
    }

    /// Feeds sudo its password on a channel just started, before anything else.
    pub(super) fn feed_sudo(&mut self, channel: &mut ssh2::Channel) -> Result<(), TransportError> {
        let Some(line) = self.sudo.as_ref().and_then(Sudo::stdin_prefix) else {
            return Ok(());
        };
        let deadline = Some(Instant::now() + self.timeout.max(Duration::from_secs(10)));
        let mut off = 0;
        while off < line.len() {
            match channel.write(&line[off..]) {
                Ok(n) => off += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Err(stop) = self.wait(deadline) {
                        return Err(self.lost(&stop));
                    }
                }
                Err(e) => {
                    return Err(self.other(format!(
                        "sudo: writing its password: {}",
                        super::words::channel_io_error(&e)
                    )));
                }
            }
        }
        Ok(())
    }
}
