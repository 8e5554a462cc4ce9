//! Validates one scenario file (`scenarios/<name>.toml`) against the loaded boards and
//! recipes into a `model::Scenario`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use toml::Spanned;

use super::{Source, names, raw, units};
use crate::diag::Diagnostic;
use crate::model::{
    AS_FLASHED, AS_IS, Board, BoardName, FS_KINDS, Filesystem, FsName, Image, ImageName,
    ImageSource, ImageUrl, Recipe, Scenario, TestName,
};
use crate::storage::rules;

mod cluster;
mod compare;
mod matrix;
mod method;
mod params;
mod report;

use compare::{compare, precision};
use matrix::matrix;
use method::method;
use params::params;

/// `[params.TEST]` tables as written.
pub(crate) type RawParams =
    BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<toml::Value>>>;

/// What a scenario can refer to. `broken_*` are names whose file failed to load: they
/// exist, so a reference to them is not reported again.
pub struct Known<'a> {
    pub boards: &'a BTreeMap<BoardName, Board>,
    pub broken_boards: &'a BTreeSet<String>,
    pub recipes: &'a BTreeMap<TestName, Recipe>,
    pub broken_recipes: &'a BTreeSet<String>,
    /// Broken boards that a scenario's matrix selects: their errors stay errors.
    pub used_broken_boards: std::cell::RefCell<BTreeSet<String>>,
    /// For a report: boards the store has cells of, also those without a file.
    pub stored: &'a super::StoredNames,
}

impl Known<'_> {
    /// The boards that have a file (broken ones too), not the store's names.
    fn board_file_names(&self) -> BTreeSet<&str> {
        self.boards
            .keys()
            .map(BoardName::as_str)
            .chain(self.broken_boards.iter().map(String::as_str))
            .collect()
    }

    fn board_names(&self) -> BTreeSet<&str> {
        self.boards
            .keys()
            .map(BoardName::as_str)
            .chain(self.broken_boards.iter().map(String::as_str))
            .chain(self.stored.boards.keys().map(String::as_str))
            .collect()
    }

    /// The boards `patterns` select that can have cells: those with a file, and for a
    /// report those the store knows.
    fn selected_boards(&self, patterns: &[String]) -> Vec<&str> {
        let selected = |b: &&str| patterns.iter().any(|p| names::glob_match(p, b));
        let mut out: Vec<&str> = self
            .boards
            .keys()
            .map(BoardName::as_str)
            .chain(self.stored.boards.keys().map(String::as_str))
            .filter(selected)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The board axis's values a compare row or a label may name: the boards the
    /// matrix's globs select (with the stored ones, for a report), its clusters, and
    /// the boards its includes add.
    fn board_values<'m>(&'m self, matrix: &'m crate::model::Matrix) -> Vec<&'m str> {
        let mut out = self.selected_boards(&matrix.board_patterns);
        out.extend(matrix.board.iter().map(BoardName::as_str));
        let included: Vec<String> = matrix
            .include
            .iter()
            .filter_map(|p| p.board.clone())
            .collect();
        out.extend(self.selected_boards(&included));
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The storage names of the boards selected by `patterns`: from their files, and
    /// from the store for boards it knows.
    fn storage_names(&self, patterns: &[String]) -> BTreeSet<&str> {
        let selected = |b: &str| patterns.iter().any(|p| names::glob_match(p, b));
        let from_files = self
            .boards
            .values()
            .filter(|b| selected(b.name.as_str()))
            .flat_map(|b| b.storage.iter().map(|s| s.name.as_str()));
        let from_store = self
            .stored
            .boards
            .iter()
            .filter(|(b, _)| selected(b))
            .flat_map(|(_, s)| s.iter().map(String::as_str));
        from_files.chain(from_store).collect()
    }
    fn test_names(&self) -> BTreeSet<&str> {
        self.recipes
            .keys()
            .map(TestName::as_str)
            .chain(self.broken_recipes.iter().map(String::as_str))
            .collect()
    }
}

/// The checks only a scenario's expanded plan can make: its cell count against the
/// limit, a matrix with nothing to measure, what its cells ask of their boards, a
/// comparison that pairs no cells. They need `plan`, which sits above config, so the
/// layer above both gives them (`check::Planned`); config runs them for each scenario
/// as it validates, so every mistake is still reported at once and in file order.
pub(crate) trait PlanChecks {
    /// Pushes the mistakes of `scenario`, which validated; false drops it.
    fn check(
        &self,
        file: &ScenarioFile<'_>,
        scenario: &Scenario,
        diags: &mut Vec<Diagnostic>,
    ) -> bool;
}

/// What of a scenario's file the plan's checks point into, and what it may refer to.
pub(crate) struct ScenarioFile<'a> {
    pub src: &'a Source,
    pub matrix: &'a Spanned<raw::Matrix>,
    pub images: &'a BTreeMap<Spanned<String>, Spanned<raw::Image>>,
    pub params: &'a RawParams,
    pub report: Option<&'a raw::Report>,
    /// A broken board file the matrix selects: its cells are missing from the plan.
    pub selected_broken: bool,
    pub known: &'a Known<'a>,
}

