//! Input files given as text, not read from a workspace: the same validation as
//! `load_with` (boards, the workspace's recipes over the built-in ones, scenarios with
//! the plan's checks), with nothing listed or read from disk for them. The fuzz targets
//! (`crate::fuzzing`) load their inputs through it, thousands of times a second: the
//! built-in recipes, the same text every time, are validated once per process.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::{
    Gathered, Loaded, PlanChecks, Source, StoredNames, gather_sources, validate_board,
    validate_built_in, validate_own_recipe, validate_with, with_built_ins,
};
use crate::diag::{Diagnostic, Diagnostics};
use crate::model::{Recipe, Workspace};

/// Files as (path relative to the workspace root, text): `boards/NAME.toml`,
/// `pipeline/NAME.toml`, `scenarios/NAME.toml`. The path names the file in diagnostics
/// and its stem the board, recipe or scenario, as on disk.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Texts<'a> {
    pub boards: &'a [(&'a str, &'a str)],
    pub pipeline: &'a [(&'a str, &'a str)],
    pub scenarios: &'a [(&'a str, &'a str)],
}

/// Loads `texts` as `load_with` loads a workspace's files, the built-in recipes beside
/// the given ones.
pub(crate) fn load(texts: Texts<'_>, checks: &dyn PlanChecks) -> Result<Workspace, Diagnostics> {
    let sources = |files: &[(&str, &str)]| -> Vec<_> {
        files
            .iter()
            .map(|(path, text)| {
                let path = PathBuf::from(path);
                Ok(Source::new(path.clone(), path, (*text).to_string()))
            })
            .collect()
    };
    let mut boards = Gathered::new();
    gather_sources(
        &mut boards,
        sources(texts.boards).into_iter(),
        "board",
        validate_board,
    );
    let mut own = Gathered::new();
    gather_sources(
        &mut own,
        sources(texts.pipeline).into_iter(),
        "recipe",
        validate_own_recipe(),
    );
    let loaded = Loaded {
        boards,
        recipes: with_built_ins(own, |src, diags| {
            let (recipe, found) = &built_in()[src.stem.as_str()];
            diags.extend(found.iter().cloned());
            recipe.clone()
        }),
    };
    validate_with(
        Path::new("."),
        loaded,
        sources(texts.scenarios),
        &StoredNames::default(),
        checks,
    )
}

/// A recipe as validation gave it, with its diagnostics.
type Validated = (Option<Recipe>, Vec<Diagnostic>);

/// Each built-in recipe as `validate_built_in` gives it (and its diagnostics), by name:
/// made once, from the same source `with_built_ins` validates.
fn built_in() -> &'static BTreeMap<&'static str, Validated> {
    static VALIDATED: OnceLock<BTreeMap<&'static str, Validated>> = OnceLock::new();
    VALIDATED.get_or_init(|| {
        let mut validate = validate_built_in();
        super::builtin::RECIPES
            .iter()
            .map(|(name, text)| {
                let shown = super::builtin::shown_path(name);
                let src = Source::new(shown.clone(), shown, (*text).to_string());
                let mut diags = Vec::new();
                let recipe = validate(&src, &mut diags);
                (*name, (recipe, diags))
            })
            .collect()
    })
}
