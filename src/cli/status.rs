//! `benchpipe status`: each board's walk as the store records it (running, done, or
//! stopped when the apply that walked it is gone), its failed cells and why, and who
//! holds the store's lock. Reads the store only, so it works while an apply runs and
//! after one died.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use crate::error::{Error, Result};
use crate::shown::one_line;
use crate::store::{Holder, Store, WalkStatus, short_duration};

/// What became of a walk, judged from its record and the store's lock.
fn state(walk: &WalkStatus, holder: Option<&Holder>) -> &'static str {
    if walk.ended {
        return "done";
    }
    // The session is `<start>-<pid>`: the walk is live while that apply holds the lock.
    let pid = walk
        .session
        .rsplit('-')
        .next()
        .and_then(|p| p.parse::<u32>().ok());
    match holder {
        Some(h) if Some(h.pid) == pid => "running",
        _ => "stopped",
    }
}

pub(super) fn status(store: &Path, json: bool) -> Result<()> {
    let shown_store = one_line(&store.display().to_string()).into_owned();
    let read = Store::open_read(store)?;
    let holder = read.lock_holder();
    let walks = read.walk_statuses()?;
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "whole seconds since 1970, positive"
    )]
    let now = crate::store::now() as u64;
    if json {
        let boards: Vec<_> = walks
            .iter()
            .map(|w| {
                let mut v = serde_json::to_value(w).map_err(|e| Error::Other(e.to_string()))?;
                v["state"] = json!(state(w, holder.as_ref()));
                Ok(v)
            })
            .collect::<Result<_>>()?;
        let doc = json!({ "format": 1, "lock": holder, "boards": boards });
        let mut text =
            serde_json::to_string_pretty(&doc).map_err(|e| Error::Other(e.to_string()))?;
        text.push('\n');
        print!("{}", crate::shown::json(text));
        return Ok(());
    }
    let mut out = String::new();
    let _ = match &holder {
        Some(h) => writeln!(out, "store {shown_store}: locked by {}", h.describe(now)),
        None => writeln!(
            out,
            "store {shown_store}: not locked, no apply is writing it"
        ),
    };
    if walks.is_empty() {
        out.push_str("  no walk recorded yet: `benchpipe apply` records each board's here\n");
    }
    for w in &walks {
        let state = state(w, holder.as_ref());
        let mut line = format!("  {:<16} {state:<8}", one_line(&w.board));
        if !w.ended {
            let _ = write!(line, " {}", one_line(&w.phase));
            if let Some(cell) = &w.cell {
                let _ = write!(line, ": {}", one_line(cell));
            }
            if state == "running" {
                let _ = write!(
                    line,
                    ", for {}",
                    short_duration(now.saturating_sub(w.phase_since))
                );
            } else {
                line.push_str(
                    " (its apply ended there without finishing: killed, or the machine stopped)",
                );
            }
            line.push(';');
        }
        let _ = write!(line, " {} of {} cell(s) done", w.completed, w.cells);
        if w.failed > 0 {
            let _ = write!(line, ", {} failed", w.failed);
        }
        if w.skipped > 0 {
            let _ = write!(line, ", {} skipped", w.skipped);
        }
        if w.left > 0 {
            let _ = write!(line, ", {} left for lack of time", w.left);
        }
        out.push_str(&line);
        out.push('\n');
    }
    let failures: Vec<_> = walks.iter().flat_map(|w| &w.failures).collect();
    if !failures.is_empty() {
        out.push_str("failed:\n");
        for f in failures {
            let _ = writeln!(out, "  {}: {}", one_line(&f.cell), one_line(&f.cause));
        }
        let listed: usize = walks.iter().map(|w| w.failures.len()).sum();
        let all: usize = walks.iter().map(|w| w.failed).sum();
        if all > listed {
            let _ = writeln!(
                out,
                "  ... and {} more (their cells' failure.json)",
                all - listed
            );
        }
    }
    print!("{out}");
    Ok(())
}
