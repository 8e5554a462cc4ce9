//! Statistics: pure, documented functions over `&[f64]`. No I/O.
//!
//! - [`summarize`]: n, mean, sd, median, min, max and a Student's t confidence interval.
//! - [`outliers`]: classifies (never drops) outlying samples; [`OUTLIER_RULE`] says how.
//! - [`welch`] and [`compare`] (`compare.rs`): a candidate against a baseline, with the
//!   ratio of means and Fieller's interval ([`fieller`], `ratio.rs`); [`compare_strata`]
//!   pools boards of one model; [`Verdict`] and its one rendering, [`describe`]
//!   (`verdict.rs`).
//! - `percent.rs`: a difference as a percentage of the baseline or of the
//!   mean of both ([`of_mean_pct`]; which one is `model::Percent`), its interval mapped from Fieller's.
//! - [`runs_to_detect`], [`runs_for_precision`] and [`wide_ci`] (`power.rs`): about how
//!   many runs would decide a comparison or narrow an interval.
//! - [`precision_reached`] and [`RunRule`]: when an adaptive run count may stop.
//! - [`ministat`]: the `benchpipe stats A.txt B.txt` report.
//! - [`change_points`] (`changes.rs`): where a series of per-run means shifts, by a
//!   permutation-tested, fix-aware binary segmentation ([`ChangeRule`]).
//!
//! Every function is total: empty input, NaN, a zero mean or zero variance give `None`,
//! `false` or a documented value, never a panic and never a NaN in the result.

mod adaptive;
mod changes;
mod compare;
mod ministat;
mod outliers;
mod percent;
mod power;
mod ratio;
mod verdict;

pub use adaptive::{RunDecision, RunRule, StopReason, precision_reached};
pub use changes::{
    ChangePoint, ChangeRule, ChangeTest, MAX_CHANGE_POINTS_SERIES, change_points, relative,
};
pub use compare::{Comparison, Incomparable, Welch, compare, compare_strata, welch};
pub use ministat::{StatsError, ministat};
pub use outliers::{OUTLIER_RULE, Outlier, OutlierClass, OutlierCount, OutlierRule, outliers};
pub use percent::{of_mean_interval, of_mean_pct};
pub use power::{
    DECIDING_POWER, MAX_RUNS_ESTIMATE, RunsNeeded, WideCi, runs_for_precision, runs_to_detect,
    wide_ci,
};
pub use ratio::{MeanEstimate, RatioInterval, fieller};
pub use verdict::{
    Description, Verdict, Words, describe, describe_incomparable, interval_text, p_text,
};

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Descriptive statistics of one metric's samples, with a confidence interval of the mean.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (divides by n-1); 0 when n = 1.
    pub sd: f64,
    /// sd / |mean|; NaN-free: 0 when the mean is 0.
    pub rel_sd: f64,
    /// Standard error of the mean: sd / sqrt(n).
    pub se: f64,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub confidence: f64,
    /// Half-width of the Student's t confidence interval; None when n < 2.
    pub ci_half: Option<f64>,
}

impl Summary {
    /// The confidence interval of the mean, `(mean - half, mean + half)`; None when n < 2.
    pub fn ci(&self) -> Option<(f64, f64)> {
        self.ci_half.map(|h| (self.mean - h, self.mean + h))
    }

    /// ci_half / |mean|: the precision the adaptive run count aims at. None when n < 2
    /// or the mean is 0 (a relative width means nothing there).
    pub fn ci_rel(&self) -> Option<f64> {
        let half = self.ci_half?;
        (self.mean != 0.0).then(|| half / self.mean.abs())
    }
}

/// Summarises `xs` at the given confidence level (e.g. 0.95).
///
/// None for an empty slice or one holding a NaN or an infinity. `ci_half` is None when
/// n < 2 or the confidence is not strictly between 0 and 1.
///
/// The interval is Student's t: `mean ± t(df = n-1, (1+confidence)/2) · sd/√n`, which
/// assumes the samples are independent and roughly normal; benchmark runs of one cell
/// usually are, and [`outliers`] shows when they are not.
pub fn summarize(xs: &[f64], confidence: f64) -> Option<Summary> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    Some(summarize_sorted(xs, &sorted(xs), confidence))
}

/// [`summarize`] and [`OutlierCount::of`] of the same values, sorting them once: a big
/// report judges tens of thousands of them.
pub fn summarize_with_outliers(xs: &[f64], confidence: f64) -> (Option<Summary>, OutlierCount) {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return (None, OutlierCount::of(xs));
    }
    let sorted = sorted(xs);
    (
        Some(summarize_sorted(xs, &sorted, confidence)),
        OutlierCount::of_sorted(xs, &sorted),
    )
}

/// `summarize` of finite, non-empty `xs`, given them sorted.
fn summarize_sorted(xs: &[f64], sorted: &[f64], confidence: f64) -> Summary {
    let n = xs.len();
    let mean = mean(xs);
    let sd = variance(xs, mean).sqrt();
    let se = sd / (n as f64).sqrt();
    let ci_half = if n >= 2 {
        t_quantile(confidence, (n - 1) as f64).map(|t| t * se)
    } else {
        None
    };
    Summary {
        n,
        mean,
        sd,
        rel_sd: if mean == 0.0 { 0.0 } else { sd / mean.abs() },
        se,
        median: quantile(sorted, 0.5).unwrap_or(mean),
        min: sorted[0],
        max: sorted[n - 1],
        confidence,
        ci_half,
    }
}

