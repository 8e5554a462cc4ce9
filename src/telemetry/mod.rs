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
//! exists) and nothing else. The trace stays on the board and is read back once, by
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

pub mod summary;
pub mod trace;

use std::time::Duration;

use serde_json::Value;

use crate::model::Board;
use crate::transport::{Transport, quote};

pub use summary::{
    Range, THROTTLE_UNKNOWN, TelemetrySummary, Thresholds, ThrottleBits, decode_throttled, flags,
    kernel_event, summarize, warnings,
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
}

impl Default for SamplerOptions {
    fn default() -> Self {
        SamplerOptions {
            interval_s: 1,
            max_duration: Duration::from_secs(4 * 3600),
            path_prefix: None,
            kernel_log_file: None,
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
    pub fn start(t: &mut dyn Transport, board: &Board, run_id: &str) -> Result<Probe, String> {
        Probe::start_with(t, board, run_id, &SamplerOptions::default())
    }

    /// Ends samplers left by an earlier, killed benchpipe on this board, then starts
    /// one and returns once its first tick is written.
    pub fn start_with(
        t: &mut dyn Transport,
        board: &Board,
        run_id: &str,
        options: &SamplerOptions,
    ) -> Result<Probe, String> {
        let root = telemetry_root(&board.workdir);
        let dir = format!("{root}/{}", safe_id(run_id));
        let thermal = board.thermal.as_deref().unwrap_or(DEFAULT_THERMAL);
        let command = start_script(&root, &dir, thermal, options);
        let out = t
            .run(&command, Some(CONTROL_TIMEOUT))
            .map_err(|e| format!("telemetry: {e}"))?;
        if !out.exit.success() {
            return Err(format!(
                "telemetry: cannot start the sampler on {} ({}): {}",
                t.target(),
                out.exit,
                out.stderr_str().trim()
            ));
        }
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
    ) -> Result<Finished, String> {
        let command = finish_script(
            &self.dir,
            self.path_prefix.as_deref(),
            self.kernel_log_file.as_deref(),
        );
        let out = t
            .run(&command, Some(CONTROL_TIMEOUT))
            .map_err(|e| format!("telemetry: {e}"))?;
        if !out.exit.success() {
            return Err(format!(
                "telemetry: cannot read the sampler's trace on {} ({}): {}",
                t.target(),
                out.exit,
                out.stderr_str().trim()
            ));
        }
        let text = out.stdout_str();
        let summary = summarize(&parse_trace(&text));
        let flags = flags(&summary, thresholds);
        let telemetry = serde_json::to_value(&summary)
            .map_err(|e| format!("telemetry: cannot encode the summary: {e}"))?;
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

/// Re-judges a stored run from its `telemetry` value, e.g. after the scenario's
/// thresholds changed. None when the value is not a telemetry summary.
pub fn rejudge(telemetry: &Value, thresholds: &Thresholds) -> Option<Vec<String>> {
    let summary: TelemetrySummary = serde_json::from_value(telemetry.clone()).ok()?;
    Some(flags(&summary, thresholds))
}

/// The validity warnings of a stored run (see `summary::warnings`); none when the
/// value is not a telemetry summary.
pub fn warnings_of(telemetry: &Value) -> Vec<String> {
    serde_json::from_value::<TelemetrySummary>(telemetry.clone())
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

fn path_line(prefix: Option<&str>) -> String {
    match prefix {
        // Double quotes so that `$HOME/bin` expands; a `"` in it could not be meant.
        Some(p) if !p.contains('"') && !p.contains('`') => {
            format!("PATH=\"{p}:$PATH\"; export PATH\n")
        }
        _ => String::new(),
    }
}

/// One tick: reads everything with the `read` builtin (no process) and prints one
/// `s` line. Uses `$bp_dir` (for the source lists) and `$bp_vcg`.
///
/// vcgencmd's answer is read through `head -c` with its exit status after it; a
/// failure is `?` in the tick, and the first one is told once (`vcgencmd_error`)
/// with the start of what it said on stderr. Values that are not numbers never reach
/// the trace.
const SAMPLE_FN: &str = r#"bp_sample() {
  up=0; l1=-; cj=; pi=-; po=-; t=; fr=; th=-
  read up _ < /proc/uptime
  read l1 _ < /proc/loadavg
  read _ cu cn cs ci cw cq csq cst _ < /proc/stat && cj="$cu $cn $cs $ci $cw $cq $csq $cst"
  while read k v; do
    case $k in pswpin) pi=$v ;; pswpout) po=$v; break ;; esac
  done < /proc/vmstat
  while read -r f; do
    v=; { read v < "$f"; } 2>/dev/null
    case $v in ''|*[!0-9-]*) ;; *) t="$t $v" ;; esac
  done < "$bp_dir/thermal"
  while read -r f; do
    v=; { read v < "$f"; } 2>/dev/null
    case $v in ''|*[!0-9]*) ;; *) fr="$fr $v" ;; esac
  done < "$bp_dir/freq"
  if [ -n "$bp_vcg" ]; then
    th=$( { vcgencmd get_throttled 2>"$bp_dir/vcgerr"; echo " rc=$?"; } | head -c 128)
    bp_rc=${th##*rc=}; th=${th%%rc=*}; th=${th#*throttled=}; th=${th%%[!0-9a-fA-Fx]*}
    case $bp_rc:$th in
      0:0x[0-9a-fA-F]*|0:[0-9]*) ;;
      *)
        th='?'
        if [ -z "$bp_vcg_told" ]; then
          bp_vcg_told=1
          bp_e=$(head -c 200 "$bp_dir/vcgerr" 2>/dev/null | tr -c '[:print:]' ' ')
          case $bp_rc in ''|*[!0-9]*) bp_rc=- ;; esac
          echo "vcgencmd_error $bp_rc $bp_e"
        fi ;;
    esac
  fi
  echo "s $up $l1 | $cj | $pi $po |$t |$fr | ${th:--}"
}
"#;

