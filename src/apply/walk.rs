//! The walker: one board's schedule, step by step. For each step it asks whether the
//! step is already done, runs it through the board's or the controller's `Transport`,
//! and records what became of the step's cells.
//!
//! A failed step fails the cells it serves that have no outcome yet; a lost board fails
//! them all. Cleanup steps (stopping services, teardown, unmount) run whatever happened
//! before, when what they undo was done: on the board unless it is lost, on the
//! controller always, so no controller-side service or mount outlives its cell.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::cell::cell_facts;
use super::facts::{gather_facts, read_temperature};
use super::mount::MountState;
use super::runs::stops_group;
use super::worker::{LiveCell, Transports, Worker};
use super::{BoardResult, Event, Job, StepStatus};
use crate::failure::CellFailure;
use crate::model::{Side, TestName};
use crate::plan::CellKey;
use crate::plan::schedule::{Action, DoneWhen, Step};
use crate::plan::state;
use crate::storage;
use crate::transport::{Transport, TransportError};

/// What a board's walk carries from step to step.
pub(super) struct Walk<'j, 'c> {
    /// `None` until `Connect` succeeds.
    pub(super) board: Option<Box<dyn Transport>>,
    pub(super) controller: Box<dyn Transport>,
    pub(super) jobs: BTreeMap<CellKey, &'j Job<'c>>,
    /// Cells opened in the store by their first `Setup` step.
    pub(super) live: BTreeMap<CellKey, LiveCell<'j, 'c>>,
    /// Cells whose fate is known: their measured runs, or why they failed.
    pub(super) outcomes: BTreeMap<CellKey, Result<usize, CellFailure>>,
    /// Recorded beside every cell's samples.
    pub(super) facts: Value,
    /// Each recipe's `[facts]`, merged into its cells' facts.
    pub(super) tools: BTreeMap<TestName, Value>,
    /// The temperature before benchpipe loaded the board: the base of "idle+N".
    pub(super) idle_celsius: Option<f64>,
    /// Runs taken on this board in this apply (`Sample::board_seq`).
    pub(super) seq: u64,
    pub(super) mounted: MountState,
    /// Set when the board is gone: its steps stop, the controller's cleanup goes on.
    pub(super) lost: Option<CellFailure>,
    /// Set when `Connect` found no board to talk to: its cells were not run, which is
    /// not a failure of each (no failure.json; `plan` shows them missing).
    pub(super) unreachable: Option<String>,
    pub(super) interrupted: bool,
    /// Images fetched and verified in this walk.
    pub(super) fetched: BTreeMap<crate::model::ImageName, crate::image::Fetched>,
    /// Set by a power cycle: the next connect waits for the board to boot.
    pub(super) booting: bool,
    /// What each image flashed in this walk wrote (facts of its cells).
    pub(super) flashed: BTreeMap<crate::model::ImageName, Value>,
    /// The host key accepted after a flash (`[flash] accept_new_host_key`).
    pub(super) new_host_key: Option<String>,
    /// Each storage's facts, read at its mount or UAS step (`apply/uas.rs`).
    pub(super) storage_facts: BTreeMap<crate::model::StorageName, Value>,
    /// Set by a UAS step: the image's `RestoreCmdline` puts the command line back.
    pub(super) uas_touched: bool,
    /// The peer boards of the walk's cells, connected by their `ConnectPeer` steps.
    pub(super) peers: super::peer::Peers,
    /// The cells' secrets: redacted from every command's output of this walk.
    pub(super) secrets: super::secrets::Secrets,
    /// Set when this walk claimed the board's directory on the controller.
    pub(super) controller_claimed: bool,
}

impl Walk<'_, '_> {
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

    /// A cleanup's outcome as a step status. Its failure fails a cell that had none
    /// yet (a completed one too: its board was left unclean), and a lost connection
    /// is the board's loss.
    pub(super) fn cleanup_status(
        &mut self,
        key: &CellKey,
        done: Result<(), CellFailure>,
    ) -> StepStatus {
        let Err(cause) = done else {
            return StepStatus::Ran;
        };
        let status = StepStatus::Failed {
            cause: cause.to_string(),
        };
        if cause.ends_board() {
            self.lost.get_or_insert_with(|| cause.clone());
        }
        if !matches!(self.outcomes.get(key), Some(Err(_))) {
            self.outcomes.insert(key.clone(), Err(cause));
        }
        status
    }

