//! The History section's SVG charts, to the byte: small multiples, a panel per
//! configuration and metric holding its per-run means with their intervals, oldest run
//! first, and a vertical mark where a change point's new level starts, named by its
//! difference and the facts that moved with it. Panels stack in one column as wide as
//! a bar chart (its text stays readable on a phone), scaled by the `viewBox`; every
//! text escaped and cut to its room.

use std::fmt::Write as _;

use super::chart::{push_fixed, xml};
use super::format::number;

/// The chart's width in its own units: a bar chart's (`chart::WIDTH`).
pub const WIDTH: f64 = super::chart::WIDTH;
const GAP: f64 = 16.0;
const PANEL_W: f64 = WIDTH;
/// A panel's plot: left of it the axis values, above it two lines of title.
const PLOT_LEFT: f64 = 56.0;
const PLOT_RIGHT: f64 = 8.0;
const PLOT_TOP: f64 = 36.0;
const PLOT_H: f64 = 96.0;
const PANEL_H: f64 = PLOT_TOP + PLOT_H + 22.0;
const TITLE_PX: f64 = 14.0;
const HEAD_PX: f64 = 12.0;
const SMALL_PX: f64 = 11.0;
/// A generous average advance of a sans-serif character, as a share of its size, as
/// the bar charts wrap by: a text cut by it stays inside its room.
const CHAR_EM: f64 = 0.56;
/// The most panels one chart draws; the section's tables list every series.
pub const MAX_PANELS: usize = 48;
const MARK_COLOR: &str = "#cf222e";
const POINT_COLOR: &str = "#5b84c4";

/// One panel: a configuration's metric over the runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Panel {
    /// The metric, its unit and direction: `real (s, lower is better)`.
    pub title: String,
    /// The configuration.
    pub subtitle: String,
    pub points: Vec<PanelPoint>,
    pub marks: Vec<Mark>,
}

/// A run's mean and interval (none with one sample).
#[derive(Clone, Debug, PartialEq)]
pub struct PanelPoint {
    /// Its run's number in the report's runs, from 1.
    pub run: usize,
    pub mean: f64,
    pub ci: Option<(f64, f64)>,
}

/// A change point: the index in `points` of its new level's first run, and what the
/// mark says (the difference and the facts that changed, short).
#[derive(Clone, Debug, PartialEq)]
pub struct Mark {
    pub point: usize,
    pub label: String,
}

/// `text` cut to at most `max` characters, a cut one ending in `…`.
pub(super) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// How many characters of `px` text fit in `room` units.
fn fits(room: f64, px: f64) -> usize {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a small positive width in characters"
    )]
    let n = (room / (px * CHAR_EM)).floor().max(4.0) as usize;
    n
}

fn push(out: &mut String, x: f64) {
    push_fixed(out, x, 1);
}

/// The chart of `panels` (at most [`MAX_PANELS`] drawn; the rest said in a line),
/// under `title`, or under none when it is empty (a figure of one panel, which names
/// itself by it). The same panels draw the same bytes.
pub fn history_chart(title: &str, panels: &[Panel]) -> String {
    let drawn = &panels[..panels.len().min(MAX_PANELS)];
    let rows = drawn.len().max(1);
    let left_out = panels.len() - drawn.len();
    let head = if title.is_empty() { 0.0 } else { 24.0 };
    #[allow(clippy::cast_precision_loss, reason = "a few rows")]
    let mut height = head + rows as f64 * (PANEL_H + GAP) - GAP;
    if left_out > 0 {
        height += 22.0;
    }
    let name = match (title, drawn.first()) {
        ("", Some(p)) => format!("{}, {}", p.title, p.subtitle),
        _ => title.to_string(),
    };
    let name = cut(&name, 200);
    let mut svg = String::with_capacity(2048 + drawn.len() * 2048);
    svg.push_str(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart history\" viewBox=\"0 0 ",
    );
    push_fixed(&mut svg, WIDTH, 0);
    svg.push(' ');
    push_fixed(&mut svg, height, 0);
    svg.push_str("\" width=\"");
    push_fixed(&mut svg, WIDTH, 0);
    svg.push_str("\" height=\"");
    push_fixed(&mut svg, height, 0);
    let _ = write!(
        svg,
        "\" role=\"img\" aria-label=\"{t}\" font-family=\"system-ui, sans-serif\" fill=\"#1f2328\">\n<title>{t}</title>\n<desc>",
        t = xml(&name)
    );
    for p in drawn {
        describe(&mut svg, p);
    }
    svg.push_str("</desc>\n");
    if !title.is_empty() {
        svg.push_str("<text class=\"title\" x=\"0\" y=\"15.0\" font-size=\"");
        push_fixed(&mut svg, TITLE_PX, 0);
        let _ = writeln!(
            svg,
            "\" font-weight=\"bold\">{}</text>",
            xml(&cut(title, fits(WIDTH, TITLE_PX)))
        );
    }
    for (i, p) in drawn.iter().enumerate() {
        #[allow(clippy::cast_precision_loss, reason = "a few panels")]
        let y = head + i as f64 * (PANEL_H + GAP);
        panel(&mut svg, 0.0, y, p);
    }
    if left_out > 0 {
        svg.push_str("<text class=\"subtitle\" x=\"0\" y=\"");
        push(&mut svg, height - 6.0);
        let _ = writeln!(
            svg,
            "\" font-size=\"{HEAD_PX:.0}\" fill=\"#57606a\">and {left_out} more: see the table</text>"
        );
    }
    svg.push_str("</svg>");
    svg
}