pub fn validate(
    src: &Source,
    raw: raw::Scenario,
    known: &Known,
    checks: &dyn PlanChecks,
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
    let mut images = images(src, &raw.images, diags);
    let filesystems = filesystems(src, &raw.filesystems, diags);
    let clusters = cluster::clusters(src, &raw.clusters, known, diags);
    // Every cluster declared, also one with errors of its own: naming it is no error.
    let declared: BTreeSet<BoardName> = raw
        .clusters
        .keys()
        .map(|k| BoardName::new(k.get_ref().clone()))
        .collect();
    let (matrix, selected_broken) = matrix(
        src,
        &raw.matrix,
        &images,
        &filesystems,
        &declared,
        known,
        diags,
    );
    prepare_for_boards(
        src,
        &raw.images,
        &mut images,
        &matrix,
        &clusters,
        known,
        diags,
    );
    cluster::peers(src, &raw, &clusters, known, diags);
    let method = method(src, raw.method.as_ref(), diags);
    let params = params(src, &raw.params, known, diags);
    let compare = match &raw.report {
        Some(r) => compare(src, &r.compare, &matrix, selected_broken, known, diags),
        None => Vec::new(),
    };
    let report_spec = match &raw.report {
        Some(r) => report::spec(
            &report::ReportContext {
                src,
                matrix: &matrix,
                images: &images,
                filesystems: &filesystems,
                selected_broken,
                known,
            },
            r,
            diags,
        ),
        None => crate::model::ReportSpec::default(),
    };
    let precision = precision(src, raw.report.as_ref(), diags);
    // Warnings (a flashed image without first-boot preparation) leave the scenario.
    if diags[start..].iter().any(|d| !d.warning) {
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
        clusters,
        report: report_spec,
        precision,
    };
    let file = ScenarioFile {
        src,
        matrix: &raw.matrix,
        images: &raw.images,
        params: &raw.params,
        report: raw.report.as_ref(),
        selected_broken,
        known,
    };
    checks.check(&file, &scenario, diags).then_some(scenario)
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
            if let Some(s) = &img.sha256 {
                units::parse_sha256(s.get_ref()).unwrap_or_else(|e| {
                    diags.push(src.at_value(s, e));
                    String::new()
                })
            } else {
                diags.push(
                    src.at_value(image, format!("image `{name}`: missing sha256"))
                        .with_help("add `sha256 = \"<64 hex digits>\"` (from `sha256sum IMAGE`): it proves the bytes and keys the results"),
                );
                String::new()
            }
        };
        if img.url.is_none() {
            super::image::min_rate(src, None, img.min_rate.as_ref(), diags);
        }
        let firstboot = img
            .firstboot
            .as_ref()
            .and_then(|f| super::firstboot::firstboot(src, name, f, installed.is_some(), diags));
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
                    url: ImageUrl::new(url.get_ref().clone()),
                    sha256: sha(diags),
                    min_rate: super::image::min_rate(src, Some(url), img.min_rate.as_ref(), diags),
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
                firstboot,
            },
        );
    }
    out
}

