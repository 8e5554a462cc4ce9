//! The scenario's `[matrix]`: each axis checked against what exists, and its include and
//! exclude patterns.

use std::collections::{BTreeMap, BTreeSet};

use toml::Spanned;

use super::Known;
use crate::config::{Source, names, raw};
use crate::diag::Diagnostic;
use crate::model::{
    AS_IS, BoardName, CellPattern, Filesystem, FsName, Image, ImageName, Matrix, TestName,
};

/// Reports an entry that appears twice in one axis; returns whether `value` is new.
fn first_time<'a>(
    src: &Source,
    seen: &mut BTreeSet<&'a str>,
    value: &'a Spanned<String>,
    axis: &str,
    diags: &mut Vec<Diagnostic>,
) -> bool {
    if seen.insert(value.get_ref().as_str()) {
        true
    } else {
        diags.push(src.at_value(
            value,
            format!("`{}` is listed twice in matrix.{axis}", value.get_ref()),
        ));
        false
    }
}

fn empty_axis(
    src: &Source,
    raw: &Spanned<raw::Matrix>,
    values: &[Spanned<String>],
    axis: &str,
    diags: &mut Vec<Diagnostic>,
) {
    if values.is_empty() {
        diags.push(src.at_value(
            raw,
            format!("matrix.{axis} is empty: the matrix would have no cells"),
        ));
    }
}

