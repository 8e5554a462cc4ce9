//! The results store: the only writer of `results/`.
//!
//! Layout (every file carries `format`):
//! ```text
//! results/
//!   store.json                      {"format": 1}
//!   boards/<board>.json             the image the board was last verified at
//!   boards/<board>.facts.json       its kernel's filesystems, per image
//!   .lock                           held (flock) by the one apply writing the store;
//!                                   says who: pid, host, since, command (`lock.rs`)
//!   status/<board>.json             what the board's walk is doing or did, replaced at
//!                                   each phase (`status.rs`, `benchpipe status`)
//!   boards/<board>.fingerprint.json the board as apply last saw it (`drift.rs`)
//!   boards/<board>.skipped.json     per scenario, the combinations its plan could not
//!                                   make a cell of on the board, and why
//!                                   (`plan_skips.rs`: a report without the board file)
//!   <key>-<test>-<board>/
//!     cell.json                     the cell's address and canonical inputs
//!     samples.jsonl                 one line per run (warm-up or measured), appended
//!                                   and fsynced as each run ends
//!     facts.json                    what the board was: kernel, os-release, tools
//!                                   (at the cell's latest opening)
//!     facts/<session>.json          the same, as each apply's opening of the cell saw
//!                                   it (the newest 365 runs; `run_facts.rs`)
//!     failure.json                  why the last attempt failed (typed: see
//!                                   `failure::CellFailure`), removed on success
//!     skip.json                     why the last attempt found the test could not apply
//!                                   on the board (a reason, not a failure), removed
//!                                   when a run is stored or a failure recorded
//!     redo.json                     `--redo`: the samples up to `after_seq` no longer
//!                                   count (they stay in samples.jsonl)
//!     fingerprint.json              the board (kernel, os-release, firmware, boot
//!                                   config) the runs saw, and drift choices (`drift.rs`)
//!     logs/<seq>.log                raw output of every run
//! ```
//! Crash safety: whole files are written to a temporary name, fsynced and renamed;
//! samples are appended whole lines. A line torn by a crash has no final newline:
//! readers ignore it and the next append cuts it off, so a sample is either whole or
//! absent.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cell::{Address, Cell, CellKey};
use crate::error::{Error, Result};
use crate::failure::CellFailure;
use crate::telemetry::StoredTelemetry;

mod board_facts;
mod board_state;
mod cell_facts;
mod deploys;
mod drift;
mod failure;
mod files;
mod gc;
mod installed;
mod lock;
mod merge;
mod plan_skips;
mod run_facts;
mod runs;
pub use runs::RunRecord;
mod status;
mod stored_json;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_hostile;
#[cfg(test)]
mod tests_read;
#[cfg(test)]
mod tests_run_facts;

pub use crate::shown::short_duration;
pub use board_facts::{BoardFacts, KernelFacts};
pub use board_state::BoardState;
pub use cell_facts::{
    CellFacts, ClusterFact, FirstbootFact, Flashed, NetworkFact, OsRelease, Packages,
    PathFilesystem, RecipeFact, Scalar, StorageFact, UsbFact, record_of,
};
pub use drift::{BoardSeen, CellFingerprint, DriftDecision, Fingerprint, OnDrift};
pub use failure::{FAILURE_FORMAT, Failure};
pub(crate) use files::{MAX_FILE_BYTES, open_regular};
use files::{
    ReadBuf, SharedFacts, cut_torn_tail, io, parse_bounded, parse_record, parse_samples,
    read_doc_in, read_json, read_record, read_samples, sync_dir, to_json_bytes, write_atomic,
};
pub use gc::Unreferenced;
pub use installed::{Install, Installed, MAX_INSTALLS, MAX_NAMES};
pub use lock::{Holder, StoreLock};
pub use merge::Merged;
pub use plan_skips::PlanSkips;
pub use run_facts::{MAX_CELL_RUN_FACTS_BYTES, MAX_RUN_FACTS, MAX_RUN_FACTS_BYTES, RUN_FACTS_DIR};
pub use status::{FailedCell, MAX_FAILED_LISTED, WalkStatus, new_status};
pub use stored_json::StoredJson;

/// The version of every file in the store but failure.json; readers refuse newer ones.
pub const FORMAT: u32 = 1;

