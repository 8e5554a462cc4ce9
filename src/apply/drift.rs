//! Board drift in apply: reading the board's fingerprint when facts are gathered, saying
//! when it changed, and doing what `--on-drift` chose for the cells measured before.

use std::collections::BTreeMap;
use std::time::Duration;

use super::Job;
use super::worker::Worker;
use crate::failure::CellFailure;
use crate::plan::CellKey;
use crate::plan::drift::{self, BOOT_CONFIG_FILES, BOOT_FILE_BYTES};
use crate::store::{Fingerprint, OnDrift};
use crate::transport::{Transport, quote};

/// The fingerprint's shell: one `@@name` section per fact, bounded reads only.
fn script() -> String {
    let files: Vec<String> = BOOT_CONFIG_FILES.iter().map(|f| quote::sh(f)).collect();
    format!(
        r#"echo "@@kernel_release"; uname -r
echo "@@kernel_version"; uname -v
echo "@@os_release"; head -c 65536 /etc/os-release 2>/dev/null
echo "@@firmware"; command -v vcgencmd >/dev/null 2>&1 && vcgencmd version 2>/dev/null | head -c 4096
for f in {files}; do
  if [ -f "$f" ]; then h=$(head -c {BOOT_FILE_BYTES} -- "$f" 2>/dev/null | sha256sum) && echo "@@boot_config $f" && echo "$h"; fi
done
"#,
        files = files.join(" ")
    )
}

/// The board's fingerprint from `script`'s output; `None` without a kernel release
/// (the script did not run as it should).
pub(super) fn parse(text: &str) -> Option<Fingerprint> {
    let mut fp = Fingerprint::default();
    for (name, lines) in crate::sections::parse(text).iter() {
        let joined = lines.join("\n").trim().to_string();
        match name {
            "kernel_release" => fp.kernel_release = joined,
            "kernel_version" => fp.kernel_version = joined,
            "firmware" => fp.firmware = (!joined.is_empty()).then_some(joined),
            "os_release" => {
                for l in lines {
                    if let Some((k, v)) = l.split_once('=')
                        && !k.trim_start().starts_with('#')
                    {
                        fp.os_release
                            .insert(k.trim().to_string(), v.trim().trim_matches('"').into());
                    }
                }
            }
            other => {
                let digest = joined.split_whitespace().next().unwrap_or("");
                if let Some(path) = other.strip_prefix("boot_config ")
                    && digest.len() == 64
                {
                    fp.boot_config.insert(path.to_string(), digest.to_string());
                }
            }
        }
    }
    (!fp.kernel_release.is_empty()).then_some(fp)
}

/// Reads the board's fingerprint; `None` when the board did not give one.
pub(super) fn gather(t: &mut dyn Transport) -> Option<Fingerprint> {
    let out = t.run(&script(), Some(Duration::from_secs(60))).ok()?;
    parse(&out.stdout_str())
}

impl Worker<'_> {
    /// At `gather-facts`: reads the board's fingerprint into `facts` (each cell opened
    /// later records it), says how the board changed since apply last saw it, records it
    /// as last seen, and judges each of `jobs` with runs taken on another board state:
    /// `refuse` fails it (`outcomes`), `keep` and `redo` are recorded with the cell.
    pub(super) fn judge_drift(
        &self,
        t: &mut dyn Transport,
        jobs: &[&Job<'_>],
        facts: &mut crate::store::CellFacts,
        outcomes: &mut BTreeMap<CellKey, Result<usize, CellFailure>>,
    ) -> Result<(), CellFailure> {
        let Some(now) = gather(t) else {
            self.phase(
                None,
                "could not read the board's fingerprint: drift is not judged",
            );
            return Ok(());
        };
        facts.fingerprint = Some(now.clone());
        let name = &self.board.name;
        let seen = self.store.board_fingerprints([name])?;
        if let Some(before) = seen.get(name) {
            let changes = drift::changes(before, &now);
            if !changes.is_empty() {
                self.phase(
                    None,
                    format!(
                        "the board changed since apply last saw it: {}",
                        drift::summary(&changes)
                    ),
                );
            }
        }
        self.store
            .write_board_fingerprint(name, &now, self.session)?;
        for job in jobs {
            let Some(changes) = drift::cell_drift(&job.data, Some(&now)) else {
                continue;
            };
            let cell = job.cell;
            match self.on_drift {
                OnDrift::Refuse => {
                    let runs = job.data.samples.iter().filter(|s| job.data.is_current(s));
                    let reason = drift::refusal(name.as_str(), runs.count(), &changes);
                    outcomes.insert(cell.key.clone(), Err(CellFailure::Refused { reason }));
                }
                choice => {
                    self.phase(
                        Some(&cell.address),
                        format!(
                            "board changed since its runs ({}): --on-drift {choice}",
                            drift::summary(&changes)
                        ),
                    );
                    self.store.record_drift(cell, choice, &now, self.session)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_script_runs_here_and_its_output_parses() {
        let mut t = crate::transport::local::Local::new();
        let fp = gather(&mut t).expect("a fingerprint of this machine");
        let uname = crate::transport::Transport::run(&mut t, "uname -r", None).unwrap();
        assert_eq!(fp.kernel_release, uname.stdout_str().trim());
        assert!(!fp.kernel_version.is_empty());
        assert!(fp.os_release.contains_key("ID"), "{fp:?}");
    }

    #[test]
    fn a_fingerprint_parses_os_release_firmware_and_boot_files() {
        let text = "@@kernel_release\n6.6.51+rpt-rpi-v8\n@@kernel_version\n#1 SMP PREEMPT Debian 1:6.6.51-1+rpt3 (2024-10-08)\n\
@@os_release\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n# a comment\nVERSION_ID=\"12\"\n\
@@firmware\nOct 17 2024 16:23:50 \nCopyright (c) 2012 Broadcom\nversion 9ee48ad2 (clean) (release) (start)\n\
@@boot_config /boot/firmware/config.txt\n";
        let digest = "a".repeat(64);
        let fp = parse(&format!(
            "{text}{digest}  -\n@@boot_config /boot/x\nnot-a-digest\n"
        ))
        .unwrap();
        assert_eq!(fp.kernel_release, "6.6.51+rpt-rpi-v8");
        assert_eq!(fp.os_release["VERSION_ID"], "12");
        assert_eq!(fp.os_release.len(), 2);
        assert!(fp.firmware.as_deref().unwrap().ends_with("(start)"));
        assert_eq!(fp.boot_config.len(), 1);
        assert_eq!(fp.boot_config["/boot/firmware/config.txt"], digest);
        assert_eq!(parse("@@kernel_release\n\n@@firmware\n"), None);
        assert_eq!(parse("").map(|f| f.firmware), None);
    }
}
