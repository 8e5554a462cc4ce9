//! Strict host-key checking against a known_hosts file, OpenSSH-style fingerprints,
//! and the explicit trust step that appends a key.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::words::{During, ssh_error};
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

impl HostKey {
    /// Parses a pinned key as a `.pub` file or known_hosts line writes it:
    /// `ssh-ed25519 AAAA... [comment]`. The blob must name the same algorithm.
    pub fn parse(text: &str) -> Result<HostKey, String> {
        let mut words = text.split_whitespace();
        let (Some(algorithm), Some(data)) = (words.next(), words.next()) else {
            return Err(
                "expected `ALGORITHM BASE64`, like `ssh-ed25519 AAAAC3Nza...` \
                        (the board's /etc/ssh/ssh_host_ed25519_key.pub)"
                    .into(),
            );
        };
        if !PINNABLE.contains(&algorithm) {
            return Err(format!(
                "unknown host key algorithm `{algorithm}`: expected one of {}",
                PINNABLE.join(", ")
            ));
        }
        let blob = base64_decode(data).ok_or_else(|| "the key is not valid base64".to_string())?;
        // The blob opens with its own algorithm name, length-prefixed.
        let named = blob
            .get(..4)
            .map(|n| u32::from_be_bytes([n[0], n[1], n[2], n[3]]) as usize)
            .and_then(|n| blob.get(4..4 + n));
        if named != Some(algorithm.as_bytes()) {
            return Err(format!(
                "the key data is not an `{algorithm}` key (truncated or pasted from another key)"
            ));
        }
        Ok(HostKey {
            algorithm: algorithm.to_string(),
            blob,
        })
    }
}

/// Host key algorithms a board file may pin, as libssh2 can negotiate them.
pub const PINNABLE: &[&str] = &[
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
];

/// Whether a fingerprint the user typed (`SHA256:...`, padded or not) names `offered`.
pub fn same_fingerprint(typed: &str, offered: &str) -> bool {
    let strip = |f: &str| {
        f.trim()
            .strip_prefix("SHA256:")
            .map(|b| b.trim_end_matches('=').to_string())
    };
    matches!((strip(typed), strip(offered)), (Some(a), Some(b)) if !a.is_empty() && a == b)
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

/// Why a known_hosts file could not be checked or written. Checking errors do not name
/// the file (see `TransportError::HostKey`, which does); writing errors do.
#[derive(Debug, thiserror::Error)]
pub enum KnownHostsError {
    #[error("cannot initialise known_hosts checking: {}", ssh_error(.0, During::KnownHosts))]
    Init(ssh2::Error),
    /// The file exists but libssh2 cannot read or parse it.
    #[error("cannot read the known_hosts file: {}", ssh_error(.0, During::KnownHosts))]
    Parse(ssh2::Error),
    #[error("cannot read the known_hosts file: {0}")]
    Read(std::io::Error),
    #[error("checking the known_hosts file failed")]
    Check,
    #[error(
        "{} is a symbolic link; benchpipe does not rewrite a known_hosts file \
         through a link. Name the file it points to in the board's `known_hosts`",
        file.display()
    )]
    Symlink { file: PathBuf },
    #[error("{}: not a regular file", file.display())]
    NotRegular { file: PathBuf },
    /// Reading, creating or replacing the file failed.
    #[error("{}: {source}", file.display())]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Checks `key` for `host:port` against `file` (plain and hashed entries).
/// A missing file knows no host. Errors do not name the file (see `TransportError::HostKey`).
pub fn check(
    session: &Session,
    file: &Path,
    host: &str,
    port: u16,
    key: &HostKey,
) -> Result<Verdict, KnownHostsError> {
    let mut known = session.known_hosts().map_err(KnownHostsError::Init)?;
    match std::fs::metadata(file) {
        Ok(_) => {
            known
                .read_file(file, KnownHostFileKind::OpenSSH)
                .map_err(KnownHostsError::Parse)?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Verdict::Unknown),
        Err(e) => return Err(KnownHostsError::Read(e)),
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
        CheckResult::Failure => return Err(KnownHostsError::Check),
    })
}

