//! The structure test, in the spirit of rust-analyzer's `tidy.rs`: rules about the
//! source tree itself, read from the files (no build, no lab). Every `.rs` file opens
//! with its `//!` line; no file under `src/` or `benches/` is over `MAX_LINES`; nothing
//! outside `src/transport/` starts a process; nothing outside `src/store/` writes
//! through a path the store gave out; the lower layers (`LAYERS`) name no module above
//! them; ARCHITECTURE.md's codemap names only paths that exist; `tests/it/` makes its
//! scratch directories and finds the repository one way. Each rule is a function over
//! text, with a test that it can fail.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The most lines a file may have (HELPERS.md, issue 40).
const MAX_LINES: usize = 700;

/// The trees whose files `MAX_LINES` bounds. `tests/` joins once its big modules are
/// split (issue 40's test-infrastructure part owns `tests/it/`).
const BOUNDED: [&str; 2] = ["src", "benches"];

/// What starts a process: std's and duct's ways, a pipe set up for a child, the raw
/// calls. Searched in code with comments and string literals blanked.
const SPAWNS: [&str; 12] = [
    "process::Command",
    "process::Stdio",
    "process::Child",
    "Command::new(",
    "CommandExt",
    "duct::",
    "cmd!(",
    "os_pipe::",
    "libc::fork",
    "libc::vfork",
    "libc::exec",
    "libc::posix_spawn",
];

/// Where the store's paths leave `src/store/`: its public functions that return a path
/// (`store_path_accessors` keeps this list whole), as code outside calls them.
const STORE_PATHS: [(&str, &str); 3] = [
    ("root", "store.root()"),
    ("cell_dir", ".cell_dir("),
    ("dir", "writer.dir()"),
];

/// Also a store path: the one a caller opens a store at.
const STORE_OPENS: [&str; 2] = ["Store::open(", "Store::open_read("];

/// What writes, renames or removes a file or directory.
const WRITES: [&str; 14] = [
    "fs::write(",
    "File::create(",
    "OpenOptions::new(",
    "create_dir(",
    "create_dir_all(",
    "fs::rename(",
    "remove_file(",
    "remove_dir(",
    "remove_dir_all(",
    "fs::copy(",
    "hard_link(",
    "symlink(",
    "set_permissions(",
    "write_atomic(",
];

/// The lower layers and the crate modules above them that their code (tests cut) must
/// not name: input diagnostics and the error type, the flasher below the images it is
/// given, the cell vocabulary and the encoding every layer uses, the model, the loading
/// of input files and the store sit below the plan and what walks and reports it
/// (ARCHITECTURE.md's layers).
const LAYERS: [(&str, &[&str]); 8] = [
    (
        "src/diag.rs",
        &[
            "model", "cell", "config", "store", "plan", "check", "apply", "report", "cli", "error",
        ],
    ),
    (
        "src/error.rs",
        &["config", "store", "plan", "check", "apply", "report", "cli"],
    ),
    // Images are opened, then handed to the flasher: flash names no image code.
    (
        "src/flash/",
        &["image", "config", "plan", "check", "apply", "report", "cli"],
    ),
    (
        "src/canonical.rs",
        &[
            "model", "cell", "config", "store", "plan", "check", "apply", "report", "cli",
        ],
    ),
    (
        "src/cell/",
        &[
            "config", "store", "plan", "check", "apply", "report", "cli", "stats",
        ],
    ),
    (
        "src/model/",
        &[
            "cell", "config", "store", "plan", "check", "apply", "report", "cli", "stats", "bench",
        ],
    ),
    (
        "src/config/",
        &["store", "plan", "check", "apply", "report", "cli", "stats"],
    ),
    (
        "src/store/",
        &["config", "plan", "check", "apply", "report", "cli"],
    ),
];

