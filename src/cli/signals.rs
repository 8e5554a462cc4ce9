//! Ctrl-C and SIGTERM: exit at once outside an apply walk; during one, stop after the
//! run in flight with the store consistent, and exit at once on a second signal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The last signal received (SIGINT or SIGTERM), for the exit status.
pub(super) static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether apply is walking its plan: only then does a signal wait for the run in
/// flight. Every other phase (load, plan, check, reports) owns no board state and the
/// store's writes are atomic, so the process ends at once.
static WALKING: AtomicBool = AtomicBool::new(false);
/// Set by the first signal during a walk; a watcher passes it on to the walk's flag.
static STOP_RAISED: AtomicBool = AtomicBool::new(false);

/// SIGINT and SIGTERM: outside an apply walk, exit at once with 128 + the signal.
/// During a walk, the first one stops after the run in flight (its commands are ended,
/// nothing partial is stored); a second exits at once; the store is still consistent.
pub(super) fn install_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    for sig in [SIGINT, SIGTERM] {
        // SAFETY: the handler only does atomic loads and stores and `_exit`, all
        // async-signal-safe.
        let _ = unsafe {
            signal_hook::low_level::register(sig, move || {
                SIGNAL.store(sig, Ordering::SeqCst);
                if !WALKING.load(Ordering::SeqCst) || STOP_RAISED.swap(true, Ordering::SeqCst) {
                    libc::_exit(128 + sig);
                }
            })
        };
    }
}

/// An apply walk in progress: signals set its stop flag instead of exiting, and a
/// watcher ends the running commands.
pub(super) struct Walk;

impl Walk {
    pub(super) fn begin(stop: &Arc<AtomicBool>) -> Walk {
        WALKING.store(true, Ordering::SeqCst);
        let stop = Arc::clone(stop);
        std::thread::spawn(move || {
            loop {
                if STOP_RAISED.load(Ordering::SeqCst) {
                    stop.store(true, Ordering::SeqCst);
                    eprintln!("interrupted: ending running commands; the next apply resumes");
                    crate::transport::interrupt();
                    return;
                }
                if !WALKING.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        });
        Walk
    }
}

impl Drop for Walk {
    fn drop(&mut self) {
        WALKING.store(false, Ordering::SeqCst);
    }
}
