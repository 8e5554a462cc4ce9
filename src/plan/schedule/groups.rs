//! The steps of one part of a board's or cluster's schedule: the flash of an image, the
//! prelude that opens a board, and a group of cells from setup to teardown.

use super::{Action, BoardAction, CellAction, DoneWhen, Estimates, Step, WalkAction, Work};
use crate::model::{
    Board, BoardName, Cooldown, FirstbootKind, Flash, ImageName, Recipe, RunOrder, Side, TestName,
};
use crate::plan::CellKey;

/// Fetch an image into the cache: once per image in a walk, before its flashes.
pub(super) fn fetch_step(image: &ImageName, cells: &[CellKey]) -> Step {
    let action = Action::Walk(WalkAction::FetchImage {
        image: image.clone(),
    });
    Step::plain(
        action,
        cells.to_vec(),
        Side::Controller,
        DoneWhen::BoardAtImage,
    )
}

/// The flash of `image` through `board`'s `[flash]` method, and whether a power cycle
/// follows it (a flash command without a `[power]` that cycles reboots the board
/// itself); `None` for a board that is never flashed. `member`: the cluster member
/// `board` is.
pub(super) fn flash_action(
    board: &Board,
    image: &ImageName,
    member: Option<&BoardName>,
) -> Option<(Action, bool)> {
    // A [power] that cannot cycle (only `boot_timeout`, say) adds no step.
    let power = board
        .power
        .as_ref()
        .is_some_and(|p| p.cycle.is_some() || (p.on.is_some() && p.off.is_some()));
    let (image, member) = (image.clone(), member.cloned());
    match &board.flash {
        Flash::Dd { via, device } => Some((
            Action::Walk(WalkAction::Flash {
                image,
                via: via.clone(),
                device: device.clone(),
                member,
            }),
            true,
        )),
        Flash::Tpi { via, node, .. } => Some((
            Action::Walk(WalkAction::FlashTpi {
                image,
                via: via.clone(),
                node: *node,
                member,
            }),
            true,
        )),
        Flash::Command { .. } => Some((
            Action::Walk(WalkAction::FlashCommand { image, member }),
            power,
        )),
        Flash::None => None,
    }
}

/// Derive (a prepared image), flash and power-cycle one image onto the walk's board or
/// a cluster's `member`; the steps the plan leaves out when the board is already at the
/// image.
pub(super) fn flash_steps(
    steps: &mut Vec<Step>,
    image: &ImageName,
    firstboot: Option<FirstbootKind>,
    (flash, power_cycle): (Action, bool),
    cells: &[CellKey],
    member: Option<&BoardName>,
) {
    let step = |action, side| Step::plain(action, cells.to_vec(), side, DoneWhen::BoardAtImage);
    if let Some(kind) = firstboot {
        let action = Action::Walk(WalkAction::Derive {
            image: image.clone(),
            firstboot: kind.name().to_string(),
            member: member.cloned(),
        });
        steps.push(Step::plain(
            action,
            cells.to_vec(),
            Side::Controller,
            DoneWhen::Derived,
        ));
    }
    let side = match &flash {
        Action::Walk(WalkAction::FlashCommand { .. }) => Side::Controller,
        Action::Walk(_)
        | Action::Hold(_)
        | Action::Reserve(_)
        | Action::Board(_)
        | Action::Cluster(_)
        | Action::Cell(_) => Side::Board,
    };
    steps.push(step(flash, side));
    if power_cycle {
        let member = member.cloned();
        steps.push(step(
            Action::Walk(WalkAction::PowerCycle { member }),
            Side::Controller,
        ));
    }
}

