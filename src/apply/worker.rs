//! A board's worker: what every step on the board shares (the board, the store, progress,
//! the interrupt flag), a cell being worked on, and how a failed cell is recorded.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::resources::Resources;
use super::{BoardResult, Event, Job, Progress};
use crate::bench::Vars;
use crate::error::Error;
use crate::failure::CellFailure;
use crate::model::{Board, Connection, Side};
use crate::plan::{Address, Cell};
use crate::store::{self, CellWriter, Store};
use crate::transport::{Service, Transport};

pub(super) struct Worker<'a> {
    pub(super) board: &'a Board,
    /// The workspace root: relative paths in scenarios are taken from here.
    pub(super) root: &'a std::path::Path,
    /// Every board of the workspace: a flash runs through `via`, another board.
    pub(super) boards: &'a std::collections::BTreeMap<crate::model::BoardName, Board>,
    pub(super) store: &'a Store,
    pub(super) progress: &'a dyn Progress,
    pub(super) stop: &'a AtomicBool,
    pub(super) session: &'a str,
    pub(super) resources: &'a Resources,
    /// The boards walks hold to themselves (`Hold` steps).
    pub(super) held: &'a super::peer::BoardHolds,
    pub(super) connector: &'a dyn crate::transport::Connector,
    /// What to do with cells measured on a board that changed since (`--on-drift`).
    pub(super) on_drift: crate::store::OnDrift,
    /// `--deadline`, as Unix seconds: no cell starts that its steps' estimates say
    /// cannot end before it.
    pub(super) deadline: Option<f64>,
}

/// A cell being worked on: its store writer, template values and samples so far.
pub(super) struct LiveCell<'j, 'c> {
    pub(super) job: &'j Job<'c>,
    pub(super) writer: CellWriter,
    /// Its values on the board and the controller; a cluster cell's on the controller
    /// (`host` is the endpoint's).
    pub(super) vars: Vars,
    /// A cluster cell's values on each member, in member order; empty on a board (a
    /// board is the only member of itself: `vars`).
    pub(super) member_vars: Vec<Vars>,
    pub(super) data: crate::store::CellData,
    /// The recipe's services started so far (where, the recipe's name for it, handle).
    pub(super) services: Vec<(super::places::Place, String, Service)>,
    /// Where the cell's tmpfs is, once its mount step ran (or may have).
    pub(super) tmpfs: Option<String>,
}

/// In apply, the crate's errors come from the store: opening a cell, writing a run.
impl From<Error> for CellFailure {
    fn from(e: Error) -> Self {
        CellFailure::Store {
            message: e.to_string(),
        }
    }
}

impl<'a> Worker<'a> {
    /// The same worker, for another board's helpers to be given (`Worker { board, ..w.same() }`).
    pub(super) fn same(&self) -> Worker<'a> {
        Worker {
            board: self.board,
            root: self.root,
            boards: self.boards,
            store: self.store,
            progress: self.progress,
            stop: self.stop,
            session: self.session,
            resources: self.resources,
            held: self.held,
            connector: self.connector,
            on_drift: self.on_drift,
            deadline: self.deadline,
        }
    }

    pub(super) fn name(&self) -> &str {
        self.board.name.as_str()
    }

    pub(super) fn phase(&self, cell: Option<&Address>, phase: impl Into<String>) {
        self.progress.event(Event::Phase {
            board: self.name(),
            cell,
            phase: phase.into(),
        });
    }

    pub(super) fn done(&self, result: &BoardResult) {
        self.progress.event(Event::BoardDone {
            board: self.name(),
            failed: result.failed.len(),
        });
    }

    pub(super) fn fail_cell(&self, cell: &Cell, cause: &CellFailure) {
        let log = cause.log().map(|l| self.store.cell_dir(cell).join(l));
        self.progress.event(Event::CellFailed {
            board: self.name(),
            cell: &cell.address,
            cause,
            log: log.as_deref(),
        });
        // Recording the failure is best effort: the cause was already reported, and a
        // store that cannot be written will fail the next cell loudly anyway.
        if let Ok(w) = self.store.begin(cell) {
            let _ = w.record_failure(self.session, store::now(), cause);
        }
    }

    /// Records that the cell's test cannot apply on this board, and says so.
    pub(super) fn skip_cell(&self, cell: &Cell, reason: &str) {
        self.progress.event(Event::CellSkipped {
            board: self.name(),
            cell: &cell.address,
            reason,
        });
        if let Ok(w) = self.store.begin(cell) {
            let _ = w.record_skip(self.session, store::now(), reason);
        }
    }

    /// Sleeps, waking early on interrupt.
    pub(super) fn sleep(&self, d: Duration) -> Result<(), CellFailure> {
        let t0 = Instant::now();
        while t0.elapsed() < d {
            if self.stop.load(Ordering::SeqCst) {
                return Err(CellFailure::Interrupted);
            }
            std::thread::sleep(
                d.checked_sub(t0.elapsed())
                    .unwrap()
                    .min(Duration::from_millis(200)),
            );
        }
        Ok(())
    }
}

