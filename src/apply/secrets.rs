//! A walk's secrets: the cells' secret directories on the controller (made 0700 when a
//! cell opens, removed when it ends, and left-overs of a killed apply removed at the
//! next), their values read after every command, and the transport wrapper that
//! redacts them from every command's output before the walk sees it.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::failure::CellFailure;
use crate::plan::CellKey;
use crate::secrets::{MAX_FILE_BYTES, Redactions, SecretError};
use crate::transport::capture::drop_marker;
use crate::transport::{CAPTURE_LIMIT, Capture, Exit, Service, Transport, TransportError, quote};

/// The secret directory of a cell in the board's directory on the controller.
pub(super) fn dir_of(controller_dir: &str, cell: &CellKey) -> String {
    format!("{}/secrets-{cell}", controller_dir.trim_end_matches('/'))
}

/// What a walk knows of its cells' secrets. Values stay known until the walk ends,
/// so a failure recorded after its cell closed is still redacted.
#[derive(Default)]
pub(super) struct Secrets {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Open cells: their directory and their secrets' names.
    cells: BTreeMap<CellKey, (PathBuf, Vec<String>)>,
    redactions: Redactions,
}

impl Secrets {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether any output must be looked at.
    pub(super) fn active(&self) -> bool {
        let s = self.state();
        !s.cells.is_empty() || !s.redactions.is_empty()
    }

    /// Starts reading a cell's secrets (its directory was just made).
    pub(super) fn open(&self, cell: &CellKey, dir: &str, names: &[String]) {
        self.state()
            .cells
            .insert(cell.clone(), (PathBuf::from(dir), names.to_vec()));
    }

    /// Stops reading a cell's secrets; their values stay redacted.
    pub(super) fn close(&self, cell: &CellKey) -> bool {
        self.refresh().ok();
        self.state().cells.remove(cell).is_some()
    }

    /// Reads every open cell's secret files (the controller is this machine), adding
    /// their values. A file not there yet is nothing to redact.
    pub(super) fn refresh(&self) -> Result<(), SecretError> {
        let mut s = self.state();
        let files: Vec<(PathBuf, String)> = s
            .cells
            .values()
            .flat_map(|(dir, names)| names.iter().map(|n| (dir.join(n), n.clone())))
            .collect();
        for (path, name) in files {
            let Some(content) = read_bounded(&path) else {
                continue;
            };
            s.redactions.add(&name, &content)?;
        }
        Ok(())
    }

    pub(super) fn redact_str(&self, text: &str) -> String {
        self.state().redactions.redact_str(text).into_owned()
    }

    /// A failure with every secret value in its text replaced: its fields, whatever
    /// the kind, through its stored form.
    pub(super) fn redact_failure(&self, cause: &CellFailure) -> CellFailure {
        if self.state().redactions.is_empty() {
            return cause.clone();
        }
        let Ok(mut v) = serde_json::to_value(cause) else {
            return cause.clone();
        };
        self.redact_json(&mut v);
        serde_json::from_value(v).unwrap_or_else(|_| cause.clone())
    }

    fn redact_json(&self, v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) => *s = self.redact_str(s),
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| self.redact_json(x)),
            serde_json::Value::Object(o) => o.values_mut().for_each(|x| self.redact_json(x)),
            _ => {}
        }
    }

    /// Writes a stream kept as head and tail to `sink`, redacted.
    fn write_redacted(&self, capture: Capture, sink: &mut dyn Write) -> std::io::Result<()> {
        let total = capture.total();
        let (head, tail, dropped) = capture.finish_parts();
        let (head, tail) = self.state().redactions.redact_cut(&head, &tail);
        sink.write_all(&head)?;
        if dropped > 0 {
            if !head.ends_with(b"\n") {
                sink.write_all(b"\n")?;
            }
            sink.write_all(drop_marker(dropped, total).as_bytes())?;
        }
        sink.write_all(&tail)
    }
}

/// At most `MAX_FILE_BYTES` and one byte more (so a larger file is refused, not cut).
fn read_bounded(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let mut out = Vec::new();
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut out).ok()?;
    Some(out)
}

/// A transport whose commands' output is redacted before it reaches the caller, once
/// the walk knows of any secret; otherwise it streams through untouched. The output
/// is held (bounded as `Transport::run` bounds it) until the command ends, because
/// the command itself may have made the secret it prints.
pub(super) struct Redacting<'a> {
    inner: &'a mut dyn Transport,
    secrets: &'a Secrets,
}

impl<'a> Redacting<'a> {
    pub(super) fn new(inner: &'a mut dyn Transport, secrets: &'a Secrets) -> Self {
        Redacting { inner, secrets }
    }

    fn finish(
        &self,
        exit: Result<Exit, TransportError>,
        out: Capture,
        err: Capture,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        let refreshed = self.secrets.refresh();
        let io = |e: std::io::Error| TransportError::Other {
            target: self.inner.target(),
            reason: format!("writing a command's output: {e}"),
        };
        self.secrets.write_redacted(out, stdout).map_err(io)?;
        self.secrets.write_redacted(err, stderr).map_err(io)?;
        refreshed.map_err(|e| TransportError::Other {
            target: self.inner.target(),
            reason: e.to_string(),
        })?;
        exit.map_err(|e| self.redact_error(e))
    }