/// What `tests/it/` holds one copy of, and the file that holds it: the scratch
/// directory (`Scratch`, made under the temporary directory) and the repository's root.
const TEST_ONCE: [(&str, &str); 2] = [
    ("temp_dir()", "tests/it/scratch.rs"),
    ("fn repo(", "tests/it/main.rs"),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, sorted, as paths relative to the repository.
fn rust_files(dir: &str) -> Vec<PathBuf> {
    fn walk(at: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(at) else {
            return;
        };
        for e in entries.flatten() {
            let path = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => walk(&path, out),
                Ok(t) if t.is_file() && path.extension().is_some_and(|x| x == "rs") => {
                    out.push(path);
                }
                _ => {}
            }
        }
    }
    let base = root();
    let mut out = Vec::new();
    walk(&base.join(dir), &mut out);
    let mut out: Vec<PathBuf> = out
        .into_iter()
        .filter_map(|p| p.strip_prefix(&base).ok().map(Path::to_path_buf))
        .collect();
    out.sort();
    out
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// Whether `text` opens with a `//!` line.
fn opens_with_doc(text: &str) -> bool {
    text.starts_with("//!")
}

/// `text`'s line count when it is over `MAX_LINES`.
fn too_long(text: &str) -> Option<usize> {
    let n = text.lines().count();
    (n > MAX_LINES).then_some(n)
}

/// The `TEST_ONCE` mechanisms that `code`, of the test file at `path`, writes again.
fn test_copies(path: &Path, code: &str) -> Vec<&'static str> {
    TEST_ONCE
        .iter()
        .filter(|(what, home)| !path.ends_with(home) && code.contains(what))
        .map(|(what, _)| *what)
        .collect()
}

