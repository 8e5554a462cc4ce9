//! Validates what a recipe says per side: `[needs]` (flat for a recipe on one side,
//! `[needs.board]` / `[needs.controller]` for one on both) and `[facts]` commands.

use std::collections::{BTreeMap, BTreeSet};

use toml::Spanned;

use super::{Source, names, raw, recipe, template};
use crate::diag::Diagnostic;
use crate::model::{FactSpec, Needs, PackageManager, Side};

/// Variables a `[facts]` command may use: facts are gathered once per board and recipe,
/// before any cell, so nothing of a cell (its storage, parameters or run) exists yet.
pub const FACT_VARIABLES: [&str; 4] = ["workdir", "controller_dir", "board", "host"];

fn side_name(side: Side) -> &'static str {
    side.name()
}

/// Each side's needs. `sides` are the sides the recipe's steps and services run on.
pub fn needs(
    src: &Source,
    raw: Option<&raw::Needs>,
    sides: &BTreeSet<Side>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<Side, Needs> {
    let mut out = BTreeMap::new();
    let Some(raw) = raw else { return out };
    // The flat key written first, where an error about the flat form points.
    let flat_lists = [
        (PackageManager::Apt, raw.apt.as_ref()),
        (PackageManager::Dnf, raw.dnf.as_ref()),
        (PackageManager::Apk, raw.apk.as_ref()),
        (PackageManager::Pacman, raw.pacman.as_ref()),
    ];
    let flat_at = flat_lists
        .iter()
        .map(|(_, l)| l.map(Spanned::span))
        .chain([
            raw.commands.as_ref().map(Spanned::span),
            raw.apt_non_free.as_ref().map(Spanned::span),
        ])
        .flatten()
        .min_by_key(|s| s.start);
    let per_side = [
        (Side::Board, raw.board.as_ref()),
        (Side::Controller, raw.controller.as_ref()),
        (Side::Members, raw.members.as_ref()),
        (Side::Peer, raw.peer.as_ref()),
    ];
    let any_sub_table = per_side.iter().any(|(_, t)| t.is_some());
    if let Some(at) = flat_at {
        let mut packages = BTreeMap::new();
        for (manager, list) in flat_lists {
            if let Some(list) = list {
                packages.insert(
                    manager,
                    recipe::packages_of(src, manager, list.get_ref(), diags),
                );
            }
        }
        let flat = Needs {
            apt_non_free: non_free(
                src,
                raw.apt_non_free.as_ref().map_or(&[][..], |v| v.get_ref()),
                raw.apt.as_ref().map_or(&[][..], |v| v.get_ref()),
                diags,
            ),
            packages,
            commands: words(
                src,
                raw.commands.as_ref().map_or(&[][..], |v| v.get_ref()),
                diags,
            ),
        };
        if any_sub_table {
            diags.push(
                src.at(at, "`[needs]` mixes flat `apt`/`commands` with `[needs.board]` or `[needs.controller]`")
                    .with_help("move these keys into `[needs.board]` or `[needs.controller]`"),
            );
        } else if sides.len() > 1 {
            diags.push(
                src.at(at, "a flat `[needs]` in a recipe that runs on both the board and the controller: it would install everything on both sides")
                    .with_help("split it into `[needs.board]` and `[needs.controller]`, each with its own package lists and `commands`"),
            );
        } else if let Some(side) = sides.iter().next() {
            out.insert(*side, flat);
        }
    }
    for (side, table) in per_side {
        let Some(table) = table else { continue };
        if !sides.contains(&side) {
            let name = side_name(side);
            diags.push(
                src.at_value(
                    table,
                    format!(
                        "`[needs.{name}]`, but no step or service of this recipe runs on the {name}"
                    ),
                )
                .with_help(format!(
                    "remove it, or give the steps that need it `on = \"{name}\"`"
                )),
            );
            continue;
        }
        let t = table.get_ref();
        let mut packages = BTreeMap::new();
        for (manager, list) in [
            (PackageManager::Apt, &t.apt),
            (PackageManager::Dnf, &t.dnf),
            (PackageManager::Apk, &t.apk),
            (PackageManager::Pacman, &t.pacman),
        ] {
            if !list.is_empty() {
                packages.insert(manager, recipe::packages_of(src, manager, list, diags));
            }
        }
        out.insert(
            side,
            Needs {
                packages,
                apt_non_free: non_free(src, &t.apt_non_free, &t.apt, diags),
                commands: words(src, &t.commands, diags),
            },
        );
    }
    out
}

/// `apt_non_free`: where apt may find packages that `apt` names. A name `apt` lacks
/// would install nothing (or, were it taken as a list of its own, skip `apt`'s checks).
fn non_free(
    src: &Source,
    v: &[Spanned<String>],
    apt: &[Spanned<String>],
    diags: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let mut out = Vec::new();
    for s in v {
        let name = s.get_ref();
        if apt.iter().any(|a| a.get_ref() == name) {
            if !out.contains(name) {
                out.push(name.clone());
            }
        } else {
            diags.push(
                src.at_value(
                    s,
                    format!(
                        "`{}` is in `apt_non_free` but not in `apt`",
                        name.escape_debug()
                    ),
                )
                .with_help(
                    "add it to `apt` too: `apt_non_free` only says that apt finds it outside \
                     the distribution's main component (Debian's non-free, Ubuntu's multiverse)",
                ),
            );
        }
    }
    out
}

fn words(src: &Source, v: &[Spanned<String>], diags: &mut Vec<Diagnostic>) -> Vec<String> {
    v.iter()
        .map(|s| {
            if s.get_ref().trim().is_empty() || s.get_ref().contains(char::is_whitespace) {
                diags.push(src.at_value(
                    s,
                    format!(
                        "bad command `{}`: expected one name without spaces",
                        s.get_ref()
                    ),
                ));
            }
            s.get_ref().clone()
        })
        .collect()
}

/// `[facts]`: names, sides and command templates checked as every other command is.
pub fn facts(
    src: &Source,
    raw: &BTreeMap<Spanned<String>, Spanned<raw::Fact>>,
    diags: &mut Vec<Diagnostic>,
) -> Vec<FactSpec> {
    let allowed: BTreeSet<String> = FACT_VARIABLES.iter().map(ToString::to_string).collect();
    let samples = template::sample_builtins();
    let mut out = Vec::new();
    for (key, entry) in raw {
        let name = key.get_ref();
        if !names::is_plain_name(name) {
            diags.push(src.at_value(
                key,
                format!("bad fact name `{name}`: use letters, digits, `-`, `_` and `.`"),
            ));
        }
        let (on, command) = match entry.get_ref() {
            raw::Fact::Command(c) => (None, Spanned::new(entry.span(), c.clone())),
            raw::Fact::Table(t) => (t.on.as_ref(), t.command.clone()),
        };
        if command.get_ref().trim().is_empty() {
            diags.push(src.at_value(
                &command,
                "the fact's command is empty: there is nothing to run",
            ));
        }
        if template::check(src, &command, &allowed, diags).is_some() {
            template::check_rendered(src, &command, &samples, diags);
        }
        out.push(FactSpec {
            name: name.clone(),
            on: recipe::side(src, on, diags),
            command: command.into_inner(),
        });
    }
    out
}
