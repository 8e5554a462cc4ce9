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

use super::bmap::{Bmap, Mapped, bmap_on_host, read_back_mapped, remove_host_dir};
use super::stream::{Hashing, Streamed};
pub use super::stream::{SelfHashing, Source};
use super::{FlashError, Phase, Progress};
use crate::canonical::hex;
use crate::storage::{self, StorageError, rules};
use crate::transport::{Transport, quote};

/// dd's block size: large writes, as the issue asks; the same on every host.
pub const BLOCK: u64 = 4 << 20;
/// Bound on each check command (probing, listing mounts, sizes).
pub(super) const CHECK: Option<Duration> = Some(Duration::from_secs(60));

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
    /// When bmaptool wrote only the image's mapped blocks: what was verified instead
    /// of the whole range.
    pub bmap: Option<BmapReport>,
}

/// What a flash with a block map wrote and verified.
#[derive(Clone, Debug, PartialEq)]
pub struct BmapReport {
    /// Bytes in the mapped ranges: written, read back and compared.
    pub mapped_bytes: u64,
    /// sha256 of the mapped ranges, in order.
    pub mapped_sha256: String,
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
    let options = Options {
        expected_len,
        bmap: None,
    };
    write_with(
        t,
        device,
        declared,
        Source::Plain(image),
        &options,
        progress,
    )
}

/// What `write_with` knows of the image beside its bytes.
#[derive(Clone, Debug, Default)]
pub struct Options<'a> {
    /// Its length when known (see `write`).
    pub expected_len: Option<u64>,
    /// Its block map: used where the host has `bmaptool` (see `super::bmap`).
    pub bmap: Option<&'a Bmap>,
}

/// `write` with a self-hashing stream or a block map. With a bmap on a host that has
/// `bmaptool`, bmaptool writes only the mapped blocks (checking each range's sha256 in
/// the bmap as it reads), the controller checks that the image holds only zeros outside
/// them (`FlashError::Image` otherwise: the bmap leaves out data), and only the mapped
/// ranges are read back and compared (`FlashError::VerifyMapped`). Without bmaptool on
/// the host, the bmap is not used and dd writes everything.
pub fn write_with(
    t: &mut dyn Transport,
    device: &str,
    declared: &[&str],
    mut source: Source<'_>,
    options: &Options<'_>,
    progress: &dyn Fn(Progress),
) -> Result<DdReport, FlashError> {
    let expected_len = options.expected_len;
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
    let bmap = match options.bmap {
        Some(b) => bmap_on_host(t, b, expected_len)?,
        None => None,
    };
    let command = match &bmap {
        Some((_, dir)) => format!(
            "bmaptool copy --bmap {} /dev/stdin {}",
            quote::sh(&format!("{dir}/image.bmap")),
            quote::sh(&target.real)
        ),
        None => format!("dd of={} {flags}", quote::sh(&target.real)),
    };
    let self_hashed = matches!(source, Source::Hashed(_));
    let mut reader = Hashing {
        inner: match &mut source {
            Source::Plain(r) => &mut **r,
            Source::Hashed(s) => &mut **s,
        },
        hash: (!self_hashed).then(Sha256::new),
        mapped: bmap.as_ref().map(|(b, _)| Mapped::new(b)),
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
    let streamed = reader.streamed();
    let written = Written {
        reader: streamed,
        ran,
        err,
    };
    let outcome = finish_write(t, &source, written, bmap.as_ref(), &target, options)?;
    let (bytes, sha256, mapped) = outcome;
    progress(Progress {
        phase: Phase::Verify,
        bytes,
        total: expected_len,
    });
    let started = Instant::now();
    let bmap_report = if let (Some((b, dir)), Some(m)) = (&bmap, mapped) {
        let found = read_back_mapped(t, &target.real, b, dir, direct);
        remove_host_dir(t, dir);
        let found = found?;
        let expected = m.sha256();
        if found != expected {
            return Err(FlashError::VerifyMapped {
                host,
                device: target.named,
                ranges: b.ranges.len(),
                bytes: b.mapped_bytes(),
                expected,
                found,
            });
        }
        Some(BmapReport {
            mapped_bytes: b.mapped_bytes(),
            mapped_sha256: expected,
        })
    } else {
        let found = read_back(t, &target.real, bytes, direct)?;
        if found != sha256 {
            return Err(FlashError::Verify {
                host,
                device: target.named,
                bytes,
                expected: sha256,
                found,
            });
        }
        None
    };
    let verify_seconds = started.elapsed().as_secs_f64();
    Ok(DdReport {
        device: target.real,
        bytes,
        sha256,
        write_seconds,
        verify_seconds,
        bmap: bmap_report,
    })
}

/// What the write left: the stream's account, dd's exit and its stderr.
struct Written {
    reader: Streamed,
    ran: Result<crate::transport::Exit, crate::transport::TransportError>,
    err: crate::transport::Capture,
}

/// After the stream: why it failed, or its length, digest and mapped-range hash. The
/// host's temporary bmap directory is removed on failure.
fn finish_write(
    t: &mut dyn Transport,
    source: &Source<'_>,
    written: Written,
    bmap: Option<&(Bmap, String)>,
    target: &Target,
    options: &Options<'_>,
) -> Result<(u64, String, Option<Mapped>), FlashError> {
    let host = t.target();
    let Written { reader, ran, err } = written;
    let Streamed {
        hash,
        mapped,
        bytes,
        failed,
        overflow,
    } = reader;
    let checked = (|| {
        let (stderr, _) = err.finish();
        let stderr = String::from_utf8_lossy(&stderr).trim().to_string();
        if overflow {
            return Err(FlashError::TooLarge {
                host: host.clone(),
                device: target.named.clone(),
                device_bytes: target.bytes,
            });
        }
        if let Some(why) = failed {
            return Err(FlashError::Image(why));
        }
        let exit = ran?;
        if !exit.success() {
            return Err(FlashError::Write {
                host: host.clone(),
                device: target.named.clone(),
                exit,
                bytes,
                stderr,
            });
        }
        let expected = options.expected_len.or(bmap.map(|(b, _)| b.image_bytes));
        if let Some(expected) = expected
            && expected != bytes
        {
            return Err(FlashError::Length {
                host: host.clone(),
                expected,
                got: bytes,
            });
        }
        let sha256 = match (&source, hash) {
            (Source::Hashed(s), _) => s.sha256().ok_or_else(|| {
                FlashError::Image("the image stream ended without its digest".into())
            })?,
            (_, Some(h)) => hex(&h.finalize()),
            (Source::Plain(_), None) => unreachable!("a plain source is hashed here"),
        };
        if let (Some((b, _)), Some(off)) = (bmap, mapped.as_ref().and_then(|m| m.stray)) {
            return Err(FlashError::Image(format!(
                "the bmap {} leaves out data: byte {off} of the image is not zero, outside                  its mapped ranges",
                b.path.display()
            )));
        }
        Ok((bytes, sha256, mapped))
    })();
    if checked.is_err()
        && let Some((_, dir)) = bmap
    {
        remove_host_dir(t, dir);
    }
    checked
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
    digest_of(t, &cmd, real)
}

/// Runs a read-back pipeline ending in `sha256sum` and returns its digest.
pub(super) fn digest_of(
    t: &mut dyn Transport,
    cmd: &str,
    real: &str,
) -> Result<String, FlashError> {
    let host = t.target();
    let out = t.run(cmd, None)?;
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
