//! A lab board's boot disk and power: what "booting the flashed image" means in a lab.
//!
//! Each board gets a loop-device boot disk (`role = "boot"`, `[flash] method = "dd"`).
//! Power off kills every process in the board's namespace at once, as a power cut
//! would. Power on starts its sshd through a boot step that runs inside the sshd's own
//! mount namespace: when the boot disk holds a filesystem, it is mounted read-only,
//! its `os-release` is copied out and bind-mounted over `/etc/os-release` (so SSH
//! sessions see the flashed image's), and the disk is unmounted again, like a system
//! that boots into RAM, so the board can be flashed through itself. Markers in the
//! image's `/etc/benchpipe-lab/` steer the boot:
//! - `new-host-key`: a firstboot that makes a new SSH host key, once per flashed
//!   filesystem (its UUID); the lab's known_hosts keeps the old one.
//! - `no-boot`: the board never comes back (sshd is not started).
//!
//! A disk that holds a filesystem the boot step cannot mount does not boot either.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{LabBoard, LabDisk, LabOptions, fail, netns_pids, pid_alive, run_dir, state};
use crate::error::Error;
use crate::transport::quote;

/// The marker directory inside a flashed image.
pub const MARKERS: &str = "etc/benchpipe-lab";
/// The boot step's exit when the image says it does not boot.
const NO_BOOT: i32 = 18;
/// The boot step's exit when the disk holds a filesystem it cannot mount.
const BAD_FS: i32 = 17;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerAction {
    On,
    Off,
    Cycle,
}

/// What a power action did. A board that did not boot is not an error of the power
/// switch: like a real board, it simply does not answer afterwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerOutcome {
    /// After `on` or `cycle`: whether sshd came up. `None` after `off`.
    pub booted: Option<bool>,
    /// Why it did not boot, or that it was already on.
    pub note: Option<String>,
}

/// The boot disk's image file: numbered 0 so that `down` detaches it with the others.
pub(super) fn boot_disk(root: &Path, board: &LabBoard, device: &str) -> LabDisk {
    LabDisk {
        name: "boot".into(),
        device: device.to_string(),
        file: state::disk_image(root, &board.netns, 0),
        path: format!("{}/boot", board.workdir),
    }
}

/// Where a board's boot step keeps its files (the os-release it bind-mounts, the UUID
/// it last booted): under the lab's root-only run directory, removed by `down`.
fn boot_dir(prefix: &str, board: &LabBoard) -> PathBuf {
    run_dir(prefix).join(board.name.as_str())
}

/// The shell text of the boot step; runs inside the board's namespace before sshd.
pub(super) fn boot_step(board: &LabBoard) -> String {
    // Board namespaces are `PREFIX-N`.
    let prefix = board.netns.rsplit_once('-').map_or("", |(p, _)| p);
    let Some(boot) = &board.boot else {
        return String::new();
    };
    let key = board.sshd_config.with_file_name("ssh_host_ed25519_key");
    format!(
        r#"dev={dev}; run={run}; key={key}; name={name}
mkdir -p "$run/mnt" && rm -f "$run/os-release" || exit 1
if [ -n "$(blkid -p -o value -s TYPE -- "$dev" 2>/dev/null)" ]; then
  mount -t ext4 -o ro,noload -- "$dev" "$run/mnt" 2>/dev/null || {{ echo "$name: the boot disk $dev holds no filesystem this board boots" >&2; exit {BAD_FS}; }}
  if [ -e "$run/mnt/{MARKERS}/no-boot" ]; then umount "$run/mnt"; echo "$name: the flashed image does not boot ({MARKERS}/no-boot)" >&2; exit {NO_BOOT}; fi
  for f in etc/os-release usr/lib/os-release; do
    if [ -f "$run/mnt/$f" ] && [ ! -L "$run/mnt/$f" ]; then cp -- "$run/mnt/$f" "$run/os-release"; break; fi
  done
  uuid=$(blkid -p -o value -s UUID -- "$dev" 2>/dev/null)
  if [ -e "$run/mnt/{MARKERS}/new-host-key" ] && [ "$uuid" != "$(cat "$run/booted-uuid" 2>/dev/null)" ]; then
    rm -f -- "$key" "$key.pub" && ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$key" </dev/null >/dev/null || exit 1
  fi
  printf '%s' "$uuid" > "$run/booted-uuid"
  umount "$run/mnt" || exit 1
  if [ -f "$run/os-release" ]; then mount --bind "$run/os-release" /etc/os-release || exit 1; fi
fi
"#,
        dev = quote::sh(&boot.device),
        run = quote::sh(&boot_dir(prefix, board).to_string_lossy()),
        key = quote::sh(&key.to_string_lossy()),
        name = quote::sh(board.name.as_str()),
    )
}

/// `benchpipe lab power on|off|cycle BOARD` for the lab under `root`.
pub fn power(root: &Path, board: &str, action: PowerAction) -> Result<PowerOutcome, Error> {
    power_with(root, &LabOptions::default(), board, action)
}

pub fn power_with(
    root: &Path,
    options: &LabOptions,
    board: &str,
    action: PowerAction,
) -> Result<PowerOutcome, Error> {
    super::require_root()?;
    let Some(info) = super::status_with(root, options)? else {
        return Err(fail(format!("no lab under {}", root.display())));
    };
    let Some(b) = info.boards.iter().find(|b| b.name.as_str() == board) else {
        let names: Vec<&str> = info.boards.iter().map(|b| b.name.as_str()).collect();
        return Err(fail(format!(
            "the lab has no board {board:?}; its boards: {}",
            names.join(", ")
        )));
    };
    match action {
        PowerAction::Off => {
            off(b)?;
            Ok(PowerOutcome {
                booted: None,
                note: None,
            })
        }
        PowerAction::On if b.sshd_running => Ok(PowerOutcome {
            booted: Some(true),
            note: Some("already on".into()),
        }),
        PowerAction::On => on(b, options),
        PowerAction::Cycle => {
            off(b)?;
            on(b, options)
        }
    }
}

/// A power cut: every process in the namespace gets SIGKILL at once.
fn off(board: &LabBoard) -> Result<(), Error> {
    let started = Instant::now();
    loop {
        let pids = netns_pids(&board.netns)?;
        if pids.is_empty() && !pid_alive(&board.sshd_pid_file) {
            let _ = std::fs::remove_file(&board.sshd_pid_file);
            return Ok(());
        }
        for pid in &pids {
            // SAFETY: kill(2) on pids listed as members of the board's namespace.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        if started.elapsed() > Duration::from_secs(10) {
            return Err(fail(format!(
                "{}: processes {pids:?} survived SIGKILL",
                board.name
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn on(board: &LabBoard, options: &LabOptions) -> Result<PowerOutcome, Error> {
    match super::board::start_sshd_with(board, &options.sshd) {
        Ok(()) => Ok(PowerOutcome {
            booted: Some(true),
            note: None,
        }),
        Err(e) => {
            // The boot step's own refusals mean "does not come back", not a lab fault.
            let text = e.to_string();
            let fs = format!("exit status {BAD_FS}");
            let no = format!("exit status {NO_BOOT}");
            if text.contains(&fs) || text.contains(&no) {
                let why = text.rsplit("): ").next().unwrap_or(&text).trim();
                Ok(PowerOutcome {
                    booted: Some(false),
                    note: Some(why.to_string()),
                })
            } else {
                Err(e)
            }
        }
    }
}
