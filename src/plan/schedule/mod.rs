//! The schedule: per board, the ordered steps apply walks for the cells that need work.
//!
//! `plan --json` prints it, `apply --dry-run` prints it as text, and `apply` walks it
//! (`apply/walk.rs`); all three get it from [`build`], a pure function of the files and
//! what the store holds. Work is ordered so that each (image, storage, filesystem) is
//! prepared once per board: by image, then by the mount the cells need, then in plan
//! order. A step names its cells, its side, the exclusive resources it holds, how apply
//! knows it is already done, and its time estimate from the store's history.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

mod cluster;
mod danger;
mod groups;
mod reserve;
pub use reserve::Reserve;
mod estimates;
mod show;
pub mod tidy;
pub use danger::root_steps;
pub use estimates::Estimates;
use groups::{fetch_step, flash_action, flash_steps, group_steps, groups_of, prelude, verify_step};
#[cfg(test)]
mod tests;

use super::{Cell, CellKey};
use crate::model::{
    BoardName, Cooldown, Expectations, FsName, Image, ImageName, ImageSource, Recipe, RunOrder,
    Side, StorageName, TestName, Workspace,
};

/// The schema version of the schedule in `plan --json` (docs/FORMAT.md).
pub const FORMAT: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Schedule {
    pub format: u32,
    pub boards: Vec<BoardSteps>,
}

/// One board's steps, walked in order by that board's worker (a cluster's, by the
/// cluster's).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoardSteps {
    pub board: BoardName,
    /// A cluster's member boards, in its order; empty for a board.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<BoardName>,
    pub steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// What the step does, with its own fields (`"action": "mount"`, ...).
    #[serde(flatten)]
    pub action: Action,
    /// The cells it serves: a board step serves all the board's cells, so its failure
    /// fails them all.
    pub cells: Vec<CellKey>,
    pub side: Side,
    /// Exclusive resources held while it runs: no two boards hold one at once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    pub done_when: DoneWhen,
    /// Seconds, from the store's history of runs; `None` when it has none.
    pub estimate_seconds: Option<f64>,
}

impl Step {
    /// A step that holds no exclusive resource and has no estimate.
    fn plain(action: Action, cells: Vec<CellKey>, side: Side, done_when: DoneWhen) -> Step {
        Step {
            action,
            cells,
            side,
            resources: Vec::new(),
            done_when,
            estimate_seconds: None,
        }
    }
}

/// What a step does, by who runs it: the step runner itself (`Hold`), every walk, only
/// a board's or only a cluster's walk, or the one cell runner; so each walker's `match`
/// is exhaustive over its own steps. Steps that undo another (`cleanup`) run even after
/// a failure or an interrupt, when what they undo was done. Serialized flat
/// (`"action": "mount"`, ...): each part carries the tag.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Action {
    Hold(Hold),
    Reserve(Reserve),
    Walk(WalkAction),
    Board(BoardAction),
    Cluster(ClusterAction),
    Cell(CellAction),
}

/// Wait until no other walk holds any of these boards, then hold them all until
/// this walk ends (all at once, so two walks never hold a part each): a cluster's
/// members, a board's own and its peers, when another walk of the apply needs them.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename = "hold")]
pub struct Hold {
    pub boards: Vec<BoardName>,
}

