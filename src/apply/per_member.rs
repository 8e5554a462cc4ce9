//! A `per_member` run as apply runs it: each member's command rendered with that
//! member's values, composed into one script (`bench::members`), and its outcome read
//! back per member, where one member's failure fails the whole run.

use std::collections::BTreeMap;

use crate::bench::{self, Vars, members};
use crate::failure::CellFailure;
use crate::transport::Exit;

/// What a composed run needs to read its output back.
pub(super) struct Composed {
    pub(super) nonce: String,
    pub(super) members: Vec<String>,
    /// Each member's own command, for its failure's message.
    pub(super) commands: Vec<String>,
}

/// Renders `template` once per `(member, vars)` and composes the script that runs them
/// all at once, its output files in `dir`.
pub(super) fn compose(
    template: &str,
    each: &[(String, Vars)],
    dir: &str,
) -> Result<(String, Composed), CellFailure> {
    let mut commands = Vec::with_capacity(each.len());
    for (member, vars) in each {
        commands.push((member.clone(), bench::render(template, vars)?));
    }
    let nonce = members::nonce();
    let script = members::script(dir, &nonce, &commands);
    Ok((
        script,
        Composed {
            nonce,
            members: commands.iter().map(|(m, _)| m.clone()).collect(),
            commands: commands.into_iter().map(|(_, c)| c).collect(),
        },
    ))
}

/// A run's command: for a `per_member` recipe, the script that runs each member's
/// command (`each`, asked only then) at once, its files in a directory of `dir` of the
/// cell's own; else the run step rendered with `vars`.
pub(super) fn run_command(
    job: &super::Job<'_>,
    dir: &str,
    each: impl FnOnce() -> Vec<(String, Vars)>,
    vars: &Vars,
) -> Result<(String, Option<Composed>), CellFailure> {
    let step = &job.recipe.run;
    if !job.recipe.run_per_member {
        return Ok((bench::render(&step.command, vars)?, None));
    }
    let dir = format!("{}/members-{}", dir.trim_end_matches('/'), job.cell.key);
    let (script, composed) = compose(&step.command, &each(), &dir)?;
    Ok((script, Some(composed)))
}

/// A measured or warm-up run's metrics: each member's section for a per-member run
/// (one member's failure fails the run, naming it), else the step's exit and the
/// recipe's parser. Board walks and cluster walks read their runs alike.
pub(super) fn read_run(
    recipe: &crate::model::Recipe,
    composed: Option<&Composed>,
    what: &str,
    command: &str,
    exit: &Exit,
    stdout: &str,
    stderr: &str,
) -> Result<BTreeMap<String, f64>, CellFailure> {
    match composed {
        Some(c) => outcome(recipe, c, what, stdout, stderr),
        None if !exit.success() => Err(CellFailure::step_failed(what, command, exit, stderr)),
        None => bench::metrics(recipe, stdout, stderr).map_err(|e| CellFailure::ParseFailed {
            step: what.to_string(),
            message: e.to_string(),
            log: None,
        }),
    }
}

/// The run's metrics, or why it failed: a member's section missing, a member's
/// command failing (named, with its own stderr), a member's output with no value.
pub(super) fn outcome(
    recipe: &crate::model::Recipe,
    composed: &Composed,
    what: &str,
    stdout: &str,
    stderr: &str,
) -> Result<BTreeMap<String, f64>, CellFailure> {
    let sections =
        members::split(&composed.nonce, &composed.members, stdout, stderr).map_err(|e| {
            CellFailure::ParseFailed {
                step: what.to_string(),
                message: e.to_string(),
                log: None,
            }
        })?;
    for (s, command) in sections.iter().zip(&composed.commands) {
        if s.status != 0 {
            let exit = if s.status > 128 && s.status < 160 {
                Exit {
                    code: None,
                    signal: Some(format!("{}", s.status - 128)),
                }
            } else {
                Exit {
                    code: Some(s.status),
                    signal: None,
                }
            };
            return Err(CellFailure::step_failed(
                format!("{what} on member {}", s.member),
                command,
                &exit,
                &s.stderr,
            ));
        }
    }
    members::metrics(recipe, &sections).map_err(|e| CellFailure::ParseFailed {
        step: what.to_string(),
        message: e.to_string(),
        log: None,
    })
}
