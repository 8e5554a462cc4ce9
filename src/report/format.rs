//! How numbers, p-values, intervals and durations read in a report, whatever the locale.

use super::chart::push_fixed;

/// Formats a number with 4 significant digits, no exponent for everyday magnitudes,
/// independent of locale.
pub fn number(x: f64) -> String {
    if !x.is_finite() {
        return "—".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    let decimals = (3 - mag).clamp(0, 9) as usize;
    let mut s = String::with_capacity(24);
    push_fixed(&mut s, x, decimals);
    if s.starts_with("-0") && s.trim_start_matches(['-', '0', '.']).is_empty() {
        s.remove(0);
    }
    s
}

pub(super) fn duration_text(secs: f64) -> String {
    let s = secs.round() as u64;
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// A p-value for people: 3 significant digits, scientific below 0.001.
pub fn p_value(p: f64) -> String {
    if p < 0.001 {
        format!("{p:.2e}")
    } else {
        format!("{p:.3}")
    }
}

/// A number without needless trailing zeros: 80.0 -> "80", 0.5 -> "0.5".
pub fn trimmed(x: f64) -> String {
    let s = format!("{x:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A fraction as a percentage without needless digits: 0.95 -> "95", 0.025 -> "2.5".
pub fn percent(fraction: f64) -> String {
    trimmed(fraction * 100.0)
}

/// `mean ± half`, with the half-width to two significant digits and the mean rounded
/// to the same decimal place, so no digit is shown that the interval says is noise.
pub fn mean_ci(mean: f64, half: f64) -> String {
    if !(half.is_finite() && half > 0.0 && mean.is_finite()) {
        return format!("{} ± {}", number(mean), number(half));
    }
    let decimals = (1 - half.log10().floor() as i32).clamp(0, 9) as usize;
    let mut s = String::with_capacity(32);
    push_fixed(&mut s, mean, decimals);
    s.push_str(" ± ");
    push_fixed(&mut s, half, decimals);
    s
}
