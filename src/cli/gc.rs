//! `benchpipe gc`: removes the store's cells that no scenario given refers to (cells of
//! an old matrix, a changed recipe, a dropped board), under the store's lock; with
//! `--dry-run`, lists them and removes nothing.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::{CellsArg, StoreArg, known_plans, load};
use crate::error::Result;
use crate::shown::one_line;
use crate::store::Store;

#[derive(clap::Args, Debug)]
pub struct GcArgs {
    /// Every scenario whose cells are to be kept: a cell none of them refers to is
    /// removed (name them all: the cells of a scenario left out go too).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    #[command(flatten)]
    store: StoreArg,
    /// List what would be removed, and remove nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    cells: CellsArg,
}

pub(super) fn run(args: &GcArgs) -> Result<()> {
    let ws = load(&args.files, args.cells.max_cells)?;
    let store = Store::open_read(&args.store.store)?;
    let keep: BTreeSet<_> = known_plans(&ws, &store)?
        .into_iter()
        .flat_map(|(_, p)| p.cells)
        .map(|c| c.key)
        .collect();
    // Taken for a dry run too: a list made while an apply writes new cells is no list.
    let _lock = store.lock()?;
    let gone = store.unreferenced(&keep)?;
    let verb = if args.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let mut bytes = 0;
    for cell in &gone {
        if !args.dry_run {
            store.remove_cell_dir(cell)?;
        }
        bytes += cell.bytes;
        println!("{verb} {}", one_line(&cell.dir));
    }
    #[allow(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let mib = bytes as f64 / f64::from(1 << 20);
    println!(
        "gc: {verb} {} cell(s), {mib:.1} MiB; the {} cell(s) the scenarios refer to are kept",
        gone.len(),
        keep.len()
    );
    Ok(())
}
