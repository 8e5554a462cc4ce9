//! `benchpipe history`'s model, pure: per configuration and metric the series of
//! per-run means (runs oldest first), its change points with the ratio's Fieller
//! interval and the stored facts that differ across each, and the regressions the
//! newest run starts (`--fail-on regression`'s findings). Text in `history_text.rs`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

use crate::cell::Address;
use crate::model::{Better, Scenario, Workspace};
use crate::plan::{self, CellKey, Plan};
use crate::stats::{self, ChangeRule, ChangeTest, RatioInterval, Verdict};
use crate::store::{CellData, RunRecord};

/// The version of the history JSON (`docs/FORMAT.md`).
pub const HISTORY_FORMAT: u32 = 1;

/// The most differing facts a change lists; the rest are counted (`facts_more`).
const MAX_FACTS: usize = 64;
/// The most flattened entries read of one stored document, and its depth.
const MAX_FLAT: usize = 4096;
const MAX_DEPTH: usize = 8;
/// The most characters of a fact's value kept.
const MAX_VALUE_CHARS: usize = 200;

/// What `history` computes with.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryOptions {
    /// The detector's rule; its `min_magnitude` is taken from `min_magnitude`.
    pub rule: ChangeRule,
    /// The smallest relative change reported; None: the scenario's `[report]
    /// noise_band`.
    pub min_magnitude: Option<f64>,
    /// `test.metric` or a metric name of any test; None: every metric.
    pub metric: Option<String>,
}

/// One scenario's history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct History {
    pub scenario: String,
    pub confidence: f64,
    pub max_pvalue: f64,
    pub min_magnitude: f64,
    /// The runs (applies) holding a point of a series, oldest first.
    pub runs: Vec<Run>,
    pub series: Vec<Series>,
    /// The regressions the newest run starts.
    pub findings: Vec<Finding>,
}

/// An apply, as its run record says (or, for samples of a store older than run
/// records, as its samples say: `recorded` false, no version).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    pub session: String,
    /// Unix seconds.
    pub started: f64,
    pub version: Option<String>,
    pub recorded: bool,
}

/// One configuration's metric over the runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    /// The configuration as a cell pattern (`board=..,image=..,...`), test included.
    pub config: String,
    pub address: Address,
    pub test: String,
    pub metric: String,
    pub unit: String,
    pub better: Better,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
}

/// A run's mean of a configuration's metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    /// Its index in `runs`.
    pub run: usize,
    pub session: String,
    /// Measured runs (samples) of the apply.
    pub n: usize,
    pub mean: f64,
    /// Student's t interval of the mean (none with one sample).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    #[serde(skip)]
    values: Vec<f64>,
    /// The cells (key, seqs) its samples came from.
    #[serde(skip)]
    from: Vec<(CellKey, Vec<u32>)>,
}

/// A change point: the level from `point` on differs from the one before.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// The index in `points` of the first run of the new level.
    pub point: usize,
    pub session: String,
    /// The run just before it.
    pub before_session: String,
    /// The means of the segments before and after (per-run means averaged).
    pub before_mean: f64,
    pub after_mean: f64,
    /// `better` or `worse` by the metric's direction.
    pub direction: Verdict,
    /// The detector's p-value and test (`segment`, `newest`).
    pub p: f64,
    pub test: ChangeTest,
    /// The comparison of the two segments: their per-run means (`runs`) when each has
    /// two, else their samples (`samples`); None when they cannot be compared.
    pub basis: &'static str,
    pub ratio: Option<f64>,
    pub ratio_ci: Option<RatioInterval>,
    pub diff_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub verdict: Option<Verdict>,
    /// The stored facts that differ between the run before and the run after.
    pub facts: Vec<FactChange>,
    pub facts_more: usize,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct FactChange {
    pub name: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// A regression the newest run starts: `--fail-on regression` exits non-zero.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    pub kind: &'static str,
    pub scenario: String,
    pub config: String,
    pub test: String,
    pub metric: String,
    pub unit: String,
    pub session: String,
    pub before_mean: f64,
    pub after_mean: f64,
    pub diff_pct: Option<f64>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
    pub p: f64,
    pub facts: Vec<FactChange>,
}

