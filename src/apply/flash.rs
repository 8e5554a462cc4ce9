//! The flash steps on a board: fetch the image, write it through `via` and prove it by
//! read-back, power-cycle the board, and wait for it to boot.

use std::time::{Duration, Instant};

use super::worker::Worker;
use crate::bench;
use crate::failure::CellFailure;
use crate::image::{self, Cache, Fetched};
use crate::model::{BoardName, Image, ImageName, ImageSource, StorageRole};
use crate::store::{FirstbootFact, Flashed};
use crate::transport::Transport;

/// A relative image `path` is the scenario's, so it is taken from the workspace root,
/// wherever benchpipe was started.
fn in_workspace(root: &std::path::Path, source: &ImageSource) -> ImageSource {
    match source {
        ImageSource::Path { path, sha256 } if path.is_relative() => ImageSource::Path {
            path: root.join(path),
            sha256: sha256.clone(),
        },
        other => other.clone(),
    }
}

/// What a flash of a prepared image records beside the cells (`flashed`): the base
/// file's sha256, the prepared image's, and what was prepared (never the key's text, a
/// password or its hash). `file_sha256` is then the prepared image's.
pub(super) fn prepared_facts(derived: Option<&crate::image::Derived>, written: &mut Flashed) {
    let Some(d) = derived else { return };
    let r = &d.record;
    written.base_file_sha256 = Some(r.base_sha256.clone());
    written.firstboot = Some(FirstbootFact {
        kind: Some(r.kind.as_str().into()),
        user: Some(r.user.as_str().into()),
        key_fingerprint: Some(r.key_fingerprint.clone()),
        hostname: Some(r.hostname.as_str().into()),
        derivation_key: Some(r.derivation_key.as_str().into()),
        derived_sha256: Some(r.derived_sha256.as_str().into()),
        derived_bytes: Some(r.derived_bytes),
        other: std::collections::BTreeMap::new(),
    });
}