/// Steps every walk takes, each over its own sessions (a board's, or every member's of
/// a cluster): an image fetched and flashed, the workdirs claimed, tools installed,
/// leftovers stopped, the image verified.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum WalkAction {
    /// Fetch the image into the cache and verify its sha256 (`image::fetch`).
    FetchImage { image: ImageName },
    /// Write the image's first-boot preparation (`[images.NAME.firstboot]`, for this
    /// board) into its boot partition: a prepared copy in the image cache, which the
    /// flash then writes (`image::firstboot::derive`).
    Derive {
        image: ImageName,
        /// `cloud-init`, `raspios` or `armbian`.
        firstboot: String,
        /// The cluster member it is for; none in a board's walk (the board itself).
        #[serde(skip_serializing_if = "Option::is_none")]
        member: Option<BoardName>,
    },
    /// Write the image to the board's boot device through `via` and verify it by
    /// read-back (`flash::dd::write`). The board's session is closed first.
    Flash {
        image: ImageName,
        via: String,
        device: String,
        /// The cluster member it is for; none in a board's walk (the board itself).
        #[serde(skip_serializing_if = "Option::is_none")]
        member: Option<BoardName>,
    },
    /// Run the board's `[flash] command` on the controller with the image's file.
    FlashCommand {
        image: ImageName,
        /// The cluster member it is for; none in a board's walk (the board itself).
        #[serde(skip_serializing_if = "Option::is_none")]
        member: Option<BoardName>,
    },
    /// Put the image on the Turing Pi BMC `via` (uploaded, or found there by its
    /// digest), then `tpi flash` it to `node` there (`flash::tpi`).
    FlashTpi {
        image: ImageName,
        via: String,
        node: u32,
        /// The cluster member it is for; none in a board's walk (the board itself).
        #[serde(skip_serializing_if = "Option::is_none")]
        member: Option<BoardName>,
    },
    /// Power-cycle the board so it boots the new image: its `[power] cycle`, or `off`
    /// then `on`, or (a tpi board without `[power]`) the BMC's `tpi power off`/`on`.
    PowerCycle {
        /// The cluster member it is for; none in a board's walk (the board itself).
        #[serde(skip_serializing_if = "Option::is_none")]
        member: Option<BoardName>,
    },
    /// Claim the board's workdir (and, when a step runs there, the controller's).
    ClaimWorkdir { controller: bool },
    /// Install what the tests need, per side, and create work and storage directories.
    Provision { tests: Vec<TestName> },
    /// Stop services a crashed or killed apply left running, and unmount the cells'
    /// tmpfs it left mounted (`storage::tmpfs::sweep`).
    StopLeftoverServices,
    /// Check that the board runs the image its cells name: its `/etc/os-release` fields
    /// as the scenario's `expect` gives them. A mismatch fails the image's cells.
    VerifyImage {
        image: ImageName,
        expect: Expectations,
    },
}

/// Steps only a board's walk takes: its session and its peers', its facts, its mounts
/// and tmpfs, its USB driver and kernel command line.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum BoardAction {
    /// Open a session to the board (after a power cycle: retried until it boots).
    Connect,
    /// Open a session to a peer board of the walk's cells and claim their directory
    /// there; its failure fails only the cells that use that peer.
    ConnectPeer { peer: BoardName },
    /// Read the board's facts and its idle temperature, recorded beside every cell.
    GatherFacts,
    /// The board's `[[health]]` checks, once it runs the image: one that fails skips
    /// the board's cells of that image with its reason; none of them is measured.
    Health {
        checks: Vec<crate::model::health::HealthCheck>,
    },
    /// Format and mount a storage (or, for `as-is`, check it) for the cells that need it.
    Mount {
        image: ImageName,
        storage: StorageName,
        filesystem: FsName,
        /// Whether this makes a filesystem (`as-is` does not).
        mkfs: bool,
        /// The block device, as the board file names it: what `mkfs` writes.
        #[serde(skip_serializing_if = "Option::is_none")]
        device: Option<String>,
        /// The disk the board file declares it is (`serial`, `size`): apply refuses any
        /// other (`storage::identity`).
        #[serde(skip_serializing_if = "Option::is_none")]
        serial: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        size_bytes: Option<u64>,
    },
    /// Open the cell (as its first `Setup` would) and mount its own tmpfs, before its
    /// setup (`storage::tmpfs::mount`): marked as benchpipe's, replacing a leftover of
    /// benchpipe's, refusing any other mount or a non-empty directory.
    MountTmpfs {
        test: TestName,
        size: crate::model::TmpfsSize,
    },
    /// Board state for a storage's `uas`: set or clear its USB device's
    /// `usb-storage.quirks=VID:PID:u` in the board's `[boot] cmdline`, power-cycle, wait
    /// for the boot, and verify the driver (`uas` or `usb-storage`).
    Uas { storage: StorageName, uas: bool },
    /// Unmount the cell's tmpfs and remove its mount point, after its teardown
    /// (cleanup).
    UnmountTmpfs { test: TestName },
    /// Unmount what `Mount` mounted (cleanup).
    Unmount {
        storage: StorageName,
        filesystem: FsName,
    },
    /// Put the board's kernel command line back as it was before the `Uas` steps, and
    /// power-cycle so the board runs it (cleanup).
    RestoreCmdline,
}

