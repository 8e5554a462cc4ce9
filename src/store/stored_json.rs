//! A JSON value the store read and keeps as its text, parsed only when first asked for.
//!
//! `cell.json`'s `inputs` is the biggest part of a cell's files, and a report of a big
//! store looks into few of them (a plan diff, a cell rebuilt from the store). Building
//! every one as a `Value` tree was a tenth of reading the
//! store, and a third of the memory the read held. The text is checked when it is read
//! (`check`), so that parsing it later cannot fail: a store file that does not parse
//! is still an error of reading it, with the same message as before.

use std::fmt;
use std::sync::OnceLock;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// The scalar visits of a visitor whose value for every scalar is `$v`.
macro_rules! forward_scalars {
    (|_v| $v:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($v)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($v)
        }
    };
}

/// A JSON value, as its text from the store or as a value given.
#[derive(Clone, Default)]
pub struct StoredJson {
    /// The text as the store holds it; None for a value given (`From<Value>`).
    raw: Option<Box<RawValue>>,
    /// The value, once parsed (or as given).
    value: OnceLock<Value>,
}

impl StoredJson {
    /// The value, parsed from the text at the first call.
    pub fn value(&self) -> &Value {
        self.value.get_or_init(|| match &self.raw {
            // Checked when read (`check_value`), so it parses; were it not to, Null
            // (nothing) is what it would hold, never a panic.
            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            None => Value::Null,
        })
    }
}

impl StoredJson {
    /// The text as the store holds it; None for a value given.
    pub fn text(&self) -> Option<&str> {
        self.raw.as_deref().map(RawValue::get)
    }

    /// The parts of the value a `T` picks, read from the text without building the
    /// whole value when it is not built yet (serde skips what `T` does not name); None
    /// when the value is not a `T`.
    pub fn pick<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        match (&self.raw, self.value.get()) {
            (_, Some(v)) => T::deserialize(v).ok(),
            (Some(raw), None) => serde_json::from_str(raw.get()).ok(),
            (None, None) => None,
        }
    }
}

impl From<Value> for StoredJson {
    fn from(v: Value) -> StoredJson {
        StoredJson {
            raw: None,
            value: OnceLock::from(v),
        }
    }
}

impl fmt::Debug for StoredJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value().fmt(f)
    }
}

impl PartialEq for StoredJson {
    fn eq(&self, other: &StoredJson) -> bool {
        self.value() == other.value()
    }
}

impl Serialize for StoredJson {
    /// As the value (not the text as read), so that what is written is laid out as
    /// every other value the store writes.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for StoredJson {
    /// Takes the value's text unparsed: only from serde_json's own deserializers (the
    /// store reads with them). The caller checks the text (`check_value`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StoredJson, D::Error> {
        Ok(StoredJson {
            raw: Some(Box::<RawValue>::deserialize(d)?),
            value: OnceLock::new(),
        })
    }
}

/// Checks that the whole document `bytes` is an object that parses as a `Value` would
/// (numbers in range, nesting no deeper than serde_json allows, strings and escapes
/// valid), building nothing, and returns its `format` when that is a u64 (as
/// `Value::as_u64` reads it). Taking a value's text unparsed checks only its syntax.
/// An error (also for a document that is no object, or has two `format`s) says only
/// that the caller must read the document as before.
pub(super) fn check_value(bytes: &[u8]) -> serde_json::Result<Option<u64>> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let format = de.deserialize_any(Top)?;
    de.end()?;
    Ok(format)
}

/// The document: an object whose `format` is noted.
struct Top;

impl<'de> Visitor<'de> for Top {
    type Value = Option<u64>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<u64>, A::Error> {
        let mut format = None;
        while let Some(is_format) = map.next_key_seed(Key)? {
            if !is_format {
                map.next_value_seed(Any)?;
            } else if format.is_some() {
                return Err(de::Error::duplicate_field("format"));
            } else {
                format = Some(map.next_value_seed(Format)?);
            }
        }
        Ok(format.flatten())
    }
}

/// A key of the top object: whether it is `format`.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Key {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Ok(v == "format")
    }
}

/// The `format` value: a u64 when it is one (as `Value::as_u64` reads it).
struct Format;

impl<'de> DeserializeSeed<'de> for Format {
    type Value = Option<u64>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Format {
    type Value = Option<u64>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<u64>, E> {
        Ok(Some(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<u64>, A::Error> {
        Any.visit_map(map).map(|()| None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<u64>, A::Error> {
        Any.visit_seq(seq).map(|()| None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Option<u64>, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Option<u64>, E> {
        Ok(None)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Option<u64>, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Option<u64>, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<u64>, E> {
        Ok(None)
    }
}

/// Any value, walked as `Value`'s visitor walks it, keeping nothing.
struct Any;

impl<'de> DeserializeSeed<'de> for Any {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Any {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(AnyKey)?.is_some() {
            map.next_value_seed(Any)?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Any)?.is_some() {}
        Ok(())
    }

    forward_scalars!(|_v| ());
}

/// A key of any object (a string, as `Value` reads it).
struct AnyKey;

impl<'de> DeserializeSeed<'de> for AnyKey {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(Key).map(|_| ())
    }
}
