//! Loading input files: raw TOML with spans -> validated `model` types, with diagnostics.
//!
//! Three passes: read each file (`Source`), deserialize it into `raw` types (syntax, key
//! names, value types), then validate each file and the references between files
//! (`board`, `recipe`, `scenario`). Every problem becomes a `Diagnostic` with
//! file:line:col, and a load reports all of them at once. What only a scenario's
//! expanded plan shows is checked by the layer above (`check`, through `PlanChecks`).

mod board;
mod boot;
pub mod builtin;
mod firstboot;
mod health;
mod image;
mod kind;
mod labgrid;
mod members;
mod metrics;
pub use members::{PEER_DIR, PEER_HOST};
mod meter;
pub mod names;
mod network;
mod parser;
mod patterns;
mod power;
pub(crate) mod raw;
mod recipe;
mod scenario;
pub(crate) use scenario::{Known, PlanChecks, RawParams, ScenarioFile};
mod keys;
mod secrets;
pub mod shell;
mod sides;
mod ssh;
mod syntax;
mod template;
pub(crate) mod texts;
mod tmpfs;
pub mod units;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

use serde::de::DeserializeOwned;
use toml::Spanned;
use toml::de::DeTable;

use crate::diag::{self, Diagnostic, Diagnostics};
use crate::model::{Board, BoardName, Recipe, TestName, Workspace};

/// Files larger than this are refused before parsing: no input file is anywhere near it.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Finds the workspace root for scenario files: the nearest ancestor directory of the
/// first file that holds `boards/`, `scenarios/` or `pipeline/`, else the current
/// directory. A workspace needs no `pipeline/`: the built-in recipes stand in.
pub fn find_root(files: &[PathBuf]) -> PathBuf {
    let start = files
        .first()
        .and_then(|f| f.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let start = if start.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        start
    };
    let mut dir = Some(start.as_path());
    while let Some(d) = dir {
        if ["boards", "scenarios", "pipeline"]
            .iter()
            .any(|sub| d.join(sub).is_dir())
        {
            return d.to_path_buf();
        }
        dir = d.parent();
    }
    PathBuf::from(".")
}

/// Boards the store holds cells of, with their storage names: a report still shows the
/// cells of a board whose file is gone (retired, renamed, a lab torn down), so for
/// `report` a matrix glob or label that matches only such a board is no mistake.
#[derive(Clone, Debug, Default)]
pub struct StoredNames {
    pub boards: BTreeMap<String, BTreeSet<String>>,
}

/// Loads the scenarios in `files`, with every board in `root/boards/` and every recipe,
/// built in or in `root/pipeline/`, and validates them together; `checks` are those
/// only each scenario's plan can make (`check::load` gives them). For a report, the
/// store's boards (`stored`) count as known where the scenario names boards and storage.
pub(crate) fn load_with(
    root: &Path,
    files: &[PathBuf],
    stored: &StoredNames,
    checks: &dyn PlanChecks,
) -> Result<Workspace, Diagnostics> {
    let scenarios = files
        .iter()
        .map(|file| Source::read(file.clone(), relative_to_root(root, file)));
    let loaded = Loaded {
        boards: gather_boards(root),
        recipes: gather_recipes(root),
    };
    validate_with(root, loaded, scenarios, stored, checks)
}

/// The boards and recipes a load gathered, each file validated on its own.
struct Loaded {
    boards: Gathered<BoardName, Board>,
    recipes: Gathered<TestName, Recipe>,
}

