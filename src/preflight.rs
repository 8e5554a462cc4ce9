//! `benchpipe boards check`: a preflight of each board, one line each, before anything
//! is run there: reachable, host key known, login works, root or sudo, free space in
//! the workdir, the recipes' tools present, and whether throttling can be read.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::apply::facts::read_temperature;
use crate::apply::provision::missing_commands;
use crate::apply::route::{self, Route};
use crate::model::{Board, Recipe, Side, TestName};
use crate::transport::Connector;
use crate::transport::{Transport, TransportError, quote};

/// Below this much free space in the workdir's filesystem a board fails the check: the
/// xz corpus, fio files and logs need room.
pub const MIN_FREE_MIB: u64 = 1024;

/// One board's verdict: `ok` unless a check that stops benchpipe failed.
#[derive(Debug)]
pub struct BoardCheck {
    pub board: String,
    pub ok: bool,
    /// `what: finding` items, in the order they were checked.
    pub findings: Vec<String>,
}

impl BoardCheck {
    /// `lab-1  ok  reachable (root@10.0.0.2:22), ...`: the one line per board.
    pub fn line(&self) -> String {
        format!(
            "{}  {}  {}",
            self.board,
            if self.ok { "ok" } else { "FAIL" },
            self.findings.join("; ")
        )
    }
}

/// Checks one board: connect, then ask it what the checks need, each bounded.
pub fn check(board: &Board, recipes: &[&Recipe], connector: &dyn Connector) -> BoardCheck {
    let mut c = BoardCheck {
        board: board.name.to_string(),
        ok: true,
        findings: Vec::new(),
    };
    let mut t = match connector.board(board) {
        Ok(t) => t,
        Err(e) => {
            c.ok = false;
            c.findings.push(match &e {
                TransportError::HostKey { .. } => {
                    format!("host key not trusted: {e} (see `benchpipe boards trust`)")
                }
                TransportError::Auth { .. } => format!("login failed: {e}"),
                TransportError::Become { .. } => format!("become sudo fails: {e}"),
                _ => format!("unreachable: {e}"),
            });
            return c;
        }
    };
    c.findings.push(format!("reachable ({})", t.target()));
    let quick = Some(Duration::from_secs(20));
    let root = match t.run("id -u; id -un; printf '%s\\n' \"${SUDO_USER:-}\"", quick) {
        Ok(o) if o.exit.success() => {
            let text = o.stdout_str();
            let mut lines = text.lines();
            let uid = lines.next().unwrap_or("").trim().to_string();
            let user = lines.next().unwrap_or("?").trim().to_string();
            // With `become = "sudo"` every command already runs through sudo.
            match lines.next().map(str::trim).filter(|s| !s.is_empty()) {
                Some(login) if uid == "0" => c
                    .findings
                    .push(format!("login {login}, root through sudo (become works)")),
                _ => c.findings.push(format!("login {user}")),
            }
            uid == "0"
        }
        other => {
            c.ok = false;
            c.findings
                .push(format!("cannot run a command: {}", describe(other)));
            return c;
        }
    };
    if !root {
        // mkfs, mount and apt-get need root: without it only unprivileged tests run.
        let sudo = t.run("sudo -n true", quick).is_ok_and(|o| o.exit.success());
        c.findings.push(if sudo {
            "not root; sudo works without a password (set become = \"sudo\" to use it)".to_string()
        } else {
            "not root and no password-less sudo: formatting, mounting and installing will fail"
                .to_string()
        });
    }
    match free_mib(t.as_mut(), &board.workdir) {
        Some(free) if free < MIN_FREE_MIB => {
            c.ok = false;
            c.findings.push(format!(
                "only {free} MiB free for {} (needs {MIN_FREE_MIB} MiB)",
                board.workdir
            ));
        }
        Some(free) => c.findings.push(format!(
            "{:.1} GiB free for {}",
            free as f64 / 1024.0,
            board.workdir
        )),
        None => {
            c.ok = false;
            c.findings
                .push(format!("cannot tell the free space for {}", board.workdir));
        }
    }
    // What a board needs is what provisioning installs there: the board's side and
    // its members' (a board is the only member of itself).
    let needs: Vec<_> = recipes
        .iter()
        .filter_map(|r| route::merged(r, &[Side::Board, Side::Members]))
        .collect();
    let commands: BTreeSet<&str> = needs
        .iter()
        .flat_map(|n| n.commands.iter().map(String::as_str))
        .collect();
    let routes = missing_commands(t.as_mut(), &commands).and_then(|missing| {
        let missing: BTreeSet<String> = missing.into_iter().collect();
        route::for_preflight(t.as_mut(), recipes, &missing, root).map(|r| (missing, r))
    });
    match routes {
        Ok((missing, _)) if missing.is_empty() => c
            .findings
            .push(format!("tools: all {} present", commands.len())),
        Ok((_, routes)) => c
            .findings
            .push(format!("tools missing: {}", said_per_route(&routes))),
        Err(e) => {
            c.ok = false;
            c.findings.push(format!("cannot look for tools: {e}"));
        }
    }
    let vcgencmd = t
        .run("vcgencmd get_throttled", quick)
        .is_ok_and(|o| o.exit.success() && o.stdout_str().contains("throttled="));
    let temperature = read_temperature(t.as_mut(), board);
    c.findings.push(match (vcgencmd, temperature) {
        (true, _) => "throttling: vcgencmd".to_string(),
        (false, Some(celsius)) => {
            format!("throttling: not readable (no vcgencmd), temperature {celsius:.0} °C")
        }
        (false, None) => "throttling and temperature: not readable".to_string(),
    });
    c
}

/// `iozone (iozone, iozone-1m): apply installs iozone3 from non-free ...; xz (xz):
/// apply runs `apt-get install xz-utils``: the commands and tests that share a route,
/// once.
fn said_per_route(routes: &[(TestName, Vec<String>, Route)]) -> String {
    let mut by_said: BTreeMap<String, (BTreeSet<&str>, BTreeSet<&str>)> = BTreeMap::new();
    for (test, commands, r) in routes {
        let e = by_said.entry(r.said()).or_default();
        e.0.extend(commands.iter().map(String::as_str));
        e.1.insert(test.as_str());
    }
    by_said
        .into_iter()
        .map(|(said, (commands, tests))| {
            let list = |s: BTreeSet<&str>| s.into_iter().collect::<Vec<_>>().join(", ");
            format!("{} ({}): {said}", list(commands), list(tests))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Free MiB of the filesystem holding `dir`, or its nearest existing parent.
fn free_mib(t: &mut dyn Transport, dir: &str) -> Option<u64> {
    let script = format!(
        "d={}; while [ ! -d \"$d\" ]; do d=$(dirname -- \"$d\"); done; df -Pk -- \"$d\" | tail -n 1",
        quote::sh(dir)
    );
    let out = t.run(&script, Some(Duration::from_secs(20))).ok()?;
    let kib: u64 = out.stdout_str().split_whitespace().nth(3)?.parse().ok()?;
    Some(kib / 1024)
}

fn describe(r: Result<crate::transport::Output, TransportError>) -> String {
    match r {
        Ok(o) => format!("{} {}", o.exit, o.stderr_str().trim()),
        Err(e) => e.to_string(),
    }
}
