//! A cell's runs, one copy for every walk over its places (`places.rs`): a group of
//! cells through cool-down, warm-ups and measured runs in turns until each cell's stop
//! rule is met; one run recorded at a time.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::places::{self, Place, Places};
use super::worker::{LiveCell, Worker};
use super::{Event, run_budget};
use crate::bench;
use crate::failure::CellFailure;
use crate::model::{RunOrder, Side};
use crate::plan::CellKey;
use crate::plan::state;
use crate::store::{self, CellWriter, RunKind, Sample};
use crate::telemetry::{Probe, SamplerOptions, TelemetryError, Thresholds};
use crate::transport::TransportError;

impl Worker<'_> {
    /// The `Measure` step: measured runs of the step's cells (`pending`, in its order)
    /// that are open, each cell's outcome recorded. A failure that stops the group (the
    /// walk's loss, an interrupt) is the step's, and so the fate of the cells it left
    /// without an outcome.
    pub(super) fn measure_step(
        &self,
        places: &mut dyn Places,
        cells: &mut super::walk::Cells<'_, '_, '_>,
        pending: &[CellKey],
        order: RunOrder,
    ) -> Result<(), CellFailure> {
        let mut open: Vec<(&CellKey, &mut LiveCell<'_, '_>)> = cells
            .live
            .iter_mut()
            .filter(|(k, _)| pending.contains(k))
            .collect();
        open.sort_by_key(|(k, _)| pending.iter().position(|p| p == *k));
        let keys: Vec<CellKey> = open.iter().map(|(k, _)| (*k).clone()).collect();
        let mut refs: Vec<&mut LiveCell<'_, '_>> = open.into_iter().map(|(_, c)| c).collect();
        let results = self.measure(places, &mut refs, order, cells.seq);
        let mut stopped = None;
        for (k, o) in keys.iter().zip(results) {
            match o {
                Some(Err(e)) if stops_group(&e) => {
                    stopped.get_or_insert(e.clone());
                    cells.outcomes.insert(k.clone(), Err(e));
                }
                Some(o) => {
                    cells.outcomes.insert(k.clone(), o);
                }
                None => {}
            }
        }
        match stopped {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Measured runs of a group of cells (in turns when interleaved, a group of one when
    /// blocked) until every cell's stop rule holds. Returns one outcome per cell: the
    /// runs it has, its failure, or `None` when another cell's failure (the walk's
    /// loss, an interrupt) stopped the group first.
    fn measure(
        &self,
        places: &mut dyn Places,
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
                match self.one_run(places, cell, RunKind::Measured, index, order, board_seq) {
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
        places: &mut dyn Places,
        cell: &mut LiveCell<'_, '_>,
        board_seq: &mut u64,
    ) -> Result<(), CellFailure> {
        let job = cell.job;
        let order = job.cell.method.order;
        self.warm_ups(job, |k| {
            self.one_run(places, cell, RunKind::Warmup, k, order, board_seq)
                .map(|_| ())
        })
    }

    /// The cool-down before a group's first run, on every watched place (each from its
    /// own idle temperature).
    pub(super) fn cool_down(
        &self,
        places: &mut dyn Places,
        job: &super::Job<'_>,
    ) -> Result<(), CellFailure> {
        for at in places.watched() {
            let idle = places.idle(at);
            let cooled = match places.session(at) {
                Ok((t, board)) => Worker {
                    board,
                    ..self.same()
                }
                .cooldown(t, Some(&job.cell.address), &job.cell.method, idle),
                Err(e) => Err(e),
            };
            cooled.map_err(|e| places.failed(at, e))?;
        }
        Ok(())
    }

    /// One warm-up or measured run: `before_run`, then the run at its place with a
    /// sampler on every watched place (measured runs only), then parse, flag, append.
    /// A watched place lost during the run voids it: nothing of it is stored.
    fn one_run(
        &self,
        places: &mut dyn Places,
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
        places.enter(job);
        cell.set_run(index);
        let _held = self.resources.acquire(&job.recipe.exclusive);
        // Untimed, before the run and its telemetry (dropping the page cache, say).
        for (i, before) in job.recipe.before_run.iter().enumerate() {
            for at in places.at(before.on) {
                let command = bench::render(&before.command, cell.vars_at(at))?;
                let timeout = before.timeout.or(Some(std::time::Duration::from_secs(600)));
                let out = places::run(places, at, &command, timeout)?;
                super::cell::exited_well(
                    format!("{kind:?} run {index}, before_run {}", i + 1),
                    &command,
                    &out,
                )?;
            }
        }
        let step = &job.recipe.run;
        let at = places.run_at(step.on);
        let dir = places.dir(at);
        let (command, composed) = {
            let members = places.at(Side::Members);
            let each = || {
                members
                    .iter()
                    .map(|m| (places.name(*m), cell.vars_at(*m).clone()))
                    .collect()
            };
            super::per_member::run_command(job, &dir, each, cell.vars_at(at))?
        };
        let seq = cell.writer.next_seq();
        // The samplers watch during measured runs; warm-ups are discarded anyway.
        // Without one (an odd board), the run goes on unjudged there.
        let mut probes: Vec<(Place, Probe)> = Vec::new();
        if kind == RunKind::Measured {
            let run_id = format!("{}-{seq}-{}", self.session, &job.cell.key.as_str()[..8]);
            for p in places.watched() {
                let started = match places.session(p) {
                    Ok((t, board)) => {
                        let options = Worker {
                            board,
                            ..self.same()
                        }
                        .sampler_options(step.timeout);
                        Probe::start_with(t, board, &run_id, &options)
                            .map_err(|e| telemetry_lost(places, p, e))
                    }
                    Err(e) => Err(Err(places.failed(p, e))),
                };
                match started {
                    Ok(probe) => probes.push((p, probe)),
                    Err(Ok(e)) => self.phase(
                        Some(&job.cell.address),
                        format!("no telemetry on {}: {e}", places.name(p)),
                    ),
                    // A place that is gone is no odd board: a run elsewhere must not go
                    // on measuring what nobody watches.
                    Err(Err(cause)) => {
                        abort(places, probes);
                        return Err(cause);
                    }
                }
            }
        }
        // A controller-side meter reads from its idle window to the run's end.
        let plug = match kind {
            RunKind::Measured => {
                self.start_plug(SamplerOptions::for_run(step.timeout).max_duration)
            }
            RunKind::Warmup => None,
        };
        if self.stop.load(Ordering::SeqCst) {
            abort(places, probes);
            drop(plug.map(crate::telemetry::plug::PlugMeter::finish));
            return Err(CellFailure::Interrupted);
        }
        let run_command = match probes.iter().find(|(p, _)| *p == at) {
            Some((_, probe)) => probe.wrap(&command),
            None => command.clone(),
        };
        let (out, times) = Times::of(|| places::run(places, at, &run_command, step.timeout));
        let plug = plug.map(crate::telemetry::plug::PlugMeter::finish);
        let stopped = self.stop.load(Ordering::SeqCst);
        if stopped || out.is_err() {
            abort(places, std::mem::take(&mut probes));
        }
        if stopped {
            // The run was cut short by the interrupt: record nothing of it.
            return Err(CellFailure::Interrupted);
        }
        let out = out?;
        // A controller-side run that failed while a watched place went away (its server
        // gone with it) failed because of that loss: that is its cause.
        if !out.exit.success() && at == Place::Controller {
            still_there(places)?;
        }
        let thresholds = Thresholds::from(&job.cell.method.validity);
        let mut flags: Vec<String> = Vec::new();
        let mut per: Vec<(Place, serde_json::Value)> = Vec::new();
        let mut gone = None;
        for (p, probe) in probes {
            // Once a place is gone the run is void: the others' samplers are stopped.
            if gone.is_some() {
                if let Ok((t, _)) = places.session(p) {
                    probe.abort(t);
                }
                continue;
            }
            let finished = match places.session(p) {
                Ok((t, _)) => probe
                    .finish(t, &thresholds)
                    .map_err(|e| telemetry_lost(places, p, e)),
                Err(e) => Err(Err(places.failed(p, e))),
            };
            match finished {
                Ok(done) => {
                    for f in done.flags {
                        if !flags.contains(&f) {
                            flags.push(f);
                        }
                    }
                    per.push((p, done.telemetry));
                }
                Err(Ok(e)) => self.phase(
                    Some(&job.cell.address),
                    format!("telemetry of {} lost: {e}", places.name(p)),
                ),
                Err(Err(cause)) => gone = Some(cause),
            }
        }
        if let Some(cause) = gone {
            return Err(cause);
        }
        // Only recipes that ask keep the series: a line per second would swell every
        // other sample for nothing.
        if !job.recipe.series {
            for (_, t) in &mut per {
                if let serde_json::Value::Object(o) = t {
                    o.remove("series");
                }
            }
        }
        let mut telemetry = places.telemetry(per);
        let run = RunDone::new((kind, index, order), seq, (command, composed), out, times);
        let mut metrics = self.read_metrics(&mut cell.writer, job.recipe, &run)?;
        if job.recipe.series {
            series_metrics(telemetry.as_ref(), &mut metrics);
        }
        super::power::attach(&mut telemetry, &mut metrics, plug);
        // The recipe's own flags (non-2xx responses, socket errors), after the
        // telemetry's; `plan::state::flags_of` keeps them when it re-judges the rest.
        for f in job.recipe.metric_flags(&metrics) {
            if !flags.contains(&f) {
                flags.push(f);
            }
        }
        let read = RunRead {
            metrics,
            flags,
            telemetry: telemetry.map(Into::into),
        };
        self.append_run(&mut cell.writer, job, run, read, board_seq)
    }
}

/// Stops samplers already started, at the places that are there.
fn abort(places: &mut dyn Places, probes: Vec<(Place, Probe)>) {
    for (p, probe) in probes {
        if let Ok((t, _)) = places.session(p) {
            probe.abort(t);
        }
    }
}

/// Whether every watched place still answers: the loss of the first that does not.
fn still_there(places: &mut dyn Places) -> Result<(), CellFailure> {
    for p in places.watched() {
        match places::run(places, p, "true", Some(std::time::Duration::from_secs(30))) {
            Err(lost) if lost.ends_board() => return Err(lost),
            Err(_) | Ok(_) => {}
        }
    }
    Ok(())
}

/// A sampler's failure at `at`: `Err` the place's loss when its connection is gone,
/// `Ok` the error the run goes on without (no telemetry from there).
fn telemetry_lost(
    places: &mut dyn Places,
    at: Place,
    e: TelemetryError,
) -> Result<TelemetryError, CellFailure> {
    match e {
        TelemetryError::Transport(t)
            if !matches!(
                t,
                TransportError::Timeout { .. } | TransportError::Other { .. }
            ) =>
        {
            Err(places.failed(at, CellFailure::from(t)))
        }
        other => Ok(other),
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

/// What a run's sample records beside the run itself: the metrics read from its output,
/// its flags, and the telemetry sampled while it ran.
pub(super) struct RunRead {
    pub(super) metrics: BTreeMap<String, f64>,
    pub(super) flags: Vec<String>,
    pub(super) telemetry: Option<crate::telemetry::StoredTelemetry>,
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
    pub(super) fn next_run(
        &self,
        cell: &LiveCell<'_, '_>,
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
    pub(super) fn append_run(
        &self,
        writer: &mut CellWriter,
        job: &super::Job<'_>,
        run: RunDone,
        read: RunRead,
        board_seq: &mut u64,
    ) -> Result<Sample, CellFailure> {
        let RunRead {
            metrics,
            flags,
            telemetry,
        } = read;
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
            .filter_map(|p| p.get(k).and_then(serde_json::Value::as_f64))
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

/// A failure that stops the rest of a group: the board is gone, or the user said stop.
pub(super) fn stops_group(e: &CellFailure) -> bool {
    e.ends_board() || matches!(e, CellFailure::Interrupted)
}
