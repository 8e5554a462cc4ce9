//! The step runner: one schedule's steps, walked in order, whatever walks them (a board,
//! `board.rs`; a cluster, `cluster/`). For each step it asks whether the step is
//! already done, has the walker run it, and records what became of the step's cells.
//!
//! A failed step fails the cells it serves that have no outcome yet; a lost board (or
//! cluster) fails them all. Cleanup steps (stopping services, teardown, unmount) run
//! whatever happened before, when what they undo was done: on the board unless it is
//! lost, on the controller always, so no controller-side service or mount outlives its
//! cell. A cell's outcome is final after the last step that names it.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use super::places::Places;
use super::worker::{LiveCell, Worker};
use super::{BoardResult, Event, Job, StepStatus};
use crate::failure::CellFailure;
use crate::model::{Side, TestName};
use crate::plan::CellKey;
use crate::plan::schedule::{
    Action, BoardAction, CellAction, ClusterAction, DoneWhen, Hold, Step, WalkAction,
};
use crate::plan::state;
use crate::transport::Transport;

/// What a walk carries from step to step: the cells, their fate, the controller, and
/// (`own`) what only a board's or only a cluster's walk needs.
pub(super) struct Walk<'j, 'c, O> {
    pub(super) controller: Box<dyn Transport>,
    pub(super) jobs: BTreeMap<CellKey, &'j Job<'c>>,
    /// Cells opened in the store by their first step (a tmpfs or a setup).
    pub(super) live: BTreeMap<CellKey, LiveCell<'j, 'c>>,
    /// Cells whose fate is known: their measured runs, or why they failed.
    pub(super) outcomes: BTreeMap<CellKey, Result<usize, CellFailure>>,
    /// Each recipe's `[facts]`, merged into its cells' facts.
    pub(super) tools: BTreeMap<TestName, crate::store::CellFacts>,
    /// Runs taken in this walk (`Sample::board_seq`).
    pub(super) seq: u64,
    /// Set when the board (a member of the cluster) is gone: its steps stop, the
    /// controller's cleanup goes on.
    pub(super) lost: Option<CellFailure>,
    /// Set when a connect found no board to talk to: its cells were not run, which is
    /// not a failure of each (no failure.json; `plan` shows them missing).
    pub(super) unreachable: Option<String>,
    pub(super) interrupted: bool,
    /// Cells whose own steps began: `--deadline` no longer stops them.
    pub(super) begun: std::collections::BTreeSet<CellKey>,
    /// The cells' secrets: redacted from every command's output of this walk.
    pub(super) secrets: super::secrets::Secrets,
    /// The labgrid places this walk acquired, until its release steps.
    pub(super) reserved: super::reserve::Reserved,
    pub(super) own: O,
}

/// The walk's cells as the cell runner works on them, beside its places.
pub(super) struct Cells<'x, 'j, 'c> {
    pub(super) jobs: &'x BTreeMap<CellKey, &'j Job<'c>>,
    pub(super) live: &'x mut BTreeMap<CellKey, LiveCell<'j, 'c>>,
    pub(super) outcomes: &'x mut BTreeMap<CellKey, Result<usize, CellFailure>>,
    /// Runs taken in this walk (`Sample::board_seq`).
    pub(super) seq: &'x mut u64,
    pub(super) secrets: &'x super::secrets::Secrets,
}

/// What differs between the walks the runner drives: how a step runs, how a cleanup
/// step runs, and what the walk undoes at its end.
pub(super) trait Walker {
    /// What only this walk carries (`Walk::own`).
    type Own;

    /// The worker of the walk: its name, store, progress and interrupt flag.
    fn worker(&self) -> &Worker<'_>;

    /// Why the steps after the walk's loss are skipped.
    fn lost_reason(&self, lost: &CellFailure) -> String;

    /// Whether a step needs no work by a `done_when` of this walk's own state (the
    /// runner judges `CellsComplete`).
    fn is_done(&self, w: &mut Walk<'_, '_, Self::Own>, step: &Step) -> bool;

    /// Runs a step every walk takes, over this walk's sessions, for its cells that
    /// have no outcome yet (`pending`).
    fn walk_step(
        &self,
        w: &mut Walk<'_, '_, Self::Own>,
        action: &WalkAction,
        step: &Step,
        pending: &[CellKey],
    ) -> Result<(), CellFailure>;

