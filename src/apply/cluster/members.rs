//! A cluster's members as its walk sees them: a session each, lost for good once its
//! connection goes; and a cell's template values on each side.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::{ClusterWalk, ClusterWorker, Slot};
use crate::bench::Vars;
use crate::failure::CellFailure;
use crate::model::{Board, Side, TestName, Where};
use crate::transport::{Output, Service, Transport};

/// One member's session and what the walk learnt of it.
pub(super) struct Member<'b> {
    pub(super) board: &'b Board,
    /// `None` until `ConnectMember`, and again once the member is lost.
    pub(super) t: Option<Box<dyn Transport>>,
    /// Why it is gone, once it is: its steps are skipped, its guard tears it down.
    pub(super) lost: Option<String>,
    pub(super) facts: Value,
    /// Its temperature before benchpipe loaded it: the base of "idle+N".
    pub(super) idle: Option<f64>,
    /// Each recipe's `[facts]` and package versions on this member.
    pub(super) tools: BTreeMap<TestName, Value>,
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
            facts: Value::Null,
            idle: None,
            tools: BTreeMap::new(),
            guard: None,
            flashing: Default::default(),
        }
    }
}

impl ClusterWorker<'_> {
    /// A failure of member `i`: when its connection is gone, the member is lost for
    /// good and the failure is the cluster's (`BoardLost`, naming the member).
    pub(super) fn on_member(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        i: usize,
        cause: CellFailure,
    ) -> CellFailure {
        if !cause.ends_board() {
            return cause;
        }
        let m = &mut w.own.members[i];
        let why = format!(
            "member {} of cluster {} is lost: {cause}",
            m.board.name, self.cluster.name
        );
        m.lost.get_or_insert_with(|| why.clone());
        m.t = None;
        CellFailure::BoardLost { cause: why }
    }

    /// The session of member `i`, or why there is none.
    pub(super) fn session<'x>(
        w: &'x mut ClusterWalk<'_, '_, '_>,
        i: usize,
    ) -> Result<&'x mut dyn Transport, CellFailure> {
        let m = &mut w.own.members[i];
        if let Some(why) = &m.lost {
            return Err(CellFailure::BoardLost { cause: why.clone() });
        }
        match m.t.as_deref_mut() {
            Some(t) => Ok(t),
            None => Err(CellFailure::Refused {
                reason: format!("member {} is not connected", m.board.name),
            }),
        }
    }

    /// Runs `command` on a slot; a lost connection is the member's loss.
    pub(super) fn run_on(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        slot: Slot,
        command: &str,
        timeout: Option<Duration>,
    ) -> Result<Output, CellFailure> {
        match slot {
            // The cell's secrets live on the controller: its output is redacted.
            Slot::Controller => {
                let mut t =
                    super::super::secrets::Redacting::new(w.controller.as_mut(), &w.secrets);
                Ok(t.run(command, timeout)?)
            }
            Slot::Member(i) => {
                let r = Self::session(w, i)?.run(command, timeout);
                r.map_err(|e| self.on_member(w, i, e.into()))
            }
        }
    }

    /// `run_on` with `file` as the command's stdin.
    pub(super) fn run_input_on(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        slot: Slot,
        command: &str,
        timeout: Option<Duration>,
        file: &mut std::fs::File,
    ) -> Result<Output, CellFailure> {
        match slot {
            Slot::Controller => {
                let mut t =
                    super::super::secrets::Redacting::new(w.controller.as_mut(), &w.secrets);
                Ok(crate::apply::cell::run_input(
                    &mut t, command, timeout, file,
                )?)
            }
            Slot::Member(i) => {
                let r = crate::apply::cell::run_input(Self::session(w, i)?, command, timeout, file);
                r.map_err(|e| self.on_member(w, i, e.into()))
            }
        }
    }

    /// Where a recipe step on `side` runs in a cluster cell.
    pub(super) fn slots(&self, side: Side) -> Vec<Slot> {
        match side {
            Side::Controller => vec![Slot::Controller],
            Side::Board => vec![Slot::Member(self.control)],
            Side::Members => (0..self.members.len()).map(Slot::Member).collect(),
            // The plan gives a cluster no test with a peer.
            Side::Peer => Vec::new(),
        }
    }

    /// Where a cluster's deploy or teardown step runs.
    pub(super) fn place(&self, on: &Where) -> Slot {
        match on {
            Where::Controller => Slot::Controller,
            Where::Board(b) => Slot::Member(
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

    /// A cell's values on the controller (`host` is the endpoint's) and on each member;
    /// the addresses its servers are held to, where its recipe reads them.
    pub(super) fn cell_vars(
        &self,
        cell: &crate::plan::Cell,
        recipe: &crate::model::Recipe,
    ) -> Result<(Vars, Vec<Vars>), crate::failure::CellFailure> {
        let vars = |board: &str, host: String, workdir: &str| {
            let mut v = Vars::new();
            v.params(&cell.params)
                .set("workdir", workdir.to_string())
                .set("controller_dir", self.controller_dir())
                .set("dir", workdir.to_string())
                .set("device", "")
                .set("board", board.to_string())
                .set("host", host.clone())
                .set("run", 0)
                .set("cell", cell.key.to_string());
            (v, host)
        };
        let control = self.members[self.control];
        // The endpoint may be a name only the cluster's ingress answers to: the
        // controller's values get the addresses where it resolves, for a template that
        // reads them (the members' servers are what they are for).
        let (mut controller, endpoint) = vars(self.name(), self.endpoint_host(), &control.workdir);
        let _ = crate::apply::cell::serve_addresses(&mut controller, recipe, &endpoint);
        // Its secret directory on the controller, made when the cell opens.
        controller.set(
            "secrets",
            super::super::secrets::dir_of(&self.controller_dir(), &cell.key),
        );
        let members = self
            .members
            .iter()
            .map(|m| {
                let (mut v, host) = vars(
                    m.name.as_str(),
                    super::super::worker::board_host(m),
                    &m.workdir,
                );
                crate::apply::cell::serve_addresses(&mut v, recipe, &host).map(|()| v)
            })
            .collect::<Result<_, _>>()?;
        Ok((controller, members))
    }

    /// The values of a deploy or teardown template run at `slot`.
    pub(super) fn deploy_vars(&self, slot: Slot) -> Vars {
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
            Slot::Controller => (
                self.name().to_string(),
                self.endpoint_host(),
                self.members[self.control].workdir.clone(),
            ),
            Slot::Member(i) => {
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