/// A panel in words, for assistive technology: its series and where it changes.
fn describe(svg: &mut String, p: &Panel) {
    let _ = write!(
        svg,
        "{}, {}: {} runs",
        xml(&p.title),
        xml(&p.subtitle),
        p.points.len()
    );
    for m in &p.marks {
        if let Some(pt) = p.points.get(m.point) {
            let _ = write!(svg, "; a change at run {}: {}", pt.run, xml(&m.label));
        }
    }
    svg.push_str(". ");
}

/// One panel with its top left corner at (`left`, `top`).
fn panel(svg: &mut String, left: f64, top: f64, p: &Panel) {
    let plot_w = PANEL_W - PLOT_LEFT - PLOT_RIGHT;
    let (x0, y0) = (left + PLOT_LEFT, top + PLOT_TOP);
    let _ = write!(svg, "<g class=\"panel\">\n<text x=\"");
    push(svg, left);
    svg.push_str("\" y=\"");
    push(svg, top + HEAD_PX);
    let _ = writeln!(
        svg,
        "\" font-size=\"{HEAD_PX:.0}\" font-weight=\"bold\">{}</text>",
        xml(&cut(&p.title, fits(PANEL_W, HEAD_PX)))
    );
    svg.push_str("<text class=\"subtitle\" x=\"");
    push(svg, left);
    svg.push_str("\" y=\"");
    push(svg, top + HEAD_PX + 15.0);
    let _ = writeln!(
        svg,
        "\" font-size=\"{SMALL_PX:.0}\" fill=\"#57606a\">{}</text>",
        xml(&cut(&p.subtitle, fits(PANEL_W, SMALL_PX)))
    );
    svg.push_str("<rect class=\"frame\" x=\"");
    push(svg, x0);
    svg.push_str("\" y=\"");
    push(svg, y0);
    svg.push_str("\" width=\"");
    push(svg, plot_w);
    svg.push_str("\" height=\"");
    push(svg, PLOT_H);
    svg.push_str("\" fill=\"none\" stroke=\"#d0d7de\"/>\n");
    let values = p
        .points
        .iter()
        .flat_map(|q| [Some(q.mean), q.ci.map(|c| c.0), q.ci.map(|c| c.1)])
        .flatten()
        .filter(|v| v.is_finite());
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !(lo.is_finite() && hi.is_finite()) {
        svg.push_str("</g>\n");
        return;
    }
    // A flat series gets a band around its value; any other its range with a margin,
    // so that no interval touches the frame.
    let (lo, hi) = if hi > lo {
        let pad = (hi - lo) * 0.08;
        (lo - pad, hi + pad)
    } else {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.05 };
        (lo - pad, hi + pad)
    };
    let y = |v: f64| y0 + PLOT_H - (v - lo) / (hi - lo) * PLOT_H;
    let step = if p.points.len() > 1 {
        #[allow(clippy::cast_precision_loss, reason = "at most a few hundred runs")]
        let n = (p.points.len() - 1) as f64;
        (plot_w - 16.0) / n
    } else {
        0.0
    };
    #[allow(clippy::cast_precision_loss, reason = "at most a few hundred runs")]
    let x = |i: usize| x0 + 8.0 + i as f64 * step;
    for (v, at) in [(hi, y0 + 9.0), (lo, y0 + PLOT_H)] {
        svg.push_str("<text class=\"axis\" x=\"");
        push(svg, x0 - 4.0);
        svg.push_str("\" y=\"");
        push(svg, at);
        let _ = writeln!(
            svg,
            "\" font-size=\"{SMALL_PX:.0}\" text-anchor=\"end\" fill=\"#57606a\">{}</text>",
            xml(&number(v))
        );
    }
    for m in &p.marks {
        if m.point < p.points.len() {
            mark(svg, x(m.point), (x0, x0 + plot_w), y0, m);
        }
    }
    let mut d = String::new();
    for (i, q) in p.points.iter().enumerate() {
        d.push(if i == 0 { 'M' } else { 'L' });
        push(&mut d, x(i));
        d.push(' ');
        push(&mut d, y(q.mean));
    }
    let _ = writeln!(
        svg,
        "<path class=\"line\" d=\"{d}\" fill=\"none\" stroke=\"{POINT_COLOR}\" stroke-width=\"1\" stroke-opacity=\"0.6\"/>"
    );
    for (i, q) in p.points.iter().enumerate() {
        let cx = x(i);
        if let Some((a, b)) = q.ci {
            svg.push_str("<path class=\"ci\" d=\"M");
            push(svg, cx);
            svg.push(' ');
            push(svg, y(a));
            svg.push('V');
            push(svg, y(b));
            svg.push('M');
            push(svg, cx - 3.0);
            svg.push(' ');
            push(svg, y(a));
            svg.push_str("h6M");
            push(svg, cx - 3.0);
            svg.push(' ');
            push(svg, y(b));
            svg.push_str("h6\" stroke=\"#1f2328\" stroke-width=\"1\"/>\n");
        }
        svg.push_str("<circle class=\"mean\" cx=\"");
        push(svg, cx);
        svg.push_str("\" cy=\"");
        push(svg, y(q.mean));
        let _ = write!(
            svg,
            "\" r=\"2.5\" fill=\"{POINT_COLOR}\"><title>run {}: ",
            q.run
        );
        svg.push_str(&xml(&number(q.mean)));
        if let Some((a, b)) = q.ci {
            let _ = write!(svg, " [{}, {}]", xml(&number(a)), xml(&number(b)));
        }
        svg.push_str("</title></circle>\n");
    }
    // The runs' numbers under the plot: the first, the last, and where a change starts.
    let mut labelled: Vec<usize> = vec![0, p.points.len() - 1];
    labelled.extend(p.marks.iter().map(|m| m.point));
    labelled.sort_unstable();
    labelled.dedup();
    for i in labelled.into_iter().filter(|i| *i < p.points.len()) {
        svg.push_str("<text class=\"axis\" x=\"");
        push(svg, x(i));
        svg.push_str("\" y=\"");
        push(svg, y0 + PLOT_H + 13.0);
        let _ = writeln!(
            svg,
            "\" font-size=\"{SMALL_PX:.0}\" text-anchor=\"middle\" fill=\"#57606a\">{}</text>",
            p.points[i].run
        );
    }
    svg.push_str("</g>\n");
}

/// A change point's vertical mark at `at`, and its label beside it inside the plot:
/// right of the mark, or left of it when the mark is in the plot's right half.
fn mark(svg: &mut String, at: f64, (left, right): (f64, f64), top: f64, m: &Mark) {
    svg.push_str("<path class=\"change\" d=\"M");
    push(svg, at);
    svg.push(' ');
    push(svg, top);
    svg.push('V');
    push(svg, top + PLOT_H);
    let _ = writeln!(
        svg,
        "\" stroke=\"{MARK_COLOR}\" stroke-width=\"1.5\" stroke-dasharray=\"4 2\"/>"
    );
    let after = right - at - 4.0;
    let before = at - left - 4.0;
    let (x, anchor, room) = if after >= before {
        (at + 3.0, "start", after)
    } else {
        (at - 3.0, "end", before)
    };
    svg.push_str("<text class=\"change-label\" x=\"");
    push(svg, x);
    svg.push_str("\" y=\"");
    push(svg, top + 11.0);
    let _ = writeln!(
        svg,
        "\" font-size=\"{SMALL_PX:.0}\" text-anchor=\"{anchor}\" fill=\"{MARK_COLOR}\">{}</text>",
        xml(&cut(&m.label, fits(room, SMALL_PX)))
    );
}
