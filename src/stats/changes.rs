//! Change points in a short, noisy series (a configuration's per-run means, oldest
//! first): where its mean shifts, by a permutation-tested, fix-aware binary
//! segmentation, and whether the newest value starts a shift. Pure and deterministic.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::{mean, variance};

/// The most values [`change_points`] looks at: the newest ones (a year of nightly runs).
/// Its work is `O(permutations · n²)` per tested segment, so this bounds it.
pub const MAX_CHANGE_POINTS_SERIES: usize = 365;

/// A significant candidate is a change only when at most this share of the permutations
/// of its segment score as high (see [`change_points`]).
const PERMUTATION_GUARD: f64 = 0.2;

/// How far from a segment's median (in robust standard deviations) a value counts as
/// it is when segments are scored; farther ones count as this far (see [`change_points`]).
const TAME_MADS: f64 = 5.0;

/// The fewest values before the newest for the newest-value test (2 degrees of freedom).
const NEWEST_MIN_BEFORE: usize = 3;

/// How [`change_points`] decides.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ChangeRule {
    /// The false-positive rate per test: a segment's best candidate is a change when
    /// its Bonferroni-corrected p-value is at most this (0.001, as Apache Otava's
    /// default is for its uncorrected one).
    pub max_pvalue: f64,
    /// The smallest relative change reported, `|after / before - 1|` (0.02 = 2%).
    pub min_magnitude: f64,
    /// Permutations of the robustness test (at most 100 000).
    pub permutations: u32,
    /// The fewest values of a segment that does not end at the newest value (at least 2).
    pub min_segment: usize,
    /// The seed of the permutations' generator: the same series and rule give the same
    /// answer, run after run.
    pub seed: u64,
}

impl Default for ChangeRule {
    fn default() -> Self {
        ChangeRule {
            max_pvalue: 0.001,
            min_magnitude: 0.0,
            permutations: 199,
            min_segment: 2,
            seed: 0x6265_6e63_6870_6970,
        }
    }
}

/// Where the series' mean shifts: `index` is the first value of the new level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChangePoint {
    pub index: usize,
    /// The mean of the segment that ends at `index` and of the one that starts there.
    pub before: f64,
    pub after: f64,
    /// The p-value of the test that found it (a permutation p, or Student's t for the
    /// newest value).
    pub p: f64,
    /// `segment` (a split or an interval's boundary) or `newest` (the newest value alone
    /// against the segment before it).
    pub test: ChangeTest,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeTest {
    Segment,
    Newest,
}

