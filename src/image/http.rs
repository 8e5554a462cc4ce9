//! Downloading an image over http(s) into the cache with ureq: a `.part` file resumed
//! with `Range` after a break (in the same fetch, then in the next), bounded in size by
//! the free space and [`MAX_DOWNLOAD`], verified before it becomes the cached image.

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::Duration;

use super::ImageError;
use super::cache::{self, Cache, Stamp};
use super::fetch::{FetchProgress, PROGRESS_EVERY, Phase, sha256_file};

/// Tries per fetch: a download that breaks off after some bytes resumes this many times.
const ATTEMPTS: u32 = 4;

/// The largest file a download may be: a server that sends more is refused.
pub const MAX_DOWNLOAD: u64 = 64 << 30;

/// Without a byte for this long, a download is broken (and resumed).
const STALL: Duration = Duration::from_secs(60);

/// Downloads `url` to `cache.part(sha256)`, verifies it, and renames it to
/// `cache.blob(sha256)`. The caller holds the image's lock.
pub(super) fn download(
    cache: &Cache,
    name: &str,
    url: &str,
    sha256: &str,
    progress: &dyn Fn(FetchProgress),
) -> Result<(), ImageError> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(15)))
            .timeout_recv_response(Some(STALL))
            .timeout_per_read(Some(STALL))
            .user_agent(concat!("benchpipe/", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let part = cache.part(sha256);
    let io_err = |e| ImageError::io(name, &part, e);
    // A part left by an earlier fetch may be stale or damaged: if what it resumes into
    // fails verification, start over once from nothing.
    let mut from_old_part = part.exists();
    loop {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match once(&agent, cache, &part, name, url, progress) {
                Ok(()) => break,
                Err(f) if f.retry && attempt < ATTEMPTS => {
                    std::thread::sleep(Duration::from_millis(200 * attempt as u64));
                }
                Err(f) => return Err(f.error),
            }
        }
        let actual = sha256_file(&part, progress).map_err(io_err)?;
        if actual == sha256 {
            break;
        }
        fs::remove_file(&part).map_err(io_err)?;
        if !from_old_part {
            return Err(ImageError::Mismatch {
                name: name.into(),
                origin: url.into(),
                expected: sha256.into(),
                actual,
            });
        }
        from_old_part = false;
    }
    let blob = cache.blob(sha256);
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&part, fs::Permissions::from_mode(0o444)).map_err(io_err)?;
    fs::rename(&part, &blob).map_err(io_err)?;
    if let Ok(dir) = fs::File::open(cache.dir()) {
        let _ = dir.sync_all();
    }
    // Verified just now: stamped, so the fetch that follows does not hash it again.
    let blob_err = |e| ImageError::io(name, &blob, e);
    let full = fs::canonicalize(&blob).map_err(blob_err)?;
    let stamp = Stamp::of(&fs::metadata(&full).map_err(blob_err)?);
    cache.add_stamp(sha256, &full, stamp).map_err(blob_err)
}

struct Failure {
    error: ImageError,
    /// The server was reached: trying again (resuming) may work.
    retry: bool,
}

