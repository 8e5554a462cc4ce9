//! The SVG bar chart of one metric: each configuration's mean as a bar with its
//! confidence interval as an error bar, deterministic to the byte.
//!
//! The chart scales with its `viewBox` (the page sets `width: 100%`), so its geometry is
//! fixed: labels get a line of their own above their bar, wrapped to the chart's width
//! rather than cut, and every text is escaped. It names itself for assistive technology
//! (`role="img"`, `aria-label`, `<title>`, and a `<desc>` with every value in words), and
//! carries classes the page's CSS styles, with presentation attributes for a chart shown
//! on its own.

use super::format::{mean_ci, number};

/// The chart's width in its own units; the page scales it.
/// 400 keeps a label at 14 units above 11 px on a 390 px wide phone, where a figure is
/// about 345 px wide.
pub const WIDTH: f64 = 400.0;
const PAD: f64 = 8.0;
/// Font sizes: the title, a row's label, its value, the axis.
const TITLE_PX: f64 = 15.0;
const LABEL_PX: f64 = 14.0;
const VALUE_PX: f64 = 13.0;
const AXIS_PX: f64 = 11.0;
/// A generous average advance of a sans-serif character, as a share of its size: wrapping
/// by it never lets a label run into its value.
const CHAR_EM: f64 = 0.56;
const BAR_H: f64 = 14.0;
/// At most this many lines of one label; the rest is cut with `…` (the full label is in
/// the row's `<title>` and in the table).
const MAX_LABEL_LINES: usize = 3;

#[cfg(test)]
mod same_bytes;
mod svg;

use std::borrow::Cow;
use std::fmt::Write;

use svg::{Xml, push_xml};
pub(super) use svg::{first_of, push_fixed, write_replaced, xml};

/// One bar: a configuration's mean and the half-width of its interval.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar<'a> {
    /// Its label, as an index into the chart's `ChartLabels`.
    pub label: usize,
    pub mean: f64,
    /// None with fewer than two runs: no error bar.
    pub ci_half: Option<f64>,
    /// `n=3, 1 flagged`, for the row's tooltip and the description.
    pub note: &'a str,
}

/// The labels of the bars of a table's charts (its rows'), each escaped once and
/// wrapped once per line width, for every chart that draws it: a big table draws a
/// thousand rows in each of its charts.
pub struct ChartLabels<'a> {
    texts: Vec<&'a str>,
    /// Each label XML-escaped, when a chart first wrote it.
    escaped: Vec<Option<String>>,
    /// Per line width in characters: each label's lines as a row writes them, when a
    /// chart first wrote it at that width.
    wrapped: Vec<(usize, Vec<Option<LabelLines>>)>,
    /// The start of a label's line `i` (`<text ...>`), the same in every row.
    line_starts: Vec<String>,
}

/// A label's lines as a row writes them (`<text>`s placed in the row), and how many.
type LabelLines = (usize, String);

impl<'a> ChartLabels<'a> {
    pub fn new(texts: Vec<&'a str>) -> Self {
        ChartLabels {
            escaped: vec![None; texts.len()],
            texts,
            wrapped: Vec::new(),
            line_starts: (0..MAX_LABEL_LINES).map(label_line_start).collect(),
        }
    }

    /// Label `i` escaped, then its lines at `width` characters as markup, and how many.
    fn row(&mut self, i: usize, width: usize) -> (&str, &str, usize) {
        // A bar's label is one of its table's rows: past them is a caller's bug, which
        // a release build draws as a bar without a label rather than stopping a report.
        debug_assert!(
            i < self.texts.len(),
            "bar label {i} of {}",
            self.texts.len()
        );
        let text = self.texts.get(i).copied().unwrap_or("");
        let at = if let Some(at) = self.wrapped.iter().position(|(w, _)| *w == width) {
            at
        } else {
            self.wrapped.push((width, vec![None; self.texts.len()]));
            self.wrapped.len() - 1
        };
        let escaped = match self.escaped.get_mut(i) {
            Some(slot) => slot.get_or_insert_with(|| xml(text)).as_str(),
            None => "",
        };
        let (lines, markup) = match self.wrapped[at].1.get_mut(i) {
            Some(slot) => {
                let (n, m) =
                    slot.get_or_insert_with(|| label_lines(text, width, &self.line_starts));
                (*n, m.as_str())
            }
            None => (1, ""),
        };
        (escaped, markup, lines)
    }
}

