//! Running commands on boards and on the controller: the only place processes start.
//!
//! `Transport` is the seam: `local` (duct) runs on this machine, `ssh` (ssh2) on a board.
//! Callers build command strings with `quote::sh` or the template engine, which quote
//! every value; a transport runs the string with `sh -c` semantics and nothing more.

use std::fmt::Write as _;
pub mod board_lock;
pub mod capture;
pub mod connector;
pub mod fake;
pub mod guard;
pub mod labgrid;
pub mod local;
pub mod quote;
pub mod service;
pub mod side_guard;
pub mod ssh;
pub mod workdir;

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use crate::model::{Board, Connection};
pub use capture::{CAPTURE_LIMIT, Capture};
pub use connector::{Connector, RealConnector};
pub use service::Service;

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Exit {
    /// The exit code; `None` when the command was killed by a signal.
    pub code: Option<i32>,
    /// The signal's name when the command was killed by one.
    pub signal: Option<String>,
}

impl Exit {
    pub fn success(&self) -> bool {
        self.code == Some(0) && self.signal.is_none()
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.code, &self.signal) {
            (_, Some(sig)) => write!(f, "killed by signal {sig}"),
            (Some(c), None) => write!(f, "exit status {c}"),
            (None, None) => write!(f, "unknown exit"),
        }
    }
}

/// A finished command with its output held in memory, each stream bounded by
/// `CAPTURE_LIMIT`: past it, the head and the tail are kept around a marker line.
#[derive(Clone, Debug)]
pub struct Output {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Bytes of stdout left out in the middle (0 when it was kept whole).
    pub stdout_dropped: u64,
    /// Bytes of stderr left out in the middle.
    pub stderr_dropped: u64,
}

impl Output {
    pub fn stdout_str(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn stderr_str(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("{target}: cannot connect: {reason}")]
    Unreachable { target: String, reason: String },
    #[error("{target}: authentication failed: {reason}")]
    Auth { target: String, reason: String },
    /// The message names the host and fingerprints but not `known_hosts`: it goes into
    /// failure.json and reports, which hold no absolute path. The file is for the terminal.
    #[error("{target}: host key check failed: {reason}")]
    HostKey {
        target: String,
        reason: String,
        known_hosts: std::path::PathBuf,
    },
    #[error("{target}: command timed out after {after:?}: {command}")]
    Timeout {
        target: String,
        command: String,
        after: Duration,
    },
    /// `become = "sudo"` cannot run commands as root (a password is needed, or refused).
    #[error("{target}: {reason}")]
    Become { target: String, reason: String },
    #[error("{target}: connection lost: {reason}")]
    Lost { target: String, reason: String },
    #[error("{target}: {reason}")]
    Other { target: String, reason: String },
}

/// Runs shell commands somewhere and moves files there.
///
/// Implementations are used by one worker thread at a time (one session per board).
pub trait Transport: Send {
    /// A short human name for messages: `localhost`, `pi@10.0.0.3:22`.
    fn target(&self) -> String;

    /// Runs `command` with `sh -c`, streaming its stdout and stderr into the sinks.
    /// With a timeout, the command is killed when it runs longer.
    fn exec(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError>;

    /// Runs `command` like `exec`, feeding it `stdin` to its end and then EOF: the way
    /// an image is streamed into `dd` on a flasher. Input the command leaves unread
    /// (it ended early) is dropped; its exit says why. On a timeout or an interrupt the
    /// input stops and EOF is sent, which ends a command that reads its input (dd);
    /// one that ignores its input is killed with its process group. Transports that
    /// cannot feed input refuse, and nothing runs.
    fn exec_input(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdin: &mut dyn Read,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        let _ = (command, timeout, stdin, stdout, stderr);
        Err(TransportError::Other {
            target: self.target(),
            reason: "this transport cannot stream input to a command".into(),
        })
    }

    /// Copies a local file to `remote` (a path on the target).
    fn upload(&mut self, local: &Path, remote: &str) -> Result<(), TransportError>;

    /// Copies `remote` to a local file.
    fn download(&mut self, remote: &str, local: &Path) -> Result<(), TransportError>;

    /// Runs a command and collects its output in memory, each stream capped at
    /// `CAPTURE_LIMIT` (a board's `/dev/zero` must not exhaust the controller). Use
    /// `exec` with sinks of your own to take everything (downloads).
    fn run(&mut self, command: &str, timeout: Option<Duration>) -> Result<Output, TransportError> {
        let mut stdout = Capture::new(CAPTURE_LIMIT);
        let mut stderr = Capture::new(CAPTURE_LIMIT);
        let exit = self.exec(command, timeout, &mut stdout, &mut stderr)?;
        let (stdout, stdout_dropped) = stdout.finish();
        let (stderr, stderr_dropped) = stderr.finish();
        Ok(Output {
            exit,
            stdout,
            stderr,
            stdout_dropped,
            stderr_dropped,
        })
    }

    /// Starts a background service (`iperf3 -s`) in its own process group, with its
    /// pid file and log under `dir/services/` (`dir` is the board's workdir).
    fn start_service(
        &mut self,
        dir: &str,
        name: &str,
        command: &str,
    ) -> Result<Service, TransportError> {
        service::start(self, dir, name, command)
    }

    /// Stops a service's whole process group (TERM, then KILL).
    fn stop_service(&mut self, service: &Service) -> Result<(), TransportError> {
        service::stop(self, service)
    }

    /// Stops every service with a pid file under `dir/services/`: at a cell's end, after
    /// a failure, and for leftovers of a crashed run.
    fn stop_all_services(&mut self, dir: &str) -> Result<(), TransportError> {
        service::stop_all(self, dir)
    }
}

/// Counts interrupts; a command notes it when it starts and ends itself when it changes.
static INTERRUPTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `N` random bytes from the kernel's generator as hex: a token that tells one start of
/// a service, a mount or a run's output from another (not a secret).
pub fn random_hex<const N: usize>() -> String {
    let mut bytes = [0u8; N];
    // SAFETY: getrandom writes at most `len` bytes into the buffer we own.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n != bytes.len() as isize {
        // Never expected on Linux; the clock still separates starts.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
            .to_le_bytes();
        for (b, c) in bytes.iter_mut().zip(nanos.iter().cycle()) {
            *b = *c;
        }
    }
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Ends every command running now, locally and on boards (Ctrl-C): local process
/// groups get SIGTERM, SSH commands are killed on the board by their wrapper. Commands
/// started afterwards (teardown, stopping services) run normally.
pub fn interrupt() {
    INTERRUPTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    local::terminate_all();
}

/// The interrupt count now; compare it with a later reading to know whether an
/// interrupt came in between.
pub fn interrupt_epoch() -> u64 {
    INTERRUPTS.load(std::sync::atomic::Ordering::SeqCst)
}

/// Opens the transport a board's file asks for: local, or an SSH session (connected,
/// host key checked, authenticated) within `timeout`.
pub fn connect(board: &Board, timeout: Duration) -> Result<Box<dyn Transport>, TransportError> {
    match &board.connection {
        Connection::Local => Ok(Box::new(local::Local::new())),
        Connection::Ssh(target) => Ok(Box::new(ssh::SshTransport::connect(
            &board.name,
            target,
            timeout,
        )?)),
    }
}
