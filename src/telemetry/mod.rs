//! Telemetry during measured runs: a light sampler on the board, the test's own CPU
//! time, and the validity flags (throttled, hot, swapping, background-load,
//! under-voltage) derived from them.
//!
//! How apply uses it, around each measured run (`one_run`); the sampler always runs
//! on the board, whichever side runs the test:
//!
//! ```text
//! let options = SamplerOptions::for_run(step.timeout);
//! let probe = Probe::start_with(t.board, board, &format!("{session}-{seq}"), &options)?;
//! // Only a board-side test can be wrapped; for a controller-side one the board's
//! // CPU use is not judged (background-load needs the test's own CPU time).
//! let to_run = if step.on == Side::Board { probe.wrap(&command) } else { command.clone() };
//! let out = t.side(step.on).run(&to_run, step.timeout);  // log `command`, not `to_run`
//! // interrupted or transport error: probe.abort(t.board); return
//! let done = probe.finish(t.board, &Thresholds::from(&method.validity))?;
//! sample.flags = done.flags; sample.telemetry = Some(done.telemetry);
//! // optionally keep done.trace as a log file next to the run's log
//! ```
//!
//! `finish` also stops the sampler when the run failed; call it (or `abort`) on every
//! path. If benchpipe dies in between, the sampler stops by itself at its maximum
//! duration, and the next `start` on the board ends it at once.
//!
//! Only POSIX `sh`, coreutils and /proc are needed on the board; `setsid` (util-linux,
//! busybox) is used when present. The sampler is one `sh` loop reading files with the
//! `read` builtin; per tick it starts `sleep` (and `vcgencmd` with a `head` where it
//! exists; with a `pmic` meter also `vcgencmd pmic_read_adc`, `head` and `awk`) and
//! nothing else. A board-side `[meter]` is read at each tick (`power.rs`), after an idle
//! window the start script waits out before the run begins. The trace stays on the board and is read back once, by
//! `finish`, at most `MAX_TRACE_BYTES` of it.
//!
//! Every file is read bounded: a thermal source is kept only if it is a regular file
//! whose first 64 bytes are a number (a board whose `thermal` names `/dev/zero` has no
//! temperature, rather than a sampler that never ends its first read), and every
//! other read is `head -c` or the `read` builtin on a kernel attribute file.
//!
//! The kernel log (`dmesg`, or `SamplerOptions::kernel_log_file`) is marked at the
//! start and its new lines are scanned at the end: the firmware's "has occurred" bits
//! cannot show an event during a run when they were already set before it, while the
//! kernel logs each new under-voltage.

pub mod plug;
pub mod power;
mod script;
mod stored;
pub mod summary;
#[cfg(test)]
mod tests;
pub mod trace;

use std::time::Duration;

use serde_json::Value;

use crate::model::Board;
use crate::transport::{Exit, Transport, TransportError, quote};

use script::{finish_script, start_script};
pub use stored::StoredTelemetry;
pub use summary::{
    FLAGS, Range, THROTTLE_UNKNOWN, TelemetrySummary, Thresholds, ThrottleBits, decode_throttled,
    flags, kernel_event, summarize, warnings,
};
pub use trace::{Trace, parse_trace};

/// The file that marks a run directory under `<workdir>/telemetry/` as benchpipe's:
/// only such directories are ever removed.
const RUN_MARK: &str = ".benchpipe-run";

/// The board's thermal source when its file names none.
pub const DEFAULT_THERMAL: &str = "/sys/class/thermal/thermal_zone*/temp";

/// How long start and finish may take on the board (they do not wait for the run).
const CONTROL_TIMEOUT: Duration = Duration::from_secs(60);

/// The most of a trace `finish` reads back: its first and last halves, with the
/// bytes left out in between counted (`trace_dropped`). A 4-hour run at 1 Hz writes
/// about 2 MB.
///
/// Half the transport's capture limit: the trace comes back as one command's output,
/// and must be cut here, where the cut is said in the trace's own terms, not by the
/// transport's cap.
pub const MAX_TRACE_BYTES: u64 = (crate::transport::CAPTURE_LIMIT / 2) as u64;

/// The most of the kernel log read at the start and the end (its tail), and of the
/// new lines kept from it.
const KLOG_READ_BYTES: u32 = 1 << 20;
const KLOG_KEEP_BYTES: u32 = 16 << 10;

