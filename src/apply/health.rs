//! A board's (or a cluster member's) `[[health]]` checks, run once it runs its image: a board that fails one is
//! not measured, and its cells of that image are skipped with the check's reason (the
//! next apply checks again).

use super::worker::Worker;
use crate::failure::{CellFailure, first_line, stderr_tail};
use crate::model::health::HealthCheck;
use crate::transport::{Transport, TransportError};

impl Worker<'_> {
    /// Runs the checks in order; the first that fails (an exit other than 0, its
    /// timeout) skips the cells. A board lost meanwhile is lost, as at any step.
    pub(super) fn health(
        &self,
        t: &mut dyn Transport,
        board: &str,
        checks: &[HealthCheck],
    ) -> Result<(), CellFailure> {
        for c in checks {
            self.phase(None, format!("health check {} of {board}", c.name));
            let why = match t.run(&c.command, Some(c.timeout)) {
                Ok(out) if out.exit.success() => continue,
                Ok(out) => {
                    let tail = stderr_tail(&out.stderr_str());
                    match tail.last() {
                        Some(last) => format!("{}: {}", out.exit, first_line(last)),
                        None => out.exit.to_string(),
                    }
                }
                Err(TransportError::Timeout { after, .. }) => {
                    format!(
                        "still running after {}",
                        crate::shown::short_secs(after.as_secs_f64())
                    )
                }
                Err(e) => return Err(e.into()),
            };
            return Err(CellFailure::NotApplicable {
                reason: format!(
                    "board {board} failed its health check `{}` ({why}); nothing was measured",
                    c.name
                ),
            });
        }
        Ok(())
    }
}
