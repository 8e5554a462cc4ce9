//! Comparing two sets of samples: Welch's t-test and the percent difference of a
//! candidate from a baseline, with its confidence interval and a verdict.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{mean, t_quantile, variance};
use crate::model::Better;

/// Differences smaller than this fraction of the baseline (2%) are not called
/// significant however small p is: boards drift by that much between sessions.
pub const DEFAULT_NOISE_BAND: f64 = 0.02;

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
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean(a), mean(b));
    let va = variance(a, ma) / na;
    let vb = variance(b, mb) / nb;
    let se2 = va + vb;
    let diff = ma - mb;
    if se2 == 0.0 {
        let df = na + nb - 2.0;
        return Some(if diff == 0.0 {
            Welch {
                t: 0.0,
                df,
                p: 1.0,
                se: 0.0,
            }
        } else {
            Welch {
                t: f64::INFINITY.copysign(diff),
                df,
                p: 0.0,
                se: 0.0,
            }
        });
    }
    let se = se2.sqrt();
    let t = diff / se;
    // se2² / (va²/(na-1) + vb²/(nb-1)), in shares of se2 so tiny variances do not
    // underflow to 0/0.
    let (share_a, share_b) = (va / se2, vb / se2);
    let df = 1.0 / (share_a * share_a / (na - 1.0) + share_b * share_b / (nb - 1.0));
    let p = if t.is_infinite() {
        0.0
    } else {
        let dist = StudentsT::new(0.0, 1.0, df).ok()?;
        (2.0 * dist.sf(t.abs())).min(1.0)
    };
    Some(Welch { t, df, p, se })
}

/// The outcome of a comparison, from the candidate's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Significantly better: faster, or higher where higher is better.
    #[serde(rename = "better")]
    Better,
    #[serde(rename = "worse")]
    Worse,
    #[serde(rename = "no significant difference")]
    NoSignificantDifference,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantDifference => "no significant difference",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A candidate against a baseline on one metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    /// `(mean_c / mean_b - 1) · 100`.
    pub diff_pct: f64,
    /// Confidence interval of `diff_pct` (see [`compare`] for the approximation).
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    pub confidence: f64,
    /// Welch's test of candidate against baseline (t > 0: candidate larger).
    pub welch: Welch,
    /// The noise band as a fraction (0.02 = 2%).
    pub noise_band: f64,
    /// p < 1 - confidence and |diff_pct| beyond the noise band.
    pub significant: bool,
    pub verdict: Verdict,
}

/// Compares `candidate` to `baseline`; `better` says which direction is an improvement.
///
/// The confidence interval of the percent difference is Welch's interval of the
/// difference of means, `(mean_c - mean_b) ± t(df, (1+confidence)/2) · se`, divided by
/// the baseline mean. That treats the baseline mean as exact; it is a good
/// approximation while the baseline's own relative standard error is small (a few
/// percent, as after an adaptive run), and too narrow otherwise. Fieller's interval of
/// a ratio would be exact under normality.
///
/// `significant` needs both p < 1 - confidence and |diff_pct| > noise_band · 100
/// (`noise_band` is a fraction: [`DEFAULT_NOISE_BAND`] = 0.02).
///
/// None when either side has fewer than 2 finite samples, the baseline mean is 0 (no
/// percent difference), or the confidence is not strictly between 0 and 1.
pub fn compare(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
    noise_band: f64,
    better: Better,
) -> Option<Comparison> {
    let w = welch(candidate, baseline)?;
    let (mb, mc) = (mean(baseline), mean(candidate));
    if mb == 0.0 {
        return None;
    }
    let t_crit = t_quantile(confidence, w.df)?;
    let diff = mc - mb;
    let half = t_crit * w.se;
    let to_pct = |d: f64| d / mb * 100.0;
    let (a, b) = (to_pct(diff - half), to_pct(diff + half));
    // (mc/mb - 1)·100 written as the CI's own formula, so the CI of an exact
    // difference contains it to the last bit.
    let diff_pct = to_pct(diff);
    let noise_band = if noise_band.is_finite() {
        noise_band.abs()
    } else {
        DEFAULT_NOISE_BAND
    };
    let significant = w.p < 1.0 - confidence && diff_pct.abs() > noise_band * 100.0;
    let verdict = if !significant {
        Verdict::NoSignificantDifference
    } else if (diff > 0.0) == (better == Better::Higher) {
        Verdict::Better
    } else {
        Verdict::Worse
    };
    Some(Comparison {
        baseline_mean: mb,
        candidate_mean: mc,
        diff_pct,
        ci_low_pct: a.min(b),
        ci_high_pct: a.max(b),
        confidence,
        welch: w,
        noise_band,
        significant,
        verdict,
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
        assert!(tiny.df.is_finite() && tiny.p.is_finite(), "{tiny:?}");
    }

    #[test]
    fn verdict_follows_direction_and_noise_band() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let faster = [90.0, 91.0, 89.0, 90.5, 89.5];
        let lower = compare(&base, &faster, 0.95, 0.02, Better::Lower).expect("comparable");
        assert_eq!(lower.verdict, Verdict::Better);
        assert!((lower.diff_pct - -10.0).abs() < 1e-9);
        assert!(lower.ci_low_pct < -10.0 && lower.ci_high_pct > -10.0);
        let higher = compare(&base, &faster, 0.95, 0.02, Better::Higher).expect("comparable");
        assert_eq!(higher.verdict, Verdict::Worse);
        // 1% apart with tiny noise: p is small but the noise band says "no".
        let steady = [100.0, 100.1, 99.9, 100.05, 99.95];
        let close = [101.0, 101.1, 100.9, 101.05, 100.95];
        let c = compare(&steady, &close, 0.95, 0.02, Better::Higher).expect("comparable");
        assert!(c.welch.p < 0.05 && !c.significant);
        assert_eq!(c.verdict, Verdict::NoSignificantDifference);
        assert_eq!(
            compare(&[0.0, 0.0], &close, 0.95, 0.02, Better::Higher),
            None
        );
    }
}
