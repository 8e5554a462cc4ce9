//! Walks the plan: the one place where store, transport and bench meet.
//!
//! One worker thread per board, all boards at once; a board's cells run in plan order.
//! Every run is appended to the store as soon as it ends, so an interrupted apply loses
//! at most the run in flight, and the next apply resumes where this one stopped.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::bench::{self, Vars};
use crate::error::{Error, Result};
use crate::model::{
    AS_IS, Board, Connection, Cooldown, Filesystem, Method, Recipe, RunOrder, Side, Step, Storage,
    Workspace,
};
use crate::plan::state;
use crate::plan::{Address, Cell};
use crate::storage;
use crate::store::{self, CellWriter, RunKind, Sample, Store};
use crate::telemetry::{Probe, SamplerOptions, Thresholds};
use crate::transport::local::Local;
use crate::transport::{Service, Transport, TransportError, quote};

/// What happened, for progress display. Implementations must be cheap and thread-safe.
pub trait Progress: Sync {
    fn event(&self, event: Event<'_>);
}

#[derive(Debug)]
pub enum Event<'a> {
    /// Apply knows what it will do: cells to run and cells already complete.
    Start {
        to_run: usize,
        complete: usize,
    },
    /// A board's worker started with this many cells to work on.
    BoardStart {
        board: &'a str,
        cells: usize,
    },
    /// A board moved to a new phase (connect, provision, cool-down, warm-up 1/1, run 2/3).
    Phase {
        board: &'a str,
        cell: Option<&'a Address>,
        phase: String,
    },
    /// A run ended and was recorded.
    Run {
        board: &'a str,
        cell: &'a Address,
        kind: RunKind,
        metrics: &'a BTreeMap<String, f64>,
        seconds: f64,
    },
    CellDone {
        board: &'a str,
        cell: &'a Address,
        measured: usize,
    },
    CellFailed {
        board: &'a str,
        cell: &'a Address,
        cause: &'a str,
    },
    BoardDone {
        board: &'a str,
        failed: usize,
    },
}

/// The outcome of one apply.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Cells the plan held that needed no work.
    pub already_complete: usize,
    pub completed: usize,
    pub failed: Vec<(Address, String)>,
    pub interrupted: bool,
}

/// Cross-board resources (`exclusive = [...]` in recipes): cells holding the same
/// resource never run at the same time, whichever boards they are on.
#[derive(Default)]
struct Resources {
    held: Mutex<BTreeSet<String>>,
    freed: Condvar,
}

impl Resources {
    fn acquire(&self, names: &[String]) -> ResourceGuard<'_> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        // All at once or none, so two cells each holding half can never deadlock.
        while names.iter().any(|n| held.contains(n)) {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        held.extend(names.iter().cloned());
        ResourceGuard {
            owner: self,
            names: names.to_vec(),
        }
    }
}

struct ResourceGuard<'a> {
    owner: &'a Resources,
    names: Vec<String>,
}

impl Drop for ResourceGuard<'_> {
    fn drop(&mut self) {
        let mut held = self.owner.held.lock().unwrap_or_else(|e| e.into_inner());
        for n in &self.names {
            held.remove(n);
        }
        self.owner.freed.notify_all();
    }
}

/// A cell of the plan with what apply needs beside it.
struct Job<'a> {
    cell: &'a Cell,
    recipe: &'a Recipe,
    primary: Vec<String>,
    /// What the store held when apply began: read once, then kept up to date in memory.
    data: crate::store::CellData,
}

/// Runs every cell of `cells` that the store lacks. Returns when all boards are done, or
/// soon after `stop` is set (Ctrl-C), with the store consistent.
pub fn apply(
    ws: &Workspace,
    cells: &[Cell],
    store: &Store,
    progress: &dyn Progress,
    stop: &AtomicBool,
) -> Result<Outcome> {
    let _lock = store.lock()?;
    let session = format!("{:.0}-{}", store::now(), std::process::id());
    let mut outcome = Outcome::default();

    // The same cell may come from two scenarios; it runs once.
    let mut seen = BTreeSet::new();
    let mut by_board: BTreeMap<&str, Vec<Job<'_>>> = BTreeMap::new();
    for cell in cells {
        if !seen.insert(cell.key.clone()) {
            continue;
        }
        let recipe = ws
            .recipes
            .get(&cell.address.test)
            .ok_or_else(|| Error::Other(format!("unknown test {}", cell.address.test)))?;
        let primary = recipe.primary_metrics();
        let data = store.read(cell)?;
        if state::state(cell, &primary, &data).is_complete() {
            outcome.already_complete += 1;
            continue;
        }
        by_board
            .entry(cell.address.board.as_str())
            .or_default()
            .push(Job {
                cell,
                recipe,
                primary,
                data,
            });
    }

    progress.event(Event::Start {
        to_run: by_board.values().map(Vec::len).sum(),
        complete: outcome.already_complete,
    });
    let resources = Resources::default();
    let results: Vec<BoardResult> = std::thread::scope(|s| {
        let handles: Vec<_> = by_board
            .iter()
            .map(|(board_name, jobs)| {
                let board = &ws.boards[&crate::model::BoardName::new(*board_name)];
                let worker = Worker {
                    board,
                    store,
                    progress,
                    stop,
                    session: &session,
                    resources: &resources,
                };
                s.spawn(move || worker.run(jobs))
            })
            .collect();
        handles
            .into_iter()
            .zip(by_board.iter())
            .map(|(h, (board, jobs))| {
                h.join()
                    .unwrap_or_else(|panic| worker_panicked(store, &session, board, jobs, panic))
            })
            .collect()
    });
    for r in results {
        outcome.completed += r.completed;
        outcome.failed.extend(r.failed);
        outcome.interrupted |= r.interrupted;
    }
    Ok(outcome)
}

