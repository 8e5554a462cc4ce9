//! Outlier classification: which samples look unlike the rest. Nothing is dropped; the
//! report shows the classes so a reader can judge (a cold cache, a throttled run).

use serde::Serialize;

use super::{mad, median, quantile, sorted};

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
/// The class is the more severe of the two. Fewer than 3 samples, or any NaN or
/// infinity, give an empty list: there is no "rest" to stand out from. When the IQR is
/// 0 (most samples equal), any sample different from the quartiles lies beyond both
/// fences and is severe; that is Tukey's rule taken literally.
pub fn outliers(xs: &[f64]) -> Vec<Outlier> {
    if xs.len() < 3 || xs.iter().any(|x| !x.is_finite()) {
        return Vec::new();
    }
    let s = sorted(xs);
    let (Some(q1), Some(q3), Some(med), Some(mad)) =
        (quantile(&s, 0.25), quantile(&s, 0.75), median(xs), mad(xs))
    else {
        return Vec::new();
    };
    let iqr = q3 - q1;
    let tukey = |x: f64| {
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
    xs.iter()
        .enumerate()
        .filter_map(|(index, &value)| {
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
        .collect()
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
    }
}
