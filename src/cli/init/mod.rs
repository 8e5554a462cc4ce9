//! `benchpipe init`: a workspace of one's own (boards/, scenarios/, .gitignore), a
//! board file per host from what the host says over SSH (`probe`), a starter scenario,
//! and the next three commands. Nothing existing is replaced: every file is checked
//! before any host is asked, and each is written whole or not at all
//! (`owned::publish_new`). Host keys are checked as a board's are; an unknown key is
//! refused unless `--accept-new-host-key`, which records it in the workspace's own
//! known_hosts that the board file then names; a changed key is always refused.

use std::fmt::Write as _;
mod render;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::model::{BoardName, SshTarget};
use crate::probe::{self, HostFacts};
use crate::shown::one_line;
use crate::transport::quote;
use crate::transport::ssh::hostkey::{self, HostKey, Verdict};
use crate::transport::ssh::{self, ConnectOptions, SshTransport};

/// The longest `--board` value taken.
const MAX_ARG: usize = 300;
/// How long a host may take to answer each step (connect, each command).
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(clap::Args, Debug)]
pub struct InitArgs {
    /// A host to describe: `[user@]host[:port]` (the board is named after the host), or
    /// `NAME=[user@]host[:port]`. Repeatable. Without any, boards/ gets an example.
    #[arg(long = "board", value_name = "[NAME=][USER@]HOST[:PORT]")]
    pub boards: Vec<String>,
    /// The workspace directory (default: the current one); made when missing. Files
    /// already there are never replaced.
    #[arg(long, default_value = ".", value_name = "PATH")]
    pub dir: PathBuf,
    /// The private key to log in with (default: the ssh-agent, ~/.ssh/config and
    /// ~/.ssh/id_*); the board files name it.
    #[arg(long, value_name = "PATH")]
    pub identity: Option<PathBuf>,
    /// Record the key of a host that ~/.ssh/known_hosts does not know in the
    /// workspace's `known_hosts` (its board file names it), after comparing the
    /// fingerprint init prints with the board's own. A changed key is always refused.
    #[arg(long)]
    pub accept_new_host_key: bool,
}

/// One `--board` value, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HostArg {
    name: String,
    user: Option<String>,
    host: String,
    port: Option<u16>,
}

/// Checks `--board`: a plain board name, a user and host of plain characters, a port.
fn parse_host(arg: &str) -> std::result::Result<HostArg, String> {
    let shown = one_line(arg);
    if arg.len() > MAX_ARG {
        return Err(format!("--board: longer than {MAX_ARG} bytes"));
    }
    if arg.chars().any(char::is_control) {
        return Err(format!(
            "--board {shown}: holds a control character; expected [NAME=][USER@]HOST[:PORT]"
        ));
    }
    let (name, rest) = match arg.split_once('=') {
        Some((n, r)) => (Some(n), r),
        None => (None, arg),
    };
    let bad = |why: &str| Err(format!("--board {shown}: {why}"));
    let Some((user, host, port)) = ssh::config::split_jump(rest) else {
        return bad(
            "expected [NAME=][USER@]HOST[:PORT], like pi@192.168.1.20 or pi4-1=pi@pi4.local:22",
        );
    };
    if let Some(u) = user
        && !(u.len() <= 64
            && !u.starts_with('-')
            && u.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)))
    {
        return bad("the user may hold letters, digits, `.`, `_` and `-`, not starting with `-`");
    }
    let bracketed = rest
        .rsplit_once('@')
        .map_or(rest, |(_, h)| h)
        .starts_with('[');
    let host_ok = if bracketed || host.contains(':') {
        host.parse::<std::net::Ipv6Addr>().is_ok()
    } else {
        host.len() <= 253
            && !host.starts_with(['-', '.'])
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    };
    if !host_ok {
        return bad(
            "the host must be a host name, an IPv4 address, an [IPv6] address or a ~/.ssh/config alias of letters, digits, `.`, `_` and `-`",
        );
    }
    let name = match name {
        Some(n) if crate::model::is_plain_name(n) => n.to_string(),
        Some(_) => {
            return bad(
                "bad board name before `=`: use letters, digits, `-`, `_` and `.`, starting with a letter or digit",
            );
        }
        None if crate::model::is_plain_name(host) => host.to_string(),
        None => return bad("no board name can be made of this host: name it, as NAME=HOST"),
    };
    Ok(HostArg {
        name,
        user: user.map(str::to_string),
        host: host.to_string(),
        port,
    })
}

