//! Downloads over real HTTP from a small server on 127.0.0.1 that this test starts:
//! resume after a break, a server that ignores `Range`, no network, wrong digests.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::*;
use crate::image::{ImageError, facts, fetch};

/// How the server behaves: it serves `body` at `/disk.img.xz`.
#[derive(Clone)]
struct Behaviour {
    body: Arc<Vec<u8>>,
    /// The first response stops after this many body bytes (the connection drops).
    cut_first_after: Option<usize>,
    /// Whether `Range: bytes=N-` is answered with 206; if not, always 200.
    ranges: bool,
    /// After the cut, stop listening: the next connection is refused.
    die_after_cut: bool,
    /// A `Range` request is answered 206 with this `Content-Range` and three bytes.
    bad_resume: Option<&'static str>,
    /// Each body byte is followed by this pause; the connection closes after 40 bytes.
    trickle: Option<Duration>,
}

impl Behaviour {
    fn plain(body: &[u8]) -> Behaviour {
        Behaviour {
            body: Arc::new(body.to_vec()),
            cut_first_after: None,
            ranges: true,
            die_after_cut: false,
            bad_resume: None,
            trickle: None,
        }
    }
}

struct Server {
    port: u16,
    /// The `Range` start of each request, in order (`None`: no Range header).
    seen: Arc<Mutex<Vec<Option<u64>>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
    fn seen(&self) -> Vec<Option<u64>> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(b: Behaviour) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let (seen2, stop2) = (seen.clone(), stop.clone());
    let thread = std::thread::spawn(move || {
        // Bounded: the server ends by itself even if a test forgets it.
        let deadline = Instant::now() + Duration::from_secs(300);
        let mut count = 0;
        while !stop2.load(Ordering::SeqCst) && Instant::now() < deadline {
            let Ok((conn, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            conn.set_nonblocking(false).unwrap();
            let cut = if count == 0 { b.cut_first_after } else { None };
            count += 1;
            let died = answer(conn, &b, cut, &seen2, || {
                if b.die_after_cut {
                    stop2.store(true, Ordering::SeqCst);
                }
            });
            if died && b.die_after_cut {
                // The listener closes before the cut connection does: a retry is refused.
                drop(listener);
                return;
            }
        }
    });
    Server {
        port,
        seen,
        stop,
        thread: Some(thread),
    }
}

/// Answers one request; true when it cut the body short.
fn answer(
    conn: TcpStream,
    b: &Behaviour,
    cut: Option<usize>,
    seen: &Mutex<Vec<Option<u64>>>,
    on_cut: impl FnOnce(),
) -> bool {
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut request = String::new();
    if reader.read_line(&mut request).is_err() {
        return false;
    }
    let mut range = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("range")
        {
            range = v
                .trim()
                .strip_prefix("bytes=")
                .and_then(|r| r.trim_end_matches('-').parse::<u64>().ok());
        }
    }
    seen.lock().unwrap().push(range);
    let mut w = conn;
    let path = request.split_whitespace().nth(1).unwrap_or("");
    let len = b.body.len() as u64;
    if let (Some(said), Some(_)) = (b.bad_resume, range) {
        let _ = w.write_all(
            format!(
                "HTTP/1.1 206 Partial Content\r\nContent-Range: {said}\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"
            )
            .as_bytes(),
        );
        return false;
    }
    let (head, from) = if path == "/disk.img.xz" {
        match range.filter(|_| b.ranges) {
            Some(n) if n >= len => (
                format!(
                    "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{len}\r\nContent-Length: 0\r\n"
                ),
                len,
            ),
            Some(n) => (
                format!(
                    "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {n}-{}/{len}\r\nContent-Length: {}\r\n",
                    len - 1,
                    len - n
                ),
                n,
            ),
            None => (format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n"), 0),
        }
    } else {
        (
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n".to_string(),
            len,
        )
    };
    let _ = w.write_all(format!("{head}Connection: close\r\n\r\n").as_bytes());
    let body = &b.body[from as usize..];
    if let Some(pause) = b.trickle {
        for byte in body.iter().take(40) {
            if w.write_all(&[*byte]).and_then(|()| w.flush()).is_err() {
                break;
            }
            std::thread::sleep(pause);
        }
        return true;
    }
    match cut {
        Some(c) if c < body.len() => {
            let _ = w.write_all(&body[..c]);
            let _ = w.flush();
            on_cut();
            true
        }
        _ => {
            let _ = w.write_all(body);
            false
        }
    }
}

/// A real xz image to serve, and its source for a url.
fn xz_image(s: &Scratch) -> (Vec<u8>, String) {
    let img = ext4_image(&s.0, "debian", "12");
    let xz = compress(&img, "xz");
    (std::fs::read(&xz).unwrap(), sha256_of(&xz))
}

fn source(url: String, sha256: &str) -> ImageSource {
    ImageSource::Url {
        url: crate::model::ImageUrl::new(url),
        sha256: sha256.into(),
        min_rate: None,
    }
}

#[test]
fn an_interrupted_download_resumes_with_a_range_request() {
    let t = "an_interrupted_download_resumes_with_a_range_request";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("resume");
    let (body, sha) = xz_image(&s);
    let cut = body.len() / 3;
    let server = serve(Behaviour {
        body: Arc::new(body.clone()),
        cut_first_after: Some(cut),
        ranges: true,
        die_after_cut: false,
        bad_resume: None,
        trickle: None,
    });
    let cache = s.cache();
    let f = fetch(
        &cache,
        "pi",
        &source(server.url("/disk.img.xz"), &sha),
        &quiet,
    )
    .unwrap();
    assert_eq!(
        server.seen(),
        [None, Some(cut as u64)],
        "the second request did not resume"
    );
    assert_eq!(f.path, cache.blob(&sha));
    assert_eq!(std::fs::read(&f.path).unwrap(), body);
    assert!(!cache.part(&sha).exists());
    assert_eq!(
        facts(&f).unwrap().uncompressed_sha256,
        sha256_of(&s.path("disk.img"))
    );
    // Cached: the next fetch needs no server at all.
    drop(server);
    let again = fetch(&cache, "pi", &source(f.origin.to_string(), &sha), &quiet).unwrap();
    assert_eq!(again.path, f.path);
}

#[test]
fn a_partial_download_left_by_a_failed_fetch_is_resumed_by_the_next() {
    let t = "a_partial_download_left_by_a_failed_fetch_is_resumed_by_the_next";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("resume-next");
    let (body, sha) = xz_image(&s);
    let cut = body.len() / 2;
    let dying = serve(Behaviour {
        body: Arc::new(body.clone()),
        cut_first_after: Some(cut),
        ranges: true,
        die_after_cut: true,
        bad_resume: None,
        trickle: None,
    });
    let cache = s.cache();
    let url = dying.url("/disk.img.xz");
    let e = fetch(&cache, "pi", &source(url, &sha), &quiet).unwrap_err();
    assert!(matches!(e, ImageError::Network { .. }), "{e:?}");
    assert_eq!(
        std::fs::metadata(cache.part(&sha)).unwrap().len(),
        cut as u64
    );
    drop(dying);
    let server = serve(Behaviour {
        body: Arc::new(body.clone()),
        cut_first_after: None,
        ranges: true,
        die_after_cut: false,
        bad_resume: None,
        trickle: None,
    });
    let f = fetch(
        &cache,
        "pi",
        &source(server.url("/disk.img.xz"), &sha),
        &quiet,
    )
    .unwrap();
    assert_eq!(server.seen(), [Some(cut as u64)]);
    assert_eq!(std::fs::read(&f.path).unwrap(), body);
}

#[test]
fn a_server_that_ignores_range_sends_the_whole_file_again() {
    let t = "a_server_that_ignores_range_sends_the_whole_file_again";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("no-range");
    let (body, sha) = xz_image(&s);
    let server = serve(Behaviour {
        body: Arc::new(body.clone()),
        cut_first_after: Some(body.len() / 4),
        ranges: false,
        die_after_cut: false,
        bad_resume: None,
        trickle: None,
    });
    let f = fetch(
        &s.cache(),
        "pi",
        &source(server.url("/disk.img.xz"), &sha),
        &quiet,
    )
    .unwrap();
    assert_eq!(server.seen().len(), 2);
    assert_eq!(std::fs::read(&f.path).unwrap(), body);
}

#[test]
fn no_network_is_a_clear_error() {
    // A port nothing listens on: bound, then closed.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let s = Scratch::new("offline");
    let url = format!("http://127.0.0.1:{port}/raspios.img.xz");
    let e = fetch(
        &s.cache(),
        "raspios",
        &source(url.clone(), &"0".repeat(64)),
        &quiet,
    )
    .unwrap_err();
    assert!(matches!(e, ImageError::Network { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "image `raspios`: cannot download {url}: connection refused (nothing listens there, or there is no network); a `path` or `file://` image works offline"
        )
    );
}

#[test]
fn a_wrong_digest_or_a_missing_file_over_http_is_a_clear_error() {
    let t = "a_wrong_digest_or_a_missing_file_over_http_is_a_clear_error";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("http-bad");
    let (body, sha) = xz_image(&s);
    let server = serve(Behaviour {
        body: Arc::new(body),
        cut_first_after: None,
        ranges: true,
        die_after_cut: false,
        bad_resume: None,
        trickle: None,
    });
    let cache = s.cache();
    let wrong = "cd".repeat(32);
    let url = server.url("/disk.img.xz");
    let e = fetch(&cache, "pi", &source(url.clone(), &wrong), &quiet).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "image `pi`: sha256 mismatch for {url}: the scenario declares {wrong}, the file is {sha}; nothing was flashed"
        )
    );
    assert!(!cache.blob(&wrong).exists() && !cache.part(&wrong).exists());
    let missing = server.url("/nope.img.xz");
    let e = fetch(&cache, "pi", &source(missing.clone(), &sha), &quiet).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("image `pi`: {missing}: the server answered 404 Not Found")
    );
}