/// The kernel log, at most its last `KLOG_READ_BYTES`, into `$1`; its reader's exit
/// status into `$1.rc` and its stderr into `$1.err`. `$bp_klog_file` replaces `dmesg`.
const KLOG_FN: &str = r#"bp_klog() {
  {
    if [ -n "$bp_klog_file" ]; then
      tail -c @READ@ -- "$bp_klog_file" 2>"$1.err"
    else
      dmesg 2>"$1.err"
    fi
    echo "$?" > "$1.rc"
  } | tail -c @READ@ > "$1"
  bp_rc=; read bp_rc < "$1.rc"
  [ "$bp_rc" = 0 ] && return 0
  echo "klog_error exit $bp_rc: $(head -c 200 "$1.err" 2>/dev/null | tr -c '[:print:]' ' ')"
  return 1
}
"#;

/// The awk program that prints a kernel log line's `[  12.345678]` timestamp field
/// into `t` (empty without one).
const KLOG_TS_AWK: &str = r#"t = ""; if (match($0, /^\[ *[0-9]+\.[0-9]+\]/)) { t = substr($0, RSTART + 1, RLENGTH - 2); gsub(/ /, "", t) }"#;

fn klog_fn() -> String {
    KLOG_FN.replace("@READ@", &KLOG_READ_BYTES.to_string())
}

/// Every cpufreq policy's governor, scaling_max_freq and time_in_state.
const TIS_FN: &str = r#"bp_tis() {
  for p in /sys/devices/system/cpu/cpufreq/policy*; do
    [ -r "$p/stats/time_in_state" ] || continue
    g=-; m=-
    { read g < "$p/scaling_governor"; read m < "$p/scaling_max_freq"; } 2>/dev/null
    echo "policy $p ${g:--} ${m:--}"
    head -c 65536 "$p/stats/time_in_state"
  done
}
"#;