/// A host as init found it.
struct Probed {
    arg: HostArg,
    user: String,
    facts: HostFacts,
    /// The key recorded in the workspace known_hosts: its known_hosts name and the key.
    accepted: Option<(String, HostKey)>,
}

/// What a file of the workspace is to init.
#[derive(Debug, PartialEq, Eq)]
enum Existing {
    Absent,
    /// There already, with the bytes init would write: left as it is.
    Same,
    Other,
}

fn existing(path: &Path, text: Option<&str>) -> Existing {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Existing::Absent,
        Ok(m) if m.is_file() && m.len() <= 1 << 20 => match (text, std::fs::read(path)) {
            (Some(t), Ok(b)) if b == t.as_bytes() => Existing::Same,
            _ => Existing::Other,
        },
        _ => Existing::Other,
    }
}

pub(in crate::cli) fn run(args: &InitArgs) -> Result<()> {
    let mut hosts = Vec::new();
    let mut problems = Vec::new();
    for b in &args.boards {
        match parse_host(b) {
            Ok(h) if hosts.iter().any(|o: &HostArg| o.name == h.name) => problems.push(format!(
                "--board {}: a second board named `{}`; name one with NAME=HOST",
                one_line(b),
                h.name
            )),
            Ok(h) => hosts.push(h),
            Err(e) => problems.push(e),
        }
    }
    let identity = args
        .identity
        .as_ref()
        .and_then(|p| identity_path(p).map_err(|e| problems.push(e)).ok());
    if !problems.is_empty() {
        return Err(Error::Usage(problems.join("\n")));
    }
    let dir = &args.dir;
    let absolute = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
    if absolute.to_str().is_none() {
        return Err(Error::Usage(format!(
            "--dir {}: not UTF-8; a board file cannot name a path in it",
            one_line(&dir.display().to_string())
        )));
    }
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(Error::Usage(format!(
                "--dir {}: not a directory",
                one_line(&dir.display().to_string())
            )));
        }
        _ => {}
    }
    // Every file init would write, checked before any host is asked.
    let scenario = render::scenario();
    let example = render::example_board();
    let known_hosts = dir.join("known_hosts");
    let mut fixed: Vec<(PathBuf, String)> = vec![(dir.join(render::SCENARIO), scenario)];
    if hosts.is_empty() {
        fixed.push((dir.join("boards/example.toml.sample"), example));
    }
    let mut taken = Vec::new();
    for h in &hosts {
        let p = dir.join("boards").join(format!("{}.toml", h.name));
        if existing(&p, None) != Existing::Absent {
            taken.push(p);
        }
    }
    if args.accept_new_host_key
        && !hosts.is_empty()
        && existing(&known_hosts, None) != Existing::Absent
    {
        taken.push(known_hosts.clone());
    }
    for (p, text) in &fixed {
        if existing(p, Some(text)) == Existing::Other {
            taken.push(p.clone());
        }
    }
    if !taken.is_empty() {
        let list: Vec<String> = taken
            .iter()
            .map(|p| format!("  {}", one_line(&p.display().to_string())))
            .collect();
        return Err(Error::Usage(format!(
            "init replaces no file, and these exist:\n{}\nmove them away, or give another --dir",
            list.join("\n")
        )));
    }
    let probed = probe_all(&hosts, identity.as_deref(), args.accept_new_host_key)?;
    write_workspace(dir, &absolute, &probed, identity.as_deref(), &fixed)?;
    println!("{}", next_steps(dir, hosts.is_empty()));
    Ok(())
}

/// `--identity`: an existing file, named absolutely in the board files.
fn identity_path(p: &Path) -> std::result::Result<String, String> {
    let shown = one_line(&p.display().to_string()).into_owned();
    match std::fs::metadata(p) {
        Ok(m) if m.is_file() => {}
        Ok(_) => return Err(format!("--identity {shown}: not a file")),
        Err(e) => return Err(format!("--identity {shown}: {e}")),
    }
    let abs = std::path::absolute(p).map_err(|e| format!("--identity {shown}: {e}"))?;
    abs.to_str()
        .filter(|s| !s.chars().any(char::is_control))
        .map(str::to_string)
        .ok_or_else(|| format!("--identity {shown}: not a path a board file can hold"))
}

