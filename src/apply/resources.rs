//! Exclusive resources: cells that name the same resource never run at once.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Cross-board resources (`exclusive = [...]` in recipes): cells holding the same
/// resource never run at the same time, whichever boards they are on.
#[derive(Default)]
pub(super) struct Resources {
    held: Mutex<BTreeSet<String>>,
    freed: Condvar,
}

impl Resources {
    pub(super) fn acquire(&self, names: &[String]) -> ResourceGuard<'_> {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // All at once or none, so two cells each holding half can never deadlock.
        while names.iter().any(|n| held.contains(n)) {
            held = self
                .freed
                .wait(held)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        held.extend(names.iter().cloned());
        ResourceGuard {
            owner: self,
            names: names.to_vec(),
        }
    }

    /// `acquire`, giving up (with `None`, holding nothing) once `stop` is set: a walk
    /// waiting for boards another walk holds must still end on Ctrl-C.
    pub(super) fn acquire_unless(
        &self,
        names: &[String],
        stop: &AtomicBool,
    ) -> Option<ResourceGuard<'_>> {
        let mut held = self
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while names.iter().any(|n| held.contains(n)) {
            if stop.load(Ordering::SeqCst) {
                return None;
            }
            held = self
                .freed
                .wait_timeout(held, Duration::from_millis(200))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        held.extend(names.iter().cloned());
        Some(ResourceGuard {
            owner: self,
            names: names.to_vec(),
        })
    }
}

pub(super) struct ResourceGuard<'a> {
    owner: &'a Resources,
    names: Vec<String>,
}

impl Drop for ResourceGuard<'_> {
    fn drop(&mut self) {
        let mut held = self
            .owner
            .held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for n in &self.names {
            held.remove(n);
        }
        self.owner.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two walks each needing two of three boards never hold a part each: the second
    /// waits for all of its boards at once, and an interrupt ends its wait.
    #[test]
    fn boards_are_held_all_at_once_and_a_stop_ends_the_wait() {
        let r = Resources::default();
        let stop = AtomicBool::new(false);
        let names = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        let a = r.acquire_unless(&names(&["b1", "b2"]), &stop).unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let g = r.acquire_unless(&names(&["b2", "b3"]), &stop);
                // While it waited, b3 stayed free: it took nothing before it had all.
                g.is_some()
            });
            std::thread::sleep(Duration::from_millis(300));
            let b3 = r.acquire_unless(&names(&["b3"]), &stop);
            assert!(b3.is_some(), "b3 is free while the waiter waits for b2");
            drop(b3);
            drop(a);
            assert!(
                waiter.join().unwrap(),
                "the waiter gets both once b2 is free"
            );
        });
        let _held = r.acquire_unless(&names(&["b1"]), &stop).unwrap();
        stop.store(true, Ordering::SeqCst);
        assert!(r.acquire_unless(&names(&["b1"]), &stop).is_none());
    }
}