    /// A transport error's text is redacted too: a timeout quotes its command, and an
    /// error's reason may quote what the command said.
    fn redact_error(&self, e: TransportError) -> TransportError {
        match e {
            TransportError::Timeout {
                target,
                command,
                after,
            } => TransportError::Timeout {
                target,
                command: self.secrets.redact_str(&command),
                after,
            },
            TransportError::Other { target, reason } => TransportError::Other {
                target,
                reason: self.secrets.redact_str(&reason),
            },
            other => other,
        }
    }
}

impl Transport for Redacting<'_> {
    fn target(&self) -> String {
        self.inner.target()
    }

    fn exec(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        if !self.secrets.active() {
            return self.inner.exec(command, timeout, stdout, stderr);
        }
        let mut out = Capture::new(CAPTURE_LIMIT);
        let mut err = Capture::new(CAPTURE_LIMIT);
        let exit = self.inner.exec(command, timeout, &mut out, &mut err);
        self.finish(exit, out, err, stdout, stderr)
    }

    fn exec_input(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdin: &mut dyn Read,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        if !self.secrets.active() {
            return self
                .inner
                .exec_input(command, timeout, stdin, stdout, stderr);
        }
        let mut out = Capture::new(CAPTURE_LIMIT);
        let mut err = Capture::new(CAPTURE_LIMIT);
        let exit = self
            .inner
            .exec_input(command, timeout, stdin, &mut out, &mut err);
        self.finish(exit, out, err, stdout, stderr)
    }

    fn upload(&mut self, local: &Path, remote: &str) -> Result<(), TransportError> {
        self.inner.upload(local, remote)
    }

    fn download(&mut self, remote: &str, local: &Path) -> Result<(), TransportError> {
        self.inner.download(remote, local)
    }

    // Services go to the inner transport as they are (the fake records them); their
    // start prints a pid and their output goes to a file on the side that runs them.
    fn start_service(
        &mut self,
        dir: &str,
        name: &str,
        command: &str,
    ) -> Result<Service, TransportError> {
        self.inner.start_service(dir, name, command)
    }

    fn stop_service(&mut self, service: &Service) -> Result<(), TransportError> {
        self.inner.stop_service(service)
    }

    fn stop_all_services(&mut self, dir: &str) -> Result<(), TransportError> {
        self.inner.stop_all_services(dir)
    }
}

/// Makes a cell's secret directory afresh (mode 0700) on the controller.
pub(super) fn make_dir(controller: &mut dyn Transport, dir: &str) -> Result<(), CellFailure> {
    let d = quote::sh(dir);
    let out = controller.run(
        &format!("rm -rf -- {d} && (umask 077 && mkdir -- {d})"),
        Some(Duration::from_secs(30)),
    )?;
    if out.exit.success() {
        return Ok(());
    }
    Err(CellFailure::Refused {
        reason: format!(
            "cannot make the cell's secret directory on the controller: {}",
            crate::failure::first_line(&out.stderr_str())
        ),
    })
}

/// Removes a cell's secret directory, or (`all`) every one under the board's
/// directory on the controller, left by an apply that was killed.
pub(super) fn remove_dirs(
    controller: &mut dyn Transport,
    controller_dir: &str,
    cell: Option<&CellKey>,
) -> Result<(), TransportError> {
    let command = match cell {
        Some(c) => format!("rm -rf -- {}", quote::sh(&dir_of(controller_dir, c))),
        None => format!(
            "for d in {}/secrets-*; do [ ! -d \"$d\" ] || rm -rf -- \"$d\"; done",
            quote::sh(controller_dir.trim_end_matches('/'))
        ),
    };
    controller
        .run(&command, Some(Duration::from_secs(30)))
        .map(|_| ())
}

/// Opens a cell's secrets at its opening: its directory on the controller made, the
/// recipe's secrets redacted from every output from then on. Nothing without secrets.
pub(super) fn open_cell(
    controller: &mut dyn Transport,
    controller_dir: &str,
    job: &super::Job<'_>,
    secrets: &Secrets,
) -> Result<(), CellFailure> {
    if job.recipe.secrets.is_empty() {
        return Ok(());
    }
    let dir = dir_of(controller_dir, &job.cell.key);
    make_dir(controller, &dir)?;
    secrets.open(&job.cell.key, &dir, &job.recipe.secrets);
    Ok(())
}

impl super::worker::Worker<'_> {
    /// Removes the secrets a killed apply left in the walk's directory on the controller.
    pub(super) fn remove_leftover_secrets(&self, controller: &mut dyn Transport) {
        let dir = self.service_dir(crate::model::Side::Controller);
        if let Err(e) = remove_dirs(controller, &dir, None) {
            self.phase(None, format!("could not remove leftover secrets: {e}"));
        }
    }
}
