//! Validates one scenario file (`scenarios/<name>.toml`) against the loaded boards and
//! recipes into a `model::Scenario`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use toml::Spanned;

use super::diag::Diagnostic;
use super::{Source, names, raw, recipe, units};
use crate::model::{
    AS_IS, Board, BoardName, CellPattern, Compare, Cooldown, Filesystem, FsName, Image, ImageName,
    ImageSource, Matrix, Method, ParamValue, Recipe, RunOrder, Runs, Scenario, TestName,
};
use crate::storage::rules;

/// What a scenario can refer to. `broken_*` are names whose file failed to load: they
/// exist, so a reference to them is not reported again.
pub struct Known<'a> {
    pub boards: &'a BTreeMap<BoardName, Board>,
    pub broken_boards: &'a BTreeSet<String>,
    pub recipes: &'a BTreeMap<TestName, Recipe>,
    pub broken_recipes: &'a BTreeSet<String>,
    /// Broken boards that a scenario's matrix selects: their errors stay errors.
    pub used_broken_boards: std::cell::RefCell<BTreeSet<String>>,
    /// The most cells a matrix may expand to (`--max-cells`).
    pub max_cells: u64,
}

impl Known<'_> {
    fn board_names(&self) -> BTreeSet<&str> {
        self.boards
            .keys()
            .map(BoardName::as_str)
            .chain(self.broken_boards.iter().map(String::as_str))
            .collect()
    }
    fn test_names(&self) -> BTreeSet<&str> {
        self.recipes
            .keys()
            .map(TestName::as_str)
            .chain(self.broken_recipes.iter().map(String::as_str))
            .collect()
    }
}

/// Cool-down targets a board can reach: absolute, and above its idle temperature.
const MIN_COOLDOWN_C: f64 = 20.0;
const MAX_COOLDOWN_C: f64 = 110.0;
const MAX_ABOVE_IDLE: f64 = 30.0;

