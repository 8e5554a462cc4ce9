//! Background services on a target (iperf3 -s, nginx, smbd): started in a session of
//! their own with a pid file, and stopped by killing that whole process group.
//!
//! Everything is done with shell commands through `Transport::exec`, so it works the
//! same over SSH and locally. State lives in pid files under `DIR/services/`, not in
//! memory, so `stop_all` also cleans up after a controller that crashed mid-cell.
//! A service must stay in the foreground (`nginx -g 'daemon off;'`): a daemon that
//! detaches into a new session of its own escapes its process group.

use std::time::Duration;

use super::guard::{self, START_TIME_FN};
use super::{Transport, TransportError, quote};

/// A running service: its process group on the target and where it logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub name: String,
    /// The process group (and session) id; the service's first process.
    pub pgid: u32,
    pub pid_file: String,
    pub log_file: String,
}

const START_TIMEOUT: Duration = Duration::from_secs(30);
/// Long enough for SIGTERM, the 5 s grace before SIGKILL, and the check after it.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// Shell functions shared by start and stop. A pid file holds `PID STARTTIME TOKEN`:
/// the group leader's pid, its start time (field 22 of /proc/PID/stat, which a reused
/// pid does not share), and a random token in the service's environment.
pub(super) const PROC_FNS: &str = r#"# Reads pid file $1 into g, t and tok; fails (saying why) unless it is one of ours.
read_pid_file() {
  l=; { read -r l < "$1"; } 2>/dev/null
  set -f; set -- $l; set +f
  g=$1; t=$2; tok=$3
  case "$g" in ''|0*|*[!0-9]*) g= ;; esac
  case "$t" in ''|*[!0-9]*) t= ;; esac
  case "$tok" in ''|*[!0-9a-f]*) tok= ;; esac
  if [ -z "$g" ] || [ "$g" -le 1 ] || [ -z "$t" ] || [ -z "$tok" ]; then
    echo "$pf holds \"$l\", not \"PID STARTTIME TOKEN\" of a service benchpipe started: nothing signalled" >&2
    return 1
  fi
}
# Whether process group $g is still the one started with start time $t.
ours_alive() {
  [ "$(start_time "$g")" = "$t" ]
}
"#;

/// `stop_ours`: stops the service whose leader is `$g`, started at `$t` with token
/// `$tok`: TERM to its process group, KILL after 5 s, and proves it gone. Only a group
/// whose leader still has the recorded start time is signalled; when the leader is
/// gone, only members of its session carrying its token. Returns 1 when the group
/// survived SIGKILL. `stop_group PIDFILE` does it for the service of a pid file.
pub(super) const STOP_FN: &str = r#"stop_ours() {
  now=$(start_time "$g")
  if [ -n "$now" ] && [ "$now" != "$t" ]; then
    echo "pid $g of $pf now belongs to another process: nothing signalled" >&2
    return 0
  fi
  if [ -z "$now" ]; then
    # The leader is gone; its group id cannot be reused while members live, and the
    # token tells them from a later group of the same id.
    for s in /proc/[0-9]*/stat; do
      l=; { read -r l < "$s"; } 2>/dev/null || continue
      set -f; set -- ${l##*") "}; set +f
      [ "$3" = "$g" ] && [ "$4" = "$g" ] || continue
      p=${s#/proc/}; p=${p%/stat}
      tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qxF "BENCHPIPE_SERVICE=$tok" || continue
      kill -s KILL "$p" 2>/dev/null
    done
    return 0
  fi
  kill -s TERM -- "-$g" 2>/dev/null || return 0
  i=0
  while kill -s 0 -- "-$g" 2>/dev/null; do
    i=$((i + 1))
    [ $i -ge 50 ] && kill -s KILL -- "-$g" 2>/dev/null
    [ $i -ge 100 ] && { echo "process group $g survived SIGKILL" >&2; return 1; }
    sleep 0.1
  done
}
stop_group() {
  pf=$1
  [ -e "$pf" ] || return 0
  read_pid_file "$pf" || { rm -f "$pf"; return 1; }
  stop_ours || return 1
  rm -f "$pf"
}
"#;

/// The service's dead man's switch (`guard`): its arguments are the leader's pid, its
/// start time, the token and the pid file. When the session that started it dies, it
/// stops the group as `stop_group` would, and removes the pid file if it still names
/// this start.
fn guard_undo() -> String {
    format!(
        r#"g=$1; t=$2; tok=$3; pf=$4
{STOP_FN}stop_ours
l=; {{ read -r l < "$pf"; }} 2>/dev/null
[ "$l" = "$g $t $tok" ] && rm -f "$pf"
"#
    )
}

fn check_name<T: Transport + ?Sized>(t: &T, name: &str) -> Result<(), TransportError> {
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && !name.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(TransportError::Other {
            target: t.target(),
            reason: format!(
                "service name {name:?} must be letters, digits, '-', '_' or '.' (it names a pid file)"
            ),
        })
    }
}

