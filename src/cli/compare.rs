//! The commands that compare: `stats` (files of numbers), `compare` (two configurations
//! of a scenario from the store) and `report --compare A B` (across two stores or two
//! scenarios). Each reads its inputs and prints what `stats` and `report` compute.

use std::path::{Path, PathBuf};

use super::{load, parse_pattern, plans};
use crate::error::{Error, Result};
use crate::model::{CellPattern, Compare, Pool, TestName};
use crate::report;
use crate::store::Store;

/// `benchpipe stats FILE...`.
pub fn stats(files: &[PathBuf], confidence: f64, json: bool) -> Result<()> {
    let mut inputs = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f)
            .map_err(|e| Error::Usage(format!("stats: cannot read {}: {e}", f.display())))?;
        inputs.push((f.display().to_string(), text));
    }
    let out = crate::stats::ministat(&inputs, confidence, json)?;
    print!("{out}");
    Ok(())
}

/// `benchpipe compare`'s arguments, past the scenario files.
pub struct CompareArgs {
    pub metric: String,
    pub baseline: String,
    pub candidate: Option<String>,
    pub pool: Option<String>,
    pub noise_band: Option<String>,
    pub percent: Option<String>,
    pub json: bool,
    pub max_cells: u64,
}

/// `benchpipe compare FILES --metric test.metric --baseline PATTERN`: one
/// `[[report.compare]]` entry drawn from the store, printed.
pub fn compare(files: &[PathBuf], store: &Path, args: &CompareArgs) -> Result<()> {
    let metric = &args.metric;
    let ws = load(files, args.max_cells)?;
    let store = Store::open_read(store)?;
    let (test, metric_name) = metric
        .split_once('.')
        .ok_or_else(|| Error::Usage(format!("--metric `{metric}`: expected `test.metric`")))?;
    let baseline = parse_pattern(&args.baseline)?;
    let candidate = match &args.candidate {
        Some(c) => parse_pattern(c)?,
        None => CellPattern::default(),
    };
    let pool = match args.pool.as_deref() {
        None => None,
        Some("model") => Some(Pool::Model),
        Some(other) => {
            return Err(Error::Usage(format!(
                "--pool `{}`: expected `model`",
                other.chars().take(40).collect::<String>()
            )));
        }
    };
    let noise_band = args
        .noise_band
        .as_deref()
        .map(|b| {
            crate::config::units::parse_percent(b)
                .map_err(|e| Error::Usage(format!("--noise-band: {e}")))
        })
        .transpose()?;
    let percent = match args.percent.as_deref() {
        None => crate::model::Percent::default(),
        Some(p) => crate::model::Percent::parse(p).ok_or_else(|| {
            Error::Usage(format!(
                "--percent `{}`: expected `of-baseline` or `of-mean`",
                crate::shown::shown(&p.chars().take(40).collect::<String>())
            ))
        })?,
    };
    let data = store.all()?;
    let mut rows = Vec::new();
    // Why a scenario's cells pair nothing, said when no scenario's do.
    let mut why = Vec::new();
    for (scenario, plan) in plans(&ws) {
        let recipe = ws
            .recipes
            .get(&TestName::new(test))
            .ok_or_else(|| Error::Usage(format!("--metric `{metric}`: no test named `{test}`")))?;
        if recipe.metric(metric_name).is_none() {
            let known: Vec<&str> = recipe.metrics.iter().map(|m| m.name.as_str()).collect();
            return Err(Error::Usage(format!(
                "--metric `{metric}`: test `{test}` has no metric `{metric_name}`; it has {}",
                known.join(", ")
            )));
        }
        if recipe.raw_device && (baseline.filesystem.is_some() || candidate.filesystem.is_some()) {
            return Err(Error::Usage(format!(
                "--metric `{metric}`: test `{test}` reads the raw device (`uses_storage = \"device\"`): its cells have no filesystem, so there is no filesystem comparison to draw"
            )));
        }
        let mut s = scenario.clone();
        let c = Compare {
            test: TestName::new(test),
            metric: metric_name.to_string(),
            baseline: baseline.clone(),
            candidate: candidate.clone(),
            pool,
            noise_band,
            percent,
        };
        let cells: Vec<&crate::plan::Cell> = plan.cells.iter().collect();
        if let Some(w) = report::pairing::Pairing::of(&c, &cells).why_none(&c) {
            why.push(w);
        }
        s.compare = vec![c];
        rows.extend(report::comparisons(&ws, &s, &plan, &data));
    }
    if args.json {
        let mut out =
            serde_json::to_string_pretty(&rows).map_err(|e| Error::Other(e.to_string()))?;
        out.push('\n');
        print!("{}", crate::shown::json(out));
    } else if rows.is_empty() {
        let why = why.first().map(|w| format!(": {w}")).unwrap_or_default();
        println!(
            "no candidate cell pairs with a baseline cell{}",
            crate::shown::shown(&why)
        );
    } else {
        // Labels may hold what a store says (a board's model): each on one line.
        let shown = |t: &str| crate::shown::shown(t).into_owned();
        for r in &rows {
            println!(
                "{}: {} vs {}\n  {}\n  {}",
                shown(&r.metric),
                shown(&r.candidate),
                shown(&r.baseline),
                shown(&r.difference),
                shown(&r.verdict_text)
            );
        }
    }
    Ok(())
}

