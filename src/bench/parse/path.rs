//! The metric-path language that selects a number from a parser's document
//! (`jobs[jobname=randread].read.bw_bytes`).
//!
//! Metric path grammar:
//!
//! ```text
//! path     := first rest*
//! first    := key | selector
//! rest     := '.' key | selector
//! key      := one or more characters other than '.', '[' and ']'
//! selector := '[' digits ']'                index into an array
//!           | '[' field '=' value ']'       the array element whose `field` equals `value`
//!           | '[' '"' text '"' ']'          an object key that holds '.', '[' or ']'
//! ```
//!
//! The quoted form exists for keys such as fio's percentiles (`"99.000000"`):
//! `jobs[0].read.clat_ns.percentile["99.000000"]`.

use serde_json::{Map, Value};

use super::text::{escape_controls, excerpt};
use super::{EXCERPT_CHARS, ParseError, parse_number};

/// One step of a metric path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
    Filter { field: String, value: String },
}

impl Step {
    fn display(&self) -> String {
        match self {
            Step::Key(k) if k.contains(['.', '[', ']']) => format!("[\"{k}\"]"),
            Step::Key(k) => k.clone(),
            Step::Index(i) => format!("[{i}]"),
            Step::Filter { field, value } => format!("[{field}={value}]"),
        }
    }
}

/// Why a metric path does not parse. Config refuses such a path where the recipe
/// gives it; `character` counts from 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("empty metric path")]
    Empty,
    #[error("metric path `{path}` has leading or trailing spaces")]
    Spaces { path: String },
    #[error("metric path `{path}`, character {character}: `[` is never closed")]
    Unclosed { path: String, character: usize },
    #[error("metric path `{path}`, character {character}: `]` without `[`")]
    StrayClose { path: String, character: usize },
    #[error("metric path `{path}`, character {character}: a path cannot start with `.`")]
    LeadingDot { path: String, character: usize },
    #[error("metric path `{path}`, character {character}: expected `.` or `[` before `{found}`")]
    MissingDot {
        path: String,
        character: usize,
        found: char,
    },
    #[error(
        "metric path `{path}`, character {character}: empty key (two dots, or a dot at the end?)"
    )]
    EmptyKey { path: String, character: usize },
    #[error("metric path `{path}`, character {character}: {source}")]
    Selector {
        path: String,
        character: usize,
        source: SelectorError,
    },
}

/// Why the text between `[` and `]` is none of the three selectors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    #[error("`[]` is empty; expected an index, `field=value` or a quoted key")]
    Empty,
    #[error("`[{inner}]`: a quoted key must look like [\"99.000000\"]")]
    BadQuotedKey { inner: String },
    #[error("`[{inner}]`: expected `field=value`, e.g. `[jobname=randread]`")]
    BadFilter { inner: String },
    #[error("`[{inner}]`: index too large")]
    IndexTooLarge { inner: String },
    #[error(
        "`[{inner}]`: expected an index (`[0]`), `field=value` (`[jobname=randread]`) \
         or a quoted key (`[\"99.000000\"]`)"
    )]
    Unknown { inner: String },
}

fn parse_path(path: &str) -> Result<Vec<Step>, PathError> {
    if path.trim().is_empty() {
        return Err(PathError::Empty);
    }
    if path != path.trim() {
        return Err(PathError::Spaces { path: path.into() });
    }
    let chars: Vec<char> = path.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    let path = || path.to_string();
    while i < chars.len() {
        let c = chars[i];
        let character = i + 1;
        if c == '[' {
            let close = (i + 1..chars.len())
                .find(|&j| chars[j] == ']' && !inside_quotes(&chars[i + 1..j]))
                .ok_or_else(|| PathError::Unclosed {
                    path: path(),
                    character,
                })?;
            let inner: String = chars[i + 1..close].iter().collect();
            steps.push(
                parse_selector(&inner).map_err(|source| PathError::Selector {
                    path: path(),
                    character,
                    source,
                })?,
            );
            i = close + 1;
        } else if c == ']' {
            return Err(PathError::StrayClose {
                path: path(),
                character,
            });
        } else {
            if c == '.' {
                if steps.is_empty() {
                    return Err(PathError::LeadingDot {
                        path: path(),
                        character,
                    });
                }
                i += 1;
            } else if !steps.is_empty() {
                return Err(PathError::MissingDot {
                    path: path(),
                    character,
                    found: c,
                });
            }
            let start = i;
            while i < chars.len() && !matches!(chars[i], '.' | '[' | ']') {
                i += 1;
            }
            if start == i {
                return Err(PathError::EmptyKey {
                    path: path(),
                    character: start + 1,
                });
            }
            steps.push(Step::Key(chars[start..i].iter().collect()));
        }
    }
    Ok(steps)
}

