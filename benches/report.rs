//! Figures for reports (no assertions): rendering every report of a store of 10,000
//! cells x 10 samples (what `benchpipe report` does: read, plan, build the model, every
//! exporter, write), side by side with reading that store alone. Goal: render under
//! 1 s, and under 2x the read time, judged on the rounds' paired ratio and its 95%
//! confidence interval (met, missed, or inconclusive when the interval holds 2x).
//!
//! `cargo bench --bench report`. The store is written through the store's own writer
//! (cell.json, samples.jsonl appended run by run, facts.json), on /dev/shm when it is a
//! tmpfs, so that both figures are of the CPU's work over a cached store. Beside them,
//! the same two figures each taken in a fresh process, as a user's `benchpipe report`
//! runs (not judged).

use std::fmt::Write as _;
mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use benchpipe::store::{CellFacts, FORMAT, RunKind, Sample, Store};
use benchpipe::telemetry::{Range, TelemetrySummary};
use benchpipe::{check, cli, plan, report};
use serde_json::json;

/// 100 boards (10,000 cells), or 10 (1,000) with `--quick`.
fn boards() -> usize {
    if common::quick() { 10 } else { 100 }
}
const TESTS: usize = 10;
const IMAGES: usize = 5;
const SAMPLES: u32 = 10;

