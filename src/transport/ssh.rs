//! A board reached over SSH (ssh2): one session per board, strict host keys.
//!
//! Connecting, the host-key check and authentication run in libssh2's blocking mode with
//! a timeout. Commands then run in non-blocking mode with `poll(2)`, so stdout and stderr
//! are drained together (no window deadlock), keepalives go out during silent commands,
//! and a dead connection is noticed within the board's timeout.
//!
//! Every command runs under /bin/sh whatever the user's login shell (csh, fish), in a
//! small remote wrapper (`wrapper.rs`) that runs it in a process group of its own, and a
//! watcher there that kills that group when the command ends, and when the channel's
//! stdin closes: on a timeout (we send EOF), when the connection drops, or when sshd
//! dies. So nothing a remote command starts in its group outlives it. What the wrapper
//! needs to know about the board (the session's anchor, whether the login shell quotes
//! as sh does) is learnt once per session, on its first command.

#[doc(hidden)]
pub mod bench;
mod channel;
pub mod config;
mod connect;
pub mod hostkey;
mod input;
mod jump;
mod sudo;
#[cfg(test)]
mod tests;
mod transfer;
mod trust;
pub mod words;
mod wrapper;

pub use trust::{Accept, Trusted, offered_verdict, scan_host_key, trust, trust_with};
pub use wrapper::login_shell_neutral;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ssh2::Session;

use super::{Exit, Transport, TransportError};
use crate::model::{BoardName, SshTarget};
use channel::Stop;
use config::{SshConfig, expand_tilde};
use connect::{authenticate, handshake, resolve, tcp_connect, verify_host_key};
use hostkey::HostKey;

/// How long connecting may take when the board file sets no `connect_timeout`.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Settings a caller rarely changes; tests inject their own ssh_config path.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// The ssh_config file to resolve `Host` aliases from; `None` means `~/.ssh/config`.
    pub ssh_config: Option<PathBuf>,
    /// How often a keepalive is sent while a command is silent.
    pub keepalive: Duration,
    /// Try the ssh-agent and `~/.ssh/id_*` when the board file names no identity.
    pub use_agent_and_default_keys: bool,
    /// The ciphers to offer, in order (OpenSSH names, comma-separated); `None` means
    /// the built-in preference. Tests use it to check every cipher round-trips.
    pub ciphers: Option<String>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            ssh_config: None,
            keepalive: Duration::from_secs(5),
            use_agent_and_default_keys: true,
            ciphers: None,
        }
    }
}

/// Where and as whom to connect, after `~/.ssh/config` and defaults are applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub host: String,
    pub port: u16,
    pub user: String,
    /// Key files to offer, in order; the board file's own comes first.
    pub identities: Vec<PathBuf>,
    pub known_hosts: PathBuf,
    /// The host key the board file pins; known_hosts is not consulted then.
    pub host_key: Option<HostKey>,
    /// The jump host to go through (board file first, then ~/.ssh/config).
    pub proxy_jump: Option<String>,
}

impl Resolved {
    /// Applies the board file over the ssh_config file over OpenSSH's defaults.
    pub fn new(target: &SshTarget, ssh_config: &SshConfig) -> Resolved {
        let from_config = ssh_config.resolve(&target.host);
        let mut identities = Vec::new();
        if let Some(id) = &target.identity {
            identities.push(expand_tilde(&id.to_string_lossy()));
        }
        identities.extend(from_config.identity_files);
        let known_hosts = match &target.known_hosts {
            Some(p) => expand_tilde(&p.to_string_lossy()),
            None => config::home_dir()
                .unwrap_or_else(|| PathBuf::from("/"))
                .join(".ssh/known_hosts"),
        };
        Resolved {
            host: from_config.hostname.unwrap_or_else(|| target.host.clone()),
            port: target.port.or(from_config.port).unwrap_or(22),
            user: target
                .user
                .clone()
                .or(from_config.user)
                .unwrap_or_else(config::local_user),
            identities,
            known_hosts,
            proxy_jump: target
                .proxy_jump
                .clone()
                .or(from_config.proxy_jump)
                .filter(|j| !j.eq_ignore_ascii_case("none")),
            // `check` refused a key that does not parse.
            host_key: target
                .host_key
                .as_deref()
                .and_then(|k| HostKey::parse(k).ok()),
        }
    }

