//! A cell's own steps, one copy for every walk over its places (`places.rs`): opened in
//! the store with its facts and template values, its `[[requires]]`, and the recipe's
//! setup and teardown commands on the places of each one's side.

use std::collections::BTreeMap;
use std::time::Duration;

use super::Job;
use super::places::{self, Place, Places};
use super::worker::{LiveCell, Worker, board_host};
use crate::bench::{self, Vars};
use crate::failure::CellFailure;
use crate::model::{Side, Step, StepInput, TestName};
use crate::store::{CellFacts, Flashed, NetworkFact, StorageFact};
use crate::transport::{CAPTURE_LIMIT, Capture, Output, Transport, TransportError};

/// How much of a `[[requires]]` check's reason is kept.
const REASON_CHARS: usize = 240;

impl Worker<'_> {
    /// Opens a cell at its first step (its tmpfs or its setup): its store entry with
    /// the places' facts beside it and its template values, its secret directory on
    /// the controller, then its `[[requires]]` checks. Its storage is mounted already
    /// (the schedule's `Mount` step).
    pub(super) fn open_cell<'j, 'c>(
        &self,
        places: &mut dyn Places,
        job: &'j Job<'c>,
        secrets: &super::secrets::Secrets,
    ) -> Result<LiveCell<'j, 'c>, CellFailure> {
        let facts = places.cell_facts(job)?;
        let cell = job.cell;
        let writer = self.store.begin(cell)?;
        writer.write_facts(&facts, self.session)?;
        if let Some(fp) = &facts.fingerprint {
            self.store.adopt_fingerprint(cell, fp)?;
        }
        let (vars, member_vars) = places.cell_vars(job)?;
        let live = LiveCell {
            job,
            writer,
            vars,
            member_vars,
            // Read again: a drift choice at `gather-facts` may have marked a redo.
            data: self.store.read(cell)?,
            services: Vec::new(),
            tmpfs: None,
        };
        let dir = self.service_dir(Side::Controller);
        let (controller, _) = places.session(Place::Controller)?;
        super::secrets::open_cell(controller, &dir, job, secrets)?;
        self.requires(places, &live)?;
        Ok(live)
    }

    /// The recipe's `[[requires]]` checks, in order, at each place of their side (see
    /// `requires_failed`).
    #[expect(
        clippy::unused_self,
        reason = "a step of the worker's cell walk, called as one beside the steps that use it"
    )]
    pub(super) fn requires(
        &self,
        places: &mut dyn Places,
        cell: &LiveCell<'_, '_>,
    ) -> Result<(), CellFailure> {
        for step in &cell.job.recipe.requires {
            for at in places.at(step.on) {
                let command = bench::render(&step.command, cell.vars_at(at))?;
                let out = places::run(places, at, &command, requires_timeout(step))?;
                if let Some(failed) = requires_failed(&command, &out) {
                    return Err(failed);
                }
            }
        }
        Ok(())
    }

    /// Runs setup or teardown commands in order, each at the places of its side; the
    /// first failure stops them.
    #[expect(
        clippy::unused_self,
        reason = "a step of the worker's cell walk, called as one beside the steps that use it"
    )]
    pub(super) fn commands(
        &self,
        places: &mut dyn Places,
        cell: &LiveCell<'_, '_>,
        steps: &[Step],
        what: &str,
    ) -> Result<(), CellFailure> {
        for step in steps {
            for at in places.at(step.on) {
                let vars = cell.vars_at(at);
                let command = bench::render(&step.command, vars)?;
                let timeout = step.timeout.or(Some(Duration::from_secs(3600)));
                // A lost connection here is the place's loss, as in a run.
                let out = match input_file(step, vars)? {
                    Some(mut file) => places::run_input(places, at, &command, timeout, &mut file)?,
                    None => places::run(places, at, &command, timeout)?,
                };
                exited_well(what, &command, &out)?;
            }
        }
        Ok(())
    }
}

/// A step's command that exited non-zero is the step's failure (`what` names it).
pub(super) fn exited_well(
    what: impl Into<String>,
    command: &str,
    out: &Output,
) -> Result<(), CellFailure> {
    if out.exit.success() {
        Ok(())
    } else {
        Err(CellFailure::step_failed(
            what,
            command,
            &out.exit,
            &out.stderr_str(),
        ))
    }
}

/// How long one `[[requires]]` check may run unless its `timeout` says.
pub(super) fn requires_timeout(step: &Step) -> Option<Duration> {
    step.timeout.or(Some(Duration::from_secs(60)))
}

/// What a `[[requires]]` check's output says, `None` when it passed. One that exits
/// non-zero having printed a reason on stdout says the test cannot apply here (the
/// storage is no disk, or on tmpfs): the cell is skipped with the reason's first line.
/// One that exits non-zero without a word is a failure, like any other step.
pub(super) fn requires_failed(command: &str, out: &Output) -> Option<CellFailure> {
    if out.exit.success() {
        return None;
    }
    let stdout = bench::parse::visible(&out.stdout_str());
    let reason = stdout.lines().map(str::trim).find(|l| !l.is_empty());
    Some(match reason {
        Some(r) => CellFailure::NotApplicable {
            reason: bench::parse::escape_controls(
                &r.chars().take(REASON_CHARS).collect::<String>(),
            )
            .into_owned(),
        },
        None => CellFailure::step_failed("requires", command, &out.exit, &out.stderr_str()),
    })
}

