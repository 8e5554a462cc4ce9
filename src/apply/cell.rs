//! A cell's own steps on a board: opened in the store with its template values, and
//! the recipe's setup and teardown commands.

use std::time::Duration;

use serde_json::Value;

use super::Job;
use super::worker::{LiveCell, Transports, Worker, board_host};
use crate::bench::{self, Vars};
use crate::failure::CellFailure;
use crate::model::{Side, Step};

impl Worker<'_> {
    /// Opens a cell in the store, records the board's facts beside it and fills its
    /// template values. Its storage is mounted already (the schedule's `Mount` step).
    pub(super) fn open_cell<'j, 'c>(
        &self,
        job: &'j Job<'c>,
        facts: &Value,
    ) -> Result<LiveCell<'j, 'c>, CellFailure> {
        let cell = job.cell;
        let writer = self.store.begin(cell)?;
        writer.write_facts(facts)?;
        if let Some(fp) = facts.get("fingerprint").cloned() {
            let fp = serde_json::from_value(fp).map_err(|e| CellFailure::Store {
                message: format!("fingerprint: {e}"),
            })?;
            self.store.adopt_fingerprint(cell, &fp)?;
        }
        let storage = cell
            .address
            .storage
            .as_ref()
            .and_then(|s| self.board.storage(s));
        let mut vars = Vars::new();
        vars.params(&cell.params)
            .set("workdir", self.board.workdir.clone())
            .set("controller_dir", self.service_dir(Side::Controller))
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
        Ok(LiveCell {
            job,
            writer,
            vars,
            // Read again: a drift choice at `gather-facts` may have marked a redo.
            data: self.store.read(cell)?,
            services: Vec::new(),
        })
    }

    /// Runs setup or teardown commands in order; the first failure stops them.
    pub(super) fn commands(
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
