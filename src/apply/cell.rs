//! A cell's steps on a board: opened in the store, storage prepared, setup and teardown.

use std::time::Duration;

use serde_json::Value;

use super::Job;
use super::worker::{LiveCell, Transports, Worker, board_host};
use crate::bench::{self, Vars};
use crate::failure::CellFailure;
use crate::model::{AS_IS, Filesystem, Step, Storage};
use crate::storage;

impl Worker<'_> {
    /// Opens a cell in the store, prepares its storage and runs its setup.
    pub(super) fn begin_cell<'j, 'c>(
        &self,
        t: &mut Transports<'_>,
        job: &'j Job<'c>,
        facts: &Value,
        mounted: &mut Option<(Storage, Filesystem)>,
    ) -> Result<LiveCell<'j, 'c>, CellFailure> {
        let cell = job.cell;
        let addr = &cell.address;
        let writer = self.store.begin(cell)?;
        writer.write_facts(facts)?;
        let storage = addr.storage.as_ref().and_then(|s| self.board.storage(s));
        if let (Some(fs), Some(st)) = (&cell.filesystem, storage) {
            let wanted = (st.name.clone(), fs.name.clone());
            if mounted
                .as_ref()
                .map(|(s, f)| (s.name.clone(), f.name.clone()))
                != Some(wanted)
            {
                if let Some((s, f)) = mounted.take() {
                    storage::release(t.board, &s, &f).map_err(CellFailure::from)?;
                }
                if fs.kind != AS_IS {
                    self.phase(Some(addr), format!("format {} as {}", st.name, fs.name));
                }
                storage::prepare(t.board, st, fs).map_err(CellFailure::from)?;
                *mounted = Some((st.clone(), fs.clone()));
            }
        }
        let mut vars = Vars::new();
        vars.params(&cell.params)
            .set("workdir", self.board.workdir.clone())
            .set(
                "dir",
                storage
                    .map(|s| s.path.clone())
                    .unwrap_or_else(|| self.board.workdir.clone()),
            )
            .set(
                "device",
                storage.and_then(|s| s.device.clone()).unwrap_or_default(),
            )
            .set("board", self.board.name.as_str())
            .set("host", board_host(self.board))
            .set("run", 0);
        self.phase(Some(addr), "setup");
        {
            let _held = self.resources.acquire(&job.recipe.exclusive);
            self.steps(t, &job.recipe.setup, &vars, "setup")?;
        }
        let mut services = Vec::new();
        if let Err(e) = self.start_services(t, job, &vars, &mut services) {
            // Whatever did start is stopped again before the cell is given up.
            let _ = self.stop_services(t, &mut services);
            return Err(e);
        }
        let data = job.data.clone();
        Ok(LiveCell {
            job,
            writer,
            vars,
            data,
            services,
        })
    }

    /// Runs setup or teardown steps in order; the first failure stops them.
    pub(super) fn steps(
        &self,
        t: &mut Transports<'_>,
        steps: &[Step],
        vars: &Vars,
        what: &str,
    ) -> Result<(), CellFailure> {
        for step in steps {
            let command = bench::render(&step.command, vars).map_err(CellFailure::from)?;
            // A lost connection here is the board's loss, as in a run.
            let out = t
                .side(step.on)
                .run(&command, step.timeout.or(Some(Duration::from_secs(3600))))?;
            if !out.exit.success() {
                return Err(CellFailure::step_failed(
                    what,
                    &command,
                    &out.exit,
                    &out.stderr_str(),
                ));
            }
        }
        Ok(())
    }
}
