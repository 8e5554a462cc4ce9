//! A cell's services, at the places of their side on every walk: started with their
//! ready checks, and always stopped.

use std::path::Path;
use std::time::{Duration, Instant};

use super::Job;
use super::places::{self, Place, Places};
use super::worker::{LiveCell, Transports, Worker};
use crate::bench::{self, Vars};
use crate::failure::{CellFailure, first_line, stderr_tail};
use crate::model::{ServiceSpec, Side};
use crate::transport::Output;

/// Where an apply of the store at `store_root` keeps a board's (or a cluster's) work on
/// the controller: `/var/tmp/benchpipe/controller/<project>/<name>`, `<project>` being
/// 16 hex digits of the sha256 of the store's absolute path.
///
/// Per project, not per board name alone: two projects on one controller (two users, a
/// nightly lab run beside someone's own) name their boards alike (`here`, `pi`), and a
/// walk's start stops the leftover services and removes the leftover secrets in its
/// directory. Shared, one project's walk would take another's away mid-cell. One apply
/// per store (its lock) makes the directory one walk's.
pub fn controller_dir(store_root: &Path, name: &str) -> String {
    use sha2::{Digest, Sha256};
    // The same name before the store exists (a dry run, a test) as after: its parent
    // resolved, if the store itself is not there yet.
    let store = std::fs::canonicalize(store_root)
        .or_else(|e| match (store_root.parent(), store_root.file_name()) {
            (Some(parent), Some(name)) => {
                let parent = if parent.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    parent
                };
                std::fs::canonicalize(parent).map(|p| p.join(name))
            }
            _ => Err(e),
        })
        .or_else(|_| std::path::absolute(store_root))
        .unwrap_or_else(|_| store_root.to_path_buf());
    let digest = Sha256::digest(store.as_os_str().as_encoded_bytes());
    let project = crate::canonical::hex(&digest[..8]);
    format!("/var/tmp/benchpipe/controller/{project}/{name}")
}

impl Worker<'_> {
    /// Where services of this board's cells keep pid files, on each side. The
    /// controller's is per board: boards work in parallel, and one board's cleanup must
    /// not stop another board's services.
    pub(super) fn service_dir(&self, side: Side) -> String {
        match side {
            Side::Board | Side::Members | Side::Peer => self.board.workdir.clone(),
            Side::Controller => controller_dir(self.store.root(), self.board.name.as_str()),
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

#[cfg(test)]
mod tests {
    use super::controller_dir;

    /// Two projects naming a board alike get directories of their own; a store is
    /// named the same before it exists as after, and by a relative path as by its own.
    #[test]
    fn each_store_has_its_own_controller_directory_under_one_name() {
        let d = std::env::temp_dir().join(format!("bp-controller-dir-{}", std::process::id()));
        let (a, b) = (d.join("a/results"), d.join("b/results"));
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::fs::create_dir_all(d.join("b")).unwrap();
        let before = controller_dir(&a, "here");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        assert_eq!(controller_dir(&a, "here"), before);
        assert_ne!(controller_dir(&a, "here"), controller_dir(&b, "here"));
        let dotted = d.join("b/../a/results");
        assert_eq!(controller_dir(&dotted, "here"), before);
        let (prefix, rest) = before.split_at("/var/tmp/benchpipe/controller/".len());
        assert_eq!(prefix, "/var/tmp/benchpipe/controller/");
        let (project, name) = rest.split_once('/').unwrap();
        assert_eq!(name, "here");
        assert_eq!(project.len(), 16);
        assert!(project.bytes().all(|c| c.is_ascii_hexdigit()));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
