//! Where a cell's commands run: the places of a walk (a board's own session, its peer,
//! a cluster's members, the controller) behind one trait, so that one cell runner
//! (`cell.rs`, `services.rs`, `runs.rs`) serves a board's walk and a cluster's alike.
//! A board's places are here; a cluster's are in `cluster/members.rs`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use super::Job;
use super::worker::{LiveCell, Transports, Worker, board_host};
use crate::bench::Vars;
use crate::failure::CellFailure;
use crate::model::{Board, ImageName, Side, StorageName, TestName};
use crate::store::{CellFacts, Flashed, StorageFact};
use crate::transport::{Output, Transport};

/// One place a cell's command runs at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    Controller,
    /// A board's walk: the board.
    Board,
    /// A board's walk: the peer board of the cell at hand.
    Peer,
    /// A cluster's walk: a member, by its index in the cluster.
    Member(usize),
}

/// What the cell runner needs of a walk's places. A lost place (a cluster's member
/// whose connection went) is in no list: what ran there is its guard's to undo.
pub(super) trait Places {
    /// Where a recipe command on `side` runs, in order (a cluster's `members` side:
    /// every member that is there).
    fn at(&self, side: Side) -> Vec<Place>;
    /// Where the recipe's run on `side` runs (a cluster's per-member run is composed
    /// on its control member).
    fn run_at(&self, side: Side) -> Place;
    /// The places a sampler watches during measured runs, and a cool-down waits on.
    fn watched(&self) -> Vec<Place>;
    /// A place's board name, as a per-member run names it.
    fn name(&self, at: Place) -> String;
    /// A place's session and its board file, or why there is none.
    fn session(&mut self, at: Place) -> Result<(&mut dyn Transport, &Board), CellFailure>;
    /// A failure at `at`: a lost connection is the walk's loss (for a cluster's member,
    /// named as the member's).
    fn failed(&mut self, at: Place, cause: CellFailure) -> CellFailure;
    /// Where services at `at` keep their pid files (and a per-member run its files).
    fn dir(&self, at: Place) -> String;
    /// The cell at hand: a board's peer steps run on its peer.
    fn enter(&mut self, job: &Job<'_>);
    /// The temperature of a watched place before benchpipe loaded it.
    fn idle(&self, at: Place) -> Option<f64>;
    /// A cell's template values: on the controller and the board, and (a cluster's)
    /// on each member, in member order.
    fn cell_vars(&self, job: &Job<'_>) -> Result<(Vars, Vec<Vars>), CellFailure>;
    /// The facts recorded beside a cell when it opens (read now: a link's rate changes).
    fn cell_facts(&mut self, job: &Job<'_>) -> Result<CellFacts, CellFailure>;
    /// A run's telemetry, one per watched place that gave one, as the store keeps it.
    fn telemetry(&self, per: Vec<(Place, Value)>) -> Option<Value>;
}

/// Runs `command` at `at`; a lost connection is the place's loss.
pub(super) fn run(
    places: &mut dyn Places,
    at: Place,
    command: &str,
    timeout: Option<Duration>,
) -> Result<Output, CellFailure> {
    let out = match places.session(at) {
        Ok((t, _)) => t.run(command, timeout).map_err(CellFailure::from),
        Err(e) => Err(e),
    };
    out.map_err(|e| places.failed(at, e))
}

/// `run` with `file` as the command's stdin.
pub(super) fn run_input(
    places: &mut dyn Places,
    at: Place,
    command: &str,
    timeout: Option<Duration>,
    file: &mut std::fs::File,
) -> Result<Output, CellFailure> {
    let out = match places.session(at) {
        Ok((t, _)) => super::cell::run_input(t, command, timeout, file).map_err(CellFailure::from),
        Err(e) => Err(e),
    };
    out.map_err(|e| places.failed(at, e))
}

impl LiveCell<'_, '_> {
    /// The cell's values at `at`.
    pub(super) fn vars_at(&self, at: Place) -> &Vars {
        match at {
            Place::Member(i) => &self.member_vars[i],
            Place::Controller | Place::Board | Place::Peer => &self.vars,
        }
    }

    /// The run's index in every value set of the cell.
    pub(super) fn set_run(&mut self, index: u32) {
        self.vars.set("run", index);
        for v in &mut self.member_vars {
            v.set("run", index);
        }
    }
}

/// A board's places: the board, the controller and the peer of the cell at hand, and
/// what the board's walk recorded to put beside its cells.
pub(super) struct BoardPlaces<'x, 'a> {
    pub(super) w: &'x Worker<'a>,
    pub(super) t: Transports<'x>,
    pub(super) facts: &'x CellFacts,
    pub(super) idle: Option<f64>,
    pub(super) tools: &'x BTreeMap<TestName, CellFacts>,
    pub(super) flashed: &'x BTreeMap<ImageName, Flashed>,
    pub(super) storage_facts: &'x mut BTreeMap<StorageName, StorageFact>,
    pub(super) mounted: &'x super::mount::MountState,
}

impl Places for BoardPlaces<'_, '_> {
    fn at(&self, side: Side) -> Vec<Place> {
        vec![self.run_at(side)]
    }

    fn run_at(&self, side: Side) -> Place {
        match side {
            // A board is the only member of itself.
            Side::Board | Side::Members => Place::Board,
            Side::Controller => Place::Controller,
            Side::Peer => Place::Peer,
        }
    }

    fn watched(&self) -> Vec<Place> {
        vec![Place::Board]
    }

    fn name(&self, at: Place) -> String {
        match (at, &self.t.peer) {
            (Place::Peer, Some(p)) => p.to_string(),
            _ => self.w.name().to_string(),
        }
    }

    fn session(&mut self, at: Place) -> Result<(&mut dyn Transport, &Board), CellFailure> {
        let board = match (at, self.t.peer.as_ref().and_then(|p| self.w.boards.get(p))) {
            (Place::Peer, Some(peer)) => peer,
            _ => self.w.board,
        };
        let side = match at {
            Place::Controller => Side::Controller,
            Place::Peer => Side::Peer,
            Place::Board | Place::Member(_) => Side::Board,
        };
        Ok((self.t.side(side), board))
    }

    fn failed(&mut self, _at: Place, cause: CellFailure) -> CellFailure {
        cause
    }

    fn dir(&self, at: Place) -> String {
        match at {
            Place::Controller => self.w.side_dir(&self.t, Side::Controller),
            Place::Peer => self.w.side_dir(&self.t, Side::Peer),
            Place::Board | Place::Member(_) => self.w.side_dir(&self.t, Side::Board),
        }
    }

    fn enter(&mut self, job: &Job<'_>) {
        self.t.peer.clone_from(&job.cell.peer);
    }

    fn idle(&self, _at: Place) -> Option<f64> {
        self.idle
    }

    fn cell_vars(&self, job: &Job<'_>) -> Result<(Vars, Vec<Vars>), CellFailure> {
        self.w.cell_vars(job).map(|v| (v, Vec::new()))
    }

    fn cell_facts(&mut self, job: &Job<'_>) -> Result<CellFacts, CellFailure> {
        let w = self.w;
        // A raw-device cell (`uses_storage = "device"`) has no mount step: its device
        // is judged here, before any of its commands reads it.
        if job.cell.filesystem.is_none()
            && let Some(st) = job
                .cell
                .address
                .storage
                .as_ref()
                .and_then(|n| w.board.storage(n))
        {
            let facts = w.storage_facts(self.t.board, st);
            if let Ok(Some(f)) = &facts {
                let fact = crate::store::record_of(f);
                self.storage_facts.insert(st.name.clone(), fact);
            }
            super::board::another_disk(st, &facts, "the device was not read")?;
        }
        // The link the cell runs over, read now: a Wi-Fi rate changes.
        let link = w.network_facts(self.t.board, job.cell);
        let recorded = super::cell::Recorded {
            facts: self.facts,
            tools: self.tools,
            flashed: self.flashed,
            storage_facts: self.storage_facts,
            mounted: self.mounted,
        };
        Ok(super::cell::cell_facts(job, &recorded, link))
    }

    fn telemetry(&self, per: Vec<(Place, Value)>) -> Option<Value> {
        per.into_iter().next().map(|(_, v)| v)
    }
}

impl Worker<'_> {
    /// A board cell's values on the board and the controller: `TemplateVars`, the
    /// names `check` allows, each set.
    fn cell_vars(&self, job: &Job<'_>) -> Result<Vars, CellFailure> {
        let cell = job.cell;
        let storage = cell
            .address
            .storage
            .as_ref()
            .and_then(|s| self.board.storage(s));
        let host = super::cell::cell_host(self.board, cell);
        let controller_dir = self.service_dir(Side::Controller);
        let mut vars = Vars::new();
        vars.params(&cell.params);
        crate::bench::TemplateVars {
            dir: storage.map_or_else(|| self.board.workdir.clone(), |s| s.path.clone()),
            device: storage.and_then(|s| s.device.clone()).unwrap_or_default(),
            workdir: self.board.workdir.clone(),
            board: self.board.name.to_string(),
            run: 0,
            // The cell's key: a name of its own for what a cell keeps on the board
            // while cells of one group take turns (the xz recipe's tmpfs).
            cell: cell.key.to_string(),
            // Its secret directory on the controller, made when the cell opens.
            secrets: super::secrets::dir_of(&controller_dir, &cell.key),
            controller_dir,
            tmpfs: job.recipe.tmpfs.is_some().then(|| self.tmpfs_point(job)),
            addresses: super::cell::served_addresses(job.recipe, &host)?,
            host,
        }
        .set_on(&mut vars);
        if let Some(peer) = cell.peer.as_ref().and_then(|p| self.boards.get(p)) {
            vars.set(crate::config::PEER_HOST, board_host(peer))
                .set(crate::config::PEER_DIR, self.peer_dir(peer));
        }
        Ok(vars)
    }
}
