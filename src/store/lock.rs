//! The store's write lock: one apply writes a store at a time. An flock(2) on `.lock`,
//! which the kernel releases when its holder dies however it dies (kill -9 included), so
//! a crashed apply's lock is taken back by the next; the file says who holds it (pid,
//! host, since when, the command line), so a refusal names them.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::os::unix::io::AsRawFd;
use std::sync::{Arc, PoisonError};

use serde::{Deserialize, Serialize};

use super::{Store, io, now};
use crate::error::{Error, Result};

/// The most bytes of `.lock` read back: a holder record is far smaller.
const MAX_HOLDER_BYTES: u64 = 4096;

/// The most characters of the holder's command line recorded.
const MAX_COMMAND_CHARS: usize = 400;

/// Held while an apply writes the store; released on drop (or process death).
pub struct StoreLock {
    _file: Arc<File>,
}

/// Who holds a store's lock, as `.lock` records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Holder {
    pub pid: u32,
    pub host: String,
    /// Unix seconds when it took the lock.
    pub since: u64,
    /// Its command line (`benchpipe apply scenarios/lab.toml`), bounded.
    pub command: String,
}

impl Holder {
    /// This process, now: the record its locks (the store's, a board's) carry.
    pub fn this_process() -> Holder {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        let mut command = std::env::args().collect::<Vec<_>>().join(" ");
        if command.chars().count() > MAX_COMMAND_CHARS {
            command = command.chars().take(MAX_COMMAND_CHARS).collect::<String>() + "...";
        }
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "whole seconds since 1970, positive"
        )]
        let since = now() as u64;
        Holder {
            pid: std::process::id(),
            host,
            since,
            command,
        }
    }

    /// One line: `pid 812 on lab-ctl, for 3m12s: benchpipe apply scenarios/lab.toml`.
    pub fn describe(&self, at: u64) -> String {
        let held = crate::shown::short_duration(at.saturating_sub(self.since));
        crate::shown::one_line(&format!(
            "pid {} on {}, for {held}: {}",
            self.pid,
            if self.host.is_empty() {
                "an unnamed host"
            } else {
                &self.host
            },
            self.command
        ))
        .into_owned()
    }
}

impl Store {
    /// Takes the store's write lock and records this process as its holder; refuses,
    /// naming the holder, when another apply holds it. Taken again through this store
    /// (or a clone) while held, it is shared: `apply --plan` holds it from its check of
    /// the saved plan through the walk, which takes it too.
    pub fn lock(&self) -> Result<StoreLock> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(file) = held.upgrade() {
            return Ok(StoreLock { _file: file });
        }
        let path = self.root.join(".lock");
        // Never through a link planted in the store, and only a regular file.
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(io(&path))?;
        let meta = file.metadata().map_err(io(&path))?;
        if !meta.is_file() || meta.nlink() != 1 {
            return Err(Error::Store(format!(
                "{}: not a regular file of the store's own",
                path.display()
            )));
        }
        if !take_exclusive(&file) {
            let holder = match read_holder(&mut file) {
                Some(h) => format!(" ({})", h.describe(Holder::this_process().since)),
                None => String::new(),
            };
            return Err(Error::Other(format!(
                "store {} is locked by another benchpipe apply{holder}; wait for it or stop it",
                self.root.display()
            )));
        }
        let record =
            serde_json::to_vec(&Holder::this_process()).map_err(|e| Error::Other(e.to_string()))?;
        file.set_len(0).map_err(io(&path))?;
        file.rewind().map_err(io(&path))?;
        file.write_all(&record)
            .and_then(|()| file.write_all(b"\n"))
            .map_err(io(&path))?;
        let file = Arc::new(file);
        *held = Arc::downgrade(&file);
        // What a killed apply's replaces left half-written outside the cells goes (a
        // cell's own, when the cell is next written: `Store::begin`).
        for dir in ["", "status", "boards", "runs"] {
            super::files::remove_stale_temporaries(&self.root.join(dir));
        }
        Ok(StoreLock { _file: file })
    }

    /// Who holds the store's lock now; `None` when nobody does (a crashed holder's
    /// record is left in `.lock`, but its lock went with it).
    pub fn lock_holder(&self) -> Option<Holder> {
        let path = self.root.join(".lock");
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .ok()?;
        // SAFETY: flock(2) on a valid open descriptor; a shared lock taken is released
        // at once, and means nobody holds the exclusive one.
        let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
        if free {
            // SAFETY: as above.
            unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
            return None;
        }
        read_holder(&mut file)
    }
}

/// How long a refused lock is tried again: `lock_holder` (`benchpipe status`, which a
/// person may run in a loop) holds a shared lock for an instant, and must never make
/// an apply refuse; a real holder holds it for the whole walk.
const PROBE_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// flock(2) LOCK_EX, not waiting for a holder, but outwaiting a probe's instant.
fn take_exclusive(file: &File) -> bool {
    let start = std::time::Instant::now();
    loop {
        // SAFETY: flock(2) on a valid open descriptor.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return true;
        }
        if start.elapsed() >= PROBE_GRACE {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.take(MAX_HOLDER_BYTES).read_to_string(&mut text).ok()?;
    serde_json::from_str(text.trim()).ok()
}
