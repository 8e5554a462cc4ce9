//! Cell keys: a sha256 over a canonical encoding of everything that can change a cell's
//! numbers, and nothing else.
//!
//! The encoding is JSON with sorted keys (serde_json without `preserve_order` keeps
//! object keys in a BTreeMap) and no whitespace, behind a versioned domain prefix.
//! Changing what goes in is a deliberate act: bump `ENCODING` and update the golden
//! tests, because every stored cell gets a new key.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::model::{Board, Cooldown, Filesystem, Image, Method, ParamValue, Recipe, Step, Storage};

/// The domain prefix of the hashed bytes; part of the key's identity.
pub const ENCODING: &str = "benchpipe-cell-v1";

/// A cell's identity: 32 hex digits (128 bits) of the sha256 of its canonical inputs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CellKey(String);

impl CellKey {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Parses a key as found in a store directory name; None unless 32 lowercase hex digits.
    pub fn parse(s: &str) -> Option<CellKey> {
        (s.len() == 32
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
        .then(|| CellKey(s.to_string()))
    }

    /// Hashes a canonical inputs document.
    pub fn of(inputs: &Value) -> CellKey {
        let mut h = Sha256::new();
        h.update(ENCODING.as_bytes());
        h.update([0u8]);
        h.update(canonical_bytes(inputs));
        let digest = h.finalize();
        let mut s = String::with_capacity(32);
        for b in &digest[..16] {
            s.push_str(&format!("{b:02x}"));
        }
        CellKey(s)
    }
}

impl fmt::Display for CellKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The canonical byte encoding of a document: compact JSON, object keys sorted.
pub fn canonical_bytes(v: &Value) -> Vec<u8> {
    // serde_json's Map is a BTreeMap in this build (no `preserve_order`), so keys come
    // out sorted whatever order the document was built in.
    serde_json::to_vec(v).unwrap_or_default()
}

fn param_json(v: &ParamValue) -> Value {
    match v {
        ParamValue::Int(i) => json!(i),
        ParamValue::Float(f) => json!(f),
        ParamValue::Bool(b) => json!(b),
        ParamValue::Str(s) => json!(s),
    }
}

fn step_json(s: &Step) -> Value {
    // The timeout is left out: it bounds a run, it does not change its numbers.
    json!({ "on": s.on, "command": s.command })
}

/// The inputs of one cell as a canonical document: what is hashed and what `cell.json`
/// records. Addresses, credentials, run counts, comments, file names and key order
/// are deliberately absent.
pub fn cell_inputs(
    image: &Image,
    board: &Board,
    storage: Option<&Storage>,
    filesystem: Option<&Filesystem>,
    recipe: &Recipe,
    params: &std::collections::BTreeMap<String, ParamValue>,
    method: &Method,
) -> Value {
    let cooldown = match &method.cooldown {
        Cooldown::None => json!("none"),
        Cooldown::Fixed { duration } => json!({ "fixed_s": duration.as_secs_f64() }),
        Cooldown::UntilBelow {
            celsius,
            above_idle: false,
            max,
        } => json!({ "until_below_c": celsius, "max_s": max.as_secs_f64() }),
        Cooldown::UntilBelow {
            celsius,
            above_idle: true,
            max,
        } => json!({ "until_above_idle_c": celsius, "max_s": max.as_secs_f64() }),
    };
    let mut method_doc = json!({
        "cooldown": cooldown,
        "warmup_runs": method.warmup.runs,
        "warmup_s": method.warmup.duration.map(|d| d.as_secs_f64()),
    });
    // Only present when set, so that keys made before the idle gate existed stay valid.
    if let (Some(gate), Some(obj)) = (&method.idle, method_doc.as_object_mut()) {
        obj.insert(
            "idle".into(),
            json!({
                "load_below": gate.load_below,
                "hold_s": gate.hold.as_secs_f64(),
                "max_s": gate.max.as_secs_f64(),
            }),
        );
    }
    let mut test_doc = json!({
        "name": recipe.name,
        "setup": recipe.setup.iter().map(step_json).collect::<Vec<_>>(),
        "run": step_json(&recipe.run),
        "teardown": recipe.teardown.iter().map(step_json).collect::<Vec<_>>(),
        "params": params.iter().map(|(k, v)| (k.clone(), param_json(v))).collect::<serde_json::Map<_, _>>(),
        "parser": { "name": recipe.parser.name(), "version": recipe.parser.version() },
        "metrics": recipe.metrics.iter().map(|m| json!({
            "name": m.name, "from": m.from, "scale": m.scale,
        })).collect::<Vec<_>>(),
    });
    // Only present when there are services, so that keys of recipes without them stay.
    if !recipe.services.is_empty()
        && let Some(obj) = test_doc.as_object_mut()
    {
        obj.insert(
            "services".into(),
            json!(
                recipe
                    .services
                    .iter()
                    .map(|s| json!({ "name": s.name, "on": s.on, "command": s.command }))
                    .collect::<Vec<_>>()
            ),
        );
    }
    // Only present for a parser with options (`regex`): its patterns decide what is
    // measured. Absent otherwise, so that the keys of other recipes stay.
    if let Some(regex) = &recipe.parser.options.regex
        && let Some(obj) = test_doc.as_object_mut()
    {
        obj.insert(
            "parse_regex".into(),
            json!({
                "patterns": regex.patterns,
                "stream": regex.stream.name(),
                "decimal_comma": regex.decimal_comma,
            }),
        );
    }
    json!({
        "image": image.source.identity(&image.name),
        "board": { "name": board.name, "model": board.model, "arch": board.arch },
        // The medium is its name and model; the device path is an address (a loop
        // device number, a by-id link) that may change while the medium does not.
        "storage": storage.map(|s| json!({
            "name": s.name, "model": s.model, "role": s.role,
        })),
        "filesystem": filesystem.map(|f| json!({
            "kind": f.kind, "mkfs_options": f.mkfs_options, "mount_options": f.mount_options,
        })),
        "test": test_doc,
        "method": method_doc,
    })
}
