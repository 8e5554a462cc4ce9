//! The report's cells: each plan cell with what the store holds for it, its state, and
//! what its runs say about their validity, in an order that needs no board file.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::run_metrics::RunMetrics;
use crate::model::{MetricSpec, Scenario, TestName};
use crate::plan::state::{self, CellState};
use crate::plan::{Address, Cell, CellKey};
use crate::stats::{self, OutlierCount};
use crate::store::{CellData, RunKind, Sample};

/// What the report says of one stored run, judged once: every table, note and export
/// reads these rather than judging the run's telemetry again.
pub(super) struct Run {
    /// Its validity flags under the cell's method (`state::flags_of`).
    pub flags: Vec<String>,
    /// Its warnings (throttle state unknown, power unknown).
    pub warnings: Vec<String>,
    /// Taken after the cell's redo marker, if any.
    pub current: bool,
    /// Current, measured, and kept by the method (`state::counts`).
    pub counts: bool,
    /// The apply that took it: its index in `View::sessions`.
    pub session: usize,
    /// The sample's own columns, copied here as it is judged: results.csv and the
    /// method read them from these compact runs rather than from every sample again
    /// (a big store's samples are far apart in memory).
    pub seq: u32,
    pub kind: RunKind,
    pub order: Option<crate::model::RunOrder>,
    pub board_seq: Option<u64>,
    /// How long it ran (`ended - started`), in seconds.
    pub seconds: f64,
}

/// One cell as the report sees it.
pub(super) struct View<'a> {
    pub cell: &'a Cell,
    pub data: &'a CellData,
    pub state: CellState,
    /// Per stored sample, in store order.
    pub runs: Vec<Run>,
    /// The distinct sessions (applies) its runs were taken in, in store order.
    pub sessions: Vec<&'a str>,
    /// Every run's value of each of `metrics` (None where it has none), run by run:
    /// results.csv's rows read them, and `counted` is made of them.
    pub run_values: Vec<Option<f64>>,
    /// The current measured runs.
    pub measured: usize,
    /// The cell's recipe metrics (none without a recipe), and each one's values over
    /// the runs that count, judged once, in the same order: the tables, precision notes
    /// and comparisons all read them.
    pub metrics: &'a [MetricSpec],
    pub counted: Vec<Counted>,
    /// The distinct validity flags of its measured runs, and how many runs had one.
    pub flags: Vec<String>,
    pub flagged_runs: usize,
    /// Each flag with the number of measured runs that raised it, in `flags` order.
    pub flag_counts: Vec<(String, usize)>,
    /// The distinct warnings (throttle state unknown, power unknown), likewise.
    pub warnings: Vec<String>,
    pub warned_runs: usize,
    pub warning_counts: Vec<(String, usize)>,
    /// Whether flagged runs are left out of the statistics.
    pub excluded: bool,
    /// Which of `OPTIONAL_METRICS` any of its current measured runs has: a table
    /// shows those columns only where a run has them.
    pub optional_metrics: OptionalMetrics,
}

/// The metrics a run has only where a sampler or a power meter gave them (watts idle
/// and under load, a series' temperature and clock), in the order a table adds them.
pub(super) const OPTIONAL_METRICS: [&str; 4] = [
    crate::model::IDLE_W,
    crate::model::POWER_W,
    crate::model::TEMP_MAX_C,
    crate::model::FREQ_MEAN_MHZ,
];

/// A set of `OPTIONAL_METRICS`, one bit each in their order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct OptionalMetrics(u8);

impl OptionalMetrics {
    /// Those of `names` that are optional metrics.
    pub fn of<'n>(names: impl IntoIterator<Item = &'n String>) -> OptionalMetrics {
        let mut bits = 0;
        for name in names {
            if let Some(i) = OPTIONAL_METRICS.iter().position(|m| name == m) {
                bits |= 1 << i;
            }
        }
        OptionalMetrics(bits)
    }

    pub fn union(self, other: OptionalMetrics) -> OptionalMetrics {
        OptionalMetrics(self.0 | other.0)
    }

    /// Whether the set holds `name`.
    pub fn has(self, name: &str) -> bool {
        OPTIONAL_METRICS
            .iter()
            .position(|m| *m == name)
            .is_some_and(|i| self.0 & (1 << i) != 0)
    }
}

