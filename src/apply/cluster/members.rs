//! A cluster's members as its walk sees them: a session each, lost for good once its
//! connection goes; and a cell's template values on each side.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{ClusterWalk, ClusterWorker};
use crate::apply::places::{Place, Places};
use crate::bench::Vars;
use crate::failure::CellFailure;
use crate::model::{Board, Side, TestName, Where};
use crate::store::{CellFacts, ClusterFact, Scalar};
use crate::transport::{Output, Service, Transport};

/// One member's session and what the walk learnt of it.
pub(super) struct Member<'b> {
    pub(super) board: &'b Board,
    /// `None` until `ConnectMember`, and again once the member is lost.
    pub(super) t: Option<Box<dyn Transport>>,
    /// Why it is gone, once it is: its steps are skipped, its guard tears it down.
    pub(super) lost: Option<String>,
    pub(super) facts: CellFacts,
    /// Its temperature before benchpipe loaded it: the base of "idle+N".
    pub(super) idle: Option<f64>,
    /// Each recipe's `[facts]` and package versions on this member.
    pub(super) tools: BTreeMap<TestName, CellFacts>,
    pub(super) guard: Option<Service>,
    /// The images this walk prepared for it and wrote to it, and its boot.
    pub(super) flashing: super::super::flashing::Flashing,
}

impl<'b> Member<'b> {
    pub(super) fn new(board: &'b Board) -> Member<'b> {
        Member {
            board,
            t: None,
            lost: None,
            facts: CellFacts::default(),
            idle: None,
            tools: BTreeMap::new(),
            guard: None,
            flashing: crate::apply::flashing::Flashing::default(),
        }
    }
}

impl Member<'_> {
    /// A failure of this member of `cluster`: when its connection is gone, the member
    /// is lost for good and the failure is the cluster's (`BoardLost`, naming it).
    fn lose(&mut self, cluster: &str, cause: CellFailure) -> CellFailure {
        if !cause.ends_board() {
            return cause;
        }
        let why = format!(
            "member {} of cluster {cluster} is lost: {cause}",
            self.board.name
        );
        self.lost.get_or_insert_with(|| why.clone());
        self.t = None;
        CellFailure::BoardLost { cause: why }
    }

    /// Its session, or why there is none.
    fn session(&mut self) -> Result<&mut dyn Transport, CellFailure> {
        if let Some(why) = &self.lost {
            return Err(CellFailure::BoardLost { cause: why.clone() });
        }
        match self.t.as_deref_mut() {
            Some(t) => Ok(t),
            None => Err(CellFailure::Refused {
                reason: format!("member {} is not connected", self.board.name),
            }),
        }
    }
}