/// An odd number of `"` means the `]` found is inside a quoted key.
fn inside_quotes(chars: &[char]) -> bool {
    chars.iter().filter(|&&c| c == '"').count() % 2 == 1
}

fn parse_selector(inner: &str) -> Result<Step, SelectorError> {
    let inner = inner.trim();
    let owned = || inner.to_string();
    if inner.is_empty() {
        return Err(SelectorError::Empty);
    }
    if let Some(rest) = inner.strip_prefix('"') {
        return match rest.strip_suffix('"') {
            Some(key) if !key.is_empty() && !key.contains('"') => Ok(Step::Key(key.to_string())),
            _ => Err(SelectorError::BadQuotedKey { inner: owned() }),
        };
    }
    if let Some((field, value)) = inner.split_once('=') {
        let (field, value) = (field.trim(), value.trim());
        if field.is_empty() || value.is_empty() {
            return Err(SelectorError::BadFilter { inner: owned() });
        }
        return Ok(Step::Filter {
            field: field.to_string(),
            value: value.to_string(),
        });
    }
    if inner.chars().all(|c| c.is_ascii_digit()) {
        return inner
            .parse::<usize>()
            .map(Step::Index)
            .map_err(|_| SelectorError::IndexTooLarge { inner: owned() });
    }
    Err(SelectorError::Unknown { inner: owned() })
}

/// Checks the syntax of a metric path (`jobs[jobname=randread].read.bw_bytes`).
pub fn check_path(path: &str) -> Result<(), PathError> {
    parse_path(path).map(|_| ())
}

/// The first key of a valid path, if it starts with one, and the number of steps.
pub(super) fn first_key(path: &str) -> Result<Option<(String, usize)>, PathError> {
    let steps = parse_path(path)?;
    Ok(match steps.first() {
        Some(Step::Key(k)) => Some((k.clone(), steps.len())),
        _ => None,
    })
}

/// Why a metric path selects no number from a run's document. The texts quote the
/// document, which holds what the tool printed, so every quoted part is escaped
/// (`escape_controls`) when the error is made.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SelectError {
    /// The path does not parse (config refuses it before any run).
    #[error(transparent)]
    Syntax(#[from] PathError),
    /// A step finds nothing: no such key, an index past the end, no element the
    /// filter matches, or a value that is not an object or an array.
    #[error("metric path `{path}`: at `{step}` in {place}: {why}")]
    NotFound {
        path: String,
        step: String,
        place: String,
        why: String,
    },
    /// The path ends at a value that is not a number: `found` describes it.
    #[error("metric path `{path}`: expected a number, found {found}{}", comma_hint(*.decimal_comma))]
    NotANumber {
        path: String,
        found: String,
        decimal_comma: bool,
    },
    /// The path ends at a JSON number too large for an `f64`.
    #[error("metric path `{path}`: {number} is not a finite number")]
    NotFinite { path: String, number: String },
}

/// `94,1`: a comma locale's decimal, or a thousands separator; the regex parser does
/// not guess which.
fn comma_hint(decimal_comma: bool) -> &'static str {
    if decimal_comma {
        " (a decimal comma? `decimal_comma = true` in `[parse_regex]` reads it as one)"
    } else {
        ""
    }
}

/// Every quoted part of a `SelectError` is made with this.
fn esc(text: &str) -> String {
    escape_controls(text).into_owned()
}

impl From<SelectError> for ParseError {
    fn from(e: SelectError) -> ParseError {
        ParseError::new(e.to_string())
    }
}

/// Selects a number from a parsed document by a metric path: a JSON number, or a
/// string that parses as a finite number.
pub fn select(doc: &Value, path: &str) -> Result<f64, ParseError> {
    select_number(doc, path).map_err(ParseError::from)
}