/// Asks every host at once; every failure is said, the first decides the exit code.
fn probe_all(hosts: &[HostArg], identity: Option<&str>, accept: bool) -> Result<Vec<Probed>> {
    let results: Vec<Result<Probed>> = std::thread::scope(|s| {
        let handles: Vec<_> = hosts
            .iter()
            .map(|h| s.spawn(move || probe_one(h, identity, accept)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::Other("probing a host failed (a bug)".into())))
            })
            .collect()
    });
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(p) => out.push(p),
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => Ok(out),
        1 => Err(errors.remove(0)),
        _ => {
            let usage = errors.iter().all(|e| matches!(e, Error::Usage(_)));
            let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
            let text = format!("{}\nnothing was written", text.join("\n"));
            Err(if usage {
                Error::Usage(text)
            } else {
                Error::Other(text)
            })
        }
    }
}

fn probe_one(h: &HostArg, identity: Option<&str>, accept: bool) -> Result<Probed> {
    let board = BoardName::new(h.name.as_str());
    let mut target = SshTarget {
        host: h.host.clone(),
        port: h.port,
        user: h.user.clone(),
        identity: identity.map(PathBuf::from),
        ..SshTarget::default()
    };
    let options = ConnectOptions::default();
    let (resolved, key, verdict) = ssh::offered_verdict(&board, &target, TIMEOUT, &options)?;
    let pattern = hostkey::host_pattern(&resolved.host, resolved.port);
    let file = one_line(&resolved.known_hosts.display().to_string()).into_owned();
    let fp = key.fingerprint();
    let accepted = match verdict {
        Verdict::Match => None,
        Verdict::Unknown if accept => {
            // Pinned for this session: the key the scan saw is the one logged in to.
            target.host_key = Some(format!(
                "{} {}",
                key.algorithm,
                hostkey::base64(&key.blob, true)
            ));
            Some((pattern.clone(), key.clone()))
        }
        Verdict::Unknown => {
            let kind = key
                .algorithm
                .trim_start_matches("ssh-")
                .split('-')
                .next()
                .unwrap_or("ed25519");
            let port = if resolved.port == 22 {
                String::new()
            } else {
                format!("-p {} ", resolved.port)
            };
            let host = quote::sh(&resolved.host);
            return Err(Error::Usage(format!(
                "{pattern} (board {board}): its host key is not in {file}. It offers {} key {fp}; \
                 benchpipe trusts no key it was not shown. Compare that fingerprint with the \
                 board's own, on its console: `ssh-keygen -lf /etc/ssh/ssh_host_{kind}_key.pub`. \
                 Then either add the key to {file} (`ssh-keyscan {port}-t {kind} {host} >> {file}`, \
                 and `ssh-keygen -lF {}` must print the same fingerprint) and run init again, or \
                 run init again with --accept-new-host-key to record it in this workspace's known_hosts",
                key.algorithm,
                quote::sh(&pattern),
            )));
        }
        Verdict::Mismatch => {
            return Err(Error::Usage(format!(
                "{pattern} (board {board}): it offers {} key {fp}, which does NOT match the key \
                 {file} holds for it. Someone may be intercepting the connection, or the board \
                 was reinstalled; init records no changed key. If it was reinstalled, remove the \
                 old key (`ssh-keygen -R {}`), compare the new fingerprint with the board's own \
                 and run init again",
                key.algorithm,
                quote::sh(&pattern),
            )));
        }
    };
    let mut t = SshTransport::connect_with(&board, &target, TIMEOUT, options)?;
    let user = t.resolved().user.clone();
    let facts = probe::gather(&mut t)?;
    Ok(Probed {
        arg: h.clone(),
        user,
        facts,
        accepted,
    })
}

