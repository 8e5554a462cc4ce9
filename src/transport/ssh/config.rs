//! The part of `~/.ssh/config` benchpipe honours: `Host` blocks with HostName, User,
//! Port, IdentityFile and ProxyJump (one hop), resolved the way OpenSSH does (first value wins).

use std::path::{Path, PathBuf};

/// What one `Host` block (or several matching ones) says about a host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostConfig {
    pub hostname: Option<String>,
    pub user: Option<String>,
    pub port: Option<u16>,
    pub identity_files: Vec<PathBuf>,
    /// `ProxyJump`: `[user@]host[:port]`, an alias, or `none`.
    pub proxy_jump: Option<String>,
}

#[derive(Clone, Debug, Default)]
struct Block {
    patterns: Vec<String>,
    settings: Vec<(String, String)>,
}

/// An ssh_config file that exists but cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct SshConfigError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// A parsed ssh_config file. Unknown keywords, `Match` blocks and `Include` are
/// ignored: benchpipe only needs the four settings that say where and as whom to connect.
#[derive(Clone, Debug, Default)]
pub struct SshConfig {
    blocks: Vec<Block>,
}

impl SshConfig {
    /// Reads `path`; a missing file is an empty config, as for OpenSSH.
    pub fn load(path: &Path) -> Result<SshConfig, SshConfigError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(SshConfig::parse(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SshConfig::default()),
            Err(source) => Err(SshConfigError {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    pub fn parse(text: &str) -> SshConfig {
        // Settings before the first Host line apply to every host.
        let mut blocks = vec![Block {
            patterns: vec!["*".into()],
            settings: Vec::new(),
        }];
        let mut in_match = false;
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = split_keyword(line);
            let key = key.to_ascii_lowercase();
            match key.as_str() {
                "host" => {
                    in_match = false;
                    blocks.push(Block {
                        patterns: split_words(value),
                        settings: Vec::new(),
                    });
                }
                "match" => in_match = true,
                _ if in_match => {}
                _ => {
                    if let Some(block) = blocks.last_mut() {
                        block.settings.push((key, unquote(value)));
                    }
                }
            }
        }
        SshConfig { blocks }
    }

    /// The settings for `host` (as written in the board file). For each keyword the first
    /// value found in a matching block wins; IdentityFile accumulates, as in OpenSSH.
    pub fn resolve(&self, host: &str) -> HostConfig {
        let mut out = HostConfig::default();
        for block in &self.blocks {
            if !host_matches(&block.patterns, host) {
                continue;
            }
            for (key, value) in &block.settings {
                match key.as_str() {
                    "hostname" if out.hostname.is_none() => {
                        out.hostname = Some(value.replace("%h", host));
                    }
                    "user" if out.user.is_none() => out.user = Some(value.clone()),
                    "port" if out.port.is_none() => out.port = value.parse().ok(),
                    "proxyjump" if out.proxy_jump.is_none() => {
                        out.proxy_jump = Some(value.clone());
                    }
                    "identityfile" => {
                        let path = expand_tilde(value);
                        if !out.identity_files.contains(&path) {
                            out.identity_files.push(path);
                        }
                    }
                    _ => {}
                }
            }
        }
        out
    }
}

/// `[user@]host[:port]` into its parts; `None` when it is not that shape.
pub fn split_jump(v: &str) -> Option<(Option<&str>, &str, Option<u16>)> {
    let (user, rest) = match v.rsplit_once('@') {
        Some((user, rest)) if !user.is_empty() && is_host_word(user) => (Some(user), rest),
        Some(_) => return None,
        None => (None, v),
    };
    let port = |p: &str| p.parse::<u16>().ok().filter(|p| *p > 0);
    let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
        let (host, after) = inner.split_once(']')?;
        match after {
            "" => (host, None),
            _ => (host, Some(port(after.strip_prefix(':')?)?)),
        }
    } else {
        match rest.split_once(':') {
            Some((host, p)) => (host, Some(port(p)?)),
            None => (rest, None),
        }
    };
    (!host.is_empty() && is_host_word(host)).then_some((user, host, port))
}

/// Not empty, not an option (`-o...`), no whitespace or control character.
fn is_host_word(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('-') && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// `Keyword value`, `Keyword=value` and `Keyword = value` are all valid.
fn split_keyword(line: &str) -> (&str, &str) {
    let end = line
        .find(|c: char| c.is_whitespace() || c == '=')
        .unwrap_or(line.len());
    let (key, rest) = line.split_at(end);
    let rest = rest.trim_start();
    let rest = rest.strip_prefix('=').unwrap_or(rest).trim();
    (key, rest)
}

fn split_words(value: &str) -> Vec<String> {
    value.split_whitespace().map(unquote).collect()
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(s)
        .to_string()
}

/// A block applies when some pattern matches and no negated (`!pat`) pattern does.
fn host_matches(patterns: &[String], host: &str) -> bool {
    let mut matched = false;
    for p in patterns {
        if let Some(neg) = p.strip_prefix('!') {
            if glob(neg, host) {
                return false;
            }
        } else if glob(p, host) {
            matched = true;
        }
    }
    matched
}

/// `*` and `?` wildcards, case-insensitive like OpenSSH's host matching.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let t: Vec<char> = text.to_lowercase().chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// The home directory: `$HOME`, else the password database.
pub fn home_dir() -> Option<PathBuf> {
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return Some(PathBuf::from(h));
    }
    // SAFETY: getpwuid returns a pointer into static storage or null; we copy the
    // string out before any other call that could overwrite it.
    unsafe {
        let pw = libc::getpwuid(libc::getuid());
        if pw.is_null() || (*pw).pw_dir.is_null() {
            return None;
        }
        let dir = std::ffi::CStr::from_ptr((*pw).pw_dir);
        Some(PathBuf::from(dir.to_string_lossy().into_owned()))
    }
}

/// Expands a leading `~/` (or a lone `~`) to the home directory.
pub fn expand_tilde(path: &str) -> PathBuf {
    if path == "~" {
        return home_dir().unwrap_or_else(|| PathBuf::from(path));
    }
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = home_dir()
    {
        return home.join(rest);
    }
    PathBuf::from(path)
}

/// The local user's name, OpenSSH's default remote user.
pub fn local_user() -> String {
    if let Ok(u) = std::env::var("USER")
        && !u.is_empty()
    {
        return u;
    }
    // SAFETY: as in home_dir.
    unsafe {
        let pw = libc::getpwuid(libc::getuid());
        if !pw.is_null() && !(*pw).pw_name.is_null() {
            let name = std::ffi::CStr::from_ptr((*pw).pw_name);
            return name.to_string_lossy().into_owned();
        }
    }
    "root".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "\
User everyone
Host pi-*  !pi-bad
    HostName 10.0.0.%h
    Port 2222
    IdentityFile ~/.ssh/lab
Host pi-3
    HostName ignored-because-first-wins
    User pi
    IdentityFile /keys/second
Match host pi-3
    User ignored-in-match
Host *
    User fallback
    IdentityFile=\"/keys/default\"
";

    #[test]
    fn first_value_wins_and_identity_files_accumulate() {
        let c = SshConfig::parse(CONFIG);
        let h = c.resolve("pi-3");
        assert_eq!(h.hostname.as_deref(), Some("10.0.0.pi-3"));
        assert_eq!(h.port, Some(2222));
        // The top-level `User everyone` comes first in the file.
        assert_eq!(h.user.as_deref(), Some("everyone"));
        assert_eq!(h.identity_files.len(), 3);
        assert_eq!(h.identity_files[1], PathBuf::from("/keys/second"));
        assert_eq!(h.identity_files[2], PathBuf::from("/keys/default"));
    }

    #[test]
    fn negated_patterns_exclude_a_host() {
        let c = SshConfig::parse(CONFIG);
        let h = c.resolve("pi-bad");
        assert_eq!(h.hostname, None);
        assert_eq!(h.port, None);
    }

    #[test]
    fn glob_handles_star_and_question_mark() {
        assert!(glob("pi-*", "PI-12"));
        assert!(glob("pi-?", "pi-1"));
        assert!(!glob("pi-?", "pi-12"));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
    }

    #[test]
    fn a_missing_config_is_empty_and_an_unreadable_one_names_its_path() {
        let missing = SshConfig::load(Path::new("/nonexistent/ssh_config")).unwrap();
        assert_eq!(missing.resolve("pi"), HostConfig::default());
        // A directory exists but cannot be read as a file.
        let e = SshConfig::load(Path::new("/")).unwrap_err();
        assert_eq!(e.path, PathBuf::from("/"));
        assert!(e.to_string().starts_with("/: "), "{e}");
    }
}
