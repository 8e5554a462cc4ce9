//! A run's telemetry as a stored sample holds it: the summary apply wrote, parsed once
//! when the store is read, or any other JSON value, kept as it is (an older sampler's).
//!
//! A report judges every run again from its summary (flags under the scenario's
//! thresholds, warnings) several times over; parsing the summary once, straight from
//! the sample's bytes, is what keeps a report of a big store about as fast as reading
//! it. Either form means the same: a value is a summary exactly when it parses as one.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::summary::Judged;
use super::{TelemetrySummary, Thresholds};

#[derive(Clone, Debug)]
pub enum StoredTelemetry {
    /// A telemetry summary, parsed.
    Summary(JudgedSummary),
    /// A value as it was given: what apply builds (written back byte for byte), or a
    /// stored value that is not a summary (its run's stored flags then stand).
    Value(Value),
}

/// A parsed summary with what judging its run reads (`Judged`), taken out of it as it is
/// made: kept in the sample, where a report's walk over every run finds it without
/// following the summary's pointer.
#[derive(Clone, Debug)]
pub struct JudgedSummary {
    judged: Judged,
    summary: Box<TelemetrySummary>,
}

impl JudgedSummary {
    /// Made only here (and through `From`), so that what is kept always matches its
    /// summary.
    fn new(summary: Box<TelemetrySummary>) -> JudgedSummary {
        JudgedSummary {
            judged: Judged::of(&summary),
            summary,
        }
    }

    pub fn get(&self) -> &TelemetrySummary {
        &self.summary
    }
}

impl From<Box<TelemetrySummary>> for StoredTelemetry {
    fn from(summary: Box<TelemetrySummary>) -> StoredTelemetry {
        StoredTelemetry::Summary(JudgedSummary::new(summary))
    }
}

impl StoredTelemetry {
    /// The summary, when the value is one.
    pub fn summary(&self) -> Option<Cow<'_, TelemetrySummary>> {
        match self {
            StoredTelemetry::Summary(s) => Some(Cow::Borrowed(s.get())),
            StoredTelemetry::Value(v) => TelemetrySummary::deserialize(v).ok().map(Cow::Owned),
        }
    }

    /// The telemetry as a JSON value (a summary as it serialises).
    pub fn to_value(&self) -> Value {
        match self {
            StoredTelemetry::Summary(s) => serde_json::to_value(s.get()).unwrap_or(Value::Null),
            StoredTelemetry::Value(v) => v.clone(),
        }
    }

    /// The run's flags judged again under `thresholds`; None when it is not a summary
    /// (or, for a cluster's run, a summary per member).
    pub fn flags(&self, thresholds: &Thresholds) -> Option<Vec<String>> {
        match self {
            StoredTelemetry::Summary(s) => Some(s.judged.flags(thresholds)),
            StoredTelemetry::Value(v) => super::rejudge(v, thresholds),
        }
    }

    /// The run's validity warnings; none when it is not a summary (or summaries per
    /// member).
    pub fn warnings(&self) -> Vec<String> {
        match self {
            StoredTelemetry::Summary(s) => s.judged.warnings(),
            StoredTelemetry::Value(v) => super::warnings_of(v),
        }
    }
}

impl From<Value> for StoredTelemetry {
    fn from(v: Value) -> StoredTelemetry {
        StoredTelemetry::Value(v)
    }
}

impl PartialEq for StoredTelemetry {
    fn eq(&self, other: &StoredTelemetry) -> bool {
        match (self, other) {
            (StoredTelemetry::Summary(a), StoredTelemetry::Summary(b)) => a.get() == b.get(),
            (StoredTelemetry::Value(a), StoredTelemetry::Value(b)) => a == b,
            _ => self.to_value() == other.to_value(),
        }
    }
}

impl Serialize for StoredTelemetry {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            // As a value, so that its keys are in the order apply writes them.
            StoredTelemetry::Summary(_) => self.to_value().serialize(s),
            StoredTelemetry::Value(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for StoredTelemetry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<StoredTelemetry, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(match TelemetrySummary::deserialize(&v) {
            Ok(s) => Box::new(s).into(),
            Err(_) => StoredTelemetry::Value(v),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> TelemetrySummary {
        TelemetrySummary {
            samples: 3,
            seconds: 2.0,
            background_fraction: Some(0.2),
            cpus: Some(4),
            busy_cpu_seconds: Some(3.0),
            test_cpu_seconds: Some(1.0),
            background_cpu_seconds: Some(2.0),
            throttled_state: Some("unknown".into()),
            ..TelemetrySummary::default()
        }
    }

    #[test]
    fn a_summary_judges_the_same_parsed_or_as_a_value() {
        let s = summary();
        let value = serde_json::to_value(&s).unwrap();
        let parsed: StoredTelemetry = serde_json::from_value(value.clone()).unwrap();
        assert!(matches!(parsed, StoredTelemetry::Summary(_)));
        let given = StoredTelemetry::from(value.clone());
        let t = Thresholds::default();
        assert_eq!(parsed.flags(&t), given.flags(&t));
        assert!(parsed.flags(&t).is_some_and(|f| !f.is_empty()));
        assert_eq!(parsed.warnings(), given.warnings());
        assert!(!parsed.warnings().is_empty());
        assert_eq!(parsed, given);
        assert_eq!(
            serde_json::to_vec(&parsed).unwrap(),
            serde_json::to_vec(&value).unwrap()
        );
    }

    #[test]
    fn a_value_that_is_not_a_summary_is_kept_and_judges_nothing() {
        let v = serde_json::json!({ "samples": "four", "note": "an older sampler" });
        let parsed: StoredTelemetry = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(parsed, StoredTelemetry::Value(v.clone()));
        assert_eq!(parsed.flags(&Thresholds::default()), None);
        assert!(parsed.warnings().is_empty());
        assert_eq!(
            serde_json::to_vec(&parsed).unwrap(),
            serde_json::to_vec(&v).unwrap()
        );
    }
}
