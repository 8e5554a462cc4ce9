//! `benchpipe gc`: removes the store's cells that no scenario given refers to (cells of
//! an old matrix, a changed recipe, a dropped board), and the image cache's files of
//! images none of them uses, under the store's lock; with `--dry-run`, lists them and
//! removes nothing.

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
    images(&ws, &store, args.dry_run)
}

/// The image cache beside the store: the files of images (and of their first-boot
/// preparations for the workspace's boards) no scenario given uses.
fn images(ws: &crate::model::Workspace, store: &Store, dry_run: bool) -> Result<()> {
    let mut keep = BTreeSet::new();
    for scenario in &ws.scenarios {
        for image in scenario.images.values() {
            let Some(sha) = image.source.sha256() else {
                continue;
            };
            keep.insert(sha.to_string());
            for board in ws.boards.keys() {
                if let Some(prep) = image.prepared_for(board) {
                    keep.insert(prep.derivation_key(sha));
                }
            }
        }
    }
    let cache = crate::image::Cache::beside_store(store.root());
    let io = |e: std::io::Error| crate::error::Error::io(cache.dir(), e);
    let gone = cache.unreferenced(&keep).map_err(io)?;
    let (mut removed, mut bytes, mut busy) = (0, 0, 0);
    for entry in &gone {
        let shown = one_line(&crate::image::gc::shown(&cache, entry)).into_owned();
        if dry_run {
            println!("would remove {shown}");
        } else if cache.remove_entry(entry).map_err(io)? {
            println!("removed {shown}");
        } else {
            println!("kept {shown}: in use by a fetch or a preparation now");
            busy += 1;
            continue;
        }
        removed += 1;
        bytes += entry.bytes;
    }
    #[allow(clippy::cast_precision_loss, reason = "a size shown to one decimal")]
    let mib = bytes as f64 / f64::from(1 << 20);
    let verb = if dry_run { "would remove" } else { "removed" };
    let busy = match busy {
        0 => String::new(),
        n => format!(", {n} in use kept"),
    };
    println!("gc: {verb} {removed} image cache file(s), {mib:.1} MiB{busy}");
    Ok(())
}
