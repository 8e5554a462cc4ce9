//! `apply --plan FILE`: a plan saved from `plan --json`, applied only while it is still
//! what would run now (terraform's saved plan; nix-installer's `install --plan`). A
//! stale one is refused with what changed since, before anything runs.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

use serde_json::Value;

use super::Selection;
use super::plan_view::{PLAN_JSON_FORMAT, plan_text};
use crate::error::{Error, Result};
use crate::model::Workspace;
use crate::store::Store;

/// The most bytes a saved plan may have: a plan at the default cell cap is far less.
const MAX_BYTES: u64 = 256 << 20;

/// How many changes a stale plan's refusal lists.
const SHOWN_CHANGES: usize = 10;

/// Ok when the plan saved in `path` is the plan of `ws` and `store` now, under
/// `select`; else a usage error (exit 2) naming the file and what changed.
pub(super) fn check(ws: &Workspace, store: &Store, select: &Selection, path: &Path) -> Result<()> {
    let shown_path = crate::shown::one_line(&path.display().to_string()).into_owned();
    let text = read_bounded(path)?;
    let saved: Value = serde_json::from_str(&text).map_err(|e| {
        // serde_json's text ends with the position, which leads here.
        let why = e.to_string();
        let why = why
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_string();
        Error::Usage(format!(
            "{shown_path}:{}:{}: expected a plan saved by `benchpipe plan --json`: {why}",
            e.line(),
            e.column()
        ))
    })?;
    let format = saved.get("format").and_then(Value::as_u64);
    if format != Some(u64::from(PLAN_JSON_FORMAT)) {
        let found = format.map_or_else(|| "no format".to_string(), |f| format!("format {f}"));
        return Err(Error::Usage(format!(
            "{shown_path}: expected a plan of format {PLAN_JSON_FORMAT} (`benchpipe plan --json`), found {found}"
        )));
    }
    let now: Value = serde_json::from_str(&plan_text(ws, store, true, select)?)
        .map_err(|e| Error::Other(format!("plan --json is not JSON: {e}")))?;
    // Parsed, not bytes: a plan re-indented by a tool is the same plan.
    if saved == now {
        return Ok(());
    }
    let changes = changes(&saved, &now);
    let mut listed: Vec<String> = changes
        .iter()
        .take(SHOWN_CHANGES)
        .map(|c| format!("\n  {c}"))
        .collect();
    if changes.len() > SHOWN_CHANGES {
        listed.push(format!(
            "\n  ... and {} more",
            changes.len() - SHOWN_CHANGES
        ));
    }
    Err(Error::Usage(format!(
        "{shown_path}: the saved plan is stale: the files or the store changed since it was made{}\n\
         make it again (`benchpipe plan --json FILES > {shown_path}`, with the same --only, --redo \
         and --on-drift as this apply), read it, and apply that",
        listed.concat()
    )))
}

fn read_bounded(path: &Path) -> Result<String> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut text = String::new();
    file.take(MAX_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| Error::io(path, e))?;
    if text.len() as u64 > MAX_BYTES {
        return Err(Error::Usage(format!(
            "{}: more than {} MiB: not a plan saved by `benchpipe plan --json`",
            crate::shown::one_line(&path.display().to_string()),
            MAX_BYTES >> 20
        )));
    }
    Ok(text)
}

/// What differs between a saved plan and the plan now, one line each: cells by key
/// (new, gone, their state or selection changed), recipes by name, then the rest.
fn changes(saved: &Value, now: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let cells = |v: &Value| -> BTreeMap<String, Value> {
        let list = v.get("cells").and_then(Value::as_array);
        list.into_iter()
            .flatten()
            .map(|c| (text_of(c.get("dir").or_else(|| c.get("key"))), c.clone()))
            .collect()
    };
    let (before, after) = (cells(saved), cells(now));
    for (name, was) in &before {
        match after.get(name) {
            None => out.push(format!("cell {name}: no longer in the plan")),
            Some(is) if is != was => {
                for field in ["state", "selected", "why", "drift", "address", "scenario"] {
                    if was.get(field) != is.get(field) {
                        out.push(format!(
                            "cell {name}: {field} was {}, is {}",
                            text_of(was.get(field)),
                            text_of(is.get(field))
                        ));
                    }
                }
            }
            Some(_) => {}
        }
    }
    for name in after.keys().filter(|k| !before.contains_key(*k)) {
        out.push(format!("cell {name}: new"));
    }
    let recipes = |v: &Value| v.get("recipes").and_then(Value::as_object).cloned();
    let (before, after) = (
        recipes(saved).unwrap_or_default(),
        recipes(now).unwrap_or_default(),
    );
    for (name, was) in &before {
        match after.get(name) {
            None => out.push(format!("recipe {}: no longer used", shown(name))),
            Some(is) if is != was => out.push(format!("recipe {}: its file changed", shown(name))),
            Some(_) => {}
        }
    }
    for name in after.keys().filter(|k| !before.contains_key(*k)) {
        out.push(format!("recipe {}: newly used", shown(name)));
    }
    if out.is_empty() {
        for (field, what) in [
            ("skipped", "the combinations that cannot apply"),
            ("schedule", "the schedule"),
            ("summary", "the summary"),
        ] {
            if saved.get(field) != now.get(field) {
                out.push(format!("{what} changed"));
            }
        }
    }
    if out.is_empty() {
        out.push("the document differs".into());
    }
    out
}

/// A value from a file, on one line and bounded: a saved plan is input like any other.
fn text_of(v: Option<&Value>) -> String {
    match v {
        None => "absent".into(),
        Some(Value::String(s)) => shown(s),
        Some(v) => shown(&v.to_string()),
    }
}

fn shown(s: &str) -> String {
    let mut s = crate::shown::one_line(s).into_owned();
    if s.chars().count() > 120 {
        s = s.chars().take(117).collect::<String>() + "...";
    }
    s
}
