//! Cool-down and the idle gate before a cell's runs.

use std::time::{Duration, Instant};

use super::facts::{read_load, read_temperature};
use super::worker::Worker;
use crate::failure::CellFailure;
use crate::model::{Cooldown, Method};
use crate::plan::Address;
use crate::transport::Transport;

impl Worker<'_> {
    /// Waits out the method's cool-down, then its idle gate. A board without a thermal
    /// source cannot be waited on by temperature; it is said once and not waited for.
    pub(super) fn cooldown(
        &self,
        board: &mut dyn Transport,
        addr: Option<&Address>,
        method: &Method,
        idle_celsius: Option<f64>,
    ) -> Result<(), CellFailure> {
        match &method.cooldown {
            Cooldown::None => {}
            Cooldown::Fixed { duration } => {
                self.phase(addr, format!("cool-down {}s", duration.as_secs()));
                self.sleep(*duration)?;
            }
            Cooldown::UntilBelow {
                celsius,
                above_idle,
                max,
            } => {
                let limit = match (*above_idle, idle_celsius) {
                    (false, _) => Some(*celsius),
                    (true, Some(idle)) => Some(idle + celsius),
                    (true, None) => None,
                };
                let t0 = Instant::now();
                while let Some(limit) = limit {
                    match read_temperature(board, self.board) {
                        Some(c) if c < limit => break,
                        None => {
                            self.phase(addr, "cool-down skipped: no temperature source");
                            break;
                        }
                        Some(c) => {
                            self.phase(addr, format!("cool-down {c:.1}°C > {limit:.1}°C"));
                        }
                    }
                    if t0.elapsed() >= *max {
                        break;
                    }
                    self.sleep(POLL)?;
                }
            }
        }
        if let Some(gate) = &method.idle {
            let t0 = Instant::now();
            let mut quiet_since: Option<Instant> = None;
            while t0.elapsed() < gate.max {
                let Some(load) = read_load(board) else {
                    self.phase(addr, "idle gate skipped: no /proc/loadavg");
                    break;
                };
                if load < gate.load_below {
                    let since = *quiet_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= gate.hold {
                        break;
                    }
                } else {
                    quiet_since = None;
                }
                self.phase(
                    addr,
                    format!(
                        "waiting for idle: load {load:.2}, want < {}",
                        gate.load_below
                    ),
                );
                self.sleep(POLL.min(gate.hold.max(Duration::from_millis(200))))?;
            }
        }
        Ok(())
    }
}

/// How often cool-down and the idle gate look at the board.
pub(super) const POLL: Duration = Duration::from_secs(5);
