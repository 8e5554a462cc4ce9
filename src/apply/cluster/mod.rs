//! A cluster's walk: the steps `plan::schedule` gives a cluster, over a session per
//! member and the controller's, walked by the step runner (`walk.rs`) as a board's are.
//! One thread walks them; the cluster's `Hold` step holds every member, so no member's
//! own cells run meanwhile.
//!
//! A member that is lost (its connection gone) fails the cluster's cells that have no
//! outcome with that cause and stops the walk's other steps; the cleanup steps still
//! run on the controller and on the members that are there, and the lost member's guard
//! (armed before the deploy) tears its own side down. `members.rs` holds the sessions
//! its places (the cell runner's: `places.rs`), `steps.rs` the cluster's own steps.

mod cleanup;
mod members;
mod steps;
#[cfg(test)]
mod tests;

use super::places::Places;
use super::walk::{Cells, Parts, Walk, Walker};
use super::worker::Worker;
use super::{BoardResult, Job, StepStatus};
use crate::failure::CellFailure;
use crate::model::{Board, Cluster, EndpointAt};
use crate::plan::CellKey;
use crate::plan::schedule::{Action, BoardAction, ClusterAction, Step, WalkAction};
use crate::transport::Service;

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

/// A cluster's walk.
pub(super) type ClusterWalk<'j, 'c, 'b> = Walk<'j, 'c, ClusterOwn<'b>>;

/// What only a cluster's walk carries from step to step (its `tools` are each recipe's
/// facts of the control member and the controller).
pub(super) struct ClusterOwn<'b> {
    members: Vec<Member<'b>>,
    /// Images fetched and verified in this walk, for every member it flashes.
    fetched: super::flashing::Fetches,
    controller_guard: Option<Service>,
    /// Set when the first deploy step starts: the teardown then has something to undo.
    deployed: bool,
}

impl ClusterWorker<'_> {
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
        let own = ClusterOwn {
            members: self.members.iter().map(|b| Member::new(b)).collect(),
            fetched: super::flashing::Fetches::new(),
            controller_guard: None,
            deployed: false,
        };
        let mut w = Walk::new(self.w.connector.controller(), jobs, own);
        super::walk::walk(self, &mut w, steps)
    }
}

impl<'a> Walker for ClusterWorker<'a> {
    type Own = ClusterOwn<'a>;

    fn worker(&self) -> &Worker<'_> {
        &self.w
    }

    fn lost_reason(&self, lost: &CellFailure) -> String {
        format!("the cluster is broken: {lost}")
    }

    /// An image's flash steps are needless for a member that runs it already (another
    /// walk of the apply may have flashed it since the plan); the fetch, when every
    /// member does.
    fn is_done(&self, w: &mut ClusterWalk<'_, '_, 'a>, step: &Step) -> bool {
        let action = match &step.action {
            Action::Walk(a) if a.flashes() => a,
            Action::Walk(_)
            | Action::Hold(_)
            | Action::Reserve(_)
            | Action::Board(_)
            | Action::Cluster(_)
            | Action::Cell(_) => return false,
        };
        let Some(job) = step.cells.first().and_then(|k| w.jobs.get(k)) else {
            return false;
        };
        let runs = |i: usize| self.member(i).runs_image(&job.cell.image);
        match action.member() {
            Some(m) => self
                .members
                .iter()
                .position(|b| &b.name == m)
                .is_some_and(runs),
            None => (0..self.members.len()).all(runs),
        }
    }

    fn walk_step(
        &self,
        w: &mut ClusterWalk<'_, '_, 'a>,
        action: &WalkAction,
        _step: &Step,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        self.walk_step_of(w, action, pending)
    }

    fn board_step(
        &self,
        _w: &mut ClusterWalk<'_, '_, 'a>,
        action: &BoardAction,
        _step: &Step,
        _pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        Err(not_ours(self.name(), &format!("{action:?}")))
    }

    fn cluster_step(
        &self,
        w: &mut ClusterWalk<'_, '_, 'a>,
        action: &ClusterAction,
        _step: &Step,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        self.own_step(w, action, pending)
    }

    fn board_cleanup(
        &self,
        _w: &mut ClusterWalk<'_, '_, 'a>,
        action: &BoardAction,
        _step: &Step,
    ) -> StepStatus {
        StepStatus::Skipped {
            reason: not_ours(self.name(), &format!("{action:?}")).to_string(),
        }
    }

    fn cluster_cleanup(
        &self,
        w: &mut ClusterWalk<'_, '_, 'a>,
        action: &ClusterAction,
        step: &Step,
    ) -> StepStatus {
        self.own_cleanup(w, action, step)
    }

    fn with_places<'j, 'c, R>(
        &self,
        w: &mut ClusterWalk<'j, 'c, 'a>,
        run: impl FnOnce(&mut dyn Places, Cells<'_, 'j, 'c>) -> R,
    ) -> Result<R, CellFailure> {
        let Parts {
            controller,
            tools,
            own,
            cells,
        } = w.parts();
        // The cell's secrets live on the controller: its output is redacted.
        let mut controller = super::secrets::Redacting::new(controller, cells.secrets);
        let mut places = members::ClusterPlaces {
            cw: self,
            controller: &mut controller,
            members: &mut own.members,
            tools,
        };
        Ok(run(&mut places, cells))
    }

    /// A lost member's places are left out of every cleanup (its guard's to undo).
    fn cleanup_skipped(&self, _w: &ClusterWalk<'_, '_, 'a>, _step: &Step) -> Option<StepStatus> {
        None
    }

    fn end(&self, w: &mut ClusterWalk<'_, '_, 'a>) {
        // Guards a step could not disarm (none, unless the schedule is wrong) must not
        // tear down a cluster benchpipe has finished with: disarm what is reachable.
        self.disarm(w);
        // An interrupt can cut a sampler's start short after it was started: end them.
        if w.interrupted {
            for m in &mut w.own.members {
                if let (Some(t), None) = (m.t.as_deref_mut(), &m.lost) {
                    let _ = crate::telemetry::end_samplers(t, &m.board.workdir);
                }
            }
        }
    }
}

/// A step of the other kind of walk in this one: the schedule is wrong, and nothing of
/// it is run.
pub(super) fn not_ours(walk: &str, step: &str) -> CellFailure {
    let step: String = step.chars().take(80).collect();
    CellFailure::Refused {
        reason: format!("the walk of {walk} has no such step: {step}"),
    }
}