/// `select`, saying by its variant why no number was found.
pub fn select_number(doc: &Value, path: &str) -> Result<f64, SelectError> {
    let steps = parse_path(path)?;
    let mut current = doc;
    let mut walked = String::new();
    for step in &steps {
        let fail = |why: String| {
            let place = if walked.is_empty() {
                "the document".to_string()
            } else {
                format!("`{walked}`")
            };
            SelectError::NotFound {
                path: esc(path),
                step: esc(&step.display()),
                place: esc(&place),
                why: esc(&why),
            }
        };
        current = match step {
            Step::Key(key) => match current {
                Value::Object(map) => map.get(key).ok_or_else(|| fail(missing_key(key, map)))?,
                other => return Err(fail(format!("{} has no keys", describe(other)))),
            },
            Step::Index(index) => match current {
                Value::Array(items) => items.get(*index).ok_or_else(|| {
                    fail(format!(
                        "index {index} is out of range ({} elements)",
                        items.len()
                    ))
                })?,
                other => return Err(fail(format!("{}, not an array", describe(other)))),
            },
            Step::Filter { field, value } => match current {
                Value::Array(items) => items
                    .iter()
                    .find(|item| item.get(field).is_some_and(|f| field_equals(f, value)))
                    .ok_or_else(|| {
                        let seen: Vec<String> = items
                            .iter()
                            .filter_map(|item| item.get(field).map(plain))
                            .take(10)
                            .collect();
                        fail(format!(
                            "no element has {field} = {value}; found {}",
                            if seen.is_empty() {
                                format!("no element with a `{field}` field")
                            } else {
                                seen.join(", ")
                            }
                        ))
                    })?,
                other => return Err(fail(format!("{}, not an array", describe(other)))),
            },
        };
        if !walked.is_empty() && matches!(step, Step::Key(k) if !k.contains(['.', '[', ']'])) {
            walked.push('.');
        }
        walked.push_str(&step.display());
    }
    match current {
        Value::Number(n) => {
            n.as_f64()
                .filter(|v| v.is_finite())
                .ok_or_else(|| SelectError::NotFinite {
                    path: esc(path),
                    number: n.to_string(),
                })
        }
        Value::String(s) => parse_number(s).ok_or_else(|| SelectError::NotANumber {
            path: esc(path),
            found: esc(&format!("the string \"{}\"", excerpt(s, EXCERPT_CHARS))),
            decimal_comma: s.contains(',') && parse_number(&s.replace(',', ".")).is_some(),
        }),
        other => Err(SelectError::NotANumber {
            path: esc(path),
            found: esc(&describe(other)),
            decimal_comma: false,
        }),
    }
}

fn field_equals(field: &Value, wanted: &str) -> bool {
    match field {
        Value::String(s) => s == wanted,
        Value::Number(n) => {
            n.to_string() == wanted
                || matches!((n.as_f64(), parse_number(wanted)), (Some(a), Some(b)) if a == b)
        }
        Value::Bool(b) => b.to_string() == wanted,
        _ => false,
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => excerpt(&other.to_string(), 30),
    }
}

fn missing_key(key: &str, map: &Map<String, Value>) -> String {
    const SHOWN: usize = 30;
    if map.is_empty() {
        return format!("no key `{key}` in an empty object");
    }
    let closest = map
        .keys()
        .map(|k| (strsim::levenshtein(key, k), k))
        .filter(|(d, _)| *d <= 2)
        .min();
    let hint = match closest {
        Some((_, k)) => format!("did you mean `{k}`? "),
        None => String::new(),
    };
    let mut keys: Vec<String> = map.keys().take(SHOWN).map(|k| format!("`{k}`")).collect();
    if map.len() > SHOWN {
        keys.push(format!("… ({} in all)", map.len()));
    }
    format!("no key `{key}`; {hint}keys are {}", keys.join(", "))
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!("the string \"{}\"", excerpt(s, 40)),
        Value::Array(a) => format!("an array of {} elements", a.len()),
        Value::Object(_) => "an object".into(),
    }
}

#[cfg(test)]
mod tests;
