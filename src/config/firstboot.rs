//! `[images.NAME.firstboot]`: the preparation a flash writes into the image's boot
//! partition, validated with file:line:col; the files it names (a public key, extra
//! user-data, a network-config) are read here, bounded, so that `plan` stays pure.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use toml::Spanned;

use super::{Source, raw};
use crate::diag::Diagnostic;
use crate::model::{
    Attachment, AuthorizedKey, Board, BoardName, Connection, Firstboot, FirstbootKind, PasswordHash,
};
use crate::transport::ssh::config::{expand_tilde, home_dir};
use crate::transport::ssh::hostkey::HostKey;

/// The most a public key file may hold: an RSA 16384-bit key line is under 3 KiB.
const MAX_KEY_FILE: u64 = 16 * 1024;
/// The most extra user-data or network-config: a boot partition is small, and cloud-init
/// reads these at every boot.
pub const MAX_ATTACHMENT: u64 = 64 * 1024;
/// useradd's limit on a user name.
const MAX_USER: usize = 32;
/// The default keys, in the order the SSH transport offers them.
const DEFAULT_KEYS: [&str; 3] = ["id_ed25519.pub", "id_ecdsa.pub", "id_rsa.pub"];

/// The workspace root of `src`: its shown path with its root-relative path taken off.
fn root_of(src: &Source) -> PathBuf {
    let mut root = src.shown.clone();
    for _ in src.rel.components() {
        root.pop();
    }
    root
}

/// A path from the scenario: `~/` is the home directory, a relative one the workspace's.
fn resolve(src: &Source, path: &str) -> PathBuf {
    let p = expand_tilde(path);
    if p.is_relative() {
        root_of(src).join(p)
    } else {
        p
    }
}

/// A small regular file's text, at most `max` bytes of UTF-8 without NUL: never a FIFO
/// or a device, never more than `max` bytes read.
fn read_small(path: &Path, max: u64) -> Result<String, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "does not exist".to_string(),
        _ => format!("cannot be read: {e}"),
    })?;
    if !meta.is_file() {
        return Err("is not a regular file".into());
    }
    if meta.len() > max {
        return Err(format!(
            "is {} bytes, more than the {max} allowed",
            meta.len()
        ));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot be read: {e}"))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read: {e}"))?;
    if bytes.len() as u64 > max {
        return Err(format!("is more than the {max} bytes allowed"));
    }
    if bytes.contains(&0) {
        return Err("holds a NUL byte: not a text file".into());
    }
    String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".into())
}

/// One OpenSSH public key file: one `type base64 [comment]` line, never a private key.
pub fn public_key(path: &Path) -> Result<AuthorizedKey, String> {
    let text = read_small(path, MAX_KEY_FILE)?;
    if text.contains("PRIVATE KEY") {
        return Err(
            "is a PRIVATE key: name its public half (the `.pub` file beside it); a private key never leaves the controller"
                .into(),
        );
    }
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let [line] = lines[..] else {
        return Err(format!(
            "holds {} key lines: expected exactly one public key (`ssh-ed25519 AAAA... comment`)",
            lines.len()
        ));
    };
    let key = HostKey::parse(line).map_err(|e| format!("is not an OpenSSH public key: {e}"))?;
    let mut words = line.split_whitespace();
    let (Some(kind), Some(data)) = (words.next(), words.next()) else {
        return Err("is not an OpenSSH public key".into());
    };
    Ok(AuthorizedKey {
        line: format!("{kind} {data}"),
        fingerprint: key.fingerprint(),
    })
}

/// Whether `name` is a user name `useradd` takes (Debian's default rule), and not root.
fn user_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if name.len() > MAX_USER {
        return Some(format!("longer than {MAX_USER} characters"));
    }
    if name == "root" {
        return Some(
            "`root` already exists: prepare a user of its own and log in with `become = \"sudo\"`"
                .into(),
        );
    }
    let first_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    let rest_ok = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
    (!(first_ok && rest_ok)).then(|| {
        "a user name is lower-case letters, digits, `_` and `-`, starting with a letter or `_`"
            .into()
    })
}