/// How many measured runs one apply takes of a cell at most, flagged ones included:
/// three times `runs.max`, and at least ten more than it.
pub fn run_budget(method: &crate::model::Method) -> usize {
    let max = method.runs.max as usize;
    (max * 3).max(max + 10)
}

/// A board worker that panicked (a bug in benchpipe) fails every cell of that board the
/// store does not hold as complete, so the apply exits 1 and the next one reruns them;
/// the other boards went on in their own threads.
fn worker_panicked(
    store: &Store,
    session: &str,
    board: &str,
    jobs: &[Job<'_>],
    panic: Box<dyn std::any::Any + Send>,
) -> BoardResult {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    let cause = format!("benchpipe's worker for board {board} panicked (a bug): {what}");
    let (mut failed, mut completed) = (Vec::new(), 0);
    for j in jobs {
        let complete = store
            .read(j.cell)
            .is_ok_and(|d| state::state(j.cell, &j.primary, &d).is_complete());
        if complete {
            completed += 1;
            continue;
        }
        if let Ok(w) = store.begin(j.cell) {
            let _ = w.record_failure(session, store::now(), &cause);
        }
        failed.push((j.cell.address.clone(), cause.clone()));
    }
    BoardResult {
        completed,
        failed,
        interrupted: false,
    }
}

struct BoardResult {
    completed: usize,
    failed: Vec<(Address, String)>,
    interrupted: bool,
}

struct Worker<'a> {
    board: &'a Board,
    store: &'a Store,
    progress: &'a dyn Progress,
    stop: &'a AtomicBool,
    session: &'a str,
    resources: &'a Resources,
}

/// What a board's worker carries from cell to cell.
struct BoardState {
    /// Recorded beside every cell's samples.
    facts: Value,
    /// The storage and filesystem mounted now: reformatted only when a cell needs
    /// another, unmounted when the board is done.
    mounted: Option<(Storage, Filesystem)>,
    /// Runs taken on this board in this apply (`Sample::board_seq`).
    seq: u64,
    /// The temperature before benchpipe loaded the board: the base of "idle+N".
    idle_celsius: Option<f64>,
    order: RunOrder,
}

/// A cell being worked on: its store writer, template values and samples so far.
struct LiveCell<'j, 'c> {
    job: &'j Job<'c>,
    writer: CellWriter,
    vars: Vars,
    data: crate::store::CellData,
    /// The recipe's services, running for the whole cell.
    services: Vec<(Side, Service)>,
}

/// What a cell needs mounted; cells with equal needs can take turns.
fn mount_of(cell: &Cell) -> Option<(String, String)> {
    match (&cell.address.storage, &cell.filesystem) {
        (Some(s), Some(f)) if f.kind != AS_IS => Some((s.to_string(), f.name.to_string())),
        _ => None,
    }
}

/// Why a cell did not complete.
enum CellError {
    /// The cell itself failed (its tool broke, its output did not parse).
    Cell(String),
    /// The board is gone (connection lost): every remaining cell of it fails.
    Board(String),
    Interrupted,
}

impl From<TransportError> for CellError {
    fn from(e: TransportError) -> Self {
        match e {
            TransportError::Timeout { .. } | TransportError::Other { .. } => {
                CellError::Cell(e.to_string())
            }
            _ => CellError::Board(e.to_string()),
        }
    }
}

impl From<Error> for CellError {
    fn from(e: Error) -> Self {
        CellError::Cell(e.to_string())
    }
}

