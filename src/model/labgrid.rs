//! A board's labgrid place (`labgrid = { coordinator, place, wait }`): the reservation
//! apply takes through an existing labgrid coordinator before the board's first step.

use std::time::Duration;

use serde::Serialize;

/// Where and what to reserve: the place `place` on the coordinator `coordinator`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LabgridPlace {
    /// `HOST:PORT` of the labgrid coordinator (`labgrid-client -x`).
    pub coordinator: String,
    /// The place's exact name: never a pattern (labgrid's `-p` matches substrings, so
    /// apply checks that the place it got is this one).
    pub place: String,
    /// How long a place someone else holds is waited for before the board's cells
    /// fail; zero fails them at once.
    #[serde(serialize_with = "seconds")]
    pub wait: Duration,
}

/// The default `wait`: none. An unattended apply should not sit behind someone's
/// session unasked; `wait = "2h"` says how long it may.
pub const DEFAULT_WAIT: Duration = Duration::ZERO;

/// The longest a place name may be.
pub const MAX_PLACE: usize = 64;

/// Whether `name` is a place name benchpipe passes to `labgrid-client -p`: letters,
/// digits, `.`, `_`, `-`, not starting with `-` (an option) or `+` (labgrid reads
/// `+TOKEN` as a reservation token).
pub fn is_place_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PLACE
        && !name.starts_with(['-', '.'])
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's serialize_with passes a reference"
)]
fn seconds<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}