#[test]
fn boards_fetching_one_image_at_once_download_and_hash_it_once() {
    let t = "boards_fetching_one_image_at_once_download_and_hash_it_once";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("together");
    let (body, sha) = xz_image(&s);
    let server = serve(Behaviour {
        body: Arc::new(body.clone()),
        cut_first_after: None,
        ranges: true,
        die_after_cut: false,
        bad_resume: None,
        trickle: None,
    });
    let cache = s.cache();
    let url = server.url("/disk.img.xz");
    let hashes = std::sync::atomic::AtomicUsize::new(0);
    let count = |p: crate::image::FetchProgress| {
        if p.phase == crate::image::Phase::Verify && p.done == 0 {
            hashes.fetch_add(1, Ordering::SeqCst);
        }
    };
    let paths: Vec<PathBuf> = std::thread::scope(|scope| {
        let fetches: Vec<_> = (0..3)
            .map(|_| {
                scope.spawn(|| {
                    fetch(&cache, "pi", &source(url.clone(), &sha), &count)
                        .unwrap()
                        .path
                })
            })
            .collect();
        fetches.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        server.seen(),
        [None],
        "the image was downloaded more than once"
    );
    assert_eq!(
        hashes.load(Ordering::SeqCst),
        1,
        "the download was hashed more than once"
    );
    assert!(paths.iter().all(|p| *p == cache.blob(&sha)));
    assert_eq!(std::fs::read(&paths[0]).unwrap(), body);
}

#[test]
fn a_link_planted_at_the_part_is_not_appended_to() {
    let t = "a_link_planted_at_the_part_is_not_appended_to";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("part-link");
    let (body, sha) = xz_image(&s);
    let server = serve(Behaviour::plain(&body));
    let cache = s.cache();
    std::fs::create_dir(cache.dir()).unwrap();
    let victim = s.path("victim");
    std::fs::write(&victim, "victim\n").unwrap();
    std::os::unix::fs::symlink(&victim, cache.part(&sha)).unwrap();
    let f = fetch(
        &cache,
        "pi",
        &source(server.url("/disk.img.xz"), &sha),
        &quiet,
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "victim\n");
    assert_eq!(
        server.seen(),
        [None],
        "the link was taken for a partial download"
    );
    assert_eq!(std::fs::read(&f.path).unwrap(), body);
}

#[test]
fn a_resume_answer_that_contradicts_the_part_drops_it_and_starts_over() {
    let t = "a_resume_answer_that_contradicts_the_part_drops_it_and_starts_over";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("bad-range");
    let (body, sha) = xz_image(&s);
    let server = serve(Behaviour {
        // A total below the start: `total - start` once wrapped to 2^64 - 4000.
        bad_resume: Some("bytes 5000-5999/1000"),
        ..Behaviour::plain(&body)
    });
    let cache = s.cache();
    std::fs::create_dir(cache.dir()).unwrap();
    std::fs::write(cache.part(&sha), vec![b'p'; 5000]).unwrap();
    let f = fetch(
        &cache,
        "pi",
        &source(server.url("/disk.img.xz"), &sha),
        &quiet,
    )
    .unwrap();
    assert_eq!(server.seen(), [Some(5000), None]);
    assert_eq!(std::fs::read(&f.path).unwrap(), body);
    // Every answer contradicting: the part is dropped each time, and the error says so.
    std::fs::remove_file(&f.path).unwrap();
    std::fs::write(cache.part(&sha), vec![b'p'; 5000]).unwrap();
    let always = serve(Behaviour {
        bad_resume: Some("bytes 5000-5999/1000"),
        ranges: true,
        ..Behaviour::plain(b"")
    });
    let url = always.url("/other.img.xz");
    let e = fetch(&cache, "pi", &source(url, &sha), &quiet).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("answered a resume from byte 5000 with `bytes 5000-5999/1000`; the partial download was dropped")
            || msg.contains("404"),
        "{msg}"
    );
    assert!(!msg.contains("18446744073"), "{msg}");
    assert!(!cache.part(&sha).exists());
}

