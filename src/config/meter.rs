//! Validates a board's `[meter]` table into a `model::Meter`: exactly one source (a
//! file, a current and voltage pair, the Pi 5's PMIC, or a controller command), its
//! units, and the idle window; and a recipe's metrics derived from watts
//! (`per_watt`, `joules`).

use std::time::Duration;

use toml::Spanned;

use super::{Source, board, names, raw};
use crate::diag::Diagnostic;
use std::collections::BTreeMap;

use crate::model::{Better, DEFAULT_METER_IDLE, Derived, Meter, MeterSource, MetricSpec};

/// Bounds of `idle`: the board's start script waits it out within its own 60 s limit.
const IDLE: (Duration, Duration) = (Duration::ZERO, Duration::from_secs(30));

pub(super) fn validate(
    src: &Source,
    raw: &Spanned<raw::Meter>,
    board: &str,
    host: &str,
    diags: &mut Vec<Diagnostic>,
) -> Option<Meter> {
    let m = raw.get_ref();
    let start = diags.len();
    let present = |v: bool, name: &'static str| v.then_some(name);
    let sources: Vec<&str> = [
        present(m.file.is_some(), "file"),
        present(
            m.current.is_some() || m.voltage.is_some(),
            "current/voltage",
        ),
        present(m.pmic.as_ref().is_some_and(|p| *p.get_ref()), "pmic"),
        present(m.command.is_some(), "command"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if sources.len() != 1 {
        let what = if sources.is_empty() {
            "`[meter]` names no source".to_string()
        } else {
            format!(
                "`[meter]` names {} sources ({}); one is read",
                sources.len(),
                sources.join(", ")
            )
        };
        diags.push(src.at_value(raw, what).with_help(
            "give one of `file = \"/sys/class/hwmon/hwmonN/power1_input\"`, `current` with `voltage`, `pmic = true`, or `command = \"curl ...\"` (run on the controller)",
        ));
        return None;
    }
    // Keys that belong to another source are mistakes, not silently ignored.
    let takes: &[&str] = match sources[0] {
        "file" => &["unit"],
        "current/voltage" => &["current_unit", "voltage_unit"],
        "command" => &["json"],
        _ => &[],
    };
    let optional = [
        ("unit", m.unit.as_ref().map(Spanned::span)),
        ("current_unit", m.current_unit.as_ref().map(Spanned::span)),
        ("voltage_unit", m.voltage_unit.as_ref().map(Spanned::span)),
        ("json", m.json.as_ref().map(Spanned::span)),
    ];
    for (key, span) in optional {
        if let Some(span) = span
            && !takes.contains(&key)
        {
            diags.push(src.at(
                span,
                format!("`{key}` does not apply to a `{}` meter", sources[0]),
            ));
        }
    }
    let idle = m
        .idle
        .as_ref()
        .and_then(|t| super::ssh::bounded(src, t, "idle", IDLE, diags))
        .unwrap_or(DEFAULT_METER_IDLE);
    let source = match sources[0] {
        "file" => {
            let path = m.file.as_ref()?;
            board_file(src, path, "file", diags);
            let scale = unit(
                src,
                m.unit.as_ref(),
                &[("uW", 1e-6), ("mW", 1e-3), ("W", 1.0)],
                "uW",
                diags,
            );
            MeterSource::File {
                path: path.get_ref().clone(),
                scale,
            }
        }
        "current/voltage" => {
            let (Some(current), Some(voltage)) = (&m.current, &m.voltage) else {
                diags.push(src.at_value(
                    raw,
                    "a meter with `current` needs `voltage` too, and the other way round",
                ));
                return None;
            };
            board_file(src, current, "current", diags);
            board_file(src, voltage, "voltage", diags);
            let a = unit(
                src,
                m.current_unit.as_ref(),
                &[("uA", 1e-6), ("mA", 1e-3), ("A", 1.0)],
                "mA",
                diags,
            );
            let v = unit(
                src,
                m.voltage_unit.as_ref(),
                &[("uV", 1e-6), ("mV", 1e-3), ("V", 1.0)],
                "mV",
                diags,
            );
            MeterSource::Pair {
                current: current.get_ref().clone(),
                voltage: voltage.get_ref().clone(),
                scale: a * v,
            }
        }
        "pmic" => MeterSource::Pmic,
        _ => {
            let command = m.command.as_ref()?;
            if command.get_ref().trim().is_empty() {
                diags.push(src.at_value(command, "`command` must not be empty"));
            }
            // A meter's command may use `board` and `host` only: it reads a plug or a
            // meter, never the board's devices.
            let ctx = board::TemplateContext {
                board: board.to_string(),
                host: host.to_string(),
                device: None,
                node: None,
            };
            board::board_template(src, command, &ctx, false, diags);
            if let Some(json) = &m.json
                && let Err(e) = crate::bench::parse::check_path(json.get_ref())
            {
                diags
                    .push(src.at_value(json, format!("bad `json` path `{}`: {e}", json.get_ref())));
            }
            MeterSource::Command {
                command: command.get_ref().clone(),
                json: m.json.as_ref().map(|j| j.get_ref().clone()),
            }
        }
    };
    (diags.len() == start).then_some(Meter { source, idle })
}

/// A file the board's sampler reads: an absolute path without control characters or
/// glob characters (it is read as one file, quoted).
fn board_file(src: &Source, value: &Spanned<String>, key: &str, diags: &mut Vec<Diagnostic>) {
    let v = value.get_ref();
    let why = if !v.starts_with('/') {
        Some(format!(
            "`{key}` must be an absolute path on the board, starting with `/`"
        ))
    } else if let Err(e) = names::control_free(v, false) {
        Some(format!("`{key}` {e}"))
    } else if v.contains(['*', '?', '[']) {
        Some(format!(
            "`{key}` names one file; a pattern such as `{v}` is not expanded"
        ))
    } else {
        None
    };
    if let Some(why) = why {
        diags.push(src.at_value(value, why));
    }
}

/// The factor of a unit name from `known`, `default` when absent.
fn unit(
    src: &Source,
    value: Option<&Spanned<String>>,
    known: &[(&str, f64)],
    default: &str,
    diags: &mut Vec<Diagnostic>,
) -> f64 {
    let name = value.map_or(default, |v| v.get_ref().as_str());
    if let Some((_, f)) = known.iter().find(|(n, _)| *n == name) {
        *f
    } else {
        let list: Vec<String> = known.iter().map(|(n, _)| format!("`{n}`")).collect();
        if let Some(v) = value {
            diags.push(src.at_value(
                v,
                format!("unknown unit `{name}`; expected {}", list.join(", ")),
            ));
        }
        1.0
    }
}

/// A derived metric: `per_watt = "metric"` (that metric over the run's mean watts) or
/// `joules = true` (the run's energy); computed from stored values, so it takes no
/// `from`, `scale` or `primary`. `unit` and `better` default to what it derives.
pub(super) fn derived(
    src: &Source,
    name: &str,
    spanned: &Spanned<raw::Metric>,
    table: &BTreeMap<Spanned<String>, Spanned<raw::Metric>>,
    diags: &mut Vec<Diagnostic>,
) -> Option<MetricSpec> {
    let m = spanned.get_ref();
    let start = diags.len();
    let not_here = [
        ("from", m.from.as_ref().map(Spanned::span)),
        ("scale", m.scale.as_ref().map(Spanned::span)),
        ("primary", m.primary.as_ref().map(Spanned::span)),
    ];
    for (key, span) in not_here {
        if let Some(span) = span {
            diags.push(src.at(span, format!("`{key}` does not apply to derived metric `{name}`: it is computed from the run's other values")));
        }
    }
    let (derive, unit, better) = match (&m.per_watt, &m.joules) {
        (Some(_), Some(j)) => {
            diags.push(src.at_value(
                j,
                format!("metric `{name}` is either `per_watt` or `joules`, not both"),
            ));
            return None;
        }
        (Some(of), None) => {
            let base = table
                .iter()
                .find(|(k, _)| k.get_ref() == of.get_ref())
                .map(|(_, v)| v.get_ref());
            match base {
                Some(b) if b.per_watt.is_none() && b.joules.is_none() => (
                    Derived::PerWatt(of.get_ref().clone()),
                    b.unit
                        .as_ref()
                        .map_or_else(|| "/W".into(), |u| format!("{}/W", u.get_ref())),
                    b.better.as_ref().map_or(Better::Higher, |d| {
                        if d.get_ref() == "lower" {
                            Better::Lower
                        } else {
                            Better::Higher
                        }
                    }),
                ),
                _ => {
                    let parsed: Vec<String> = table
                        .iter()
                        .filter(|(_, v)| {
                            v.get_ref().per_watt.is_none() && v.get_ref().joules.is_none()
                        })
                        .map(|(k, _)| format!("`{}`", k.get_ref()))
                        .collect();
                    diags.push(
                        src.at_value(of, format!("`per_watt` names `{}`, which is not a parsed metric of this recipe", of.get_ref()))
                            .with_help(format!("parsed metrics here: {}", parsed.join(", "))),
                    );
                    return None;
                }
            }
        }
        (None, Some(j)) => {
            if !*j.get_ref() {
                diags.push(src.at_value(j, "`joules = false` declares nothing: remove the metric"));
                return None;
            }
            (Derived::Joules, "J".to_string(), Better::Lower)
        }
        (None, None) => return None,
    };
    let unit = match &m.unit {
        Some(u) => {
            super::metrics::check_unit(src, u, diags);
            u.get_ref().clone()
        }
        None => unit,
    };
    let better = match &m.better {
        Some(b) => super::metrics::direction(src, b, diags),
        None => better,
    };
    (diags.len() == start).then(|| MetricSpec {
        name: name.to_string(),
        label: None,
        from: String::new(),
        scale: 1.0,
        unit,
        better,
        primary: false,
        derive: Some(derive),
        member: crate::model::MemberMetric::Whole,
        flag: None,
    })
}
