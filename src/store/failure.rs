//! `failure.json`: the record of why the last attempt at a cell failed, in its own
//! format (newer ones are refused; format 1, a plain `cause`, loads as `Legacy`).

use serde::{Deserialize, Serialize};

use crate::failure::CellFailure;

/// The version of failure.json; readers refuse newer ones. 2: the failure is typed
/// (`failure`, tagged by `kind`) and `cause` is only its text for people; 1 held the
/// `cause` text alone, read back as `CellFailure::Legacy`. 4: `package_unavailable`,
/// `no_package_manager` and `missing_commands.manager`.
pub const FAILURE_FORMAT: u32 = 4;

/// `failure.json`: why the last attempt at a cell failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "FailureFile", into = "FailureFile")]
pub struct Failure {
    pub session: String,
    pub at: f64,
    pub failure: CellFailure,
}

/// failure.json as written: the typed failure, and its text for people reading the
/// file (benchpipe never reads the text back, but from a format-1 file).
#[derive(Serialize, Deserialize)]
struct FailureFile {
    format: u32,
    session: String,
    at: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failure: Option<CellFailure>,
    #[serde(default)]
    cause: String,
}

/// A failure.json of format 2 or later without its typed `failure`.
#[derive(Debug, thiserror::Error)]
#[error("no `failure` field")]
pub struct NoFailureField;

impl TryFrom<FailureFile> for Failure {
    type Error = NoFailureField;
    fn try_from(f: FailureFile) -> std::result::Result<Self, NoFailureField> {
        let failure = match (f.failure, f.format) {
            (Some(failure), _) => failure,
            (None, 0 | 1) => CellFailure::Legacy { cause: f.cause },
            (None, _) => return Err(NoFailureField),
        };
        Ok(Failure {
            session: f.session,
            at: f.at,
            failure,
        })
    }
}