/// `text` with its comments removed and each string or char literal's contents
/// blanked (`""`), so that a rule sees only code. Raw strings, nested block comments,
/// escapes and lifetimes are told apart; a byte string is a string.
fn code_of(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == b'r' && matches!(b.get(i + 1), Some(b'"' | b'#')) && !ident_before(b, i) {
            // r"..." or r#"..."#: ends at `"` and as many `#`.
            let mut j = i + 1;
            while b.get(j) == Some(&b'#') {
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            let mut end = j + 1;
            while end < b.len()
                && !(b[end] == b'"'
                    && b[end + 1..].iter().take_while(|&&h| h == b'#').count() >= hashes)
            {
                end += 1;
            }
            out.push_str("\"\"");
            i = end + 1 + hashes;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{1b}', '"') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                out.push_str("' '");
                i = j + 1;
            } else if let Some(len) = text[i + 1..].chars().next().map(char::len_utf8)
                && b.get(i + 1 + len) == Some(&b'\'')
            {
                out.push_str("' '");
                i += len + 2;
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Whether the byte before `i` continues an identifier (`br"`, `for"`: not a raw string
/// of its own, or a byte string's `r`).
fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') && b[i - 1] != b'b'
}

/// `code` without its inline test module (`#[cfg(test)] mod NAME {` and all after it,
/// where such modules are): the rules about what benchpipe does read its code, not the
/// tests that plant files.
fn without_tests(code: &str) -> &str {
    let inline_module = |after: &str| {
        let after = after.trim_start();
        after.starts_with("mod ") && after.lines().next().is_some_and(|l| l.ends_with('{'))
    };
    code.match_indices("#[cfg(test)]")
        .find(|(at, m)| inline_module(&code[at + m.len()..]))
        .map_or(code, |(at, _)| &code[..at])
}

/// Whether `path` is test code as a whole (a test module in a file of its own).
fn is_test_file(path: &Path) -> bool {
    let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    name == "tests"
        || name.starts_with("tests_")
        || name.ends_with("_tests")
        || path.components().any(|c| c.as_os_str() == "tests")
        || name == "fixtures"
}

/// The spawn markers `code` holds; `use std::process::{...}` is read as the paths it
/// names.
fn spawns(code: &str) -> Vec<&'static str> {
    let mut text = code.to_string();
    for (at, _) in code.match_indices("process::{") {
        let group = &code[at + 10..];
        let group = &group[..group.find('}').unwrap_or(group.len())];
        for name in group.split(',').map(str::trim) {
            let _ = write!(text, " process::{name}");
        }
    }
    SPAWNS.into_iter().filter(|m| text.contains(m)).collect()
}

/// What in `code` (benchpipe's own, tests cut) takes a store path, and the writes
/// beside it: a file doing both writes where the store alone should.
fn store_writes(code: &str) -> Option<(Vec<&'static str>, Vec<&'static str>)> {
    let code = without_tests(code);
    let takes: Vec<&str> = STORE_PATHS
        .iter()
        .map(|(_, call)| *call)
        .chain(STORE_OPENS)
        .filter(|m| code.contains(m))
        .collect();
    let writes: Vec<&str> = WRITES.into_iter().filter(|w| code.contains(w)).collect();
    (!takes.is_empty() && !writes.is_empty()).then_some((takes, writes))
}

/// The crate's top modules `code` names: `crate::plan::Cell`, each of
/// `crate::{plan::{self, Cell}, store}`.
fn crate_modules(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (at, m) in code.match_indices("crate::") {
        let rest = &code[at + m.len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.push(ident(rest));
            continue;
        };
        // The names at the group's top level: after its `{` and each comma at depth 0.
        let (mut depth, mut start) = (0usize, 0);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.push(ident(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(ident(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    out.retain(|n| !n.is_empty());
    out.sort();
    out.dedup();
    out
}

/// The modules of `above` that `code` (benchpipe's own, tests cut) names.
fn upward(code: &str, above: &[&str]) -> Vec<String> {
    crate_modules(without_tests(code))
        .into_iter()
        .filter(|m| above.contains(&m.as_str()))
        .collect()
}

/// The names of the public functions in `code` that return a path.
fn path_returning_fns(code: &str) -> Vec<String> {
    let code = without_tests(code);
    let mut out = Vec::new();
    for (at, _) in code.match_indices("pub fn ") {
        let rest = &code[at + 7..];
        let Some(body) = rest.find('{') else { continue };
        let signature = &rest[..body];
        let returns = signature.rsplit_once("->").map_or("", |(_, r)| r);
        if returns.contains("Path") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

/// The paths ARCHITECTURE.md names that do not exist under `base`: in its codemap (the
/// `| where | what |` table), a where-cell's backticked paths from the repository's
/// root, a what-cell's source files (`declare.rs`, `chart/svg.rs`) and directories from
/// a where-path's directory, the one above it or the root; and every relative link.
fn codemap_missing(markdown: &str, base: &Path) -> Vec<String> {
    let ticked = |cell: &str, place: bool| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .filter(|t| looks_like_path(t, place))
            .map(str::to_string)
            .collect()
    };
    let mut missing = Vec::new();
    let table = markdown
        .split("## Codemap")
        .nth(1)
        .map_or("", |s| s.split("\n## ").next().unwrap_or(s));
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let (place, what) = (cells[0], cells.get(1).copied().unwrap_or(""));
        let places = ticked(place, true);
        let mut dirs: Vec<PathBuf> = Vec::new();
        for p in &places {
            if !base.join(p).exists() {
                missing.push(p.clone());
            }
            let path = Path::new(p.trim_end_matches('/'));
            let dir = if p.ends_with('/') {
                path.to_path_buf()
            } else {
                path.parent().unwrap_or(Path::new("")).to_path_buf()
            };
            dirs.push(dir.parent().unwrap_or(Path::new("")).to_path_buf());
            dirs.push(dir);
        }
        dirs.push(PathBuf::new());
        for t in ticked(what, false) {
            if !dirs.iter().any(|d| base.join(d).join(&t).exists()) {
                missing.push(t);
            }
        }
    }
    for (at, _) in markdown.match_indices("](") {
        let target = &markdown[at + 2..];
        let target = &target[..target.find(')').unwrap_or(0)];
        let file = target.split('#').next().unwrap_or("");
        if !file.is_empty() && !file.contains("://") && !base.join(file).exists() {
            missing.push(file.to_string());
        }
    }
    missing
}

/// Whether a backticked word is a path of the repository: no spaces or code, and a
/// file or a directory (ends with `/`). A where-cell names any file; a what-cell's files
/// are source files (`cell.json`, `pipeline/NAME.toml` there are formats, not paths),
/// its directories have a `/` inside (`results/` is the store a user makes).
fn looks_like_path(t: &str, place: bool) -> bool {
    let plain = !t.contains([' ', '(', ':', '*', '<', '{', '='])
        && t.chars().next().is_some_and(char::is_alphanumeric);
    let file = if place {
        [".rs", ".md", ".toml", ".nix", ".json", ".sh"]
            .iter()
            .any(|x| t.ends_with(x))
    } else {
        t.ends_with(".rs")
    };
    let dir = t.ends_with('/') && (place || t.trim_end_matches('/').contains('/'));
    plain && (file || dir)
}

#[test]
fn every_rust_file_opens_with_its_doc_line() {
    let bad: Vec<PathBuf> = ["src", "tests", "benches", "fuzz/fuzz_targets"]
        .iter()
        .flat_map(|d| rust_files(d))
        .filter(|p| !opens_with_doc(&read(p)))
        .collect();
    assert!(bad.is_empty(), "files without a `//!` first line: {bad:?}");
}

#[test]
fn no_file_is_over_the_line_limit() {
    let bad: Vec<(PathBuf, usize)> = BOUNDED
        .iter()
        .flat_map(|d| rust_files(d))
        .filter_map(|p| too_long(&read(&p)).map(|n| (p, n)))
        .collect();
    assert!(bad.is_empty(), "files over {MAX_LINES} lines: {bad:?}");
}

#[test]
fn nothing_outside_transport_starts_a_process() {
    let files = rust_files("src");
    assert!(files.len() > 100, "{}", files.len());
    let bad: Vec<(PathBuf, Vec<&str>)> = files
        .into_iter()
        .filter(|p| !p.starts_with("src/transport") && !p.ends_with("src/tidy.rs"))
        .filter_map(|p| {
            let found = spawns(&code_of(&read(&p)));
            (!found.is_empty()).then_some((p, found))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "processes started outside src/transport/ (ask a `Transport`, e.g. \
         `transport::local::Local`): {bad:?}"
    );
}

#[test]
fn nothing_outside_the_store_writes_where_a_store_path_is_taken() {
    let mut bad = Vec::new();
    for p in rust_files("src") {
        if p.starts_with("src/store") || p.ends_with("src/tidy.rs") || is_test_file(&p) {
            continue;
        }
        if let Some(found) = store_writes(&code_of(&read(&p))) {
            bad.push((p, found));
        }
    }
    assert!(
        bad.is_empty(),
        "files that take a store path and write files (only src/store/ writes under the \
         store): {bad:?}"
    );
}

#[test]
fn the_store_gives_out_paths_only_where_the_write_rule_looks() {
    let mut found: Vec<String> = rust_files("src/store")
        .iter()
        .filter(|p| !is_test_file(p))
        .flat_map(|p| path_returning_fns(&code_of(&read(p))))
        .collect();
    found.sort();
    let mut known: Vec<String> = STORE_PATHS.iter().map(|(n, _)| n.to_string()).collect();
    known.sort();
    assert_eq!(
        found, known,
        "a store function returning a path: add how it is called to STORE_PATHS"
    );
}

#[test]
fn the_lower_layers_name_no_module_above_them() {
    let mut bad = Vec::new();
    for (layer, above) in LAYERS {
        let files = if layer.ends_with(".rs") {
            vec![PathBuf::from(layer)]
        } else {
            rust_files(layer.trim_end_matches('/'))
        };
        assert!(!files.is_empty(), "{layer}");
        for p in files.into_iter().filter(|p| !is_test_file(p)) {
            let found = upward(&code_of(&read(&p)), above);
            if !found.is_empty() {
                bad.push((p, found));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "a lower layer names a module above it (move the shared type down, or the check \
         up: ARCHITECTURE.md's layers): {bad:?}"
    );
}

#[test]
fn the_codemap_names_only_paths_that_exist() {
    let missing = codemap_missing(&read(Path::new("ARCHITECTURE.md")), &root());
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's codemap names {missing:?}"
    );
}

#[test]
fn tests_make_scratch_directories_and_find_the_repository_one_way() {
    let files = rust_files("tests/it");
    assert!(files.len() > 50, "{}", files.len());
    let bad: Vec<(PathBuf, Vec<&str>)> = files
        .into_iter()
        .filter_map(|p| {
            let found = test_copies(&p, &code_of(&read(&p)));
            (!found.is_empty()).then_some((p, found))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "test files that make a temporary directory of their own (use \
         `crate::scratch::Scratch`) or find the repository again (use `crate::repo()`): {bad:?}"
    );
}

/// Each rule fails on a small text that breaks it, and passes the text that keeps it.
#[test]
fn each_rule_can_fail() {
    assert!(!opens_with_doc("use std::fs;\n//! late\n"));
    assert!(!opens_with_doc("\n//! after a blank line\n"));
    assert!(opens_with_doc("//! What this owns.\n"));

    assert_eq!(too_long(&"x\n".repeat(MAX_LINES + 1)), Some(MAX_LINES + 1));
    assert_eq!(too_long(&"x\n".repeat(MAX_LINES)), None);

    for spawning in [
        "let out = std::process::Command::new(\"sh\").output();",
        "use std::process::{Command, Stdio};",
        "use std::process::{\n    ExitCode,\n    Child,\n};",
        "duct::cmd(\"ls\", [\"-l\"]).run()?;",
        "let (r, w) = os_pipe::pipe()?;",
        "unsafe { libc::fork() };",
    ] {
        assert!(!spawns(&code_of(spawning)).is_empty(), "{spawning}");
    }
    for quiet in [
        "// std::process::Command::new is for transport/",
        "/* duct::cmd /* nested */ os_pipe:: */ let x = 1;",
        "let s = \"Command::new(\\\"sh\\\")\";",
        "let s = r#\"process::Command \"quoted\" \"#;",
        "let q = '\"'; let t = std::thread::spawn(|| 1); fn f<'a>(x: &'a str) {}",
        "std::process::exit(2); use std::process::{ExitCode, exit};",
    ] {
        assert_eq!(spawns(&code_of(quiet)), Vec::<&str>::new(), "{quiet}");
    }
    // Code after a comment or string is still read.
    assert!(!spawns(&code_of("let u = \"http://x\"; Command::new(\"sh\");")).is_empty());

    let writes_under = "fn f(store: &Store) {\n let d = store.root().join(\"x\");\n \
                        std::fs::write(d, b\"\").unwrap();\n}";
    assert!(store_writes(writes_under).is_some());
    let opens = "let s = Store::open(&dir)?; std::fs::create_dir_all(dir.join(\"c\"))?;";
    assert!(store_writes(opens).is_some());
    let tests_plant = "fn f(store: &Store) -> usize { store.root().iter().count() }\n\
                       #[cfg(test)]\nmod tests {\n fn g() { std::fs::write(\"x\", \"\"); }\n}";
    assert_eq!(store_writes(tests_plant), None);
    // A test-only item mid-file does not hide the code after it.
    let mid = "#[cfg(test)]\nfn helper() {}\nfn f(s: &Store) { let d = s.cell_dir(c); \
               std::fs::remove_dir_all(d); }";
    assert!(store_writes(mid).is_some());
    assert_eq!(
        store_writes("fn f() { std::fs::write(\"x\", \"\"); }"),
        None
    );

    let above: &[&str] = &["plan", "store"];
    for pointing_up in [
        "use crate::plan::Cell;",
        "use crate::{model::Scenario, plan::{self, Plan}};",
        "fn f() { let p = crate::store::Store::open(d); }",
        "use crate::{\n    model,\n    store,\n};",
    ] {
        assert!(
            !upward(&code_of(pointing_up), above).is_empty(),
            "{pointing_up}"
        );
    }
    for level in [
        "use crate::model::{Scenario, planned};",
        "use crate::{cell::{Cell, planner}, model};",
        "// crate::plan::expand is above\nlet s = \"crate::store\";",
        "fn f() {}\n#[cfg(test)]\nmod tests {\n use crate::plan::fixtures;\n}",
    ] {
        assert_eq!(
            upward(&code_of(level), above),
            Vec::<String>::new(),
            "{level}"
        );
    }

    let store_mod = "impl S { pub fn root(&self) -> &Path { &self.r } \
                     pub fn log(&self) -> PathBuf { self.r.join(\"l\") } \
                     pub fn n(&self) -> usize { 1 } }";
    assert_eq!(path_returning_fns(store_mod), ["root", "log"]);

    let own_tmp = "let d = std::env::temp_dir().join(format!(\"bp-{}\", id));";
    let config = Path::new("tests/it/config.rs");
    assert_eq!(test_copies(config, &code_of(own_tmp)), ["temp_dir()"]);
    assert!(test_copies(Path::new("tests/it/scratch.rs"), &code_of(own_tmp)).is_empty());
    let own_repo = "fn repo() -> PathBuf { PathBuf::from(env!(\"CARGO_MANIFEST_DIR\")) }";
    assert_eq!(test_copies(config, &code_of(own_repo)), ["fn repo("]);
    assert!(test_copies(Path::new("tests/it/main.rs"), &code_of(own_repo)).is_empty());
    let told = "// not std::env::temp_dir() but Scratch\nlet s = \"fn repo(\"; repo();";
    assert!(test_copies(config, &code_of(told)).is_empty());

    let map = "# A, see [the safety](docs/SAFETY.md) and [gone](docs/GONE.md#x)\n\
               \n## Codemap\n\n| where | what |\n|---|---|\n\
               | `src/lib.rs` | the crate; see `tidy.rs` |\n\
               | `src/gone.rs`, `src/report/` | `chart/svg.rs`, `series.rs`, `missing.rs` |\n\
               \n## Invariants\n\n| `src/not_the_map.rs` | x |\n";
    assert_eq!(
        codemap_missing(map, &root()),
        ["src/gone.rs", "missing.rs", "docs/GONE.md"]
    );
}
