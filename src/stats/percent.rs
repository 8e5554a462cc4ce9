//! How a relative difference is written as a percentage: of the baseline (from the
//! ratio of means, the default) or of the mean of both (the first seed's "53% faster";
//! the choice is `model::Percent`), each with its confidence interval mapped from
//! Fieller's interval of the ratio.

use super::ratio::RatioInterval;

/// The difference over the mean of both means, in percent, from their ratio
/// `r = c / b`: `(c - b) / ((c + b) / 2) · 100 = 200 (r - 1) / (r + 1)` (divide
/// numerator and denominator by `b`).
///
/// Meaningful for `r ≥ 0` (both means positive), where it runs from -200% (`r = 0`)
/// towards +200% (`r → ∞`) and is 0 at `r = 1`. For positive means it is antisymmetric
/// under swapping the sides (`of_mean_pct(1 / r) = -of_mean_pct(r)`), which a
/// percentage of the baseline is not. NaN at `r = -1` (callers pass `r ≥ 0` only).
pub fn of_mean_pct(r: f64) -> f64 {
    2.0 * (r - 1.0) / (r + 1.0) * 100.0
}

/// The confidence interval of [`of_mean_pct`] from Fieller's confidence set of the
/// ratio, for positive means (the set already cut at `r ≥ 0`): `(low, high)`, None on a
/// side where there is no finite bound to give.
///
/// **Derivation.** `g(r) = 200 (r - 1) / (r + 1)` has `g'(r) = 400 / (r + 1)² > 0`, so
/// on `r ≥ 0` it is a strictly increasing bijection onto `[-200, 200)`. For any set
/// `C` of ratios, `r ∈ C ⇔ g(r) ∈ g(C)`; so if `C` covers the true ratio with
/// probability `1 - α`, `g(C)` covers the true difference over the mean of both with
/// the same probability, and an interval `[l, h]` maps to `[g(l), g(h)]`. Equivalently,
/// `g(C)` is the set of `s` the Fieller test of `μ_c - r(s) μ_b = 0` does not reject,
/// with `r(s) = (200 + s) / (200 - s)` the inverse (the unit test inverts that test
/// numerically and finds the same bounds).
///
/// An unbounded side of the ratio's interval stays unbounded here (None): `g` would
/// give the trivial +200%, which reads as a measured bound. Two rays
/// ([`RatioInterval::Outside`]) map to two rays, which are not one interval: (None,
/// None).
pub fn of_mean_interval(ratio_ci: RatioInterval) -> (Option<f64>, Option<f64>) {
    match ratio_ci {
        RatioInterval::Interval { low, high } => (
            low.filter(|l| *l >= 0.0).map(of_mean_pct),
            high.filter(|h| *h >= 0.0).map(of_mean_pct),
        ),
        RatioInterval::Outside { .. } => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Better, Percent};
    use crate::stats::{MeanEstimate, compare, t_quantile};

    /// The first seed's UASP table: each "% difference" is the difference over the mean
    /// of both, to the percent the seed printed.
    #[test]
    fn the_seeds_uasp_row_is_the_difference_over_the_mean_of_both() {
        for (without, with, seed) in [
            (172.13, 296.71, 53.0),
            (102.67, 149.00, 37.0),
            (14.41, 20.59, 35.0),
            (23.28, 28.54, 20.0),
        ] {
            let s = of_mean_pct(with / without);
            assert_eq!(s.round(), seed, "{without} -> {with}: {s}");
            // The same 124.58 over 234.42, written out.
            let direct = (with - without) / f64::midpoint(with, without) * 100.0;
            assert!((s - direct).abs() < 1e-9, "{s} vs {direct}");
            assert!((of_mean_pct(without / with) + s).abs() < 1e-9);
        }
        // The power row: 5.29 W without UASP, 4.87 W with it: "8% power savings".
        assert_eq!(of_mean_pct(4.87 / 5.29).round(), -8.0);
        assert_eq!(of_mean_pct(1.0), 0.0);
        assert_eq!(of_mean_pct(0.0), -200.0);
    }

    /// The interval, checked against a numeric inversion of Fieller's test on the
    /// difference over the mean of both: bisect for the `s` where
    /// `(x̄_c - r(s) x̄_b)² = t² (V_c + r(s)² V_b)` between an accepted and a rejected
    /// value, independently of the mapping.
    #[test]
    fn its_interval_is_fiellers_test_inverted_numerically() {
        let cases: [(&[f64], &[f64]); 3] = [
            (&[172.1, 170.0, 175.3, 171.2], &[296.7, 290.1, 301.0, 299.2]),
            (&[14.41, 13.9, 15.2], &[20.59, 18.7, 22.4]),
            // Wide: the interval is far from symmetric around the estimate.
            (&[100.0, 60.0, 140.0], &[150.0, 110.0, 220.0]),
        ];
        for (b, c) in cases {
            let cmp = compare(b, c, 0.95, 0.02, Better::Higher).unwrap();
            let (lo, hi) = of_mean_interval(cmp.ratio_ci);
            let (lo, hi) = (lo.unwrap(), hi.unwrap());
            let (eb, ec) = (MeanEstimate::of(b).unwrap(), MeanEstimate::of(c).unwrap());
            let t = t_quantile(0.95, cmp.welch.df).unwrap();
            let rejects = |s: f64| {
                let r = (200.0 + s) / (200.0 - s);
                let lhs = (ec.mean - r * eb.mean).powi(2);
                lhs > t * t * (ec.var + r * r * eb.var)
            };
            let estimate = (ec.mean - eb.mean) / f64::midpoint(ec.mean, eb.mean) * 100.0;
            assert!(!rejects(estimate));
            assert!((cmp.symmetric_pct.unwrap() - estimate).abs() < 1e-9);
            let edge = |mut inside: f64, mut outside: f64| {
                assert!(rejects(outside) && !rejects(inside));
                for _ in 0..200 {
                    let mid = f64::midpoint(inside, outside);
                    if rejects(mid) {
                        outside = mid;
                    } else {
                        inside = mid;
                    }
                }
                inside
            };
            let (num_lo, num_hi) = (edge(estimate, -199.999), edge(estimate, 199.999));
            assert!((lo - num_lo).abs() < 1e-6, "{lo} vs {num_lo}");
            assert!((hi - num_hi).abs() < 1e-6, "{hi} vs {num_hi}");
            assert!(lo < estimate && estimate < hi);
            assert_eq!(
                (cmp.symmetric_ci_low_pct, cmp.symmetric_ci_high_pct),
                (Some(lo), Some(hi))
            );
        }
    }

    #[test]
    fn unbounded_and_two_ray_sets_give_no_false_bound() {
        let open = RatioInterval::Interval {
            low: Some(1.0),
            high: None,
        };
        assert_eq!(of_mean_interval(open), (Some(0.0), None));
        let rays = RatioInterval::Outside {
            below: 0.5,
            above: 2.0,
        };
        assert_eq!(of_mean_interval(rays), (None, None));
        assert_eq!(Percent::parse("of-mean"), Some(Percent::OfMean));
        assert_eq!(Percent::parse("of-the-mean"), None);
        for n in Percent::NAMES {
            assert_eq!(Percent::parse(n).unwrap().name(), n);
        }
    }
}
