//! A run's metric values, read from its stored metrics in one pass: what
//! `MetricSpec::value` gives for each of a recipe's metrics, and the stored values of
//! a few more names as they are.
//!
//! A big report reads every run's metrics. One search of a run's map per metric
//! compared the names of several keys each time, and those comparisons (each loading
//! a key's text from wherever the run was parsed into) were a quarter of judging the
//! runs. One pass compares each stored key only with the names of its length.

use std::collections::BTreeMap;

use crate::model::{Derived, MetricSpec, POWER_W};

/// How one metric's value is made from the stored values the reader finds.
#[derive(Clone, Copy, Debug)]
enum Read {
    /// The stored value of `names[i]`.
    Stored(usize),
    /// `names[of]` over the run's watts (`names[power]`).
    PerWatt { of: usize, power: usize },
    /// The run's watts times its duration.
    Joules { power: usize },
}

/// Reads `metrics`' values and the stored values of `also` from a run's metrics.
#[derive(Debug)]
pub(super) struct RunMetrics<'m> {
    /// Every stored name any of them reads, each once.
    names: Vec<&'m str>,
    /// Per metric, in order, how its value is made.
    reads: Vec<Read>,
    /// Per name of `also`, its index in `names`.
    also: Vec<usize>,
}

impl<'m> RunMetrics<'m> {
    pub fn new(metrics: &'m [MetricSpec], also: &'m [String]) -> RunMetrics<'m> {
        let mut names: Vec<&'m str> = Vec::new();
        let mut index = |name: &'m str| {
            if let Some(i) = names.iter().position(|n| *n == name) {
                i
            } else {
                names.push(name);
                names.len() - 1
            }
        };
        let reads = metrics
            .iter()
            .map(|m| match &m.derive {
                None => Read::Stored(index(&m.name)),
                Some(Derived::PerWatt(of)) => Read::PerWatt {
                    of: index(of),
                    power: index(POWER_W),
                },
                Some(Derived::Joules) => Read::Joules {
                    power: index(POWER_W),
                },
            })
            .collect();
        let also = also.iter().map(|n| index(n)).collect();
        RunMetrics { names, reads, also }
    }

    /// The stored value of each name it reads, from a run's `metrics`, into `found`
    /// (cleared first): `found` is the run's reading the other methods take.
    pub fn read(&self, metrics: &BTreeMap<String, f64>, found: &mut Vec<Option<f64>>) {
        found.clear();
        found.resize(self.names.len(), None);
        let mut left = self.names.len();
        for (key, value) in metrics {
            if left == 0 {
                break;
            }
            // The lengths, which the map holds beside each key, first: most keys are
            // then never compared.
            let i = self
                .names
                .iter()
                .position(|n| n.len() == key.len() && *n == key.as_str());
            if let Some(i) = i {
                found[i] = Some(*value);
                left -= 1;
            }
        }
    }

    /// Metric `i`'s value for a run read into `found` lasting `seconds`: exactly what
    /// `MetricSpec::value` gives.
    pub fn value(&self, i: usize, found: &[Option<f64>], seconds: f64) -> Option<f64> {
        let stored = |j: usize| found.get(j).copied().flatten();
        let watts = |power: usize| stored(power).filter(|w| *w > 0.0);
        let v = match *self.reads.get(i)? {
            Read::Stored(j) => stored(j),
            Read::PerWatt { of, power } => Some(stored(of)? / watts(power)?),
            Read::Joules { power } => Some(watts(power)? * seconds),
        };
        v.filter(|v| v.is_finite())
    }

    /// The stored value of `also[k]`, as it is, for a run read into `found`.
    pub fn also(&self, k: usize, found: &[Option<f64>]) -> Option<f64> {
        found.get(*self.also.get(k)?).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Better, MemberMetric};

    fn spec(name: &str, derive: Option<Derived>) -> MetricSpec {
        MetricSpec {
            name: name.into(),
            label: None,
            from: String::new(),
            scale: 1.0,
            unit: "MB/s".into(),
            better: Better::Higher,
            primary: false,
            derive,
            member: MemberMetric::Whole,
            flag: None,
        }
    }

    /// Over runs with and without each stored value, with watts absent, zero, negative
    /// and positive, and values that are not finite, every metric reads as
    /// `MetricSpec::value` gives it and every other name as the map holds it.
    #[test]
    fn one_pass_reads_what_a_search_per_metric_gives() {
        let specs = vec![
            spec("read", None),
            spec("write", None),
            spec("read_per_w", Some(Derived::PerWatt("read".into()))),
            spec("joules", Some(Derived::Joules)),
            // A second metric of the same stored name, and one never stored.
            spec("read", None),
            spec("absent", None),
            // Same length as `read`, another name: only the text tells them apart.
            spec("rea_", None),
        ];
        let also: Vec<String> = ["write", "power_w", "wrxte", "nowhere"]
            .into_iter()
            .map(String::from)
            .collect();
        let reader = RunMetrics::new(&specs, &also);
        let values = [
            None,
            Some(0.0),
            Some(-2.0),
            Some(3.5),
            Some(f64::NAN),
            Some(f64::INFINITY),
        ];
        let names = ["read", "write", "power_w", "rea_", "wrxte", "zzz", "a"];
        let mut found = Vec::new();
        let mut runs = 0;
        // Every name takes each value in turn, the others cycling at other rates.
        for step in 0..values.len().pow(3) {
            let mut metrics = BTreeMap::new();
            for (n, name) in names.iter().enumerate() {
                let pick = (step / (1 + n % 3) + n) % values.len();
                if let Some(v) = values[pick] {
                    metrics.insert(name.to_string(), v);
                }
            }
            for seconds in [0.0, 2.5] {
                reader.read(&metrics, &mut found);
                for (i, s) in specs.iter().enumerate() {
                    let (got, want) =
                        (reader.value(i, &found, seconds), s.value(&metrics, seconds));
                    assert_eq!(
                        got.map(f64::to_bits),
                        want.map(f64::to_bits),
                        "{} of {metrics:?}",
                        s.name
                    );
                }
                for (k, name) in also.iter().enumerate() {
                    let (got, want) = (reader.also(k, &found), metrics.get(name).copied());
                    assert_eq!(
                        got.map(f64::to_bits),
                        want.map(f64::to_bits),
                        "{name} of {metrics:?}"
                    );
                }
                runs += 1;
            }
        }
        assert_eq!(runs, 2 * values.len().pow(3));
        // A reading is the run's own: the last run's values never leak into the next.
        reader.read(&BTreeMap::new(), &mut found);
        assert!((0..specs.len()).all(|i| reader.value(i, &found, 1.0).is_none()));
        assert!((0..also.len()).all(|k| reader.also(k, &found).is_none()));
    }
}