impl<'a> View<'a> {
    pub fn address(&self) -> &Address {
        &self.cell.address
    }

    /// `address`, for as long as the plan's cell lives.
    pub fn cell_address(&self) -> &'a Address {
        &self.cell.address
    }

    pub fn measured(&self) -> usize {
        self.measured
    }

    /// Run `run`'s value of each of `metrics`, in their order.
    pub fn values_of_run(&self, run: usize) -> &[Option<f64>] {
        let n = self.metrics.len();
        self.run_values.get(run * n..(run + 1) * n).unwrap_or(&[])
    }

    /// The runs that count in the statistics, in store order.
    pub fn counted(&self) -> impl Iterator<Item = &Sample> {
        self.data
            .samples
            .iter()
            .zip(&self.runs)
            .filter(|(_, r)| r.counts)
            .map(|(s, _)| s)
    }

    /// The values of `metric` over the runs that count, with their summary at
    /// `confidence` and their outliers (`counted`'s when it is a recipe metric judged at
    /// that confidence).
    pub fn counted_of(&self, metric: &MetricSpec, confidence: f64) -> Cow<'_, Counted> {
        let judged = self
            .metrics
            .iter()
            .position(|m| m == metric)
            .map(|i| &self.counted[i])
            .filter(|c| c.confidence.to_bits() == confidence.to_bits());
        match judged {
            Some(c) => Cow::Borrowed(c),
            None => Cow::Owned(Counted::of(values_in(self.counted(), metric), confidence)),
        }
    }

    /// The values of `metric` over the runs that count.
    pub fn values(&self, metric: &MetricSpec) -> Cow<'_, [f64]> {
        match self.metrics.iter().position(|m| m == metric) {
            Some(i) => Cow::Borrowed(&self.counted[i].values),
            None => Cow::Owned(values_in(self.counted(), metric)),
        }
    }

    /// `2 of 5 (hot, swapping), excluded`, then the warned runs
    /// (`; 5 of 5 (throttle state unknown), included`), or empty.
    pub fn flagged_text(&self) -> String {
        let mut out = Vec::new();
        if self.flagged_runs > 0 {
            out.push(format!(
                "{} of {} ({}), {}",
                self.flagged_runs,
                self.measured(),
                self.flags.join(", "),
                if self.excluded {
                    "excluded"
                } else {
                    "included"
                }
            ));
        }
        if self.warned_runs > 0 {
            out.push(format!(
                "{} of {} ({}), included",
                self.warned_runs,
                self.measured(),
                self.warnings.join(", ")
            ));
        }
        out.join("; ")
    }

    /// With a precision target: the runs taken and the rule that stopped them.
    pub fn runs_text(&self) -> Option<String> {
        self.cell.method.runs.target?;
        match &self.state {
            CellState::Complete { have, rule } => Some(format!(
                "{have}, {}",
                match rule {
                    state::StopRule::TargetReached => "target reached",
                    state::StopRule::MaxReached => "max reached, target missed",
                    state::StopRule::MinReached => "min reached",
                }
            )),
            // The count stays in the row once the `n` column gives way to this one.
            CellState::Partial { have, .. }
            | CellState::Skipped { have, .. }
            | CellState::Failed { have, .. }
                if *have > 0 =>
            {
                Some(format!("{have}, incomplete"))
            }
            _ => None,
        }
    }
}

/// One metric's values over a cell's counted runs, judged once: their summary at a
/// confidence and their outliers.
#[derive(Clone, Debug)]
pub(super) struct Counted {
    pub values: Vec<f64>,
    pub confidence: f64,
    /// None without a finite value (`stats::summarize`).
    pub summary: Option<stats::Summary>,
    pub outliers: OutlierCount,
}