impl From<Failure> for FailureFile {
    fn from(f: Failure) -> Self {
        FailureFile {
            format: FAILURE_FORMAT,
            session: f.session,
            at: f.at,
            cause: f.failure.to_string(),
            failure: Some(f.failure),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde_json::Value;

    use super::*;
    use crate::plan;
    use crate::store::Store;

    fn temp_store(tag: &str) -> Store {
        let dir = std::env::temp_dir().join(format!("bp-failure-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        Store::open(dir).unwrap()
    }

    fn a_cell() -> plan::Cell {
        let ws = plan::fixtures::workspace();
        plan::expand(&ws, &ws.scenarios[0]).cells.remove(0)
    }

    /// One of each kind of failure, as apply makes them.
    fn every_failure() -> Vec<CellFailure> {
        let exit = crate::transport::Exit {
            code: Some(3),
            signal: None,
        };
        let killed = crate::transport::Exit {
            code: None,
            signal: Some("KILL".into()),
        };
        vec![
            CellFailure::step_failed("Measured run 2", "fio x\ny", &exit, "a\nb\nc\nd")
                .with_log("logs/failed-1-0002.log".into()),
            CellFailure::step_failed("setup", "true", &killed, ""),
            CellFailure::ParseFailed {
                step: "Warmup run 1".into(),
                message: "no time output".into(),
                log: Some("logs/failed-1-0001.log".into()),
            },
            CellFailure::Timeout {
                command: "sleep 9".into(),
                after_secs: 1.5,
            },
            CellFailure::Transport {
                message: "pi: cannot write".into(),
            },
            CellFailure::BoardLost {
                cause: "pi: connection lost: eof".into(),
            },
            CellFailure::Service {
                service: "nginx".into(),
                message: "stopping: gone".into(),
            },
            CellFailure::NotReady {
                service: "nginx".into(),
                after_secs: 10.0,
                command: "curl -f localhost".into(),
                exit: exit.clone(),
                stderr_tail: vec!["refused".to_string()].into(),
            },
            CellFailure::MissingCommands {
                side: "pi".into(),
                commands: vec!["fio".into()],
                packages: vec!["fio".into()],
                installed: true,
                manager: None,
            },
            CellFailure::MissingCommands {
                side: "pi".into(),
                commands: vec!["fio".into()],
                packages: vec!["fio".into()],
                installed: false,
                manager: Some(crate::model::PackageManager::Dnf),
            },
            CellFailure::PackageUnavailable {
                side: "pi".into(),
                manager: crate::model::PackageManager::Apt,
                packages: vec!["nope".into()],
            },
            CellFailure::NoPackageManager {
                side: "pi".into(),
                os: "Void Linux".into(),
                commands: vec!["fio".into()],
            },
            CellFailure::Refused {
                reason: "workdir /x: not empty".into(),
            },
            CellFailure::Storage {
                message: "mkfs failed".into(),
            },
            CellFailure::Template {
                message: "unknown variable".into(),
            },
            CellFailure::Store {
                message: "disk full".into(),
            },
            CellFailure::TooManyFlaggedRuns {
                taken: 13,
                valid: 0,
                min: 3,
                budget: 13,
            },
            CellFailure::Panicked {
                board: "pi".into(),
                message: "oops".into(),
            },
            CellFailure::Interrupted,
            CellFailure::Legacy {
                cause: "an old cause".into(),
            },
        ]
    }

    #[test]
    fn every_kind_of_failure_round_trips_through_failure_json() {
        let store = temp_store("failure-kinds");
        let cell = a_cell();
        let w = store.begin(&cell).unwrap();
        let path = store.cell_dir(&cell).join("failure.json");
        for failure in every_failure() {
            w.record_failure("s", 2.0, &failure).unwrap();
            let text = fs::read_to_string(&path).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["format"], FAILURE_FORMAT, "{text}");
            assert!(v["failure"]["kind"].is_string(), "{text}");
            // The text is for people; it is never read back.
            assert_eq!(v["cause"], failure.to_string(), "{text}");
            let read = store.read(&cell).unwrap().failure.unwrap();
            assert_eq!((read.session.as_str(), read.at), ("s", 2.0));
            assert_eq!(read.failure, failure, "{text}");
        }
        let _ = fs::remove_dir_all(store.root());
    }

    #[test]
    fn a_format_1_failure_with_a_plain_cause_loads_as_legacy() {
        let store = temp_store("failure-legacy");
        let cell = a_cell();
        store.begin(&cell).unwrap();
        let path = store.cell_dir(&cell).join("failure.json");
        fs::write(
            &path,
            br#"{"format": 1, "session": "s", "at": 1.0, "cause": "Measured run 1: `fio` ended with exit status 3; log: /r/logs/failed-1.log"}"#,
        )
        .unwrap();
        let failure = store.read(&cell).unwrap().failure.unwrap().failure;
        assert_eq!(
            failure,
            CellFailure::Legacy {
                cause: "Measured run 1: `fio` ended with exit status 3; log: /r/logs/failed-1.log"
                    .into()
            }
        );
        assert_eq!(
            failure.to_string(),
            "Measured run 1: `fio` ended with exit status 3"
        );
        let _ = fs::remove_dir_all(store.root());
    }

    #[test]
    fn a_newer_or_untyped_failure_json_is_refused() {
        let store = temp_store("failure-newer");
        let cell = a_cell();
        store.begin(&cell).unwrap();
        let path = store.cell_dir(&cell).join("failure.json");
        let newer = FAILURE_FORMAT + 1;
        fs::write(
            &path,
            format!(r#"{{"format": {newer}, "session": "s", "at": 1.0, "failure": {{"kind": "interrupted"}}}}"#),
        )
        .unwrap();
        let err = store.read(&cell).unwrap_err().to_string();
        assert!(err.contains(&format!("format {newer} is newer")), "{err}");
        fs::write(
            &path,
            br#"{"format": 2, "session": "s", "at": 1.0, "cause": "text only"}"#,
        )
        .unwrap();
        let err = store.read(&cell).unwrap_err().to_string();
        assert!(err.contains("no `failure` field"), "{err}");
        let _ = fs::remove_dir_all(store.root());
    }
}
