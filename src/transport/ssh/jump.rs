//! ProxyJump: reaching a board through one jump host, from the board file's
//! `proxy_jump` or `~/.ssh/config`'s `ProxyJump`.
//!
//! The jump host gets a session of its own, with its host key checked strictly against
//! the board's known_hosts and the board's credentials. It opens a `direct-tcpip`
//! channel to the board's SSH port. libssh2 speaks only to a socket, so the channel is
//! bridged to a loopback TCP connection by a pump thread, and the board's own session
//! (its own strict host-key check, authentication) runs over that connection. The pump
//! ends, and drops the jump session, when either side closes.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Instant;

use super::SshTransport;
use super::config::split_jump;
use crate::model::{BoardName, SshTarget};
use crate::transport::TransportError;

/// A connected stream to the board's SSH port, through the jump host `jump`.
pub(super) fn via(t: &SshTransport, jump: &str) -> Result<TcpStream, TransportError> {
    let unreachable = |reason: String| TransportError::Unreachable {
        target: t.board.to_string(),
        reason,
    };
    if jump.contains(',') {
        return Err(unreachable(format!(
            "ProxyJump `{jump}` has several hops; benchpipe goes through one jump host"
        )));
    }
    let (user, host, port) = split_jump(jump).ok_or_else(|| {
        unreachable(format!(
            "bad ProxyJump `{jump}`: expected [user@]host[:port]"
        ))
    })?;
    let target = SshTarget {
        host: host.to_string(),
        port,
        user: user.map(str::to_string),
        identity: t.target.identity.clone(),
        known_hosts: t.target.known_hosts.clone(),
        connect_timeout: t.target.connect_timeout,
        keepalive: t.target.keepalive,
        // One hop: the jump host's own ProxyJump in ~/.ssh/config is not followed.
        proxy_jump: Some("none".into()),
        ..SshTarget::default()
    };
    let name = BoardName::new(format!("{} (jump host {jump})", t.board));
    let mut hop = SshTransport::connect_with(&name, &target, t.timeout, t.options.clone())
        .map_err(|e| match e {
            // The board's own line says which hop could not be reached.
            TransportError::Unreachable { reason, .. } => {
                unreachable(format!("jump host {jump}: {reason}"))
            }
            other => other,
        })?;
    let (to_host, to_port) = (t.resolved.host.clone(), t.resolved.port);
    let deadline = Some(Instant::now() + t.connect_timeout);
    let channel = hop
        .retry(deadline, |s| {
            s.channel_direct_tcpip(&to_host, to_port, None)
        })
        .map_err(|stop| {
            unreachable(format!(
                "{}: the jump host {jump} could not connect to {to_host}:{to_port}: {}",
                t.resolved.address(),
                stop.describe()
            ))
        })?;
    let bridge = |e: std::io::Error| unreachable(format!("loopback bridge for the jump host: {e}"));
    let listener = TcpListener::bind(("127.0.0.1", 0)).map_err(bridge)?;
    let local = TcpStream::connect(listener.local_addr().map_err(bridge)?).map_err(bridge)?;
    // Only our own end may be bridged: another local process could race to connect.
    let far = loop {
        let (far, peer) = listener.accept().map_err(bridge)?;
        if Some(peer) == local.local_addr().ok() {
            break far;
        }
    };
    std::thread::Builder::new()
        .name(format!("jump {jump}"))
        .spawn(move || pump(hop, channel, far))
        .map_err(bridge)?;
    Ok(local)
}

/// Moves bytes both ways between the jump host's channel and the loopback socket
/// until either side ends, sending the jump session's keepalives meanwhile.
fn pump(mut hop: SshTransport, mut channel: ssh2::Channel, local: TcpStream) {
    let _ = local.set_nonblocking(true);
    let mut local = local;
    let mut buf = vec![0u8; 64 * 1024];
    let (mut to_local, mut to_remote): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
    'pump: loop {
        let mut progressed = false;
        if to_local.is_empty() {
            match channel.read(&mut buf) {
                Ok(0) if channel.eof() => break 'pump,
                Ok(0) => {}
                Ok(n) => {
                    to_local.extend_from_slice(&buf[..n]);
                    progressed = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => break 'pump,
            }
        }
        if !to_local.is_empty() {
            match local.write(&to_local) {
                Ok(n) => {
                    to_local.drain(..n);
                    progressed = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => break 'pump,
            }
        }
        if to_remote.is_empty() {
            match local.read(&mut buf) {
                Ok(0) => {
                    let _ = channel.send_eof();
                    break 'pump;
                }
                Ok(n) => {
                    to_remote.extend_from_slice(&buf[..n]);
                    progressed = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => break 'pump,
            }
        }
        if !to_remote.is_empty() {
            match channel.write(&to_remote) {
                Ok(n) => {
                    to_remote.drain(..n);
                    progressed = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => break 'pump,
            }
        }
        if !progressed && !wait(&mut hop, &local, !to_local.is_empty()) {
            break 'pump;
        }
    }
    let _ = local.shutdown(Shutdown::Both);
}

/// Waits up to 100 ms for either socket, and keeps the jump session alive; false
/// when the jump session is gone. A jump host that stops answering is noticed by the
/// board's session above it, whose end closes the loopback socket and so the pump.
fn wait(hop: &mut SshTransport, local: &TcpStream, local_out: bool) -> bool {
    let Some(conn) = hop.conn.as_ref() else {
        return false;
    };
    let mut fds = [
        libc::pollfd {
            fd: conn.socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: local.as_raw_fd(),
            events: libc::POLLIN | if local_out { libc::POLLOUT } else { 0 },
            revents: 0,
        },
    ];
    // SAFETY: two valid pollfds for the duration of the call.
    unsafe { libc::poll(fds.as_mut_ptr(), 2, 100) };
    let _ = conn.session.keepalive_send();
    true
}
