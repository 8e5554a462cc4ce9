//! A cluster's walk, per image in plan order: the image written to every member not
//! already at it, a session and the facts of every member, the guards, the deploy, the
//! image's cells in groups as a board's (`groups.rs`), the teardown and the guards
//! stopped.

use super::groups::{
    fetch_step, flash_action, flash_steps, group_steps, groups_of, runs_by, tests_of, verify_step,
};
use super::{Action, AtImage, ClusterAction, DoneWhen, Estimates, Step, WalkAction, Work};
use crate::model::{BoardName, Cluster, ImageName, ImageSource, Side, Where, Workspace};
use crate::plan::CellKey;

fn side_of(on: &Where) -> Side {
    match on {
        Where::Controller => Side::Controller,
        Where::Board(_) => Side::Board,
    }
}

pub(super) fn cluster_steps(
    ws: &Workspace,
    cluster: &Cluster,
    work: &[&Work<'_>],
    estimates: &Estimates,
    at: &AtImage<'_>,
) -> Vec<Step> {
    let mut images: Vec<&ImageName> = Vec::new();
    for w in work {
        if !images.contains(&&w.cell.address.image) {
            images.push(&w.cell.address.image);
        }
    }
    let mut steps = Vec::new();
    for image in images {
        let of_image: Vec<&Work<'_>> = work
            .iter()
            .filter(|w| &w.cell.address.image == image)
            .copied()
            .collect();
        image_steps(ws, cluster, image, &of_image, estimates, at, &mut steps);
    }
    steps
}

/// One image's part of the walk: every step serves (and a failure fails) only the
/// image's cells. A member already at the image (the store's board state) is not
/// flashed; a member flashed is connected to once it has booted.
fn image_steps(
    ws: &Workspace,
    cluster: &Cluster,
    image: &ImageName,
    work: &[&Work<'_>],
    estimates: &Estimates,
    at: &AtImage<'_>,
    steps: &mut Vec<Step>,
) {
    let all: Vec<CellKey> = work.iter().map(|w| w.cell.key.clone()).collect();
    let step = |action, side, done_when| Step::plain(action, all.clone(), side, done_when);
    let first = work[0];
    let flashing: Vec<&BoardName> = match first.cell.image.source {
        ImageSource::Installed => Vec::new(),
        _ => cluster
            .members
            .iter()
            .filter(|m| !at.runs(m, &first.cell.image))
            .collect(),
    };
    if !flashing.is_empty() {
        steps.push(fetch_step(image, &all));
    }
    let firstboot = first.cell.image.firstboot.as_ref().map(|f| f.kind);
    for m in &flashing {
        // The plan gives a cluster no cell of an image to flash unless every member
        // has a flash method.
        if let Some(flash) = ws
            .boards
            .get(*m)
            .and_then(|b| flash_action(b, image, Some(m)))
        {
            flash_steps(steps, image, firstboot, flash, &all, Some(m));
        }
    }
    for m in &cluster.members {
        steps.push(step(
            Action::Cluster(ClusterAction::ConnectMember { member: m.clone() }),
            Side::Board,
            DoneWhen::Never,
        ));
    }
    // The controller's directory holds the controller's guard, whatever the tests run.
    steps.push(step(
        Action::Walk(WalkAction::ClaimWorkdir { controller: true }),
        Side::Members,
        DoneWhen::Never,
    ));
    steps.push(step(
        Action::Walk(WalkAction::Provision {
            tests: tests_of(work),
        }),
        Side::Members,
        DoneWhen::CommandsPresent,
    ));
    steps.push(step(
        Action::Walk(WalkAction::StopLeftoverServices),
        Side::Members,
        DoneWhen::Never,
    ));
    for m in &cluster.members {
        steps.push(step(
            Action::Cluster(ClusterAction::MemberFacts { member: m.clone() }),
            Side::Board,
            DoneWhen::Never,
        ));
    }
    // The image's expectations, checked on every member before its cells (always after
    // a flash: the boot proves it).
    let expect = &first.cell.image.expect;
    let verify = verify_step(
        image,
        expect,
        all.clone(),
        Side::Members,
        !flashing.is_empty(),
    );
    steps.extend(verify);
    for m in &cluster.members {
        let checks = ws
            .boards
            .get(m)
            .map(|b| b.health.clone())
            .unwrap_or_default();
        if !checks.is_empty() {
            steps.push(step(
                Action::Cluster(ClusterAction::MemberHealth {
                    member: m.clone(),
                    checks,
                }),
                Side::Board,
                DoneWhen::Never,
            ));
        }
    }
    steps.push(step(
        Action::Cluster(ClusterAction::ArmGuard),
        Side::Members,
        DoneWhen::Never,
    ));
    for (on, from, commands) in runs_by(&cluster.deploy, |s| &s.on) {
        let mut deploy = step(
            Action::Cluster(ClusterAction::Deploy {
                on: on.name().to_string(),
                from,
                commands,
            }),
            side_of(on),
            DoneWhen::CellsComplete,
        );
        // Its last success's duration: `--deadline` counts it in every cell's time.
        deploy.estimate_seconds = estimates.deploy(&cluster.name, from);
        steps.push(deploy);
    }
    // As on a board: interleaved cells take their runs in turns, blocked ones alone.
    for group in groups_of(work) {
        group_steps(steps, &group, estimates);
    }
    for (on, from, commands) in runs_by(&cluster.teardown, |s| &s.on) {
        steps.push(step(
            Action::Cluster(ClusterAction::Undeploy {
                on: on.name().to_string(),
                from,
                commands,
            }),
            side_of(on),
            DoneWhen::NothingToUndo,
        ));
    }
    steps.push(step(
        Action::Cluster(ClusterAction::DisarmGuard),
        Side::Members,
        DoneWhen::NothingToUndo,
    ));
}
