//! What a Markdown table says once instead of in every cell (as hyperfine's
//! `--export-markdown` does): the unit in the column's header, n under the table when
//! every value has the same, one footnote mark per kind of validity flag, warning and
//! outliers, and an axis whose labels all name one model shown by its values' names,
//! with the model said once. The legend under the table explains each.

use super::cells::View;
use super::sections::flag_words;

/// The marks of one table: a footnote number per flag, then per warning, in name order,
/// then one for outliers.
pub(super) struct Marks {
    flags: Vec<String>,
    warnings: Vec<String>,
}

/// `n` as superscript digits: the footnote mark `¹`, `¹²`.
pub(super) fn superscript(n: usize) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    n.to_string()
        .bytes()
        .map(|b| DIGITS[usize::from(b - b'0')])
        .collect()
}

impl Marks {
    /// The kinds the table's measured cells raised.
    pub(super) fn of(views: &[&View]) -> Marks {
        let (mut flags, mut warnings) = (Vec::new(), Vec::new());
        for v in views.iter().filter(|v| v.measured() > 0) {
            flags.extend(v.flags.iter().cloned());
            warnings.extend(v.warnings.iter().cloned());
        }
        for all in [&mut flags, &mut warnings] {
            all.sort();
            all.dedup();
        }
        Marks { flags, warnings }
    }

    fn outlier_mark(&self) -> usize {
        self.flags.len() + self.warnings.len() + 1
    }

    /// Appends the marks of a value of `view` with `outliers` outliers to `out`.
    pub(super) fn push(&self, view: &View, outliers: usize, out: &mut String) {
        let mut marks: Vec<usize> = Vec::new();
        for f in &view.flags {
            if let Ok(i) = self.flags.binary_search(f) {
                marks.push(i + 1);
            }
        }
        for w in &view.warnings {
            if let Ok(i) = self.warnings.binary_search(w) {
                marks.push(self.flags.len() + i + 1);
            }
        }
        if outliers > 0 {
            marks.push(self.outlier_mark());
        }
        marks.sort_unstable();
        marks.dedup();
        for (i, m) in marks.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&superscript(*m));
        }
    }

    /// The legend's lines for the marks: each kind the table's values carry, and
    /// whether its runs count.
    pub(super) fn legend(&self, views: &[&View], any_outliers: bool) -> Vec<String> {
        let mut out = Vec::new();
        for (i, f) in self.flags.iter().enumerate() {
            let with: Vec<&&View> = views.iter().filter(|v| v.flags.contains(f)).collect();
            let left_out = with.iter().filter(|v| v.excluded).count();
            let fate = match left_out {
                0 => "kept in the statistics",
                n if n == with.len() => "left out of the statistics",
                _ => "kept in or left out of the statistics as each cell's method says",
            };
            out.push(format!(
                "{} some runs: {} ({fate}).",
                superscript(i + 1),
                flag_words(f)
            ));
        }
        for (i, w) in self.warnings.iter().enumerate() {
            out.push(format!(
                "{} some runs: {} (kept in the statistics).",
                superscript(self.flags.len() + i + 1),
                flag_words(w)
            ));
        }
        if any_outliers {
            out.push(format!(
                "{} outliers among the runs (kept in the statistics).",
                superscript(self.outlier_mark())
            ));
        }
        if !out.is_empty() {
            out.push("Validity warnings count them per cell.".into());
        }
        out
    }
}

/// An axis column's cells: the rows' labels, or their values' names when every label
/// is one model followed by the value's name (`Pi 4 (pi4-1)`, as labels keep two
/// values apart) and there are two names or more, with that model said once in the
/// legend (`pi4-1, pi4-2: Pi 4.`).
pub(super) fn axis_cells(rows: &[(&str, &str)]) -> (Vec<String>, Option<String>) {
    let as_labels = || (rows.iter().map(|(_, l)| l.to_string()).collect(), None);
    let base = |(name, label): &(&str, &str)| -> Option<String> {
        let stripped = label.strip_suffix(&format!(" ({name})"))?;
        (!stripped.is_empty()).then(|| stripped.to_string())
    };
    let Some(first) = rows.first().and_then(base) else {
        return as_labels();
    };
    if !rows
        .iter()
        .all(|r| base(r).as_deref() == Some(first.as_str()))
    {
        return as_labels();
    }
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in rows {
        if !names.contains(name) {
            names.push(name);
        }
    }
    if names.len() < 2 {
        return as_labels();
    }
    (
        rows.iter().map(|(n, _)| n.to_string()).collect(),
        Some(format!("{}: {first}.", names.join(", "))),
    )
}

#[cfg(test)]
mod tests {
    use super::{axis_cells, superscript};

    #[test]
    fn marks_are_superscript_numbers() {
        assert_eq!(superscript(1), "¹");
        assert_eq!(superscript(12), "¹²");
    }

    /// Labels of one model are shown by name, the model said once; mixed models or
    /// labels without a name stay as they are.
    #[test]
    fn an_axis_of_one_model_is_shown_by_name() {
        let rows = [
            ("lab-1", "lab board (lab-1)"),
            ("lab-2", "lab board (lab-2)"),
        ];
        let (cells, note) = axis_cells(&rows);
        assert_eq!(cells, ["lab-1", "lab-2"]);
        assert_eq!(note.as_deref(), Some("lab-1, lab-2: lab board."));
        let mixed = [("a", "Pi 4 (a)"), ("b", "Pi 5 (b)")];
        assert_eq!(axis_cells(&mixed).0, ["Pi 4 (a)", "Pi 5 (b)"]);
        let plain = [("ext4", "ext4"), ("xfs", "xfs")];
        assert_eq!(
            axis_cells(&plain),
            (vec!["ext4".into(), "xfs".into()], None)
        );
    }
}
