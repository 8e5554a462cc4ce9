//! Downloading an image over http(s) into the cache with ureq: a `.part` file resumed
//! with `Range` after a break (in the same fetch, then in the next), bounded in size by
//! the free space and [`MAX_DOWNLOAD`], in time by a deadline scaled by its size and a
//! minimum rate over a sliding window ([`Pace`]), verified before it becomes the cached
//! image. A resume answer that contradicts the `.part` (another range, a total below
//! what it holds) drops the `.part`, so the next try starts over rather than fail alike.

use std::collections::VecDeque;
use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use super::ImageError;
use super::cache::{self, Cache, Stamp};
use super::fetch::{FetchProgress, PROGRESS_EVERY, Phase, sha256_file};
use crate::model::ImageUrl;

/// Tries per fetch: a download that breaks off after some bytes resumes this many times.
const ATTEMPTS: u32 = 4;

/// The largest file a download may be: a server that sends more is refused.
pub const MAX_DOWNLOAD: u64 = 64 << 30;

/// Without response headers for this long, a request is broken (and tried again).
const STALL: Duration = Duration::from_secs(60);

/// The slowest a download may be unless its image's `min_rate` says: 50 kB/s, about a
/// slow DSL line; a 2 GB image then may take 11 hours.
pub const DEFAULT_MIN_RATE: u64 = 50_000;

/// Every fetch may take this long, whatever its size and rate.
const DEADLINE_FLOOR: Duration = Duration::from_secs(10 * 60);

/// The sliding window spans the time `min_rate` takes to move this much, within
/// [`WINDOW_MIN`, `WINDOW_MAX`]: 20 s at the default rate.
const WINDOW_BYTES: u64 = 1 << 20;
const WINDOW_MIN: Duration = Duration::from_secs(2);
const WINDOW_MAX: Duration = Duration::from_secs(60);

/// How fast a download must be: at least `min_rate` bytes a second over every window
/// of [`Pace::window`] (a trickle fails within one window, a silent server within one
/// read), and done within [`Pace::deadline`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Pace {
    pub(super) min_rate: u64,
}

impl Pace {
    pub(super) fn new(min_rate: u64) -> Pace {
        Pace {
            min_rate: min_rate.max(1),
        }
    }

    pub(super) fn window(self) -> Duration {
        Duration::from_millis(WINDOW_BYTES.saturating_mul(1000) / self.min_rate)
            .clamp(WINDOW_MIN, WINDOW_MAX)
    }

    /// How long a whole fetch of `bytes` may take, all its tries together:
    /// [`DEADLINE_FLOOR`] plus the time `min_rate` takes to move them.
    pub(super) fn deadline(self, bytes: u64) -> Duration {
        DEADLINE_FLOOR.saturating_add(Duration::from_secs(bytes / self.min_rate))
    }
}

/// The bytes one request has received, sampled over time, for [`Pace`]'s window: holds
/// samples an eighth of a window apart back to one window ago, so at most about ten.
struct Window {
    pace: Pace,
    span: Duration,
    samples: VecDeque<(Duration, u64)>,
}

impl Window {
    fn new(pace: Pace) -> Window {
        Window {
            pace,
            span: pace.window(),
            samples: VecDeque::from([(Duration::ZERO, 0)]),
        }
    }

    /// `bytes` received in all by `at` (since the request began). `Err` says how slow
    /// the last window was, once a whole window has passed with less than
    /// `min_rate` a second in it.
    fn note(&mut self, at: Duration, bytes: u64) -> Result<(), String> {
        // Samples an eighth of a window apart at least; the newest one moves with each
        // note, so a sample stands for the bytes at its own time.
        let n = self.samples.len();
        if n >= 2 && at.saturating_sub(self.samples[n - 2].0) < self.span / 8 {
            self.samples[n - 1] = (at, bytes);
        } else {
            self.samples.push_back((at, bytes));
        }
        let Some(from) = at.checked_sub(self.span) else {
            return Ok(());
        };
        // Keep the newest sample at or before the window's start.
        while self.samples.get(1).is_some_and(|(t, _)| *t <= from) {
            self.samples.pop_front();
        }
        let (_, then) = self.samples[0];
        let got = bytes.saturating_sub(then);
        let need = (u128::from(self.pace.min_rate) * self.span.as_millis() / 1000) as u64;
        if got < need {
            return Err(format!(
                "it received {got} bytes in the last {:.0} s, slower than the least {} bytes/s \
                 (the image's `min_rate`)",
                self.span.as_secs_f64(),
                self.pace.min_rate
            ));
        }
        Ok(())
    }
}

