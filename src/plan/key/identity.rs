//! What of a board, a storage, a link and a cluster goes into a cell's key: each one's
//! identity (name, model, kind), never an address; and each read back from `cell.json`
//! only in exactly the form it is written.

use serde_json::Value;

use super::Input;
use super::recipe::strings;
use crate::model::{Board, Cluster, ClusterStep, EndpointAt, Network, Storage, StorageRole};

/// What of a board goes into its cells' keys. A plan makes it from the board file; a
/// report reads it back from `cell.json` when the board file is gone (`plan::stored`).
#[derive(Clone, Debug, PartialEq)]
pub struct BoardInputs {
    pub name: String,
    pub model: String,
    /// The `uname -m` words the board's CPU runs, sorted: one is written as the string
    /// it was before a board could declare several, so such boards keep their keys.
    pub arch: Vec<String>,
}

/// What of a storage goes into its cells' keys (never its device or path: addresses).
#[derive(Clone, Debug, PartialEq)]
pub struct StorageInputs {
    pub name: String,
    pub model: Option<String>,
    pub role: StorageRole,
    /// Written only when declared, so the keys of storage without `uas` stay what they
    /// were.
    pub uas: Option<bool>,
}

impl BoardInputs {
    pub fn of(board: &Board) -> BoardInputs {
        BoardInputs {
            name: board.name.to_string(),
            model: board.model.clone(),
            arch: canonical_arch(&board.arch),
        }
    }

    /// Read back from `cell.json`'s `inputs.board`: None unless it has exactly the
    /// form `input` writes.
    pub fn from_json(v: &Value) -> Option<BoardInputs> {
        let o = v.as_object()?;
        Some(BoardInputs {
            name: o.get("name")?.as_str()?.to_string(),
            model: o.get("model")?.as_str()?.to_string(),
            arch: match o.get("arch")? {
                Value::Null => Vec::new(),
                Value::String(s) => vec![s.clone()],
                Value::Array(v) if v.len() > 1 => {
                    let words: Option<Vec<String>> =
                        v.iter().map(|w| w.as_str().map(str::to_string)).collect();
                    let words = words?;
                    // Only the form `input` writes: sorted, no word twice.
                    if canonical_arch(&words) != words {
                        return None;
                    }
                    words
                }
                _ => return None,
            },
        })
    }

    pub(super) fn input(&self) -> Input {
        let arch = match self.arch.as_slice() {
            [] => Input::from(None::<&str>),
            [one] => Input::from(one),
            many => strings(many),
        };
        Input::record([
            ("name", Input::from(&self.name)),
            ("model", Input::from(&self.model)),
            ("arch", arch),
        ])
    }
}

/// A board's `arch` as its key holds it: sorted, each word once, so that the order the
/// file lists them in is no input.
pub(super) fn canonical_arch(arch: &[String]) -> Vec<String> {
    let mut v = arch.to_vec();
    v.sort();
    v.dedup();
    v
}

impl StorageInputs {
    pub fn of(s: &Storage) -> StorageInputs {
        StorageInputs {
            name: s.name.to_string(),
            model: s.model.clone(),
            role: s.role,
            uas: s.uas.as_ref().map(|u| u.enabled),
        }
    }

    /// Read back from `cell.json`'s `inputs.storage`: `Some(None)` for a cell without
    /// storage, None unless it has exactly the form `input` writes.
    pub fn from_json(v: &Value) -> Option<Option<StorageInputs>> {
        if v.is_null() {
            return Some(None);
        }
        let o = v.as_object()?;
        let role = match o.get("role")?.as_str()? {
            "boot" => StorageRole::Boot,
            "scratch" => StorageRole::Scratch,
            _ => return None,
        };
        let uas = match o.get("uas") {
            None => None,
            Some(u) => Some(u.as_bool()?),
        };
        Some(Some(StorageInputs {
            name: o.get("name")?.as_str()?.to_string(),
            model: optional_str(o.get("model")?)?,
            role,
            uas,
        }))
    }

