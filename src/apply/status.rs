//! Each walk's status recorded in the store as it goes (`store::WalkStatus`): a
//! `Progress` that passes every event on and keeps, per board, its phase, its cell and
//! what became of its cells, written whole at each change for `benchpipe status`.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use super::{Event, Progress};
use crate::store::{FailedCell, MAX_FAILED_LISTED, Store, WalkStatus, new_status};

/// The most characters of a failure's cause a status keeps (its first line).
const MAX_CAUSE_CHARS: usize = 300;

pub(super) struct Recorder<'a> {
    inner: &'a dyn Progress,
    store: &'a Store,
    session: &'a str,
    walks: Mutex<BTreeMap<String, WalkStatus>>,
}

impl<'a> Recorder<'a> {
    pub(super) fn new(inner: &'a dyn Progress, store: &'a Store, session: &'a str) -> Self {
        Recorder {
            inner,
            store,
            session,
            walks: Mutex::new(BTreeMap::new()),
        }
    }

    fn record(&self, board: &str, change: impl FnOnce(&mut WalkStatus, u64)) {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "whole seconds since 1970, positive"
        )]
        let now = crate::store::now() as u64;
        let mut walks = self.walks.lock().unwrap_or_else(PoisonError::into_inner);
        let status = walks
            .entry(board.to_string())
            .or_insert_with(|| new_status(board, self.session, 0, now));
        change(status, now);
        // A view only: a status that cannot be written must not stop the walk; the
        // cells and their runs are written (and checked) by the walk itself.
        let _ = self.store.write_walk_status(status);
    }
}

impl Progress for Recorder<'_> {
    fn event(&self, event: Event<'_>) {
        match &event {
            Event::BoardStart { board, cells } => {
                let cells = *cells;
                self.record(board, |s, now| {
                    *s = new_status(board, self.session, cells, now);
                });
            }
            Event::Phase { board, cell, phase } => self.record(board, |s, now| {
                s.phase.clone_from(phase);
                s.cell = cell.map(crate::cell::Address::label);
                s.phase_since = now;
            }),
            Event::CellDone { board, .. } => self.record(board, |s, _| s.completed += 1),
            Event::CellSkipped { board, .. } => self.record(board, |s, _| s.skipped += 1),
            Event::CellLeft { board, .. } => self.record(board, |s, _| s.left += 1),
            Event::CellFailed {
                board, cell, cause, ..
            } => self.record(board, |s, _| {
                s.failed += 1;
                if s.failures.len() < MAX_FAILED_LISTED {
                    let cause = cause.to_string();
                    let first = crate::failure::first_line(&cause);
                    let mut cause: String = first.chars().take(MAX_CAUSE_CHARS).collect();
                    if first.chars().count() > MAX_CAUSE_CHARS {
                        cause.push_str("...");
                    }
                    s.failures.push(FailedCell {
                        cell: cell.label(),
                        cause,
                    });
                }
            }),
            Event::BoardDone { board, .. } => self.record(board, |s, now| {
                s.phase = "done".into();
                s.cell = None;
                s.phase_since = now;
                s.ended = true;
            }),
            Event::Start { .. } | Event::Run { .. } | Event::Step { .. } => {}
        }
        self.inner.event(event);
    }
}
