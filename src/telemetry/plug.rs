//! A controller-side meter (a smart plug's HTTP API through curl, a USB meter's tool):
//! its rendered command run about once a second by one bounded thread, through the
//! local transport, from before the idle window until the run ends.

use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::power::{PowerSummary, watts_of};
use crate::transport::Transport;
use crate::transport::local::Local;

/// How long one reading may take.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Readings kept per phase: four hours at 1 Hz, and a little more.
const MAX_READINGS: usize = 16_000;

enum Message {
    Load,
    Stop,
}

/// The thread reading a controller-side meter for one run.
#[must_use = "a started meter must be finished"]
pub struct PlugMeter {
    tx: Sender<Message>,
    handle: JoinHandle<Readings>,
}

#[derive(Default)]
struct Readings {
    idle: Vec<f64>,
    load: Vec<f64>,
    error: Option<String>,
}

impl PlugMeter {
    /// Starts reading `command` (rendered, run by `sh` on the controller) at once and
    /// then every `interval`; readings count as idle until `load`. Readings before
    /// `load` are dropped when `idle` is false. The thread ends by itself after `max`.
    pub fn start(
        command: String,
        json: Option<String>,
        idle: bool,
        interval: Duration,
        max: Duration,
    ) -> PlugMeter {
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            let t0 = Instant::now();
            let mut r = Readings::default();
            let mut loaded = false;
            let mut local = Local::new();
            loop {
                let reading = local
                    .run(&command, Some(READ_TIMEOUT))
                    .map_err(|e| e.to_string())
                    .and_then(|out| {
                        if out.exit.success() {
                            watts_of(&out.stdout_str(), json.as_deref())
                        } else {
                            let err = out.stderr_str();
                            Err(format!(
                                "the meter's command failed ({}): {}",
                                out.exit,
                                crate::bench::parse::visible(
                                    err.trim().chars().take(200).collect::<String>().as_str()
                                )
                            ))
                        }
                    });
                match reading {
                    Ok(w) if loaded && r.load.len() < MAX_READINGS => r.load.push(w),
                    Ok(w) if !loaded && idle && r.idle.len() < MAX_READINGS => r.idle.push(w),
                    Ok(_) => {}
                    Err(e) => {
                        r.error.get_or_insert(e);
                    }
                }
                if t0.elapsed() >= max {
                    return r;
                }
                match rx.recv_timeout(interval) {
                    Ok(Message::Load) => loaded = true,
                    Ok(Message::Stop) | Err(RecvTimeoutError::Disconnected) => return r,
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
        });
        PlugMeter { tx, handle }
    }

    /// The run begins: later readings are the run's.
    pub fn load(&self) {
        let _ = self.tx.send(Message::Load);
    }

    /// Stops the thread (waiting at most for the reading under way) and summarizes.
    pub fn finish(self) -> PowerSummary {
        let _ = self.tx.send(Message::Stop);
        let r = self.handle.join().unwrap_or_else(|_| Readings {
            error: Some("the meter's thread panicked".into()),
            ..Readings::default()
        });
        let mut s = PowerSummary::of("controller command".into(), &r.idle, &r.load, r.error);
        if s.power_w.is_none() && s.error.is_none() {
            s.error = Some("no reading fell within the run".into());
        }
        s
    }
}
