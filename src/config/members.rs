//! What a recipe says about the boards of the system under test beyond "the board":
//! steps on every member (`on = "members"`), a client on a peer board (`on = "peer"`
//! with a `peer` parameter), and a run per member (`[run] per_member = true`) with its
//! `per_member` and `sum_of` metrics.

use std::collections::{BTreeMap, BTreeSet};

use toml::Spanned;

use super::{Source, metrics, raw};
use crate::diag::Diagnostic;
use crate::model::{MemberMetric, MetricSpec, PEER_PARAM, ParamValue, Side};

/// The template variable holding the peer board's host, in recipes with a `peer`.
pub const PEER_HOST: &str = "peer_host";
/// The peer's directory for this board's cells (in its claimed workdir), for steps on
/// the peer.
pub const PEER_DIR: &str = "peer_dir";

/// `[run] per_member`; a run on every member is refused (one side runs a run).
pub fn run(src: &Source, raw: &raw::RunStep, on: Side, diags: &mut Vec<Diagnostic>) -> bool {
    if on == Side::Members
        && let Some(at) = &raw.on
    {
        diags.push(
            src.at_value(at, "a run runs on one side, not on every member")
                .with_help("to run the command once per member, all at once, write `per_member = true` and put it on the controller (or the board, or the peer), where `host` is each member's"),
        );
    }
    raw.per_member.as_ref().is_some_and(|p| *p.get_ref())
}

/// A `sum_of` metric, when this entry is one: `{ sum_of = "rate", unit, better }`.
pub fn sum_metric(
    src: &Source,
    name: &str,
    spanned: &Spanned<raw::Metric>,
    diags: &mut Vec<Diagnostic>,
) -> Option<MetricSpec> {
    let m = spanned.get_ref();
    let of = m.sum_of.as_ref()?;
    let stray = [
        (m.from.is_some(), "from"),
        (m.scale.is_some(), "scale"),
        (m.per_watt.is_some(), "per_watt"),
        (m.joules.is_some(), "joules"),
        (m.per_member.is_some(), "per_member"),
    ];
    for (_, key) in stray.iter().filter(|(present, _)| *present) {
        diags.push(
            src.at_value(spanned, format!("metric `{name}` is a `sum_of`, which takes no `{key}`"))
                .with_help("a sum is `{ sum_of = \"metric\", unit = \"...\", better = \"higher\" }`: it adds up a `per_member` metric's values, already scaled"),
        );
    }
    let (Some(unit), Some(better)) = (&m.unit, &m.better) else {
        diags.push(
            src.at_value(
                spanned,
                format!("metric `{name}` needs `unit` and `better`"),
            )
            .with_help("e.g. `{ sum_of = \"rate\", unit = \"Mbit/s\", better = \"higher\" }`"),
        );
        return None;
    };
    metrics::check_unit(src, unit, diags);
    Some(MetricSpec {
        name: name.to_string(),
        label: None,
        from: String::new(),
        scale: 1.0,
        unit: unit.get_ref().clone(),
        better: metrics::direction(src, better, diags),
        primary: m.primary.as_ref().is_some_and(|p| *p.get_ref()),
        derive: None,
        member: MemberMetric::SumOf(of.get_ref().clone()),
        flag: None,
    })
}

/// The metrics of a `per_member` run are each a value per member or a sum of one; the
/// metrics of any other run are neither.
pub fn metrics(
    src: &Source,
    raw: &raw::Recipe,
    per_member: bool,
    metrics: &[MetricSpec],
    diags: &mut Vec<Diagnostic>,
) {
    let Some(table) = &raw.metrics else { return };
    let spans: BTreeMap<&str, &Spanned<raw::Metric>> = table
        .get_ref()
        .iter()
        .map(|(k, v)| (k.get_ref().as_str(), v))
        .collect();
    let each: BTreeSet<&str> = metrics
        .iter()
        .filter(|m| m.member == MemberMetric::Each)
        .map(|m| m.name.as_str())
        .collect();
    for m in metrics {
        let Some(at) = spans.get(m.name.as_str()) else {
            continue;
        };
        match (&m.member, per_member) {
            (MemberMetric::Whole, true) if m.derive.is_none() => diags.push(
                src.at_value(*at, format!("metric `{}` of a `per_member` run is read once, but the run has one output per member", m.name))
                    .with_help("give it `per_member = true` (a value per member), or make it a `sum_of` a per-member metric"),
            ),
            (MemberMetric::Each | MemberMetric::SumOf(_), false) => diags.push(
                src.at_value(*at, format!("metric `{}` is per member, but the run is not: `[run]` has no `per_member = true`", m.name))
                    .with_help("set `per_member = true` in `[run]`, or remove `per_member`/`sum_of` from the metric"),
            ),
            (MemberMetric::Each, true) if m.primary && raw_primary(at) => diags.push(
                src.at_value(*at, format!("metric `{}` has a value per member, so it cannot be primary", m.name))
                    .with_help("make its `sum_of` metric primary"),
            ),
            (MemberMetric::SumOf(of), _) if !each.contains(of.as_str()) => {
                let help = super::names::help_for(of, each.iter().copied(), "per-member metrics");
                diags.push(
                    src.at_value(*at, format!("`sum_of` = `{of}`: not a `per_member` metric of this recipe"))
                        .with_help(help),
                );
            }
            _ => {}
        }
    }
    let stops = metrics
        .iter()
        .any(|m| m.derive.is_none() && m.member != MemberMetric::Each);
    if per_member && !stops {
        diags.push(
            src.at_value(table, "a `per_member` run needs a metric that is not per member to decide when to stop")
                .with_help("add a `sum_of` the per-member metric, e.g. `sum = { sum_of = \"rate\", unit = \"Mbit/s\", better = \"higher\", primary = true }`"),
        );
    }
}

fn raw_primary(m: &Spanned<raw::Metric>) -> bool {
    m.get_ref().primary.as_ref().is_some_and(|p| *p.get_ref())
}

/// A recipe with a step on a peer board names the board by a string parameter `peer`.
pub fn peer(
    src: &Source,
    raw: &raw::Recipe,
    sides: &BTreeSet<Side>,
    params: &BTreeMap<String, ParamValue>,
    diags: &mut Vec<Diagnostic>,
) {
    if !sides.contains(&Side::Peer) || matches!(params.get(PEER_PARAM), Some(ParamValue::Str(_))) {
        return;
    }
    let ons = raw
        .setup
        .iter()
        .chain(&raw.requires)
        .chain(&raw.teardown)
        .filter_map(|s| s.on.as_ref())
        .chain(raw.run.get_ref().on.as_ref())
        .chain(raw.services.iter().filter_map(|s| s.on.as_ref()));
    let Some(at) = ons.into_iter().find(|on| on.get_ref() == "peer") else {
        return;
    };
    diags.push(
        src.at_value(at, "a step on the peer board, but the recipe has no string parameter `peer` naming it")
            .with_help("declare it in [params], e.g. `peer = \"\"`, and name the board in the scenario's `[params.TEST]`"),
    );
}
