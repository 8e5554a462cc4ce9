//! A board reached over SSH (ssh2): one session per board, strict host keys.
//!
//! Connecting, the host-key check and authentication run in libssh2's blocking mode with
//! a timeout. Commands then run in non-blocking mode with `poll(2)`, so stdout and stderr
//! are drained together (no window deadlock), keepalives go out during silent commands,
//! and a dead connection is noticed within the board's timeout.
//!
//! Every command runs under /bin/sh whatever the user's login shell (csh, fish), in a
//! small remote wrapper that puts it in its own process group and kills that group when
//! the command ends, and when the channel's stdin closes: on a timeout (we send EOF), when
//! the connection drops, or when sshd dies. So nothing a remote command starts in its
//! group outlives it.

pub mod config;
pub mod hostkey;
mod input;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ssh2::{Channel, ErrorCode, Session};

use super::{Exit, Transport, TransportError, quote};
use crate::model::{BoardName, SshTarget};
use config::{SshConfig, expand_tilde};
use hostkey::{HostKey, Verdict};

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
    /// Waits in a row without progress. libssh2 can hold already-received packets in its
    /// own buffer, where `poll` cannot see them, so waits start at half a millisecond and
    /// grow only while nothing happens.
    idle_polls: u32,
}

impl Conn {
    fn progressed(&mut self) {
        self.last_inbound = Instant::now();
        self.idle_polls = 0;
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
    /// Bounds connecting, and how long a silent connection may go unanswered.
    timeout: Duration,
    conn: Option<Conn>,
}

/// Why a non-blocking step stopped.
enum Stop {
    Deadline,
    Ssh(ssh2::Error),
    Io(std::io::Error),
    /// Nothing came back from the server for too long (keepalives unanswered).
    Silent,
}

impl Stop {
    fn describe(&self) -> String {
        match self {
            Stop::Deadline => "timed out".into(),
            Stop::Ssh(e) => e.to_string(),
            Stop::Io(e) => e.to_string(),
            Stop::Silent => "the server stopped answering keepalives".into(),
        }
    }
}

fn would_block(e: &ssh2::Error) -> bool {
    e.code() == ErrorCode::Session(-37)
}

/// Milliseconds since the kernel last received data on this TCP socket.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn ms_since_last_receive(socket: &TcpStream) -> Option<u32> {
    // SAFETY: tcp_info is plain data; getsockopt writes at most `len` bytes into it.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        let rc = libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        );
        (rc == 0).then_some(info.tcpi_last_data_recv)
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn ms_since_last_receive(_socket: &TcpStream) -> Option<u32> {
    None
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

/// The remote side of every command: see the module comment. `$1` is the command.
/// When the command ends, the rest of its process group (`sleep 300 &`) is killed too,
/// as on a timeout: nothing it started outlives it, and a child holding stdout open
/// cannot keep the channel open. (The group id is free for reuse only once every
/// member is gone, so the kill right after `wait` cannot reach another group.)
/// A command killed by a signal makes the wrapper kill itself with the same signal, so
/// that sshd reports the signal as it would without the wrapper.
const WRAPPER: &str = r#"exec 3<&0
setsid /bin/sh -c "$1" </dev/null &
pid=$!
{ while read -r _ <&3; do :; done; kill -s KILL -- -$pid 2>/dev/null; } &
watch=$!
wait $pid
rc=$?
kill -s KILL -- -$pid 2>/dev/null
kill $watch 2>/dev/null
if [ $rc -gt 128 ] && [ $rc -lt 160 ]; then kill -$((rc - 128)) $$; fi
exit $rc"#;

fn wrap(command: &str) -> String {
    format!(
        "exec /bin/sh -c {} benchpipe {}",
        quote::sh(WRAPPER),
        quote::sh(command)
    )
}

/// The exec request's text, for whatever login shell the board's user has.
///
/// sshd hands the request to the user's login shell (`$SHELL -c`), which may be csh or
/// fish: newlines, `!`, `'` or `\` mean different things there. So the login shell only
/// ever sees `exec /bin/sh -c '<decoder>' benchpipe '<chunk>'...`, where each chunk is
/// `script` with every byte outside a small safe set written as a printf octal escape
/// (`\012`), and the decoder in /bin/sh turns the chunks back into `script` and runs it.
/// Chunks stay short because csh refuses long words.
pub fn login_shell_neutral(script: &str) -> String {
    const CHUNK: usize = 900;
    let safe = |b: u8| b.is_ascii_alphanumeric() || b" -_./=:,+@#&|;<>()[]{}*?~\"$`".contains(&b);
    let mut chunks: Vec<String> = vec![String::new()];
    for &b in script.as_bytes() {
        let piece = if safe(b) {
            (b as char).to_string()
        } else {
            format!("\\{b:03o}")
        };
        if chunks.last().is_some_and(|c| c.len() + piece.len() > CHUNK) {
            chunks.push(String::new());
        }
        if let Some(c) = chunks.last_mut() {
            c.push_str(&piece);
        }
    }
    let mut out = String::from(r#"exec /bin/sh -c 'eval "$(IFS=; printf "$*")"' benchpipe"#);
    for c in chunks {
        out.push_str(" '");
        out.push_str(&c);
        out.push('\'');
    }
    out
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
        Ok(SshTransport {
            board: board.clone(),
            target: target.clone(),
            resolved,
            options,
            timeout,
            conn: None,
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

    fn lost(&mut self, stop: Stop) -> TransportError {
        self.conn = None;
        TransportError::Lost {
            target: self.board.to_string(),
            reason: format!("{}: {}", self.resolved.address(), stop.describe()),
        }
    }

    fn open(&self) -> Result<Conn, TransportError> {
        let (session, socket) = handshake(
            &self.board,
            &self.resolved,
            self.timeout,
            self.options.ciphers.as_deref(),
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
            idle_polls: 0,
        })
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
                    return Ok(());
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

    /// Waits for the socket to be ready for whatever libssh2 is blocked on, sending
    /// keepalives and noticing a server that stopped answering.
    fn wait(&mut self, deadline: Option<Instant>) -> Result<(), Stop> {
        let Some(conn) = self.conn.as_mut() else {
            return Err(Stop::Silent);
        };
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            return Err(Stop::Deadline);
        }
        let silent_limit = self.timeout.max(self.options.keepalive * 3);
        // Our own record misses packets libssh2 read while doing something else (a
        // keepalive reply consumed by a channel read); the kernel's does not.
        let silent_for = match ms_since_last_receive(&conn.socket) {
            Some(ms) => Duration::from_millis(ms.into()).min(now.duration_since(conn.last_inbound)),
            None => now.duration_since(conn.last_inbound),
        };
        if silent_for > silent_limit {
            return Err(Stop::Silent);
        }
        let mut events = 0;
        match conn.session.block_directions() {
            ssh2::BlockDirections::Inbound => events |= libc::POLLIN,
            ssh2::BlockDirections::Outbound => events |= libc::POLLOUT,
            ssh2::BlockDirections::Both => events |= libc::POLLIN | libc::POLLOUT,
            ssh2::BlockDirections::None => events |= libc::POLLIN,
        }
        let backoff = Duration::from_micros(500 << conn.idle_polls.min(10));
        conn.idle_polls += 1;
        let mut wait = backoff
            .min(self.options.keepalive)
            .min(Duration::from_millis(500));
        if let Some(d) = deadline {
            wait = wait.min(d.saturating_duration_since(now));
        }
        let mut fd = libc::pollfd {
            fd: conn.socket.as_raw_fd(),
            events,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::ppoll(&mut fd, 1, &timespec(wait), std::ptr::null()) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(Stop::Io(e));
            }
        }
        if fd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            conn.progressed();
        } else if fd.revents != 0 {
            conn.idle_polls = 0;
        }
        match conn.session.keepalive_send() {
            Ok(_) => {}
            Err(e) if would_block(&e) => {}
            Err(e) => return Err(Stop::Ssh(e)),
        }
        Ok(())
    }

    /// Repeats a non-blocking libssh2 call until it stops saying "would block".
    fn retry<T>(
        &mut self,
        deadline: Option<Instant>,
        mut f: impl FnMut(&Session) -> Result<T, ssh2::Error>,
    ) -> Result<T, Stop> {
        loop {
            let Some(conn) = self.conn.as_ref() else {
                return Err(Stop::Silent);
            };
            match f(&conn.session) {
                Ok(v) => {
                    if let Some(c) = self.conn.as_mut() {
                        c.idle_polls = 0;
                    }
                    return Ok(v);
                }
                Err(e) if would_block(&e) => self.wait(deadline)?,
                Err(e) => return Err(Stop::Ssh(e)),
            }
        }
    }

    /// Opens a channel and starts `command` on it under /bin/sh, whatever the login
    /// shell (`login_shell_neutral`). Retries once on a fresh session when
    /// the old one turns out dead before anything ran, which is always safe.
    fn start(&mut self, command: &str) -> Result<Channel, TransportError> {
        for attempt in 0..2 {
            self.ensure_connected()?;
            let open_deadline = Some(Instant::now() + self.timeout);
            let channel = match self.retry(open_deadline, |s| s.channel_session()) {
                Ok(c) => c,
                Err(stop) if attempt == 0 => {
                    let _ = stop;
                    self.conn = None;
                    continue;
                }
                Err(stop) => return Err(self.lost(stop)),
            };
            let mut channel = channel;
            let request = login_shell_neutral(command);
            match self.retry(open_deadline, |_| channel.exec(&request)) {
                Ok(()) => return Ok(channel),
                Err(stop) => return Err(self.lost(stop)),
            }
        }
        Err(self.lost(Stop::Silent))
    }

    /// Reads both streams until the remote closes them, then collects the exit.
    /// With a deadline, closes stdin when it passes (the wrapper then kills the
    /// command's group) and reports a timeout.
    fn drain(
        &mut self,
        channel: &mut Channel,
        command: &str,
        timeout: Option<Duration>,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        let started = Instant::now();
        let epoch = super::interrupt_epoch();
        let mut deadline = timeout.map(|t| started + t);
        let mut timed_out = false;
        let mut buf = vec![0u8; 64 * 1024];
        let mut err_stream = channel.stderr();
        let (mut out_done, mut err_done) = (false, false);
        while !(out_done && err_done) {
            let mut progressed = false;
            for (done, is_err) in [(&mut out_done, false), (&mut err_done, true)] {
                if *done {
                    continue;
                }
                let r = if is_err {
                    err_stream.read(&mut buf)
                } else {
                    channel.read(&mut buf)
                };
                match r {
                    Ok(0) => *done = true,
                    Ok(n) => {
                        progressed = true;
                        let sink: &mut dyn Write = if is_err { &mut *stderr } else { &mut *stdout };
                        if let Err(e) = sink.write_all(&buf[..n]) {
                            // Dropping the session closes stdin remotely, which ends the command.
                            self.conn = None;
                            return Err(self.other(format!("writing output of `{command}`: {e}")));
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(self.lost(Stop::Io(e))),
                }
            }
            if progressed {
                if let Some(c) = self.conn.as_mut() {
                    c.progressed();
                }
                continue;
            }
            // Ctrl-C: end the remote command the way a timeout does (EOF on stdin makes
            // the wrapper kill its process group), so nothing keeps running on the board.
            if !timed_out && super::interrupt_epoch() != epoch {
                deadline = Some(Instant::now());
            }
            match self.wait(deadline) {
                Ok(()) => {}
                Err(Stop::Deadline) if !timed_out => {
                    timed_out = true;
                    // Give the wrapper a moment to kill the group and the channel to close.
                    deadline = Some(Instant::now() + Duration::from_secs(5));
                    let eof_deadline = deadline;
                    if let Err(stop) = self.retry(eof_deadline, |_| channel.send_eof()) {
                        return Err(self.lost(stop));
                    }
                }
                Err(Stop::Deadline) => {
                    // The command ignored the kill (it left its process group); the
                    // session is in an unknown state, so start afresh next time.
                    self.conn = None;
                    return Err(self.timeout_error(command, timeout));
                }
                Err(stop) => return Err(self.lost(stop)),
            }
        }
        let close_deadline = Some(Instant::now() + self.timeout.max(Duration::from_secs(5)));
        if let Err(stop) = self.retry(close_deadline, |_| channel.wait_close()) {
            return Err(self.lost(stop));
        }
        if timed_out {
            return Err(self.timeout_error(command, timeout));
        }
        let signal = channel
            .exit_signal()
            .ok()
            .and_then(|s| s.exit_signal)
            .filter(|s| !s.is_empty());
        let status = channel
            .exit_status()
            .map_err(|e| self.other(format!("reading exit status: {e}")))?;
        Ok(Exit {
            code: if signal.is_some() { None } else { Some(status) },
            signal,
        })
    }

    fn timeout_error(&self, command: &str, timeout: Option<Duration>) -> TransportError {
        TransportError::Timeout {
            target: self.board.to_string(),
            command: command.to_string(),
            after: timeout.unwrap_or_default(),
        }
    }

    /// Copies a local file to `remote` with `cat >` on the board, reporting
    /// (bytes sent, total) after each chunk.
    pub fn upload_with_progress(
        &mut self,
        local: &Path,
        remote: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(), TransportError> {
        let mut file = std::fs::File::open(local)
            .map_err(|e| self.other(format!("cannot read {}: {e}", local.display())))?;
        let total = file.metadata().map(|m| m.len()).unwrap_or(0);
        let command = format!("cat > {}", quote::sh(remote));
        let mut channel = self.start(&command)?;
        let mut buf = vec![0u8; 256 * 1024];
        let mut sent = 0u64;
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|e| self.other(format!("reading {}: {e}", local.display())))?;
            if n == 0 {
                break;
            }
            let mut off = 0;
            // A stalled write (no window for too long) counts as a lost connection.
            let mut stall_deadline = Instant::now() + self.timeout.max(Duration::from_secs(10));
            while off < n {
                match channel.write(&buf[off..n]) {
                    Ok(0) => {
                        return Err(self.other(format!("{remote}: the board stopped reading")));
                    }
                    Ok(w) => {
                        off += w;
                        sent += w as u64;
                        stall_deadline = Instant::now() + self.timeout.max(Duration::from_secs(10));
                        if let Some(c) = self.conn.as_mut() {
                            c.progressed();
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if let Err(stop) = self.wait(Some(stall_deadline)) {
                            return Err(self.lost(stop));
                        }
                    }
                    Err(e) => {
                        // cat may have failed (no such directory): its stderr says why.
                        let mut why = Vec::new();
                        let _ = channel.stderr().read_to_end(&mut why);
                        self.conn = None;
                        let why = String::from_utf8_lossy(&why);
                        return Err(
                            self.other(format!("upload to {remote} failed: {e} {}", why.trim()))
                        );
                    }
                }
            }
            progress(sent, total);
        }
        let deadline = Some(Instant::now() + self.timeout.max(Duration::from_secs(10)));
        if let Err(stop) = self.retry(deadline, |_| channel.send_eof()) {
            return Err(self.lost(stop));
        }
        let mut out = Vec::new();
        let mut err = Vec::new();
        let exit = self.drain(&mut channel, &command, None, &mut out, &mut err)?;
        if !exit.success() {
            return Err(self.other(format!(
                "upload to {remote}: {exit}: {}",
                String::from_utf8_lossy(&err).trim()
            )));
        }
        Ok(())
    }

    /// Copies `remote` to a local file with `cat` on the board.
    pub fn download_with_progress(
        &mut self,
        remote: &str,
        local: &Path,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), TransportError> {
        let file = std::fs::File::create(local)
            .map_err(|e| self.other(format!("cannot write {}: {e}", local.display())))?;
        struct Counting<'a> {
            file: std::io::BufWriter<std::fs::File>,
            n: u64,
            progress: &'a mut dyn FnMut(u64),
        }
        impl Write for Counting<'_> {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                let w = self.file.write(b)?;
                self.n += w as u64;
                (self.progress)(self.n);
                Ok(w)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                self.file.flush()
            }
        }
        let mut sink = Counting {
            file: std::io::BufWriter::with_capacity(256 * 1024, file),
            n: 0,
            progress,
        };
        let mut err = Vec::new();
        let command = format!("cat {}", quote::sh(remote));
        let exit = self.exec(&command, None, &mut sink, &mut err)?;
        sink.flush()
            .map_err(|e| self.other(format!("writing {}: {e}", local.display())))?;
        if !exit.success() {
            return Err(self.other(format!(
                "download of {remote}: {exit}: {}",
                String::from_utf8_lossy(&err).trim()
            )));
        }
        Ok(())
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
        let mut channel = self.start(&wrap(command))?;
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

fn resolve(
    board: &BoardName,
    target: &SshTarget,
    options: &ConnectOptions,
) -> Result<Resolved, TransportError> {
    let path = match &options.ssh_config {
        Some(p) => p.clone(),
        None => config::home_dir()
            .map(|h| h.join(".ssh/config"))
            .unwrap_or_default(),
    };
    let ssh_config = SshConfig::load(&path).map_err(|reason| TransportError::Other {
        target: board.to_string(),
        reason,
    })?;
    Ok(Resolved::new(target, &ssh_config))
}

/// TCP connect and SSH handshake, bounded by `timeout`. The session is left blocking.
fn handshake(
    board: &BoardName,
    resolved: &Resolved,
    timeout: Duration,
    ciphers: Option<&str>,
) -> Result<(Session, TcpStream), TransportError> {
    let started = Instant::now();
    let unreachable = |reason: String| TransportError::Unreachable {
        target: board.to_string(),
        reason: format!("{}: {reason}", resolved.address()),
    };
    let addrs: Vec<SocketAddr> = (resolved.host.as_str(), resolved.port)
        .to_socket_addrs()
        .map_err(|e| unreachable(format!("cannot resolve {}: {e}", resolved.host)))?
        .collect();
    let mut last_error = format!("{} resolves to no address", resolved.host);
    let mut stream = None;
    for addr in addrs {
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            last_error = format!("timed out after {timeout:?}");
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                last_error = format!("timed out after {timeout:?}");
            }
            Err(e) => last_error = e.to_string(),
        }
    }
    let stream = stream.ok_or_else(|| unreachable(last_error))?;
    let _ = stream.set_nodelay(true);
    let socket = stream
        .try_clone()
        .map_err(|e| unreachable(format!("socket: {e}")))?;
    let mut session = Session::new().map_err(|e| unreachable(format!("libssh2: {e}")))?;
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(100));
    session.set_timeout(left.as_millis().min(u32::MAX as u128) as u32);
    session.set_tcp_stream(stream);
    for dir in [ssh2::MethodType::CryptCs, ssh2::MethodType::CryptSc] {
        // Unknown names are dropped by libssh2, so this never narrows what we can speak.
        let _ = session.method_pref(dir, ciphers.unwrap_or(CIPHERS));
    }
    session.handshake().map_err(|e| {
        if e.code() == ErrorCode::Session(-9) {
            unreachable(format!("SSH handshake timed out after {timeout:?}"))
        } else {
            unreachable(format!("SSH handshake failed: {e}"))
        }
    })?;
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(100));
    session.set_timeout(left.as_millis().min(u32::MAX as u128) as u32);
    Ok((session, socket))
}

