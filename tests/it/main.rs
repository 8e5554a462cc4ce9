//! The one integration-test binary. Each module is one area; cases are data-driven
//! where the area allows.

// Test code builds small strings for its assertion messages, declares its fixtures
// where a case reads them and hands owned values to the threads it starts: pedantic's
// rules for library code would only add noise here.
#![allow(
    clippy::format_push_string,
    clippy::format_collect,
    clippy::items_after_statements,
    clippy::needless_pass_by_value
)]

mod board_lock;
mod burnin;
mod cluster;
mod cluster_cells;
mod cluster_flash;
mod compare;
mod config;
mod confirm;
mod dd;
mod deadline;
mod disks;
mod dist;
mod drift;
mod example;
mod exposure;
mod filesystems;
mod first_hour;
mod firstboot;
mod flash;
mod fs_stack;
mod gc;
mod health;
mod history;
mod history_lab;
mod hostile;
mod html;
mod identity;
mod init;
mod install;
mod kill_anywhere;
mod lab;
mod labgrid;
mod leftovers;
mod libssh2;
mod lost_board;
mod merge;
mod network;
mod nfs;
mod nix;
mod non_free;
mod parallel;
mod parsers;
mod power;
mod provision;
mod quiet_install;
mod readme;
mod realboards;
mod report_bytes;
mod reports;
mod safety;
mod saved_plan;
mod schedule;
mod scratch;
mod seed_era;
mod seed_figures;
mod seed_fits;
mod seeds;
mod serving;
mod shard;
mod sides;
mod spine;
mod startup;
mod stats;
mod status;
mod storage;
mod store_lock;
mod telemetry;
mod tidy;
mod tmpfs;
mod tpi;
mod uas;
mod webapp;
mod webapp_login;
mod webapp_network;
mod words;
mod workflow;
mod workflow_run;
mod workspace;
mod xz;

pub use leftovers::{processes_left, processes_matching};

/// The repository's root: its shipped pipeline/, scenarios/, examples/ and test data.
pub fn repo() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Says that a test cannot run here, and why. Outside CI the test then returns early and
/// the line goes to the real stderr (past libtest's capture, so a passing run shows it);
/// under `.ci/run` (`BENCHPIPE_TESTS_MUST_RUN=1`) it fails instead: a skipped test must
/// never look like a passed one there.
pub fn cannot_run(test: &str, reason: &str) {
    use std::io::Write;
    let must_run = std::env::var_os("BENCHPIPE_TESTS_MUST_RUN").is_some_and(|v| v == "1");
    assert!(!must_run, "TEST COULD NOT RUN: {test}: {reason}");
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {reason}");
}

/// The running test's name: libtest names each test's thread after it.
pub fn this_test() -> String {
    std::thread::current()
        .name()
        .unwrap_or("unnamed test")
        .to_string()
}

/// Whether the tests run as root. When not, the running test is reported through
/// `cannot_run` (saying it needs root for `what`) and should return at once.
pub fn need_root(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    cannot_run(
        &this_test(),
        &format!("needs root for {what}; run the tests as root (the CI does)"),
    );
    false
}

/// Every `failure.json` of the store under `root`, whole: a failed apply's summary line
/// shortens a tool's output, and a test that failed on a loaded machine should say why.
pub fn failures(root: &std::path::Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(root.join("results"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(t) = std::fs::read_to_string(e.path().join("failure.json")) {
            out.push_str(&format!("{}: {t}\n", e.file_name().to_string_lossy()));
        }
        // The failed command's own output, whose last lines failure.json keeps.
        for log in std::fs::read_dir(e.path().join("logs"))
            .into_iter()
            .flatten()
            .flatten()
        {
            if log.file_name().to_string_lossy().starts_with("failed-")
                && let Ok(t) = std::fs::read_to_string(log.path())
            {
                let lines: Vec<&str> = t.lines().collect();
                let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                out.push_str(&format!("{}:\n{tail}\n", log.path().display()));
            }
        }
    }
    out
}

/// A scripted `benchpipe`'s arguments: an `apply` that runs (not `--dry-run`) gets
/// `--yes`, as a timer's would, since tests have no terminal to answer apply's question
/// before a lab disk is formatted or flashed. Every helper that runs apply goes through it.
pub fn scripted<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut out = args.to_vec();
    if args.first() == Some(&"apply") && !args.contains(&"--dry-run") && !args.contains(&"--yes") {
        out.insert(1, "--yes");
    }
    out
}

/// `len` pseudo-random bytes (xorshift64, seed forced odd): data no cipher or copy bug
/// could pass through unchanged by luck, the same on every run.
pub fn xorshift_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
