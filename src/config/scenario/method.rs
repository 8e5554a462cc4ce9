//! The scenario's `[method]`: runs, warm-up, cool-down and the validity gates.

use toml::Spanned;

use crate::config::{Source, raw, units};
use crate::diag::Diagnostic;
use crate::model::{Cooldown, Method, RunOrder, Runs};

/// Cool-down targets a board can reach: absolute, and above its idle temperature.
const MIN_COOLDOWN_C: f64 = 20.0;
const MAX_COOLDOWN_C: f64 = 110.0;
const MAX_ABOVE_IDLE: f64 = 30.0;

fn duration(
    src: &Source,
    value: &Spanned<String>,
    diags: &mut Vec<Diagnostic>,
) -> Option<std::time::Duration> {
    units::parse_duration(value.get_ref())
        .map_err(|e| diags.push(src.at_value(value, e)))
        .ok()
}

fn count(
    src: &Source,
    value: &Spanned<i64>,
    key: &str,
    min: i64,
    diags: &mut Vec<Diagnostic>,
) -> Option<u32> {
    let v = *value.get_ref();
    match u32::try_from(v) {
        Ok(n) if v >= min && n <= 100_000 => Some(n),
        _ => {
            diags.push(src.at_value(
                value,
                format!("bad `{key}` {v}: expected a whole number from {min} to 100000"),
            ));
            None
        }
    }
}

