//! The report's History section, pure: from `benchpipe history`'s model (`history.rs`,
//! the same series and change points), per test the configurations measured in at
//! least two runs, as a small-multiples chart (`history_svg.rs`), a row per change (or
//! per series without one) and the full list of facts that moved. Absent when no
//! configuration has two runs, so a one-run store's report is as it was.

use std::collections::BTreeMap;

use serde::Serialize;

use super::format::{number, percent};
use super::history::{self, Change, FactChange, History, HistoryOptions, Run, Series};
use super::history_svg::{self, Mark, Panel, PanelPoint, cut};
use crate::model::{Better, Scenario, TestName, Workspace};
use crate::plan::{CellKey, Plan};
use crate::shown::shown;
use crate::stats::Verdict;
use crate::store::{CellData, RunRecord};

/// The most characters of a fact's name, a configuration or a value the section shows
/// (the history keeps values to 200; names are a stored document's paths).
const MAX_TEXT: usize = 120;
/// The most facts a change's mark and row name; the facts table lists every one.
const MARK_FACTS: usize = 2;

/// The History section of a report.
#[derive(Clone, Debug, Serialize)]
pub struct HistorySection {
    pub confidence: f64,
    /// `95`.
    pub confidence_pct: String,
    /// The change-point rule (`benchpipe history`'s defaults).
    pub max_pvalue: f64,
    pub min_magnitude: f64,
    /// The runs holding a point of a series shown, oldest first (`run` numbers count
    /// from 1 in this list).
    pub runs: Vec<Run>,
    /// What the section shows and how changes are found, in words.
    pub text: String,
    pub tests: Vec<HistoryTest>,
}

/// One test's histories.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryTest {
    /// `history-xz`: unique in the report, for anchors.
    pub id: String,
    pub test: String,
    /// The chart's file beside the report (the Markdown's image): `history-xz.svg`.
    pub file: String,
    /// The chart's markup, every panel under the test's title: the file's bytes.
    pub chart: String,
    /// A chart per panel: the HTML page's figures, side by side where it is wide.
    pub charts: Vec<String>,
    /// The series with at least two runs, as `benchpipe history --json` has them.
    pub series: Vec<Series>,
    /// A row per change, and one per series without a change.
    pub rows: Vec<HistoryRow>,
    /// Every fact that moved at a change.
    pub facts: Vec<HistoryFact>,
}

/// A table row: a series and one of its changes (or none).
#[derive(Clone, Debug, Serialize)]
pub struct HistoryRow {
    pub config: String,
    /// `real (s, lower is better)`.
    pub metric: String,
    /// How many runs the series has.
    pub runs: usize,
    /// The run the change starts (from 1); None without a change.
    pub run: Option<usize>,
    /// `1.002 → 1.251`, or `newest 1.002` (its last run's mean) without a change.
    pub levels: String,
    /// `+24.9% (95% CI +20.1% to +30.0%)`, or empty.
    pub difference: String,
    /// `worse`, `better`, or `no change`.
    pub direction: String,
    /// The facts that moved, short: `inputs.board.model, cell` or `none stored`.
    pub facts: String,
}

/// A fact that moved at a change.
#[derive(Clone, Debug, Serialize)]
pub struct HistoryFact {
    pub config: String,
    pub metric: String,
    pub run: usize,
    pub name: String,
    pub before: String,
    pub after: String,
}

/// The History section of `scenario`'s report, built by `history::build` with
/// `benchpipe history`'s defaults; None when no configuration has two runs. A store of
/// one apply is not looked at further than its sessions.
pub fn section(
    ws: &Workspace,
    scenario: &Scenario,
    plan: &Plan,
    data: &BTreeMap<CellKey, CellData>,
    records: &[RunRecord],
) -> Option<HistorySection> {
    let mut sessions = data.values().flat_map(|d| &d.samples).map(|s| &s.session);
    let first = sessions.next()?;
    if sessions.all(|s| s == first) {
        return None;
    }
    let options = HistoryOptions {
        rule: crate::stats::ChangeRule::default(),
        min_magnitude: None,
        metric: None,
    };
    let h = history::build(ws, scenario, plan, data, records, &options);
    of_history(ws, scenario, &h)
}

