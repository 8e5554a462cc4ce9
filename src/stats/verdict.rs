//! What a comparison concludes, as data, and the one place it is put into words.

use serde::Serialize;
use std::fmt::Write as _;

use super::compare::{Comparison, Incomparable};
use super::ratio::RatioInterval;
use crate::model::Percent;

/// The outcome of a comparison, from the candidate's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Significantly better beyond the noise band: faster, or higher where higher is
    /// better.
    Better,
    Worse,
    /// The whole confidence interval lies inside the noise band: no difference that
    /// matters.
    Equivalent,
    /// Neither: more runs would likely decide it (`Comparison::runs_needed`).
    Inconclusive,
    /// The samples could not be compared at all (too few runs, a zero baseline); never
    /// a [`Comparison`]'s verdict, only a report row's.
    NotComparable,
}

impl Verdict {
    /// The verdict's name in JSON and plain text: `better`, `not-comparable`, ...
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Equivalent => "equivalent",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotComparable => "not-comparable",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The words for better and worse on a metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Words {
    /// Durations and rates (s, MB/s, req/s, IOPS): faster / slower.
    Speed,
    /// Anything else (watts, segments): better / worse.
    Quality,
    /// No direction is known (`benchpipe stats`): higher / lower.
    Direction,
}

impl Words {
    /// Speed words for a duration (`s`, `ms`, `us`, `µs`, `min`, `h`) or a rate (a unit
    /// with `/s`, `IOPS`); quality words otherwise.
    pub fn for_unit(unit: &str) -> Words {
        let head = unit.split_whitespace().next().unwrap_or("");
        let duration = ["s", "ms", "us", "µs", "ns", "min", "h"].contains(&head);
        if duration || head.ends_with("/s") || head.eq_ignore_ascii_case("iops") {
            Words::Speed
        } else {
            Words::Quality
        }
    }

    fn of(self, v: Verdict) -> &'static str {
        match (self, v) {
            (Words::Speed, Verdict::Better) => "faster",
            (Words::Speed, Verdict::Worse) => "slower",
            (Words::Quality, Verdict::Better) => "better",
            (Words::Quality, Verdict::Worse) => "worse",
            (Words::Direction, Verdict::Better) => "higher",
            (Words::Direction, Verdict::Worse) => "lower",
            (_, v) => v.as_str(),
        }
    }
}

/// How a comparison reads: the difference (only where it is meaningful) and the
/// verdict with its reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Description {
    /// `+42.9% (95% CI +38.0% .. +47.9%; +35.3% of the mean of both, 95% CI +31.9% ..
    /// +38.6%)`; for an
    /// equivalent or inconclusive result only the interval, never a lone percent.
    pub difference: String,
    /// `faster (p = 0.0012, beyond the ±2% noise band)`, `equivalent: ...`,
    /// `inconclusive: ...; about 12 runs per side would likely decide it`.
    pub verdict: String,
}

/// A signed percentage with `decimals` digits: `+12.3%`.
fn pct(x: f64, decimals: usize) -> String {
    let s = format!("{x:+.decimals$}%");
    // -0.0 reads as a difference that is not there.
    if s.trim_start_matches(['-', '+', '0', '.']).starts_with('%') {
        format!("{:.decimals$}%", 0.0)
    } else {
        s
    }
}

