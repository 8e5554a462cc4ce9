//! The ratio of two means and its confidence interval (Fieller's), from one sample per
//! side or from equally weighted strata (boards of one model).

use serde::Serialize;

use super::{mean, variance};

/// A mean and the variance of its estimate: of one sample, or the equally weighted mean
/// of several strata's means (one per board), each stratum's runs independent.
///
/// With strata `i = 1..k` of `n_i` runs, means `x̄_i` and variances `s_i²`:
/// `mean = Σ x̄_i / k` and `var = Σ s_i² / (n_i k²)`. One stratum is one sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MeanEstimate {
    pub mean: f64,
    /// The variance of `mean`: `Σ s_i² / (n_i k²)`.
    pub var: f64,
    /// `Σ (s_i² / (n_i k²))² / (n_i - 1)`: the denominator of Welch–Satterthwaite.
    pub var_sq_df: f64,
    /// `Σ s_i² / k²`: what `var` would be with one run per stratum (the power rule's).
    pub var_per_run: f64,
    /// `Σ (s_i² / k²)²`: with `var_per_run`, the degrees of freedom the power rule uses.
    pub var_per_run_sq: f64,
    /// All runs, over every stratum.
    pub runs: usize,
    /// The most runs of one stratum.
    pub max_stratum_runs: usize,
    pub strata: usize,
    /// Every value is above 0 (a throughput, a duration): the true mean is too.
    pub positive: bool,
}

impl MeanEstimate {
    /// The estimate of one sample; None with fewer than 2 values or a non-finite one.
    pub fn of(xs: &[f64]) -> Option<MeanEstimate> {
        MeanEstimate::stratified(&[xs])
    }

    /// The equally weighted mean of the strata's means. None when there is no stratum,
    /// or one has fewer than 2 values or a non-finite one.
    pub fn stratified(strata: &[&[f64]]) -> Option<MeanEstimate> {
        if strata.is_empty()
            || strata
                .iter()
                .any(|xs| xs.len() < 2 || xs.iter().any(|x| !x.is_finite()))
        {
            return None;
        }
        let k = strata.len() as f64;
        let mut e = MeanEstimate {
            mean: 0.0,
            var: 0.0,
            var_sq_df: 0.0,
            var_per_run: 0.0,
            var_per_run_sq: 0.0,
            runs: 0,
            max_stratum_runs: 0,
            strata: strata.len(),
            positive: true,
        };
        for xs in strata {
            let n = xs.len() as f64;
            let m = mean(xs);
            let s2 = variance(xs, m);
            let per_run = s2 / (k * k);
            let of_mean = per_run / n;
            e.mean += m / k;
            e.var += of_mean;
            e.var_sq_df += of_mean * of_mean / (n - 1.0);
            e.var_per_run += per_run;
            e.var_per_run_sq += per_run * per_run;
            e.runs += xs.len();
            e.max_stratum_runs = e.max_stratum_runs.max(xs.len());
            e.positive &= xs.iter().all(|x| *x > 0.0);
        }
        Some(e)
    }

    /// Runs minus strata: the degrees of freedom left when every variance is 0.
    pub(crate) fn df_floor(&self) -> f64 {
        (self.runs - self.strata) as f64
    }
}

/// A confidence set for a ratio of means `ρ = μ_candidate / μ_baseline`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RatioInterval {
    /// `low ≤ ρ ≤ high`; None is unbounded on that side.
    Interval { low: Option<f64>, high: Option<f64> },
    /// `ρ ≤ below` or `ρ ≥ above`: the baseline's mean is not significantly different
    /// from 0, and the data exclude only the ratios between. No finite interval is
    /// honest here, so none is printed.
    Outside { below: f64, above: f64 },
}

impl RatioInterval {
    /// Whether `rho` lies in the set.
    pub fn contains(&self, rho: f64) -> bool {
        match *self {
            RatioInterval::Interval { low, high } => {
                low.is_none_or(|l| l <= rho) && high.is_none_or(|h| rho <= h)
            }
            RatioInterval::Outside { below, above } => rho <= below || rho >= above,
        }
    }

    /// The bounds when the set is one bounded interval.
    pub fn bounded(&self) -> Option<(f64, f64)> {
        match *self {
            RatioInterval::Interval {
                low: Some(l),
                high: Some(h),
            } => Some((l, h)),
            _ => None,
        }
    }

    /// Whether the set is one interval bounded on both sides.
    pub fn is_bounded(&self) -> bool {
        self.bounded().is_some()
    }
}

