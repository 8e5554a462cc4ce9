//! Opening a session: resolving the target, the TCP connect and handshake, the strict
//! host-key check and authentication, each bounded by the board's timeout.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use ssh2::{ErrorCode, Session};

use super::config::{self, SshConfig};
use super::hostkey::{self, HostKey, Verdict};
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

/// TCP connect and SSH handshake, bounded by `timeout`. The session is left blocking.
pub(super) fn handshake(
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
