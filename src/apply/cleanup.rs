//! Steps of a board's walk that make or undo board state outside a cell's commands:
//! claiming the workdirs, and the board's cleanup steps (unmount, the tmpfs, the
//! command line), which run after failures and interrupts when what they undo was done.

use super::StepStatus;
use super::board::BoardWalk;
use super::walk::Walker;
use super::worker::{Transports, Worker};
use crate::failure::CellFailure;
use crate::model::Side;
use crate::plan::schedule::{BoardAction, Step};
use crate::storage;
use crate::transport::TransportError;

impl Worker<'_> {
    /// Claims the board's workdir, and the controller's directory when a step runs there.
    pub(super) fn claim(
        &self,
        t: &mut Transports<'_>,
        controller: bool,
    ) -> Result<(), CellFailure> {
        // benchpipe removes files in these directories as root: only in its own.
        let claimed =
            crate::transport::workdir::claim(t.board, &self.board.workdir).and_then(|()| {
                if controller {
                    crate::transport::workdir::claim(
                        t.controller,
                        &self.service_dir(Side::Controller),
                    )
                } else {
                    Ok(())
                }
            });
        claimed.map_err(claim_refused)
    }

    /// A cleanup step of the board's own: runs when what it undoes was done, on the
    /// board only while the board is there (a cell's are `walk::cell_cleanup`'s).
    pub(super) fn cleanup_board(
        &self,
        w: &mut BoardWalk<'_, '_>,
        action: &BoardAction,
        step: &Step,
    ) -> StepStatus {
        if let Some(skipped) = self.cleanup_skipped(w, step) {
            return skipped;
        }
        match action {
            BoardAction::RestoreCmdline => self.restore_cmdline(w, &step.cells),
            BoardAction::UnmountTmpfs { .. } => self.unmount_tmpfs(w, step),
            BoardAction::Unmount {
                storage,
                filesystem,
            } => {
                let Some(board) = w.own.board.as_deref_mut() else {
                    return StepStatus::Done;
                };
                let ours = w
                    .own
                    .mounted
                    .current
                    .as_ref()
                    .is_some_and(|(s, f)| &s.name == storage && &f.name == filesystem);
                if !ours {
                    return StepStatus::Done;
                }
                let (s, f) = w.own.mounted.current.take().expect("checked above");
                match storage::release(board, &s, &f) {
                    Ok(()) => StepStatus::Ran,
                    Err(e) => {
                        self.phase(None, format!("could not unmount {}: {e}", s.path));
                        StepStatus::Failed {
                            cause: e.to_string(),
                        }
                    }
                }
            }
            // Not cleanup: `Walker::board_step`.
            BoardAction::Connect
            | BoardAction::ConnectPeer { .. }
            | BoardAction::Health { .. }
            | BoardAction::GatherFacts
            | BoardAction::Mount { .. }
            | BoardAction::MountTmpfs { .. }
            | BoardAction::Uas { .. } => StepStatus::Done,
        }
    }
}

/// A workdir claim's failure: `Other` is the claim's refusal; anything else is the
/// transport's own.
pub(super) fn claim_refused(e: TransportError) -> CellFailure {
    match e {
        TransportError::Other { .. } => CellFailure::Refused {
            reason: e.to_string(),
        },
        e => e.into(),
    }
}
