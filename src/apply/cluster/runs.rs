//! A cluster cell's warm-up and measured runs: the run on the controller or the control
//! member (once per member, all at once, for a `per_member` run), with the sampler on
//! every member during measured runs. A member lost during a run voids the run: its
//! numbers are not stored, and the cluster's cells fail with the member's loss.

use std::sync::atomic::Ordering;

use serde_json::{Map, Value};

use super::{ClusterWalk, ClusterWorker, Slot};
use crate::failure::CellFailure;
use crate::model::{RunOrder, Side};
use crate::plan::CellKey;
use crate::store::RunKind;
use crate::telemetry::{Probe, SamplerOptions, TelemetryError, Thresholds};

use super::super::runs::{RunDone, Times, stops_group};

impl ClusterWorker<'_> {
    pub(super) fn warm_up(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        key: &CellKey,
    ) -> Result<(), CellFailure> {
        let job = w.jobs[key];
        let order = job.cell.method.order;
        self.w
            .warm_ups(job, |k| self.one_run(w, key, RunKind::Warmup, k, order))
    }

    /// Measured runs of the group's cells (in turns when there are several) until each
    /// cell's stop rule holds, bounded as on a board (`run_budget`).
    pub(super) fn measure(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        pending: &[CellKey],
    ) -> Result<(), CellFailure> {
        let order = if pending.len() > 1 {
            RunOrder::Interleaved
        } else {
            w.jobs[&pending[0]].cell.method.order
        };
        let mut open: Vec<CellKey> = pending
            .iter()
            .filter(|k| w.live.contains_key(*k))
            .cloned()
            .collect();
        while !open.is_empty() {
            let mut next = Vec::new();
            for key in open {
                let index = match self.w.next_run(&w.live[&key]) {
                    Ok(index) => index,
                    Err(outcome) => {
                        w.outcomes.insert(key, outcome);
                        continue;
                    }
                };
                match self.one_run(w, &key, RunKind::Measured, index, order) {
                    Ok(()) => next.push(key),
                    Err(e) if stops_group(&e) => return Err(e),
                    Err(e) => {
                        w.outcomes.insert(key, Err(e));
                    }
                }
            }
            open = next;
        }
        Ok(())
    }

    /// One run of a cluster cell: execute, log, parse, append.
    fn one_run(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        key: &CellKey,
        kind: RunKind,
        index: u32,
        order: RunOrder,
    ) -> Result<(), CellFailure> {
        if self.w.stop.load(Ordering::SeqCst) {
            return Err(CellFailure::Interrupted);
        }
        let job = w.jobs[key];
        let step = &job.recipe.run;
        let slot = match step.on {
            Side::Controller => Slot::Controller,
            _ => Slot::Member(self.control),
        };
        let _held = self.w.resources.acquire(&job.recipe.exclusive);
        let (command, composed) = {
            let cell = w.live.get_mut(key).ok_or(CellFailure::Interrupted)?;
            cell.vars.set("run", index);
            for v in &mut cell.member_vars {
                v.set("run", index);
            }
            let dir = match slot {
                Slot::Controller => self.controller_dir(),
                Slot::Member(i) => self.members[i].workdir.clone(),
            };
            let each = || {
                let members = self.members.iter().zip(&cell.member_vars);
                members
                    .map(|(m, v)| (m.name.to_string(), v.clone()))
                    .collect()
            };
            let vars = match slot {
                Slot::Controller => &cell.vars,
                Slot::Member(i) => &cell.member_vars[i],
            };
            super::super::per_member::run_command(job, &dir, each, vars)?
        };
        let seq = w.live[key].writer.next_seq();
        // The sampler on every member during measured runs.
        let mut probes: Vec<Option<Probe>> = Vec::new();
        if kind == RunKind::Measured {
            let options = SamplerOptions::for_run(step.timeout);
            for i in 0..self.members.len() {
                let run_id = format!("{}-{seq}-{}", self.w.session, &job.cell.key.as_str()[..8]);
                let started = Self::session(w, i).map_err(Some).and_then(|t| {
                    Probe::start_with(t, self.members[i], &run_id, &options).map_err(|e| {
                        self.w.phase(
                            Some(&job.cell.address),
                            format!("no telemetry on {}: {e}", self.members[i].name),
                        );
                        lost_in(&e)
                    })
                });
                match started {
                    Ok(p) => probes.push(Some(p)),
                    Err(Some(cause)) => {
                        self.abort_probes(w, probes);
                        return Err(self.on_member(w, i, cause));
                    }
                    Err(None) => probes.push(None),
                }
            }
        }
        if self.w.stop.load(Ordering::SeqCst) {
            self.abort_probes(w, probes);
            return Err(CellFailure::Interrupted);
        }
        let run_command = match (slot, probes.get(self.control).and_then(Option::as_ref)) {
            (Slot::Member(_), Some(p)) => p.wrap(&command),
            _ => command.clone(),
        };
        let (out, times) = Times::of(|| self.run_on(w, slot, &run_command, step.timeout));
        let stopped = self.w.stop.load(Ordering::SeqCst);
        let out = match out {
            Ok(out) if !stopped => out,
            // Cut short by an interrupt, or failed: nothing of it is recorded.
            other => {
                self.abort_probes(w, probes);
                return Err(match other {
                    Err(e) if !stopped => e,
                    _ => CellFailure::Interrupted,
                });
            }
        };
        // Every member's sampler, read back: a member gone now voids the run.
        let thresholds = Thresholds::from(&job.cell.method.validity);
        let mut flags: Vec<String> = Vec::new();
        let mut telemetry = Map::new();
        let mut gone = None;
        for (i, p) in probes.into_iter().enumerate() {
            let Some(p) = p else { continue };
            // Once a member is gone the run is void: the others' samplers are stopped.
            if gone.is_some() {
                if let Ok(t) = Self::session(w, i) {
                    p.abort(t);
                }
                continue;
            }
            let finished = Self::session(w, i)
                .map_err(Some)
                .and_then(|t| p.finish(t, &thresholds).map_err(|e| lost_in(&e)));
            match finished {
                Ok(done) => {
                    flags.extend(done.flags);
                    telemetry.insert(self.members[i].name.to_string(), done.telemetry);
                }
                Err(Some(cause)) => gone = Some(self.on_member(w, i, cause)),
                Err(None) => self.w.phase(
                    Some(&job.cell.address),
                    format!("telemetry of {} lost", self.members[i].name),
                ),
            }
        }
        if let Some(cause) = gone {
            return Err(cause);
        }
        flags.sort();
        flags.dedup();
        let run = RunDone::new((kind, index, order), seq, (command, composed), out, times);
        let cell = w.live.get_mut(key).ok_or(CellFailure::Interrupted)?;
        let metrics = self.w.read_metrics(&mut cell.writer, job.recipe, &run)?;
        let telemetry = (kind == RunKind::Measured && !telemetry.is_empty())
            .then(|| serde_json::json!({ "members": Value::Object(telemetry) }).into());
        let sample = self.w.append_run(
            &mut cell.writer,
            job,
            run,
            metrics,
            flags,
            telemetry,
            &mut w.seq,
        )?;
        cell.data.samples.push(sample);
        Ok(())
    }

    /// Stops samplers already started, on the members that are there.
    fn abort_probes(&self, w: &mut ClusterWalk<'_, '_, '_>, probes: Vec<Option<Probe>>) {
        for (i, p) in probes.into_iter().enumerate() {
            if let (Some(p), Ok(t)) = (p, Self::session(w, i)) {
                p.abort(t);
            }
        }
    }
}

/// A sampler's failure that means the member's connection is gone, as the cluster's
/// failure; `None` for one the run survives (no telemetry from that member).
fn lost_in(e: &TelemetryError) -> Option<CellFailure> {
    match e {
        TelemetryError::Transport(t) if super::super::peer::ends_connection(t) => {
            Some(CellFailure::BoardLost {
                cause: t.to_string(),
            })
        }
        _ => None,
    }
}