/// The fewest cells worth a thread of `Store::all`'s.
const READ_CHUNK_MIN: usize = 256;
/// The cells a thread of `Store::all` reads at a time: few enough that the threads end
/// together, enough that taking the next block costs nothing beside reading it.
const READ_BLOCK: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    /// Executed and discarded by the statistics (the seed's "discard the first").
    Warmup,
    Measured,
}

/// One run of a cell, as appended to `samples.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub format: u32,
    /// 1-based position in this cell's samples.jsonl; names the log file.
    pub seq: u32,
    pub kind: RunKind,
    /// Identifies the apply invocation that took the run (its start time and pid).
    pub session: String,
    /// Wall-clock start and end, as Unix seconds. Provenance only: reports never show them.
    pub started: f64,
    pub ended: f64,
    /// metric name -> value, already scaled to the metric's unit.
    pub metrics: BTreeMap<String, f64>,
    /// Validity flags (throttled, hot, swapping, ...); empty when the run was clean.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Telemetry summary of the run, when a sampler ran (parsed once, when read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<StoredTelemetry>,
    /// The command as it ran, after template rendering.
    pub command: String,
    /// Relative to the cell directory.
    pub log: String,
    /// The run order of the apply that took it (blocked or interleaved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<crate::model::RunOrder>,
    /// The n-th run on its board in that apply: with `order`, how runs were interleaved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board_seq: Option<u64>,
}

/// `cell.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    pub format: u32,
    pub key: CellKey,
    pub address: Address,
    /// Parsed at first use (`StoredJson::value`): most reads never look.
    pub inputs: StoredJson,
}

/// `redo.json`: a user asked to measure the cell again (`--redo`, like a terraform
/// taint). The runs up to `after_seq` stay on disk but no longer count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Redo {
    pub format: u32,
    /// The last `seq` of samples.jsonl when the redo was asked; later runs count.
    pub after_seq: u32,
    /// When, as Unix seconds, and by which invocation (provenance only).
    pub at: f64,
    pub session: String,
}

/// `skip.json`: the last attempt found that the test cannot apply on the board (its
/// tool is not installed, a `[[requires]]` check said why). Not a failure; the next
/// apply checks again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skip {
    pub format: u32,
    pub session: String,
    pub at: f64,
    pub reason: String,
}

/// What the store holds for one cell.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellData {
    pub record: Option<CellRecord>,
    pub samples: Vec<Sample>,
    /// Shared by the cells whose `facts.json` holds the same bytes (`SharedFacts`).
    pub facts: Option<std::sync::Arc<Value>>,
    pub failure: Option<Failure>,
    pub redo: Option<Redo>,
    pub skip: Option<Skip>,
    pub fingerprint: Option<CellFingerprint>,
    /// The facts each run's opening of the cell saw (`facts/<session>.json`), by
    /// session: read only by `Store::all_with_run_facts` (history), empty otherwise and
    /// in stores older than them.
    pub run_facts: BTreeMap<String, std::sync::Arc<Value>>,
}

impl CellData {
    /// Whether a sample is current: taken after the last redo marker, if any.
    pub fn is_current(&self, s: &Sample) -> bool {
        self.redo.as_ref().is_none_or(|r| s.seq > r.after_seq)
    }

    /// The samples a redo marks as no longer counting.
    pub fn superseded(&self) -> usize {
        self.samples.iter().filter(|s| !self.is_current(s)).count()
    }

    /// This data as if a redo were asked now (what `plan --redo` shows).
    pub fn redone(&self, session: &str) -> CellData {
        let mut d = self.clone();
        d.redo = Some(Redo {
            format: FORMAT,
            after_seq: self.samples.iter().map(|s| s.seq).max().unwrap_or(0),
            at: now(),
            session: session.to_string(),
        });
        d
    }

    /// The current measured runs (a redo hides the earlier ones).
    pub fn measured(&self) -> impl Iterator<Item = &Sample> {
        self.samples
            .iter()
            .filter(|s| s.kind == RunKind::Measured && self.is_current(s))
    }
    pub fn measured_count(&self) -> usize {
        self.measured().count()
    }
}

#[derive(Clone, Debug)]
pub struct Store {
    root: PathBuf,
    /// The lock this store (and its clones) holds, while any `StoreLock` of it lives.
    held: Arc<Mutex<Weak<File>>>,
}

