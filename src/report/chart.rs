//! The SVG bar chart of one metric, deterministic to the byte.

use std::fmt::Write;

use super::format::number;

/// Escapes text for SVG/XML.
fn xml(text: &str) -> String {
    if !text.contains(['&', '<', '>', '"']) {
        return text.to_string();
    }
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A horizontal bar chart: one bar per configuration at its mean, with a whisker for
/// its confidence interval. Pure and deterministic: fixed geometry, numbers printed
/// with fixed decimals, no ids that change between renders.
pub fn bar_chart(metric: &str, unit: &str, bars: &[(String, f64, f64)]) -> String {
    const LABEL_W: f64 = 260.0;
    const PLOT_W: f64 = 360.0;
    const ROW_H: f64 = 22.0;
    let top = bars
        .iter()
        .map(|(_, mean, ci)| mean + ci)
        .fold(0.0_f64, f64::max)
        .max(f64::MIN_POSITIVE);
    let x = |v: f64| LABEL_W + (v.max(0.0) / top) * PLOT_W;
    let height = 28.0 + ROW_H * bars.len() as f64;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{height:.0}\" \
         role=\"img\" aria-label=\"{} ({})\">\n\
         <text x=\"0\" y=\"14\" font-size=\"13\" font-weight=\"bold\">{} ({})</text>\n",
        LABEL_W + PLOT_W + 90.0,
        xml(metric),
        xml(unit),
        xml(metric),
        xml(unit)
    );
    for (i, (label, mean, ci)) in bars.iter().enumerate() {
        let y = 22.0 + ROW_H * i as f64;
        let (x0, xm) = (x(0.0), x(*mean));
        // Written straight into the chart: a table of many rows draws many bars.
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>\n\
             <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#6b8fc7\"/>\n",
            LABEL_W - 6.0,
            y + 13.0,
            xml(label),
            y + 3.0,
            (xm - x0).max(0.5),
            ROW_H - 8.0,
        );
        if *ci > 0.0 {
            let (lo, hi) = (x(mean - ci), x(mean + ci));
            let mid = y + ROW_H / 2.0 - 1.0;
            let _ = writeln!(
                svg,
                "<path d=\"M{lo:.1} {mid:.1}H{hi:.1}M{lo:.1} {:.1}V{:.1}M{hi:.1} {:.1}V{:.1}\" \
                 stroke=\"#222\" stroke-width=\"1.2\" fill=\"none\"/>",
                mid - 4.0,
                mid + 4.0,
                mid - 4.0,
                mid + 4.0
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>",
            x(mean + ci) + 6.0,
            y + 13.0,
            xml(&number(*mean))
        );
    }
    svg.push_str("</svg>");
    svg
}

/// One panel of `series_chart`: a polyline of the values present, on a y scale from
/// their minimum to their maximum, or the word "absent" when there are none.
fn panel(
    svg: &mut String,
    top: f64,
    name: &str,
    unit: &str,
    pts: &[(f64, Option<f64>)],
    t_max: f64,
) {
    const LEFT: f64 = 70.0;
    const W: f64 = 520.0;
    const H: f64 = 80.0;
    let ys: Vec<f64> = pts.iter().filter_map(|p| p.1).collect();
    svg.push_str(&format!(
        "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{} ({})</text>\n\
         <rect x=\"{LEFT:.1}\" y=\"{:.1}\" width=\"{W:.1}\" height=\"{H:.1}\" fill=\"none\" stroke=\"#bbb\"/>\n",
        top + 12.0,
        xml(name),
        xml(unit),
        top + 18.0
    ));
    if ys.is_empty() {
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#777\">absent on this board</text>\n",
            LEFT + 8.0,
            top + 18.0 + H / 2.0
        ));
        return;
    }
    let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let span = if hi > lo { hi - lo } else { 1.0 };
    let x = |t: f64| LEFT + if t_max > 0.0 { t / t_max * W } else { 0.0 };
    let y = |v: f64| top + 18.0 + H - (v - lo) / span * H;
    let mut d = String::new();
    for (t, v) in pts {
        if let Some(v) = v {
            d.push_str(&format!(
                "{}{:.1} {:.1}",
                if d.is_empty() { "M" } else { "L" },
                x(*t),
                y(*v)
            ));
        }
    }
    svg.push_str(&format!(
        "<path d=\"{d}\" stroke=\"#c0504d\" stroke-width=\"1.5\" fill=\"none\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"end\">{}</text>\n",
        LEFT - 4.0,
        top + 18.0 + 10.0,
        xml(&number(hi)),
        LEFT - 4.0,
        top + 18.0 + H,
        xml(&number(lo)),
    ));
}

/// Temperature and CPU clock over one run (a burn-in), two panels on one time axis:
/// `(seconds, temperature °C, clock MHz)` per point. Deterministic like `bar_chart`.
pub fn series_chart(title: &str, points: &[(f64, Option<f64>, Option<f64>)]) -> String {
    let t_max = points.iter().map(|p| p.0).fold(0.0_f64, f64::max);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"620\" height=\"250\" \
         role=\"img\" aria-label=\"{}\">\n\
         <text x=\"0\" y=\"14\" font-size=\"13\" font-weight=\"bold\">{}</text>\n",
        xml(title),
        xml(title)
    );
    let temps: Vec<(f64, Option<f64>)> = points.iter().map(|p| (p.0, p.1)).collect();
    let clocks: Vec<(f64, Option<f64>)> = points.iter().map(|p| (p.0, p.2)).collect();
    panel(&mut svg, 20.0, "temperature", "°C", &temps, t_max);
    panel(&mut svg, 125.0, "CPU clock", "MHz", &clocks, t_max);
    svg.push_str(&format!(
        "<text x=\"70\" y=\"242\" font-size=\"10\">0 s</text>\n\
         <text x=\"590\" y=\"242\" font-size=\"10\" text-anchor=\"end\">{} s</text>\n</svg>",
        xml(&number(t_max))
    ));
    svg
}

#[cfg(test)]
mod tests {
    use super::series_chart;

    /// The same points draw the same bytes; a missing clock says "absent", and a
    /// title cannot inject markup.
    #[test]
    fn a_series_chart_is_deterministic_and_says_absent_for_a_missing_clock() {
        let pts = [
            (0.0, Some(40.0), None),
            (1.0, Some(45.5), None),
            (2.0, Some(44.0), None),
        ];
        let a = series_chart("burn-in <x>", &pts);
        assert_eq!(a, series_chart("burn-in <x>", &pts));
        assert!(a.contains("burn-in &lt;x&gt;") && !a.contains("<x>"));
        assert!(a.contains("<path d=\"M70.0 "), "{a}");
        assert!(a.contains("absent on this board"));
        let both = series_chart(
            "b",
            &[
                (0.0, Some(40.0), Some(1500.0)),
                (3.0, Some(50.0), Some(600.0)),
            ],
        );
        assert_eq!(both.matches("<path").count(), 2, "{both}");
        assert!(!both.contains("absent"));
    }
}
