//! Runs on a board: a group of cells through cool-down, warm-ups and measured runs in
//! turns until each cell's stop rule is met, then teardown; one run recorded at a time.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::worker::{LiveCell, Transports, Worker};
use super::{Event, run_budget};
use crate::bench;
use crate::failure::CellFailure;
use crate::model::{RunOrder, Side};
use crate::plan::state;
use crate::store::{self, CellWriter, RunKind, Sample};
use crate::telemetry::{Probe, SamplerOptions, TelemetryError, Thresholds};
use crate::transport::TransportError;

impl Worker<'_> {
    /// Measured runs of a group of cells (in turns when interleaved, a group of one when
    /// blocked) until every cell's stop rule holds. Returns one outcome per cell: the
    /// runs it has, its failure, or `None` when another cell's failure (the board lost,
    /// an interrupt) stopped the group first.
    pub(super) fn measure(
        &self,
        t: &mut Transports<'_>,
        cells: &mut [&mut LiveCell<'_, '_>],
        order: RunOrder,
        board_seq: &mut u64,
    ) -> Vec<Option<Result<usize, CellFailure>>> {
        let mut outcomes: Vec<Option<Result<usize, CellFailure>>> = vec![None; cells.len()];
        'rounds: loop {
            let mut ran = false;
            for (i, cell) in cells.iter_mut().enumerate() {
                if outcomes[i].is_some() {
                    continue;
                }
                let index = match self.next_run(cell) {
                    Ok(index) => index,
                    Err(outcome) => {
                        outcomes[i] = Some(outcome);
                        continue;
                    }
                };
                match self.one_run(t, cell, RunKind::Measured, index, order, board_seq) {
                    Ok(sample) => {
                        cell.data.samples.push(sample);
                        ran = true;
                    }
                    Err(e) => {
                        let is_fatal = stops_group(&e);
                        outcomes[i] = Some(Err(e));
                        if is_fatal {
                            break 'rounds;
                        }
                    }
                }
            }
            if !ran {
                break;
            }
        }
        outcomes
    }

    /// The warm-up runs of one cell: executed, recorded as warm-up, discarded by stats.
    pub(super) fn warm_up(
        &self,
        t: &mut Transports<'_>,
        cell: &mut LiveCell<'_, '_>,
        order: RunOrder,
        board_seq: &mut u64,
    ) -> Result<(), CellFailure> {
        let job = cell.job;
        self.warm_ups(job, |k| {
            self.one_run(t, cell, RunKind::Warmup, k, order, board_seq)
                .map(|_| ())
        })
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
        t.peer = job.cell.peer.clone();
        let writer = &mut cell.writer;
        let vars = &mut cell.vars;
        vars.set("run", index);
        let _held = self.resources.acquire(&job.recipe.exclusive);
        // Untimed, before the run and its telemetry (dropping the page cache, say).
        for (i, before) in job.recipe.before_run.iter().enumerate() {
            let command = bench::render(&before.command, vars).map_err(CellFailure::from)?;
            let timeout = before.timeout.or(Some(std::time::Duration::from_secs(600)));
            let out = t.side(before.on).run(&command, timeout)?;
            super::cell::exited_well(
                format!("{kind:?} run {index}, before_run {}", i + 1),
                &command,
                &out,
            )?;
        }
        let step = &job.recipe.run;
        // A board is the only member of itself: a per-member run runs its one command.
        let each = || vec![(self.name().to_string(), vars.clone())];
        let dir = self.side_dir(t, step.on);
        let (command, composed) = super::per_member::run_command(job, &dir, each, vars)?;
        let seq = writer.next_seq();
        // The sampler watches the board during measured runs; warm-ups are discarded
        // anyway. Without it (an odd board), the run goes on unjudged.
        let probe = match kind {
            RunKind::Measured => match Probe::start_with(
                t.board,
                self.board,
                &format!("{}-{seq}", self.session),
                &self.sampler_options(step.timeout),
            ) {
                Ok(p) => Some(p),
                // A board that is gone is no odd board: a run on the controller must
                // not go on measuring a server nobody watches.
                Err(e) => {
                    let e = board_gone(e)?;
                    self.phase(Some(&job.cell.address), format!("no telemetry: {e}"));
                    None
                }
            },
            RunKind::Warmup => None,
        };
        // A controller-side meter reads from its idle window to the run's end.
        let plug = match kind {
            RunKind::Measured => {
                self.start_plug(SamplerOptions::for_run(step.timeout).max_duration)
            }
            RunKind::Warmup => None,
        };
        if self.stop.load(Ordering::SeqCst) {
            if let Some(p) = probe {
                p.abort(t.board);
            }
            drop(plug.map(|p| p.finish()));
            return Err(CellFailure::Interrupted);
        }
        let run_command = match (&probe, step.on) {
            (Some(p), Side::Board) => p.wrap(&command),
            _ => command.clone(),
        };
        let (out, times) = Times::of(|| t.side(step.on).run(&run_command, step.timeout));
        let plug = plug.map(|p| p.finish());
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
        // A controller-side run that failed while the board went away (its server
        // gone with it) failed because the board is lost: that is its cause.
        if !out.exit.success() && step.on == Side::Controller {
            self.board_still_there(t)?;
        }
        let (flags, telemetry) = match probe {
            None => (Vec::new(), None),
            Some(p) => match p.finish(t.board, &Thresholds::from(&job.cell.method.validity)) {
                Ok(done) => (done.flags, Some(done.telemetry)),
                // The board went away during the run: nothing of it is kept.
                Err(e) => {
                    let e = board_gone(e)?;
                    self.phase(Some(&job.cell.address), format!("telemetry lost: {e}"));
                    (Vec::new(), None)
                }
            },
        };
        let run = RunDone::new((kind, index, order), seq, (command, composed), out, times);
        let mut metrics = self.read_metrics(writer, job.recipe, &run)?;
        let mut telemetry = telemetry;
        if job.recipe.series {
            series_metrics(telemetry.as_ref(), &mut metrics);
        } else {
            // Only recipes that ask keep the series: a line per second would swell
            // every other sample for nothing.
            if let Some(serde_json::Value::Object(o)) = telemetry.as_mut() {
                o.remove("series");
            }
        }
        super::power::attach(&mut telemetry, &mut metrics, plug);
        // The recipe's own flags (non-2xx responses, socket errors), after the
        // telemetry's; `plan::state::flags_of` keeps them when it re-judges the rest.
        let mut flags = flags;
        for f in job.recipe.metric_flags(&metrics) {
            if !flags.contains(&f) {
                flags.push(f);
            }
        }
        let telemetry = telemetry.map(Into::into);
        self.append_run(writer, job, run, metrics, flags, telemetry, board_seq)
    }
}

