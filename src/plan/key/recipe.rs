//! The test's part of a cell's inputs (its recipe with the cell's parameters) and the
//! method's part: what of a recipe and a method can change a cell's numbers.

use std::collections::BTreeMap;

use super::Input;
use crate::model::{Cooldown, MemberMetric, Method, ParamValue, Recipe, Side, Step};

fn param(v: &ParamValue) -> Input {
    match v {
        ParamValue::Int(i) => Input::Int(*i),
        ParamValue::Float(f) => Input::Float(*f),
        ParamValue::Bool(b) => Input::Bool(*b),
        ParamValue::Str(s) => Input::from(s),
    }
}

fn side(s: Side) -> Input {
    Input::from(s.name())
}

fn step(s: &Step) -> Input {
    // The timeout is left out: it bounds a run, it does not change its numbers.
    Input::record([("on", side(s.on)), ("command", Input::from(&s.command))])
}

pub(super) fn strings(v: &[String]) -> Input {
    Input::List(v.iter().map(Input::from).collect())
}

/// The parsed metrics in name order, whatever order the recipe declares them in.
fn parsed_by_name(recipe: &Recipe) -> Vec<&crate::model::MetricSpec> {
    let mut v: Vec<_> = recipe.parsed_metrics().collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// The method's part of a cell's inputs.
pub(super) fn method_input(method: &Method) -> Input {
    let cooldown = match &method.cooldown {
        Cooldown::None => Input::from("none"),
        Cooldown::Fixed { duration } => Input::record([("fixed_s", Input::Secs(*duration))]),
        Cooldown::UntilBelow {
            celsius,
            above_idle,
            max,
        } => Input::record([
            (
                if *above_idle {
                    "until_above_idle_c"
                } else {
                    "until_below_c"
                },
                Input::Float(*celsius),
            ),
            ("max_s", Input::Secs(*max)),
        ]),
    };
    let idle = method.idle.as_ref().map(|gate| {
        Input::record([
            ("load_below", Input::Float(gate.load_below)),
            ("hold_s", Input::Secs(gate.hold)),
            ("max_s", Input::Secs(gate.max)),
        ])
    });
    Input::record([
        ("cooldown", cooldown),
        ("idle", Input::from(idle)),
        ("warmup_runs", Input::from(method.warmup.runs)),
        ("warmup_s", Input::from(method.warmup.duration)),
    ])
}

/// The test's part of a cell's inputs: the recipe with the cell's parameters.
pub(super) fn test_input(recipe: &Recipe, params: &BTreeMap<String, ParamValue>) -> Input {
    Input::record([
        ("name", Input::from(recipe.name.as_str())),
        (
            "setup",
            Input::List(recipe.setup.iter().map(step).collect()),
        ),
        // Steps that run once the services are up: the same command before or after
        // them can mean another setup.
        (
            "setup_after_services",
            Input::List(recipe.setup_after_services.iter().map(step).collect()),
        ),
        (
            "before_run",
            Input::List(recipe.before_run.iter().map(step).collect()),
        ),
        (
            "run",
            Input::record([
                ("on", side(recipe.run.on)),
                ("command", Input::from(&recipe.run.command)),
                ("per_member", Input::Bool(recipe.run_per_member)),
            ]),
        ),
        (
            "teardown",
            Input::List(recipe.teardown.iter().map(step).collect()),
        ),
        (
            "params",
            // A step's input file is named by its path, an address: left out.
            Input::Map(
                params
                    .iter()
                    .filter(|(k, _)| !recipe.is_input_param(k))
                    .map(|(k, v)| (k.clone(), param(v)))
                    .collect(),
            ),
        ),
        (
            "parser",
            Input::record([
                ("name", Input::from(recipe.parser.name())),
                ("version", Input::from(recipe.parser.version())),
            ]),
        ),
        // The regex parser's patterns decide what is measured.
        (
            "parse_regex",
            Input::from(recipe.parser.options.regex.as_ref().map(|r| {
                Input::record([
                    ("patterns", strings(&r.patterns)),
                    ("stream", Input::from(r.stream.name())),
                    ("decimal_comma", Input::Bool(r.decimal_comma)),
                ])
            })),
        ),
        (
            "metrics",
            Input::List(
                // Derived metrics are computed from stored values: they change no
                // measurement, so a recipe that adds one keeps its cells. By name: the
                // order a recipe declares its metrics in is the order of the report's
                // columns, which changes no number, so no key.
                parsed_by_name(recipe)
                    .into_iter()
                    .map(|m| {
                        Input::record([
                            ("name", Input::from(&m.name)),
                            ("from", Input::from(&m.from)),
                            ("scale", Input::Float(m.scale)),
                            ("per_member", Input::Bool(m.member == MemberMetric::Each)),
                            (
                                "sum_of",
                                Input::from(match &m.member {
                                    MemberMetric::SumOf(of) => Some(of.as_str()),
                                    _ => None,
                                }),
                            ),
                        ])
                    })
                    .collect(),
            ),
        ),
        (
            "services",
            Input::List(
                recipe
                    .services
                    .iter()
                    .map(|s| {
                        Input::record([
                            ("name", Input::from(&s.name)),
                            ("on", side(s.on)),
                            ("command", Input::from(&s.command)),
                        ])
                    })
                    .collect(),
            ),
        ),
    ])
}