/// The configuration `a` as a cell pattern.
pub fn config_of(a: &Address) -> String {
    let mut parts = vec![format!("board={}", a.board), format!("image={}", a.image)];
    if let Some(s) = &a.storage {
        parts.push(format!("storage={s}"));
    }
    if let Some(f) = &a.filesystem {
        parts.push(format!("filesystem={f}"));
    }
    if let Some(n) = &a.network {
        parts.push(format!("network={n}"));
    }
    parts.push(format!("test={}", a.test));
    parts.join(",")
}

/// The history of `scenario` from the store's cells and runs (`Store::runs`, oldest
/// first). A configuration is a cell address of the plan: its cell, and every stored
/// cell at that address whose key inputs differ from it only in the image's identity or
/// the board's declared inputs (a new image's cells continue its series; a cell of
/// other parameters or another method, another scenario's, does not). A run is an
/// apply: a configuration's samples of one session, redone ones included, make its
/// point; runs order by their start, so merged stores interleave by time.
pub fn build(
    ws: &Workspace,
    scenario: &Scenario,
    plan: &Plan,
    data: &BTreeMap<CellKey, CellData>,
    records: &[RunRecord],
    options: &HistoryOptions,
) -> History {
    let mut configs: BTreeMap<&Address, &plan::Cell> = BTreeMap::new();
    for c in &plan.cells {
        configs.entry(&c.address).or_insert(c);
    }
    let mut stored: BTreeMap<&Address, Vec<(&CellKey, &CellData)>> = BTreeMap::new();
    for (key, d) in data {
        if let Some(r) = &d.record
            && let Some(cell) = configs.get(&r.address)
            && (*key == cell.key || same_but_system(r.inputs.value(), cell.inputs.json()))
        {
            stored.entry(&r.address).or_default().push((key, d));
        }
    }
    let runs = run_table(records, stored.values().flatten().map(|(_, d)| *d));
    let index: BTreeMap<&str, usize> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.session.as_str(), i))
        .collect();
    let confidence = scenario.method.confidence;
    let min_magnitude = options
        .min_magnitude
        .unwrap_or(scenario.precision.noise_band);
    let rule = ChangeRule {
        min_magnitude,
        ..options.rule
    };
    let mut series = Vec::new();
    for (address, cells) in &stored {
        let Some(recipe) = ws.recipes.get(&address.test) else {
            continue;
        };
        let method = &configs[address].method;
        for spec in &recipe.metrics {
            if !wanted(options.metric.as_deref(), address.test.as_str(), &spec.name) {
                continue;
            }
            let points = points_of(cells, method, &spec.name, &index, &runs, confidence);
            if points.is_empty() {
                continue;
            }
            let mut s = Series {
                config: config_of(address),
                address: (*address).clone(),
                test: address.test.to_string(),
                metric: spec.name.clone(),
                unit: spec.unit.clone(),
                better: spec.better,
                points,
                changes: Vec::new(),
            };
            s.changes = changes_of(&s, cells, &runs, &rule, scenario, confidence);
            series.push(s);
        }
    }
    let newest = series
        .iter()
        .filter_map(|s| s.points.last().map(|p| p.run))
        .max();
    let findings = series
        .iter()
        .flat_map(|s| {
            s.changes
                .iter()
                .filter(move |c| {
                    c.point + 1 == s.points.len()
                        && Some(s.points[c.point].run) == newest
                        && c.direction == Verdict::Worse
                })
                .map(move |c| Finding {
                    kind: "regression",
                    scenario: scenario.name.clone(),
                    config: s.config.clone(),
                    test: s.test.clone(),
                    metric: s.metric.clone(),
                    unit: s.unit.clone(),
                    session: c.session.clone(),
                    before_mean: c.before_mean,
                    after_mean: c.after_mean,
                    diff_pct: c.diff_pct,
                    ci_low_pct: c.ci_low_pct,
                    ci_high_pct: c.ci_high_pct,
                    p: c.p,
                    facts: c.facts.clone(),
                })
        })
        .collect();
    History {
        scenario: scenario.name.clone(),
        confidence,
        max_pvalue: rule.max_pvalue,
        min_magnitude,
        runs,
        series,
        findings,
    }
}