impl Counted {
    pub fn of(values: Vec<f64>, confidence: f64) -> Counted {
        let (summary, outliers) = stats::summarize_with_outliers(&values, confidence);
        Counted {
            values,
            confidence,
            summary,
            outliers,
        }
    }
}

fn values_in<'s>(runs: impl Iterator<Item = &'s Sample>, metric: &MetricSpec) -> Vec<f64> {
    runs.filter_map(|s| metric.value(&s.metrics, s.ended - s.started))
        .collect()
}

fn warnings_of(s: &Sample) -> Vec<String> {
    s.telemetry
        .as_ref()
        .map(crate::telemetry::StoredTelemetry::warnings)
        .unwrap_or_default()
}

/// Distinct values in name order, each with the number of runs that had it.
fn counted_kinds<'r>(per_run: impl Iterator<Item = &'r Vec<String>>) -> Vec<(String, usize)> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for run in per_run {
        let mut kinds: Vec<&str> = run.iter().map(String::as_str).collect();
        kinds.sort_unstable();
        kinds.dedup();
        for k in kinds {
            *counts.entry(k).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|(k, n)| (k.to_string(), n))
        .collect()
}

/// Every cell of the plan with its data, in report order.
pub(super) fn views<'a>(
    ws_recipes: &'a BTreeMap<TestName, crate::model::Recipe>,
    scenario: &Scenario,
    cells: &[&'a Cell],
    data: &'a BTreeMap<CellKey, CellData>,
    empty: &'a CellData,
) -> Vec<View<'a>> {
    // Each recipe's primary metrics, and how its runs' metrics are read, made once
    // rather than per cell.
    let primaries: BTreeMap<&TestName, Vec<String>> = ws_recipes
        .iter()
        .map(|(test, r)| (test, r.primary_metrics()))
        .collect();
    let readers: BTreeMap<&TestName, RunMetrics> = ws_recipes
        .iter()
        .map(|(test, r)| (test, RunMetrics::new(&r.metrics, &primaries[test])))
        .collect();
    let no_recipe = RunMetrics::new(&[], &[]);
    // Each cell's runs are judged on their own: a big report's on every core.
    crate::parallel::map(cells, VIEWS_PER_THREAD_MIN, |&cell| {
        let d = data.get(&cell.key).unwrap_or(empty);
        let test = &cell.address.test;
        let recipe = ws_recipes.get(test);
        let primary = primaries.get(test).map_or(0, Vec::len);
        let reader = readers.get(test).unwrap_or(&no_recipe);
        let method = &cell.method;
        let metrics = recipe.map_or(&[][..], |r| r.metrics.as_slice());
        // Each run's metric values are found here, once, for every run: the statistics
        // take the counted runs' and results.csv every run's, and the cell's state the
        // counted runs' primary metrics as stored.
        let mut run_values = Vec::with_capacity(d.samples.len() * metrics.len());
        let mut primary_values: Vec<Vec<f64>> = vec![Vec::new(); primary];
        let mut found = Vec::new();
        let mut sessions: Vec<&str> = Vec::new();
        let runs: Vec<Run> = d
            .samples
            .iter()
            .map(|s| {
                // A stored flag may be any text (the store may be someone else's):
                // shown on one line, controls escaped, wherever the report lists it.
                let flags: Vec<String> = state::flags_of(method, s)
                    .into_iter()
                    .map(crate::shown::into_shown)
                    .collect();
                let current = d.is_current(s);
                let session = if let Some(i) = sessions.iter().rposition(|x| *x == s.session) {
                    i
                } else {
                    sessions.push(&s.session);
                    sessions.len() - 1
                };
                let seconds = s.ended - s.started;
                reader.read(&s.metrics, &mut found);
                run_values.extend((0..metrics.len()).map(|i| reader.value(i, &found, seconds)));
                let counts = current && state::counts_with_flags(method, s, &flags);
                if counts {
                    for (k, values) in primary_values.iter_mut().enumerate() {
                        values.extend(reader.also(k, &found));
                    }
                }
                Run {
                    counts,
                    warnings: warnings_of(s),
                    flags,
                    current,
                    session,
                    seq: s.seq,
                    kind: s.kind,
                    order: s.order,
                    board_seq: s.board_seq,
                    seconds,
                }
            })
            .collect();
        // The current measured runs, in one pass: their flags and warnings are counted,
        // and the optional metrics any of them has are found here (on every core), not
        // by a walk over every run of a test when its table's columns are chosen.
        let mut optional_metrics = OptionalMetrics::default();
        let measured: Vec<&Run> = d
            .samples
            .iter()
            .zip(&runs)
            .filter(|(s, r)| r.current && s.kind == RunKind::Measured)
            .map(|(s, r)| {
                optional_metrics = optional_metrics.union(OptionalMetrics::of(s.metrics.keys()));
                r
            })
            .collect();
        let flag_counts = counted_kinds(measured.iter().map(|r| &r.flags));
        let warning_counts = counted_kinds(measured.iter().map(|r| &r.warnings));
        let counted = runs.iter().filter(|r| r.counts).count();
        let confidence = scenario.method.confidence;
        let judged: Vec<Counted> = (0..metrics.len())
            .map(|i| {
                let values = runs
                    .iter()
                    .zip(run_values.chunks_exact(metrics.len()))
                    .filter(|(r, _)| r.counts)
                    .filter_map(|(_, v)| v[i])
                    .collect();
                Counted::of(values, confidence)
            })
            .collect();
        View {
            cell,
            data: d,
            state: state::state_given(cell, &primary_values, counted, d),
            flagged_runs: measured.iter().filter(|r| !r.flags.is_empty()).count(),
            flags: flag_counts.iter().map(|(k, _)| k.clone()).collect(),
            flag_counts,
            warned_runs: measured.iter().filter(|r| !r.warnings.is_empty()).count(),
            warnings: warning_counts.iter().map(|(k, _)| k.clone()).collect(),
            warning_counts,
            excluded: scenario.method.validity.exclude_flagged,
            measured: measured.len(),
            metrics,
            counted: judged,
            runs,
            sessions,
            run_values,
            optional_metrics,
        }
    })
}

