//! A board's walk: what the step runner (`walk.rs`) does at each step of a board's
//! schedule, over the board's session and the controller's, and what only a board's
//! walk carries (its flash, mount, UAS state and peers).

use std::collections::BTreeMap;

use super::flashing::{Fetches, Flashing};
use super::mount::MountState;
use super::places::{BoardPlaces, Place, Places};
use super::walk::{Cells, Parts, Walk, Walker};
use super::worker::{Transports, Worker};
use super::{BoardResult, Job, StepStatus};
use crate::failure::CellFailure;
use crate::model::Side;
use crate::plan::CellKey;
use crate::plan::schedule::{Action, BoardAction, ClusterAction, DoneWhen, Step, WalkAction};
use crate::storage;
use crate::transport::{Transport, TransportError};

/// A board's walk.
pub(super) type BoardWalk<'j, 'c> = Walk<'j, 'c, BoardOwn>;

/// What only a board's walk carries from step to step.
pub(super) struct BoardOwn {
    /// `None` until `Connect` succeeds.
    pub(super) board: Option<Box<dyn Transport>>,
    /// Recorded beside every cell's samples.
    pub(super) facts: crate::store::CellFacts,
    /// The temperature before benchpipe loaded the board: the base of "idle+N".
    pub(super) idle_celsius: Option<f64>,
    pub(super) mounted: MountState,
    /// Images fetched and verified in this walk.
    pub(super) fetched: Fetches,
    /// The board's images: prepared, written, its boot.
    pub(super) flashing: Flashing,
    /// Each storage's facts, read at its mount or UAS step (`apply/uas.rs`).
    pub(super) storage_facts: BTreeMap<crate::model::StorageName, crate::store::StorageFact>,
    /// Set by a UAS step: the image's `RestoreCmdline` puts the command line back.
    pub(super) uas_touched: bool,
    /// The peer boards of the walk's cells, connected by their `ConnectPeer` steps.
    pub(super) peers: super::peer::Peers,
    /// Set when this walk claimed the board's directory on the controller.
    pub(super) controller_claimed: bool,
    /// The steps that need root on the board (`schedule::root_steps`), judged when its
    /// session opens.
    pub(super) needs_root: Vec<String>,
}

impl Worker<'_> {
    /// Walks one board's steps over its jobs (the cells the steps name).
    pub(super) fn walk(&self, steps: &[Step], jobs: &[Job<'_>]) -> BoardResult {
        let own = BoardOwn {
            board: None,
            facts: crate::store::CellFacts::default(),
            idle_celsius: None,
            mounted: MountState::default(),
            fetched: Fetches::new(),
            flashing: Flashing::default(),
            storage_facts: BTreeMap::new(),
            uas_touched: false,
            peers: BTreeMap::new(),
            controller_claimed: false,
            needs_root: crate::plan::schedule::root_steps(steps, MOST_ROOT_STEPS),
        };
        let mut w = Walk::new(self.connector.controller(), jobs, own);
        super::walk::walk(self, &mut w, steps)
    }
}