/// A fraction as a percentage without needless digits: 0.95 -> "95", 0.025 -> "2.5".
fn level(fraction: f64) -> String {
    let s = format!("{:.4}", fraction * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A p-value for people: 3 significant digits, scientific below 0.001.
pub fn p_text(p: f64) -> String {
    if p == 0.0 {
        "0".into()
    } else if p < 0.001 {
        format!("{p:.2e}")
    } else {
        format!("{p:.3}")
    }
}

/// The interval of the relative difference in `percent`'s convention: `95% CI -1.0% ..
/// +2.0%`, one-sided as `95% CI at least +10.0%`, or unbounded with the reason. Of the
/// mean of both, the bounds say so (`95% CI +48.1% .. +57.9% of the mean of both`).
pub fn interval_text(c: &Comparison, decimals: usize, percent: Percent) -> String {
    let conf = level(c.confidence);
    let unbounded = "unbounded: the baseline's mean is not significantly different from 0";
    let (low, high, of) = match percent {
        Percent::OfBaseline => (c.ci_low_pct, c.ci_high_pct, String::new()),
        Percent::OfMean => (
            c.symmetric_ci_low_pct,
            c.symmetric_ci_high_pct,
            format!(" {}", percent.words()),
        ),
    };
    match (low, high, c.ratio_ci) {
        (_, _, RatioInterval::Outside { .. }) | (None, None, _) => {
            format!("{conf}% CI {unbounded}")
        }
        (Some(l), Some(h), _) => format!(
            "{conf}% CI {} .. {}{of}",
            pct(l, decimals),
            pct(h, decimals)
        ),
        (Some(l), None, _) => format!("{conf}% CI at least {}{of} ({unbounded})", pct(l, decimals)),
        (None, Some(h), _) => format!("{conf}% CI at most {}{of} ({unbounded})", pct(h, decimals)),
    }
}

/// Puts a comparison into words: the one rendering of [`Verdict`]s (tables, `compare`,
/// `stats` and `report --compare` all use it). `runs` names what the run estimate
/// counts: "runs per side", "runs per side on each board", "values per file".
///
/// `percent` is the headline's convention. Of the baseline, a better or worse row
/// gives the difference over the mean of both beside it (when every value is
/// positive); of the mean of both, it gives the difference of the baseline beside it.
/// A row asked for of the mean of both whose values are not all positive has no such
/// number: it reads as of the baseline and says why. The verdict is the same either way
/// (Welch's p and the noise band, a share of the baseline).
pub fn describe(
    c: &Comparison,
    words: Words,
    decimals: usize,
    runs: &str,
    percent: Percent,
) -> Description {
    let band = format!("±{}%", level(c.noise_band));
    let conf = level(c.confidence);
    let alpha = {
        let s = format!("{:.4}", 1.0 - c.confidence);
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    // Of the mean of both needs positive values on both sides.
    let (percent, unavailable) = match (percent, c.symmetric_pct) {
        (Percent::OfMean, None) => (
            Percent::OfBaseline,
            "; no difference over the mean of both: a value is not above 0",
        ),
        (p, _) => (p, ""),
    };
    let difference = match c.verdict {
        Verdict::Better | Verdict::Worse => {
            let mut inner = interval_text(c, decimals, percent);
            let (headline, aside) = match percent {
                Percent::OfBaseline => (
                    pct(c.diff_pct, decimals),
                    c.symmetric_pct.map(|s| {
                        (
                            s,
                            c.symmetric_ci_low_pct.zip(c.symmetric_ci_high_pct),
                            Percent::OfMean.words(),
                        )
                    }),
                ),
                Percent::OfMean => (
                    format!(
                        "{} {}",
                        pct(c.symmetric_pct.unwrap_or(c.diff_pct), decimals),
                        percent.words()
                    ),
                    Some((
                        c.diff_pct,
                        c.ci_low_pct.zip(c.ci_high_pct),
                        Percent::OfBaseline.words(),
                    )),
                ),
            };
            // The other convention beside it, with its own interval: of the mean of
            // both is the seed's "53% faster".
            if let Some((value, interval, of)) = aside {
                let _ = write!(inner, "; {} {of}", pct(value, decimals));
                if let Some((l, h)) = interval {
                    let _ = write!(
                        inner,
                        ", {conf}% CI {} .. {}",
                        pct(l, decimals),
                        pct(h, decimals)
                    );
                }
            }
            format!("{headline} ({inner}{unavailable})")
        }
        Verdict::Equivalent => format!(
            "within {band} ({}{unavailable})",
            interval_text(c, decimals, percent)
        ),
        Verdict::Inconclusive | Verdict::NotComparable => {
            format!("{}{unavailable}", interval_text(c, decimals, percent))
        }
    };
    let verdict = match c.verdict {
        Verdict::Better | Verdict::Worse => format!(
            "{} (p = {} < {alpha}, beyond the {band} noise band)",
            words.of(c.verdict),
            p_text(c.welch.p)
        ),
        Verdict::Equivalent => format!(
            "equivalent: the whole {conf}% CI lies inside the {band} noise band (p = {})",
            p_text(c.welch.p)
        ),
        Verdict::Inconclusive | Verdict::NotComparable => {
            let why = if c.welch.p < 1.0 - c.confidence {
                format!(
                    "p = {} < {alpha}, but the {conf}% CI reaches into the {band} noise band",
                    p_text(c.welch.p)
                )
            } else {
                format!(
                    "no significant difference (p = {}), and the {conf}% CI reaches beyond the {band} noise band",
                    p_text(c.welch.p)
                )
            };
            let more = c
                .runs_needed
                .map(|r| format!("; {} {runs} would likely decide it", r.text()))
                .unwrap_or_default();
            format!("inconclusive: {why}{more}")
        }
    };
    Description {
        difference,
        verdict,
    }
}

/// The words for samples that could not be compared.
pub fn describe_incomparable(e: &Incomparable) -> Description {
    Description {
        difference: e.to_string(),
        verdict: format!("not comparable: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Better;
    use crate::stats::compare;

    #[test]
    fn words_follow_the_unit() {
        assert_eq!(Words::for_unit("MB/s"), Words::Speed);
        assert_eq!(Words::for_unit("MB/s (kB/s / 1024)"), Words::Speed);
        assert_eq!(Words::for_unit("s"), Words::Speed);
        assert_eq!(Words::for_unit("IOPS"), Words::Speed);
        assert_eq!(Words::for_unit("W"), Words::Quality);
        assert_eq!(Words::for_unit("segments"), Words::Quality);
        assert_eq!(pct(-0.04, 1), "0.0%");
        assert_eq!(pct(12.345, 1), "+12.3%");
    }

    #[test]
    fn no_lone_percent_where_nothing_was_shown() {
        let base = [100.0, 130.0, 80.0];
        let same = [95.0, 120.0, 110.0];
        let c = compare(&base, &same, 0.95, 0.02, Better::Higher).unwrap();
        assert_eq!(c.verdict, Verdict::Inconclusive);
        let d = describe(&c, Words::Speed, 1, "runs per side", Percent::OfBaseline);
        assert!(d.difference.starts_with("95% CI "), "{d:?}");
        assert!(
            d.verdict
                .starts_with("inconclusive: no significant difference")
                && d.verdict.ends_with("runs per side would likely decide it"),
            "{d:?}"
        );
        let fast = [150.0, 151.0, 149.0];
        let c = compare(&[100.0, 102.0, 98.0], &fast, 0.95, 0.02, Better::Higher).unwrap();
        let d = describe(&c, Words::Speed, 1, "runs per side", Percent::OfBaseline);
        assert!(d.verdict.starts_with("faster (p = "), "{d:?}");
        assert!(d.difference.contains("of the mean of both"), "{d:?}");
    }

    #[test]
    fn of_the_mean_of_both_heads_the_row_when_asked_and_every_value_is_positive() {
        let (without, with) = ([172.0, 172.13, 172.26], [296.5, 296.71, 296.92]);
        let c = compare(&without, &with, 0.95, 0.02, Better::Higher).unwrap();
        let d = describe(&c, Words::Speed, 0, "runs per side", Percent::OfMean);
        assert!(
            d.difference
                .starts_with("+53% of the mean of both (95% CI +53% .. +53%"),
            "{d:?}"
        );
        assert!(
            d.difference.contains("; +72% of the baseline, 95% CI"),
            "{d:?}"
        );
        // An inconclusive row: the interval alone, saying what it is of.
        let c = compare(
            &[100.0, 130.0, 80.0],
            &[95.0, 120.0, 110.0],
            0.95,
            0.02,
            Better::Higher,
        )
        .unwrap();
        let d = describe(&c, Words::Speed, 1, "runs per side", Percent::OfMean);
        assert!(
            d.difference.starts_with("95% CI ") && d.difference.ends_with(" of the mean of both"),
            "{d:?}"
        );
        // Negative values have no mean of both to divide by: of the baseline, saying so.
        let c = compare(
            &[-10.0, -10.2, -9.8],
            &[-5.0, -5.1, -4.9],
            0.95,
            0.02,
            Better::Higher,
        )
        .unwrap();
        let d = describe(&c, Words::Quality, 1, "runs per side", Percent::OfMean);
        assert!(d.difference.starts_with("+50.0% (95% CI "), "{d:?}");
        assert!(
            d.difference
                .ends_with("; no difference over the mean of both: a value is not above 0)"),
            "{d:?}"
        );
    }
}