/// What a warm-up or measured run left, before its metrics are read: board and
/// cluster walks record their runs alike (`Worker::read_metrics`, `append_run`).
pub(super) struct RunDone {
    pub(super) kind: RunKind,
    pub(super) index: u32,
    pub(super) order: RunOrder,
    /// The sample's number in its cell.
    pub(super) seq: u32,
    pub(super) command: String,
    pub(super) composed: Option<super::per_member::Composed>,
    pub(super) out: crate::transport::Output,
    pub(super) times: Times,
}

/// When a run started and ended (the store's clock) and how long it took.
pub(super) struct Times {
    pub(super) started: f64,
    pub(super) ended: f64,
    pub(super) seconds: f64,
}

impl Times {
    /// `run`, timed.
    pub(super) fn of<T>(run: impl FnOnce() -> T) -> (T, Times) {
        let started = store::now();
        let t0 = Instant::now();
        let out = run();
        let seconds = t0.elapsed().as_secs_f64();
        let ended = store::now();
        (
            out,
            Times {
                started,
                ended,
                seconds,
            },
        )
    }
}

impl RunDone {
    /// A run (`kind`, `index`, `order`) that ran `command` (`composed` for a
    /// per-member run) as sample `seq` of its cell.
    pub(super) fn new(
        (kind, index, order): (RunKind, u32, RunOrder),
        seq: u32,
        (command, composed): (String, Option<super::per_member::Composed>),
        out: crate::transport::Output,
        times: Times,
    ) -> RunDone {
        RunDone {
            kind,
            index,
            order,
            seq,
            command,
            composed,
            out,
            times,
        }
    }

    /// The run's log, as the store keeps it beside the sample.
    fn log(&self) -> String {
        format!(
            "$ {}\n# {:?} run {}, {}, {:.3} s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.command,
            self.kind,
            self.index,
            self.out.exit,
            self.times.seconds,
            self.out.stdout_str(),
            self.out.stderr_str()
        )
    }

    /// How a failure names the run.
    fn what(&self) -> String {
        format!("{:?} run {}", self.kind, self.index)
    }
}