impl Walker for Worker<'_> {
    type Own = BoardOwn;

    fn worker(&self) -> &Worker<'_> {
        self
    }

    fn lost_reason(&self, _lost: &CellFailure) -> String {
        "the board is lost".into()
    }

    fn is_done(&self, w: &mut BoardWalk<'_, '_>, step: &Step) -> bool {
        match &step.action {
            Action::Board(BoardAction::Mount {
                storage,
                filesystem,
                ..
            }) => {
                step.done_when == DoneWhen::Mounted
                    && w.own
                        .mounted
                        .current
                        .as_ref()
                        .is_some_and(|(s, f)| &s.name == storage && &f.name == filesystem)
            }
            Action::Board(BoardAction::Uas { storage, uas }) => {
                step.done_when == DoneWhen::DriverAsWanted && self.uas_in_place(w, storage, *uas)
            }
            Action::Walk(a) if a.flashes() => step
                .cells
                .first()
                .and_then(|k| w.jobs.get(k))
                .is_some_and(|j| self.runs_image(&j.cell.image)),
            Action::Walk(_)
            | Action::Hold(_)
            | Action::Reserve(_)
            | Action::Cluster(_)
            | Action::Cell(_)
            | Action::Board(
                BoardAction::Connect
                | BoardAction::ConnectPeer { .. }
                | BoardAction::GatherFacts
                | BoardAction::Health { .. }
                | BoardAction::MountTmpfs { .. }
                | BoardAction::UnmountTmpfs { .. }
                | BoardAction::Unmount { .. }
                | BoardAction::RestoreCmdline,
            ) => false,
        }
    }

    fn walk_step(
        &self,
        w: &mut BoardWalk<'_, '_>,
        action: &WalkAction,
        step: &Step,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        match action {
            WalkAction::FetchImage { image } => {
                let fetched = self.fetch_image(&w.jobs[&pending[0]].cell.image)?;
                w.own.fetched.insert(image.clone(), fetched);
                Ok(())
            }
            WalkAction::Derive { .. }
            | WalkAction::Flash { .. }
            | WalkAction::FlashCommand { .. }
            | WalkAction::FlashTpi { .. }
            | WalkAction::PowerCycle { .. } => {
                if action.ends_session() {
                    w.own.board = None;
                }
                let image = &w.jobs[&pending[0]].cell.image;
                let own = &mut w.own;
                self.flash_step(
                    w.controller.as_mut(),
                    &own.fetched,
                    &mut own.flashing,
                    action,
                    image,
                )
                .map(|_| ())
            }
            WalkAction::ClaimWorkdir { .. }
            | WalkAction::Provision { .. }
            | WalkAction::StopLeftoverServices
            | WalkAction::VerifyImage { .. } => self.session_step(w, step, pending),
        }
    }

    fn board_step(
        &self,
        w: &mut BoardWalk<'_, '_>,
        action: &BoardAction,
        step: &Step,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        match action {
            BoardAction::Connect => self.connect(w, pending),
            BoardAction::Uas { storage, uas } => self.set_uas(w, storage, *uas),
            BoardAction::ConnectPeer { peer } => {
                let session = self.connect_peer(peer)?;
                w.own.peers.insert(peer.clone(), session);
                Ok(())
            }
            BoardAction::MountTmpfs { size, .. } => self.tmpfs_step(w, *size, pending),
            BoardAction::GatherFacts | BoardAction::Mount { .. } | BoardAction::Health { .. } => {
                self.session_step(w, step, pending)
            }
            // Cleanup: `cleanup_board`.
            BoardAction::UnmountTmpfs { .. }
            | BoardAction::Unmount { .. }
            | BoardAction::RestoreCmdline => Ok(()),
        }
    }

    fn cluster_step(
        &self,
        _w: &mut BoardWalk<'_, '_>,
        action: &ClusterAction,
        _step: &Step,
        _pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        Err(super::cluster::not_ours(
            self.name(),
            &format!("{action:?}"),
        ))
    }

    fn board_cleanup(
        &self,
        w: &mut BoardWalk<'_, '_>,
        action: &BoardAction,
        step: &Step,
    ) -> StepStatus {
        self.cleanup_board(w, action, step)
    }

    fn cluster_cleanup(
        &self,
        _w: &mut BoardWalk<'_, '_>,
        action: &ClusterAction,
        _step: &Step,
    ) -> StepStatus {
        StepStatus::Skipped {
            reason: super::cluster::not_ours(self.name(), &format!("{action:?}")).to_string(),
        }
    }

    fn with_places<'j, 'c, R>(
        &self,
        w: &mut BoardWalk<'j, 'c>,
        run: impl FnOnce(&mut dyn Places, Cells<'_, 'j, 'c>) -> R,
    ) -> Result<R, CellFailure> {
        let Parts {
            controller,
            tools,
            own,
            cells,
        } = w.parts();
        let BoardOwn {
            board,
            facts,
            idle_celsius,
            mounted,
            flashing,
            storage_facts,
            peers,
            ..
        } = own;
        let Some(board) = board.as_deref_mut() else {
            return Err(not_connected());
        };
        let secrets = cells.secrets;
        let mut board = super::secrets::Redacting::new(board, secrets);
        let mut controller = super::secrets::Redacting::new(controller, secrets);
        let t = Transports::new(&mut board, &mut controller).with_peers(peers, None);
        let mut places = BoardPlaces {
            w: self,
            t,
            facts,
            idle: *idle_celsius,
            tools,
            flashed: &flashing.flashed,
            storage_facts,
            mounted,
        };
        Ok(run(&mut places, cells))
    }

    /// A cleanup on the board runs only while the board is there; on a peer, while
    /// the peer is, whatever became of the board.
    fn cleanup_skipped(&self, w: &BoardWalk<'_, '_>, step: &Step) -> Option<StepStatus> {
        if step.side.on_board() && w.lost.is_some() {
            return Some(StepStatus::Skipped {
                reason: "the board is lost".into(),
            });
        }
        let peer = step
            .cells
            .first()
            .and_then(|k| w.jobs.get(k).copied())
            .and_then(|j| j.cell.peer.as_ref());
        let peer_gone = peer.is_none_or(|p| w.own.peers.get(p).is_none_or(|s| s.lost.is_some()));
        (step.side == Side::Peer && peer_gone).then(|| StepStatus::Skipped {
            reason: "the peer board is lost".into(),
        })
    }

    fn end(&self, w: &mut BoardWalk<'_, '_>) {
        if w.lost.is_none()
            && let (Some((s, f)), Some(board)) =
                (w.own.mounted.current.take(), w.own.board.as_deref_mut())
            && let Err(e) = storage::release(board, &s, &f)
        {
            self.phase(None, format!("could not unmount {}: {e}", s.path));
        }
        // An interrupt can cut a sampler's start short after it was started: end them.
        if w.interrupted
            && w.lost.is_none()
            && let Some(board) = w.own.board.as_deref_mut()
        {
            let _ = crate::telemetry::end_samplers(board, &self.board.workdir);
        }
    }
}