/// A host name benchpipe writes: labels of letters, digits and inner `-`, joined by `.`.
pub fn hostname_problem(name: &str) -> Option<String> {
    if name.is_empty() || name.len() > 253 {
        return Some("a host name is 1 to 253 characters".into());
    }
    (!name.split('.').all(crate::network::rules::dns_label_ok)).then(|| {
        format!(
            "`{}` is not a host name: labels of letters, digits and inner `-`, joined by `.`",
            name.escape_debug()
        )
    })
}

/// A `hostname` template: plain host-name characters and `{{ board }}`, nothing else.
fn template_problem(t: &str) -> Option<String> {
    let mut rest = t;
    let mut plain = String::new();
    while let Some(at) = rest.find("{{") {
        plain.push_str(&rest[..at]);
        let Some(end) = rest[at..].find("}}") else {
            return Some("an unclosed `{{`".into());
        };
        if rest[at + 2..at + end].trim() != "board" {
            return Some(format!(
                "`{}` is not a value: only `{{{{ board }}}}` (the board's name) may be used",
                &rest[at..at + end + 2]
            ));
        }
        plain.push('b');
        rest = &rest[at + end + 2..];
    }
    plain.push_str(rest);
    if plain
        .chars()
        .any(|c| !(c.is_ascii_alphanumeric() || c == '-' || c == '.'))
    {
        return Some(
            "a host name template is letters, digits, `-`, `.` and `{{ board }}`: nothing a shell or YAML reads"
                .into(),
        );
    }
    None
}

/// A `crypt(3)` hash benchpipe passes on: `$id$...` of an algorithm Debian's `chpasswd
/// -e` and cloud-init take, in the crypt alphabet.
fn hash_problem(h: &str) -> Option<String> {
    const IDS: [&str; 6] = ["$6$", "$5$", "$y$", "$2b$", "$2y$", "$gy$"];
    let known = IDS.iter().any(|id| h.starts_with(id));
    let alphabet = h
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'$' | b'=' | b','));
    if !known || !alphabet || h.len() < 20 || h.len() > 512 {
        return Some(
            "`password_hash` is not a crypt(3) hash (`$6$...`, `$y$...`): make one with `mkpasswd -m sha-512`; a clear password is never taken"
                .into(),
        );
    }
    None
}

/// Extra user-data or a network-config: a small text file of the workspace.
fn attachment(
    src: &Source,
    value: &Spanned<String>,
    what: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<Attachment> {
    let path = resolve(src, value.get_ref());
    let text = match read_small(&path, MAX_ATTACHMENT) {
        Ok(t) => t,
        Err(why) => {
            diags.push(
                src.at_value(value, format!("`{what}` file `{}` {why}", path.display()))
                    .with_help(format!(
                        "`{what}` names a text file of at most {MAX_ATTACHMENT} bytes, relative to the workspace"
                    )),
            );
            return None;
        }
    };
    if what == "user_data" && !text.starts_with("#cloud-config") {
        diags.push(
            src.at_value(
                value,
                format!("`user_data` file `{}` is not cloud-config: its first line must be `#cloud-config`", path.display()),
            )
            .with_help("benchpipe merges it after its own `#cloud-config` (users, key, host name)"),
        );
        return None;
    }
    let sha256 = Sha256::digest(text.as_bytes())
        .iter()
        .fold(String::new(), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        });
    Some(Attachment { text, sha256 })
}

