//! One board's images in a walk (fetched, prepared for it, written to it, its boot) and
//! the flash steps over them: the one copy a board's walk and a cluster's walk (for each
//! member) both run.

use std::collections::BTreeMap;

use super::worker::Worker;
use crate::failure::CellFailure;
use crate::image::{Cache, Derived, Fetched};
use crate::model::{Image, ImageName};
use crate::plan::schedule::WalkAction;
use crate::store::{BoardState, FORMAT, Flashed};
use crate::transport::Transport;

/// Images fetched and verified in a walk: one fetch serves every board it flashes.
pub(super) type Fetches = BTreeMap<ImageName, Fetched>;

/// What a walk knows of one board's images.
#[derive(Default)]
pub(super) struct Flashing {
    /// Images prepared for this board's first boot in this walk: what is flashed.
    pub(super) derived: BTreeMap<ImageName, Derived>,
    /// What each image flashed in this walk wrote (facts of its cells).
    pub(super) flashed: BTreeMap<ImageName, Flashed>,
    /// Set by a power cycle: the next connect waits for the board to boot.
    pub(super) booting: bool,
    /// The host key accepted after a flash (`[flash] accept_new_host_key`).
    pub(super) new_host_key: Option<String>,
}

impl WalkAction {
    /// Whether the step is part of an image's flash (fetch, derive, flash, power cycle):
    /// needless when the board it is for already runs the image (`Worker::runs_image`).
    pub(super) fn flashes(&self) -> bool {
        match self {
            WalkAction::FetchImage { .. } | WalkAction::Derive { .. } => true,
            WalkAction::Flash { .. }
            | WalkAction::FlashCommand { .. }
            | WalkAction::FlashTpi { .. }
            | WalkAction::PowerCycle { .. } => true,
            WalkAction::ClaimWorkdir { .. }
            | WalkAction::Provision { .. }
            | WalkAction::StopLeftoverServices
            | WalkAction::VerifyImage { .. } => false,
        }
    }

    /// The cluster member a flash step is for (`None`: the walk's board, or, for a
    /// cluster's fetch, every member).
    pub(super) fn member(&self) -> Option<&crate::model::BoardName> {
        match self {
            WalkAction::Derive { member, .. }
            | WalkAction::Flash { member, .. }
            | WalkAction::FlashTpi { member, .. }
            | WalkAction::FlashCommand { member, .. }
            | WalkAction::PowerCycle { member } => member.as_ref(),
            WalkAction::FetchImage { .. }
            | WalkAction::ClaimWorkdir { .. }
            | WalkAction::Provision { .. }
            | WalkAction::StopLeftoverServices
            | WalkAction::VerifyImage { .. } => None,
        }
    }

    /// Whether the step takes the board away (a flash, a power cycle): the walk drops
    /// its session to it first.
    pub(super) fn ends_session(&self) -> bool {
        match self {
            WalkAction::Flash { .. }
            | WalkAction::FlashTpi { .. }
            | WalkAction::FlashCommand { .. }
            | WalkAction::PowerCycle { .. } => true,
            WalkAction::FetchImage { .. }
            | WalkAction::Derive { .. }
            | WalkAction::ClaimWorkdir { .. }
            | WalkAction::Provision { .. }
            | WalkAction::StopLeftoverServices
            | WalkAction::VerifyImage { .. } => false,
        }
    }
}

