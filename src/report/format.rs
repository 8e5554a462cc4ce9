//! How numbers, p-values, intervals and durations read in a report, whatever the locale,
//! and how results.csv and the HTML page write an f64 exactly (`push_number`).

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

/// An f64 as CSV and JSON readers take it back exactly (nothing when not finite),
/// appended to `out`: the shortest digits that read back as `x` (the nearest of them),
/// never with an exponent, byte for byte what `format!("{x}")` prints
/// (`numbers_are_written_as_std_displays_them` checks it).
pub(super) fn push_number(out: &mut String, x: f64) {
    use std::fmt::Write;
    if !x.is_finite() {
        return;
    }
    // zmij finds the same digits far faster than std, but where two candidates are
    // exactly as near it takes the even one and std the one further from zero: those
    // few, and numbers of 1e16 and more, std writes.
    let mut buffer = zmij::Buffer::new();
    let text = buffer.format_finite(x);
    // Most numbers come from zmij as std lays them out (`53.21`, `-0.0015`): a point,
    // no exponent and no trailing zero. Those are written as they are.
    if let Some(decimals) = laid_out_as_std(text)
        && !is_tie(x, -(decimals as i32))
    {
        out.push_str(text);
        return;
    }
    match Shortest::of(text).filter(|s| !is_tie(x, s.exponent)) {
        Some(s) => s.push_to(out),
        None => {
            let _ = write!(out, "{x}");
        }
    }
}

/// The number of decimals of a number zmij wrote as std's `{}` would: with a point and
/// at least one decimal, the last not `0` (std writes `5.0` as `5`), and no exponent.
fn laid_out_as_std(text: &str) -> Option<usize> {
    // One pass over a few ASCII bytes: a multi-character `contains` and `split_once`
    // each searched the text again, for every number of a big results.csv.
    let bytes = text.as_bytes();
    let mut point = None;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'e' | b'E' => return None,
            b'.' => point = Some(i),
            _ => {}
        }
    }
    let decimals = bytes.len() - point? - 1;
    (decimals > 0 && bytes.last() != Some(&b'0')).then_some(decimals)
}

/// Whether `x` lies exactly halfway between two numbers of digits × 10^`exponent` (the
/// shortest digits at that exponent and a neighbour of as many): 2·|x|·10^-exponent is
/// then an odd integer. With |x| = m·2^e, that is m·5^j·2^(e+j+1) for j = -exponent,
/// odd exactly when 2^-(e+j+1) is the largest power of two dividing m (5^j is odd).
fn is_tie(x: f64, exponent: i32) -> bool {
    let bits = x.abs().to_bits();
    let (m, e) = match bits >> 52 {
        0 => (bits, -1074),
        b => ((bits & ((1 << 52) - 1)) | (1 << 52), b as i32 - 1075),
    };
    let p = e - exponent + 1;
    m != 0 && p <= 0 && m.trailing_zeros() as i32 == -p
}

/// A number's shortest digits as zmij writes them: `digits` × 10^`exponent`, the digits
/// without leading or trailing zeros, the exponent at most 0.
struct Shortest {
    negative: bool,
    /// The digits are `buf[..len]` (ASCII); a double has at most 17.
    buf: [u8; 24],
    len: usize,
    exponent: i32,
}

impl Shortest {
    /// None for a zero or a number of 1e16 and more (a positive exponent).
    fn of(text: &str) -> Option<Shortest> {
        let (negative, text) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (mantissa, power) = match text.split_once(['e', 'E']) {
            Some((m, e)) => (m, e.parse::<i32>().ok()?),
            None => (text, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let mut out = Shortest {
            negative,
            buf: [0; 24],
            len: 0,
            exponent: power - fraction.len() as i32,
        };
        // The digits of whole and fraction together, leading zeros left out.
        for &b in whole.as_bytes().iter().chain(fraction.as_bytes()) {
            if !b.is_ascii_digit() || out.len == out.buf.len() {
                return None;
            }
            if out.len == 0 && b == b'0' {
                continue;
            }
            out.buf[out.len] = b;
            out.len += 1;
        }
        while out.len > 0 && out.buf[out.len - 1] == b'0' {
            out.len -= 1;
            out.exponent += 1;
        }
        (out.len > 0 && out.exponent <= 0).then_some(out)
    }

    /// The digits as std's `{}` lays them out: `0.00015`, `15.5`, `-3`.
    fn push_to(&self, out: &mut String) {
        if self.negative {
            out.push('-');
        }
        let digits = &self.buf[..self.len];
        let point = digits.len() as i32 + self.exponent;
        // The digits are ASCII (`of` took nothing else), so they are always text.
        let push = |out: &mut String, bytes: &[u8]| {
            out.push_str(std::str::from_utf8(bytes).unwrap_or_default());
        };
        if point <= 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-point) as usize));
            push(out, digits);
        } else {
            let (whole, fraction) = digits.split_at(point as usize);
            push(out, whole);
            if !fraction.is_empty() {
                out.push('.');
                push(out, fraction);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::push_number;

    fn check(x: f64) {
        let mut out = String::from("x");
        push_number(&mut out, x);
        let want = if x.is_finite() {
            format!("x{x}")
        } else {
            "x".to_string()
        };
        assert_eq!(out, want, "{x:e} ({:#x})", x.to_bits());
    }

    /// Zeros, non-finite values, the extremes, exact ties (2^-25 ends in ...3125),
    /// powers of two and ten and their neighbours, values of 1 to 17 digits at every
    /// scale, and millions of bit patterns over every exponent.
    #[test]
    fn numbers_are_written_as_std_displays_them() {
        for x in [
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::MIN,
            f64::EPSILON,
            f64::from_bits(1),
            0.1,
            0.3,
            1.0 / 3.0,
            123.456,
            2.9802322387695313e-8,
            662936471232937.2,
            1e15,
            1e16,
            1e21,
            1e22,
            1e-5,
            1e-7,
            5e-324,
            9007199254740993.0,
        ] {
            check(x);
            check(-x);
        }
        for e in -1074..1024 {
            let p = 2f64.powi(e);
            for x in [p, p.next_up(), p.next_down(), 1.5 * p, 1.25 * p] {
                check(x);
            }
        }
        for e in -320..308 {
            let p: f64 = format!("1e{e}").parse().unwrap();
            for x in [p, p.next_up(), p.next_down(), 3.0 * p, 7.5 * p] {
                check(x);
            }
        }
        for k in 0..200_000u64 {
            check(k as f64 / 1000.0);
            check(k as f64 * 0.01 + 0.005);
            check(1.7e9 + k as f64 * 0.1 + 3.2 - (1.7e9 + k as f64 * 0.1));
        }
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..3_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check(f64::from_bits(x));
            // Values of 1 to 17 significant digits at every scale.
            let digits = 1 + (x % 17) as usize;
            let exponent = ((x >> 8) % 600) as i32 - 300;
            let short: f64 = format!("{:.*e}", digits - 1, f64::from_bits(x >> 2))
                .split('e')
                .next()
                .map(|m| format!("{m}e{exponent}"))
                .and_then(|t| t.parse().ok())
                .unwrap_or(0.0);
            check(short);
            // Halfway values: a dyadic mantissa at a scale where it has 16 or 17 digits.
            let tie = (x >> 11) as f64 * 2f64.powi(((x >> 3) % 60) as i32 - 70);
            check(tie);
        }
    }
}
