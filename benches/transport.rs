//! Benchmark: benchpipe's SSH transport against OpenSSH on a lab board. Prints figures
//! side by side (per-command latency against a ControlMaster connection, bulk upload
//! against `ssh board 'cat > file'`); no assertions. Needs root for the lab.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use benchpipe::lab::LabOptions;
use benchpipe::transport::Transport;
use common::OpenSsh;

/// 200 commands and five 512 MiB uploads, or 20 and one of 16 MiB with `--quick`.
fn commands() -> usize {
    if common::quick() { 20 } else { 200 }
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
    let ours = time_n(commands(), || {
        t.run("true", None)
            .map_err(|e| e.to_string())
            .and_then(|o| ok(o.exit.success()))
    })?;
    let theirs = time_n(commands(), || openssh.run("true", None))?;

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
    println!(
        "{:<34} {:>11.2} ms {:>11.2} ms {:>7.2}x   (goal <= 1.2x)",
        format!("latency of `true` (mean of {})", commands()),
        ms(ours) / commands() as f64,
        ms(theirs) / commands() as f64,
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
    Ok(())
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

fn time_n(n: usize, mut f: impl FnMut() -> Result<(), String>) -> Result<Duration, String> {
    let started = Instant::now();
    for _ in 0..n {
        f()?;
    }
    Ok(started.elapsed())
}

fn make_file(path: &Path, bytes: u64) -> Result<(), String> {
    let status = Command::new("head")
        .args(["-c", &bytes.to_string(), "/dev/urandom"])
        .stdout(std::fs::File::create(path).map_err(|e| e.to_string())?)
        .status()
        .map_err(|e| e.to_string())?;
    ok(status.success())
}