/// `load_with` once the files are read: the scenarios validated against the boards and
/// recipes, every file's diagnostics in their order.
fn validate_with(
    root: &Path,
    loaded: Loaded,
    scenario_files: impl IntoIterator<Item = Result<Source, Box<Diagnostic>>>,
    stored: &StoredNames,
    checks: &dyn PlanChecks,
) -> Result<Workspace, Diagnostics> {
    let Loaded {
        mut boards,
        recipes,
    } = loaded;
    if !stored.boards.is_empty() {
        // A report of stored cells needs no board file: an empty or missing boards/ (the
        // lab torn down, the boards retired) is only worth a warning.
        boards.diags = boards
            .diags
            .into_iter()
            .map(Diagnostic::as_warning)
            .collect();
    }
    // Board files' own errors are placed once the scenarios say which boards they use.
    let mut diags = Vec::new();
    diags.extend(recipes.diags);
    diags.extend(recipes.file_diags.into_values().flatten());

    let known = scenario::Known {
        boards: &boards.items,
        broken_boards: &boards.broken,
        recipes: &recipes.items,
        broken_recipes: &recipes.broken,
        used_broken_boards: std::cell::RefCell::default(),
        stored,
    };
    let mut scenarios = Vec::new();
    let mut seen_names: BTreeMap<String, PathBuf> = BTreeMap::new();
    for src in scenario_files {
        let src = match src {
            Ok(src) => src,
            Err(d) => {
                diags.push(*d);
                continue;
            }
        };
        if !names::is_plain_name(&src.stem) {
            diags.push(Diagnostic::whole_file(
                &src.shown,
                format!(
                    "bad scenario name `{}` (the file stem): it names the report directory, so use letters, digits, `-`, `_` and `.`, starting with a letter or digit, without `..`",
                    src.stem.escape_debug()
                ),
            ));
            continue;
        }
        if let Some(first) = seen_names.get(&src.stem) {
            diags.push(Diagnostic::whole_file(
                &src.shown,
                format!(
                    "a scenario named `{}` is already loaded from {}; scenario names (file stems) name report directories and must be unique",
                    src.stem,
                    first.display()
                ),
            ));
            continue;
        }
        seen_names.insert(src.stem.clone(), src.shown.clone());
        let (parsed, errors) = src.parse::<raw::Scenario>(kind::Kind::Scenario);
        diags.extend(errors);
        let Some(parsed) = parsed else { continue };
        if let Some(s) = scenario::validate(&src, parsed, &known, checks, &mut diags) {
            scenarios.push(s);
        }
    }

    // A broken board file no scenario uses is only a warning: it must not block every
    // study of the other boards.
    let used = known.used_broken_boards.take();
    let mut all = boards.diags;
    all.extend(boards.warnings);
    all.extend(recipes.warnings);
    for (name, file_diags) in boards.file_diags {
        let unused = !used.contains(&name);
        all.extend(file_diags.into_iter().map(|d| {
            if unused {
                let message = format!(
                    "{} (board `{name}` is not used by the scenarios loaded, so it is left out)",
                    d.message
                );
                Diagnostic { message, ..d }.as_warning()
            } else {
                d
            }
        }));
    }
    all.extend(diags);
    let diags = all;

    if diags.iter().all(|d| d.warning) {
        Ok(Workspace {
            root: root.to_path_buf(),
            boards: boards.items,
            recipes: recipes.items,
            scenarios,
            warnings: diags.iter().map(ToString::to_string).collect(),
        })
    } else {
        Err(Diagnostics(diags))
    }
}

/// Loads and validates every board in `root/boards/*.toml` (name = file stem).
pub fn load_boards(root: &Path) -> Result<BTreeMap<BoardName, Board>, Diagnostics> {
    let loaded = gather_boards(root);
    let mut diags = loaded.diags;
    diags.extend(loaded.file_diags.into_values().flatten());
    if diags.is_empty() {
        Ok(loaded.items)
    } else {
        Err(Diagnostics(diags))
    }
}

/// Loads and validates every recipe: the built-in ones and `root/pipeline/*.toml` (name
/// = file stem), a workspace's file in place of the built-in of its name.
pub fn load_recipes(root: &Path) -> Result<BTreeMap<TestName, Recipe>, Diagnostics> {
    let loaded = gather_recipes(root);
    let mut diags = loaded.diags;
    diags.extend(loaded.file_diags.into_values().flatten());
    if diags.is_empty() {
        Ok(loaded.items)
    } else {
        Err(Diagnostics(diags))
    }
}

/// What one directory of boards or recipes yielded. `broken` holds the names whose file
/// had errors, so that a scenario naming them gets no second, misleading "unknown" error.
struct Gathered<K, V> {
    items: BTreeMap<K, V>,
    broken: BTreeSet<String>,
    /// Problems with the directory itself.
    diags: Vec<Diagnostic>,
    /// Each broken file's problems, by name, in name order.
    file_diags: BTreeMap<String, Vec<Diagnostic>>,
    /// The warnings of files that loaded: their items are used, their warnings shown.
    warnings: Vec<Diagnostic>,
}