/// The key inputs a configuration's series may change: the system under test (the
/// image's identity, the board's declared inputs). A cell whose other inputs differ
/// (the test's parameters, the method, the storage, the filesystem) measured something
/// else and is left out.
const SYSTEM_INPUTS: [&str; 2] = ["image", "board"];

/// Whether two cells' key inputs differ at most in [`SYSTEM_INPUTS`].
fn same_but_system(a: &Value, b: &Value) -> bool {
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        return false;
    };
    let rest = |m: &serde_json::Map<String, Value>| -> Vec<(String, Value)> {
        m.iter()
            .filter(|(k, _)| !SYSTEM_INPUTS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let (mut ra, mut rb) = (rest(a), rest(b));
    ra.sort_by(|x, y| x.0.cmp(&y.0));
    rb.sort_by(|x, y| x.0.cmp(&y.0));
    ra == rb
}

/// Whether `--metric` asks for `test.metric` (`test.metric`, or the metric's name).
fn wanted(asked: Option<&str>, test: &str, metric: &str) -> bool {
    match asked {
        None => true,
        Some(a) => match a.split_once('.') {
            Some((t, m)) if t == test && m == metric => true,
            _ => a == metric,
        },
    }
}

/// The runs: the records, and the sessions of samples no record names (a store older
/// than run records), each started when its first sample did; oldest first, ties by
/// session.
fn run_table<'d>(records: &[RunRecord], cells: impl Iterator<Item = &'d CellData>) -> Vec<Run> {
    let mut runs: BTreeMap<String, Run> = records
        .iter()
        .map(|r| {
            (
                r.session.clone(),
                Run {
                    session: r.session.clone(),
                    started: r.started,
                    version: Some(r.version.clone()),
                    recorded: true,
                },
            )
        })
        .collect();
    let mut unrecorded: BTreeMap<&str, f64> = BTreeMap::new();
    for d in cells {
        for s in &d.samples {
            if !runs.contains_key(&s.session) {
                let at = unrecorded.entry(&s.session).or_insert(s.started);
                *at = at.min(s.started);
            }
        }
    }
    for (session, started) in unrecorded {
        runs.insert(
            session.to_string(),
            Run {
                session: session.to_string(),
                started: if started.is_finite() { started } else { 0.0 },
                version: None,
                recorded: false,
            },
        );
    }
    let mut out: Vec<Run> = runs.into_values().collect();
    out.sort_by(|a, b| {
        a.started
            .total_cmp(&b.started)
            .then_with(|| a.session.cmp(&b.session))
    });
    out
}

