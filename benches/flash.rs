//! Benchmark: `flash::dd::write` of a 1 GiB image to a lab board's boot disk over SSH,
//! side by side with OpenSSH feeding the same bytes to `dd of=DEV bs=4M`, and the same
//! with an `.img.xz` against `xz -dc | ssh board dd`. Prints figures (medians of a few
//! alternating rounds), verification time separately; no assertions. Needs root.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use benchpipe::flash::dd;
use benchpipe::lab::LabOptions;
use benchpipe::transport::ssh::SshTransport;
use common::{OpenSsh, sh};

/// 1 GiB in three rounds, or 32 MiB in one with `--quick`.
fn image_bytes() -> u64 {
    if common::quick() { 32 << 20 } else { 1 << 30 }
}
fn rounds() -> usize {
    if common::quick() { 1 } else { 3 }
}

fn main() {
    if !common::is_root("flash") {
        return;
    }
    if let Err(e) = run() {
        eprintln!("benches/flash: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let root = std::env::temp_dir().join(format!("benchpipe-bench-flash-{}", std::process::id()));
    let options = LabOptions {
        prefix: "bpflashb".into(),
        board_prefix: "flashb".into(),
        disks_per_board: 1,
        disk_bytes: 16 << 20,
        boot_bytes: image_bytes() + (16 << 20),
        first_subnet: 6100,
        ..LabOptions::default()
    };
    let (info, _guard) = common::lab_up(&root, options)?;
    let board = &info.boards[0];
    let device = board
        .boot
        .as_ref()
        .ok_or("the lab board has no boot disk")?
        .device
        .clone();
    let mut t = common::connect(&info)?;
    let openssh = OpenSsh::new(&info, &root);
    openssh.run("true", None)?;

    // Plain: incompressible bytes. xz: a quarter random per MiB, as OS images compress.
    let plain = root.join("image.img");
    sh(&format!(
        "head -c {} /dev/urandom > {}",
        image_bytes(),
        plain.display()
    ))?;
    let xz = root.join("image.img.xz");
    sh(&format!(
        "i=0; while [ $i -lt {mib} ]; do head -c 262144 /dev/urandom; head -c 786432 /dev/zero; \
         i=$((i + 1)); done | xz -T2 -1 -c > {}",
        xz.display(),
        mib = image_bytes() >> 20
    ))?;

    let dd_cmd = format!("dd of={device} bs=4M status=none");
    let mut rows = Vec::new();
    let (img, img_xz) = (
        format!("{} MiB .img", image_bytes() >> 20),
        format!("{} MiB .img.xz", image_bytes() >> 20),
    );
    for (label, image, compressed) in [(img.as_str(), &plain, false), (img_xz.as_str(), &xz, true)]
    {
        let (mut ours, mut verify, mut theirs) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds() {
            for side in [round % 2, 1 - round % 2] {
                if side == 0 {
                    let report = ours_flash(&mut t, &device, image, compressed)?;
                    ours.push(report.write_seconds);
                    verify.push(report.verify_seconds);
                } else {
                    let started = Instant::now();
                    if compressed {
                        openssh.run_piped(&format!("xz -dc {}", image.display()), &dd_cmd)?;
                    } else {
                        openssh.run(&dd_cmd, Some(image))?;
                    }
                    theirs.push(started.elapsed().as_secs_f64());
                }
            }
        }
        rows.push((
            label,
            median(&mut ours),
            median(&mut verify),
            median(&mut theirs),
            ours,
            theirs,
        ));
    }
    openssh.stop();

    let mib = image_bytes() as f64 / f64::from(1 << 20);
    let rate = |s: f64| mib / s;
    println!(
        "flash::dd::write vs OpenSSH + dd on lab board {} ({}), cipher {}",
        board.name,
        board.address,
        t.cipher().unwrap_or_else(|| "?".into())
    );
    println!(
        "{:<16} {:>16} {:>16} {:>7} {:>14}",
        "", "benchpipe write", "ssh | dd", "ratio", "verify (ours)"
    );
    for (label, ours, verify, theirs, all_ours, all_theirs) in &rows {
        println!(
            "{label:<16} {:>10.1} MiB/s {:>10.1} MiB/s {:>6.2}x {:>9.1} s ({:.0} MiB/s)   (goal >= 0.9x)",
            rate(*ours),
            rate(*theirs),
            rate(*ours) / rate(*theirs),
            verify,
            rate(*verify)
        );
        let list = |v: &[f64]| {
            v.iter()
                .map(|s| format!("{:.0}", rate(*s)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!(
            "  rounds in MiB/s: benchpipe [{}], ssh | dd [{}]",
            list(all_ours),
            list(all_theirs)
        );
    }
    println!(
        "  benchpipe's write includes conv=fsync and oflag=direct and hashes the stream; the \
         baseline is plain `dd of=DEV bs=4M` (its data may still be in the page cache)."
    );
    Ok(())
}

fn ours_flash(
    t: &mut SshTransport,
    device: &str,
    image: &Path,
    compressed: bool,
) -> Result<dd::DdReport, String> {
    let no_progress = |_: benchpipe::flash::Progress| {};
    if compressed {
        let mut child = Command::new("xz")
            .arg("-dc")
            .arg(image)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut out = child.stdout.take().ok_or("xz: no stdout")?;
        let r = dd::write(t, device, &[device], &mut out, None, &no_progress);
        let _ = child.wait();
        r.map_err(|e| e.to_string())
    } else {
        let len = std::fs::metadata(image).map_err(|e| e.to_string())?.len();
        let mut f = std::fs::File::open(image).map_err(|e| e.to_string())?;
        dd::write(t, device, &[device], &mut f, Some(len), &no_progress).map_err(|e| e.to_string())
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}
