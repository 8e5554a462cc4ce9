//! What rows call a configuration: per axis value a label people know ("Raspberry Pi 4
//! Model B", "Kingston A400 SSD, with UASP") rather than a file name. The scenario's
//! `[report.labels]` come first; otherwise a board is its model and a storage its model,
//! both as the cell's stored inputs have them (so a board file is not needed), and a
//! label two different values share gets the value's name after it.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::cells::View;
use crate::model::{Axis, Labels};
use crate::plan::Address;

/// The value of an axis in an address; `—` for a test without storage, filesystem or
/// network.
pub(super) fn value(axis: Axis, a: &Address) -> String {
    let text = match axis {
        Axis::Image => Some(a.image.as_str()),
        Axis::Board => Some(a.board.as_str()),
        Axis::Storage => a.storage.as_ref().map(|s| s.as_str()),
        Axis::Filesystem => a.filesystem.as_ref().map(|f| f.as_str()),
        Axis::Network => a.network.as_ref().map(|n| n.as_str()),
    };
    text.unwrap_or("—").to_string()
}

/// Labels of every axis value the report's cells have.
pub(super) struct AxisLabels {
    /// (axis, the value's identity) -> label. A storage's identity is its board and
    /// name, since two boards may name different media alike.
    labels: BTreeMap<(Axis, String, String), String>,
}

/// The model a cell's stored inputs give its board or storage, if any.
fn stored_model(inputs: &Value, axis: Axis) -> Option<String> {
    let field = match axis {
        Axis::Board => "board",
        Axis::Storage => "storage",
        _ => return None,
    };
    let m = inputs.get(field)?.get("model")?.as_str()?.trim();
    (!m.is_empty()).then(|| m.chars().filter(|c| !c.is_control()).collect())
}

impl AxisLabels {
    pub fn new(labels: &Labels, views: &[View]) -> AxisLabels {
        let mut out = BTreeMap::new();
        for axis in Axis::ALL {
            // value identity -> (its name, the default label).
            let mut defaults: BTreeMap<(String, String), (String, String)> = BTreeMap::new();
            for v in views {
                let a = v.address();
                let name = value(axis, a);
                let board = if axis == Axis::Storage {
                    a.board.to_string()
                } else {
                    String::new()
                };
                if name == "—" {
                    out.insert((axis, board, name.clone()), name);
                    continue;
                }
                if let Some(l) = labels.of(axis, &name) {
                    out.insert((axis, board, name), l.to_string());
                    continue;
                }
                let default = stored_model(&v.cell.inputs, axis).unwrap_or_else(|| name.clone());
                defaults
                    .entry((board, name.clone()))
                    .or_insert((name, default));
            }
            // A default label that two different names share says which is which.
            let mut names_of: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
            for (name, label) in defaults.values() {
                names_of.entry(label).or_default().insert(name);
            }
            for ((board, id), (name, label)) in &defaults {
                let text = if names_of[label.as_str()].len() > 1 && label != name {
                    format!("{label} ({name})")
                } else {
                    label.clone()
                };
                out.insert((axis, board.clone(), id.clone()), text);
            }
        }
        AxisLabels { labels: out }
    }

    /// The label of an address's value on `axis`.
    pub fn of(&self, axis: Axis, a: &Address) -> String {
        let board = if axis == Axis::Storage {
            a.board.to_string()
        } else {
            String::new()
        };
        let name = value(axis, a);
        self.labels
            .get(&(axis, board, name.clone()))
            .cloned()
            .unwrap_or(name)
    }

    /// A row's label: its axes' labels, joined as the seeds write them.
    pub fn row(&self, axes: &[Axis], a: &Address) -> String {
        axes.iter()
            .map(|x| self.of(*x, a))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
