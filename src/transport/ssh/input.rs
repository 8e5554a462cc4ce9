//! Streaming input into a command on a board: the SSH side of `Transport::exec_input`.
//!
//! The channel's stdin carries the input, so it cannot also be the lifeline the plain
//! wrapper watches (`WRAPPER`): here the command reads it, EOF after the input (or on a
//! timeout, an interrupt, or a dropped connection, when sshd closes the pipe) ends a
//! command that reads its input, and the wrapper kills the command's process group when
//! it ends. Output is drained while input goes out, so a chatty command cannot stall
//! the window either way.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use ssh2::Channel;

use super::SshTransport;
use super::channel::Stop;
use crate::transport::{Exit, TransportError, quote};

/// `$1` is the command; fd 3 carries the channel's stdin past the shell's rule that a
/// background job reads /dev/null.
const INPUT_WRAPPER: &str = r#"exec 3<&0
setsid /bin/sh -c "$1" 0<&3 3<&- &
pid=$!
exec 3<&- 0</dev/null
wait $pid
rc=$?
kill -s KILL -- -$pid 2>/dev/null
if [ $rc -gt 128 ] && [ $rc -lt 160 ]; then kill -$((rc - 128)) $$; fi
exit $rc"#;

const CHUNK: usize = 256 * 1024;

/// Why feeding stopped before the input's end.
enum Cut {
    Timeout,
    Interrupt,
    Input(std::io::Error),
}

impl SshTransport {
    pub(super) fn exec_with_input(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdin: &mut dyn Read,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        let mut channel = self.start_with(
            &|anchor| {
                format!(
                    "{env}={}; export {env}\nexec /bin/sh -c {} benchpipe {}",
                    quote::sh(anchor),
                    quote::sh(INPUT_WRAPPER),
                    quote::sh(command),
                    env = crate::transport::guard::ANCHOR_ENV,
                )
            },
            false,
        )?;
        let started = Instant::now();
        let deadline = timeout.map(|t| started + t);
        let epoch = crate::transport::interrupt_epoch();
        let mut buf = vec![0u8; CHUNK];
        let mut cut = None;
        'feed: loop {
            let n = match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    cut = Some(Cut::Input(e));
                    break;
                }
            };
            let mut off = 0;
            let patience = self.timeout.max(Duration::from_secs(10));
            let stall = || Instant::now() + patience;
            let mut stall_deadline = stall();
            while off < n {
                self.pass_output(&mut channel, command, stdout, stderr)?;
                if crate::transport::interrupt_epoch() != epoch {
                    cut = Some(Cut::Interrupt);
                    break 'feed;
                }
                match channel.write(&buf[off..n]) {
                    // The command has ended and sshd closed the channel: the rest is unwanted.
                    Ok(0) => break 'feed,
                    Ok(w) => {
                        off += w;
                        stall_deadline = stall();
                        if let Some(c) = self.conn.as_mut() {
                            c.heard();
                        }
                    }
                    // The wrapper holds stdout open until it exits, so EOF there means
                    // the command is over; sshd stops opening the window for its input.
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && channel.eof() => {
                        break 'feed;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        let wait_until = match deadline {
                            Some(d) if d < stall_deadline => d,
                            _ => stall_deadline,
                        };
                        match self.wait(Some(wait_until)) {
                            Ok(()) => {}
                            Err(Stop::Deadline)
                                if deadline.is_some_and(|d| Instant::now() >= d) =>
                            {
                                cut = Some(Cut::Timeout);
                                break 'feed;
                            }
                            Err(stop) => return Err(self.lost(&stop)),
                        }
                    }
                    Err(_) => break 'feed,
                }
            }
        }
        let eof_deadline = Some(Instant::now() + self.timeout.max(Duration::from_secs(10)));
        if let Err(stop) = self.retry(eof_deadline, |_| channel.send_eof()) {
            return Err(self.lost(&stop));
        }
        // After EOF a reading command ends on its own; the rest of the time budget (a
        // few seconds after a cut) bounds one that does not.
        let left = match (&cut, deadline) {
            (Some(_), _) => Some(Duration::from_secs(5)),
            (None, Some(d)) => Some(
                d.saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            ),
            (None, None) => None,
        };
        let exit = self.drain(&mut channel, command, left, stdout, stderr);
        match cut {
            None => exit,
            Some(Cut::Timeout) => Err(self.timeout_error(command, timeout)),
            Some(Cut::Interrupt) => {
                Err(self.other(format!("interrupted while feeding `{command}`")))
            }
            Some(Cut::Input(e)) => {
                Err(self.other(format!("reading the input of `{command}`: {e}")))
            }
        }
    }

    /// Moves whatever output is waiting into the sinks, without blocking.
    fn pass_output(
        &mut self,
        channel: &mut Channel,
        command: &str,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<(), TransportError> {
        let mut buf = [0u8; 16 * 1024];
        for is_err in [false, true] {
            loop {
                let r = if is_err {
                    channel.stderr().read(&mut buf)
                } else {
                    channel.read(&mut buf)
                };
                match r {
                    Ok(0) => break,
                    Ok(n) => {
                        let sink: &mut dyn Write = if is_err { &mut *stderr } else { &mut *stdout };
                        if let Err(e) = sink.write_all(&buf[..n]) {
                            self.conn = None;
                            return Err(self.other(format!("writing output of `{command}`: {e}")));
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) => return Err(self.lost(&Stop::Io(e))),
                }
            }
        }
        Ok(())
    }
}
