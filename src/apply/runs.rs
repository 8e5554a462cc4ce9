//! Runs on a board: a group of cells through cool-down, warm-ups and measured runs in
//! turns until each cell's stop rule is met, then teardown; one run recorded at a time.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::worker::{BoardState, LiveCell, Transports, Worker};
use super::{Event, Job, run_budget};
use crate::bench;
use crate::failure::CellFailure;
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
    ) -> Vec<Result<usize, CellFailure>> {
        let order = board.order;
        let mut live: Vec<Option<LiveCell<'_, '_>>> = Vec::with_capacity(group.len());
        let mut outcomes: Vec<Option<Result<usize, CellFailure>>> = Vec::new();
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
        let fatal = |o: &Result<usize, CellFailure>| o.as_ref().is_err_and(stops_group);
        let mut stop_all: Option<CellFailure> = None;

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
                    let is_fatal = stops_group(&e);
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
                    outcomes[i] = Some(Err(CellFailure::TooManyFlaggedRuns {
                        taken,
                        valid: have,
                        min: cell.job.cell.method.runs.min,
                        budget,
                    }));
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
                        let is_fatal = stops_group(&e);
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
            .any(|o| o.as_ref().is_err_and(CellFailure::ends_board));
        for (i, slot) in live.iter_mut().enumerate() {
            let Some(cell) = slot else { continue };
            if board_gone {
                break;
            }
            self.phase(Some(&cell.job.cell.address), "teardown");
            if let Err(e) = self.stop_services(t, &mut cell.services)
                && matches!(outcomes[i], None | Some(Ok(_)))
            {
                outcomes[i] = Some(Err(e));
            }
            let _held = self.resources.acquire(&cell.job.recipe.exclusive);
            if let Err(e) = self.steps(t, &cell.job.recipe.teardown, &cell.vars, "teardown")
                && matches!(outcomes[i], None | Some(Ok(_)))
            {
                outcomes[i] = Some(Err(e));
            }
        }
        // A cell left without an outcome shares the fate that stopped the group: the
        // board lost by another cell's run is its loss too, not an interruption.
        let lost = match &stop_all {
            Some(e) if e.ends_board() => Some(e.clone()),
            _ => outcomes.iter().flatten().find_map(|o| match o {
                Err(e) if e.ends_board() => Some(e.clone()),
                _ => None,
            }),
        };
        outcomes
            .into_iter()
            .map(|o| match (o, &lost, &stop_all) {
                (Some(o), _, _) => o,
                (None, Some(e), _) | (None, None, Some(e)) => Err(e.clone()),
                (None, None, None) => Err(CellFailure::Interrupted),
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
    ) -> Result<(), CellFailure> {
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
    ) -> Result<Sample, CellFailure> {
        if self.stop.load(Ordering::SeqCst) {
            return Err(CellFailure::Interrupted);
        }
        let job = cell.job;
        let writer = &mut cell.writer;
        let vars = &mut cell.vars;
        vars.set("run", index);
        let _held = self.resources.acquire(&job.recipe.exclusive);
        let step = &job.recipe.run;
        let command = bench::render(&step.command, vars).map_err(CellFailure::from)?;
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
            return Err(CellFailure::Interrupted);
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
            return Err(CellFailure::step_failed(
                format!("{kind:?} run {index}"),
                &command,
                &out.exit,
                &stderr,
            )
            .with_log(rel));
        }
        let metrics = match bench::metrics(job.recipe, &stdout, &stderr) {
            Ok(m) => m,
            Err(e) => {
                let name = format!("failed-{}-{seq:04}", self.session);
                let rel = writer.write_log_named(&name, log.as_bytes())?;
                return Err(CellFailure::ParseFailed {
                    step: format!("{kind:?} run {index}"),
                    message: e.to_string(),
                    log: Some(rel),
                });
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

/// A failure that stops the rest of a group: the board is gone, or the user said stop.
fn stops_group(e: &CellFailure) -> bool {
    e.ends_board() || matches!(e, CellFailure::Interrupted)
}