impl Store {
    /// Opens (creating if needed) the store at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Store> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(io(&root))?;
        let marker = root.join("store.json");
        if read_json::<Value>(&marker)?.is_none() {
            write_atomic(&marker, b"{\"format\":1}\n")?;
        }
        Ok(Store::at(root))
    }

    /// Opens a store for reading only; a missing store reads as empty.
    pub fn open_read(root: impl Into<PathBuf>) -> Result<Store> {
        let root = root.into();
        read_json::<Value>(&root.join("store.json"))?;
        Ok(Store::at(root))
    }

    fn at(root: PathBuf) -> Store {
        Store {
            root,
            held: Arc::default(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn cell_dir(&self, cell: &Cell) -> PathBuf {
        self.root.join(cell.dir_name())
    }

    /// Everything the store holds for `cell` (empty when it holds nothing).
    pub fn read(&self, cell: &Cell) -> Result<CellData> {
        Self::read_dir(&self.cell_dir(cell))
    }

    fn read_dir(dir: &Path) -> Result<CellData> {
        read_cell(
            &mut dir.to_path_buf(),
            &mut ReadBuf::default(),
            &SharedFacts::default(),
        )
    }

    /// Every cell in the store by key (for reports and garbage listing). Cells are read
    /// on a few threads (a report of a big store is mostly this read); the result and
    /// the error, if any, are the same whatever order the directory lists them in.
    pub fn all(&self) -> Result<BTreeMap<CellKey, CellData>> {
        self.all_reading(false)
    }

    /// `all`, with each cell's facts of its newest runs (`CellData::run_facts`): what
    /// `history` names the facts that moved with a change by. Only a report with a
    /// history needs them (`all_for_report`), and a nightly store holds hundreds a cell.
    pub fn all_with_run_facts(&self) -> Result<BTreeMap<CellKey, CellData>> {
        self.all_reading(true)
    }

    /// What a report reads: `all`, with each run's facts when the store holds more than
    /// one run (its History section names the facts that moved); one read either way.
    pub fn all_for_report(&self) -> Result<BTreeMap<CellKey, CellData>> {
        self.all_reading(self.runs()?.len() > 1)
    }

    fn all_reading(&self, with_run_facts: bool) -> Result<BTreeMap<CellKey, CellData>> {
        let entries = match fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(Error::io(&self.root, e)),
        };
        let mut cells = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io(&self.root))?;
            let name = entry.file_name();
            if let Some(key) = name
                .to_str()
                .and_then(|n| n.get(..32))
                .and_then(CellKey::parse)
            {
                // A link in place of a cell's directory would have its files read
                // wherever it points, outside the store.
                if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                    return Err(files::bad(
                        &entry.path(),
                        "a symbolic link, not a cell's directory; benchpipe makes each cell a directory of its own",
                    ));
                }
                cells.push((name, key));
            }
        }
        // Sorted, so that the first error is the same one however the directory lists.
        cells.sort();
        let facts = SharedFacts::default();
        let read = |part: &[(std::ffi::OsString, CellKey)]| -> Result<Vec<(CellKey, CellData)>> {
            let mut out = Vec::with_capacity(part.len());
            let (mut dir, mut buf) = (self.root.clone(), ReadBuf::default());
            for (name, key) in part {
                dir.push(name);
                let mut data = read_cell(&mut dir, &mut buf, &facts);
                if with_run_facts
                    && let Ok(d) = &mut data
                    && d.record.is_some()
                {
                    match run_facts::read(&dir, &mut buf, &facts) {
                        Ok(runs) => d.run_facts = runs,
                        Err(e) => data = Err(e),
                    }
                }
                dir.pop();
                let data = data?;
                if data.record.is_some() {
                    out.push((key.clone(), data));
                }
            }
            Ok(out)
        };
        let parts = crate::parallel::map_blocks(&cells, READ_CHUNK_MIN, READ_BLOCK, read);
        let mut out = BTreeMap::new();
        for part in parts {
            out.extend(part?);
        }
        Ok(out)
    }

    /// Prepares a cell's directory and writes its `cell.json` if absent.
    pub fn begin(&self, cell: &Cell) -> Result<CellWriter> {
        let dir = self.cell_dir(cell);
        fs::create_dir_all(dir.join("logs")).map_err(io(&dir))?;
        let path = dir.join("cell.json");
        if read_record(&mut ReadBuf::default(), &path)?.is_none() {
            let rec = CellRecord {
                format: FORMAT,
                key: cell.key.clone(),
                address: cell.address.clone(),
                inputs: cell.inputs.json().clone().into(),
            };
            write_atomic(&path, &to_json_bytes(&rec)?)?;
            sync_dir(&self.root)?;
        }
        // What a killed apply's replace left half-written here goes.
        files::remove_stale_temporaries(&dir);
        files::remove_stale_temporaries(&dir.join("logs"));
        if let Ok(Some(facts)) = run_facts::dir_of(&dir) {
            files::remove_stale_temporaries(&facts);
        }
        let next_seq = read_samples(&dir.join("samples.jsonl"))?.len() as u32 + 1;
        Ok(CellWriter { dir, next_seq })
    }

    /// Marks `cell` to be measured again: writes `redo.json` so that the runs stored so
    /// far no longer count. Deletes nothing. The caller holds the store's lock.
    pub fn mark_redo(&self, cell: &Cell, session: &str) -> Result<()> {
        let dir = self.cell_dir(cell);
        let after_seq = read_samples(&dir.join("samples.jsonl"))?
            .iter()
            .map(|s| s.seq)
            .max()
            .unwrap_or(0);
        if after_seq == 0 {
            // Nothing stored: nothing to discount, and no directory to create.
            return Ok(());
        }
        let redo = Redo {
            format: FORMAT,
            after_seq,
            at: now(),
            session: session.to_string(),
        };
        write_atomic(&dir.join("redo.json"), &to_json_bytes(&redo)?)
    }
}