/// The board's coarse filter of new kernel log lines (`grep -i -e ...`); the
/// controller judges what passes (`summary::kernel_event`).
const KLOG_FILTER: &[&str] = &["voltage", "throttl", "capped"];

#[derive(Clone, Debug, PartialEq)]
pub struct SamplerOptions {
    /// Seconds between ticks.
    pub interval_s: u32,
    /// The sampler exits by itself after this long, finished or not.
    pub max_duration: Duration,
    /// Directories put in front of the board's PATH for the sampler (tests put a fake
    /// `vcgencmd` there). Not quoted away: `$HOME/bin` works.
    pub path_prefix: Option<String>,
    /// A regular file holding the kernel log in `dmesg`'s format (`[  12.345678] text`),
    /// read instead of running `dmesg` (tests put a fake kernel log there).
    pub kernel_log_file: Option<String>,
    /// The board's meter: a board-side one is read at every tick after an idle window
    /// before the run (`power`); a controller-side one is ignored here (`plug`).
    pub meter: Option<crate::model::Meter>,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        SamplerOptions {
            interval_s: 1,
            max_duration: Duration::from_secs(4 * 3600),
            path_prefix: None,
            kernel_log_file: None,
            meter: None,
        }
    }
}

impl SamplerOptions {
    /// Options for a run with the given timeout: the sampler outlives the run's
    /// timeout by a margin, and no more.
    pub fn for_run(timeout: Option<Duration>) -> Self {
        let mut o = SamplerOptions::default();
        if let Some(t) = timeout {
            o.max_duration = t + Duration::from_secs(300);
        }
        o
    }
}

