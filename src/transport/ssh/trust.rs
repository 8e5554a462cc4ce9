//! The explicit trust step: fetching a board's host key and recording it in known_hosts.

use std::path::PathBuf;
use std::time::Duration;

use super::connect::handshake;
use super::hostkey::{self, HostKey};
use super::{ConnectOptions, Resolved};
use crate::model::{BoardName, SshTarget};
use crate::transport::TransportError;

/// The host key a board offers, with its fingerprint, without trusting it.
pub fn scan_host_key(
    board: &BoardName,
    target: &SshTarget,
    timeout: Duration,
    options: &ConnectOptions,
) -> Result<(Resolved, HostKey), TransportError> {
    let transport = super::SshTransport::new(board, target, timeout, options.clone())?;
    let resolved = transport.resolved().clone();
    let started = std::time::Instant::now();
    // Through the jump host when there is one, whose own key is checked strictly.
    let stream = transport.stream()?;
    let (session, _socket) = handshake(
        board,
        &resolved,
        stream,
        started,
        timeout,
        options.ciphers.as_deref(),
        None,
    )?;
    let key = HostKey::from_session(&session).ok_or_else(|| TransportError::HostKey {
        target: board.to_string(),
        reason: format!("{} sent no host key", resolved.address()),
        known_hosts: resolved.known_hosts.clone(),
    })?;
    Ok((resolved, key))
}

/// The key a host offers and what its known_hosts (the target's, else the user's) says
/// of it, trusting nothing: `init` tells an unknown key (recorded only when asked) from
/// a changed one (always refused).
pub fn offered_verdict(
    board: &BoardName,
    target: &SshTarget,
    timeout: Duration,
    options: &ConnectOptions,
) -> Result<(Resolved, HostKey, hostkey::Verdict), TransportError> {
    let (resolved, key) = scan_host_key(board, target, timeout, options)?;
    let fail = |reason: String| TransportError::HostKey {
        target: board.to_string(),
        reason,
        known_hosts: resolved.known_hosts.clone(),
    };
    // A session only for libssh2's known_hosts reader; it connects nowhere.
    let session = ssh2::Session::new().map_err(|e| fail(format!("libssh2: {e}")))?;
    let verdict = hostkey::check(
        &session,
        &resolved.known_hosts,
        &resolved.host,
        resolved.port,
        &key,
    )
    .map_err(|e| fail(e.to_string()))?;
    Ok((resolved, key, verdict))
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
    hostkey::append(&resolved.known_hosts, &pattern, &key).map_err(|e| TransportError::Other {
        target: board.to_string(),
        reason: e.to_string(),
    })?;
    Ok(Trusted {
        host: pattern,
        algorithm: key.algorithm.clone(),
        fingerprint: offered,
        known_hosts: resolved.known_hosts,
    })
}
