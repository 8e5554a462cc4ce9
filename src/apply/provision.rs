//! Provisioning: commands the recipes need, installed with apt-get where missing, and
//! the work and storage directories.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::Job;
use super::worker::Worker;
use crate::failure::CellFailure;
use crate::model::{Needs, Recipe, Side, TestName};
use crate::plan::CellKey;
use crate::transport::{Transport, TransportError, quote};

impl Worker<'_> {
    /// Makes the board ready for its cells: tools installed, work and storage dirs there.
    /// The cells of a test that cannot run here (a tool no package provides is not
    /// installed) get their outcome, a skip with the reason; the others go on.
    pub(super) fn prepare(
        &self,
        board: &mut dyn Transport,
        controller: &mut dyn Transport,
        jobs: &[&Job<'_>],
        outcomes: &mut BTreeMap<CellKey, Result<usize, CellFailure>>,
    ) -> Result<(), CellFailure> {
        // Each side installs and checks only what the recipes say that side needs.
        let recipes: BTreeMap<_, &Recipe> =
            jobs.iter().map(|j| (&j.recipe.name, j.recipe)).collect();
        let mut unavailable =
            provision(board, self.name(), Side::Board, recipes.values().copied())?;
        unavailable.extend(provision(
            controller,
            "the controller",
            Side::Controller,
            recipes
                .values()
                .copied()
                .filter(|r| !unavailable.contains_key(&r.name)),
        )?);
        let mut dirs = vec![self.board.workdir.clone()];
        for j in jobs {
            if let Some(st) = &j.cell.address.storage
                && let Some(st) = self.board.storage(st)
            {
                dirs.push(st.path.clone());
            }
        }
        dirs.sort();
        dirs.dedup();
        let cmd = format!("mkdir -p -- {}", quote::join(&dirs));
        let out = board.run(&cmd, Some(Duration::from_secs(60)))?;
        if !out.exit.success() {
            return Err(CellFailure::step_failed(
                "create work directories",
                &cmd,
                &out.exit,
                &out.stderr_str(),
            ));
        }
        for j in jobs {
            if let Some(reason) = unavailable.get(&j.recipe.name) {
                let reason = reason.clone();
                outcomes.insert(
                    j.cell.key.clone(),
                    Err(CellFailure::NotApplicable { reason }),
                );
            }
        }
        Ok(())
    }
}

/// Checks that every command the recipes need on `on` exists there, installing the
/// missing ones' packages with apt-get when running as root there. A recipe that
/// names no package for a command it lacks (iozone, which Debian does not package)
/// cannot run there: it is returned with the reason, and the others go on.
pub(super) fn provision<'r>(
    t: &mut dyn Transport,
    side: &str,
    on: Side,
    recipes: impl Iterator<Item = &'r Recipe>,
) -> Result<BTreeMap<TestName, String>, CellFailure> {
    let needs: Vec<(&TestName, &Needs)> = recipes
        .filter_map(|r| r.needs.get(&on).map(|n| (&r.name, n)))
        .collect();
    let all: BTreeSet<&str> = needs
        .iter()
        .flat_map(|(_, n)| n.commands.iter().map(String::as_str))
        .collect();
    let mut unavailable = BTreeMap::new();
    if all.is_empty() {
        return Ok(unavailable);
    }
    let missing = missing_commands(t, &all)?;
    for (name, n) in &needs {
        let lacking: Vec<&str> = n
            .commands
            .iter()
            .filter(|c| missing.contains(c))
            .map(String::as_str)
            .collect();
        if !lacking.is_empty() && n.apt.is_empty() {
            let verb = if lacking.len() == 1 { "is" } else { "are" };
            let reason = format!("{} {verb} not installed on {side}", lacking.join(", "));
            unavailable.insert((*name).clone(), reason);
        }
    }
    let needs: Vec<&Needs> = needs
        .iter()
        .filter(|(name, _)| !unavailable.contains_key(*name))
        .map(|(_, n)| *n)
        .collect();
    let commands: BTreeSet<&str> = needs
        .iter()
        .flat_map(|n| n.commands.iter().map(String::as_str))
        .collect();
    let missing: Vec<String> = missing
        .into_iter()
        .filter(|c| commands.contains(c.as_str()))
        .collect();
    if missing.is_empty() {
        return Ok(unavailable);
    }
    let packages: BTreeSet<&str> = needs
        .iter()
        .filter(|n| n.commands.iter().any(|c| missing.contains(c)))
        .flat_map(|n| n.apt.iter().map(String::as_str))
        .collect();
    let packages: Vec<&str> = packages.into_iter().collect();
    let is_root = t
        .run("id -u", Some(Duration::from_secs(30)))
        .map(|o| o.stdout_str().trim() == "0")
        .unwrap_or(false);
    let lacking = |commands: Vec<String>, installed| CellFailure::MissingCommands {
        side: side.to_string(),
        commands,
        packages: packages.iter().map(|p| p.to_string()).collect(),
        installed,
    };
    // With no package to install, apt-get could not help.
    if !is_root || packages.is_empty() {
        return Err(lacking(missing, false));
    }
    // Boards that share one system (the lab) provision at the same time: wait for
    // dpkg's lock rather than fail on it.
    let install = format!(
        "export DEBIAN_FRONTEND=noninteractive; \
         apt-get -o DPkg::Lock::Timeout=600 install -y -q -- {p} || \
         (apt-get -o DPkg::Lock::Timeout=600 update -q && \
          apt-get -o DPkg::Lock::Timeout=600 install -y -q -- {p})",
        p = quote::join(&packages)
    );
    let out = t.run(&install, Some(Duration::from_secs(1800)))?;
    if !out.exit.success() {
        return Err(CellFailure::step_failed(
            format!("{side}: provision"),
            &format!("apt-get install {}", packages.join(" ")),
            &out.exit,
            &out.stderr_str(),
        ));
    }
    let still = missing_commands(t, &commands)?;
    if !still.is_empty() {
        return Err(lacking(still, true));
    }
    Ok(unavailable)
}

pub(crate) fn missing_commands(
    t: &mut dyn Transport,
    commands: &BTreeSet<&str>,
) -> Result<Vec<String>, TransportError> {
    let words: Vec<&str> = commands.iter().copied().collect();
    let script = format!(
        "for c in {}; do command -v \"$c\" >/dev/null 2>&1 || echo \"$c\"; done",
        quote::join(&words)
    );
    let out = t.run(&script, Some(Duration::from_secs(60)))?;
    Ok(out.stdout_str().lines().map(str::to_string).collect())
}