    fn address(&self) -> String {
        format!("{}@{}:{}", self.user, self.host, self.port)
    }
}

/// A live session and a second handle on its socket, for `poll` and `shutdown`.
struct Conn {
    session: Session,
    socket: TcpStream,
    last_inbound: Instant,
    /// What its commands need to know about the board, learnt on its first command.
    facts: Option<wrapper::SessionFacts>,
    /// Waits in a row without progress. libssh2 can hold already-received packets in its
    /// own buffer, where `poll` cannot see them, so waits start at half a millisecond and
    /// grow only while nothing happens.
    idle_polls: u32,
}

impl Conn {
    /// The board was heard from: bytes arrived, or it took bytes of ours (its window
    /// opened again). Silence counts from now, and polls start short again.
    fn heard(&mut self) {
        self.last_inbound = Instant::now();
        self.idle_polls = 0;
    }

    /// A request is about to go out: silence counts from it, not from the last time
    /// the board was heard. A session left idle heard nothing because nothing was
    /// asked, and judged by that it would be taken for dead.
    fn asking(&mut self) {
        self.heard();
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Never block on a dying peer while libssh2 frees the session.
        self.session.set_blocking(false);
        let _ = self.socket.shutdown(std::net::Shutdown::Both);
    }
}

/// Commands on one board over one reused SSH session.
pub struct SshTransport {
    board: BoardName,
    target: SshTarget,
    resolved: Resolved,
    options: ConnectOptions,
    /// How long a silent connection may go unanswered.
    timeout: Duration,
    /// Bounds the TCP connect, the handshake and authentication.
    connect_timeout: Duration,
    conn: Option<Conn>,
    /// How sudo runs, once asked (`become = "sudo"` only); kept across reconnects.
    sudo: Option<sudo::Sudo>,
}

impl SshTransport {
    /// Connects, checks the host key strictly and authenticates, all within `timeout`.
    pub fn connect(
        board: &BoardName,
        target: &SshTarget,
        timeout: Duration,
    ) -> Result<SshTransport, TransportError> {
        Self::connect_with(board, target, timeout, ConnectOptions::default())
    }

    pub fn connect_with(
        board: &BoardName,
        target: &SshTarget,
        timeout: Duration,
        options: ConnectOptions,
    ) -> Result<SshTransport, TransportError> {
        let mut t = Self::new(board, target, timeout, options)?;
        t.conn = Some(t.open()?);
        t.probe_sudo()?;
        Ok(t)
    }

    /// Resolves the target but does not connect yet; the first command connects.
    pub fn new(
        board: &BoardName,
        target: &SshTarget,
        timeout: Duration,
        options: ConnectOptions,
    ) -> Result<SshTransport, TransportError> {
        let resolved = resolve(board, target, &options)?;
        let mut options = options;
        if let Some(k) = target.keepalive {
            options.keepalive = k;
        }
        Ok(SshTransport {
            board: board.clone(),
            target: target.clone(),
            resolved,
            options,
            timeout,
            connect_timeout: target
                .connect_timeout
                .unwrap_or(timeout.min(DEFAULT_CONNECT_TIMEOUT)),
            conn: None,
            sudo: None,
        })
    }

    pub fn resolved(&self) -> &Resolved {
        &self.resolved
    }

    pub fn ssh_target(&self) -> &SshTarget {
        &self.target
    }

    /// The cipher negotiated for data we send, while connected (for benchmarks and logs).
    pub fn cipher(&self) -> Option<String> {
        let conn = self.conn.as_ref()?;
        conn.session
            .methods(ssh2::MethodType::CryptCs)
            .map(str::to_string)
    }

    /// Drops the session; the next command reconnects.
    pub fn disconnect(&mut self) {
        self.conn = None;
    }

