//! `dd` over a transport: refuse the wrong device, stream the image in large blocks with
//! fsync, then read exactly the written range back on the host and compare sha256.
//!
//! The controller hashes the image as it streams it (the bytes dd received), and the
//! host hashes what the device returns, read with O_DIRECT where dd supports it so the
//! page cache cannot answer for the medium. The device checks reuse `storage`'s probe
//! (symlinks such as `/dev/disk/by-id/...` resolved, partitions and holders listed) and
//! mount listing, so flashing refuses exactly what formatting refuses, and more.

use std::io::Read;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::{FlashError, Phase, Progress};
use crate::storage::{self, StorageError, rules};
use crate::transport::{Transport, quote};

/// dd's block size: large writes, as the issue asks; the same on every host.
pub const BLOCK: u64 = 4 << 20;
/// Bound on each check command (probing, listing mounts, sizes).
const CHECK: Option<Duration> = Some(Duration::from_secs(60));

/// What a verified flash wrote.
#[derive(Clone, Debug, PartialEq)]
pub struct DdReport {
    /// The device written, symlinks resolved (`/dev/sdb` for a by-id name).
    pub device: String,
    /// Bytes of the image written, which is the range verified.
    pub bytes: u64,
    /// sha256 (hex) of those bytes: the uncompressed image's digest. With no
    /// `expected_len`, a stream that ended early (a decompressor that died) is verified
    /// as what it was, so compare this with the image's recorded uncompressed sha256.
    pub sha256: String,
    /// Streaming the image, including dd's fsync.
    pub write_seconds: f64,
    /// Reading the range back and hashing it on the host.
    pub verify_seconds: f64,
}

/// A device that passed the checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The device node, symlinks resolved.
    pub real: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The device as messages name it: `as asked (resolves to real)`.
    pub named: String,
}

/// Writes `image` to `device` on the transport's host and proves it by read-back.
///
/// - `device`: the device to write, as the board file's `[flash] device` resolves it.
/// - `declared`: the devices the board file declares for flashing (its boot storage);
///   `device` must resolve to the same node as one of them.
/// - `image`: the uncompressed image stream (`image::open`).
/// - `expected_len`: its length when known; an image larger than the device is then
///   refused before writing, and a stream of another length fails.
/// - `progress`: called as bytes go out, and once when verification starts.
///
/// Before writing, refuses a device that is not declared, is mounted (anywhere the
/// host's shell sees), holds or is a partition of the disk holding the host's `/` or
/// `/boot`, or is active swap (`FlashError::Refused`, nothing written). An image found
/// larger than the device while streaming stops at the device's end
/// (`FlashError::TooLarge`). A read-back that differs is `FlashError::Verify`.
pub fn write(
    t: &mut dyn Transport,
    device: &str,
    declared: &[&str],
    image: &mut dyn Read,
    expected_len: Option<u64>,
    progress: &dyn Fn(Progress),
) -> Result<DdReport, FlashError> {
    let target = check(t, device, declared, expected_len)?;
    let host = t.target();
    let direct = supports(t, &format!("of={} oflag=direct", quote::sh(&target.real)));
    let full = supports(t, "of=/dev/null iflag=fullblock");
    let mut flags = format!("bs={BLOCK} conv=fsync");
    if full {
        flags.push_str(" iflag=fullblock status=none");
    }
    if direct {
        // GNU dd drops O_DIRECT for a last block shorter than `bs`, so any length works.
        flags.push_str(" oflag=direct");
    }
    let command = format!("dd of={} {flags}", quote::sh(&target.real));
    let mut reader = Hashing {
        inner: image,
        hash: Sha256::new(),
        bytes: 0,
        limit: target.bytes,
        total: expected_len,
        progress,
        failed: None,
        overflow: false,
    };
    let started = Instant::now();
    let mut err = crate::transport::Capture::new(64 << 10);
    let ran = t.exec_input(&command, None, &mut reader, &mut std::io::sink(), &mut err);
    let write_seconds = started.elapsed().as_secs_f64();
    let (stderr, _) = err.finish();
    let stderr = String::from_utf8_lossy(&stderr).trim().to_string();
    if reader.overflow {
        return Err(FlashError::TooLarge {
            host,
            device: target.named,
            device_bytes: target.bytes,
        });
    }
    if let Some(why) = reader.failed.take() {
        return Err(FlashError::Image(why));
    }
    let exit = ran?;
    let bytes = reader.bytes;
    if !exit.success() {
        return Err(FlashError::Write {
            host,
            device: target.named,
            exit,
            bytes,
            stderr,
        });
    }
    if let Some(expected) = expected_len
        && expected != bytes
    {
        return Err(FlashError::Length {
            host,
            expected,
            got: bytes,
        });
    }
    let sha256 = hex(&reader.hash.finalize());
    progress(Progress {
        phase: Phase::Verify,
        bytes,
        total: expected_len,
    });
    let started = Instant::now();
    let found = read_back(t, &target.real, bytes, direct)?;
    let verify_seconds = started.elapsed().as_secs_f64();
    if found != sha256 {
        return Err(FlashError::Verify {
            host,
            device: target.named,
            bytes,
            expected: sha256,
            found,
        });
    }
    Ok(DdReport {
        device: target.real,
        bytes,
        sha256,
        write_seconds,
        verify_seconds,
    })
}