/// The board's and the controller's transports, and the peers', picked by a step's
/// `on` (a peer step: the peer of the cell at hand, `peer`).
pub(super) struct Transports<'a> {
    pub(super) board: &'a mut dyn Transport,
    pub(super) controller: &'a mut dyn Transport,
    /// The walk's connected peers.
    pub(super) peers: Option<&'a mut super::peer::Peers>,
    /// The peer of the cell at hand, when its recipe has one.
    pub(super) peer: Option<crate::model::BoardName>,
    /// What a step on a peer that is not connected runs on: nothing.
    pub(super) no_peer: NoPeer,
}

impl<'a> Transports<'a> {
    pub(super) fn new(board: &'a mut dyn Transport, controller: &'a mut dyn Transport) -> Self {
        Transports {
            board,
            controller,
            peers: None,
            peer: None,
            no_peer: NoPeer,
        }
    }

    /// With the walk's peers, for the cell whose peer is `peer`.
    pub(super) fn with_peers(
        mut self,
        peers: &'a mut super::peer::Peers,
        peer: Option<&crate::model::BoardName>,
    ) -> Self {
        self.peers = Some(peers);
        self.peer = peer.cloned();
        self
    }

    pub(super) fn side(&mut self, side: Side) -> &mut dyn Transport {
        match side {
            // A board is the only member of itself.
            Side::Board | Side::Members => &mut *self.board,
            Side::Controller => &mut *self.controller,
            Side::Peer => {
                let session = match (&mut self.peers, &self.peer) {
                    (Some(peers), Some(p)) => peers.get_mut(p).filter(|s| s.lost.is_none()),
                    _ => None,
                };
                match session {
                    Some(s) => s,
                    None => &mut self.no_peer,
                }
            }
        }
    }
}

/// The transport of a peer step whose peer is not connected: every command is refused,
/// so nothing meant for the peer ever runs on another board.
pub(super) struct NoPeer;

impl Transport for NoPeer {
    fn target(&self) -> String {
        "the peer board".into()
    }

    fn exec(
        &mut self,
        _command: &str,
        _timeout: Option<Duration>,
        _stdout: &mut dyn std::io::Write,
        _stderr: &mut dyn std::io::Write,
    ) -> Result<crate::transport::Exit, crate::transport::TransportError> {
        Err(crate::transport::TransportError::Other {
            target: self.target(),
            reason: "no peer board is connected for this cell".into(),
        })
    }

    fn upload(
        &mut self,
        _local: &std::path::Path,
        _remote: &str,
    ) -> Result<(), crate::transport::TransportError> {
        self.exec("", None, &mut std::io::sink(), &mut std::io::sink())
            .map(|_| ())
    }

    fn download(
        &mut self,
        _remote: &str,
        _local: &std::path::Path,
    ) -> Result<(), crate::transport::TransportError> {
        self.exec("", None, &mut std::io::sink(), &mut std::io::sink())
            .map(|_| ())
    }
}

pub(super) fn board_host(board: &Board) -> String {
    match &board.connection {
        Connection::Local => "localhost".into(),
        Connection::Ssh(t) => t.host.clone(),
    }
}
