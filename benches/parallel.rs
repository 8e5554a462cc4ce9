//! Figure (no assertions): a rack on one controller. Wall time of `apply` on N lab
//! boards at once (N = 4, 16, 32; 4 and 16 with `--quick`) against the slowest single
//! board alone, over real SSH, and what the controller spends per board: CPU time
//! (user + system, all of apply's threads), peak memory above the process's before the
//! apply, and threads. Goal: at most 1.10x at 32 boards, i.e. boards really work in
//! parallel and benchpipe adds little per board.
//!
//! `cargo bench --bench parallel` (needs root for the lab; says so and exits otherwise).
//! The test sleeps rather than computes, so the figure measures benchpipe's
//! orchestration, not two cores shared by the boards.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use benchpipe::lab::{self, LabOptions};

mod common;
use benchpipe::store::Store;
use benchpipe::{apply, check, plan};

/// Measured runs per board (after one warm-up): 5, or 1 with no warm-up with `--quick`.
fn measured_runs() -> usize {
    if common::quick() { 1 } else { 5 }
}

fn runs_per_board() -> usize {
    if common::quick() { 1 } else { 6 }
}

/// Rack sizes measured, smallest first.
fn sizes() -> &'static [usize] {
    if common::quick() {
        &[4, 16]
    } else {
        &[4, 16, 32]
    }
}

/// Single boards timed alone: the baseline is the slowest of them.
const SINGLES: usize = 3;