/// The checks `write` makes before writing, on their own (for `plan`-time preflight).
pub fn check(
    t: &mut dyn Transport,
    device: &str,
    declared: &[&str],
    expected_len: Option<u64>,
) -> Result<Target, FlashError> {
    let host = t.target();
    let refuse = |named: &str, reason: String| FlashError::Refused {
        host: host.clone(),
        device: named.to_string(),
        reason,
    };
    if let Some(why) = rules::device_path(device) {
        return Err(refuse(device, why));
    }
    // A board that cannot answer is a transport failure; anything else it says about
    // the device (not a block device, unidentifiable) is a refusal.
    let refuse_storage = |named: &str, e: StorageError| match e {
        StorageError::Transport(e) => FlashError::Transport(e),
        other => refuse(named, other.to_string()),
    };
    let dev = storage::probe(t, device).map_err(|e| refuse_storage(device, e))?;
    let named = if dev.real == rules::normalize(device) {
        device.to_string()
    } else {
        format!("{device} (resolves to {})", dev.real)
    };
    let mut seen = Vec::new();
    let mut is_declared = false;
    for d in declared {
        match storage::probe(t, d) {
            Ok(p) if p.real == dev.real => is_declared = true,
            Ok(p) if p.real != rules::normalize(d) => seen.push(format!("{d} (-> {})", p.real)),
            Ok(_) => seen.push(d.to_string()),
            Err(e) => seen.push(format!("{d} ({e})")),
        }
    }
    if !is_declared {
        return Err(refuse(
            &named,
            if seen.is_empty() {
                "the board file declares no device to flash".to_string()
            } else {
                format!(
                    "it is not the device the board file declares for flashing: {}",
                    seen.join(", ")
                )
            },
        ));
    }
    let all = storage::mounts(t, &dev).map_err(|e| refuse_storage(&named, e))?;
    let on_dev: Vec<&storage::Mount> = all.all().iter().filter(|m| dev.holds(m)).collect();
    if let Some(m) = on_dev
        .iter()
        .find(|m| rules::system_mount(&m.point).is_some())
    {
        return Err(refuse(
            &named,
            format!(
                "it holds the running system ({} is mounted at {})",
                m.source, m.point
            ),
        ));
    }
    if let Some(disk) = rules::whole_disk(&dev.real)
        && let Ok(parent) = storage::probe(t, &disk)
        && let Some(m) = storage::mounts(t, &parent).ok().and_then(|ms| {
            ms.all()
                .iter()
                .find(|m| parent.holds(m) && rules::system_mount(&m.point).is_some())
                .cloned()
        })
    {
        return Err(refuse(
            &named,
            format!(
                "it is a partition of {}, which holds the running system ({} is mounted at {})",
                parent.real, m.source, m.point
            ),
        ));
    }
    if let Some(m) = on_dev.first() {
        return Err(refuse(
            &named,
            format!(
                "it is mounted ({} at {}); unmount it first, or flash from a host where \
                 it is not in use",
                m.source, m.point
            ),
        ));
    }
    if let Some(swap) = storage::swap_on(t, &dev) {
        return Err(refuse(&named, format!("{swap} is in use as swap")));
    }
    let bytes = device_bytes(t, &dev.real).map_err(|reason| FlashError::Host {
        host: host.clone(),
        what: format!("size of {named}"),
        reason,
    })?;
    if let Some(len) = expected_len
        && len > bytes
    {
        return Err(refuse(
            &named,
            format!("the image is {len} bytes, larger than the device ({bytes} bytes)"),
        ));
    }
    Ok(Target {
        real: dev.real,
        bytes,
        named,
    })
}

