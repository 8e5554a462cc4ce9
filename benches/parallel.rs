//! Figure (no assertions): wall time of `apply` on 4 lab boards against the slowest
//! single board alone, over real SSH. Goal: at most 1.15x, i.e. boards really work in
//! parallel and benchpipe adds little per board.
//!
//! `cargo bench --bench parallel` (needs root for the lab; says so and exits otherwise).
//! The test sleeps rather than computes, so the figure measures benchpipe's
//! orchestration, not two cores shared by four boards.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

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

fn time_apply(root: &Path, name: &str) -> f64 {
    let ws = check::load(root, &[root.join(format!("scenarios/{name}.toml"))]).unwrap();
    let cells: Vec<_> = ws
        .scenarios
        .iter()
        .flat_map(|s| plan::expand(&ws, s).cells)
        .collect();
    let store_dir = root.join(format!("results-{name}"));
    let _ = std::fs::remove_dir_all(&store_dir);
    let store = Store::open(&store_dir).unwrap();
    let t = Instant::now();
    let out = apply::apply(&ws, &cells, &store, &Quiet, &AtomicBool::new(false)).unwrap();
    let secs = t.elapsed().as_secs_f64();
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    secs
}

fn main() {
    if !common::is_root("parallel") {
        return;
    }
    let root = std::env::temp_dir().join(format!("bp-bench-parallel-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let options = LabOptions {
        prefix: "bpbp".into(),
        board_prefix: "pb".into(),
        disks_per_board: 1,
        disk_bytes: 64 << 20,
        first_subnet: 6000,
        ..LabOptions::default()
    };
    let info = lab::up_with(&root, 4, &options).expect("lab up");
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
    scenario(&root, "all", &names.join(", "));
    let mut singles = Vec::new();
    for (i, n) in names.iter().enumerate() {
        scenario(&root, &format!("one{i}"), n);
        singles.push(time_apply(&root, &format!("one{i}")));
    }
    let all = time_apply(&root, "all");
    let slowest = singles.iter().copied().fold(0.0, f64::max);
    println!(
        "apply, {} runs of a 1 s test per board over SSH: 4 boards at once {all:.2} s, \
         slowest single board {slowest:.2} s (singles: {}), ratio {:.3} (goal <= 1.15)",
        runs_per_board(),
        singles
            .iter()
            .map(|s| format!("{s:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        all / slowest
    );
    lab::down_with(&root, &options).expect("lab down");
    let _ = std::fs::remove_dir_all(&root);
}