/// Steps only a cluster's walk takes: a session and facts per member, the guards, the
/// deploy and its teardown.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum ClusterAction {
    /// A cluster: open a session to one member (after its power cycle: retried until it
    /// boots).
    ConnectMember { member: BoardName },
    /// A cluster: read one member's facts, recorded beside every cell under its name.
    MemberFacts { member: BoardName },
    /// A cluster: one member's `[[health]]` checks (one failing skips the image's cells).
    MemberHealth {
        member: BoardName,
        checks: Vec<crate::model::health::HealthCheck>,
    },
    /// A cluster: on every member and the controller, start the guard that runs that
    /// side's teardown and stops that side's services when benchpipe's connection to
    /// it ends without a goodbye (a lost member, a killed benchpipe).
    ArmGuard,
    /// A cluster's deploy commands `from` .. `from + commands`, all on `on`.
    Deploy {
        on: String,
        from: usize,
        commands: usize,
    },
    /// A cluster's teardown commands on `on` (cleanup; a lost member's own are run by
    /// its guard).
    Undeploy {
        on: String,
        from: usize,
        commands: usize,
    },
    /// Stop the guards: the cluster was taken down in order (cleanup).
    DisarmGuard,
}

/// A cell's own steps, one copy for every walk (`apply`'s cell runner runs them over
/// the walk's places): setup, services, cool-down, runs, teardown.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum CellAction {
    /// Open one cell in the store, write its facts, run the recipe's setup commands of
    /// this side (a recipe's consecutive commands on one side form one step).
    Setup {
        test: TestName,
        from: usize,
        commands: usize,
        /// The recipe's `after = "services"` setup commands, run once its services
        /// are ready (`from` indexes those).
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        after_services: bool,
    },
    /// Start one of the cell's services and wait until its ready check passes.
    StartService { test: TestName, service: String },
    /// Cool down before the group's first run.
    Cooldown { cooldown: Cooldown },
    /// Warm-up runs of one cell, recorded and discarded.
    WarmUp { test: TestName, runs: u32 },
    /// Measured runs of the cells, one at a time (blocked) or in turns (interleaved),
    /// until each cell's stop rule holds.
    Measure { order: RunOrder, runs_left: usize },
    /// Stop one of the cell's services (cleanup).
    StopService { test: TestName, service: String },
    /// The recipe's teardown commands of this side (cleanup; the controller's run even
    /// when the board is lost).
    Teardown {
        test: TestName,
        from: usize,
        commands: usize,
    },
}

impl Action {
    /// Whether the step undoes another and so runs after failures and interrupts.
    pub fn is_cleanup(&self) -> bool {
        matches!(
            self,
            Action::Cell(CellAction::StopService { .. } | CellAction::Teardown { .. })
                | Action::Board(
                    BoardAction::UnmountTmpfs { .. }
                        | BoardAction::Unmount { .. }
                        | BoardAction::RestoreCmdline
                )
                | Action::Cluster(ClusterAction::Undeploy { .. } | ClusterAction::DisarmGuard)
                | Action::Reserve(Reserve::ReleaseLabgridPlace { .. })
        )
    }
}