impl Worker<'_> {
    /// Whether the store says this worker's board runs `image` now (its state, written
    /// when a walk verified it, and `unverified` from the start of any flash): a walk
    /// that shares the board with another judges its flash steps by it when it gets there.
    pub(super) fn runs_image(&self, image: &Image) -> bool {
        matches!(
            self.store.board_state(&self.board.name),
            Ok(Some(s)) if s.identity == image.runs_as(&self.board.name)
        )
    }

    /// Runs a derive, flash or power-cycle step for this worker's board with `image`
    /// (the step's cells'); `false` when `action` is none of them. The caller has
    /// dropped its session to the board (`WalkAction::ends_session`).
    pub(super) fn flash_step(
        &self,
        controller: &mut dyn Transport,
        fetches: &Fetches,
        f: &mut Flashing,
        action: &WalkAction,
        image: &Image,
    ) -> Result<bool, CellFailure> {
        let name = &image.name;
        match action {
            WalkAction::Derive { .. } => {
                let derived = self.derive_image(fetches, image)?;
                f.derived.insert(name.clone(), derived);
            }
            WalkAction::Flash { via, device, .. } => {
                let cut_short = self.flash_cut_short();
                let fetched = self.begin_flash(fetches, f, image)?;
                let report = self.flash(name, &fetched, via, device, cut_short, controller)?;
                // Recorded beside each cell of the image: what was written and proven.
                let mut written = Flashed {
                    file_sha256: Some(fetched.sha256.clone()),
                    written_bytes: Some(report.bytes),
                    written_sha256: Some(report.sha256.clone().into()),
                    ..Flashed::default()
                };
                super::flash::prepared_facts(f.derived.get(name), &mut written);
                if let Some(k) = crate::image::known_facts(&fetched) {
                    written.uncompressed_bytes = Some(k.uncompressed_bytes);
                    written.uncompressed_sha256 = Some(k.uncompressed_sha256.clone());
                }
                written.bmap_mapped_bytes = report.bmap.as_ref().map(|b| b.mapped_bytes);
                f.flashed.insert(name.clone(), written);
            }
            WalkAction::FlashTpi { via, node, .. } => {
                let fetched = self.begin_flash(fetches, f, image)?;
                let mut written = self.flash_tpi(name, &fetched, via, *node)?;
                super::flash::prepared_facts(f.derived.get(name), &mut written);
                f.flashed.insert(name.clone(), written);
            }
            WalkAction::FlashCommand { .. } => {
                let fetched = self.begin_flash(fetches, f, image)?;
                self.flash_command(controller, name, &fetched)?;
                let mut written = Flashed {
                    file_sha256: Some(fetched.sha256.clone()),
                    method: Some("command".into()),
                    ..Flashed::default()
                };
                super::flash::prepared_facts(f.derived.get(name), &mut written);
                f.flashed.insert(name.clone(), written);
                // Without a [power] cycle step, the command reboots the board itself.
                f.booting = true;
            }
            WalkAction::PowerCycle { .. } => {
                self.power_cycle(controller)?;
                f.booting = true;
            }
            WalkAction::FetchImage { .. }
            | WalkAction::ClaimWorkdir { .. }
            | WalkAction::Provision { .. }
            | WalkAction::StopLeftoverServices
            | WalkAction::VerifyImage { .. } => return Ok(false),
        }
        Ok(true)
    }

    /// Connects once the board has booted (`connect_after_boot`) and notes the host
    /// key a flash of `image` let it accept.
    pub(super) fn connect_booted(
        &self,
        f: &mut Flashing,
        image: &Image,
    ) -> Result<Box<dyn Transport>, CellFailure> {
        let flashed = f.flashed.contains_key(&image.name).then_some(image);
        let (t, accepted) = self.connect_after_boot(flashed)?;
        f.booting = false;
        if let Some(fingerprint) = accepted {
            f.new_host_key = Some(fingerprint.clone());
            if let Some(written) = f.flashed.get_mut(&image.name) {
                written.accepted_host_key = Some(fingerprint.clone());
            }
        }
        Ok(t)
    }

    /// After the board proved it runs `image`: the board's state says so, which the next
    /// plan reads to leave its flash out.
    pub(super) fn record_at_image(&self, f: &Flashing, image: &Image) -> Result<(), CellFailure> {
        self.store.write_board_state(&BoardState {
            format: FORMAT,
            board: self.board.name.to_string(),
            image: image.name.to_string(),
            identity: image.runs_as(&self.board.name),
            verified_session: self.session.to_string(),
            host_key: f.new_host_key.clone(),
        })?;
        Ok(())
    }

    /// Whether an earlier apply began a flash of this board and never verified it (its
    /// state says `unverified`, from another session): one killed in its power cycle
    /// may have left the board off.
    fn flash_cut_short(&self) -> bool {
        matches!(
            self.store.board_state(&self.board.name),
            Ok(Some(s)) if s.identity == "unverified" && s.verified_session != self.session
        )
    }

    /// Before any flash: the board's state says `unverified`, since nothing proves its
    /// image until the next verification. Returns the image to write: the prepared one
    /// (`derive`), or the one `fetch-image` verified.
    fn begin_flash(
        &self,
        fetches: &Fetches,
        f: &Flashing,
        image: &Image,
    ) -> Result<Fetched, CellFailure> {
        self.store.write_board_state(&BoardState {
            format: FORMAT,
            board: self.board.name.to_string(),
            image: image.name.to_string(),
            identity: "unverified".into(),
            verified_session: self.session.to_string(),
            host_key: None,
        })?;
        if let Some(d) = f.derived.get(&image.name) {
            return Ok(d.fetched.clone());
        }
        let fetched = fetches
            .get(&image.name)
            .cloned()
            .ok_or_else(|| CellFailure::Flash {
                image: image.name.to_string(),
                message: "the image was not fetched".into(),
            })?;
        // A prepared image is never flashed unprepared: the board would not come up.
        if image.firstboot.is_some() {
            return Err(CellFailure::Flash {
                image: image.name.to_string(),
                message: "its first-boot preparation was not derived; nothing was flashed".into(),
            });
        }
        Ok(fetched)
    }

    /// The image's first-boot preparation for this board, written into a copy in the
    /// image cache, or the cache's copy from an earlier apply (`image::derive`).
    fn derive_image(&self, fetches: &Fetches, image: &Image) -> Result<Derived, CellFailure> {
        let failed = |message: String| CellFailure::Flash {
            image: image.name.to_string(),
            message,
        };
        let fetched = fetches
            .get(&image.name)
            .ok_or_else(|| failed("the image was not fetched".into()))?;
        let prep = image.prepared_for(&self.board.name).ok_or_else(|| {
            failed(format!(
                "no first-boot preparation for board {}",
                self.board.name
            ))
        })?;
        self.phase(
            None,
            format!(
                "prepare {}'s first boot ({}: user {}, key {}, host name {})",
                image.name,
                prep.kind.name(),
                prep.user,
                prep.key.fingerprint,
                prep.hostname
            ),
        );
        let cache = Cache::beside_store(self.store.root());
        let derived =
            crate::image::derive(&cache, fetched, &prep).map_err(|e| failed(e.to_string()))?;
        self.phase(
            None,
            format!(
                "{} prepared image sha256:{} ({} bytes)",
                if derived.reused {
                    "reused the image cache's"
                } else {
                    "derived the"
                },
                derived.record.derived_sha256,
                derived.record.derived_bytes
            ),
        );
        Ok(derived)
    }
}
