//! Text the SVG charts write, fast and to the byte: XML escaping that copies text
//! needing none, and numbers with fixed decimals as `format!("{:.N}")` prints them (the
//! charts' coordinates, and every mean and interval of a report, `format.rs`).
//!
//! Hand-written for speed: a report of a big store draws thousands of bars, about ten
//! numbers and four texts each, and std's `{:.1}` (exact formatting, often through its
//! slow big-number path) and a `String` per escaped text showed in the profile. Both are
//! `Display` wrappers, so a chart writes straight into its `String` with `write!`.

use std::fmt;
use std::fmt::Write as _;

/// Escapes text for SVG/XML (text and attribute values), control characters as `shown`
/// escapes them.
pub(in crate::report) fn xml(text: &str) -> String {
    Xml(text).to_string()
}

/// `text` as XML text: `&`, `<`, `>`, `"`, `'` escaped, control characters as `shown`
/// escapes them (`\u{1b}`).
/// Text without any of them (most labels and every number) is written in one piece.
pub(in crate::report) struct Xml<'a>(pub &'a str);

/// Where the first character `Xml` changes starts: an escaped character, a C0 control,
/// DEL, or a C1 control (U+0080..U+009F, 0xC2 then a byte below 0xA0). A `±` (0xC2
/// 0xB1), in nearly every value a chart writes, is passed over here rather than sent
/// down the slow path.
fn first_special(text: &str) -> Option<usize> {
    first_of(text, |b| {
        b < 0x20 || matches!(b, b'&' | b'<' | b'>' | b'"' | b'\'' | 0x7f)
    })
}

/// Where the first byte `special` picks out, or the first C1 control, starts in `text`.
pub(in crate::report) fn first_of(text: &str, special: impl Fn(u8) -> bool) -> Option<usize> {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().position(|(i, &b)| {
        special(b) || (b == 0xc2 && bytes.get(i + 1).is_some_and(|next| *next < 0xa0))
    })
}

/// What `Xml` writes for a character it changes.
fn xml_replacement(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        '\'' => Some("&#39;"),
        c => crate::shown::escape(c),
    }
}

/// Writes `text` with each character `replace` names replaced, and the text between
/// them in one piece: most escaped texts have only a `±` (whose first byte is 0xC2)
/// and nothing to replace.
pub(in crate::report) fn write_replaced<E>(
    text: &str,
    replace: impl Fn(char) -> Option<&'static str>,
    mut write: impl FnMut(&str) -> Result<(), E>,
) -> Result<(), E> {
    let mut kept = 0;
    for (i, c) in text.char_indices() {
        if let Some(r) = replace(c) {
            write(&text[kept..i])?;
            write(r)?;
            kept = i + c.len_utf8();
        }
    }
    write(&text[kept..])
}

impl fmt::Display for Xml<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.0;
        let Some(at) = first_special(text) else {
            return f.write_str(text);
        };
        f.write_str(&text[..at])?;
        write_replaced(&text[at..], xml_replacement, |s| f.write_str(s))
    }
}

/// The most decimals `push_fixed` writes itself; beyond them it asks std.
pub(in crate::report) const FIXED_MAX_DECIMALS: usize = 9;

/// Appends `v` with `decimals` decimals, byte for byte what `format!("{v:.decimals$}")`
/// gives for every `f64` (`fixed_decimals_are_std_s_for_every_kind_of_value` checks it):
/// the exact binary value rounded half to even, a `-` on negative values and negative
/// zero.
pub(in crate::report) fn push_fixed(out: &mut String, v: f64, decimals: usize) {
    let mut buf = [0u8; 40];
    if let Some(text) = fixed(v, decimals, &mut buf) {
        // Only ASCII digits, '.' and '-': pushed whole (the check of a few ASCII bytes
        // costs less than pushing them one char at a time).
        out.push_str(std::str::from_utf8(text).unwrap_or_default());
    } else {
        let _ = write!(out, "{v:.decimals$}");
    }
}

