//! Tests of the built-in recipes: a workspace with no `pipeline/` loads them, and one
//! of its own replaces the built-in of its name, with the same keys for the same text.

use std::path::{Path, PathBuf};

use super::*;
use crate::model::Origin;

/// A workspace directory outside the source tree, removed on drop.
struct Ws(PathBuf);

impl Ws {
    fn new(tag: &str) -> Ws {
        let dir = std::env::temp_dir().join(format!("bp-builtin-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let ws = Ws(dir);
        ws.write(
            "boards/here.toml",
            "model = \"m\"\nlocal = true\nworkdir = \"/var/tmp/bp-builtin\"\n\n\
             [[storage]]\nname = \"scratch\"\nrole = \"scratch\"\npath = \"/var/tmp/bp-builtin/s\"\n",
        );
        ws.write(
            "scenarios/s.toml",
            "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\n\
             board = [\"here\"]\nstorage = [\"scratch\"]\nfilesystem = [\"as-is\"]\n\
             test = [\"xz\", \"disk-4k\"]\n",
        );
        ws
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn load(&self) -> Result<Workspace, Diagnostics> {
        let files = [self.0.join("scenarios/s.toml")];
        crate::check::load(&find_root(&files), &files)
    }
}

impl Drop for Ws {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sha256(text: &str) -> String {
    use sha2::Digest;
    crate::canonical::hex(&sha2::Sha256::digest(text.as_bytes()))
}

/// Every shipped recipe loads without a diagnostic, warnings included: a user cannot
/// fix a built-in, so none may complain.
#[test]
fn every_built_in_recipe_loads_cleanly() {
    let empty = Ws::new("empty");
    let got = gather_recipes(&empty.0);
    let all: Vec<String> = (got.diags.iter())
        .chain(got.warnings.iter())
        .chain(got.file_diags.values().flatten())
        .map(ToString::to_string)
        .collect();
    assert!(all.is_empty(), "{all:#?}");
    assert_eq!(got.items.len(), builtin::RECIPES.len());
}

/// A workspace with boards/ and scenarios/ only (the clone's pipeline/ far away) loads
/// with the built-in recipes, named `<built-in>/pipeline/NAME.toml`, each with its text's
/// sha256.
#[test]
fn a_workspace_without_pipeline_uses_the_built_in_recipes() {
    let ws = Ws::new("bare");
    let loaded = ws.load().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.root, ws.0);
    let xz = &loaded.recipes[&"xz".into()];
    assert_eq!(xz.file, Path::new("<built-in>/pipeline/xz.toml"));
    assert_eq!(xz.source.origin, Origin::BuiltIn);
    assert_eq!(
        xz.source.sha256,
        sha256(builtin::recipe("xz").unwrap()),
        "the hash is of the recipe's text"
    );
    assert_eq!(
        crate::plan::expand(&loaded, &loaded.scenarios[0])
            .cells
            .len(),
        2
    );
}

/// A workspace root is found from scenarios/ alone: no boards/ or pipeline/ beside it.
#[test]
fn a_root_holding_only_scenarios_is_the_workspace_root() {
    let ws = Ws::new("only-scenarios");
    std::fs::remove_dir_all(ws.0.join("boards")).unwrap();
    assert_eq!(find_root(&[ws.0.join("scenarios/s.toml")]), ws.0);
}

/// A workspace's own pipeline/xz.toml is used in place of the built-in and says so; a
/// new name adds a test; the same text as the built-in is said as such and keeps every
/// cell key; a different text that means the same keeps the keys too.
#[test]
fn a_workspace_recipe_replaces_the_built_in_of_its_name() {
    let ws = Ws::new("override");
    let built_in = ws.load().unwrap();
    let keys = |w: &Workspace| -> Vec<String> {
        (crate::plan::expand(w, &w.scenarios[0]).cells.iter())
            .map(|c| c.key.to_string())
            .collect()
    };
    let shipped = builtin::recipe("xz").unwrap();

    ws.write("pipeline/xz.toml", shipped);
    ws.write("pipeline/mine.toml", builtin::recipe("disk-4k").unwrap());
    let same = ws.load().unwrap_or_else(|e| panic!("{e}"));
    let xz = &same.recipes[&"xz".into()];
    assert_eq!(xz.file, Path::new("pipeline/xz.toml"));
    assert_eq!(xz.source.origin, Origin::SameAsBuiltIn);
    assert_eq!(
        same.recipes[&"mine".into()].source.origin,
        Origin::Workspace
    );
    assert_eq!(
        same.recipes[&"disk-4k".into()].source.origin,
        Origin::BuiltIn
    );
    assert_eq!(keys(&same), keys(&built_in), "the same text, the same keys");

    let described = shipped.replacen("description = ", "description = \"mine\"\n#", 1);
    ws.write("pipeline/xz.toml", &described);
    let own = ws.load().unwrap_or_else(|e| panic!("{e}"));
    let xz = &own.recipes[&"xz".into()];
    assert_eq!(xz.source.origin, Origin::Overrides);
    assert_eq!(xz.description, "mine");
    assert_eq!(xz.source.sha256, sha256(&described));
    assert_eq!(keys(&own), keys(&built_in), "a description is no input");

    let slower = shipped.replacen(" corpus\n", " --memlimit=1GiB corpus\n", 1);
    assert_ne!(slower, shipped, "the xz recipe's command changed");
    ws.write("pipeline/xz.toml", &slower);
    let changed = ws.load().unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(
        keys(&changed),
        keys(&built_in),
        "another command, another key"
    );
}

/// A broken file of a built-in's name is an error: never a silent fall-back to the
/// built-in. A pipeline/ that is no directory is an error too; an empty one is fine.
#[test]
fn a_broken_override_is_an_error_not_the_built_in() {
    let ws = Ws::new("broken");
    std::fs::create_dir_all(ws.0.join("pipeline")).unwrap();
    ws.load()
        .unwrap_or_else(|e| panic!("an empty pipeline/ is fine: {e}"));
    ws.write("pipeline/xz.toml", "description = 1\n");
    let err = ws.load().expect_err("a broken xz").to_string();
    assert!(err.contains("pipeline/xz.toml:1:15"), "{err}");
    assert!(!err.contains("<built-in>"), "{err}");
    assert!(!err.contains("unknown test"), "{err}");

    std::fs::remove_dir_all(ws.0.join("pipeline")).unwrap();
    ws.write("pipeline", "not a directory");
    let err = ws.load().expect_err("pipeline is a file").to_string();
    assert!(err.contains("cannot read the recipe directory"), "{err}");
}