/// Cipher preference, fastest first for bulk uploads (`cat > file`) through libssh2.
///
/// Stock libssh2 1.11 encrypts AES packets one 16-byte block per OpenSSL call, so
/// per-call overhead, not AES, dominated (perf: `CRYPTO_gcm128_encrypt_ctr32`,
/// `EVP_Cipher` and a memmove per block at the top); uploads over AES-GCM ran at
/// 130-180 MiB/s against OpenSSH's 200-320 MiB/s. benchpipe builds a libssh2 patched to
/// encrypt a whole packet per call (vendor/libssh2-sys/README.patched.md), with which
/// AES-GCM is the fastest where the CPU has AES instructions. chacha20-poly1305 is
/// libssh2's own portable code (~1.5 s of CPU per 512 MiB, ~5x OpenSSH's client), so it
/// comes after. The CBC modes stay last, for old servers only.
const CIPHERS: &str = "aes128-gcm@openssh.com,aes256-gcm@openssh.com,\
chacha20-poly1305@openssh.com,aes128-ctr,aes192-ctr,aes256-ctr,\
aes256-cbc,aes192-cbc,aes128-cbc";

fn verify_host_key(
    board: &BoardName,
    resolved: &Resolved,
    session: &Session,
    key: &HostKey,
) -> Result<(), TransportError> {
    let file = &resolved.known_hosts;
    let fail = |reason: String| TransportError::HostKey {
        target: board.to_string(),
        reason,
        known_hosts: file.clone(),
    };
    let pattern = hostkey::host_pattern(&resolved.host, resolved.port);
    match hostkey::check(session, file, &resolved.host, resolved.port, key).map_err(fail)? {
        Verdict::Match => Ok(()),
        Verdict::Unknown => Err(fail(format!(
            "{pattern} is not in the board's known_hosts (it offered {} key {}). Check the \
             fingerprint on the board (`ssh-keygen -lf` on its ssh_host_*_key.pub), then \
             accept it with `benchpipe boards trust {board} --fingerprint {}`",
            key.algorithm,
            key.fingerprint(),
            key.fingerprint()
        ))),
        Verdict::Mismatch => Err(fail(format!(
            "{pattern} offered {} key {}, which does NOT match the key recorded in the \
             board's known_hosts. Someone may be intercepting the connection, or the board \
             was reinstalled. If you are sure it was reinstalled, check the fingerprint on \
             the board (`ssh-keygen -lf` on its ssh_host_*_key.pub) and accept the new key with \
             `benchpipe boards trust {board} --fingerprint {}`",
            key.algorithm,
            key.fingerprint(),
            key.fingerprint()
        ))),
    }
}

