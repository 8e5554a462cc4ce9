//! `benchpipe history`: the store and its runs read, each scenario's history built
//! (`report::history`), printed as text or JSON; with `--fail-on regression`, the
//! findings written and exit 3 when the newest run starts a regression.

use std::path::PathBuf;

use serde_json::json;

use super::reports::{load_for_report, report_plans};
use super::{CellsArg, ReadStoreArg, stored_names};
use crate::error::{Error, Result};
use crate::report::history::{self, HistoryOptions};
use crate::stats::ChangeRule;
use crate::store::Store;

/// What `history` fails on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// The newest run starts a significant change in a metric's worse direction.
    Regression,
}

/// `benchpipe history`'s arguments.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Only this metric: `test.metric`, or a metric's name in any test.
    #[arg(long)]
    pub metric: Option<String>,
    /// Print JSON (docs/FORMAT.md, "History").
    #[arg(long)]
    pub json: bool,
    /// Exit 3 when the newest run starts a significant change in a metric's worse
    /// direction (its findings in the JSON, and in --findings).
    #[arg(long, value_enum, value_name = "regression")]
    pub fail_on: Option<FailOn>,
    /// Write the findings (the regressions the newest run starts) to FILE as JSON.
    #[arg(long, value_name = "FILE")]
    pub findings: Option<PathBuf>,
    /// The false-positive rate of each change-point test.
    #[arg(long, default_value_t = 0.001, value_name = "P")]
    pub max_p: f64,
    /// The smallest change reported (default: the scenario's `[report] noise_band`, 2%).
    #[arg(long, value_name = "PERCENT")]
    pub min_change: Option<String>,
    #[command(flatten)]
    pub store: ReadStoreArg,
    #[command(flatten)]
    pub cells: CellsArg,
}

pub fn history(args: &HistoryArgs) -> Result<()> {
    let (files, store) = (&args.files, &args.store.path()?);
    if !(args.max_p > 0.0 && args.max_p < 1.0) {
        return Err(Error::Usage(format!(
            "--max-p {}: expected a p-value between 0 and 1, like 0.001",
            args.max_p
        )));
    }
    let min_magnitude = args
        .min_change
        .as_deref()
        .map(|b| {
            crate::config::units::parse_percent(b)
                .map_err(|e| Error::Usage(format!("--min-change: {e}")))
        })
        .transpose()?;
    let store = Store::open_read(store)?;
    // With each run's facts: a change names the board facts that moved at its run.
    let data = store.all_with_run_facts()?;
    let runs = store.runs()?;
    let ws = load_for_report(files, args.cells.max_cells, &stored_names(&data))?;
    let options = HistoryOptions {
        rule: ChangeRule {
            max_pvalue: args.max_p,
            ..ChangeRule::default()
        },
        min_magnitude,
        metric: args.metric.clone(),
    };
    if let Some(m) = &options.metric {
        let known = ws.recipes.iter().any(|(test, r)| {
            r.metrics.iter().any(|s| {
                s.name == *m || m.split_once('.') == Some((test.as_str(), s.name.as_str()))
            })
        });
        if !known {
            return Err(Error::Usage(format!(
                "--metric `{}`: no test has that metric (write `test.metric` or a metric's name)",
                crate::shown::shown(&m.chars().take(80).collect::<String>())
            )));
        }
    }
    let histories: Vec<history::History> = report_plans(&ws, &store, &data)?
        .iter()
        .map(|(scenario, plan)| history::build(&ws, scenario, plan, &data, &runs, &options))
        .collect();
    crate::parallel::free_later(data);
    let findings: Vec<&history::Finding> = histories.iter().flat_map(|h| &h.findings).collect();
    if args.json {
        let doc = json!({
            "format": history::HISTORY_FORMAT,
            "scenarios": histories,
            "findings": findings,
        });
        print!("{}", pretty(&doc)?);
    } else {
        print!("{}", crate::report::history_text(&histories));
    }
    if let Some(path) = &args.findings {
        let doc = json!({ "format": history::HISTORY_FORMAT, "findings": findings });
        crate::owned::replace(path, pretty(&doc)?.as_bytes(), 0o666)?;
    }
    if args.fail_on == Some(FailOn::Regression) && !findings.is_empty() {
        return Err(Error::Regressions(findings.len()));
    }
    Ok(())
}

fn pretty(doc: &serde_json::Value) -> Result<String> {
    let mut text = serde_json::to_string_pretty(doc).map_err(|e| Error::Other(e.to_string()))?;
    text.push('\n');
    Ok(crate::shown::json(text))
}