impl Worker<'_> {
    /// The cell's next measured run's index, or its outcome: its runs once its stop
    /// rule holds, its failure once this apply took its budget of runs (`run_budget`).
    pub(super) fn next_run<P>(
        &self,
        cell: &LiveCell<'_, '_, P>,
    ) -> Result<u32, Result<usize, CellFailure>> {
        let method = &cell.job.cell.method;
        let have = state::counted(method, &cell.data).count();
        let primaries = state::primary_values(method, &cell.job.primary, &cell.data);
        if state::stop_rule(method, &primaries, have).is_some() {
            return Err(Ok(have));
        }
        // Runs the method leaves out (flagged ones, with exclude_flagged) do not count
        // towards `runs.max`, so without this bound a board that is always throttled
        // or loaded would be measured forever.
        let taken = cell
            .data
            .samples
            .iter()
            .filter(|s| s.kind == RunKind::Measured && s.session == self.session)
            .count();
        let budget = run_budget(method);
        if taken >= budget {
            return Err(Err(CellFailure::TooManyFlaggedRuns {
                taken,
                valid: have,
                min: method.runs.min,
                budget,
            }));
        }
        let want = method.runs.min.max(have as u32 + 1);
        self.phase(
            Some(&cell.job.cell.address),
            format!("run {}/{}", have + 1, want),
        );
        Ok(have as u32 + 1)
    }

    /// A cell's warm-up runs (`run` takes warm-up `k`): executed, recorded as warm-up,
    /// discarded by stats.
    pub(super) fn warm_ups(
        &self,
        job: &super::Job<'_>,
        mut run: impl FnMut(u32) -> Result<(), CellFailure>,
    ) -> Result<(), CellFailure> {
        let warmup = &job.cell.method.warmup;
        let started = Instant::now();
        let mut k = 0u32;
        while k < warmup.runs || warmup.duration.is_some_and(|d| started.elapsed() < d) {
            k += 1;
            self.phase(
                Some(&job.cell.address),
                format!("warm-up {k}/{}", warmup.runs.max(k)),
            );
            run(k)?;
        }
        Ok(())
    }

    /// A run's metrics as its recipe reads them. A run that cannot be read fails, its
    /// log kept as `failed-<session>-<seq>`.
    pub(super) fn read_metrics(
        &self,
        writer: &mut CellWriter,
        recipe: &crate::model::Recipe,
        run: &RunDone,
    ) -> Result<BTreeMap<String, f64>, CellFailure> {
        let read = super::per_member::read_run(
            recipe,
            run.composed.as_ref(),
            &run.what(),
            &run.command,
            &run.out.exit,
            &run.out.stdout_str(),
            &run.out.stderr_str(),
        );
        read.or_else(|e| {
            let name = format!("failed-{}-{:04}", self.session, run.seq);
            let rel = writer.write_log_named(&name, run.log().as_bytes())?;
            Err(e.with_log(rel))
        })
    }

    /// Appends a read run to its cell: its log and its sample; one more run of the
    /// walk (`board_seq`), and said.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn append_run(
        &self,
        writer: &mut CellWriter,
        job: &super::Job<'_>,
        run: RunDone,
        metrics: BTreeMap<String, f64>,
        flags: Vec<String>,
        telemetry: Option<crate::telemetry::StoredTelemetry>,
        board_seq: &mut u64,
    ) -> Result<Sample, CellFailure> {
        let rel = writer.write_log(run.seq, run.log().as_bytes())?;
        let sample = Sample {
            format: store::FORMAT,
            seq: run.seq,
            kind: run.kind,
            session: self.session.to_string(),
            started: run.times.started,
            ended: run.times.ended,
            metrics,
            flags,
            telemetry,
            command: run.command,
            log: rel,
            order: Some(run.order),
            board_seq: Some(*board_seq + 1),
        };
        writer.append(&sample)?;
        *board_seq += 1;
        self.progress.event(Event::Run {
            board: self.name(),
            cell: &job.cell.address,
            kind: run.kind,
            metrics: &sample.metrics,
            seconds: run.times.seconds,
        });
        Ok(sample)
    }
}

/// A series recipe's `temp_max_c` and `freq_mean_mhz`, from the run's series (every
/// tick when the run had fewer than `SERIES_MAX`, else the evenly picked ones).
fn series_metrics(
    telemetry: Option<&serde_json::Value>,
    metrics: &mut std::collections::BTreeMap<String, f64>,
) {
    let Some(series) = telemetry
        .and_then(|t| t.get("series"))
        .and_then(|s| s.as_array())
    else {
        return;
    };
    let values = |k: &str| -> Vec<f64> {
        series
            .iter()
            .filter_map(|p| p.get(k).and_then(|v| v.as_f64()))
            .filter(|v| v.is_finite())
            .collect()
    };
    let temps = values("temp_c");
    if !temps.is_empty() {
        let max = temps.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        metrics.insert(crate::model::TEMP_MAX_C.into(), max);
    }
    let freqs = values("freq_mhz");
    if !freqs.is_empty() {
        let mean = freqs.iter().sum::<f64>() / freqs.len() as f64;
        metrics.insert(crate::model::FREQ_MEAN_MHZ.into(), mean);
    }
}

impl Worker<'_> {
    /// Whether the board still answers: its loss when it does not.
    fn board_still_there(&self, t: &mut Transports<'_>) -> Result<(), CellFailure> {
        match t
            .board
            .run("true", Some(std::time::Duration::from_secs(30)))
        {
            Err(e) => match CellFailure::from(e) {
                lost if lost.ends_board() => Err(lost),
                _ => Ok(()),
            },
            Ok(_) => Ok(()),
        }
    }
}

/// The board's loss when telemetry failed because the board is gone; the error itself
/// (the run goes on without telemetry) otherwise.
fn board_gone(e: TelemetryError) -> Result<TelemetryError, CellFailure> {
    match e {
        TelemetryError::Transport(t)
            if !matches!(
                t,
                TransportError::Timeout { .. } | TransportError::Other { .. }
            ) =>
        {
            Err(CellFailure::from(t))
        }
        other => Ok(other),
    }
}

/// A failure that stops the rest of a group: the board is gone, or the user said stop.
pub(super) fn stops_group(e: &CellFailure) -> bool {
    e.ends_board() || matches!(e, CellFailure::Interrupted)
}