#[test]
fn a_trickling_server_is_given_up_on_by_the_images_min_rate() {
    let t = "a_trickling_server_is_given_up_on_by_the_images_min_rate";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("trickle");
    let (body, sha) = xz_image(&s);
    let server = serve(Behaviour {
        trickle: Some(Duration::from_millis(100)),
        ..Behaviour::plain(&body)
    });
    let source = ImageSource::Url {
        url: crate::model::ImageUrl::new(server.url("/disk.img.xz")),
        sha256: sha.clone(),
        // A window of 2 s (the least): ten bytes a second is far below.
        min_rate: Some(10_000_000),
    };
    let e = fetch(&s.cache(), "pi", &source, &quiet).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, ImageError::Network { .. }), "{e:?}");
    assert!(
        msg.contains("too slow after") && msg.contains("slower than the least 10000000 bytes/s"),
        "{msg}"
    );
}

#[test]
fn credentials_and_query_of_an_image_url_appear_in_no_error() {
    let t = "credentials_and_query_of_an_image_url_appear_in_no_error";
    if !have(t, &["mkfs.ext4", "xz"]) {
        return;
    }
    let s = Scratch::new("secret-url");
    let (body, sha) = xz_image(&s);
    let server = serve(Behaviour::plain(&body));
    let with_secrets = |path: &str| {
        server
            .url(path)
            .replace("http://", "http://alice:s3cretpw@")
            + "?sig=t0kenvalue"
    };
    let cache = s.cache();
    let wrong = "cd".repeat(32);
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (url, sha) in [
        (with_secrets("/disk.img.xz"), wrong.as_str()),
        (with_secrets("/nope.img.xz"), sha.as_str()),
        (
            format!("http://alice:s3cretpw@127.0.0.1:{closed}/a.img.xz?sig=t0kenvalue"),
            sha.as_str(),
        ),
        (
            "ftp://alice:s3cretpw@h/a.img?sig=t0kenvalue".to_string(),
            sha.as_str(),
        ),
    ] {
        let e = fetch(&cache, "pi", &source(url, sha), &quiet).unwrap_err();
        let (shown, debug) = (e.to_string(), format!("{e:?}"));
        for text in [&shown, &debug] {
            assert!(
                !text.contains("s3cretpw")
                    && !text.contains("t0kenvalue")
                    && !text.contains("alice"),
                "{text}"
            );
        }
        assert!(
            shown.contains("[redacted]@127.0.0.1") || shown.contains("[redacted]@h/"),
            "{shown}"
        );
    }
}
