//! The schedule for people: a step's one-line label, and `apply --dry-run`'s text.

use super::{Action, BoardAction, CellAction, ClusterAction, Hold, Reserve, Schedule, WalkAction};
use crate::model::{Cooldown, RunOrder, TestName};
use std::fmt::Write as _;

impl Action {
    /// A short line for people: `mount usb as btrfs-lzo`.
    pub fn label(&self) -> String {
        match self {
            Action::Hold(Hold { boards }) => {
                format!("hold {} (wait for other walks)", join_boards(boards))
            }
            Action::Reserve(Reserve::AcquireLabgridPlace {
                board,
                coordinator,
                place,
                wait_seconds,
            }) => format!(
                "acquire labgrid place {place} for {board} on {coordinator} ({})",
                if *wait_seconds > 0.0 {
                    format!("if held, waits up to {wait_seconds}s")
                } else {
                    "if held, fails at once".into()
                }
            ),
            Action::Reserve(Reserve::ReleaseLabgridPlace { place, board, .. }) => {
                format!("release labgrid place {place} of {board}")
            }
            Action::Board(BoardAction::ConnectPeer { peer }) => format!("connect peer {peer}"),
            Action::Board(BoardAction::Health { checks }) => {
                let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
                format!("health check: {}", names.join(", "))
            }
            Action::Cluster(ClusterAction::ConnectMember { member }) => {
                format!("connect member {member}")
            }
            Action::Cluster(ClusterAction::MemberFacts { member }) => {
                format!("gather facts of member {member}")
            }
            Action::Cluster(ClusterAction::MemberHealth { member, checks }) => {
                let names: Vec<&str> = checks.iter().map(|c| c.name.as_str()).collect();
                format!("health check of member {member}: {}", names.join(", "))
            }
            Action::Cluster(ClusterAction::ArmGuard) => {
                "arm the guards (teardown if a connection ends)".into()
            }
            Action::Cluster(ClusterAction::Deploy { on, commands, .. }) => {
                format!("deploy on {on} ({commands} command(s))")
            }
            Action::Cluster(ClusterAction::Undeploy { on, commands, .. }) => {
                format!("tear down the cluster on {on} ({commands} command(s))")
            }
            Action::Cluster(ClusterAction::DisarmGuard) => "disarm the guards".into(),
            Action::Walk(WalkAction::FetchImage { image }) => format!("fetch image {image}"),
            Action::Walk(WalkAction::Derive {
                image,
                firstboot,
                member,
            }) => format!(
                "prepare {image}'s first boot ({firstboot}){} in a copy, unless the image cache has it",
                for_member(member.as_ref())
            ),
            Action::Walk(WalkAction::Flash {
                image,
                via,
                device,
                member,
            }) => format!(
                "REFLASH{} with {image}: dd to {device} via {via}, read back",
                onto(member.as_ref())
            ),
            Action::Walk(WalkAction::FlashCommand { image, member }) => format!(
                "REFLASH{} with {image}: the board's [flash] command",
                onto(member.as_ref())
            ),
            Action::Walk(WalkAction::FlashTpi {
                image,
                via,
                node,
                member,
            }) => format!(
                "REFLASH{} with {image}: tpi flash node {node} on BMC {via}",
                onto(member.as_ref())
            ),
            Action::Walk(WalkAction::PowerCycle { member }) => {
                format!("power cycle{}", onto(member.as_ref()))
            }
            Action::Board(BoardAction::Connect) => "connect".into(),
            Action::Walk(WalkAction::ClaimWorkdir { controller: false }) => "claim workdir".into(),
            Action::Walk(WalkAction::ClaimWorkdir { controller: true }) => {
                "claim workdir (and the controller's)".into()
            }
            Action::Walk(WalkAction::Provision { tests }) => format!("provision {}", join(tests)),
            Action::Walk(WalkAction::StopLeftoverServices) => "stop leftover services".into(),
            Action::Board(BoardAction::GatherFacts) => "gather facts".into(),
            Action::Walk(WalkAction::VerifyImage { image, expect }) => format!(
                "verify image {image} ({})",
                expect
                    .os_release
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .chain(expect.uname_m.iter().map(|m| format!("uname -m={m}")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Action::Board(BoardAction::Mount {
                image,
                storage,
                filesystem,
                mkfs: true,
                device,
                serial,
                size_bytes,
            }) => format!(
                "format {storage} as {filesystem} ({image}){}",
                disk(device.as_ref(), serial.as_ref(), *size_bytes)
            ),
            Action::Board(BoardAction::Mount {
                image,
                storage,
                mkfs: false,
                ..
            }) => format!("check {storage} as-is ({image})"),
            Action::Board(BoardAction::MountTmpfs { test, size }) => {
                format!("mount a tmpfs of {size} for {test}")
            }
            Action::Board(BoardAction::UnmountTmpfs { test }) => {
                format!("unmount the tmpfs of {test}")
            }
            Action::Cell(CellAction::Setup {
                test, commands: 0, ..
            }) => format!("open {test}"),
            Action::Cell(CellAction::Setup {
                test,
                commands,
                after_services: true,
                ..
            }) => format!("set up {test} after its services ({commands} command(s))"),
            Action::Cell(CellAction::Setup { test, commands, .. }) => {
                format!("set up {test} ({commands} command(s))")
            }
            Action::Cell(CellAction::StartService { test, service }) => {
                format!("start {service} for {test}")
            }
            Action::Cell(CellAction::Cooldown { cooldown }) => match cooldown {
                Cooldown::None => "cool-down: none".into(),
                Cooldown::Fixed { duration } => format!("cool down {}s", duration.as_secs()),
                Cooldown::UntilBelow {
                    celsius,
                    above_idle,
                    ..
                } => format!(
                    "cool down below {}{celsius} °C",
                    if *above_idle { "idle+" } else { "" }
                ),
            },
            Action::Cell(CellAction::WarmUp { test, runs }) => {
                format!("warm up {test} ({runs} run(s))")
            }
            Action::Cell(CellAction::Measure { order, runs_left }) => {
                let order = match order {
                    RunOrder::Blocked => "blocked",
                    RunOrder::Interleaved => "interleaved",
                };
                format!("measure {runs_left} run(s), {order}")
            }
            Action::Cell(CellAction::StopService { test, service }) => {
                format!("stop {service} for {test}")
            }
            Action::Cell(CellAction::Teardown { test, commands, .. }) => {
                format!("tear down {test} ({commands} command(s))")
            }
            Action::Board(BoardAction::Uas { storage, uas }) => format!(
                "USB driver of {storage}: {} (kernel command line, power cycle, verify)",
                if *uas { "uas" } else { "usb-storage" }
            ),
            Action::Board(BoardAction::RestoreCmdline) => {
                "restore the kernel command line (power cycle if it changed)".into()
            }
            Action::Board(BoardAction::Unmount {
                storage,
                filesystem,
            }) => format!("unmount {storage} ({filesystem})"),
        }
    }
}

impl Schedule {
    /// `apply --dry-run`: the steps per board, one line each.
    pub fn text(&self) -> String {
        self.text_with(|_, _| None)
    }

    /// `text`, with `note(walk's board, step)`'s line, when it gives one, under its
    /// step (what a board reported of the disk a step overwrites).
    pub fn text_with(
        &self,
        note: impl Fn(&crate::model::BoardName, &super::Step) -> Option<String>,
    ) -> String {
        // One label column for every board, as wide as the widest label up to
        // `MAX_LABEL` (a REFLASH step names a device path): a longer label pushes only
        // its own line's columns.
        let width = self
            .boards
            .iter()
            .flat_map(|b| &b.steps)
            .map(|s| s.action.label().chars().count())
            .max()
            .unwrap_or(0)
            .clamp(MIN_LABEL, MAX_LABEL);
        let mut out = String::new();
        for b in &self.boards {
            if b.members.is_empty() {
                let _ = writeln!(out, "board {}: {} step(s)", b.board, b.steps.len());
            } else {
                let _ = writeln!(
                    out,
                    "cluster {} ({}): {} step(s)",
                    b.board,
                    join_boards(&b.members),
                    b.steps.len()
                );
            }
            for (i, s) in b.steps.iter().enumerate() {
                let side = s.side.name();
                let mut line = format!("  {:>3}. {:<width$} {:<10}", i + 1, s.action.label(), side);
                if s.cells.len() == 1 {
                    let _ = write!(line, " cell {}", &s.cells[0].as_str()[..12]);
                } else {
                    let _ = write!(line, " {} cell(s)", s.cells.len());
                }
                if let Some(e) = s.estimate_seconds.filter(|e| *e > 0.0) {
                    let _ = write!(line, ", ~{e:.0}s");
                }
                if !s.resources.is_empty() {
                    let _ = write!(line, ", holds {}", s.resources.join(", "));
                }
                out.push_str(line.trim_end());
                out.push('\n');
                if let Some(n) = note(&b.board, s) {
                    let _ = writeln!(out, "       {n}");
                }
            }
        }
        out
    }
}

/// The label column's width bounds in `Schedule::text`.
const MIN_LABEL: usize = 24;
const MAX_LABEL: usize = 100;

/// The disk a format writes: ` on /dev/sda (serial S, 500107862016 bytes)`, as the board
/// file declares it; what it lacks is said, so a reader sees what tells it from another.
fn disk(device: Option<&String>, serial: Option<&String>, size: Option<u64>) -> String {
    let Some(device) = device else {
        return String::new();
    };
    let serial = serial.map_or("no serial declared".to_string(), |s| format!("serial {s}"));
    let size = size.map_or("no size declared".to_string(), |b| format!("{b} bytes"));
    format!(" on {device} ({serial}, {size})")
}

/// ` member NAME` after a step's verb in a cluster's walk; nothing in a board's.
fn onto(member: Option<&crate::model::BoardName>) -> String {
    member.map(|m| format!(" member {m}")).unwrap_or_default()
}

/// ` for member NAME` in a cluster's walk; nothing in a board's.
fn for_member(member: Option<&crate::model::BoardName>) -> String {
    member
        .map(|m| format!(" for member {m}"))
        .unwrap_or_default()
}

fn join_boards(boards: &[crate::model::BoardName]) -> String {
    boards
        .iter()
        .map(crate::model::BoardName::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn join(tests: &[TestName]) -> String {
    tests
        .iter()
        .map(crate::model::TestName::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::{BoardSteps, DoneWhen, Schedule, Step};
    use super::*;
    use crate::model::{BoardName, ImageName, Side};

    fn step(action: Action, side: Side) -> Step {
        Step {
            action,
            cells: vec![],
            side,
            resources: vec![],
            done_when: DoneWhen::Never,
            estimate_seconds: None,
        }
    }

    /// Where the side column starts on each line of the dry-run text.
    fn side_columns(text: &str) -> Vec<usize> {
        text.lines()
            .filter(|l| l.starts_with("  "))
            .map(|l| {
                let at = l
                    .find(" board ")
                    .or_else(|| l.find(" controller "))
                    .unwrap();
                l[..at].chars().count()
            })
            .collect()
    }

    #[test]
    fn dry_run_columns_line_up_past_a_long_reflash_label() {
        let flash = Action::Walk(WalkAction::Flash {
            image: ImageName::new("raspios-64"),
            via: "pi-maint".into(),
            device: "/dev/disk/by-id/usb-SD_MUX_0001-0:0".into(),
            member: None,
        });
        assert!(flash.label().chars().count() > 44, "{}", flash.label());
        let schedule = Schedule {
            format: 1,
            boards: vec![BoardSteps {
                board: BoardName::new("pi-1"),
                members: vec![],
                steps: vec![
                    step(
                        Action::Walk(WalkAction::FetchImage {
                            image: ImageName::new("raspios-64"),
                        }),
                        Side::Controller,
                    ),
                    step(flash, Side::Controller),
                    step(
                        Action::Walk(WalkAction::PowerCycle { member: None }),
                        Side::Controller,
                    ),
                    step(Action::Board(BoardAction::Connect), Side::Board),
                    step(
                        Action::Cell(CellAction::Cooldown {
                            cooldown: Cooldown::None,
                        }),
                        Side::Board,
                    ),
                ],
            }],
        };
        let text = schedule.text();
        let cols = side_columns(&text);
        assert_eq!(cols.len(), 5, "{text}");
        assert!(cols.iter().all(|c| *c == cols[0]), "{cols:?}\n{text}");
        // A label past the widest column pushes only its own line.
        let mut long = schedule.clone();
        long.boards[0].steps[1].action = Action::Walk(WalkAction::Flash {
            image: ImageName::new("x"),
            via: "v".into(),
            device: format!("/dev/disk/by-id/{}", "a".repeat(80)),
            member: None,
        });
        let cols = side_columns(&long.text());
        assert_eq!(cols[0], cols[2]);
        assert!(cols[1] > cols[0]);
    }
}
