//! One command on a channel in non-blocking mode: `poll(2)` with keepalives, both
//! streams drained together, and the command's timeout and Ctrl-C.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use ssh2::{Channel, ErrorCode, Session};

use super::SshTransport;
use super::words::{During, channel_io_error, ssh_error};
use super::wrapper;
use crate::transport::{Exit, TransportError};

/// Why a non-blocking step stopped.
pub(super) enum Stop {
    Deadline,
    Ssh(ssh2::Error),
    Io(std::io::Error),
    /// Nothing came back from the server for too long (keepalives unanswered).
    Silent,
}

impl Stop {
    pub(super) fn describe(&self) -> String {
        match self {
            Stop::Deadline => "timed out".into(),
            Stop::Ssh(e) => ssh_error(e, During::Session),
            Stop::Io(e) => channel_io_error(e),
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
            (&raw mut info).cast(),
            &raw mut len,
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
        tv_nsec: libc::c_long::from(d.subsec_nanos()),
    }
}

impl SshTransport {
    /// Waits for the socket to be ready for whatever libssh2 is blocked on, sending
    /// keepalives and noticing a server that stopped answering.
    pub(super) fn wait(&mut self, deadline: Option<Instant>) -> Result<(), Stop> {
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
        let rc = unsafe { libc::ppoll(&raw mut fd, 1, &timespec(wait), std::ptr::null()) };
        if rc < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(Stop::Io(e));
            }
        }
        if fd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            conn.heard();
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
    pub(super) fn retry<T>(
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

    /// Opens a channel and starts `script` on it under /bin/sh (and sudo, with `become`),
    /// whatever the login shell (`wrapper::request`).
    pub(super) fn start(&mut self, script: &str) -> Result<Channel, TransportError> {
        self.start_with(&|_| script.to_string(), false)
    }

    /// `start` for the script `build` makes from the session's anchor: made once the
    /// session it runs on is settled, so that it names that session's sshd. With `led`,
    /// through `wrapper::led_request` (the script is `wrapper::script`'s); never under
    /// sudo, whose commands the login user's watcher could not signal. Retries once on
    /// a fresh session when the old one turns out dead before anything ran, which is
    /// always safe.
    pub(super) fn start_with(
        &mut self,
        build: &dyn Fn(&str) -> String,
        led: bool,
    ) -> Result<Channel, TransportError> {
        for attempt in 0..2 {
            self.ensure_connected()?;
            // Silence counts from this request on. A session left idle (a run on the
            // controller, a wait for a shared resource) heard nothing because nothing
            // was asked; judged dead at once, it would be replaced, and the guards of
            // the services and tmpfs started under it would tear them down. A board
            // that is really gone stays silent past the timeout from here.
            if let Some(c) = self.conn.as_mut() {
                c.asking();
            }
            let facts = self.session_facts()?;
            let script = build(&facts.anchor);
            let request = match &self.sudo {
                Some(sudo) => wrapper::request(&sudo.request(&script), facts.posix_login),
                None if led => wrapper::led_request(&script, facts.posix_login),
                None => wrapper::request(&script, facts.posix_login),
            };
            if let Some(mut channel) = self.open_exec(&request, attempt == 0)? {
                self.feed_sudo(&mut channel)?;
                return Ok(channel);
            }
            self.conn = None;
        }
        Err(self.lost(&Stop::Silent))
    }

    /// Opens a channel and sends `request` as its exec request, as is. `None` when the
    /// channel could not be opened and `may_retry`: the session is dead, nothing ran.
    pub(super) fn open_exec(
        &mut self,
        request: &str,
        may_retry: bool,
    ) -> Result<Option<Channel>, TransportError> {
        let open_deadline = Some(Instant::now() + self.timeout);
        let mut channel = match self.retry(open_deadline, ssh2::Session::channel_session) {
            Ok(c) => c,
            Err(_) if may_retry => return Ok(None),
            Err(stop) => return Err(self.lost(&stop)),
        };
        match self.retry(open_deadline, |_| channel.exec(request)) {
            Ok(()) => Ok(Some(channel)),
            Err(stop) => Err(self.lost(&stop)),
        }
    }

    /// Runs `request` as is (no wrapper, no sudo) and keeps at most `limit` bytes of
    /// each stream: the session's own probes, and the benches' layers.
    pub(super) fn run_request(
        &mut self,
        request: &str,
        what: &str,
        limit: usize,
    ) -> Result<crate::transport::Output, TransportError> {
        let mut stdout = crate::transport::Capture::new(limit);
        let mut stderr = crate::transport::Capture::new(limit);
        let Some(mut channel) = self.open_exec(request, false)? else {
            return Err(self.lost(&Stop::Silent));
        };
        let timeout = Some(self.timeout.max(Duration::from_secs(10)));
        let exit = self.drain(&mut channel, what, timeout, &mut stdout, &mut stderr)?;
        let (stdout, stdout_dropped) = stdout.finish();
        let (stderr, stderr_dropped) = stderr.finish();
        Ok(crate::transport::Output {
            exit,
            stdout,
            stderr,
            stdout_dropped,
            stderr_dropped,
        })
    }

    /// Reads both streams until the remote closes them, then collects the exit.
    /// With a deadline, closes stdin when it passes (the wrapper then kills the
    /// command's group) and reports a timeout.
    pub(super) fn drain(
        &mut self,
        channel: &mut Channel,
        command: &str,
        timeout: Option<Duration>,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        let started = Instant::now();
        let epoch = crate::transport::interrupt_epoch();
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
                    Err(e) => return Err(self.lost(&Stop::Io(e))),
                }
            }
            if progressed {
                if let Some(c) = self.conn.as_mut() {
                    c.heard();
                }
                continue;
            }
            // Ctrl-C: end the remote command the way a timeout does (EOF on stdin makes
            // the wrapper kill its process group), so nothing keeps running on the board.
            if !timed_out && crate::transport::interrupt_epoch() != epoch {
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
                        return Err(self.lost(&stop));
                    }
                }
                Err(Stop::Deadline) => {
                    // The command ignored the kill (it left its process group); the
                    // session is in an unknown state, so start afresh next time.
                    self.conn = None;
                    return Err(self.timeout_error(command, timeout));
                }
                Err(stop) => return Err(self.lost(&stop)),
            }
        }
        let close_deadline = Some(Instant::now() + self.timeout.max(Duration::from_secs(5)));
        if let Err(stop) = self.retry(close_deadline, |_| channel.wait_close()) {
            return Err(self.lost(&stop));
        }
        if timed_out {
            return Err(self.timeout_error(command, timeout));
        }
        let signal = channel
            .exit_signal()
            .ok()
            .and_then(|s| s.exit_signal)
            .filter(|s| !s.is_empty());
        let status = channel.exit_status().map_err(|e| {
            self.other(format!(
                "reading exit status: {}",
                ssh_error(&e, During::Session)
            ))
        })?;
        Ok(Exit {
            code: if signal.is_some() { None } else { Some(status) },
            signal,
        })
    }

    pub(super) fn timeout_error(&self, command: &str, timeout: Option<Duration>) -> TransportError {
        TransportError::Timeout {
            target: self.board.to_string(),
            command: command.to_string(),
            after: timeout.unwrap_or_default(),
        }
    }
}
