//! `benchpipe store merge SRC... --into DST`: the stores of several controllers (each an
//! `apply --shard K/N`) made one, under every store's lock (`store::merge`).

use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::shown::one_line;
use crate::store::Store;

#[derive(clap::Subcommand, Debug)]
pub enum StoreAction {
    /// Union stores into DST (made if missing): cells and board records DST lacks are
    /// copied; one both hold with different runs is merged run by run (the runs DST
    /// lacks appended, with their logs); one whose board fingerprint differs, or that a
    /// redo marks, is a conflict, reported, DST's kept (exit 1).
    Merge {
        /// The stores to merge from (each must exist).
        #[arg(required = true)]
        sources: Vec<PathBuf>,
        /// The store to merge into.
        #[arg(long, value_name = "DST")]
        into: PathBuf,
    },
}

pub(super) fn run(action: &StoreAction) -> Result<()> {
    let StoreAction::Merge { sources, into } = action;
    for s in sources {
        super::existing_store(
            "store merge",
            s,
            "name a directory an apply wrote (its store.json is there)",
        )?;
    }
    let dst = Store::open(into)?;
    let _dst_lock = dst.lock()?;
    let mut conflicts = 0;
    for s in sources {
        let src = Store::open_read(s)?;
        // A store an apply is writing has cells half-made: not merged from.
        let _src_lock = src.lock()?;
        let merged = dst.merge_from(&src)?;
        let shown = one_line(&s.display().to_string()).into_owned();
        println!(
            "{shown}: {} copied, {} merged run by run, {} already alike, {} conflict(s)",
            merged.copied.len(),
            merged.runs_added.len(),
            merged.same,
            merged.conflicts.len()
        );
        for (cell, runs) in &merged.runs_added {
            println!("  merged: cell {cell}: {runs} run(s) added");
        }
        if merged.run_facts > 0 {
            println!("  merged: {} run(s)' facts added", merged.run_facts);
        }
        for r in &merged.records {
            println!("  board record: {}", one_line(r));
        }
        for c in &merged.conflicts {
            println!("  conflict: {}", one_line(c));
        }
        conflicts += merged.conflicts.len();
    }
    if conflicts > 0 {
        return Err(Error::Other(format!(
            "{conflicts} conflict(s): those cells and records were left as {} held them",
            one_line(&into.display().to_string())
        )));
    }
    Ok(())
}