/// Makes the directories and writes every file not there yet, each whole.
fn write_workspace(
    dir: &Path,
    absolute: &Path,
    probed: &[Probed],
    identity: Option<&str>,
    fixed: &[(PathBuf, String)],
) -> Result<()> {
    for d in [dir.to_path_buf(), dir.join("boards"), dir.join("scenarios")] {
        match std::fs::create_dir_all(&d) {
            Ok(()) => {}
            Err(e) => return Err(Error::io(&d, e)),
        }
    }
    let publish = |path: &Path, text: &str, mode: u32| -> Result<()> {
        crate::owned::publish_new(path, text.as_bytes(), mode).map_err(|e| match e {
            crate::owned::OwnedError::Io { path, source }
                if source.kind() == std::io::ErrorKind::AlreadyExists =>
            {
                Error::Usage(format!(
                    "{} appeared while init ran; init replaces no file",
                    one_line(&path.display().to_string())
                ))
            }
            e => e.into(),
        })
    };
    let known_hosts = absolute.join("known_hosts");
    let kh_text: String = probed
        .iter()
        .filter_map(|p| p.accepted.as_ref())
        .map(|(pattern, key)| key.known_hosts_line(pattern))
        .collect();
    if !kh_text.is_empty() {
        publish(&dir.join("known_hosts"), &kh_text, 0o600)?;
        println!(
            "wrote {} (the accepted host keys)",
            shown_path(&dir.join("known_hosts"))
        );
    }
    let kh_str = known_hosts.to_string_lossy().into_owned();
    for p in probed {
        let fingerprint = p.accepted.as_ref().map(|(_, k)| k.fingerprint());
        let reach = render::Reach {
            name: &p.arg.name,
            host: &p.arg.host,
            port: p.arg.port,
            user: &p.user,
            identity,
            known_hosts: fingerprint.as_deref().map(|f| (kh_str.as_str(), f)),
        };
        let path = dir.join("boards").join(format!("{}.toml", p.arg.name));
        publish(&path, &render::board_file(&reach, &p.facts), 0o644)?;
        println!("wrote {}: {}", shown_path(&path), summary(p));
        if let Some(f) = &fingerprint {
            println!("  recorded its host key {f}: compare it with the board's own");
        }
    }
    for (path, text) in fixed {
        if existing(path, Some(text)) == Existing::Same {
            println!("kept {} (already as init writes it)", shown_path(path));
        } else {
            publish(path, text, 0o644)?;
            println!("wrote {}", shown_path(path));
        }
    }
    let gitignore = dir.join(".gitignore");
    match existing(&gitignore, None) {
        Existing::Absent => {
            publish(&gitignore, render::GITIGNORE, 0o644)?;
            println!("wrote {}", shown_path(&gitignore));
        }
        _ => println!(
            "kept {}: make sure it ignores /results/ and /reports/",
            shown_path(&gitignore)
        ),
    }
    Ok(())
}

fn shown_path(p: &Path) -> String {
    one_line(&p.display().to_string()).into_owned()
}

/// `Raspberry Pi 4 Model B Rev 1.4, 3793 MiB, Debian GNU/Linux 12 (bookworm), login pi
/// (sudo without password); 1 free disk (commented out), 1 in use`.
fn summary(p: &Probed) -> String {
    let f = &p.facts;
    let storage: Vec<_> = f.disks.iter().filter(|d| d.is_storage()).collect();
    let free = storage.iter().filter(|d| !d.in_use()).count();
    let privilege = match f.privilege {
        probe::Privilege::Root => "root",
        probe::Privilege::PasswordlessSudo => "sudo without password: become = \"sudo\"",
        probe::Privilege::SudoWithPassword => "NOT root, sudo asks a password: see the file",
        probe::Privilege::None => "NOT root and no sudo: see the file",
    };
    format!(
        "{}, {}, {}, login {} ({privilege}); {free} free disk(s) commented out, {} in use",
        one_line(f.model.as_deref().unwrap_or("model unknown")),
        f.memory_kib
            .map_or_else(|| "memory unknown".into(), |k| format!("{} MiB", k / 1024)),
        one_line(
            f.os_release
                .get("PRETTY_NAME")
                .map_or("no os-release", String::as_str)
        ),
        one_line(&p.user),
        storage.len() - free
    )
}

/// The commands that follow, for this workspace.
fn next_steps(dir: &Path, no_boards: bool) -> String {
    let mut s = String::from("\nNext:\n");
    if dir != Path::new(".") {
        let _ = writeln!(s, "  cd {}", one_line(&quote::sh(&dir.to_string_lossy())));
    }
    if no_boards {
        s.push_str(
            "  # first describe a board: copy boards/example.toml.sample to boards/NAME.toml and\n  \
             # fill it in, or run `benchpipe init --board [USER@]HOST` here\n",
        );
    }
    for c in ["check", "apply --dry-run", "apply"] {
        let _ = writeln!(s, "  benchpipe {c} {}", render::SCENARIO);
    }
    s
}

#[cfg(test)]
mod tests;
