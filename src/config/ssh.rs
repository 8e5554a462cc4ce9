//! Validates a board file's `[ssh]` table into an `SshTarget`: host, port, credentials
//! (the identity file must exist here, on the controller), timeouts, a pinned host key
//! and a jump host.

use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use super::{Source, names, raw, units};
use crate::diag::Diagnostic;
use crate::model::SshTarget;
use crate::transport::ssh::config::{expand_tilde, split_jump};
use crate::transport::ssh::hostkey::HostKey;

/// Bounds of `connect_timeout`: below 100 ms no real board answers; past 10 minutes an
/// unreachable board would hold its cells for no reason.
const CONNECT_TIMEOUT: (Duration, Duration) =
    (Duration::from_millis(100), Duration::from_secs(600));
/// Bounds of `keepalive`: libssh2 counts whole seconds; a keepalive rarer than every
/// 10 minutes lets NATs and firewalls drop an idle session.
const KEEPALIVE: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(600));

pub(super) fn target(src: &Source, ssh: &raw::Ssh, diags: &mut Vec<Diagnostic>) -> SshTarget {
    let host = ssh.host.get_ref().clone();
    if host.trim().is_empty() {
        diags.push(src.at_value(&ssh.host, "`host` must not be empty"));
    }
    if !is_host_word(&host) {
        diags.push(src.at_value(
            &ssh.host,
            format!("bad host `{}`: expected a host name, address or ~/.ssh/config alias, not starting with `-`", host.escape_debug()),
        ));
    }
    let port = match &ssh.port {
        Some(p) => match u16::try_from(*p.get_ref()) {
            Ok(port) if port > 0 => Some(port),
            _ => {
                diags.push(
                    src.at_value(p, format!("bad port {}: expected 1 to 65535", p.get_ref())),
                );
                None
            }
        },
        None => None,
    };
    if let Some(var) = &ssh.password_env {
        env_name(src, var, "password_env", diags);
    }
    if let Some(id) = &ssh.identity {
        identity_exists(src, id, diags);
    }
    let become_sudo = match &ssh.r#become {
        Some(b) if b.get_ref() == "sudo" => true,
        Some(b) => {
            diags.push(
                src.at_value(b, format!("unknown `become` `{}`: expected `sudo`", b.get_ref().escape_debug()))
                    .with_help("`become = \"sudo\"` runs every command on the board as root through sudo; leave it out to run them as the login user"),
            );
            false
        }
        None => false,
    };
    if let Some(var) = &ssh.sudo_password_env {
        env_name(src, var, "sudo_password_env", diags);
        if ssh.r#become.is_none() {
            diags.push(
                src.at_value(
                    var,
                    "`sudo_password_env` without `become = \"sudo\"` is never used",
                )
                .with_help("add `become = \"sudo\"`, or remove `sudo_password_env`"),
            );
        }
    }
    let connect_timeout = ssh
        .connect_timeout
        .as_ref()
        .and_then(|t| bounded(src, t, "connect_timeout", CONNECT_TIMEOUT, diags));
    let keepalive = ssh
        .keepalive
        .as_ref()
        .and_then(|t| bounded(src, t, "keepalive", KEEPALIVE, diags));
    let host_key = ssh.host_key.as_ref().and_then(|k| match HostKey::parse(k.get_ref()) {
        Ok(_) => Some(k.get_ref().trim().to_string()),
        Err(e) => {
            diags.push(
                src.at_value(k, format!("bad `host_key`: {e}"))
                    .with_help("copy the board's /etc/ssh/ssh_host_ed25519_key.pub, or the key part of its known_hosts line"),
            );
            None
        }
    });
    let proxy_jump = ssh.proxy_jump.as_ref().and_then(|j| {
        let v = j.get_ref();
        if jump_is_valid(v) {
            Some(v.clone())
        } else {
            diags.push(
                src.at_value(j, format!("bad `proxy_jump` `{}`: expected `[user@]host[:port]`, a ~/.ssh/config alias, or `none`", v.escape_debug()))
                    .with_help("one jump host; its address must not start with `-`"),
            );
            None
        }
    });
    SshTarget {
        host,
        port,
        user: ssh.user.as_ref().map(|u| u.get_ref().clone()),
        identity: ssh.identity.as_ref().map(|p| PathBuf::from(p.get_ref())),
        password_env: ssh.password_env.as_ref().map(|p| p.get_ref().clone()),
        known_hosts: ssh.known_hosts.as_ref().map(|p| PathBuf::from(p.get_ref())),
        connect_timeout,
        keepalive,
        host_key,
        proxy_jump,
        become_sudo,
        sudo_password_env: ssh.sudo_password_env.as_ref().map(|p| p.get_ref().clone()),
    }
}

