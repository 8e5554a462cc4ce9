//! Runs on a board: a group of cells through cool-down, warm-ups and measured runs in
//! turns until each cell's stop rule is met, then teardown; one run recorded at a time.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::worker::{BoardState, CellError, LiveCell, Transports, Worker, first_line, tail_hint};
use super::{Event, Job, run_budget};
use crate::bench;
use crate::model::{RunOrder, Side};
use crate::plan::state;
use crate::store::{self, RunKind, Sample};
use crate::telemetry::{Probe, SamplerOptions, Thresholds};

impl Worker<'_> {
    /// Runs a group of cells that share one storage setup: setup of each, one cool-down,
    /// warm-ups, then measured runs (in turns when interleaved) until every cell's stop
    /// rule is met, and teardown of each whatever happened. Returns one outcome per cell.
    pub(super) fn run_group(
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

    /// The warm-up runs of one cell: executed, recorded as warm-up, discarded by stats.
    pub(super) fn warm_up(
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
    pub(super) fn one_run(
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
}