/// The change points of `xs`, oldest first (a documented, deterministic method for
/// short, noisy series such as 5 to 60 nightly runs).
///
/// **Segments.** Binary segmentation: a segment's candidates are every split into a
/// before and an after part, and, so that a regression fixed a few runs later is not
/// missed, every *interval* inside it (a level that starts and ends inside the segment,
/// the "epidemic" alternative). A plain split sees a 5-run bump in 30 runs diluted by
/// the 25 runs around it (Otava's e-divisive with a t-test misses a 25% one); the
/// interval is the bump itself. Values farther than 5 robust standard deviations
/// (`1.4826 · MAD`) from the segment's median are scored as that far (winsorized): an
/// outlier weighs as a strong value, never as a level of its own. Each candidate is its `m` values against the other
/// `n - m`, scored by Student's pooled two-sample t (`n - 2` degrees of freedom); parts
/// hold at least `min_segment` values. The segment's best candidate is a change when
/// both hold:
/// - *significance*: its t's two-sided p times the number of candidates (Bonferroni,
///   for the maximum over all of them) is at most `max_pvalue`, so pure normal noise
///   gives a false change in at most that share of segments, however many candidates;
/// - *robustness*: the permutation test of the largest score over the segment's own
///   values, shuffled (`p = (1 + k) / (1 + P)`, `k` of `P` permutations scoring at
///   least as high; a fixed-seed generator, stopped early once `k` decides), has
///   `p ≤ 0.2`. A lone outlier or a heavy tail scores as high wherever the shuffle puts
///   it, so it is no change, where a t-test alone would call it one.
///
/// Of a significant interval, each boundary stays when Student's t between its two
/// sides has `p ≤ max_pvalue` (the boundary's place is given, so uncorrected): an
/// interval that only ends a value or two before the segment's end, by chance, is then
/// a split. The parts are segmented again.
///
/// **The newest value.** A segment needs `min_segment` values, but a nightly run wants
/// to know tonight: the newest value is also tested alone against the rest of its
/// segment (at least 3 values) by the prediction interval's t,
/// `(x - m̄) / (s √(1 + 1/m))` with `m - 1` degrees of freedom, at `max_pvalue`. An
/// outlier there reads as a change until the next value: then it is an interior value
/// of one, never a segment.
///
/// **Magnitude.** Changes whose `|after / before - 1|` is below `min_magnitude` are
/// dropped, smallest first, their segments merged.
///
/// Only the newest [`MAX_CHANGE_POINTS_SERIES`] values are looked at; indices are into
/// `xs`. A series holding a non-finite value, or too short to split, has none.
pub fn change_points(xs: &[f64], rule: &ChangeRule) -> Vec<ChangePoint> {
    if xs.iter().any(|x| !x.is_finite()) {
        return Vec::new();
    }
    let offset = xs.len().saturating_sub(MAX_CHANGE_POINTS_SERIES);
    let ys = &xs[offset..];
    let rule = ChangeRule {
        min_segment: rule.min_segment.max(2),
        permutations: rule.permutations.clamp(1, 100_000),
        ..*rule
    };
    let mut found: Vec<(usize, f64, ChangeTest)> = Vec::new();
    segment(ys, 0, ys.len(), &rule, &mut found);
    found.sort_by_key(|c| c.0);
    if let Some(newest) = newest_change(ys, &found, &rule) {
        found.push(newest);
    }
    drop_small(ys, &mut found, rule.min_magnitude);
    let bounds: Vec<usize> = found.iter().map(|c| c.0).collect();
    found
        .iter()
        .enumerate()
        .map(|(i, &(index, p, test))| {
            let start = if i == 0 { 0 } else { bounds[i - 1] };
            let end = bounds.get(i + 1).copied().unwrap_or(ys.len());
            ChangePoint {
                index: index + offset,
                before: mean(&ys[start..index]),
                after: mean(&ys[index..end]),
                p,
                test,
            }
        })
        .collect()
}

/// A candidate: the values `[a, b)` of a segment against the rest of it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Candidate {
    a: usize,
    b: usize,
    stat: f64,
}

/// The best candidate of centred values `ys` (a split when `a == 0` or `b == n`), parts
/// of at least `min` values; None when there is none.
fn best(ys: &[f64], min: usize, prefix: &mut Vec<f64>) -> Option<Candidate> {
    let n = ys.len();
    prefix.clear();
    prefix.push(0.0);
    let mut run = 0.0;
    for y in ys {
        run += y;
        prefix.push(run);
    }
    let nf = n as f64;
    let mut top: Option<Candidate> = None;
    let mut consider = |a: usize, b: usize| {
        let m = (b - a) as f64;
        let s = prefix[b] - prefix[a];
        let stat = s * s * nf / (m * (nf - m));
        if top.is_none_or(|t| stat > t.stat) {
            top = Some(Candidate { a, b, stat });
        }
    };
    // Splits: [0, k) against [k, n).
    for k in min..=n.saturating_sub(min) {
        consider(0, k);
    }
    // Intervals [a, b) with both outer parts non-empty: together at least `min`.
    for a in 1..n {
        for b in (a + min)..n {
            if a + (n - b) >= min {
                consider(a, b);
            }
        }
    }
    top
}

