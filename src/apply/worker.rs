//! One board's walk: connect, claim workdirs, provision, then its cells in groups, and
//! the failures that end a cell or the whole board.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::facts::{gather_facts, read_temperature};
use super::resources::Resources;
use super::{BoardResult, Event, Job, Progress};
use crate::bench::Vars;
use crate::error::Error;
use crate::failure::CellFailure;
use crate::model::{AS_IS, Board, Connection, Filesystem, RunOrder, Side, Storage};
use crate::plan::{Address, Cell};
use crate::storage;
use crate::store::{self, CellWriter, Store};
use crate::transport::local::Local;
use crate::transport::{Service, Transport, TransportError};

pub(super) struct Worker<'a> {
    pub(super) board: &'a Board,
    pub(super) store: &'a Store,
    pub(super) progress: &'a dyn Progress,
    pub(super) stop: &'a AtomicBool,
    pub(super) session: &'a str,
    pub(super) resources: &'a Resources,
}

/// What a board's worker carries from cell to cell.
pub(super) struct BoardState {
    /// Recorded beside every cell's samples.
    pub(super) facts: Value,
    /// Each recipe's `[facts]`, merged into its cells' facts (`facts_for`).
    pub(super) tools: std::collections::BTreeMap<crate::model::TestName, Value>,
    /// The storage and filesystem mounted now: reformatted only when a cell needs
    /// another, unmounted when the board is done.
    pub(super) mounted: Option<(Storage, Filesystem)>,
    /// Runs taken on this board in this apply (`Sample::board_seq`).
    pub(super) seq: u64,
    /// The temperature before benchpipe loaded the board: the base of "idle+N".
    pub(super) idle_celsius: Option<f64>,
    pub(super) order: RunOrder,
}

impl BoardState {
    /// The board's facts with the recipe's own merged in.
    pub(super) fn facts_for(&self, recipe: &crate::model::TestName) -> Value {
        let mut facts = self.facts.clone();
        if let (Some(obj), Some(Value::Object(extra))) =
            (facts.as_object_mut(), self.tools.get(recipe))
        {
            obj.extend(extra.clone());
        }
        facts
    }
}

/// A cell being worked on: its store writer, template values and samples so far.
pub(super) struct LiveCell<'j, 'c> {
    pub(super) job: &'j Job<'c>,
    pub(super) writer: CellWriter,
    pub(super) vars: Vars,
    pub(super) data: crate::store::CellData,
    /// The recipe's services, running for the whole cell.
    pub(super) services: Vec<(Side, Service)>,
}

/// What a cell needs mounted; cells with equal needs can take turns.
pub(super) fn mount_of(cell: &Cell) -> Option<(String, String)> {
    match (&cell.address.storage, &cell.filesystem) {
        (Some(s), Some(f)) if f.kind != AS_IS => Some((s.to_string(), f.name.to_string())),
        _ => None,
    }
}

/// In apply, the crate's errors come from the store: opening a cell, writing a run.
impl From<Error> for CellFailure {
    fn from(e: Error) -> Self {
        CellFailure::Store {
            message: e.to_string(),
        }
    }
}

impl Worker<'_> {
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

    pub(super) fn run(&self, jobs: &[Job<'_>]) -> BoardResult {
        self.progress.event(Event::BoardStart {
            board: self.name(),
            cells: jobs.len(),
        });
        let mut result = BoardResult {
            completed: 0,
            failed: Vec::new(),
            interrupted: false,
        };
        let fail_all = |result: &mut BoardResult, jobs: &[Job<'_>], cause: &CellFailure| {
            for j in jobs {
                self.fail_cell(j.cell, cause);
                result.failed.push((j.cell.address.clone(), cause.clone()));
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
                fail_all(&mut result, jobs, &e.into());
                self.done(&result);
                return result;
            }
        };
        let mut controller_t: Box<dyn Transport> = Box::new(Local::new());
        // benchpipe removes files in these directories as root: only in its own.
        self.phase(None, "claim workdir");
        // The controller's directory only when a step, service or fact runs there.
        let controller_services = jobs.iter().any(|j| {
            j.recipe.sides().contains(&Side::Controller)
                || j.recipe.facts.iter().any(|f| f.on == Side::Controller)
        });
        let claimed = crate::transport::workdir::claim(board_t.as_mut(), &self.board.workdir)
            .and_then(|()| match controller_services {
                true => crate::transport::workdir::claim(
                    controller_t.as_mut(),
                    &self.service_dir(Side::Controller),
                ),
                false => Ok(()),
            });
        if let Err(e) = claimed {
            // `Other` is the claim's refusal; anything else is the transport's own.
            let cause = match e {
                TransportError::Other { .. } => CellFailure::Refused {
                    reason: e.to_string(),
                },
                e => e.into(),
            };
            fail_all(&mut result, jobs, &cause);
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
            tools: Default::default(),
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
        state.tools = self.recipe_facts(&mut t, jobs);
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
                    Err(CellFailure::Interrupted) => result.interrupted = true,
                    Err(cause) => {
                        self.fail_cell(job.cell, &cause);
                        if cause.ends_board() {
                            board_lost = Some(cause.clone());
                        }
                        result.failed.push((job.cell.address.clone(), cause));
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

    /// Sleeps, waking early on interrupt.
    pub(super) fn sleep(&self, d: Duration) -> Result<(), CellFailure> {
        let t0 = Instant::now();
        while t0.elapsed() < d {
            if self.stop.load(Ordering::SeqCst) {
                return Err(CellFailure::Interrupted);
            }
            std::thread::sleep((d - t0.elapsed()).min(Duration::from_millis(200)));
        }
        Ok(())
    }
}

/// The board's and the controller's transports, picked by a step's `on`.
pub(super) struct Transports<'a> {
    pub(super) board: &'a mut dyn Transport,
    pub(super) controller: &'a mut dyn Transport,
}

impl Transports<'_> {
    pub(super) fn side(&mut self, side: Side) -> &mut dyn Transport {
        match side {
            Side::Board => &mut *self.board,
            Side::Controller => &mut *self.controller,
        }
    }
}

pub(super) fn board_host(board: &Board) -> String {
    match &board.connection {
        Connection::Local => "localhost".into(),
        Connection::Ssh(t) => t.host.clone(),
    }
}
