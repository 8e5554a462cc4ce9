//! The SVG chart of one run's temperature and CPU clock over time (a `series = true`
//! recipe's last run), deterministic to the byte, scaled by its `viewBox` like the bar
//! charts.

use super::chart::{wrap, xml};
use super::format::number;
use std::fmt::Write as _;

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
    const LEFT: f64 = 56.0;
    const W: f64 = 336.0;
    const H: f64 = 80.0;
    let ys: Vec<f64> = pts.iter().filter_map(|p| p.1).collect();
    let _ = write!(
        svg,
        "<text x=\"0\" y=\"{:.1}\" font-size=\"12\">{} ({})</text>\n\
         <rect x=\"{LEFT:.1}\" y=\"{:.1}\" width=\"{W:.1}\" height=\"{H:.1}\" class=\"frame\" fill=\"none\" stroke=\"#bbb\"/>\n",
        top + 12.0,
        xml(name),
        xml(unit),
        top + 18.0
    );
    if ys.is_empty() {
        let _ = writeln!(
            svg,
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" fill=\"#777\">absent on this board</text>",
            LEFT + 8.0,
            top + 18.0 + H / 2.0
        );
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
            let _ = write!(
                d,
                "{}{:.1} {:.1}",
                if d.is_empty() { "M" } else { "L" },
                x(*t),
                y(*v)
            );
        }
    }
    let _ = write!(
        svg,
        "<path d=\"{d}\" class=\"line\" stroke=\"#c0504d\" stroke-width=\"1.5\" fill=\"none\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n\
         <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
        LEFT - 4.0,
        top + 18.0 + 10.0,
        xml(&number(hi)),
        LEFT - 4.0,
        top + 18.0 + H,
        xml(&number(lo)),
    );
}

/// Temperature and CPU clock over one run (a burn-in), two panels on one time axis:
/// `(seconds, temperature °C, clock MHz)` per point. Deterministic like `bar_chart`.
pub fn series_chart(title: &str, points: &[(f64, Option<f64>, Option<f64>)]) -> String {
    const TITLE_PX: f64 = 14.0;
    let t_max = points.iter().map(|p| p.0).fold(0.0_f64, f64::max);
    // The title wraps like a bar chart's labels (a configuration's name is long); the
    // panels move down by its extra lines.
    let lines = wrap(title, (400.0 / (TITLE_PX * 0.56)) as usize);
    let extra = (lines.len() - 1) as f64 * (TITLE_PX + 3.0);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart series\" viewBox=\"0 0 400 {h:.0}\" \
         width=\"400\" height=\"{h:.0}\" role=\"img\" aria-label=\"{t}\" \
         font-family=\"system-ui, sans-serif\" fill=\"#1f2328\">\n<title>{t}</title>\n",
        h = 250.0 + extra,
        t = xml(title)
    );
    for (i, line) in lines.iter().enumerate() {
        let _ = writeln!(
            svg,
            "<text class=\"title\" x=\"0\" y=\"{:.1}\" font-size=\"{TITLE_PX:.0}\" font-weight=\"bold\">{}</text>",
            14.0 + i as f64 * (TITLE_PX + 3.0),
            xml(line)
        );
    }
    let temps: Vec<(f64, Option<f64>)> = points.iter().map(|p| (p.0, p.1)).collect();
    let clocks: Vec<(f64, Option<f64>)> = points.iter().map(|p| (p.0, p.2)).collect();
    panel(&mut svg, 20.0 + extra, "temperature", "°C", &temps, t_max);
    panel(&mut svg, 125.0 + extra, "CPU clock", "MHz", &clocks, t_max);
    let _ = write!(
        svg,
        "<text x=\"56\" y=\"{y:.1}\" font-size=\"11\">0 s</text>\n\
         <text x=\"392\" y=\"{y:.1}\" font-size=\"11\" text-anchor=\"end\">{} s</text>\n</svg>",
        xml(&number(t_max)),
        y = 242.0 + extra,
    );
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
        assert!(a.contains("<path d=\"M56.0 "), "{a}");
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