fn gather_boards(root: &Path) -> Gathered<BoardName, Board> {
    gather(root, "boards", "board", Presence::Required, validate_board)
}

fn validate_board(src: &Source, diags: &mut Vec<Diagnostic>) -> Option<Board> {
    let (raw, errors) = src.parse::<raw::Board>(kind::Kind::Board);
    diags.extend(errors);
    board::validate(src, raw?, diags)
}

/// The built-in recipes, then the workspace's `pipeline/` (which may be absent): a
/// workspace file replaces the built-in of its name, whether it loads or is broken (a
/// broken override is an error, never a silent fall-back to the built-in).
fn gather_recipes(root: &Path) -> Gathered<TestName, Recipe> {
    let own = gather(
        root,
        "pipeline",
        "recipe",
        Presence::Optional,
        validate_own_recipe(),
    );
    with_built_ins(own, validate_built_in())
}

/// Validates a workspace's recipe file, its origin told by the built-in of its name.
fn validate_own_recipe() -> impl FnMut(&Source, &mut Vec<Diagnostic>) -> Option<Recipe> {
    use crate::model::Origin;
    validate_recipe(|src| match builtin::recipe(&src.stem) {
        None => Origin::Workspace,
        Some(text) if text == src.text => Origin::SameAsBuiltIn,
        Some(_) => Origin::Overrides,
    })
}

/// Validates a built-in recipe.
fn validate_built_in() -> impl FnMut(&Source, &mut Vec<Diagnostic>) -> Option<Recipe> {
    validate_recipe(|_| crate::model::Origin::BuiltIn)
}

/// The workspace's recipes (`out`), then every built-in one none of them replaces,
/// each validated by `validate`.
fn with_built_ins(
    mut out: Gathered<TestName, Recipe>,
    validate: impl FnMut(&Source, &mut Vec<Diagnostic>) -> Option<Recipe>,
) -> Gathered<TestName, Recipe> {
    let own: BTreeSet<String> = (out.items.keys().map(ToString::to_string))
        .chain(out.broken.iter().cloned())
        .collect();
    let built_in = builtin::RECIPES
        .iter()
        .filter(|(name, _)| !own.contains(*name))
        .map(|(name, text)| {
            let shown = builtin::shown_path(name);
            Ok(Source::new(shown.clone(), shown, (*text).to_string()))
        });
    gather_sources(&mut out, built_in, "recipe", validate);
    out
}

/// Validates a recipe file and records its origin and its text's sha256.
fn validate_recipe(
    origin: impl Fn(&Source) -> crate::model::Origin,
) -> impl FnMut(&Source, &mut Vec<Diagnostic>) -> Option<Recipe> {
    use sha2::Digest;
    move |src, diags| {
        let (raw, errors) = src.parse::<raw::Recipe>(kind::Kind::Recipe);
        diags.extend(errors);
        let mut recipe = recipe::validate(src, raw?, diags)?;
        recipe.source = crate::model::RecipeSource {
            origin: origin(src),
            sha256: crate::canonical::hex(&sha2::Sha256::digest(src.text.as_bytes())),
        };
        Some(recipe)
    }
}

/// Whether a directory of input files must exist.
#[derive(Clone, Copy, PartialEq)]
enum Presence {
    /// Missing or empty is an error (boards/: nothing can run without one).
    Required,
    /// Missing or empty is fine (pipeline/: the built-in recipes stand in).
    Optional,
}