/// One request: the rest of the file after what `.part` holds, appended to it.
fn once(
    agent: &ureq::Agent,
    cache: &Cache,
    part: &Path,
    name: &str,
    url: &str,
    progress: &dyn Fn(FetchProgress),
) -> Result<(), Failure> {
    let fatal = |error| Failure {
        error,
        retry: false,
    };
    let http = |why: String, retry| Failure {
        error: ImageError::Http {
            name: name.into(),
            url: url.into(),
            why,
        },
        retry,
    };
    let io_err = |e| fatal(ImageError::io(name, part, e));
    let have = fs::metadata(part).map(|m| m.len()).unwrap_or(0);
    let mut req = agent.get(url);
    if have > 0 {
        req = req.header("Range", format!("bytes={have}-"));
    }
    let resp = req.call().map_err(|e| fatal(network(name, url, e)))?;
    let status = resp.status();
    let length = resp
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let (start, total) = match status.as_u16() {
        206 if have > 0 => {
            let range = resp
                .headers()
                .get("content-range")
                .and_then(|v| v.to_str().ok())
                .and_then(content_range);
            match range {
                Some((first, total)) if first == have => (have, total.or(length.map(|l| have + l))),
                _ => {
                    // Not the range asked for: drop what we have and ask for it all.
                    fs::remove_file(part).map_err(io_err)?;
                    return Err(http(
                        "the server answered a resume with another range; starting over".into(),
                        true,
                    ));
                }
            }
        }
        200 => (0, length),
        // Nothing after what we have: the part is whole (or wrong, which the hash says).
        416 if have > 0 => return Ok(()),
        s => {
            let reason = status.canonical_reason().unwrap_or("");
            return Err(http(
                format!("the server answered {s} {reason}")
                    .trim_end()
                    .to_string(),
                s >= 500,
            ));
        }
    };
    if let Some(total) = total {
        if total > MAX_DOWNLOAD {
            return Err(fatal(ImageError::Http {
                name: name.into(),
                url: url.into(),
                why: format!(
                    "the file is {total} bytes, more than the {MAX_DOWNLOAD} an image may be"
                ),
            }));
        }
        if let Some(free) = cache::free_bytes(cache.dir())
            && total - start > free
        {
            return Err(fatal(ImageError::NoSpace {
                name: name.into(),
                dir: cache.dir().into(),
                need: total - start,
                free,
            }));
        }
    }
    let mut file = OpenOptions::new()
        .create(true)
        .write(true)
        .append(start > 0)
        .truncate(start == 0)
        .open(part)
        .map_err(io_err)?;
    let mut body = resp.into_body().into_reader();
    let mut buf = vec![0u8; 1 << 20];
    let (mut done, mut shown) = (start, start);
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = file.sync_all();
                let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
                return Err(Failure {
                    error: ImageError::Network {
                        name: name.into(),
                        url: url.into(),
                        cause: format!(
                            "the download broke off after {done}{of} bytes ({e}); the next fetch resumes it"
                        ),
                    },
                    retry: true,
                });
            }
        };
        done += n as u64;
        if done > MAX_DOWNLOAD {
            drop(file);
            let _ = fs::remove_file(part);
            return Err(fatal(ImageError::Http {
                name: name.into(),
                url: url.into(),
                why: format!("the server sent more than the {MAX_DOWNLOAD} bytes an image may be"),
            }));
        }
        file.write_all(&buf[..n]).map_err(io_err)?;
        if done - shown >= PROGRESS_EVERY {
            shown = done;
            progress(FetchProgress {
                phase: Phase::Download,
                done,
                total,
            });
        }
    }
    file.sync_all().map_err(io_err)?;
    progress(FetchProgress {
        phase: Phase::Download,
        done,
        total,
    });
    match total {
        Some(t) if done < t => Err(Failure {
            error: ImageError::Network {
                name: name.into(),
                url: url.into(),
                cause: format!(
                    "the connection closed after {done} of {t} bytes; the next fetch resumes it"
                ),
            },
            retry: true,
        }),
        _ => Ok(()),
    }
}

/// `bytes FIRST-LAST/TOTAL` (TOTAL may be `*`) -> (FIRST, TOTAL).
fn content_range(v: &str) -> Option<(u64, Option<u64>)> {
    let rest = v.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (first, _) = range.split_once('-')?;
    Some((first.trim().parse().ok()?, total.trim().parse().ok()))
}

/// A connection that could not be made, said the way a user checks it.
fn network(name: &str, url: &str, e: ureq::Error) -> ImageError {
    let cause = match &e {
        ureq::Error::Io(io) => match io.kind() {
            io::ErrorKind::ConnectionRefused => {
                "connection refused (nothing listens there, or there is no network)".to_string()
            }
            io::ErrorKind::TimedOut => "timed out connecting (no network?)".into(),
            io::ErrorKind::NetworkUnreachable | io::ErrorKind::HostUnreachable => {
                "no route to the host (no network here?)".into()
            }
            _ => io.to_string(),
        },
        ureq::Error::HostNotFound => {
            "host not found (no DNS answer: is there network here?)".into()
        }
        ureq::Error::Timeout(t) => format!("timed out ({t})"),
        ureq::Error::ConnectionFailed => "the connection failed (no network?)".into(),
        other => other.to_string(),
    };
    ImageError::Network {
        name: name.into(),
        url: url.into(),
        cause: format!("{cause}; a `path` or `file://` image works offline"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_are_parsed_with_or_without_a_total() {
        assert_eq!(content_range("bytes 100-199/200"), Some((100, Some(200))));
        assert_eq!(content_range("bytes 5-9/*"), Some((5, None)));
        assert_eq!(content_range("items 5-9/10"), None);
        assert_eq!(content_range("bytes x-9/10"), None);
    }
}