/// Each prepared image's checks per board it may be flashed on (its key, its host name):
/// the matrix's boards and its clusters' members.
fn prepare_for_boards(
    src: &Source,
    raw: &BTreeMap<Spanned<String>, Spanned<raw::Image>>,
    images: &mut BTreeMap<ImageName, Image>,
    matrix: &crate::model::Matrix,
    clusters: &BTreeMap<BoardName, crate::model::Cluster>,
    known: &Known,
    diags: &mut Vec<Diagnostic>,
) {
    let mut names: Vec<BoardName> = Vec::new();
    for value in known.board_values(matrix) {
        let name = BoardName::from(value);
        match clusters.get(&name) {
            Some(c) => names.extend(c.members.iter().cloned()),
            None => names.push(name),
        }
    }
    names.sort();
    names.dedup();
    let boards = super::firstboot::boards_of(&names, known.boards);
    let flashes = names.iter().any(|n| {
        known
            .boards
            .get(n)
            .is_some_and(|b| !matches!(b.flash, crate::model::Flash::None))
    });
    for (key, image) in raw {
        let name = ImageName::new(key.get_ref().clone());
        // A stock image flashed as it is boots with no user and SSH off: the board
        // never answers, which the walk only finds after the flash and the boot wait.
        if flashes
            && image.get_ref().firstboot.is_none()
            && matrix.image.contains(&name)
            && images
                .get(&name)
                .is_some_and(|i| !matches!(i.source, crate::model::ImageSource::Installed))
        {
            diags.push(
                src.at_value(
                    key,
                    format!(
                        "image `{name}` is flashed without `[images.{name}.firstboot]`: a stock Raspberry Pi OS, Ubuntu, HypriotOS or Armbian image boots with SSH off or no user the controller can log in as, and the board would not answer after the flash"
                    ),
                )
                .with_help(format!(
                    "add `[images.{name}.firstboot]` with `kind = \"raspios\"`, `\"cloud-init\"` or `\"armbian\"` and `user`; `kind = \"none\"` for an image that already lets the controller in"
                ))
                .as_warning(),
            );
        }
        let (Some(fb_raw), Some(model)) = (
            image.get_ref().firstboot.as_ref(),
            images.get_mut(&ImageName::new(key.get_ref().clone())),
        ) else {
            continue;
        };
        if let Some(fb) = model.firstboot.as_mut() {
            super::firstboot::for_boards(src, fb_raw, fb, &boards, diags);
        }
    }
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
        if !FS_KINDS.contains(&kind.as_str()) {
            let help = names::help_for(kind, FS_KINDS, "filesystem kinds");
            diags.push(
                src.at_value(
                    &fs.kind,
                    format!(
                        "unknown filesystem kind `{kind}`; expected one of {}",
                        FS_KINDS.map(|k| format!("`{k}`")).join(", ")
                    ),
                )
                .with_help(help),
            );
        }
        if kind == AS_FLASHED
            && let Some(opt) = fs.mkfs_options.first().or(fs.mount_options.first())
        {
            diags.push(
                src.at_value(
                    opt,
                    format!("`{AS_FLASHED}` formats and mounts nothing, so it takes no mkfs or mount options"),
                )
                .with_help("remove the options, or declare a kind benchpipe makes (`ext4`, `btrfs`, `xfs`, `f2fs`)"),
            );
        }
        for opt in &fs.mkfs_options {
            if let Some(why) = rules::mkfs_option(opt.get_ref())
                .or_else(|| rules::mkfs_option_for(kind, opt.get_ref()))
            {
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
