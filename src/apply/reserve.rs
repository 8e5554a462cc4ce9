//! A walk's labgrid places (`plan::schedule::Reserve`): acquired through
//! `transport::labgrid` before the walk's first step, waited for while someone else
//! holds one (as the board file's `wait` allows), released after the last step, also
//! after failures and interrupts.

use std::time::{Duration, Instant};

use super::StepStatus;
use super::worker::Worker;
use crate::failure::CellFailure;
use crate::plan::schedule::Reserve;
use crate::transport::labgrid::{self, Acquire};

/// How often a held place is asked for again while it is waited for.
const POLL: Duration = Duration::from_secs(3);

/// A place this walk acquired (or may have: an acquire cut by an interrupt or a
/// timeout), which its release step gives back: (coordinator, place, surely).
pub(super) type Reserved = Vec<(String, String, bool)>;

/// The acquire step: the place is this walk's, or the walk's cells fail (`Refused`,
/// naming the holder), or `Interrupted`.
pub(super) fn acquire(
    worker: &Worker<'_>,
    reserved: &mut Reserved,
    action: &Reserve,
) -> Result<(), CellFailure> {
    let Reserve::AcquireLabgridPlace {
        coordinator,
        place,
        wait_seconds,
        ..
    } = action
    else {
        return Ok(());
    };
    let refused = |reason: String| CellFailure::Refused {
        reason: format!("labgrid place {place} on {coordinator}: {reason}"),
    };
    worker.phase(None, format!("acquiring labgrid place {place}"));
    if !labgrid::exists(coordinator, place).map_err(&refused)? {
        return Err(refused("the coordinator has no place of that name".into()));
    }
    let wait = Duration::try_from_secs_f64(*wait_seconds).unwrap_or(Duration::ZERO);
    let started = Instant::now();
    let mut told: Option<String> = None;
    loop {
        let got = labgrid::acquire(coordinator, place).map_err(&refused);
        if worker.stop.load(std::sync::atomic::Ordering::SeqCst) {
            // The acquire may have ended by the interrupt after the coordinator gave
            // the place: the release step gives it back if so.
            match got {
                Ok(Acquire::Got) => reserved.push((coordinator.clone(), place.clone(), true)),
                Ok(Acquire::Unknown(_)) => {
                    reserved.push((coordinator.clone(), place.clone(), false));
                }
                Ok(Acquire::HeldBy(_)) | Err(_) => {}
            }
            return Err(CellFailure::Interrupted);
        }
        match got? {
            Acquire::Got => {
                reserved.push((coordinator.clone(), place.clone(), true));
                worker.phase(None, format!("acquired labgrid place {place}"));
                return Ok(());
            }
            Acquire::Unknown(why) => {
                reserved.push((coordinator.clone(), place.clone(), false));
                return Err(refused(why));
            }
            Acquire::HeldBy(holder) => {
                let waited = started.elapsed();
                if waited >= wait {
                    return Err(refused(if wait.is_zero() {
                        format!("held by {holder} (the board file's `wait` is 0s)")
                    } else {
                        format!("still held by {holder} after waiting {}s", waited.as_secs())
                    }));
                }
                if told.as_deref() != Some(holder.as_str()) {
                    worker.phase(
                        None,
                        format!(
                            "waiting for labgrid place {place}, held by {holder} (up to {}s)",
                            wait.as_secs()
                        ),
                    );
                    told = Some(holder);
                }
                worker.sleep(POLL.min(wait.saturating_sub(waited)))?;
            }
        }
    }
}

/// The release step: gives back what the acquire step got; nothing when it got
/// nothing. A failed release fails no cell (its numbers stand) but is said.
pub(super) fn release(
    worker: &Worker<'_>,
    reserved: &mut Reserved,
    action: &Reserve,
) -> StepStatus {
    let Reserve::ReleaseLabgridPlace {
        coordinator, place, ..
    } = action
    else {
        return StepStatus::Done;
    };
    let Some(at) = reserved
        .iter()
        .position(|(c, p, _)| c == coordinator && p == place)
    else {
        return StepStatus::Done;
    };
    let (_, _, surely) = reserved.remove(at);
    match labgrid::release(coordinator, place) {
        // An acquire that gave no answer may not have got the place: labgrid's refusal
        // (not acquired, or someone else's) is then the answer, not a failure.
        Err(_) if !surely => StepStatus::Done,
        Ok(()) => {
            worker.phase(None, format!("released labgrid place {place}"));
            StepStatus::Ran
        }
        Err(e) => {
            let cause = format!(
                "could not release labgrid place {place} on {coordinator}: {e}; `{} -x {coordinator} -p {place} release` frees it",
                labgrid::CLIENT
            );
            worker.phase(None, cause.clone());
            StepStatus::Failed { cause }
        }
    }
}
