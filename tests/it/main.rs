//! The one integration-test binary. Each module is one area; cases are data-driven
//! where the area allows.

use std::fmt::Write as _;
mod burnin;
mod cluster;
mod cluster_cells;
mod cluster_flash;
mod compare;
mod config;
mod confirm;
mod dd;
mod disks;
mod drift;
mod example;
mod exposure;
mod filesystems;
mod first_hour;
mod firstboot;
mod flash;
mod fs_stack;
mod hostile;
mod html;
mod identity;
mod init;
mod lab;
mod libssh2;
mod lost_board;
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
mod schedule;
mod seed_era;
mod seed_figures;
mod seed_fits;
mod seeds;
mod serving;
mod sides;
mod spine;
mod startup;
mod stats;
mod storage;
mod telemetry;
mod tmpfs;
mod tpi;
mod uas;
mod webapp;
mod webapp_login;
mod webapp_network;
mod words;
mod workspace;
mod xz;

/// The repository's root: its shipped pipeline/, scenarios/, examples/ and test data.
pub fn repo() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `pid cmdline` lines of live processes whose command line contains any of `needles`
/// (a /proc scan, so the search never finds itself the way `pgrep -f` under `sh -c`
/// does; zombies are left out, since PID 1 here may not reap them). Lab boards share
/// the controller's process table, so their processes are visible here too.
pub fn processes_matching(needles: &[&str]) -> String {
    let mut found = String::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        // One line per process: a command line may hold newlines (`sh -c` of a script).
        let cmd = String::from_utf8_lossy(&raw).replace(['\0', '\n'], " ");
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(") ").next().is_some_and(|r| r.starts_with('Z'));
        if needles.iter().any(|n| cmd.contains(n)) && !zombie {
            let _ = writeln!(found, "{pid} {cmd}");
        }
    }
    found
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

/// What is left of the processes matching `needles` once they had up to 15 s to die.
/// A group benchpipe killed dies as soon as the kernel schedules each member; on a
/// loaded machine that can take a moment, while a process nobody killed lives on.
pub fn processes_left(needles: &[&str]) -> String {
    let t0 = std::time::Instant::now();
    loop {
        let left = processes_matching(needles);
        if left.trim().is_empty() || t0.elapsed() > std::time::Duration::from_secs(15) {
            return left;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
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