impl ClusterWorker<'_> {
    /// A failure of member `i` (`Member::lose`).
    pub(super) fn on_member(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        i: usize,
        cause: CellFailure,
    ) -> CellFailure {
        w.own.members[i].lose(self.cluster.name.as_str(), cause)
    }

    /// The session of member `i`, or why there is none.
    pub(super) fn session<'x>(
        w: &'x mut ClusterWalk<'_, '_, '_>,
        i: usize,
    ) -> Result<&'x mut dyn Transport, CellFailure> {
        w.own.members[i].session()
    }

    /// Runs `command` at a place of the cluster; a lost connection is the member's loss.
    pub(super) fn run_on(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        at: Place,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<Output, CellFailure> {
        let secrets = &w.secrets;
        // The cell's secrets live on the controller: its output is redacted.
        let mut controller = crate::apply::secrets::Redacting::new(w.controller.as_mut(), secrets);
        let mut places = ClusterPlaces {
            cw: self,
            controller: &mut controller,
            members: &mut w.own.members,
            tools: &w.tools,
        };
        crate::apply::places::run(&mut places, at, command, timeout)
    }

    /// Where a cluster's deploy or teardown step runs.
    pub(super) fn place(&self, on: &Where) -> Place {
        match on {
            Where::Controller => Place::Controller,
            Where::Board(b) => Place::Member(
                self.members
                    .iter()
                    .position(|m| &m.name == b)
                    .unwrap_or(self.control),
            ),
        }
    }

    /// The cluster's directory on the controller.
    pub(super) fn controller_dir(&self) -> String {
        self.w.service_dir(Side::Controller)
    }

    /// A cell's values on the controller (`host` is the endpoint's, `board` the
    /// cluster's) and on each member: `TemplateVars`, the names `check` allows, set as
    /// a board cell's are (its secret directory on the controller at every place); the
    /// addresses its servers are held to, where its recipe reads them.
    pub(super) fn cell_vars(
        &self,
        cell: &crate::plan::Cell,
        recipe: &crate::model::Recipe,
    ) -> Result<(Vars, Vec<Vars>), crate::failure::CellFailure> {
        let controller_dir = self.controller_dir();
        let at = |board: &str, host: String, workdir: &str, addresses| {
            let mut v = Vars::new();
            v.params(&cell.params);
            crate::bench::TemplateVars {
                // No storage: a cluster's tests run in each member's workdir.
                dir: workdir.to_string(),
                device: String::new(),
                workdir: workdir.to_string(),
                controller_dir: controller_dir.clone(),
                board: board.to_string(),
                host,
                run: 0,
                cell: cell.key.to_string(),
                // Made when the cell opens, on the controller, as a board cell's.
                secrets: super::super::secrets::dir_of(&controller_dir, &cell.key),
                // `plan` gives a cluster no test with a tmpfs (no storage axis).
                tmpfs: None,
                addresses,
            }
            .set_on(&mut v);
            v
        };
        let served = |host: &str| crate::apply::cell::served_addresses(recipe, host);
        let control = self.members[self.control];
        // The endpoint may be a name only the cluster's ingress answers to: the
        // controller's values get the addresses where it resolves, and none where it
        // does not (the members' servers are what they are for).
        let endpoint = self.endpoint_host();
        let addresses = served(&endpoint).ok().flatten();
        let controller = at(self.name(), endpoint, &control.workdir, addresses);
        let members = self
            .members
            .iter()
            .map(|m| {
                let host = super::super::worker::board_host(m);
                let addresses = served(&host)?;
                Ok(at(m.name.as_str(), host, &m.workdir, addresses))
            })
            .collect::<Result<_, crate::failure::CellFailure>>()?;
        Ok((controller, members))
    }

    /// The values of a deploy or teardown template run at `slot`.
    pub(super) fn deploy_vars(&self, slot: Place) -> Vars {
        #[derive(Serialize)]
        struct M {
            name: String,
            host: String,
            workdir: String,
        }
        let members: Vec<M> = self
            .members
            .iter()
            .map(|m| M {
                name: m.name.to_string(),
                host: super::super::worker::board_host(m),
                workdir: m.workdir.clone(),
            })
            .collect();
        let (board, host, workdir) = match slot {
            Place::Controller | Place::Board | Place::Peer => (
                self.name().to_string(),
                self.endpoint_host(),
                self.members[self.control].workdir.clone(),
            ),
            Place::Member(i) => {
                let m = self.members[i];
                (
                    m.name.to_string(),
                    super::super::worker::board_host(m),
                    m.workdir.clone(),
                )
            }
        };
        let mut v = Vars::new();
        v.set("cluster", self.name())
            .set(
                "members",
                minijinja::Value::from(minijinja::value::Serde(members)),
            )
            .set("endpoint_host", self.endpoint_host())
            .set(
                "endpoint_port",
                i64::from(self.cluster.endpoint.port.unwrap_or(0)),
            )
            .set("board", board)
            .set("host", host)
            .set("workdir", workdir)
            .set("controller_dir", self.controller_dir());
        v
    }
}

/// A cluster's places: the controller and every member that is there, and what the
/// walk recorded to put beside its cells.
pub(super) struct ClusterPlaces<'x, 'a, 'b> {
    pub(super) cw: &'x ClusterWorker<'a>,
    pub(super) controller: &'x mut dyn Transport,
    pub(super) members: &'x mut Vec<Member<'b>>,
    /// Each recipe's facts of the control member and the controller.
    pub(super) tools: &'x BTreeMap<TestName, CellFacts>,
}

