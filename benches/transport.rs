//! Benchmark: benchpipe's SSH transport against OpenSSH on a lab board. Prints figures
//! side by side (per-command latency against a ControlMaster connection, with where one
//! command's time goes layer by layer; bulk upload against `ssh board 'cat > file'`); no
//! assertions. Needs root for the lab.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use benchpipe::lab::LabOptions;
use benchpipe::transport::Transport;
use benchpipe::transport::ssh::SshTransport;
use common::OpenSsh;

/// 200 rounds of commands and five 512 MiB uploads, or 30 and one of 16 MiB with
/// `--quick`. A round runs `true` once each way the breakdown times, in turn.
fn rounds() -> usize {
    if common::quick() { 30 } else { 200 }
}
fn upload_bytes() -> u64 {
    if common::quick() { 16 << 20 } else { 512 << 20 }
}
fn upload_rounds() -> usize {
    if common::quick() { 1 } else { 5 }
}

fn main() {
    if !common::is_root("transport") {
        return;
    }
    if let Err(e) = run() {
        eprintln!("benches/transport: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let root = std::env::temp_dir().join(format!("benchpipe-bench-lab-{}", std::process::id()));
    let options = LabOptions {
        prefix: "bpbench".into(),
        board_prefix: "bench".into(),
        disks_per_board: 1,
        disk_bytes: 64 << 20,
        first_subnet: 6000,
        ..LabOptions::default()
    };
    let (info, _guard) = common::lab_up(&root, options)?;
    let board = &info.boards[0];
    let mut t = common::connect(&info)?;
    let openssh = OpenSsh::new(&info, &root);

    // Per-command latency: the master connection and our session are set up first.
    t.run("true", None).map_err(|e| e.to_string())?;
    openssh.run("true", None)?;
    let breakdown = Breakdown::measure(&mut t, &openssh)?;

    // Bulk upload of the same file to the same (shared) disk. The controller is shared
    // and one run of each swings by +-15%, so take the median of a few rounds and
    // alternate which side goes first.
    let local = root.join("upload.bin");
    make_file(&local, upload_bytes())?;
    let remote = format!("{}/upload.bin", board.workdir);
    let cipher = t.cipher().unwrap_or_else(|| "?".into());
    let mut ours_uploads = Vec::new();
    let mut theirs_uploads = Vec::new();
    for round in 0..upload_rounds() {
        for side in [round % 2, 1 - round % 2] {
            let started = Instant::now();
            if side == 0 {
                t.upload(&local, &remote).map_err(|e| e.to_string())?;
                ours_uploads.push(started.elapsed());
            } else {
                openssh.run(&format!("cat > {remote}"), Some(&local))?;
                theirs_uploads.push(started.elapsed());
            }
            let _ = std::fs::remove_file(&remote);
        }
    }
    let ours_upload = median(&mut ours_uploads);
    let theirs_upload = median(&mut theirs_uploads);
    openssh.stop();

    let mib = upload_bytes() as f64 / f64::from(1 << 20);
    println!(
        "benchpipe transport vs OpenSSH on lab board {} ({})",
        board.name, board.address
    );
    println!(
        "{:<34} {:>14} {:>14} {:>8}",
        "", "benchpipe", "OpenSSH", "ratio"
    );
    let (ours, theirs) = (breakdown.run(), breakdown.openssh());
    println!(
        "{:<34} {:>11.2} ms {:>11.2} ms {:>7.2}x   (goal < 0.5x)",
        format!("latency of `true` (median of {})", rounds()),
        ms(ours),
        ms(theirs),
        ours.as_secs_f64() / theirs.as_secs_f64()
    );
    let rate = |d: Duration| mib / d.as_secs_f64();
    println!(
        "{:<34} {:>9.1} MiB/s {:>9.1} MiB/s {:>7.2}x   (goal >= 0.9x)",
        format!("upload of {mib:.0} MiB (median of {})", upload_rounds()),
        rate(ours_upload),
        rate(theirs_upload),
        rate(ours_upload) / rate(theirs_upload)
    );
    let list = |v: &[Duration]| {
        v.iter()
            .map(|d| format!("{:.0}", rate(*d)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "  uploads in MiB/s: benchpipe [{}] ({cipher}), OpenSSH [{}]",
        list(&ours_uploads),
        list(&theirs_uploads)
    );
    println!();
    breakdown.print();
    Ok(())
}

/// One command's time, layer by layer: each way of running `true` timed once per
/// round, all in turn (the starting one rotating), so that a loaded machine's swings
/// fall on all of them alike.
struct Breakdown {
    names: Vec<&'static str>,
    times: Vec<Vec<Duration>>,
}

/// Rows of `Breakdown::names` besides the requests of `bench_layers`.
const OPEN_CLOSE: usize = 0;
const FIRST_LAYER: usize = 1;
/// `bench_layers`' rows that add one layer each; the rest are variants of the last.
const ADDED_LAYERS: usize = 4;

impl Breakdown {
    fn measure(t: &mut SshTransport, openssh: &OpenSsh) -> Result<Breakdown, String> {
        let layers = t.bench_layers("true").map_err(|e| e.to_string())?;
        let mut names = vec!["channel opened, closed, nothing run"];
        names.extend(layers.iter().map(|(name, _)| *name));
        names.push("Transport::run(\"true\")");
        names.push("OpenSSH, ControlMaster: ssh board true");
        let mut times = vec![Vec::new(); names.len()];
        for round in 0..rounds() {
            for k in 0..names.len() {
                let row = (round + k) % names.len();
                let started = Instant::now();
                match row {
                    OPEN_CLOSE => t.bench_open_close().map_err(|e| e.to_string())?,
                    r if r - FIRST_LAYER < layers.len() => {
                        let out = t
                            .bench_run_request(&layers[r - FIRST_LAYER].1)
                            .map_err(|e| e.to_string())?;
                        if !out.exit.success() {
                            return Err(format!("{}: {}", names[r], out.stderr_str()));
                        }
                    }
                    r if r == names.len() - 2 => {
                        t.run("true", None)
                            .map_err(|e| e.to_string())
                            .and_then(|o| ok(o.exit.success()))?;
                    }
                    _ => openssh.run("true", None)?,
                }
                times[row].push(started.elapsed());
            }
        }
        for v in &mut times {
            v.sort();
        }
        Ok(Breakdown { names, times })
    }

    fn quantile(&self, row: usize, q: f64) -> Duration {
        let v = &self.times[row];
        v[((v.len() - 1) as f64 * q).round() as usize]
    }

    fn median(&self, row: usize) -> Duration {
        self.quantile(row, 0.5)
    }

    fn run(&self) -> Duration {
        self.median(self.names.len() - 2)
    }

    fn openssh(&self) -> Duration {
        self.median(self.names.len() - 1)
    }

    /// The table: per row its median, quartiles, ratio to OpenSSH's round trip and what
    /// it adds: a layer over the row above it, a variant over run's request, `run` over
    /// its request (the controller's own share).
    fn print(&self) {
        let full = FIRST_LAYER + ADDED_LAYERS - 1;
        println!(
            "where one command's time goes (median of {} rounds, each row once per round, in turn)",
            rounds()
        );
        println!(
            "{:<40} {:>9} {:>15} {:>7} {:>10}",
            "", "median", "p25-p75", "vs ssh", "adds"
        );
        for row in 0..self.names.len() {
            let base = match row {
                OPEN_CLOSE | FIRST_LAYER => None,
                r if r <= full => Some(r - 1),
                r if r == self.names.len() - 1 => None,
                _ => Some(full),
            };
            let adds = base.map_or(String::new(), |b| {
                format!("{:+.2} ms", ms(self.median(row)) - ms(self.median(b)))
            });
            println!(
                "{:<40} {:>6.2} ms {:>6.2}-{:<5.2} ms {:>6.2}x {:>10}",
                self.names[row],
                ms(self.median(row)),
                ms(self.quantile(row, 0.25)),
                ms(self.quantile(row, 0.75)),
                ms(self.median(row)) / ms(self.openssh()),
                adds
            );
        }
        println!(
            "  `adds`: a layer over the row above; a variant (after run's request) over run's request"
        );
    }
}

fn ok(b: bool) -> Result<(), String> {
    if b {
        Ok(())
    } else {
        Err("command failed".into())
    }
}

/// The middle value (sorts in place); `v` is never empty here.
fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn make_file(path: &Path, bytes: u64) -> Result<(), String> {
    let status = Command::new("head")
        .args(["-c", &bytes.to_string(), "/dev/urandom"])
        .stdout(std::fs::File::create(path).map_err(|e| e.to_string())?)
        .status()
        .map_err(|e| e.to_string())?;
    ok(status.success())
}