/// The points of one metric over the cells of a configuration: each session's measured
/// samples that count (`plan::state::counts_with_flags`), runs oldest first.
fn points_of(
    cells: &[(&CellKey, &CellData)],
    method: &crate::model::Method,
    metric: &str,
    index: &BTreeMap<&str, usize>,
    runs: &[Run],
    confidence: f64,
) -> Vec<Point> {
    /// A run's values, and the seqs of each cell they came from.
    type Run<'k> = (Vec<f64>, BTreeMap<&'k CellKey, Vec<u32>>);
    let mut by_run: BTreeMap<usize, Run> = BTreeMap::new();
    for (key, d) in cells {
        for s in &d.samples {
            let flags = plan::state::flags_of(method, s);
            if !plan::state::counts_with_flags(method, s, &flags) {
                continue;
            }
            let (Some(v), Some(&run)) = (s.metrics.get(metric), index.get(s.session.as_str()))
            else {
                continue;
            };
            if !v.is_finite() {
                continue;
            }
            let entry = by_run.entry(run).or_default();
            entry.0.push(*v);
            entry.1.entry(*key).or_default().push(s.seq);
        }
    }
    by_run
        .into_iter()
        .filter_map(|(run, (values, from))| {
            let summary = stats::summarize(&values, confidence)?;
            let ci = summary.ci();
            Some(Point {
                run,
                session: runs[run].session.clone(),
                n: values.len(),
                mean: summary.mean,
                ci_low: ci.map(|c| c.0),
                ci_high: ci.map(|c| c.1),
                values,
                from: from.into_iter().map(|(k, s)| (k.clone(), s)).collect(),
            })
        })
        .collect()
}

/// The series' change points, each compared across and with the facts that moved.
fn changes_of(
    s: &Series,
    cells: &[(&CellKey, &CellData)],
    runs: &[Run],
    rule: &ChangeRule,
    scenario: &Scenario,
    confidence: f64,
) -> Vec<Change> {
    let means: Vec<f64> = s.points.iter().map(|p| p.mean).collect();
    let found = stats::change_points(&means, rule);
    let bounds: Vec<usize> = found.iter().map(|c| c.index).collect();
    found
        .iter()
        .enumerate()
        .filter(|(_, c)| c.index > 0 && c.index < s.points.len())
        .map(|(i, c)| {
            let start = if i == 0 { 0 } else { bounds[i - 1] };
            let end = bounds.get(i + 1).copied().unwrap_or(s.points.len());
            let (before, after) = (&s.points[start..c.index], &s.points[c.index..end]);
            let (basis, b, a) = if before.len() >= 2 && after.len() >= 2 {
                let m = |ps: &[Point]| ps.iter().map(|p| p.mean).collect::<Vec<f64>>();
                ("runs", m(before), m(after))
            } else {
                let v = |ps: &[Point]| ps.iter().flat_map(|p| p.values.clone()).collect();
                ("samples", v(before), v(after))
            };
            let cmp =
                stats::compare(&b, &a, confidence, scenario.precision.noise_band, s.better).ok();
            let worse = (c.after > c.before) == (s.better == Better::Lower);
            let (before, after) = (&s.points[c.index - 1], &s.points[c.index]);
            // Each run's own facts when both runs have them; else, as stores older than
            // them must be read, both from the cell's latest (one run's own against
            // another's latest would name facts that moved later as moving here).
            let own = run_facts_of(before, cells).is_some() && run_facts_of(after, cells).is_some();
            let (facts, facts_more) = differing(
                &facts_at(before, cells, runs, own),
                &facts_at(after, cells, runs, own),
            );
            Change {
                point: c.index,
                session: s.points[c.index].session.clone(),
                before_session: s.points[c.index - 1].session.clone(),
                before_mean: c.before,
                after_mean: c.after,
                direction: if worse {
                    Verdict::Worse
                } else {
                    Verdict::Better
                },
                p: c.p,
                test: c.test,
                basis: if cmp.is_some() { basis } else { "none" },
                ratio: cmp.as_ref().map(|c| c.ratio),
                ratio_ci: cmp.as_ref().map(|c| c.ratio_ci),
                diff_pct: cmp.as_ref().map(|c| c.diff_pct),
                ci_low_pct: cmp.as_ref().and_then(|c| c.ci_low_pct),
                ci_high_pct: cmp.as_ref().and_then(|c| c.ci_high_pct),
                verdict: cmp.as_ref().map(|c| c.verdict),
                facts,
                facts_more,
            }
        })
        .collect()
}

