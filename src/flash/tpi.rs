//! Flashing a Turing Pi 2 node through its BMC: the image is put on the BMC (streamed
//! there decompressed, bounded by its measured size and the room there, or found there
//! already by the digest the BMC computes), then the BMC's own `tpi` CLI writes it to
//! the node.
//!
//! What this relies on of `tpi` (turing-machines/tpi, `src/cli.rs` and
//! `src/legacy_handler.rs`; the BMC firmware ships it):
//! - `tpi flash --local --node N --image-path PATH`: `--local` makes the BMC read
//!   `PATH` from its own filesystem instead of uploading it to itself over HTTP; nodes
//!   are 1 to 4. It prints `Flashing from image file PATH...`, `Verifying checksum...`
//!   and `Done` when bmcd reports success.
//! - Errors: the CLI prints `Error: ...`, `could not execute flashing: ...` or `Failed
//!   to begin flashing: STATUS` and exits non-zero; a failure reported while flashing
//!   panics (`Error occured during flashing: ...`, exit 101). Some versions print a
//!   server error and still exit 0, so the text is read as well as the exit status.
//! - `tpi power on|off|reset --node N` (`crate::power::tpi_power`).

use std::io::Read;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::FlashError;
use crate::transport::quote::sh;
use crate::transport::{Exit, Output, Transport};

/// How long `tpi flash` may take: a few GiB to eMMC through the BMC.
pub const FLASH_TIMEOUT: Duration = Duration::from_secs(2 * 3600);

/// The `tpi flash` command for `node` with the image at `path` on the BMC.
pub fn flash_command(node: u32, path: &str) -> String {
    format!("tpi flash --local --node {node} --image-path {}", sh(path))
}

/// Where the image with content digest `sha256` goes in `dir` on the BMC: named by its
/// digest, so an image already there is found again and a different one never reused.
pub fn image_path(dir: &str, sha256: &str) -> String {
    format!("{}/{sha256}.img", dir.trim_end_matches('/'))
}

/// Whether `tpi` did what it was asked, from its exit status and its output: `Err`
/// holds the line that says why.
pub fn judge(exit: &Exit, stdout: &str, stderr: &str) -> Result<(), String> {
    let lines = || {
        stderr
            .lines()
            .chain(stdout.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty())
    };
    // The line that says what went wrong first; a panic's location only after it.
    let says_why = |l: &&str| {
        let lower = l.to_ascii_lowercase();
        lower.starts_with("error")
            || lower.contains("error occured")
            || lower.contains("error occurred")
            || lower.contains("could not execute")
            || lower.contains("failed to")
    };
    let error = lines()
        .find(says_why)
        .or_else(|| lines().find(|l| l.contains("panicked")));
    match (exit.success(), error) {
        (true, None) => Ok(()),
        (true, Some(line)) => Err(format!("it exited 0 but said: {line}")),
        (false, Some(line)) => Err(format!("{exit}: {line}")),
        (false, None) => Err(match lines().next_back() {
            Some(line) => format!("{exit}: {line}"),
            None => format!("{exit}, without a word"),
        }),
    }
}

/// What `put_image` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub path: String,
    /// Whether it was sent now (false: it was on the BMC already with this digest).
    pub uploaded: bool,
    pub bytes: u64,
}