impl Worker<'_> {
    /// The image in the cache beside the store, its sha256 verified.
    pub(super) fn fetch_image(&self, image: &Image) -> Result<Fetched, CellFailure> {
        self.phase(None, format!("fetch image {}", image.name));
        let cache = Cache::beside_store(self.store.root());
        let source = in_workspace(self.root, &image.source);
        image::fetch(&cache, image.name.as_str(), &source, &|_| {}).map_err(|e| {
            CellFailure::Flash {
                image: image.name.to_string(),
                message: e.to_string(),
            }
        })
    }

    /// Writes the image to `device` on `via` (a board of the workspace) and verifies it.
    /// After a flash an earlier apply began and never verified (`cut_short`), a board
    /// flashing itself that does not answer is power-cycled first: that apply may have
    /// been killed between its power cycle's off and on.
    pub(super) fn flash(
        &self,
        image: &ImageName,
        fetched: &Fetched,
        via: &str,
        device: &str,
        cut_short: bool,
        controller: &mut dyn Transport,
    ) -> Result<crate::flash::dd::DdReport, CellFailure> {
        let via_board =
            self.boards
                .get(&BoardName::new(via))
                .ok_or_else(|| CellFailure::Refused {
                    reason: format!("[flash] via names no board: {via}"),
                })?;
        // Only the board's declared boot storage may be written.
        let declared: Vec<&str> = self
            .board
            .storage
            .iter()
            .filter(|s| s.role == StorageRole::Boot)
            .filter_map(|s| s.device.as_deref())
            .collect();
        let device = self
            .board
            .storage
            .iter()
            .find(|s| s.name.as_str() == device)
            .and_then(|s| s.device.as_deref())
            .unwrap_or(device);
        let mut t = match self.connector.board(via_board) {
            Ok(t) => t,
            Err(e)
                if cut_short
                    && via_board.name == self.board.name
                    && !matches!(e, crate::transport::TransportError::HostKey { .. })
                    && crate::power::plan(self.board, crate::power::PowerAction::Cycle).is_ok() =>
            {
                self.phase(
                    None,
                    format!(
                        "{} does not answer after a flash an earlier apply began and never \
                         verified ({e}): power-cycling it before flashing again",
                        self.board.name
                    ),
                );
                self.power_cycle(controller)?;
                self.connect_after_boot(None)?.0
            }
            Err(e) => return Err(e.into()),
        };
        let facts = image::known_facts(fetched);
        let max = facts.as_ref().map(|f| f.uncompressed_bytes);
        let failed = |message: String| CellFailure::Flash {
            image: image.to_string(),
            message,
        };
        // A `.bmap` shipped beside the image file: bmaptool then writes only its
        // mapped blocks, where the host has bmaptool.
        let bmap = match crate::flash::bmap::beside(&fetched.path) {
            Some(p) => {
                Some(crate::flash::bmap::read(&p).map_err(|e| failed(format!("bmap: {e}")))?)
            }
            None => None,
        };
        // The stream hashes itself (for the image's facts); dd does not hash it again.
        let mut stream = image::open_hashed(fetched, max).map_err(|e| failed(e.to_string()))?;
        self.phase(None, format!("flash {image} to {device} via {via}"));
        let label = format!("[{}] flash {image}", self.board.name);
        let show = crate::flash::progress_display(&label);
        let options = crate::flash::dd::Options {
            expected_len: max,
            bmap: bmap.as_ref(),
        };
        let source = crate::flash::dd::Source::Hashed(stream.as_mut());
        let report =
            crate::flash::dd::write_with(t.as_mut(), device, &declared, source, &options, &show)
                .map_err(|e| failed(e.to_string()))?;
        let how = match (&report.bmap, &bmap) {
            (Some(b), _) => format!(
                " ({} mapped bytes written by bmaptool, read back)",
                b.mapped_bytes
            ),
            (None, Some(_)) => " (no bmaptool on the host: the .bmap was not used)".into(),
            (None, None) => String::new(),
        };
        self.phase(
            None,
            format!(
                "flashed {} bytes of {image} in {:.1} s, verified by read-back in {:.1} s{how}",
                report.bytes, report.write_seconds, report.verify_seconds
            ),
        );
        // With the length unknown up front, dd verified whatever arrived: the stream's
        // digest must still be the image's.
        // The first full read of the image recorded its facts.
        if let Some(f) = image::known_facts(fetched)
            && f.uncompressed_sha256 != report.sha256
        {
            return Err(failed(format!(
                "wrote {} bytes with sha256 {}, but the image's content has sha256 {}",
                report.bytes, report.sha256, f.uncompressed_sha256
            )));
        }
        Ok(report)
    }

    /// Where systemd runs the board, waits until it has finished booting
    /// (`systemctl is-system-running --wait`): SSH can answer before the services a
    /// benchmark needs are up. While it still says `initializing` or `starting` (a
    /// systemctl without `--wait`, or one that returned early), it is asked again every
    /// 2 s until `within` is up. `degraded` is said and accepted; a board without
    /// systemd (`offline`, or no systemctl) is not waited for.
    fn wait_for_systemd(&self, t: &mut dyn Transport, within: Duration) -> Result<(), CellFailure> {
        self.phase(None, "wait for the system to finish booting");
        let t0 = Instant::now();
        let late = || CellFailure::BoardLost {
            cause: format!(
                "{}: answered SSH but systemd did not finish booting within {} s",
                self.board.name,
                within.as_secs()
            ),
        };
        loop {
            let left = within.saturating_sub(t0.elapsed());
            let out = t.run(
                "if command -v systemctl >/dev/null 2>&1; then systemctl is-system-running --wait; else echo no-systemd; fi",
                Some(left.max(Duration::from_secs(1))),
            );
            let out = match out {
                Err(crate::transport::TransportError::Timeout { .. }) => return Err(late()),
                other => other?,
            };
            let state = out.stdout_str().trim().to_string();
            match state.as_str() {
                "initializing" | "starting" if t0.elapsed() < within => {
                    self.phase(None, format!("systemd says {state}: waiting"));
                    self.sleep(Duration::from_secs(2))?;
                }
                "initializing" | "starting" => return Err(late()),
                "degraded" => {
                    self.phase(None, "booted, but systemd says degraded (a unit failed)");
                    return Ok(());
                }
                _ => return Ok(()),
            }
        }
    }

    /// Runs the board's `[flash] command` on the controller (or its `via` host), with
    /// `image` the verified file as the scenario declares it (compressed when it is):
    /// usbboot and an SD mux, a smart plug, a vendor tool. On a `via` host, `image` is
    /// the same path there: the command is for a flasher that shares the file. Its
    /// exit status decides; the boot and the image's expectations are checked after it.
    pub(super) fn flash_command(
        &self,
        controller: &mut dyn Transport,
        image: &ImageName,
        fetched: &Fetched,
    ) -> Result<(), CellFailure> {
        let crate::model::Flash::Command { command, via } = &self.board.flash else {
            return Err(CellFailure::Refused {
                reason: format!("board {} has no [flash] command", self.board.name),
            });
        };
        let mut vars = crate::power::board_vars(self.board);
        vars.set("image", fetched.path.to_string_lossy().into_owned());
        let command = bench::render(command, &vars).map_err(CellFailure::from)?;
        let failed = |message: String| CellFailure::Flash {
            image: image.to_string(),
            message,
        };
        let mut remote = match via {
            Some(v) => Some(self.connect_via(v).map_err(|e| {
                failed(format!("cannot reach {v} to run the [flash] command: {e}"))
            })?),
            None => None,
        };
        let t: &mut dyn Transport = match remote.as_mut() {
            Some(r) => r.as_mut(),
            None => controller,
        };
        self.phase(
            None,
            format!(
                "flash {image} with the board's [flash] command{}",
                via.as_ref().map(|v| format!(" on {v}")).unwrap_or_default()
            ),
        );
        let out = t.run(&command, Some(Duration::from_secs(3600)))?;
        if !out.exit.success() {
            return Err(failed(
                CellFailure::step_failed("[flash] command", &command, &out.exit, &out.stderr_str())
                    .to_string(),
            ));
        }
        Ok(())
    }

    /// Power-cycles the board (`crate::power::plan`: `[power] cycle`, or `off` then `on`,
    /// or a tpi board's BMC), on the controller or the power's `via` host.
    pub(super) fn power_cycle(&self, controller: &mut dyn Transport) -> Result<(), CellFailure> {
        use crate::power::{PowerAction, plan, run};
        let plan = plan(self.board, PowerAction::Cycle)?;
        let mut remote = match &plan.via {
            Some(v) => Some(self.connect_via(v).map_err(|e| CellFailure::Refused {
                reason: format!("cannot reach {v} to power-cycle {}: {e}", self.board.name),
            })?),
            None => None,
        };
        let t: &mut dyn Transport = match remote.as_mut() {
            Some(r) => r.as_mut(),
            None => controller,
        };
        self.phase(
            None,
            format!(
                "power cycle{}",
                plan.via
                    .as_ref()
                    .map(|v| format!(" on {v}"))
                    .unwrap_or_default()
            ),
        );
        run(t, PowerAction::Cycle, &plan)?;
        Ok(())
    }

    /// Connects, retrying until the board answers or its `[power] boot_timeout` passes;
    /// the last error is the cause. A host key refusal is not retried. After a flash
    /// (`flashed`, the image this walk wrote), the cause says the board did not answer
    /// SSH after it, and why that is expected of an image flashed without first-boot
    /// preparation (`unprepared_cause`).
    ///
    /// With `[flash] accept_new_host_key`, a changed host key is trusted once here, right
    /// after a flash this walk performed and verified, and its fingerprint returned; at
    /// any other time a changed key is still refused.
    pub(super) fn connect_after_boot(
        &self,
        flashed: Option<&Image>,
    ) -> Result<(Box<dyn Transport>, Option<String>), CellFailure> {
        let after_flash = flashed.is_some();
        let boot_timeout = self
            .board
            .power
            .as_ref()
            .map_or(crate::model::DEFAULT_BOOT_TIMEOUT, |p| p.boot_timeout);
        let target = ssh_target(self.board);
        self.phase(
            None,
            format!(
                "wait for boot: SSH at {target}, up to {} s (the host name is resolved at each try)",
                boot_timeout.as_secs()
            ),
        );
        let t0 = Instant::now();
        let mut accepted = None;
        let mut said: Option<Instant> = None;
        loop {
            match self.connector.board(self.board) {
                Ok(mut t) => {
                    let left = boot_timeout.saturating_sub(t0.elapsed());
                    self.wait_for_systemd(t.as_mut(), left.max(Duration::from_secs(10)))?;
                    return Ok((t, accepted));
                }
                Err(crate::transport::TransportError::HostKey { .. })
                    if self.board.accept_new_host_key && after_flash && accepted.is_none() =>
                {
                    let crate::model::Connection::Ssh(target) = &self.board.connection else {
                        return Err(CellFailure::Refused {
                            reason: "a local board has no host key".into(),
                        });
                    };
                    let trusted = crate::transport::ssh::trust(
                        &self.board.name,
                        target,
                        Duration::from_secs(30),
                        &crate::transport::ssh::Accept::Offered,
                    )?;
                    self.phase(
                        None,
                        format!(
                            "accepted the new host key {} after the flash",
                            trusted.fingerprint
                        ),
                    );
                    accepted = Some(trusted.fingerprint);
                }
                Err(e @ crate::transport::TransportError::HostKey { .. }) => {
                    return Err(e.into());
                }
                Err(e) if t0.elapsed() > boot_timeout => {
                    let cause = match flashed {
                        Some(image) => format!(
                            "{}: did not come back within {} s of its power cycle: it did not \
                             answer SSH after the flash of {} ({e}){}",
                            self.board.name,
                            boot_timeout.as_secs(),
                            image.name,
                            unprepared_cause(image, &self.board.name)
                                .map(|c| format!("; {c}"))
                                .unwrap_or_default()
                        ),
                        None => format!(
                            "{}: did not come back within {} s of its power cycle: {e}",
                            self.board.name,
                            boot_timeout.as_secs()
                        ),
                    };
                    return Err(CellFailure::BoardLost { cause });
                }
                Err(e) => {
                    // Said at most every `WAIT_SAID` seconds: what is waited for, what
                    // the last try found, and how long is left.
                    if said.is_none_or(|at| at.elapsed() >= WAIT_SAID) {
                        let left = boot_timeout.saturating_sub(t0.elapsed());
                        self.phase(None, still_waiting(&target, left, &e.to_string()));
                        said = Some(Instant::now());
                    }
                    self.sleep(Duration::from_secs(2))?;
                }
            }
        }
    }
}