fn authenticate(
    board: &BoardName,
    target: &SshTarget,
    resolved: &Resolved,
    options: &ConnectOptions,
    session: &Session,
) -> Result<(), TransportError> {
    let user = resolved.user.as_str();
    let mut tried: Vec<String> = Vec::new();
    let timed_out = |e: &ssh2::Error| e.code() == ErrorCode::Session(-9);
    let mut keys = resolved.identities.clone();
    let explicit = !keys.is_empty();
    if options.use_agent_and_default_keys && !explicit {
        if std::env::var_os("SSH_AUTH_SOCK").is_some() {
            match session.userauth_agent(user) {
                Ok(()) if session.authenticated() => return Ok(()),
                Ok(()) => tried.push("ssh-agent: no key accepted".into()),
                Err(e) if timed_out(&e) => return Err(auth_timeout(board, resolved)),
                Err(e) => tried.push(format!("ssh-agent: {e}")),
            }
        }
        if let Some(home) = config::home_dir() {
            for name in ["id_ed25519", "id_ecdsa", "id_rsa"] {
                let p = home.join(".ssh").join(name);
                if p.exists() {
                    keys.push(p);
                }
            }
        }
    }
    for key in &keys {
        if !key.exists() {
            tried.push(format!("key {}: no such file", key.display()));
            continue;
        }
        match session.userauth_pubkey_file(user, None, key, None) {
            Ok(()) if session.authenticated() => return Ok(()),
            Ok(()) => tried.push(format!("key {}: not accepted", key.display())),
            Err(e) if timed_out(&e) => return Err(auth_timeout(board, resolved)),
            Err(e) => tried.push(format!(
                "key {}: {e} (a key with a passphrase must be loaded into ssh-agent)",
                key.display()
            )),
        }
    }
    if let Some(var) = &target.password_env {
        match std::env::var(var) {
            Ok(password) => match session.userauth_password(user, &password) {
                Ok(()) if session.authenticated() => return Ok(()),
                Ok(()) => tried.push(format!("password from ${var}: not accepted")),
                Err(e) if timed_out(&e) => return Err(auth_timeout(board, resolved)),
                Err(e) => tried.push(format!("password from ${var}: {e}")),
            },
            Err(_) => tried.push(format!("password: environment variable {var} is not set")),
        }
    }
    if tried.is_empty() {
        tried.push("no identity file, ssh-agent or password_env to try".into());
    }
    Err(TransportError::Auth {
        target: board.to_string(),
        reason: format!(
            "{} refused every method: {}",
            resolved.address(),
            tried.join("; ")
        ),
    })
}