/// The section of a history: None when no series has two runs.
pub fn of_history(ws: &Workspace, scenario: &Scenario, h: &History) -> Option<HistorySection> {
    let shown_series: Vec<&Series> = h.series.iter().filter(|s| s.points.len() >= 2).collect();
    if shown_series.is_empty() {
        return None;
    }
    // The tests in the scenario's order, then any other (a glob's) by name.
    let mut order: Vec<String> = scenario
        .matrix
        .test
        .iter()
        .map(ToString::to_string)
        .collect();
    let mut others: Vec<String> = shown_series
        .iter()
        .map(|s| s.test.clone())
        .filter(|t| !order.contains(t))
        .collect();
    others.sort();
    others.dedup();
    order.extend(others);
    // Only runs holding a point of a shown series: renumbered from 1 in that list.
    let mut used: Vec<usize> = shown_series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.run))
        .collect();
    used.sort_unstable();
    used.dedup();
    let renumber: BTreeMap<usize, usize> = used.iter().enumerate().map(|(i, r)| (*r, i)).collect();
    let runs: Vec<Run> = used.iter().map(|r| h.runs[*r].clone()).collect();
    let confidence_pct = percent(h.confidence);
    let mut tests = Vec::new();
    for test in &order {
        let series: Vec<Series> = shown_series
            .iter()
            .filter(|s| &s.test == test)
            .map(|s| renumbered(s, &renumber))
            .collect();
        if series.is_empty() {
            continue;
        }
        tests.push(test_of(ws, scenario, test, series, &confidence_pct));
    }
    // Two tests whose names differ only in what a file name cannot hold would share a
    // chart file: each later one gets its place in the list as well.
    let mut seen = std::collections::BTreeSet::new();
    for (i, t) in tests.iter_mut().enumerate() {
        if !seen.insert(t.file.clone()) {
            t.file = format!("history-{}-{}.svg", i + 1, file_part(&t.test));
            t.id = format!("history-{}-{}", i + 1, file_part(&t.test));
        }
    }
    let text = format!(
        "Each configuration measured in more than one run: its per-run means with their {confidence_pct}% confidence intervals, oldest run first ({} run(s) of the store). \
         A dashed mark is a change point where its new level starts, as `benchpipe history` finds them (p ≤ {} after correcting for the candidates tried, guarded by a permutation test, and at least {}% change), named by the difference and the stored facts that differ from the run before.",
        runs.len(),
        h.max_pvalue,
        percent(h.min_magnitude),
    );
    Some(HistorySection {
        confidence: h.confidence,
        confidence_pct,
        max_pvalue: h.max_pvalue,
        min_magnitude: h.min_magnitude,
        runs,
        text,
        tests,
    })
}

/// `s` with its points' runs numbered in the section's runs.
fn renumbered(s: &Series, renumber: &BTreeMap<usize, usize>) -> Series {
    let mut s = s.clone();
    for p in &mut s.points {
        p.run = renumber.get(&p.run).copied().unwrap_or(p.run);
    }
    s
}

/// A test name as a file name's part: letters, digits, `-` and `_`, the rest `-`.
fn file_part(test: &str) -> String {
    let part: String = test
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    if part.is_empty() {
        "test".to_string()
    } else {
        part
    }
}

/// The configuration without its test, as a panel's subtitle and a row's first cell.
fn config_text(s: &Series) -> String {
    let text = history::config_of(&s.address);
    let without = text
        .strip_suffix(&format!(",test={}", s.test))
        .unwrap_or(&text);
    cut(&shown(without), MAX_TEXT)
}

fn metric_text(ws: &Workspace, scenario: &Scenario, s: &Series) -> String {
    let test = TestName::from(s.test.as_str());
    let label = scenario
        .report
        .labels
        .metric(&test, &s.metric)
        .map(str::to_string)
        .or_else(|| {
            ws.recipes
                .get(&test)
                .and_then(|r| r.metric(&s.metric))
                .map(|m| m.label().to_string())
        })
        .unwrap_or_else(|| s.metric.clone());
    let better = match s.better {
        Better::Higher => "higher is better",
        Better::Lower => "lower is better",
    };
    cut(&shown(&format!("{label} ({}, {better})", s.unit)), MAX_TEXT)
}

