//! A cluster's walk: the steps `plan::schedule` gives a cluster, over a session per
//! member and the controller's. One thread walks them, as for a board; the cluster's
//! `Hold` step holds every member, so no member's own cells run meanwhile.
//!
//! A member that is lost (its connection gone) fails the cluster's cells that have no
//! outcome with that cause and stops the walk's other steps; the cleanup steps still
//! run on the controller and on the members that are there, and the lost member's guard
//! (armed before the deploy) tears its own side down. `members.rs` holds the sessions
//! and a cell's values on each side, `steps.rs` the steps, `runs.rs` the measured runs.

mod cell;
mod cleanup;
mod members;
mod runs;
mod steps;

use std::collections::BTreeMap;

use serde_json::Value;

use super::worker::Worker;
use super::{BoardResult, Event, Job};
use crate::failure::CellFailure;
use crate::model::{Board, Cluster, EndpointAt, TestName};
use crate::plan::CellKey;
use crate::plan::schedule::{Action, Step};
use crate::plan::state;
use crate::store::CellWriter;
use crate::transport::{Service, Transport};

use members::Member;

/// A cluster's walk: `w` names it (its `board` is the cluster as a board: its name, the
/// control member's workdir, the cluster's directory on the controller).
pub(super) struct ClusterWorker<'a> {
    pub(super) w: Worker<'a>,
    pub(super) cluster: &'a Cluster,
    pub(super) members: Vec<&'a Board>,
    /// The control member's index in `members`.
    pub(super) control: usize,
}

/// What a cluster's walk carries from step to step.
struct Walk<'j, 'c, 'b> {
    members: Vec<Member<'b>>,
    controller: Box<dyn Transport>,
    controller_guard: Option<Service>,
    jobs: BTreeMap<CellKey, &'j Job<'c>>,
    live: BTreeMap<CellKey, Cell<'j, 'c>>,
    outcomes: BTreeMap<CellKey, Result<usize, CellFailure>>,
    /// Each recipe's facts of the control member and the controller.
    tools: BTreeMap<TestName, Value>,
    lost: Option<CellFailure>,
    /// A member `ConnectMember` could not reach: the cells were not run.
    unreachable: Option<String>,
    interrupted: bool,
    /// Set when the first deploy step starts: the teardown then has something to undo.
    deployed: bool,
    seq: u64,
    /// The open cells' secrets, redacted from every controller command's output.
    secrets: super::secrets::Secrets,
}

/// Where one of a cell's services runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Controller,
    Member(usize),
}

/// A cluster cell being worked on: its writer, its values on each side, its services.
struct Cell<'j, 'c> {
    job: &'j Job<'c>,
    writer: CellWriter,
    data: crate::store::CellData,
    /// The controller's values: `host` is the endpoint's.
    vars: crate::bench::Vars,
    /// Each member's values, in member order.
    member_vars: Vec<crate::bench::Vars>,
    services: Vec<(Slot, String, Service)>,
}

impl Walk<'_, '_, '_> {
    fn fail(&mut self, cells: &[CellKey], cause: &CellFailure) {
        if cause.ends_board() {
            self.lost.get_or_insert_with(|| cause.clone());
        }
        if matches!(cause, CellFailure::Interrupted) {
            self.interrupted = true;
        }
        for k in cells {
            self.outcomes
                .entry(k.clone())
                .or_insert_with(|| Err(cause.clone()));
        }
    }

    fn is_complete(&self, key: &CellKey) -> bool {
        let job = self.jobs[key];
        let data = self.live.get(key).map_or(&job.data, |l| &l.data);
        state::state(job.cell, &job.primary, data).is_complete()
    }
}

impl<'a> ClusterWorker<'a> {
    fn name(&self) -> &str {
        self.cluster.name.as_str()
    }

    /// The endpoint's host: what controller-side steps get as `host`.
    fn endpoint_host(&self) -> String {
        match &self.cluster.endpoint.at {
            EndpointAt::Host(h) => h.clone(),
            EndpointAt::Board(b) => self
                .members
                .iter()
                .find(|m| &m.name == b)
                .map(|m| super::worker::board_host(m))
                .unwrap_or_default(),
        }
    }