fn auth_timeout(board: &BoardName, resolved: &Resolved) -> TransportError {
    TransportError::Unreachable {
        target: board.to_string(),
        reason: format!("{}: timed out during authentication", resolved.address()),
    }
}

/// The host key a board offers, with its fingerprint, without trusting it.
pub fn scan_host_key(
    board: &BoardName,
    target: &SshTarget,
    timeout: Duration,
    options: &ConnectOptions,
) -> Result<(Resolved, HostKey), TransportError> {
    let resolved = resolve(board, target, options)?;
    let (session, _socket) = handshake(board, &resolved, timeout, options.ciphers.as_deref())?;
    let key = HostKey::from_session(&session).ok_or_else(|| TransportError::HostKey {
        target: board.to_string(),
        reason: format!("{} sent no host key", resolved.address()),
        known_hosts: resolved.known_hosts.clone(),
    })?;
    Ok((resolved, key))
}

/// Which key `benchpipe boards trust` may record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Accept {
    /// Only a key with this fingerprint (`SHA256:...`, as the refusal and
    /// `ssh-keygen -lf` print it): the key the user saw.
    Fingerprint(String),
    /// Whatever key the board offers now (`--yes`, for scripted labs on a trusted network).
    Offered,
}

/// What the trust step wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trusted {
    /// The known_hosts name: `host`, or `[host]:port` off port 22.
    pub host: String,
    pub algorithm: String,
    pub fingerprint: String,
    pub known_hosts: PathBuf,
}

