//! Storage facts recorded beside each cell, and the UAS board-state steps: the kernel
//! command line's `usb-storage.quirks` for a storage's USB device, the power cycle that
//! applies it (`flash.rs`'s), the driver verified after boot, and the command line put
//! back afterwards, also after failures.

use super::StepStatus;
use super::board::BoardWalk;
use crate::failure::CellFailure;
use crate::model::{Storage, StorageName};
use crate::storage::{self, cmdline, facts};
use crate::transport::Transport;

/// The driver a `uas` setting means.
fn driver(uas: bool) -> &'static str {
    if uas { "uas" } else { "usb-storage" }
}

/// A storage's declared `driver` against the one bound now: its cells measure only
/// the case they name (a UASP case in a port or kernel that does not run it, or the
/// other case plugged in, fails them with what was found).
pub(super) fn check_driver(
    st: &Storage,
    want: &str,
    facts: Result<Option<facts::StorageFacts>, CellFailure>,
) -> Result<(), CellFailure> {
    let f = facts?.unwrap_or_default();
    let usb = f.usb.as_ref();
    let found = usb.and_then(|u| u.driver.as_deref());
    if found == Some(want) {
        return Ok(());
    }
    Err(CellFailure::Storage {
        message: format!(
            "storage {} declares driver `{want}`, but its device {} runs under {}{}: is the other case plugged in?",
            st.name,
            f.real.as_deref().unwrap_or(&f.device),
            found.map_or("no USB driver".to_string(), |d| format!("`{d}`")),
            usb.and_then(|u| u.id.as_deref())
                .map_or(String::new(), |id| format!(" (USB {id})")),
        ),
    })
}

