//! The `mount` step: a filesystem is made once per (image, storage, filesystem), and only
//! after the board's kernel is known to mount its kind; what holds the storage's path
//! (`as-flashed` included) is recorded for the cells measured there.

use std::collections::BTreeMap;
use std::time::Duration;

use super::Job;
use super::worker::Worker;
use crate::failure::CellFailure;
use crate::model::{Filesystem, FsName, Storage, StorageName};
use crate::plan::CannotMeasure;
use crate::storage;
use crate::transport::{Transport, quote};

/// What the walk knows of the board's mounts.
#[derive(Default)]
pub(super) struct MountState {
    /// What `mount` prepared and `unmount` releases.
    pub(super) current: Option<(Storage, Filesystem)>,
    /// (image identity, kind) -> whether the board's kernel mounts it.
    kernel: BTreeMap<(String, String), bool>,
    /// What holds the current storage's path (`storage::filesystem_at`), a cell fact.
    pub(super) fact: Option<crate::store::PathFilesystem>,
}

/// Whether the board's kernel can mount `kind`: listed in `/proc/filesystems`, or a
/// module `modprobe -n` would load, or (without modprobe) a module file for the running
/// kernel. `None` when the board cannot say, and then mkfs and mount have the last word.
pub(crate) fn kernel_mounts(t: &mut dyn Transport, kind: &str) -> Option<bool> {
    let k = quote::sh(kind);
    let script = format!(
        "[ -r /proc/filesystems ] || {{ echo unknown; exit 0; }}; \
         if grep -qw -- {k} /proc/filesystems; then echo yes; \
         elif command -v modprobe >/dev/null 2>&1; then \
           if modprobe -n -q -- {k} 2>/dev/null; then echo yes; else echo no; fi; \
         elif find \"/lib/modules/$(uname -r)\" -name {pattern} 2>/dev/null | grep -q .; then echo yes; \
         else echo no; fi",
        pattern = quote::sh(&format!("{kind}.ko*")),
    );
    let out = t.run(&script, Some(Duration::from_secs(60))).ok()?;
    match out.stdout_str().trim() {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

impl Worker<'_> {
    /// Prepares `storage` as `filesystem` for the cells of `job`'s (image, storage,
    /// filesystem). A kind the kernel cannot mount skips them (`CellFailure::NotApplicable`),
    /// and the store's board facts keep the reason for `plan`.
    pub(super) fn mount(
        &self,
        board: &mut dyn Transport,
        job: &Job<'_>,
        name: &StorageName,
        filesystem: &FsName,
        state: &mut MountState,
    ) -> Result<(), CellFailure> {
        let st = self
            .board
            .storage(name)
            .ok_or_else(|| CellFailure::Refused {
                reason: format!("board {} declares no storage {name}", self.board.name),
            })?;
        let fs = job
            .cell
            .filesystem
            .clone()
            .filter(|f| &f.name == filesystem)
            .ok_or_else(|| CellFailure::Refused {
                reason: format!("no filesystem {filesystem} for {name}"),
            })?;
        if let Some((s, f)) = state.current.take() {
            storage::release(board, &s, &f).map_err(CellFailure::from)?;
        }
        state.fact = None;
        if fs.is_made() {
            let identity = job.cell.image.source.identity(&job.cell.address.image);
            let key = (identity.clone(), fs.kind.clone());
            let known = if let Some(k) = state.kernel.get(&key) {
                Some(*k)
            } else {
                let k = kernel_mounts(board, &fs.kind);
                if let Some(k) = k {
                    state.kernel.insert(key, k);
                    self.store.record_kernel_filesystem(
                        &self.board.name,
                        &identity,
                        &fs.kind,
                        k,
                    )?;
                }
                k
            };
            if known == Some(false) {
                return Err(CellFailure::NotApplicable {
                    reason: CannotMeasure::KernelLacks {
                        board: self.board.name.clone(),
                        kind: fs.kind.clone(),
                    }
                    .to_string(),
                });
            }
            self.phase(
                Some(&job.cell.address),
                format!("format {} as {}", st.name, fs.name),
            );
        }
        storage::prepare(board, st, &fs).map_err(CellFailure::from)?;
        state.fact = storage::filesystem_at(board, &st.path).map(|v| crate::store::record_of(&v));
        state.current = Some((st.clone(), fs));
        Ok(())
    }
}