fn scratch() -> PathBuf {
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("bp-bench-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// 100 boards x 2 storage x 10 tests (three metrics each) x 5 images = 10,000 cells,
/// with two comparisons between images, as a scenario would ask for.
fn project(dir: &Path) {
    for sub in ["boards", "pipeline", "scenarios"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    for b in 0..boards() {
        std::fs::write(
            dir.join(format!("boards/b-{b:04}.toml")),
            format!(
                "model = \"Synthetic board {m}\"\nlocal = true\nworkdir = \"{w}/b-{b}\"\n\
                 [[storage]]\nname = \"sd\"\nrole = \"scratch\"\npath = \"{w}/b-{b}/sd\"\n\
                 model = \"SanDisk Extreme 64GB\"\n\
                 [[storage]]\nname = \"usb\"\nrole = \"scratch\"\npath = \"{w}/b-{b}/usb\"\n\
                 model = \"Kingston A400 240GB\"\n",
                m = b % 4,
                // Board-side paths: nothing runs on these boards.
                w = "/srv/bench"
            ),
        )
        .unwrap();
    }
    for t in 0..TESTS {
        std::fs::write(
            dir.join(format!("pipeline/t{t:02}.toml")),
            format!(
                "description = \"synthetic {t}\"\n[params]\nn = {t}\n[run]\n\
                 command = \"echo '{{\\\"r\\\": {{{{ n }}}}}}' > {{{{ dir }}}}/x\"\nparse = \"json\"\n\
                 [metrics]\n\
                 read = {{ from = \"r\", unit = \"MB/s\", better = \"higher\" }}\n\
                 write = {{ from = \"w\", unit = \"MB/s\", better = \"higher\" }}\n\
                 seconds = {{ from = \"s\", unit = \"s\", better = \"lower\" }}\n"
            ),
        )
        .unwrap();
    }
    let images: String = (0..IMAGES).fold(String::new(), |mut out, i| {
        let _ = write!(out, "[images.os{i}]\ninstalled = true\n");
        out
    });
    let names: Vec<String> = (0..IMAGES).map(|i| format!("\"os{i}\"")).collect();
    let tests: Vec<String> = (0..TESTS).map(|t| format!("\"t{t:02}\"")).collect();
    std::fs::write(
        dir.join("scenarios/big.toml"),
        format!(
            "title = \"10,000 cells\"\n{images}[matrix]\nimage = [{}]\nboard = [\"b-*\"]\n\
             storage = [\"*\"]\nfilesystem = [\"as-is\"]\ntest = [{}]\n[method]\n\
             warmup = {{ runs = 0 }}\nruns = {{ min = {SAMPLES}, max = {SAMPLES} }}\n\
             [[report.compare]]\nmetric = \"t00.read\"\nbaseline = {{ image = \"os0\" }}\n\
             [[report.compare]]\nmetric = \"t01.seconds\"\nbaseline = {{ storage = \"sd\" }}\n\
             candidate = {{ storage = \"usb\" }}\n",
            names.join(", "),
            tests.join(", ")
        ),
    )
    .unwrap();
}

/// A value that varies by cell and run the way measurements do, the same every run.
fn value(cell: usize, seq: u32, metric: u64) -> f64 {
    let mut x = ((cell as u64 + 1) * 0x9E37_79B9_7F4A_7C15) ^ (u64::from(seq) << 32) ^ metric;
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    50.0 + (cell % 97) as f64 + (x % 1000) as f64 / 100.0
}

/// A run's telemetry as apply stores it: a summary, judged again by every report (run 3
/// is under background load, so the flag stored with it is the one re-judged).
fn telemetry(seq: u32) -> serde_json::Value {
    let summary = TelemetrySummary {
        samples: 3,
        seconds: 3.2,
        temp_c: Some(Range {
            min: 55.0,
            max: 61.5,
            mean: 58.2,
        }),
        freq_mhz_min: Some(1500.0),
        freq_mhz_max: Some(1800.0),
        load1_max: Some(1.2),
        swap_in_pages: Some(0),
        swap_out_pages: Some(0),
        cpus: Some(4),
        busy_cpu_seconds: Some(3.1),
        test_cpu_seconds: Some(2.6),
        background_cpu_seconds: Some(0.5),
        background_fraction: Some(if seq == 3 { 0.15 } else { 0.01 }),
        throttled_first: Some(0),
        throttled_seen: Some(0),
        governors: vec!["ondemand".into()],
        kernel_log: Some("read".into()),
        ..TelemetrySummary::default()
    };
    serde_json::to_value(&summary).expect("a summary is JSON")
}

fn fill(store: &Store, cells: &[plan::Cell]) {
    for (i, cell) in cells.iter().enumerate() {
        let mut w = store.begin(cell).unwrap();
        for seq in 1..=SAMPLES {
            let started = 1_700_000_000.0 + (i * 100 + seq as usize) as f64;
            w.append(&Sample {
                format: FORMAT,
                seq,
                kind: RunKind::Measured,
                session: "1700000000-4242".into(),
                started,
                ended: started + 3.2,
                metrics: BTreeMap::from([
                    ("read".to_string(), value(i, seq, 1)),
                    ("write".to_string(), value(i, seq, 2)),
                    ("seconds".to_string(), value(i, seq, 3) / 10.0),
                ]),
                flags: if seq == 3 {
                    vec!["background-load".into()]
                } else {
                    vec![]
                },
                telemetry: Some(telemetry(seq).into()),
                command: format!("fio --name=t --size=32M --filename=/srv/b/{i}/fio.dat"),
                log: format!("logs/{seq:04}.log"),
                order: None,
                board_seq: Some(u64::from(seq)),
            })
            .unwrap();
        }
        w.write_facts(&CellFacts::of_stored(&json!({
            "benchpipe": "0.1.0", "board": cell.address.board.as_str(),
            "cpu_model": "Cortex-A72", "cpus": "4", "kernel": "Linux 6.6.31+rpt-rpi-v8 aarch64",
            "memory_kib": "3884852", "model": "Raspberry Pi 4 Model B Rev 1.4",
            "os_release": { "ID": "debian", "VERSION_ID": "12", "PRETTY_NAME": "Debian GNU/Linux 12 (bookworm)" },
            "packages": { "installed": { "fio": "3.33-3" }, "manager": "apt" },
            "storage": { "device": "/dev/sda", "model": "A400", "rotational": false, "size_bytes": 240057409536u64 },
            "storage_filesystem": { "mount_point": "/mnt/usb", "source": "/dev/sda1", "type": "ext4" },
            "tools": { "fio": "fio-3.33" },
        })), "1700000000-4242")
        .unwrap();
    }
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// CPU seconds this process has run (all its threads): on a loaded machine, the figure
/// wall time hides.
fn cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &raw mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// Page faults this process has taken (all its threads): each first touch of fresh
/// memory is one, and in a VM a costly one.
fn faults() -> i64 {
    // SAFETY: getrusage writes the rusage we own.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &raw mut r) };
    r.ru_minflt + r.ru_majflt
}

/// Wall and CPU seconds of `f`, and its result.
fn timed<T>(f: impl FnOnce() -> T) -> (T, f64, f64) {
    let (t, c) = (Instant::now(), cpu());
    let out = f();
    (out, secs(t), cpu() - c)
}

/// Judged rounds: 11, or 2 with `--quick` (the fewest a paired interval takes).
fn judged_rounds() -> usize {
    if common::quick() { 2 } else { 11 }
}
/// Rounds of the report's parts, each timed on its own: 3, or 1 with `--quick`.
fn part_round_count() -> usize {
    if common::quick() { 1 } else { 3 }
}
/// One round of the parts: plan and model (wall, CPU), then each exporter's name, wall,
/// CPU and bytes.
type PartRound = ((f64, f64), (f64, f64), Vec<(String, f64, f64, usize)>);
/// The confidence of the interval the 2x goal is judged on.
const CONFIDENCE: f64 = 0.95;
/// Rounds of the figures taken in fresh processes: 5, or 1 with `--quick`.
fn fresh_rounds() -> usize {
    if common::quick() { 1 } else { 5 }
}

/// The median round (wall, CPU), by wall time.
fn median(rounds: &[(f64, f64)]) -> (f64, f64) {
    let mut sorted = rounds.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    sorted[sorted.len() / 2]
}

fn rounds(rounds: &[(f64, f64)]) -> String {
    let walls: Vec<String> = rounds.iter().map(|r| format!("{:.3} s", r.0)).collect();
    walls.join(", ")
}

/// Each round's render over the read just before it (`figure` picks wall or CPU), as
/// their geometric mean with its `CONFIDENCE` interval: Student's t over the ratios'
/// logarithms (`stats::summarize`), so that the interval is of a ratio, never below
/// zero, and 2x and 0.5x lie as far from 1x. None with fewer than two rounds.
fn paired_ratio(
    reads: &[(f64, f64)],
    renders: &[(f64, f64)],
    figure: impl Fn(&(f64, f64)) -> f64,
) -> Option<(f64, f64, f64)> {
    let logs: Vec<f64> = reads
        .iter()
        .zip(renders)
        .map(|(read, render)| (figure(render) / figure(read)).ln())
        .collect();
    let summary = benchpipe::stats::summarize(&logs, CONFIDENCE)?;
    let (low, high) = summary.ci()?;
    Some((summary.mean.exp(), low.exp(), high.exp()))
}

/// `met` when the whole interval lies under `goal`, `MISSED` when it lies over it,
/// `inconclusive` when it holds the goal (more rounds, or a quieter machine, decide).
fn verdict(ratio: Option<(f64, f64, f64)>, goal: f64) -> &'static str {
    match ratio {
        Some((_, _, high)) if high < goal => "met",
        Some((_, low, _)) if low > goal => "MISSED",
        _ => "inconclusive",
    }
}

/// `2.09x (95% CI 2.01-2.17x, 11 paired rounds)`.
fn ratio_text(ratio: Option<(f64, f64, f64)>) -> String {
    match ratio {
        Some((mean, low, high)) => format!(
            "{mean:.2}x, {}% CI {low:.2}-{high:.2}x over {} paired rounds",
            (CONFIDENCE * 100.0).round(),
            judged_rounds()
        ),
        None => "no interval".to_string(),
    }
}

/// The embedded templates rendered as a workspace's overrides, one line each.
fn overridden_templates(model: &report::Report) -> Vec<String> {
    // The embedded templates as a workspace's overrides: counted against the fuel an
    // override gets (running out of it here would be an error, not a figure).
    let embedded = report::Templates::embedded();
    let overridden = report::Templates::embedded()
        .with_override(
            "index.md",
            "reports/templates/index.md".into(),
            embedded.markdown.source.to_string(),
        )
        .and_then(|t| {
            t.with_override(
                "index.html",
                "reports/templates/index.html".into(),
                embedded.html.source.to_string(),
            )
        })
        .unwrap();
    let mut lines = Vec::new();
    for t in [&overridden.markdown, &overridden.html] {
        let (bytes, s, c) = timed(|| report::Exporter::render(t, model).unwrap());
        lines.push(format!(
            "  {} as an override (fuel {}): {c:.3} s CPU ({s:.3} s wall), {} bytes",
            t.name,
            report::TEMPLATE_FUEL,
            bytes.len()
        ));
    }
    lines
}

/// Set in a child of this bench: which one figure it takes (`read` or `render`), of the
/// project at `FRESH_DIR`, printed as `wall cpu faults`.
const FRESH_FIGURE: &str = "BENCHPIPE_BENCH_FRESH";
const FRESH_DIR: &str = "BENCHPIPE_BENCH_FRESH_DIR";

/// One figure taken in this (child) process, as the first thing it does: what a user's
/// `benchpipe report` pays, every page of its memory faulted in fresh.
fn fresh_figure(figure: &str, dir: &Path) {
    let files = [dir.join("scenarios/big.toml")];
    let ws = check::load(dir, &files).expect("the bench's project loads");
    let store = Store::open(dir.join("results")).unwrap();
    let f = faults();
    let (s, c) = if figure == "read" {
        let (data, s, c) = timed(|| store.all().unwrap());
        // Freed by the exit, as a user's process frees it, not timed here.
        std::mem::forget(data);
        (s, c)
    } else {
        let (_, s, c) = timed(|| cli::write_reports(&ws, &store, &dir.join("reports")).unwrap());
        (s, c)
    };
    println!("{s} {c} {}", faults() - f);
}

/// A figure taken in a child process: wall and CPU seconds, page faults.
type Figure = (f64, f64, i64);

/// `figure` taken in a fresh child process.
fn in_fresh_process(figure: &str, dir: &Path) -> Figure {
    let exe = std::env::current_exe().expect("the bench knows its own path");
    let out = std::process::Command::new(exe)
        .env(FRESH_FIGURE, figure)
        .env(FRESH_DIR, dir)
        .output()
        .expect("the bench runs a child of itself");
    if !out.status.success() {
        // Its figures print as NaN below; say why.
        eprintln!(
            "the {figure} figure's process failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text.split_whitespace();
    let mut next = || fields.next().unwrap_or("nan").to_string();
    let (s, c, f) = (next(), next(), next());
    (
        s.parse().unwrap_or(f64::NAN),
        c.parse().unwrap_or(f64::NAN),
        f.parse().unwrap_or(-1),
    )
}

fn main() {
    if let (Some(figure), Some(dir)) = (std::env::var_os(FRESH_FIGURE), std::env::var_os(FRESH_DIR))
    {
        return fresh_figure(&figure.to_string_lossy(), Path::new(&dir));
    }
    let dir = scratch();
    project(&dir);
    let files = [dir.join("scenarios/big.toml")];
    let ws = check::load(&dir, &files).expect("synthetic project loads");
    let cells = plan::expand(&ws, &ws.scenarios[0]).cells;
    let store = Store::open(dir.join("results")).unwrap();
    let t = Instant::now();
    fill(&store, &cells);
    let fill_s = secs(t);
    println!(
        "store: {} cells x {SAMPLES} samples written through the store's writer in {fill_s:.1} s ({})",
        cells.len(),
        dir.display()
    );

    // Warm the page cache and the allocator once, so both figures are steady ones.
    let _ = store.all().unwrap();

    // The report, in its parts (a report reads the store itself: timed below), each
    // the median of `part_round_count()` rounds: the first one also faults in the pages the
    // later ones reuse, as the judged rounds below do.
    let data = store.all().unwrap();
    assert_eq!(data.len(), cells.len());
    let runs: usize = data.values().map(|d| d.samples.len()).sum();
    let (ws, load_s, load_c) = timed(|| check::load(&dir, &files).unwrap());
    let mut part_rounds = Vec::new();
    let mut overrides = Vec::new();
    for round in 0..part_round_count() {
        let (plans, plan_s, plan_c) = timed(|| cli::known_plans(&ws, &store).unwrap());
        let (scenario, plan) = &plans[0];
        let (model, build_s, build_c) = timed(|| report::build(&ws, scenario, plan, &data));
        let mut exports = Vec::new();
        for e in report::exporters() {
            let (bytes, s, c) = timed(|| e.render(&model).unwrap());
            exports.push((e.file_name().to_string(), s, c, bytes.len()));
        }
        if round + 1 == part_round_count() {
            overrides = overridden_templates(&model);
        }
        part_rounds.push(((plan_s, plan_c), (build_s, build_c), exports));
    }
    drop(data);
    let part = |pick: &dyn Fn(&PartRound) -> (f64, f64)| {
        median(&part_rounds.iter().map(pick).collect::<Vec<_>>())
    };
    let (plan_s, plan_c) = part(&|r| r.0);
    let (build_s, build_c) = part(&|r| r.1);
    let exports: Vec<(&str, f64, f64, usize)> = (0..part_rounds[0].2.len())
        .map(|i| {
            let (s, c) = part(&|r| (r.2[i].1, r.2[i].2));
            let (name, _, _, len) = &part_rounds[0].2[i];
            (name.as_str(), s, c, *len)
        })
        .collect();

    // The figures: reading the store alone, and the whole `benchpipe report` after
    // loading the scenario (read, plan, build, render and write every exporter's
    // file), in turn, each after the last one's memory is freed, so that both start
    // from the same heap. `judged_rounds()` rounds: the 1 s goal is judged on the median
    // render, the 2x goal on the rounds paired (`paired_ratio`).
    let out = dir.join("reports");
    let (mut reads, mut renders) = (Vec::new(), Vec::new());
    let mut files_written = 0;
    let (mut read_faults, mut render_faults) = (0, 0);
    for _ in 0..judged_rounds() {
        let f = faults();
        let (data, s, c) = timed(|| store.all().unwrap());
        read_faults = faults() - f;
        drop(data);
        reads.push((s, c));
        let f = faults();
        let (written, s, c) = timed(|| cli::write_reports(&ws, &store, &out).unwrap());
        render_faults = faults() - f;
        files_written = written.len();
        renders.push((s, c));
        // The render leaves its values to a spare thread to free: let it finish
        // before the next figure.
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    let (read_s, read_c) = median(&reads);
    let (render_s, render_c) = median(&renders);
    // Each round's render over the read just before it: the two are taken a second
    // apart, so a load that comes and goes on a shared machine weighs on both, where
    // the medians above may come from different minutes.
    let mut paired: Vec<f64> = reads
        .iter()
        .zip(&renders)
        .map(|(read, render)| render.0 / read.0)
        .collect();
    paired.sort_by(f64::total_cmp);
    let paired_median = paired[paired.len() / 2];
    // The fastest round of each: other load only ever adds time, so the minimum is the
    // figure least touched by it.
    let fastest = |rounds: &[(f64, f64)]| rounds.iter().map(|r| r.0).fold(f64::INFINITY, f64::min);
    let (read_min, render_min) = (fastest(&reads), fastest(&renders));

    println!(
        "read the store alone: {read_s:.3} s wall, {read_c:.3} s CPU ({} cells, {runs} samples; \
         median of {}, each round's wall: {})",
        cells.len(),
        judged_rounds(),
        rounds(&reads)
    );
    println!(
        "render every report:  {render_s:.3} s wall, {render_c:.3} s CPU ({files_written} files): \
         {:.2}x the read in wall, {:.2}x in CPU (each round's wall: {})",
        render_s / read_s,
        render_c / read_c,
        rounds(&renders)
    );
    // The goal, judged on wall time (what a user waits for; the read uses every core
    // too) over the paired rounds, with its confidence interval: on a shared machine
    // one median may land on either side of 2x by the load alone, where the interval
    // says whether the rounds show the render under it, over it, or neither. CPU time
    // is beside it, as on a loaded machine wall time measures the load as much as the
    // work. A figure, never an assertion.
    let met = |ok: bool| if ok { "met" } else { "MISSED" };
    let wall_ratio = paired_ratio(&reads, &renders, |r| r.0);
    let cpu_ratio = paired_ratio(&reads, &renders, |r| r.1);
    println!(
        "goal: render under 1 s: {} ({render_s:.3} s wall); under 2x the read: {} ({}); \
         in CPU time: {} and {} ({})",
        met(render_s < 1.0),
        verdict(wall_ratio, 2.0),
        ratio_text(wall_ratio),
        met(render_c < 1.0),
        verdict(cpu_ratio, 2.0),
        ratio_text(cpu_ratio)
    );
    println!(
        "  the ratio of the medians: {:.2}x in wall, {:.2}x in CPU",
        render_s / read_s,
        render_c / read_c
    );
    println!(
        "  each round's render over its own read: median {paired_median:.2}x ({})",
        paired
            .iter()
            .map(|r| format!("{r:.2}x"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "  the fastest round of each: read {read_min:.3} s, render {render_min:.3} s: {:.2}x",
        render_min / read_min
    );
    println!("  page faults in the last round: read {read_faults}, render {render_faults}");
    // The same two figures, each taken first thing in a process of its own, as a
    // user's `benchpipe report` runs: there every page the read or the render uses is
    // faulted in fresh, where in this process's rounds the read reuses the pages the
    // last round freed and the render takes new ones for its model and files. Beside
    // the figures above, not judged.
    let fresh: Vec<(Figure, Figure)> = (0..fresh_rounds())
        .map(|_| {
            (
                in_fresh_process("read", &dir),
                in_fresh_process("render", &dir),
            )
        })
        .collect();
    let reads: Vec<(f64, f64)> = fresh.iter().map(|(r, _)| (r.0, r.1)).collect();
    let renders: Vec<(f64, f64)> = fresh.iter().map(|(_, r)| (r.0, r.1)).collect();
    let ((fresh_read, _), (fresh_render, _)) = (median(&reads), median(&renders));
    let last = fresh.last().map_or((-1, -1), |(r, d)| (r.2, d.2));
    println!(
        "  in a fresh process each (as `benchpipe report` runs; median of {}): \
         read {fresh_read:.3} s, render {fresh_render:.3} s: {:.2}x; page faults: read {}, render {}",
        fresh_rounds(),
        fresh_render / fresh_read,
        last.0,
        last.1
    );
    println!(
        "  its parts in CPU (median of {}): plan {plan_c:.3} s, model {build_c:.3} s, \
         exporters {:.3} s; loading the scenario before it {load_c:.3} s \
         (wall: plan {plan_s:.3} s, model {build_s:.3} s, load {load_s:.3} s)",
        part_round_count(),
        exports.iter().map(|e| e.2).sum::<f64>()
    );
    for (name, s, c, len) in &exports {
        println!("  {name}: {c:.3} s CPU ({s:.3} s wall), {len} bytes");
    }
    for line in overrides {
        println!("{line}");
    }
    // BENCHPIPE_BENCH_KEEP=1 keeps the project and store, to profile `benchpipe report`
    // on it.
    if std::env::var_os("BENCHPIPE_BENCH_KEEP").is_some() {
        println!("kept {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(dir);
    }
}
