//! How many runs would likely settle a question: a comparison that is inconclusive,
//! or a confidence interval wider than asked. Estimates from the observed spread,
//! bounded, stated as "about N runs".

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{Summary, t_quantile};

/// The chance of a decision the run estimates aim at: 80%, the usual choice.
pub const DECIDING_POWER: f64 = 0.8;

/// No estimate goes past this many runs: beyond it the answer is "more than".
pub const MAX_RUNS_ESTIMATE: usize = 1000;

/// An estimated run count: about `runs`, or, with `more_than`, more than
/// [`MAX_RUNS_ESTIMATE`] (then `runs` is that bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RunsNeeded {
    pub runs: usize,
    pub more_than: bool,
}

impl RunsNeeded {
    fn beyond() -> RunsNeeded {
        RunsNeeded {
            runs: MAX_RUNS_ESTIMATE,
            more_than: true,
        }
    }

    /// "about 12" or "more than 1000".
    pub fn text(&self) -> String {
        if self.more_than {
            format!("more than {}", self.runs)
        } else {
            format!("about {}", self.runs)
        }
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (0 < p < 1).
fn t_at(p: f64, df: f64) -> Option<f64> {
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    let t = dist.inverse_cdf(p);
    t.is_finite().then_some(t)
}

/// The smallest `m` in `from..=MAX_RUNS_ESTIMATE` for which `ok(m)` holds, where `ok`
/// only turns from false to true as `m` grows; "more than" when none does.
fn smallest(from: usize, ok: impl Fn(usize) -> bool) -> RunsNeeded {
    smallest_guided(from, None, ok)
}

/// `smallest`, first trying `guess` as the upper end of the search: where `ok(guess)`
/// holds, the bisection runs below it in a few steps instead of ten (each step is two
/// inverse CDFs, and a big report's comparisons ask for hundreds of estimates). The
/// answer is the one the whole range gives, since `ok` only turns from false to true.
fn smallest_guided(from: usize, guess: Option<usize>, ok: impl Fn(usize) -> bool) -> RunsNeeded {
    let from = from.clamp(2, MAX_RUNS_ESTIMATE);
    let hi = match guess.filter(|g| (from..MAX_RUNS_ESTIMATE).contains(g) && ok(*g)) {
        Some(g) => g,
        None if ok(MAX_RUNS_ESTIMATE) => MAX_RUNS_ESTIMATE,
        None => return RunsNeeded::beyond(),
    };
    // Bisection over a monotone predicate: at most ~10 steps.
    let (mut lo, mut hi) = (from, hi);
    if ok(lo) {
        return RunsNeeded {
            runs: lo,
            more_than: false,
        };
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    RunsNeeded {
        runs: hi,
        more_than: false,
    }
}

/// Runs per side (per stratum) for a difference of `effect` between two sides to be
/// found at `confidence` with [`DECIDING_POWER`], from the observed spread.
///
/// `var_per_run` is the variance the difference of the two means would have with one
/// run per side in every stratum (`Σ s² / k²` over both sides' strata), and
/// `var_per_run_sq` the sum of the squares of its terms. With `m` runs per side the
/// standard error is `√(var_per_run / m)` and Welch–Satterthwaite gives
/// `df(m) = (m - 1) · var_per_run² / var_per_run_sq`. The rule is the usual
/// shifted-t one: the smallest `m ≥ from` with
/// `(t(df, (1+confidence)/2) + t(df, power)) · √(var_per_run / m) ≤ effect`.
/// It agrees with a noncentral-t power calculation (statsmodels'
/// `TTestIndPower.solve_power`) to within a run for equal variances.
///
/// "More than" [`MAX_RUNS_ESTIMATE`] when even that many would not do (or `effect` is
/// 0); `from` is at least 2. None when the confidence is not strictly between 0 and
/// 1 or a variance is negative or not finite.
pub fn runs_to_detect(
    var_per_run: f64,
    var_per_run_sq: f64,
    effect: f64,
    confidence: f64,
    from: usize,
) -> Option<RunsNeeded> {
    let valid = confidence > 0.0
        && confidence < 1.0
        && var_per_run >= 0.0
        && var_per_run.is_finite()
        && var_per_run_sq >= 0.0
        && var_per_run_sq.is_finite()
        && effect.is_finite();
    if !valid {
        return None;
    }
    let effect = effect.abs();
    if var_per_run == 0.0 {
        // No spread: any difference shows at once, none never does.
        return Some(if effect > 0.0 {
            RunsNeeded {
                runs: from.max(2),
                more_than: false,
            }
        } else {
            RunsNeeded::beyond()
        });
    }
    if effect == 0.0 {
        return Some(RunsNeeded::beyond());
    }
    // var_per_run_sq is 0 only by underflow; then every term is tiny and equal weight
    // is as good a guess as any (df = 2(m - 1)).
    let df_per_run = if var_per_run_sq > 0.0 {
        var_per_run * var_per_run / var_per_run_sq
    } else {
        2.0
    };
    // The two quantiles' sum at m runs per side.
    let quantiles = |m: usize| {
        let df = (m as f64 - 1.0) * df_per_run;
        match (t_quantile(confidence, df), t_at(DECIDING_POWER, df)) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        }
    };
    let ok = |m: usize| quantiles(m).is_some_and(|q| q * (var_per_run / m as f64).sqrt() <= effect);
    // The runs a sum of quantiles `q` asks for: ok(m) needs m >= this at m's own sum.
    let runs_for = |q: f64| var_per_run * q * q / (effect * effect);
    // Where to look. t's quantiles lie above the normal's at every df, so no m below
    // the runs the normal quantiles ask for can do (with a margin for rounding), and
    // they fall as df grows, so the runs the quantiles at that lower end ask for most
    // likely do. Only a guess: the search checks it.
    let normal = |p: f64| {
        statrs::distribution::Normal::new(0.0, 1.0)
            .ok()
            .map(|n| n.inverse_cdf(p))
    };
    let from = match (
        normal(f64::midpoint(1.0, confidence)),
        normal(DECIDING_POWER),
    ) {
        (Some(a), Some(b)) if (a + b).is_finite() => {
            let below = runs_for(a + b) * (1.0 - 1e-6) - 1.0;
            // Saturating: a huge or NaN bound leaves `smallest` to say "more than".
            from.max(below.min(MAX_RUNS_ESTIMATE as f64) as usize)
        }
        _ => from,
    };
    let from = from.clamp(2, MAX_RUNS_ESTIMATE);
    let guess = quantiles(from)
        .map(|q| runs_for(q) * (1.0 + 1e-6) + 1.0)
        .filter(|g| *g < MAX_RUNS_ESTIMATE as f64)
        .map(|g| g.ceil() as usize);
    Some(smallest_guided(from, guess, ok))
}

/// Runs for one sample's confidence interval to narrow to `target_rel` of |mean|, by
/// the √n rule at the observed spread: the smallest `m ≥ from` with
/// `t(m - 1, (1+confidence)/2) · sd / √m ≤ target_rel · |mean|`.
///
/// "More than" [`MAX_RUNS_ESTIMATE`] when even that many would not do or the mean is
/// 0; None when the confidence or the target is not strictly between 0 and 1, or a
/// value is not finite.
pub fn runs_for_precision(
    sd: f64,
    mean: f64,
    confidence: f64,
    target_rel: f64,
    from: usize,
) -> Option<RunsNeeded> {
    let valid = confidence > 0.0
        && confidence < 1.0
        && target_rel > 0.0
        && target_rel < 1.0
        && sd >= 0.0
        && sd.is_finite()
        && mean.is_finite();
    if !valid {
        return None;
    }
    if sd == 0.0 {
        return Some(RunsNeeded {
            runs: from.max(2),
            more_than: false,
        });
    }
    if mean == 0.0 {
        return Some(RunsNeeded::beyond());
    }
    let want = target_rel * mean.abs();
    let ok = |m: usize| {
        t_quantile(confidence, m as f64 - 1.0).is_some_and(|t| t * sd / (m as f64).sqrt() <= want)
    };
    Some(smallest(from, ok))
}

/// A confidence interval wider than asked, and the runs that would likely narrow it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WideCi {
    /// The half-width over |mean|: 0.25 for `100 ± 25`.
    pub half_rel: f64,
    /// The share it should stay within.
    pub limit: f64,
    /// Runs for the interval to narrow to `limit` at the same spread
    /// ([`runs_for_precision`]).
    pub runs_needed: RunsNeeded,
}

/// Whether `summary`'s interval is wider than `limit` (a fraction: 0.1 = ±10% of the
/// mean) and how many runs would narrow it. None when it is within the limit, has no
/// interval (n < 2), or the mean is 0 (a relative width means nothing there).
pub fn wide_ci(summary: &Summary, limit: f64) -> Option<WideCi> {
    let half_rel = summary.ci_rel()?;
    if half_rel.is_nan() || half_rel <= limit {
        return None;
    }
    let runs_needed = runs_for_precision(
        summary.sd,
        summary.mean,
        summary.confidence,
        limit,
        summary.n + 1,
    )?;
    Some(WideCi {
        half_rel,
        limit,
        runs_needed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_grow_with_spread_and_are_bounded() {
        let few = runs_to_detect(2.0, 2.0, 3.0, 0.95, 2).unwrap();
        let more = runs_to_detect(8.0, 32.0, 3.0, 0.95, 2).unwrap();
        assert!(few.runs < more.runs && !more.more_than, "{few:?} {more:?}");
        let never = runs_to_detect(1e6, 1e12, 1e-3, 0.95, 2).unwrap();
        assert_eq!(never, RunsNeeded::beyond());
        assert_eq!(never.text(), "more than 1000");
        assert_eq!(
            runs_to_detect(1.0, 1.0, 0.0, 0.95, 2),
            Some(RunsNeeded::beyond())
        );
        assert_eq!(runs_to_detect(1.0, 1.0, 1.0, 1.5, 2), None);
        // Never fewer than asked for.
        assert_eq!(runs_to_detect(1e-6, 1e-12, 100.0, 0.95, 7).unwrap().runs, 7);
        let p = runs_for_precision(10.0, 100.0, 0.95, 0.02, 3).unwrap();
        assert!(!p.more_than && p.runs > 90, "{p:?}");
        assert_eq!(
            runs_for_precision(1.0, 0.0, 0.95, 0.02, 3),
            Some(RunsNeeded::beyond())
        );
        // The issue's `94 ± 175 MB/s`.
        let s = crate::stats::summarize(&[20.0, 250.0, 12.0], 0.95).unwrap();
        let w = wide_ci(&s, 0.1).expect("wider than 10%");
        assert!(w.half_rel > 1.0 && w.runs_needed.runs > 3, "{w:?}");
        let tight = crate::stats::summarize(&[100.0, 100.1, 99.9], 0.95).unwrap();
        assert_eq!(wide_ci(&tight, 0.1), None);
    }

    #[test]
    fn the_guided_search_finds_what_a_search_of_every_run_count_finds() {
        // The first m in from..=1000 the rule accepts, trying each one in turn.
        let every = |v: f64, v2: f64, effect: f64, confidence: f64, from: usize| {
            let df_per_run = v * v / v2;
            (from.clamp(2, MAX_RUNS_ESTIMATE)..=MAX_RUNS_ESTIMATE)
                .find(|&m| {
                    let df = (m as f64 - 1.0) * df_per_run;
                    let a = t_quantile(confidence, df).unwrap();
                    let b = t_at(DECIDING_POWER, df).unwrap();
                    (a + b) * (v / m as f64).sqrt() <= effect
                })
                .map_or(RunsNeeded::beyond(), |runs| RunsNeeded {
                    runs,
                    more_than: false,
                })
        };
        let mut checked = 0;
        for v in [0.01, 0.5, 2.0, 8.0, 50.0, 400.0] {
            // Equal strata (df per run 2), one dominating (1), many small (8).
            for v2 in [v * v / 2.0, v * v, v * v / 8.0] {
                for effect in [0.05, 0.3, 1.0, 2.5, 10.0] {
                    for confidence in [0.9, 0.95, 0.99] {
                        for from in [2, 3, 10, 60] {
                            assert_eq!(
                                runs_to_detect(v, v2, effect, confidence, from),
                                Some(every(v, v2, effect, confidence, from)),
                                "var {v}, var² {v2}, effect {effect}, {confidence}, from {from}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 6 * 3 * 5 * 3 * 4);
    }
}
