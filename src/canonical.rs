//! The canonical writer under cell keys: `Input` values (typed, with records in a fixed
//! field order) to self-delimiting bytes, written by hand so that no serializer, library
//! feature or map order takes part. A leaf below `model` (which hashes a first-boot
//! preparation with it): it knows nothing of cells; `plan/key.rs` says what goes in.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

pub(crate) const HEX: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex of `bytes`: how every digest benchpipe records or names is spelled.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
    out
}

/// One value of a cell's canonical inputs.
#[derive(Clone, Debug)]
pub enum Input {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// Hashed as integer nanoseconds; recorded in `cell.json` as seconds.
    Secs(Duration),
    Str(String),
    List(Vec<Input>),
    /// Keys from the user's files (template parameters): written in byte order.
    Map(BTreeMap<String, Input>),
    /// Fields named by this module, written in the order given here.
    Record(Vec<(&'static str, Input)>),
    /// A value many cells' inputs hold (a test's part of a plan's cells), with its
    /// canonical bytes written once: it hashes, records and compares as that value.
    Shared(Arc<SharedInput>),
}

/// The value of `Input::Shared`, and its canonical bytes.
#[derive(Debug)]
pub struct SharedInput {
    value: Input,
    bytes: Vec<u8>,
}

/// Values compare as the values they stand for, shared or not.
impl PartialEq for Input {
    fn eq(&self, other: &Input) -> bool {
        use Input::{Bool, Float, Int, List, Map, None, Record, Secs, Str};
        match (self.unshared(), other.unshared()) {
            (None, None) => true,
            (Bool(a), Bool(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Float(a), Float(b)) => a == b,
            (Secs(a), Secs(b)) => a == b,
            (Str(a), Str(b)) => a == b,
            (List(a), List(b)) => a == b,
            (Map(a), Map(b)) => a == b,
            (Record(a), Record(b)) => a == b,
            _ => false,
        }
    }
}

impl Input {
    pub fn record(fields: impl IntoIterator<Item = (&'static str, Input)>) -> Input {
        Input::Record(fields.into_iter().collect())
    }

    /// `value`, to be held by many cells' inputs: its canonical bytes are made now.
    pub fn shared(value: Input) -> Input {
        let bytes = canonical_bytes(&value);
        Input::Shared(Arc::new(SharedInput { value, bytes }))
    }

    /// The value a shared one stands for; any other as it is.
    pub fn unshared(&self) -> &Input {
        let mut at = self;
        while let Input::Shared(s) = at {
            at = &s.value;
        }
        at
    }

    /// The JSON form recorded as `cell.json`'s `inputs`. Its object key order is
    /// whatever serde_json keeps; the key never depends on it.
    pub fn to_json(&self) -> Value {
        match self {
            Input::None => Value::Null,
            Input::Bool(b) => Value::Bool(*b),
            Input::Int(i) => Value::from(*i),
            Input::Float(f) => Value::from(*f),
            Input::Secs(d) => Value::from(d.as_secs_f64()),
            Input::Str(s) => Value::String(s.clone()),
            Input::List(items) => Value::Array(items.iter().map(Input::to_json).collect()),
            Input::Map(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
            }
            Input::Record(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_json()))
                    .collect(),
            ),
            Input::Shared(s) => s.value.to_json(),
        }
    }
}

/// A cell's inputs: the tree its key hashes, with their JSON form (`cell.json`'s
/// `inputs`) made the first time it is asked for. A report plans every cell of its
/// scenarios and reads a few of their inputs: it never pays for the JSON of all.
#[derive(Clone, Debug)]
pub struct CellInputs {
    tree: Input,
    json: std::sync::OnceLock<Value>,
}

impl CellInputs {
    pub fn new(tree: Input) -> CellInputs {
        CellInputs {
            tree,
            json: std::sync::OnceLock::new(),
        }
    }

    pub fn tree(&self) -> &Input {
        &self.tree
    }

    /// The JSON form (`Input::to_json`), made once.
    pub fn json(&self) -> &Value {
        self.json.get_or_init(|| self.tree.to_json())
    }

    /// The value at a JSON pointer (`/board/model`) into the JSON form, looked up in the
    /// tree without making that form.
    pub fn pointer(&self, pointer: &str) -> Option<&Input> {
        let mut at = self.tree.unshared();
        if pointer.is_empty() {
            return Some(at);
        }
        for step in pointer.strip_prefix('/')?.split('/') {
            at = match at.unshared() {
                Input::Record(fields) => &fields.iter().find(|(k, _)| *k == step)?.1,
                Input::Map(m) => m.get(step)?,
                Input::List(items) => items.get(step.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(at.unshared())
    }

    /// The text at `pointer`, when it is a string.
    pub fn text(&self, pointer: &str) -> Option<&str> {
        match self.pointer(pointer)? {
            Input::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The texts of the list at `pointer` (its strings; None unless it is a list).
    pub fn texts(&self, pointer: &str) -> Option<Vec<&str>> {
        match self.pointer(pointer)? {
            Input::List(items) => Some(
                items
                    .iter()
                    .filter_map(|i| match i.unshared() {
                        Input::Str(s) => Some(s.as_str()),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// Equal inputs are equal trees: the JSON form follows from the tree.
impl PartialEq for CellInputs {
    fn eq(&self, other: &CellInputs) -> bool {
        self.tree == other.tree
    }
}

impl serde::Serialize for CellInputs {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json().serialize(s)
    }
}

impl From<&str> for Input {
    fn from(s: &str) -> Input {
        Input::Str(s.to_string())
    }
}

impl From<&String> for Input {
    fn from(s: &String) -> Input {
        Input::Str(s.clone())
    }
}

impl From<String> for Input {
    fn from(s: String) -> Input {
        Input::Str(s)
    }
}

impl From<bool> for Input {
    fn from(b: bool) -> Input {
        Input::Bool(b)
    }
}

impl From<u32> for Input {
    fn from(n: u32) -> Input {
        Input::Int(i64::from(n))
    }
}

impl From<f64> for Input {
    fn from(f: f64) -> Input {
        Input::Float(f)
    }
}

impl From<Duration> for Input {
    fn from(d: Duration) -> Input {
        Input::Secs(d)
    }
}

impl<T: Into<Input>> From<Option<T>> for Input {
    fn from(v: Option<T>) -> Input {
        v.map_or(Input::None, Into::into)
    }
}

impl<T: Into<Input>> From<Vec<T>> for Input {
    fn from(v: Vec<T>) -> Input {
        Input::List(v.into_iter().map(Into::into).collect())
    }
}

/// Writes `Input` values as self-delimiting tokens (docs/FORMAT.md, "Cell keys"):
///
/// | value | bytes |
/// |---|---|
/// | none | `n` |
/// | bool | `b0`, `b1` |
/// | integer | `i` decimal `;` (`-` before a negative one) |
/// | float | `f` 16 lowercase hex digits of its IEEE-754 bits (one NaN) |
/// | duration | `d` decimal nanoseconds `;` |
/// | string | `s` byte length `:` UTF-8 bytes |
/// | list | `l` count `:` values |
/// | map | `m` count `:` (string value) pairs, keys in byte order |
/// | record | `r` count `:` (string value) pairs, fields in their fixed order |
///
/// Every token says where it ends, so no two different trees share bytes.
#[derive(Debug, Default)]
pub struct CanonicalWriter {
    out: Vec<u8>,
}

impl CanonicalWriter {
    /// A writer with room for `bytes` of encoding before it grows.
    pub fn with_capacity(bytes: usize) -> Self {
        CanonicalWriter {
            out: Vec::with_capacity(bytes),
        }
    }

    pub fn finish(self) -> Vec<u8> {
        self.out
    }

    pub fn value(&mut self, v: &Input) {
        match v {
            Input::None => self.out.push(b'n'),
            Input::Bool(b) => self.out.extend_from_slice(if *b { b"b1" } else { b"b0" }),
            Input::Int(i) => {
                self.out.push(b'i');
                if *i < 0 {
                    self.out.push(b'-');
                }
                self.decimal(u128::from(i.unsigned_abs()));
                self.out.push(b';');
            }
            Input::Float(f) => {
                // The bits are exact on every platform and toolchain; NaN has many bit
                // patterns but is one value to a template.
                let bits = if f.is_nan() {
                    f64::NAN.to_bits()
                } else {
                    f.to_bits()
                };
                self.out.push(b'f');
                for shift in (0..16).rev() {
                    self.out.push(HEX[((bits >> (shift * 4)) & 15) as usize]);
                }
            }
            Input::Secs(d) => {
                self.out.push(b'd');
                self.decimal(d.as_nanos());
                self.out.push(b';');
            }
            Input::Str(s) => self.str(s),
            Input::List(items) => {
                self.count(b'l', items.len());
                for item in items {
                    self.value(item);
                }
            }
            Input::Map(m) => {
                // A BTreeMap iterates in byte order of its String keys.
                self.count(b'm', m.len());
                for (k, v) in m {
                    self.str(k);
                    self.value(v);
                }
            }
            Input::Record(fields) => {
                self.count(b'r', fields.len());
                for (name, v) in fields {
                    self.str(name);
                    self.value(v);
                }
            }
            Input::Shared(s) => self.out.extend_from_slice(&s.bytes),
        }
    }

    fn str(&mut self, s: &str) {
        self.count(b's', s.len());
        self.out.extend_from_slice(s.as_bytes());
    }

    fn count(&mut self, tag: u8, n: usize) {
        self.out.push(tag);
        self.decimal(n as u128);
        self.out.push(b':');
    }

    fn decimal(&mut self, n: u128) {
        let mut digits = [0u8; 40];
        let mut at = digits.len();
        let mut n = n;
        // Counts and most durations fit 64 bits, whose division is a machine
        // instruction (128-bit division is a library call): digits are taken in 128
        // bits only while the rest does not fit.
        while u64::try_from(n).is_err() {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        let mut small = n as u64;
        loop {
            at -= 1;
            digits[at] = b'0' + (small % 10) as u8;
            small /= 10;
            if small == 0 {
                break;
            }
        }
        self.out.extend_from_slice(&digits[at..]);
    }
}

/// The canonical bytes of inputs, without the `ENCODING` prefix.
pub fn canonical_bytes(v: &Input) -> Vec<u8> {
    // A cell's inputs encode to a kilobyte or two: room for them from the start, rather
    // than a vector that doubles its way there (a plan of 10,000 cells made 70,000
    // allocations here).
    let mut w = CanonicalWriter::with_capacity(4096);
    w.value(v);
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_self_delimiting_so_different_values_never_share_bytes() {
        let pairs = [
            // A string holding what looks like a second token.
            (
                Input::List(vec![Input::from("ab")]),
                Input::List(vec![Input::from("a"), Input::from("b")]),
            ),
            (Input::from("s1:x"), Input::List(vec![Input::from("x")])),
            (Input::None, Input::from("n")),
            (Input::Int(1), Input::Float(1.0)),
            (Input::Int(1), Input::Secs(Duration::from_nanos(1))),
            (Input::Float(0.0), Input::Float(-0.0)),
            (Input::from(""), Input::None),
            (
                Input::Map(BTreeMap::from([("a".into(), Input::None)])),
                Input::record([("a", Input::None)]),
            ),
        ];
        for (a, b) in pairs {
            assert_ne!(canonical_bytes(&a), canonical_bytes(&b), "{a:?} vs {b:?}");
        }
        assert_eq!(
            canonical_bytes(&Input::Int(i64::MIN)),
            b"i-9223372036854775808;"
        );
        assert_eq!(
            canonical_bytes(&Input::Float(f64::NAN)),
            canonical_bytes(&Input::Float(-f64::NAN))
        );
    }

    #[test]
    fn a_shared_value_hashes_records_and_compares_as_the_value_it_stands_for() {
        let doc = Input::record([
            ("a", Input::List(vec![Input::from("x"), Input::Int(-3)])),
            ("d", Input::Secs(Duration::from_millis(1500))),
        ]);
        let shared = Input::shared(doc.clone());
        let nested = Input::record([("t", Input::shared(shared.clone()))]);
        let plain = Input::record([("t", doc.clone())]);
        assert_eq!(canonical_bytes(&shared), canonical_bytes(&doc));
        assert_eq!(canonical_bytes(&nested), canonical_bytes(&plain));
        assert_eq!(shared.to_json(), doc.to_json());
        assert_eq!(nested.to_json(), plain.to_json());
        assert_eq!(shared, doc);
        assert_eq!(doc, shared);
        assert_eq!(nested, plain);
        assert_ne!(shared, Input::shared(Input::from("x")));
        let inputs = CellInputs::new(nested);
        assert_eq!(inputs.text("/t/a/0"), Some("x"));
        assert_eq!(inputs.texts("/t/a"), Some(vec!["x"]));
        assert_eq!(
            inputs.pointer("/t/d"),
            Some(&Input::Secs(Duration::from_millis(1500)))
        );
    }

    #[test]
    fn decimals_past_64_bits_are_written_digit_for_digit() {
        for nanos in [0u128, 9, 10, u128::from(u64::MAX), u128::from(u64::MAX) + 1] {
            let d = Duration::new(
                (nanos / 1_000_000_000) as u64,
                (nanos % 1_000_000_000) as u32,
            );
            assert_eq!(
                String::from_utf8(canonical_bytes(&Input::Secs(d))).unwrap(),
                format!("d{nanos};")
            );
        }
        let max = Duration::MAX.as_nanos();
        assert_eq!(
            String::from_utf8(canonical_bytes(&Input::Secs(Duration::MAX))).unwrap(),
            format!("d{max};")
        );
    }

    /// Why no second build with serde_json's `preserve_order` is needed (`.ci/run` ran
    /// the key tests again with it on, a whole rebuild of the crate): that feature only
    /// changes the order a `serde_json::Map` iterates in, and a key is the sha256 of
    /// `canonical_bytes(&Input)`, written from this tree alone. Every variant is named
    /// here with its payload's type, none a serde_json type, so a variant carrying a
    /// JSON value (whose object order the feature would change) stops this test from
    /// compiling until its bytes are written by hand like the others. The rest of the
    /// argument is tested elsewhere: `Map` is a `BTreeMap` written in byte order, and
    /// `key::tests::keys_do_not_depend_on_insertion_order_or_serde_json_object_order`
    /// shows the JSON rendering's object order is not what is hashed.
    #[test]
    fn the_hashed_tree_holds_no_serde_json_value_so_preserve_order_cannot_move_a_key() {
        fn walk(i: &Input, seen: &mut usize) {
            *seen += 1;
            match i {
                Input::None => {}
                Input::Bool(b) => {
                    let _: &bool = b;
                }
                Input::Int(n) => {
                    let _: &i64 = n;
                }
                Input::Float(f) => {
                    let _: &f64 = f;
                }
                Input::Secs(d) => {
                    let _: &Duration = d;
                }
                Input::Str(s) => {
                    let _: &String = s;
                }
                Input::List(items) => {
                    let items: &Vec<Input> = items;
                    for v in items {
                        walk(v, seen);
                    }
                }
                Input::Map(m) => {
                    let m: &BTreeMap<String, Input> = m;
                    for v in m.values() {
                        walk(v, seen);
                    }
                }
                Input::Record(fields) => {
                    let fields: &Vec<(&'static str, Input)> = fields;
                    for (_, v) in fields {
                        walk(v, seen);
                    }
                }
                Input::Shared(s) => {
                    let s: &Arc<SharedInput> = s;
                    walk(&s.value, seen);
                }
            }
        }
        // A map filled in reverse byte order writes its keys in byte order: the same
        // bytes as one filled forwards, as under any serde_json feature.
        let names = ["zeta", "alpha", "mid", "b"];
        let forward: BTreeMap<String, Input> = names
            .iter()
            .map(|n| (n.to_string(), Input::from(*n)))
            .collect();
        let backward: BTreeMap<String, Input> = names
            .iter()
            .rev()
            .map(|n| (n.to_string(), Input::from(*n)))
            .collect();
        let doc = |m: BTreeMap<String, Input>| {
            Input::record([
                ("params", Input::Map(m)),
                ("list", Input::List(vec![Input::Int(1), Input::None])),
                ("d", Input::Secs(Duration::from_millis(5))),
                ("f", Input::Float(0.5)),
                ("b", Input::Bool(true)),
            ])
        };
        let (a, b) = (doc(forward), doc(backward));
        assert_eq!(canonical_bytes(&a), canonical_bytes(&b));
        let mut seen = 0;
        walk(&a, &mut seen);
        assert_eq!(seen, 12, "every node visited");
        let bytes = String::from_utf8(canonical_bytes(&a)).unwrap();
        let at = |n: &str| bytes.find(&format!("s{}:{n}", n.len())).unwrap();
        assert!(at("alpha") < at("b") && at("b") < at("mid") && at("mid") < at("zeta"));
    }
}