/// Finds the change points in `xs[start..end]`, recursively.
fn segment(
    xs: &[f64],
    start: usize,
    end: usize,
    rule: &ChangeRule,
    found: &mut Vec<(usize, f64, ChangeTest)>,
) {
    let part = &xs[start..end];
    let n = part.len();
    if n < 2 * rule.min_segment {
        return;
    }
    let tamed = tame(part);
    let m = mean(&tamed);
    let spread = tamed.iter().fold(0.0_f64, |s, x| s.max((x - m).abs()));
    if spread == 0.0 {
        return;
    }
    let centred: Vec<f64> = tamed.iter().map(|x| (x - m) / spread).collect();
    let mut prefix = Vec::with_capacity(n + 1);
    let Some(top) = best(&centred, rule.min_segment, &mut prefix) else {
        return;
    };
    let p = bonferroni_p(&centred, top.stat, rule.min_segment);
    if p.partial_cmp(&rule.max_pvalue)
        .is_none_or(std::cmp::Ordering::is_gt)
        || permutation_p(&centred, top.stat, rule, start, end, &mut prefix) > PERMUTATION_GUARD
    {
        return;
    }
    let mut cuts: Vec<usize> = Vec::new();
    if top.a == 0 {
        cuts.push(top.b);
    } else if top.b == n {
        cuts.push(top.a);
    } else {
        // An interval: each boundary stays when its two sides differ.
        if differ(&part[..top.a], &part[top.a..top.b], rule.max_pvalue) {
            cuts.push(top.a);
        }
        if differ(&part[top.a..top.b], &part[top.b..], rule.max_pvalue) {
            cuts.push(top.b);
        }
    }
    if cuts.is_empty() {
        return;
    }
    let mut from = start;
    for cut in cuts {
        found.push((start + cut, p, ChangeTest::Segment));
        segment(xs, from, start + cut, rule, found);
        from = start + cut;
    }
    segment(xs, from, end, rule, found);
}

/// `xs` with every value beyond [`TAME_MADS`] robust standard deviations
/// (`1.4826 · MAD`) of the median moved to that bound; unchanged when the MAD is 0.
fn tame(xs: &[f64]) -> Vec<f64> {
    let (Some(mid), Some(mad)) = (super::median(xs), super::mad(xs)) else {
        return xs.to_vec();
    };
    let bound = TAME_MADS * 1.4826 * mad;
    if bound.is_nan() || bound <= 0.0 {
        return xs.to_vec();
    }
    xs.iter()
        .map(|x| x.clamp(mid - bound, mid + bound))
        .collect()
}

/// The p of the best candidate's score `stat` over centred `ys` by Student's pooled t,
/// times the number of candidates (at most 1). The score is the between-groups sum of
/// squares `B`; with the total `Q`, `t² = B (n - 2) / (Q - B)`.
fn bonferroni_p(ys: &[f64], stat: f64, min: usize) -> f64 {
    let n = ys.len();
    let total: f64 = ys.iter().map(|y| y * y).sum();
    let df = n as f64 - 2.0;
    let within = total - stat;
    let p = if within <= total * 1e-12 {
        0.0
    } else {
        two_sided_p((stat * df / within).sqrt(), 1.0, df)
    };
    (p * candidates(n, min) as f64).min(1.0)
}

/// How many candidates `best` scores in a segment of `n` values with parts of `min`.
fn candidates(n: usize, min: usize) -> usize {
    let splits = (n + 1).saturating_sub(2 * min);
    let intervals = (1..n)
        .map(|a| (a + min..n).filter(|&b| a + (n - b) >= min).count())
        .sum::<usize>();
    splits + intervals
}

/// Whether Student's pooled t-test tells `a` from `b` at `alpha`.
fn differ(a: &[f64], b: &[f64], alpha: f64) -> bool {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() || na + nb < 3.0 {
        return false;
    }
    let (ma, mb) = (mean(a), mean(b));
    let ss = variance(a, ma) * (na - 1.0).max(0.0) + variance(b, mb) * (nb - 1.0).max(0.0);
    let df = na + nb - 2.0;
    let se = (ss / df * (1.0 / na + 1.0 / nb)).sqrt();
    two_sided_p(ma - mb, se, df) <= alpha
}

/// The two-sided p of `diff / se` under Student's t with `df` degrees of freedom: 0 for
/// a difference with no spread, 1 for none.
fn two_sided_p(diff: f64, se: f64, df: f64) -> f64 {
    if diff == 0.0 {
        return 1.0;
    }
    if se <= 0.0 || !se.is_finite() {
        return 0.0;
    }
    let t = (diff / se).abs();
    match StudentsT::new(0.0, 1.0, df) {
        Ok(d) if t.is_finite() => (2.0 * d.sf(t)).min(1.0),
        Ok(_) => 0.0,
        Err(_) => 1.0,
    }
}

