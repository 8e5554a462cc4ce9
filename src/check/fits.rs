//! What a scenario's cells ask of their boards that the board files say they cannot
//! give: an image whose `uname_m` the board's CPU does not run (its `arch`), and a
//! cell's tmpfs larger than the board's declared `memory` holds. Both are errors at
//! the scenario's file:line:col, before anything runs, rather than a refused mount or a
//! board that never comes back from its flash.

use std::collections::BTreeSet;

use toml::Spanned;

use crate::config::{Known, Source, raw};
use crate::diag::Diagnostic;
use crate::model::{Board, TmpfsSize};
use crate::plan::Plan;
use crate::storage::tmpfs::MAX_PERCENT;

/// The parts of the scenario file the errors point into.
#[derive(Clone, Copy)]
pub(super) struct Raw<'a> {
    pub images: &'a std::collections::BTreeMap<Spanned<String>, Spanned<raw::Image>>,
    pub params: &'a crate::config::RawParams,
    pub matrix: &'a Spanned<raw::Matrix>,
}

/// Each (image, board) pair of the plan whose image the board cannot run, and each
/// (test, board) whose tmpfs does not fit the board, once, at the value that asks it.
pub(super) fn check(
    src: &Source,
    raw: Raw<'_>,
    plan: &Plan,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) {
    let mut arch_seen = BTreeSet::new();
    let mut memory_seen = BTreeSet::new();
    for cell in &plan.cells {
        let members: Vec<&Board> = match &cell.cluster {
            Some(c) => c
                .members
                .iter()
                .filter_map(|m| known.boards.get(m))
                .collect(),
            None => known.boards.get(&cell.address.board).into_iter().collect(),
        };
        if let Some(want) = &cell.image.expect.uname_m {
            for board in &members {
                if !board.arch.is_empty()
                    && !board.arch.contains(want)
                    && arch_seen.insert((cell.image.name.clone(), board.name.clone()))
                {
                    diags.push(arch_refused(src, raw, &cell.image.name.0, want, board));
                }
            }
        }
        // A cluster's cells mount no tmpfs of their own on a member.
        if cell.cluster.is_some() {
            continue;
        }
        let (Some(TmpfsSize::Mib(mib)), Some(board)) = (cell.tmpfs, members.first()) else {
            continue;
        };
        let Some(memory) = board.memory_mib else {
            continue;
        };
        let most = memory.saturating_mul(MAX_PERCENT) / 100;
        if mib > most && memory_seen.insert((cell.address.test.clone(), board.name.clone())) {
            diags.push(memory_refused(
                src,
                raw,
                &cell.address.test.0,
                mib,
                most,
                board,
                known,
            ));
        }
    }
}

fn arch_refused(src: &Source, raw: Raw<'_>, image: &str, want: &str, board: &Board) -> Diagnostic {
    let message = format!(
        "image `{image}` runs `{want}` (its `uname_m`), which board `{}` cannot run: {} declares arch = [{}]",
        board.name,
        board.file.display(),
        quoted(&board.arch)
    );
    let help = format!(
        "give `arch` every `uname -m` word the board's CPU runs (a Cortex-A53 or A72 runs [\"aarch64\", \"armv7l\"]), or exclude the pair: {{ image = \"{image}\", board = \"{}\" }}",
        board.name
    );
    // At the image's `uname_m`; an image of the scenario always has its table.
    let at = raw
        .images
        .iter()
        .find(|(k, _)| k.get_ref() == image)
        .map(|(k, v)| {
            v.get_ref()
                .expect
                .as_ref()
                .and_then(|e| e.uname_m.as_ref())
                .map_or(k.span(), Spanned::span)
        });
    match at {
        Some(span) => src.at(span, message),
        None => src.at_value(raw.matrix, message),
    }
    .with_help(help)
}

fn memory_refused(
    src: &Source,
    raw: Raw<'_>,
    test: &str,
    mib: u64,
    most: u64,
    board: &Board,
    known: &Known,
) -> Diagnostic {
    let message = format!(
        "the tmpfs of `{test}` takes {mib} MiB, more than board `{}` can hold: {} declares memory = \"{}\", and a tmpfs may take at most {MAX_PERCENT}% of it ({most} MiB)",
        board.name,
        board.file.display(),
        board.memory.as_deref().unwrap_or_default()
    );
    let sized_as = known
        .recipes
        .get(&crate::model::TestName::new(test))
        .and_then(|r| {
            r.tmpfs
                .as_ref()
                .map(|t| (r.file.display().to_string(), t.size.clone()))
        });
    let help = match sized_as {
        Some((file, size)) => format!(
            "{file} sizes its tmpfs as `{size}`: set a smaller size in [params.{test}], or exclude board `{}` from `{test}`",
            board.name
        ),
        None => format!("exclude board `{}` from `{test}`", board.name),
    };
    // At `[params.TEST]` when the scenario sets the size there, else at the test's
    // name in the matrix (or in the include that brings it in).
    let m = raw.matrix.get_ref();
    let span = raw
        .params
        .keys()
        .find(|k| k.get_ref() == test)
        .map(Spanned::span)
        .or_else(|| {
            m.test
                .iter()
                .find(|t| t.get_ref() == test)
                .map(Spanned::span)
        })
        .or_else(|| {
            m.include
                .iter()
                .filter_map(|i| i.get_ref().test.as_ref())
                .find(|t| t.get_ref() == test)
                .map(Spanned::span)
        })
        .unwrap_or(raw.matrix.span());
    src.at(span, message).with_help(help)
}

fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(", ")
}
