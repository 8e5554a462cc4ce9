//! Board drift: whether a board changed under a cell's runs (kernel, OS release, firmware,
//! boot configuration), and what the user chose to do about it. Pure: apply gathers the
//! board's fingerprint, the store keeps it (`store::Fingerprint`, `store::OnDrift`: the
//! records), and this compares.
//!
//! The fingerprint is not part of the cell key: a kernel upgrade must not silently turn
//! hours of runs into a new, empty cell, nor may it silently mix its runs with the old
//! ones. A drifted cell gets no new runs until the user chooses (`--on-drift`).

use super::diff::{Change, MAX_CHANGES, diff};
use crate::store::{CellData, Fingerprint};

/// The boot configuration files hashed into a fingerprint, where the board has them:
/// Raspberry Pi OS since bookworm (`/boot/firmware/`), before it and other boards
/// (`/boot/`), and U-Boot's `extlinux.conf`. Each is read up to `BOOT_FILE_BYTES`.
pub const BOOT_CONFIG_FILES: &[&str] = &[
    "/boot/firmware/config.txt",
    "/boot/firmware/cmdline.txt",
    "/boot/config.txt",
    "/boot/cmdline.txt",
    "/boot/extlinux/extlinux.conf",
];
/// The most of a boot configuration file that is hashed.
pub const BOOT_FILE_BYTES: u64 = 1 << 20;

/// What changed from `old` to `new`, as `plan`'s input diffs show it (paths such as
/// `kernel_release`, `os_release.VERSION_ID`, `boot_config./boot/config.txt`). Firmware
/// is compared only when both sides could read it: a `vcgencmd` that fails (a user
/// outside the `video` group) is not new firmware.
pub fn changes(old: &Fingerprint, new: &Fingerprint) -> Vec<Change> {
    let (mut old, mut new) = (old.clone(), new.clone());
    if old.firmware.is_none() || new.firmware.is_none() {
        (old.firmware, new.firmware) = (None, None);
    }
    let json = |f: &Fingerprint| serde_json::to_value(f).unwrap_or_default();
    let d = diff(&json(&old), &json(&new), usize::MAX);
    d.changes
}

/// The drift of a cell: what changed between the fingerprint its current runs were
/// taken under and the board's `now`. `None` when there is nothing to judge (no current
/// runs, no fingerprint recorded with the cell, the board's unknown) or nothing changed.
pub fn cell_drift(data: &CellData, now: Option<&Fingerprint>) -> Option<Vec<Change>> {
    let stored = &data.fingerprint.as_ref()?.fingerprint;
    let now = now?;
    if !data.samples.iter().any(|s| data.is_current(s)) {
        return None;
    }
    let c = changes(stored, now);
    (!c.is_empty()).then_some(c)
}

/// The changes on one line: the first few, then how many more.
pub fn summary(changes: &[Change]) -> String {
    const SHOWN: usize = 3;
    let mut s: Vec<String> = changes
        .iter()
        .take(SHOWN.min(MAX_CHANGES))
        .map(|c| c.to_string().trim_start_matches("~ ").to_string())
        .collect();
    if changes.len() > SHOWN {
        s.push(format!("and {} more", changes.len() - SHOWN));
    }
    s.join("; ")
}

/// The refusal a drifted cell fails with when the user has not chosen.
pub fn refusal(board: &str, runs: usize, changes: &[Change]) -> String {
    format!(
        "board {board} changed since this cell's {runs} run(s) ({}); choose `--on-drift keep` \
         (add runs to them) or `--on-drift redo` (measure again; the old runs stay stored, \
         uncounted)",
        summary(changes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CellFingerprint, FORMAT, Redo, RunKind, Sample};

    fn fp(kernel: &str, version_id: &str) -> Fingerprint {
        Fingerprint {
            kernel_release: kernel.into(),
            kernel_version: "#1 SMP PREEMPT Debian 6.1.129-1".into(),
            os_release: [
                ("ID".to_string(), "debian".to_string()),
                ("VERSION_ID".to_string(), version_id.to_string()),
            ]
            .into(),
            firmware: None,
            boot_config: [("/boot/firmware/config.txt".to_string(), "ab".repeat(32))].into(),
        }
    }

    fn data(stored: Option<Fingerprint>, samples: u32) -> CellData {
        CellData {
            samples: (1..=samples)
                .map(|seq| Sample {
                    format: FORMAT,
                    seq,
                    kind: RunKind::Measured,
                    session: "s".into(),
                    started: 0.0,
                    ended: 1.0,
                    metrics: std::collections::BTreeMap::new(),
                    flags: vec![],
                    telemetry: None,
                    command: "true".into(),
                    log: String::new(),
                    order: None,
                    board_seq: None,
                })
                .collect(),
            fingerprint: stored.map(CellFingerprint::new),
            ..Default::default()
        }
    }

    #[test]
    fn a_changed_kernel_os_release_or_boot_config_is_drift_and_named_by_path() {
        let a = fp("6.1.0-31-arm64", "12");
        assert!(changes(&a, &a.clone()).is_empty());
        let mut b = fp("6.12.0-1-arm64", "13");
        b.boot_config
            .insert("/boot/firmware/config.txt".into(), "cd".repeat(32));
        b.boot_config
            .insert("/boot/firmware/cmdline.txt".into(), "ef".repeat(32));
        let paths: Vec<String> = changes(&a, &b).into_iter().map(|c| c.path).collect();
        assert_eq!(
            paths,
            [
                "boot_config./boot/firmware/cmdline.txt",
                "boot_config./boot/firmware/config.txt",
                "kernel_release",
                "os_release.VERSION_ID"
            ]
        );
        let s = summary(&changes(&a, &b));
        assert!(s.ends_with("and 1 more"), "{s}");
        assert!(
            s.contains(r#"kernel_release: "6.1.0-31-arm64" -> "6.12.0-1-arm64""#),
            "{s}"
        );
    }

    #[test]
    fn firmware_is_compared_only_when_both_sides_read_it() {
        let a = fp("6.1", "12");
        let mut b = a.clone();
        b.firmware = Some("version 1".into());
        assert!(
            changes(&a, &b).is_empty(),
            "unreadable before is not a change"
        );
        let mut c = b.clone();
        c.firmware = Some("version 2".into());
        let paths: Vec<String> = changes(&b, &c).into_iter().map(|c| c.path).collect();
        assert_eq!(paths, ["firmware"]);
    }

    #[test]
    fn a_cell_drifts_only_with_current_runs_and_both_fingerprints() {
        let (a, b) = (fp("6.1", "12"), fp("6.1", "13"));
        assert!(cell_drift(&data(Some(a.clone()), 2), Some(&b)).is_some());
        assert_eq!(cell_drift(&data(Some(a.clone()), 2), Some(&a)), None);
        assert_eq!(
            cell_drift(&data(Some(a.clone()), 0), Some(&b)),
            None,
            "no runs"
        );
        assert_eq!(
            cell_drift(&data(None, 2), Some(&b)),
            None,
            "a cell from before"
        );
        assert_eq!(
            cell_drift(&data(Some(a.clone()), 2), None),
            None,
            "board unseen"
        );
        let mut redone = data(Some(a), 2);
        redone.redo = Some(Redo {
            format: FORMAT,
            after_seq: 2,
            at: 0.0,
            session: "r".into(),
        });
        assert_eq!(cell_drift(&redone, Some(&b)), None, "every run superseded");
    }
}