struct Quiet;
impl apply::Progress for Quiet {
    fn event(&self, _: apply::Event<'_>) {}
}

fn scenario(root: &Path, name: &str, boards: &str) {
    std::fs::write(
        root.join(format!("scenarios/{name}.toml")),
        format!(
            "title = \"{name}\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [{boards}]\ntest = [\"nap\"]\n[method]\n\
             warmup = {{ runs = {warmup} }}\nruns = {{ min = {runs}, max = {runs} }}\n",
            warmup = runs_per_board() - measured_runs(),
            runs = measured_runs(),
        ),
    )
    .unwrap();
}

/// One field of /proc/self/status, in its unit (kB for memory).
fn status_field(name: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU seconds of this process (every thread) so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &raw mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The machine's (busy, total) CPU jiffies so far, from /proc/stat: the lab's boards
/// and their sshd share the controller's cores, so a rack's wall time is theirs too.
fn machine_jiffies() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

/// What one apply cost: wall seconds, CPU seconds, the machine's busy share and busy CPU
/// seconds, peak RSS above the start (KiB), the most threads at once.
struct Cost {
    wall: f64,
    cpu: f64,
    busy: f64,
    machine_cpu: f64,
    rss_kib: u64,
    threads: u64,
}

fn time_apply(root: &Path, name: &str) -> Cost {
    let ws = check::load(root, &[root.join(format!("scenarios/{name}.toml"))]).unwrap();
    let cells: Vec<_> = ws
        .scenarios
        .iter()
        .flat_map(|s| plan::expand(&ws, s).cells)
        .collect();
    let store_dir = root.join(format!("results-{name}"));
    let _ = std::fs::remove_dir_all(&store_dir);
    let store = Store::open(&store_dir).unwrap();
    let rss0 = status_field("VmRSS");
    let done = AtomicBool::new(false);
    let (out, wall, cpu, busy, peak) = std::thread::scope(|s| {
        // Sampled every 20 ms: peak memory and threads while the apply runs.
        let sampler = s.spawn(|| {
            let (mut rss, mut threads) = (0, 0);
            while !done.load(Ordering::Relaxed) {
                rss = rss.max(status_field("VmRSS"));
                threads = threads.max(status_field("Threads"));
                std::thread::sleep(Duration::from_millis(20));
            }
            (rss, threads)
        });
        let cpu0 = cpu_seconds();
        let m0 = machine_jiffies();
        let t = Instant::now();
        let out = apply::apply(&ws, &cells, &store, &Quiet, &AtomicBool::new(false)).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu0;
        let m1 = machine_jiffies();
        done.store(true, Ordering::Relaxed);
        let busy = (m1.0 - m0.0) as f64 / (m1.1 - m0.1).max(1) as f64;
        // SAFETY: sysconf reads a constant of the system.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        let machine_cpu = (m1.0 - m0.0) as f64 / ticks;
        (out, wall, cpu, (busy, machine_cpu), sampler.join().unwrap())
    });
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    Cost {
        wall,
        cpu,
        busy: busy.0,
        machine_cpu: busy.1,
        rss_kib: peak.0.saturating_sub(rss0),
        threads: peak.1,
    }
}

fn main() {
    if !common::is_root("parallel") {
        return;
    }
    let most = *sizes().last().unwrap();
    let root = std::env::temp_dir().join(format!("bp-bench-parallel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let options = LabOptions {
        prefix: "bpbp".into(),
        board_prefix: "pb".into(),
        disks_per_board: 1,
        disk_bytes: 64 << 20,
        boot_bytes: 0,
        first_subnet: 6000,
        ..LabOptions::default()
    };
    let info = lab::up_with(&root, most, &options).expect("lab up");
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(
        root.join("pipeline/nap.toml"),
        "description = \"one second of waiting on the board\"\nuses_storage = false\n\
         [run]\ncommand = \"sleep 1; echo '{\\\"value\\\": 1}'\"\nparse = \"json\"\n\
         [metrics]\nvalue = { from = \"value\", unit = \"x\", better = \"higher\" }\n",
    )
    .unwrap();
    let names: Vec<String> = info
        .boards
        .iter()
        .map(|b| format!("\"{}\"", b.name))
        .collect();
    let mut singles = Vec::new();
    let mut single_board_cpu = Vec::new();
    for (i, n) in names.iter().take(SINGLES).enumerate() {
        scenario(&root, &format!("one{i}"), n);
        let c = time_apply(&root, &format!("one{i}"));
        singles.push(c.wall);
        single_board_cpu.push((c.machine_cpu - c.cpu) * 1000.0);
    }
    let slowest = singles.iter().copied().fold(0.0, f64::max);
    println!(
        "apply, {} runs of a 1 s test per board over SSH; slowest single board {slowest:.2} s \
         (singles: {}; the rest of the machine's CPU per single: {} ms)",
        runs_per_board(),
        singles
            .iter()
            .map(|s| format!("{s:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        single_board_cpu
            .iter()
            .map(|s| format!("{s:.0}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    println!(
        "{:>6} {:>9} {:>7} {:>14} {:>15} {:>15} {:>8} {:>13}",
        "boards",
        "wall s",
        "ratio",
        "CPU ms/board",
        "rest ms/board",
        "peak KiB/board",
        "threads",
        "machine busy"
    );
    for &n in sizes() {
        let name = format!("rack{n}");
        scenario(&root, &name, &names[..n].join(", "));
        let c = time_apply(&root, &name);
        println!(
            "{n:>6} {:>9.2} {:>7.3} {:>14.1} {:>15.0} {:>15} {:>8} {:>12.0}%",
            c.wall,
            c.wall / slowest,
            c.cpu * 1000.0 / n as f64,
            (c.machine_cpu - c.cpu) * 1000.0 / n as f64,
            c.rss_kib / n as u64,
            c.threads,
            c.busy * 100.0
        );
    }
    println!(
        "goal: ratio <= 1.10 at 32 boards. CPU is benchpipe's own (every thread); rest is \
         the machine's other busy CPU per board (the lab boards' sshd and commands, which \
         run on the controller's cores here, and anything else the machine runs); machine \
         busy is all cores' share while the rack ran"
    );
    lab::down_with(&root, &options).expect("lab down");
    let _ = std::fs::remove_dir_all(&root);
}
