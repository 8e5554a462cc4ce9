//! Background services on a target (iperf3 -s, nginx, smbd): started in a session of
//! their own with a pid file, and stopped by killing that whole process group.
//!
//! Everything is done with shell commands through `Transport::exec`, so it works the
//! same over SSH and locally. State lives in pid files under `DIR/services/`, not in
//! memory, so `stop_all` also cleans up after a controller that crashed mid-cell.
//! A service must stay in the foreground (`nginx -g 'daemon off;'`): a daemon that
//! detaches into a new session of its own escapes its process group.

use std::time::Duration;

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

/// Stops the process group in pid file `$1`: TERM, then KILL after 5 s, and proves it gone.
const STOP_FN: &str = r#"stop_group() {
  [ -s "$1" ] || { rm -f "$1"; return 0; }
  g=$(cat "$1")
  case "$g" in ''|*[!0-9]*) rm -f "$1"; return 0;; esac
  kill -s TERM -- "-$g" 2>/dev/null || { rm -f "$1"; return 0; }
  i=0
  while kill -s 0 -- "-$g" 2>/dev/null; do
    i=$((i + 1))
    [ $i -ge 50 ] && kill -s KILL -- "-$g" 2>/dev/null
    [ $i -ge 100 ] && { echo "process group $g survived SIGKILL" >&2; return 1; }
    sleep 0.1
  done
  rm -f "$1"
}
"#;

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

/// Starts `command` in the background under `DIR/services/NAME.{pid,log}`. Fails when a
/// service of that name is still running, or when the command exits within 0.2 s.
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
    let script = format!(
        r#"mkdir -p {d} || exit 1
pf={pf}
if [ -s "$pf" ] && kill -s 0 -- "-$(cat "$pf")" 2>/dev/null; then
  echo "service {n} is already running (process group $(cat "$pf"))" >&2; exit 1
fi
setsid sh -c {c} </dev/null >{log} 2>&1 &
pid=$!
echo $pid > "$pf"
sleep 0.2
if ! kill -s 0 -- "-$pid" 2>/dev/null; then
  rm -f "$pf"; echo "service {n} exited at once; its log:" >&2; tail -n 20 {log} >&2; exit 1
fi
echo $pid"#,
        d = quote::sh(&services),
        pf = quote::sh(&pid_file),
        n = name,
        c = quote::sh(command),
        log = quote::sh(&log_file),
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
    let script = format!("{STOP_FN}stop_group {}", quote::sh(&service.pid_file));
    finish(t, &format!("stopping service {}", service.name), &script)
}

/// Stops every service with a pid file under `DIR/services/` (cell end, failure, or
/// leftovers of an earlier crash).
pub fn stop_all<T: Transport + ?Sized>(t: &mut T, dir: &str) -> Result<(), TransportError> {
    let services = format!("{}/services", dir.trim_end_matches('/'));
    let script = format!(
        "{STOP_FN}rc=0\nfor pf in {}/*.pid; do [ -e \"$pf\" ] || continue; stop_group \"$pf\" || rc=1; done\nexit $rc",
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
        let failed = start(&mut t, &dir, "quick", "echo oops; exit 3");
        let err = failed.unwrap_err().to_string();
        assert!(
            err.contains("exited at once") && err.contains("oops"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
