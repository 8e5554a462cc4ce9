//! Outlier classification: which samples look unlike the rest. Nothing is dropped; the
//! report shows the classes so a reader can judge (a cold cache, a throttled run).

use serde::Serialize;

use super::{quantile, sorted};

/// How far out a sample lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutlierClass {
    /// Beyond Tukey's inner fences (1.5 IQR past a quartile), or a modified z-score
    /// above 3.5.
    Mild,
    /// Beyond Tukey's outer fences (3 IQR past a quartile).
    Severe,
}

/// One outlying sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outlier {
    /// Position in the input slice.
    pub index: usize,
    pub value: f64,
    pub class: OutlierClass,
    /// Iglewicz–Hoaglin modified z-score, `0.6745 (x - median) / MAD`; None when the
    /// MAD is 0 (more than half the samples are equal), where it is undefined.
    pub modified_z: Option<f64>,
    /// The class by Tukey's fences alone; None when inside the inner fences.
    pub tukey: Option<OutlierClass>,
}

/// The rule [`outliers`] applies, as data a report can show beside its counts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct OutlierRule {
    /// Mild beyond this many IQRs past a quartile (Tukey's inner fences).
    pub tukey_mild_iqr: f64,
    /// Severe beyond this many (the outer fences).
    pub tukey_severe_iqr: f64,
    /// At least mild when the modified z-score's magnitude exceeds this.
    pub modified_z: f64,
}

/// The rule of [`outliers`].
pub const OUTLIER_RULE: OutlierRule = OutlierRule {
    tukey_mild_iqr: 1.5,
    tukey_severe_iqr: 3.0,
    modified_z: MODIFIED_Z_LIMIT,
};

impl OutlierRule {
    /// The rule in one sentence, for a report's note where outliers are counted.
    pub fn text(&self) -> String {
        format!(
            "an outlier lies beyond Tukey's fences (mild: more than {} IQR past a quartile; severe: more than {} IQR) or has a modified z-score |0.6745 (x - median) / MAD| above {}, among at least {} runs; outliers are counted and kept in the statistics, never dropped",
            self.tukey_mild_iqr, self.tukey_severe_iqr, self.modified_z, MIN_OUTLIER_SAMPLES
        )
    }
}

/// How many outliers of each class a sample has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OutlierCount {
    pub mild: usize,
    pub severe: usize,
}

impl OutlierCount {
    /// Counts [`outliers`] of `xs` by class.
    pub fn of(xs: &[f64]) -> OutlierCount {
        if !judged(xs) {
            return OutlierCount::default();
        }
        OutlierCount::of_sorted(xs, &sorted(xs))
    }

    pub fn total(&self) -> usize {
        self.mild + self.severe
    }

    /// `1 outlier`, `3 outliers (1 severe)`; empty for none.
    pub fn text(&self) -> String {
        let n = self.total();
        let noun = if n == 1 { "outlier" } else { "outliers" };
        match (n, self.severe) {
            (0, _) => String::new(),
            (_, 0) => format!("{n} {noun}"),
            (_, s) if s == n && n == 1 => "1 severe outlier".to_string(),
            (_, s) => format!("{n} {noun} ({s} severe)"),
        }
    }
}

/// The fewest samples [`outliers`] classifies: below it there is no "rest" for a
/// sample to stand out from.
pub const MIN_OUTLIER_SAMPLES: usize = 5;

/// Iglewicz and Hoaglin's cut-off for the modified z-score (also hyperfine's).
const MODIFIED_Z_LIMIT: f64 = 3.5;
/// 0.6745 is the 0.75 quantile of the standard normal: it makes the MAD comparable to
/// a standard deviation for normal data.
const MAD_TO_SD: f64 = 0.6745;

/// Returns the outlying samples of `xs`, in input order, each with its class.
///
/// Two rules are combined because each misses cases the other catches:
/// - Tukey's fences with quartiles by linear interpolation ([`quantile`]): beyond
///   1.5 IQR past Q1/Q3 is mild, beyond 3 IQR is severe.
/// - The modified z-score (median and MAD, robust to the outliers themselves):
///   |z| > 3.5 is at least mild.
///
/// The class is the more severe of the two. Fewer than [`MIN_OUTLIER_SAMPLES`]
/// samples, or any NaN or infinity, give an empty list: with 3 or 4 the quartiles and
/// the MAD rest on one or two values, so any spread at all looks outlying (14.2 among
/// 14.2, 14.5, 14.53 has a modified z-score of 6.7). When the IQR is
/// 0 (most samples equal), any sample different from the quartiles lies beyond both
/// fences and is severe; that is Tukey's rule taken literally.
pub fn outliers(xs: &[f64]) -> Vec<Outlier> {
    if !judged(xs) {
        return Vec::new();
    }
    classified(xs, &sorted(xs)).collect()
}

