//! A recipe's `[metrics]`: parsed metrics with their paths checked against the
//! parser, derived ones (`per_watt`, `joules`), the flag a metric raises above 0, and
//! the unit and direction every metric has, and a per-member run's sums.

use toml::Spanned;

use super::{Source, names, raw};
use crate::diag::Diagnostic;
use crate::model::{Better, MetricSpec, ParserSpec};

pub(super) fn metrics(
    src: &Source,
    raw: &raw::Recipe,
    parser: Option<&ParserSpec>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<MetricSpec> {
    let Some(table) = &raw.metrics else {
        diags.push(
            src.at_value(&raw.run, "this recipe has no `[metrics]`: it would measure nothing")
                .with_help("add e.g. `[metrics]` with `real = { from = \"real\", unit = \"s\", better = \"lower\" }`"),
        );
        return Vec::new();
    };
    if table.get_ref().is_empty() {
        diags.push(src.at_value(table, "`[metrics]` is empty: declare at least one metric"));
    }
    let mut out = Vec::new();
    // In the order the file declares them (the table's keys sort by name): that is the
    // order of the report's columns.
    let mut declared: Vec<_> = table.get_ref().iter().collect();
    declared.sort_by_key(|(key, _)| key.span().start);
    for (key, m) in declared {
        let name = key.get_ref();
        if !names::is_plain_name(name) {
            diags.push(src.at_value(
                key,
                format!("bad metric name `{name}`: use letters, digits, `-`, `_` and `.`"),
            ));
        }
        if [crate::model::TEMP_MAX_C, crate::model::FREQ_MEAN_MHZ].contains(&name.as_str()) {
            diags.push(src.at_value(
                key,
                format!(
                    "metric name `{name}` is taken: a `series = true` recipe's sampler stores it"
                ),
            ));
        }
        if name == crate::model::POWER_W || name == crate::model::IDLE_W {
            diags.push(src.at_value(
                key,
                format!("metric name `{name}` is taken: a board with a `[meter]` stores its watts under it"),
            ));
        }
        let spanned = m;
        let m = m.get_ref();
        let label = super::recipe::metric_label(src, m.label.as_ref(), diags);
        if let Some(sum) = super::members::sum_metric(src, name, spanned, diags) {
            out.push(MetricSpec { label, ..sum });
            continue;
        }
        if m.per_watt.is_some() || m.joules.is_some() {
            if let Some(f) = &m.flag {
                diags.push(src.at_value(
                    f,
                    format!(
                        "metric `{name}` is derived from watts: only a parsed metric raises a flag"
                    ),
                ));
            }
            if let Some(d) = super::meter::derived(src, name, spanned, table.get_ref(), diags) {
                out.push(MetricSpec { label, ..d });
            }
            continue;
        }
        let (Some(from), Some(unit), Some(better)) = (&m.from, &m.unit, &m.better) else {
            let missing: Vec<&str> = [
                (m.from.is_none(), "`from`"),
                (m.unit.is_none(), "`unit`"),
                (m.better.is_none(), "`better`"),
            ]
            .into_iter()
            .filter_map(|(absent, k)| absent.then_some(k))
            .collect();
            diags.push(
                src.at_value(spanned, format!("metric `{name}` needs {}", missing.join(" and ")))
                    .with_help("a parsed metric is `{ from = \"path\", unit = \"MB/s\", better = \"higher\" }`; a derived one is `{ per_watt = \"metric\" }` or `{ joules = true }`"),
            );
            continue;
        };
        if let Err(e) = crate::bench::parse::check_path(from.get_ref()) {
            diags.push(src.at_value(from, format!("bad metric path `{}`: {e}", from.get_ref())));
        } else if let Some(parser) = parser
            && let Err(e) = crate::bench::parse::check_path_for(parser, from.get_ref())
        {
            diags.push(src.at_value(
                from,
                format!(
                    "metric path `{}` can never be found in what parser `{}` produces: {e}",
                    from.get_ref(),
                    parser.name()
                ),
            ));
        }
        check_unit(src, unit, diags);
        let better = direction(src, better, diags);
        let scale = match &m.scale {
            Some(s) if !s.get_ref().is_finite() || *s.get_ref() == 0.0 => {
                diags.push(src.at_value(s, "`scale` must be a finite, non-zero number"));
                1.0
            }
            Some(s) => *s.get_ref(),
            None => 1.0,
        };
        out.push(MetricSpec {
            name: name.clone(),
            label,
            from: from.get_ref().clone(),
            scale,
            unit: unit.get_ref().clone(),
            better,
            primary: m.primary.as_ref().is_some_and(|p| *p.get_ref()),
            derive: None,
            flag: m.flag.as_ref().and_then(|f| flag(src, f, diags)),
            member: match &m.per_member {
                Some(p) if *p.get_ref() => crate::model::MemberMetric::Each,
                _ => crate::model::MemberMetric::Whole,
            },
        });
    }
    // No metric marked primary means none was singled out: all parsed ones count (a
    // value per member has a name per member, so it cannot drive the stop rule).
    if !out.iter().any(|m| m.primary) {
        for m in out
            .iter_mut()
            .filter(|m| m.derive.is_none() && m.member != crate::model::MemberMetric::Each)
        {
            m.primary = true;
        }
    }
    out
}

pub(super) fn check_unit(src: &Source, unit: &Spanned<String>, diags: &mut Vec<Diagnostic>) {
    if let Err(e) = names::control_free(unit.get_ref(), false) {
        diags.push(src.at_value(unit, format!("`unit` {e}")));
    }
    if unit.get_ref().trim().is_empty() {
        diags.push(src.at_value(
            unit,
            "`unit` must not be empty; use e.g. \"s\", \"MB/s\", \"IOPS\"",
        ));
    }
}

pub(super) fn direction(
    src: &Source,
    better: &Spanned<String>,
    diags: &mut Vec<Diagnostic>,
) -> Better {
    match better.get_ref().as_str() {
        "higher" => Better::Higher,
        "lower" => Better::Lower,
        other => {
            diags.push(src.at_value(
                better,
                format!("unknown direction `{other}`; expected `higher` or `lower`"),
            ));
            Better::Higher
        }
    }
}

/// A metric's `flag`: lowercase letters, digits and `-` (it is shown in reports and
/// counted by name), not one of the telemetry's.
fn flag(src: &Source, f: &Spanned<String>, diags: &mut Vec<Diagnostic>) -> Option<String> {
    let name = f.get_ref();
    let plain = (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !plain {
        diags.push(
            src.at_value(
                f,
                format!(
                    "bad flag `{}`: expected lowercase letters, digits and `-`, at most 32",
                    name.escape_debug()
                ),
            )
            .with_help("e.g. `non-2xx` or `socket-errors`"),
        );
        return None;
    }
    // The stored telemetry re-judges those names: a recipe's flag may not take one.
    if crate::telemetry::FLAGS.contains(&name.as_str()) {
        diags.push(src.at_value(
            f,
            format!(
                "flag `{name}` is the telemetry's own: name the recipe's flag after what it counts"
            ),
        ));
        return None;
    }
    Some(name.clone())
}
