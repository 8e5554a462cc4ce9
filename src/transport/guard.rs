//! Dead man's switches: a process on the target that outlives the command which made a
//! resource (a service's process group, a tmpfs), and undoes it when the session it
//! was made under dies first: the board's sshd or its link went away, or benchpipe was
//! killed, before benchpipe could undo it itself.
//!
//! Every command learns its session's anchor in `BENCHPIPE_ANCHOR` (`PID STARTTIME`):
//! over SSH a session's first command finds the sshd process serving the session among
//! its ancestors (`anchor_fn`), and every command on that session is handed the same;
//! locally it is benchpipe itself (`local_anchor`). A guard polls once a
//! second: it ends quietly when its resource is gone (benchpipe undid it), and undoes
//! the resource once the anchor's pid no longer has the recorded start time (a reused
//! pid has another). Without an anchor (no /proc, an unknown sshd), no guard starts and
//! the next apply's stop-leftovers step is the only remedy, as before. A command that
//! starts after its session died carries a dead anchor (the sshd it names is gone, or
//! `GONE_ANCHOR` when the first command's own sshd was): what it makes is undone at once.

use super::quote;
use std::fmt::Write as _;

/// The environment variable every command receives its session's anchor in.
pub const ANCHOR_ENV: &str = "BENCHPIPE_ANCHOR";

/// Names of the process that serves an SSH session on the board.
const SSHD_NAMES: &str = "sshd|sshd-session|dropbear";

/// `start_time PID`: field 22 of /proc/PID/stat, which a reused pid does not share;
/// nothing (and failure) when the process is gone. A zombie still has it: its pid (and
/// process group id) cannot be reused until it is reaped, so signalling its group is
/// safe. `live_start_time PID` fails for a zombie too: a dead process, which where PID
/// 1 reaps late (as in containers) lingers for seconds, is no live anchor.
pub const START_TIME_FN: &str = r#"start_time() {
  st=; { read -r st < "/proc/$1/stat"; } 2>/dev/null || return 1
  set -f; set -- ${st##*") "}; set +f
  [ $# -ge 20 ] || return 1
  shift 19; echo "$1"
}
live_start_time() {
  st=; { read -r st < "/proc/$1/stat"; } 2>/dev/null || return 1
  set -f; set -- ${st##*") "}; set +f
  [ $# -ge 20 ] || return 1
  case $1 in Z|X|x) return 1;; esac
  shift 19; echo "$1"
}
"#;

/// The anchor of a command whose session was gone before it started: no process has
/// pid 0, so a guard launched under it undoes at once and `bp_session_alive` is false.
pub const GONE_ANCHOR: &str = "0 0";

/// Sets and exports `BENCHPIPE_ANCHOR` to the nearest ancestor (at most 8 up) that is
/// the session's sshd; empty when there is none (no /proc, an unknown SSH server, a
/// parent /proc hides). The walk starts at the live parent in /proc, not `$PPID`, which
/// is fixed when the shell starts. A command whose sshd was killed just before it ran
/// (a lost board) has been reparented to PID 1, since the kernel hands a process's
/// children on when it exits: its anchor is `GONE_ANCHOR`, for an empty one would let
/// its sampler run until its deadline. Builtins only. Over SSH it runs once per
/// session (`ssh/wrapper.rs`'s first request): every command's shell there is a child
/// of the same sshd, so the walk would find the same anchor each time.
pub fn anchor_fn() -> String {
    format!(
        r#"bp_parent() {{
  s=; {{ read -r s < "/proc/$$/stat"; }} 2>/dev/null || return 1
  set -f; set -- ${{s##*") "}}; set +f
  [ $# -ge 20 ] || return 1
  case $2 in ''|*[!0-9]*) return 1;; esac
  bp_parent=$2
}}
bp_anchor() {{
  bp_parent || return 0
  a=$bp_parent; n=0
  [ "$a" -gt 1 ] || {{ {ANCHOR_ENV}='{GONE_ANCHOR}'; return 0; }}
  while [ "$n" -lt 8 ] && [ "$a" -gt 1 ] 2>/dev/null; do
    c=; {{ read -r c < "/proc/$a/comm"; }} 2>/dev/null
    s=; {{ read -r s < "/proc/$a/stat"; }} 2>/dev/null || {{
      # The parent exited since it was read (this process was reparented), or /proc
      # hides it (hidepid): only the first is a gone session.
      [ "$n" -eq 0 ] && bp_parent && [ "$bp_parent" -le 1 ] && {ANCHOR_ENV}='{GONE_ANCHOR}'
      return 0
    }}
    set -f; set -- ${{s##*") "}}; set +f
    [ $# -ge 20 ] || return 0
    case $c in {SSHD_NAMES})
      shift 19; {ANCHOR_ENV}="$a $1"; return 0;;
    esac
    a=$2; n=$((n + 1))
  done
}}
{ANCHOR_ENV}=; bp_anchor; export {ANCHOR_ENV}
"#
    )
}

/// `BENCHPIPE_ANCHOR` for commands benchpipe runs on this machine: its own pid and
/// start time, so a guard undoes what a killed benchpipe left on the controller.
pub fn local_anchor() -> String {
    let pid = std::process::id();
    let start = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(") ")?.1.to_string();
            rest.split_whitespace().nth(19).map(str::to_string)
        });
    match start {
        Some(t) if t.bytes().all(|b| b.is_ascii_digit()) => format!("{pid} {t}"),
        _ => String::new(),
    }
}

/// A guard: what it watches, how it undoes, and its arguments.
pub struct Guard<'a> {
    /// Names the guard's processes: `benchpipe-guard-<kind>` is their `$0`.
    pub kind: &'a str,
    /// A shell condition on the guard's arguments (`$1`...): true while the resource
    /// exists. When it fails, the guard ends without doing anything.
    pub alive: &'a str,
    /// Shell that undoes the resource, run once the anchor is gone.
    pub undo: &'a str,
    /// Its arguments as shell words, quoted by the caller (`quote::sh`, or `"$pid"` for
    /// a value of the launching script).
    pub args: &'a [String],
    /// A file the guard creates once it runs in a session of its own, which the
    /// launcher waits for (at most 2 s) and removes: the launcher's process group is
    /// killed when its command ends, and the guard must be out of it by then.
    pub ready: &'a str,
}

/// Shell text that starts `g` in the background, in a session of its own, detached
/// from every stream of the command; nothing when the command has no anchor.
pub fn launch(g: &Guard<'_>) -> String {
    let body = format!(
        r#"cd / || exit 1
{START_TIME_FN}bp_ap=$2; bp_at=$3; : > "$1" 2>/dev/null; shift 3
while :; do
  {alive} || exit 0
  [ "$(live_start_time "$bp_ap")" = "$bp_at" ] || break
  sleep 1
done
{undo}
"#,
        alive = g.alive,
        undo = g.undo,
    );
    let args: String = g.args.iter().fold(String::new(), |mut out, a| {
        let _ = write!(out, " {a}");
        out
    });
    format!(
        r#"case ${{{ANCHOR_ENV}:-}} in
  ''|*[!0-9\ ]*) ;;
  *)
    rm -f -- {ready}
    setsid /bin/sh -c {body} benchpipe-guard-{kind} {ready} ${ANCHOR_ENV}{args} </dev/null >/dev/null 2>&1 3<&- &
    bp_i=0
    until [ -e {ready} ] || [ "$bp_i" -ge 40 ]; do bp_i=$((bp_i + 1)); sleep 0.05 2>/dev/null || sleep 1; done
    rm -f -- {ready}
    ;;
esac
"#,
        kind = g.kind,
        ready = quote::sh(g.ready),
        body = quote::sh(&body),
    )
}