/// The name prefix of a service that is itself a dead man's switch (a cluster side's
/// guard, `side_guard`): it gets no guard of its own, which would end it exactly when
/// its session dies, the moment it must act. Recipe services are named after their
/// cell's key (hex), so they never carry it.
pub const SELF_GUARDED_PREFIX: &str = "guard-";

/// Starts `command` in the background under `DIR/services/NAME.{pid,log}`. Fails when a
/// service of that name is still running, or when the command exits within 0.2 s.
/// Unless it is `SELF_GUARDED_PREFIX`-named, a guard stops it when the session that
/// started it dies.
pub fn start<T: Transport + ?Sized>(
    t: &mut T,
    dir: &str,
    name: &str,
    command: &str,
) -> Result<Service, TransportError> {
    check_name(t, name)?;
    let services = format!("{}/services", dir.trim_end_matches('/'));
    let pid_file = format!("{services}/{name}.pid");
    let log_file = format!("{services}/{name}.log");
    let tok = super::random_hex::<12>();
    let script = format!(
        r#"{START_TIME_FN}{PROC_FNS}mkdir -p -m 700 -- {d} || exit 1
[ -d {d} ] && [ ! -L {d} ] || {{ echo "{d} is not a directory" >&2; exit 1; }}
pf={pf}
if [ -e "$pf" ]; then
  if read_pid_file "$pf" 2>/dev/null && ours_alive; then
    echo "service {n} is already running (process group $g)" >&2; exit 1
  fi
  rm -f "$pf"
fi
BENCHPIPE_SERVICE={tok} setsid sh -c {c} </dev/null >{log} 2>&1 &
pid=$!
t=$(start_time "$pid") || {{ kill -s KILL -- "-$pid" "$pid" 2>/dev/null; echo "service {n} exited at once (no live process in /proc/$pid/stat); its log:" >&2; sleep 0.1; tail -n 20 {log} >&2; exit 1; }}
echo "$pid $t {tok}" > "$pf"
sleep 0.2
if ! kill -s 0 -- "-$pid" 2>/dev/null; then
  rm -f "$pf"; echo "service {n} exited at once; its log:" >&2; tail -n 20 {log} >&2; exit 1
fi
{guard}echo $pid"#,
        d = quote::sh(&services),
        pf = quote::sh(&pid_file),
        n = name,
        c = quote::sh(command),
        log = quote::sh(&log_file),
        guard = if name.starts_with(SELF_GUARDED_PREFIX) {
            String::new()
        } else {
            guard::launch(&guard::Guard {
                kind: "service",
                alive: guard::LEADER_ALIVE,
                undo: &guard_undo(),
                args: &[
                    "\"$pid\"".into(),
                    "\"$t\"".into(),
                    tok.clone(),
                    quote::sh(&pid_file),
                ],
                ready: &format!("{services}/{name}.guard"),
            })
        },
    );
    let out = t.run(&script, Some(START_TIMEOUT))?;
    if !out.exit.success() {
        return Err(TransportError::Other {
            target: t.target(),
            reason: format!("starting service {name}: {}", out.stderr_str().trim()),
        });
    }
    let pgid = out
        .stdout_str()
        .trim()
        .parse::<u32>()
        .map_err(|_| TransportError::Other {
            target: t.target(),
            reason: format!(
                "starting service {name}: no process id in {:?}",
                out.stdout_str()
            ),
        })?;
    Ok(Service {
        name: name.to_string(),
        pgid,
        pid_file,
        log_file,
    })
}

