//! A cell's services: started with their ready checks, and always stopped.

use std::time::{Duration, Instant};

use super::Job;
use super::worker::{Transports, Worker};
use crate::bench::{self, Vars};
use crate::failure::{CellFailure, first_line, stderr_tail};
use crate::model::Side;
use crate::transport::{Service, TransportError};

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
    ) -> Result<(), CellFailure> {
        for spec in &job.recipe.services {
            self.phase(
                Some(&job.cell.address),
                format!("start service {}", spec.name),
            );
            let command = bench::render(&spec.command, vars).map_err(CellFailure::from)?;
            // Unique per cell, so interleaved cells never share a pid file.
            let name = format!("{}-{}", &job.cell.key.as_str()[..8], spec.name);
            let service = t
                .side(spec.on)
                .start_service(&self.service_dir(spec.on), &name, &command)
                .map_err(|e| service_failure(&spec.name, "", e))?;
            started.push((spec.on, service));
            if let Some(ready) = &spec.ready {
                let check = bench::render(ready, vars).map_err(CellFailure::from)?;
                let t0 = Instant::now();
                loop {
                    let out = t.side(spec.on).run(&check, Some(Duration::from_secs(10)))?;
                    if out.exit.success() {
                        break;
                    }
                    if t0.elapsed() > Duration::from_secs(10) {
                        return Err(CellFailure::NotReady {
                            service: spec.name.clone(),
                            after_secs: 10.0,
                            command: first_line(&check),
                            exit: out.exit.clone(),
                            stderr_tail: stderr_tail(&out.stderr_str()),
                        });
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
    ) -> Result<(), CellFailure> {
        let mut first_error = None;
        while let Some((side, service)) = services.pop() {
            if let Err(e) = t.side(side).stop_service(&service) {
                first_error.get_or_insert(service_failure(&service.name, "stopping: ", e));
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// A service that would not start or stop: the board's loss when the connection went,
/// the service's failure otherwise.
fn service_failure(service: &str, what: &str, e: TransportError) -> CellFailure {
    match CellFailure::from(e) {
        lost if lost.ends_board() => lost,
        other => CellFailure::Service {
            service: service.to_string(),
            message: format!("{what}{other}"),
        },
    }
}
