//! Showing apply's progress: indicatif bars on a terminal, plain lines elsewhere.
//!
//! Bars: one line per board (its current cell and phase, elapsed, cells done of its
//! total) and an overall bar. Without a TTY, with `--quiet` or with `NO_COLOR`, every
//! event is one plain line instead, so logs of unattended runs stay readable.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::apply::{Event, Progress};
use crate::report::number;
use crate::store::RunKind;

/// Picks the display: bars when stderr is a terminal and nothing asks for plain output.
pub fn for_terminal(quiet: bool) -> Box<dyn Progress> {
    let plain = quiet || std::env::var_os("NO_COLOR").is_some() || !std::io::stderr().is_terminal();
    if plain {
        Box::new(Lines { quiet })
    } else {
        Box::new(Bars::new())
    }
}

/// One line per event on stderr.
pub struct Lines {
    pub quiet: bool,
}

/// The text of an event as one line, or None when `quiet` hides it.
pub fn line(e: &Event<'_>, quiet: bool) -> Option<String> {
    Some(match e {
        Event::CellFailed {
            board,
            cell,
            cause,
            log,
        } => match log {
            Some(log) => format!(
                "[{board}] FAILED {}: {cause}; log: {}",
                cell.label(),
                log.display()
            ),
            None => format!("[{board}] FAILED {}: {cause}", cell.label()),
        },
        Event::CellSkipped {
            board,
            cell,
            reason,
        } => format!("[{board}] SKIPPED {}: {reason}", cell.label()),
        Event::CellLeft {
            board,
            cell,
            reason,
        } => format!("[{board}] LEFT {}: {reason}", cell.label()),
        _ if quiet => return None,
        // Steps show as phases; only a failed one gets a line of its own.
        Event::Step {
            board,
            index,
            step,
            status: crate::apply::StepStatus::Failed { cause },
        } => format!(
            "[{board}] step {} ({}) failed: {cause}",
            index + 1,
            step.action.label()
        ),
        Event::Step { .. } => return None,
        Event::Start { to_run, complete } => {
            format!("apply: {to_run} cell(s) to run, {complete} already complete")
        }
        Event::BoardStart { board, cells } => format!("[{board}] {cells} cell(s) to run"),
        Event::Phase { board, cell, phase } => match cell {
            Some(c) => format!("[{board}] {}: {phase}", c.label()),
            None => format!("[{board}] {phase}"),
        },
        Event::Run {
            board,
            cell,
            kind,
            metrics,
            seconds,
        } => {
            let values: Vec<String> = metrics
                .iter()
                .map(|(k, v)| format!("{k}={}", number(*v)))
                .collect();
            let kind = match kind {
                RunKind::Warmup => "warm-up (discarded)",
                RunKind::Measured => "measured",
            };
            format!(
                "[{board}] {}: {kind} run took {seconds:.1} s: {}",
                cell.label(),
                values.join(" ")
            )
        }
        Event::CellDone {
            board,
            cell,
            measured,
        } => format!("[{board}] {}: complete with {measured} runs", cell.label()),
        Event::BoardDone { board, failed } => format!("[{board}] done, {failed} cell(s) failed"),
    })
}

impl Progress for Lines {
    fn event(&self, e: Event<'_>) {
        if let Some(l) = line(&e, self.quiet) {
            let _ = writeln!(std::io::stderr(), "{l}");
        }
    }
}

/// indicatif bars: one per board plus an overall bar.
pub struct Bars {
    multi: MultiProgress,
    overall: ProgressBar,
    boards: Mutex<BTreeMap<String, ProgressBar>>,
}

impl Default for Bars {
    fn default() -> Self {
        Self::new()
    }
}

impl Bars {
    pub fn new() -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = multi.add(ProgressBar::new(0));
        overall.set_style(
            ProgressStyle::with_template(
                "{prefix:>12} [{bar:30}] {pos}/{len} cells  {elapsed_precise} (eta {eta})",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        overall.set_prefix("all boards");
        Bars {
            multi,
            overall,
            boards: Mutex::new(BTreeMap::new()),
        }
    }

    fn bar(&self, board: &str) -> ProgressBar {
        let mut boards = self
            .boards
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        boards
            .entry(board.to_string())
            .or_insert_with(|| {
                let b = self.multi.insert_before(&self.overall, ProgressBar::new(0));
                b.set_style(
                    ProgressStyle::with_template(
                        "{prefix:>12} {spinner} {pos}/{len} {elapsed:>5} (eta {eta:>4}) {wide_msg}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                b.set_prefix(board.to_string());
                b.enable_steady_tick(std::time::Duration::from_millis(250));
                b
            })
            .clone()
    }
}

impl Progress for Bars {
    fn event(&self, e: Event<'_>) {
        match &e {
            Event::Start { to_run, .. } => self.overall.set_length(*to_run as u64),
            Event::BoardStart { board, cells } => self.bar(board).set_length(*cells as u64),
            Event::Phase { board, cell, phase } => self.bar(board).set_message(match cell {
                Some(c) => format!("{}: {phase}", c.label()),
                None => phase.clone(),
            }),
            Event::Run { .. } => {
                // Run results go above the bars, so they scroll while the bars stay.
                if let Some(l) = line(&e, false) {
                    self.multi.suspend(|| eprintln!("{l}"));
                }
            }
            Event::CellDone { board, .. } => {
                self.bar(board).inc(1);
                self.overall.inc(1);
            }
            Event::CellFailed { board, .. }
            | Event::CellSkipped { board, .. }
            | Event::CellLeft { board, .. } => {
                if let Some(l) = line(&e, false) {
                    self.multi.suspend(|| eprintln!("{l}"));
                }
                self.bar(board).inc(1);
                self.overall.inc(1);
            }
            Event::Step { .. } => {}
            Event::BoardDone { board, failed } => {
                let b = self.bar(board);
                b.finish_with_message(if *failed == 0 {
                    "done".to_string()
                } else {
                    format!("done, {failed} cell(s) failed")
                });
            }
        }
    }
}

impl Drop for Bars {
    fn drop(&mut self) {
        self.overall.finish();
    }
}
