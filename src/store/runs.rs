//! Each apply as a run of the store (`results/runs/<session>.json`): its session id
//! (what every sample it took names), when it started, and the benchpipe that ran it,
//! so that a store's history can be told apply by apply (issue 42), merged stores too.

use serde::{Deserialize, Serialize};

use super::files::{read_json, sync_dir, to_json_bytes, write_atomic};
use super::{Store, io};
use crate::error::{Error, Result};

/// The most run records `runs` reads: years of nightly applies.
const MAX_RUNS: usize = 100_000;

/// `runs/<session>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub format: u32,
    /// `<start>-<pid>`: the `session` of every sample, failure and skip it wrote.
    pub session: String,
    /// Unix seconds.
    pub started: f64,
    /// The controller's benchpipe version.
    pub version: String,
}

/// Whether `s` is a session id as apply makes them (`<digits>-<digits>`): a file name.
pub(super) fn is_session(s: &str) -> bool {
    s.split_once('-').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.len() <= 20
            && b.len() <= 20
            && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
    })
}

impl Store {
    /// Records the apply `session` as a run; the caller holds the store's lock.
    pub fn record_run(&self, session: &str, started: f64) -> Result<()> {
        if !is_session(session) {
            return Err(Error::Store(format!(
                "a run named `{session}`: not a session id"
            )));
        }
        let dir = self.root.join("runs");
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let rec = RunRecord {
            format: super::FORMAT,
            session: session.to_string(),
            started,
            version: env!("CARGO_PKG_VERSION").to_string(),
        };
        write_atomic(&dir.join(format!("{session}.json")), &to_json_bytes(&rec)?)?;
        sync_dir(&dir)
    }

    /// The store's runs, oldest first (ties by session); none before the first apply
    /// that recorded one. A file there that is no run record is refused, named.
    pub fn runs(&self) -> Result<Vec<RunRecord>> {
        let dir = self.root.join("runs");
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&dir, e)),
        };
        let mut out = Vec::new();
        for e in entries.take(MAX_RUNS) {
            let e = e.map_err(io(&dir))?;
            let name = e.file_name();
            let Some(session) = name.to_str().and_then(|n| n.strip_suffix(".json")) else {
                continue;
            };
            if !is_session(session) {
                continue;
            }
            if let Some(r) = read_json::<RunRecord>(&e.path())? {
                out.push(r);
            }
        }
        out.sort_by(|a, b| {
            a.started
                .total_cmp(&b.started)
                .then_with(|| a.session.cmp(&b.session))
        });
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::is_session;

    #[test]
    fn only_apply_s_session_ids_name_a_run() {
        assert!(is_session("1796709600-812"));
        for bad in ["", "-", "1-", "-1", "../x-1", "1-2-3", "a-1", "1.5-2"] {
            assert!(!is_session(bad), "{bad}");
        }
    }
}
