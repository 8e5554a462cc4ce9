//! The charts' writer pinned to the `format!`-per-piece one it replaced (kept here as
//! the reference, unchanged): the same bytes for many bar sets, labels and notes with
//! every kind of character, wide and cut intervals, negative means.

use super::{AXIS_PX, BAR_H, CHAR_EM, LABEL_PX, PAD, TITLE_PX, VALUE_PX, WIDTH};
use super::{Bar, ChartLabels, ChartTitle, MAX_LABEL_LINES, tick_text, ticks};
use crate::report::format::{mean_ci, number};
use std::fmt::Write as _;

/// A bar as the reference draws it: with its own label.
#[derive(Debug)]
struct RefBar {
    label: String,
    mean: f64,
    ci_half: Option<f64>,
    note: String,
}

/// The reference: `chart.rs` before it wrote straight into one `String`, each row
/// placed by a `translate` as `chart.rs` places it now.
mod reference {
    use super::*;

    fn xml(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for c in text.chars() {
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&#39;"),
                c if c.is_control() => out.push_str(&c.escape_debug().to_string()),
                c => out.push(c),
            }
        }
        out
    }

    pub(super) fn wrap(text: &str, max: usize) -> Vec<String> {
        let max = max.max(8);
        let mut lines: Vec<String> = Vec::new();
        let mut line = String::new();
        for word in text.split(' ').filter(|w| !w.is_empty()) {
            let mut word: Vec<char> = word.chars().collect();
            loop {
                let len = line.chars().count();
                let room = if len == 0 {
                    max
                } else {
                    max.saturating_sub(len + 1)
                };
                if word.len() <= room {
                    if len > 0 {
                        line.push(' ');
                    }
                    line.extend(word.iter());
                    break;
                }
                if len > 0 {
                    lines.push(std::mem::take(&mut line));
                    continue;
                }
                // A word longer than a line: cut it.
                let rest = word.split_off(max);
                lines.push(word.iter().collect());
                word = rest;
            }
        }
        if !line.is_empty() || lines.is_empty() {
            lines.push(line);
        }
        if lines.len() > MAX_LABEL_LINES {
            lines.truncate(MAX_LABEL_LINES);
            let last = &mut lines[MAX_LABEL_LINES - 1];
            let mut chars: Vec<char> = last.chars().collect();
            chars.truncate(max - 1);
            *last = chars.into_iter().collect::<String>() + "…";
        }
        lines
    }

    pub(super) fn bar_chart(title: &ChartTitle, bars: &[RefBar]) -> String {
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

        let mut rows = String::new();
        let mut y = 48.0;
        let mut desc = Vec::new();
        for (b, value) in bars.iter().zip(&values) {
            let lines = wrap(&b.label, label_chars);
            let mut row = format!(
                "<g class=\"row\" transform=\"translate(0 {y:.1})\"><title>{}: {value} {} ({})</title>\n",
                xml(&b.label),
                xml(title.unit),
                xml(&b.note)
            );
            for (i, line) in lines.iter().enumerate() {
                let ly = LABEL_PX + i as f64 * (LABEL_PX + 3.0);
                let _ = writeln!(
                    row,
                    "<text class=\"label\" x=\"{x0:.1}\" y=\"{ly:.1}\" font-size=\"{LABEL_PX:.0}\">{}</text>",
                    xml(line)
                );
            }
            let _ = writeln!(
                row,
                "<text class=\"value\" x=\"{x1:.1}\" y=\"{LABEL_PX:.1}\" font-size=\"{VALUE_PX:.0}\" text-anchor=\"end\">{}</text>",
                xml(value)
            );
            let by = lines.len() as f64 * (LABEL_PX + 3.0) + 3.0;
            let (zero, end) = (x(0.0), x(b.mean));
            let (left, width) = if end >= zero {
                (zero, end - zero)
            } else {
                (end, zero - end)
            };
            let _ = writeln!(
                row,
                "<rect class=\"bar\" x=\"{left:.1}\" y=\"{by:.1}\" width=\"{:.1}\" height=\"{BAR_H:.1}\" fill=\"#5b84c4\"/>",
                width.max(1.0)
            );
            if let Some(h) = b.ci_half.filter(|h| *h > 0.0 && h.is_finite()) {
                let mid = by + BAR_H / 2.0;
                let (l, r) = (x(b.mean - h), x(b.mean + h));
                // An end the scale cuts gets no cap: the interval goes on past it.
                let cap = |at: f64, cut: bool| {
                    if cut {
                        String::new()
                    } else {
                        format!("M{at:.1} {:.1}V{:.1}", mid - 6.0, mid + 6.0)
                    }
                };
                let _ = writeln!(
                    row,
                    "<path class=\"ci\" d=\"M{l:.1} {mid:.1}H{r:.1}{}{}\" stroke=\"#1f2328\" stroke-width=\"1.6\" fill=\"none\"/>",
                    cap(l, b.mean - h < lo),
                    cap(r, b.mean + h > hi),
                );
            }
            row.push_str("</g>\n");
            rows.push_str(&row);
            desc.push(format!("{}: {value} ({})", b.label, b.note));
            y += by + BAR_H + 14.0;
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
                xml(&tick_text(*t, step))
            );
        }
        let height = plot_bottom + AXIS_PX + 10.0;
        let name = if title.unit.is_empty() {
            title.metric.to_string()
        } else {
            format!("{} ({})", title.metric, title.unit)
        };
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 {WIDTH:.0} {height:.0}\" \
             width=\"{WIDTH:.0}\" height=\"{height:.0}\" role=\"img\" aria-label=\"{label}\" \
             font-family=\"system-ui, sans-serif\" fill=\"#1f2328\">\n\
             <title>{label}</title>\n<desc>{desc}</desc>\n\
             <text class=\"title\" x=\"{x0:.1}\" y=\"18\" font-size=\"{TITLE_PX:.0}\" font-weight=\"bold\">{name}</text>\n\
             <text class=\"subtitle\" x=\"{x0:.1}\" y=\"35\" font-size=\"12\" fill=\"#57606a\">{subtitle}</text>\n\
             {axis}{rows}</svg>",
            label = xml(&format!("{name}: {}", title.subtitle)),
            desc = xml(&desc.join("; ")),
            name = xml(&name),
            subtitle = xml(title.subtitle),
        )
    }
}

