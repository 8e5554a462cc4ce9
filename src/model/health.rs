//! A board's health checks (`[[health]]`): commands it must pass before its cells run,
//! as LAVA's health checks keep a broken device out of the results.

use std::time::Duration;

use serde::Serialize;

/// One check: a shell command run on the board, that must exit 0 within `timeout`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HealthCheck {
    /// What the check is of, for the reason a board's cells are skipped.
    pub name: String,
    pub command: String,
    #[serde(serialize_with = "seconds")]
    pub timeout: Duration,
}

/// The default and the longest `timeout` of a check.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with passes a reference"
)]
fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}