impl Worker<'_> {
    fn name(&self) -> &str {
        self.board.name.as_str()
    }

    fn phase(&self, cell: Option<&Address>, phase: impl Into<String>) {
        self.progress.event(Event::Phase {
            board: self.name(),
            cell,
            phase: phase.into(),
        });
    }

    fn run(&self, jobs: &[Job<'_>]) -> BoardResult {
        self.progress.event(Event::BoardStart {
            board: self.name(),
            cells: jobs.len(),
        });
        let mut result = BoardResult {
            completed: 0,
            failed: Vec::new(),
            interrupted: false,
        };
        let fail_all = |result: &mut BoardResult, jobs: &[Job<'_>], cause: &str| {
            for j in jobs {
                self.fail_cell(j.cell, cause);
                result
                    .failed
                    .push((j.cell.address.clone(), cause.to_string()));
            }
        };
        self.phase(None, "connect");
        let mut board_t = match crate::transport::connect(self.board, Duration::from_secs(30)) {
            Ok(t) => t,
            Err(e) => {
                // The stored cause leaves the file out (no absolute path in reports).
                if let crate::transport::TransportError::HostKey { known_hosts, .. } = &e {
                    self.phase(None, format!("known_hosts: {}", known_hosts.display()));
                }
                fail_all(&mut result, jobs, &e.to_string());
                self.done(&result);
                return result;
            }
        };
        let mut controller_t: Box<dyn Transport> = Box::new(Local::new());
        // benchpipe removes files in these directories as root: only in its own.
        self.phase(None, "claim workdir");
        // The controller's directory only when a service runs there.
        let controller_services = jobs
            .iter()
            .any(|j| j.recipe.services.iter().any(|s| s.on == Side::Controller));
        let claimed = crate::transport::workdir::claim(board_t.as_mut(), &self.board.workdir)
            .and_then(|()| match controller_services {
                true => crate::transport::workdir::claim(
                    controller_t.as_mut(),
                    &self.service_dir(Side::Controller),
                ),
                false => Ok(()),
            });
        if let Err(e) = claimed {
            fail_all(&mut result, jobs, &e.to_string());
            self.done(&result);
            return result;
        }
        self.phase(None, "provision");
        if let Err(cause) = self.prepare(board_t.as_mut(), controller_t.as_mut(), jobs) {
            fail_all(&mut result, jobs, &cause);
            self.done(&result);
            return result;
        }
        // Services a crashed or killed apply left running would skew every number.
        for (t, side) in [
            (board_t.as_mut(), Side::Board),
            (controller_t.as_mut(), Side::Controller),
        ] {
            if let Err(e) = t.stop_all_services(&self.service_dir(side)) {
                self.phase(None, format!("could not stop leftover services: {e}"));
            }
        }
        // The temperature before benchpipe loaded the board: the base of "idle+N" cool-downs.
        let idle_celsius = read_temperature(board_t.as_mut(), self.board);
        let mut facts = gather_facts(board_t.as_mut(), self.board);
        if let (Some(c), Some(obj)) = (idle_celsius, facts.as_object_mut()) {
            obj.insert("idle_temperature_c".into(), json!(c));
        }
        let interleaved = jobs
            .iter()
            .any(|j| j.cell.method.order == RunOrder::Interleaved);
        let mut state = BoardState {
            facts,
            mounted: None,
            seq: 0,
            idle_celsius,
            order: if interleaved {
                RunOrder::Interleaved
            } else {
                RunOrder::Blocked
            },
        };
        let mut t = Transports {
            board: board_t.as_mut(),
            controller: controller_t.as_mut(),
        };
        let mut rest: &[Job<'_>] = jobs;
        while !rest.is_empty() {
            if self.stop.load(Ordering::SeqCst) {
                result.interrupted = true;
                break;
            }
            // Blocked: one cell at a time. Interleaved: every following cell that needs
            // the same storage setup takes its runs in turns with the others.
            let len = if interleaved {
                1 + rest[1..]
                    .iter()
                    .take_while(|j| mount_of(j.cell) == mount_of(rest[0].cell))
                    .count()
            } else {
                1
            };
            let (group, tail) = rest.split_at(len);
            rest = tail;
            let outcomes = self.run_group(&mut t, group, &mut state);
            let mut board_lost = None;
            for (job, outcome) in group.iter().zip(outcomes) {
                match outcome {
                    Ok(measured) => {
                        result.completed += 1;
                        self.progress.event(Event::CellDone {
                            board: self.name(),
                            cell: &job.cell.address,
                            measured,
                        });
                    }
                    Err(CellError::Interrupted) => result.interrupted = true,
                    Err(CellError::Cell(cause)) => {
                        self.fail_cell(job.cell, &cause);
                        result.failed.push((job.cell.address.clone(), cause));
                    }
                    Err(CellError::Board(cause)) => {
                        self.fail_cell(job.cell, &cause);
                        result
                            .failed
                            .push((job.cell.address.clone(), cause.clone()));
                        board_lost = Some(cause);
                    }
                }
            }
            if let Some(cause) = board_lost {
                fail_all(&mut result, rest, &cause);
                break;
            }
            if result.interrupted {
                break;
            }
        }
        if let Some((s, f)) = state.mounted.take()
            && let Err(e) = storage::release(board_t.as_mut(), &s, &f)
        {
            self.phase(None, format!("could not unmount {}: {e}", s.path));
        }
        self.done(&result);
        result
    }

    fn done(&self, result: &BoardResult) {
        self.progress.event(Event::BoardDone {
            board: self.name(),
            failed: result.failed.len(),
        });
    }

    fn fail_cell(&self, cell: &Cell, cause: &str) {
        self.progress.event(Event::CellFailed {
            board: self.name(),
            cell: &cell.address,
            cause,
        });
        // Recording the failure is best effort: the cause was already reported, and a
        // store that cannot be written will fail the next cell loudly anyway.
        if let Ok(w) = self.store.begin(cell) {
            let _ = w.record_failure(self.session, store::now(), cause);
        }
    }

    /// Makes the board ready for its cells: tools installed, work and storage dirs there.
    fn prepare(
        &self,
        board: &mut dyn Transport,
        controller: &mut dyn Transport,
        jobs: &[Job<'_>],
    ) -> Result<(), String> {
        let mut board_recipes = BTreeMap::new();
        let mut controller_recipes = BTreeMap::new();
        for j in jobs {
            let steps = j
                .recipe
                .setup
                .iter()
                .chain([&j.recipe.run])
                .chain(&j.recipe.teardown)
                .map(|s| s.on)
                .chain(j.recipe.services.iter().map(|s| s.on));
            for on in steps {
                let side = match on {
                    Side::Board => &mut board_recipes,
                    Side::Controller => &mut controller_recipes,
                };
                side.insert(j.recipe.name.clone(), j.recipe);
            }
        }
        provision(board, self.name(), board_recipes.values().copied())?;
        provision(
            controller,
            "the controller",
            controller_recipes.values().copied(),
        )?;
        let mut dirs = vec![self.board.workdir.clone()];
        for j in jobs {
            if let Some(st) = &j.cell.address.storage
                && let Some(st) = self.board.storage(st)
            {
                dirs.push(st.path.clone());
            }
        }
        dirs.sort();
        dirs.dedup();
        let cmd = format!("mkdir -p -- {}", quote::join(&dirs));
        let out = board
            .run(&cmd, Some(Duration::from_secs(60)))
            .map_err(|e| e.to_string())?;
        if !out.exit.success() {
            return Err(format!(
                "cannot create work directories ({}): {}",
                out.exit,
                out.stderr_str().trim()
            ));
        }
        Ok(())
    }

    /// Runs a group of cells that share one storage setup: setup of each, one cool-down,
    /// warm-ups, then measured runs (in turns when interleaved) until every cell's stop
    /// rule is met, and teardown of each whatever happened. Returns one outcome per cell.
    fn run_group(
        &self,
        t: &mut Transports<'_>,
        group: &[Job<'_>],
        board: &mut BoardState,
    ) -> Vec<Result<usize, CellError>> {
        let order = board.order;
        let mut live: Vec<Option<LiveCell<'_, '_>>> = Vec::with_capacity(group.len());
        let mut outcomes: Vec<Option<Result<usize, CellError>>> = Vec::new();
        for job in group {
            match self.begin_cell(t, job, &board.facts, &mut board.mounted) {
                Ok(cell) => {
                    live.push(Some(cell));
                    outcomes.push(None);
                }
                Err(e) => {
                    live.push(None);
                    outcomes.push(Some(Err(e)));
                }
            }
        }
        let fatal = |o: &Result<usize, CellError>| {
            matches!(o, Err(CellError::Board(_)) | Err(CellError::Interrupted))
        };
        let mut stop_all: Option<CellError> = None;

        if live.iter().any(Option::is_some) {
            let first = live.iter().flatten().next().map(|c| &c.job.cell.address);
            if let Err(e) = self.cooldown(t.board, first, &group[0].cell.method, board.idle_celsius)
            {
                stop_all = Some(e);
            }
        }
        // Warm-ups, each cell's in turn; then measured rounds. Blocked order is the same
        // loop with a group of one.
        if stop_all.is_none() {
            for (i, slot) in live.iter_mut().enumerate() {
                let Some(cell) = slot else { continue };
                if let Err(e) = self.warm_up(t, cell, order, &mut board.seq) {
                    let is_fatal = matches!(e, CellError::Board(_) | CellError::Interrupted);
                    outcomes[i] = Some(Err(e));
                    if is_fatal {
                        break;
                    }
                }
            }
        }
        loop {
            if stop_all.is_some() || outcomes.iter().flatten().any(fatal) {
                break;
            }
            let mut ran = false;
            for (i, slot) in live.iter_mut().enumerate() {
                let Some(cell) = slot else { continue };
                if outcomes[i].is_some() {
                    continue;
                }
                let have = state::counted(&cell.job.cell.method, &cell.data).count();
                let primaries =
                    state::primary_values(&cell.job.cell.method, &cell.job.primary, &cell.data);
                if state::stop_rule(&cell.job.cell.method, &primaries, have).is_some() {
                    outcomes[i] = Some(Ok(have));
                    continue;
                }
                // Runs the method leaves out (flagged ones, with exclude_flagged) do not
                // count towards `runs.max`, so without this bound a board that is always
                // throttled or loaded would be measured forever.
                let taken = cell
                    .data
                    .samples
                    .iter()
                    .filter(|s| s.kind == RunKind::Measured && s.session == self.session)
                    .count();
                let budget = run_budget(&cell.job.cell.method);
                if taken >= budget {
                    outcomes[i] = Some(Err(CellError::Cell(format!(
                        "{taken} measured runs in this apply, {have} of them valid: the                          method's {} runs were not reached within {budget} tries (see the                          runs' validity flags)",
                        cell.job.cell.method.runs.min
                    ))));
                    continue;
                }
                let want = cell.job.cell.method.runs.min.max(have as u32 + 1);
                self.phase(
                    Some(&cell.job.cell.address),
                    format!("run {}/{}", have + 1, want),
                );
                match self.one_run(
                    t,
                    cell,
                    RunKind::Measured,
                    have as u32 + 1,
                    order,
                    &mut board.seq,
                ) {
                    Ok(sample) => {
                        cell.data.samples.push(sample);
                        ran = true;
                    }
                    Err(e) => {
                        let is_fatal = matches!(e, CellError::Board(_) | CellError::Interrupted);
                        outcomes[i] = Some(Err(e));
                        if is_fatal {
                            break;
                        }
                    }
                }
            }
            if !ran {
                break;
            }
        }
        // Teardown runs for every cell that was set up, whatever happened, so no scratch
        // file outlives its cell. A board that is gone cannot be torn down.
        let board_gone = outcomes
            .iter()
            .flatten()
            .any(|o| matches!(o, Err(CellError::Board(_))));
        for (i, slot) in live.iter_mut().enumerate() {
            let Some(cell) = slot else { continue };
            if board_gone {
                break;
            }
            self.phase(Some(&cell.job.cell.address), "teardown");
            if let Err(e) = self.stop_services(t, &mut cell.services)
                && matches!(outcomes[i], None | Some(Ok(_)))
            {
                outcomes[i] = Some(Err(CellError::Cell(e)));
            }
            let _held = self.resources.acquire(&cell.job.recipe.exclusive);
            if let Err(e) = self.steps(t, &cell.job.recipe.teardown, &cell.vars, "teardown")
                && matches!(outcomes[i], None | Some(Ok(_)))
            {
                outcomes[i] = Some(Err(CellError::Cell(e)));
            }
        }
        // A cell left without an outcome shares the fate that stopped the group: the
        // board lost by another cell's run is its loss too, not an interruption.
        let lost = match &stop_all {
            Some(CellError::Board(c)) => Some(c.clone()),
            _ => outcomes.iter().flatten().find_map(|o| match o {
                Err(CellError::Board(c)) => Some(c.clone()),
                _ => None,
            }),
        };
        outcomes
            .into_iter()
            .map(|o| match (o, &lost, &stop_all) {
                (Some(o), _, _) => o,
                (None, Some(c), _) => Err(CellError::Board(c.clone())),
                (None, None, Some(CellError::Cell(c))) => Err(CellError::Cell(c.clone())),
                (None, None, _) => Err(CellError::Interrupted),
            })
            .collect()
    }

    /// Opens a cell in the store, prepares its storage and runs its setup.
    fn begin_cell<'j, 'c>(
        &self,
        t: &mut Transports<'_>,
        job: &'j Job<'c>,
        facts: &Value,
        mounted: &mut Option<(Storage, Filesystem)>,
    ) -> Result<LiveCell<'j, 'c>, CellError> {
        let cell = job.cell;
        let addr = &cell.address;
        let writer = self.store.begin(cell)?;
        writer.write_facts(facts)?;
        let storage = addr.storage.as_ref().and_then(|s| self.board.storage(s));
        if let (Some(fs), Some(st)) = (&cell.filesystem, storage) {
            let wanted = (st.name.clone(), fs.name.clone());
            if mounted
                .as_ref()
                .map(|(s, f)| (s.name.clone(), f.name.clone()))
                != Some(wanted)
            {
                if let Some((s, f)) = mounted.take() {
                    storage::release(t.board, &s, &f).map_err(CellError::Cell)?;
                }
                if fs.kind != AS_IS {
                    self.phase(Some(addr), format!("format {} as {}", st.name, fs.name));
                }
                storage::prepare(t.board, st, fs).map_err(CellError::Cell)?;
                *mounted = Some((st.clone(), fs.clone()));
            }
        }
        let mut vars = Vars::new();
        vars.params(&cell.params)
            .set("workdir", self.board.workdir.clone())
            .set(
                "dir",
                storage
                    .map(|s| s.path.clone())
                    .unwrap_or_else(|| self.board.workdir.clone()),
            )
            .set(
                "device",
                storage.and_then(|s| s.device.clone()).unwrap_or_default(),
            )
            .set("board", self.board.name.as_str())
            .set("host", board_host(self.board))
            .set("run", 0);
        self.phase(Some(addr), "setup");
        {
            let _held = self.resources.acquire(&job.recipe.exclusive);
            self.steps(t, &job.recipe.setup, &vars, "setup")
                .map_err(CellError::Cell)?;
        }
        let mut services = Vec::new();
        if let Err(e) = self.start_services(t, job, &vars, &mut services) {
            // Whatever did start is stopped again before the cell is given up.
            let _ = self.stop_services(t, &mut services);
            return Err(e);
        }
        let data = job.data.clone();
        Ok(LiveCell {
            job,
            writer,
            vars,
            data,
            services,
        })
    }

    /// Where services of this board's cells keep pid files, on each side. The
    /// controller's is per board: boards work in parallel, and one board's cleanup must
    /// not stop another board's services.
    fn service_dir(&self, side: Side) -> String {
        match side {
            Side::Board => self.board.workdir.clone(),
            Side::Controller => format!("/var/tmp/benchpipe/controller/{}", self.board.name),
        }
    }

    /// Starts the recipe's services, then waits for each one's `ready` check.
    fn start_services(
        &self,
        t: &mut Transports<'_>,
        job: &Job<'_>,
        vars: &Vars,
        started: &mut Vec<(Side, Service)>,
    ) -> Result<(), CellError> {
        for spec in &job.recipe.services {
            self.phase(
                Some(&job.cell.address),
                format!("start service {}", spec.name),
            );
            let command = bench::render(&spec.command, vars).map_err(CellError::Cell)?;
            // Unique per cell, so interleaved cells never share a pid file.
            let name = format!("{}-{}", &job.cell.key.as_str()[..8], spec.name);
            let service = t
                .side(spec.on)
                .start_service(&self.service_dir(spec.on), &name, &command)
                .map_err(|e| CellError::Cell(format!("service {}: {e}", spec.name)))?;
            started.push((spec.on, service));
            if let Some(ready) = &spec.ready {
                let check = bench::render(ready, vars).map_err(CellError::Cell)?;
                let t0 = Instant::now();
                loop {
                    let out = t.side(spec.on).run(&check, Some(Duration::from_secs(10)))?;
                    if out.exit.success() {
                        break;
                    }
                    if t0.elapsed() > Duration::from_secs(10) {
                        return Err(CellError::Cell(format!(
                            "service {} was not ready after 10 s: `{}` ended with {}{}",
                            spec.name,
                            first_line(&check),
                            out.exit,
                            tail_hint(&out.stderr_str())
                        )));
                    }
                    self.sleep(Duration::from_millis(200))?;
                }
            }
        }
        Ok(())
    }

    /// Stops services, last started first; every one is tried even when one fails.
    fn stop_services(
        &self,
        t: &mut Transports<'_>,
        services: &mut Vec<(Side, Service)>,
    ) -> Result<(), String> {
        let mut first_error = None;
        while let Some((side, service)) = services.pop() {
            if let Err(e) = t.side(side).stop_service(&service) {
                first_error.get_or_insert(format!("stopping service {}: {e}", service.name));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The warm-up runs of one cell: executed, recorded as warm-up, discarded by stats.
    fn warm_up(
        &self,
        t: &mut Transports<'_>,
        cell: &mut LiveCell<'_, '_>,
        order: RunOrder,
        board_seq: &mut u64,
    ) -> Result<(), CellError> {
        let warmup = cell.job.cell.method.warmup.clone();
        let started = Instant::now();
        let mut k = 0u32;
        while k < warmup.runs || warmup.duration.is_some_and(|d| started.elapsed() < d) {
            k += 1;
            self.phase(
                Some(&cell.job.cell.address),
                format!("warm-up {k}/{}", warmup.runs.max(k)),
            );
            self.one_run(t, cell, RunKind::Warmup, k, order, board_seq)?;
        }
        Ok(())
    }

    /// One warm-up or measured run: execute, log, parse, append.
    fn one_run(
        &self,
        t: &mut Transports<'_>,
        cell: &mut LiveCell<'_, '_>,
        kind: RunKind,
        index: u32,
        order: RunOrder,
        board_seq: &mut u64,
    ) -> Result<Sample, CellError> {
        if self.stop.load(Ordering::SeqCst) {
            return Err(CellError::Interrupted);
        }
        let job = cell.job;
        let writer = &mut cell.writer;
        let vars = &mut cell.vars;
        vars.set("run", index);
        let _held = self.resources.acquire(&job.recipe.exclusive);
        let step = &job.recipe.run;
        let command = bench::render(&step.command, vars).map_err(CellError::Cell)?;
        let seq = writer.next_seq();
        // The sampler watches the board during measured runs; warm-ups are discarded
        // anyway. Without it (an odd board), the run goes on unjudged.
        let probe = match kind {
            RunKind::Measured => match Probe::start_with(
                t.board,
                self.board,
                &format!("{}-{seq}", self.session),
                &SamplerOptions::for_run(step.timeout),
            ) {
                Ok(p) => Some(p),
                Err(e) => {
                    self.phase(Some(&job.cell.address), format!("no telemetry: {e}"));
                    None
                }
            },
            RunKind::Warmup => None,
        };
        let run_command = match (&probe, step.on) {
            (Some(p), Side::Board) => p.wrap(&command),
            _ => command.clone(),
        };
        let started = store::now();
        let t0 = Instant::now();
        let out = t.side(step.on).run(&run_command, step.timeout);
        let seconds = t0.elapsed().as_secs_f64();
        let ended = store::now();
        let probe = if self.stop.load(Ordering::SeqCst) || out.is_err() {
            if let Some(p) = probe {
                p.abort(t.board);
            }
            None
        } else {
            probe
        };
        if self.stop.load(Ordering::SeqCst) {
            // The run was cut short by the interrupt: record nothing of it.
            return Err(CellError::Interrupted);
        }
        let out = out?;
        let (flags, telemetry) = match probe {
            None => (Vec::new(), None),
            Some(p) => match p.finish(t.board, &Thresholds::from(&job.cell.method.validity)) {
                Ok(done) => (done.flags, Some(done.telemetry)),
                Err(e) => {
                    self.phase(Some(&job.cell.address), format!("telemetry lost: {e}"));
                    (Vec::new(), None)
                }
            },
        };
        let stdout = out.stdout_str();
        let stderr = out.stderr_str();
        let log = format!(
            "$ {command}\n# {kind:?} run {index}, {}, {seconds:.3} s\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
            out.exit
        );
        if !out.exit.success() {
            let name = format!("failed-{}-{seq:04}", self.session);
            let rel = writer.write_log_named(&name, log.as_bytes())?;
            return Err(CellError::Cell(format!(
                "{kind:?} run {index}: `{}` ended with {}{}; log: {}/{rel}",
                first_line(&command),
                out.exit,
                tail_hint(&stderr),
                writer.dir().display()
            )));
        }
        let metrics = match bench::metrics(job.recipe, &stdout, &stderr) {
            Ok(m) => m,
            Err(e) => {
                let name = format!("failed-{}-{seq:04}", self.session);
                let rel = writer.write_log_named(&name, log.as_bytes())?;
                return Err(CellError::Cell(format!(
                    "{kind:?} run {index}: {e}; log: {}/{rel}",
                    writer.dir().display()
                )));
            }
        };
        let rel = writer.write_log(seq, log.as_bytes())?;
        let sample = Sample {
            format: store::FORMAT,
            seq,
            kind,
            session: self.session.to_string(),
            started,
            ended,
            metrics,
            flags,
            telemetry,
            command,
            log: rel,
            order: Some(order),
            board_seq: Some(*board_seq + 1),
        };
        writer.append(&sample)?;
        *board_seq += 1;
        self.progress.event(Event::Run {
            board: self.name(),
            cell: &job.cell.address,
            kind,
            metrics: &sample.metrics,
            seconds,
        });
        Ok(sample)
    }

    /// Runs setup or teardown steps in order; the first failure stops them.
    fn steps(
        &self,
        t: &mut Transports<'_>,
        steps: &[Step],
        vars: &Vars,
        what: &str,
    ) -> Result<(), String> {
        for step in steps {
            let command = bench::render(&step.command, vars)?;
            let out = t
                .side(step.on)
                .run(&command, step.timeout.or(Some(Duration::from_secs(3600))))
                .map_err(|e| e.to_string())?;
            if !out.exit.success() {
                return Err(format!(
                    "{what} `{}` ended with {}{}",
                    first_line(&command),
                    out.exit,
                    tail_hint(&out.stderr_str())
                ));
            }
        }
        Ok(())
    }

    /// Waits out the method's cool-down, then its idle gate. A board without a thermal
    /// source cannot be waited on by temperature; it is said once and not waited for.
    fn cooldown(
        &self,
        board: &mut dyn Transport,
        addr: Option<&Address>,
        method: &Method,
        idle_celsius: Option<f64>,
    ) -> Result<(), CellError> {
        match &method.cooldown {
            Cooldown::None => {}
            Cooldown::Fixed { duration } => {
                self.phase(addr, format!("cool-down {}s", duration.as_secs()));
                self.sleep(*duration)?;
            }
            Cooldown::UntilBelow {
                celsius,
                above_idle,
                max,
            } => {
                let limit = match (*above_idle, idle_celsius) {
                    (false, _) => Some(*celsius),
                    (true, Some(idle)) => Some(idle + celsius),
                    (true, None) => None,
                };
                let t0 = Instant::now();
                while let Some(limit) = limit {
                    match read_temperature(board, self.board) {
                        Some(c) if c < limit => break,
                        None => {
                            self.phase(addr, "cool-down skipped: no temperature source");
                            break;
                        }
                        Some(c) => {
                            self.phase(addr, format!("cool-down {c:.1}°C > {limit:.1}°C"));
                        }
                    }
                    if t0.elapsed() >= *max {
                        break;
                    }
                    self.sleep(POLL)?;
                }
            }
        }
        if let Some(gate) = &method.idle {
            let t0 = Instant::now();
            let mut quiet_since: Option<Instant> = None;
            while t0.elapsed() < gate.max {
                let Some(load) = read_load(board) else {
                    self.phase(addr, "idle gate skipped: no /proc/loadavg");
                    break;
                };
                if load < gate.load_below {
                    let since = *quiet_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= gate.hold {
                        break;
                    }
                } else {
                    quiet_since = None;
                }
                self.phase(
                    addr,
                    format!(
                        "waiting for idle: load {load:.2}, want < {}",
                        gate.load_below
                    ),
                );
                self.sleep(POLL.min(gate.hold.max(Duration::from_millis(200))))?;
            }
        }
        Ok(())
    }

    /// Sleeps, waking early on interrupt.
    fn sleep(&self, d: Duration) -> Result<(), CellError> {
        let t0 = Instant::now();
        while t0.elapsed() < d {
            if self.stop.load(Ordering::SeqCst) {
                return Err(CellError::Interrupted);
            }
            std::thread::sleep((d - t0.elapsed()).min(Duration::from_millis(200)));
        }
        Ok(())
    }
}

/// The board's and the controller's transports, picked by a step's `on`.
struct Transports<'a> {
    board: &'a mut dyn Transport,
    controller: &'a mut dyn Transport,
}

impl Transports<'_> {
    fn side(&mut self, side: Side) -> &mut dyn Transport {
        match side {
            Side::Board => &mut *self.board,
            Side::Controller => &mut *self.controller,
        }
    }
}

fn board_host(board: &Board) -> String {
    match &board.connection {
        Connection::Local => "localhost".into(),
        Connection::Ssh(t) => t.host.clone(),
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.len() < s.len() {
        format!("{line} ...")
    } else {
        line.to_string()
    }
}

/// The last lines of a tool's stderr, to put the cause of a failure in its message.
fn tail_hint(stderr: &str) -> String {
    // As a terminal shows it: a tool's colour codes must not reach the failure record
    // and the report.
    let stderr = crate::bench::parse::visible(stderr);
    let lines: Vec<&str> = stderr.trim().lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = &lines[lines.len().saturating_sub(3)..];
    format!(": {}", tail.join(" | "))
}

/// Checks that every command the recipes need exists on a side, installing the
/// missing ones' packages with apt-get when running as root there.
fn provision<'r>(
    t: &mut dyn Transport,
    side: &str,
    recipes: impl Iterator<Item = &'r Recipe>,
) -> Result<(), String> {
    let recipes: Vec<&Recipe> = recipes.collect();
    let commands: BTreeSet<&str> = recipes
        .iter()
        .flat_map(|r| r.commands.iter().map(String::as_str))
        .collect();
    if commands.is_empty() {
        return Ok(());
    }
    let missing = missing_commands(t, &commands)?;
    if missing.is_empty() {
        return Ok(());
    }
    let packages: BTreeSet<&str> = recipes
        .iter()
        .filter(|r| r.commands.iter().any(|c| missing.contains(c)))
        .flat_map(|r| r.apt.iter().map(String::as_str))
        .collect();
    let packages: Vec<&str> = packages.into_iter().collect();
    let is_root = t
        .run("id -u", Some(Duration::from_secs(30)))
        .map(|o| o.stdout_str().trim() == "0")
        .unwrap_or(false);
    if !is_root {
        return Err(format!(
            "{side} lacks {}; install them as root with: apt-get install {}",
            missing.join(", "),
            packages.join(" ")
        ));
    }
    // Boards that share one system (the lab) provision at the same time: wait for
    // dpkg's lock rather than fail on it.
    let install = format!(
        "export DEBIAN_FRONTEND=noninteractive; \
         apt-get -o DPkg::Lock::Timeout=600 install -y -q -- {p} || \
         (apt-get -o DPkg::Lock::Timeout=600 update -q && \
          apt-get -o DPkg::Lock::Timeout=600 install -y -q -- {p})",
        p = quote::join(&packages)
    );
    let out = t
        .run(&install, Some(Duration::from_secs(1800)))
        .map_err(|e| e.to_string())?;
    if !out.exit.success() {
        return Err(format!(
            "{side}: apt-get install {} failed ({}){}",
            packages.join(" "),
            out.exit,
            tail_hint(&out.stderr_str())
        ));
    }
    let still = missing_commands(t, &commands)?;
    if !still.is_empty() {
        return Err(format!(
            "{side} still lacks {} after installing {}",
            still.join(", "),
            packages.join(" ")
        ));
    }
    Ok(())
}

fn missing_commands(
    t: &mut dyn Transport,
    commands: &BTreeSet<&str>,
) -> Result<Vec<String>, String> {
    let words: Vec<&str> = commands.iter().copied().collect();
    let script = format!(
        "for c in {}; do command -v \"$c\" >/dev/null 2>&1 || echo \"$c\"; done",
        quote::join(&words)
    );
    let out = t
        .run(&script, Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    Ok(out.stdout_str().lines().map(str::to_string).collect())
}

/// What the board is, recorded beside each cell's samples: the provenance that explains
/// numbers later (kernel, OS release, CPU, governor, memory, tool versions).
fn gather_facts(t: &mut dyn Transport, board: &Board) -> Value {
    const SCRIPT: &str = r#"
echo "@@kernel"; uname -srm
echo "@@os_release"; cat /etc/os-release 2>/dev/null
echo "@@cpus"; nproc 2>/dev/null
echo "@@cpu_model"; (grep -m1 -E '^(model name|Model)' /proc/cpuinfo | cut -d: -f2-) 2>/dev/null
echo "@@governor"; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null
echo "@@memory_kib"; awk '/^MemTotal/ {print $2}' /proc/meminfo 2>/dev/null
echo "@@fio"; fio --version 2>/dev/null
echo "@@xz"; xz --version 2>/dev/null | head -n1
"#;
    let mut facts = serde_json::Map::new();
    facts.insert("board".into(), json!(board.name));
    facts.insert("model".into(), json!(board.model));
    match t.run(SCRIPT, Some(Duration::from_secs(60))) {
        Ok(out) => {
            let text = out.stdout_str();
            let mut current: Option<String> = None;
            let mut sections: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for line in text.lines() {
                if let Some(name) = line.strip_prefix("@@") {
                    current = Some(name.to_string());
                    sections.entry(name.to_string()).or_default();
                } else if let Some(c) = &current {
                    sections
                        .entry(c.clone())
                        .or_default()
                        .push(line.to_string());
                }
            }
            for (k, lines) in sections {
                if k == "os_release" {
                    let mut os = serde_json::Map::new();
                    for l in lines {
                        if let Some((key, v)) = l.split_once('=') {
                            os.insert(key.to_string(), json!(v.trim_matches('"')));
                        }
                    }
                    facts.insert(k, Value::Object(os));
                } else {
                    let v = lines.join("\n").trim().to_string();
                    if !v.is_empty() {
                        facts.insert(k, json!(v));
                    }
                }
            }
        }
        Err(e) => {
            facts.insert("error".into(), json!(e.to_string()));
        }
    }
    Value::Object(facts)
}

/// How often cool-down and the idle gate look at the board.
const POLL: Duration = Duration::from_secs(5);

/// The board's 1-minute load average.
fn read_load(t: &mut dyn Transport) -> Option<f64> {
    let out = t
        .run("head -c 256 /proc/loadavg", Some(Duration::from_secs(30)))
        .ok()?;
    out.stdout_str().split_whitespace().next()?.parse().ok()
}

/// The board's highest temperature in °C, from its thermal source; None when it has none.
fn read_temperature(t: &mut dyn Transport, board: &Board) -> Option<f64> {
    let source = board
        .thermal
        .as_deref()
        .unwrap_or(crate::telemetry::DEFAULT_THERMAL);
    // The board's shell expands the glob; everything else in it is quoted. A value is
    // a few bytes of a regular file: `/dev/zero` or a FIFO named by mistake must not
    // stream for ever.
    let safe = quote::glob(source);
    let out = t
        .run(
            &format!(
                "for f in {safe}; do [ -f \"$f\" ] && head -c 64 -- \"$f\" 2>/dev/null && echo; done"
            ),
            Some(Duration::from_secs(30)),
        )
        .ok()?;
    out.stdout_str()
        .lines()
        .filter_map(|l| l.trim().parse::<f64>().ok())
        .map(|milli| milli / 1000.0)
        .fold(None, |acc: Option<f64>, c| {
            Some(acc.map_or(c, |a| a.max(c)))
        })
}