/// `push_fixed`'s text (ASCII), written at the end of `buf`; None where std must do it:
/// NaN, infinities, magnitudes past 1e15 (no report shows them) or more than
/// `FIXED_MAX_DECIMALS` decimals.
fn fixed(v: f64, decimals: usize, buf: &mut [u8; 40]) -> Option<&[u8]> {
    let a = v.abs();
    if !a.is_finite() || a >= 1e15 || decimals > FIXED_MAX_DECIMALS {
        return None;
    }
    // a = m * 2^-shift exactly; shift >= 3, since a < 1e15 < 2^50 and a normal m has 53
    // bits.
    let bits = a.to_bits();
    let (m, shift) = match bits >> 52 {
        0 => (bits, 1074),
        e => ((bits & ((1 << 52) - 1)) | (1 << 52), 1075 - e as u32),
    };
    // a * 10^decimals rounded half to even, the remainder kept exactly: in u64 where
    // the product fits (m * 10^3 < 2^63, the charts' and most means' case), else in
    // u128 (m * 10^9 < 2^83); from the width of the product on, it is far below a half.
    let scale = 10u64.pow(decimals as u32);
    let q: u128 = if decimals <= 3 {
        let t = m * scale;
        if shift >= 64 {
            0
        } else {
            let q = t >> shift;
            let rest = t - (q << shift);
            let half = 1u64 << (shift - 1);
            u128::from(if rest > half || (rest == half && q & 1 == 1) {
                q + 1
            } else {
                q
            })
        }
    } else {
        let t = u128::from(m) * u128::from(scale);
        if shift >= 128 {
            0
        } else {
            let q = t >> shift;
            let rest = t - (q << shift);
            let half = 1u128 << (shift - 1);
            if rest > half || (rest == half && q & 1 == 1) {
                q + 1
            } else {
                q
            }
        }
    };
    // Below 1e15 * 10^9: the whole part and the decimals each fit a u64 (and mostly q
    // itself, whose u64 division is far cheaper).
    let (mut whole, mut frac) = match u64::try_from(q) {
        Ok(q) => (q / scale, q % scale),
        Err(_) => (
            (q / u128::from(scale)) as u64,
            (q % u128::from(scale)) as u64,
        ),
    };
    // Digits from the right: the decimals, the point, the whole part (at most 16 digits).
    let mut i = buf.len();
    if decimals > 0 {
        for _ in 0..decimals {
            i -= 1;
            buf[i] = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        i -= 1;
        buf[i] = b'.';
    }
    loop {
        i -= 1;
        buf[i] = b'0' + (whole % 10) as u8;
        whole /= 10;
        if whole == 0 {
            break;
        }
    }
    if v.is_sign_negative() {
        i -= 1;
        buf[i] = b'-';
    }
    Some(&buf[i..])
}

/// Appends `text` as `Xml` writes it.
pub(in crate::report) fn push_xml(out: &mut String, text: &str) {
    let at = first_special(text).unwrap_or(text.len());
    out.push_str(&text[..at]);
    let _ = write_replaced::<std::convert::Infallible>(&text[at..], xml_replacement, |s| {
        out.push_str(s);
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: f64) {
        assert_eq!(
            {
                let mut s = String::new();
                push_fixed(&mut s, v, 1);
                s
            },
            format!("{v:.1}"),
            "{v:e} ({:#x})",
            v.to_bits()
        );
    }

    /// Every kind of value std may print differently: exact halves (k/4 for odd k),
    /// the doubles next to them and to every decimal tie, negative zero and small
    /// negatives, subnormals, the 1e15 edge and beyond, non-finite values, and a few
    /// million values spread over all exponents and over the charts' range.
    #[test]
    fn fixed_one_decimal_is_std_s_for_every_kind_of_value() {
        let mut special = vec![
            0.0,
            -0.0,
            0.05,
            0.15,
            0.25,
            -0.25,
            -0.04,
            -0.05,
            0.95,
            9.95,
            99.95,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e15,
            -1e15,
            1e15 - 0.25,
            999_999_999_999_999.9,
            4503599627370495.5,
        ];
        for k in -20_000i64..20_000 {
            // Exact ties (k/4, k odd), and the nearest doubles to every x.y5.
            let tie = k as f64 / 4.0;
            let decimal = k as f64 / 20.0;
            for v in [tie, decimal] {
                special.extend([v, v.next_up(), v.next_down()]);
            }
        }
        for p in 0..50 {
            let big = 2f64.powi(p) + 0.25;
            special.extend([big, big.next_up(), big.next_down(), -big]);
        }
        for v in special {
            check(v);
        }
        // xorshift: reproducible bit patterns with every exponent up to 2^52 (above 1e15
        // std formats them itself, and slowly), and values in the range chart
        // coordinates take.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..1_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let exponent = (x >> 52) % 1076;
            check(f64::from_bits(
                (x & 0x800f_ffff_ffff_ffff) | (exponent << 52),
            ));
            check((x >> 11) as f64 / (1u64 << 53) as f64 * 2000.0 - 500.0);
            check((x % 100_000) as f64 / 100.0);
        }
    }

    /// `push_fixed` for every number of decimals a report asks for, on the kinds of
    /// values `fixed_one_decimal_is_std_s_for_every_kind_of_value` uses for one (fewer
    /// random ones) and each decimal's own ties.
    #[test]
    fn fixed_decimals_are_std_s_for_every_kind_of_value() {
        let check = |v: f64, d: usize| {
            let want = format!("{v:.d$}");
            let mut pushed = String::from("x");
            push_fixed(&mut pushed, v, d);
            assert_eq!(
                pushed,
                format!("x{want}"),
                "{v:e} ({:#x}) with {d}",
                v.to_bits()
            );
        };
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        for d in 0..=FIXED_MAX_DECIMALS + 1 {
            let step = 10f64.powi(-(d as i32));
            let mut values = vec![0.0, -0.0, f64::NAN, f64::INFINITY, 1e15, -1e15, 1e15 - 0.25];
            for k in -3000i64..3000 {
                // This decimal's ties (exact and the doubles next to them), and binary
                // halves.
                let tie = (k as f64 + 0.5) * step;
                let half = k as f64 / 8.0;
                for v in [tie, half] {
                    values.extend([v, v.next_up(), v.next_down()]);
                }
            }
            for _ in 0..100_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let exponent = (x >> 52) % 1076;
                values.push(f64::from_bits(
                    (x & 0x800f_ffff_ffff_ffff) | (exponent << 52),
                ));
                values.push((x >> 11) as f64 / (1u64 << 53) as f64 * 2e6 - 1e6);
                values.push((x % 10_000_000) as f64 / 1000.0);
            }
            for v in values {
                check(v, d);
            }
        }
    }

    #[test]
    fn push_xml_appends_what_xml_writes() {
        for text in ["plain", "a<b>&\"c\"'d'", "tab\there\u{7f}\u{85}é", ""] {
            let mut out = String::from("x");
            push_xml(&mut out, text);
            assert_eq!(out, format!("x{}", xml(text)));
        }
    }

    /// The escaping `Xml` replaced, char by char with a `String` each time.
    fn reference(text: &str) -> String {
        let mut out = String::new();
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

    #[test]
    fn xml_escapes_markup_and_controls_and_copies_the_rest() {
        // Every pair of characters from a set holding each class of them.
        let chars = [
            'a', ' ', '&', '<', '>', '"', '\'', '\t', '\n', '\u{7f}', '\u{80}', '\u{85}', '\u{9f}',
            '\u{a0}', 'é', 'Ā', '±', '—', '…', '😀',
        ];
        for a in chars {
            for b in chars {
                let text = format!("x{a}{b}y{a}");
                assert_eq!(xml(&text), reference(&text), "{text:?}");
            }
        }
        assert_eq!(
            xml("plain text, 12.5 ± 0.3 — ok"),
            "plain text, 12.5 ± 0.3 — ok"
        );
        assert_eq!(
            xml("a<b>&\"c\"'d'"),
            "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;"
        );
        assert_eq!(
            xml("tab\there\u{7f}\u{85}é\u{a0}ü"),
            "tab\\there\\u{7f}\\u{85}é\u{a0}ü"
        );
        assert_eq!(xml("Ā\u{9f}x"), "Ā\\u{9f}x");
        assert_eq!(xml(""), "");
    }
}