impl Places for ClusterPlaces<'_, '_, '_> {
    fn at(&self, side: Side) -> Vec<Place> {
        let there = |i: &usize| self.members[*i].lost.is_none();
        match side {
            Side::Controller => vec![Place::Controller],
            Side::Board => [self.cw.control]
                .into_iter()
                .filter(there)
                .map(Place::Member)
                .collect(),
            Side::Members => (0..self.members.len())
                .filter(there)
                .map(Place::Member)
                .collect(),
            // The plan gives a cluster no test with a peer.
            Side::Peer => Vec::new(),
        }
    }

    fn run_at(&self, side: Side) -> Place {
        match side {
            Side::Controller => Place::Controller,
            Side::Board | Side::Members | Side::Peer => Place::Member(self.cw.control),
        }
    }

    fn watched(&self) -> Vec<Place> {
        (0..self.members.len()).map(Place::Member).collect()
    }

    fn name(&self, at: Place) -> String {
        match at {
            Place::Member(i) => self.cw.members[i].name.to_string(),
            Place::Controller | Place::Board | Place::Peer => self.cw.name().to_string(),
        }
    }

    fn session(&mut self, at: Place) -> Result<(&mut dyn Transport, &Board), CellFailure> {
        match at {
            Place::Member(i) => {
                let board = self.cw.members[i];
                self.members[i].session().map(|t| (t, board))
            }
            Place::Controller => Ok((&mut *self.controller, self.cw.w.board)),
            Place::Board | Place::Peer => Err(CellFailure::Refused {
                reason: format!("cluster {} has no such place", self.cw.name()),
            }),
        }
    }

    fn failed(&mut self, at: Place, cause: CellFailure) -> CellFailure {
        match at {
            Place::Member(i) => self.members[i].lose(self.cw.name(), cause),
            Place::Controller | Place::Board | Place::Peer => cause,
        }
    }

    fn dir(&self, at: Place) -> String {
        match at {
            Place::Member(i) => self.cw.members[i].workdir.clone(),
            Place::Controller | Place::Board | Place::Peer => self.cw.controller_dir(),
        }
    }

    fn enter(&mut self, _job: &crate::apply::Job<'_>) {}

    fn idle(&self, at: Place) -> Option<f64> {
        match at {
            Place::Member(i) => self.members[i].idle,
            Place::Controller | Place::Board | Place::Peer => None,
        }
    }

    fn cell_vars(&self, job: &crate::apply::Job<'_>) -> Result<(Vars, Vec<Vars>), CellFailure> {
        self.cw.cell_vars(job.cell, job.recipe)
    }

    /// Every member's facts (with its recipe facts and what a flash of this walk wrote
    /// to it and proved), the cluster's shape, and the recipe's.
    fn cell_facts(&mut self, job: &crate::apply::Job<'_>) -> Result<CellFacts, CellFailure> {
        let cell = job.cell;
        let mut members = BTreeMap::new();
        for m in self.members.iter() {
            let mut f = m.facts.clone();
            if let Some(extra) = m.tools.get(&job.recipe.name) {
                f.merge(extra);
            }
            if let Some(written) = m.flashing.flashed.get(&cell.address.image) {
                f.flashed = Some(written.clone());
            }
            members.insert(m.board.name.to_string(), f);
        }
        let cluster = self.cw.cluster;
        let mut facts = CellFacts {
            cluster: Some(ClusterFact {
                name: Scalar::of(&cluster.name),
                members: cluster.members.iter().filter_map(Scalar::of).collect(),
                control: Scalar::of(&cluster.control),
                other: BTreeMap::new(),
            }),
            members,
            benchpipe: Some(env!("CARGO_PKG_VERSION").into()),
            recipe: Some(crate::apply::facts::recipe_fact(job.recipe)),
            ..CellFacts::default()
        };
        if let Some(extra) = self.tools.get(&job.recipe.name) {
            facts.merge(extra);
        }
        Ok(facts)
    }

    fn telemetry(&self, per: Vec<(Place, Value)>) -> Option<Value> {
        if per.is_empty() {
            return None;
        }
        let members: serde_json::Map<String, Value> =
            per.into_iter().map(|(p, v)| (self.name(p), v)).collect();
        Some(serde_json::json!({ "members": Value::Object(members) }))
    }
}