    /// Runs a board's own step (a cluster's walk refuses one: the schedule is wrong).
    fn board_step(
        &self,
        w: &mut Walk<'_, '_, Self::Own>,
        action: &BoardAction,
        step: &Step,
        pending: &[CellKey],
    ) -> Result<(), CellFailure>;

    /// Runs a cluster's own step (a board's walk refuses one: the schedule is wrong).
    fn cluster_step(
        &self,
        w: &mut Walk<'_, '_, Self::Own>,
        action: &ClusterAction,
        step: &Step,
        pending: &[CellKey],
    ) -> Result<(), CellFailure>;

    /// A board's cleanup step: run when what it undoes was done.
    fn board_cleanup(
        &self,
        w: &mut Walk<'_, '_, Self::Own>,
        action: &BoardAction,
        step: &Step,
    ) -> StepStatus;

    /// A cluster's cleanup step: run when what it undoes was done.
    fn cluster_cleanup(
        &self,
        w: &mut Walk<'_, '_, Self::Own>,
        action: &ClusterAction,
        step: &Step,
    ) -> StepStatus;

    /// Runs `run` over the walk's places and the walk's cells: the one cell runner's
    /// way in. `Err` when the walk has no session to
    /// run it on.
    fn with_places<'j, 'c, R>(
        &self,
        w: &mut Walk<'j, 'c, Self::Own>,
        run: impl FnOnce(&mut dyn Places, Cells<'_, 'j, 'c>) -> R,
    ) -> Result<R, CellFailure>;

    /// Why a cell's cleanup step cannot run in this walk now (its place is lost), if
    /// it cannot.
    fn cleanup_skipped(&self, w: &Walk<'_, '_, Self::Own>, step: &Step) -> Option<StepStatus>;

    /// After the last step: what must not outlive the walk (a mount, samplers, guards).
    fn end(&self, w: &mut Walk<'_, '_, Self::Own>);
}

/// A walk taken apart for the cell runner and the steps beside it (`Walk::parts`): the
/// controller's session, each recipe's facts, what only this walk carries, its cells.
pub(super) struct Parts<'x, 'j, 'c, O> {
    pub(super) controller: &'x mut dyn Transport,
    pub(super) tools: &'x mut BTreeMap<TestName, crate::store::CellFacts>,
    pub(super) own: &'x mut O,
    pub(super) cells: Cells<'x, 'j, 'c>,
}

impl<'j, 'c, O> Walk<'j, 'c, O> {
    /// The walk's parts, each borrowed on its own: one place that takes a walk apart.
    pub(super) fn parts(&mut self) -> Parts<'_, 'j, 'c, O> {
        Parts {
            controller: self.controller.as_mut(),
            tools: &mut self.tools,
            own: &mut self.own,
            cells: Cells {
                jobs: &self.jobs,
                live: &mut self.live,
                outcomes: &mut self.outcomes,
                seq: &mut self.seq,
                secrets: &self.secrets,
            },
        }
    }

    /// A walk of `jobs` that has done nothing yet.
    pub(super) fn new(controller: Box<dyn Transport>, jobs: &'j [Job<'c>], own: O) -> Self {
        Walk {
            controller,
            jobs: jobs.iter().map(|j| (j.cell.key.clone(), j)).collect(),
            live: BTreeMap::new(),
            outcomes: BTreeMap::new(),
            tools: BTreeMap::new(),
            seq: 0,
            lost: None,
            unreachable: None,
            interrupted: false,
            begun: std::collections::BTreeSet::new(),
            secrets: super::secrets::Secrets::default(),
            reserved: Vec::new(),
            own,
        }
    }

    /// Fails the cells that have no outcome yet with `cause`.
    pub(super) fn fail(&mut self, cells: &[CellKey], cause: &CellFailure) {
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

    /// A cleanup's outcome as a step status. Its failure fails its cells that had none
    /// yet (a completed one too: its board was left unclean), and a lost connection
    /// is the walk's loss.
    pub(super) fn cleanup_status(
        &mut self,
        cells: &[CellKey],
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
        for k in cells {
            if !matches!(self.outcomes.get(k), Some(Err(_))) {
                self.outcomes.insert(k.clone(), Err(cause.clone()));
            }
        }
        status
    }

    /// What the store holds of a cell: as it is now when it is open.
    fn data(&self, key: &CellKey) -> &crate::store::CellData {
        let job = self.jobs[key];
        self.live.get(key).map_or(&job.data, |l| &l.data)
    }

    fn is_complete(&self, key: &CellKey) -> bool {
        let job = self.jobs[key];
        state::state(job.cell, &job.primary, self.data(key)).is_complete()
    }

    /// `CellsComplete`: every pending cell's stop rule holds; each then has its runs.
    fn cells_complete(&mut self, pending: &[CellKey]) -> bool {
        if !pending.iter().all(|k| self.is_complete(k)) {
            return false;
        }
        for k in pending {
            let job = self.jobs[k];
            let have = state::counted(&job.cell.method, self.data(k)).count();
            self.outcomes.insert(k.clone(), Ok(have));
        }
        true
    }
}