    fn is_complete(&self, key: &CellKey) -> bool {
        let job = self.jobs[key];
        let data = self.live.get(key).map_or(&job.data, |l| &l.data);
        state::state(job.cell, &job.primary, data).is_complete()
    }
}

impl Worker<'_> {
    /// Walks one board's steps over its jobs (the cells the steps name).
    pub(super) fn walk(&self, steps: &[Step], jobs: &[Job<'_>]) -> BoardResult {
        self.progress.event(Event::BoardStart {
            board: self.name(),
            cells: jobs.len(),
        });
        let mut w = Walk {
            board: None,
            controller: self.connector.controller(),
            jobs: jobs.iter().map(|j| (j.cell.key.clone(), j)).collect(),
            live: BTreeMap::new(),
            outcomes: BTreeMap::new(),
            facts: json!({}),
            tools: BTreeMap::new(),
            idle_celsius: None,
            seq: 0,
            mounted: MountState::default(),
            lost: None,
            unreachable: None,
            interrupted: false,
            fetched: BTreeMap::new(),
            booting: false,
            flashed: BTreeMap::new(),
            new_host_key: None,
            storage_facts: BTreeMap::new(),
            uas_touched: false,
            peers: BTreeMap::new(),
            secrets: super::secrets::Secrets::default(),
            controller_claimed: false,
        };
        // The boards a `Hold` step took, kept to the walk's end.
        let mut held = None;
        // A cell's outcome is final after the last step that names it.
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
        for (i, step) in steps.iter().enumerate() {
            let status = match &step.action {
                Action::Hold { boards } => self.hold_step(boards, &mut held, &mut w.interrupted),
                _ => self.step(&mut w, step),
            };
            self.progress.event(Event::Step {
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
        // Cells the steps never named (none, unless the schedule is wrong) are not lost.
        let unnamed: Vec<CellKey> = w
            .jobs
            .keys()
            .filter(|k| !last.contains_key(k))
            .cloned()
            .collect();
        for k in &unnamed {
            self.finish_cell(&mut w, k, &mut result);
        }
        if w.lost.is_none()
            && let (Some((s, f)), Some(board)) = (w.mounted.current.take(), w.board.as_deref_mut())
            && let Err(e) = storage::release(board, &s, &f)
        {
            self.phase(None, format!("could not unmount {}: {e}", s.path));
        }
        // An interrupt can cut a sampler's start short after it was started: end them.
        if w.interrupted
            && w.lost.is_none()
            && let Some(board) = w.board.as_deref_mut()
        {
            let _ = crate::telemetry::end_samplers(board, &self.board.workdir);
        }
        result.interrupted |= w.interrupted;
        drop(held);
        self.done(&result);
        result
    }

    fn finish_cell(&self, w: &mut Walk<'_, '_>, key: &CellKey, result: &mut BoardResult) {
        let live = w.live.remove(key);
        let job = w.jobs[key];
        // The cell's secrets go with it, whatever became of it (after its teardown).
        if w.secrets.close(key)
            && let Err(e) = super::secrets::remove_dirs(
                w.controller.as_mut(),
                &self.service_dir(Side::Controller),
                Some(key),
            )
        {
            self.phase(
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
                self.progress.event(Event::CellDone {
                    board: self.name(),
                    cell: &job.cell.address,
                    measured,
                });
            }
            Err(CellFailure::Interrupted) => result.interrupted = true,
            Err(CellFailure::NotApplicable { reason }) => {
                self.skip_cell(job.cell, &reason);
                result.skipped.push((job.cell.address.clone(), reason));
            }
            Err(_) if w.unreachable.is_some() => {
                let cause = w.unreachable.clone().unwrap_or_default();
                result.unreachable.get_or_insert((cause, 0)).1 += 1;
            }
            Err(cause) => {
                let cause = w.secrets.redact_failure(&cause);
                self.fail_cell(job.cell, &cause);
                result.failed.push((job.cell.address.clone(), cause));
            }
        }
    }

    /// One step: skipped, found done, run, or failed.
    fn step(&self, w: &mut Walk<'_, '_>, step: &Step) -> StepStatus {
        if step.action.is_cleanup() {
            return self.cleanup(w, step);
        }
        if w.lost.is_some() {
            return StepStatus::Skipped {
                reason: "the board is lost".into(),
            };
        }
        if w.interrupted || self.stop.load(Ordering::SeqCst) {
            w.interrupted = true;
            return StepStatus::Skipped {
                reason: "interrupted".into(),
            };
        }
        let pending: Vec<CellKey> = step
            .cells
            .iter()
            .filter(|k| !w.outcomes.contains_key(*k))
            .cloned()
            .collect();
        if pending.is_empty() {
            return StepStatus::Skipped {
                reason: "its cells failed".into(),
            };
        }
        if self.is_done(w, step, &pending) {
            return StepStatus::Done;
        }
        match self.run_step(w, step, &pending) {
            Ok(()) => StepStatus::Ran,
            Err(cause) => {
                let cause = w.secrets.redact_failure(&cause);
                w.fail(&pending, &cause);
                match cause {
                    CellFailure::NotApplicable { reason } => StepStatus::Skipped { reason },
                    _ => StepStatus::Failed {
                        cause: cause.to_string(),
                    },
                }
            }
        }
    }

    /// Whether a step needs no work, by its `done_when`.
    fn is_done(&self, w: &mut Walk<'_, '_>, step: &Step, pending: &[CellKey]) -> bool {
        match (step.done_when, &step.action) {
            (
                DoneWhen::Mounted,
                Action::Mount {
                    storage,
                    filesystem,
                    ..
                },
            ) => w
                .mounted
                .current
                .as_ref()
                .is_some_and(|(s, f)| &s.name == storage && &f.name == filesystem),
            (DoneWhen::DriverAsWanted, Action::Uas { storage, uas }) => {
                self.uas_in_place(w, storage, *uas)
            }
            (DoneWhen::CellsComplete, _) => {
                if !pending.iter().all(|k| w.is_complete(k)) {
                    return false;
                }
                for k in pending {
                    let job = w.jobs[k];
                    let data = w.live.get(k).map_or(&job.data, |l| &l.data);
                    let have = state::counted(&job.cell.method, data).count();
                    w.outcomes.insert(k.clone(), Ok(have));
                }
                true
            }
            // `CommandsPresent` is asked inside provisioning, which installs only what
            // is missing; the rest always run.
            _ => false,
        }
    }

    fn run_step(
        &self,
        w: &mut Walk<'_, '_>,
        step: &Step,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        match &step.action {
            Action::FetchImage { image } => {
                let fetched = self.fetch_image(&w.jobs[&pending[0]].cell.image)?;
                w.fetched.insert(image.clone(), fetched);
                return Ok(());
            }
            Action::Flash { image, via, device } => {
                let fetched = self.begin_flash(w, image)?;
                let report = self.flash(image, &fetched, via, device)?;
                // Recorded beside each cell of the image: what was written and proven.
                let mut written = json!({
                    "file_sha256": fetched.sha256,
                    "written_bytes": report.bytes,
                    "written_sha256": report.sha256,
                });
                if let Some(f) = crate::image::known_facts(&fetched) {
                    written["uncompressed_bytes"] = json!(f.uncompressed_bytes);
                    written["uncompressed_sha256"] = json!(f.uncompressed_sha256);
                }
                if let Some(b) = &report.bmap {
                    written["bmap_mapped_bytes"] = json!(b.mapped_bytes);
                }
                w.flashed.insert(image.clone(), written);
                return Ok(());
            }
            Action::FlashTpi { image, via, node } => {
                let fetched = self.begin_flash(w, image)?;
                let written = self.flash_tpi(image, &fetched, via, *node)?;
                w.flashed.insert(image.clone(), written);
                return Ok(());
            }
            Action::FlashCommand { image } => {
                let fetched = self.begin_flash(w, image)?;
                self.flash_command(w.controller.as_mut(), image, &fetched)?;
                w.flashed.insert(
                    image.clone(),
                    json!({ "file_sha256": fetched.sha256, "method": "command" }),
                );
                // Without a [power] cycle step, the command reboots the board itself.
                w.booting = true;
                return Ok(());
            }
            Action::PowerCycle => {
                w.board = None;
                self.power_cycle(w.controller.as_mut())?;
                w.booting = true;
                return Ok(());
            }
            Action::Connect if w.booting => {
                let (t, accepted) = self.connect_after_boot(true)?;
                w.board = Some(t);
                w.booting = false;
                if let Some(fingerprint) = accepted {
                    w.new_host_key = Some(fingerprint.clone());
                    let image = &w.jobs[&pending[0]].cell.address.image;
                    if let Some(written) = w.flashed.get_mut(image) {
                        written["accepted_host_key"] = json!(fingerprint);
                    }
                }
                return Ok(());
            }
            Action::Uas { storage, uas } => return self.set_uas(w, storage, *uas),
            Action::ConnectPeer { peer } => {
                let session = self.connect_peer(peer)?;
                w.peers.insert(peer.clone(), session);
                return Ok(());
            }
            _ => {}
        }
        if let Action::Connect = step.action {
            self.phase(None, "connect");
            return match self.connector.board(self.board) {
                Ok(t) => {
                    w.board = Some(t);
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
            };
        }
        let Walk {
            board,
            controller,
            jobs,
            live,
            facts,
            tools,
            idle_celsius,
            seq,
            mounted,
            outcomes,
            flashed,
            new_host_key,
            storage_facts,
            peers,
            secrets,
            controller_claimed,
            ..
        } = &mut *w;
        let Some(board) = board.as_deref_mut() else {
            return Err(CellFailure::Refused {
                reason: "the board is not connected".into(),
            });
        };
        let secrets = &*secrets;
        let mut board = super::secrets::Redacting::new(board, secrets);
        let mut controller = super::secrets::Redacting::new(controller.as_mut(), secrets);
        let first = &pending[0];
        let peer = jobs[first].cell.peer.as_ref();
        let mut t = Transports::new(&mut board, &mut controller).with_peers(peers, peer);
        match &step.action {
            Action::Connect => Ok(()),
            Action::ClaimWorkdir { controller } => {
                self.phase(None, "claim workdir");
                self.claim(&mut t, *controller)?;
                *controller_claimed = *controller;
                Ok(())
            }
            Action::Provision { .. } => {
                self.phase(None, "provision");
                let jobs: Vec<&Job<'_>> = pending.iter().map(|k| jobs[k]).collect();
                let mut unserved = self.prepare(t.board, t.controller, &jobs)?;
                if let Some(peers) = t.peers.as_deref_mut() {
                    self.prepare_peers(peers, &jobs, &mut unserved);
                }
                // A recipe left without its tools fails its own cells only.
                for j in jobs {
                    if let Some(cause) = unserved.get(&j.recipe.name) {
                        outcomes.insert(j.cell.key.clone(), Err(cause.clone()));
                    }
                }
                Ok(())
            }
            Action::StopLeftoverServices => {
                // Services a crashed or killed apply left running would skew every number.
                for side in [Side::Board, Side::Controller] {
                    if let Err(e) = t.side(side).stop_all_services(&self.service_dir(side)) {
                        self.phase(None, format!("could not stop leftover services: {e}"));
                    }
                }
                if let Some(peers) = t.peers.as_deref_mut() {
                    self.stop_peer_leftovers(peers);
                }
                // Secrets a killed apply left in the board's directory on the controller.
                if *controller_claimed
                    && let Err(e) = super::secrets::remove_dirs(
                        t.controller,
                        &self.service_dir(Side::Controller),
                        None,
                    )
                {
                    self.phase(None, format!("could not remove leftover secrets: {e}"));
                }
                // Then the tmpfs they may have held open.
                if let Err(e) = storage::tmpfs::sweep(t.board, &self.board.workdir) {
                    self.phase(None, format!("could not unmount a leftover tmpfs: {e}"));
                }
                Ok(())
            }
            Action::GatherFacts => {
                *idle_celsius = read_temperature(t.board, self.board);
                *facts = gather_facts(t.board, self.board);
                if let (Some(c), Some(obj)) = (*idle_celsius, facts.as_object_mut()) {
                    obj.insert("idle_temperature_c".into(), json!(c));
                }
                let jobs: Vec<&Job<'_>> = pending.iter().map(|k| jobs[k]).collect();
                self.judge_drift(t.board, &jobs, facts, outcomes)?;
                *tools = self.recipe_facts(&mut t, &jobs);
                Ok(())
            }
            Action::VerifyImage { image, expect } => {
                self.verify_image(t.board, image, expect)?;
                // Flashing reads this to know the board is already at the image.
                self.store.write_board_state(&crate::store::BoardState {
                    format: crate::store::FORMAT,
                    board: self.board.name.to_string(),
                    image: image.to_string(),
                    identity: jobs[first].cell.image.source.identity(image),
                    verified_session: self.session.to_string(),
                    host_key: new_host_key.clone(),
                })?;
                Ok(())
            }
            Action::Mount {
                storage: name,
                filesystem,
                ..
            } => {
                // The device's own facts (model, driver, link speed) for every cell here.
                if let Some(st) = self.board.storage(name)
                    && let Ok(Some(f)) = self.storage_facts(t.board, st)
                {
                    storage_facts.insert(st.name.clone(), json!(f));
                }
                self.mount(t.board, jobs[first], name, filesystem, mounted)
            }
            Action::MountTmpfs { size, .. } => {
                let job = jobs[first];
                if !live.contains_key(first) {
                    // The link the cell runs over, read now: a Wi-Fi rate changes.
                    let link = self.network_facts(t.board, job.cell);
                    let facts =
                        cell_facts(job, facts, tools, flashed, storage_facts, mounted, link);
                    live.insert(first.clone(), self.open_live(&mut t, job, &facts, secrets)?);
                }
                let cell = live.get_mut(first).ok_or(CellFailure::Interrupted)?;
                let mounted = self.mount_tmpfs(&mut t, cell, *size);
                if cell.tmpfs.is_none() {
                    // Refused: none of the cell's commands may touch what is there.
                    live.remove(first);
                }
                mounted
            }
            Action::Setup {
                from,
                commands,
                after_services,
                ..
            } => {
                let job = jobs[first];
                if !live.contains_key(first) {
                    // The link the cell runs over, read now: a Wi-Fi rate changes.
                    let link = self.network_facts(t.board, job.cell);
                    let facts =
                        cell_facts(job, facts, tools, flashed, storage_facts, mounted, link);
                    live.insert(first.clone(), self.open_live(&mut t, job, &facts, secrets)?);
                }
                let cell = &live[first];
                if *commands == 0 {
                    return Ok(());
                }
                self.phase(Some(&job.cell.address), "setup");
                let _held = self.resources.acquire(&job.recipe.exclusive);
                let steps = match after_services {
                    true => &job.recipe.setup_after_services,
                    false => &job.recipe.setup,
                };
                self.commands(&mut t, &steps[*from..from + commands], &cell.vars, "setup")
            }
            Action::StartService { service, .. } => {
                let job = jobs[first];
                let spec = job
                    .recipe
                    .services
                    .iter()
                    .find(|s| &s.name == service)
                    .ok_or_else(|| CellFailure::Refused {
                        reason: format!("{} has no service {service}", job.recipe.name),
                    })?;
                let cell = live.get_mut(first).ok_or(CellFailure::Interrupted)?;
                self.start_service(&mut t, cell, spec)
            }
            Action::Cooldown { .. } => {
                let job = jobs[first];
                self.cooldown(
                    t.board,
                    Some(&job.cell.address),
                    &job.cell.method,
                    *idle_celsius,
                )
            }
            Action::WarmUp { .. } => {
                let cell = live.get_mut(first).ok_or(CellFailure::Interrupted)?;
                let order = cell.job.cell.method.order;
                self.warm_up(&mut t, cell, order, seq)
            }
            Action::Measure { order, .. } => {
                let mut cells: Vec<(&CellKey, &mut LiveCell<'_, '_>)> = live
                    .iter_mut()
                    .filter(|(k, _)| pending.contains(k))
                    .collect();
                cells.sort_by_key(|(k, _)| pending.iter().position(|p| p == *k));
                let keys: Vec<CellKey> = cells.iter().map(|(k, _)| (*k).clone()).collect();
                let mut refs: Vec<&mut LiveCell<'_, '_>> =
                    cells.into_iter().map(|(_, c)| c).collect();
                let results = self.measure(&mut t, &mut refs, *order, seq);
                let mut stopped = None;
                for (k, o) in keys.iter().zip(results) {
                    match o {
                        Some(Err(e)) if stops_group(&e) => {
                            stopped.get_or_insert(e.clone());
                            outcomes.insert(k.clone(), Err(e));
                        }
                        Some(o) => {
                            outcomes.insert(k.clone(), o);
                        }
                        None => {}
                    }
                }
                // A cell the measuring left without an outcome shares the fate that
                // stopped it: the board lost by another cell's run is its loss too.
                match stopped {
                    Some(e) => Err(e),
                    None => Ok(()),
                }
            }
            Action::StopService { .. }
            | Action::Teardown { .. }
            | Action::UnmountTmpfs { .. }
            | Action::Unmount { .. }
            | Action::FetchImage { .. }
            | Action::Flash { .. }
            | Action::FlashCommand { .. }
            | Action::FlashTpi { .. }
            | Action::Uas { .. }
            | Action::RestoreCmdline
            | Action::PowerCycle
            | Action::Hold { .. }
            | Action::ConnectPeer { .. }
            | Action::ConnectMember { .. }
            | Action::MemberFacts { .. }
            | Action::ArmGuard
            | Action::Deploy { .. }
            | Action::Undeploy { .. }
            | Action::DisarmGuard => Ok(()),
        }
    }
}
