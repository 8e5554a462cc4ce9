//! The SVG bar chart of one metric, deterministic to the byte.

use super::format::number;

/// Escapes text for SVG/XML.
fn xml(text: &str) -> String {
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
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"12\" text-anchor=\"end\">{}</text>\n\
             <rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#6b8fc7\"/>\n",
            LABEL_W - 6.0,
            y + 13.0,
            xml(label),
            y + 3.0,
            (xm - x0).max(0.5),
            ROW_H - 8.0,
        ));
        if *ci > 0.0 {
            let (lo, hi) = (x(mean - ci), x(mean + ci));
            let mid = y + ROW_H / 2.0 - 1.0;
            svg.push_str(&format!(
                "<path d=\"M{lo:.1} {mid:.1}H{hi:.1}M{lo:.1} {:.1}V{:.1}M{hi:.1} {:.1}V{:.1}\" \
                 stroke=\"#222\" stroke-width=\"1.2\" fill=\"none\"/>\n",
                mid - 4.0,
                mid + 4.0,
                mid - 4.0,
                mid + 4.0
            ));
        }
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{}</text>\n",
            x(mean + ci) + 6.0,
            y + 13.0,
            xml(&number(*mean))
        ));
    }
    svg.push_str("</svg>");
    svg
}