/// Downloads `url` to `cache.part(sha256)`, verifies it, and renames it to
/// `cache.blob(sha256)`. The caller holds the image's lock.
pub(super) fn download(
    cache: &Cache,
    name: &str,
    url: &ImageUrl,
    sha256: &str,
    pace: Pace,
    progress: &dyn Fn(FetchProgress),
) -> Result<(), ImageError> {
    let agent = ureq::Agent::new_with_config(
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(15)))
            .timeout_recv_response(Some(STALL))
            // A read waiting a whole window had nothing in it: too slow.
            .timeout_per_read(Some(pace.window()))
            .user_agent(concat!("benchpipe/", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let part = cache.part(sha256);
    let io_err = |e| ImageError::io(name, &part, e);
    let cache_err = |e| ImageError::cache(name, e);
    // A part left by an earlier fetch may be stale or damaged: if what it resumes into
    // fails verification, start over once from nothing.
    let mut from_old_part = cache.part_len(sha256).map_err(cache_err)? > 0;
    let mut clock = Clock {
        started: Instant::now(),
        deadline: None,
    };
    loop {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let r = Request {
                agent: &agent,
                cache,
                sha256,
                part: &part,
                name,
                url,
                pace: &pace,
            };
            match r.once(&mut clock, progress) {
                Ok(()) => break,
                Err(f) if f.retry && attempt < ATTEMPTS => {
                    std::thread::sleep(Duration::from_millis(200 * u64::from(attempt)));
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
                origin: super::Origin::Url(url.clone()),
                expected: sha256.into(),
                actual,
            });
        }
        from_old_part = false;
    }
    let blob = cache.blob(sha256);
    {
        use std::os::unix::fs::PermissionsExt;
        let f = crate::owned::open_own(&part, true, 0o600).map_err(cache_err)?;
        f.set_permissions(fs::Permissions::from_mode(0o444))
            .map_err(io_err)?;
    }
    crate::owned::rename_into_place(&part, &blob).map_err(io_err)?;
    // Verified just now: stamped, so the fetch that follows does not hash it again.
    let blob_err = |e| ImageError::io(name, &blob, e);
    let full = fs::canonicalize(&blob).map_err(blob_err)?;
    let stamp = Stamp::of(&fs::metadata(&full).map_err(blob_err)?);
    cache.add_stamp(sha256, &full, stamp).map_err(cache_err)
}

/// A fetch's overall deadline, set from the file's size once a response says it.
struct Clock {
    started: Instant,
    deadline: Option<Duration>,
}

struct Failure {
    error: ImageError,
    /// The server was reached: trying again (resuming) may work.
    retry: bool,
}

/// One request's context.
struct Request<'a> {
    agent: &'a ureq::Agent,
    cache: &'a Cache,
    sha256: &'a str,
    part: &'a Path,
    name: &'a str,
    url: &'a ImageUrl,
    pace: &'a Pace,
}

