//! Cell keys: a sha256 over a canonical encoding of everything that can change a cell's
//! numbers, and nothing else.
//!
//! The encoding is written by hand (`canonical::CanonicalWriter`), in the spirit of a
//! Nix derivation's ATerm: typed values, records whose fields come in the order this
//! module lists them, maps in byte order of their keys, length-prefixed strings, floats
//! as their IEEE-754 bits and durations as integer nanoseconds. No serde feature, map
//! type or float formatter is involved, so nothing outside these two files can change
//! a key; in particular serde_json's `preserve_order`, which any dependency can switch
//! on through cargo's feature unification, reorders JSON objects but not keys. The same `Input`
//! tree renders `cell.json`'s `inputs`, so what is recorded is what was hashed.
//! Changing what goes in is a deliberate act: bump `ENCODING` and update the golden
//! tests, because every stored cell gets a new key. docs/FORMAT.md ("Cell keys")
//! describes the bytes.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::canonical::HEX;
pub use super::canonical::{CanonicalWriter, CellInputs, Input, canonical_bytes};

use crate::model::{
    Board, BoardName, Cluster, ClusterStep, Cooldown, EndpointAt, Filesystem, Image, MemberMetric,
    Method, Network, ParamValue, Recipe, Side, Step, Storage, StorageRole,
};

/// The domain prefix of the hashed bytes; part of the key's identity.
///
/// v1: compact JSON through serde_json with sorted object keys; `idle`, `services` and
/// `parse_regex` were added later without a bump, present only when set.
/// v2: `CanonicalWriter`; every field always present.
/// v3: `network` (the link a networked cell runs over: name, kind, model), after
/// `filesystem`; the test's `setup_after_services` and `before_run` steps, after
/// `setup`; `cluster` and `peer` after `method`; the run's `per_member`; each metric's
/// `per_member` and `sum_of`; sides `members` and `peer`.
pub const ENCODING: &str = "benchpipe-cell-v3";

/// A cell's identity: 32 hex digits (128 bits) of the sha256 of its canonical inputs.
///
/// The digits are held inline, not on the heap: a report looks up and compares every
/// cell's key in maps of ten thousand, and an inline key is compared without following
/// a pointer to another cache line, and copied without an allocation.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellKey([u8; KEY_DIGITS]);

/// How many hex digits a key has.
const KEY_DIGITS: usize = 32;

impl CellKey {
    pub fn as_str(&self) -> &str {
        // Always valid: a key is only made of hex digits (`parse`, `of`).
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// Parses a key as found in a store directory name; None unless 32 lowercase hex digits.
    pub fn parse(s: &str) -> Option<CellKey> {
        let digits: [u8; KEY_DIGITS] = s.as_bytes().try_into().ok()?;
        digits
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            .then_some(CellKey(digits))
    }

    /// Hashes canonical inputs: sha256(`ENCODING`, a zero byte, the canonical bytes).
    pub fn of(inputs: &Input) -> CellKey {
        let mut h = Sha256::new();
        h.update(ENCODING.as_bytes());
        h.update([0u8]);
        h.update(canonical_bytes(inputs));
        let digest = h.finalize();
        let mut digits = [0u8; KEY_DIGITS];
        for (pair, b) in digits.chunks_exact_mut(2).zip(&digest[..KEY_DIGITS / 2]) {
            pair[0] = HEX[usize::from(b >> 4)];
            pair[1] = HEX[usize::from(b & 15)];
        }
        CellKey(digits)
    }
}

impl fmt::Display for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// As the string it is, as when a key was a `String`.
impl fmt::Debug for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CellKey").field(&self.as_str()).finish()
    }
}

/// A key is written as its digits.
impl Serialize for CellKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A key is read from its digits, and only from 32 lowercase hex digits.
impl<'de> Deserialize<'de> for CellKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<CellKey, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        CellKey::parse(&text).ok_or_else(|| {
            serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&text),
                &"a cell key: 32 lowercase hex digits",
            )
        })
    }
}

fn param(v: &ParamValue) -> Input {
    match v {
        ParamValue::Int(i) => Input::Int(*i),
        ParamValue::Float(f) => Input::Float(*f),
        ParamValue::Bool(b) => Input::Bool(*b),
        ParamValue::Str(s) => Input::from(s),
    }
}

