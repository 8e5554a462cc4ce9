//! A cluster cell's own steps: opened in the store with every member's facts, its
//! `[[requires]]`, setup and teardown commands and services on the slots of each one's
//! side (the controller, the control member, every member).

use serde_json::{Value, json};

use super::{ClusterWalk, ClusterWorker, Slot};
use crate::apply::cell::{requires_failed, requires_timeout};
use crate::apply::services::{service_name, spec_of};
use crate::apply::worker::LiveCell;
use crate::bench;
use crate::failure::CellFailure;
use crate::model::Step as RecipeStep;
use crate::plan::CellKey;

use super::steps::CLUSTER_STEP_TIMEOUT;

impl ClusterWorker<'_> {
    /// Opens a cluster cell in the store, with every member's facts.
    pub(super) fn open_cell<'j, 'c>(
        &self,
        w: &ClusterWalk<'j, 'c, '_>,
        key: &CellKey,
    ) -> Result<LiveCell<'j, 'c, Slot>, CellFailure> {
        let job = w.jobs[key];
        let cell = job.cell;
        let writer = self.w.store.begin(cell)?;
        let mut members = serde_json::Map::new();
        for m in &w.own.members {
            let mut f = m.facts.clone();
            if let (Some(obj), Some(Value::Object(extra))) =
                (f.as_object_mut(), m.tools.get(&job.recipe.name))
            {
                obj.extend(extra.clone());
            }
            // What a flash of this walk wrote to the member and proved.
            if let (Some(obj), Some(written)) = (
                f.as_object_mut(),
                m.flashing.flashed.get(&cell.address.image),
            ) {
                obj.insert("flashed".into(), written.clone());
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
            "recipe": crate::apply::facts::recipe_fact(job.recipe),
        });
        if let (Some(obj), Some(Value::Object(extra))) =
            (facts.as_object_mut(), w.tools.get(&job.recipe.name))
        {
            obj.extend(extra.clone());
        }
        writer.write_facts(&facts)?;
        let (vars, member_vars) = self.cell_vars(cell, job.recipe)?;
        Ok(LiveCell {
            job,
            writer,
            data: self.w.store.read(cell)?,
            vars,
            member_vars,
            services: Vec::new(),
            tmpfs: None,
        })
    }

    /// The vars of a cell at a slot.
    fn vars_at<'v>(cell: &'v LiveCell<'_, '_, Slot>, slot: Slot) -> &'v bench::Vars {
        match slot {
            Slot::Controller => &cell.vars,
            Slot::Member(i) => &cell.member_vars[i],
        }
    }

    /// The recipe's `[[requires]]` on each slot of its side (see `Worker::requires`).
    pub(super) fn requires(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        key: &CellKey,
    ) -> Result<(), CellFailure> {
        let job = w.jobs[key];
        for step in &job.recipe.requires {
            for slot in self.slots(step.on) {
                let command = bench::render(&step.command, Self::vars_at(&w.live[key], slot))?;
                let out = self.run_on(w, slot, &command, requires_timeout(step))?;
                if let Some(failed) = requires_failed(&command, &out) {
                    return Err(failed);
                }
            }
        }
        Ok(())
    }

    /// A cell's setup or teardown commands on the slots of each one's side. In cleanup
    /// (`skip_lost`), a lost member's slot is skipped.
    pub(super) fn commands(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        key: &CellKey,
        steps: &[RecipeStep],
        what: &str,
        skip_lost: bool,
    ) -> Result<(), CellFailure> {
        for step in steps {
            for slot in self.slots(step.on) {
                if let Slot::Member(i) = slot
                    && skip_lost
                    && w.own.members[i].lost.is_some()
                {
                    continue;
                }
                let vars = Self::vars_at(&w.live[key], slot);
                let command = bench::render(&step.command, vars)?;
                let timeout = step.timeout.or(Some(CLUSTER_STEP_TIMEOUT));
                // The step's stdin (`input`, `input_secret`), as on a board.
                let out = match crate::apply::cell::input_file(step, vars)? {
                    Some(mut file) => self.run_input_on(w, slot, &command, timeout, &mut file)?,
                    None => self.run_on(w, slot, &command, timeout)?,
                };
                crate::apply::cell::exited_well(what, &command, &out)?;
            }
        }
        Ok(())
    }

    /// Starts one of the cell's services on every slot of its side, each waited for
    /// by its ready check.
    pub(super) fn start_service(
        &self,
        w: &mut ClusterWalk<'_, '_, '_>,
        key: &CellKey,
        service: &str,
    ) -> Result<(), CellFailure> {
        let job = w.jobs[key];
        let spec = spec_of(job, service)?;
        self.w.phase(
            Some(&job.cell.address),
            format!("start service {}", spec.name),
        );
        let name = service_name(job, spec);
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
            self.w.wait_ready(spec, &vars, |check, each| {
                self.run_on(w, slot, check, Some(each))
            })?;
        }
        Ok(())
    }
}
