//! The fuzz targets' bodies: one function per target, taking the fuzzer's bytes, shared
//! by the cargo-fuzz targets (`fuzz/fuzz_targets/`) and the stable test that runs each
//! over its committed corpus and mutations of it (`tests.rs`), so the two cannot
//! drift. Each feeds one reader of hostile input (a config loader, a tool's or board's
//! output, the store's records, a block map, an image archive, a template) the bytes,
//! through the entry point the program uses, and asserts what the reader promises
//! beyond not panicking: a config mistake is a diagnostic naming the file, with a line
//! and column inside it. Not an API: hidden from the docs.

mod config;
mod outputs;
mod stored;
#[cfg(test)]
mod tests;

pub use config::{board, recipe, scenario, template};
pub use outputs::{bmap, board_output, tool_output};
pub use stored::{image_archive, report_template, store};

/// A target's body: the fuzzer's bytes in, a panic for what it finds.
pub type Target = fn(&[u8]);

/// Every target, by the name of its file in `fuzz/fuzz_targets/` and of its corpus
/// directory (`fuzz/corpus/<name>/`).
pub const TARGETS: [(&str, Target); 10] = [
    ("board", board),
    ("scenario", scenario),
    ("recipe", recipe),
    ("template", template),
    ("tool_output", tool_output),
    ("board_output", board_output),
    ("bmap", bmap),
    ("store", store),
    ("image_archive", image_archive),
    ("report_template", report_template),
];

/// The fuzzer's bytes as text, as a file read from disk would give them to a reader
/// that takes text: invalid UTF-8 replaced, so that mutations of any byte still reach
/// the reader.
fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

/// The first line of `data` (a selector: a parser's name, a file's name) and the rest.
fn split_first_line(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}
