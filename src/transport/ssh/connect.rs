//! Opening a session: resolving the target, the TCP connect and handshake, the strict
//! host-key check and authentication, each bounded by the board's timeout.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use ssh2::{ErrorCode, Session};

use super::config::{self, SshConfig};
use super::hostkey::{self, HostKey, Verdict};
use super::words::{During, ssh_error};
use super::{ConnectOptions, Resolved};
use crate::model::{BoardName, SshTarget};
use crate::transport::TransportError;

pub(super) fn resolve(
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
    let ssh_config = SshConfig::load(&path).map_err(|e| TransportError::Other {
        target: board.to_string(),
        reason: e.to_string(),
    })?;
    Ok(Resolved::new(target, &ssh_config))
}

/// The TCP connect to the board's SSH port, bounded by `timeout`.
pub(super) fn tcp_connect(
    board: &BoardName,
    resolved: &Resolved,
    timeout: Duration,
) -> Result<TcpStream, TransportError> {
    let started = Instant::now();
    let unreachable = |reason: String| TransportError::Unreachable {
        target: board.to_string(),
        reason: format!("{}: {reason}", resolved.address()),
    };
    let addrs: Vec<SocketAddr> = (resolved.host.as_str(), resolved.port)
        .to_socket_addrs()
        .map_err(|e| {
            unreachable(format!(
                "cannot resolve host name {}: {}",
                resolved.host,
                strip_os_error(&e.to_string())
            ))
        })?
        .collect();
    let mut last_error = format!("host name {} resolves to no address", resolved.host);
    let mut stream = None;
    for addr in addrs {
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            last_error = timed_out_connecting(timeout);
            break;
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last_error = tcp_cause(&e, timeout),
        }
    }
    stream.ok_or_else(|| unreachable(last_error))
}

/// The SSH handshake over a connected `stream`, bounded by what is left of `timeout`
/// since `started`. The session is left blocking. With a pinned host key, the server is
/// asked for that key's algorithm, so that it does not offer another key it also has.
pub(super) fn handshake(
    board: &BoardName,
    resolved: &Resolved,
    stream: TcpStream,
    started: Instant,
    timeout: Duration,
    ciphers: Option<&str>,
    pinned: Option<&HostKey>,
) -> Result<(Session, TcpStream), TransportError> {
    let unreachable = |reason: String| TransportError::Unreachable {
        target: board.to_string(),
        reason: format!("{}: {reason}", resolved.address()),
    };
    let _ = stream.set_nodelay(true);
    let socket = stream
        .try_clone()
        .map_err(|e| unreachable(format!("socket: {e}")))?;
    let mut session = Session::new().map_err(|e| unreachable(format!("libssh2: {e}")))?;
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(100));
    session.set_timeout(left.as_millis().min(u128::from(u32::MAX)) as u32);
    session.set_tcp_stream(stream);
    for dir in [ssh2::MethodType::CryptCs, ssh2::MethodType::CryptSc] {
        // Unknown names are dropped by libssh2, so this never narrows what we can speak.
        let _ = session.method_pref(dir, ciphers.unwrap_or(CIPHERS));
    }
    if let Some(key) = pinned {
        let _ = session.method_pref(ssh2::MethodType::HostKey, &key.algorithm);
    }
    session.handshake().map_err(|e| {
        if e.code() == ErrorCode::Session(-9) {
            unreachable(format!(
                "TCP connected, but the SSH handshake timed out (after {} s)",
                secs(timeout)
            ))
        } else {
            unreachable(format!(
                "SSH handshake failed: {}",
                ssh_error(&e, During::Handshake)
            ))
        }
    })?;
    let left = timeout
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(100));
    session.set_timeout(left.as_millis().min(u128::from(u32::MAX)) as u32);
    Ok((session, socket))
}

/// The cause of a failed TCP connect in the words an operator looks for; no SSH was
/// spoken yet, so nothing here may say "handshake".
pub(super) fn tcp_cause(e: &std::io::Error, timeout: Duration) -> String {
    use std::io::ErrorKind;
    match (e.kind(), e.raw_os_error()) {
        (ErrorKind::TimedOut, _) | (_, Some(libc::ETIMEDOUT)) => timed_out_connecting(timeout),
        (ErrorKind::ConnectionRefused, _) => {
            "connection refused (the host is up, but nothing listens on that port)".into()
        }
        (_, Some(libc::EHOSTUNREACH)) => "no route to host".into(),
        (_, Some(libc::ENETUNREACH)) => "network unreachable (no route to its network)".into(),
        _ => strip_os_error(&e.to_string()),
    }
}

fn timed_out_connecting(timeout: Duration) -> String {
    format!(
        "timed out connecting (after {} s; the host is off, or packets to it are dropped)",
        secs(timeout)
    )
}

/// `1`, `0.5`, `10`: seconds as a person writes them.
fn secs(d: Duration) -> String {
    let s = format!("{:.1}", d.as_secs_f64());
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// `No route to host (os error 113)` -> `No route to host`.
fn strip_os_error(text: &str) -> String {
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text.to_string(),
    }
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

pub(super) fn verify_host_key(
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
    if let Some(pinned) = &resolved.host_key {
        // The board file's key stands instead of known_hosts: it is what a flash wrote.
        return if pinned == key {
            Ok(())
        } else {
            Err(fail(format!(
                "{pattern} offered {} key {}, but the board file pins {} key {} \
                 (`host_key` in its [ssh] table). Someone may be intercepting the connection, \
                 or the board runs another system than the one whose key was pinned",
                key.algorithm,
                key.fingerprint(),
                pinned.algorithm,
                pinned.fingerprint()
            )))
        };
    }
    let verdict = hostkey::check(session, file, &resolved.host, resolved.port, key)
        .map_err(|e| fail(e.to_string()))?;
    match verdict {
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

pub(super) fn authenticate(
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
                Err(e) => tried.push(format!("ssh-agent: {}", ssh_error(&e, During::Login))),
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
                "key {}: {}",
                key.display(),
                ssh_error(&e, During::Login)
            )),
        }
    }
    if let Some(var) = &target.password_env {
        match std::env::var(var) {
            Ok(password) => match session.userauth_password(user, &password) {
                Ok(()) if session.authenticated() => return Ok(()),
                Ok(()) => tried.push(format!("password from ${var}: not accepted")),
                Err(e) if timed_out(&e) => return Err(auth_timeout(board, resolved)),
                Err(e) => tried.push(format!(
                    "password from ${var}: {}",
                    ssh_error(&e, During::Login)
                )),
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
