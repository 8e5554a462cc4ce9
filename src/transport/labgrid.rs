//! `labgrid-client` on the controller: a place acquired, released, and who holds it.
//! Each call is one argv, every word quoted (`quote::join`), run by the local
//! transport in its own process group with a timeout, so an interrupt ends it.

use std::time::Duration;

use super::{Transport, TransportError, local::Local, quote};

/// The client, found on `PATH` (`.ci/run` links the pinned one into /usr/local/bin).
pub const CLIENT: &str = "labgrid-client";

/// How long one call may take: a gRPC round trip, but Python starts slowly on a
/// loaded controller.
const CALL_TIMEOUT: Duration = Duration::from_secs(90);

/// What an acquire found.
#[derive(Debug, PartialEq, Eq)]
pub enum Acquire {
    /// The place is this process's identity's now.
    Got,
    /// Someone holds it: labgrid's `host/user` of the holder, as the client said it.
    HeldBy(String),
    /// The call ended without an answer (interrupted, timed out): the coordinator may
    /// have given the place, so it is released at the end all the same.
    Unknown(String),
}

fn call(coordinator: &str, place: Option<&str>, command: &str) -> Result<super::Output, String> {
    let mut argv = vec![CLIENT, "-x", coordinator];
    if let Some(p) = place {
        argv.extend(["-p", p]);
    }
    argv.push(command);
    Local::new()
        .run(&quote::join(&argv), Some(CALL_TIMEOUT))
        .map_err(|e| match e {
            TransportError::Timeout { after, .. } => {
                format!(
                    "`{CLIENT} {command}` gave no answer in {}s",
                    after.as_secs()
                )
            }
            e => format!("`{CLIENT} {command}`: {e}"),
        })
}

/// The client's last line of error output, sanitised and bounded: what it says is
/// wrong (`labgrid-client: error: ...`), else its exit.
fn why(out: &super::Output) -> String {
    let stderr = out.stderr_str();
    let line = stderr
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.strip_prefix("labgrid-client: error: ").unwrap_or(l));
    match line {
        Some(l) => crate::shown::shown(l).into_owned(),
        None if out.exit.code == Some(127) => format!("{CLIENT} is not installed (not on PATH)"),
        None => format!("{CLIENT} ended with {}", out.exit),
    }
}

/// Whether the coordinator has a place named exactly `place` (`-p` takes a pattern
/// and would take another place whose name contains it).
pub fn exists(coordinator: &str, place: &str) -> Result<bool, String> {
    let out = call(coordinator, None, "places")?;
    if !out.exit.success() {
        return Err(why(&out));
    }
    Ok(out
        .stdout_str()
        .lines()
        .any(|l| l.split_whitespace().next() == Some(place)))
}

/// Acquires `place` for this process's labgrid identity (`LG_HOSTNAME`/`LG_USERNAME`,
/// else the host's name and the user's).
pub fn acquire(coordinator: &str, place: &str) -> Result<Acquire, String> {
    let out = match call(coordinator, Some(place), "acquire") {
        Ok(out) => out,
        Err(e) => return Ok(Acquire::Unknown(e)),
    };
    if out.exit.signal.is_some() {
        return Ok(Acquire::Unknown(why(&out)));
    }
    if out.exit.success() {
        let said = format!("acquired place {place}");
        if out.stdout_str().lines().any(|l| l.trim() == said) {
            return Ok(Acquire::Got);
        }
        // It took a place it matched some other way (an alias): give it back.
        let _ = release(coordinator, place);
        return Err(format!(
            "the coordinator gave another place than `{place}`: {}",
            crate::shown::shown(out.stdout_str().trim())
        ));
    }
    match holder(&out.stderr_str()) {
        Some(h) => Ok(Acquire::HeldBy(h)),
        None => Err(why(&out)),
    }
}

/// The holder in the client's refusal: `place P is not idle (acquired by HOST/USER)`.
fn holder(stderr: &str) -> Option<String> {
    let (_, rest) = stderr.split_once("is not idle (acquired by ")?;
    let (who, _) = rest.split_once(')')?;
    Some(crate::shown::shown(who).into_owned())
}

/// Releases `place`: labgrid refuses when it is another identity's (no `--kick`, ever).
pub fn release(coordinator: &str, place: &str) -> Result<(), String> {
    let out = call(coordinator, Some(place), "release")?;
    if out.exit.success() {
        Ok(())
    } else {
        Err(why(&out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_read_from_the_refusal() {
        let e = "labgrid-client: error: place p1 is not idle (acquired by vm/root). To work simultaneously, root can execute labgrid-client -p p1 allow other/bob\n";
        assert_eq!(holder(e).as_deref(), Some("vm/root"));
        assert_eq!(
            holder("labgrid-client: error: place pattern x matches nothing"),
            None
        );
        // A holder's name is shown sanitised.
        let shown = holder("is not idle (acquired by h/\u{1b}[31m)").unwrap();
        assert!(
            shown.starts_with("h/") && !shown.contains('\u{1b}'),
            "{shown}"
        );
    }
}
