//! Store files on disk: atomic whole-file writes, reads that refuse what is not a
//! regular file or too large or too new, and samples files cut back to whole lines.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::stored_json::check_value;
use super::{CellRecord, FORMAT, RunKind, Sample};
use crate::cell::{Address, CellKey};
use crate::error::{Error, Result};
use crate::model::RunOrder;
use crate::telemetry::{StoredTelemetry, TelemetrySummary};

pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(path, e)
}

/// Writes `bytes` to `path` so that readers see the old file or the new one, never half
/// (`owned::replace`; the mode as `File::create` gives, under the umask).
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(crate::owned::replace(path, bytes, 0o666)?)
}

/// Removes the temporary files a writer killed mid-replace left in `dir`
/// (`owned::replace`'s `.NAME.PID-N-HEX.tmp`, regular files only, never this
/// process's). The caller holds the store's lock, so no live writer's can be there.
/// Best effort: one that stays is hidden from every reader anyway.
pub(super) fn remove_stale_temporaries(dir: &Path) {
    /// The most entries looked at: a store directory of benchpipe's holds far fewer.
    const MAX_ENTRIES: usize = 1 << 16;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id().to_string();
    for e in entries.flatten().take(MAX_ENTRIES) {
        let name = e.file_name();
        let stale = name
            .to_str()
            .and_then(temporary_pid)
            .is_some_and(|pid| pid != me);
        if stale && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The writer's pid in the name of `owned::replace`'s temporary file
/// (`.NAME.PID-N-HEX.tmp`); `None` for any other name.
fn temporary_pid(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, tail) = rest.rsplit_once('.')?;
    let mut parts = tail.split('-');
    let (pid, n, hex) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let hexits = !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    (parts.next().is_none() && digits(pid) && digits(n) && hexits).then_some(pid)
}

pub(super) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// The most a store file may hold; a larger one is not benchpipe's.
pub(crate) const MAX_FILE_BYTES: u64 = 64 << 20;

/// A store file that is not what benchpipe writes there: bad input (exit 2), its
/// message naming the file and what was expected, on one line and bounded (a parse
/// error may quote what the file holds).
pub(super) fn bad(path: &Path, what: impl std::fmt::Display) -> Error {
    let text = format!("{}: {what}", path.display());
    Error::Store(crate::shown::shown(&text).into_owned())
}

/// Opens a store file for reading, with its length: `None` when absent; an error when
/// it is a FIFO, a device, a symlink or a directory, or lies under something that is
/// not a directory. A FIFO planted in `results/` would otherwise block `plan` and
/// `report` for ever, and a device would stream without end.
pub(crate) fn open_regular(path: &Path) -> Result<Option<(File, u64)>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(bad(
                path,
                "a symbolic link, not a regular file; benchpipe writes only regular files in its store",
            ));
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(bad(
                path,
                "its directory is not a directory; a store holds a directory per cell",
            ));
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta = file.metadata().map_err(io(path))?;
    if !meta.is_file() {
        return Err(bad(
            path,
            "not a regular file; benchpipe writes only regular files in its store",
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(bad(
            path,
            format_args!(
                "{} bytes, more than the {MAX_FILE_BYTES} a store file may hold",
                meta.len()
            ),
        ));
    }
    Ok(Some((file, meta.len())))
}

/// A buffer that one reading thread reuses for every file it reads. Reading a big store
/// is reading many small files: a buffer of their own each (and the allocator's work
/// behind a fresh kilobytes-sized one: consolidating its free lists) cost about as much
/// as parsing them.
#[derive(Default)]
pub(super) struct ReadBuf(Vec<u8>);

impl ReadBuf {
    /// The whole of `file` (`len` bytes by its metadata), in place of what the buffer
    /// held.
    pub(super) fn fill(&mut self, file: File, len: u64) -> std::io::Result<&[u8]> {
        self.0.clear();
        // Sized up front (and one byte over, so that the read that finds the end needs
        // no more room): through `take` a read would grow its buffer step by step.
        self.0.reserve(len.min(MAX_FILE_BYTES) as usize + 1);
        file.take(MAX_FILE_BYTES).read_to_end(&mut self.0)?;
        Ok(&self.0)
    }
}

pub(super) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>> {
    read_json_of(path, FORMAT)
}

/// Reads a file whose newest known format is `newest`.
pub(super) fn read_json_of<T: for<'de> Deserialize<'de>>(
    path: &Path,
    newest: u32,
) -> Result<Option<T>> {
    read_doc_in(&mut ReadBuf::default(), path, |bytes| {
        parse_bounded(path, bytes, newest)
    })
}

/// `parse_doc` for a document read as a `Value` (a cell's `facts.json`): parsed once,
/// its format read from the value, where `parse_doc` parses twice. Anything but an
/// object is left to `parse_doc`, for its error. (Of a hand-made document that repeats
/// `format`, the last one counts here, as in the value itself.)
fn parse_value(path: &Path, bytes: &[u8], newest: u32) -> Result<Value> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(mut value @ Value::Object(_)) => {
            check_format(path, value.get("format").and_then(Value::as_u64), newest)?;
            // No string of a document this short can be longer than the bound.
            if bytes.len() > crate::shown::MAX_BYTES {
                crate::shown::bound_value(&mut value);
            }
            Ok(value)
        }
        _ => parse_doc(path, None, bytes, newest),
    }
}