pub fn validate(
    src: &Source,
    raw: raw::Scenario,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> Option<Scenario> {
    let start = diags.len();
    if raw.title.get_ref().trim().is_empty() {
        diags.push(src.at_value(&raw.title, "`title` must not be empty: it heads the report"));
    } else if let Err(e) = names::control_free(raw.title.get_ref(), false) {
        diags.push(src.at_value(&raw.title, format!("`title` {e}")));
    }
    if let Some(d) = &raw.description
        && let Err(e) = names::control_free(d.get_ref(), true)
    {
        diags.push(src.at_value(d, format!("`description` {e}")));
    }
    let images = images(src, &raw.images, diags);
    let filesystems = filesystems(src, &raw.filesystems, diags);
    let (matrix, selected_broken) = matrix(src, &raw.matrix, &images, &filesystems, known, diags);
    let method = method(src, raw.method.as_ref(), diags);
    let params = params(src, &raw.params, known, diags);
    let compare = match &raw.report {
        Some(r) => compare(src, &r.compare, &matrix, selected_broken, known, diags),
        None => Vec::new(),
    };
    if diags.len() > start {
        return None;
    }
    let scenario = Scenario {
        name: src.stem.clone(),
        file: src.rel.clone(),
        title: raw.title.into_inner(),
        description: raw.description.map(Spanned::into_inner),
        images,
        filesystems,
        matrix,
        method,
        params,
        compare,
    };
    cell_count(src, &raw.matrix, &scenario, known, diags)?;
    Some(scenario)
}

/// Counts the cells before anything expands them, and refuses a matrix over the limit
/// or one whose excludes leave nothing.
fn cell_count(
    src: &Source,
    raw: &Spanned<raw::Matrix>,
    scenario: &Scenario,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> Option<()> {
    let bound = crate::plan::bound(known.boards, known.recipes, scenario);
    if bound.cells > u128::from(known.max_cells) {
        diags.push(
            src.at_value(
                raw,
                format!(
                    "the matrix has up to {} cells ({}), more than the limit of {}",
                    bound.cells, bound.axes, known.max_cells
                ),
            )
            .with_help(
                "split the study into smaller scenarios, or raise the limit with `--max-cells N`",
            ),
        );
        return None;
    }
    let m = raw.get_ref();
    if bound.cells > 0 && !m.exclude.is_empty() {
        let plan = crate::plan::expand_in(known.boards, known.recipes, scenario);
        if plan.cells.is_empty() {
            let others = match plan.skipped.len() {
                0 => String::new(),
                n => format!(" ({n} other combination(s) cannot apply, see `benchpipe plan`)"),
            };
            diags.push(
                src.at_value(
                    &m.exclude[0],
                    format!(
                        "the excludes leave no cell: of up to {} combinations of the matrix, none is left to measure{others}",
                        bound.cells
                    ),
                )
                .with_help("a scenario with nothing to measure is a mistake: narrow the exclude patterns"),
            );
            return None;
        }
    }
    Some(())
}

fn plain_key(src: &Source, key: &Spanned<String>, what: &str, diags: &mut Vec<Diagnostic>) {
    if !names::is_plain_name(key.get_ref()) {
        diags.push(src.at_value(
            key,
            format!("bad {what} name `{}`: use letters, digits, `-`, `_` and `.`, starting with a letter or digit", key.get_ref()),
        ));
    }
}

fn images(
    src: &Source,
    raw: &BTreeMap<Spanned<String>, Spanned<raw::Image>>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<ImageName, Image> {
    let mut out = BTreeMap::new();
    for (key, image) in raw {
        plain_key(src, key, "image", diags);
        let name = key.get_ref();
        let img = image.get_ref();
        let installed = img.installed.as_ref().filter(|i| *i.get_ref());
        let sha = |diags: &mut Vec<Diagnostic>| -> String {
            match &img.sha256 {
                Some(s) => units::parse_sha256(s.get_ref()).unwrap_or_else(|e| {
                    diags.push(src.at_value(s, e));
                    String::new()
                }),
                None => {
                    diags.push(
                        src.at_value(image, format!("image `{name}`: missing sha256"))
                            .with_help("add `sha256 = \"<64 hex digits>\"` (from `sha256sum IMAGE`): it proves the bytes and keys the results"),
                    );
                    String::new()
                }
            }
        };
        let source = match (installed, &img.url, &img.path) {
            (Some(_), None, None) => {
                if let Some(s) = &img.sha256 {
                    diags.push(src.at_value(
                        s,
                        "an installed image has no sha256: benchpipe never sees its bytes",
                    ));
                }
                ImageSource::Installed
            }
            (None, Some(url), None) => {
                super::image::check_url(src, url, diags);
                ImageSource::Url {
                    url: url.get_ref().clone(),
                    sha256: sha(diags),
                }
            }
            (None, None, Some(path)) => ImageSource::Path {
                path: PathBuf::from(path.get_ref()),
                sha256: sha(diags),
            },
            (None, None, None) => {
                diags.push(
                    src.at_value(image, format!("image `{name}` has no source"))
                        .with_help("give exactly one of `installed = true`, `url = \"...\"` or `path = \"...\"`"),
                );
                continue;
            }
            _ => {
                diags.push(
                    src.at_value(image, format!("image `{name}` has more than one source"))
                        .with_help("give exactly one of `installed = true`, `url = \"...\"` or `path = \"...\"`"),
                );
                continue;
            }
        };
        out.insert(
            ImageName::new(name.clone()),
            Image {
                name: ImageName::new(name.clone()),
                source,
                expect: super::image::expectations(src, img.expect.as_ref(), diags),
            },
        );
    }
    out
}

fn filesystems(
    src: &Source,
    raw: &BTreeMap<Spanned<String>, Spanned<raw::Filesystem>>,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<FsName, Filesystem> {
    let mut out = BTreeMap::new();
    for (key, fs) in raw {
        let name = key.get_ref();
        if name == AS_IS {
            diags.push(
                src.at_value(
                    key,
                    format!(
                        "`{AS_IS}` is built in (use the storage as it is) and cannot be redefined"
                    ),
                )
                .with_help("give this filesystem another name"),
            );
            continue;
        }
        plain_key(src, key, "filesystem", diags);
        let fs = fs.get_ref();
        let kind = fs.kind.get_ref();
        if !matches!(kind.as_str(), "ext4" | "btrfs") {
            let help = names::help_for(kind, ["ext4", "btrfs"], "filesystem kinds");
            diags.push(
                src.at_value(
                    &fs.kind,
                    format!("unknown filesystem kind `{kind}`; expected `ext4` or `btrfs`"),
                )
                .with_help(help),
            );
        }
        for opt in &fs.mkfs_options {
            if let Some(why) = rules::mkfs_option(opt.get_ref()) {
                diags.push(
                    src.at_value(opt, format!("bad mkfs option: {why}"))
                        .with_help("write an option and its value as one item (`-O^has_journal`, `--nodesize=16k`); benchpipe names the device itself"),
                );
            }
        }
        for opt in &fs.mount_options {
            if let Some(why) = rules::mount_option(opt.get_ref()) {
                diags.push(
                    src.at_value(opt, format!("bad mount option: {why}"))
                        .with_help("mount options tune the filesystem benchpipe mounts (`noatime`, `compress=lzo`); they may not name devices or paths"),
                );
            }
        }
        let texts = |v: &[Spanned<String>]| v.iter().map(|o| o.get_ref().clone()).collect();
        out.insert(
            FsName::new(name.clone()),
            Filesystem {
                name: FsName::new(name.clone()),
                kind: kind.clone(),
                mkfs_options: texts(&fs.mkfs_options),
                mount_options: texts(&fs.mount_options),
            },
        );
    }
    out
}

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

fn matrix(
    src: &Source,
    raw: &Spanned<raw::Matrix>,
    images: &BTreeMap<ImageName, Image>,
    filesystems: &BTreeMap<FsName, Filesystem>,
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

    // board: globs over boards/.
    empty_axis(src, raw, &m.board, "board", diags);
    let all_boards = known.board_names();
    let mut seen = BTreeSet::new();
    let mut board: Vec<BoardName> = Vec::new();
    for v in &m.board {
        if !first_time(src, &mut seen, v, "board", diags) {
            continue;
        }
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
            if known.boards.contains_key(&name) && !board.contains(&name) {
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

    // storage: names or globs over the selected boards' storage.
    let storage_names: BTreeSet<&str> = board
        .iter()
        .filter_map(|b| known.boards.get(b))
        .flat_map(|b| b.storage.iter().map(|s| s.name.as_str()))
        .collect();
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

    // test: recipes in pipeline/.
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
                        "unknown test `{}`: no recipe pipeline/{}.toml",
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
        storage,
        filesystem,
        test,
        exclude,
        include,
    };
    (matrix, selected_broken)
}

/// The values each axis can take, for checking patterns.
struct Axes<'a> {
    image: Vec<&'a str>,
    board: Vec<&'a str>,
    storage: Vec<&'a str>,
    filesystem: Vec<&'a str>,
    test: Vec<&'a str>,
    /// A selected board failed to load, so its storage names are unknown.
    skip_storage: bool,
}

fn pattern(
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
        ("test", &p.test, &axes.test),
    ];
    if fields.iter().all(|(_, v, _)| v.is_none()) {
        diags.push(
            src.at_value(raw, format!("an empty {what} pattern matches every cell"))
                .with_help("name at least one of image, board, storage, filesystem, test"),
        );
    }
    for (axis, value, candidates) in fields {
        let Some(value) = value else { continue };
        if axis == "storage" && axes.skip_storage {
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
        test: text(&p.test),
    }
}

fn duration(
    src: &Source,
    value: &Spanned<String>,
    diags: &mut Vec<Diagnostic>,
) -> Option<std::time::Duration> {
    units::parse_duration(value.get_ref())
        .map_err(|e| diags.push(src.at_value(value, e)))
        .ok()
}

fn count(
    src: &Source,
    value: &Spanned<i64>,
    key: &str,
    min: i64,
    diags: &mut Vec<Diagnostic>,
) -> Option<u32> {
    let v = *value.get_ref();
    match u32::try_from(v) {
        Ok(n) if v >= min && n <= 100_000 => Some(n),
        _ => {
            diags.push(src.at_value(
                value,
                format!("bad `{key}` {v}: expected a whole number from {min} to 100000"),
            ));
            None
        }
    }
}

fn method(src: &Source, raw: Option<&raw::Method>, diags: &mut Vec<Diagnostic>) -> Method {
    let mut method = Method::default();
    let Some(raw) = raw else { return method };

    if let Some(c) = &raw.cooldown {
        match c.get_ref() {
            raw::Cooldown::Fixed(text) => {
                let spanned = Spanned::new(c.span(), text.clone());
                if let Some(d) = duration(src, &spanned, diags) {
                    method.cooldown = if d.is_zero() {
                        Cooldown::None
                    } else {
                        Cooldown::Fixed { duration: d }
                    };
                }
            }
            raw::Cooldown::UntilBelow(u) => {
                // "50C", or "idle+5C": five degrees above the board's idle temperature.
                // A target the board cannot reach would hold every cell for `max`.
                let text = u.until_below.get_ref().trim();
                let (above_idle, degrees) = match text.strip_prefix("idle") {
                    Some(rest) => match rest.trim().strip_prefix('+') {
                        Some(d) => (true, Ok(d.trim())),
                        None => (
                            true,
                            Err(format!(
                                "`{text}`: a target below the idle temperature can never be reached; write `idle+N` with N of at least 1C"
                            )),
                        ),
                    },
                    None => (false, Ok(text)),
                };
                let (low, high) = if above_idle {
                    (1.0, MAX_ABOVE_IDLE)
                } else {
                    (MIN_COOLDOWN_C, MAX_COOLDOWN_C)
                };
                let celsius = degrees
                    .and_then(units::parse_celsius)
                    .and_then(|c| {
                        if (low..=high).contains(&c) {
                            Ok(c)
                        } else if above_idle {
                            Err(format!("`{text}`: expected idle+1C to idle+{high}C; a board cools to about its idle temperature and no further"))
                        } else {
                            Err(format!("`{text}`: expected {low}C to {high}C; a board does not cool below the room it stands in"))
                        }
                    })
                    .map_err(|e| {
                        diags.push(
                            src.at_value(&u.until_below, e)
                                .with_help("write an absolute limit like \"50C\", or \"idle+5C\""),
                        )
                    })
                    .ok();
                let max = match &u.max {
                    Some(m) => duration(src, m, diags),
                    None => Some(std::time::Duration::from_secs(15 * 60)),
                };
                if let (Some(celsius), Some(max)) = (celsius, max) {
                    method.cooldown = Cooldown::UntilBelow {
                        celsius,
                        above_idle,
                        max,
                    };
                }
            }
        }
    }

    if let Some(idle) = &raw.idle {
        let idle = idle.get_ref();
        let load = *idle.load_below.get_ref();
        if !(load.is_finite() && load > 0.0) {
            diags.push(src.at_value(
                &idle.load_below,
                format!("load_below = {load}: expected a load average above 0, like 0.5"),
            ));
        }
        let hold = match &idle.hold {
            Some(h) => duration(src, h, diags),
            None => Some(std::time::Duration::from_secs(30)),
        };
        let max = match &idle.max {
            Some(m) => duration(src, m, diags),
            None => Some(std::time::Duration::from_secs(10 * 60)),
        };
        if let (Some(hold), Some(max)) = (hold, max) {
            method.idle = Some(crate::model::IdleGate {
                load_below: load,
                hold,
                max,
            });
        }
    }

    if let Some(w) = &raw.warmup {
        let w = w.get_ref();
        if let Some(r) = &w.runs {
            method.warmup.runs = count(src, r, "runs", 0, diags).unwrap_or(method.warmup.runs);
        }
        if let Some(d) = &w.duration {
            method.warmup.duration = duration(src, d, diags);
        }
    }

    if let Some(r) = &raw.runs {
        let runs = r.get_ref();
        let min = runs
            .min
            .as_ref()
            .and_then(|m| count(src, m, "min", 1, diags));
        let max = runs
            .max
            .as_ref()
            .and_then(|m| count(src, m, "max", 1, diags));
        let target = runs.target.as_ref().and_then(|t| {
            units::parse_percent(t.get_ref())
                .map_err(|e| diags.push(src.at_value(t, e)))
                .ok()
        });
        let min = min.unwrap_or(if runs.max.is_some() {
            max.unwrap_or(1).min(3)
        } else {
            3
        });
        // With a precision target the default leaves room to reach it; without one
        // there is nothing to adapt, so max is min.
        let max = max.unwrap_or(if target.is_some() { min.max(10) } else { min });
        if max < min
            && let Some(span) = runs.max.as_ref().map(Spanned::span)
        {
            diags.push(
                src.at(span, format!("`max` ({max}) is less than `min` ({min})"))
                    .with_help("max is the most runs per cell, min the fewest: max >= min"),
            );
        }
        method.runs = Runs { min, max, target };
    }

    if let Some(c) = &raw.confidence {
        let v = *c.get_ref();
        if v > 0.0 && v < 1.0 {
            method.confidence = v;
        } else {
            diags.push(src.at_value(
                c,
                format!("bad confidence {v}: expected a level between 0 and 1, like 0.95"),
            ));
        }
    }

    if let Some(o) = &raw.order {
        method.order = match o.get_ref().as_str() {
            "blocked" => RunOrder::Blocked,
            "interleaved" => RunOrder::Interleaved,
            other => {
                diags.push(
                    src.at_value(o, format!("unknown order `{other}`; expected `blocked` or `interleaved`"))
                        .with_help("`blocked` runs a cell's runs together; `interleaved` takes turns between cells so drift hits all alike"),
                );
                method.order
            }
        };
    }

    if let Some(v) = &raw.validity {
        let v = v.get_ref();
        if let Some(h) = &v.hot
            && let Ok(c) =
                units::parse_celsius(h.get_ref()).map_err(|e| diags.push(src.at_value(h, e)))
        {
            method.validity.hot_celsius = c;
        }
        if let Some(b) = &v.background_load
            && let Ok(f) = units::parse_percent(b.get_ref()).map_err(|e| {
                diags.push(src.at_value(b, e).with_help(
                    "the share of the board's CPU capacity used by processes other than the test, like `10%`",
                ))
            })
        {
            method.validity.background_load = f;
        }
        if let Some(x) = &v.exclude_flagged {
            method.validity.exclude_flagged = *x.get_ref();
        }
    }
    method
}

fn params(
    src: &Source,
    raw: &BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<toml::Value>>>,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> BTreeMap<TestName, BTreeMap<String, ParamValue>> {
    let mut out = BTreeMap::new();
    let all_tests = known.test_names();
    for (test_key, overrides) in raw {
        let test = TestName::new(test_key.get_ref().clone());
        let Some(recipe) = known.recipes.get(&test) else {
            if !known.broken_recipes.contains(test_key.get_ref()) {
                let help = names::help_for(test_key.get_ref(), all_tests.iter().copied(), "tests");
                diags.push(
                    src.at_value(
                        test_key,
                        format!("[params.{}] names an unknown test", test_key.get_ref()),
                    )
                    .with_help(help),
                );
            }
            continue;
        };
        let mut values = BTreeMap::new();
        for (key, value) in overrides {
            let name = key.get_ref();
            let Some(default) = recipe.params.get(name) else {
                let help =
                    names::help_for(name, recipe.params.keys().map(String::as_str), "parameters");
                diags.push(
                    src.at_value(key, format!("test `{test}` has no parameter `{name}`"))
                        .with_help(format!(
                            "{help} (declared in [params] of {})",
                            recipe.file.display()
                        )),
                );
                continue;
            };
            if recipe.option_params.contains(name) {
                recipe::refuse_option_like(src, name, value, diags);
            }
            let Some(v) = recipe::param_value(src, value, diags) else {
                continue;
            };
            let v = match (default, v) {
                (ParamValue::Float(_), ParamValue::Int(i)) => ParamValue::Float(i as f64),
                (d, v) if std::mem::discriminant(d) == std::mem::discriminant(&v) => v,
                (d, v) => {
                    diags.push(src.at_value(
                        value,
                        format!(
                            "parameter `{name}` of `{test}` is {} (default {d}), not {}",
                            kind(d),
                            kind(&v)
                        ),
                    ));
                    continue;
                }
            };
            values.insert(name.clone(), v);
        }
        out.insert(test, values);
    }
    out
}

fn kind(v: &ParamValue) -> &'static str {
    match v {
        ParamValue::Int(_) => "an integer",
        ParamValue::Float(_) => "a float",
        ParamValue::Bool(_) => "a boolean",
        ParamValue::Str(_) => "a string",
    }
}

fn compare(
    src: &Source,
    raw: &[Spanned<raw::Compare>],
    matrix: &Matrix,
    selected_broken: bool,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Compare> {
    let axes = Axes {
        image: matrix.image.iter().map(ImageName::as_str).collect(),
        board: matrix.board.iter().map(BoardName::as_str).collect(),
        storage: matrix
            .board
            .iter()
            .filter_map(|b| known.boards.get(b))
            .flat_map(|b| b.storage.iter().map(|s| s.name.as_str()))
            .collect(),
        filesystem: matrix.filesystem.iter().map(FsName::as_str).collect(),
        test: matrix.test.iter().map(TestName::as_str).collect(),
        skip_storage: selected_broken,
    };
    let mut out = Vec::new();
    for c in raw {
        let c = c.get_ref();
        let baseline = pattern(src, &c.baseline, &axes, "baseline", diags);
        let candidate = c
            .candidate
            .as_ref()
            .map(|p| pattern(src, p, &axes, "candidate", diags))
            .unwrap_or_default();
        let Some((test, metric)) = compare_metric(src, &c.metric, matrix, known, diags) else {
            continue;
        };
        out.push(Compare {
            test,
            metric,
            baseline,
            candidate,
        });
    }
    out
}

/// Resolves `test.metric`; the test is the longest matrix test name that prefixes it,
/// since test names may themselves contain dots.
fn compare_metric(
    src: &Source,
    value: &Spanned<String>,
    matrix: &Matrix,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) -> Option<(TestName, String)> {
    let text = value.get_ref();
    let test = matrix
        .test
        .iter()
        .filter(|t| {
            text.strip_prefix(t.as_str())
                .is_some_and(|rest| rest.starts_with('.'))
        })
        .max_by_key(|t| t.as_str().len());
    let Some(test) = test else {
        let tests: Vec<&str> = matrix.test.iter().map(TestName::as_str).collect();
        let head = text.split('.').next().unwrap_or(text);
        let help = names::help_for(head, tests.iter().copied(), "tests in the matrix");
        if !known.broken_recipes.contains(head) {
            diags.push(
                src.at_value(
                    value,
                    format!(
                        "compare metric `{text}`: expected `test.metric` with a test of matrix.test"
                    ),
                )
                .with_help(help),
            );
        }
        return None;
    };
    let metric = &text[test.as_str().len() + 1..];
    let recipe = known.recipes.get(test)?;
    if recipe.metrics.iter().any(|m| m.name == metric) {
        Some((test.clone(), metric.to_string()))
    } else {
        let help = names::help_for(
            metric,
            recipe.metrics.iter().map(|m| m.name.as_str()),
            "metrics",
        );
        diags.push(
            src.at_value(value, format!("test `{test}` has no metric `{metric}`"))
                .with_help(format!(
                    "{help} (see [metrics] in {})",
                    recipe.file.display()
                )),
        );
        None
    }
}
