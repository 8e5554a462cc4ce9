//! Which steps overwrite a disk and which need root on the board: `apply` asks before
//! the first, refuses a board that is not root before the second, and
//! `apply --dry-run` shows the disks the first would overwrite.

use std::collections::BTreeSet;

use super::{Action, BoardAction, Step, WalkAction};
use crate::model::BoardName;

/// What a step does that `apply` asks about or refuses: one row per kind of step, so
/// that each step kind is judged once (the questions below read this table).
#[derive(Default)]
struct Danger<'a> {
    /// It overwrites a disk: of the cluster member it is for, else (`None`) of the
    /// walk's own board.
    #[expect(
        clippy::option_option,
        reason = "None: destroys nothing; Some(None): the walk's own board's disk"
    )]
    destroys: Option<Option<&'a BoardName>>,
    /// The block device it overwrites, and the board it is on (`None`: the walk's).
    device: Option<(Option<&'a str>, &'a str)>,
    /// What in it needs root on the board.
    root: Option<&'static str>,
}

impl Action {
    /// The table: what each kind of step does.
    fn danger(&self) -> Danger<'_> {
        match self {
            Action::Walk(WalkAction::Flash {
                via,
                device,
                member,
                ..
            }) => Danger {
                destroys: Some(member.as_ref()),
                device: Some((Some(via.as_str()), device.as_str())),
                // A flash is the controller's.
                root: None,
            },
            // A tpi or command flash names no device.
            Action::Walk(
                WalkAction::FlashTpi { member, .. } | WalkAction::FlashCommand { member, .. },
            ) => Danger {
                destroys: Some(member.as_ref()),
                ..Danger::default()
            },
            Action::Board(BoardAction::Mount { mkfs, device, .. }) => Danger {
                destroys: mkfs.then_some(None),
                device: device.as_deref().filter(|_| *mkfs).map(|d| (None, d)),
                // A mount without mkfs mounts what a mount of this walk made as root.
                root: mkfs.then_some("mkfs, mount"),
            },
            Action::Board(BoardAction::MountTmpfs { .. }) => Danger {
                root: Some("mount"),
                ..Danger::default()
            },
            Action::Board(BoardAction::Uas { .. }) => Danger {
                root: Some("edits the boot partition's kernel command line"),
                ..Danger::default()
            },
            // Steps that destroy nothing and need no root: `Unmount` undoes a mount the
            // walk made as root already, `RestoreCmdline` an edit it made; installs are
            // judged per package when provisioning (`apply::route`); a cluster's deploy
            // and a cell's commands are the user's own, on their own paths.
            Action::Walk(
                WalkAction::FetchImage { .. }
                | WalkAction::Derive { .. }
                | WalkAction::PowerCycle { .. }
                | WalkAction::ClaimWorkdir { .. }
                | WalkAction::Provision { .. }
                | WalkAction::StopLeftoverServices
                | WalkAction::VerifyImage { .. },
            )
            | Action::Board(
                BoardAction::Connect
                | BoardAction::ConnectPeer { .. }
                | BoardAction::GatherFacts
                | BoardAction::Health { .. }
                | BoardAction::UnmountTmpfs { .. }
                | BoardAction::Unmount { .. }
                | BoardAction::RestoreCmdline,
            )
            | Action::Hold(_)
            | Action::Reserve(_)
            | Action::Cluster(_)
            | Action::Cell(_) => Danger::default(),
        }
    }

    /// The board whose disk the step overwrites (a flash, a `mkfs`): the cluster member
    /// it is for, else the walk's own board; `None` for a step that destroys nothing.
    pub fn destroys_on<'a>(&'a self, walk: &'a BoardName) -> Option<&'a BoardName> {
        self.danger().destroys.map(|member| member.unwrap_or(walk))
    }

    /// The block device the step overwrites and the board of the workspace it is on: a
    /// format's on the walk's board, a `dd` flash's on its `via` board. `None` for a
    /// step that names no device (a tpi or command flash) or destroys nothing.
    pub fn overwritten_device<'a>(&'a self, walk: &'a BoardName) -> Option<(BoardName, &'a str)> {
        let (on, device) = self.danger().device?;
        Some((on.map_or_else(|| walk.clone(), BoardName::new), device))
    }

    /// What in the step needs root on the board (`mkfs`, `mount`, ...), or `None`: a
    /// board that logs in as another user without `become = "sudo"` cannot run it.
    /// Package installs are judged per package when provisioning (`apply::route`).
    pub fn needs_root(&self) -> Option<&'static str> {
        self.danger().root
    }
}

/// The steps of `steps` that need root, a line each (`format ssd as ext4 (...) (mkfs,
/// mount)`), each once, at most `most` (then how many more).
pub fn root_steps(steps: &[Step], most: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut more = 0;
    for s in steps {
        let Some(why) = s.action.needs_root() else {
            continue;
        };
        let line = format!("{} ({why})", s.action.label());
        if !seen.insert(line.clone()) {
            continue;
        }
        if out.len() < most {
            out.push(line);
        } else {
            more += 1;
        }
    }
    if more > 0 {
        out.push(format!("... and {more} more"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::schedule::DoneWhen;

    fn step(action: Action) -> Step {
        Step {
            action,
            cells: vec![],
            side: crate::model::Side::Board,
            resources: vec![],
            done_when: DoneWhen::Never,
            estimate_seconds: None,
        }
    }

    #[test]
    fn root_steps_are_the_mounts_listed_once_and_bounded() {
        let tmpfs = |test: &str| {
            step(Action::Board(BoardAction::MountTmpfs {
                test: test.into(),
                size: crate::model::TmpfsSize::Mib(8),
            }))
        };
        let mkfs = step(Action::Board(BoardAction::Mount {
            image: "installed".into(),
            storage: "ssd".into(),
            filesystem: "ext4".into(),
            mkfs: true,
            device: Some("/dev/sda".into()),
            serial: None,
            size_bytes: None,
        }));
        let steps = vec![
            step(Action::Board(BoardAction::Connect)),
            mkfs.clone(),
            tmpfs("xz"),
            tmpfs("xz"),
            tmpfs("a"),
            tmpfs("b"),
        ];
        let got = root_steps(&steps, 3);
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got[0].starts_with("format ssd as ext4") && got[0].ends_with("(mkfs, mount)"));
        assert_eq!(got[1], "mount a tmpfs of 8 MiB for xz (mount)");
        assert_eq!(got[3], "... and 1 more");
        assert!(root_steps(&steps[..1], 3).is_empty());
        let walk = BoardName::new("pi-1");
        assert_eq!(
            mkfs.action.overwritten_device(&walk),
            Some((walk.clone(), "/dev/sda"))
        );
    }
}
