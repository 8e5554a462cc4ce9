//! Comparing a candidate with a baseline: Welch's t-test, the ratio of means with
//! Fieller's interval, and a verdict with the runs that would likely decide it.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::percent::{of_mean_interval, of_mean_pct};
use super::power::{RunsNeeded, runs_to_detect};
use super::ratio::{MeanEstimate, RatioInterval, fieller};
use super::t_quantile;
use super::verdict::Verdict;
use crate::model::{Better, DEFAULT_NOISE_BAND};

/// Welch's unequal-variances t-test of `a` against `b`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Welch {
    /// `(mean(a) - mean(b)) / se`; ±infinity when both variances are 0 and the means
    /// differ, 0 when they are equal.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom; `na + nb - 2` when both variances are 0.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Standard error of the difference of means, `sqrt(va/na + vb/nb)`.
    pub se: f64,
}

/// Welch's t-test (two-sided) of `a` against `b`, the same as scipy's
/// `ttest_ind(a, b, equal_var=False)`.
///
/// `t = (mean_a - mean_b) / sqrt(va/na + vb/nb)`, `df` by Welch–Satterthwaite and
/// `p = 2 · sf(|t|)` of Student's t; the survival function keeps its precision for tiny
/// p where `1 - cdf` would round to 0. (statrs has no two-sample test.)
///
/// None when either side has fewer than 2 samples or holds a NaN or an infinity. When
/// both variances are 0, equal means give p = 1 and different means p = 0.
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let scale = scale_of(&[a], &[b]);
    let (ea, eb) = (scaled(&[a], scale)?, scaled(&[b], scale)?);
    let mut w = welch_of(&ea, &eb)?;
    w.se *= scale;
    Some(w)
}

/// Welch's test of two estimates (see [`welch`]); strata add their terms to the
/// Welch–Satterthwaite sums. `se` is in the estimates' units.
fn welch_of(a: &MeanEstimate, b: &MeanEstimate) -> Option<Welch> {
    let se2 = a.var + b.var;
    let diff = a.mean - b.mean;
    let floor = a.df_floor() + b.df_floor();
    if se2 == 0.0 {
        return Some(Welch {
            t: if diff == 0.0 {
                0.0
            } else {
                f64::INFINITY.copysign(diff)
            },
            df: floor,
            p: if diff == 0.0 { 1.0 } else { 0.0 },
            se: 0.0,
        });
    }
    let se = se2.sqrt();
    let t = diff / se;
    let denominator = a.var_sq_df + b.var_sq_df;
    let df = if denominator > 0.0 {
        se2 * se2 / denominator
    } else {
        floor
    };
    let p = if t.is_infinite() {
        0.0
    } else {
        let dist = StudentsT::new(0.0, 1.0, df).ok()?;
        (2.0 * dist.sf(t.abs())).min(1.0)
    };
    Some(Welch { t, df, p, se })
}

/// Why two sets of samples could not be compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Incomparable {
    /// A side (or a stratum of it) has fewer than 2 runs: no spread, no test.
    #[error("needs at least 2 runs on each side (have {baseline} and {candidate})")]
    TooFewRuns { baseline: usize, candidate: usize },
    #[error("a value is not a finite number")]
    NotFinite,
    /// Every baseline value is 0: there is no ratio to it.
    #[error("the baseline's mean is 0, so there is no relative difference")]
    ZeroBaseline,
    #[error("the confidence must be between 0 and 1")]
    Confidence,
    /// The strata of the two sides do not pair up (a pooled comparison's bug).
    #[error("the two sides have different numbers of boards")]
    Strata,
}

