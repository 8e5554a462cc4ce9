//! Figures for the spine (no assertions): planning a 10,000-cell matrix, a no-op
//! re-apply over 1,000 complete cells, and xz timed by benchpipe beside xz run directly.
//!
//! `cargo bench --bench spine`; `-- --quick` (what `.ci/run` runs) compares one pair on
//! a 1 MiB corpus, so that the comparison is exercised without being a figure.

use std::fmt::Write as _;
mod common;
use common::quick;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use benchpipe::plan::{self, CellKey, key};
use benchpipe::store::{FORMAT, RunKind, Sample, Store};
use benchpipe::{apply, check};

fn project(tag: &str, boards: usize, tests: usize, images: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bp-bench-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["boards", "pipeline", "scenarios"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    for b in 0..boards {
        std::fs::write(
            dir.join(format!("boards/b-{b:04}.toml")),
            format!(
                "model = \"Synthetic board\"\nlocal = true\nworkdir = \"{w}/b-{b}\"\n\
                 [[storage]]\nname = \"sd\"\nrole = \"scratch\"\npath = \"{w}/b-{b}/sd\"\n\
                 [[storage]]\nname = \"usb\"\nrole = \"scratch\"\npath = \"{w}/b-{b}/usb\"\n",
                w = dir.join("work").display()
            ),
        )
        .unwrap();
    }
    for t in 0..tests {
        std::fs::write(
            dir.join(format!("pipeline/t{t:02}.toml")),
            format!(
                "description = \"synthetic {t}\"\n[params]\nn = {t}\n[run]\n\
                 command = \"echo '{{\\\"v\\\": {{{{ n }}}}}}' > {{{{ dir }}}}/x\"\nparse = \"json\"\n\
                 [metrics]\nv = {{ from = \"v\", unit = \"s\", better = \"lower\" }}\n"
            ),
        )
        .unwrap();
    }
    let mut image_tables = String::new();
    let mut names = Vec::new();
    for i in 0..images {
        let _ = write!(image_tables, "[images.os{i}]\ninstalled = true\n");
        names.push(format!("\"os{i}\""));
    }
    std::fs::write(
        dir.join("scenarios/big.toml"),
        format!(
            "title = \"big\"\n{image_tables}[matrix]\nimage = [{}]\nboard = [\"b-*\"]\n\
             storage = [\"*\"]\nfilesystem = [\"as-is\"]\ntest = [{}]\n[method]\n\
             warmup = {{ runs = 0 }}\nruns = {{ min = 3, max = 3 }}\n",
            names.join(", "),
            (0..tests)
                .map(|t| format!("\"t{t:02}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .unwrap();
    dir
}

fn load(dir: &Path) -> benchpipe::model::Workspace {
    check::load(dir, &[dir.join("scenarios/big.toml")]).expect("synthetic project loads")
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn plan_10k() {
    let dir = project("plan", 100, 10, 5);
    let t = Instant::now();
    let ws = load(&dir);
    let load_s = secs(t);
    let t = Instant::now();
    let p = plan::expand(&ws, &ws.scenarios[0]);
    let expand_s = secs(t);
    // Baseline: only encoding and hashing the same cells' inputs, the floor of any
    // planner that content-addresses its cells.
    let s = &ws.scenarios[0];
    let t = Instant::now();
    let mut x = 0u8;
    for c in &p.cells {
        let board = &ws.boards[&c.address.board];
        let inputs = key::cell_inputs(&key::BoardCell {
            image: &s.images[&c.address.image],
            board,
            storage: c.address.storage.as_ref().and_then(|n| board.storage(n)),
            filesystem: c.filesystem.as_ref(),
            network: c.address.network.as_ref().and_then(|n| board.network(n)),
            recipe: &ws.recipes[&c.address.test],
            params: &c.params,
            method: &c.method,
        });
        x ^= CellKey::of(&inputs).as_str().as_bytes()[0];
    }
    let hash_s = secs(t);
    println!(
        "plan {} cells: load+validate {load_s:.3} s, expand+key {expand_s:.3} s (goal < 0.2 s); \
         baseline encoding+hashing alone {hash_s:.3} s [{x}]",
        p.cells.len()
    );

    // The schedule of all those cells (they all need work), beside expanding them.
    let work: Vec<plan::schedule::Work<'_>> = p
        .cells
        .iter()
        .map(|c| plan::schedule::Work {
            cell: c,
            recipe: &ws.recipes[&c.address.test],
            runs_left: 3,
        })
        .collect();
    let t = Instant::now();
    let schedule = plan::schedule::build(&ws, &work, &plan::schedule::Estimates::default());
    let schedule_s = secs(t);
    let steps: usize = schedule.boards.iter().map(|b| b.steps.len()).sum();
    println!(
        "schedule of {} cells: {schedule_s:.3} s ({steps} steps on {} boards); baseline \
         expand+key of the same cells {expand_s:.3} s",
        p.cells.len(),
        schedule.boards.len()
    );

    // The whole `plan` command over the store: empty, then holding every cell under
    // other inputs (a changed cool-down), so each cell is diffed against its neighbour.
    let select = benchpipe::cli::Selection::default();
    let store = Store::open(dir.join("results")).unwrap();
    let t = Instant::now();
    let text = benchpipe::cli::plan_text(&ws, &store, false, &select).unwrap();
    let empty_s = secs(t);
    for c in &p.cells {
        let cell_dir = store.cell_dir(c);
        std::fs::create_dir_all(&cell_dir).unwrap();
        let rec = benchpipe::store::CellRecord {
            format: FORMAT,
            key: c.key.clone(),
            address: c.address.clone(),
            inputs: c.inputs.json().clone().into(),
        };
        std::fs::write(
            cell_dir.join("cell.json"),
            serde_json::to_vec(&rec).unwrap(),
        )
        .unwrap();
    }
    let mut changed = ws.clone();
    changed.scenarios[0].method.cooldown = benchpipe::model::Cooldown::Fixed {
        duration: std::time::Duration::from_secs(1),
    };
    let t = Instant::now();
    let read = store.all().unwrap().len();
    let read_s = secs(t);
    let t = Instant::now();
    let diffed = benchpipe::cli::plan_text(&changed, &store, false, &select).unwrap();
    let diff_s = secs(t);
    println!(
        "plan command over {} cells: empty store {empty_s:.3} s ({} lines); every cell \
         diffed against a stored neighbour {diff_s:.3} s ({} lines), of which reading \
         the {read} stored cells about {read_s:.3} s",
        p.cells.len(),
        text.lines().count(),
        diffed.lines().count()
    );
    let _ = std::fs::remove_dir_all(dir);
}

struct Quiet;
impl apply::Progress for Quiet {
    fn event(&self, _: apply::Event<'_>) {}
}

fn noop_reapply_1000() {
    // 1,000 cells, or 100 with `--quick` (filling the store is most of the time).
    let boards = if quick() { 5 } else { 50 };
    let dir = project("reapply", boards, 10, 1);
    let ws = load(&dir);
    let p = plan::expand(&ws, &ws.scenarios[0]);
    let store = Store::open(dir.join("results")).unwrap();
    for cell in &p.cells {
        let mut w = store.begin(cell).unwrap();
        for seq in 1..=3 {
            w.append(&Sample {
                format: FORMAT,
                seq,
                kind: RunKind::Measured,
                session: "bench".into(),
                started: 0.0,
                ended: 1.0,
                metrics: BTreeMap::from([("v".to_string(), f64::from(seq))]),
                flags: vec![],
                telemetry: None,
                command: "echo".into(),
                log: format!("logs/{seq:04}.log"),
                order: None,
                board_seq: None,
            })
            .unwrap();
        }
    }
    let t = Instant::now();
    let all = store.all().unwrap();
    let read_s = secs(t);
    let t = Instant::now();
    let out = apply::apply(&ws, &p.cells, &store, &Quiet, &AtomicBool::new(false)).unwrap();
    let apply_s = secs(t);
    println!(
        "no-op re-apply over {} complete cells: {apply_s:.3} s (goal < 0.5 s over 1,000); \
         baseline reading the whole store once {read_s:.3} s ({} cells)",
        out.already_complete,
        all.len()
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// GNU time's `%e` of a command run directly.
fn direct_xz(corpus: &Path) -> f64 {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "/usr/bin/time -f '%e %U %S %M' xz -6e -T0 -c '{}' > /dev/null",
            corpus.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    err.lines()
        .last()
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

fn xz_overhead(pairs: usize, corpus_mib: u32) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("bp-bench-xz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for sub in ["boards", "pipeline", "scenarios"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    std::fs::copy(repo.join("pipeline/xz.toml"), dir.join("pipeline/xz.toml")).unwrap();
    let work = dir.join("work");
    std::fs::write(
        dir.join("boards/here.toml"),
        format!(
            "model = \"bench\"\nlocal = true\nworkdir = \"{}\"\n",
            work.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("scenarios/xz.toml"),
        format!(
            "title = \"xz\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\n\
         board = [\"here\"]\ntest = [\"xz\"]\n\
         [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n[params.xz]\ncorpus_mib = {corpus_mib}\n",
        ),
    )
    .unwrap();
    let ws = check::load(&dir, &[dir.join("scenarios/xz.toml")]).unwrap();
    let p = plan::expand(&ws, &ws.scenarios[0]);
    // The same corpus the recipe builds (its own setup step, rendered), kept for the
    // direct runs.
    let recipe = &ws.recipes[&benchpipe::model::TestName::new("xz")];
    // The setup writes into the cell's tmpfs (`{{ tmpfs }}`, which apply mounts); the
    // direct runs use a plain directory in its place.
    let direct_dir = dir.join("direct/xz");
    std::fs::create_dir_all(&direct_dir).unwrap();
    let mut vars = benchpipe::bench::Vars::new();
    vars.params(&p.cells[0].params)
        .set("workdir", dir.join("direct").display().to_string())
        .set("tmpfs", direct_dir.display().to_string());
    let setup = benchpipe::bench::render(&recipe.setup[0].command, &vars)
        .unwrap_or_else(|e| panic!("the xz recipe's setup: {}", e.reason()));
    assert!(
        Command::new("sh")
            .arg("-c")
            .arg(&setup)
            .status()
            .unwrap()
            .success()
    );
    let corpus = dir.join("direct/xz/corpus");
    let (mut direct, mut recorded) = (Vec::new(), Vec::new());
    for i in 0..pairs {
        direct.push(direct_xz(&corpus));
        let store = Store::open(dir.join(format!("results-{i}"))).unwrap();
        apply::apply(&ws, &p.cells, &store, &Quiet, &AtomicBool::new(false)).unwrap();
        let data = store.read(&p.cells[0]).unwrap();
        recorded.push(data.samples[0].metrics["real"]);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "xz -6e -T0 on {corpus_mib} MiB, {pairs} interleaved pairs: direct {:.3} s, recorded by benchpipe {:.3} s, \
         ratio {:.4} (goal within 2%)",
        mean(&direct),
        mean(&recorded),
        mean(&recorded) / mean(&direct)
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn main() {
    let quick = quick();
    plan_10k();
    noop_reapply_1000();
    if quick {
        xz_overhead(1, 1);
    } else {
        xz_overhead(5, 8);
    }
}