impl Worker<'_> {
    /// The board's session: once it has booted after a power cycle of this walk.
    fn connect(&self, w: &mut BoardWalk<'_, '_>, pending: &[CellKey]) -> Result<(), CellFailure> {
        if w.own.flashing.booting {
            let image = &w.jobs[&pending[0]].cell.image;
            let mut t = self.connect_booted(&mut w.own.flashing, image)?;
            self.refuse_without_root(t.as_mut(), &w.own.needs_root)?;
            w.own.board = Some(t);
            return Ok(());
        }
        self.phase(None, "connect");
        match self.connector.board(self.board) {
            Ok(mut t) => {
                self.refuse_without_root(t.as_mut(), &w.own.needs_root)?;
                w.own.board = Some(t);
                Ok(())
            }
            Err(TransportError::Unreachable { target, reason }) => {
                w.unreachable = Some(reason.clone());
                Err(TransportError::Unreachable { target, reason }.into())
            }
            Err(e) => {
                // The stored cause leaves the file out (no absolute path in reports).
                if let TransportError::HostKey { known_hosts, .. } = &e {
                    self.phase(None, format!("known_hosts: {}", known_hosts.display()));
                }
                Err(e.into())
            }
        }
    }

    /// A cell's tmpfs: the cell opens at this, its first step.
    fn tmpfs_step(
        &self,
        w: &mut BoardWalk<'_, '_>,
        size: crate::model::TmpfsSize,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        let first = &pending[0];
        self.with_places(w, |places, cells| {
            let job = cells.jobs[first];
            places.enter(job);
            if !cells.live.contains_key(first) {
                let cell = self.open_cell(places, job, cells.secrets)?;
                cells.live.insert(first.clone(), cell);
            }
            let cell = cells.live.get_mut(first).ok_or(CellFailure::Interrupted)?;
            let (board, _) = places.session(Place::Board)?;
            let mounted = self.mount_tmpfs(board, cell, size);
            if cell.tmpfs.is_none() {
                // Refused: none of the cell's commands may touch what is there.
                cells.live.remove(first);
            }
            mounted
        })?
    }

    /// The steps that run over the board's session (and the controller's, the peers').
    fn session_step(
        &self,
        w: &mut BoardWalk<'_, '_>,
        step: &Step,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        let Parts {
            controller,
            tools,
            own,
            cells,
        } = w.parts();
        let Cells {
            jobs,
            outcomes,
            secrets,
            ..
        } = cells;
        let BoardOwn {
            board,
            facts,
            idle_celsius,
            mounted,
            flashing,
            storage_facts,
            peers,
            controller_claimed,
            ..
        } = own;
        let Some(board) = board.as_deref_mut() else {
            return Err(not_connected());
        };
        let mut board = super::secrets::Redacting::new(board, secrets);
        let mut controller = super::secrets::Redacting::new(controller, secrets);
        // None in a tidy walk (`schedule::tidy`), whose steps serve no cell.
        let first = pending.first().map(|k| jobs[k]);
        let peer = first.and_then(|j| j.cell.peer.as_ref());
        let mut t = Transports::new(&mut board, &mut controller).with_peers(peers, peer);
        match &step.action {
            Action::Walk(WalkAction::ClaimWorkdir { controller }) => {
                self.phase(None, "claim workdir");
                self.claim(&mut t, *controller)?;
                *controller_claimed = *controller;
                Ok(())
            }
            Action::Walk(WalkAction::Provision { .. }) => {
                self.phase(None, "provision");
                let jobs: Vec<&Job<'_>> = pending.iter().map(|k| jobs[k]).collect();
                let mut unserved = self.prepare(t.board, t.controller, &jobs)?;
                if let Some(peers) = t.peers.as_deref_mut() {
                    self.prepare_peers(peers, &jobs, &mut unserved);
                }
                super::walk::fail_unserved(outcomes, jobs, &unserved);
                Ok(())
            }
            Action::Walk(WalkAction::StopLeftoverServices) => {
                // Services a crashed or killed apply left running would skew every number.
                for side in [Side::Board, Side::Controller] {
                    if let Err(e) = t.side(side).stop_all_services(&self.service_dir(side)) {
                        self.phase(None, format!("could not stop leftover services: {e}"));
                    }
                }
                if let Some(peers) = t.peers.as_deref_mut() {
                    self.stop_peer_leftovers(peers);
                }
                if *controller_claimed {
                    self.remove_leftover_secrets(t.controller);
                }
                // Then the tmpfs they may have held open.
                if let Err(e) = storage::tmpfs::sweep(t.board, &self.board.workdir) {
                    self.phase(None, format!("could not unmount a leftover tmpfs: {e}"));
                }
                // And a scratch filesystem a killed apply left mounted after its cells.
                for s in &self.board.storage {
                    match storage::release_leftover(t.board, s) {
                        Ok(true) => {
                            self.phase(None, format!("unmounted the leftover {}", s.path));
                        }
                        Ok(false) => {}
                        Err(e) => {
                            self.phase(
                                None,
                                format!("could not unmount a leftover {}: {e}", s.path),
                            );
                        }
                    }
                }
                Ok(())
            }
            Action::Board(BoardAction::GatherFacts) => {
                (*facts, *idle_celsius) = super::facts::idle_facts(t.board, self.board);
                let jobs: Vec<&Job<'_>> = pending.iter().map(|k| jobs[k]).collect();
                self.judge_drift(t.board, &jobs, facts, outcomes)?;
                *tools = self.recipe_facts(&mut t, &jobs);
                Ok(())
            }
            Action::Board(BoardAction::Health { checks }) => {
                self.health(t.board, self.name(), checks)
            }
            Action::Walk(WalkAction::VerifyImage { image, expect }) => {
                self.verify_image(t.board, image, expect)?;
                // Flashing reads this to know the board is already at the image.
                match first {
                    Some(j) => self.record_at_image(flashing, &j.cell.image),
                    None => Ok(()),
                }
            }
            Action::Board(BoardAction::Mount {
                storage: name,
                filesystem,
                ..
            }) => {
                // The device's own facts (model, driver, link speed) for every cell here.
                if let Some(st) = self.board.storage(name) {
                    let facts = self.storage_facts(t.board, st);
                    if let Ok(Some(f)) = &facts {
                        storage_facts.insert(st.name.clone(), crate::store::record_of(f));
                    }
                    // Another disk where the board file's is declared: never formatted.
                    another_disk(st, &facts, "nothing was formatted or measured")?;
                    if let Some(want) = &st.driver {
                        super::uas::check_driver(st, want, facts)?;
                    }
                }
                let Some(first) = first else {
                    return Err(CellFailure::Transport {
                        message: "a mount step that serves no cell: the schedule is wrong".into(),
                    });
                };
                self.mount(t.board, first, name, filesystem, mounted)
            }
            // `walk_step`'s and `board_step`'s own, a cell's (`walk::cell_step`), the
            // cleanup steps and a cluster's.
            Action::Hold(_) | Action::Reserve(_) | Action::Cell(_) | Action::Cluster(_) => Ok(()),
            Action::Walk(
                WalkAction::FetchImage { .. }
                | WalkAction::Derive { .. }
                | WalkAction::Flash { .. }
                | WalkAction::FlashCommand { .. }
                | WalkAction::FlashTpi { .. }
                | WalkAction::PowerCycle { .. },
            ) => Ok(()),
            Action::Board(
                BoardAction::Connect
                | BoardAction::ConnectPeer { .. }
                | BoardAction::Uas { .. }
                | BoardAction::MountTmpfs { .. }
                | BoardAction::UnmountTmpfs { .. }
                | BoardAction::Unmount { .. }
                | BoardAction::RestoreCmdline,
            ) => Ok(()),
        }
    }
}

