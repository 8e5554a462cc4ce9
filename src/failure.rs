//! Why a cell failed, as data: made by apply, kept in `failure.json`, and rendered by one
//! `Display` for the terminal, the plan and the report, which never parse it.

use serde::{Deserialize, Serialize};

use crate::model::PackageManager;
use crate::transport::{Exit, TransportError};

/// Why the last attempt at a cell failed.
///
/// Serialised with a `kind` tag (`"step_failed"`, `"board_lost"`, ...). Adding a variant
/// or a field that older readers need bumps `store::FAILURE_FORMAT`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CellFailure {
    /// A command ended with a non-zero exit: a run, a setup or teardown step, apt-get.
    StepFailed {
        /// What the command was for: `Measured run 2`, `setup`, `teardown`, ...
        step: String,
        /// The command's first line, as it ran.
        command: String,
        exit: Exit,
        /// The last lines of its stderr as a terminal shows them (no escape codes).
        stderr_tail: Box<[String]>,
        /// The whole output, relative to the cell's directory in the store.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log: Option<String>,
    },
    /// A run's output did not give its metrics.
    ParseFailed {
        step: String,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        log: Option<String>,
    },
    /// A command ran longer than its timeout and was killed; the board is still there.
    Timeout { command: String, after_secs: f64 },
    /// The transport failed, but the board is still reachable.
    Transport { message: String },
    /// The board could not be reached, refused its host key, or the connection to it was
    /// lost: every remaining cell of the board fails with it.
    BoardLost { cause: String },
    /// A service did not start or stop.
    Service { service: String, message: String },
    /// A service's `ready` check still failed when its time was up.
    NotReady {
        service: String,
        after_secs: f64,
        command: String,
        exit: Exit,
        stderr_tail: Box<[String]>,
    },
    /// Commands the recipes need are missing on a side (and, with `installed`, still
    /// missing after apt-get installed their packages).
    MissingCommands {
        side: String,
        commands: Vec<String>,
        packages: Vec<String>,
        installed: bool,
        /// The side's package manager (absent in failures recorded before it was
        /// chosen per distribution: apt).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        manager: Option<PackageManager>,
    },
    /// Packages a recipe needs that the side's package manager does not have, even
    /// after refreshing its lists: only that recipe's cells fail.
    PackageUnavailable {
        side: String,
        manager: PackageManager,
        packages: Vec<String>,
    },
    /// Commands are missing on a side whose distribution benchpipe knows no package
    /// manager for (its os-release `PRETTY_NAME` or `ID`).
    NoPackageManager {
        side: String,
        os: String,
        commands: Vec<String>,
    },
    /// The board does not run the image the cell names: an expected field differs.
    ImageMismatch {
        image: String,
        field: String,
        expected: String,
        /// What the board has (at most 80 characters); `None` when the field is absent.
        found: Option<String>,
    },
    /// An image could not be fetched, written or proven on the boot device.
    Flash { image: String, message: String },
    /// benchpipe refused to act, e.g. on a workdir it cannot claim.
    Refused { reason: String },
    /// The storage could not be (or would not be) formatted, mounted or released.
    Storage { message: String },
    /// A command template did not render.
    Template { message: String },
    /// The store could not be written.
    Store { message: String },
    /// Runs left out by the method (flagged ones, with `exclude_flagged`) kept the cell
    /// from reaching `runs.min` within `apply::run_budget` measured runs.
    TooManyFlaggedRuns {
        taken: usize,
        valid: usize,
        min: u32,
        budget: usize,
    },
    /// benchpipe's worker for the board panicked: a bug.
    Panicked { board: String, message: String },
    /// Ctrl-C or a signal stopped the cell.
    Interrupted,
    /// Not a failure: the test cannot apply on this board (a tool no package provides
    /// is missing, a recipe's `[[requires]]` check said why). Apply records it as a
    /// skip (`skip.json`), never in failure.json.
    NotApplicable { reason: String },
    /// Not a failure: `apply --deadline` left too little time for the cell's steps by
    /// their estimates, so it did not start. Never recorded: the next apply runs it.
    OutOfTime { needs_secs: f64, left_secs: f64 },
    /// A failure recorded before failures were typed (`failure.json` format 1): its
    /// cause as text, shown without the log path it ended with.
    Legacy { cause: String },
}

impl CellFailure {
    /// Whether the board is gone: the cells after this one on it cannot run either.
    pub fn ends_board(&self) -> bool {
        matches!(self, CellFailure::BoardLost { .. })
    }