/// Below this many cells a report's views are made on one thread.
const VIEWS_PER_THREAD_MIN: usize = 256;

/// Where an address sorts in a report: by board, then the matrix's order of image,
/// test, storage pattern and filesystem, names breaking ties.
pub(super) type Place<'a> = (
    &'a str,
    usize,
    &'a str,
    usize,
    &'a str,
    usize,
    &'a str,
    Option<usize>,
    Option<&'a str>,
);

pub(super) fn place<'a>(scenario: &Scenario, a: &'a Address) -> Place<'a> {
    let m = &scenario.matrix;
    let index = |found: Option<usize>| found.unwrap_or(usize::MAX);
    let storage = a
        .storage
        .as_ref()
        .map_or("", crate::model::StorageName::as_str);
    (
        a.board.as_str(),
        index(m.image.iter().position(|i| i == &a.image)),
        a.image.as_str(),
        index(m.test.iter().position(|t| t == &a.test)),
        a.test.as_str(),
        index(
            m.storage
                .iter()
                .position(|p| crate::glob::matches(p, storage)),
        ),
        storage,
        a.filesystem
            .as_ref()
            .map(|f| index(m.filesystem.iter().position(|x| x == f))),
        a.filesystem.as_ref().map(crate::model::FsName::as_str),
    )
}

/// The report's order of cells (`place`, then the key). It needs no board file (the
/// plan's order follows a board file's storage order), so a report made from the store
/// alone lists what one made with the board files does, in the same order.
pub(super) fn order<'a>(
    scenario: &Scenario,
    cells: impl Iterator<Item = &'a Cell>,
) -> Vec<&'a Cell> {
    let mut v: Vec<&Cell> = cells.collect();
    v.sort_by_cached_key(|&c| (place(scenario, &c.address), c.key.as_str()));
    v
}
