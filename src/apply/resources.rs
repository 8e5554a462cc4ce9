//! Exclusive resources: cells that name the same resource never run at once.

use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex};

/// Cross-board resources (`exclusive = [...]` in recipes): cells holding the same
/// resource never run at the same time, whichever boards they are on.
#[derive(Default)]
pub(super) struct Resources {
    held: Mutex<BTreeSet<String>>,
    freed: Condvar,
}

impl Resources {
    pub(super) fn acquire(&self, names: &[String]) -> ResourceGuard<'_> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        // All at once or none, so two cells each holding half can never deadlock.
        while names.iter().any(|n| held.contains(n)) {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        held.extend(names.iter().cloned());
        ResourceGuard {
            owner: self,
            names: names.to_vec(),
        }
    }
}

pub(super) struct ResourceGuard<'a> {
    owner: &'a Resources,
    names: Vec<String>,
}

impl Drop for ResourceGuard<'_> {
    fn drop(&mut self) {
        let mut held = self.owner.held.lock().unwrap_or_else(|e| e.into_inner());
        for n in &self.names {
            held.remove(n);
        }
        self.owner.freed.notify_all();
    }
}