/// The device's size: sysfs counts 512-byte sectors whatever the logical block size.
fn device_bytes(t: &mut dyn Transport, real: &str) -> Result<u64, String> {
    let name = real.rsplit('/').next().unwrap_or(real);
    let cmd = format!(
        "cat {} 2>/dev/null || blockdev --getsize64 {} | awk '{{ print $1 / 512 }}'",
        quote::sh(&format!("/sys/class/block/{name}/size")),
        quote::sh(real)
    );
    let out = t.run(&cmd, CHECK).map_err(|e| e.to_string())?;
    out.stdout_str()
        .trim()
        .parse::<u64>()
        .map(|sectors| sectors * 512)
        .map_err(|_| {
            format!(
                "neither sysfs nor blockdev gave a size ({})",
                out.stderr_str().trim()
            )
        })
}

/// Whether the host's dd accepts these operands (GNU dd does; busybox's may not). The
/// probe copies nothing: `count=0`.
fn supports(t: &mut dyn Transport, operands: &str) -> bool {
    let cmd = format!("dd if=/dev/null {operands} bs={BLOCK} count=0 conv=notrunc 2>/dev/null");
    t.run(&cmd, CHECK).is_ok_and(|o| o.exit.success())
}

/// sha256 of the device's first `bytes` bytes, read on the host past the page cache:
/// the cache is dropped first, and with O_DIRECT the reads go to the medium.
fn read_back(
    t: &mut dyn Transport,
    real: &str,
    bytes: u64,
    direct: bool,
) -> Result<String, FlashError> {
    let dev = quote::sh(real);
    let source = if direct {
        // Whole aligned blocks with O_DIRECT; head cuts the range (dd then gets SIGPIPE,
        // which the pipeline's status, sha256sum's, ignores).
        format!(
            "dd if={dev} bs={BLOCK} count={} iflag=direct 2>/dev/null | head -c {bytes}",
            bytes.div_ceil(BLOCK)
        )
    } else {
        format!("head -c {bytes} {dev}")
    };
    let cmd = format!("blockdev --flushbufs {dev} 2>/dev/null; {source} | sha256sum");
    let host = t.target();
    let out = t.run(&cmd, None)?;
    let digest = out
        .stdout_str()
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string();
    if !out.exit.success() || digest.len() != 64 {
        return Err(FlashError::Host {
            host,
            what: format!("reading {real} back"),
            reason: format!("{}: {}", out.exit, out.stderr_str().trim()),
        });
    }
    Ok(digest)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The image as dd receives it: hashed, counted, reported, and cut at the device's end.
struct Hashing<'a> {
    inner: &'a mut dyn Read,
    hash: Sha256,
    bytes: u64,
    limit: u64,
    total: Option<u64>,
    progress: &'a dyn Fn(Progress),
    /// Why reading the image failed; the transport only sees an I/O error.
    failed: Option<String>,
    overflow: bool,
}

impl Read for Hashing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => return Err(e),
            Err(e) => {
                self.failed = Some(e.to_string());
                return Err(e);
            }
        };
        if self.bytes + n as u64 > self.limit {
            self.overflow = true;
            return Err(std::io::Error::other("the image is larger than the device"));
        }
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        if n > 0 {
            (self.progress)(Progress {
                phase: Phase::Write,
                bytes: self.bytes,
                total: self.total,
            });
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hashing_reader_stops_at_the_device_end_and_keeps_the_digest_of_what_it_passed() {
        let data = vec![5u8; 3000];
        let mut src = data.as_slice();
        let calls = std::cell::Cell::new(0);
        let progress = |_: Progress| calls.set(calls.get() + 1);
        let mut r = Hashing {
            inner: &mut src,
            hash: Sha256::new(),
            bytes: 0,
            limit: 2048,
            total: None,
            progress: &progress,
            failed: None,
            overflow: false,
        };
        let mut buf = [0u8; 1024];
        assert_eq!(r.read(&mut buf).unwrap(), 1024);
        assert_eq!(r.read(&mut buf).unwrap(), 1024);
        assert!(r.read(&mut buf).is_err());
        assert!(r.overflow);
        assert_eq!(r.bytes, 2048);
        assert_eq!(calls.get(), 2);
        assert_eq!(hex(&r.hash.finalize()), hex(&Sha256::digest(&data[..2048])));
    }
}
