//! Running one recipe on one board: rendering its command templates and turning a run's
//! output into metric values.

pub mod members;
pub mod parse;
mod template_vars;

pub use template_vars::TemplateVars;

use std::collections::BTreeMap;

use minijinja::{Environment, UndefinedBehavior, Value};

use crate::failure::CellFailure;
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

    /// The names set, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// A string value, as set (not quoted).
    pub fn string(&self, name: &str) -> Option<String> {
        self.0
            .get(name)
            .and_then(|v| v.as_str())
            .map(str::to_string)
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

/// The work one render may do (minijinja fuel: about one unit per instruction, and per
/// 64 bytes of data). A command template needs a few hundred; the limit ends a
/// template like `range(100000)` inside `range(100000)` in milliseconds.
pub const TEMPLATE_FUEL: u64 = 200_000;

/// The longest rendered command: a shell command line is far shorter.
pub const MAX_RENDERED_BYTES: usize = 256 * 1024;

/// Written before every interpolated string value when a template is rendered for
/// checking, so that the shell-context check finds where each value landed. A Unicode
/// private-use character: no real value or template text holds it.
pub const VALUE_MARK: char = '\u{E000}';

/// An environment in which every `{{ value }}` is written shell-quoted, so no value
/// (a path with spaces, a name holding `; rm -rf /`) can become shell syntax. No
/// loader: `include`, `import` and `extends` find nothing. Undefined names and
/// attributes are errors; work and size are bounded.
fn environment(mark_strings: bool) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(TEMPLATE_FUEL));
    env.set_formatter(move |out, _state, value| {
        let text = if value.is_undefined() || value.is_none() {
            String::new()
        } else if let Some(s) = value.as_str() {
            s.to_string()
        } else {
            value.to_string()
        };
        let mark = if mark_strings && value.as_str().is_some() {
            VALUE_MARK.encode_utf8(&mut [0; 4]).to_string()
        } else {
            String::new()
        };
        out.write_str(&mark)
            .and_then(|()| out.write_str(&quote::sh(&text)))
            .map_err(|_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write"))
    });
    env
}

/// Why a command template did not render.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TemplateError {
    /// It does not parse, or names something undefined; `line` is the template's.
    Invalid { detail: String, line: Option<usize> },
    /// It ran out of fuel (`TEMPLATE_FUEL`).
    TooMuchWork,
    /// It tried to include, import or extend another template.
    Include,
    /// Its output is over `MAX_RENDERED_BYTES`.
    TooLong { len: usize },
}

impl TemplateError {
    fn of(e: &minijinja::Error) -> TemplateError {
        match e.kind() {
            minijinja::ErrorKind::OutOfFuel => TemplateError::TooMuchWork,
            minijinja::ErrorKind::TemplateNotFound => TemplateError::Include,
            _ => TemplateError::Invalid {
                detail: e.detail().map_or_else(|| e.to_string(), str::to_string),
                line: e.line(),
            },
        }
    }

    /// What the failure means, in the terms of the input files.
    pub fn reason(&self) -> String {
        match self {
            TemplateError::TooMuchWork => format!(
                "the template does too much work (more than {TEMPLATE_FUEL} steps); a command template should only insert values"
            ),
            TemplateError::Include => {
                "templates cannot include, import or extend other templates".to_string()
            }
            TemplateError::Invalid { detail, line } => match line {
                Some(l) => format!("{detail} (line {l} of the template)"),
                None => detail.clone(),
            },
            TemplateError::TooLong { len } => format!(
                "the rendered command is {len} bytes, more than the limit of {MAX_RENDERED_BYTES}"
            ),
        }
    }
}

impl std::fmt::Display for TemplateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "template: {}", self.reason())
    }
}

impl std::error::Error for TemplateError {}

/// A cell whose template failed stores the error's text, `template: ...`.
impl From<TemplateError> for CellFailure {
    fn from(e: TemplateError) -> CellFailure {
        CellFailure::Template {
            message: e.to_string(),
        }
    }
}

/// Says what a failed render means, in the terms of the input files.
pub fn explain(e: &minijinja::Error) -> String {
    TemplateError::of(e).reason()
}

/// Renders a command template with every value shell-quoted.
pub fn render(template: &str, vars: &Vars) -> Result<String, TemplateError> {
    let env = environment(false);
    let tmpl = env
        .template_from_str(template)
        .map_err(|e| TemplateError::of(&e))?;
    let out = tmpl
        .render(Value::from(vars.0.clone()))
        .map_err(|e| TemplateError::of(&e))?;
    if out.len() > MAX_RENDERED_BYTES {
        return Err(TemplateError::TooLong { len: out.len() });
    }
    Ok(out.trim().to_string())
}

/// Renders for checking: every string value is preceded by `VALUE_MARK`, and the
/// spans say which template expression wrote which part of the output. Not trimmed,
/// so output offsets stay those of the spans.
pub fn render_marked(
    template: &str,
    vars: &Vars,
) -> Result<(String, Vec<minijinja::OutputSpan>), TemplateError> {
    let env = environment(true);
    let tmpl = env
        .template_from_str(template)
        .map_err(|e| TemplateError::of(&e))?;
    let (out, spans) = tmpl
        .render_with_spans(Value::from(vars.0.clone()))
        .map_err(|e| TemplateError::of(&e))?;
    if out.len() > MAX_RENDERED_BYTES {
        return Err(TemplateError::TooLong { len: out.len() });
    }
    Ok((out, spans))
}