/// How apply knows a step needs no work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DoneWhen {
    /// Always runs: a session, facts or a cool-down belong to this apply.
    Never,
    /// Board state: every command the tests need is found (`command -v`), so nothing is
    /// installed.
    CommandsPresent,
    /// Board state: this walk already has this storage mounted with this filesystem.
    Mounted,
    /// Store: the board's state says it was last verified at this image; the plan then
    /// leaves the step out, but for a board another walk of the apply also needs, which
    /// apply judges when it gets there (the other walk may have reflashed it).
    BoardAtImage,
    /// Store: every one of its cells is complete (its stop rule holds).
    CellsComplete,
    /// Image cache: the preparation's record names a prepared image still there as it
    /// was written; it is reused and nothing is derived (judged inside the step).
    Derived,
    /// Board state: the kernel command line already says what the step wants and the
    /// USB device already runs under that driver, so nothing is edited or rebooted.
    DriverAsWanted,
    /// Walk state: what it undoes was never done (no service started, nothing mounted,
    /// the cell never opened), or the board is gone.
    NothingToUndo,
}

/// A cell that needs work, with what `build` needs to know of it.
pub struct Work<'a> {
    pub cell: &'a Cell,
    pub recipe: &'a Recipe,
    /// Measured runs still to take, as far as the plan can tell.
    pub runs_left: usize,
}

/// The mount a cell needs: `None` for tests that touch no storage.
fn mount_of(cell: &Cell) -> Option<(StorageName, FsName, bool)> {
    match (&cell.address.storage, &cell.filesystem) {
        (Some(s), Some(f)) => Some((s.clone(), f.name.clone(), f.is_made())),
        _ => None,
    }
}

/// The USB driver a cell needs: its storage's `uas`, when the board declares one.
fn uas_of(ws: &Workspace, cell: &Cell) -> Option<(StorageName, bool)> {
    let name = cell.address.storage.as_ref()?;
    let storage = ws.boards.get(&cell.address.board)?.storage(name)?;
    storage.uas.as_ref().map(|u| (name.clone(), u.enabled))
}

/// Where cells of a `uas` state go within an image: storage left as it is first, then
/// `uas = false`, then `uas = true` (so a board that started without the quirk ends
/// without it, and the restore needs no reboot).
fn uas_rank(u: Option<&(StorageName, bool)>) -> Option<(bool, &StorageName)> {
    u.map(|(s, on)| (*on, s))
}

/// The schedule for `work` (cells that need work, each once, in plan order).
pub fn build(ws: &Workspace, work: &[Work<'_>], estimates: &Estimates) -> Schedule {
    let mut by_board: BTreeMap<&BoardName, Vec<&Work<'_>>> = BTreeMap::new();
    for w in work {
        by_board.entry(&w.cell.address.board).or_default().push(w);
    }
    // The boards each walk needs to itself: a cluster's members; a board and its peers.
    let needs: Vec<BTreeSet<BoardName>> = by_board
        .iter()
        .map(|(board, work)| {
            if let Some(c) = work.first().and_then(|w| w.cell.cluster.as_ref()) {
                c.members.iter().cloned().collect()
            } else {
                let mut mine: BTreeSet<BoardName> =
                    work.iter().filter_map(|w| w.cell.peer.clone()).collect();
                mine.insert((*board).clone());
                mine
            }
        })
        .collect();
    // A board two walks need may be reflashed by the other first: what it runs then is
    // judged when a walk gets there, so its flash steps stay in the plan.
    let mut shared: BTreeSet<BoardName> = BTreeSet::new();
    for (i, mine) in needs.iter().enumerate() {
        for b in mine {
            if needs
                .iter()
                .enumerate()
                .any(|(j, o)| j != i && o.contains(b))
            {
                shared.insert(b.clone());
            }
        }
    }
    let at = AtImage {
        images: &estimates.board_images,
        shared: &shared,
    };
    let mut boards: Vec<BoardSteps> = Vec::new();
    for (board, work) in by_board {
        let (members, steps) = match work.first().and_then(|w| w.cell.cluster.as_ref()) {
            Some(c) => (
                c.members.clone(),
                cluster::cluster_steps(ws, c, &work, estimates, &at),
            ),
            None => (Vec::new(), board_steps(ws, board, work, estimates, &at)),
        };
        boards.push(BoardSteps {
            board: board.clone(),
            members,
            steps,
        });
    }
    // A walk holds what another walk also needs: it waits for it, and keeps it to the end.
    for (i, b) in boards.iter_mut().enumerate() {
        let contended: Vec<BoardName> = needs[i].intersection(&shared).cloned().collect();
        if contended.is_empty() {
            continue;
        }
        let mut cells: Vec<CellKey> = Vec::new();
        for s in &b.steps {
            for k in &s.cells {
                if !cells.contains(k) {
                    cells.push(k.clone());
                }
            }
        }
        let hold = Action::Hold(Hold { boards: contended });
        let step = Step::plain(hold, cells, Side::Controller, DoneWhen::Never);
        b.steps.insert(0, step);
    }
    for (b, mine) in boards.iter_mut().zip(&needs) {
        reserve::around(ws, mine, &mut b.steps);
    }
    Schedule {
        format: FORMAT,
        boards,
    }
}

/// What the store says each board runs, for the plan's flash decisions.
pub(super) struct AtImage<'a> {
    images: &'a BTreeMap<BoardName, String>,
    /// Boards more than one walk of the apply needs.
    shared: &'a BTreeSet<BoardName>,
}