pub(super) fn matrix(
    src: &Source,
    raw: &Spanned<raw::Matrix>,
    images: &BTreeMap<ImageName, Image>,
    filesystems: &BTreeMap<FsName, Filesystem>,
    clusters: &BTreeSet<BoardName>,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> (Matrix, bool) {
    let m = raw.get_ref();

    // image: names of this scenario's [images].
    empty_axis(src, raw, &m.image, "image", diags);
    let image_names: Vec<&str> = images.keys().map(ImageName::as_str).collect();
    let mut seen = BTreeSet::new();
    let mut image = Vec::new();
    for v in &m.image {
        if !first_time(src, &mut seen, v, "image", diags) {
            continue;
        }
        if images.contains_key(&ImageName::new(v.get_ref().clone())) {
            image.push(ImageName::new(v.get_ref().clone()));
        } else {
            let help = names::help_for(v.get_ref(), image_names.iter().copied(), "images");
            diags.push(
                src.at_value(
                    v,
                    format!(
                        "unknown image `{}`: not defined in this file's [images]",
                        v.get_ref()
                    ),
                )
                .with_help(help),
            );
        }
    }

    // board: globs over boards/ and this file's [clusters].
    empty_axis(src, raw, &m.board, "board", diags);
    let mut all_boards = known.board_names();
    all_boards.extend(clusters.iter().map(BoardName::as_str));
    let mut seen = BTreeSet::new();
    let mut board: Vec<BoardName> = Vec::new();
    let mut board_patterns: Vec<String> = Vec::new();
    for v in &m.board {
        if !first_time(src, &mut seen, v, "board", diags) {
            continue;
        }
        board_patterns.push(v.get_ref().clone());
        let matched: Vec<&str> = all_boards
            .iter()
            .copied()
            .filter(|b| names::glob_match(v.get_ref(), b))
            .collect();
        if matched.is_empty() {
            let list: Vec<String> = all_boards.iter().map(|b| format!("`{b}`")).collect();
            let available = if list.is_empty() {
                "there are no boards in boards/".to_string()
            } else {
                format!("available boards: {}", list.join(", "))
            };
            let mut help = match names::did_you_mean(v.get_ref(), all_boards.iter().copied()) {
                Some(s) => format!("did you mean `{s}`? {available}"),
                None => available,
            };
            if v.get_ref().starts_with("lab-") {
                help.push_str("; lab boards are written by `benchpipe lab up`");
            }
            let what = if names::is_glob(v.get_ref()) {
                "no board matches"
            } else {
                "unknown board"
            };
            diags.push(
                src.at_value(v, format!("{what} `{}`", v.get_ref()))
                    .with_help(help),
            );
        }
        for b in matched {
            let name = BoardName::from(b);
            let exists = known.boards.contains_key(&name) || clusters.contains(&name);
            if exists && !board.contains(&name) {
                board.push(name);
            }
        }
    }
    let include_boards = m.include.iter().filter_map(|p| p.get_ref().board.as_ref());
    let mut selected_broken = false;
    for v in m.board.iter().chain(include_boards) {
        for b in known.broken_boards {
            if names::glob_match(v.get_ref(), b) {
                selected_broken = true;
                known.used_broken_boards.borrow_mut().insert(b.clone());
            }
        }
    }

    // storage: names or globs over the selected boards' storage (for a report, also
    // what the store holds of boards without a file).
    let storage_names = known.storage_names(&board_patterns);
    let mut seen = BTreeSet::new();
    let mut storage = Vec::new();
    for v in &m.storage {
        if !first_time(src, &mut seen, v, "storage", diags) {
            continue;
        }
        if !selected_broken
            && !storage_names
                .iter()
                .any(|s| names::glob_match(v.get_ref(), s))
        {
            let help = names::help_for(
                v.get_ref(),
                storage_names.iter().copied(),
                "storage of the selected boards",
            );
            diags.push(
                src.at_value(
                    v,
                    format!(
                        "storage `{}` matches no storage of the selected boards",
                        v.get_ref()
                    ),
                )
                .with_help(help),
            );
        }
        storage.push(v.get_ref().clone());
    }

    let (network, network_names) =
        network(src, raw, &board, selected_broken, known, &m.test, diags);

    // filesystem: as-is or this file's [filesystems]; as-is alone by default.
    let fs_names: Vec<&str> = std::iter::once(AS_IS)
        .chain(filesystems.keys().map(FsName::as_str))
        .collect();
    let mut filesystem = Vec::new();
    match &m.filesystem {
        None => filesystem.push(FsName::new(AS_IS)),
        Some(list) => {
            empty_axis(src, raw, list, "filesystem", diags);
            let mut seen = BTreeSet::new();
            for v in list {
                if !first_time(src, &mut seen, v, "filesystem", diags) {
                    continue;
                }
                if fs_names.contains(&v.get_ref().as_str()) {
                    filesystem.push(FsName::new(v.get_ref().clone()));
                } else {
                    let help =
                        names::help_for(v.get_ref(), fs_names.iter().copied(), "filesystems");
                    diags.push(
                        src.at_value(v, format!("unknown filesystem `{}`: expected `{AS_IS}` or one defined in [filesystems]", v.get_ref()))
                            .with_help(help),
                    );
                }
            }
        }
    }

    // test: the built-in recipes and the workspace's pipeline/.
    empty_axis(src, raw, &m.test, "test", diags);
    let all_tests = known.test_names();
    let mut seen = BTreeSet::new();
    let mut test = Vec::new();
    for v in &m.test {
        if !first_time(src, &mut seen, v, "test", diags) {
            continue;
        }
        if all_tests.contains(v.get_ref().as_str()) {
            test.push(TestName::new(v.get_ref().clone()));
        } else {
            let help = names::help_for(v.get_ref(), all_tests.iter().copied(), "tests");
            diags.push(
                src.at_value(
                    v,
                    format!(
                        "unknown test `{}`: no built-in recipe and no pipeline/{}.toml",
                        v.get_ref(),
                        v.get_ref()
                    ),
                )
                .with_help(help),
            );
        }
    }
    let storage_tests: Vec<String> = test
        .iter()
        .filter(|t| known.recipes.get(*t).is_some_and(|r| r.uses_storage))
        .map(|t| format!("`{t}`"))
        .collect();
    if m.storage.is_empty() && !storage_tests.is_empty() {
        diags.push(
            src.at_value(
                raw,
                format!(
                    "matrix.storage is empty, but {} use storage",
                    storage_tests.join(", ")
                ),
            )
            .with_help("list the storage to test on, e.g. `storage = [\"scratch-dir\"]`"),
        );
    }

    // exclude/include: a pattern whose glob matches nothing is almost surely a typo that
    // would otherwise silently exclude (or include) nothing.
    let axes = Axes {
        image: image_names.clone(),
        board: all_boards.iter().copied().collect(),
        storage: storage_names.iter().copied().collect(),
        filesystem: fs_names.clone(),
        network: network_names.iter().copied().collect(),
        test: all_tests.iter().copied().collect(),
        skip_storage: selected_broken,
    };
    let exclude = m
        .exclude
        .iter()
        .map(|p| pattern(src, p, &axes, "exclude", diags))
        .collect();
    let include = m
        .include
        .iter()
        .map(|p| pattern(src, p, &axes, "include", diags))
        .collect();

    let matrix = Matrix {
        image,
        board,
        board_patterns,
        storage,
        network,
        filesystem,
        test,
        exclude,
        include,
    };
    (matrix, selected_broken)
}

/// `network`: names or globs over the selected boards' `[[network]]`, each matching one
/// of at least one board (a board without it skips those cells, with the reason); only
/// for a matrix with a test that uses the network.
fn network<'a>(
    src: &Source,
    raw: &Spanned<raw::Matrix>,
    board: &[BoardName],
    selected_broken: bool,
    known: &'a Known,
    tests: &[Spanned<String>],
    diags: &mut Vec<Diagnostic>,
) -> (Vec<String>, BTreeSet<&'a str>) {
    let m = raw.get_ref();
    let names: BTreeSet<&str> = board
        .iter()
        .filter_map(|b| known.boards.get(b))
        .flat_map(|b| b.network.iter().map(|n| n.name.as_str()))
        .collect();
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for v in &m.network {
        if !first_time(src, &mut seen, v, "network", diags) {
            continue;
        }
        if !selected_broken && !names.iter().any(|n| names::glob_match(v.get_ref(), n)) {
            let help = if names.is_empty() {
                "none of the selected boards declares a [[network]] (name, address, interface)"
                    .to_string()
            } else {
                names::help_for(
                    v.get_ref(),
                    names.iter().copied(),
                    "networks of the selected boards",
                )
            };
            diags.push(
                src.at_value(
                    v,
                    format!(
                        "network `{}` matches no network of the selected boards",
                        v.get_ref()
                    ),
                )
                .with_help(help),
            );
        }
        out.push(v.get_ref().clone());
    }
    let networked = tests.iter().any(|t| {
        known
            .recipes
            .get(&TestName::new(t.get_ref().clone()))
            .is_some_and(|r| r.uses_network)
    });
    if let Some(first) = m.network.first()
        && !networked
        && !tests.is_empty()
    {
        diags.push(
            src.at_value(first, "matrix.network is set, but no test of matrix.test uses the network")
                .with_help("a recipe uses the network when its templates read `host` (or it says `uses_network = true`); remove matrix.network"),
        );
    }
    (out, names)
}