/// The bytes free in `dir` on the BMC (made first), when `df` says.
pub fn room(t: &mut dyn Transport, dir: &str) -> Option<u64> {
    let out = t
        .run(
            &format!("mkdir -p -- {d} && df -Pk -- {d}", d = sh(dir)),
            Some(Duration::from_secs(60)),
        )
        .ok()?;
    if !out.exit.success() {
        return None;
    }
    let text = out.stdout_str();
    let kib: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// Makes sure the BMC holds the image's content at `image_path(dir, sha256)`, where
/// `sha256` and `bytes` are the content's as measured on the controller (never the
/// cache's word alone): a file there whose sha256 the BMC computes as `sha256` is used
/// as it is; otherwise, when `dir` has room for `bytes`, `stream` (the decompressed
/// image, itself bounded by `bytes`) is sent into a `.part` file named by `tag` (one
/// per board, as two nodes of one BMC may be flashed from two threads), whose digest on
/// the BMC must be what was sent before it takes the final name.
pub fn put_image(
    t: &mut dyn Transport,
    dir: &str,
    tag: &str,
    (sha256, bytes): (&str, u64),
    stream: &mut dyn Read,
) -> Result<Placed, FlashError> {
    let host = t.target();
    let host_err = |what: &str, reason: String| FlashError::Host {
        host: host.clone(),
        what: what.to_string(),
        reason,
    };
    let path = image_path(dir, sha256);
    let out = t.run(
        &format!("sha256sum -- {} 2>/dev/null", sh(&path)),
        Some(FLASH_TIMEOUT),
    )?;
    if out.exit.success() && digest_of(&out).as_deref() == Some(sha256) {
        let size = t.run(&format!("wc -c < {}", sh(&path)), None)?;
        return Ok(Placed {
            path,
            uploaded: false,
            bytes: size.stdout_str().trim().parse().unwrap_or(0),
        });
    }
    if let Some(free) = room(t, dir)
        && bytes > free
    {
        return Err(host_err(
            &format!("room for the image in {dir}"),
            format!(
                "it decompresses to {bytes} bytes, {free} bytes are free there; nothing was sent"
            ),
        ));
    }
    // The digest names the file; until the stream has been read, a temporary name.
    let part = format!("{}/.benchpipe-{tag}.part", dir.trim_end_matches('/'));
    let mut hashing = Hashing {
        inner: stream,
        hash: Sha256::new(),
        bytes: 0,
    };
    let mut err = Vec::new();
    let exit = t.exec_input(
        &format!("mkdir -p -- {d} && cat > {p}", d = sh(dir), p = sh(&part)),
        Some(FLASH_TIMEOUT),
        &mut hashing,
        &mut std::io::sink(),
        &mut err,
    )?;
    if !exit.success() {
        let _ = t.run(&format!("rm -f -- {}", sh(&part)), None);
        return Err(host_err(
            &format!("uploading the image to {dir}"),
            format!("{exit}: {}", String::from_utf8_lossy(&err).trim()),
        ));
    }
    let sent = crate::canonical::hex(&hashing.hash.finalize());
    let bytes = hashing.bytes;
    let out = t.run(&format!("sha256sum -- {}", sh(&part)), Some(FLASH_TIMEOUT))?;
    let found = digest_of(&out);
    if found.as_deref() != Some(sent.as_str()) || sent != sha256 {
        let _ = t.run(&format!("rm -f -- {}", sh(&part)), None);
        return Err(FlashError::Verify {
            host,
            device: part,
            bytes,
            expected: sha256.to_string(),
            found: found.unwrap_or_else(|| out.stderr_str().trim().to_string()),
        });
    }
    let out = t.run(&format!("mv -f -- {} {}", sh(&part), sh(&path)), None)?;
    if !out.exit.success() {
        return Err(host_err("naming the uploaded image", out.stderr_str()));
    }
    Ok(Placed {
        path,
        uploaded: true,
        bytes,
    })
}

/// The digest `sha256sum` printed first, when it looks like one.
fn digest_of(out: &Output) -> Option<String> {
    let text = out.stdout_str();
    let d = text.split_whitespace().next()?;
    (d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit())).then(|| d.to_ascii_lowercase())
}

/// The image as it goes to the BMC: hashed and counted.
struct Hashing<'a> {
    inner: &'a mut dyn Read,
    hash: Sha256,
    bytes: u64,
}

impl Read for Hashing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(code: i32) -> Exit {
        Exit {
            code: Some(code),
            signal: None,
        }
    }

    #[test]
    fn tpi_success_is_exit_0_without_an_error_line() {
        let out = "Flashing from image file /mnt/sdcard/a.img...\nVerifying checksum...\nDone\n";
        assert_eq!(judge(&exit(0), out, ""), Ok(()));
    }

    #[test]
    fn tpi_failures_name_the_line_that_says_why() {
        assert_eq!(
            judge(
                &exit(1),
                "Error: Failed to begin flashing: 500 Internal Server Error\n",
                ""
            ),
            Err("exit status 1: Error: Failed to begin flashing: 500 Internal Server Error".into())
        );
        let panic = "thread 'tokio-runtime-worker' panicked at src/legacy_handler.rs:300:21:\n\
                     Error occured during flashing: \"node 2 did not answer\"\n";
        assert_eq!(
            judge(&exit(101), "Flashing from image file /x.img...\n", panic),
            Err("exit status 101: Error occured during flashing: \"node 2 did not answer\"".into())
        );
        // A server error printed by a version that still exits 0.
        assert_eq!(
            judge(&exit(0), "could not execute flashing: busy\n", ""),
            Err("it exited 0 but said: could not execute flashing: busy".into())
        );
        assert_eq!(
            judge(&exit(2), "", ""),
            Err("exit status 2, without a word".into())
        );
        assert_eq!(
            judge(&exit(2), "", "usage: tpi flash --node <NODE>\n"),
            Err("exit status 2: usage: tpi flash --node <NODE>".into())
        );
    }

    #[test]
    fn the_flash_command_quotes_the_path() {
        assert_eq!(
            flash_command(2, "/mnt/sd card/x.img"),
            "tpi flash --local --node 2 --image-path '/mnt/sd card/x.img'"
        );
        assert_eq!(image_path("/mnt/sdcard/", "ab"), "/mnt/sdcard/ab.img");
    }
}
