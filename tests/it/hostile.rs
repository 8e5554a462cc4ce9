//! Integration tests: the hostile-input corpus. Each file in `tests/hostile/*.toml` is one
//! input a careless user or an attacker could write; the real binary must refuse it with
//! the expected message, without a panic and without unbounded output.
//!
//! A case edits a copy of `tests/hostile/base/` (a small workspace that `check` accepts)
//! and runs one command in it:
//!
//! ```toml
//! guards = "the ARCHITECTURE.md invariant this case protects"
//! args = ["check", "scenarios/s.toml"]    # optional; this is the default
//! exit = 2                                # optional; this is the default
//! expect = ["boards/pi.toml:14:", "..."]  # substrings stderr must all contain
//! [[edit]]                                # applied in order to the base copy
//! file = "boards/pi.toml"
//! find = "text that must exist"
//! replace = "its replacement"
//! [files]                                 # whole files, new or replacing
//! "pipeline/evil.toml" = '''...'''
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

/// Output beyond this is itself a failure: bounded diagnostics are one of the guarantees.
const MAX_STDERR: usize = 64 << 10;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    guards: String,
    #[serde(default = "default_args")]
    args: Vec<String>,
    #[serde(default = "default_exit")]
    exit: i32,
    expect: Vec<String>,
    #[serde(default)]
    edit: Vec<Edit>,
    #[serde(default)]
    files: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Edit {
    file: String,
    find: String,
    replace: String,
}

fn default_args() -> Vec<String> {
    vec!["check".into(), "scenarios/s.toml".into()]
}

fn default_exit() -> i32 {
    2
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Builds the case's workspace under `dir`; a case whose edit no longer matches the base
/// is a broken case, not a pass.
fn workspace(case: &Case, dir: &Path) -> Result<(), String> {
    copy_tree(&corpus_dir().join("base"), dir);
    for e in &case.edit {
        let path = dir.join(&e.file);
        let text = std::fs::read_to_string(&path).map_err(|err| format!("{}: {err}", e.file))?;
        if !text.contains(&e.find) {
            return Err(format!("edit: {} does not contain {:?}", e.file, e.find));
        }
        std::fs::write(&path, text.replacen(&e.find, &e.replace, 1)).unwrap();
    }
    for (rel, text) in &case.files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    Ok(())
}

/// Runs one case and returns what is wrong with the outcome, if anything.
fn run_case(name: &str, case: &Case) -> Option<String> {
    let dir = std::env::temp_dir().join(format!("benchpipe-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = workspace(case, &dir) {
        return Some(e);
    }
    let out = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(&case.args)
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut wrong = Vec::new();
    if out.status.code() != Some(case.exit) {
        wrong.push(format!(
            "exit {:?}, expected {}",
            out.status.code(),
            case.exit
        ));
    }
    if stderr.contains("panicked") {
        wrong.push("it panicked".to_string());
    }
    if out.stderr.len() > MAX_STDERR {
        wrong.push(format!("{} bytes of stderr", out.stderr.len()));
    }
    for e in &case.expect {
        if !stderr.contains(e.as_str()) {
            wrong.push(format!("stderr lacks {e:?}"));
        }
    }
    if wrong.is_empty() {
        None
    } else {
        let head: String = stderr.chars().take(4000).collect();
        Some(format!(
            "{} (guards: {})\n--- stderr:\n{head}",
            wrong.join("; "),
            case.guards
        ))
    }
}

#[test]
fn the_base_workspace_is_accepted() {
    let case = Case {
        guards: "the corpus itself".into(),
        args: default_args(),
        exit: 0,
        expect: vec![],
        edit: vec![],
        files: BTreeMap::new(),
    };
    assert_eq!(run_case("base", &case), None);
}

#[test]
fn every_hostile_input_is_refused_with_its_message() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no cases in {}", corpus_dir().display());
    let mut failures = Vec::new();
    for path in &cases {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let case: Case = match toml::from_str(&text) {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{name}: not a valid case: {e}"));
                continue;
            }
        };
        if let Some(wrong) = run_case(&name, &case) {
            failures.push(format!("{name}: {wrong}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} hostile cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}
