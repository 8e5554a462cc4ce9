//! Running one recipe on one board: rendering its command templates and turning a run's
//! output into metric values.

pub mod parse;

use std::collections::BTreeMap;

use minijinja::{Environment, UndefinedBehavior, Value};

use crate::model::{ParamValue, Recipe};
use crate::transport::quote;

/// The values a command template can use: the builtins (`dir`, `workdir`, `board`,
/// `host`, `run`) and the recipe's parameters.
#[derive(Clone, Debug, Default)]
pub struct Vars(BTreeMap<String, Value>);

impl Vars {
    pub fn new() -> Self {
        Vars::default()
    }

    pub fn set(&mut self, name: &str, value: impl Into<Value>) -> &mut Self {
        self.0.insert(name.to_string(), value.into());
        self
    }

    pub fn params(&mut self, params: &BTreeMap<String, ParamValue>) -> &mut Self {
        for (k, v) in params {
            let value = match v {
                ParamValue::Int(i) => Value::from(*i),
                ParamValue::Float(f) => Value::from(*f),
                ParamValue::Bool(b) => Value::from(*b),
                ParamValue::Str(s) => Value::from(s.clone()),
            };
            self.0.insert(k.clone(), value);
        }
        self
    }
}

/// An environment in which every `{{ value }}` is written shell-quoted, so no value
/// (a path with spaces, a name holding `; rm -rf /`) can become shell syntax.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_formatter(|out, _state, value| {
        let text = if value.is_undefined() || value.is_none() {
            String::new()
        } else if let Some(s) = value.as_str() {
            s.to_string()
        } else {
            value.to_string()
        };
        out.write_str(&quote::sh(&text))
            .map_err(|_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write"))
    });
    env
}

/// Renders a command template with every value shell-quoted.
pub fn render(template: &str, vars: &Vars) -> Result<String, String> {
    let env = environment();
    let tmpl = env
        .template_from_str(template)
        .map_err(|e| format!("template: {e}"))?;
    tmpl.render(Value::from(vars.0.clone()))
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("template: {e}"))
}

/// Parses one run's output and selects every metric of the recipe, scaled.
pub fn metrics(
    recipe: &Recipe,
    stdout: &str,
    stderr: &str,
) -> Result<BTreeMap<String, f64>, String> {
    let doc = parse::parse(recipe.parser, stdout, stderr)
        .map_err(|e| format!("{} output: {e}", recipe.parser.name()))?;
    let mut out = BTreeMap::new();
    for m in &recipe.metrics {
        let v = parse::select(&doc, &m.from).map_err(|e| format!("metric {}: {e}", m.name))?;
        let v = v * m.scale;
        if !v.is_finite() {
            return Err(format!("metric {}: not a finite number ({v})", m.name));
        }
        out.insert(m.name.clone(), v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_quoted() {
        let mut v = Vars::new();
        v.set("dir", "/mnt/my disk; rm -rf /").set("n", 4);
        let s = render("fio --filename={{ dir }}/x --size={{ n }}M", &v).unwrap();
        assert_eq!(s, "fio --filename='/mnt/my disk; rm -rf /'/x --size=4M");
    }

    #[test]
    fn an_undefined_variable_is_an_error() {
        assert!(render("echo {{ nope }}", &Vars::new()).is_err());
    }
}