/// Stops one service: its whole process group, for sure (KILL after 5 s).
pub fn stop<T: Transport + ?Sized>(t: &mut T, service: &Service) -> Result<(), TransportError> {
    let script = format!(
        "{START_TIME_FN}{PROC_FNS}{STOP_FN}stop_group {}",
        quote::sh(&service.pid_file)
    );
    finish(t, &format!("stopping service {}", service.name), &script)
}

/// Stops every service with a pid file under `DIR/services/` (cell end, failure, or
/// leftovers of an earlier crash).
pub fn stop_all<T: Transport + ?Sized>(t: &mut T, dir: &str) -> Result<(), TransportError> {
    let services = format!("{}/services", dir.trim_end_matches('/'));
    let script = format!(
        "{START_TIME_FN}{PROC_FNS}{STOP_FN}rc=0\nfor pf in {}/*.pid; do [ -e \"$pf\" ] || continue; stop_group \"$pf\" || rc=1; done\nexit $rc",
        quote::sh(&services)
    );
    finish(t, "stopping services", &script)
}

fn finish<T: Transport + ?Sized>(
    t: &mut T,
    what: &str,
    script: &str,
) -> Result<(), TransportError> {
    let out = t.run(script, Some(STOP_TIMEOUT))?;
    if out.exit.success() {
        Ok(())
    } else {
        Err(TransportError::Other {
            target: t.target(),
            reason: format!("{what}: {} {}", out.exit, out.stderr_str().trim()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::local::Local;

    fn group_alive(pgid: u32) -> bool {
        // SAFETY: kill(2) with signal 0 only checks for existence.
        unsafe { libc::kill(-(pgid as i32), 0) == 0 }
    }

    #[test]
    fn a_local_service_and_its_children_are_gone_after_stop() {
        let dir = format!("/tmp/benchpipe-service-test-{}", std::process::id());
        let mut t = Local::new();
        let s = start(&mut t, &dir, "sleeper", "sleep 300 & sleep 300").unwrap();
        assert!(group_alive(s.pgid));
        let again = start(&mut t, &dir, "sleeper", "sleep 300");
        assert!(
            again.is_err(),
            "a second start with the same name must fail"
        );
        stop(&mut t, &s).unwrap();
        assert!(!group_alive(s.pgid), "process group {} still alive", s.pgid);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn stop_all_stops_every_service_and_a_bad_name_is_refused() {
        let dir = format!("/tmp/benchpipe-service-test-all-{}", std::process::id());
        let mut t = Local::new();
        let a = start(&mut t, &dir, "a", "sleep 300").unwrap();
        let b = start(&mut t, &dir, "b", "trap '' TERM; sleep 300").unwrap();
        stop_all(&mut t, &dir).unwrap();
        assert!(!group_alive(a.pgid) && !group_alive(b.pgid));
        assert!(start(&mut t, &dir, "../x", "true").is_err());
        // "At once" is within 0.2 s; on a loaded machine the shell may not even run in
        // that time, and then the start is rightly a success. Try a few times.
        let mut failed = start(&mut t, &dir, "quick", "echo oops; exit 3");
        for _ in 0..10 {
            if failed.is_err() {
                break;
            }
            let _ = stop_all(&mut t, &dir);
            failed = start(&mut t, &dir, "quick", "echo oops; exit 3");
        }
        let err = failed.unwrap_err().to_string();
        assert!(
            err.contains("exited at once") && err.contains("oops"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
