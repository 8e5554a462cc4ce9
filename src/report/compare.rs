//! Baseline-versus-candidate comparisons: which cells pair up, and the Welch test's verdict.

use std::collections::BTreeMap;

use super::format::{p_value, percent};
use super::{AxisFn, ComparisonRow};
use crate::model::{Scenario, Workspace};
use crate::plan::state;
use crate::plan::{Address, Cell, CellKey, Plan};
use crate::stats;
use crate::store::CellData;

/// A short name of a cell's configuration for comparison rows.
pub(super) fn config_label(a: &Address) -> String {
    let mut parts = vec![a.board.to_string()];
    if let Some(s) = &a.storage {
        parts.push(s.to_string());
    }
    if let Some(f) = &a.filesystem {
        parts.push(f.to_string());
    }
    if let Some(n) = &a.network {
        parts.push(n.to_string());
    }
    parts.push(a.image.to_string());
    parts.join(" / ")
}

/// Pairs every candidate cell with the baseline cell it is compared to: the only
/// baseline when there is one, else the baseline that agrees on every axis neither
/// pattern names (so "UASP vs no UASP" pairs the same board and image).
pub fn comparisons(
    ws: &Workspace,
    scenario: &Scenario,
    plan: &Plan,
    data: &BTreeMap<CellKey, CellData>,
) -> Vec<ComparisonRow> {
    let mut rows = Vec::new();
    for c in &scenario.compare {
        let Some(recipe) = ws.recipes.get(&c.test) else {
            continue;
        };
        let Some(spec) = recipe.metric(&c.metric) else {
            continue;
        };
        let spec = &spec;
        let cells: Vec<_> = plan
            .cells
            .iter()
            .filter(|x| x.address.test == c.test)
            .collect();
        let baselines: Vec<_> = cells
            .iter()
            .filter(|x| x.address.matches(&c.baseline))
            .collect();
        let named = |axis: fn(&crate::model::CellPattern) -> &Option<String>| {
            axis(&c.baseline).is_some() || axis(&c.candidate).is_some()
        };
        // A raw-device test's cells have no filesystem: a difference between
        // filesystems would be noise (config and the CLI refuse to ask for one).
        if recipe.raw_device && named(|p| &p.filesystem) {
            continue;
        }
        let free: Vec<AxisFn> = [
            (
                named(|p| &p.image),
                (|a: &Address| a.image.to_string()) as AxisFn,
            ),
            (named(|p| &p.board), |a| a.board.to_string()),
            (named(|p| &p.storage), |a| format!("{:?}", a.storage)),
            (named(|p| &p.filesystem), |a| format!("{:?}", a.filesystem)),
            (named(|p| &p.network), |a| format!("{:?}", a.network)),
        ]
        .into_iter()
        .filter(|(n, _)| !n)
        .map(|(_, f)| f)
        .collect();
        // The runs that count, by the same rule as the tables: a flagged run the method
        // leaves out of a table must not decide a comparison either.
        let values = |cell: &Cell| -> Vec<f64> {
            data.get(&cell.key)
                .map(|d| {
                    state::counted(&cell.method, d)
                        .filter_map(|s| spec.value(&s.metrics, s.ended - s.started))
                        .collect()
                })
                .unwrap_or_default()
        };
        for cand in cells
            .iter()
            .filter(|x| x.address.matches(&c.candidate) && !x.address.matches(&c.baseline))
        {
            let base = if baselines.len() == 1 {
                Some(baselines[0])
            } else {
                let same: Vec<_> = baselines
                    .iter()
                    .filter(|b| free.iter().all(|f| f(&b.address) == f(&cand.address)))
                    .collect();
                (same.len() == 1).then(|| *same[0])
            };
            let Some(base) = base else {
                continue;
            };
            let (b, x) = (values(base), values(cand));
            let mut row = ComparisonRow {
                metric: format!("{}.{}", c.test, c.metric),
                baseline: config_label(&base.address),
                candidate: config_label(&cand.address),
                difference: String::new(),
                p: String::new(),
                verdict: String::new(),
                significant: false,
                numbers: None,
            };
            match stats::compare(
                &b,
                &x,
                scenario.method.confidence,
                stats::DEFAULT_NOISE_BAND,
                spec.better,
            ) {
                Some(cmp) => {
                    // Write-ups often give the difference over the mean of both
                    // ("53% faster" for 172 -> 297 MB/s); shown too, so such numbers
                    // can be checked against this one.
                    let symmetric = (cmp.candidate_mean - cmp.baseline_mean)
                        / ((cmp.candidate_mean + cmp.baseline_mean) / 2.0)
                        * 100.0;
                    row.difference = format!(
                        "{:+.1}% ({}% CI {:+.1}% .. {:+.1}%; {:+.1}% of the mean of both)",
                        cmp.diff_pct,
                        percent(cmp.confidence),
                        cmp.ci_low_pct,
                        cmp.ci_high_pct,
                        symmetric
                    );
                    row.p = format!("p = {}", p_value(cmp.welch.p));
                    row.verdict = cmp.verdict.to_string();
                    row.significant = cmp.significant;
                    row.numbers = Some(super::ComparisonNumbers {
                        confidence: cmp.confidence,
                        baseline_n: b.len(),
                        candidate_n: x.len(),
                        baseline_mean: cmp.baseline_mean,
                        candidate_mean: cmp.candidate_mean,
                        ratio: cmp.candidate_mean / cmp.baseline_mean,
                        difference_pct: cmp.diff_pct,
                        ci_low_pct: cmp.ci_low_pct,
                        ci_high_pct: cmp.ci_high_pct,
                        p: cmp.welch.p,
                        runs_needed: None,
                    });
                }
                None => {
                    row.difference = format!(
                        "needs at least 2 runs on each side (have {} and {})",
                        b.len(),
                        x.len()
                    );
                    row.verdict = "not enough data".into();
                }
            }
            rows.push(row);
        }
    }
    rows
}
