//! What the crate's unit tests share across modules: a tool that is present, or the test
//! says it cannot run (and fails under `.ci/run`); a command run on this machine.

use std::time::Duration;

use crate::transport::local::Local;
use crate::transport::{Output, Transport, quote};

/// Whether `tools` are all installed; if not, says so (and fails under `.ci/run`, where a
/// skipped test must never look like a passed one).
pub(crate) fn have(test: &str, tools: &[&str]) -> bool {
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| {
            !local(&format!("command -v {}", quote::sh(t)))
                .exit
                .success()
        })
        .collect();
    if missing.is_empty() {
        return true;
    }
    let reason = format!("missing {}", missing.join(", "));
    let must_run = std::env::var_os("BENCHPIPE_TESTS_MUST_RUN").is_some_and(|v| v == "1");
    assert!(!must_run, "TEST COULD NOT RUN: {test}: {reason}");
    eprintln!("SKIPPED {test}: {reason}");
    false
}

/// `line` run by `sh -c` on this machine, through the transport that starts every
/// process benchpipe starts.
pub(crate) fn local(line: &str) -> Output {
    Local::new()
        .run(line, Some(Duration::from_secs(600)))
        .unwrap_or_else(|e| panic!("{line}: {e}"))
}
