//! The scenario's `[report.labels]` and `[[report.table]]`: labels for axis values and
//! metrics, and tables of the scenario's own (columns `test.metric`, rows, a pivot).

use std::collections::{BTreeMap, BTreeSet};

use toml::Spanned;

use super::Known;
use super::compare::compare_metric;
use crate::config::recipe::check_label;
use crate::config::{Source, names, raw};
use crate::diag::Diagnostic;
use crate::model::{
    AS_IS, Axis, ColumnSpec, Filesystem, FsName, Image, ImageName, Labels, Matrix, ReportSpec,
    TableSpec,
};

/// The most `[[report.table]]` entries, and columns per table: a report is read by
/// people, and each is work per cell.
const MAX_TABLES: usize = 32;
const MAX_COLUMNS: usize = 64;

/// What the `[report]` checks read of the scenario beside the table itself.
pub(super) struct ReportContext<'a> {
    pub src: &'a Source,
    pub matrix: &'a Matrix,
    pub images: &'a BTreeMap<ImageName, Image>,
    pub filesystems: &'a BTreeMap<FsName, Filesystem>,
    /// A selected board's file is broken: checks against board values are left out.
    pub selected_broken: bool,
    pub known: &'a Known<'a>,
}

pub(super) fn spec(
    cx: &ReportContext<'_>,
    raw: &raw::Report,
    diags: &mut Vec<Diagnostic>,
) -> ReportSpec {
    let ReportContext {
        src,
        matrix,
        selected_broken,
        known,
        ..
    } = *cx;
    let labels = match &raw.labels {
        Some(l) => labels(cx, l.get_ref(), diags),
        None => Labels::default(),
    };
    if raw.table.len() > MAX_TABLES {
        diags.push(src.at_value(
            &raw.table[MAX_TABLES],
            format!(
                "{} [[report.table]] entries; at most {MAX_TABLES}",
                raw.table.len()
            ),
        ));
    }
    let axes = super::compare::axes(matrix, selected_broken, known);
    let tables = raw
        .table
        .iter()
        .take(MAX_TABLES)
        .filter_map(|t| table(src, t, matrix, known, &axes, diags))
        .collect();
    ReportSpec { labels, tables }
}

/// Entries of a label table in the order the file gives them (its keys sort by name).
fn in_file_order(
    table: &BTreeMap<Spanned<String>, Spanned<String>>,
) -> Vec<(&Spanned<String>, &Spanned<String>)> {
    let mut v: Vec<_> = table.iter().collect();
    v.sort_by_key(|(k, _)| k.span().start);
    v
}

