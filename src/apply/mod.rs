//! Walks the plan: the one place where store, transport and bench meet.
//!
//! One worker thread per board, all boards at once; a board's cells run in plan order.
//! Every run is appended to the store as soon as it ends, so an interrupted apply loses
//! at most the run in flight, and the next apply resumes where this one stopped.
//!
//! Apply only walks the schedule `plan::schedule::build` computes, the one `plan --json`
//! and `apply --dry-run` show. This file holds the public API and the fan-out to board
//! threads. The step runner, which walks a board's steps and a cluster's alike, is
//! `walk.rs`; a board's steps `board.rs`, a cluster's `cluster/`; what the steps share,
//! `worker.rs`; warm-up and measured runs `runs.rs`; a cell's opening, setup and teardown `cell.rs`;
//! services `services.rs`; cool-down and idle gate `cooldown.rs`; tools and directories
//! `provision.rs`; board facts, temperature and load `facts.rs`; storage facts and the
//! UAS board-state steps `uas.rs`; exclusive resources `resources.rs`.

mod board;
mod cell;
mod cleanup;
mod cluster;
mod cooldown;
mod drift;
pub(crate) mod facts;
mod flash;
mod flashing;
mod health;
mod mount;
mod non_free;
mod peer;
mod per_member;
mod places;
mod power;
pub mod probe;
pub(crate) mod provision;
mod quiet_install;
mod reserve;
mod resources;
pub(crate) mod route;
mod runs;
mod secrets;
mod services;
mod status;
pub use services::controller_dir;
mod tmpfs;
mod tpi;
mod uas;
mod verify;
mod walk;
mod worker;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;

use crate::error::{Error, Result};
use crate::failure::CellFailure;
use crate::model::{Board, Recipe, Workspace};
use crate::plan::schedule::{self, Schedule, Step};
use crate::plan::state;
use crate::plan::{Address, Cell};
use crate::store::{self, RunKind, Store};
use crate::transport::{Connector, RealConnector};

use resources::Resources;
use worker::Worker;

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
        cause: &'a CellFailure,
        /// The failing step's output, for the terminal; reports leave it out.
        log: Option<&'a std::path::Path>,
    },
    /// The test cannot apply on the board; recorded as a skip, not a failure.
    CellSkipped {
        board: &'a str,
        cell: &'a Address,
        reason: &'a str,
    },
    /// `--deadline` left too little time for the cell: not started, nothing recorded.
    CellLeft {
        board: &'a str,
        cell: &'a Address,
        reason: &'a str,
    },
    BoardDone {
        board: &'a str,
        failed: usize,
    },
    /// A step of the board's schedule was walked (its index in the board's steps).
    Step {
        board: &'a str,
        index: usize,
        step: &'a Step,
        status: &'a StepStatus,
    },
}

/// What became of one step of the schedule.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum StepStatus {
    /// It ran and succeeded.
    Ran,
    /// Its `done_when` held (or, for a cleanup, there was nothing to undo).
    Done,
    /// Not run: the board is lost, apply was interrupted, or its cells had failed.
    Skipped { reason: String },
    /// It ran and failed; its cells that had no outcome fail with the cause.
    Failed { cause: String },
}

/// The outcome of one apply.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Cells the plan held that needed no work.
    pub already_complete: usize,
    pub completed: usize,
    pub failed: Vec<(Address, CellFailure)>,
    /// Cells whose test cannot apply on their board, with the reason (`skip.json`).
    pub skipped: Vec<(Address, String)>,
    /// Boards `Connect` could not reach (no TCP connection, no SSH handshake): each
    /// board's name, the cause, and how many of its cells were not run.
    pub unreachable: Vec<(String, String, usize)>,
    pub interrupted: bool,
    /// Cells `--deadline` left for lack of time, with why: not run, not failed.
    pub left: Vec<(Address, String)>,
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
    apply_with(ws, cells, store, progress, stop, &RealConnector)
}

/// `apply` with the transports `connector` opens.
pub fn apply_with(
    ws: &Workspace,
    cells: &[Cell],
    store: &Store,
    progress: &dyn Progress,
    stop: &AtomicBool,
    connector: &dyn Connector,
) -> Result<Outcome> {
    let options = Options::default();
    apply_with_options(ws, cells, store, progress, stop, connector, &options)
}