/// Walks `steps` over the walk's jobs (the cells the steps name).
pub(super) fn walk<K: Walker>(
    kind: &K,
    w: &mut Walk<'_, '_, K::Own>,
    steps: &[Step],
) -> BoardResult {
    let worker = kind.worker();
    worker.progress.event(Event::BoardStart {
        board: worker.name(),
        cells: w.jobs.len(),
    });
    // The boards a `Hold` step took, kept to the walk's end.
    let mut held = None;
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
        left: Vec::new(),
        unreachable: None,
        interrupted: false,
    };
    for (i, step) in steps.iter().enumerate() {
        let status = match &step.action {
            Action::Hold(Hold { boards }) => {
                worker.hold_step(boards, &mut held, &mut w.interrupted)
            }
            Action::Walk(_)
            | Action::Reserve(_)
            | Action::Board(_)
            | Action::Cluster(_)
            | Action::Cell(_) => one_step(kind, w, &steps[i..]),
        };
        worker.progress.event(Event::Step {
            board: worker.name(),
            index: i,
            step,
            status: &status,
        });
        for k in &step.cells {
            if last.get(k) == Some(&i) {
                finish_cell(worker, w, k, &mut result);
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
        finish_cell(worker, w, k, &mut result);
    }
    kind.end(w);
    result.interrupted |= w.interrupted;
    drop(held);
    worker.done(&result);
    result
}

/// One step (the first of `rest`, the steps left): skipped, found done, run, or failed.
fn one_step<K: Walker>(kind: &K, w: &mut Walk<'_, '_, K::Own>, rest: &[Step]) -> StepStatus {
    let step = &rest[0];
    if step.action.is_cleanup() {
        return match &step.action {
            Action::Cell(a) => cell_cleanup(kind, w, a, step),
            Action::Board(a) => kind.board_cleanup(w, a, step),
            Action::Cluster(a) => kind.cluster_cleanup(w, a, step),
            // On the controller, whatever became of the boards.
            Action::Reserve(a) => super::reserve::release(kind.worker(), &mut w.reserved, a),
            // Nothing of theirs is undone by a step of its own.
            Action::Hold(_) | Action::Walk(_) => StepStatus::Done,
        };
    }
    if let Some(lost) = &w.lost {
        return StepStatus::Skipped {
            reason: kind.lost_reason(lost),
        };
    }
    if w.interrupted || kind.worker().stop.load(Ordering::SeqCst) {
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
    // A step that serves no cell is a tidy walk's (`schedule::tidy`): it runs for the
    // board alone.
    let tidy = step.cells.is_empty();
    if pending.is_empty() && !tidy {
        let left = step
            .cells
            .iter()
            .all(|k| matches!(w.outcomes.get(k), Some(Err(CellFailure::OutOfTime { .. }))));
        return StepStatus::Skipped {
            reason: if left {
                "left for lack of time (--deadline)".into()
            } else {
                "its cells failed".into()
            },
        };
    }
    let pending = match kind.worker().deadline {
        Some(deadline) if !tidy => {
            within_deadline(w, rest, pending, deadline - crate::store::now())
        }
        _ => pending,
    };
    if pending.is_empty() && !tidy {
        return StepStatus::Skipped {
            reason: "left for lack of time (--deadline)".into(),
        };
    }
    if matches!(step.action, Action::Cell(_)) {
        w.begun.extend(pending.iter().cloned());
    }
    let done = match step.done_when {
        DoneWhen::CellsComplete => w.cells_complete(&pending),
        // `CommandsPresent` is asked inside provisioning, which installs only what
        // is missing; `Never` always runs.
        DoneWhen::Never
        | DoneWhen::CommandsPresent
        | DoneWhen::Mounted
        | DoneWhen::BoardAtImage
        | DoneWhen::Derived
        | DoneWhen::DriverAsWanted
        | DoneWhen::NothingToUndo => kind.is_done(w, step),
    };
    if done {
        return StepStatus::Done;
    }
    let ran = match &step.action {
        Action::Cell(a) => cell_step(kind, w, a, &pending),
        Action::Walk(a) => kind.walk_step(w, a, step, &pending),
        Action::Board(a) => kind.board_step(w, a, step, &pending),
        Action::Cluster(a) => kind.cluster_step(w, a, step, &pending),
        Action::Reserve(a) => super::reserve::acquire(kind.worker(), &mut w.reserved, a),
        // The walk took it (`walk`): it holds its boards to its end.
        Action::Hold(_) => Ok(()),
    };
    match ran {
        Ok(()) => StepStatus::Ran,
        Err(cause) => {
            let cause = w.secrets.redact_failure(&cause);
            w.fail(&pending, &cause);
            if tidy {
                // No cell carries the failure: the walk itself stops (its cleanup,
                // a labgrid place's release, still runs).
                w.lost.get_or_insert_with(|| cause.clone());
            }
            match cause {
                CellFailure::NotApplicable { reason } => StepStatus::Skipped { reason },
                _ => StepStatus::Failed {
                    cause: cause.to_string(),
                },
            }
        }
    }
}

/// The cells of `pending` that may go on with `left` seconds to the deadline: those
/// whose own steps began, and those the estimates of their steps still to come (the
/// first of `rest` on) fit in `left`. The others are left for lack of time. A step with
/// no estimate (no history yet) counts as none: only what the estimates say cannot
/// fit is left, and nothing starts once the deadline has passed.
fn within_deadline<O>(
    w: &mut Walk<'_, '_, O>,
    rest: &[Step],
    pending: Vec<CellKey>,
    left: f64,
) -> Vec<CellKey> {
    let mut go = Vec::with_capacity(pending.len());
    for k in pending {
        if w.begun.contains(&k) {
            go.push(k);
            continue;
        }
        let needs: f64 = rest
            .iter()
            .filter(|s| !s.action.is_cleanup() && s.cells.contains(&k))
            .filter_map(|s| s.estimate_seconds)
            .sum();
        if left > 0.0 && needs <= left {
            go.push(k);
        } else {
            w.outcomes.insert(
                k,
                Err(CellFailure::OutOfTime {
                    needs_secs: needs,
                    left_secs: left,
                }),
            );
        }
    }
    go
}

/// A cell's own step, one copy for every walk: run over the walk's places.
fn cell_step<K: Walker>(
    kind: &K,
    w: &mut Walk<'_, '_, K::Own>,
    action: &CellAction,
    pending: &[CellKey],
) -> Result<(), CellFailure> {
    let worker = kind.worker();
    let first = &pending[0];
    kind.with_places(w, |places, mut cells| {
        let job = cells.jobs[first];
        places.enter(job);
        match action {
            CellAction::Setup {
                from,
                commands,
                after_services,
                ..
            } => {
                // A cell opens at its first step, its tmpfs (a board's) or its setup.
                if !cells.live.contains_key(first) {
                    let cell = worker.open_cell(places, job, cells.secrets)?;
                    cells.live.insert(first.clone(), cell);
                }
                if *commands == 0 {
                    return Ok(());
                }
                worker.phase(Some(&job.cell.address), "setup");
                let _held = worker.resources.acquire(&job.recipe.exclusive);
                let steps = match after_services {
                    true => &job.recipe.setup_after_services,
                    false => &job.recipe.setup,
                };
                let steps = &steps[*from..from + commands];
                worker.commands(places, &cells.live[first], steps, "setup")
            }
            CellAction::StartService { service, .. } => {
                let spec = super::services::spec_of(job, service)?;
                let cell = cells.live.get_mut(first).ok_or(CellFailure::Interrupted)?;
                worker.start_service(places, cell, spec)
            }
            CellAction::Cooldown { .. } => worker.cool_down(places, job),
            CellAction::WarmUp { .. } => {
                let cell = cells.live.get_mut(first).ok_or(CellFailure::Interrupted)?;
                worker.warm_up(places, cell, cells.seq)
            }
            CellAction::Measure { order, .. } => {
                worker.measure_step(places, &mut cells, pending, *order)
            }
            // Cleanup: `cell_cleanup`.
            CellAction::StopService { .. } | CellAction::Teardown { .. } => Ok(()),
        }
    })?
}

/// A cell's own cleanup step (its services stopped, its teardown), one copy for every
/// walk: run when the cell opened, at the places that are there.
fn cell_cleanup<K: Walker>(
    kind: &K,
    w: &mut Walk<'_, '_, K::Own>,
    action: &CellAction,
    step: &Step,
) -> StepStatus {
    if let Some(skipped) = kind.cleanup_skipped(w, step) {
        return skipped;
    }
    let worker = kind.worker();
    let key = &step.cells[0];
    let done = kind.with_places(w, |places, cells| {
        let cell = cells.live.get_mut(key)?;
        places.enter(cell.job);
        match action {
            CellAction::StopService { service, .. } => {
                if !cell.services.iter().any(|(_, n, _)| n == service) {
                    return None;
                }
                worker.phase(Some(&cell.job.cell.address), "teardown");
                Some(worker.stop_service(places, cell, service))
            }
            CellAction::Teardown { from, commands, .. } => {
                worker.phase(Some(&cell.job.cell.address), "teardown");
                let recipe = cell.job.recipe;
                let _held = worker.resources.acquire(&recipe.exclusive);
                let steps = &recipe.teardown[*from..from + commands];
                Some(worker.commands(places, cell, steps, "teardown"))
            }
            // Not cleanup: `cell_step`.
            CellAction::Setup { .. }
            | CellAction::StartService { .. }
            | CellAction::Cooldown { .. }
            | CellAction::WarmUp { .. }
            | CellAction::Measure { .. } => None,
        }
    });
    match done {
        Ok(Some(done)) => w.cleanup_status(std::slice::from_ref(key), done),
        // Never opened, nothing started, or no session: nothing to undo here.
        Ok(None) | Err(_) => StepStatus::Done,
    }
}

/// A cell after the last step that names it: its secrets removed, its outcome recorded.
fn finish_cell<O>(
    worker: &Worker<'_>,
    w: &mut Walk<'_, '_, O>,
    key: &CellKey,
    result: &mut BoardResult,
) {
    let live = w.live.remove(key);
    let job = w.jobs[key];
    // The cell's secrets go with it, whatever became of it (after its teardown).
    if w.secrets.close(key)
        && let Err(e) = super::secrets::remove_dirs(
            w.controller.as_mut(),
            &worker.service_dir(Side::Controller),
            Some(key),
        )
    {
        worker.phase(
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
            worker.progress.event(Event::CellDone {
                board: worker.name(),
                cell: &job.cell.address,
                measured,
            });
        }
        Err(CellFailure::Interrupted) => result.interrupted = true,
        Err(cause @ CellFailure::OutOfTime { .. }) => {
            let reason = cause.to_string();
            worker.progress.event(Event::CellLeft {
                board: worker.name(),
                cell: &job.cell.address,
                reason: &reason,
            });
            result.left.push((job.cell.address.clone(), reason));
        }
        Err(CellFailure::NotApplicable { reason }) => {
            worker.skip_cell(job.cell, &reason);
            result.skipped.push((job.cell.address.clone(), reason));
        }
        Err(_) if w.unreachable.is_some() => {
            let cause = w.unreachable.clone().unwrap_or_default();
            result.unreachable.get_or_insert((cause, 0)).1 += 1;
        }
        Err(cause) => {
            let cause = w.secrets.redact_failure(&cause);
            worker.fail_cell(job.cell, &cause);
            result.failed.push((job.cell.address.clone(), cause));
        }
    }
}

/// A recipe the provisioning left without its tools fails its own cells only.
pub(super) fn fail_unserved<'j, 'c: 'j>(
    outcomes: &mut BTreeMap<CellKey, Result<usize, CellFailure>>,
    jobs: impl IntoIterator<Item = &'j Job<'c>>,
    unserved: &super::provision::Unserved,
) {
    for j in jobs {
        if let Some(cause) = unserved.get(&j.recipe.name) {
            outcomes.insert(j.cell.key.clone(), Err(cause.clone()));
        }
    }
}
