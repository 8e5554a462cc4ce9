//! A walk's labgrid places: acquired before its first step (after its `Hold`, which
//! keeps other walks of this apply off its boards) and released after its last.

use std::collections::BTreeSet;

use serde::Serialize;

use super::{Action, DoneWhen, Hold, Step};
use crate::model::{BoardName, Side, Workspace};
use crate::plan::CellKey;

/// A labgrid place acquired before a walk's first step and released after its last
/// (`reserve.rs`), by the step runner itself on the controller: the place of the walk's
/// board, of each peer, of each cluster member that names one.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Reserve {
    /// Acquire the place; a place someone else holds is waited for `wait_seconds`
    /// (then the walk's cells fail, naming its holder).
    AcquireLabgridPlace {
        board: BoardName,
        coordinator: String,
        place: String,
        wait_seconds: f64,
    },
    /// Release what `AcquireLabgridPlace` acquired (cleanup: after failures and
    /// interrupts too; nothing when it acquired nothing).
    ReleaseLabgridPlace {
        board: BoardName,
        coordinator: String,
        place: String,
    },
}

/// Puts the acquire steps of the places the boards `mine` name at the start of
/// `steps` (after a `Hold`), and their release steps, in reverse order, at the end.
/// Every one serves all the walk's cells: a place not got fails them all, and each
/// cell's outcome is final only once the places are released.
pub(super) fn around(ws: &Workspace, mine: &BTreeSet<BoardName>, steps: &mut Vec<Step>) {
    let places: Vec<(&BoardName, &crate::model::labgrid::LabgridPlace)> = mine
        .iter()
        .filter_map(|b| Some((b, ws.boards.get(b)?.labgrid.as_ref()?)))
        .collect();
    if places.is_empty() || steps.is_empty() {
        return;
    }
    let mut cells: Vec<CellKey> = Vec::new();
    for s in steps.iter() {
        for k in &s.cells {
            if !cells.contains(k) {
                cells.push(k.clone());
            }
        }
    }
    let at = usize::from(matches!(
        steps.first().map(|s| &s.action),
        Some(Action::Hold(Hold { .. }))
    ));
    let acquire = places.iter().map(|(board, p)| {
        let action = Action::Reserve(Reserve::AcquireLabgridPlace {
            board: (*board).clone(),
            coordinator: p.coordinator.clone(),
            place: p.place.clone(),
            wait_seconds: p.wait.as_secs_f64(),
        });
        Step::plain(action, cells.clone(), Side::Controller, DoneWhen::Never)
    });
    let acquire: Vec<Step> = acquire.collect();
    steps.splice(at..at, acquire);
    for (board, p) in places.iter().rev() {
        let action = Action::Reserve(Reserve::ReleaseLabgridPlace {
            board: (*board).clone(),
            coordinator: p.coordinator.clone(),
            place: p.place.clone(),
        });
        steps.push(Step::plain(
            action,
            cells.clone(),
            Side::Controller,
            DoneWhen::NothingToUndo,
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::schedule::{Estimates, Work, build};
    use crate::plan::{expand, fixtures};

    #[test]
    fn a_boards_place_is_acquired_first_and_released_last_serving_all_its_cells() {
        let mut ws = fixtures::workspace();
        let name = ws.boards.keys().next().cloned().unwrap();
        ws.boards.get_mut(&name).unwrap().labgrid = Some(crate::model::labgrid::LabgridPlace {
            coordinator: "lab:20408".into(),
            place: "rpi-1".into(),
            wait: std::time::Duration::from_secs(60),
        });
        let plan = expand(&ws, &ws.scenarios[0]);
        let work: Vec<Work<'_>> = plan
            .cells
            .iter()
            .map(|c| Work {
                cell: c,
                recipe: &ws.recipes[&c.address.test],
                runs_left: 3,
            })
            .collect();
        let s = build(&ws, &work, &Estimates::default());
        for b in &s.boards {
            let first = &b.steps[0];
            let last = b.steps.last().unwrap();
            let reserves = b
                .steps
                .iter()
                .filter(|s| matches!(s.action, Action::Reserve(_)))
                .count();
            if b.board != name {
                assert_eq!(reserves, 0, "a board without a place reserves nothing");
                continue;
            }
            assert_eq!(reserves, 2);
            assert!(
                matches!(&first.action, Action::Reserve(Reserve::AcquireLabgridPlace { place, wait_seconds, .. }) if place == "rpi-1" && *wait_seconds == 60.0),
                "{first:?}"
            );
            assert!(matches!(
                &last.action,
                Action::Reserve(Reserve::ReleaseLabgridPlace { .. })
            ));
            assert!(last.action.is_cleanup() && !first.action.is_cleanup());
            let all: BTreeSet<&CellKey> = b.steps.iter().flat_map(|s| &s.cells).collect();
            assert_eq!(first.cells.len(), all.len());
            assert_eq!(last.cells.len(), all.len());
        }
    }
}