pub(super) fn method(
    src: &Source,
    raw: Option<&raw::Method>,
    diags: &mut Vec<Diagnostic>,
) -> Method {
    let mut method = Method::default();
    let Some(raw) = raw else { return method };

    if let Some(c) = &raw.cooldown {
        match c.get_ref() {
            raw::Cooldown::Fixed(text) => {
                let spanned = Spanned::new(c.span(), text.clone());
                if let Some(d) = duration(src, &spanned, diags) {
                    method.cooldown = if d.is_zero() {
                        Cooldown::None
                    } else {
                        Cooldown::Fixed { duration: d }
                    };
                }
            }
            raw::Cooldown::UntilBelow(u) => {
                // "50C", or "idle+5C": five degrees above the board's idle temperature.
                // A target the board cannot reach would hold every cell for `max`.
                let text = u.until_below.get_ref().trim();
                let (above_idle, degrees) = match text.strip_prefix("idle") {
                    Some(rest) => match rest.trim().strip_prefix('+') {
                        Some(d) => (true, Ok(d.trim())),
                        None => (
                            true,
                            Err(format!(
                                "`{text}`: a target below the idle temperature can never be reached; write `idle+N` with N of at least 1C"
                            )),
                        ),
                    },
                    None => (false, Ok(text)),
                };
                let (low, high) = if above_idle {
                    (1.0, MAX_ABOVE_IDLE)
                } else {
                    (MIN_COOLDOWN_C, MAX_COOLDOWN_C)
                };
                let celsius = degrees
                    .and_then(units::parse_celsius)
                    .and_then(|c| {
                        if (low..=high).contains(&c) {
                            Ok(c)
                        } else if above_idle {
                            Err(format!("`{text}`: expected idle+1C to idle+{high}C; a board cools to about its idle temperature and no further"))
                        } else {
                            Err(format!("`{text}`: expected {low}C to {high}C; a board does not cool below the room it stands in"))
                        }
                    })
                    .map_err(|e| {
                        diags.push(
                            src.at_value(&u.until_below, e)
                                .with_help("write an absolute limit like \"50C\", or \"idle+5C\""),
                        );
                    })
                    .ok();
                let max = match &u.max {
                    Some(m) => duration(src, m, diags),
                    None => Some(std::time::Duration::from_secs(15 * 60)),
                };
                if let (Some(celsius), Some(max)) = (celsius, max) {
                    method.cooldown = Cooldown::UntilBelow {
                        celsius,
                        above_idle,
                        max,
                    };
                }
            }
        }
    }

    if let Some(idle) = &raw.idle {
        let idle = idle.get_ref();
        let load = *idle.load_below.get_ref();
        if !(load.is_finite() && load > 0.0) {
            diags.push(src.at_value(
                &idle.load_below,
                format!("load_below = {load}: expected a load average above 0, like 0.5"),
            ));
        }
        let hold = match &idle.hold {
            Some(h) => duration(src, h, diags),
            None => Some(std::time::Duration::from_secs(30)),
        };
        let max = match &idle.max {
            Some(m) => duration(src, m, diags),
            None => Some(std::time::Duration::from_secs(10 * 60)),
        };
        if let (Some(hold), Some(max)) = (hold, max) {
            method.idle = Some(crate::model::IdleGate {
                load_below: load,
                hold,
                max,
            });
        }
    }

    if let Some(w) = &raw.warmup {
        let w = w.get_ref();
        if let Some(r) = &w.runs {
            method.warmup.runs = count(src, r, "runs", 0, diags).unwrap_or(method.warmup.runs);
        }
        if let Some(d) = &w.duration {
            method.warmup.duration = duration(src, d, diags);
        }
    }

    if let Some(r) = &raw.runs {
        let runs = r.get_ref();
        let min = runs
            .min
            .as_ref()
            .and_then(|m| count(src, m, "min", 1, diags));
        let max = runs
            .max
            .as_ref()
            .and_then(|m| count(src, m, "max", 1, diags));
        let target = runs.target.as_ref().and_then(|t| {
            units::parse_percent(t.get_ref())
                .map_err(|e| diags.push(src.at_value(t, e)))
                .ok()
        });
        let min = min.unwrap_or(if runs.max.is_some() {
            max.unwrap_or(1).min(3)
        } else {
            3
        });
        // With a precision target the default leaves room to reach it; without one
        // there is nothing to adapt, so max is min.
        let max = max.unwrap_or(if target.is_some() { min.max(10) } else { min });
        if max < min
            && let Some(span) = runs.max.as_ref().map(Spanned::span)
        {
            diags.push(
                src.at(span, format!("`max` ({max}) is less than `min` ({min})"))
                    .with_help("max is the most runs per cell, min the fewest: max >= min"),
            );
        }
        method.runs = Runs { min, max, target };
    }

    if let Some(c) = &raw.confidence {
        let v = *c.get_ref();
        if v > 0.0 && v < 1.0 {
            method.confidence = v;
        } else {
            diags.push(src.at_value(
                c,
                format!("bad confidence {v}: expected a level between 0 and 1, like 0.95"),
            ));
        }
    }

    if let Some(o) = &raw.order {
        method.order = match o.get_ref().as_str() {
            "blocked" => RunOrder::Blocked,
            "interleaved" => RunOrder::Interleaved,
            other => {
                diags.push(
                    src.at_value(o, format!("unknown order `{other}`; expected `blocked` or `interleaved`"))
                        .with_help("`blocked` runs a cell's runs together; `interleaved` takes turns between cells so drift hits all alike"),
                );
                method.order
            }
        };
    }

    if let Some(v) = &raw.validity {
        let v = v.get_ref();
        if let Some(h) = &v.hot
            && let Ok(c) =
                units::parse_celsius(h.get_ref()).map_err(|e| diags.push(src.at_value(h, e)))
        {
            method.validity.hot_celsius = c;
        }
        if let Some(b) = &v.background_load
            && let Ok(f) = units::parse_percent(b.get_ref()).map_err(|e| {
                diags.push(src.at_value(b, e).with_help(
                    "the share of the board's CPU capacity used by processes other than the test, like `10%`",
                ));
            })
        {
            method.validity.background_load = f;
        }
        if let Some(x) = &v.exclude_flagged {
            method.validity.exclude_flagged = *x.get_ref();
        }
    }
    method
}
