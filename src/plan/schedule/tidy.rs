//! Tidy walks: a board whose last walk died (its apply killed) and that this apply has
//! no cells for is still walked, through connect, claim and stop-leftovers only, so a
//! scratch mount, tmpfs or service that apply left behind does not wait for the board's
//! next cells.

use std::collections::BTreeSet;

use super::{Action, BoardAction, BoardSteps, DoneWhen, Schedule, Step, WalkAction};
use crate::model::{BoardName, Side, Workspace};
use crate::store::WalkStatus;

/// Adds a tidy walk to `schedule` for each board of `boards` (the boards of the cells
/// this apply was given) whose stored walk never ended, that no walk of the schedule
/// already drives (as its board, a cluster member or a peer), and that is still
/// declared. The caller holds the store's lock, so an unended walk is one
/// whose apply died. Clusters are not tidied: their members' leftovers are the next
/// cluster walk's (its stop-leftovers on every member).
pub fn add(
    schedule: &mut Schedule,
    ws: &Workspace,
    boards: &BTreeSet<BoardName>,
    statuses: &[WalkStatus],
) {
    let mut driven: BTreeSet<&BoardName> = BTreeSet::new();
    for b in &schedule.boards {
        driven.insert(&b.board);
        driven.extend(&b.members);
        for s in &b.steps {
            if let Action::Board(BoardAction::ConnectPeer { peer }) = &s.action {
                driven.insert(peer);
            }
        }
    }
    let mut tidy: Vec<BoardSteps> = Vec::new();
    for st in statuses.iter().filter(|s| !s.ended) {
        let name = BoardName::new(&st.board);
        if !ws.boards.contains_key(&name)
            || !boards.contains(&name)
            || driven.contains(&name)
            || tidy.iter().any(|t| t.board == name)
        {
            continue;
        }
        tidy.push(walk(ws, &name));
    }
    schedule.boards.extend(tidy);
    schedule.boards.sort_by(|a, b| a.board.cmp(&b.board));
}

/// The tidy walk of one board: steps that serve no cell (the step runner runs them for
/// the board alone, and stops the walk at the first that fails).
fn walk(ws: &Workspace, board: &BoardName) -> BoardSteps {
    let step = |action| Step::plain(action, Vec::new(), Side::Board, DoneWhen::Never);
    let mut steps = vec![
        step(Action::Board(BoardAction::Connect)),
        step(Action::Walk(WalkAction::ClaimWorkdir { controller: false })),
        step(Action::Walk(WalkAction::StopLeftoverServices)),
    ];
    super::reserve::around(ws, &BTreeSet::from([board.clone()]), &mut steps);
    BoardSteps {
        board: board.clone(),
        members: Vec::new(),
        steps,
    }
}

impl BoardSteps {
    /// Whether this is a tidy walk: steps that serve no cell.
    pub fn is_tidy(&self) -> bool {
        self.steps.iter().all(|s| s.cells.is_empty())
    }
}