/// The permutation p-value of the best candidate's statistic `observed` over `ys`;
/// the generator is seeded by the rule's seed and the segment, so the answer depends on
/// nothing but them.
fn permutation_p(
    ys: &[f64],
    observed: f64,
    rule: &ChangeRule,
    start: usize,
    end: usize,
    prefix: &mut Vec<f64>,
) -> f64 {
    let total = f64::from(rule.permutations) + 1.0;
    // More than this many at least as large rule a change out: stop there.
    let enough = (PERMUTATION_GUARD * total - 1.0).floor().max(0.0);
    let mut rng = SplitMix(rule.seed ^ ((start as u64) << 32) ^ end as u64);
    let mut shuffled = ys.to_vec();
    // A relative tolerance, so that a permutation equal to the observed order counts.
    let bar = observed * (1.0 - 1e-12);
    let mut at_least = 0.0;
    for _ in 0..rule.permutations {
        rng.shuffle(&mut shuffled);
        if best(&shuffled, rule.min_segment, prefix).is_some_and(|c| c.stat >= bar) {
            at_least += 1.0;
            if at_least > enough {
                return ((at_least + 1.0) / total).min(1.0);
            }
        }
    }
    (at_least + 1.0) / total
}

/// The newest value as the start of a change, against the rest of its segment.
fn newest_change(
    xs: &[f64],
    found: &[(usize, f64, ChangeTest)],
    rule: &ChangeRule,
) -> Option<(usize, f64, ChangeTest)> {
    let n = xs.len();
    let last = n.checked_sub(1)?;
    let start = found.last().map_or(0, |c| c.0);
    if start >= last || last - start < NEWEST_MIN_BEFORE {
        return None;
    }
    let before = &xs[start..last];
    let m = before.len() as f64;
    let mb = mean(before);
    let sd = variance(before, mb).sqrt();
    let p = two_sided_p(xs[last] - mb, sd * (1.0 + 1.0 / m).sqrt(), m - 1.0);
    (p <= rule.max_pvalue).then_some((last, p, ChangeTest::Newest))
}

/// Drops the changes smaller than `min` (relative to the mean before), smallest first,
/// merging their segments.
fn drop_small(xs: &[f64], found: &mut Vec<(usize, f64, ChangeTest)>, min: f64) {
    if min.is_nan() || min <= 0.0 {
        return;
    }
    while !found.is_empty() {
        let bounds: Vec<usize> = found.iter().map(|c| c.0).collect();
        let size = |i: usize| {
            let start = if i == 0 { 0 } else { bounds[i - 1] };
            let end = bounds.get(i + 1).copied().unwrap_or(xs.len());
            relative(mean(&xs[start..bounds[i]]), mean(&xs[bounds[i]..end]))
        };
        let (smallest, magnitude) = (0..found.len())
            .map(|i| (i, size(i)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap_or((0, f64::INFINITY));
        if magnitude >= min {
            return;
        }
        found.remove(smallest);
    }
}

/// `|after / before - 1|`; infinite from a zero `before` to anything else.
pub fn relative(before: f64, after: f64) -> f64 {
    if before == after {
        0.0
    } else if before == 0.0 {
        f64::INFINITY
    } else {
        ((after - before) / before).abs()
    }
}

/// SplitMix64 (Steele, Lea and Flood 2014): a small, fixed generator, so permutations
/// are the same on every machine and version.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform integer below `bound` (> 0), by rejection: no modulo bias.
    fn below(&mut self, bound: u64) -> u64 {
        let zone = u64::MAX - u64::MAX % bound;
        loop {
            let v = self.next();
            if v < zone {
                return v % bound;
            }
        }
    }

    /// Fisher–Yates.
    fn shuffle(&mut self, xs: &mut [f64]) {
        for i in (1..xs.len()).rev() {
            #[allow(
                clippy::cast_possible_truncation,
                reason = "below i + 1, an index of the slice"
            )]
            let j = self.below(i as u64 + 1) as usize;
            xs.swap(i, j);
        }
    }
}

#[cfg(test)]
#[path = "changes_tests.rs"]
mod tests;
