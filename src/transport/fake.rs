//! A recording fake `Transport`, for tests only: it runs nothing, answers each command
//! from a script, and logs every command and service call in order, so the schedule's
//! walk can be checked without boards or tools.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Exit, Service, Transport, TransportError};
use crate::model::Board;

/// How the fake answers one command.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    /// Exit 0 with this stdout.
    Ok(String),
    /// This exit code and stderr.
    Fail(i32, String),
    /// The connection breaks (the board is gone).
    Lost,
}

/// Picks the reply to a command: `(target, command) -> Reply`. Service calls reach it
/// as `#start-service NAME: COMMAND`, `#stop-service NAME` and `#stop-all-services DIR`.
pub type Script = Arc<dyn Fn(&str, &str) -> Reply + Send + Sync>;

/// Every call any fake saw, in order, as `target: command`.
pub type Log = Arc<Mutex<Vec<String>>>;

/// A transport that records and answers from its script.
pub struct FakeTransport {
    target: String,
    script: Script,
    log: Log,
}

impl FakeTransport {
    pub fn new(target: &str, script: Script, log: Log) -> FakeTransport {
        FakeTransport {
            target: target.to_string(),
            script,
            log,
        }
    }

    fn call(&mut self, command: &str) -> Result<Reply, TransportError> {
        if let Ok(mut log) = self.log.lock() {
            log.push(format!("{}: {command}", self.target));
        }
        match (self.script)(&self.target, command) {
            Reply::Lost => Err(TransportError::Lost {
                target: self.target.clone(),
                reason: "fake: connection lost".into(),
            }),
            r => Ok(r),
        }
    }
}

impl Transport for FakeTransport {
    fn target(&self) -> String {
        self.target.clone()
    }

    fn exec(
        &mut self,
        command: &str,
        _timeout: Option<Duration>,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        let (code, out, err) = match self.call(command)? {
            Reply::Ok(out) => (0, out, String::new()),
            Reply::Fail(code, err) => (code, String::new(), err),
            Reply::Lost => unreachable!("`call` turns Lost into an error"),
        };
        // Through the sinks, as a real transport streams: `run` bounds them.
        let _ = stdout.write_all(out.as_bytes());
        let _ = stderr.write_all(err.as_bytes());
        Ok(Exit {
            code: Some(code),
            signal: None,
        })
    }

    fn upload(&mut self, local: &Path, remote: &str) -> Result<(), TransportError> {
        self.call(&format!("#upload {} {remote}", local.display()))
            .map(|_| ())
    }

    fn download(&mut self, remote: &str, local: &Path) -> Result<(), TransportError> {
        self.call(&format!("#download {remote} {}", local.display()))
            .map(|_| ())
    }

    fn start_service(
        &mut self,
        dir: &str,
        name: &str,
        command: &str,
    ) -> Result<Service, TransportError> {
        match self.call(&format!("#start-service {name}: {command}"))? {
            Reply::Fail(code, err) => Err(TransportError::Other {
                target: self.target.clone(),
                reason: format!("fake: service {name} exited {code}: {err}"),
            }),
            _ => Ok(Service {
                name: name.to_string(),
                pgid: 0,
                pid_file: format!("{dir}/services/{name}.pid"),
                log_file: format!("{dir}/services/{name}.log"),
            }),
        }
    }

    fn stop_service(&mut self, service: &Service) -> Result<(), TransportError> {
        self.call(&format!("#stop-service {}", service.name))
            .map(|_| ())
    }

    fn stop_all_services(&mut self, dir: &str) -> Result<(), TransportError> {
        self.call(&format!("#stop-all-services {dir}")).map(|_| ())
    }
}

/// Connects every board and the controller to fakes sharing one script and one log.
pub struct FakeConnector {
    pub script: Script,
    pub log: Log,
}

impl super::Connector for FakeConnector {
    fn board(&self, board: &Board) -> Result<Box<dyn Transport>, TransportError> {
        let target = board.name.to_string();
        match (self.script)(&target, "#connect") {
            Reply::Ok(_) => {
                if let Ok(mut log) = self.log.lock() {
                    log.push(format!("{target}: #connect"));
                }
                Ok(Box::new(FakeTransport::new(
                    &target,
                    self.script.clone(),
                    self.log.clone(),
                )))
            }
            _ => Err(TransportError::Unreachable {
                target,
                reason: "fake: no route to host".into(),
            }),
        }
    }

    fn controller(&self) -> Box<dyn Transport> {
        Box::new(FakeTransport::new(
            "controller",
            self.script.clone(),
            self.log.clone(),
        ))
    }
}