/// Records `key` for `pattern` in `file`, creating the file (and its directory) when
/// missing. Entries of the same key type for exactly this pattern are removed first, so
/// a replaced key does not linger next to the new one; other hosts on a shared line
/// (`a,b KEY`) keep their entry. The new entry is hashed (`|1|salt|hash`) when the file
/// already hashes its entries, as `HashKnownHosts` does.
///
/// The file is replaced through a temporary file created exclusively beside it, with
/// the original's mode and owner, so a crash never leaves half a file and no planted
/// temporary name is followed. A symlinked known_hosts is refused: benchpipe may run as
/// root, and a rewrite through a link would replace whatever it points at.
pub fn append(file: &Path, pattern: &str, key: &HostKey) -> Result<(), KnownHostsError> {
    let fail = |source: std::io::Error| KnownHostsError::Io {
        file: file.to_path_buf(),
        source,
    };
    let dir = match file.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(d) => d.to_path_buf(),
        None => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(fail)?;
    let (old, meta) = match std::fs::symlink_metadata(file) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(KnownHostsError::Symlink {
                file: file.to_path_buf(),
            });
        }
        Ok(m) if !m.is_file() => {
            return Err(KnownHostsError::NotRegular {
                file: file.to_path_buf(),
            });
        }
        Ok(m) => {
            let mut text = String::new();
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(file)
                .and_then(|mut f| f.read_to_string(&mut text))
                .map_err(fail)?;
            (text, Some(m))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), None),
        Err(e) => return Err(fail(e)),
    };
    let new = rewrite(&old, pattern, key, &random_salt().map_err(fail)?);
    replace(file, new.as_bytes(), meta.as_ref()).map_err(fail)
}

/// The known_hosts text `old` with `key` recorded for `pattern` (see [`append`]).
fn rewrite(old: &str, pattern: &str, key: &HostKey, salt: &[u8; 20]) -> String {
    let mut hashed = false;
    let mut kept = String::with_capacity(old.len() + 128);
    for line in old.lines() {
        let entry = line.trim_start();
        let fields: Vec<&str> = entry.split_whitespace().collect();
        // Comments, blank lines and marked lines (@cert-authority, @revoked) stay as they are.
        if entry.is_empty() || entry.starts_with('#') || entry.starts_with('@') || fields.len() < 3
        {
            kept.push_str(line);
            kept.push('\n');
            continue;
        }
        let hosts = fields[0];
        hashed |= hosts.starts_with("|1|");
        if fields[1] != key.algorithm {
            kept.push_str(line);
            kept.push('\n');
            continue;
        }
        if hosts.starts_with("|1|") {
            if !hashed_host_matches(hosts, pattern) {
                kept.push_str(line);
                kept.push('\n');
            }
            continue;
        }
        let others: Vec<&str> = hosts.split(',').filter(|h| *h != pattern).collect();
        if others.len() == hosts.split(',').count() {
            kept.push_str(line);
            kept.push('\n');
        } else if !others.is_empty() {
            // Only this host's name goes; the rest of the line is kept byte for byte.
            let start = line.len() - entry.len();
            kept.push_str(&line[..start]);
            kept.push_str(&others.join(","));
            kept.push_str(&entry[hosts.len()..]);
            kept.push('\n');
        }
    }
    if hashed {
        kept.push_str(&key.known_hosts_line(&hash_host(pattern, salt)));
    } else {
        kept.push_str(&key.known_hosts_line(pattern));
    }
    kept
}

/// `|1|base64(salt)|base64(HMAC-SHA1(salt, host))`, as OpenSSH's `HashKnownHosts` writes.
pub fn hash_host(host: &str, salt: &[u8; 20]) -> String {
    format!(
        "|1|{}|{}",
        base64(salt, true),
        base64(&hmac_sha1(salt, host.as_bytes()), true)
    )
}

/// Whether a hashed known_hosts name (`|1|salt|hash`) stands for `host`.
pub fn hashed_host_matches(field: &str, host: &str) -> bool {
    let Some(rest) = field.strip_prefix("|1|") else {
        return false;
    };
    let Some((salt, hash)) = rest.split_once('|') else {
        return false;
    };
    match (base64_decode(salt), base64_decode(hash)) {
        (Some(salt), Some(hash)) => hmac_sha1(&salt, host.as_bytes()).as_slice() == hash,
        _ => false,
    }
}

fn hmac_sha1(key: &[u8], message: &[u8]) -> [u8; 20] {
    use hmac::{KeyInit, Mac};
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

fn random_salt() -> std::io::Result<[u8; 20]> {
    let mut salt = [0u8; 20];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut salt)?;
    Ok(salt)
}

/// Replaces `file` with `bytes` (`owned::replace_with`), keeping the mode and owner of
/// the file it replaces (`meta`); a new file is private (0600).
fn replace(file: &Path, bytes: &[u8], meta: Option<&std::fs::Metadata>) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    crate::owned::replace_with(file, 0o600, |f: &mut std::fs::File| {
        if let Some(m) = meta {
            // Owner first (chown clears set-id bits; the mode below restores the rest).
            // Only root can give a file away; anyone else's rewrite is then their own.
            let _ = std::os::unix::fs::fchown(&*f, Some(m.uid()), Some(m.gid()));
            f.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o7777))?;
        }
        f.write_all(bytes)
    })
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

/// Decodes standard base64, with or without padding; `None` for anything else.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