impl Request<'_> {
    fn http(&self, why: &str, retry: bool) -> Failure {
        Failure {
            error: ImageError::http(self.name, self.url, why),
            retry,
        }
    }

    fn fatal(error: ImageError) -> Failure {
        Failure {
            error,
            retry: false,
        }
    }

    /// The server's answer contradicts the `.part`: it is dropped, and the next try
    /// asks for the whole file.
    fn contradicted(&self, why: &str) -> Failure {
        if let Err(e) = fs::remove_file(self.part)
            && e.kind() != io::ErrorKind::NotFound
        {
            return Self::fatal(ImageError::io(self.name, self.part, e));
        }
        self.http(&format!("{why}; the partial download was dropped"), true)
    }

    /// One request: the rest of the file after what `.part` holds, appended to it.
    fn once(&self, clock: &mut Clock, progress: &dyn Fn(FetchProgress)) -> Result<(), Failure> {
        let (name, part) = (self.name, self.part);
        let io_err = |e| Self::fatal(ImageError::io(name, part, e));
        let have = self
            .cache
            .part_len(self.sha256)
            .map_err(|e| Self::fatal(ImageError::cache(name, e)))?;
        let mut req = self.agent.get(self.url.for_download());
        if have > 0 {
            req = req.header("Range", format!("bytes={have}-"));
        }
        let resp = req
            .call()
            .map_err(|e| Self::fatal(network(name, self.url, &e)))?;
        let status = resp.status();
        let header = |h: &str| {
            resp.headers()
                .get(h)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let length = header("content-length").and_then(|v| v.trim().parse::<u64>().ok());
        let (start, total) = match status.as_u16() {
            206 if have > 0 => {
                let said = header("content-range").unwrap_or_default();
                let Some((first, last, total)) = content_range(&said) else {
                    return Err(self.contradicted(&format!(
                        "the server answered a resume with no usable Content-Range ({:?})",
                        said.escape_debug().to_string()
                    )));
                };
                let end = last.checked_add(1);
                let consistent = first == have
                    && last >= first
                    && total.is_none_or(|t| Some(t) >= end)
                    && length.is_none_or(|l| end == first.checked_add(l));
                if !consistent {
                    return Err(self.contradicted(&format!(
                        "the server answered a resume from byte {have} with `{}`",
                        said.escape_debug()
                    )));
                }
                (have, total.or(end))
            }
            200 => (0, length),
            206 => {
                let said = header("content-range").unwrap_or_default();
                return Err(self.http(
                    &format!(
                        "the server answered 206 Partial Content (`{}`) to a request for the whole file",
                        said.escape_debug()
                    ),
                    false,
                ));
            }
            // Nothing after what we have: the part is whole (or wrong, which the hash
            // says), unless the server names another size.
            416 if have > 0 => {
                return match header("content-range")
                    .as_deref()
                    .and_then(unsatisfied_total)
                {
                    Some(t) if t != have => Err(self.contradicted(&format!(
                        "the server says the file is {t} bytes, but {have} were downloaded"
                    ))),
                    _ => Ok(()),
                };
            }
            s => {
                let reason = status.canonical_reason().unwrap_or("");
                return Err(self.http(
                    format!("the server answered {s} {reason}").trim_end(),
                    s >= 500,
                ));
            }
        };
        if let Some(total) = total {
            if total > MAX_DOWNLOAD {
                return Err(Self::fatal(ImageError::http(
                    name,
                    self.url,
                    &format!(
                        "the file is {total} bytes, more than the {MAX_DOWNLOAD} an image may be"
                    ),
                )));
            }
            let need = total.saturating_sub(start);
            if let Some(free) = cache::free_bytes(self.cache.dir())
                && need > free
            {
                return Err(Self::fatal(ImageError::NoSpace {
                    name: name.into(),
                    dir: self.cache.dir().into(),
                    need,
                    free,
                }));
            }
            if clock.deadline.is_none() {
                clock.deadline = Some(self.pace.deadline(total));
            }
        }
        let deadline = clock
            .deadline
            .unwrap_or_else(|| self.pace.deadline(MAX_DOWNLOAD));
        let file = crate::owned::open_own(part, start > 0, 0o600)
            .map_err(|e| Self::fatal(ImageError::cache(name, e)))?;
        if start == 0 {
            file.set_len(0).map_err(io_err)?;
        }
        let mut file = file;
        let mut body = resp.into_body().into_reader();
        let mut buf = vec![0u8; 1 << 20];
        let (mut done, mut shown) = (start, start);
        let began = Instant::now();
        let mut window = Window::new(*self.pace);
        let of = |t: Option<u64>| t.map(|t| format!(" of {t}")).unwrap_or_default();
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = file.sync_all();
                    return Err(Failure {
                        error: ImageError::network(
                            name,
                            self.url,
                            &format!(
                                "the download broke off after {done}{} bytes ({e}); the next fetch resumes it",
                                of(total)
                            ),
                        ),
                        retry: true,
                    });
                }
            };
            done += n as u64;
            if done > MAX_DOWNLOAD || total.is_some_and(|t| done > t) {
                drop(file);
                let _ = fs::remove_file(part);
                return Err(Self::fatal(ImageError::http(
                    name,
                    self.url,
                    &format!(
                        "the server sent more than the {} bytes {}",
                        total.unwrap_or(MAX_DOWNLOAD),
                        if total.is_some() {
                            "it announced"
                        } else {
                            "an image may be"
                        }
                    ),
                )));
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
            if let Err(slow) = window.note(began.elapsed(), done - start) {
                let _ = file.sync_all();
                return Err(Failure {
                    error: ImageError::network(
                        name,
                        self.url,
                        &format!(
                            "too slow after {done}{} bytes: {slow}; the next try resumes it",
                            of(total)
                        ),
                    ),
                    retry: true,
                });
            }
            if clock.started.elapsed() > deadline {
                let _ = file.sync_all();
                return Err(Self::fatal(ImageError::network(
                    name,
                    self.url,
                    &format!(
                        "not done after {:.0} s ({done}{} bytes): a download of this size may take {:.0} s at the image's `min_rate` of {} bytes/s; the next fetch resumes it",
                        clock.started.elapsed().as_secs_f64(),
                        of(total),
                        deadline.as_secs_f64(),
                        self.pace.min_rate
                    ),
                )));
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
                error: ImageError::network(
                    name,
                    self.url,
                    &format!(
                        "the connection closed after {done} of {t} bytes; the next fetch resumes it"
                    ),
                ),
                retry: true,
            }),
            _ => Ok(()),
        }
    }
}

