//! A cell's services: started with their ready checks, and always stopped.

use std::time::{Duration, Instant};

use super::Job;
use super::worker::{CellError, Transports, Worker, first_line, tail_hint};
use crate::bench::{self, Vars};
use crate::model::Side;
use crate::transport::Service;

impl Worker<'_> {
    /// Where services of this board's cells keep pid files, on each side. The
    /// controller's is per board: boards work in parallel, and one board's cleanup must
    /// not stop another board's services.
    pub(super) fn service_dir(&self, side: Side) -> String {
        match side {
            Side::Board => self.board.workdir.clone(),
            Side::Controller => format!("/var/tmp/benchpipe/controller/{}", self.board.name),
        }
    }

    /// Starts the recipe's services, then waits for each one's `ready` check.
    pub(super) fn start_services(
        &self,
        t: &mut Transports<'_>,
        job: &Job<'_>,
        vars: &Vars,
        started: &mut Vec<(Side, Service)>,
    ) -> Result<(), CellError> {
        for spec in &job.recipe.services {
            self.phase(
                Some(&job.cell.address),
                format!("start service {}", spec.name),
            );
            let command = bench::render(&spec.command, vars).map_err(CellError::Cell)?;
            // Unique per cell, so interleaved cells never share a pid file.
            let name = format!("{}-{}", &job.cell.key.as_str()[..8], spec.name);
            let service = t
                .side(spec.on)
                .start_service(&self.service_dir(spec.on), &name, &command)
                .map_err(|e| CellError::Cell(format!("service {}: {e}", spec.name)))?;
            started.push((spec.on, service));
            if let Some(ready) = &spec.ready {
                let check = bench::render(ready, vars).map_err(CellError::Cell)?;
                let t0 = Instant::now();
                loop {
                    let out = t.side(spec.on).run(&check, Some(Duration::from_secs(10)))?;
                    if out.exit.success() {
                        break;
                    }
                    if t0.elapsed() > Duration::from_secs(10) {
                        return Err(CellError::Cell(format!(
                            "service {} was not ready after 10 s: `{}` ended with {}{}",
                            spec.name,
                            first_line(&check),
                            out.exit,
                            tail_hint(&out.stderr_str())
                        )));
                    }
                    self.sleep(Duration::from_millis(200))?;
                }
            }
        }
        Ok(())
    }

    /// Stops services, last started first; every one is tried even when one fails.
    pub(super) fn stop_services(
        &self,
        t: &mut Transports<'_>,
        services: &mut Vec<(Side, Service)>,
    ) -> Result<(), String> {
        let mut first_error = None;
        while let Some((side, service)) = services.pop() {
            if let Err(e) = t.side(side).stop_service(&service) {
                first_error.get_or_insert(format!("stopping service {}: {e}", service.name));
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
