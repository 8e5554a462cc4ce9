//! A scripted HTTP/1.1 server for download cases: each request gets the next reply of
//! the case (the last one repeats), with the status, headers and body the case gives,
//! sent whole, slowly, or cut short. One thread per connection, so a client that gives up
//! on a slow reply and retries is answered at once.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde::Deserialize;

/// What a case's `[server]` table says.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub reply: Vec<Reply>,
}

#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default = "ok")]
    pub status: u16,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: String,
    #[serde(default = "one")]
    pub body_repeat: usize,
    /// Milliseconds between body bytes: a server that trickles.
    pub trickle_ms: Option<u64>,
    /// Close the connection after this many body bytes, whatever Content-Length said.
    pub close_after: Option<usize>,
}

fn ok() -> u16 {
    200
}

fn one() -> usize {
    1
}

/// A running server; stopped (every connection closed) when dropped.
pub struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    pub fn start(script: &Script) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let script = Arc::new(script.clone());
        let served = Arc::new(AtomicUsize::new(0));
        let accept = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (script, stop, served) = (script.clone(), stop.clone(), served.clone());
                    std::thread::spawn(move || serve(conn, &script, &stop, &served));
                }
            })
        };
        Server {
            port,
            stop,
            accept: Some(accept),
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// Answers each request on one connection until the client closes it or the reply
/// closes it.
fn serve(mut conn: TcpStream, script: &Script, stop: &AtomicBool, served: &AtomicUsize) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    loop {
        if !read_request(&mut conn) || stop.load(Ordering::SeqCst) {
            return;
        }
        let n = served.fetch_add(1, Ordering::SeqCst);
        let Some(reply) = script
            .reply
            .get(n.min(script.reply.len().saturating_sub(1)))
        else {
            return;
        };
        if !send(&mut conn, reply, stop) {
            return;
        }
    }
}

/// Reads one request's head (bounded); false when the connection ended first.
fn read_request(conn: &mut TcpStream) -> bool {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > 64 << 10 {
            return false;
        }
        match conn.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return false,
        }
    }
    true
}

/// Sends one reply; false when the connection is to be closed after it.
fn send(conn: &mut TcpStream, reply: &Reply, stop: &AtomicBool) -> bool {
    let body = reply.body.repeat(reply.body_repeat);
    let mut head = format!("HTTP/1.1 {} Hostile\r\n", reply.status);
    let has = |name: &str| reply.headers.keys().any(|k| k.eq_ignore_ascii_case(name));
    for (k, v) in &reply.headers {
        let _ = write!(head, "{k}: {v}\r\n");
    }
    if !has("content-length") {
        let _ = write!(head, "Content-Length: {}\r\n", body.len());
    }
    head.push_str("Connection: close\r\n\r\n");
    if conn.write_all(head.as_bytes()).is_err() {
        return false;
    }
    let bytes = body.as_bytes();
    let bytes = &bytes[..reply.close_after.unwrap_or(bytes.len()).min(bytes.len())];
    match reply.trickle_ms {
        Some(ms) => {
            for b in bytes {
                if stop.load(Ordering::SeqCst) || conn.write_all(&[*b]).is_err() {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(ms));
            }
        }
        None => {
            let _ = conn.write_all(bytes);
        }
    }
    let _ = conn.flush();
    false
}