/// Whether a pid is a running process (a zombie is not: some init systems in
/// containers never reap them).
const ALIVE_FN: &str = r#"bp_alive() {
  st=
  { read st < "/proc/$1/stat"; } 2>/dev/null || return 1
  case ${st##*") "} in Z*|X*) return 1 ;; esac
  return 0
}
"#;

/// The sampler's own pid from the run's pid file, if that process really is the
/// sampler of this run (a pid file can outlive its process, and pids are reused).
const OWNED_PID_FN: &str = r#"bp_owned_pid() {
  sp=
  { read sp < "$1/pid"; } 2>/dev/null
  case $sp in ''|*[!0-9]*) return 1 ;; esac
  bp_alive "$sp" || return 1
  tr '\0' '\n' < "/proc/$sp/cmdline" 2>/dev/null | grep -qxF -- "$1" || return 1
  echo "$sp"
}
"#;

/// TERM to the sampler's process group, then KILL if it lingers.
const STOP_FN: &str = r#"bp_stop() {
  kill -TERM -"$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null
  i=0
  while bp_alive "$1"; do
    i=$((i + 1))
    if [ "$i" -gt 40 ]; then break; fi
    sleep 0.05 2>/dev/null || sleep 1
  done
  kill -KILL -"$1" 2>/dev/null
  kill -KILL "$1" 2>/dev/null
  return 0
}
"#;

/// The sampler loop: `$1` the run directory, `$2` its maximum seconds, `$3` the
/// interval. It stops when the marker goes, at the deadline, or on a signal.
fn sampler_script() -> String {
    format!(
        r#"bp_dir=$1
echo $$ > "$bp_dir/pid"
trap 'rm -f "$bp_dir/pid"' EXIT
trap 'exit 0' TERM INT HUP
bp_vcg=; command -v vcgencmd >/dev/null 2>&1 && bp_vcg=1
{SAMPLE_FN}read up _ < /proc/uptime
bp_deadline=$(( ${{up%.*}} + $2 ))
while [ -e "$bp_dir/marker" ]; do
  bp_sample >> "$bp_dir/trace"
  [ "${{up%.*}}" -lt "$bp_deadline" ] || exit 0
  sleep "$3"
done
"#
    )
}