/// `[images.NAME.firstboot]` of an image (`installed` when it is never flashed). `None`
/// for `kind = "none"` or a mistake (reported); board keys are filled by `board_keys`.
pub(super) fn firstboot(
    src: &Source,
    image: &str,
    raw: &Spanned<raw::Firstboot>,
    installed: bool,
    diags: &mut Vec<Diagnostic>,
) -> Option<Firstboot> {
    let start = diags.len();
    let fb = raw.get_ref();
    if let Some(p) = &fb.password {
        // The value is never repeated: it would reach the terminal and logs.
        diags.push(
            src.at(p.span(), "a clear `password` is never taken: it would sit in the scenario, the image and the board's first-boot files")
                .without_excerpt()
                .with_help("give `password_hash = \"$6$...\"` (from `mkpasswd -m sha-512`), or none: the user logs in by key"),
        );
    }
    // An unknown kind is reported, and the other settings still checked (as cloud-init's).
    let kind = match fb.kind.get_ref().as_str() {
        "cloud-init" => Some(FirstbootKind::CloudInit),
        "raspios" => Some(FirstbootKind::Raspios),
        "armbian" => Some(FirstbootKind::Armbian),
        "none" => None,
        other => {
            diags.push(src.at_value(
                &fb.kind,
                format!(
                    "unknown firstboot kind `{}`: expected one of {}",
                    other.escape_debug(),
                    FirstbootKind::NAMES.map(|n| format!("`{n}`")).join(", ")
                ),
            ));
            Some(FirstbootKind::CloudInit)
        }
    };
    let Some(kind) = kind else {
        let extra = [
            fb.user.as_ref().map(Spanned::span),
            fb.authorized_key.as_ref().map(Spanned::span),
            fb.sudo.as_ref().map(Spanned::span),
            fb.password_hash.as_ref().map(Spanned::span),
            fb.user_data.as_ref().map(Spanned::span),
            fb.network_config.as_ref().map(Spanned::span),
            fb.hostname.as_ref().map(Spanned::span),
        ];
        for span in extra.into_iter().flatten() {
            diags.push(src.at(
                span,
                "`kind = \"none\"` prepares nothing: this setting would be ignored",
            ));
        }
        return None;
    };
    if installed {
        diags.push(
            src.at_value(raw, format!("image `{image}` is installed, never flashed: its first boot is not benchpipe's to prepare"))
                .with_help("remove `[images.NAME.firstboot]`, or give the image's `url` or `path`"),
        );
    }
    let user = if let Some(u) = &fb.user {
        if let Some(why) = user_problem(u.get_ref()) {
            diags.push(src.at_value(
                u,
                format!(
                    "bad firstboot `user` `{}`: {why}",
                    u.get_ref().escape_debug()
                ),
            ));
        }
        u.get_ref().clone()
    } else {
        diags.push(src.at_value(raw, "firstboot: missing `user`").with_help(
            "name the user to create, like `user = \"pi\"`; benchpipe logs in as it with the key",
        ));
        String::new()
    };
    let authorized_key = fb.authorized_key.as_ref().and_then(|k| {
        let path = resolve(src, k.get_ref());
        public_key(&path)
            .map_err(|why| {
                diags.push(
                    src.at_value(
                        k,
                        format!("`authorized_key` file `{}` {why}", path.display()),
                    )
                    .with_help(
                        "name the public key the board must accept, like `~/.ssh/id_ed25519.pub`",
                    ),
                );
            })
            .ok()
    });
    let password_hash = fb
        .password_hash
        .as_ref()
        .and_then(|h| match hash_problem(h.get_ref()) {
            Some(why) => {
                diags.push(src.at_value(h, why));
                None
            }
            None => Some(PasswordHash(h.get_ref().clone())),
        });
    let user_data = fb
        .user_data
        .as_ref()
        .and_then(|v| attachment(src, v, "user_data", diags));
    let network_config = fb
        .network_config
        .as_ref()
        .and_then(|v| attachment(src, v, "network_config", diags));
    if kind != FirstbootKind::CloudInit {
        for (v, key) in [
            (&fb.user_data, "user_data"),
            (&fb.network_config, "network_config"),
        ] {
            if let Some(v) = v {
                diags.push(src.at_value(
                    v,
                    format!(
                        "`{key}` is cloud-init's: kind `{}` does not read it",
                        kind.name()
                    ),
                ));
            }
        }
    }
    let hostname = fb
        .hostname
        .as_ref()
        .and_then(|t| match template_problem(t.get_ref()) {
            Some(why) => {
                diags.push(src.at_value(
                    t,
                    format!(
                        "bad firstboot `hostname` `{}`: {why}",
                        t.get_ref().escape_debug()
                    ),
                ));
                None
            }
            None => Some(t.get_ref().clone()),
        });
    if diags.len() > start {
        return None;
    }
    Some(Firstboot {
        kind,
        user,
        authorized_key,
        board_keys: BTreeMap::new(),
        sudo: fb.sudo.as_ref().is_some_and(|s| *s.get_ref()),
        password_hash,
        user_data,
        network_config,
        hostname,
    })
}