/// A label's lines at `width` characters, as a row writes them: each a `<text>` placed
/// from the row's top (`starts`, by line, made once per table: `label_line_start`);
/// and how many.
fn label_lines(text: &str, width: usize, starts: &[String]) -> LabelLines {
    let lines = wrap(text, width);
    let mut out = String::with_capacity(text.len() + lines.len() * 64);
    for (i, line) in lines.iter().enumerate() {
        match starts.get(i) {
            Some(start) => out.push_str(start),
            None => out.push_str(&label_line_start(i)),
        }
        push_xml(&mut out, line);
        out.push_str("</text>\n");
    }
    (lines.len(), out)
}

/// The start of a label's line `i`: a `<text>` placed from its row's top.
fn label_line_start(i: usize) -> String {
    let mut out = String::with_capacity(64);
    out.push_str("<text class=\"label\" x=\"");
    push_fixed(&mut out, PAD, 1);
    out.push_str("\" y=\"");
    push_fixed(&mut out, LABEL_PX + i as f64 * (LABEL_PX + 3.0), 1);
    out.push_str("\" font-size=\"");
    push_fixed(&mut out, LABEL_PX, 0);
    out.push_str("\">");
    out
}

/// What a chart is about: `4K random read`, `MB/s`, `mean and 95% CI, higher is better`.
pub struct ChartTitle<'a> {
    pub metric: &'a str,
    pub unit: &'a str,
    pub subtitle: &'a str,
}

/// `text` in lines of at most `max` characters, broken after spaces (or inside a word
/// longer than a line), at most `MAX_LABEL_LINES`. Lengths are counted in characters as
/// the words are placed (every bar's label is wrapped), and wrapping stops once a line
/// past the last kept one begins. A line whose words are one space apart in `text` is a
/// slice of it (most lines): only the others, and a cut last line, are copied.
pub(super) fn wrap(text: &str, max: usize) -> Vec<Cow<'_, str>> {
    let max = max.max(8);
    let mut lines: Vec<Cow<'_, str>> = Vec::with_capacity(MAX_LABEL_LINES + 1);
    let mut line = Line::default();
    // Where a slice of `text` starts in it.
    let at = |part: &str| part.as_ptr() as usize - text.as_ptr() as usize;
    'words: for word in text.split(' ').filter(|w| !w.is_empty()) {
        let mut word = word;
        let mut word_len = word.chars().count();
        loop {
            let room = if line.len == 0 {
                max
            } else {
                max.saturating_sub(line.len + 1)
            };
            if word_len <= room {
                line.add(text, at(word), word);
                line.len += word_len;
                break;
            }
            if lines.len() == MAX_LABEL_LINES {
                // The line begun is past the last one kept: the label is cut (below),
                // whatever else it says.
                lines.push(line.take(text));
                break 'words;
            }
            if line.len > 0 {
                lines.push(line.take(text));
                continue;
            }
            // A word longer than a line: cut it after `max` characters.
            let cut = word.char_indices().nth(max).map_or(word.len(), |(i, _)| i);
            lines.push(Cow::Borrowed(&word[..cut]));
            word = &word[cut..];
            word_len -= max;
        }
    }
    if line.len > 0 || lines.is_empty() {
        lines.push(line.take(text));
    }
    if lines.len() > MAX_LABEL_LINES {
        lines.truncate(MAX_LABEL_LINES);
        let last = &mut lines[MAX_LABEL_LINES - 1];
        let mut cut: String = last.chars().take(max - 1).collect();
        cut.push('…');
        *last = Cow::Owned(cut);
    }
    lines
}