/// `bp_session_alive`: whether the anchor this process started under
/// (`BENCHPIPE_ANCHOR`, read at the start into `bp_anchor`) still runs; true when there
/// is none. For a loop of its own that must end with its session (the sampler).
pub const SESSION_ALIVE_FN: &str = r#"bp_anchor=${BENCHPIPE_ANCHOR:-}
bp_session_alive() {
  [ -n "$bp_anchor" ] || return 0
  set -f; set -- $bp_anchor; set +f
  [ $# -eq 2 ] || return 0
  bp_sa=; { read -r bp_sa < "/proc/$1/stat"; } 2>/dev/null || return 1
  bp_want=$2
  set -f; set -- ${bp_sa##*") "}; set +f
  case $1 in Z|X|x) return 1;; esac
  [ $# -ge 20 ] && shift 19 && [ "$1" = "$bp_want" ]
}
"#;

/// The shell condition, for a guard's `alive`, that process `$1` still runs with start
/// time `$2` (a service's group leader).
pub const LEADER_ALIVE: &str = r#"[ "$(live_start_time "$1")" = "$2" ]"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Transport;
    use crate::transport::local::Local;

    #[test]
    fn the_local_anchor_is_this_process_with_its_start_time() {
        let a = local_anchor();
        let (pid, start) = a.split_once(' ').expect("pid and start time");
        assert_eq!(pid, std::process::id().to_string());
        assert!(start.parse::<u64>().is_ok(), "{a}");
    }

    /// Runs `anchor_fn` and `SESSION_ALIVE_FN` in a /bin/sh started by `launcher`
    /// (whose `$0` is the script; `launched` runs once the launcher has exited) and
    /// returns `[anchor] alive-or-gone [live parent]`, written to a file, since an
    /// orphan's output has no reader.
    fn anchor_seen(name: &str, launcher: &str, launched: impl FnOnce()) -> String {
        let out = format!("/tmp/benchpipe-anchor-test-{}-{name}", std::process::id());
        let _ = std::fs::remove_file(&out);
        let tmp = quote::sh(&format!("{out}.tmp"));
        let script = format!(
            r#"{anchor}{SESSION_ALIVE_FN}read -r s < /proc/$$/stat; set -- ${{s##*") "}}; p=$2
if bp_session_alive; then v=alive; else v=gone; fi
echo "[${ANCHOR_ENV}] $v [$p]" > {tmp} && mv {tmp} {out}
"#,
            anchor = anchor_fn(),
            out = quote::sh(&out),
        );
        let status = std::process::Command::new("sh")
            .args(["-c", launcher, &script])
            .status()
            .unwrap();
        assert!(status.success());
        launched();
        let t0 = std::time::Instant::now();
        while !std::path::Path::new(&out).exists() && t0.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let seen = std::fs::read_to_string(&out).unwrap_or_default();
        let _ = std::fs::remove_file(&out);
        seen.trim().to_string()
    }

    /// Under no sshd the anchor is empty and the session counts as alive (nothing to
    /// watch); a command orphaned before it looks (its sshd was killed: it was
    /// reparented to PID 1) gets `GONE_ANCHOR`, and its session counts as gone.
    #[test]
    fn an_orphaned_command_sees_its_session_gone_and_one_without_sshd_sees_no_anchor() {
        let direct = anchor_seen("direct", r#"sh -c "$0""#, || {});
        assert!(direct.starts_with("[] alive ["), "{direct}");
        // The middle shell exits at once; the inner one looks only once this test has
        // seen it exit (a file says so), by when it has been reparented, however loaded
        // the machine.
        let go = format!("/tmp/benchpipe-anchor-test-{}-go", std::process::id());
        let _ = std::fs::remove_file(&go);
        let launcher = format!(
            r#"sh -c "i=0; until [ -e {go} ] || [ \$i -ge 600 ]; do i=\$((i + 1)); sleep 0.05; done; $0" & exit 0"#,
            go = quote::sh(&go)
        );
        let orphan = anchor_seen("orphan", &launcher, || {
            std::fs::write(&go, "").unwrap();
        });
        let _ = std::fs::remove_file(&go);
        assert_eq!(orphan, format!("[{GONE_ANCHOR}] gone [1]"));
    }

    /// A guard undoes its resource once its anchor is gone, and ends without a word
    /// when the resource goes first.
    #[test]
    fn a_guard_undoes_when_its_anchor_dies_and_not_when_its_resource_goes_first() {
        let dir = format!("/tmp/benchpipe-guard-test-{}", std::process::id());
        std::fs::create_dir_all(&dir).unwrap();
        let mut t = Local::new();
        for (case, remove_first) in [("anchor-dies", false), ("resource-goes", true)] {
            let resource = format!("{dir}/{case}.resource");
            let undone = format!("{dir}/{case}.undone");
            std::fs::write(&resource, "x").unwrap();
            // The anchor: a sleeper of our own, by pid and start time.
            let mut anchor = std::process::Command::new("sleep")
                .arg("300")
                .spawn()
                .unwrap();
            let pid = anchor.id();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            let start = stat
                .rsplit_once(") ")
                .unwrap()
                .1
                .split(' ')
                .nth(19)
                .unwrap();
            let args = [quote::sh(&resource), quote::sh(&undone)];
            let g = Guard {
                kind: "test",
                alive: r#"[ -e "$1" ]"#,
                undo: r#"rm -f "$1"; : > "$2""#,
                args: &args,
                ready: &format!("{dir}/{case}.ready"),
            };
            let script = format!("{ANCHOR_ENV}='{pid} {start}'\n{}", launch(&g));
            let out = t.run(&script, None).unwrap();
            assert!(out.exit.success(), "{}", out.stderr_str());
            if remove_first {
                std::fs::remove_file(&resource).unwrap();
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
            let _ = anchor.kill();
            let _ = anchor.wait();
            let t0 = std::time::Instant::now();
            let want_undone = !remove_first;
            while std::path::Path::new(&undone).exists() != want_undone
                && t0.elapsed().as_secs() < 20
            {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            assert_eq!(
                std::path::Path::new(&undone).exists(),
                want_undone,
                "{case}"
            );
            assert!(!std::path::Path::new(&resource).exists(), "{case}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
