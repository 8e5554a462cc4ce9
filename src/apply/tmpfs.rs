//! A cell's own tmpfs on the board (a recipe's `[tmpfs]`): mounted before its setup and
//! unmounted after its teardown, through `storage::tmpfs`.

use super::Job;
use super::StepStatus;
use super::board::BoardWalk;
use super::worker::{LiveCell, Worker};
use crate::failure::CellFailure;
use crate::model::TmpfsSize;
use crate::plan::schedule::Step;
use crate::storage::{StorageError, tmpfs};

impl Worker<'_> {
    /// Where the cell's tmpfs is mounted: `<workdir>/<test>-<cell key>`.
    pub(super) fn tmpfs_point(&self, job: &Job<'_>) -> String {
        tmpfs::point(
            &self.board.workdir,
            job.recipe.name.as_str(),
            job.cell.key.as_str(),
        )
    }

    /// Mounts the cell's tmpfs. Once the mount may have happened (anything but a
    /// refusal), the cell's unmount step has something to undo.
    pub(super) fn mount_tmpfs(
        &self,
        board: &mut dyn crate::transport::Transport,
        cell: &mut LiveCell<'_, '_>,
        size: TmpfsSize,
    ) -> Result<(), CellFailure> {
        let job = cell.job;
        self.phase(Some(&job.cell.address), format!("mount a tmpfs of {size}"));
        let point = self.tmpfs_point(job);
        let source = tmpfs::source(job.recipe.name.as_str());
        match tmpfs::mount(board, &point, &source, size) {
            Ok(()) => {
                cell.tmpfs = Some(point);
                Ok(())
            }
            Err(e @ StorageError::Refused { .. }) => Err(e.into()),
            Err(e) => {
                cell.tmpfs = Some(point);
                Err(match e {
                    StorageError::Transport(t) => t.into(),
                    other => other.into(),
                })
            }
        }
    }

    /// The `UnmountTmpfs` cleanup step: only a tmpfs this walk mounted.
    pub(super) fn unmount_tmpfs(&self, w: &mut BoardWalk<'_, '_>, step: &Step) -> StepStatus {
        let key = &step.cells[0];
        let (Some(board), Some(cell)) = (w.own.board.as_deref_mut(), w.live.get_mut(key)) else {
            return StepStatus::Done;
        };
        let Some(point) = cell.tmpfs.take() else {
            return StepStatus::Done;
        };
        self.phase(Some(&cell.job.cell.address), "unmount its tmpfs");
        let source = tmpfs::source(cell.job.recipe.name.as_str());
        let done = tmpfs::unmount(board, &point, &source).map_err(|e| match e {
            StorageError::Transport(t) => CellFailure::from(t),
            other => other.into(),
        });
        w.cleanup_status(std::slice::from_ref(key), done)
    }
}