    /// Waits until the board accepts SSH again (after a reboot): retries with backoff
    /// until `timeout`, then proves the session with `true`.
    pub fn wait_for_ssh(&mut self, timeout: Duration) -> Result<(), TransportError> {
        self.conn = None;
        let deadline = Instant::now() + timeout;
        let mut delay = Duration::from_millis(200);
        loop {
            let attempt = self.open().and_then(|c| {
                self.conn = Some(c);
                let out = self.run("true", Some(self.timeout))?;
                if out.exit.success() {
                    Ok(())
                } else {
                    Err(self.other(format!("`true` ended with {}", out.exit)))
                }
            });
            match attempt {
                Ok(()) => return Ok(()),
                // A wrong key or credentials will not heal by waiting.
                Err(e @ (TransportError::Auth { .. } | TransportError::HostKey { .. })) => {
                    return Err(e);
                }
                Err(e) => {
                    self.conn = None;
                    if Instant::now() + delay >= deadline {
                        return Err(TransportError::Unreachable {
                            target: self.board.to_string(),
                            reason: format!(
                                "{} did not accept SSH within {timeout:?}; last error: {e}",
                                self.resolved.address()
                            ),
                        });
                    }
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    fn other(&self, reason: String) -> TransportError {
        TransportError::Other {
            target: self.board.to_string(),
            reason,
        }
    }

    fn lost(&mut self, stop: &Stop) -> TransportError {
        self.conn = None;
        TransportError::Lost {
            target: self.board.to_string(),
            reason: format!("{}: {}", self.resolved.address(), stop.describe()),
        }
    }

    fn open(&self) -> Result<Conn, TransportError> {
        let started = Instant::now();
        let stream = self.stream()?;
        let (session, socket) = handshake(
            &self.board,
            &self.resolved,
            stream,
            started,
            self.connect_timeout,
            self.options.ciphers.as_deref(),
            self.resolved.host_key.as_ref(),
        )?;
        let key = HostKey::from_session(&session).ok_or_else(|| TransportError::HostKey {
            target: self.board.to_string(),
            reason: format!("{} sent no host key", self.resolved.address()),
            known_hosts: self.resolved.known_hosts.clone(),
        })?;
        verify_host_key(&self.board, &self.resolved, &session, &key)?;
        authenticate(
            &self.board,
            &self.target,
            &self.resolved,
            &self.options,
            &session,
        )?;
        session.set_keepalive(true, self.options.keepalive.as_secs().max(1) as u32);
        session.set_blocking(false);
        Ok(Conn {
            session,
            socket,
            last_inbound: Instant::now(),
            facts: None,
            idle_polls: 0,
        })
    }

    /// A TCP stream to the board's SSH port: direct, or through the jump host.
    pub(super) fn stream(&self) -> Result<TcpStream, TransportError> {
        match &self.resolved.proxy_jump {
            Some(jump) => jump::via(self, jump),
            None => tcp_connect(&self.board, &self.resolved, self.connect_timeout),
        }
    }

    /// Reconnects after a drop, retrying with backoff within the timeout.
    fn ensure_connected(&mut self) -> Result<(), TransportError> {
        if self.conn.is_some() {
            return Ok(());
        }
        let deadline = Instant::now() + self.timeout;
        let mut delay = Duration::from_millis(100);
        loop {
            match self.open() {
                Ok(c) => {
                    self.conn = Some(c);
                    return self.probe_sudo();
                }
                Err(e @ TransportError::Unreachable { .. })
                    if Instant::now() + delay < deadline =>
                {
                    let _ = e;
                    std::thread::sleep(delay);
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Transport for SshTransport {
    fn target(&self) -> String {
        self.board.to_string()
    }

    fn exec(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        let mut channel = self.start_with(&|anchor| wrapper::script(command, anchor), true)?;
        self.drain(&mut channel, command, timeout, stdout, stderr)
    }

    fn exec_input(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdin: &mut dyn Read,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        self.exec_with_input(command, timeout, stdin, stdout, stderr)
    }

    fn upload(&mut self, local: &Path, remote: &str) -> Result<(), TransportError> {
        self.upload_with_progress(local, remote, &mut |_, _| {})
    }

    fn download(&mut self, remote: &str, local: &Path) -> Result<(), TransportError> {
        self.download_with_progress(remote, local, &mut |_| {})
    }
}