fn side(s: Side) -> Input {
    Input::from(s.name())
}

fn step(s: &Step) -> Input {
    // The timeout is left out: it bounds a run, it does not change its numbers.
    Input::record([("on", side(s.on)), ("command", Input::from(&s.command))])
}

fn strings(v: &[String]) -> Input {
    Input::List(v.iter().map(Input::from).collect())
}

/// The parsed metrics in name order, whatever order the recipe declares them in.
fn parsed_by_name(recipe: &Recipe) -> Vec<&crate::model::MetricSpec> {
    let mut v: Vec<_> = recipe.parsed_metrics().collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

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

    fn input(&self) -> Input {
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
fn canonical_arch(arch: &[String]) -> Vec<String> {
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

    fn input(&self) -> Input {
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

    fn input(&self) -> Input {
        Input::record([
            ("name", Input::from(&self.name)),
            ("kind", Input::from(self.kind.as_ref())),
            ("model", Input::from(self.model.as_ref())),
        ])
    }
}

/// A JSON string or null, as `Input::from(Option<&String>)` records it.
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
fn cluster_identity(c: &Cluster, members: &[BoardInputs]) -> Input {
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

/// The inputs of one cell, as hashed and as `cell.json` records them. Addresses,
/// credentials, run counts, comments, file names and key order are deliberately absent.
// One argument per input of the key, in the key's order: a struct would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn cell_inputs(
    image: &Image,
    board: &Board,
    storage: Option<&Storage>,
    filesystem: Option<&Filesystem>,
    network: Option<&Network>,
    recipe: &Recipe,
    params: &BTreeMap<String, ParamValue>,
    method: &Method,
) -> Input {
    cell_inputs_of(
        image,
        &BoardInputs::of(board),
        storage.map(StorageInputs::of).as_ref(),
        filesystem,
        network.map(NetworkInputs::of).as_ref(),
        recipe,
        params,
        method,
    )
}

/// `cell_inputs`, given what of the board and storage goes in.
#[allow(clippy::too_many_arguments)]
pub fn cell_inputs_of(
    image: &Image,
    board: &BoardInputs,
    storage: Option<&StorageInputs>,
    filesystem: Option<&Filesystem>,
    network: Option<&NetworkInputs>,
    recipe: &Recipe,
    params: &BTreeMap<String, ParamValue>,
    method: &Method,
) -> Input {
    inputs_of(
        image,
        Some(board),
        storage,
        filesystem,
        network,
        recipe,
        params,
        method,
        Others::default(),
    )
}

/// `cell_inputs` for any system under test: a board (`board`), or a cluster (`others`,
/// with no board); and a peer board when the recipe has one.
#[allow(clippy::too_many_arguments)]
pub fn inputs_of(
    image: &Image,
    board: Option<&BoardInputs>,
    storage: Option<&StorageInputs>,
    filesystem: Option<&Filesystem>,
    network: Option<&NetworkInputs>,
    recipe: &Recipe,
    params: &BTreeMap<String, ParamValue>,
    method: &Method,
    others: Others<'_>,
) -> Input {
    let parts = Parts {
        test: test_input(recipe, params),
        method: method_input(method),
    };
    inputs_with(image, board, storage, filesystem, network, &parts, others)
}

/// The parts of a cell's inputs that every cell of one test in one scenario has: a plan
/// makes them once per test, shared (`Input::shared`), rather than once per cell.
#[derive(Clone, Debug)]
pub struct Parts {
    pub test: Input,
    pub method: Input,
}

impl Parts {
    /// The parts of `recipe`'s cells with these parameters and method, shared.
    pub fn shared(
        recipe: &Recipe,
        params: &BTreeMap<String, ParamValue>,
        method: &Method,
    ) -> Parts {
        Parts {
            test: Input::shared(test_input(recipe, params)),
            method: Input::shared(method_input(method)),
        }
    }
}

/// The method's part of a cell's inputs.
fn method_input(method: &Method) -> Input {
    let cooldown = match &method.cooldown {
        Cooldown::None => Input::from("none"),
        Cooldown::Fixed { duration } => Input::record([("fixed_s", Input::Secs(*duration))]),
        Cooldown::UntilBelow {
            celsius,
            above_idle,
            max,
        } => Input::record([
            (
                if *above_idle {
                    "until_above_idle_c"
                } else {
                    "until_below_c"
                },
                Input::Float(*celsius),
            ),
            ("max_s", Input::Secs(*max)),
        ]),
    };
    let idle = method.idle.as_ref().map(|gate| {
        Input::record([
            ("load_below", Input::Float(gate.load_below)),
            ("hold_s", Input::Secs(gate.hold)),
            ("max_s", Input::Secs(gate.max)),
        ])
    });
    Input::record([
        ("cooldown", cooldown),
        ("idle", Input::from(idle)),
        ("warmup_runs", Input::from(method.warmup.runs)),
        ("warmup_s", Input::from(method.warmup.duration)),
    ])
}

/// The test's part of a cell's inputs: the recipe with the cell's parameters.
fn test_input(recipe: &Recipe, params: &BTreeMap<String, ParamValue>) -> Input {
    Input::record([
        ("name", Input::from(recipe.name.as_str())),
        (
            "setup",
            Input::List(recipe.setup.iter().map(step).collect()),
        ),
        // Steps that run once the services are up: the same command before or after
        // them can mean another setup.
        (
            "setup_after_services",
            Input::List(recipe.setup_after_services.iter().map(step).collect()),
        ),
        (
            "before_run",
            Input::List(recipe.before_run.iter().map(step).collect()),
        ),
        (
            "run",
            Input::record([
                ("on", side(recipe.run.on)),
                ("command", Input::from(&recipe.run.command)),
                ("per_member", Input::Bool(recipe.run_per_member)),
            ]),
        ),
        (
            "teardown",
            Input::List(recipe.teardown.iter().map(step).collect()),
        ),
        (
            "params",
            // A step's input file is named by its path, an address: left out.
            Input::Map(
                params
                    .iter()
                    .filter(|(k, _)| !recipe.is_input_param(k))
                    .map(|(k, v)| (k.clone(), param(v)))
                    .collect(),
            ),
        ),
        (
            "parser",
            Input::record([
                ("name", Input::from(recipe.parser.name())),
                ("version", Input::from(recipe.parser.version())),
            ]),
        ),
        // The regex parser's patterns decide what is measured.
        (
            "parse_regex",
            Input::from(recipe.parser.options.regex.as_ref().map(|r| {
                Input::record([
                    ("patterns", strings(&r.patterns)),
                    ("stream", Input::from(r.stream.name())),
                    ("decimal_comma", Input::Bool(r.decimal_comma)),
                ])
            })),
        ),
        (
            "metrics",
            Input::List(
                // Derived metrics are computed from stored values: they change no
                // measurement, so a recipe that adds one keeps its cells. By name: the
                // order a recipe declares its metrics in is the order of the report's
                // columns, which changes no number, so no key.
                parsed_by_name(recipe)
                    .into_iter()
                    .map(|m| {
                        Input::record([
                            ("name", Input::from(&m.name)),
                            ("from", Input::from(&m.from)),
                            ("scale", Input::Float(m.scale)),
                            ("per_member", Input::Bool(m.member == MemberMetric::Each)),
                            (
                                "sum_of",
                                Input::from(match &m.member {
                                    MemberMetric::SumOf(of) => Some(of.as_str()),
                                    _ => None,
                                }),
                            ),
                        ])
                    })
                    .collect(),
            ),
        ),
        (
            "services",
            Input::List(
                recipe
                    .services
                    .iter()
                    .map(|s| {
                        Input::record([
                            ("name", Input::from(&s.name)),
                            ("on", side(s.on)),
                            ("command", Input::from(&s.command)),
                        ])
                    })
                    .collect(),
            ),
        ),
    ])
}

/// The image: its identity (`sha256:...` of the declared file, or `installed:NAME`); for
/// a prepared image (`[images.NAME.firstboot]`), a record of that identity as `base` and
/// the preparation's part that can change numbers (`Firstboot::key_input`). An image
/// without preparation is the plain identity, so its cells keep their keys.
pub fn image_input(image: &Image) -> Input {
    let identity = Input::from(image.source.identity(&image.name));
    match &image.firstboot {
        None => identity,
        Some(f) => Input::record([("base", identity), ("firstboot", f.key_input())]),
    }
}

/// `inputs_of`, with the test's and method's parts made.
pub fn inputs_with(
    image: &Image,
    board: Option<&BoardInputs>,
    storage: Option<&StorageInputs>,
    filesystem: Option<&Filesystem>,
    network: Option<&NetworkInputs>,
    parts: &Parts,
    others: Others<'_>,
) -> Input {
    Input::record([
        ("image", image_input(image)),
        ("board", Input::from(board.map(BoardInputs::input))),
        // The medium is its name and model; the device path is an address (a loop
        // device number, a by-id link) that may change while the medium does not.
        ("storage", storage.map_or(Input::None, StorageInputs::input)),
        (
            "filesystem",
            Input::from(filesystem.map(|f| {
                Input::record([
                    ("kind", Input::from(&f.kind)),
                    ("mkfs_options", strings(&f.mkfs_options)),
                    ("mount_options", strings(&f.mount_options)),
                ])
            })),
        ),
        // The link is its name, kind and model (`NetworkInputs`), never its address.
        ("network", network.map_or(Input::None, NetworkInputs::input)),
        ("test", parts.test.clone()),
        ("method", parts.method.clone()),
        (
            "cluster",
            Input::from(others.cluster.map(|(c, m)| cluster_identity(c, m))),
        ),
        ("peer", Input::from(others.peer.map(BoardInputs::input))),
    ])
}

/// The members of `cluster` among `boards`, in its order (config checked they exist).
pub fn members_of<'a>(cluster: &Cluster, boards: &'a BTreeMap<BoardName, Board>) -> Vec<&'a Board> {
    cluster
        .members
        .iter()
        .filter_map(|m| boards.get(m))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::Value;

    use super::*;
    use crate::plan::fixtures;

    fn doc() -> Input {
        Input::record([
            ("b", Input::from("x")),
            (
                "a",
                Input::List(vec![Input::Int(1), Input::Float(2.5), Input::Int(-3)]),
            ),
            (
                "m",
                Input::Map(BTreeMap::from([
                    ("z".to_string(), Input::Bool(true)),
                    ("k".to_string(), Input::None),
                ])),
            ),
            ("d", Input::Secs(Duration::from_millis(1500))),
        ])
    }

    #[test]
    fn the_key_is_sha256_of_the_canonical_bytes_behind_the_encoding_prefix() {
        // Expected values computed outside the project:
        // python3 -c "import hashlib; print(hashlib.sha256(b'benchpipe-cell-v3\x00'
        //   + b'r4:s1:bs1:xs1:al3:i1;f4004000000000000i-3;s1:mm2:s1:kns1:zb1'
        //   + b's1:dd1500000000;').hexdigest()[:32])"
        // Record fields keep their written order (b before a); map keys are sorted.
        assert_eq!(
            String::from_utf8(canonical_bytes(&doc())).unwrap(),
            "r4:s1:bs1:xs1:al3:i1;f4004000000000000i-3;s1:mm2:s1:kns1:zb1s1:dd1500000000;"
        );
        assert_eq!(
            CellKey::of(&doc()).as_str(),
            "7506872a4cccb6ad1730d794c0969102"
        );
    }

    #[test]
    fn keys_do_not_depend_on_insertion_order_or_serde_json_object_order() {
        // serde_json with `preserve_order` keeps objects in insertion order; the key
        // must not. Parameters inserted in opposite orders, and the inputs' JSON with
        // its objects reversed, give the same bytes.
        let ws = fixtures::workspace();
        let scenario = &ws.scenarios[0];
        let board = &ws.boards[&"pi-1".into()];
        let recipe = &ws.recipes[&"disk-4k".into()];
        let image = &scenario.images[&"installed".into()];
        let names = ["size", "bs", "jobs", "direct", "zeta", "alpha"];
        let value = |i: usize| match i % 4 {
            0 => ParamValue::Int(i as i64),
            1 => ParamValue::Float(i as f64 / 3.0),
            2 => ParamValue::Bool(true),
            _ => ParamValue::Str(format!("v{i}")),
        };
        let mut forward = BTreeMap::new();
        for (i, n) in names.iter().enumerate() {
            forward.insert(n.to_string(), value(i));
        }
        let mut backward = BTreeMap::new();
        for (i, n) in names.iter().enumerate().rev() {
            backward.insert(n.to_string(), value(i));
        }
        let inputs = |params: &BTreeMap<String, ParamValue>| {
            cell_inputs(
                image,
                board,
                board.storage.first(),
                None,
                None,
                recipe,
                params,
                &scenario.method,
            )
        };
        let a = inputs(&forward);
        let b = inputs(&backward);
        assert_eq!(canonical_bytes(&a), canonical_bytes(&b));
        assert_eq!(CellKey::of(&a), CellKey::of(&b));

        // The recorded JSON may come out in any object order (reversed here, as
        // `preserve_order` would keep a reversed insertion); it is not what is hashed.
        fn reversed(v: &Input) -> Input {
            match v {
                Input::Record(f) => {
                    Input::Record(f.iter().rev().map(|(k, v)| (*k, reversed(v))).collect())
                }
                Input::List(l) => Input::List(l.iter().map(reversed).collect()),
                other => other.clone(),
            }
        }
        assert_eq!(
            a.to_json(),
            reversed(&a).to_json(),
            "the JSON form is the same document"
        );
        assert_ne!(
            CellKey::of(&a),
            CellKey::of(&reversed(&a)),
            "field order is fixed by this module and part of the encoding"
        );

        // Map keys are written in byte order, whatever the insertion order.
        let bytes = String::from_utf8(canonical_bytes(&a)).unwrap();
        let at = |name: &str| bytes.find(&format!("s{}:{name}", name.len())).unwrap();
        let mut sorted = names;
        sorted.sort();
        for w in sorted.windows(2) {
            assert!(at(w[0]) < at(w[1]), "{} before {}", w[0], w[1]);
        }
    }

    /// A step's input file is named by a path on the controller, an address: moving the
    /// file changes no key; its digest, another parameter, does.
    #[test]
    fn a_step_inputs_path_is_not_an_input_but_its_digest_is() {
        let ws = fixtures::workspace();
        let scenario = &ws.scenarios[0];
        let board = &ws.boards[&"pi-1".into()];
        let mut recipe = ws.recipes[&"xz".into()].clone();
        recipe.setup = vec![crate::model::Step {
            on: crate::model::Side::Board,
            command: "cat > f".into(),
            timeout: None,
            input: Some(crate::model::StepInput::Param("corpus".into())),
        }];
        let key = |corpus: &str, digest: &str| {
            let mut params = recipe.params.clone();
            params.insert("corpus".into(), ParamValue::Str(corpus.into()));
            params.insert("digest".into(), ParamValue::Str(digest.into()));
            CellKey::of(&cell_inputs(
                &scenario.images[&"installed".into()],
                board,
                None,
                None,
                None,
                &recipe,
                &params,
                &scenario.method,
            ))
        };
        assert_eq!(key("a/corpus.txt", "ab"), key("/elsewhere/c.txt", "ab"));
        assert_ne!(key("a/corpus.txt", "ab"), key("a/corpus.txt", "cd"));
    }

    #[test]
    fn a_regex_parsers_patterns_stream_and_comma_are_inputs() {
        let ws = fixtures::workspace();
        let scenario = &ws.scenarios[0];
        let board = &ws.boards[&"pi-1".into()];
        let mut recipe = ws.recipes[&"xz".into()].clone();
        recipe.parser = crate::model::ParserSpec::named("regex").unwrap();
        let mut key = |regex: crate::model::RegexOptions| {
            recipe.parser.options.regex = Some(regex);
            CellKey::of(&cell_inputs(
                &scenario.images[&"installed".into()],
                board,
                None,
                None,
                None,
                &recipe,
                &recipe.params,
                &scenario.method,
            ))
        };
        let base = crate::model::RegexOptions {
            patterns: vec![r"real (?<real>\d+)".into()],
            stream: crate::model::Stream::Stdout,
            decimal_comma: false,
        };
        let k0 = key(base.clone());
        assert_eq!(key(base.clone()), k0);
        let mut other = base.clone();
        other.patterns[0] = r"user (?<real>\d+)".into();
        assert_ne!(key(other), k0, "patterns");
        let mut other = base.clone();
        other.stream = crate::model::Stream::Stderr;
        assert_ne!(key(other), k0, "stream");
        let mut other = base;
        other.decimal_comma = true;
        assert_ne!(key(other), k0, "decimal comma");
    }

    #[test]
    fn the_recorded_json_keeps_the_shapes_of_cell_json() {
        let ws = fixtures::workspace();
        let scenario = &ws.scenarios[0];
        let board = &ws.boards[&"pi-1".into()];
        let doc = cell_inputs(
            &scenario.images[&"installed".into()],
            board,
            board.storage.first(),
            None,
            None,
            &ws.recipes[&"xz".into()],
            &BTreeMap::from([("level".into(), ParamValue::Int(6))]),
            &scenario.method,
        )
        .to_json();
        assert_eq!(doc["image"], "installed:installed");
        assert_eq!(doc["board"]["name"], "pi-1");
        assert_eq!(doc["storage"]["role"], "boot");
        assert_eq!(doc["filesystem"], Value::Null);
        assert_eq!(doc["test"]["params"]["level"], 6);
        assert_eq!(doc["method"]["idle"], Value::Null);
        assert_eq!(doc["test"]["services"], serde_json::json!([]));
    }

    /// Every JSON pointer into a cell's recorded inputs, with the value there.
    fn pointers<'v>(at: String, v: &'v Value, out: &mut Vec<(String, &'v Value)>) {
        match v {
            Value::Object(m) => m
                .iter()
                .for_each(|(k, x)| pointers(format!("{at}/{k}"), x, out)),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| pointers(format!("{at}/{i}"), x, out)),
            _ => {}
        }
        out.push((at, v));
    }

    #[test]
    fn a_cells_inputs_read_the_same_through_the_tree_as_through_their_json() {
        let ws = fixtures::workspace();
        let plan = crate::plan::expand(&ws, &ws.scenarios[0]);
        assert!(!plan.cells.is_empty());
        let mut seen_text = 0;
        for cell in &plan.cells {
            // The tree is asked first: a lookup must not need the JSON form made.
            let json = cell.inputs.tree().to_json();
            let mut all = Vec::new();
            pointers(String::new(), &json, &mut all);
            for (p, v) in all {
                assert!(cell.inputs.pointer(&p).is_some(), "{p} is in the tree");
                assert_eq!(cell.inputs.text(&p), v.as_str(), "text at {p}");
                let texts = v
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect());
                assert_eq!(cell.inputs.texts(&p), texts, "texts at {p}");
                seen_text += usize::from(v.is_string());
            }
            for absent in [
                "/nope",
                "/board/nope",
                "/test/metrics/99",
                "board",
                "/image/x",
            ] {
                assert_eq!(cell.inputs.pointer(absent), None, "{absent}");
            }
            assert_eq!(cell.inputs.json(), &json);
        }
        assert!(seen_text > 0);
    }

    /// A board's `arch`: one word is written as the string it always was (its cells
    /// keep their keys); several are a list in sorted order, so the file's order is no
    /// input; and each form reads back from `cell.json` as it was written.
    #[test]
    fn a_boards_arch_is_a_string_for_one_word_and_a_sorted_list_for_several() {
        let ws = fixtures::workspace();
        let board = ws.boards[&"pi-1".into()].clone();
        let written = |b: &Board| {
            let inputs = BoardInputs::of(b);
            let text = String::from_utf8(canonical_bytes(&inputs.input())).unwrap();
            let back = BoardInputs::from_json(&inputs.input().to_json());
            assert_eq!(back.as_ref(), Some(&inputs), "{text}");
            text
        };
        assert!(written(&board).ends_with("s4:archs7:aarch64"));
        let one_way = Board {
            arch: vec!["armv7l".into(), "aarch64".into()],
            ..board.clone()
        };
        let other_way = Board {
            arch: vec!["aarch64".into(), "armv7l".into()],
            ..board.clone()
        };
        assert_eq!(written(&one_way), written(&other_way));
        assert!(written(&one_way).ends_with("s4:archl2:s7:aarch64s6:armv7l"));
        let none = Board {
            arch: Vec::new(),
            ..board
        };
        assert!(written(&none).ends_with("s4:archn"));
        // Only the forms `input` writes: not a one-word list, an unsorted one, a number.
        for bad in [
            serde_json::json!({"name": "b", "model": "m", "arch": ["aarch64"]}),
            serde_json::json!({"name": "b", "model": "m", "arch": ["b", "a"]}),
            serde_json::json!({"name": "b", "model": "m", "arch": 64}),
        ] {
            assert_eq!(BoardInputs::from_json(&bad), None, "{bad}");
        }
    }
}
