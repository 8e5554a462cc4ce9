//! What rows call a configuration: per axis value a label people know ("Raspberry Pi 4
//! Model B", "Kingston A400 SSD, with UASP") rather than a file name. The scenario's
//! `[report.labels]` come first; otherwise a board is its model and a storage its model,
//! both as the cell's stored inputs have them (so a board file is not needed). A label
//! two different values share, the scenario's or a default, gets the value's name after
//! it: two rows never look the same.

use std::collections::{BTreeMap, BTreeSet};

use crate::canonical::CellInputs;

use super::cells::View;
use crate::model::{Axis, Labels, kept_apart};
use crate::plan::Address;

/// The value of an axis in an address; `—` for a test without storage, filesystem or
/// network.
pub(super) fn value(axis: Axis, a: &Address) -> &str {
    let text = match axis {
        Axis::Image => Some(a.image.as_str()),
        Axis::Board => Some(a.board.as_str()),
        Axis::Storage => a.storage.as_ref().map(crate::model::StorageName::as_str),
        Axis::Filesystem => a.filesystem.as_ref().map(crate::model::FsName::as_str),
        Axis::Network => a.network.as_ref().map(crate::model::NetworkName::as_str),
    };
    text.unwrap_or("—")
}

/// Labels of every axis value the report's cells have.
pub(super) struct AxisLabels {
    /// axis -> the value's identity -> label. A storage's identity is its board and
    /// name, since two boards may name different media alike (other axes' board is "").
    /// Nested, so that a lookup borrows the address's strings.
    labels: Labelled,
}

type Labelled = BTreeMap<Axis, BTreeMap<String, BTreeMap<String, String>>>;

fn put(out: &mut Labelled, axis: Axis, board: &str, name: &str, label: String) {
    out.entry(axis)
        .or_default()
        .entry(board.to_string())
        .or_default()
        .insert(name.to_string(), label);
}

fn get<'l>(labels: &'l Labelled, axis: Axis, board: &str, name: &str) -> Option<&'l String> {
    labels.get(&axis)?.get(board)?.get(name)
}

/// The model a cell's stored inputs give its board or storage, if any.
fn stored_model(inputs: &CellInputs, axis: Axis) -> Option<String> {
    let pointer = match axis {
        Axis::Board => "/board/model",
        Axis::Storage => "/storage/model",
        _ => return None,
    };
    let m = inputs.text(pointer)?.trim();
    (!m.is_empty()).then(|| crate::shown::shown(m).into_owned())
}

impl AxisLabels {
    pub fn new(labels: &Labels, views: &[View]) -> AxisLabels {
        let mut out: Labelled = BTreeMap::new();
        for axis in Axis::ALL {
            // value identity -> (its name, its label: the scenario's, else the default).
            let mut chosen: BTreeMap<(&str, &str), (&str, String)> = BTreeMap::new();
            // Cells come in report order, a board's together: most repeat the identity
            // before them, which the first one already settled.
            let mut last: Option<(&str, &str)> = None;
            for v in views {
                let a = v.address();
                let name = value(axis, a);
                let board = if axis == Axis::Storage {
                    a.board.as_str()
                } else {
                    ""
                };
                if last.replace((board, name)) == Some((board, name)) {
                    continue;
                }
                if name == "—" {
                    put(&mut out, axis, board, name, name.to_string());
                    continue;
                }
                if chosen.contains_key(&(board, name)) {
                    continue;
                }
                let label = match labels.of(axis, name) {
                    Some(l) => l.to_string(),
                    None => stored_model(&v.cell.inputs, axis).unwrap_or_else(|| name.to_string()),
                };
                chosen.insert((board, name), (name, label));
            }
            // A label two different names share, the scenario's ("pi4-*" = "Pi 4") or a
            // default (two boards of one model), says which is which: rows never look
            // the same.
            let mut names_of: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
            for (name, label) in chosen.values() {
                names_of.entry(label).or_default().insert(name);
            }
            for ((board, id), (name, label)) in &chosen {
                put(
                    &mut out,
                    axis,
                    board,
                    id,
                    kept_apart(label, name, &names_of[label.as_str()]),
                );
            }
        }
        AxisLabels { labels: out }
    }

    /// The label of an address's value on `axis`.
    pub fn of(&self, axis: Axis, a: &Address) -> String {
        self.label(axis, a).to_string()
    }

    /// `of`, borrowed.
    fn label<'s>(&'s self, axis: Axis, a: &'s Address) -> &'s str {
        let board = if axis == Axis::Storage {
            a.board.as_str()
        } else {
            ""
        };
        let name = value(axis, a);
        get(&self.labels, axis, board, name).map_or(name, String::as_str)
    }

    /// A row's label: its axes' labels, joined as the seeds write them.
    pub fn row(&self, axes: &[Axis], a: &Address) -> String {
        let mut out = String::new();
        for (i, x) in axes.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(self.label(*x, a));
        }
        out
    }
}