    /// The failing step's output, relative to the cell's directory in the store.
    pub fn log(&self) -> Option<&str> {
        match self {
            CellFailure::StepFailed { log, .. } | CellFailure::ParseFailed { log, .. } => {
                log.as_deref()
            }
            _ => None,
        }
    }

    /// A command that ended with `exit`: its stderr's last lines are kept, as a terminal
    /// shows them, so a tool's colour codes reach neither failure.json nor a report.
    pub fn step_failed(step: impl Into<String>, command: &str, exit: &Exit, stderr: &str) -> Self {
        CellFailure::StepFailed {
            step: step.into(),
            command: first_line(command),
            exit: exit.clone(),
            stderr_tail: stderr_tail(stderr),
            log: None,
        }
    }

    /// The same failure with the log of its output.
    pub fn with_log(mut self, path: String) -> Self {
        if let CellFailure::StepFailed { log, .. } | CellFailure::ParseFailed { log, .. } =
            &mut self
        {
            *log = Some(path);
        }
        self
    }
}

impl From<TransportError> for CellFailure {
    /// A timeout or another error on a connection that still works fails the cell; any
    /// other error means the board is gone, wherever it happened (connect, setup, a
    /// ready check, a run).
    fn from(e: TransportError) -> Self {
        match &e {
            TransportError::Timeout { command, after, .. } => CellFailure::Timeout {
                command: first_line(command),
                after_secs: after.as_secs_f64(),
            },
            TransportError::Other { .. } => CellFailure::Transport {
                message: e.to_string(),
            },
            TransportError::Unreachable { .. }
            | TransportError::Auth { .. }
            | TransportError::HostKey { .. }
            | TransportError::Become { .. }
            | TransportError::Lost { .. } => CellFailure::BoardLost {
                cause: e.to_string(),
            },
        }
    }
}

impl std::fmt::Display for CellFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CellFailure::StepFailed {
                step,
                command,
                exit,
                stderr_tail,
                ..
            } => write!(
                f,
                "{step}: `{command}` ended with {exit}{}",
                Hint(stderr_tail)
            ),
            CellFailure::ParseFailed { step, message, .. } => write!(f, "{step}: {message}"),
            CellFailure::Flash { image, message } => write!(f, "flash {image}: {message}"),
            CellFailure::ImageMismatch {
                image,
                field,
                expected,
                found,
            } => match found {
                Some(found) => write!(
                    f,
                    "board does not run image {image}: {field} is {found:?}, expected {expected:?}"
                ),
                None => write!(
                    f,
                    "board does not run image {image}: {field} is absent, expected {expected:?}"
                ),
            },
            CellFailure::Timeout {
                command,
                after_secs,
            } => write!(f, "`{command}` timed out after {after_secs:.0} s"),
            CellFailure::Transport { message } => write!(f, "{message}"),
            CellFailure::BoardLost { cause } => write!(f, "{cause}"),
            CellFailure::Service { service, message } => write!(f, "service {service}: {message}"),
            CellFailure::NotReady {
                service,
                after_secs,
                command,
                exit,
                stderr_tail,
            } => write!(
                f,
                "service {service} was not ready after {after_secs:.0} s: `{command}` ended with {exit}{}",
                Hint(stderr_tail)
            ),
            CellFailure::MissingCommands {
                side,
                commands,
                packages,
                installed: false,
                manager,
            } if packages.is_empty() => write!(
                f,
                "{side} lacks {}, and the recipe's needs for that side name no {} package providing it",
                commands.join(", "),
                manager.unwrap_or(PackageManager::Apt)
            ),
            CellFailure::MissingCommands {
                side,
                commands,
                packages,
                installed: false,
                manager,
            } => write!(
                f,
                "{side} lacks {}; install them as root with: {}",
                commands.join(", "),
                manager
                    .unwrap_or(PackageManager::Apt)
                    .install_hint(packages)
            ),
            CellFailure::MissingCommands {
                side,
                commands,
                packages,
                installed: true,
                ..
            } => write!(
                f,
                "{side} still lacks {} after installing {}",
                commands.join(", "),
                packages.join(" ")
            ),
            CellFailure::PackageUnavailable {
                side,
                manager,
                packages,
            } => write!(
                f,
                "{} {} not available from {manager} on {side}",
                if packages.len() == 1 {
                    "package"
                } else {
                    "packages"
                },
                packages.join(", ")
            ),
            CellFailure::NoPackageManager { side, os, commands } => write!(
                f,
                "{side} lacks {}, and runs {os}, for which benchpipe knows no package manager \
                 (apt, dnf, apk, pacman): install them yourself",
                commands.join(", ")
            ),
            CellFailure::Refused { reason } => write!(f, "{reason}"),
            CellFailure::Storage { message } => write!(f, "{message}"),
            CellFailure::Template { message } => write!(f, "{message}"),
            CellFailure::Store { message } => write!(f, "{message}"),
            CellFailure::TooManyFlaggedRuns {
                taken,
                valid,
                min,
                budget,
            } => write!(
                f,
                "{taken} measured runs in this apply, {valid} of them valid: the method's \
                 {min} runs were not reached within {budget} tries (see the runs' validity \
                 flags)"
            ),
            CellFailure::Panicked { board, message } => write!(
                f,
                "benchpipe's worker for board {board} panicked (a bug): {message}"
            ),
            CellFailure::Interrupted => write!(f, "interrupted"),
            CellFailure::NotApplicable { reason } => write!(f, "skipped: {reason}"),
            CellFailure::OutOfTime {
                needs_secs,
                left_secs,
            } => write!(
                f,
                "left for lack of time: its steps take about {} and {} remain before the deadline",
                crate::shown::short_secs(*needs_secs),
                crate::shown::short_secs(*left_secs)
            ),
            // Format-1 causes ended with `; log: <absolute path>`, which names the
            // store's location and the session's start time: no report may hold either.
            CellFailure::Legacy { cause } => {
                write!(f, "{}", cause.split("; log: ").next().unwrap_or_default())
            }
        }
    }
}

