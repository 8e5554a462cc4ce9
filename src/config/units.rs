//! The small value syntaxes of the input files: durations, temperatures, percentages,
//! sha256, transfer rates.

use std::time::Duration;

/// What a duration looks like, for error messages.
pub const DURATION_FORM: &str =
    "a whole number and a unit (ms, s, m, h), like `500ms`, `30s`, `15m`, `1h` or `1h30m`";

/// The longest duration any setting takes: a week. Longer is surely a mistake (a
/// timeout that never fires), and the bound keeps every sum far from overflow.
pub const MAX_DURATION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Parses `500ms`, `30s`, `15m`, `1h`, `1h30m`, `0s`. Units are ms, s, m, h; parts are
/// summed. Fractions are refused so that one text has one meaning. At most
/// `MAX_DURATION`; parsing never overflows.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration `{text}`: expected {DURATION_FORM}");
    let s = text.trim();
    if s.is_empty() {
        return Err(bad());
    }
    let mut total_ms: u64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let too_long = || format!("duration `{text}` is too long: at most 7 days (`168h`)");
        let number: u64 = rest[..digits].parse().map_err(|_| too_long())?;
        rest = &rest[digits..];
        let unit_len = rest.chars().take_while(char::is_ascii_alphabetic).count();
        let unit_ms: u64 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total_ms = number
            .checked_mul(unit_ms)
            .and_then(|ms| total_ms.checked_add(ms))
            .filter(|&ms| ms <= MAX_DURATION.as_millis() as u64)
            .ok_or_else(too_long)?;
    }
    Ok(Duration::from_millis(total_ms))
}

/// Parses `50C` (degrees Celsius; `50.5C` and `50°C` too).
pub fn parse_celsius(text: &str) -> Result<f64, String> {
    let bad = || format!("bad temperature `{text}`: expected degrees Celsius like `50C`");
    let s = text.trim();
    let number = s
        .strip_suffix("°C")
        .or_else(|| s.strip_suffix('C'))
        .ok_or_else(bad)?
        .trim();
    let value: f64 = number.parse().map_err(|_| bad())?;
    if !value.is_finite() || !(-50.0..=150.0).contains(&value) {
        return Err(format!(
            "temperature `{text}` is out of range: expected between -50C and 150C"
        ));
    }
    Ok(value)
}

/// Parses `2%` into 0.02. Must lie strictly between 0% and 100%.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let bad = || format!("bad percentage `{text}`: expected a number followed by `%`, like `2%`");
    let number = text.trim().strip_suffix('%').ok_or_else(bad)?.trim();
    let value: f64 = number.parse().map_err(|_| bad())?;
    if !value.is_finite() || value <= 0.0 || value >= 100.0 {
        return Err(format!(
            "percentage `{text}` is out of range: expected more than 0% and less than 100%"
        ));
    }
    Ok(value / 100.0)
}

/// The most memory a board may declare (16 TiB, in MiB): more is surely a typo.
pub const MAX_MEMORY_MIB: u64 = 16 << 20;

/// Parses a board's `memory` (`"512 MiB"`, `"2 GiB"`, `"1.5GiB"`) into whole MiB,
/// rounded down. RAM comes in binary sizes, so `MB`, `GB` and `TB` mean MiB, GiB, TiB.
pub fn parse_memory(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "bad memory `{}`: expected a number and a unit (MiB, GiB or TiB), like `512 MiB` or `2 GiB`",
            text.escape_debug()
        )
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(bad)?;
    let (number, unit) = (&t[..split], t[split..].trim());
    let mib_per_unit: u64 = match unit {
        "MiB" | "MB" | "M" => 1,
        "GiB" | "GB" | "G" => 1 << 10,
        "TiB" | "TB" | "T" => 1 << 20,
        _ => return Err(bad()),
    };
    if number.is_empty() || number.len() > 12 || number.matches('.').count() > 1 {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    let mib = value * mib_per_unit as f64;
    if !mib.is_finite() || mib < 1.0 || mib > MAX_MEMORY_MIB as f64 {
        return Err(format!(
            "memory `{}` is out of range: expected 1 MiB to 16 TiB",
            text.escape_debug()
        ));
    }
    // In range, so the cast is exact for the whole part.
    Ok(mib.floor() as u64)
}