fn labels(cx: &ReportContext<'_>, raw: &raw::Labels, diags: &mut Vec<Diagnostic>) -> Labels {
    let ReportContext {
        src,
        matrix,
        images,
        filesystems,
        selected_broken,
        known,
    } = *cx;
    let image_names: Vec<&str> = images.keys().map(ImageName::as_str).collect();
    let fs_names: Vec<&str> = std::iter::once(AS_IS)
        .chain(filesystems.keys().map(FsName::as_str))
        .collect();
    let boards = known.board_values(matrix);
    let storages: Vec<&str> = known
        .storage_names(&matrix.board_patterns)
        .into_iter()
        .collect();
    // The links the matrix names: its patterns as written, and the selected boards'
    // links (a report's boards may be gone, leaving only the patterns).
    let mut networks: Vec<&str> = matrix.network.iter().map(String::as_str).collect();
    networks.extend(
        known
            .boards
            .iter()
            .filter(|(b, _)| boards.contains(&b.as_str()))
            .flat_map(|(_, b)| b.network.iter().map(|n| n.name.as_str())),
    );
    let mut out = Labels::default();
    for (axis, table, candidates, skip) in [
        (Axis::Image, &raw.image, image_names, false),
        (Axis::Board, &raw.board, boards, selected_broken),
        (Axis::Storage, &raw.storage, storages, selected_broken),
        (Axis::Filesystem, &raw.filesystem, fs_names, false),
        (Axis::Network, &raw.network, networks, selected_broken),
    ] {
        let mut entries = Vec::new();
        for (glob, label) in in_file_order(table) {
            check_label(src, label, "label", diags);
            if !skip
                && !candidates
                    .iter()
                    .any(|c| names::glob_match(glob.get_ref(), c))
            {
                let what = format!("{} values", axis.name());
                diags.push(
                    src.at_value(
                        glob,
                        format!(
                            "{} `{}` in [report.labels] matches nothing",
                            axis.name(),
                            glob.get_ref()
                        ),
                    )
                    .with_help(names::help_for(
                        glob.get_ref(),
                        candidates.iter().copied(),
                        &what,
                    )),
                );
            }
            entries.push((glob.get_ref().clone(), label.get_ref().trim().to_string()));
        }
        if !skip {
            shared_labels(src, axis, table, &candidates, diags);
        }
        if !entries.is_empty() {
            out.axes.insert(axis, entries);
        }
    }
    for (key, label) in in_file_order(&raw.metric) {
        check_label(src, label, "label", diags);
        if let Some(tm) = compare_metric(src, key, matrix, known, diags) {
            out.metrics.insert(tm, label.get_ref().trim().to_string());
        }
    }
    out
}

/// A label the axis's globs give two values of the scenario ("pi4-*" = "Pi 4" over three
/// boards): the report keeps their rows apart with each value's name after the label
/// (`model::kept_apart`), and check says so, at the first glob giving it.
fn shared_labels(
    src: &Source,
    axis: Axis,
    table: &BTreeMap<Spanned<String>, Spanned<String>>,
    candidates: &[&str],
    diags: &mut Vec<Diagnostic>,
) {
    const MOST: usize = 4;
    let entries = in_file_order(table);
    let values: BTreeSet<&str> = candidates.iter().copied().collect();
    // label -> (the values it names, the first glob in the file giving it).
    let mut by_label: BTreeMap<&str, (BTreeSet<&str>, &Spanned<String>)> = BTreeMap::new();
    for v in values {
        let Some((glob, label)) = entries
            .iter()
            .find(|(g, _)| names::glob_match(g.get_ref(), v))
        else {
            continue;
        };
        let e = by_label
            .entry(label.get_ref().trim())
            .or_insert((BTreeSet::new(), glob));
        e.0.insert(v);
        if glob.span().start < e.1.span().start {
            e.1 = glob;
        }
    }
    for (label, (values, glob)) in by_label {
        if values.len() < 2 {
            continue;
        }
        let mut shown: Vec<String> = values
            .iter()
            .take(MOST)
            .map(|v| format!("`{}`", crate::model::kept_apart(label, v, &values)))
            .collect();
        if values.len() > MOST {
            shown.push(format!("and {} more", values.len() - MOST));
        }
        diags.push(
            src.at_value(
                glob,
                format!(
                    "{} label `{label}` is shared by {} values: rows would look the same, so the report keeps them apart as {}",
                    axis.name(),
                    values.len(),
                    shown.join(", ")
                ),
            )
            .with_help("give each value a label of its own, or keep the shared label and let the report add the names")
            .as_warning(),
        );
    }
}