/// `: line | line | line` after a message, or nothing.
struct Hint<'a>(&'a [String]);

impl std::fmt::Display for Hint<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        write!(f, ": {}", self.0.join(" | "))
    }
}

/// The first line of a command, with ` ...` when there is more.
pub fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.len() < s.len() {
        format!("{line} ...")
    } else {
        line.to_string()
    }
}

/// The last three lines of a tool's stderr, as a terminal shows them.
pub fn stderr_tail(stderr: &str) -> Box<[String]> {
    let stderr = crate::bench::parse::visible(stderr);
    let lines: Vec<&str> = stderr.trim().lines().collect();
    lines[lines.len().saturating_sub(3)..]
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_failed_step_shows_its_exit_and_stderr_tail_but_not_its_log() {
        let exit = Exit {
            code: Some(3),
            signal: None,
        };
        let f = CellFailure::step_failed(
            "Measured run 1",
            "fio --name=x\n--rw=read",
            &exit,
            "one\n\u{1b}[31mfio: cannot open file\u{1b}[m\n",
        )
        .with_log("logs/failed-9-0001.log".into());
        assert_eq!(
            f.to_string(),
            "Measured run 1: `fio --name=x ...` ended with exit status 3: one | fio: cannot open file"
        );
        assert_eq!(f.log(), Some("logs/failed-9-0001.log"));
        assert!(!f.ends_board());
    }

    #[test]
    fn transport_errors_end_the_board_only_when_it_is_gone() {
        let target = || "pi".to_string();
        let reason = || "eof".to_string();
        let gone = [
            TransportError::Unreachable {
                target: target(),
                reason: reason(),
            },
            TransportError::Auth {
                target: target(),
                reason: reason(),
            },
            TransportError::HostKey {
                target: target(),
                reason: reason(),
                known_hosts: "/root/.ssh/known_hosts".into(),
            },
            TransportError::Lost {
                target: target(),
                reason: reason(),
            },
        ];
        for e in gone {
            let text = e.to_string();
            let f = CellFailure::from(e);
            assert!(f.ends_board(), "{f:?}");
            assert_eq!(f.to_string(), text);
            assert!(!f.to_string().contains("known_hosts"), "{f}");
        }
        let timeout = CellFailure::from(TransportError::Timeout {
            target: target(),
            command: "sleep 9\nmore".into(),
            after: Duration::from_secs(5),
        });
        assert_eq!(
            timeout,
            CellFailure::Timeout {
                command: "sleep 9 ...".into(),
                after_secs: 5.0
            }
        );
        assert!(!timeout.ends_board());
        let other = CellFailure::from(TransportError::Other {
            target: target(),
            reason: reason(),
        });
        assert!(matches!(other, CellFailure::Transport { .. }), "{other:?}");
    }
}
