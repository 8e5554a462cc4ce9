//! The fuzz targets without nightly: each target's body (`TARGETS`) over every file of
//! its committed corpus (`fuzz/corpus/<target>/`: seeds and the crashes fuzzing found)
//! and over a bounded number of deterministic mutations of them (a xorshift, so a
//! failure is the same input every run). A panic fails the test with the input that
//! made it, written beside the target's corpus to be replayed with `cargo fuzz run`.

use std::path::{Path, PathBuf};

use super::TARGETS;

/// Mutated inputs per target: with the corpus, a second or two of the slowest target.
const MUTATIONS: usize = 1500;

/// The longest mutated input: mutations grow inputs, and the fuzzers run at 4 KiB.
const MAX_LEN: usize = 16 * 1024;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target)
}

/// The shipped report templates as `report_template` inputs (their selector byte, then
/// the text): seeds read from `src/report/templates/`, never copied into the corpus.
fn shipped_templates() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/report/templates");
    crate::report::TEMPLATE_NAMES
        .iter()
        .zip(0u8..)
        .map(|(name, selector)| {
            let mut input = vec![selector];
            input.extend(std::fs::read(dir.join(name)).unwrap());
            (format!("shipped {name}"), input)
        })
        .collect()
}

/// The target's corpus, sorted by name (`report_template`'s with the shipped templates).
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    if target == "report_template" {
        files.extend(shipped_templates());
    }
    files.sort();
    files
}

/// Marsaglia's xorshift64: small, deterministic, good enough to pick mutations.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number below `n` (which is not 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Bytes that end tokens, open and close structures, or sit at a boundary of a number:
/// the ones a mutation most often turns a valid input into an edge case with.
const INTERESTING: &[u8] = b"\0\n\r\t \"'\\{}[]<>=:,.-+#@%$`|*?/0123456789eE\xff\x7f\xc3";

/// Words the readers look for; a splice of one often opens a new path.
const WORDS: &[&[u8]] = &[
    b"{{",
    b"}}",
    b"{%",
    b"%}",
    b"[[",
    b"]]",
    b"\"\"\"",
    b"'''",
    b"@@",
    b"</Range>",
    b"<Range>",
    b"-1",
    b"18446744073709551616",
    b"1e308",
    b"NaN",
    b"inf",
    b"\\u0000",
    b"format",
    b"null",
    b"true",
    b"range(",
    b"\n@@stderr\n",
    b"0x",
    b"9999999999",
];

/// One to four mutations of `input`, some splicing in a part of `other`.
fn mutate(rng: &mut XorShift, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut out = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = if out.is_empty() {
            0
        } else {
            rng.below(out.len() + 1)
        };
        match rng.below(8) {
            0 if at < out.len() => out[at] ^= 1 << rng.below(8),
            1 if at < out.len() => out[at] = INTERESTING[rng.below(INTERESTING.len())],
            2 => out.insert(at, INTERESTING[rng.below(INTERESTING.len())]),
            3 if at < out.len() => {
                let end = (at + 1 + rng.below(16)).min(out.len());
                out.drain(at..end);
            }
            4 => {
                let word = WORDS[rng.below(WORDS.len())];
                out.splice(at..at, word.iter().copied());
            }
            5 if !out.is_empty() => {
                // A piece of the input again, somewhere: nesting and repetition.
                let from = rng.below(out.len());
                let len = (1 + rng.below(64)).min(out.len() - from);
                let piece = out[from..from + len].to_vec();
                out.splice(at..at, piece);
            }
            6 if !other.is_empty() => {
                let from = rng.below(other.len());
                let len = (1 + rng.below(128)).min(other.len() - from);
                out.splice(at..at, other[from..from + len].iter().copied());
            }
            _ => out.truncate(at),
        }
    }
    out.truncate(MAX_LEN);
    out
}

