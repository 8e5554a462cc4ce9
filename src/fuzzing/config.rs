//! The config loaders' targets: a board file, a scenario, a pipeline recipe and a
//! command template, each loaded as `check` loads a workspace (`check::load_texts`:
//! the same validation, from memory), and every diagnostic held to `check`'s promise.

use crate::bench::{self, Vars};
use crate::config::texts::Texts;
use crate::diag::Diagnostics;
use crate::model::Workspace;
use crate::plan;

/// The boards a fuzzed scenario may name: the demo's and the seed studies' hardware.
const BOARDS: [(&str, &str); 6] = [
    (
        "boards/localhost.toml",
        include_str!("../../boards/localhost.toml"),
    ),
    (
        "boards/rpi3-1.toml",
        include_str!("../../examples/seeds/boards/rpi3-1.toml"),
    ),
    (
        "boards/opi-zero-plus-1.toml",
        include_str!("../../examples/seeds/boards/opi-zero-plus-1.toml"),
    ),
    (
        "boards/odroid-hc2-1.toml",
        include_str!("../../examples/seeds/boards/odroid-hc2-1.toml"),
    ),
    (
        "boards/dramble-pi4-1.toml",
        include_str!("../../examples/seeds/boards/dramble-pi4-1.toml"),
    ),
    (
        "boards/turing-cm3-1.toml",
        include_str!("../../examples/seeds/boards/turing-cm3-1.toml"),
    ),
];

/// The scenario a fuzzed recipe or template is loaded with: its test on the demo board.
const USES_FUZZ: &str = r#"title = "The fuzzed recipe"
[images.installed]
installed = true
[matrix]
image = ["installed"]
board = ["localhost"]
storage = ["scratch-dir"]
filesystem = ["as-is"]
test = ["fuzz"]
"#;

/// The scenario a fuzzed board file is loaded with: a scenario using it, so that its
/// mistakes are errors (a board file no scenario uses only warns).
const USES_BOARD: &str = r#"title = "The fuzzed board"
[images.installed]
installed = true
[matrix]
image = ["installed"]
board = ["fuzz"]
test = ["xz"]
"#;

/// A board file as `boards/fuzz.toml`, with a scenario using it.
pub fn board(data: &[u8]) {
    let text = super::text(data);
    let files = [("boards/fuzz.toml", &*text)];
    let loaded = load(Texts {
        boards: &files,
        scenarios: &[("scenarios/uses-board.toml", USES_BOARD)],
        ..Texts::default()
    });
    assert_located(&loaded, &files);
}

/// A scenario, as `scenarios/fuzz.toml`, with `BOARDS` and the built-in recipes.
pub fn scenario(data: &[u8]) {
    let text = super::text(data);
    let scenarios = [("scenarios/fuzz.toml", &*text)];
    let loaded = load(Texts {
        boards: &BOARDS,
        scenarios: &scenarios,
        ..Texts::default()
    });
    assert_located(&loaded, &BOARDS);
    assert_located(&loaded, &scenarios);
}

/// A pipeline recipe, as `pipeline/fuzz.toml`, with a scenario running it on the
/// demo board.
pub fn recipe(data: &[u8]) {
    let text = super::text(data);
    let pipeline = [("pipeline/fuzz.toml", &*text)];
    let scenarios = [("scenarios/uses-fuzz.toml", USES_FUZZ)];
    let loaded = load(Texts {
        boards: &BOARDS[..1],
        pipeline: &pipeline,
        scenarios: &scenarios,
    });
    assert_located(&loaded, &pipeline);
}

/// A command template: rendered as apply renders it (`bench::render`, values
/// shell-quoted, bounded work and size) and as `check` does (`render_marked`), then
/// given as a recipe's command, so that config's template checks place what they
/// find at the right line and column of the TOML string holding it.
pub fn template(data: &[u8]) {
    let template = super::text(data);
    let mut vars = Vars::new();
    bench::TemplateVars::sample().set_on(&mut vars);
    vars.set("size", "32M").set("runs", 3).set("name", "a b'c");
    if let Ok(out) = bench::render(&template, &vars) {
        assert!(out.len() <= bench::MAX_RENDERED_BYTES);
    }
    if let Ok((out, spans)) = bench::render_marked(&template, &vars) {
        assert!(out.len() <= bench::MAX_RENDERED_BYTES);
        for span in spans {
            assert!(out.get(span.output_range()).is_some(), "{span:?}");
        }
    }
    let quoted = toml::Value::String(template.into_owned()).to_string();
    let text = format!(
        "description = \"a fuzzed command template\"\n\
         [params]\nsize = \"32M\"\nruns = 3\nname = \"a b'c\"\n\
         [run]\non = \"board\"\ncommand = {quoted}\nparse = \"json\"\n\
         [metrics]\nm = {{ label = \"m\", from = \"m\", unit = \"s\", better = \"lower\" }}\n"
    );
    recipe(text.as_bytes());
}

/// `check`'s load of `texts`, with its default limit on cells.
fn load(texts: Texts<'_>) -> Result<Workspace, Diagnostics> {
    crate::check::load_texts(texts, plan::DEFAULT_MAX_CELLS)
}

/// What `check` promises of a load's diagnostics about `files`: each names the file,
/// one at a place has a line of the file and a column of that line, and a file that is
/// not TOML at all gets an error at a place, never only a whole-file message. Every
/// diagnostic renders (`Display`), bounded.
fn assert_located(loaded: &Result<Workspace, Diagnostics>, files: &[(&str, &str)]) {
    let Err(diags) = loaded else {
        return;
    };
    let rendered = diags.to_string();
    assert!(
        rendered.len() <= 64 * 1024,
        "{} bytes of diagnostics",
        rendered.len()
    );
    for (path, text) in files {
        let mine: Vec<_> = diags
            .0
            .iter()
            .filter(|d| d.file == std::path::Path::new(path))
            .collect();
        for d in &mine {
            let _ = d.to_string();
            if d.line == 0 {
                assert_eq!(d.col, 0, "{d}");
                continue;
            }
            let line = text.split('\n').nth(d.line - 1);
            let Some(line) = line else {
                panic!("{path} has no line {}: {d}", d.line);
            };
            assert!(
                d.col >= 1 && d.col <= line.chars().count() + 1,
                "{path}:{} has no column {}: {d}",
                d.line,
                d.col
            );
        }
        if toml::from_str::<toml::Table>(text).is_err() {
            assert!(
                mine.iter().any(|d| !d.warning && d.line > 0),
                "{path} is not TOML, and no error says where: {diags}"
            );
        }
    }
}
