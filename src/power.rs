//! A board's power: the commands that switch it on, off or cycle it (its `[power]`
//! templates, or a Turing Pi BMC's `tpi power`), where they run (the controller, or a
//! `via` host), and running them.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::bench::{self, TemplateError, Vars};
use crate::model::{Board, BoardName, Connection, Flash, SshTarget, StorageRole};
use crate::transport::{Exit, Transport, TransportError};

/// How long one power command may take.
const POWER_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerAction {
    On,
    Off,
    Cycle,
}

impl PowerAction {
    pub fn word(self) -> &'static str {
        match self {
            PowerAction::On => "on",
            PowerAction::Off => "off",
            PowerAction::Cycle => "cycle",
        }
    }
}

/// The commands of one power action, in order, and the host they run on (`None`: the
/// controller).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerPlan {
    pub via: Option<String>,
    pub commands: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum PowerError {
    #[error("board {board} has no way to power {action}: {help}")]
    NoWay {
        board: String,
        action: &'static str,
        help: &'static str,
    },
    #[error("{0}")]
    Template(#[from] TemplateError),
    #[error("power {action}: `{command}` {exit}: {stderr}")]
    Failed {
        action: &'static str,
        command: String,
        exit: Exit,
        stderr: String,
    },
    #[error("{0}")]
    Transport(#[from] TransportError),
}

/// In apply, a power failure fails the cells that needed the board booted.
impl From<PowerError> for crate::failure::CellFailure {
    fn from(e: PowerError) -> Self {
        use crate::failure::CellFailure;
        match e {
            PowerError::Failed {
                action,
                command,
                exit,
                stderr,
            } => CellFailure::step_failed(format!("power {action}"), &command, &exit, &stderr),
            PowerError::Template(t) => t.into(),
            PowerError::Transport(t) => t.into(),
            e @ PowerError::NoWay { .. } => CellFailure::Refused {
                reason: e.to_string(),
            },
        }
    }
}

/// The values every board template may use: `board`, `host`, and where they apply
/// `device` (the boot storage's device) and `node` (a `tpi` board's node).
pub fn board_vars(board: &Board) -> Vars {
    let mut vars = Vars::new();
    vars.set("board", board.name.as_str()).set(
        "host",
        match &board.connection {
            Connection::Local => "localhost".to_string(),
            Connection::Ssh(t) => t.host.clone(),
        },
    );
    if let Some(device) = board
        .storage
        .iter()
        .filter(|s| s.role == StorageRole::Boot)
        .find_map(|s| s.device.as_deref())
    {
        vars.set("device", device);
    }
    if let Flash::Tpi { node, .. } = &board.flash {
        vars.set("node", node.to_string());
    }
    vars
}

/// The commands that do `action` to `board`: its `[power]` templates (a cycle is
/// `cycle`, else `off` then `on`); without `[power]`, a `tpi` board's BMC
/// (`tpi power off|on --node N` on `via`).
pub fn plan(board: &Board, action: PowerAction) -> Result<PowerPlan, PowerError> {
    let no_way = |help| PowerError::NoWay {
        board: board.name.to_string(),
        action: action.word(),
        help,
    };
    if let Some(p) = &board.power {
        let vars = board_vars(board);
        let templates: Vec<&String> = match action {
            PowerAction::On => p.on.iter().collect(),
            PowerAction::Off => p.off.iter().collect(),
            PowerAction::Cycle => match (&p.cycle, &p.off, &p.on) {
                (Some(c), _, _) => vec![c],
                (None, Some(off), Some(on)) => vec![off, on],
                _ => Vec::new(),
            },
        };
        if templates.is_empty() {
            return Err(no_way(match action {
                PowerAction::Cycle => "its [power] has no `cycle`, nor both `off` and `on`",
                PowerAction::On => "its [power] has no `on`",
                PowerAction::Off => "its [power] has no `off`",
            }));
        }
        let commands = templates
            .into_iter()
            .map(|t| bench::render(t, &vars))
            .collect::<Result<_, _>>()?;
        return Ok(PowerPlan {
            via: p.via.clone(),
            commands,
        });
    }
    if let Flash::Tpi { via, node, .. } = &board.flash {
        let words: &[&str] = match action {
            PowerAction::On => &["on"],
            PowerAction::Off => &["off"],
            PowerAction::Cycle => &["off", "on"],
        };
        return Ok(PowerPlan {
            via: Some(via.clone()),
            commands: words.iter().map(|w| tpi_power(w, *node)).collect(),
        });
    }
    Err(no_way(
        "it declares no [power] (and is not a tpi board, whose BMC would do)",
    ))
}

/// `tpi power on|off --node N`: the tpi CLI's `power` subcommand takes `on`, `off`,
/// `reset` or `get` and `-n/--node 1..4` (turing-machines/tpi, `src/cli.rs`).
pub fn tpi_power(word: &str, node: u32) -> String {
    format!("tpi power {word} --node {node}")
}

/// Runs `plan`'s commands in order on `t`; the first that fails ends it.
pub fn run(t: &mut dyn Transport, action: PowerAction, plan: &PowerPlan) -> Result<(), PowerError> {
    for command in &plan.commands {
        let out = t.run(command, Some(POWER_TIMEOUT))?;
        if !out.exit.success() {
            let text = out.stderr_str();
            let text = if text.trim().is_empty() {
                out.stdout_str()
            } else {
                text
            };
            return Err(PowerError::Failed {
                action: action.word(),
                command: command.clone(),
                exit: out.exit,
                stderr: crate::failure::stderr_tail(&text).join("; "),
            });
        }
    }
    Ok(())
}

/// The board to connect to for `via`: a board of the workspace by that name, or else an
/// SSH destination `[user@]host[:port]` (or a `~/.ssh/config` alias), checked against
/// `~/.ssh/known_hosts` strictly like any board. The result is `for_board` with only
/// its name and connection replaced, and nothing of its own to flash or power.
pub fn via_board(for_board: &Board, boards: &BTreeMap<BoardName, Board>, via: &str) -> Board {
    if let Some(b) = boards.get(&BoardName::new(via)) {
        return b.clone();
    }
    let mut b = for_board.clone();
    b.name = BoardName::new(via);
    b.connection = Connection::Ssh(destination(via));
    b.flash = Flash::None;
    b.power = None;
    b.storage.clear();
    b
}

/// `[user@]host[:port]`; a host with more than one `:` (IPv6) keeps them all.
pub fn destination(via: &str) -> SshTarget {
    let (user, rest) = match via.rsplit_once('@') {
        Some((u, h)) => (Some(u.to_string()), h),
        None => (None, via),
    };
    let (host, port) = match rest.split_once(':') {
        Some((h, p)) if !p.contains(':') => match p.parse::<u16>() {
            Ok(port) => (h, Some(port)),
            Err(_) => (rest, None),
        },
        _ => (rest, None),
    };
    SshTarget {
        host: host.to_string(),
        port,
        user,
        ..SshTarget::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_via_destination_gives_its_user_host_and_port() {
        let d = destination("pi@10.0.0.5:2222");
        assert_eq!(
            (d.user.as_deref(), d.host.as_str(), d.port),
            (Some("pi"), "10.0.0.5", Some(2222))
        );
        let d = destination("bmc");
        assert_eq!((d.user, d.host.as_str(), d.port), (None, "bmc", None));
        let d = destination("fe80::1");
        assert_eq!((d.host.as_str(), d.port), ("fe80::1", None));
    }

    #[test]
    fn tpi_power_names_the_node() {
        assert_eq!(tpi_power("off", 3), "tpi power off --node 3");
    }
}