/// The steps that open a board for work: connect, claim, provision, stop leftovers,
/// facts; they serve `span`'s cells, and their failure fails them all.
pub(super) fn prelude(steps: &mut Vec<Step>, span: &[&Work<'_>]) {
    let all: Vec<CellKey> = span.iter().map(|w| w.cell.key.clone()).collect();
    let board_step = |action: Action, done_when: DoneWhen| {
        Step::plain(action, all.clone(), Side::Board, done_when)
    };
    let tests = tests_of(span);
    let controller = span.iter().any(|w| uses_controller(w.recipe));
    steps.push(board_step(
        Action::Board(BoardAction::Connect),
        DoneWhen::Never,
    ));
    // Each peer serves the cells that use it: its loss is theirs alone.
    let mut peers: Vec<&crate::model::BoardName> = Vec::new();
    for w in span {
        if let Some(p) = &w.cell.peer
            && !peers.contains(&p)
        {
            peers.push(p);
        }
    }
    for peer in peers {
        let cells = span
            .iter()
            .filter(|w| w.cell.peer.as_ref() == Some(peer))
            .map(|w| w.cell.key.clone())
            .collect();
        let action = Action::Board(BoardAction::ConnectPeer { peer: peer.clone() });
        steps.push(Step::plain(action, cells, Side::Peer, DoneWhen::Never));
    }
    steps.push(board_step(
        Action::Walk(WalkAction::ClaimWorkdir { controller }),
        DoneWhen::Never,
    ));
    steps.push(board_step(
        Action::Walk(WalkAction::Provision { tests }),
        DoneWhen::CommandsPresent,
    ));
    steps.push(board_step(
        Action::Walk(WalkAction::StopLeftoverServices),
        DoneWhen::Never,
    ));
    steps.push(board_step(
        Action::Board(BoardAction::GatherFacts),
        DoneWhen::Never,
    ));
}

/// Whether a step, service or fact of the recipe runs on the controller, whose
/// directory for this board must then be claimed.
fn uses_controller(r: &Recipe) -> bool {
    r.sides().contains(&Side::Controller) || r.facts.iter().any(|f| f.on == Side::Controller)
}

/// Consecutive commands on one side: (side, first index, how many).
pub(super) fn segments(commands: &[crate::model::Step]) -> Vec<(Side, usize, usize)> {
    runs_by(commands, |c| c.on)
}

/// Consecutive items with one `key` (a recipe's commands on one side, a cluster's
/// deploy commands in one place): (key, first index, how many).
pub(super) fn runs_by<'t, T, K: PartialEq>(
    items: &'t [T],
    key: impl Fn(&'t T) -> K,
) -> Vec<(K, usize, usize)> {
    let mut out: Vec<(K, usize, usize)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let k = key(item);
        match out.last_mut() {
            Some((last, _, n)) if *last == k => *n += 1,
            _ => out.push((k, i, 1)),
        }
    }
    out
}

/// The groups of cells that share a cool-down: interleaved cells together (first),
/// taking their runs in turns; each blocked one alone.
pub(super) fn groups_of<'w, 'a>(work: &[&'w Work<'a>]) -> Vec<Vec<&'w Work<'a>>> {
    let (interleaved, blocked): (Vec<&Work<'_>>, Vec<&Work<'_>>) = work
        .iter()
        .partition(|w| w.cell.method.order == RunOrder::Interleaved);
    let mut groups: Vec<Vec<&Work<'_>>> = blocked.into_iter().map(|w| vec![w]).collect();
    if !interleaved.is_empty() {
        groups.insert(0, interleaved);
    }
    groups
}