/// Whether [`outliers`] judges `xs` at all: enough samples, every one finite.
fn judged(xs: &[f64]) -> bool {
    xs.len() >= MIN_OUTLIER_SAMPLES && xs.iter().all(|x| x.is_finite())
}

/// The outliers of `xs` (which [`judged`] takes), given its values sorted.
fn classified<'x>(xs: &'x [f64], s: &[f64]) -> impl Iterator<Item = Outlier> + 'x {
    // The sorted copy gives the quartiles and the median; the MAD is the median of the
    // deviations from it (what `median` and `mad` compute, each sorting again).
    let med = quantile(s, 0.5);
    let mad = med.and_then(|m| {
        // On the stack for a cell's few runs, which are most of what is judged.
        let (mut few, mut many) = ([0.0; 32], Vec::new());
        let deviations: &mut [f64] = if let Some(d) = few.get_mut(..s.len()) {
            d
        } else {
            many.resize(s.len(), 0.0);
            &mut many
        };
        for (d, x) in deviations.iter_mut().zip(s) {
            *d = (x - m).abs();
        }
        deviations.sort_by(f64::total_cmp);
        quantile(deviations, 0.5)
    });
    let fences = match (quantile(s, 0.25), quantile(s, 0.75), med, mad) {
        (Some(q1), Some(q3), Some(med), Some(mad)) => Some((q1, q3, med, mad)),
        _ => None,
    };
    fences.into_iter().flat_map(move |(q1, q3, med, mad)| {
        let iqr = q3 - q1;
        let tukey = move |x: f64| {
            let beyond = if x < q1 {
                q1 - x
            } else if x > q3 {
                x - q3
            } else {
                0.0
            };
            if beyond > 3.0 * iqr {
                Some(OutlierClass::Severe)
            } else if beyond > 1.5 * iqr {
                Some(OutlierClass::Mild)
            } else {
                None
            }
        };
        xs.iter().enumerate().filter_map(move |(index, &value)| {
            let modified_z = (mad > 0.0).then(|| MAD_TO_SD * (value - med) / mad);
            let by_z = modified_z
                .filter(|z| z.abs() > MODIFIED_Z_LIMIT)
                .map(|_| OutlierClass::Mild);
            let by_tukey = tukey(value);
            let class = by_z.max(by_tukey)?;
            Some(Outlier {
                index,
                value,
                class,
                modified_z,
                tukey: by_tukey,
            })
        })
    })
}

impl OutlierCount {
    /// `of(xs)`, given `xs` sorted (`sorted` holds the same values in order).
    pub(super) fn of_sorted(xs: &[f64], sorted: &[f64]) -> OutlierCount {
        let mut c = OutlierCount::default();
        if !judged(xs) {
            return c;
        }
        for o in classified(xs, sorted) {
            match o.class {
                OutlierClass::Mild => c.mild += 1,
                OutlierClass::Severe => c.severe += 1,
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes(xs: &[f64]) -> Vec<(usize, OutlierClass)> {
        outliers(xs).iter().map(|o| (o.index, o.class)).collect()
    }

    #[test]
    fn classifies_without_dropping() {
        use OutlierClass::*;
        // Q1 = 10.1, Q3 = 10.3, IQR = 0.2: mild beyond 10.6, severe beyond 10.9.
        let xs = [10.0, 10.1, 10.2, 10.3, 10.2, 10.7, 12.0, 10.1, 10.3];
        assert_eq!(classes(&xs), vec![(5, Mild), (6, Severe)]);
        assert!(classes(&[1.0, 1.0, 1.0]).is_empty());
        assert!(classes(&[1.0, 50.0]).is_empty(), "too few to judge");
        assert_eq!(classes(&[5.0, 5.0, 5.0, 5.0, 6.0]), vec![(4, Severe)]);
        let count = OutlierCount::of(&xs);
        assert_eq!((count.mild, count.severe, count.total()), (1, 1, 2));
        assert_eq!(count.text(), "2 outliers (1 severe)");
        assert_eq!(OutlierCount::of(&[1.0, 1.0, 1.0]).text(), "");
        assert!(OUTLIER_RULE.text().contains("1.5 IQR") && OUTLIER_RULE.text().contains("3.5"));
    }
}
