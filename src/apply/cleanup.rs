//! Steps of the walk that make or undo board state outside a cell's commands: claiming
//! the workdirs, and the cleanup steps (stop a service, tear down, unmount), which run
//! after failures and interrupts when what they undo was done.

use super::StepStatus;
use super::board::BoardWalk;
use super::worker::{Transports, Worker};
use crate::failure::CellFailure;
use crate::model::Side;
use crate::plan::schedule::{Action, Step};
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
                match controller {
                    true => crate::transport::workdir::claim(
                        t.controller,
                        &self.service_dir(Side::Controller),
                    ),
                    false => Ok(()),
                }
            });
        claimed.map_err(claim_refused)
    }

    /// A cleanup step: runs when what it undoes was done, on the board only while the
    /// board is there.
    pub(super) fn board_cleanup(&self, w: &mut BoardWalk<'_, '_>, step: &Step) -> StepStatus {
        if step.side.on_board() && w.lost.is_some() {
            return StepStatus::Skipped {
                reason: "the board is lost".into(),
            };
        }
        if let Action::RestoreCmdline = step.action {
            return self.restore_cmdline(w, &step.cells);
        }
        if let Action::UnmountTmpfs { .. } = step.action {
            return self.unmount_tmpfs(w, step);
        }
        let nothing = StepStatus::Done;
        let Some(board) = w.own.board.as_deref_mut() else {
            return nothing;
        };
        let peer = step
            .cells
            .first()
            .and_then(|k| w.jobs.get(k).copied())
            .and_then(|j| j.cell.peer.as_ref());
        // A peer's cleanup runs while the peer is there, whatever became of the board.
        let peer_gone = peer.is_none_or(|p| w.own.peers.get(p).is_none_or(|s| s.lost.is_some()));
        if step.side == Side::Peer && peer_gone {
            return StepStatus::Skipped {
                reason: "the peer board is lost".into(),
            };
        }
        let mut board = super::secrets::Redacting::new(board, &w.secrets);
        let mut controller = super::secrets::Redacting::new(w.controller.as_mut(), &w.secrets);
        let mut t = Transports::new(&mut board, &mut controller).with_peers(&mut w.own.peers, peer);
        match &step.action {
            Action::StopService { service, .. } => {
                let key = &step.cells[0];
                let Some(cell) = w.live.get_mut(key) else {
                    return nothing;
                };
                if !cell.services.iter().any(|(_, n, _)| n == service) {
                    return nothing;
                }
                self.phase(Some(&cell.job.cell.address), "teardown");
                let done = self.stop_service(&mut t, cell, service);
                w.cleanup_status(std::slice::from_ref(key), done)
            }
            Action::Teardown { from, commands, .. } => {
                let key = &step.cells[0];
                let Some(cell) = w.live.get(key) else {
                    return nothing;
                };
                self.phase(Some(&cell.job.cell.address), "teardown");
                let recipe = cell.job.recipe;
                let _held = self.resources.acquire(&recipe.exclusive);
                let commands = &recipe.teardown[*from..from + commands];
                let done = self.commands(&mut t, commands, &cell.vars, "teardown");
                w.cleanup_status(std::slice::from_ref(key), done)
            }
            Action::Unmount {
                storage,
                filesystem,
            } => {
                let ours = w
                    .own
                    .mounted
                    .current
                    .as_ref()
                    .is_some_and(|(s, f)| &s.name == storage && &f.name == filesystem);
                if !ours {
                    return nothing;
                }
                let (s, f) = w.own.mounted.current.take().expect("checked above");
                match storage::release(t.board, &s, &f) {
                    Ok(()) => StepStatus::Ran,
                    Err(e) => {
                        self.phase(None, format!("could not unmount {}: {e}", s.path));
                        StepStatus::Failed {
                            cause: e.to_string(),
                        }
                    }
                }
            }
            _ => nothing,
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