/// What the user chose for this apply beyond the cells.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Cells measured on a board that changed since (`--on-drift`): judged against the
    /// board's last-seen fingerprint before the walk (so complete cells can be kept or
    /// redone, as `plan` shows), and against the board's own when facts are gathered.
    pub on_drift: crate::store::OnDrift,
    /// `--deadline` / `--max-duration`, as Unix seconds: a cell whose steps' estimates
    /// (the store's history of runs, fixed cool-downs) say it cannot end before then
    /// does not start; it stays for the next apply (`Outcome::left`).
    pub deadline: Option<f64>,
}

/// `apply_with` with the user's `options`.
pub fn apply_with_options(
    ws: &Workspace,
    cells: &[Cell],
    store: &Store,
    progress: &dyn Progress,
    stop: &AtomicBool,
    connector: &dyn Connector,
    options: &Options,
) -> Result<Outcome> {
    let _lock = store.lock()?;
    let started = store::now();
    let session = format!("{started:.0}-{}", std::process::id());
    store.record_run(&session, started)?;
    // Every event also lands in the store's walk statuses (`benchpipe status`).
    let recorder = status::Recorder::new(progress, store, &session);
    let progress: &dyn Progress = &recorder;
    let mut outcome = Outcome::default();
    let boards_seen = store.board_fingerprints(cells.iter().map(|c| &c.address.board))?;

    // The same cell may come from two scenarios; it runs once.
    let mut seen = BTreeSet::new();
    // Seconds per run: `--deadline` judges by the steps' estimates, from every cell of
    // the store (other parameters' runs of a test on a board say how long it takes);
    // without one, the cells of this apply give the estimates `plan` shows.
    let mut history = match options.deadline {
        Some(_) => schedule::Estimates::from_store(&store.all()?),
        None => schedule::Estimates::default(),
    };
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
        let mut data = store.read(cell)?;
        let board_now = boards_seen.get(&cell.address.board);
        if options.on_drift != crate::store::OnDrift::Refuse
            && let (Some(now), Some(_)) =
                (board_now, crate::plan::drift::cell_drift(&data, board_now))
        {
            store.record_drift(cell, options.on_drift, now, &session)?;
            data = store.read(cell)?;
        }
        if options.deadline.is_none() {
            history.add(&data);
        }
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

    let boards = by_board.keys().map(|b| crate::model::BoardName::new(*b));
    let boards: Vec<crate::model::BoardName> = boards.collect();
    let history = history
        .with_board_images(store.board_images(&boards)?)
        .with_deploys(store.deploy_times_of(&boards)?);
    let mut schedule = schedule_of(ws, &by_board, &history);
    // Boards whose last walk died and that have no cells now are walked to tidy them.
    let given: BTreeSet<crate::model::BoardName> =
        cells.iter().map(|c| c.address.board.clone()).collect();
    schedule::tidy::add(&mut schedule, ws, &given, &store.walk_statuses()?);
    for b in &schedule.boards {
        if let Some((name, _)) = ws.boards.get_key_value(&b.board) {
            by_board.entry(name.as_str()).or_default();
        }
    }
    progress.event(Event::Start {
        to_run: by_board.values().map(Vec::len).sum(),
        complete: outcome.already_complete,
    });
    let resources = Resources::default();
    let held = Resources::default();
    // Each cluster walks as a board of its own: its name, and the control member's
    // workdir for what a step there keeps.
    let clusters = clusters_of(ws, &by_board)?;
    let results: Vec<BoardResult> = std::thread::scope(|s| {
        let handles: Vec<_> = by_board
            .iter()
            .map(|(board_name, jobs)| {
                let name = crate::model::BoardName::new(*board_name);
                let cluster = clusters.get(&name);
                let board = match cluster {
                    Some((as_board, _)) => as_board,
                    None => &ws.boards[&name],
                };
                let worker = Worker {
                    board,
                    root: &ws.root,
                    boards: &ws.boards,
                    store,
                    progress,
                    stop,
                    session: &session,
                    resources: &resources,
                    held: &held,
                    connector,
                    on_drift: options.on_drift,
                    deadline: options.deadline,
                };
                let steps = schedule
                    .boards
                    .iter()
                    .find(|b| b.board.as_str() == *board_name)
                    .map_or(&[][..], |b| &b.steps[..]);
                match cluster {
                    Some((_, c)) => {
                        let members = crate::plan::key::members_of(c, &ws.boards);
                        let control = members
                            .iter()
                            .position(|m| m.name == c.control)
                            .unwrap_or(0);
                        let cw = cluster::ClusterWorker {
                            w: worker,
                            cluster: c,
                            members,
                            control,
                        };
                        s.spawn(move || cw.walk(steps, jobs))
                    }
                    None => s.spawn(move || worker.walk(steps, jobs)),
                }
            })
            .collect();
        handles
            .into_iter()
            .zip(by_board.iter())
            .map(|(h, (board, jobs))| {
                h.join()
                    .unwrap_or_else(|panic| worker_panicked(store, &session, board, jobs, &*panic))
            })
            .collect()
    });
    for ((board, _), r) in by_board.iter().zip(results) {
        if let Some((cause, cells)) = r.unreachable {
            outcome.unreachable.push((board.to_string(), cause, cells));
        }
        outcome.completed += r.completed;
        outcome.failed.extend(r.failed);
        outcome.skipped.extend(r.skipped);
        outcome.left.extend(r.left);
        outcome.interrupted |= r.interrupted;
    }
    Ok(outcome)
}

