//! A cluster's walk: a session and the facts of every member, the guards, the deploy,
//! the cells' groups as a board's (`groups.rs`), the teardown and the guards stopped.

use super::groups::{group_steps, groups_of, runs_by, tests_of, verify_step};
use super::{Action, DoneWhen, Estimates, Step, Work};
use crate::model::{Cluster, Side, Where};
use crate::plan::CellKey;

fn side_of(on: &Where) -> Side {
    match on {
        Where::Controller => Side::Controller,
        Where::Board(_) => Side::Board,
    }
}

pub(super) fn cluster_steps(
    cluster: &Cluster,
    work: Vec<&Work<'_>>,
    estimates: &Estimates,
) -> Vec<Step> {
    let all: Vec<CellKey> = work.iter().map(|w| w.cell.key.clone()).collect();
    let step = |action, side, done_when| Step::plain(action, all.clone(), side, done_when);
    let mut steps = Vec::new();
    for m in &cluster.members {
        steps.push(step(
            Action::ConnectMember { member: m.clone() },
            Side::Board,
            DoneWhen::Never,
        ));
    }
    // The controller's directory holds the controller's guard, whatever the tests run.
    steps.push(step(
        Action::ClaimWorkdir { controller: true },
        Side::Members,
        DoneWhen::Never,
    ));
    steps.push(step(
        Action::Provision {
            tests: tests_of(&work),
        },
        Side::Members,
        DoneWhen::CommandsPresent,
    ));
    steps.push(step(
        Action::StopLeftoverServices,
        Side::Members,
        DoneWhen::Never,
    ));
    for m in &cluster.members {
        steps.push(step(
            Action::MemberFacts { member: m.clone() },
            Side::Board,
            DoneWhen::Never,
        ));
    }
    // Each image's expectations, checked on every member before its cells.
    let mut images: Vec<&crate::model::ImageName> = Vec::new();
    for w in &work {
        if !images.contains(&&w.cell.address.image) {
            images.push(&w.cell.address.image);
        }
    }
    for image in images {
        let of_image: Vec<&Work<'_>> = work
            .iter()
            .filter(|w| &w.cell.address.image == image)
            .copied()
            .collect();
        let expect = &of_image[0].cell.image.expect;
        let cells = of_image.iter().map(|w| w.cell.key.clone()).collect();
        steps.extend(verify_step(image, expect, cells, Side::Members, false));
    }
    steps.push(step(Action::ArmGuard, Side::Members, DoneWhen::Never));
    for (on, from, commands) in runs_by(&cluster.deploy, |s| &s.on) {
        steps.push(step(
            Action::Deploy {
                on: on.name().to_string(),
                from,
                commands,
            },
            side_of(on),
            DoneWhen::CellsComplete,
        ));
    }
    // As on a board: interleaved cells take their runs in turns, blocked ones alone.
    for group in groups_of(&work) {
        group_steps(&mut steps, &group, estimates);
    }
    for (on, from, commands) in runs_by(&cluster.teardown, |s| &s.on) {
        steps.push(step(
            Action::Undeploy {
                on: on.name().to_string(),
                from,
                commands,
            },
            side_of(on),
            DoneWhen::NothingToUndo,
        ));
    }
    steps.push(step(
        Action::DisarmGuard,
        Side::Members,
        DoneWhen::NothingToUndo,
    ));
    steps
}