/// Why telemetry could not be started or read back. A run goes on without it.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The board could not run the sampler's command at all.
    #[error("telemetry: {0}")]
    Transport(#[from] TransportError),
    /// The sampler's command ran and failed; `action` is what it was for.
    #[error("telemetry: cannot {action} on {target} ({exit}): {stderr}")]
    Failed {
        action: &'static str,
        target: String,
        exit: Exit,
        /// Its stderr, trimmed.
        stderr: String,
    },
    #[error("telemetry: cannot encode the summary: {0}")]
    Encode(#[from] serde_json::Error),
}

/// Runs one of the sampler's control scripts; its stdout when it succeeded.
fn control(
    t: &mut dyn Transport,
    command: &str,
    action: &'static str,
) -> Result<String, TelemetryError> {
    let out = t.run(command, Some(CONTROL_TIMEOUT))?;
    if !out.exit.success() {
        return Err(TelemetryError::Failed {
            action,
            target: t.target(),
            stderr: out.stderr_str().trim().to_string(),
            exit: out.exit,
        });
    }
    Ok(out.stdout_str())
}

/// A sampler running on a board for one run.
#[derive(Debug)]
#[must_use = "a started probe must be finished or aborted"]
pub struct Probe {
    dir: String,
    path_prefix: Option<String>,
    kernel_log_file: Option<String>,
}

/// What `finish` found.
#[derive(Clone, Debug)]
pub struct Finished {
    pub summary: TelemetrySummary,
    /// `summary` as JSON, for the sample's `telemetry` field.
    pub telemetry: Value,
    pub flags: Vec<String>,
    /// The raw trace, for the run's log.
    pub trace: String,
}

impl Probe {
    /// Starts the sampler with default options. `run_id` names the run's directory
    /// under `<workdir>/telemetry/`; anything but letters, digits, `-` and `_` is
    /// replaced.
    pub fn start(
        t: &mut dyn Transport,
        board: &Board,
        run_id: &str,
    ) -> Result<Probe, TelemetryError> {
        Probe::start_with(t, board, run_id, &SamplerOptions::default())
    }

    /// Ends samplers left by an earlier, killed benchpipe on this board, then starts
    /// one and returns once its first tick is written.
    pub fn start_with(
        t: &mut dyn Transport,
        board: &Board,
        run_id: &str,
        options: &SamplerOptions,
    ) -> Result<Probe, TelemetryError> {
        let root = telemetry_root(&board.workdir);
        let dir = format!("{root}/{}", safe_id(run_id));
        let thermal = board.thermal.as_deref().unwrap_or(DEFAULT_THERMAL);
        let command = start_script(&root, &dir, thermal, options);
        control(t, &command, "start the sampler")?;
        Ok(Probe {
            dir,
            path_prefix: options.path_prefix.clone(),
            kernel_log_file: options.kernel_log_file.clone(),
        })
    }

    /// The run's directory on the board.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// Wraps a board-side test command so that `finish` learns its CPU time.
    pub fn wrap(&self, command: &str) -> String {
        wrap_for_cpu_accounting(command, &format!("{}/test-cpu", self.dir))
    }

    /// Stops the sampler (for sure), takes a last tick, reads the trace back in one
    /// command, removes the run's directory, and judges the run.
    pub fn finish(
        self,
        t: &mut dyn Transport,
        thresholds: &Thresholds,
    ) -> Result<Finished, TelemetryError> {
        let command = finish_script(
            &self.dir,
            self.path_prefix.as_deref(),
            self.kernel_log_file.as_deref(),
        );
        let text = control(t, &command, "read the sampler's trace")?;
        let summary = summarize(&parse_trace(&text));
        let flags = flags(&summary, thresholds);
        let telemetry = serde_json::to_value(&summary)?;
        Ok(Finished {
            summary,
            telemetry,
            flags,
            trace: text,
        })
    }

    /// Stops the sampler and removes its files without reading them (a failed or
    /// interrupted run). Best effort: errors are ignored, the sampler's own limits
    /// remain the backstop.
    pub fn abort(self, t: &mut dyn Transport) {
        let _ = t.run(
            &finish_script(
                &self.dir,
                self.path_prefix.as_deref(),
                self.kernel_log_file.as_deref(),
            ),
            Some(CONTROL_TIMEOUT),
        );
    }
}

/// Shell text that ends every sampler of benchpipe's under `workdir` at its next tick
/// (their run directories' markers removed): what a guard runs when benchpipe is gone.
pub fn end_samplers_script(workdir: &str) -> String {
    format!(
        "for bp_d in {}/*; do [ -d \"$bp_d\" ] && [ ! -L \"$bp_d\" ] && [ -f \"$bp_d/{RUN_MARK}\" ] && rm -f -- \"$bp_d/marker\"; done\n",
        quote::sh(&telemetry_root(workdir))
    )
}

/// Ends every sampler of benchpipe's under the board's `workdir` (an interrupted walk,
/// where a sampler's start may have been cut short after it started).
pub fn end_samplers(t: &mut dyn Transport, workdir: &str) -> Result<(), TransportError> {
    t.run(&end_samplers_script(workdir), Some(CONTROL_TIMEOUT))
        .map(|_| ())
}

/// Re-judges a stored run from its `telemetry` value, e.g. after the scenario's
/// thresholds changed. None when the value is not a telemetry summary.
pub fn rejudge(telemetry: &Value, thresholds: &Thresholds) -> Option<Vec<String>> {
    use serde::Deserialize;
    // A cluster's run: each member's summary, and the run has every member's flags.
    if let Some(Value::Object(members)) = telemetry.get("members") {
        let mut all = Vec::new();
        for m in members.values() {
            all.extend(rejudge(m, thresholds)?);
        }
        all.sort();
        all.dedup();
        return Some(all);
    }
    let summary = TelemetrySummary::deserialize(telemetry).ok()?;
    Some(flags(&summary, thresholds))
}

/// The validity warnings of a stored run (see `summary::warnings`); none when the
/// value is not a telemetry summary.
pub fn warnings_of(telemetry: &Value) -> Vec<String> {
    use serde::Deserialize;
    if let Some(Value::Object(members)) = telemetry.get("members") {
        let mut all: Vec<String> = members.values().flat_map(warnings_of).collect();
        all.sort();
        all.dedup();
        return all;
    }
    TelemetrySummary::deserialize(telemetry)
        .map(|s| warnings(&s))
        .unwrap_or_default()
}

/// Runs `command` (already rendered) in a subshell, then writes the CPU time of
/// everything it waited for to `file` with `times`. Its exit status, stdout and stderr
/// are the command's own; a failure to write `file` is silent.
pub fn wrap_for_cpu_accounting(command: &str, file: &str) -> String {
    // The newline before `)` keeps a trailing comment in the command from eating it;
    // `command times` keeps a failed redirection from ending the shell (times is a
    // special built-in).
    format!(
        "(\n{command}\n)\n__bp_status=$?\ncommand times 2>/dev/null >{f}\nexit $__bp_status\n",
        f = quote::sh(file)
    )
}

fn telemetry_root(workdir: &str) -> String {
    format!("{}/telemetry", workdir.trim_end_matches('/'))
}

fn safe_id(id: &str) -> String {
    let s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() { "run".into() } else { s }
}