/// Checks a sha256 digest: 64 hex digits. Returns it in lower case.
pub fn parse_sha256(text: &str) -> Result<String, String> {
    let s = text.trim();
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s.to_ascii_lowercase())
    } else {
        Err(format!(
            "bad sha256 `{text}`: expected 64 hexadecimal digits (got {} characters)",
            s.chars().count()
        ))
    }
}

/// What a rate looks like, for error messages.
pub const RATE_FORM: &str = "a whole number and a unit per second (B/s, kB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s), like `100kB/s` or `2MiB/s`";

/// The range a rate may take: 1 kB/s to 10 GB/s.
pub const RATE_RANGE: std::ops::RangeInclusive<u64> = 1_000..=10_000_000_000;

/// Parses `100kB/s`, `2MiB/s`, `500 B/s` into bytes per second, within [`RATE_RANGE`].
/// Fractions are refused so that one text has one meaning; parsing never overflows.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let bad = || format!("bad rate `{text}`: expected {RATE_FORM}");
    let s = text.trim();
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad());
    }
    let unit = s[digits..].trim_start();
    let per: u64 = match unit {
        "B/s" => 1,
        "kB/s" | "KB/s" => 1_000,
        "MB/s" => 1_000_000,
        "GB/s" => 1_000_000_000,
        "KiB/s" => 1 << 10,
        "MiB/s" => 1 << 20,
        "GiB/s" => 1 << 30,
        _ => return Err(bad()),
    };
    let out_of_range =
        || format!("rate `{text}` is out of range: expected between 1kB/s and 10GB/s");
    s[..digits]
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(per))
        .filter(|r| RATE_RANGE.contains(r))
        .ok_or_else(out_of_range)
}

/// What an instant looks like, for error messages.
pub const INSTANT_FORM: &str = "an RFC 3339 time with its offset, like `2026-12-08T06:00:00Z` or \
     `2026-12-08T07:00:00+01:00` (`date --iso-8601=seconds` prints one), or `@` and Unix \
     seconds";