/// Why a run's output gave no value for a metric. A run that fails so stores the
/// text as its cell's `parse failed` message.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MetricsError {
    /// The parser found no result in the output: not JSON, a regex pattern that
    /// matches nothing, a tool's error report, ...
    #[error("{parser} output: {source}")]
    Output {
        parser: &'static str,
        source: parse::ParseError,
    },
    /// The metric's path selects nothing, or a value that is not a number.
    #[error("metric {metric}: {source}")]
    Select {
        metric: String,
        source: parse::SelectError,
    },
    /// The selected number times the metric's `scale` is not finite.
    #[error("metric {metric}: not a finite number ({value})")]
    NotFinite { metric: String, value: f64 },
    /// One member's output of a `per_member` run gave no value: the run has no sum.
    #[error("member {member}: {source}")]
    Member {
        member: String,
        source: Box<MetricsError>,
    },
}

/// Parses one run's output and selects every metric of the recipe, scaled.
pub fn metrics(
    recipe: &Recipe,
    stdout: &str,
    stderr: &str,
) -> Result<BTreeMap<String, f64>, MetricsError> {
    let doc =
        parse::parse(&recipe.parser, stdout, stderr).map_err(|source| MetricsError::Output {
            parser: recipe.parser.name(),
            source,
        })?;
    let mut out = BTreeMap::new();
    for m in recipe
        .parsed_metrics()
        .filter(|m| m.member == crate::model::MemberMetric::Whole)
    {
        let metric = || m.name.clone();
        let v = parse::select_number(&doc, &m.from).map_err(|source| MetricsError::Select {
            metric: metric(),
            source,
        })?;
        let v = v * m.scale;
        if !v.is_finite() {
            return Err(MetricsError::NotFinite {
                metric: metric(),
                value: v,
            });
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
        let e = render("echo {{ nope }}", &Vars::new()).unwrap_err();
        assert!(
            matches!(e, TemplateError::Invalid { line: Some(1), .. }),
            "{e:?}"
        );
        assert!(e.to_string().ends_with("(line 1 of the template)"), "{e}");
        let mut v = Vars::new();
        v.set("dir", "/x");
        assert!(render("echo {{ dir.nope }}", &v).is_err());
    }

    #[test]
    fn nested_loops_run_out_of_fuel_fast() {
        let e = render(
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
            &Vars::new(),
        )
        .unwrap_err();
        assert_eq!(e, TemplateError::TooMuchWork);
        assert!(
            e.to_string()
                .starts_with("template: the template does too much work"),
            "{e}"
        );
    }

    #[test]
    fn include_finds_nothing() {
        let e = render("{% include 'x' %}", &Vars::new()).unwrap_err();
        assert_eq!(e, TemplateError::Include);
        assert!(e.to_string().contains("cannot include"), "{e}");
    }

    #[test]
    fn output_is_capped() {
        let e = render("{{ 'x' * 300000 }}", &Vars::new()).unwrap_err();
        assert!(
            matches!(
                e,
                TemplateError::TooMuchWork | TemplateError::TooLong { .. }
            ),
            "{e}"
        );
    }

    /// A recipe for the metrics tests: the generic JSON parser and one metric.
    fn json_recipe(from: &str, scale: f64) -> Recipe {
        let mut r = crate::plan::fixtures::recipe("t", false);
        r.parser = crate::model::ParserSpec::named("json").unwrap();
        r.metrics[0].name = "rate".into();
        r.metrics[0].from = from.into();
        r.metrics[0].scale = scale;
        r
    }

    /// Output that does not parse, a path that selects nothing, a value that is not a
    /// number, a scale that overflows: each its own variant, with the text a failed
    /// cell stores.
    #[test]
    fn metrics_errors_say_what_went_wrong_by_variant_with_the_same_text() {
        let e = metrics(&json_recipe("a", 1.0), "not json", "").unwrap_err();
        let MetricsError::Output { parser, source } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(*parser, "json");
        assert_eq!(e.to_string(), format!("json output: {source}"));

        let e = metrics(&json_recipe("b", 1.0), r#"{"a": 1}"#, "").unwrap_err();
        assert!(
            matches!(&e, MetricsError::Select { metric, source: parse::SelectError::NotFound { .. } } if metric == "rate"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "metric rate: metric path `b`: at `b` in the document: no key `b`; did you mean `a`? keys are `a`"
        );

        let e = metrics(&json_recipe("a", 1.0), r#"{"a": "fast"}"#, "").unwrap_err();
        assert!(
            matches!(
                &e,
                MetricsError::Select {
                    source: parse::SelectError::NotANumber { .. },
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "metric rate: metric path `a`: expected a number, found the string \"fast\""
        );

        let e = metrics(&json_recipe("a", 1e300), r#"{"a": 1e300}"#, "").unwrap_err();
        assert!(matches!(e, MetricsError::NotFinite { .. }), "{e:?}");
        assert_eq!(e.to_string(), "metric rate: not a finite number (inf)");

        let m = metrics(&json_recipe("a", 2.0), r#"{"a": 1.5}"#, "").unwrap();
        assert_eq!(m["rate"], 3.0);
    }
}