    /// A board's worker for member `i`: the board-side helpers (cool-down, image
    /// verification, the sampler's options) read its own board file.
    fn member(&self, i: usize) -> Worker<'_> {
        Worker {
            board: self.members[i],
            ..self.w.same()
        }
    }

    /// Walks the cluster's steps over its jobs.
    pub(super) fn walk(&self, steps: &[Step], jobs: &[Job<'_>]) -> BoardResult {
        self.w.progress.event(Event::BoardStart {
            board: self.name(),
            cells: jobs.len(),
        });
        let mut w = Walk {
            members: self.members.iter().map(|b| Member::new(b)).collect(),
            controller: self.w.connector.controller(),
            controller_guard: None,
            jobs: jobs.iter().map(|j| (j.cell.key.clone(), j)).collect(),
            live: BTreeMap::new(),
            outcomes: BTreeMap::new(),
            tools: BTreeMap::new(),
            lost: None,
            unreachable: None,
            interrupted: false,
            deployed: false,
            seq: 0,
            secrets: super::secrets::Secrets::default(),
        };
        let mut last: BTreeMap<&CellKey, usize> = BTreeMap::new();
        for (i, s) in steps.iter().enumerate() {
            for k in &s.cells {
                last.insert(k, i);
            }
        }
        let mut result = BoardResult {
            completed: 0,
            failed: Vec::new(),
            skipped: Vec::new(),
            unreachable: None,
            interrupted: false,
        };
        let mut held = None;
        for (i, step) in steps.iter().enumerate() {
            let status = match &step.action {
                Action::Hold { boards } => self.w.hold_step(boards, &mut held, &mut w.interrupted),
                _ => self.step(&mut w, step),
            };
            self.w.progress.event(Event::Step {
                board: self.name(),
                index: i,
                step,
                status: &status,
            });
            for k in &step.cells {
                if last.get(k) == Some(&i) {
                    self.finish_cell(&mut w, k, &mut result);
                }
            }
        }
        let unnamed: Vec<CellKey> = w
            .jobs
            .keys()
            .filter(|k| !last.contains_key(k))
            .cloned()
            .collect();
        for k in &unnamed {
            self.finish_cell(&mut w, k, &mut result);
        }
        // Guards a step could not disarm (none, unless the schedule is wrong) must not
        // tear down a cluster benchpipe has finished with: disarm what is reachable.
        self.disarm(&mut w);
        // An interrupt can cut a sampler's start short after it was started: end them.
        if w.interrupted {
            for m in &mut w.members {
                if let (Some(t), None) = (m.t.as_deref_mut(), &m.lost) {
                    let _ = crate::telemetry::end_samplers(t, &m.board.workdir);
                }
            }
        }
        result.interrupted |= w.interrupted;
        drop(held);
        self.w.done(&result);
        result
    }

    fn finish_cell(&self, w: &mut Walk<'_, '_, '_>, key: &CellKey, result: &mut BoardResult) {
        let live = w.live.remove(key);
        let job = w.jobs[key];
        // The cell's secrets go with it, whatever became of it (after its teardown).
        if w.secrets.close(key)
            && let Err(e) = super::secrets::remove_dirs(
                w.controller.as_mut(),
                &self.controller_dir(),
                Some(key),
            )
        {
            self.w.phase(
                Some(&job.cell.address),
                format!("could not remove the cell's secrets: {e}"),
            );
        }
        let outcome = match w.outcomes.remove(key) {
            Some(o) => o,
            None => match (&w.lost, w.interrupted) {
                (Some(lost), _) => Err(lost.clone()),
                (None, true) => Err(CellFailure::Interrupted),
                (None, false) => {
                    let data = live.as_ref().map_or(&job.data, |l| &l.data);
                    match state::state(job.cell, &job.primary, data) {
                        s if s.is_complete() => Ok(state::counted(&job.cell.method, data).count()),
                        _ => Err(CellFailure::Interrupted),
                    }
                }
            },
        };
        match outcome {
            Ok(measured) => {
                result.completed += 1;
                self.w.progress.event(Event::CellDone {
                    board: self.name(),
                    cell: &job.cell.address,
                    measured,
                });
            }
            Err(CellFailure::Interrupted) => result.interrupted = true,
            Err(CellFailure::NotApplicable { reason }) => {
                self.w.skip_cell(job.cell, &reason);
                result.skipped.push((job.cell.address.clone(), reason));
            }
            Err(_) if w.unreachable.is_some() => {
                let cause = w.unreachable.clone().unwrap_or_default();
                result.unreachable.get_or_insert((cause, 0)).1 += 1;
            }
            Err(cause) => {
                self.w.fail_cell(job.cell, &cause);
                result.failed.push((job.cell.address.clone(), cause));
            }
        }
    }
}
