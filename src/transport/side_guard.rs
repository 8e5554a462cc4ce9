//! A side guard: a cluster side's or peer's dead man's switch on a target. It watches the process that carries
//! benchpipe's work there (the SSH session's sshd, or benchpipe itself on the
//! controller); when that process ends without the guard having been stopped first (a
//! lost board, a killed benchpipe), it runs the side's teardown commands itself and
//! then stops the side's services, so nothing benchpipe started there outlives it.
//!
//! The guard is a service (`service::start`): a process group with a pid file, which
//! the orderly path stops (`disarm`) after its own teardown, and which the next apply's
//! leftover stop ends too.

use std::fmt::Write as _;
use std::time::Duration;

use super::guard::START_TIME_FN;
use super::service::{PROC_FNS, STOP_FN};
use super::{Service, Transport, TransportError, quote};

/// What carries benchpipe's work on a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// The sshd process of this SSH connection: the command's first ancestor named
    /// `sshd` or `sshd-session`.
    Session,
    /// A process on the target itself: benchpipe's own, for the controller.
    Process(u32),
}

/// How long one teardown command of a guard may take.
pub const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(600);

/// Finds the carrier's pid and start time on the target: `(pid, start time)`.
fn carrier(t: &mut dyn Transport, carrier: Carrier) -> Result<(u32, String), TransportError> {
    let find = match carrier {
        Carrier::Session => r#"p=$$; i=0
while [ "$p" -gt 1 ] && [ $i -lt 32 ]; do
  c=; { read -r c < "/proc/$p/comm"; } 2>/dev/null
  case $c in sshd|sshd-session) echo "$p $(start_time "$p")"; exit 0 ;; esac
  l=; { read -r l < "/proc/$p/stat"; } 2>/dev/null || break
  set -f; set -- ${l##*") "}; set +f
  p=$2; i=$((i + 1))
done
echo "no sshd among this command's ancestors" >&2; exit 1"#
            .to_string(),
        Carrier::Process(pid) => format!("echo {pid} \"$(start_time {pid})\""),
    };
    let out = t.run(
        &format!("{START_TIME_FN}{PROC_FNS}{find}"),
        Some(Duration::from_secs(30)),
    )?;
    let text = out.stdout_str();
    let mut words = text.split_whitespace();
    match (out.exit.success(), words.next(), words.next()) {
        (true, Some(pid), Some(start))
            if pid.bytes().all(|b| b.is_ascii_digit())
                && start.bytes().all(|b| b.is_ascii_digit()) =>
        {
            let pid = pid.parse().map_err(|_| TransportError::Other {
                target: t.target(),
                reason: format!("guard: a pid out of range: {pid}"),
            })?;
            Ok((pid, start.to_string()))
        }
        _ => Err(TransportError::Other {
            target: t.target(),
            reason: format!(
                "guard: cannot find what carries benchpipe's connection: {}",
                out.stderr_str().trim()
            ),
        }),
    }
}

/// The guard's own script: wait while the carrier lives, then the teardown, then every
/// other service of `dir`, then `after` (shell text: ending the side's samplers).
pub fn script(
    dir: &str,
    name: &str,
    pid: u32,
    start: &str,
    teardown: &[String],
    after: &str,
) -> String {
    let services = format!("{}/services", dir.trim_end_matches('/'));
    let own = format!("{services}/{name}.pid");
    let mut s = format!(
        "{START_TIME_FN}{PROC_FNS}{STOP_FN}w={pid}; wt={start}\n\
         while [ \"$(start_time \"$w\")\" = \"$wt\" ]; do sleep 1; done\n\
         echo \"benchpipe's connection is gone: tearing down\"\n"
    );
    let limit = TEARDOWN_TIMEOUT.as_secs();
    for command in teardown {
        let c = quote::sh(command);
        let _ = writeln!(
            s,
            "if command -v timeout >/dev/null 2>&1; then timeout -s KILL {limit} sh -c {c}; else sh -c {c}; fi </dev/null"
        );
    }
    let _ = writeln!(
        s,
        "for pf in {}/*.pid; do [ -e \"$pf\" ] || continue; [ \"$pf\" = {} ] && continue; stop_group \"$pf\"; done",
        quote::sh(&services),
        quote::sh(&own)
    );
    s.push_str(after);
    s
}

/// Arms a guard on the target: its service `name` under `dir`, running `teardown`
/// (rendered shell commands) when the carrier ends, then stopping the other services
/// under `dir`, then `after`.
pub fn arm(
    t: &mut dyn Transport,
    dir: &str,
    name: &str,
    on: Carrier,
    teardown: &[String],
    after: &str,
) -> Result<Service, TransportError> {
    let (pid, start) = carrier(t, on)?;
    t.start_service(dir, name, &script(dir, name, pid, &start, teardown, after))
}

/// Stops a guard: the orderly teardown has run, or is about to be run by benchpipe.
pub fn disarm(t: &mut dyn Transport, guard: &Service) -> Result<(), TransportError> {
    t.stop_service(guard)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::local::Local;

    fn alive(pgid: u32) -> bool {
        // SAFETY: kill(2) with signal 0 only checks for existence.
        unsafe { libc::kill(-(pgid as i32), 0) == 0 }
    }

    /// A guard watching a process that then dies runs its teardown and stops its side's
    /// other services; a disarmed guard runs nothing.
    #[test]
    fn a_guard_tears_down_when_its_carrier_ends_and_not_when_disarmed() {
        let dir = std::env::temp_dir().join(format!("bp-guard-{}", std::process::id()));
        let d = dir.to_string_lossy().to_string();
        let mut t = Local::new();
        let other = t.start_service(&d, "other", "sleep 300").unwrap();
        let mut carrier = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        let marker = dir.join("torn-down");
        let teardown = vec![format!("touch {}", quote::sh(&marker.to_string_lossy()))];
        let g = arm(
            &mut t,
            &d,
            "guard",
            Carrier::Process(carrier.id()),
            &teardown,
            "",
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !marker.exists(),
            "nothing is torn down while the carrier lives"
        );
        carrier.kill().unwrap();
        carrier.wait().unwrap();
        let t0 = std::time::Instant::now();
        while (!marker.exists() || alive(other.pgid) || alive(g.pgid))
            && t0.elapsed() < Duration::from_secs(20)
        {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(marker.exists(), "the teardown ran");
        assert!(!alive(other.pgid), "the side's other service was stopped");
        assert!(!alive(g.pgid), "the guard ended");

        std::fs::remove_file(&marker).unwrap();
        let mut carrier = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .unwrap();
        let g = arm(
            &mut t,
            &d,
            "guard2",
            Carrier::Process(carrier.id()),
            &teardown,
            "",
        )
        .unwrap();
        disarm(&mut t, &g).unwrap();
        carrier.kill().unwrap();
        carrier.wait().unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        assert!(!marker.exists(), "a disarmed guard runs nothing");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
