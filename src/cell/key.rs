//! A cell's key: 32 hex digits of the sha256 of its canonical inputs behind a version
//! prefix (`ENCODING`). What goes into the inputs is `plan/key.rs`'s; the bytes are
//! `canonical.rs`'s; this holds only the hash and the key's forms. docs/FORMAT.md
//! ("Cell keys") describes the bytes.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::canonical::{HEX, Input, canonical_bytes};

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
