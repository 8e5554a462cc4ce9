//! `apply`'s question before it formats or flashes a board benchpipe has never touched
//! (the store holds no state of it), like `terraform apply`: the steps are listed and
//! only "yes" on a terminal, or `--yes`, lets apply start; anything else does nothing.

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal, Read, Write};

use std::collections::BTreeSet;

use crate::error::{Error, Result};
use crate::model::{BoardName, StorageName};
use crate::plan::schedule::{Action, BoardAction, Schedule};
use crate::shown::one_line;
use crate::store::Store;

/// The most steps the question lists; the rest are counted.
const MOST_LISTED: usize = 40;
/// The longest answer read: "yes" and a line end, with room for stray spaces.
const MOST_ANSWER_BYTES: u64 = 256;

/// A step that would overwrite a disk of a board the store holds no state of.
#[derive(Debug, PartialEq)]
pub(super) struct Unclaimed {
    pub board: BoardName,
    pub label: String,
}

/// The destructive steps of `schedule` (`Action::destroys_on`) on what the store has
/// never recorded as benchpipe's: none on a board an apply verified or flashed
/// (`results/boards/<board>.json`), and no format of a storage the store holds cells of.
pub(super) fn unclaimed(schedule: &Schedule, store: &Store) -> Result<Vec<Unclaimed>> {
    let mut known = std::collections::BTreeMap::new();
    let mut used: Option<BTreeSet<(BoardName, StorageName)>> = None;
    let mut out: Vec<Unclaimed> = Vec::new();
    for walk in &schedule.boards {
        for step in &walk.steps {
            let Some(board) = step.action.destroys_on(&walk.board) else {
                continue;
            };
            let mut claimed = if let Some(k) = known.get(board) {
                *k
            } else {
                let k = store.board_state(board)?.is_some();
                known.insert(board.clone(), k);
                k
            };
            if let (false, Action::Board(BoardAction::Mount { storage, .. })) =
                (claimed, &step.action)
            {
                if used.is_none() {
                    used = Some(storages_used(store)?);
                }
                claimed = used
                    .as_ref()
                    .is_some_and(|u| u.contains(&(board.clone(), storage.clone())));
            }
            let label = step.action.label();
            if !claimed && !out.iter().any(|u| &u.board == board && u.label == label) {
                out.push(Unclaimed {
                    board: board.clone(),
                    label,
                });
            }
        }
    }
    Ok(out)
}

/// The (board, storage) pairs the store holds cells of: a cell opens after its mount,
/// so each was formatted or checked by benchpipe.
fn storages_used(store: &Store) -> Result<BTreeSet<(BoardName, StorageName)>> {
    let data = store.all()?;
    let used = data
        .values()
        .filter_map(|d| d.record.as_ref())
        .filter_map(|r| Some((r.address.board.clone(), r.address.storage.clone()?)))
        .collect();
    crate::parallel::free_later(data);
    Ok(used)
}

/// The list, a line per step, bounded, each on one line with its controls escaped.
fn listed(steps: &[Unclaimed]) -> String {
    let mut out = String::new();
    for u in steps.iter().take(MOST_LISTED) {
        let _ = writeln!(out, "  {}: {}", u.board, one_line(&u.label));
    }
    if steps.len() > MOST_LISTED {
        let _ = writeln!(
            out,
            "  ... and {} more (`apply --dry-run` lists them all)",
            steps.len() - MOST_LISTED
        );
    }
    out
}

/// Lets apply start: nothing to ask, `--yes`, or "yes" typed on the terminal. Without
/// a terminal a refusal (exit 2) naming the steps and `--yes`; any other answer ends
/// the command with nothing done.
pub(super) fn ask(steps: &[Unclaimed], yes: bool) -> Result<()> {
    if steps.is_empty() || yes {
        return Ok(());
    }
    let head = "apply would overwrite disks on board(s) benchpipe has never touched (no state of them in the store):";
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(Error::Usage(format!(
            "{head}\n{}nothing was done: run apply on a terminal to confirm, or pass --yes (scripts, timers) once these devices are known to be scratch",
            listed(steps)
        )));
    }
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "{head}\n{}Only 'yes' goes on (later applies ask no more for these boards).\n  Enter a value: ",
        listed(steps)
    );
    let _ = err.flush();
    drop(err);
    let mut answer = Vec::new();
    stdin
        .lock()
        .take(MOST_ANSWER_BYTES)
        .read_until(b'\n', &mut answer)
        .map_err(|e| Error::Other(format!("reading the answer: {e}")))?;
    if answer.trim_ascii() == b"yes" {
        return Ok(());
    }
    Err(Error::Other(
        "apply cancelled: the answer was not 'yes'; nothing was done".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::schedule::{BoardSteps, DoneWhen, FORMAT, Step, WalkAction};

    fn step(action: Action) -> Step {
        Step {
            action,
            cells: vec![],
            side: crate::model::Side::Board,
            resources: vec![],
            done_when: DoneWhen::Never,
            estimate_seconds: None,
        }
    }

    #[test]
    fn only_overwrites_on_boards_the_store_never_recorded_are_listed() {
        let dir = std::env::temp_dir().join(format!("bp-confirm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let mkfs = |device: &str| {
            step(Action::Board(BoardAction::Mount {
                image: "installed".into(),
                storage: "ssd".into(),
                filesystem: "ext4".into(),
                mkfs: true,
                device: Some(device.into()),
                serial: None,
                size_bytes: None,
            }))
        };
        let flash = step(Action::Walk(WalkAction::Flash {
            image: "bookworm".into(),
            via: "local".into(),
            device: "/dev/sdz".into(),
            member: Some("node-2".into()),
        }));
        let schedule = Schedule {
            format: FORMAT,
            boards: vec![
                BoardSteps {
                    board: "pi-1".into(),
                    members: vec![],
                    steps: vec![
                        step(Action::Board(BoardAction::Connect)),
                        mkfs("/dev/sda"),
                        mkfs("/dev/sda"),
                    ],
                },
                BoardSteps {
                    board: "pi-2".into(),
                    members: vec![],
                    steps: vec![mkfs("/dev/sdb")],
                },
                BoardSteps {
                    board: "cl".into(),
                    members: vec!["node-2".into()],
                    steps: vec![flash],
                },
            ],
        };
        store
            .write_board_state(&crate::store::BoardState {
                format: crate::store::FORMAT,
                board: "pi-2".into(),
                image: "installed".into(),
                identity: "installed:installed".into(),
                verified_session: "s".into(),
                host_key: None,
            })
            .unwrap();
        let got = unclaimed(&schedule, &store).unwrap();
        let boards: Vec<&str> = got.iter().map(|u| u.board.as_str()).collect();
        // pi-2 is benchpipe's; a cluster's flash is its member's; a step listed once.
        assert_eq!(boards, ["pi-1", "node-2"], "{got:?}");
        assert!(got[0].label.contains("/dev/sda"), "{got:?}");
        assert!(ask(&got, true).is_ok());
        assert!(ask(&[], false).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_long_list_is_cut_and_controls_are_escaped() {
        let steps: Vec<Unclaimed> = (0..100)
            .map(|i| Unclaimed {
                board: "pi-1".into(),
                label: format!("format d{i}\n\u{1b}[2J"),
            })
            .collect();
        let text = listed(&steps);
        assert_eq!(text.lines().count(), MOST_LISTED + 1, "{text}");
        assert!(text.contains("and 60 more") && !text.contains('\u{1b}'));
    }
}
