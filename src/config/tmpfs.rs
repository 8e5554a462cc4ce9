//! A recipe's `[tmpfs]`: its `size`, checked when the recipe loads (whole MiB as an
//! integer, or a template of the recipe's parameters giving MiB or `N%` of the RAM,
//! rendered with the defaults) and again with each scenario's parameters, so that a
//! size out of bounds is an error at its file:line:col, never a failed mount.

use std::collections::BTreeMap;

use toml::Spanned;

use super::{Source, raw, template};
use crate::diag::Diagnostic;
use crate::model::{Needs, ParamValue, Recipe, Side, TmpfsSpec};
use crate::storage::tmpfs::{self, MAX_MIB, MAX_PERCENT};

const HELP: &str = "`size` is whole MiB (`size = 64`), a share of the board's RAM (`size = \"50%\"`), or a template of the recipe's parameters giving one (`size = \"{{ size_mib + 8 }}\"`)";

/// `[tmpfs]` of a recipe whose parameters are `params` (their defaults).
pub(super) fn validate(
    src: &Source,
    raw: Option<&Spanned<raw::Tmpfs>>,
    params: &BTreeMap<String, ParamValue>,
    diags: &mut Vec<Diagnostic>,
) -> Option<TmpfsSpec> {
    let size = &raw?.get_ref().size;
    let text = match size.get_ref() {
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::String(s) => {
            let template = Spanned::new(size.span(), s.clone());
            let allowed = params.keys().cloned().collect();
            template::check(src, &template, &allowed, diags)?;
            s.clone()
        }
        other => {
            diags.push(
                src.at_value(
                    size,
                    format!("`size` = {other}: expected an integer or a string"),
                )
                .with_help(HELP),
            );
            return None;
        }
    };
    if let Err(e) = tmpfs::resolve(&text, params) {
        diags.push(
            src.at_value(size, format!("bad tmpfs `size`: {e}"))
                .with_help(format!("{HELP}; at most {MAX_MIB} MiB or {MAX_PERCENT}%")),
        );
        return None;
    }
    Some(TmpfsSpec { size: text })
}

/// The recipe's tmpfs size with a scenario's `[params.<test>]`: an override that makes
/// it unusable is refused at the table that sets it.
pub(super) fn check_params(
    src: &Source,
    at: &Spanned<String>,
    recipe: &Recipe,
    overrides: &BTreeMap<String, ParamValue>,
    diags: &mut Vec<Diagnostic>,
) {
    let Some(spec) = &recipe.tmpfs else { return };
    let mut params = recipe.params.clone();
    params.extend(overrides.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Err(e) = tmpfs::resolve(&spec.size, &params) {
        diags.push(
            src.at_value(
                at,
                format!(
                    "with these parameters the tmpfs of `{}` is unusable: {e}",
                    recipe.name
                ),
            )
            .with_help(format!(
                "{} sizes its tmpfs as `{}`: at most {MAX_MIB} MiB or {MAX_PERCENT}% of the RAM",
                recipe.file.display(),
                spec.size
            )),
        );
    }
}

/// A command using `{{ tmpfs }}` in a recipe without `[tmpfs]`: nothing would be mounted
/// there.
pub(super) fn refuse_use_without_table(
    src: &Source,
    command: &Spanned<String>,
    used: &std::collections::BTreeSet<String>,
    has_table: bool,
    diags: &mut Vec<Diagnostic>,
) {
    if has_table || !used.contains("tmpfs") {
        return;
    }
    let span = template::word_span(&src.text, command.span(), "tmpfs");
    diags.push(
        src.at(span, "`tmpfs` is the cell's own tmpfs, but this recipe has no `[tmpfs]`")
            .with_help("add `[tmpfs]` with its `size` in MiB (e.g. `size = 64`), and benchpipe mounts it before the setup and unmounts it after the teardown"),
    );
}

/// benchpipe itself mounts and unmounts the tmpfs on the board: its commands join the
/// board's needs.
pub(super) fn add_needs(tmpfs: Option<&TmpfsSpec>, needs: &mut BTreeMap<Side, Needs>) {
    if tmpfs.is_none() {
        return;
    }
    let board = needs.entry(Side::Board).or_default();
    for c in ["mount", "umount", "findmnt", "mountpoint"] {
        if !board.commands.iter().any(|have| have == c) {
            board.commands.push(c.to_string());
        }
    }
}
