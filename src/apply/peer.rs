//! A board's peers (a client on another board) and the boards a walk holds to itself.
//!
//! A peer's session is wrapped so that its loss is the loss of the cells that use it,
//! never of the board the walk is for: the walk goes on with its other cells, and
//! cleanup skips only the lost peer's steps.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use super::StepStatus;
use super::resources::{ResourceGuard, Resources};
use super::worker::Worker;
use crate::failure::CellFailure;
use crate::model::BoardName;
use crate::transport::{Exit, Transport, TransportError};

/// A peer board's session. An error that means the connection is gone comes out as
/// `Other` ("the peer board is lost: ..."), a failure of the cell at hand, and marks
/// the session lost.
pub(super) struct PeerSession {
    inner: Box<dyn Transport>,
    /// Why the connection is gone, once it is.
    pub(super) lost: Option<String>,
}

impl PeerSession {
    pub(super) fn new(inner: Box<dyn Transport>) -> Self {
        PeerSession { inner, lost: None }
    }

    fn seen<T>(&mut self, r: Result<T, TransportError>) -> Result<T, TransportError> {
        match r {
            Err(e) if ends_connection(&e) => {
                let reason = format!("the peer board is lost: {e}");
                self.lost.get_or_insert_with(|| reason.clone());
                Err(TransportError::Other {
                    target: self.inner.target(),
                    reason,
                })
            }
            r => r,
        }
    }
}

/// Whether a transport error means the session cannot be used again.
pub(super) fn ends_connection(e: &TransportError) -> bool {
    matches!(
        e,
        TransportError::Unreachable { .. }
            | TransportError::Auth { .. }
            | TransportError::HostKey { .. }
            | TransportError::Become { .. }
            | TransportError::Lost { .. }
    )
}

impl Transport for PeerSession {
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
        let r = self.inner.exec(command, timeout, stdout, stderr);
        self.seen(r)
    }

    fn exec_input(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdin: &mut dyn Read,
        stdout: &mut dyn Write,
        stderr: &mut dyn Write,
    ) -> Result<Exit, TransportError> {
        let r = self
            .inner
            .exec_input(command, timeout, stdin, stdout, stderr);
        self.seen(r)
    }

    fn upload(&mut self, local: &Path, remote: &str) -> Result<(), TransportError> {
        let r = self.inner.upload(local, remote);
        self.seen(r)
    }

    fn download(&mut self, remote: &str, local: &Path) -> Result<(), TransportError> {
        let r = self.inner.download(remote, local);
        self.seen(r)
    }
}

/// The peers a walk has connected, by name.
pub(super) type Peers = BTreeMap<BoardName, PeerSession>;

impl Worker<'_> {
    /// Connects to a peer board and claims this board's directory in its workdir. A
    /// failure is the failure of the cells that use the peer, not the board's loss.
    pub(super) fn connect_peer(&self, name: &BoardName) -> Result<PeerSession, CellFailure> {
        let Some(peer) = self.boards.get(name) else {
            return Err(CellFailure::Refused {
                reason: format!("the peer board {name} is not in boards/"),
            });
        };
        self.phase(None, format!("connect peer {name}"));
        let lost = |e: TransportError| CellFailure::Transport {
            message: format!("the peer board {name}: {e}"),
        };
        let t = self.connector.board(peer).map_err(lost)?;
        let mut session = PeerSession::new(t);
        crate::transport::workdir::claim(&mut session, &peer.workdir).map_err(|e| {
            CellFailure::Refused {
                reason: e.to_string(),
            }
        })?;
        super::cleanup::take_board(&mut session, name, &peer.workdir)?;
        // This board's directory there, for its steps' `peer_dir`.
        let dir = self.peer_dir(peer);
        let made = session.run(
            &format!("mkdir -p -m 700 -- {}", crate::transport::quote::sh(&dir)),
            Some(Duration::from_secs(30)),
        );
        match made {
            Ok(out) if out.exit.success() => Ok(session),
            Ok(out) => Err(CellFailure::step_failed(
                format!("create {dir} on {name}"),
                "mkdir -p",
                &out.exit,
                &out.stderr_str(),
            )),
            Err(e) => Err(CellFailure::Transport {
                message: format!("the peer board {name}: {e}"),
            }),
        }
    }

    /// A `Hold` step: waits until no other walk holds any of `boards`, then holds them
    /// all in `held` until the walk drops it at its end. An interrupt ends the wait,
    /// holding nothing.
    pub(super) fn hold_step<'h>(
        &'h self,
        boards: &[BoardName],
        held: &mut Option<ResourceGuard<'h>>,
        interrupted: &mut bool,
    ) -> StepStatus {
        let names: Vec<String> = boards.iter().map(ToString::to_string).collect();
        self.phase(None, format!("waiting to hold {}", names.join(", ")));
        if let Some(g) = self.held.acquire_unless(&names, self.stop) {
            *held = Some(g);
            StepStatus::Ran
        } else {
            *interrupted = true;
            StepStatus::Skipped {
                reason: "interrupted".into(),
            }
        }
    }

    /// Stops what this board's cells left running on its peers (a killed apply).
    pub(super) fn stop_peer_leftovers(&self, peers: &mut Peers) {
        for (name, session) in peers.iter_mut() {
            let Some(peer) = self.boards.get(name) else {
                continue;
            };
            if let Err(e) = session.stop_all_services(&self.peer_dir(peer)) {
                self.phase(
                    None,
                    format!("could not stop leftover services on {name}: {e}"),
                );
            }
        }
    }
}

/// The boards held by walks: a resource per board name, apart from the recipes'
/// `exclusive` names so a recipe cannot name a board's.
pub(super) type BoardHolds = Resources;