/// The two-sided Student's t critical value: the `(1+confidence)/2` quantile with `df`
/// degrees of freedom. None unless 0 < confidence < 1 and df > 0.
pub fn t_quantile(confidence: f64, df: f64) -> Option<f64> {
    // Written so that NaN fails every comparison and is rejected.
    let valid = confidence > 0.0 && confidence < 1.0 && df > 0.0;
    if !valid {
        return None;
    }
    // The inverse CDF is a numeric search, and a report asks for the same few values
    // (one per run count) for every cell of every table: each thread remembers the
    // values it computed, a pure function's results, so nothing shown changes.
    thread_local! {
        static KNOWN: std::cell::RefCell<std::collections::HashMap<(u64, u64), Option<f64>>> =
            std::cell::RefCell::default();
    }
    let key = (confidence.to_bits(), df.to_bits());
    if let Some(t) = KNOWN.with(|k| k.borrow().get(&key).copied()) {
        return t;
    }
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let t = dist.inverse_cdf(f64::midpoint(1.0, confidence));
    let t = t.is_finite().then_some(t);
    KNOWN.with(|k| {
        let mut k = k.borrow_mut();
        // Bounded: a caller sweeping df (run estimates) cannot grow it without end.
        if k.len() >= T_QUANTILES_KEPT {
            k.clear();
        }
        k.insert(key, t);
    });
    t
}

/// The most `t_quantile` values a thread keeps.
const T_QUANTILES_KEPT: usize = 4096;

/// The `q` quantile (0 ≤ q ≤ 1) of an ascending slice by linear interpolation between
/// order statistics (Hyndman & Fan type 7, the default of numpy and R). None when empty
/// or q is outside [0, 1].
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = position.ceil() as usize;
    let weight = position - below as f64;
    Some(sorted[below] + (sorted[above] - sorted[below]) * weight)
}

/// The median of unsorted values; None when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    quantile(&sorted(xs), 0.5)
}

/// Median absolute deviation from the median, unscaled (no 1.4826 factor); None when
/// empty.
pub fn mad(xs: &[f64]) -> Option<f64> {
    let m = median(xs)?;
    let deviations: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&deviations)
}

pub(crate) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance (n-1); 0 for a single value.
pub(crate) fn variance(xs: &[f64], mean: f64) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
}

/// Ascending copy; NaNs (which callers filter out first) would sort last.
pub(crate) fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degenerate_inputs_give_none_not_nan() {
        assert_eq!(summarize(&[], 0.95), None);
        assert_eq!(summarize(&[1.0, f64::NAN], 0.95), None);
        let one = summarize(&[4.0], 0.95).expect("one value");
        assert_eq!((one.sd, one.ci_half, one.median), (0.0, None, 4.0));
        let bad_confidence = summarize(&[1.0, 2.0], 1.5).expect("values");
        assert_eq!(bad_confidence.ci_half, None);
        let zeros = summarize(&[0.0, 0.0], 0.95).expect("values");
        assert_eq!(
            (zeros.rel_sd, zeros.ci_half, zeros.ci_rel()),
            (0.0, Some(0.0), None)
        );
    }

    /// One sort for both gives exactly what each gives on its own, for every kind of
    /// input: empty, too few to judge outliers, ties, outliers, non-finite values, and
    /// more values than the outlier rule keeps on the stack.
    #[test]
    fn summarize_with_outliers_is_summarize_and_the_outlier_count() {
        let many: Vec<f64> = (0..40)
            .map(|i| f64::from(i).sqrt() + if i == 17 { 30.0 } else { 0.0 })
            .collect();
        assert_eq!(
            outliers(&many).len(),
            1,
            "the case with many values has an outlier"
        );
        let cases: [&[f64]; 10] = [
            &many,
            &[],
            &[4.2],
            &[1.0, 50.0],
            &[1.0, 1.0, 1.0, 1.0, 1.0],
            &[5.0, 5.0, 5.0, 5.0, 6.0],
            &[10.0, 10.1, 10.2, 10.3, 10.2, 10.7, 12.0, 10.1, 10.3],
            &[3.0, -1.0, 2.0, 8.0, 2.5, 2.25, -40.0],
            &[1.0, f64::NAN, 2.0, 3.0, 4.0],
            &[1.0, 2.0, f64::INFINITY, 3.0, 4.0, 5.0],
        ];
        for xs in cases {
            for confidence in [0.9, 0.95, 0.99] {
                let (summary, count) = summarize_with_outliers(xs, confidence);
                assert_eq!(summary, summarize(xs, confidence), "{xs:?}");
                assert_eq!(count, OutlierCount::of(xs), "{xs:?}");
            }
        }
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.25), Some(1.75));
        assert_eq!(quantile(&v, 0.5), Some(2.5));
        assert_eq!(quantile(&v, 1.0), Some(4.0));
        assert_eq!(quantile(&v, 1.1), None);
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 100.0]), Some(1.0));
    }
}
