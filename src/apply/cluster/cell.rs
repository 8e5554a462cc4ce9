//! A cluster cell's own steps: opened in the store with every member's facts, its
//! `[[requires]]`, setup and teardown commands and services on the slots of each one's
//! side (the controller, the control member, every member).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Cell, ClusterWorker, Slot, Walk};
use crate::bench;
use crate::failure::{CellFailure, first_line, stderr_tail};
use crate::model::Step as RecipeStep;
use crate::plan::CellKey;

use super::steps::CLUSTER_STEP_TIMEOUT;

impl ClusterWorker<'_> {
    /// Opens a cluster cell in the store, with every member's facts.
    pub(super) fn open_cell<'j, 'c>(
        &self,
        w: &Walk<'j, 'c, '_>,
        key: &CellKey,
    ) -> Result<Cell<'j, 'c>, CellFailure> {
        let job = w.jobs[key];
        let cell = job.cell;
        let writer = self.w.store.begin(cell)?;
        let mut members = serde_json::Map::new();
        for m in &w.members {
            let mut f = m.facts.clone();
            if let (Some(obj), Some(Value::Object(extra))) =
                (f.as_object_mut(), m.tools.get(&job.recipe.name))
            {
                obj.extend(extra.clone());
            }
            members.insert(m.board.name.to_string(), f);
        }
        let mut facts = json!({
            "cluster": {
                "name": self.cluster.name,
                "members": self.cluster.members,
                "control": self.cluster.control,
            },
            "members": members,
            "benchpipe": env!("CARGO_PKG_VERSION"),
        });
        if let (Some(obj), Some(Value::Object(extra))) =
            (facts.as_object_mut(), w.tools.get(&job.recipe.name))
        {
            obj.extend(extra.clone());
        }
        writer.write_facts(&facts)?;
        let (vars, member_vars) = self.cell_vars(cell);
        Ok(Cell {
            job,
            writer,
            data: self.w.store.read(cell)?,
            vars,
            member_vars,
            services: Vec::new(),
        })
    }

    /// The vars of a cell at a slot.
    fn vars_at<'v>(cell: &'v Cell<'_, '_>, slot: Slot) -> &'v bench::Vars {
        match slot {
            Slot::Controller => &cell.vars,
            Slot::Member(i) => &cell.member_vars[i],
        }
    }

    /// The recipe's `[[requires]]` on each slot of its side (see `Worker::requires`).
    pub(super) fn requires(
        &self,
        w: &mut Walk<'_, '_, '_>,
        key: &CellKey,
    ) -> Result<(), CellFailure> {
        let job = w.jobs[key];
        for step in &job.recipe.requires {
            for slot in self.slots(step.on) {
                let command = bench::render(&step.command, Self::vars_at(&w.live[key], slot))?;
                let out = self.run_on(
                    w,
                    slot,
                    &command,
                    step.timeout.or(Some(Duration::from_secs(60))),
                )?;
                if out.exit.success() {
                    continue;
                }
                let stdout = bench::parse::visible(&out.stdout_str());
                return Err(
                    match stdout.lines().map(str::trim).find(|l| !l.is_empty()) {
                        Some(r) => CellFailure::NotApplicable {
                            reason: bench::parse::escape_controls(
                                &r.chars().take(240).collect::<String>(),
                            )
                            .into_owned(),
                        },
                        None => CellFailure::step_failed(
                            "requires",
                            &command,
                            &out.exit,
                            &out.stderr_str(),
                        ),
                    },
                );
            }
        }
        Ok(())
    }

    /// A cell's setup or teardown commands on the slots of each one's side. In cleanup
    /// (`skip_lost`), a lost member's slot is skipped.
    pub(super) fn commands(
        &self,
        w: &mut Walk<'_, '_, '_>,
        key: &CellKey,
        steps: &[RecipeStep],
        what: &str,
        skip_lost: bool,
    ) -> Result<(), CellFailure> {
        for step in steps {
            for slot in self.slots(step.on) {
                if let Slot::Member(i) = slot
                    && skip_lost
                    && w.members[i].lost.is_some()
                {
                    continue;
                }
                let command = bench::render(&step.command, Self::vars_at(&w.live[key], slot))?;
                let timeout = step.timeout.or(Some(CLUSTER_STEP_TIMEOUT));
                let out = self.run_on(w, slot, &command, timeout)?;
                if !out.exit.success() {
                    return Err(CellFailure::step_failed(
                        what,
                        &command,
                        &out.exit,
                        &out.stderr_str(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Starts one of the cell's services on every slot of its side, each waited for
    /// by its ready check.
    pub(super) fn start_service(
        &self,
        w: &mut Walk<'_, '_, '_>,
        key: &CellKey,
        service: &str,
    ) -> Result<(), CellFailure> {
        let job = w.jobs[key];
        let Some(spec) = job.recipe.services.iter().find(|s| s.name == service) else {
            return Err(CellFailure::Refused {
                reason: format!("{} has no service {service}", job.recipe.name),
            });
        };
        self.w.phase(
            Some(&job.cell.address),
            format!("start service {}", spec.name),
        );
        let name = format!("{}-{}", &job.cell.key.as_str()[..8], spec.name);
        for slot in self.slots(spec.on) {
            let vars = Self::vars_at(&w.live[key], slot).clone();
            let command = bench::render(&spec.command, &vars)?;
            let dir = match slot {
                Slot::Controller => self.controller_dir(),
                Slot::Member(i) => self.members[i].workdir.clone(),
            };
            let started = match slot {
                Slot::Controller => w.controller.start_service(&dir, &name, &command),
                Slot::Member(i) => Self::session(w, i)?.start_service(&dir, &name, &command),
            };
            let started = started.map_err(|e| match slot {
                Slot::Member(i) => self.on_member(w, i, e.into()),
                Slot::Controller => e.into(),
            });
            let started = match started {
                Ok(s) => s,
                Err(e) if e.ends_board() => return Err(e),
                Err(e) => {
                    return Err(CellFailure::Service {
                        service: spec.name.clone(),
                        message: e.to_string(),
                    });
                }
            };
            if let Some(c) = w.live.get_mut(key) {
                c.services.push((slot, spec.name.clone(), started));
            }
            let Some(ready) = &spec.ready else { continue };
            let check = bench::render(ready, &vars)?;
            let each = spec
                .ready_timeout
                .clamp(Duration::from_secs(1), Duration::from_secs(10));
            let t0 = Instant::now();
            loop {
                let out = self.run_on(w, slot, &check, Some(each))?;
                if out.exit.success() {
                    break;
                }
                if t0.elapsed() > spec.ready_timeout {
                    return Err(CellFailure::NotReady {
                        service: spec.name.clone(),
                        after_secs: spec.ready_timeout.as_secs_f64(),
                        command: first_line(&check),
                        exit: out.exit.clone(),
                        stderr_tail: stderr_tail(&out.stderr_str()),
                    });
                }
                self.w.sleep(Duration::from_millis(200))?;
            }
        }
        Ok(())
    }
}
