//! A cluster's own cleanup steps: the cluster's teardown and the guards stopped, each at
//! the places that are there (a lost member's own side is its guard's to tear down).

use super::{ClusterWalk, ClusterWorker};
use crate::apply::places::Place;
use crate::plan::schedule::{ClusterAction, Step};
use crate::transport::side_guard as guard;

use super::super::StepStatus;

impl ClusterWorker<'_> {
    /// A cleanup step of the cluster's own: runs when what it undoes was done, at each
    /// place that is there.
    pub(super) fn own_cleanup(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        action: &ClusterAction,
        step: &Step,
    ) -> StepStatus {
        let done = match action {
            ClusterAction::Undeploy { on, from, commands } => {
                if !w.own.deployed {
                    return StepStatus::Done;
                }
                let steps = &self.cluster.teardown[*from..from + commands];
                if let Some(Place::Member(i)) = steps.first().map(|s| self.place(&s.on))
                    && w.own.members[i].lost.is_some()
                {
                    return StepStatus::Skipped {
                        reason: format!("{on} is lost; its guard tears it down"),
                    };
                }
                self.w.phase(None, "tear down the cluster");
                self.cluster_commands(w, steps, "teardown")
            }
            ClusterAction::DisarmGuard => {
                self.disarm(w);
                Ok(())
            }
            // Not cleanup: `own_step`.
            ClusterAction::ConnectMember { .. }
            | ClusterAction::MemberFacts { .. }
            | ClusterAction::MemberHealth { .. }
            | ClusterAction::ArmGuard
            | ClusterAction::Deploy { .. } => return StepStatus::Done,
        };
        w.cleanup_status(&step.cells, done)
    }

    /// Stops every guard that is there: the cluster was taken down in order.
    pub(super) fn disarm(&self, w: &mut ClusterWalk<'_, '_, '_>) {
        for i in 0..w.own.members.len() {
            let Some(g) = w.own.members[i].guard.take() else {
                continue;
            };
            if w.own.members[i].lost.is_some() {
                continue;
            }
            if let Some(t) = w.own.members[i].t.as_deref_mut()
                && let Err(e) = guard::disarm(t, &g)
            {
                self.w.phase(
                    None,
                    format!("could not stop the guard on {}: {e}", self.members[i].name),
                );
            }
        }
        if let Some(g) = w.own.controller_guard.take()
            && let Err(e) = guard::disarm(w.controller.as_mut(), &g)
        {
            self.w
                .phase(None, format!("could not stop the controller's guard: {e}"));
        }
    }
}