/// The line `wrap` is filling: a range of the text while its words are one space apart
/// there, else its own copy.
#[derive(Default)]
struct Line {
    start: usize,
    end: usize,
    copy: Option<String>,
    /// Its length in characters.
    len: usize,
}

impl Line {
    /// Appends `word`, found at `from` in `text`, after a space unless the line is empty.
    fn add(&mut self, text: &str, from: usize, word: &str) {
        if self.len == 0 && self.copy.is_none() {
            (self.start, self.end) = (from, from + word.len());
            return;
        }
        match &mut self.copy {
            None if from == self.end + 1 && text.as_bytes()[self.end] == b' ' => {
                self.end = from + word.len();
            }
            copy => {
                let line = copy.get_or_insert_with(|| text[self.start..self.end].to_string());
                line.push(' ');
                line.push_str(word);
                self.len += 1;
                return;
            }
        }
        self.len += 1;
    }

    /// The line as it stands, leaving an empty one.
    fn take<'t>(&mut self, text: &'t str) -> Cow<'t, str> {
        let line = std::mem::take(self);
        match line.copy {
            Some(copy) => Cow::Owned(copy),
            None => Cow::Borrowed(&text[line.start..line.end]),
        }
    }
}

/// Ticks for an axis over `[lo, hi]`: about five at a round step (1, 2 or 5 × 10^k),
/// the domain widened to whole steps.
fn ticks(lo: f64, hi: f64) -> (f64, f64, Vec<f64>) {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).floor();
    let last = (hi / step).ceil();
    let count = ((last - first) as usize).min(12);
    let ticks: Vec<f64> = (0..=count).map(|i| (first + i as f64) * step).collect();
    (first * step, (first + count as f64) * step, ticks)
}

/// A tick's label: as few decimals as the step needs.
fn tick_text(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    let s = format!("{v:.decimals$}");
    if s.trim_start_matches(['-', '0', '.']).is_empty() {
        "0".into()
    } else {
        s
    }
}

