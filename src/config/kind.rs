//! Which of benchpipe's three kinds of file a TOML document is (board, recipe or
//! scenario), told by the top-level keys only one kind has: a board file given where a
//! scenario is expected, or a scenario left in `boards/`, is one error that says so
//! rather than a list of "unknown key" errors with no hint.

use toml::de::{DeTable, DeValue};

use super::Source;
use crate::diag::Diagnostic;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Board,
    Recipe,
    Scenario,
}

/// Top-level keys only a board file has (`raw::Board`), the most telling first.
const BOARD: &[&str] = &[
    "ssh", "local", "storage", "model", "flash", "power", "boot", "meter", "network", "arch",
    "memory", "workdir", "thermal", "health", "labgrid",
];
/// Top-level keys only a recipe has (`raw::Recipe`), the most telling first;
/// `description` and `params` are a scenario's too.
const RECIPE: &[&str] = &[
    "run",
    "needs",
    "metrics",
    "uses_storage",
    "uses_network",
    "setup",
    "teardown",
    "services",
    "facts",
    "requires",
    "before_run",
    "parse_regex",
    "param_patterns",
    "exclusive",
    "series",
    "tmpfs",
    "secrets",
];
/// Top-level keys only a scenario has (`raw::Scenario`), the most telling first.
const SCENARIO: &[&str] = &[
    "title",
    "matrix",
    "images",
    "method",
    "report",
    "filesystems",
    "clusters",
];

/// At most this many keys are named as the evidence.
const SHOWN_KEYS: usize = 3;

impl Kind {
    fn markers(self) -> &'static [&'static str] {
        match self {
            Kind::Board => BOARD,
            Kind::Recipe => RECIPE,
            Kind::Scenario => SCENARIO,
        }
    }

    fn a(self) -> &'static str {
        match self {
            Kind::Board => "a board file",
            Kind::Recipe => "a recipe",
            Kind::Scenario => "a scenario",
        }
    }

    /// What a file read as this kind must be.
    fn expected(self) -> &'static str {
        match self {
            Kind::Board => "boards/ holds one file per board",
            Kind::Recipe => "pipeline/ holds one recipe per test",
            Kind::Scenario => {
                "a scenario has a `title` and a [matrix] naming the boards and tests to run (scenarios/*.toml)"
            }
        }
    }

    /// Where a file of this kind belongs instead.
    fn belongs(self) -> &'static str {
        match self {
            Kind::Board => "board files belong in boards/, where every scenario reads them",
            Kind::Recipe => {
                "recipes belong in pipeline/, and a scenario names them in its [matrix] `test` list"
            }
            Kind::Scenario => {
                "scenarios belong outside boards/ and pipeline/ (scenarios/, say) and are given to `check`, `plan` and `apply`"
            }
        }
    }
}

/// When `doc`, read as `expected`, has none of that kind's own keys and some of another
/// kind's, the one diagnostic that says what it is instead.
pub(super) fn misplaced(src: &Source, doc: &DeTable<'_>, expected: Kind) -> Option<Diagnostic> {
    let has = |kind: Kind| -> Vec<String> {
        let mut found: Vec<(usize, String)> = doc
            .iter()
            .filter_map(|(k, v)| {
                let at = kind
                    .markers()
                    .iter()
                    .position(|m| *m == k.get_ref().as_ref())?;
                Some((at, shown_key(k.get_ref(), v.get_ref())))
            })
            .collect();
        found.sort();
        found.into_iter().map(|(_, k)| k).collect()
    };
    if !has(expected).is_empty() {
        return None;
    }
    let (kind, keys) = [Kind::Board, Kind::Recipe, Kind::Scenario]
        .into_iter()
        .filter(|k| *k != expected)
        .map(|k| (k, has(k)))
        .max_by_key(|(_, keys)| keys.len())?;
    if keys.is_empty() {
        return None;
    }
    let evidence = match keys.len().min(SHOWN_KEYS) {
        1 => keys[0].clone(),
        n => format!("{} and {}", keys[..n - 1].join(", "), keys[n - 1]),
    };
    Some(src.whole(format!(
        "this is {} (it has {evidence}), not {}: {}; {}",
        kind.a(),
        expected.a(),
        expected.expected(),
        kind.belongs()
    )))
}

/// `[ssh]` for a table, `[[storage]]` for an array of tables, `model` for a value.
fn shown_key(key: &str, value: &DeValue<'_>) -> String {
    match value {
        DeValue::Table(_) => format!("[{key}]"),
        DeValue::Array(items)
            if !items.is_empty()
                && items
                    .iter()
                    .all(|i| matches!(i.get_ref(), DeValue::Table(_))) =>
        {
            format!("[[{key}]]")
        }
        _ => format!("`{key}`"),
    }
}
