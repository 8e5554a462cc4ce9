//! A cluster's walk: a session and the facts of every member, the guards, the deploy,
//! the cells' groups as a board's, the teardown and the guards stopped.

use super::groups::group_steps;
use super::{Action, DoneWhen, Estimates, Step, Work};
use crate::model::{Cluster, ClusterStep, RunOrder, Side, TestName, Where};
use crate::plan::CellKey;

/// Consecutive cluster steps in one place: (where, first index, how many).
fn places(steps: &[ClusterStep]) -> Vec<(&Where, usize, usize)> {
    let mut out: Vec<(&Where, usize, usize)> = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        match out.last_mut() {
            Some((on, _, n)) if **on == s.on => *n += 1,
            _ => out.push((&s.on, i, 1)),
        }
    }
    out
}

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
    let step = |action, side, done_when| Step {
        action,
        cells: all.clone(),
        side,
        resources: Vec::new(),
        done_when,
        estimate_seconds: None,
    };
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
    let mut tests: Vec<TestName> = work.iter().map(|w| w.recipe.name.clone()).collect();
    tests.sort();
    tests.dedup();
    steps.push(step(
        Action::Provision { tests },
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
        if !expect.os_release.is_empty() || expect.uname_m.is_some() {
            steps.push(Step {
                action: Action::VerifyImage {
                    image: image.clone(),
                    expect: expect.clone(),
                },
                cells: of_image.iter().map(|w| w.cell.key.clone()).collect(),
                side: Side::Members,
                resources: Vec::new(),
                done_when: DoneWhen::Never,
                estimate_seconds: None,
            });
        }
    }
    steps.push(step(Action::ArmGuard, Side::Members, DoneWhen::Never));
    for (on, from, commands) in places(&cluster.deploy) {
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
    let (interleaved, blocked): (Vec<&Work<'_>>, Vec<&Work<'_>>) = work
        .iter()
        .partition(|w| w.cell.method.order == RunOrder::Interleaved);
    let mut groups: Vec<Vec<&Work<'_>>> = blocked.into_iter().map(|w| vec![w]).collect();
    if !interleaved.is_empty() {
        groups.insert(0, interleaved);
    }
    for group in groups {
        group_steps(&mut steps, &group, estimates);
    }
    for (on, from, commands) in places(&cluster.teardown) {
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