impl AtImage<'_> {
    /// Whether `board` runs `image` (its prepared identity for the board) as the store
    /// says, so the plan leaves its flash out; never for a board another walk of the
    /// apply may reflash first: apply judges those when it gets there.
    pub(super) fn runs(&self, board: &BoardName, image: &Image) -> bool {
        !self.shared.contains(board) && self.images.get(board) == Some(&image.runs_as(board))
    }
}

fn board_steps(
    ws: &Workspace,
    board: &BoardName,
    mut work: Vec<&Work<'_>>,
    estimates: &Estimates,
    at: &AtImage<'_>,
) -> Vec<Step> {
    // Images, then mounts, in the order the plan first names them; plan order inside
    // each (image, mount). The sort is stable.
    let mut images: Vec<&ImageName> = Vec::new();
    let mut mounts: Vec<Option<(StorageName, FsName, bool)>> = Vec::new();
    for w in &work {
        if !images.contains(&&w.cell.address.image) {
            images.push(&w.cell.address.image);
        }
        let m = mount_of(w.cell);
        if !mounts.contains(&m) {
            mounts.push(m);
        }
    }
    let rank = |w: &Work<'_>| {
        let image = images.iter().position(|i| *i == &w.cell.address.image);
        let m = mount_of(w.cell);
        let uas = uas_of(ws, w.cell);
        let uas = uas_rank(uas.as_ref()).map(|(on, s)| (on, s.clone()));
        (image, uas, mounts.iter().position(|x| *x == m))
    };
    work.sort_by_cached_key(|w| rank(w));
    let mut steps = Vec::new();
    let flashes = |w: &Work<'_>| {
        !matches!(w.cell.image.source, ImageSource::Installed) && !at.runs(board, &w.cell.image)
    };
    let mut rest: &[&Work<'_>] = &work;
    let mut image_now: Option<&ImageName> = None;
    let mut uas_now: Option<(StorageName, bool)> = None;
    // The cells of the image's `uas` steps: the restore after them serves them.
    let mut uas_cells: Vec<CellKey> = Vec::new();
    while let Some(first) = rest.first() {
        if image_now != Some(&first.cell.address.image) {
            restore_cmdline(&mut steps, &mut uas_cells);
            uas_now = None;
            image_now = Some(&first.cell.address.image);
            let image = &first.cell.address.image;
            let of_image: Vec<CellKey> = rest
                .iter()
                .take_while(|w| &w.cell.address.image == image)
                .map(|w| w.cell.key.clone())
                .collect();
            let flashing = flashes(first);
            let firstboot = first.cell.image.firstboot.as_ref().map(|f| f.kind);
            if flashing
                && let Some(flash) = ws
                    .boards
                    .get(board)
                    .and_then(|b| flash_action(b, image, None))
            {
                steps.push(fetch_step(image, &of_image));
                flash_steps(&mut steps, image, firstboot, flash, &of_image, None);
            }
            if flashing || steps.is_empty() {
                // A session serves the cells up to the next image that is flashed.
                let span: Vec<&Work<'_>> = rest
                    .iter()
                    .take_while(|w| &w.cell.address.image == image || !flashes(w))
                    .copied()
                    .collect();
                prelude(&mut steps, &span);
            }
            let expect = &first.cell.image.expect;
            let health = groups::health_step(ws, board, &of_image);
            steps.extend(verify_step(image, expect, of_image, Side::Board, flashing));
            steps.extend(health);
        }
        let uas = uas_of(ws, first.cell);
        if uas.is_some() && uas != uas_now {
            let image = &first.cell.address.image;
            let cells: Vec<CellKey> = rest
                .iter()
                .take_while(|w| &w.cell.address.image == image && uas_of(ws, w.cell) == uas)
                .map(|w| w.cell.key.clone())
                .collect();
            uas_cells.extend(cells.iter().cloned());
            let (storage, on) = uas.clone().expect("checked");
            let action = Action::Board(BoardAction::Uas { storage, uas: on });
            steps.push(Step::plain(
                action,
                cells,
                Side::Board,
                DoneWhen::DriverAsWanted,
            ));
            uas_now.clone_from(&uas);
        }
        let key = (&first.cell.address.image, mount_of(first.cell));
        let len = rest
            .iter()
            .take_while(|w| {
                (&w.cell.address.image, mount_of(w.cell)) == key && uas_of(ws, w.cell) == uas
            })
            .count();
        let (same_mount, tail) = rest.split_at(len);
        rest = tail;
        let keys: Vec<CellKey> = same_mount.iter().map(|w| w.cell.key.clone()).collect();
        if let Some((storage, filesystem, mkfs)) = &key.1 {
            let declared = ws.boards.get(board).and_then(|b| b.storage(storage));
            let action = Action::Board(BoardAction::Mount {
                image: first.cell.address.image.clone(),
                storage: storage.clone(),
                filesystem: filesystem.clone(),
                mkfs: *mkfs,
                device: declared.and_then(|d| d.device.clone()),
                serial: declared.and_then(|d| d.serial.clone()),
                size_bytes: declared.and_then(|d| d.size_bytes),
            });
            steps.push(Step::plain(
                action,
                keys.clone(),
                Side::Board,
                DoneWhen::Mounted,
            ));
        }
        // Interleaved cells of one mount take their runs in turns; blocked ones one
        // cell at a time.
        for group in groups_of(same_mount) {
            group_steps(&mut steps, &group, estimates);
        }
        if let Some((storage, filesystem, _)) = key.1 {
            let action = Action::Board(BoardAction::Unmount {
                storage,
                filesystem,
            });
            steps.push(Step::plain(
                action,
                keys,
                Side::Board,
                DoneWhen::NothingToUndo,
            ));
        }
    }
    restore_cmdline(&mut steps, &mut uas_cells);
    steps
}

/// After an image's `uas` steps: the cleanup that puts the command line back.
fn restore_cmdline(steps: &mut Vec<Step>, uas_cells: &mut Vec<CellKey>) {
    if uas_cells.is_empty() {
        return;
    }
    let cells = std::mem::take(uas_cells);
    steps.push(Step::plain(
        Action::Board(BoardAction::RestoreCmdline),
        cells,
        Side::Board,
        DoneWhen::NothingToUndo,
    ));
}

impl Schedule {
    /// Every step's estimate added up, or `None` when one measured step has none.
    pub fn estimate_seconds(&self) -> Option<f64> {
        let mut total = 0.0;
        for s in self.boards.iter().flat_map(|b| &b.steps) {
            match (s.estimate_seconds, &s.action) {
                (Some(e), _) => total += e,
                (None, Action::Cell(CellAction::Measure { .. } | CellAction::WarmUp { .. })) => {
                    return None;
                }
                (None, _) => {}
            }
        }
        Some(total)
    }
}