/// The values each axis can take, for checking patterns.
pub(super) struct Axes<'a> {
    pub(super) image: Vec<&'a str>,
    pub(super) board: Vec<&'a str>,
    pub(super) storage: Vec<&'a str>,
    pub(super) filesystem: Vec<&'a str>,
    pub(super) network: Vec<&'a str>,
    pub(super) test: Vec<&'a str>,
    /// A selected board failed to load, so its storage names are unknown.
    pub(super) skip_storage: bool,
}

pub(super) fn pattern(
    src: &Source,
    raw: &Spanned<raw::Pattern>,
    axes: &Axes,
    what: &str,
    diags: &mut Vec<Diagnostic>,
) -> CellPattern {
    let p = raw.get_ref();
    let fields = [
        ("image", &p.image, &axes.image),
        ("board", &p.board, &axes.board),
        ("storage", &p.storage, &axes.storage),
        ("filesystem", &p.filesystem, &axes.filesystem),
        ("network", &p.network, &axes.network),
        ("test", &p.test, &axes.test),
    ];
    if fields.iter().all(|(_, v, _)| v.is_none()) {
        diags.push(
            src.at_value(raw, format!("an empty {what} pattern matches every cell"))
                .with_help("name at least one of image, board, storage, filesystem, network, test"),
        );
    }
    for (axis, value, candidates) in fields {
        let Some(value) = value else { continue };
        if (axis == "storage" || axis == "network") && axes.skip_storage {
            continue;
        }
        if !candidates
            .iter()
            .any(|c| names::glob_match(value.get_ref(), c))
        {
            let help = names::help_for(
                value.get_ref(),
                candidates.iter().copied(),
                &format!("{axis} values"),
            );
            diags.push(
                src.at_value(
                    value,
                    format!(
                        "{axis} `{}` in this {what} pattern matches nothing",
                        value.get_ref()
                    ),
                )
                .with_help(help),
            );
        }
    }
    let text = |v: &Option<Spanned<String>>| v.as_ref().map(|s| s.get_ref().clone());
    CellPattern {
        image: text(&p.image),
        board: text(&p.board),
        storage: text(&p.storage),
        filesystem: text(&p.filesystem),
        network: text(&p.network),
        test: text(&p.test),
    }
}