/// The first input of `corpus` and of `MUTATIONS` mutations of it (drawn from `seed`)
/// that makes `body` panic: what it is, its bytes and the panic's message.
fn first_panic(
    body: super::Target,
    corpus: &[(String, Vec<u8>)],
    seed: u64,
) -> Option<(String, Vec<u8>, String)> {
    let mut rng = XorShift(seed);
    let inputs = corpus
        .iter()
        .map(|(name, bytes)| (name.clone(), bytes.clone()));
    let mutated: Vec<(String, Vec<u8>)> = (0..MUTATIONS)
        .map(|i| {
            let (base_name, base) = &corpus[rng.below(corpus.len())];
            let (_, other) = &corpus[rng.below(corpus.len())];
            (
                format!("mutation {i} of {base_name}"),
                mutate(&mut rng, base, other),
            )
        })
        .collect();
    for (what, input) in inputs.chain(mutated) {
        if let Err(panic) = std::panic::catch_unwind(|| body(&input)) {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(ToString::to_string))
                .unwrap_or_else(|| "(no message)".into());
            return Some((what, input, message));
        }
    }
    None
}

/// Runs the target over its corpus and mutations of it; on a panic, writes the input
/// as `fuzz/artifacts/<target>/stable-<hash>` and fails naming it.
fn run(target: &str) {
    let (_, body) = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .unwrap_or_else(|| panic!("no target {target}"));
    let corpus = corpus(target);
    assert!(!corpus.is_empty(), "{target}: an empty corpus");
    let seed = 0x9e37_79b9_7f4a_7c15 ^ fnv(target.as_bytes());
    let Some((what, input, message)) = first_panic(*body, &corpus, seed) else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/artifacts")
        .join(target);
    let saved = std::fs::create_dir_all(&dir).and_then(|()| {
        let path = dir.join(format!("stable-{:016x}", fnv(&input)));
        std::fs::write(&path, &input).map(|()| path)
    });
    let shown = crate::shown::shown(&String::from_utf8_lossy(&input)).into_owned();
    panic!(
        "{target}: {what} panicked: {message}\ninput ({} bytes, saved as {saved:?}): {shown}",
        input.len()
    );
}

/// FNV-1a of an input: its file name when saved.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                run(stringify!($name));
            }
        )*

        /// Every target has its test here, and nothing else does.
        #[test]
        fn every_target_is_tested() {
            let tested = [$(stringify!($name)),*];
            let targets: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
            assert_eq!(tested.as_slice(), targets.as_slice());
        }
    };
}

targets!(
    board,
    scenario,
    recipe,
    template,
    tool_output,
    board_output,
    bmap,
    store,
    image_archive,
    report_template,
);

#[test]
fn mutations_are_deterministic_and_bounded() {
    let run = || {
        let mut rng = XorShift(7);
        (0..200)
            .map(|_| mutate(&mut rng, b"a = \"b\"\n[c]\nd = 1\n", b"{{ x }}"))
            .collect::<Vec<_>>()
    };
    let (a, b) = (run(), run());
    assert_eq!(a, b);
    assert!(a.iter().all(|m| m.len() <= MAX_LEN));
    assert!(
        a.iter()
            .filter(|m| m.as_slice() != b"a = \"b\"\n[c]\nd = 1\n")
            .count()
            > 150
    );
}

/// The harness finds a panicking body, in a corpus file or only in a mutation of one,
/// and names the input: a target that cannot fail would test nothing.
#[test]
fn a_panic_is_found_with_its_input() {
    let corpus = vec![
        ("a".to_string(), b"abc".to_vec()),
        ("b".to_string(), b"xQx".to_vec()),
    ];
    let found = first_panic(|data| assert!(!data.contains(&b'Q'), "found Q"), &corpus, 1);
    let (what, input, message) = found.expect("the corpus file b panics");
    assert_eq!((what.as_str(), input.as_slice()), ("b", b"xQx".as_slice()));
    assert!(message.contains("found Q"), "{message}");

    let corpus = vec![("a".to_string(), b"abc".to_vec())];
    let found = first_panic(|data| assert_eq!(data.len(), 3), &corpus, 1);
    let (what, input, _) = found.expect("a mutation changes the length");
    assert!(what.starts_with("mutation "), "{what}");
    assert_ne!(input.len(), 3);
    assert!(first_panic(|_| {}, &corpus, 1).is_none());
}