/// A reproducible xorshift.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn text(&mut self, words: u64) -> String {
        const PIECES: [&str; 16] = [
            "Raspberry",
            "Pi",
            "4",
            "Model",
            "B",
            "<b>",
            "&",
            "\"q\"",
            "it's",
            "btrfs-lzo",
            "Kingston A400 240GB SSD (UASP on)",
            "x\ty",
            "\u{85}é",
            "—",
            "",
            "averyveryverylongwordwithoutanyspacesinitatall",
        ];
        let n = self.below(words + 1);
        (0..n)
            .map(|_| PIECES[self.below(PIECES.len() as u64) as usize])
            .collect::<Vec<_>>()
            .join(if self.below(4) == 0 { "  " } else { " " })
    }
}

#[test]
fn wrapping_is_the_reference_s_for_many_labels_and_widths() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..20_000 {
        let text = rng.text(12);
        let max = rng.below(40) as usize;
        assert_eq!(
            super::wrap(&text, max),
            reference::wrap(&text, max),
            "{text:?} at {max}"
        );
    }
}

#[test]
fn charts_are_the_reference_s_bytes() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..600 {
        let scale = [1e-3, 0.07, 1.0, 13.0, 950.0, 12_345.0][round % 6];
        let bars: Vec<RefBar> = (0..rng.below(12))
            .map(|_| {
                let mean = (rng.below(20_000) as f64 / 1000.0 - 4.0) * scale;
                RefBar {
                    label: rng.text(14),
                    mean,
                    ci_half: match rng.below(5) {
                        0 => None,
                        1 => Some(0.0),
                        2 => Some(mean.abs() * 3.0),
                        _ => Some(rng.below(1000) as f64 / 700.0 * scale),
                    },
                    note: rng.text(3),
                }
            })
            .collect();
        let (metric, unit, subtitle) = (rng.text(4), rng.text(1), rng.text(6));
        let title = ChartTitle {
            metric: &metric,
            unit: &unit,
            subtitle: &subtitle,
        };
        // Each chart of a table shares its labels: drawn twice from one `ChartLabels`,
        // the second time from what the first escaped and wrapped.
        let mut labels = ChartLabels::new(bars.iter().map(|b| b.label.as_str()).collect());
        let ours: Vec<Bar> = bars
            .iter()
            .enumerate()
            .map(|(i, b)| Bar {
                label: i,
                mean: b.mean,
                ci_half: b.ci_half,
                note: &b.note,
            })
            .collect();
        let want = reference::bar_chart(&title, &bars);
        for _ in 0..2 {
            assert_eq!(
                super::bar_chart(&title, &mut labels, &ours),
                want,
                "{bars:?}"
            );
        }
    }
}
