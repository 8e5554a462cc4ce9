//! Tests of `changes.rs`: steps, a short regression fixed later, noise, outliers, the
//! newest value, magnitude, short and degenerate series; series from a fixed seed.

use super::*;

/// Normal noise from a fixed seed (Box–Muller over SplitMix).
fn noise(seed: u64, n: usize, sd: f64) -> Vec<f64> {
    let mut g = SplitMix(seed);
    let mut uniform = || (g.next() >> 11) as f64 / (1u64 << 53) as f64;
    (0..n)
        .map(|_| {
            let (u1, u2) = (uniform().max(1e-300), uniform());
            sd * (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
        })
        .collect()
}

/// `levels` as (value, count) runs, plus noise of `sd` (relative to 1).
fn series(seed: u64, levels: &[(f64, usize)], sd: f64) -> Vec<f64> {
    let n = levels.iter().map(|l| l.1).sum();
    let e = noise(seed, n, sd);
    levels
        .iter()
        .flat_map(|&(v, c)| std::iter::repeat_n(v, c))
        .zip(e)
        .map(|(v, e)| v * (1.0 + e))
        .collect()
}

fn indices(xs: &[f64], rule: &ChangeRule) -> Vec<usize> {
    change_points(xs, rule).iter().map(|c| c.index).collect()
}

#[test]
fn a_step_is_found_where_it_starts() {
    let rule = ChangeRule::default();
    for seed in 0..20 {
        let xs = series(seed, &[(100.0, 15), (120.0, 15)], 0.03);
        let found = change_points(&xs, &rule);
        assert_eq!(found.len(), 1, "seed {seed}: {found:?}");
        let c = &found[0];
        assert_eq!((c.index, c.test), (15, ChangeTest::Segment), "seed {seed}");
        assert!((c.before - 100.0).abs() < 3.0 && (c.after - 120.0).abs() < 3.0);
        assert!(c.p <= rule.max_pvalue);
    }
    let two = series(7, &[(10.0, 10), (14.0, 10), (9.0, 10)], 0.02);
    assert_eq!(indices(&two, &rule), [10, 20]);
}

/// The pattern Otava's defaults miss: a 25% regression for 5 of 30 runs, then fixed.
#[test]
fn a_five_run_regression_fixed_later_is_found_at_both_ends() {
    let rule = ChangeRule::default();
    for seed in 0..20 {
        let xs = series(seed, &[(100.0, 12), (125.0, 5), (100.0, 13)], 0.03);
        assert_eq!(indices(&xs, &rule), [12, 17], "seed {seed}");
    }
    // At the start and near the end of the series too.
    let early = series(3, &[(100.0, 2), (125.0, 5), (100.0, 23)], 0.03);
    assert_eq!(indices(&early, &rule), [2, 7]);
    let late = series(4, &[(100.0, 23), (125.0, 5), (100.0, 2)], 0.03);
    assert_eq!(indices(&late, &rule), [23, 28]);
}

/// On pure noise the false alarms stay near the rule's rate: each series has two tests
/// at 0.001 (its segmentation and its newest value).
#[test]
fn pure_noise_has_hardly_any_change() {
    let rule = ChangeRule::default();
    let alarms: usize = (0..300u64)
        .map(|seed| {
            let xs: Vec<f64> = noise(1000 + seed, 30, 0.05)
                .iter()
                .map(|e| 50.0 + 50.0 * e)
                .collect();
            usize::from(!change_points(&xs, &rule).is_empty())
        })
        .sum();
    assert!(alarms <= 3, "{alarms} of 300 noise series had a change");
}

#[test]
fn a_lone_outlier_inside_is_no_change() {
    let rule = ChangeRule::default();
    for seed in 0..20 {
        let mut xs = series(seed, &[(100.0, 30)], 0.03);
        xs[10] = 400.0;
        assert_eq!(indices(&xs, &rule), Vec::<usize>::new(), "seed {seed}");
        xs[11] = -200.0;
        assert_eq!(indices(&xs, &rule), Vec::<usize>::new(), "seed {seed}");
    }
}

/// Tonight's run alone is a change when the runs before it do not predict it; a run
/// like them is not.
#[test]
fn the_newest_value_alone_can_start_a_change() {
    let rule = ChangeRule::default();
    let mut xs = series(5, &[(100.0, 12)], 0.02);
    assert!(change_points(&xs, &rule).is_empty());
    xs.push(130.0);
    let found = change_points(&xs, &rule);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].index, found[0].test), (12, ChangeTest::Newest));
    assert!(found[0].after == 130.0 && (found[0].before - 100.0).abs() < 2.0);
    // After a step, against its own segment.
    let mut ys = series(6, &[(100.0, 10), (150.0, 8)], 0.02);
    ys.push(100.0);
    assert_eq!(indices(&ys, &rule), [10, 18]);
    // Once the next run is back, the lone value is inside: no change.
    xs.push(100.5);
    assert!(change_points(&xs, &rule).is_empty());
}

#[test]
fn changes_below_the_minimum_magnitude_are_dropped() {
    let xs = series(8, &[(100.0, 15), (101.5, 15)], 0.001);
    assert_eq!(indices(&xs, &ChangeRule::default()), [15]);
    let strict = ChangeRule {
        min_magnitude: 0.02,
        ..ChangeRule::default()
    };
    assert!(change_points(&xs, &strict).is_empty());
    let big = series(9, &[(100.0, 10), (101.5, 10), (150.0, 10)], 0.001);
    assert_eq!(indices(&big, &strict), [20]);
}

#[test]
fn short_and_degenerate_series_have_none_and_never_panic() {
    let rule = ChangeRule::default();
    for xs in [
        &[][..],
        &[1.0],
        &[1.0, 2.0],
        &[1.0, 2.0, 3.0],
        &[5.0, 5.0, 5.0, 5.0, 5.0, 5.0],
        &[1.0, f64::NAN, 2.0, 3.0, 4.0, 5.0],
        &[1.0, 2.0, f64::INFINITY, 3.0, 4.0, 5.0],
        &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    ] {
        assert!(change_points(xs, &rule).is_empty(), "{xs:?}");
    }
    // Eight runs are enough for a clear step (three are too few to be sure of).
    let eight = series(1, &[(100.0, 4), (125.0, 4)], 0.03);
    assert_eq!(indices(&eight, &rule), [4]);
    let six = series(1, &[(100.0, 3), (125.0, 3)], 0.03);
    assert_eq!(indices(&six, &rule), Vec::<usize>::new());
    let clean = [1.0, 1.0, 1.0, 1.0, 1.0, 5.0, 5.0, 5.0, 5.0, 5.0];
    assert_eq!(indices(&clean, &rule), [5]);
    // Extreme values and odd rules stay total.
    let huge = [1e300, -1e300, 1e300, 1e-300, 0.0, 1e300, 1e300];
    let _ = change_points(&huge, &rule);
    let odd = ChangeRule {
        max_pvalue: f64::NAN,
        min_magnitude: f64::NAN,
        permutations: 0,
        min_segment: 0,
        seed: 1,
    };
    let _ = change_points(&clean, &odd);
}

#[test]
fn the_answer_is_the_same_every_time_and_bounded() {
    let rule = ChangeRule::default();
    let xs = series(11, &[(100.0, 12), (125.0, 5), (100.0, 13)], 0.05);
    assert_eq!(change_points(&xs, &rule), change_points(&xs, &rule));
    // A long series: only the newest values are looked at, indices into the whole.
    let long = series(12, &[(100.0, 600), (130.0, 100)], 0.02);
    assert_eq!(indices(&long, &rule), [600]);
}
