//! Putting an OS image onto a board's boot device and proving what landed there.
//!
//! `dd` streams the image through a `Transport` (`exec_input`) into `dd` on a host that
//! sees the device (the board in a maintenance OS, or a flasher), hashing it on the
//! controller as it goes, then reads the written range back on that host and compares
//! digests. Before a byte is written, the device is refused when it is not the declared
//! one, is mounted, holds the host's running system, is swap, or is smaller than the
//! image. Callers (the schedule's flash step) get a `DdReport` or a typed `FlashError`.

pub mod bmap;
pub mod dd;
mod stream;
pub mod tpi;

use std::io::IsTerminal;

use crate::transport::{Exit, TransportError};

/// Where a flash is: how much of the image went out, and which phase runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub phase: Phase,
    /// Bytes of the (uncompressed) image written so far.
    pub bytes: u64,
    /// The image's uncompressed length, when known.
    pub total: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Streaming the image into the device.
    Write,
    /// Reading the written range back on the host and hashing it (no byte counts).
    Verify,
}

/// Why a flash did not happen or did not prove itself.
#[derive(Debug, thiserror::Error)]
pub enum FlashError {
    /// Checked before anything is written: the device stays as it was.
    #[error("{host}: refusing to write {device}: {reason}")]
    Refused {
        host: String,
        /// The device as asked for, with what it resolves to when that differs.
        device: String,
        reason: String,
    },
    /// The image holds more than the device (found while streaming, when its length
    /// was not known up front); nothing past the device's end was sent.
    #[error("{host}: the image is larger than {device} ({device_bytes} bytes); stopped there")]
    TooLarge {
        host: String,
        device: String,
        device_bytes: u64,
    },
    #[error("reading the image: {0}")]
    Image(String),
    #[error("{host}: dd to {device} failed ({exit}) after {bytes} bytes: {stderr}")]
    Write {
        host: String,
        device: String,
        exit: Exit,
        bytes: u64,
        stderr: String,
    },
    #[error("{host}: the image should be {expected} bytes, but it gave {got}")]
    Length {
        host: String,
        expected: u64,
        got: u64,
    },
    #[error(
        "{host}: {device} does not hold what was written: the image's {bytes} bytes have \
         sha256 {expected}, the device's first {bytes} bytes read back as {found}"
    )]
    Verify {
        host: String,
        device: String,
        bytes: u64,
        expected: String,
        found: String,
    },
    /// With a block map: the mapped ranges read back differ from the image's.
    #[error(
        "{host}: {device} does not hold what was written: the image's {ranges} mapped \
         range(s) ({bytes} bytes) have sha256 {expected}, read back as {found}"
    )]
    VerifyMapped {
        host: String,
        device: String,
        ranges: usize,
        bytes: u64,
        expected: String,
        found: String,
    },
    /// A check or the read-back could not run on the host.
    #[error("{host}: {what}: {reason}")]
    Host {
        host: String,
        what: String,
        reason: String,
    },
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// A progress display for one flash: an indicatif bar (bytes, throughput, ETA) when
/// stderr is a terminal, else a plain line per 10% (or per 256 MiB when the length is
/// unknown) and one when verification starts.
pub fn progress_display(label: &str) -> impl Fn(Progress) + use<> {
    use indicatif::{ProgressBar, ProgressStyle};
    let label = label.to_string();
    let tty = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let bar = tty.then(|| {
        let b = ProgressBar::new(0);
        let style = ProgressStyle::with_template(
            "{msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        b.set_style(style);
        b.set_message(format!("{label}: writing"));
        b
    });
    let last_step = std::sync::atomic::AtomicU64::new(u64::MAX);
    move |p: Progress| {
        if let Some(b) = &bar {
            match p.phase {
                Phase::Write => {
                    if let Some(t) = p.total {
                        b.set_length(t);
                    }
                    b.set_position(p.bytes);
                }
                Phase::Verify => {
                    b.set_message(format!("{label}: verifying"));
                    b.finish();
                }
            }
            return;
        }
        let step = match (p.phase, p.total) {
            (Phase::Verify, _) => u64::MAX - 1,
            (Phase::Write, Some(t)) if t > 0 => p.bytes * 10 / t,
            (Phase::Write, _) => p.bytes >> 28,
        };
        if last_step.swap(step, std::sync::atomic::Ordering::Relaxed) != step {
            let mib = p.bytes as f64 / f64::from(1 << 20);
            match (p.phase, p.total) {
                (Phase::Verify, _) => eprintln!("{label}: verifying {mib:.0} MiB written"),
                (Phase::Write, Some(t)) => eprintln!(
                    "{label}: written {mib:.0} of {:.0} MiB",
                    t as f64 / f64::from(1 << 20)
                ),
                (Phase::Write, None) => eprintln!("{label}: written {mib:.0} MiB"),
            }
        }
    }
}
