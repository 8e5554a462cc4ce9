//! Benchmark: `image::open`'s decompressed stream (which also hashes what it reads)
//! against the real CLIs decompressing the same file to /dev/null (`cat`, `xz -dc`,
//! `gzip -dc`, `zstd -dc`). Prints figures side by side; no assertions. Shows whether
//! the image side can keep up with a flash link.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use benchpipe::image::{self, Cache};

mod common;
use benchpipe::model::ImageSource;

/// Uncompressed size: half pseudo-random (incompressible), half zeros, as a disk image
/// with a filled root filesystem and free space roughly is.
/// The image's size: 256 MiB, or 16 MiB with `--quick`.
fn size() -> usize {
    if common::quick() { 16 << 20 } else { 256 << 20 }
}

fn main() {
    let dir = std::env::temp_dir().join(format!("bp-bench-image-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let result = run(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = result {
        eprintln!("benches/image: {e}");
        std::process::exit(1);
    }
}

fn run(dir: &Path) -> Result<(), String> {
    let raw = dir.join("disk.img");
    write_image(&raw).map_err(|e| e.to_string())?;
    println!("image: {} MiB, half random, half zeros", size() >> 20);
    println!("{:<10} {:>14} {:>14}", "format", "image::open", "CLI -dc");
    let cache = Cache::new(dir.join("cache"));
    for (ext, cli) in [
        ("", "cat"),
        (".xz", "xz -T1 -dc"),
        (".gz", "gzip -dc"),
        (".zst", "zstd -q -dc"),
    ] {
        let file = PathBuf::from(format!("{}{ext}", raw.display()));
        if !ext.is_empty() {
            let tool = match ext {
                ".xz" => "xz -T1 -1 -c",
                ".gz" => "gzip -1 -c",
                _ => "zstd -q -3 -c",
            };
            let ok = Command::new("sh")
                .args([
                    "-c",
                    &format!("{tool} '{}' > '{}'", raw.display(), file.display()),
                ])
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                println!(
                    "{:<10} skipped: `{tool}` failed (not installed?)",
                    &ext[1..]
                );
                continue;
            }
        }
        let sha = sha256_cli(&file)?;
        let source = ImageSource::Path {
            path: file.clone(),
            sha256: sha,
        };
        let fetched = image::fetch(&cache, "bench", &source, &|_| {}).map_err(|e| e.to_string())?;
        let t0 = Instant::now();
        let mut stream = image::open(&fetched, None).map_err(|e| e.to_string())?;
        let n = drain(&mut stream).map_err(|e| e.to_string())?;
        let ours = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let ok = Command::new("sh")
            .args(["-c", &format!("{cli} '{}' > /dev/null", file.display())])
            .stderr(Stdio::inherit())
            .status()
            .is_ok_and(|s| s.success());
        let theirs = t0.elapsed().as_secs_f64();
        let mib = |secs: f64| format!("{:.0} MiB/s", n as f64 / secs / f64::from(1 << 20));
        let name = if ext.is_empty() { "raw" } else { &ext[1..] };
        println!(
            "{name:<10} {:>14} {:>14}",
            mib(ours),
            if ok { mib(theirs) } else { "failed".into() }
        );
    }
    Ok(())
}

fn write_image(path: &Path) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut block = vec![0u8; 1 << 20];
    for i in 0..size() / block.len() {
        if i % 2 == 0 {
            for chunk in block.chunks_mut(8) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.copy_from_slice(&x.to_le_bytes());
            }
        } else {
            block.fill(0);
        }
        f.write_all(&block)?;
    }
    f.flush()
}

fn sha256_cli(path: &Path) -> Result<String, String> {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .map_err(|e| e.to_string())?;
    let mut text = String::new();
    out.stdout
        .as_slice()
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    text.split_whitespace()
        .next()
        .map(str::to_string)
        .ok_or_else(|| "sha256sum printed nothing".into())
}

/// Reads to the end in 4 MiB blocks, as a flash writes them.
fn drain(r: &mut dyn Read) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 4 << 20];
    let mut n = 0u64;
    loop {
        match r.read(&mut buf)? {
            0 => return Ok(n),
            k => n += k as u64,
        }
    }
}