/// Whether `image` is flashed onto `board` without first-boot preparation
/// (`[images.NAME.firstboot]`, docs/FORMAT.md; `kind = "none"` is none). The one place
/// that decides it.
pub(crate) fn flashed_without_firstboot(image: &Image, board: &crate::model::BoardName) -> bool {
    image.prepared_for(board).is_none()
}

/// What an unreachable board's cause adds after a flash without first-boot preparation:
/// a freshly flashed real board has no user or key for benchpipe, and often SSH off,
/// until its boot partition declares them (the lab's boards behave the same).
pub(crate) fn unprepared_cause(image: &Image, board: &crate::model::BoardName) -> Option<String> {
    flashed_without_firstboot(image, board).then(|| {
        format!(
            "the image was flashed without first-boot preparation: a fresh image declares \
             no user or key for benchpipe (and often keeps SSH off) until its boot partition \
             says otherwise; add [images.{}.firstboot] (see docs/FORMAT.md)",
            image.name
        )
    })
}

/// How often the boot wait says it is still waiting.
const WAIT_SAID: Duration = Duration::from_secs(15);

/// `user@host:port` of a board's SSH, as its board file declares it.
fn ssh_target(board: &crate::model::Board) -> String {
    match &board.connection {
        crate::model::Connection::Local => "the controller itself".into(),
        crate::model::Connection::Ssh(t) => format!(
            "{}{}:{}",
            t.user.as_ref().map(|u| format!("{u}@")).unwrap_or_default(),
            t.host,
            t.port.unwrap_or(22)
        ),
    }
}