/// `bind_address` and `controller_address` of a board reached at `host`, for a recipe
/// that reads them (`network::addresses`): (bind, controller); nothing is looked up,
/// and none returned, for one that reads neither.
pub(super) fn served_addresses(
    recipe: &crate::model::Recipe,
    host: &str,
) -> Result<Option<(String, String)>, CellFailure> {
    if !recipe.uses_addresses {
        return Ok(None);
    }
    let found =
        crate::network::addresses::find(host).map_err(|reason| CellFailure::Refused { reason })?;
    Ok(Some((found.bind.to_string(), found.controller.to_string())))
}

/// Where the cell's tests reach the board: its network's address when it runs over one,
/// else the board's SSH host.
pub(super) fn cell_host(board: &crate::model::Board, cell: &crate::plan::Cell) -> String {
    cell.address
        .network
        .as_ref()
        .and_then(|n| board.network(n))
        .map_or_else(|| board_host(board), |n| n.address.clone())
}

/// The controller file a step's `input` names, opened: the file a parameter names
/// (none when empty), or one of the cell's secrets; none when the step has no input.
pub(super) fn input_file(step: &Step, vars: &Vars) -> Result<Option<std::fs::File>, CellFailure> {
    let path = match &step.input {
        None => return Ok(None),
        Some(StepInput::Param(p)) => match vars.string(p) {
            Some(path) if !path.is_empty() => path,
            _ => return Ok(None),
        },
        Some(StepInput::Secret(name)) => {
            let dir = vars.string("secrets").unwrap_or_default();
            // No path in the cause: failure.json and reports hold none.
            return std::fs::File::open(format!("{dir}/{name}"))
                .map(Some)
                .map_err(|e| CellFailure::Refused {
                    reason: format!(
                        "cannot read the secret `{name}` for the step's stdin: {}; no earlier step made it",
                        e.kind()
                    ),
                });
        }
        // A password a scenario names: through no link, the user's, nobody else's to
        // change (`private_file`). The cause names the parameter, not the path.
        Some(StepInput::Private(p)) => {
            let path = vars.string(p).unwrap_or_default();
            return crate::private_file::open(&path).map(Some).map_err(|why| {
                CellFailure::Refused {
                    reason: format!(
                        "refusing the private file `{p}` names on the controller: {why}"
                    ),
                }
            });
        }
    };
    std::fs::File::open(&path)
        .map(Some)
        .map_err(|e| CellFailure::Refused {
            reason: format!("cannot read the input file `{path}` on the controller: {e}"),
        })
}

/// `Transport::run` with the file as the command's stdin.
pub(super) fn run_input(
    t: &mut dyn Transport,
    command: &str,
    timeout: Option<Duration>,
    file: &mut std::fs::File,
) -> Result<Output, TransportError> {
    let mut stdout = Capture::new(CAPTURE_LIMIT);
    let mut stderr = Capture::new(CAPTURE_LIMIT);
    let mut input = std::io::BufReader::new(file);
    let exit = t.exec_input(command, timeout, &mut input, &mut stdout, &mut stderr)?;
    let (stdout, stdout_dropped) = stdout.finish();
    let (stderr, stderr_dropped) = stderr.finish();
    Ok(Output {
        exit,
        stdout,
        stderr,
        stdout_dropped,
        stderr_dropped,
    })
}

/// What a board's walk recorded to put beside its cells: the board's facts, each
/// recipe's own, what each image's flash wrote, each storage's facts, what holds the
/// mounted storage's path.
pub(super) struct Recorded<'x> {
    pub(super) facts: &'x CellFacts,
    pub(super) tools: &'x BTreeMap<TestName, CellFacts>,
    pub(super) flashed: &'x BTreeMap<crate::model::ImageName, Flashed>,
    pub(super) storage_facts: &'x BTreeMap<crate::model::StorageName, StorageFact>,
    pub(super) mounted: &'x super::mount::MountState,
}

/// The facts recorded beside a cell: the board's, with the recipe's own merged in (and
/// which recipe text it was), the image's flash, the storage's facts, what holds its
/// path, and the link it runs over.
pub(super) fn cell_facts(job: &Job<'_>, at: &Recorded<'_>, link: Option<NetworkFact>) -> CellFacts {
    let mut facts = at.facts.clone();
    if let Some(extra) = at.tools.get(&job.recipe.name) {
        facts.merge(extra);
    }
    facts.recipe = Some(super::facts::recipe_fact(job.recipe));
    if let Some(written) = at.flashed.get(&job.cell.address.image) {
        facts.flashed = Some(written.clone());
    }
    if let Some(storage) = job.cell.address.storage.as_ref() {
        if let Some(s) = at.storage_facts.get(storage) {
            facts.storage = Some(s.clone());
        }
        // What holds the storage's path: the type `as-flashed` measures.
        if let Some(on) = &at.mounted.fact {
            facts.storage_filesystem = Some(on.clone());
        }
    }
    if let Some(link) = link {
        facts.network = Some(link);
    }
    facts
}
