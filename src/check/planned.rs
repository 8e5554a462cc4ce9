//! Mistakes only the expanded plan shows, refused at the scenario's file:line:col: a
//! matrix none of whose combinations can be measured (with the plan's reasons), and a
//! `[[report.compare]]` that pairs no cells (with why, by the report's own pairing).

use std::collections::BTreeMap;

use toml::Spanned;

use crate::config::{Known, Source, raw};
use crate::diag::Diagnostic;
use crate::model::Scenario;
use crate::plan::Plan;
use crate::report::pairing::Pairing;

/// The most distinct reasons a "no cell" error lists; `plan` lists them all.
const MOST_REASONS: usize = 5;

/// Whether a report's cells may come from the store rather than the plan: it holds
/// cells of a board (or cluster) that has no file here, retired or renamed. Then the
/// plan alone cannot say what the report will have.
pub(super) fn store_has_more(scenario: &Scenario, known: &Known) -> bool {
    known.stored.boards.keys().any(|b| {
        let name = crate::model::BoardName::new(b.clone());
        !known.boards.contains_key(&name) && !scenario.clusters.contains_key(&name)
    })
}

/// A matrix whose combinations all cannot be measured: `check` would say "ok, 0
/// cells" and apply would run nothing, where the plan knows why.
pub(super) fn nothing_to_measure(
    src: &Source,
    matrix: &Spanned<raw::Matrix>,
    plan: &Plan,
    diags: &mut Vec<Diagnostic>,
) -> Option<()> {
    if !plan.cells.is_empty() || plan.skipped.is_empty() {
        return Some(());
    }
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &plan.skipped {
        *reasons.entry(s.reason.as_str()).or_default() += 1;
    }
    let mut listed: Vec<String> = reasons
        .iter()
        .take(MOST_REASONS)
        .map(|(reason, n)| {
            let reason = crate::shown::shown(reason);
            match n {
                1 => format!("{reason}"),
                n => format!("{reason} ({n} combinations)"),
            }
        })
        .collect();
    if reasons.len() > MOST_REASONS {
        listed.push(format!(
            "and {} other reasons",
            reasons.len() - MOST_REASONS
        ));
    }
    diags.push(
        src.at_value(
            matrix,
            format!(
                "the matrix gives no cell to measure: none of its {} combination(s) can apply: {}",
                plan.skipped.len(),
                listed.join("; ")
            ),
        )
        .with_help("`benchpipe plan` lists each combination with its reason; a scenario with nothing to measure is a mistake"),
    );
    None
}

/// Each `[[report.compare]]` that pairs no candidate with a baseline among the plan's
/// cells: its report would silently have no comparison.
pub(super) fn compares(
    src: &Source,
    raw: &[Spanned<raw::Compare>],
    scenario: &Scenario,
    plan: &Plan,
    diags: &mut Vec<Diagnostic>,
) {
    let cells: Vec<&crate::plan::Cell> = plan.cells.iter().collect();
    // A scenario that loaded has one model entry per raw entry, in order.
    for (c, at) in scenario.compare.iter().zip(raw) {
        let pairing = Pairing::of(c, &cells);
        let Some(why) = pairing.why_none(c) else {
            continue;
        };
        let free = pairing.free_axes();
        let help = if free.is_empty() {
            "a candidate pairs with the baseline when it is the only one; name fewer axes in the baseline, or compare on another test".to_string()
        } else {
            format!(
                "a candidate is compared with the one baseline that has its value on every axis neither pattern names (here {}): name an axis whose values differ in both patterns, or narrow them, so that each candidate finds one baseline",
                free.join(", ")
            )
        };
        diags.push(
            src.at_value(
                at,
                format!(
                    "this comparison pairs no cells (`{}.{}`): {why}",
                    c.test, c.metric
                ),
            )
            .with_help(help),
        );
    }
}
