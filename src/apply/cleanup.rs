//! Steps of a board's walk that make or undo board state outside a cell's commands:
//! claiming the workdirs and the board (`board_lock`), and the board's cleanup steps (unmount, the tmpfs, the
//! command line), which run after failures and interrupts when what they undo was done.

use super::StepStatus;
use super::board::BoardWalk;
use super::walk::Walker;
use super::worker::{Transports, Worker};
use crate::failure::CellFailure;
use crate::model::BoardName;
use crate::model::Side;
use crate::plan::schedule::{BoardAction, Step};
use crate::storage;
use crate::store::Holder;
use crate::transport::board_lock::{self, Claimant, NotTaken};
use crate::transport::{Transport, TransportError};
use std::sync::OnceLock;

impl Worker<'_> {
    /// Claims the board's workdir, and the controller's directory when a step runs there.
    pub(super) fn claim(
        &self,
        t: &mut Transports<'_>,
        controller: bool,
    ) -> Result<(), CellFailure> {
        // benchpipe removes files in these directories as root: only in its own.
        crate::transport::workdir::claim(t.board, &self.board.workdir).map_err(claim_refused)?;
        take_board(t.board, &self.board.name, &self.board.workdir)?;
        if controller {
            crate::transport::workdir::claim(t.controller, &self.service_dir(Side::Controller))
                .map_err(claim_refused)?;
        }
        Ok(())
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
/// This apply as a board's holder: one token for all its sessions, and who it is.
fn claimant() -> &'static Claimant {
    static CLAIMANT: OnceLock<Claimant> = OnceLock::new();
    CLAIMANT.get_or_init(|| Claimant {
        token: crate::transport::random_hex::<16>(),
        record: serde_json::to_string(&Holder::this_process()).unwrap_or_default(),
    })
}

/// Takes a claimed workdir's board for this apply (`transport::board_lock`): another
/// apply's live hold refuses the board's cells, naming that apply.
pub(super) fn take_board(
    t: &mut dyn Transport,
    board: &BoardName,
    workdir: &str,
) -> Result<(), CellFailure> {
    match board_lock::take(t, workdir, claimant()) {
        Ok(()) => Ok(()),
        Err(NotTaken::Failed(e)) => Err(claim_refused(e)),
        Err(NotTaken::Held { record }) => {
            let who = serde_json::from_str::<Holder>(&record).map_or_else(
                |_| crate::shown::one_line(&record).into_owned(),
                |h| h.describe(Holder::this_process().since),
            );
            Err(CellFailure::Refused {
                reason: format!(
                    "board {board} is in use by another benchpipe apply ({who}); it is free                      once that apply ends or loses the board"
                ),
            })
        }
    }
}

pub(super) fn claim_refused(e: TransportError) -> CellFailure {
    match e {
        TransportError::Other { .. } => CellFailure::Refused {
            reason: e.to_string(),
        },
        e => e.into(),
    }
}