/// A candidate against a baseline on one metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    pub baseline_runs: usize,
    pub candidate_runs: usize,
    /// Boards pooled per side (1 for a plain comparison).
    pub strata: usize,
    /// `mean_c / mean_b`.
    pub ratio: f64,
    /// Fieller's confidence set of the ratio (see [`compare`]).
    pub ratio_ci: RatioInterval,
    /// `(mean_c - mean_b) / |mean_b| · 100`: the relative difference, positive when the
    /// candidate's mean is higher (also for a negative baseline).
    pub diff_pct: f64,
    /// The confidence interval of `diff_pct`; None where unbounded (or not one interval).
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    /// The difference over the mean of both, `(c - b) / ((c + b) / 2) · 100`: the
    /// seed's "53% faster" for 172 -> 297 MB/s ([`of_mean_pct`]). None unless every
    /// value on both sides is positive.
    pub symmetric_pct: Option<f64>,
    /// Its interval, Fieller's mapped ([`of_mean_interval`]); None on an unbounded side.
    pub symmetric_ci_low_pct: Option<f64>,
    pub symmetric_ci_high_pct: Option<f64>,
    pub confidence: f64,
    /// Welch's test of candidate against baseline (t > 0: candidate larger).
    pub welch: Welch,
    /// The noise band as a fraction (0.02 = 2%).
    pub noise_band: f64,
    /// p < 1 - confidence and |diff_pct| beyond the noise band.
    pub significant: bool,
    pub verdict: Verdict,
    /// For an inconclusive verdict: the runs per side (per board, pooled) that would
    /// likely decide it.
    pub runs_needed: Option<RunsNeeded>,
}

/// The largest magnitude among the values (1 when all are 0): dividing by it keeps
/// squares of means and variances far from underflow and overflow.
fn scale_of(a: &[&[f64]], b: &[&[f64]]) -> f64 {
    let m = a
        .iter()
        .chain(b)
        .flat_map(|xs| xs.iter())
        .filter(|x| x.is_finite())
        .fold(0.0_f64, |m, x| m.max(x.abs()));
    if m > 0.0 { m } else { 1.0 }
}

fn scaled(strata: &[&[f64]], scale: f64) -> Option<MeanEstimate> {
    let owned: Vec<Vec<f64>> = strata
        .iter()
        .map(|xs| xs.iter().map(|x| x / scale).collect())
        .collect();
    let views: Vec<&[f64]> = owned.iter().map(Vec::as_slice).collect();
    let mut e = MeanEstimate::stratified(&views)?;
    // Dividing cannot make a positive value 0 unless it underflowed; judge the
    // originals.
    e.positive = strata.iter().all(|xs| xs.iter().all(|x| *x > 0.0));
    Some(e)
}

/// Compares `candidate` to `baseline`; `better` says which direction is an improvement.
///
/// **Interval.** The relative difference is `mean_c / mean_b - 1`, and its confidence
/// interval is Fieller's for the ratio of means ([`fieller`](super::fieller)) with
/// the t quantile at Welch's degrees of freedom, so the interval excludes a ratio of 1
/// exactly when Welch's p < 1 - confidence. When every value is positive the interval
/// is cut at a ratio of 0: a throughput or a time is at worst 100% lower. When the
/// baseline's mean is not significantly different from 0 the set is unbounded, and the
/// bounds are None, never a wrong finite number.
///
/// **Verdict** (`noise_band` a fraction: [`DEFAULT_NOISE_BAND`](crate::model::DEFAULT_NOISE_BAND) = 0.02):
/// - better / worse: p < 1 - confidence and |diff_pct| beyond the band (`significant`);
///   which of the two by `better` and the sign of `mean_c - mean_b`;
/// - equivalent: the whole interval inside ±band;
/// - inconclusive: neither, with [`RunsNeeded`]: the runs per side for 80% power at
///   this confidence against the observed spread ([`runs_to_detect`]), for the
///   observed difference when it lies beyond the band, else for the interval to fit
///   inside the band (the room between the difference and the band's edge). At least
///   one more run than the larger side has.
pub fn compare(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
    noise_band: f64,
    better: Better,
) -> Result<Comparison, Incomparable> {
    compare_strata(&[baseline], &[candidate], confidence, noise_band, better)
}

