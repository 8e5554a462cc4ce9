//! The scenario's `[params.<test>]`: values checked against each recipe's declared params.

use std::collections::BTreeMap;

use toml::Spanned;

use super::Known;
use crate::config::{Source, names, patterns, recipe};
use crate::diag::Diagnostic;
use crate::model::{ParamValue, TestName};

pub(super) fn params(
    src: &Source,
    raw: &BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<toml::Value>>>,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<TestName, BTreeMap<String, ParamValue>> {
    let mut out = BTreeMap::new();
    let all_tests = known.test_names();
    for (test_key, overrides) in raw {
        let test = TestName::new(test_key.get_ref().clone());
        let Some(recipe) = known.recipes.get(&test) else {
            if !known.broken_recipes.contains(test_key.get_ref()) {
                let help = names::help_for(test_key.get_ref(), all_tests.iter().copied(), "tests");
                diags.push(
                    src.at_value(
                        test_key,
                        format!("[params.{}] names an unknown test", test_key.get_ref()),
                    )
                    .with_help(help),
                );
            }
            continue;
        };
        let mut values = BTreeMap::new();
        for (key, value) in overrides {
            let name = key.get_ref();
            let Some(default) = recipe.params.get(name) else {
                let help =
                    names::help_for(name, recipe.params.keys().map(String::as_str), "parameters");
                diags.push(
                    src.at_value(key, format!("test `{test}` has no parameter `{name}`"))
                        .with_help(format!(
                            "{help} (declared in [params] of {})",
                            recipe.file.display()
                        )),
                );
                continue;
            };
            if recipe.option_params.contains(name) {
                recipe::refuse_option_like(src, name, value, diags);
            }
            if let Some(pattern) = recipe.param_patterns.get(name) {
                patterns::check(src, name, pattern, value, diags);
            }
            let Some(v) = recipe::param_value(src, value, diags) else {
                continue;
            };
            let v = match (default, v) {
                (ParamValue::Float(_), ParamValue::Int(i)) => ParamValue::Float(i as f64),
                (d, v) if std::mem::discriminant(d) == std::mem::discriminant(&v) => v,
                (d, v) => {
                    diags.push(src.at_value(
                        value,
                        format!(
                            "parameter `{name}` of `{test}` is {} (default {d}), not {}",
                            kind(d),
                            kind(&v)
                        ),
                    ));
                    continue;
                }
            };
            values.insert(name.clone(), v);
        }
        crate::config::tmpfs::check_params(src, test_key, recipe, &values, diags);
        out.insert(test, values);
    }
    out
}

fn kind(v: &ParamValue) -> &'static str {
    match v {
        ParamValue::Int(_) => "an integer",
        ParamValue::Float(_) => "a float",
        ParamValue::Bool(_) => "a boolean",
        ParamValue::Str(_) => "a string",
    }
}
