//! A per-member metric's columns: one per member of the table's systems under test.

use crate::plan::Cell;

/// The recipe's metrics with each `per_member` one as a column per member (`rate@pi-1`),
/// members in the order the table's cells name them (a cluster's order; a board is
/// its own only member).
pub(super) fn per_member_columns(
    recipe: &crate::model::Recipe,
    cells: &[&Cell],
) -> Vec<crate::model::MetricSpec> {
    use crate::model::{MemberMetric, member_metric};
    if recipe
        .metrics
        .iter()
        .all(|m| m.member != MemberMetric::Each)
    {
        // Most recipes: no member's name is needed, and a big table has many cells.
        return recipe.metrics.clone();
    }
    let mut members: Vec<String> = Vec::new();
    for c in cells {
        let names: Vec<String> = match &c.cluster {
            Some(cl) => cl.members.iter().map(ToString::to_string).collect(),
            None => vec![c.address.board.to_string()],
        };
        for n in names {
            if !members.contains(&n) {
                members.push(n);
            }
        }
    }
    let mut out = Vec::new();
    for m in &recipe.metrics {
        if m.member != MemberMetric::Each {
            out.push(m.clone());
            continue;
        }
        for member in &members {
            out.push(crate::model::MetricSpec {
                name: member_metric(&m.name, member),
                label: m.label.as_ref().map(|l| format!("{l} ({member})")),
                member: MemberMetric::Whole,
                primary: false,
                ..m.clone()
            });
        }
    }
    out
}
