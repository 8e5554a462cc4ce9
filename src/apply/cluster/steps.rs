//! The steps of a cluster's own walk: sessions, claims, provisioning and facts on every
//! member, the guards, the deploy, and the cluster's teardown.

use std::time::Duration;

use super::{ClusterWalk, ClusterWorker};
use crate::apply::places::Place;
use crate::bench;
use crate::failure::CellFailure;
use crate::model::{ClusterStep, Connection, Side};
use crate::plan::CellKey;
use crate::plan::schedule::{ClusterAction, WalkAction};
use crate::store::{CellFacts, Scalar};
use crate::transport::side_guard::{self as guard, Carrier};
use crate::transport::{Transport, TransportError};

use super::super::Job;
use super::super::cleanup::{claim_refused, take_board};

/// How long one deploy or teardown command may run unless its `timeout` says.
pub(super) const CLUSTER_STEP_TIMEOUT: Duration = Duration::from_secs(3600);

impl ClusterWorker<'_> {
    /// Runs a step every walk takes, over every member's session, for its pending cells.
    pub(super) fn walk_step_of(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        action: &WalkAction,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        let first = &pending[0];
        match action {
            WalkAction::FetchImage { image } => {
                let fetched = self.w.fetch_image(&w.jobs[first].cell.image)?;
                w.own.fetched.insert(image.clone(), fetched);
                Ok(())
            }
            WalkAction::Derive { member, .. }
            | WalkAction::Flash { member, .. }
            | WalkAction::FlashTpi { member, .. }
            | WalkAction::FlashCommand { member, .. }
            | WalkAction::PowerCycle { member } => {
                let Some(m) = member else {
                    return Err(CellFailure::Refused {
                        reason: format!("a flash step of cluster {} names no member", self.name()),
                    });
                };
                let i = self.index_of(m)?;
                if action.ends_session() {
                    w.own.members[i].t = None;
                }
                let image = &w.jobs[first].cell.image;
                let own = &mut w.own;
                let r = self.member(i).flash_step(
                    w.controller.as_mut(),
                    &own.fetched,
                    &mut own.members[i].flashing,
                    action,
                    image,
                );
                r.map(|_| ())
            }
            WalkAction::ClaimWorkdir { .. } => {
                self.w.phase(None, "claim workdirs");
                for i in 0..self.members.len() {
                    let workdir = self.members[i].workdir.clone();
                    let r = crate::transport::workdir::claim(Self::session(w, i)?, &workdir)
                        .map_err(claim_refused)
                        .and_then(|()| {
                            let name = &self.members[i].name;
                            take_board(Self::session(w, i)?, name, &workdir)
                        });
                    r.map_err(|e| self.on_member(w, i, e))?;
                }
                crate::transport::workdir::claim(w.controller.as_mut(), &self.controller_dir())
                    .map_err(claim_refused)
            }
            WalkAction::Provision { .. } => self.provision(w, pending),
            WalkAction::StopLeftoverServices => {
                for i in 0..self.members.len() {
                    let dir = self.members[i].workdir.clone();
                    let r = Self::session(w, i)?.stop_all_services(&dir);
                    if let Err(e) = r {
                        let cause = self.on_member(w, i, e.into());
                        if cause.ends_board() {
                            return Err(cause);
                        }
                        self.w
                            .phase(None, format!("could not stop leftover services: {cause}"));
                    }
                }
                if let Err(e) = w.controller.stop_all_services(&self.controller_dir()) {
                    self.w
                        .phase(None, format!("could not stop leftover services: {e}"));
                }
                self.w.remove_leftover_secrets(w.controller.as_mut());
                Ok(())
            }
            WalkAction::VerifyImage { image, expect } => {
                for i in 0..self.members.len() {
                    let mw = self.member(i);
                    let r = mw.verify_image(Self::session(w, i)?, image, expect);
                    r.map_err(|e| self.on_member(w, i, e))?;
                    // Flashing reads this to know the member is already at the image.
                    mw.record_at_image(&w.own.members[i].flashing, &w.jobs[first].cell.image)?;
                }
                Ok(())
            }
        }
    }

    /// Runs one of the cluster's own steps for its pending cells.
    pub(super) fn own_step(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        action: &ClusterAction,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        let first = &pending[0];
        match action {
            ClusterAction::ConnectMember { member } => self.connect(w, member, first),
            ClusterAction::MemberFacts { member } => self.member_facts(w, member, pending),
            ClusterAction::MemberHealth { member, checks } => {
                let i = self.index_of(member)?;
                let r = self.w.health(Self::session(w, i)?, member.as_str(), checks);
                r.map_err(|e| {
                    if e.ends_board() {
                        self.on_member(w, i, e)
                    } else {
                        e
                    }
                })
            }
            ClusterAction::ArmGuard => self.arm(w),
            ClusterAction::Deploy { from, commands, .. } => {
                w.own.deployed = true;
                self.w.phase(None, "deploy");
                let steps = &self.cluster.deploy[*from..from + commands];
                let t0 = std::time::Instant::now();
                self.cluster_commands(w, steps, "deploy")?;
                // The next `--deadline` judges the deploy by this.
                let took = t0.elapsed().as_secs_f64();
                let store = self.w.store;
                if let Err(e) =
                    store.record_deploy_time(&self.cluster.name, self.w.session, *from, took)
                {
                    self.w
                        .phase(None, format!("could not record the deploy's time: {e}"));
                }
                Ok(())
            }
            // Cleanup: `own_cleanup`.
            ClusterAction::Undeploy { .. } | ClusterAction::DisarmGuard => Ok(()),
        }
    }

    /// Member `member`'s index, or why it is none.
    fn index_of(&self, member: &crate::model::BoardName) -> Result<usize, CellFailure> {
        self.members
            .iter()
            .position(|m| &m.name == member)
            .ok_or_else(|| CellFailure::Refused {
                reason: format!("{member} is not a member of {}", self.cluster.name),
            })
    }

    /// A session to `member`; after its power cycle, once it has booted (its loss then
    /// ends the walk, as a board's does).
    fn connect(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        member: &crate::model::BoardName,
        first: &CellKey,
    ) -> Result<(), CellFailure> {
        let i = self.index_of(member)?;
        if w.own.members[i].flashing.booting {
            let image = &w.jobs[first].cell.image;
            let r = self
                .member(i)
                .connect_booted(&mut w.own.members[i].flashing, image);
            return match r {
                Ok(t) => {
                    w.own.members[i].t = Some(t);
                    Ok(())
                }
                Err(e) => Err(self.on_member(w, i, e)),
            };
        }
        self.w.phase(None, format!("connect {member}"));
        match self.w.connector.board(self.members[i]) {
            Ok(t) => {
                w.own.members[i].t = Some(t);
                Ok(())
            }
            Err(TransportError::Unreachable { target, reason }) => {
                let why = format!("member {member}: {reason}");
                w.unreachable = Some(why.clone());
                w.own.members[i].lost = Some(why);
                Err(TransportError::Unreachable { target, reason }.into())
            }
            Err(e) => Err(self.on_member(w, i, e.into())),
        }
    }

    /// Tools per member (the recipes' `members` and, on the control member, `board`
    /// needs) and on the controller; a recipe one of them cannot serve fails its cells.
    fn provision(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        self.w.phase(None, "provision");
        let recipes: std::collections::BTreeMap<_, &crate::model::Recipe> = pending
            .iter()
            .map(|k| (&w.jobs[k].recipe.name, w.jobs[k].recipe))
            .collect();
        let mut unserved = super::super::provision::Unserved::new();
        let mut installs = super::super::provision::Installs::new();
        for i in 0..self.members.len() {
            let sides: &[Side] = if i == self.control {
                &[Side::Board, Side::Members]
            } else {
                &[Side::Members]
            };
            let name = self.members[i].name.to_string();
            let mut mine = super::super::provision::Installs::new();
            let r = super::super::provision::provision(
                Self::session(w, i)?,
                &name,
                sides,
                recipes.values().copied(),
                &mut mine,
            );
            // A member's installs are in its own record.
            let member = self.members[i].name.clone();
            installs.extend(mine.into_iter().map(|(_, i)| (member.clone(), i)));
            let r = r.map_err(|e| self.on_member(w, i, e));
            if r.is_err() {
                self.w.record_installs(std::mem::take(&mut installs));
            }
            for (test, cause) in r? {
                unserved.entry(test).or_insert(cause);
            }
        }
        let controller = w.controller.as_mut();
        let mut mine = super::super::provision::Installs::new();
        let on_controller = super::super::provision::on_controller(
            controller,
            recipes.values().copied(),
            &mut unserved,
            &mut mine,
        );
        // The controller's installs are in the cluster's record.
        let cluster = crate::model::BoardName::new(self.name());
        installs.extend(mine.into_iter().map(|(_, i)| (cluster.clone(), i)));
        self.w.record_installs(installs);
        on_controller?;
        let jobs: Vec<&Job<'_>> = pending.iter().map(|k| w.jobs[k]).collect();
        super::super::walk::fail_unserved(&mut w.outcomes, jobs, &unserved);
        Ok(())
    }

    /// One member's facts and idle temperature, and the recipes' `[facts]` it runs:
    /// `members` facts on each member, `board` facts on the control member, controller
    /// facts with the control member's.
    fn member_facts(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        member: &crate::model::BoardName,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        let Some(i) = self.members.iter().position(|m| &m.name == member) else {
            return Ok(());
        };
        self.w.phase(None, format!("gather facts of {member}"));
        let board = self.members[i];
        let t = Self::session(w, i)?;
        let (facts, idle) = super::super::facts::idle_facts(t, board);
        if let Some(e) = facts.error.as_ref().and_then(Scalar::as_text) {
            // A fact script that could not run on a connection that is gone.
            let cause = CellFailure::BoardLost {
                cause: format!("{member}: {e}"),
            };
            return Err(self.on_member(w, i, cause));
        }
        let mut vars = bench::Vars::new();
        vars.set("workdir", board.workdir.clone())
            .set("controller_dir", self.controller_dir())
            .set("board", board.name.as_str())
            .set("host", super::super::worker::board_host(board));
        let recipes: Vec<&crate::model::Recipe> = {
            let mut v: Vec<&crate::model::Recipe> =
                pending.iter().map(|k| w.jobs[k].recipe).collect();
            v.sort_by(|a, b| a.name.cmp(&b.name));
            v.dedup_by(|a, b| a.name == b.name);
            v
        };
        for r in recipes {
            let mut mine = CellFacts::default();
            let mut cluster = CellFacts::default();
            for fact in &r.facts {
                let to = match fact.on {
                    Side::Members => &mut mine,
                    Side::Board if i == self.control => &mut cluster,
                    Side::Controller if i == self.control => &mut cluster,
                    _ => continue,
                };
                let t: &mut dyn Transport = match fact.on {
                    Side::Controller => w.controller.as_mut(),
                    _ => match w.own.members[i].t.as_deref_mut() {
                        Some(t) => t,
                        None => continue,
                    },
                };
                if let Some(v) = super::super::facts::run_fact(t, &fact.command, &vars) {
                    to.tools.insert(fact.name.clone(), v.into());
                }
            }
            w.own.members[i].tools.insert(r.name.clone(), mine);
            if i == self.control {
                w.tools.insert(r.name.clone(), cluster);
            }
        }
        let m = &mut w.own.members[i];
        m.facts = facts;
        m.idle = idle;
        Ok(())
    }

    /// The guards: on every member, its own teardown commands; on the controller, the
    /// controller's. Without a guard a lost member would keep what the deploy started,
    /// so a guard that cannot be armed fails the cluster's cells.
    fn arm(&self, w: &mut ClusterWalk<'_, '_, '_>) -> Result<(), CellFailure> {
        self.w.phase(None, "arm the guards");
        let name = format!("guard-{}", self.cluster.name);
        for i in 0..self.members.len() {
            let teardown = self.rendered(&self.cluster.teardown, Place::Member(i))?;
            let board = self.members[i];
            let carrier = match board.connection {
                Connection::Local => Carrier::Process(std::process::id()),
                Connection::Ssh(_) => Carrier::Session,
            };
            let dir = board.workdir.clone();
            let samplers = crate::telemetry::end_samplers_script(&board.workdir);
            let r = guard::arm(
                Self::session(w, i)?,
                &dir,
                &name,
                carrier,
                &teardown,
                &samplers,
            );
            let g = r.map_err(|e| match self.on_member(w, i, e.into()) {
                lost if lost.ends_board() => lost,
                other => CellFailure::Refused {
                    reason: format!("cannot arm the guard on {}: {other}", board.name),
                },
            })?;
            w.own.members[i].guard = Some(g);
        }
        let teardown = self.rendered(&self.cluster.teardown, Place::Controller)?;
        let g = guard::arm(
            w.controller.as_mut(),
            &self.controller_dir(),
            &name,
            Carrier::Process(std::process::id()),
            &teardown,
            "",
        )
        .map_err(|e| CellFailure::Refused {
            reason: format!("cannot arm the guard on the controller: {e}"),
        })?;
        w.own.controller_guard = Some(g);
        Ok(())
    }

    /// The cluster's steps at `slot`, rendered (a guard's teardown).
    fn rendered(&self, steps: &[ClusterStep], slot: Place) -> Result<Vec<String>, CellFailure> {
        let vars = self.deploy_vars(slot);
        steps
            .iter()
            .filter(|s| self.place(&s.on) == slot)
            .map(|s| bench::render(&s.command, &vars).map_err(CellFailure::from))
            .collect()
    }

    /// Deploy or teardown commands, each where it says; the first failure stops them.
    pub(super) fn cluster_commands(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        steps: &[ClusterStep],
        what: &str,
    ) -> Result<(), CellFailure> {
        for s in steps {
            let slot = self.place(&s.on);
            let command = bench::render(&s.command, &self.deploy_vars(slot))?;
            let out = self.run_on(w, slot, &command, s.timeout.or(Some(CLUSTER_STEP_TIMEOUT)))?;
            crate::apply::cell::exited_well(format!("{what} on {}", s.on.name()), &command, &out)?;
        }
        Ok(())
    }
}