/// Everything a cell directory holds (`dir` is given back as it came), reading through
/// one thread's `buf`. Its files are read in `Present::NAMES` order, so that of two
/// broken ones the first is named, as it always was.
fn read_cell(dir: &mut PathBuf, buf: &mut ReadBuf, facts: &SharedFacts) -> Result<CellData> {
    let present = Present::of(dir);
    let mut d = CellData::default();
    for (i, name) in Present::NAMES.into_iter().enumerate() {
        if present.has(i) {
            dir.push(name);
            let read = read_cell_file(&mut d, name, dir, buf, facts);
            dir.pop();
            read?;
        }
    }
    Ok(d)
}

/// Reads the cell file `name` at `path` into its field of `d`.
fn read_cell_file(
    d: &mut CellData,
    name: &str,
    path: &Path,
    buf: &mut ReadBuf,
    facts: &SharedFacts,
) -> Result<()> {
    read_doc_in(buf, path, |bytes| {
        parse_cell_file(d, name, path, bytes, facts)
    })
    .map(drop)
}

/// Parses the bytes of the cell file `name` (read from `path`) into its field of `d`.
fn parse_cell_file(
    d: &mut CellData,
    name: &str,
    path: &Path,
    bytes: &[u8],
    facts: &SharedFacts,
) -> Result<()> {
    match name {
        "cell.json" => d.record = Some(parse_record(path, bytes)?),
        "samples.jsonl" => d.samples = parse_samples(path, bytes)?,
        "facts.json" => d.facts = Some(facts.parse(path, bytes)?),
        "failure.json" => d.failure = Some(parse_bounded(path, bytes, FAILURE_FORMAT)?),
        "redo.json" => d.redo = Some(parse_bounded(path, bytes, FORMAT)?),
        "skip.json" => d.skip = Some(parse_bounded(path, bytes, FORMAT)?),
        "fingerprint.json" => d.fingerprint = Some(parse_bounded(path, bytes, FORMAT)?),
        _ => {}
    }
    Ok(())
}

/// A cell file's bytes read as `Store::read` reads the file `name` of a cell's
/// directory (one of `Present::NAMES`), from memory: the fuzz targets' way in
/// (`crate::fuzzing`).
pub(crate) fn cell_file_of_bytes(name: &str, bytes: &[u8]) -> Result<CellData> {
    let mut d = CellData::default();
    parse_cell_file(
        &mut d,
        name,
        Path::new(name),
        bytes,
        &SharedFacts::default(),
    )?;
    Ok(d)
}

/// The files of a cell's directory that `Store::read` reads, in the order it reads them.
pub const CELL_FILES: [&str; 7] = [
    "cell.json",
    "samples.jsonl",
    "facts.json",
    "failure.json",
    "redo.json",
    "skip.json",
    "fingerprint.json",
];

/// Which of the files `read_cell` reads a cell directory lists. Most cells have three
/// of the seven; looking for the other four one by one cost more than listing the
/// directory once. A directory that cannot be listed reads as holding all of them, so
/// that opening each names the error as it always did.
struct Present(Option<u8>);

