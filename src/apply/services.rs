//! A cell's services, at the places of their side on every walk: started with their
//! ready checks, and always stopped.

use std::time::{Duration, Instant};

use super::Job;
use super::places::{self, Place, Places};
use super::worker::{LiveCell, Transports, Worker};
use crate::bench::{self, Vars};
use crate::failure::{CellFailure, first_line, stderr_tail};
use crate::model::{ServiceSpec, Side};
use crate::transport::Output;

impl Worker<'_> {
    /// Where services of this board's cells keep pid files, on each side. The
    /// controller's is per board: boards work in parallel, and one board's cleanup must
    /// not stop another board's services.
    pub(super) fn service_dir(&self, side: Side) -> String {
        match side {
            Side::Board | Side::Members | Side::Peer => self.board.workdir.clone(),
            Side::Controller => format!("/var/tmp/benchpipe/controller/{}", self.board.name),
        }
    }

    /// Where this board's cells keep what they run on a peer board: a directory of the
    /// peer's claimed workdir, per board, so that a board's cleanup never stops what
    /// another board runs on the same peer.
    pub(super) fn peer_dir(&self, peer: &crate::model::Board) -> String {
        format!(
            "{}/peer-{}",
            peer.workdir.trim_end_matches('/'),
            self.board.name
        )
    }

    /// Where a step on `side` keeps its services: the peer's directory for a peer step.
    pub(super) fn side_dir(&self, t: &Transports<'_>, side: Side) -> String {
        match (side, t.peer.as_ref().and_then(|p| self.boards.get(p))) {
            (Side::Peer, Some(peer)) => self.peer_dir(peer),
            _ => self.service_dir(side),
        }
    }

    /// Starts one of the recipe's services at each place of its side, each waited for
    /// by its `ready` check. A service that started is pushed on the cell's services
    /// before its check, so it is stopped for sure.
    pub(super) fn start_service(
        &self,
        places: &mut dyn Places,
        cell: &mut LiveCell<'_, '_>,
        spec: &ServiceSpec,
    ) -> Result<(), CellFailure> {
        let job = cell.job;
        self.phase(
            Some(&job.cell.address),
            format!("start service {}", spec.name),
        );
        let name = service_name(job, spec);
        for at in places.at(spec.on) {
            let vars = cell.vars_at(at).clone();
            let command = bench::render(&spec.command, &vars)?;
            let dir = places.dir(at);
            let started = match places.session(at) {
                Ok((t, _)) => t
                    .start_service(&dir, &name, &command)
                    .map_err(CellFailure::from),
                Err(e) => Err(e),
            };
            let started =
                started.map_err(|e| service_failure(&spec.name, "", places.failed(at, e)))?;
            cell.services.push((at, spec.name.clone(), started));
            self.wait_ready(spec, &vars, |check, each| {
                places::run(places, at, check, Some(each))
            })?;
        }
        Ok(())
    }

    /// Waits for a service's `ready` check to pass (none: at once); `run` runs the
    /// check where the service runs.
    pub(super) fn wait_ready(
        &self,
        spec: &ServiceSpec,
        vars: &Vars,
        mut run: impl FnMut(&str, Duration) -> Result<Output, CellFailure>,
    ) -> Result<(), CellFailure> {
        let Some(ready) = &spec.ready else {
            return Ok(());
        };
        let check = bench::render(ready, vars).map_err(CellFailure::from)?;
        let t0 = Instant::now();
        // One check never outlasts the wait, nor takes more than 10 s of it.
        let each = spec
            .ready_timeout
            .clamp(Duration::from_secs(1), Duration::from_secs(10));
        loop {
            let out = run(&check, each)?;
            if out.exit.success() {
                return Ok(());
            }
            if t0.elapsed() > spec.ready_timeout {
                return Err(CellFailure::NotReady {
                    service: spec.name.clone(),
                    after_secs: spec.ready_timeout.as_secs_f64(),
                    command: first_line(&check),
                    exit: out.exit.clone(),
                    stderr_tail: stderr_tail(&out.stderr_str()),
                });
            }
            self.sleep(Duration::from_millis(200))?;
        }
    }

    /// Stops the cell's services of that name that started, at the places that are
    /// there (a lost member's are its guard's to stop).
    #[expect(
        clippy::unused_self,
        reason = "a step of the worker's cell walk, called as one beside the steps that use it"
    )]
    pub(super) fn stop_service(
        &self,
        places: &mut dyn Places,
        cell: &mut LiveCell<'_, '_>,
        spec_name: &str,
    ) -> Result<(), CellFailure> {
        let (mine, keep): (Vec<_>, Vec<_>) = std::mem::take(&mut cell.services)
            .into_iter()
            .partition(|(_, n, _)| n == spec_name);
        cell.services = keep;
        let there: Vec<Place> = [Side::Controller, Side::Members, Side::Peer]
            .into_iter()
            .flat_map(|s| places.at(s))
            .collect();
        let mut result = Ok(());
        for (at, _, service) in mine {
            if !there.contains(&at) {
                continue;
            }
            let stopped = match places.session(at) {
                Ok((t, _)) => t.stop_service(&service).map_err(CellFailure::from),
                Err(e) => Err(e),
            };
            let stopped = stopped
                .map_err(|e| service_failure(&service.name, "stopping: ", places.failed(at, e)));
            if result.is_ok() {
                result = stopped;
            }
        }
        result
    }
}

/// The recipe's service of that name, as the schedule's step names it.
pub(super) fn spec_of<'r>(job: &Job<'r>, service: &str) -> Result<&'r ServiceSpec, CellFailure> {
    job.recipe
        .services
        .iter()
        .find(|s| s.name == service)
        .ok_or_else(|| CellFailure::Refused {
            reason: format!("{} has no service {service}", job.recipe.name),
        })
}

/// A service's name for its pid file: unique per cell, so interleaved cells never
/// share one.
pub(super) fn service_name(job: &Job<'_>, spec: &ServiceSpec) -> String {
    format!("{}-{}", &job.cell.key.as_str()[..8], spec.name)
}

/// A service that would not start or stop: the board's loss when the connection went,
/// the service's failure otherwise.
fn service_failure(service: &str, what: &str, e: CellFailure) -> CellFailure {
    match e {
        lost if lost.ends_board() => lost,
        other => CellFailure::Service {
            service: service.to_string(),
            message: format!("{what}{other}"),
        },
    }
}