impl<K, V> Gathered<K, V> {
    fn new() -> Self {
        Gathered {
            items: BTreeMap::new(),
            broken: BTreeSet::new(),
            diags: Vec::new(),
            file_diags: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }
}

fn gather<K: Ord + for<'a> From<&'a str>, V>(
    root: &Path,
    dir: &str,
    what: &str,
    presence: Presence,
    validate: impl FnMut(&Source, &mut Vec<Diagnostic>) -> Option<V>,
) -> Gathered<K, V> {
    let mut out = Gathered::new();
    let shown_dir = shown_path(root, Path::new(dir));
    let entries = match std::fs::read_dir(root.join(dir)) {
        Ok(entries) => entries,
        Err(e) if presence == Presence::Optional && e.kind() == std::io::ErrorKind::NotFound => {
            return out;
        }
        Err(e) => {
            out.diags.push(Diagnostic::whole_file(
                &shown_dir,
                format!("cannot read the {what} directory: {e}; every {what} is a file `{dir}/<name>.toml` under the workspace root"),
            ));
            return out;
        }
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(std::result::Result::ok)
        .map(|e| PathBuf::from(dir).join(e.file_name()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() && presence == Presence::Required {
        out.diags.push(Diagnostic::whole_file(
            &shown_dir,
            format!("no {what}s: the directory holds no `*.toml` file"),
        ));
    }
    let sources = files
        .into_iter()
        .map(|rel| Source::read(shown_path(root, &rel), rel));
    gather_sources(&mut out, sources, what, validate);
    out
}

/// Validates each source into `out`, by its stem.
fn gather_sources<K: Ord + for<'a> From<&'a str>, V>(
    out: &mut Gathered<K, V>,
    sources: impl Iterator<Item = Result<Source, Box<Diagnostic>>>,
    what: &str,
    mut validate: impl FnMut(&Source, &mut Vec<Diagnostic>) -> Option<V>,
) {
    for src in sources {
        let src = match src {
            Ok(src) => src,
            Err(d) => {
                out.diags.push(*d);
                continue;
            }
        };
        if !names::is_plain_name(&src.stem) {
            out.diags.push(Diagnostic::whole_file(
                &src.shown,
                format!(
                    "bad {what} name `{}` (the file stem): use letters, digits, `-`, `_` and `.`, starting with a letter or digit",
                    src.stem
                ),
            ));
            continue;
        }
        let mut file_diags = Vec::new();
        let item = validate(&src, &mut file_diags);
        match item {
            Some(item) if file_diags.iter().all(|d| d.warning) => {
                out.items.insert(K::from(src.stem.as_str()), item);
                out.warnings.extend(file_diags);
            }
            _ => {
                out.broken.insert(src.stem.clone());
                out.file_diags
                    .entry(src.stem.clone())
                    .or_default()
                    .extend(file_diags);
            }
        }
    }
}

/// One input file's text and names.
pub(crate) struct Source {
    /// The path as the user sees it: used in diagnostics.
    pub shown: PathBuf,
    /// The path relative to the workspace root: stored in the model.
    pub rel: PathBuf,
    pub stem: String,
    pub text: String,
    lines: diag::LineIndex,
}

impl Source {
    fn read(shown: PathBuf, rel: PathBuf) -> Result<Source, Box<Diagnostic>> {
        let cannot = |why: String| {
            Box::new(Diagnostic::whole_file(
                &shown,
                format!("cannot read: {why}"),
            ))
        };
        let meta = std::fs::metadata(&shown).map_err(|e| cannot(e.to_string()))?;
        if !meta.is_file() {
            return Err(cannot("not a regular file".into()));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(cannot(format!(
                "{} bytes is too large for an input file (at most {MAX_FILE_BYTES})",
                meta.len()
            )));
        }
        let bytes = std::fs::read(&shown).map_err(|e| cannot(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            cannot(format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Ok(Source::new(shown, rel, text))
    }

    /// A file's text read already (or built in); its stem names it.
    fn new(shown: PathBuf, rel: PathBuf, text: String) -> Source {
        let stem = shown
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Source {
            shown,
            rel,
            stem,
            lines: diag::LineIndex::new(&text),
            text,
        }
    }

    /// A diagnostic at a byte range of this file.
    pub fn at(&self, span: Range<usize>, message: impl Into<String>) -> Diagnostic {
        Diagnostic::at_indexed(&self.shown, &self.text, &self.lines, span, message)
    }

    /// A diagnostic at a spanned value of this file.
    pub fn at_value<T>(&self, value: &Spanned<T>, message: impl Into<String>) -> Diagnostic {
        self.at(value.span(), message)
    }

    pub fn whole(&self, message: impl Into<String>) -> Diagnostic {
        Diagnostic::whole_file(&self.shown, message)
    }

    /// Deserializes the file. A syntax error is told alone (the first; what the parser
    /// finds after it are its echoes) and ends the file's checks. Otherwise every
    /// unknown key is reported (each is dropped and deserialization retried), so that
    /// one run shows all of them. When only unknown keys were wrong, the rest of the
    /// file is still returned, so that its other mistakes are found too; any other
    /// error ends the file's checks.
    ///
    /// A file whose keys say it is another kind than `expected` (a board file given as a
    /// scenario) is one error saying so.
    fn parse<T: DeserializeOwned>(&self, expected: kind::Kind) -> (Option<T>, Vec<Diagnostic>) {
        const MAX_ERRORS: usize = 20;
        let (mut doc, syntax) = DeTable::parse_recoverable(&self.text);
        if let Some((span, message)) = syntax::first(&self.text, &syntax) {
            return (None, vec![self.at(span, message)]);
        }
        if let Some(d) = kind::misplaced(self, doc.get_ref(), expected) {
            return (None, vec![d]);
        }
        doc.get_mut().make_owned();
        let mut diags = Vec::new();
        while diags.len() < MAX_ERRORS {
            let error = match T::deserialize(toml::de::Deserializer::from(doc.clone())) {
                Ok(value) => return (Some(value), diags),
                Err(e) => e,
            };
            diags.push(self.toml_error(&error));
            let removed = error.message().starts_with("unknown field")
                && error
                    .span()
                    .is_some_and(|span| keys::remove_key_at(doc.get_mut(), &span));
            if !removed {
                break;
            }
        }
        (None, diags)
    }

    fn toml_error(&self, e: &toml::de::Error) -> Diagnostic {
        let (message, help) = keys::explain_toml_message(e.message());
        // A key missing from the top level is reported against the whole document;
        // a caret under the first line would point at an innocent key.
        let whole_document = |span: &Range<usize>| {
            span.start == 0 && (span.end == 0 || span.end >= self.text.trim_end().len())
        };
        let d = match e.span() {
            Some(span) if !whole_document(&span) => self.at(span, message),
            _ => self.whole(message),
        };
        match help {
            Some(h) => d.with_help(h),
            None => d,
        }
    }
}

/// Joins a root-relative path to the root for display, without a leading `./`.
fn shown_path(root: &Path, rel: &Path) -> PathBuf {
    if root.as_os_str().is_empty() || root == Path::new(".") {
        rel.to_path_buf()
    } else {
        root.join(rel)
    }
}

/// The path of `file` relative to `root`, for the model: never absolute, so that
/// reports do not depend on where the workspace lives.
fn relative_to_root(root: &Path, file: &Path) -> PathBuf {
    let clean = |p: &Path| -> PathBuf {
        p.components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect()
    };
    let (root_clean, file_clean) = (clean(root), clean(file));
    if let Ok(rel) = file_clean.strip_prefix(&root_clean)
        && !rel.as_os_str().is_empty()
    {
        return rel.to_path_buf();
    }
    if let (Ok(r), Ok(f)) = (root.canonicalize(), file.canonicalize())
        && let Ok(rel) = f.strip_prefix(&r)
    {
        return rel.to_path_buf();
    }
    if file_clean.is_relative() && root_clean.as_os_str().is_empty() {
        return file_clean;
    }
    // Outside the root: the name alone, rather than an absolute path.
    file.file_name().map(PathBuf::from).unwrap_or(file_clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_to_root(Path::new("."), Path::new("./scenarios/a.toml")),
            PathBuf::from("scenarios/a.toml")
        );
        assert_eq!(
            relative_to_root(Path::new("/w"), Path::new("/w/scenarios/a.toml")),
            PathBuf::from("scenarios/a.toml")
        );
        assert_eq!(
            relative_to_root(Path::new("/nonexistent-w"), Path::new("/elsewhere/a.toml")),
            PathBuf::from("a.toml")
        );
        assert_eq!(
            shown_path(Path::new("."), Path::new("boards/x.toml")),
            PathBuf::from("boards/x.toml")
        );
    }
}

#[cfg(test)]
mod tests_builtin;