    pub(super) fn input(&self) -> Input {
        let mut fields = vec![
            ("name", Input::from(&self.name)),
            ("model", Input::from(self.model.as_ref())),
            (
                "role",
                Input::from(match self.role {
                    StorageRole::Boot => "boot",
                    StorageRole::Scratch => "scratch",
                }),
            ),
        ];
        // The driver changes the numbers.
        if let Some(u) = self.uas {
            fields.push(("uas", Input::Bool(u)));
        }
        Input::record(fields)
    }
}

/// What of a link goes into its cells' keys: its name, kind and model. The address and
/// the board-side interface name are addresses (DHCP, `eth0` renamed `end0`) that may
/// change while the link does not.
#[derive(Clone, Debug, PartialEq)]
pub struct NetworkInputs {
    pub name: String,
    pub kind: Option<String>,
    pub model: Option<String>,
}

impl NetworkInputs {
    pub fn of(n: &Network) -> NetworkInputs {
        NetworkInputs {
            name: n.name.to_string(),
            kind: n.kind.map(|k| k.name().to_string()),
            model: n.model.clone(),
        }
    }

    /// Read back from `cell.json`'s `inputs.network`: `Some(None)` for a cell without a
    /// network, None unless it has exactly the form `input` writes.
    pub fn from_json(v: &Value) -> Option<Option<NetworkInputs>> {
        if v.is_null() {
            return Some(None);
        }
        let o = v.as_object()?;
        Some(Some(NetworkInputs {
            name: o.get("name")?.as_str()?.to_string(),
            kind: optional_str(o.get("kind")?)?,
            model: optional_str(o.get("model")?)?,
        }))
    }

    pub(super) fn input(&self) -> Input {
        Input::record([
            ("name", Input::from(&self.name)),
            ("kind", Input::from(self.kind.as_ref())),
            ("model", Input::from(self.model.as_ref())),
        ])
    }
}

/// A JSON string or null, as `Input::from(Option<&String>)` records it.
#[expect(
    clippy::option_option,
    reason = "None: neither a string nor null (the record is refused); Some(None): null"
)]
fn optional_str(v: &Value) -> Option<Option<String>> {
    match v {
        Value::Null => Some(None),
        Value::String(s) => Some(Some(s.clone())),
        _ => None,
    }
}

/// A board's identity: its name, model and architecture (never its address).
/// What the system under test is, beyond one board: a cluster and its members, and
/// the board a cell's peer steps run on, each board by its identity (a board file's, or
/// as `cell.json` kept it when the file is gone).
#[derive(Clone, Copy, Default)]
pub struct Others<'a> {
    /// The cluster, with its members' identities in its order.
    pub cluster: Option<(&'a Cluster, &'a [BoardInputs])>,
    pub peer: Option<&'a BoardInputs>,
}

/// The identities of a cluster's members as `cell.json`'s `inputs.cluster` keeps them:
/// None unless each has exactly the form `BoardInputs` writes.
pub fn stored_members(cluster: &Value) -> Option<Vec<BoardInputs>> {
    cluster
        .get("members")?
        .as_array()?
        .iter()
        .map(BoardInputs::from_json)
        .collect()
}

/// A cluster's identity: its name, its members' identities, the control and endpoint
/// members, and its deploy and teardown text; no host, address or port.
pub(super) fn cluster_identity(c: &Cluster, members: &[BoardInputs]) -> Input {
    fn steps(v: &[ClusterStep]) -> Input {
        Input::List(
            v.iter()
                .map(|s| {
                    Input::record([
                        ("on", Input::from(s.on.name())),
                        ("command", Input::from(&s.command)),
                    ])
                })
                .collect(),
        )
    }
    let endpoint = match &c.endpoint.at {
        EndpointAt::Board(b) => Some(b.as_str()),
        EndpointAt::Host(_) => None,
    };
    Input::record([
        ("name", Input::from(c.name.as_str())),
        (
            "members",
            Input::List(members.iter().map(BoardInputs::input).collect()),
        ),
        ("control", Input::from(c.control.as_str())),
        ("endpoint_member", Input::from(endpoint)),
        ("deploy", steps(&c.deploy)),
        ("teardown", steps(&c.teardown)),
    ])
}