fn is_host_word(host: &str) -> bool {
    !host.starts_with('-')
        && names::control_free(host, false).is_ok()
        && !host.contains(char::is_whitespace)
}

/// `[user@]host[:port]` (an IPv6 address in brackets), an alias, or `none`.
fn jump_is_valid(v: &str) -> bool {
    v == "none" || (split_jump(v).is_some() && !v.contains(','))
}

fn env_name(src: &Source, var: &Spanned<String>, key: &str, diags: &mut Vec<Diagnostic>) {
    let v = var.get_ref();
    let valid = v
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        diags.push(
            src.at_value(var, format!("`{key}` names an environment variable, and `{v}` is not a variable name"))
                .with_help(format!("use letters, digits and `_`, like `{key} = \"LAB_PI_PASSWORD\"`; the password itself goes in that variable")),
        );
    }
}

/// The key file is read on this machine when connecting; a typo there would otherwise
/// surface only as "authentication failed" on every cell of the board.
fn identity_exists(src: &Source, id: &Spanned<String>, diags: &mut Vec<Diagnostic>) {
    let path = expand_tilde(id.get_ref());
    let problem = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => return,
        Ok(_) => "is not a file",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist",
        Err(_) => "cannot be read",
    };
    diags.push(
        src.at_value(id, format!("identity file `{}` {problem} on this machine", path.display()))
            .with_help("`identity` is the private key benchpipe logs in with, on the controller; create it with `ssh-keygen -t ed25519 -f PATH` or fix the path"),
    );
}

pub(super) fn bounded(
    src: &Source,
    value: &Spanned<String>,
    key: &str,
    (min, max): (Duration, Duration),
    diags: &mut Vec<Diagnostic>,
) -> Option<Duration> {
    match units::parse_duration(value.get_ref()) {
        Ok(d) if d >= min && d <= max => Some(d),
        Ok(_) => {
            diags.push(src.at_value(
                value,
                format!(
                    "`{key}` `{}` is out of range: expected {} to {}",
                    value.get_ref(),
                    human(min),
                    human(max)
                ),
            ));
            None
        }
        Err(e) => {
            diags.push(src.at_value(value, format!("`{key}`: {e}")));
            None
        }
    }
}

fn human(d: Duration) -> String {
    if !d.as_millis().is_multiple_of(1000) {
        format!("{}ms", d.as_millis())
    } else if d.as_secs().is_multiple_of(60) {
        format!("{}m", d.as_secs() / 60)
    } else {
        format!("{}s", d.as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jump_hosts() {
        for ok in [
            "bastion",
            "pi@bastion",
            "pi@10.0.0.1:2222",
            "[fe80::1]:22",
            "none",
        ] {
            assert!(jump_is_valid(ok), "{ok}");
        }
        for bad in [
            "",
            "-oProxyCommand=x",
            "pi@",
            "@h",
            "h:0",
            "h:x",
            "a b",
            "a,b",
            "pi@-x",
        ] {
            assert!(!jump_is_valid(bad), "{bad}");
        }
    }

    #[test]
    fn durations_print_in_their_unit() {
        assert_eq!(human(CONNECT_TIMEOUT.0), "100ms");
        assert_eq!(human(CONNECT_TIMEOUT.1), "10m");
        assert_eq!(human(KEEPALIVE.0), "1s");
    }
}