/// The tests of `work`, each once, sorted: what a `Provision` step installs for.
pub(super) fn tests_of(work: &[&Work<'_>]) -> Vec<TestName> {
    let mut tests: Vec<TestName> = work.iter().map(|w| w.recipe.name.clone()).collect();
    tests.sort();
    tests.dedup();
    tests
}

/// The `VerifyImage` step of an image's cells, when its `expect` says anything (or,
/// `always`, after a flash: the flash is proven by the boot).
pub(super) fn verify_step(
    image: &ImageName,
    expect: &crate::model::Expectations,
    cells: Vec<CellKey>,
    side: Side,
    always: bool,
) -> Option<Step> {
    let says = !expect.os_release.is_empty() || expect.uname_m.is_some();
    (always || says).then(|| {
        let action = Action::Walk(WalkAction::VerifyImage {
            image: image.clone(),
            expect: expect.clone(),
        });
        Step::plain(action, cells, side, DoneWhen::Never)
    })
}

/// The board's `[[health]]` checks for the cells of an image, if it declares any.
pub(super) fn health_step(
    ws: &crate::model::Workspace,
    board: &crate::model::BoardName,
    cells: &[CellKey],
) -> Option<Step> {
    let checks = &ws.boards.get(board)?.health;
    (!checks.is_empty()).then(|| {
        let action = Action::Board(BoardAction::Health {
            checks: checks.clone(),
        });
        Step::plain(action, cells.to_vec(), Side::Board, DoneWhen::Never)
    })
}

/// Steps of one group of cells that share a mount and a cool-down.
pub(super) fn group_steps(steps: &mut Vec<Step>, group: &[&Work<'_>], estimates: &Estimates) {
    let keys: Vec<CellKey> = group.iter().map(|w| w.cell.key.clone()).collect();
    let one = |w: &Work<'_>, action, side, done_when, estimate_seconds| Step {
        action,
        cells: vec![w.cell.key.clone()],
        side,
        resources: w.recipe.exclusive.clone(),
        done_when,
        estimate_seconds,
    };
    for w in group {
        let test = w.recipe.name.clone();
        if let Some(size) = w.cell.tmpfs {
            let mut step = one(
                w,
                Action::Board(BoardAction::MountTmpfs {
                    test: test.clone(),
                    size,
                }),
                Side::Board,
                DoneWhen::CellsComplete,
                None,
            );
            step.resources.clear();
            steps.push(step);
        }
        let segs = segments(&w.recipe.setup);
        if segs.is_empty() {
            steps.push(one(
                w,
                Action::Cell(CellAction::Setup {
                    test: test.clone(),
                    from: 0,
                    commands: 0,
                    after_services: false,
                }),
                Side::Board,
                DoneWhen::CellsComplete,
                None,
            ));
        }
        for (side, from, commands) in segs {
            steps.push(one(
                w,
                Action::Cell(CellAction::Setup {
                    test: test.clone(),
                    from,
                    commands,
                    after_services: false,
                }),
                side,
                DoneWhen::CellsComplete,
                None,
            ));
        }
        for s in &w.recipe.services {
            let mut step = one(
                w,
                Action::Cell(CellAction::StartService {
                    test: test.clone(),
                    service: s.name.clone(),
                }),
                s.on,
                DoneWhen::CellsComplete,
                None,
            );
            step.resources.clear();
            steps.push(step);
        }
        for (side, from, commands) in segments(&w.recipe.setup_after_services) {
            steps.push(one(
                w,
                Action::Cell(CellAction::Setup {
                    test: test.clone(),
                    from,
                    commands,
                    after_services: true,
                }),
                side,
                DoneWhen::CellsComplete,
                None,
            ));
        }
    }
    let method = &group[0].cell.method;
    steps.push(Step {
        action: Action::Cell(CellAction::Cooldown {
            cooldown: method.cooldown.clone(),
        }),
        cells: keys.clone(),
        side: Side::Board,
        resources: Vec::new(),
        done_when: DoneWhen::CellsComplete,
        estimate_seconds: match &method.cooldown {
            Cooldown::None => Some(0.0),
            Cooldown::Fixed { duration } => Some(duration.as_secs_f64()),
            Cooldown::UntilBelow { .. } => None,
        },
    });
    for w in group {
        let warm = &w.cell.method.warmup;
        if warm.runs == 0 && warm.duration.is_none() {
            continue;
        }
        let estimate = estimates.per_run(w.cell).map(|s| s * f64::from(warm.runs));
        steps.push(one(
            w,
            Action::Cell(CellAction::WarmUp {
                test: w.recipe.name.clone(),
                runs: warm.runs,
            }),
            w.recipe.run.on,
            DoneWhen::CellsComplete,
            estimate,
        ));
    }
    let mut resources: Vec<String> = group
        .iter()
        .flat_map(|w| w.recipe.exclusive.iter().cloned())
        .collect();
    resources.sort();
    resources.dedup();
    let runs_left = group.iter().map(|w| w.runs_left).sum();
    let estimate = group
        .iter()
        .map(|w| estimates.per_run(w.cell).map(|s| s * w.runs_left as f64))
        .sum::<Option<f64>>();
    let side = if group.iter().all(|w| w.recipe.run.on == Side::Controller) {
        Side::Controller
    } else {
        Side::Board
    };
    steps.push(Step {
        action: Action::Cell(CellAction::Measure {
            order: if group.len() > 1 {
                RunOrder::Interleaved
            } else {
                group[0].cell.method.order
            },
            runs_left,
        }),
        cells: keys,
        side,
        resources,
        done_when: DoneWhen::CellsComplete,
        estimate_seconds: estimate,
    });
    for w in group {
        let test = w.recipe.name.clone();
        for s in w.recipe.services.iter().rev() {
            steps.push(one(
                w,
                Action::Cell(CellAction::StopService {
                    test: test.clone(),
                    service: s.name.clone(),
                }),
                s.on,
                DoneWhen::NothingToUndo,
                None,
            ));
        }
        for (side, from, commands) in segments(&w.recipe.teardown) {
            steps.push(one(
                w,
                Action::Cell(CellAction::Teardown {
                    test: test.clone(),
                    from,
                    commands,
                }),
                side,
                DoneWhen::NothingToUndo,
                None,
            ));
        }
        if w.cell.tmpfs.is_some() {
            let mut step = one(
                w,
                Action::Board(BoardAction::UnmountTmpfs { test: test.clone() }),
                Side::Board,
                DoneWhen::NothingToUndo,
                None,
            );
            step.resources.clear();
            steps.push(step);
        }
    }
}