/// A change's facts, short: at most [`MARK_FACTS`] names (the cell's key last, as it
/// only says the cell changed), and how many more.
fn short_facts(c: &Change) -> String {
    if c.facts.is_empty() {
        return "no stored fact differs".to_string();
    }
    let mut names: Vec<&FactChange> = c.facts.iter().filter(|f| f.name != "cell").collect();
    names.extend(c.facts.iter().filter(|f| f.name == "cell"));
    let mut out: Vec<String> = names
        .iter()
        .take(MARK_FACTS)
        .map(|f| cut(&shown(&f.name), 48))
        .collect();
    let more = names.len().saturating_sub(MARK_FACTS) + c.facts_more;
    if more > 0 {
        out.push(format!("{more} more"));
    }
    out.join(", ")
}

fn pct(x: f64) -> String {
    let mut s = String::new();
    if x >= 0.0 {
        s.push('+');
    }
    super::chart::push_fixed(&mut s, x, 1);
    s.push('%');
    s
}

/// `+24.9% (95% CI +20.1% to +30.0%)`, as far as the comparison across went.
fn difference(c: &Change, confidence_pct: &str) -> String {
    match (c.diff_pct, c.ci_low_pct, c.ci_high_pct) {
        (Some(d), Some(l), Some(h)) => {
            format!("{} ({confidence_pct}% CI {} to {})", pct(d), pct(l), pct(h))
        }
        (Some(d), _, _) => format!("{} (its interval unbounded)", pct(d)),
        _ => format!(
            "{} (not comparable)",
            pct((c.after_mean / c.before_mean - 1.0) * 100.0)
        ),
    }
}

fn test_of(
    ws: &Workspace,
    scenario: &Scenario,
    test: &str,
    series: Vec<Series>,
    confidence_pct: &str,
) -> HistoryTest {
    let mut panels = Vec::new();
    let mut rows = Vec::new();
    let mut facts = Vec::new();
    for s in &series {
        let config = config_text(s);
        let metric = metric_text(ws, scenario, s);
        let mut marks = Vec::new();
        for c in &s.changes {
            let run = s.points[c.point].run + 1;
            let short = short_facts(c);
            let diff = difference(c, confidence_pct);
            marks.push(Mark {
                point: c.point,
                label: format!("{}: {short}", diff.split(' ').next().unwrap_or_default()),
            });
            rows.push(HistoryRow {
                config: config.clone(),
                metric: metric.clone(),
                runs: s.points.len(),
                run: Some(run),
                levels: format!("{} → {}", number(c.before_mean), number(c.after_mean)),
                difference: diff,
                direction: match c.direction {
                    Verdict::Worse => "worse",
                    _ => "better",
                }
                .to_string(),
                facts: short,
            });
            let none = "(none)";
            for f in &c.facts {
                facts.push(HistoryFact {
                    config: config.clone(),
                    metric: metric.clone(),
                    run,
                    name: cut(&shown(&f.name), MAX_TEXT),
                    before: cut(&shown(f.before.as_deref().unwrap_or(none)), MAX_TEXT),
                    after: cut(&shown(f.after.as_deref().unwrap_or(none)), MAX_TEXT),
                });
            }
            if c.facts_more > 0 {
                facts.push(HistoryFact {
                    config: config.clone(),
                    metric: metric.clone(),
                    run,
                    name: format!("… and {} more", c.facts_more),
                    before: String::new(),
                    after: String::new(),
                });
            }
        }
        if s.changes.is_empty() {
            let newest = s.points.last().map_or(f64::NAN, |p| p.mean);
            rows.push(HistoryRow {
                config: config.clone(),
                metric: metric.clone(),
                runs: s.points.len(),
                run: None,
                levels: format!("newest {}", number(newest)),
                difference: String::new(),
                direction: "no change".to_string(),
                facts: String::new(),
            });
        }
        panels.push(Panel {
            title: metric,
            subtitle: config,
            points: s
                .points
                .iter()
                .map(|p| PanelPoint {
                    run: p.run + 1,
                    mean: p.mean,
                    ci: p.ci_low.zip(p.ci_high),
                })
                .collect(),
            marks,
        });
    }
    let title = format!("{test}: per-run means, {confidence_pct}% CIs, oldest first");
    let part = file_part(test);
    HistoryTest {
        id: format!("history-{part}"),
        test: test.to_string(),
        file: format!("history-{part}.svg"),
        chart: history_svg::history_chart(&shown(&title), &panels),
        charts: panels
            .iter()
            .take(history_svg::MAX_PANELS)
            .map(|p| history_svg::history_chart("", std::slice::from_ref(p)))
            .collect(),
        series,
        rows,
        facts,
    }
}