/// Each cluster among the jobs' boards, as a board of its own (its name, the control
/// member's workdir) and as declared. Two scenarios that give one name to two
/// different clusters cannot be applied together.
fn clusters_of<'w>(
    ws: &'w Workspace,
    by_board: &BTreeMap<&str, Vec<Job<'w>>>,
) -> Result<BTreeMap<crate::model::BoardName, (Board, &'w crate::model::Cluster)>> {
    let mut out = BTreeMap::new();
    for jobs in by_board.values() {
        let Some(c) = jobs.first().and_then(|j| j.cell.cluster.as_ref()) else {
            continue;
        };
        if jobs.iter().any(|j| j.cell.cluster.as_ref() != Some(c)) {
            return Err(Error::Other(format!(
                "cluster {} is declared differently by two scenarios of this apply; give one of them another name",
                c.name
            )));
        }
        let control = ws
            .boards
            .get(&c.control)
            .ok_or_else(|| Error::Other(format!("unknown board {}", c.control)))?;
        let as_board = Board {
            name: c.name.clone(),
            file: control.file.clone(),
            model: format!("cluster of {}", c.members.len()),
            arch: Vec::new(),
            memory: None,
            memory_mib: None,
            connection: crate::model::Connection::Local,
            flash: crate::model::Flash::None,
            power: None,
            meter: None,
            storage: Vec::new(),
            network: Vec::new(),
            workdir: control.workdir.clone(),
            thermal: None,
            accept_new_host_key: false,
            boot_cmdline: None,
            health: Vec::new(),
            labgrid: None,
        };
        out.insert(c.name.clone(), (as_board, c));
    }
    Ok(out)
}

/// The schedule of the jobs: what apply walks.
fn schedule_of(
    ws: &Workspace,
    by_board: &BTreeMap<&str, Vec<Job<'_>>>,
    estimates: &schedule::Estimates,
) -> Schedule {
    let work: Vec<schedule::Work<'_>> = by_board
        .values()
        .flatten()
        .map(|j| schedule::Work {
            cell: j.cell,
            recipe: j.recipe,
            runs_left: state::state(j.cell, &j.primary, &j.data).remaining(),
        })
        .collect();
    schedule::build(ws, &work, estimates)
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
    panic: &(dyn std::any::Any + Send),
) -> BoardResult {
    let what = panic
        .downcast_ref::<&str>()
        .map(ToString::to_string)
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    let cause = CellFailure::Panicked {
        board: board.to_string(),
        message: what,
    };
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
        skipped: Vec::new(),
        left: Vec::new(),
        unreachable: None,
        interrupted: false,
    }
}

struct BoardResult {
    completed: usize,
    failed: Vec<(Address, CellFailure)>,
    skipped: Vec<(Address, String)>,
    /// Cells the deadline left (`Outcome::left`).
    left: Vec<(Address, String)>,
    /// The cause, and the cells not run, when the board could not be reached.
    unreachable: Option<(String, usize)>,
    interrupted: bool,
}