/// The cell a point's facts are read from: the first its samples came from, by key.
fn first_cell<'c>(
    p: &Point,
    cells: &[(&'c CellKey, &'c CellData)],
) -> Option<(&'c CellKey, &'c CellData)> {
    let (key, _) = p.from.first()?;
    cells.iter().find(|(k, _)| *k == key).copied()
}

/// The facts the point's run saw when it opened the point's cell
/// (`facts/<session>.json`), if the store holds them.
fn run_facts_of<'c>(p: &Point, cells: &[(&CellKey, &'c CellData)]) -> Option<&'c Value> {
    let (key, _) = p.from.first()?;
    let (_, d) = cells.iter().find(|(k, _)| *k == key)?;
    d.run_facts.get(&p.session).map(AsRef::as_ref)
}

/// The stored facts of a point, flattened to `name -> value`: the benchpipe of its run
/// (`benchpipe`), and of the cell its samples came from (the first, by key): its key
/// (`cell`), `cell.json`'s inputs (`inputs.*`), its facts (`facts.*`: with `own`, the
/// ones the point's run saw at the cell's opening, else `facts.json`, the cell's latest
/// opening's), and the board fingerprint its runs were taken under (`fingerprint.*`,
/// from the drift choices recorded for it).
fn facts_at(
    p: &Point,
    cells: &[(&CellKey, &CellData)],
    runs: &[Run],
    own: bool,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(v) = &runs[p.run].version {
        out.insert("benchpipe".to_string(), v.clone());
    }
    let (Some((_, seqs)), Some((key, d))) = (p.from.first(), first_cell(p, cells)) else {
        return out;
    };
    out.insert("cell".to_string(), key.as_str().chars().take(12).collect());
    if let Some(r) = &d.record {
        flatten("inputs", r.inputs.value(), 0, &mut out);
    }
    let facts = if own {
        run_facts_of(p, cells)
    } else {
        d.facts.as_deref()
    };
    if let Some(Value::Object(m)) = facts {
        for (k, v) in m {
            if k != "format" && k != "fingerprint" {
                flatten(&format!("facts.{k}"), v, 1, &mut out);
            }
        }
    }
    if let Some(fp) = &d.fingerprint {
        let first = seqs.iter().copied().min().unwrap_or(0);
        let mut decisions: Vec<_> = fp.decisions.iter().collect();
        decisions.sort_by_key(|d| d.after_seq);
        let under = decisions
            .iter()
            .find(|d| d.after_seq >= first)
            .map_or(&fp.fingerprint, |d| &d.from);
        if let Ok(v) = serde_json::to_value(under) {
            flatten("fingerprint", &v, 0, &mut out);
        }
    }
    out
}

/// `v` as `prefix.path -> text` entries into `out`, bounded.
fn flatten(prefix: &str, v: &Value, depth: usize, out: &mut BTreeMap<String, String>) {
    if out.len() >= MAX_FLAT {
        return;
    }
    let text = match v {
        Value::Object(m) if depth < MAX_DEPTH => {
            for (k, v) in m {
                flatten(&format!("{prefix}.{k}"), v, depth + 1, out);
            }
            return;
        }
        Value::Array(a) if depth < MAX_DEPTH => {
            for (i, v) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), v, depth + 1, out);
            }
            return;
        }
        Value::String(s) => s.clone(),
        Value::Null => return,
        other => other.to_string(),
    };
    out.insert(
        prefix.to_string(),
        text.chars().take(MAX_VALUE_CHARS).collect(),
    );
}

/// The facts whose values differ, by name (at most [`MAX_FACTS`]), and how many more.
fn differing(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> (Vec<FactChange>, usize) {
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let all: Vec<FactChange> = names
        .into_iter()
        .filter(|n| before.get(*n) != after.get(*n))
        .map(|n| FactChange {
            name: n.clone(),
            before: before.get(n).cloned(),
            after: after.get(n).cloned(),
        })
        .collect();
    let more = all.len().saturating_sub(MAX_FACTS);
    (all.into_iter().take(MAX_FACTS).collect(), more)
}