/// `benchpipe report [FILES] --compare A B`: A and B are two stores (directories),
/// compared on the scenarios FILES, or two scenario files compared in `--store`.
pub fn report_across(
    files: &[PathBuf],
    sides: &[PathBuf],
    store: &Path,
    json: bool,
    max_cells: u64,
) -> Result<()> {
    let [a, b] = sides else {
        return Err(Error::Usage(
            "--compare takes two stores or two scenario files".into(),
        ));
    };
    let is_scenario = |p: &Path| p.extension().is_some_and(|e| e == "toml");
    let mut out = String::new();
    let mut docs = Vec::new();
    match (is_scenario(a), is_scenario(b)) {
        (true, true) => {
            if !files.is_empty() {
                return Err(Error::Usage(
                    "--compare A.toml B.toml compares two scenarios: name no other scenario files"
                        .into(),
                ));
            }
            let ws = load(&[a.clone(), b.clone()], max_cells)?;
            let store = Store::open_read(store)?;
            let data = store.all()?;
            let all = super::known_plans(&ws, &store)?;
            let [(sa, pa), (sb, pb)] = all.as_slice() else {
                return Err(Error::Usage(
                    "--compare A.toml B.toml: name two different scenarios".into(),
                ));
            };
            let side = |label: &Path, scenario, plan| report::Side {
                label: label.display().to_string(),
                scenario,
                plan,
                data: &data,
            };
            let across = report::across(&ws, &side(a, sa, pa), &side(b, sb, pb));
            out.push_str(&report::across_markdown(&across));
            docs.push(across);
        }
        (false, false) => {
            if files.is_empty() {
                return Err(Error::Usage(
                    "--compare STORE_A STORE_B: name the scenario files whose configurations to compare".into(),
                ));
            }
            for s in [a, b] {
                super::existing_store(
                    "--compare",
                    s,
                    "name two directories `apply --store` wrote",
                )?;
            }
            let ws = load(files, max_cells)?;
            let (store_a, store_b) = (Store::open_read(a)?, Store::open_read(b)?);
            let (data_a, data_b) = (store_a.all()?, store_b.all()?);
            for (scenario, plan) in plans(&ws) {
                let side = |label: &Path, data| report::Side {
                    label: label.display().to_string(),
                    scenario,
                    plan: &plan,
                    data,
                };
                let across = report::across(&ws, &side(a, &data_a), &side(b, &data_b));
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&report::across_markdown(&across));
                docs.push(across);
            }
        }
        _ => {
            return Err(Error::Usage(
                "--compare takes two stores (directories) or two scenario files (.toml), not one of each".into(),
            ));
        }
    }
    if json {
        let mut text =
            serde_json::to_string_pretty(&docs).map_err(|e| Error::Other(e.to_string()))?;
        text.push('\n');
        print!("{}", crate::shown::json(text));
    } else {
        print!("{}", crate::shown::in_lines(&out));
    }
    Ok(())
}
