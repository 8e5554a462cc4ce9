//! The shell the board runs: the sampler's loop, and the scripts that start it and
//! that stop it and read its trace back.

use super::power;
use super::{
    KLOG_FILTER, KLOG_KEEP_BYTES, KLOG_READ_BYTES, MAX_TRACE_BYTES, RUN_MARK, SamplerOptions,
};
use crate::model::MeterSource;
use crate::transport::quote;
use std::fmt::Write as _;

pub(super) fn path_line(prefix: Option<&str>) -> String {
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

pub(super) fn klog_fn() -> String {
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

/// TERM to the sampler's process group, then KILL if it lingers, and KILL to what is
/// left of its group (a tick's `sleep`). Never to a pid that may be another process's
/// by now: the sampler's own only while it still runs, the group's only while it has
/// members (its id is not reused until it is empty).
const STOP_FN: &str = r#"bp_stop() {
  kill -TERM -"$1" 2>/dev/null || kill -TERM "$1" 2>/dev/null
  i=0
  while bp_alive "$1"; do
    i=$((i + 1))
    if [ "$i" -gt 40 ]; then kill -KILL "$1" 2>/dev/null; break; fi
    sleep 0.05 2>/dev/null || sleep 1
  done
  kill -0 -"$1" 2>/dev/null && kill -KILL -"$1" 2>/dev/null
  return 0
}
"#;

/// The sampler loop: `$1` the run directory, `$2` its maximum seconds, `$3` the
/// interval. It stops when the marker goes, at the deadline, or on a signal.
pub(super) fn sampler_script(meter: Option<&MeterSource>) -> String {
    let power_fn = meter.map(power::power_fn).unwrap_or_default();
    let power_tick = if power_fn.is_empty() {
        ""
    } else {
        "  bp_power >> \"$bp_dir/trace\"\n"
    };
    format!(
        r#"bp_dir=$1
echo $$ > "$bp_dir/pid"
trap 'rm -f "$bp_dir/pid"' EXIT
trap 'exit 0' TERM INT HUP
bp_vcg=; command -v vcgencmd >/dev/null 2>&1 && bp_vcg=1
{SAMPLE_FN}{power_fn}{session_fn}read up _ < /proc/uptime
bp_deadline=$(( ${{up%.*}} + $2 ))
while [ -e "$bp_dir/marker" ]; do
  bp_sample >> "$bp_dir/trace"
{power_tick}  [ "${{up%.*}}" -lt "$bp_deadline" ] || exit 0
  # A session that died (a lost board, a killed benchpipe) ends its sampler.
  bp_session_alive || exit 0
  sleep "$3"
done
"#,
        session_fn = crate::transport::guard::SESSION_ALIVE_FN,
    )
}

pub(super) fn start_script(root: &str, dir: &str, thermal: &str, o: &SamplerOptions) -> String {
    let meter = o.meter.as_ref().filter(|m| m.source.on_board());
    let sampler = quote::sh(&sampler_script(meter.map(|m| &m.source)));
    let power_header = meter.map(|m| power::header(&m.source)).unwrap_or_default();
    // The idle window: the sampler reads the meter while nothing but it runs, then
    // the run begins (its readings are told apart by this record's uptime).
    let load_start = match meter {
        Some(m) => format!(
            "{wait}read bp_up _ < /proc/uptime\necho \"load_start $bp_up {idle}\" >> \"$bp_dir/trace\"\n",
            wait = if m.idle.as_secs() > 0 {
                format!("sleep {}\n", m.idle.as_secs())
            } else {
                String::new()
            },
            idle = m.idle.as_secs()
        ),
        None => String::new(),
    };
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
  {power_header}echo "tis start"
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
{load_start}"#,
        root = quote::sh(root),
        dir = quote::sh(dir),
        path = path_line(o.path_prefix.as_deref()),
        thermal = quote::glob(thermal),
        klog_file = quote::sh(o.kernel_log_file.as_deref().unwrap_or("")),
        klog_fn = klog_fn(),
    )
}

pub(super) fn finish_script(
    dir: &str,
    path_prefix: Option<&str>,
    kernel_log_file: Option<&str>,
) -> String {
    let filter: String = KLOG_FILTER.iter().fold(String::new(), |mut out, w| {
        let _ = write!(out, " -e {}", quote::sh(w));
        out
    });
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
    use super::{ALIVE_FN, STOP_FN};
    use crate::transport::Transport;
    use crate::transport::local::Local;

    /// `bp_stop` signals what it stops, and nothing once that has ended: a reaped
    /// sampler's pid may be another process's by then. `kill` is shadowed by a
    /// function that records each call and sends no KILL.
    #[test]
    fn stopping_a_sampler_that_has_ended_sends_no_kill_to_its_pid() {
        let mut t = Local::new();
        let script = format!(
            r#"{ALIVE_FN}{STOP_FN}
sleep 0.1 & p=$!
wait $p
kill() {{ echo "kill $*"; [ "$1" = -KILL ] || command kill "$@"; }}
bp_stop "$p"
echo done"#
        );
        let out = t.run(&script, None).unwrap();
        let text = out.stdout_str();
        assert!(text.ends_with("done\n"), "{text}");
        assert!(!text.contains("KILL"), "a KILL for an ended pid: {text}");

        // One that lingers past TERM is killed, group and all.
        let script = format!(
            r#"{ALIVE_FN}{STOP_FN}
setsid sh -c 'trap "" TERM; sleep 30' & p=$!
sleep 0.2
bp_stop "$p"
i=0; while bp_alive "$p" && [ $i -lt 40 ]; do i=$((i + 1)); sleep 0.05; done
if bp_alive "$p"; then echo alive; else echo gone; fi"#
        );
        let out = t.run(&script, None).unwrap();
        assert_eq!(out.stdout_str(), "gone\n", "{}", out.stderr_str());
    }
}