/// The controller's public key for `board`: the `.pub` beside its `[ssh] identity`, else
/// the first default key of the running user; with the files tried when none is found.
fn controller_key(board: &Board) -> Result<AuthorizedKey, String> {
    let mut tried: Vec<PathBuf> = Vec::new();
    if let Connection::Ssh(t) = &board.connection
        && let Some(id) = &t.identity
    {
        let mut p = expand_tilde(&id.to_string_lossy()).into_os_string();
        p.push(".pub");
        let p = PathBuf::from(p);
        return public_key(&p).map_err(|why| format!("`{}` {why}", p.display()));
    }
    if let Some(home) = home_dir() {
        for name in DEFAULT_KEYS {
            let p = home.join(".ssh").join(name);
            if p.exists() {
                return public_key(&p).map_err(|why| format!("`{}` {why}", p.display()));
            }
            tried.push(p);
        }
    }
    Err(format!(
        "none of {} exists",
        tried
            .iter()
            .map(|p| format!("`{}`", p.display()))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Each board's checks of a prepared image's preparation: its key (without
/// `authorized_key`, the board's own) and its host name.
pub(super) fn for_boards(
    src: &Source,
    raw: &Spanned<raw::Firstboot>,
    firstboot: &mut Firstboot,
    boards: &[&Board],
    diags: &mut Vec<Diagnostic>,
) {
    // Boards that share a missing key (the controller's, most often) are one error.
    let mut keyless: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for board in boards {
        if firstboot.authorized_key.is_none() {
            match controller_key(board) {
                Ok(k) => {
                    firstboot.board_keys.insert(board.name.clone(), k);
                }
                Err(why) => keyless
                    .entry(why)
                    .or_default()
                    .push(format!("`{}`", board.name)),
            }
        }
        let name = match &firstboot.hostname {
            Some(t) => Firstboot::render_hostname(t, &board.name),
            None => board.name.to_string(),
        };
        if let Some(why) = hostname_problem(&name) {
            let at = raw
                .get_ref()
                .hostname
                .as_ref()
                .map_or(raw.span(), Spanned::span);
            diags.push(
                src.at(at, format!("firstboot: board `{}` gets no valid host name: {why}", board.name))
                    .with_help("set `hostname = \"...\"` with `{{ board }}` where the board's name goes, in letters, digits and `-`"),
            );
        }
    }
    for (why, names) in keyless {
        let (noun, list) = match names.len() {
            1 => ("board", names.concat()),
            _ => ("boards", names.join(", ")),
        };
        diags.push(
            src.at_value(
                raw,
                format!("firstboot: no public key for {noun} {list}: {why}"),
            )
            .with_help("name one with `authorized_key = \"~/.ssh/id_ed25519.pub\"`"),
        );
    }
}

/// The boards a scenario's cells of `image` may run on, for `for_boards`.
pub(super) fn boards_of<'b>(
    names: &[BoardName],
    boards: &'b BTreeMap<BoardName, Board>,
) -> Vec<&'b Board> {
    names.iter().filter_map(|n| boards.get(n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_are_what_useradd_takes() {
        for ok in ["pi", "ubuntu", "_bench", "lab-user1"] {
            assert_eq!(user_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "root",
            "Pi",
            "1pi",
            "pi user",
            "pi;reboot",
            "$(id)",
            &"a".repeat(33),
        ] {
            assert!(user_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn host_name_templates_are_plain() {
        assert_eq!(template_problem("{{ board }}"), None);
        assert_eq!(template_problem("lab-{{board}}.local"), None);
        for bad in [
            "{{ user }}",
            "a b",
            "pi;reboot",
            "{{ board",
            "$(hostname)",
            "a_b",
        ] {
            assert!(template_problem(bad).is_some(), "{bad:?}");
        }
        assert!(hostname_problem("pi_1").is_some());
        assert_eq!(hostname_problem("pi-1.local"), None);
    }

    #[test]
    fn only_crypt_hashes_are_taken() {
        assert_eq!(
            hash_problem("$6$rounds=5000$saltsalt$0123456789abcdefghijABCDEFGHIJ./"),
            None
        );
        for bad in [
            "hunter2",
            "$1$md5$xxxxxxxxxxxxxxxxxxxx",
            "$6$a b$c",
            "plain-text-password-here",
        ] {
            assert!(hash_problem(bad).is_some(), "{bad}");
        }
    }
}
