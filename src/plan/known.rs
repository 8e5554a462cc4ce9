//! Cells the store already knows cannot run: their board's kernel (at their image)
//! cannot mount their filesystem. Pure: the caller reads the board facts from the store
//! (`Store::all_board_facts`), and the cells move to the plan's `skipped` with the
//! reason, so `plan`, `apply` and the reports show them as skipped, not missing.

use std::collections::BTreeMap;

use super::{CannotMeasure, Plan, Skipped};
use crate::model::BoardName;
use crate::store::BoardFacts;

/// Moves the cells whose board cannot mount their filesystem into `plan.skipped`.
pub fn skip_known(plan: &mut Plan, facts: &BTreeMap<BoardName, BoardFacts>) {
    if facts.is_empty() {
        return;
    }
    let cells = std::mem::take(&mut plan.cells);
    for cell in cells {
        let lacks = cell
            .filesystem
            .as_ref()
            .filter(|f| f.is_made())
            .and_then(|f| {
                let identity = cell.image.source.identity(&cell.address.image);
                let known = facts
                    .get(&cell.address.board)?
                    .images
                    .get(&identity)?
                    .filesystems
                    .get(&f.kind)?;
                (!known).then(|| f.kind.clone())
            });
        match lacks {
            Some(kind) => plan.skipped.push(Skipped {
                reason: CannotMeasure::KernelLacks {
                    board: cell.address.board.clone(),
                    kind,
                }
                .to_string(),
                address: cell.address,
            }),
            None => plan.cells.push(cell),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Filesystem, FsName};
    use crate::plan::fixtures;
    use crate::store::KernelFacts;

    #[test]
    fn a_cell_on_a_filesystem_its_kernel_lacks_is_skipped_with_the_reason_and_no_other() {
        let mut ws = fixtures::workspace();
        let s = &mut ws.scenarios[0];
        s.filesystems.insert(
            FsName::new("f2fs"),
            Filesystem {
                name: FsName::new("f2fs"),
                kind: "f2fs".into(),
                mkfs_options: Vec::new(),
                mount_options: Vec::new(),
            },
        );
        s.matrix.filesystem.push(FsName::new("f2fs"));
        let mut plan = crate::plan::expand(&ws, &ws.scenarios[0]);
        let f2fs_cells = |p: &Plan| {
            p.cells
                .iter()
                .filter(|c| c.filesystem.as_ref().is_some_and(|f| f.kind == "f2fs"))
                .count()
        };
        let before = plan.cells.len();
        let on_f2fs = f2fs_cells(&plan);
        assert!(on_f2fs > 0);
        let board = plan.cells[0].address.board.clone();
        let identity = plan.cells[0]
            .image
            .source
            .identity(&plan.cells[0].address.image);
        let on_board = plan
            .cells
            .iter()
            .filter(|c| {
                c.address.board == board && c.filesystem.as_ref().is_some_and(|f| f.kind == "f2fs")
            })
            .count();
        let mut kernel = KernelFacts::default();
        kernel.filesystems.insert("f2fs".into(), false);
        kernel.filesystems.insert("ext4".into(), true);
        let facts = BTreeMap::from([(
            board.clone(),
            BoardFacts {
                format: 1,
                board: board.to_string(),
                images: BTreeMap::from([(identity, kernel)]),
            },
        )]);
        let skipped_before = plan.skipped.len();
        skip_known(&mut plan, &facts);
        assert_eq!(plan.cells.len(), before - on_board);
        assert_eq!(
            f2fs_cells(&plan),
            on_f2fs - on_board,
            "other boards keep theirs"
        );
        let new = &plan.skipped[skipped_before..];
        assert_eq!(new.len(), on_board);
        for s in new {
            assert_eq!(s.reason, format!("the kernel of {board} has no f2fs"));
        }
    }
}