fn start_script(root: &str, dir: &str, thermal: &str, o: &SamplerOptions) -> String {
    let sampler = quote::sh(&sampler_script());
    let args = format!(
        "benchpipe-sampler \"$bp_dir\" {} {}",
        o.max_duration.as_secs().max(1),
        o.interval_s.max(1)
    );
    format!(
        r#"bp_root={root}
bp_dir={dir}
bp_klog_file={klog_file}
{path}{klog_fn}{ALIVE_FN}{OWNED_PID_FN}{STOP_FN}{TIS_FN}
# Samplers an earlier, killed benchpipe left behind: end them, then drop their files
# (without its marker a sampler we could not identify ends at its next tick).
for bp_p in "$bp_root"/*/pid; do
  [ -f "$bp_p" ] || continue
  bp_sp=$(bp_owned_pid "${{bp_p%/pid}}") && bp_stop "$bp_sp"
done
# Only run directories benchpipe made (they carry its file) are removed; nothing else
# under the workdir, which may be shared with other tools.
for bp_d in "$bp_root"/*; do
  [ -d "$bp_d" ] && [ ! -L "$bp_d" ] && [ -f "$bp_d/{RUN_MARK}" ] && rm -rf -- "$bp_d"
done
mkdir -p -- "$bp_root" || exit 1
mkdir -- "$bp_dir" || {{ echo "cannot create $bp_dir: it exists and is not a run directory of benchpipe's" >&2; exit 1; }}
: > "$bp_dir/{RUN_MARK}" || exit 1
: > "$bp_dir/marker" || exit 1
{{
  echo "benchpipe-telemetry 1"
  echo "clk_tck $(getconf CLK_TCK 2>/dev/null || echo 100)"
  echo "ncpu $(grep -c '^cpu[0-9]' /proc/stat)"
  echo "wall $(date +%s)"
  if command -v vcgencmd >/dev/null 2>&1; then echo "vcgencmd $(command -v vcgencmd)"; fi
  echo "tis start"
  bp_tis
}} > "$bp_dir/trace"
# Only regular files whose value is one short line are read at every tick: the
# `read` builtin would never return on /dev/zero.
for f in {thermal}; do
  [ -f "$f" ] && [ -r "$f" ] || continue
  v=$(head -c 64 -- "$f" 2>/dev/null | head -n 1)
  case $v in ''|*[!0-9-]*) ;; *) printf '%s\n' "$f" ;; esac
done > "$bp_dir/thermal"
# The kernel log's position now: its line count and last timestamp.
if bp_klog "$bp_dir/klog"; then
  awk '{{ {KLOG_TS_AWK} }} END {{ if (t == "") t = "-"; print NR, t }}' "$bp_dir/klog" > "$bp_dir/klog.mark"
  read bp_n bp_t < "$bp_dir/klog.mark" && echo "klog_mark $bp_n $bp_t"
fi >> "$bp_dir/trace"
rm -f "$bp_dir/klog" "$bp_dir/klog.rc" "$bp_dir/klog.err"
for f in /sys/devices/system/cpu/cpufreq/policy*/scaling_cur_freq; do
  if [ -r "$f" ]; then printf '%s\n' "$f"; fi
done > "$bp_dir/freq"
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c {sampler} {args} < /dev/null > /dev/null 2>> "$bp_dir/err" &
else
  sh -c {sampler} {args} < /dev/null > /dev/null 2>> "$bp_dir/err" &
fi
i=0
until [ -s "$bp_dir/pid" ] && grep -q '^s ' "$bp_dir/trace"; do
  i=$((i + 1))
  if [ "$i" -gt 200 ]; then
    rm -f "$bp_dir/marker"
    echo "the sampler wrote nothing in 10 s: $(head -c 2000 "$bp_dir/err" 2>/dev/null)" >&2
    exit 1
  fi
  sleep 0.05 2>/dev/null || sleep 1
done
"#,
        root = quote::sh(root),
        dir = quote::sh(dir),
        path = path_line(o.path_prefix.as_deref()),
        thermal = quote::glob(thermal),
        klog_file = quote::sh(o.kernel_log_file.as_deref().unwrap_or("")),
        klog_fn = klog_fn(),
    )
}