/// Parses an instant (`INSTANT_FORM`) into Unix seconds. The offset is required: a
/// deadline read in the controller's zone or the board's would be two deadlines.
pub fn parse_instant(text: &str) -> Result<f64, String> {
    let bad = || format!("bad time `{text}`: expected {INSTANT_FORM}");
    let s = text.trim();
    if !s.is_ascii() {
        return Err(bad());
    }
    if let Some(unix) = s.strip_prefix('@') {
        return match unix.parse::<u32>() {
            Ok(n) => Ok(f64::from(n)),
            Err(_) => Err(bad()),
        };
    }
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Result<i64, String> {
        let part = s.get(r).ok_or_else(bad)?;
        if part.is_empty() || !part.bytes().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        part.parse().map_err(|_| bad())
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    if b[13] != b':' || b[16] != b':' {
        return Err(bad());
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Fractions of a second are read and dropped: a deadline is not that fine.
    let mut rest = s.get(19..).ok_or_else(bad)?;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first() {
                Some(b'+') => 1,
                Some(b'-') => -1,
                _ => return Err(bad()),
            };
            let o = rest.as_bytes();
            if o.len() != 6 || o[3] != b':' {
                return Err(bad());
            }
            let digits = |r: std::ops::Range<usize>| -> Result<i64, String> {
                let p = rest.get(r).ok_or_else(bad)?;
                if p.bytes().all(|c| c.is_ascii_digit()) {
                    p.parse().map_err(|_| bad())
                } else {
                    Err(bad())
                }
            };
            let (oh, om) = (digits(1..3)?, digits(4..6)?);
            if oh > 23 || om > 59 {
                return Err(bad());
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let valid = (1970..=2105).contains(&year)
        && (1..=12).contains(&month)
        && day >= 1
        && usize::try_from(month - 1).is_ok_and(|m| day <= days_in[m])
        && hour <= 23
        && minute <= 59
        && second <= 60;
    if !valid {
        return Err(bad());
    }
    // Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let unix = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    #[allow(
        clippy::cast_precision_loss,
        reason = "years 1970-2105: well inside f64's exact integers"
    )]
    Ok(unix as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100kB/s"), Ok(100_000));
        assert_eq!(parse_rate("2MiB/s"), Ok(2 << 20));
        assert_eq!(parse_rate("5000 B/s"), Ok(5000));
        assert_eq!(parse_rate("10GB/s"), Ok(10_000_000_000));
        for bad in ["", "100", "1.5MB/s", "100kb/s", "-1MB/s", "MB/s", "1 MB"] {
            assert!(parse_rate(bad).unwrap_err().contains("bad rate"), "{bad}");
        }
        for far in ["999B/s", "11GB/s", "99999999999999999999GiB/s", "0kB/s"] {
            assert!(
                parse_rate(far).unwrap_err().contains("out of range"),
                "{far}"
            );
        }
    }

    #[test]
    fn durations() {
        let ok = [
            ("500ms", 500),
            ("30s", 30_000),
            ("15m", 900_000),
            ("1h", 3_600_000),
            ("1h30m", 5_400_000),
            ("0s", 0),
        ];
        for (text, ms) in ok {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
        for bad in [
            "",
            "15",
            "m",
            "1.5h",
            "15 minutes",
            "-1s",
            "1d",
            "99999999999999999999h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_duration("168h"), Ok(MAX_DURATION));
        for long in ["99999999999h", "169h", "167h61m", "604800001ms"] {
            let e = parse_duration(long).unwrap_err();
            assert!(e.contains("at most 7 days"), "{long}: {e}");
        }
    }

    #[test]
    fn temperatures_and_percentages() {
        assert_eq!(parse_celsius("50C"), Ok(50.0));
        assert_eq!(parse_celsius("42.5°C"), Ok(42.5));
        assert!(parse_celsius("50").is_err());
        assert!(parse_celsius("NaNC").is_err());
        assert_eq!(parse_percent("2%"), Ok(0.02));
        assert!(parse_percent("2").is_err());
        assert!(parse_percent("0%").is_err());
        assert!(parse_percent("150%").is_err());
    }

    #[test]
    fn sha256() {
        let d = "AB".repeat(32);
        assert_eq!(parse_sha256(&d), Ok("ab".repeat(32)));
        assert!(parse_sha256("abc").is_err());
        assert!(parse_sha256(&"g".repeat(64)).is_err());
    }

    #[test]
    fn memory_sizes_are_whole_mib_in_binary_units() {
        assert_eq!(parse_memory("512 MiB"), Ok(512));
        assert_eq!(parse_memory("2 GiB"), Ok(2048));
        assert_eq!(parse_memory("2GB"), Ok(2048));
        assert_eq!(parse_memory(" 1.5 GiB "), Ok(1536));
        assert_eq!(parse_memory("4G"), Ok(4096));
        for bad in [
            "",
            "512",
            "MiB",
            "two GiB",
            "1.2.3 GiB",
            "-1 GiB",
            "0 MiB",
            "0.5 MiB",
            "1 PiB",
            "17 TiB",
            "1e9 MiB",
            "512 mib",
            "NaN GiB",
        ] {
            assert!(parse_memory(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn instants_read_as_unix_seconds_with_their_offset() {
        use super::parse_instant;
        assert_eq!(parse_instant("1970-01-01T00:00:00Z"), Ok(0.0));
        // `date -d 2026-12-08T06:00:00Z +%s`
        assert_eq!(parse_instant("2026-12-08T06:00:00Z"), Ok(1_796_709_600.0));
        assert_eq!(
            parse_instant("2026-12-08T07:00:00+01:00"),
            Ok(1_796_709_600.0)
        );
        assert_eq!(
            parse_instant("2026-12-08 01:00:00.5-05:00"),
            Ok(1_796_709_600.0)
        );
        assert_eq!(parse_instant("2024-02-29T00:00:00Z"), Ok(1_709_164_800.0));
        assert_eq!(parse_instant("@1796709600"), Ok(1_796_709_600.0));
        for bad in [
            "",
            "tomorrow",
            "2026-12-08T06:00:00",
            "2026-12-08T06:00Z",
            "2025-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-12-08T24:00:00Z",
            "2026-12-08T06:00:00+1:00",
            "2026-12-08T06:00:00+01:00x",
            "@-5",
            "@",
            "２026-12-08T06:00:00Z",
        ] {
            let e = parse_instant(bad).unwrap_err();
            assert!(e.contains("RFC 3339"), "{bad}: {e}");
        }
    }
}