impl Present {
    const NAMES: [&str; 7] = CELL_FILES;

    fn of(dir: &Path) -> Present {
        let Ok(entries) = fs::read_dir(dir) else {
            return Present(None);
        };
        let mut mask = 0u8;
        for entry in entries {
            let Ok(entry) = entry else {
                return Present(None);
            };
            let name = entry.file_name();
            let known = Self::NAMES
                .iter()
                .position(|n| name.as_encoded_bytes() == n.as_bytes());
            if let Some(i) = known {
                mask |= 1 << i;
            }
        }
        Present(Some(mask))
    }

    /// Whether the directory holds `NAMES[i]` (or could not be listed).
    fn has(&self, i: usize) -> bool {
        self.0.is_none_or(|mask| mask & (1 << i) != 0)
    }
}

/// Appends to one cell's directory.
pub struct CellWriter {
    dir: PathBuf,
    next_seq: u32,
}

impl CellWriter {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The sequence number the next sample will get.
    pub fn next_seq(&self) -> u32 {
        self.next_seq
    }

    /// Writes the raw log of the run about to be recorded; returns its relative path.
    pub fn write_log(&self, seq: u32, bytes: &[u8]) -> Result<String> {
        let rel = format!("logs/{seq:04}.log");
        write_atomic(&self.dir.join(&rel), bytes)?;
        Ok(rel)
    }

    /// Keeps the log of a run that failed, beside the others, under its own name.
    pub fn write_log_named(&self, name: &str, bytes: &[u8]) -> Result<String> {
        let rel = format!("logs/{name}.log");
        write_atomic(&self.dir.join(&rel), bytes)?;
        Ok(rel)
    }

    /// Appends one whole sample line and fsyncs it. The sample's `seq` must be `next_seq`.
    pub fn append(&mut self, sample: &Sample) -> Result<()> {
        if sample.seq != self.next_seq {
            return Err(Error::Other(format!(
                "sample seq {} out of order (expected {})",
                sample.seq, self.next_seq
            )));
        }
        let path = self.dir.join("samples.jsonl");
        let mut f = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        cut_torn_tail(&mut f).map_err(io(&path))?;
        let mut line = serde_json::to_vec(sample).map_err(|e| Error::Other(e.to_string()))?;
        line.push(b'\n');
        f.write_all(&line).map_err(io(&path))?;
        f.sync_all().map_err(io(&path))?;
        self.next_seq += 1;
        // A success supersedes an earlier failure or skip of this cell.
        self.remove("failure.json")?;
        self.remove("skip.json")
    }

    fn remove(&self, name: &str) -> Result<()> {
        let path = self.dir.join(name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(&path, e)),
            _ => Ok(()),
        }
    }

    /// Records that the test cannot apply on the board, and why; it replaces an earlier
    /// failure, since it is what the last attempt found.
    pub fn record_skip(&self, session: &str, at: f64, reason: &str) -> Result<()> {
        let s = Skip {
            format: FORMAT,
            session: session.to_string(),
            at,
            reason: reason.to_string(),
        };
        write_atomic(&self.dir.join("skip.json"), &to_json_bytes(&s)?)?;
        self.remove("failure.json")
    }

    /// The cell's `facts.json`: its typed facts, keys sorted as every store file's are;
    /// and the same bytes as the facts of the run `session` (`facts/<session>.json`),
    /// which later runs do not replace.
    pub fn write_facts(&self, facts: &CellFacts, session: &str) -> Result<()> {
        let mut doc = serde_json::to_value(facts).map_err(|e| Error::Other(e.to_string()))?;
        if let Some(obj) = doc.as_object_mut() {
            obj.insert("format".into(), Value::from(FORMAT));
        }
        let bytes = to_json_bytes(&doc)?;
        write_atomic(&self.dir.join("facts.json"), &bytes)?;
        run_facts::write(&self.dir, session, &bytes)
    }

    pub fn record_failure(&self, session: &str, at: f64, failure: &CellFailure) -> Result<()> {
        let f = Failure {
            session: session.to_string(),
            at,
            failure: failure.clone(),
        };
        write_atomic(&self.dir.join("failure.json"), &to_json_bytes(&f)?)?;
        self.remove("skip.json")
    }
}

/// Seconds since the Unix epoch, for provenance fields.
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