/// The explicit trust step (`benchpipe boards trust NAME`): fetches the board's host key
/// and, when `accept` allows it, records it in the board's known_hosts file (the board
/// file's `known_hosts`, else `~/.ssh/known_hosts`), replacing an entry of the same type
/// for that host. A key whose fingerprint is not the one named is refused, and nothing
/// is written.
pub fn trust(
    board: &BoardName,
    target: &SshTarget,
    timeout: Duration,
    accept: &Accept,
) -> Result<Trusted, TransportError> {
    trust_with(board, target, timeout, &ConnectOptions::default(), accept)
}

pub fn trust_with(
    board: &BoardName,
    target: &SshTarget,
    timeout: Duration,
    options: &ConnectOptions,
    accept: &Accept,
) -> Result<Trusted, TransportError> {
    let (resolved, key) = scan_host_key(board, target, timeout, options)?;
    let pattern = hostkey::host_pattern(&resolved.host, resolved.port);
    let offered = key.fingerprint();
    if let Accept::Fingerprint(wanted) = accept
        && !hostkey::same_fingerprint(wanted, &offered)
    {
        return Err(TransportError::HostKey {
            target: board.to_string(),
            reason: format!(
                "{pattern} offers {} key {offered}, not the {} you named; nothing was \
                 written. Check the fingerprint on the board \
                 (ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub)",
                key.algorithm,
                wanted.trim()
            ),
            known_hosts: resolved.known_hosts.clone(),
        });
    }
    hostkey::append(&resolved.known_hosts, &pattern, &key).map_err(|reason| {
        TransportError::Other {
            target: board.to_string(),
            reason,
        }
    })?;
    Ok(Trusted {
        host: pattern,
        algorithm: key.algorithm.clone(),
        fingerprint: offered,
        known_hosts: resolved.known_hosts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str) -> SshTarget {
        SshTarget {
            host: host.into(),
            port: None,
            user: None,
            identity: None,
            password_env: None,
            known_hosts: None,
        }
    }

    #[test]
    fn board_file_values_override_ssh_config() {
        let cfg = SshConfig::parse(
            "Host pi\n HostName 10.1.1.1\n User pi\n Port 2200\n IdentityFile /k/cfg\n",
        );
        let mut t = target("pi");
        let r = Resolved::new(&t, &cfg);
        assert_eq!(
            (r.host.as_str(), r.port, r.user.as_str()),
            ("10.1.1.1", 2200, "pi")
        );
        assert_eq!(r.identities, vec![PathBuf::from("/k/cfg")]);
        t.port = Some(22);
        t.user = Some("root".into());
        t.identity = Some(PathBuf::from("/k/board"));
        let r = Resolved::new(&t, &cfg);
        assert_eq!((r.port, r.user.as_str()), (22, "root"));
        assert_eq!(r.identities[0], PathBuf::from("/k/board"));
    }

    #[test]
    fn an_unreachable_board_fails_within_the_timeout_and_names_the_board() {
        // 198.18.255.254 is in the benchmarking range and routed nowhere here.
        let mut t = target("198.18.255.254");
        t.known_hosts = Some(PathBuf::from("/nonexistent/known_hosts"));
        let started = Instant::now();
        let r = SshTransport::connect_with(
            &BoardName::new("nowhere"),
            &t,
            Duration::from_millis(500),
            ConnectOptions {
                ssh_config: Some(PathBuf::from("/nonexistent/config")),
                ..ConnectOptions::default()
            },
        );
        let Err(e) = r else {
            panic!("connected to nowhere")
        };
        assert!(matches!(e, TransportError::Unreachable { .. }), "{e}");
        assert!(e.to_string().starts_with("nowhere:"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }
}