/// The most root-needing steps a refusal lists.
const MOST_ROOT_STEPS: usize = 12;

impl Worker<'_> {
    /// Refuses the board before any of its steps runs when its session is not root
    /// (`id -u`; `become = "sudo"` makes it root) and `needs` names steps that need
    /// root: which, and what to set. A board that cannot say is left to the steps.
    fn refuse_without_root(
        &self,
        board: &mut dyn Transport,
        needs: &[String],
    ) -> Result<(), CellFailure> {
        if needs.is_empty() {
            return Ok(());
        }
        let quick = Some(std::time::Duration::from_secs(20));
        let Ok(out) = board.run("id -u; id -un", quick) else {
            return Ok(());
        };
        let text = out.stdout_str();
        let mut lines = text.lines().map(str::trim);
        let uid = lines.next().unwrap_or("");
        let valid = !uid.is_empty() && uid.len() <= 10 && uid.bytes().all(|b| b.is_ascii_digit());
        if !out.exit.success() || !valid || uid == "0" {
            return Ok(());
        }
        let user: String = lines.next().unwrap_or("?").chars().take(64).collect();
        Err(CellFailure::Refused {
            reason: format!(
                "board {} logs in as {} (uid {uid}), not root, and these steps need root: {}; log in as root or set become = \"sudo\" in its [ssh] (`benchpipe boards check` says whether sudo works); nothing was run on it",
                self.board.name,
                crate::shown::one_line(&user),
                needs.join("; ")
            ),
        })
    }
}

/// Refuses a storage whose device is not the disk its board file declares (`serial`,
/// `size`: `storage::identity`), saying what was therefore not done.
pub(super) fn another_disk(
    st: &crate::model::Storage,
    facts: &Result<Option<crate::storage::facts::StorageFacts>, CellFailure>,
    not_done: &str,
) -> Result<(), CellFailure> {
    let reported = facts.as_ref().ok().and_then(Option::as_ref);
    match crate::storage::identity::problem(st, reported) {
        Some(why) => Err(CellFailure::Refused {
            reason: format!("{why}; {not_done}"),
        }),
        None => Ok(()),
    }
}

/// What a step on the board meets when the walk holds no session to it.
pub(super) fn not_connected() -> CellFailure {
    CellFailure::Refused {
        reason: "the board is not connected".into(),
    }
}
