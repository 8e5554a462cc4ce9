//! `benchpipe history`'s text: per series its runs' means with their intervals, oldest
//! first, then each change point with the ratio's interval and the facts that moved;
//! the regressions the newest run starts last. Every stored text on one line.

use std::fmt::Write as _;

use super::history::{Change, History, Series};
use crate::model::Better;
use crate::shown::shown;
use crate::stats::{ChangeTest, Verdict};

/// `x` with four significant digits (at least none after the point, at most 6).
fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a small count of digits, clamped"
    )]
    let decimals = (3.0 - x.abs().log10().floor()).clamp(0.0, 6.0) as usize;
    format!("{x:.decimals$}")
}

fn pct(x: f64) -> String {
    format!("{x:+.1}%")
}

/// The histories as text.
pub fn text(histories: &[History]) -> String {
    let mut out = String::new();
    for h in histories {
        let _ = writeln!(
            out,
            "History of {}: {} run(s), oldest first; change points at p <= {} (permutation-guarded segmentation) and at least {:.1}% change",
            shown(&h.scenario),
            h.runs.len(),
            h.max_pvalue,
            h.min_magnitude * 100.0
        );
        if h.series.is_empty() {
            out.push_str("  no measured runs of this scenario in the store yet\n");
        }
        for s in &h.series {
            series(&mut out, h, s);
        }
    }
    let findings: Vec<_> = histories.iter().flat_map(|h| &h.findings).collect();
    if !findings.is_empty() {
        let _ = writeln!(out, "\nRegressions the newest run starts:");
        for f in findings {
            let _ = writeln!(
                out,
                "  {} {}.{}: {} -> {} {}{} (run {})",
                shown(&f.scenario),
                shown(&f.test),
                shown(&f.metric),
                num(f.before_mean),
                num(f.after_mean),
                shown(&f.unit),
                f.diff_pct
                    .map(|d| format!(", {}", pct(d)))
                    .unwrap_or_default(),
                shown(&f.session)
            );
        }
    }
    out
}

fn series(out: &mut String, h: &History, s: &Series) {
    let better = match s.better {
        Better::Lower => "lower",
        Better::Higher => "higher",
    };
    let _ = writeln!(
        out,
        "\n{}.{} ({}, {better} is better) on {}",
        shown(&s.test),
        shown(&s.metric),
        shown(&s.unit),
        shown(&s.config)
    );
    let _ = writeln!(
        out,
        "  {:>4}  {:<24} {:>4}  {:>12}  {:.0}% CI",
        "run",
        "session",
        "n",
        "mean",
        h.confidence * 100.0
    );
    for (i, p) in s.points.iter().enumerate() {
        let ci = match (p.ci_low, p.ci_high) {
            (Some(l), Some(h)) => format!("[{}, {}]", num(l), num(h)),
            _ => "-".to_string(),
        };
        let mark = if s.changes.iter().any(|c| c.point == i) {
            "  <- change"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  {:>4}  {:<24} {:>4}  {:>12}  {ci}{mark}",
            p.run + 1,
            shown(&p.session),
            p.n,
            num(p.mean)
        );
    }
    if s.changes.is_empty() {
        out.push_str("  no change point\n");
    }
    for c in &s.changes {
        change(out, h, s, c);
    }
}

fn change(out: &mut String, h: &History, s: &Series, c: &Change) {
    let run = s.points[c.point].run + 1;
    let interval = match (c.ci_low_pct, c.ci_high_pct) {
        (Some(l), Some(hi)) => format!(
            ", {:.0}% CI {} to {}",
            h.confidence * 100.0,
            pct(l),
            pct(hi)
        ),
        _ if c.diff_pct.is_some() => ", its interval unbounded".to_string(),
        _ => String::new(),
    };
    let diff = c.diff_pct.map(pct).unwrap_or_default();
    let direction = match c.direction {
        Verdict::Worse => "worse",
        _ => "better",
    };
    let test = match c.test {
        ChangeTest::Segment => "",
        ChangeTest::Newest => ", the newest run alone",
    };
    let _ = writeln!(
        out,
        "  change at run {run} ({}): {} -> {} {} ({diff}{interval}; over the segments' {}), {direction}; p {:.2e}{test}",
        shown(&c.session),
        num(c.before_mean),
        num(c.after_mean),
        shown(&s.unit),
        c.basis,
        c.p
    );
    if c.facts.is_empty() {
        let _ = writeln!(
            out,
            "    no stored fact differs from run {} ({})",
            run - 1,
            shown(&c.before_session)
        );
        return;
    }
    let _ = writeln!(out, "    facts that differ from run {}:", run - 1);
    let none = "(none)";
    for f in &c.facts {
        let _ = writeln!(
            out,
            "      {}: {} -> {}",
            shown(&f.name),
            shown(f.before.as_deref().unwrap_or(none)),
            shown(f.after.as_deref().unwrap_or(none))
        );
    }
    if c.facts_more > 0 {
        let _ = writeln!(out, "      ... and {} more", c.facts_more);
    }
}