/// The boot wait's progress line: the target, the time left, and the last try's error
/// (shown as stored text is: one line, bounded).
fn still_waiting(target: &str, left: Duration, last: &str) -> String {
    format!(
        "still waiting for SSH at {target}, {} s left; last try: {}",
        left.as_secs(),
        crate::shown::shown(last)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[test]
    fn an_unprepared_flash_names_firstboot_in_the_cause() {
        let image = Image {
            name: ImageName::new("raspios"),
            source: ImageSource::Installed,
            expect: crate::model::Expectations::default(),
            firstboot: None,
        };
        let cause = unprepared_cause(&image, &"pi-1".into()).unwrap();
        assert!(
            cause.contains("flashed without first-boot preparation"),
            "{cause}"
        );
        assert!(cause.contains("[images.raspios.firstboot]"), "{cause}");
    }

    #[test]
    fn the_boot_wait_says_what_it_waits_for_and_what_it_found() {
        let mut board = crate::plan::fixtures::workspace().boards[&"pi-1".into()].clone();
        board.connection = crate::model::Connection::Ssh(crate::model::SshTarget {
            host: "pi-1.local".into(),
            user: Some("bench".into()),
            ..Default::default()
        });
        let target = ssh_target(&board);
        assert_eq!(target, "bench@pi-1.local:22");
        let line = still_waiting(
            &target,
            Duration::from_secs(42),
            "pi-1: bench@pi-1.local:22: cannot resolve host name pi-1.local\n",
        );
        assert_eq!(
            line,
            "still waiting for SSH at bench@pi-1.local:22, 42 s left; last try: pi-1: bench@pi-1.local:22: cannot resolve host name pi-1.local\\n"
        );
    }

    #[test]
    fn a_relative_image_path_is_the_workspaces() {
        let rel = ImageSource::Path {
            path: PathBuf::from("images/a.img"),
            sha256: "ab".into(),
        };
        let abs = ImageSource::Path {
            path: PathBuf::from("/srv/a.img"),
            sha256: "ab".into(),
        };
        let root = Path::new("/work/project");
        assert_eq!(
            in_workspace(root, &rel),
            ImageSource::Path {
                path: PathBuf::from("/work/project/images/a.img"),
                sha256: "ab".into(),
            }
        );
        assert_eq!(in_workspace(root, &abs), abs);
        assert_eq!(
            in_workspace(root, &ImageSource::Installed),
            ImageSource::Installed
        );
    }
}