/// The `facts.json` files one read of the store has parsed, by their bytes. The cells
/// one apply measured on a board and its storage mostly have the same facts, byte for
/// byte: they share one parsed value rather than each holding a copy, and a report
/// finds two cells' facts equal without walking them (`Arc`'s equality of a value
/// that is `Eq` is the pointer's first). A value is a pure function of its bytes, so
/// sharing it changes nothing read. Holds one entry per distinct file, for one read.
#[derive(Default)]
pub(super) struct SharedFacts(Mutex<HashMap<Box<[u8]>, Arc<Value>>>);

impl SharedFacts {
    /// A cell's `facts.json` (`parse_value`) from its bytes: bytes parsed before in this
    /// read give the value they gave then.
    pub(super) fn parse(&self, path: &Path, bytes: &[u8]) -> Result<Arc<Value>> {
        if let Some(known) = self.known().get(bytes) {
            return Ok(Arc::clone(known));
        }
        // Parsed outside the lock: two threads may parse the same bytes at once, and
        // the first value kept is the one both give.
        let value = Arc::new(parse_value(path, bytes, FORMAT)?);
        Ok(Arc::clone(
            self.known().entry(bytes.into()).or_insert(value),
        ))
    }

    fn known(&self) -> std::sync::MutexGuard<'_, HashMap<Box<[u8]>, Arc<Value>>> {
        // A thread that panicked holding the lock left the map whole: each entry is
        // inserted at once.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Reads a `cell.json` (see `parse_record`).
pub(super) fn read_record(buf: &mut ReadBuf, path: &Path) -> Result<Option<CellRecord>> {
    read_doc_in(buf, path, |bytes| parse_record(path, bytes))
}

/// The store document at `path`, read whole through `buf` and given to `parse`; None
/// when it is absent.
pub(super) fn read_doc_in<T>(
    buf: &mut ReadBuf,
    path: &Path,
    parse: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<Option<T>> {
    let Some((file, len)) = open_regular(path)? else {
        return Ok(None);
    };
    match buf.fill(file, len) {
        Ok(bytes) => parse(bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// A `cell.json`, its inputs kept as text (`StoredJson`). Quick when the document is
/// whole and of a known format (`check_value` says so, building nothing); anything
/// else is read as it always was, inputs as a `Value`, so that it has the same result
/// and the same error.
pub(super) fn parse_record(path: &Path, bytes: &[u8]) -> Result<CellRecord> {
    let record = parse_record_as_written(path, bytes)?;
    // Its names make paths (`boards/<board>.facts.json`): each is held to the rule a
    // board file's name is, before any is used.
    if let Some((field, name)) = record.address.bad_name() {
        return Err(bad(
            path,
            format_args!(
                "address.{field} `{}` is not a name: expected letters, digits, `-`, `_` and `.`, starting with a letter or digit, without `..`, as a file of boards/, pipeline/ or scenarios/ names it",
                name.escape_debug()
            ),
        ));
    }
    Ok(record)
}

/// `parse_record`, its names not checked yet.
fn parse_record_as_written(path: &Path, bytes: &[u8]) -> Result<CellRecord> {
    #[derive(Deserialize)]
    struct Parsed {
        format: u32,
        key: CellKey,
        address: Address,
        inputs: Value,
    }
    if let Ok(Some(format)) = check_value(bytes)
        && format <= u64::from(FORMAT)
        && let Ok(record) = serde_json::from_slice::<CellRecord>(bytes)
    {
        return Ok(record);
    }
    let p: Parsed = parse_doc(path, None, bytes, FORMAT)?;
    Ok(CellRecord {
        format: p.format,
        key: p.key,
        address: p.address,
        inputs: p.inputs.into(),
    })
}

/// A store document's `format`, read on its own: the other fields are skipped unbuilt.
#[derive(Deserialize)]
struct FormatField {
    #[serde(default)]
    format: Option<Value>,
}

/// Parses one store document (`line`: of a samples file): its `format` is checked
/// first, so that a newer one is refused before its fields are read, then the typed
/// value is parsed straight from the bytes. Building a `Value` tree first and
/// converting it was most of what a report spent reading the store.
pub(super) fn parse_doc<T: for<'de> Deserialize<'de>>(
    path: &Path,
    line: Option<usize>,
    bytes: &[u8],
    newest: u32,
) -> Result<T> {
    let err = |e: serde_json::Error| match line {
        Some(n) => {
            Error::Store(crate::shown::shown(&format!("{}:{n}: {e}", path.display())).into_owned())
        }
        None => bad(path, e),
    };
    let f: FormatField = serde_json::from_slice(bytes).map_err(err)?;
    check_format(path, f.format.as_ref().and_then(Value::as_u64), newest)?;
    serde_json::from_slice(bytes).map_err(err)
}

/// `parse_doc` for a document benchpipe reads back only to act on and show (a failure,
/// a skip, a board's state): every string it holds is bounded (`shown::bound`), so a
/// stored cause of 60 MB is read as 4 KiB that say where they were cut. A document no
/// longer than the bound holds no longer string, and is parsed straight from its bytes.
pub(super) fn parse_bounded<T: for<'de> Deserialize<'de>>(
    path: &Path,
    bytes: &[u8],
    newest: u32,
) -> Result<T> {
    if bytes.len() <= crate::shown::MAX_BYTES {
        return parse_doc(path, None, bytes, newest);
    }
    let mut value: Value = parse_doc(path, None, bytes, newest)?;
    crate::shown::bound_value(&mut value);
    // A typed error is made again from the bytes, for its line and column.
    T::deserialize(value).map_err(|e| match serde_json::from_slice::<T>(bytes) {
        Err(at) => bad(path, at),
        Ok(_) => bad(path, e),
    })
}

pub(super) fn check_format(path: &Path, format: Option<u64>, newest: u32) -> Result<()> {
    match format {
        Some(f) if f <= u64::from(newest) => Ok(()),
        Some(f) => Err(bad(
            path,
            format_args!(
                "format {f} is newer than this benchpipe understands ({newest}); upgrade benchpipe"
            ),
        )),
        None => Err(bad(path, "no format field")),
    }
}

/// The fewest bytes a sample line can have: its nine required fields, empty, and the
/// newline (`{"format":1,"seq":1,"kind":"warmup","session":"","started":0,"ended":0,`
/// `"metrics":{},"command":"","log":""}` and its newline are 107).
const MIN_SAMPLE_LINE: usize = 100;

/// The samples `whole` (a samples file's whole lines) can hold, to size their vector up
/// front (grown step by step, a big cell's samples were copied several times): its
/// lines, but never more than its bytes can make. A count of newlines alone is taken
/// from the input: 64 MiB of bare newlines reserved 14 GB before line 1 was found broken.
pub(super) fn samples_capacity(whole: &[u8]) -> usize {
    let lines = memchr::memchr_iter(b'\n', whole).count();
    lines.min(whole.len() / MIN_SAMPLE_LINE)
}

/// Reads whole lines of a samples file; a torn last line (no newline) is ignored.
pub(super) fn read_samples(path: &Path) -> Result<Vec<Sample>> {
    let Some((file, len)) = open_regular(path)? else {
        return Ok(Vec::new());
    };
    let mut buf = ReadBuf::default();
    let bytes = buf.fill(file, len).map_err(io(path))?;
    parse_samples(path, bytes)
}

/// The samples of a samples file's bytes (read from `path`): its whole lines, a torn
/// last one (no newline) ignored.
pub(super) fn parse_samples(path: &Path, bytes: &[u8]) -> Result<Vec<Sample>> {
    // Every line but a last one without its newline: that one was torn by a crash.
    let whole = memchr::memrchr(b'\n', bytes).map_or(&bytes[..0], |end| &bytes[..=end]);
    let mut out = Vec::with_capacity(samples_capacity(whole));
    // The whole lines checked as UTF-8 once: parsed from bytes, serde_json checks each
    // of a line's sixty-odd strings on its own, which cost a sixth of the read.
    let text = std::str::from_utf8(whole).ok();
    let mut start = 0;
    for (i, end) in memchr::memchr_iter(b'\n', whole).enumerate() {
        let line = &whole[start..=end];
        let parsed = match text {
            Some(text) => parse_sample(&text[start..=end]),
            None => None,
        };
        start = end + 1;
        out.push(match parsed {
            Some(s) if s.format <= FORMAT => s,
            // A newer format, or a line the fast path does not take (not UTF-8 among
            // them): read as before, with the same errors.
            _ => parse_doc(path, Some(i + 1), line, FORMAT)?,
        });
    }
    Ok(out)
}

/// A sample line as apply writes it (its telemetry a summary), in one typed pass; the
/// caller checks its format. Anything else (no format, a telemetry value that is not a
/// summary, a malformed line) is None, and `parse_doc` reads it as before, with its
/// errors. Parsing the summary here, not a `Value` tree first, is most of what keeps
/// reading a big store quick (and dropping what was read).
fn parse_sample(line: &str) -> Option<Sample> {
    #[derive(Deserialize)]
    struct Line {
        format: u32,
        seq: u32,
        kind: RunKind,
        session: String,
        started: f64,
        ended: f64,
        metrics: std::collections::BTreeMap<String, f64>,
        #[serde(default)]
        flags: Vec<String>,
        #[serde(default)]
        telemetry: Option<Box<TelemetrySummary>>,
        command: String,
        log: String,
        #[serde(default)]
        order: Option<RunOrder>,
        #[serde(default)]
        board_seq: Option<u64>,
    }
    let l: Line = serde_json::from_str(line).ok()?;
    Some(Sample {
        format: l.format,
        seq: l.seq,
        kind: l.kind,
        session: l.session,
        started: l.started,
        ended: l.ended,
        metrics: l.metrics,
        flags: l.flags,
        telemetry: l.telemetry.map(StoredTelemetry::from),
        command: l.command,
        log: l.log,
        order: l.order,
        board_seq: l.board_seq,
    })
}

pub(super) fn to_json_bytes<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    let mut b = serde_json::to_vec_pretty(v).map_err(|e| Error::Other(e.to_string()))?;
    b.push(b'\n');
    Ok(b)
}

/// Truncates a final line that a crash left without its newline.
pub(super) fn cut_torn_tail(f: &mut File) -> std::io::Result<()> {
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    f.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    if last[0] == b'\n' {
        return Ok(());
    }
    // Find the last newline by reading backwards in chunks.
    let mut end = len;
    let mut buf = vec![0u8; 4096];
    let keep = loop {
        let start = end.saturating_sub(buf.len() as u64);
        let n = (end - start) as usize;
        f.seek(SeekFrom::Start(start))?;
        f.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|&b| b == b'\n') {
            break start + i as u64 + 1;
        }
        if start == 0 {
            break 0;
        }
        end = start;
    };
    f.set_len(keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_writers_temporaries_go_and_nothing_else_does() {
        let dir = std::env::temp_dir().join(format!("bp-store-tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".cell.json.1-2-ab.tmp")).unwrap();
        let me = std::process::id();
        let names = [
            ".cell.json.4242-0-a1b2c3d4e5f6.tmp",
            ".lab-1.json.7-13-00ff00ff00ff.tmp",
            &format!(".status.json.{me}-1-abcdef.tmp"),
            "cell.json",
            ".cell.json.x-1-ab.tmp",
            ".cell.json.12-1-zz.tmp",
            "notes.tmp",
        ];
        for n in names {
            std::fs::write(dir.join(n), "x").unwrap();
        }
        remove_stale_temporaries(&dir);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want = vec![
            ".cell.json.1-2-ab.tmp".to_string(),
            ".cell.json.12-1-zz.tmp".into(),
            ".cell.json.x-1-ab.tmp".into(),
            format!(".status.json.{me}-1-abcdef.tmp"),
            "cell.json".into(),
            "notes.tmp".into(),
        ];
        want.sort();
        assert_eq!(left, want);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