fn table(
    src: &Source,
    raw: &Spanned<raw::Table>,
    matrix: &Matrix,
    known: &Known,
    axes: &super::matrix::Axes<'_>,
    diags: &mut Vec<Diagnostic>,
) -> Option<TableSpec> {
    let start = diags.len();
    let t = raw.get_ref();
    check_label(src, &t.title, "title", diags);
    if let Some(d) = &t.description
        && let Err(e) = names::control_free(d.get_ref(), true)
    {
        diags.push(src.at_value(d, format!("`description` {e}")));
    }
    let columns_raw = t.columns.get_ref();
    if columns_raw.is_empty() {
        diags.push(
            src.at_value(
                &t.columns,
                "`columns` is empty: the table would show nothing",
            )
            .with_help("list `test.metric` entries, e.g. `columns = [\"disk-4k.random_read\"]`"),
        );
    }
    if columns_raw.len() > MAX_COLUMNS {
        diags.push(src.at_value(
            &t.columns,
            format!(
                "{} columns; a table has at most {MAX_COLUMNS}",
                columns_raw.len()
            ),
        ));
    }
    let mut seen = BTreeSet::new();
    // Each resolved column with the text that named it, for `labels`.
    let mut columns: Vec<(&str, ColumnSpec)> = Vec::new();
    for c in columns_raw.iter().take(MAX_COLUMNS) {
        if !seen.insert(c.get_ref().as_str()) {
            diags.push(src.at_value(c, format!("`{}` is listed twice in `columns`", c.get_ref())));
            continue;
        }
        if let Some((test, metric)) = compare_metric(src, c, matrix, known, diags) {
            columns.push((
                c.get_ref().as_str(),
                ColumnSpec {
                    test,
                    metric,
                    label: None,
                },
            ));
        }
    }
    for (key, label) in in_file_order(&t.labels) {
        check_label(src, label, "label", diags);
        if let Some((_, col)) = columns.iter_mut().find(|(text, _)| *text == key.get_ref()) {
            col.label = Some(label.get_ref().trim().to_string());
        } else if !seen.contains(key.get_ref().as_str()) {
            diags.push(
                src.at_value(
                    key,
                    format!(
                        "a label for `{}`, which is not one of `columns`",
                        key.get_ref()
                    ),
                )
                .with_help(names::help_for(
                    key.get_ref(),
                    columns_raw.iter().map(|c| c.get_ref().as_str()),
                    "columns",
                )),
            );
        }
    }
    let columns: Vec<ColumnSpec> = columns.into_iter().map(|(_, c)| c).collect();
    let axis = |v: &Spanned<String>, diags: &mut Vec<Diagnostic>| {
        let a = Axis::parse(v.get_ref());
        if a.is_none() {
            let all = Axis::ALL.map(Axis::name);
            diags.push(
                src.at_value(
                    v,
                    format!(
                        "unknown axis `{}`; expected one of {}",
                        v.get_ref(),
                        all.map(|a| format!("`{a}`")).join(", ")
                    ),
                )
                .with_help(names::help_for(v.get_ref(), all, "axes")),
            );
        }
        a
    };
    let pivot = t.pivot.as_ref().and_then(|p| axis(p, diags));
    let rows = t.rows.as_ref().map(|r| {
        let mut out: Vec<Axis> = Vec::new();
        if r.get_ref().is_empty() {
            diags.push(
                src.at_value(r, "`rows` is empty: name the axes a row stands for")
                    .with_help("e.g. `rows = [\"board\", \"storage\"]`, or leave `rows` out for the axes that vary"),
            );
        }
        for v in r.get_ref() {
            let Some(a) = axis(v, diags) else { continue };
            if out.contains(&a) {
                diags.push(src.at_value(v, format!("`{}` is listed twice in `rows`", v.get_ref())));
            } else if Some(a) == pivot {
                diags.push(
                    src.at_value(
                        v,
                        format!("`{}` is the pivot: its values are the columns, so it cannot also name rows", v.get_ref()),
                    ),
                );
            } else {
                out.push(a);
            }
        }
        out
    });
    let only = t
        .only
        .as_ref()
        .map(|p| super::matrix::pattern(src, p, axes, "`only`", diags));
    if diags.len() > start {
        return None;
    }
    Some(TableSpec {
        title: t.title.get_ref().trim().to_string(),
        description: t.description.as_ref().map(|d| d.get_ref().clone()),
        columns,
        rows,
        pivot,
        only,
    })
}