impl super::worker::Worker<'_> {
    fn storage_of(&self, name: &StorageName) -> Result<&Storage, CellFailure> {
        self.board
            .storage(name)
            .ok_or_else(|| CellFailure::Refused {
                reason: format!("board {} declares no storage {name}", self.board.name),
            })
    }

    /// A storage's facts from the board's sysfs (`storage::facts`); a storage without a
    /// device has none. The sysfs root is the connector's (a fake tree only in tests).
    pub(super) fn storage_facts(
        &self,
        t: &mut dyn Transport,
        st: &Storage,
    ) -> Result<Option<facts::StorageFacts>, CellFailure> {
        let Some(device) = &st.device else {
            return Ok(None);
        };
        Ok(Some(facts::gather(t, self.connector.sysfs(), device)?))
    }

    /// The USB device's VID:PID and its driver now, and the command line file.
    fn uas_state(
        &self,
        t: &mut dyn Transport,
        st: &Storage,
    ) -> Result<(String, Option<String>, String, facts::StorageFacts), CellFailure> {
        let path = self.board.boot_cmdline.clone().ok_or_else(|| CellFailure::Refused {
            reason: format!(
                "board {} declares no [boot] cmdline; benchpipe edits no kernel command line that is not declared",
                self.board.name
            ),
        })?;
        let f = self
            .storage_facts(t, st)?
            .ok_or_else(|| CellFailure::Refused {
                reason: format!(
                    "storage {} has no device: its USB device is unknown",
                    st.name
                ),
            })?;
        let usb = f.usb.as_ref();
        let id = st
            .uas
            .as_ref()
            .and_then(|u| u.usb_id.clone())
            .or_else(|| usb.and_then(|u| u.id.clone()))
            .ok_or_else(|| CellFailure::Storage {
                message: format!(
                    "storage {} ({}) is not a USB device: no USB interface above {}/block/{}; `uas` applies to USB storage",
                    st.name,
                    f.real.as_deref().unwrap_or(&f.device),
                    self.connector.sysfs(),
                    f.disk.as_deref().unwrap_or("?"),
                ),
            })?;
        Ok((id, usb.and_then(|u| u.driver.clone()), path, f))
    }

    /// `DriverAsWanted`: the command line already says it and the device runs under it.
    pub(super) fn uas_in_place(
        &self,
        w: &mut BoardWalk<'_, '_>,
        name: &StorageName,
        uas: bool,
    ) -> bool {
        let (Ok(st), Some(board)) = (self.storage_of(name), w.own.board.as_deref_mut()) else {
            return false;
        };
        w.own.uas_touched = true;
        let Ok((id, found, path, f)) = self.uas_state(board, st) else {
            return false;
        };
        let quirk =
            cmdline::read(board, &path).and_then(|text| cmdline::has_quirk(&path, &text, &id));
        let done = matches!(quirk, Ok(q) if q != uas) && found.as_deref() == Some(driver(uas));
        if done {
            self.phase(
                None,
                format!("{name}: already under {} ({id})", driver(uas)),
            );
            w.own
                .storage_facts
                .insert(name.clone(), crate::store::record_of(&f));
        }
        done
    }

    /// The `Uas` step: edit the command line (when it must change), power-cycle, wait for
    /// the boot, and verify the driver. A mismatch fails the step's cells with the cause.
    pub(super) fn set_uas(
        &self,
        w: &mut BoardWalk<'_, '_>,
        name: &StorageName,
        uas: bool,
    ) -> Result<(), CellFailure> {
        let st = self.storage_of(name)?;
        let board = w
            .own
            .board
            .as_deref_mut()
            .ok_or_else(super::board::not_connected)?;
        w.own.uas_touched = true;
        let (id, _, path, _) = self.uas_state(board, st)?;
        // A lost connection is the board's loss; anything else is a refusal to edit.
        let edit_failed = |e: cmdline::CmdlineError| match e {
            cmdline::CmdlineError::Transport(t) => CellFailure::from(t),
            e => CellFailure::Refused {
                reason: e.to_string(),
            },
        };
        let text = cmdline::read(board, &path).map_err(edit_failed)?;
        if let Some(new) = cmdline::edit(&path, &text, &id, uas).map_err(edit_failed)? {
            self.phase(
                None,
                format!(
                    "{path}: {} usb-storage.quirks {id}:u",
                    if uas { "remove" } else { "add" }
                ),
            );
            cmdline::write(board, &path, &text, &new).map_err(edit_failed)?;
        }
        self.reboot(w)?;
        let board = w.own.board.as_deref_mut().expect("reboot connects");
        let f = self.storage_facts(board, st)?.unwrap_or_default();
        let found = f.usb.as_ref().and_then(|u| u.driver.clone());
        w.own
            .storage_facts
            .insert(name.clone(), crate::store::record_of(&f));
        if found.as_deref() != Some(driver(uas)) {
            return Err(CellFailure::Storage {
                message: format!(
                    "storage {name}: after the power cycle the USB device {id} runs under {}, not {} ({path} {} usb-storage.quirks={id}:u)",
                    found
                        .as_deref()
                        .map_or("no driver".to_string(), |d| format!("`{d}`")),
                    driver(uas),
                    if uas { "without" } else { "with" },
                ),
            });
        }
        self.phase(
            None,
            format!("{name}: verified under {} ({id})", driver(uas)),
        );
        Ok(())
    }

    /// Unmounts what is mounted (a reboot would drop it), power-cycles through the
    /// board's `[power] cycle` and connects once it is back.
    fn reboot(&self, w: &mut BoardWalk<'_, '_>) -> Result<(), CellFailure> {
        if let (Some((s, f)), Some(board)) =
            (w.own.mounted.current.take(), w.own.board.as_deref_mut())
        {
            storage::release(board, &s, &f).map_err(CellFailure::from)?;
        }
        w.own.board = None;
        self.power_cycle(w.controller.as_mut())?;
        let (t, _) = self.connect_after_boot(None)?;
        w.own.board = Some(t);
        Ok(())
    }

    /// The `RestoreCmdline` cleanup: the backup's original goes back, and the board is
    /// power-cycled so it runs it.
    pub(super) fn restore_cmdline(
        &self,
        w: &mut BoardWalk<'_, '_>,
        cells: &[crate::plan::CellKey],
    ) -> StepStatus {
        let (true, Some(path), Some(board)) = (
            std::mem::take(&mut w.own.uas_touched),
            self.board.boot_cmdline.as_deref(),
            w.own.board.as_deref_mut(),
        ) else {
            return StepStatus::Done;
        };
        match cmdline::restore(board, path) {
            Ok(false) => StepStatus::Done,
            Ok(true) => {
                self.phase(None, format!("{path}: restored"));
                match self.reboot(w) {
                    Ok(()) => StepStatus::Ran,
                    Err(cause) => fail_all(w, cells, cause),
                }
            }
            Err(e) => {
                self.phase(None, format!("could not restore {path}: {e}"));
                let cause = match e {
                    cmdline::CmdlineError::Transport(t) => CellFailure::from(t),
                    e => CellFailure::Refused {
                        reason: e.to_string(),
                    },
                };
                fail_all(w, cells, cause)
            }
        }
    }
}

/// A cleanup that failed leaves the board unclean: its cells fail (as `cleanup_status`).
fn fail_all(
    w: &mut BoardWalk<'_, '_>,
    cells: &[crate::plan::CellKey],
    cause: CellFailure,
) -> StepStatus {
    if cells.is_empty() {
        return StepStatus::Done;
    }
    w.cleanup_status(cells, Err(cause))
}
