//! Strict host-key checking against a known_hosts file, OpenSSH-style fingerprints,
//! and the explicit trust step that appends a key.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};
use ssh2::{CheckResult, HostKeyType, KnownHostFileKind, Session};

/// The host key a server offered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostKey {
    /// The key's algorithm name as in known_hosts: `ssh-ed25519`, `ssh-rsa`, ...
    pub algorithm: String,
    /// The raw public-key blob.
    pub blob: Vec<u8>,
}

impl HostKey {
    pub fn from_session(session: &Session) -> Option<HostKey> {
        let (blob, kind) = session.host_key()?;
        Some(HostKey {
            algorithm: algorithm_name(kind).to_string(),
            blob: blob.to_vec(),
        })
    }

    /// `SHA256:` and the unpadded base64 of the blob's SHA-256, as `ssh-keygen -l` prints.
    pub fn fingerprint(&self) -> String {
        let digest = Sha256::digest(&self.blob);
        format!("SHA256:{}", base64(&digest, false))
    }

    /// The known_hosts line for this key under `pattern` (`host` or `[host]:port`).
    pub fn known_hosts_line(&self, pattern: &str) -> String {
        format!(
            "{pattern} {} {}\n",
            self.algorithm,
            base64(&self.blob, true)
        )
    }
}

fn algorithm_name(kind: HostKeyType) -> &'static str {
    match kind {
        HostKeyType::Rsa => "ssh-rsa",
        HostKeyType::Dss => "ssh-dss",
        HostKeyType::Ecdsa256 => "ecdsa-sha2-nistp256",
        HostKeyType::Ecdsa384 => "ecdsa-sha2-nistp384",
        HostKeyType::Ecdsa521 => "ecdsa-sha2-nistp521",
        HostKeyType::Ed25519 => "ssh-ed25519",
        HostKeyType::Unknown => "unknown",
    }
}

/// How OpenSSH names a host in known_hosts: bare on port 22, `[host]:port` otherwise.
pub fn host_pattern(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Match,
    /// The file has no key for this host.
    Unknown,
    /// The file has a different key for this host.
    Mismatch,
}

/// Checks `key` for `host:port` against `file` (plain and hashed entries).
/// A missing file knows no host.
pub fn check(
    session: &Session,
    file: &Path,
    host: &str,
    port: u16,
    key: &HostKey,
) -> Result<Verdict, String> {
    let mut known = session
        .known_hosts()
        .map_err(|e| format!("cannot initialise known_hosts checking: {e}"))?;
    match std::fs::metadata(file) {
        Ok(_) => {
            known
                .read_file(file, KnownHostFileKind::OpenSSH)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Verdict::Unknown),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    }
    // As OpenSSH does: port 22 is recorded as the plain host, any other port as
    // `[host]:port` only. libssh2's own port check falls back to the plain host, which
    // would let a key trusted for port 22 vouch for a different server on another port.
    let name = if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    };
    Ok(match known.check(&name, &key.blob) {
        CheckResult::Match => Verdict::Match,
        CheckResult::NotFound => Verdict::Unknown,
        CheckResult::Mismatch => Verdict::Mismatch,
        CheckResult::Failure => return Err(format!("checking {} failed", file.display())),
    })
}

/// Appends `key` for `pattern` to `file`, creating the file (and its directory) when
/// missing. Plain lines for exactly this pattern are dropped first, so a replaced key
/// does not linger next to the new one.
pub fn append(file: &Path, pattern: &str, key: &HostKey) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: {e}", file.display());
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let old = match std::fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(fail(e)),
    };
    let mut kept = String::with_capacity(old.len() + 128);
    let mut removed = false;
    for line in old.lines() {
        let hosts = line.split_whitespace().next().unwrap_or("");
        let same_host = !line.trim_start().starts_with('#')
            && hosts.split(',').any(|h| h == pattern)
            && line.split_whitespace().nth(1) == Some(key.algorithm.as_str());
        if same_host {
            removed = true;
        } else {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept.push_str(&key.known_hosts_line(pattern));
    if removed || !old.is_empty() && !old.ends_with('\n') {
        // Rewrite through a temporary file so a crash never leaves half a file.
        let tmp = file.with_extension("benchpipe-tmp");
        std::fs::write(&tmp, kept.as_bytes()).map_err(fail)?;
        std::fs::rename(&tmp, file).map_err(fail)?;
    } else {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .map_err(fail)?;
        f.write_all(key.known_hosts_line(pattern).as_bytes())
            .map_err(fail)?;
    }
    Ok(())
}

/// Standard base64 (RFC 4648), with or without `=` padding.
pub fn base64(data: &[u8], pad: bool) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..4 {
            if i < chars {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else if pad {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, padded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input.as_bytes(), true), padded);
            assert_eq!(
                base64(input.as_bytes(), false),
                padded.trim_end_matches('=')
            );
        }
    }

    #[test]
    fn host_patterns_follow_openssh() {
        assert_eq!(host_pattern("pi", 22), "pi");
        assert_eq!(host_pattern("198.18.1.2", 2222), "[198.18.1.2]:2222");
    }
}