/// A horizontal bar chart: per configuration a line with its label and value, then a bar
/// at its mean with an error bar for its confidence interval, over a scale with ticks.
/// Pure and deterministic: fixed geometry, numbers printed with fixed decimals, no ids.
pub fn bar_chart(title: &ChartTitle, labels: &mut ChartLabels, bars: &[Bar]) -> String {
    let values: Vec<String> = bars
        .iter()
        .map(|b| match b.ci_half {
            Some(h) if h > 0.0 => mean_ci(b.mean, h),
            _ => number(b.mean),
        })
        .collect();
    let value_w = values
        .iter()
        .map(|v| v.chars().count() as f64 * VALUE_PX * CHAR_EM)
        .fold(0.0, f64::max);
    let label_chars = ((WIDTH - 2.0 * PAD - value_w - 12.0) / (LABEL_PX * CHAR_EM)) as usize;

    // The scale: from 0 (or the lowest mean) to the highest interval's end.
    let lo = bars.iter().map(|b| b.mean).fold(0.0_f64, f64::min);
    let hi = bars
        .iter()
        .map(|b| b.mean + b.ci_half.unwrap_or(0.0))
        .fold(0.0_f64, f64::max);
    let (lo, hi, ticks) = if hi > lo {
        ticks(lo, hi)
    } else {
        (0.0, 1.0, vec![0.0, 1.0])
    };
    let step = ticks.get(1).zip(ticks.first()).map_or(1.0, |(b, a)| b - a);
    let (x0, x1) = (PAD, WIDTH - PAD);
    let x = |v: f64| x0 + (v.clamp(lo, hi) - lo) / (hi - lo) * (x1 - x0);

    let unit = xml(title.unit);
    let value_px = format!("{VALUE_PX:.0}");
    // Each piece is pushed as it is (no formatting machinery): a big report draws tens
    // of thousands of bars.
    let f1 = |out: &mut String, v: f64| push_fixed(out, v, 1);
    let fixed = |v: f64| {
        let mut s = String::new();
        f1(&mut s, v);
        s
    };
    // A row's parts are placed from its top (`translate`), so where its bar, interval
    // and caps are depends only on how many lines its label has: each written once.
    let row_height = |lines: usize| lines as f64 * (LABEL_PX + 3.0) + 3.0 + BAR_H + 14.0;
    let (x1_text, bar_h_text, top) = (fixed(x1), fixed(BAR_H), fixed(LABEL_PX));
    let placed: Vec<[String; 4]> = (0..=MAX_LABEL_LINES)
        .map(|lines| {
            let by = lines as f64 * (LABEL_PX + 3.0) + 3.0;
            let mid = by + BAR_H / 2.0;
            [fixed(by), fixed(mid), fixed(mid - 6.0), fixed(mid + 6.0)]
        })
        .collect();
    let [mut value_text, mut note, mut l_text, mut r_text] =
        std::array::from_fn::<String, 4, _>(|_| String::new());
    let escape_into = |s: &mut String, text: &str| {
        s.clear();
        push_xml(s, text);
    };

    // First the description and the height, which the header holds: every bar's words
    // and its label's lines. The markup then goes straight into the chart's one
    // `String`, sized from this pass (a big chart is most of a megabyte, and is not
    // copied again).
    let mut desc = String::with_capacity(bars.len() * 80);
    let mut y = 48.0;
    let mut rows_len = 0;
    for (b, value) in bars.iter().zip(&values) {
        let (label, label_markup, lines) = labels.row(b.label, label_chars);
        escape_into(&mut value_text, value);
        escape_into(&mut note, b.note);
        if !desc.is_empty() {
            desc.push_str("; ");
        }
        desc.push_str(label);
        desc.push_str(": ");
        desc.push_str(&value_text);
        desc.push_str(" (");
        desc.push_str(&note);
        desc.push(')');
        rows_len += 480 + label.len() + label_markup.len() + 2 * value_text.len() + note.len();
        y += row_height(lines);
    }
    let plot_top = 44.0;
    let plot_bottom = y - 6.0;
    let mut axis = String::new();
    for t in &ticks {
        let tx = x(*t);
        let _ = write!(
            axis,
            "<path class=\"grid\" d=\"M{tx:.1} {plot_top:.1}V{plot_bottom:.1}\" stroke=\"#d0d7de\" stroke-width=\"1\"/>\n\
             <text class=\"axis\" x=\"{tx:.1}\" y=\"{:.1}\" font-size=\"{AXIS_PX:.0}\" text-anchor=\"{}\">{}</text>\n",
            plot_bottom + AXIS_PX + 4.0,
            if tx <= x0 + 1.0 {
                "start"
            } else if tx >= x1 - 1.0 {
                "end"
            } else {
                "middle"
            },
            Xml(&tick_text(*t, step))
        );
    }
    let height = plot_bottom + AXIS_PX + 10.0;
    let name = if title.unit.is_empty() {
        title.metric.to_string()
    } else {
        format!("{} ({})", title.metric, title.unit)
    };
    let mut svg = String::with_capacity(rows_len + desc.len() + axis.len() + 1024);
    let _ = write!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 {WIDTH:.0} {height:.0}\" \
         width=\"{WIDTH:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"{label}\" \
         font-family=\"system-ui, sans-serif\" fill=\"#1f2328\">\n\
         <title>{label}</title>\n<desc>",
        label = Xml(&format!("{name}: {}", title.subtitle)),
    );
    svg.push_str(&desc);
    let _ = write!(
        svg,
        "</desc>\n\
         <text class=\"title\" x=\"{x0:.1}\" y=\"18\" font-size=\"{TITLE_PX:.0}\" font-weight=\"bold\">{name}</text>\n\
         <text class=\"subtitle\" x=\"{x0:.1}\" y=\"35\" font-size=\"12\" fill=\"#57606a\">{subtitle}</text>\n",
        name = Xml(&name),
        subtitle = Xml(title.subtitle),
    );
    svg.push_str(&axis);

    // Then each bar's row: its label's lines (escaped and wrapped by the first pass),
    // its value, its bar and its interval.
    let rows = &mut svg;
    let mut y = 48.0;
    for (b, value) in bars.iter().zip(&values) {
        let (label, label_markup, lines) = labels.row(b.label, label_chars);
        escape_into(&mut value_text, value);
        escape_into(&mut note, b.note);
        rows.push_str("<g class=\"row\" transform=\"translate(0 ");
        f1(rows, y);
        rows.push_str(")\"><title>");
        rows.push_str(label);
        rows.push_str(": ");
        rows.push_str(&value_text);
        rows.push(' ');
        rows.push_str(&unit);
        rows.push_str(" (");
        rows.push_str(&note);
        rows.push_str(")</title>\n");
        rows.push_str(label_markup);
        // The first line's baseline is the value's too.
        rows.push_str("<text class=\"value\" x=\"");
        rows.push_str(&x1_text);
        rows.push_str("\" y=\"");
        rows.push_str(&top);
        rows.push_str("\" font-size=\"");
        rows.push_str(&value_px);
        rows.push_str("\" text-anchor=\"end\">");
        rows.push_str(&value_text);
        rows.push_str("</text>\n");
        let [by_text, mid_text, cap_top, cap_bottom] = &placed[lines.min(MAX_LABEL_LINES)];
        let (zero, end) = (x(0.0), x(b.mean));
        let (left, width) = if end >= zero {
            (zero, end - zero)
        } else {
            (end, zero - end)
        };
        rows.push_str("<rect class=\"bar\" x=\"");
        f1(rows, left);
        rows.push_str("\" y=\"");
        rows.push_str(by_text);
        rows.push_str("\" width=\"");
        f1(rows, width.max(1.0));
        rows.push_str("\" height=\"");
        rows.push_str(&bar_h_text);
        rows.push_str("\" fill=\"#5b84c4\"/>\n");
        if let Some(h) = b.ci_half.filter(|h| *h > 0.0 && h.is_finite()) {
            let (l, r) = (x(b.mean - h), x(b.mean + h));
            for (text, v) in [(&mut l_text, l), (&mut r_text, r)] {
                text.clear();
                f1(text, v);
            }
            rows.push_str("<path class=\"ci\" d=\"M");
            rows.push_str(&l_text);
            rows.push(' ');
            rows.push_str(mid_text);
            rows.push('H');
            rows.push_str(&r_text);
            // An end the scale cuts gets no cap: the interval goes on past it.
            for (at, cut) in [(&l_text, b.mean - h < lo), (&r_text, b.mean + h > hi)] {
                if !cut {
                    rows.push('M');
                    rows.push_str(at);
                    rows.push(' ');
                    rows.push_str(cap_top);
                    rows.push('V');
                    rows.push_str(cap_bottom);
                }
            }
            rows.push_str("\" stroke=\"#1f2328\" stroke-width=\"1.6\" fill=\"none\"/>\n");
        }
        rows.push_str("</g>\n");
        y += row_height(lines);
    }
    svg.push_str("</svg>");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bars as (label, mean, half-width, note).
    type Spec = (&'static str, f64, Option<f64>, &'static str);

    fn bars() -> Vec<Spec> {
        vec![
            ("pi <1> & co", 10.0, Some(2.0), "n=3"),
            (
                "Raspberry Pi 4 Model B Rev 1.4, Kingston A400 SSD, with UASP, btrfs with lzo compression",
                20.0,
                Some(4.0),
                "n=3, 1 flagged",
            ),
            ("one run", 5.0, None, "n=1"),
        ]
    }

    /// The chart of `specs`, each bar under its own label.
    fn draw(title: &ChartTitle, specs: &[Spec]) -> String {
        let mut labels = ChartLabels::new(specs.iter().map(|s| s.0).collect());
        let bars: Vec<Bar> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| Bar {
                label: i,
                mean: s.1,
                ci_half: s.2,
                note: s.3,
            })
            .collect();
        bar_chart(title, &mut labels, &bars)
    }

    fn title() -> ChartTitle<'static> {
        ChartTitle {
            metric: "random <read>",
            unit: "MB/s",
            subtitle: "mean and 95% CI, higher is better",
        }
    }

    /// Bars and error bars sit on one scale from 0 to the widest interval's end (24 ->
    /// ticks to 25), long labels wrap instead of being cut, every text is escaped, and
    /// the same bars give the same bytes.
    #[test]
    fn bars_and_error_bars_share_a_scale_labels_wrap_and_text_is_escaped() {
        let svg = draw(&title(), &bars());
        assert_eq!(svg, draw(&title(), &bars()));
        assert!(
            svg.starts_with(
                "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 400 "
            ),
            "{svg}"
        );
        assert!(
            svg.contains("pi &lt;1&gt; &amp; co") && !svg.contains("<1>"),
            "{svg}"
        );
        assert!(
            svg.contains("<title>random &lt;read&gt; (MB/s): mean and 95% CI"),
            "{svg}"
        );
        assert!(
            svg.contains("role=\"img\" aria-label=\"random &lt;read&gt; (MB/s): mean"),
            "{svg}"
        );
        // The scale runs 0..25 over 8..392: 20 is at 315.2, its interval 16..24 at
        // 253.8..376.6, with caps.
        assert!(svg.contains("width=\"307.2\""), "{svg}");
        assert!(
            svg.contains("d=\"M253.8 ") && svg.contains("H376.6M253.8 "),
            "{svg}"
        );
        assert_eq!(
            svg.matches("class=\"ci\"").count(),
            2,
            "no error bar from one run"
        );
        assert_eq!(svg.matches("class=\"bar\"").count(), 3);
        // The long label is on two lines, whole.
        assert!(
            svg.contains(">Raspberry Pi 4 Model B Rev 1.4, Kingston A400 SSD,</text>")
                || svg.matches("class=\"label\"").count() >= 4,
            "{svg}"
        );
        let words: String = svg
            .split("class=\"label\"")
            .skip(1)
            .filter_map(|t| t.split('>').nth(1)?.split('<').next())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            words.contains("with UASP, btrfs with lzo compression"),
            "{words}"
        );
        assert!(
            svg.contains("<desc>pi &lt;1&gt; &amp; co: 10.0 ± 2.0 (n=3); "),
            "{svg}"
        );
        for t in ["0", "5", "10", "15", "20", "25"] {
            assert!(svg.contains(&format!(">{t}</text>")), "tick {t}: {svg}");
        }
    }

    #[test]
    fn wrapping_keeps_every_character_and_cuts_only_past_three_lines() {
        assert_eq!(wrap("a b c", 20), vec!["a b c"]);
        // A line that fills up exactly, then a word.
        assert_eq!(wrap("abcdefgh ij", 8), vec!["abcdefgh", "ij"]);
        assert_eq!(wrap("abc defg hij", 8), vec!["abc defg", "hij"]);
        assert_eq!(
            wrap("lab-1 / disk1 / btrfs-lzo / installed", 16),
            vec!["lab-1 / disk1 /", "btrfs-lzo /", "installed"]
        );
        assert_eq!(
            wrap("abcdefghijklmnopqrst", 8),
            vec!["abcdefgh", "ijklmnop", "qrst"]
        );
        let words = "word ".repeat(40);
        let cut = wrap(&words, 10);
        assert_eq!(cut.len(), 3);
        assert!(cut[2].ends_with('…'));
    }

    #[test]
    fn an_interval_the_scale_cuts_has_no_cap_at_that_end() {
        let svg = draw(&title(), &[("wide", 94.0, Some(175.0), "n=3")]);
        // The interval's low end (-81) is below the scale's 0: one cap only.
        let ci = svg.split("class=\"ci\" d=\"").nth(1).unwrap();
        let d = ci.split('"').next().unwrap();
        assert_eq!(d.matches('V').count(), 1, "{d}");
        assert!(d.starts_with("M8.0 "), "{d}");
    }
}
