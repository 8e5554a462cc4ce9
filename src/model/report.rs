//! What a scenario's `[report]` asks of its report besides comparisons: labels for the
//! values of the axes and for metrics (`[report.labels]`), and tables of its own
//! (`[[report.table]]`), which can span tests and pivot an axis into columns; and what a
//! comparison's percentage is of (`Percent`) and a shared label kept apart (`kept_apart`).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::TestName;

/// An axis of the matrix a table's rows or pivot can name (the test is a table's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    Image,
    Board,
    Storage,
    Filesystem,
    Network,
}

impl Axis {
    /// In matrix order.
    pub const ALL: [Axis; 5] = [
        Axis::Image,
        Axis::Board,
        Axis::Storage,
        Axis::Filesystem,
        Axis::Network,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Axis::Image => "image",
            Axis::Board => "board",
            Axis::Storage => "storage",
            Axis::Filesystem => "filesystem",
            Axis::Network => "network",
        }
    }

    pub fn parse(name: &str) -> Option<Axis> {
        Axis::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// `[report]` beyond `[[report.compare]]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ReportSpec {
    pub labels: Labels,
    pub tables: Vec<TableSpec>,
}

/// `[report.labels]`: what rows and columns call things instead of their names.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Labels {
    /// Per axis, `(glob, label)` in the order the file gives them: the first glob that
    /// matches a value names it.
    pub axes: BTreeMap<Axis, Vec<(String, String)>>,
    /// `test.metric` -> label, over the recipe's own `label`.
    pub metrics: BTreeMap<(TestName, String), String>,
}

impl Labels {
    /// The scenario's label of an axis value, if it gives one.
    pub fn of(&self, axis: Axis, value: &str) -> Option<&str> {
        self.axes
            .get(&axis)?
            .iter()
            .find(|(glob, _)| crate::glob::matches(glob, value))
            .map(|(_, label)| label.as_str())
    }

    /// The scenario's label of a test's metric, if it gives one.
    pub fn metric(&self, test: &TestName, metric: &str) -> Option<&str> {
        self.metrics
            .get(&(test.clone(), metric.to_string()))
            .map(String::as_str)
    }
}

/// `[[report.table]]`: a table of the scenario's own, like the seeds' ("Disk | hdparm |
/// dd | 4K random read"), shown before the per-test tables.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TableSpec {
    pub title: String,
    pub description: Option<String>,
    /// `test.metric` columns, in order, each with the table's own label if given.
    pub columns: Vec<ColumnSpec>,
    /// The axes a row stands for; None: the axes whose values differ among the
    /// table's cells.
    pub rows: Option<Vec<Axis>>,
    /// An axis whose values become columns (boards as rows, storage as columns).
    pub pivot: Option<Axis>,
    /// The cells the table shows (the seed's UASP table: the Pi 4's two cases); None: all.
    pub only: Option<super::CellPattern>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ColumnSpec {
    pub test: TestName,
    pub metric: String,
    pub label: Option<String>,
}

/// What a comparison's headline percentage is a percentage of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Percent {
    /// `(c - b) / |b|`: the ratio of means minus 1 (the default).
    #[default]
    OfBaseline,
    /// `(c - b) / ((c + b) / 2)`: the difference over the mean of both means, the
    /// convention of the first seed's UASP table (172.13 -> 296.71 MB/s is "53%").
    OfMean,
}

impl Percent {
    /// The names `percent = "..."` takes, in the order help lists them.
    pub const NAMES: [&'static str; 2] = ["of-baseline", "of-mean"];

    /// The name in a scenario and in report.json.
    pub fn name(self) -> &'static str {
        match self {
            Percent::OfBaseline => "of-baseline",
            Percent::OfMean => "of-mean",
        }
    }

    pub fn parse(name: &str) -> Option<Percent> {
        match name {
            "of-baseline" => Some(Percent::OfBaseline),
            "of-mean" => Some(Percent::OfMean),
            _ => None,
        }
    }

    /// What a percentage of this convention is of, as a row says it.
    pub fn words(self) -> &'static str {
        match self {
            Percent::OfBaseline => "of the baseline",
            Percent::OfMean => "of the mean of both",
        }
    }
}

/// A label as rows show it: with the value's name after it when other names share it
/// (`Pi 4 (pi4-1)`), unless it is the name itself.
pub fn kept_apart(label: &str, name: &str, sharing: &BTreeSet<&str>) -> String {
    if sharing.len() > 1 && label != name {
        format!("{label} ({name})")
    } else {
        label.to_string()
    }
}