/// [`compare`] on strata: each side is the equally weighted mean of its strata's means
/// (one board each, in the same order on both sides), and the variance is the
/// within-board one ([`MeanEstimate::stratified`]). So the verdict is about the boards
/// measured, each weighing the same however many runs it took; differences between
/// boards of one model do not widen it. One stratum is exactly [`compare`].
pub fn compare_strata(
    baseline: &[&[f64]],
    candidate: &[&[f64]],
    confidence: f64,
    noise_band: f64,
    better: Better,
) -> Result<Comparison, Incomparable> {
    if !(confidence > 0.0 && confidence < 1.0) {
        return Err(Incomparable::Confidence);
    }
    if baseline.len() != candidate.len() || baseline.is_empty() {
        return Err(Incomparable::Strata);
    }
    let count = |s: &[&[f64]]| s.iter().map(|xs| xs.len()).sum::<usize>();
    let few = |s: &[&[f64]]| s.iter().any(|xs| xs.len() < 2);
    if few(baseline) || few(candidate) {
        return Err(Incomparable::TooFewRuns {
            baseline: count(baseline),
            candidate: count(candidate),
        });
    }
    let finite = |s: &[&[f64]]| s.iter().all(|xs| xs.iter().all(|x| x.is_finite()));
    if !finite(baseline) || !finite(candidate) {
        return Err(Incomparable::NotFinite);
    }
    let scale = scale_of(baseline, candidate);
    let eb = scaled(baseline, scale).ok_or(Incomparable::NotFinite)?;
    let ec = scaled(candidate, scale).ok_or(Incomparable::NotFinite)?;
    if eb.mean == 0.0 {
        return Err(Incomparable::ZeroBaseline);
    }
    let mut w = welch_of(&ec, &eb).ok_or(Incomparable::NotFinite)?;
    let t = t_quantile(confidence, w.df).ok_or(Incomparable::Confidence)?;
    let positive = eb.positive && ec.positive;
    let ratio_ci = fieller(&ec, &eb, t, positive).ok_or(Incomparable::ZeroBaseline)?;
    let ratio = ec.mean / eb.mean;
    // Relative to |mean_b|: positive when the candidate's mean is higher.
    let sign = eb.mean.signum();
    let to_pct = |r: f64| (r - 1.0) * sign * 100.0;
    let diff_pct = (ec.mean - eb.mean) / eb.mean.abs() * 100.0;
    let (mut ci_low_pct, mut ci_high_pct) = match ratio_ci {
        RatioInterval::Interval { low, high } => (low.map(to_pct), high.map(to_pct)),
        RatioInterval::Outside { .. } => (None, None),
    };
    if sign < 0.0 {
        std::mem::swap(&mut ci_low_pct, &mut ci_high_pct);
    }
    let noise_band = if noise_band.is_finite() {
        noise_band.abs()
    } else {
        DEFAULT_NOISE_BAND
    };
    let alpha = 1.0 - confidence;
    let beyond_band = diff_pct.abs() > noise_band * 100.0;
    let significant = w.p < alpha && beyond_band;
    let inside_band = matches!(
        (ci_low_pct, ci_high_pct),
        (Some(l), Some(h)) if l >= -noise_band * 100.0 && h <= noise_band * 100.0
    ) && matches!(ratio_ci, RatioInterval::Interval { .. });
    let verdict = if significant {
        if (ec.mean > eb.mean) == (better == Better::Higher) {
            Verdict::Better
        } else {
            Verdict::Worse
        }
    } else if inside_band {
        Verdict::Equivalent
    } else {
        Verdict::Inconclusive
    };
    let runs_needed = (verdict == Verdict::Inconclusive)
        .then(|| {
            let band = noise_band * eb.mean.abs();
            let gap = (ec.mean - eb.mean).abs();
            let effect = if beyond_band { gap } else { band - gap };
            runs_to_detect(
                eb.var_per_run + ec.var_per_run,
                eb.var_per_run_sq + ec.var_per_run_sq,
                effect,
                confidence,
                eb.max_stratum_runs.max(ec.max_stratum_runs) + 1,
            )
        })
        .flatten();
    let (symmetric_ci_low_pct, symmetric_ci_high_pct) = if positive {
        of_mean_interval(ratio_ci)
    } else {
        (None, None)
    };
    w.se *= scale;
    Ok(Comparison {
        baseline_mean: eb.mean * scale,
        candidate_mean: ec.mean * scale,
        baseline_runs: eb.runs,
        candidate_runs: ec.runs,
        strata: eb.strata,
        ratio,
        symmetric_pct: positive.then(|| of_mean_pct(ratio)),
        symmetric_ci_low_pct,
        symmetric_ci_high_pct,
        ratio_ci,
        diff_pct,
        ci_low_pct,
        ci_high_pct,
        confidence,
        welch: w,
        noise_band,
        significant,
        verdict,
        runs_needed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_variance_is_decided_without_nan() {
        let same = welch(&[2.0, 2.0], &[2.0, 2.0, 2.0]).expect("enough samples");
        assert_eq!((same.t, same.p), (0.0, 1.0));
        let apart = welch(&[3.0, 3.0], &[2.0, 2.0]).expect("enough samples");
        assert_eq!((apart.t, apart.p), (f64::INFINITY, 0.0));
        assert_eq!(welch(&[1.0], &[1.0, 2.0]), None);
        let tiny = welch(&[1e-170, 2e-170, 3e-170], &[1e-170, 1e-170, 2e-170]).expect("tiny");
        assert!(
            tiny.df.is_finite() && tiny.p.is_finite() && tiny.t.is_finite(),
            "{tiny:?}"
        );
    }

    #[test]
    fn verdict_follows_direction_and_noise_band() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let faster = [90.0, 91.0, 89.0, 90.5, 89.5];
        let lower = compare(&base, &faster, 0.95, 0.02, Better::Lower).expect("comparable");
        assert_eq!(lower.verdict, Verdict::Better);
        assert!((lower.diff_pct - -10.0).abs() < 1e-9);
        let (lo, hi) = (lower.ci_low_pct.unwrap(), lower.ci_high_pct.unwrap());
        assert!(lo < -10.0 && hi > -10.0);
        let higher = compare(&base, &faster, 0.95, 0.02, Better::Higher).expect("comparable");
        assert_eq!(higher.verdict, Verdict::Worse);
        // 1% apart with tiny noise: p is small but the noise band says "no", and the
        // whole interval lies inside it: equivalent.
        let steady = [100.0, 100.1, 99.9, 100.05, 99.95];
        let close = [101.0, 101.1, 100.9, 101.05, 100.95];
        let c = compare(&steady, &close, 0.95, 0.02, Better::Higher).expect("comparable");
        assert!(c.welch.p < 0.05 && !c.significant);
        assert_eq!(c.verdict, Verdict::Equivalent);
        assert_eq!(c.runs_needed, None);
        assert_eq!(
            compare(&[0.0, 0.0], &close, 0.95, 0.02, Better::Higher),
            Err(Incomparable::ZeroBaseline)
        );
        assert_eq!(
            compare(&[1.0], &close, 0.95, 0.02, Better::Higher),
            Err(Incomparable::TooFewRuns {
                baseline: 1,
                candidate: 5
            })
        );
    }

    /// The lab numbers: a throughput whose interval is wider than its mean.
    /// The old interval reached -252.9%; the ratio's stays at or above -100%.
    #[test]
    fn a_noisy_throughput_is_inconclusive_within_the_possible_range() {
        let ext4 = [250.0, 40.0, 120.0];
        let btrfs = [20.0, 200.0, 62.0];
        let c = compare(&ext4, &btrfs, 0.95, 0.02, Better::Higher).expect("comparable");
        assert_eq!(c.verdict, Verdict::Inconclusive);
        assert!(c.ci_low_pct.is_some_and(|l| l >= -100.0), "{c:?}");
        let more = c.runs_needed.expect("runs to decide");
        assert!(more.runs > 3, "{more:?}");
    }

    #[test]
    fn negative_means_keep_the_direction_of_the_difference() {
        // -10 °C to -5 °C is 5 degrees warmer: +50% of the baseline's magnitude.
        let b = [-10.0, -10.2, -9.8, -10.1];
        let c = [-5.0, -5.1, -4.9, -5.05];
        let r = compare(&b, &c, 0.95, 0.02, Better::Higher).expect("comparable");
        assert!((r.ratio - 0.5).abs() < 0.01, "{r:?}");
        assert!((r.diff_pct - 50.0).abs() < 1.0, "{r:?}");
        let (lo, hi) = (r.ci_low_pct.unwrap(), r.ci_high_pct.unwrap());
        assert!(lo < r.diff_pct && r.diff_pct < hi, "{r:?}");
        assert_eq!(r.verdict, Verdict::Better);
        assert_eq!(r.symmetric_pct, None);
    }

    #[test]
    fn one_stratum_is_a_plain_comparison() {
        let (b, c) = ([10.0, 11.0, 10.5], [12.0, 12.5, 11.8, 12.2]);
        let plain = compare(&b, &c, 0.95, 0.02, Better::Higher).unwrap();
        let one = compare_strata(&[&b], &[&c], 0.95, 0.02, Better::Higher).unwrap();
        assert_eq!(plain, one);
        let two = compare_strata(&[&b, &b], &[&c, &c], 0.95, 0.02, Better::Higher).unwrap();
        assert_eq!(two.strata, 2);
        assert!((two.ratio - plain.ratio).abs() < 1e-12);
        assert!(
            two.welch.p < plain.welch.p,
            "twice the runs, the same effect"
        );
    }
}