fn finish_script(dir: &str, path_prefix: Option<&str>, kernel_log_file: Option<&str>) -> String {
    let filter: String = KLOG_FILTER
        .iter()
        .map(|w| format!(" -e {}", quote::sh(w)))
        .collect();
    format!(
        r#"bp_dir={dir}
bp_klog_file={klog_file}
{path}{klog_fn}{ALIVE_FN}{OWNED_PID_FN}{STOP_FN}{TIS_FN}{SAMPLE_FN}
if [ ! -d "$bp_dir" ]; then echo "$bp_dir is gone" >&2; exit 1; fi
bp_stat=
if bp_sp=$(bp_owned_pid "$bp_dir"); then
  {{ read bp_stat < "/proc/$bp_sp/stat"; }} 2>/dev/null
  rm -f "$bp_dir/marker"
  bp_stop "$bp_sp"
fi
rm -f "$bp_dir/marker"
bp_vcg=; command -v vcgencmd >/dev/null 2>&1 && bp_vcg=1
bp_vcg_told=; grep -q '^vcgencmd_error ' "$bp_dir/trace" && bp_vcg_told=1
{{
  if [ -n "$bp_stat" ]; then echo "sampler_stat $bp_stat"; fi
  bp_sample
  echo "tis end"
  bp_tis
  if [ -f "$bp_dir/test-cpu" ]; then
    while read a b; do echo "times $a $b"; done < "$bp_dir/test-cpu"
  fi
  # The kernel log's lines since the start's mark: those with a later timestamp,
  # or after its line count when the log has no timestamps.
  if [ -f "$bp_dir/klog.mark" ] && bp_klog "$bp_dir/klog"; then
    read bp_n bp_t < "$bp_dir/klog.mark"
    awk -v n="$bp_n" -v ts="$bp_t" '{{ {KLOG_TS_AWK} }}
      (ts != "-" && t != "" && t + 0 > ts + 0) || ((ts == "-" || t == "") && NR > n + 0)' \
      "$bp_dir/klog" | grep -i{filter} | head -c {keep} | sed 's/^/klog /'
  fi
}} >> "$bp_dir/trace"
# Bounded: the first and last halves of at most MAX_TRACE_BYTES.
bp_size=$(wc -c < "$bp_dir/trace")
if [ "$bp_size" -le {max} ]; then
  cat "$bp_dir/trace"
else
  head -c {half} "$bp_dir/trace"
  echo
  echo "trace_dropped $((bp_size - {max}))"
  tail -c {half} "$bp_dir/trace"
fi
if [ -f "$bp_dir/{RUN_MARK}" ]; then rm -rf -- "$bp_dir"; fi
"#,
        dir = quote::sh(dir),
        path = path_line(path_prefix),
        klog_file = quote::sh(kernel_log_file.unwrap_or("")),
        klog_fn = klog_fn(),
        keep = KLOG_KEEP_BYTES,
        max = MAX_TRACE_BYTES,
        half = MAX_TRACE_BYTES / 2,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Transport;
    use crate::transport::local::Local;

    #[test]
    fn ids_and_globs_are_safe_words() {
        assert_eq!(safe_id("a/../b c"), "a____b_c");
        assert_eq!(safe_id(""), "run");
        assert_eq!(
            quote::glob("/sys/class/thermal/thermal_zone*/temp"),
            "/sys/class/thermal/thermal_zone*/temp"
        );
        assert_eq!(quote::glob("/x y/$(id)*"), "'/x y/$(id)'*");
    }

    #[test]
    fn the_wrapper_keeps_status_and_output_and_writes_times() {
        let dir = std::env::temp_dir().join(format!("bp-wrap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("cpu");
        let file = file.to_str().unwrap();
        let command = "printf 'out\\n'; printf 'err\\n' >&2\nexit 7 # a trailing comment";
        let out = Local
            .run(&wrap_for_cpu_accounting(command, file), None)
            .unwrap();
        assert_eq!(out.exit.code, Some(7));
        assert_eq!(out.stdout_str(), "out\n");
        assert_eq!(out.stderr_str(), "err\n");
        let times = std::fs::read_to_string(file).unwrap();
        assert_eq!(times.lines().count(), 2, "{times}");
        // An unwritable file changes nothing for the command.
        let out = Local
            .run(
                &wrap_for_cpu_accounting("echo hi", "/nonexistent/dir/cpu"),
                None,
            )
            .unwrap();
        assert!(out.exit.success());
        assert_eq!(
            (out.stdout_str(), out.stderr_str()),
            ("hi\n".into(), "".into())
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_scripts_are_valid_sh() {
        let o = SamplerOptions {
            path_prefix: Some("/opt/x".into()),
            ..SamplerOptions::default()
        };
        for script in [
            sampler_script(),
            start_script("/w/telemetry", "/w/telemetry/r 1", DEFAULT_THERMAL, &o),
            finish_script("/w/telemetry/r 1", Some("/opt/x"), Some("/var/log/k l")),
        ] {
            let out = Local
                .run(&format!("sh -n -c {}", quote::sh(&script)), None)
                .unwrap();
            assert!(out.exit.success(), "{}\n{script}", out.stderr_str());
        }
    }
}