/// `bytes FIRST-LAST/TOTAL` (TOTAL may be `*`) -> (FIRST, LAST, TOTAL).
fn content_range(v: &str) -> Option<(u64, u64, Option<u64>)> {
    let rest = v.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (first, last) = range.split_once('-')?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    Some((first.trim().parse().ok()?, last.trim().parse().ok()?, total))
}

/// A 416's `bytes */TOTAL` -> TOTAL.
fn unsatisfied_total(v: &str) -> Option<u64> {
    v.trim()
        .strip_prefix("bytes")?
        .trim_start()
        .strip_prefix("*/")?
        .trim()
        .parse()
        .ok()
}

/// A connection that could not be made, said the way a user checks it.
fn network(name: &str, url: &ImageUrl, e: &ureq::Error) -> ImageError {
    let cause = match e {
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
    ImageError::network(
        name,
        url,
        &format!("{cause}; a `path` or `file://` image works offline"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_are_parsed_with_or_without_a_total() {
        assert_eq!(
            content_range("bytes 100-199/200"),
            Some((100, 199, Some(200)))
        );
        assert_eq!(content_range("bytes 5-9/*"), Some((5, 9, None)));
        assert_eq!(content_range("items 5-9/10"), None);
        assert_eq!(content_range("bytes x-9/10"), None);
        assert_eq!(content_range("bytes 5-9/x"), None);
        assert_eq!(unsatisfied_total("bytes */1000"), Some(1000));
        assert_eq!(unsatisfied_total("bytes 0-1/1000"), None);
    }

    #[test]
    fn a_trickle_fails_within_one_window_and_a_steady_download_never() {
        let pace = Pace::new(100_000);
        let span = pace.window();
        assert_eq!(span, Duration::from_millis(10_485));
        let s = |ms: u64| Duration::from_millis(ms);
        // Steady at the least rate, in odd steps: never too slow.
        let mut w = Window::new(pace);
        for i in 1..=600u64 {
            assert_eq!(w.note(s(i * 97), i * 9_700), Ok(()), "at {i}");
        }
        assert!(w.samples.len() <= 12, "{}", w.samples.len());
        // One byte every 2 s: fine until a whole window has passed, then refused.
        let mut w = Window::new(pace);
        let mut failed = None;
        for i in 1..=20u64 {
            if let Err(e) = w.note(s(i * 2000), i) {
                failed = Some((i * 2000, e));
                break;
            }
        }
        let (at, why) = failed.expect("a trickle was never refused");
        assert!(
            at >= span.as_millis() as u64 && at < span.as_millis() as u64 + 2000,
            "{at}"
        );
        assert!(
            why.contains("bytes in the last 10 s, slower than the least 100000 bytes/s"),
            "{why}"
        );
        // A fast start does not excuse a stall later.
        let mut w = Window::new(pace);
        assert_eq!(w.note(s(1000), 50 << 20), Ok(()));
        assert!(w.note(s(1000) + span + s(1), 50 << 20).is_err());
    }

    #[test]
    fn the_window_and_deadline_scale_with_the_least_rate() {
        assert_eq!(
            Pace::new(DEFAULT_MIN_RATE).window(),
            Duration::from_millis(20_971)
        );
        assert_eq!(Pace::new(1_000).window(), WINDOW_MAX);
        assert_eq!(Pace::new(10_000_000_000).window(), WINDOW_MIN);
        let p = Pace::new(1_000_000);
        assert_eq!(p.deadline(0), DEADLINE_FLOOR);
        assert_eq!(
            p.deadline(3_600_000_000),
            DEADLINE_FLOOR + Duration::from_secs(3600)
        );
        assert_eq!(Pace::new(1).deadline(u64::MAX), Duration::MAX);
    }
}