/// Fieller's confidence set for `μ_c / μ_b` from two independent estimates, at the
/// two-sided critical value `t`.
///
/// The set is every ρ the test of `μ_c - ρ μ_b = 0` does not reject:
/// `(x̄_c - ρ x̄_b)² ≤ t² (V_c + ρ² V_b)`, a quadratic inequality
/// `A ρ² - 2 B ρ + C ≤ 0` with `A = x̄_b² - t² V_b`, `B = x̄_b x̄_c`,
/// `C = x̄_c² - t² V_c`. When `A > 0` (the baseline's mean is significantly nonzero) it
/// is the bounded interval between the roots; when `A < 0` it is two rays
/// ([`RatioInterval::Outside`]) or everything; `A = 0` gives one ray. Unlike a
/// difference divided by the baseline's mean, it accounts for the baseline's own
/// uncertainty, and it is exact for normal data with known variances.
///
/// With `positive` (every value on both sides above 0, so the true ratio is too) the
/// set is intersected with `ρ ≥ 0`: a throughput can be at worst 100% lower, never
/// more. Intersecting a confidence set with the possible values keeps its coverage.
///
/// Callers pass estimates scaled so their magnitudes are near 1 (see `compare`);
/// None when the baseline is exactly 0 with no variance (no ratio exists).
pub fn fieller(
    candidate: &MeanEstimate,
    baseline: &MeanEstimate,
    t: f64,
    positive: bool,
) -> Option<RatioInterval> {
    let (mb, mc, vb, vc) = (baseline.mean, candidate.mean, baseline.var, candidate.var);
    if mb == 0.0 && vb == 0.0 {
        return None;
    }
    let t2 = t * t;
    let a = mb * mb - t2 * vb;
    let b = mb * mc;
    let c = mc * mc - t2 * vc;
    // B² - AC written out, which cancels nothing: t² (x̄_b² V_c + x̄_c² V_b - t² V_b V_c).
    let disc = t2 * (mb * mb * vc + mc * mc * vb - t2 * vb * vc);
    // The two roots by the cancellation-free pair of formulas.
    let roots = |disc: f64| -> (f64, f64) {
        let s = disc.max(0.0).sqrt();
        let q = if b >= 0.0 { b + s } else { b - s };
        if q == 0.0 {
            return (0.0, 0.0);
        }
        let (r1, r2) = (q / a, c / q);
        (r1.min(r2), r1.max(r2))
    };
    let raw = if a > 0.0 {
        let (l, h) = roots(disc);
        RatioInterval::Interval {
            low: Some(l),
            high: Some(h),
        }
    } else if a < 0.0 {
        if disc <= 0.0 {
            RatioInterval::Interval {
                low: None,
                high: None,
            }
        } else {
            let (l, h) = roots(disc);
            RatioInterval::Outside { below: l, above: h }
        }
    } else if b > 0.0 {
        RatioInterval::Interval {
            low: Some(c / (2.0 * b)),
            high: None,
        }
    } else if b < 0.0 {
        RatioInterval::Interval {
            low: None,
            high: Some(c / (2.0 * b)),
        }
    } else {
        RatioInterval::Interval {
            low: None,
            high: None,
        }
    };
    Some(if positive { at_least_zero(raw) } else { raw })
}

/// `set ∩ [0, ∞)`, for ratios of positive means. A set with nothing at or above 0
/// (which positive data cannot give) is returned unchanged rather than made empty.
fn at_least_zero(set: RatioInterval) -> RatioInterval {
    match set {
        RatioInterval::Interval { low, high } => {
            if high.is_some_and(|h| h < 0.0) {
                return set;
            }
            RatioInterval::Interval {
                low: Some(low.map_or(0.0, |l| l.max(0.0))),
                high,
            }
        }
        RatioInterval::Outside { below, above } if below < 0.0 => RatioInterval::Interval {
            low: Some(above.max(0.0)),
            high: None,
        },
        outside @ RatioInterval::Outside { .. } => outside,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(mean: f64, var: f64) -> MeanEstimate {
        MeanEstimate {
            mean,
            var,
            var_sq_df: var * var,
            var_per_run: var,
            var_per_run_sq: var * var,
            runs: 4,
            max_stratum_runs: 4,
            strata: 1,
            positive: mean > 0.0,
        }
    }

    #[test]
    fn fieller_has_three_shapes_and_is_cut_at_zero_for_positive_data() {
        // Precise baseline: a bounded interval around 2.
        let i = fieller(&est(2.0, 0.01), &est(1.0, 0.01), 2.0, false).unwrap();
        let (l, h) = i.bounded().unwrap();
        assert!(l < 2.0 && 2.0 < h && i.contains(2.0), "{i:?}");
        // A vague candidate: bounded, but reaching below 0 unless cut.
        let i = fieller(&est(0.1, 0.04), &est(1.0, 0.001), 2.0, false).unwrap();
        assert!(i.bounded().unwrap().0 < 0.0, "{i:?}");
        let cut = fieller(&est(0.1, 0.04), &est(1.0, 0.001), 2.0, true).unwrap();
        assert_eq!(cut.bounded().unwrap().0, 0.0);
        // A baseline mean not distinguishable from 0: two rays, or a ray once cut.
        let i = fieller(&est(1.0, 0.001), &est(0.1, 0.04), 2.0, false).unwrap();
        assert!(matches!(i, RatioInterval::Outside { .. }), "{i:?}");
        assert!(!i.is_bounded());
        let cut = fieller(&est(1.0, 0.001), &est(0.1, 0.04), 2.0, true).unwrap();
        assert!(
            matches!(cut, RatioInterval::Interval { low: Some(l), high: None } if l > 0.0),
            "{cut:?}"
        );
        // Neither significant: everything (the positive half when cut).
        let i = fieller(&est(0.1, 0.04), &est(0.1, 0.04), 2.0, false).unwrap();
        assert_eq!(
            i,
            RatioInterval::Interval {
                low: None,
                high: None
            }
        );
        // No variance: the exact ratio.
        let i = fieller(&est(3.0, 0.0), &est(2.0, 0.0), 2.0, true).unwrap();
        assert_eq!(i.bounded(), Some((1.5, 1.5)));
        assert_eq!(fieller(&est(3.0, 0.0), &est(0.0, 0.0), 2.0, false), None);
    }
}
