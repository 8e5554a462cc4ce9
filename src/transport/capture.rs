//! Bounded capture of a command's output: the head and the tail of a stream, and a
//! count of what was dropped between them.

use std::collections::VecDeque;
use std::io::Write;

/// How much of each stream `Transport::run` keeps: 4 MiB, half from the start and
/// half from the end. Every parser here reads far less; more only means a runaway
/// command (`cat /dev/zero`).
pub const CAPTURE_LIMIT: usize = 4 << 20;

/// The line that stands where `dropped` bytes of a `total`-byte stream were left out.
pub fn drop_marker(dropped: u64, total: u64) -> String {
    format!("[benchpipe: {dropped} bytes dropped here; the stream was {total} bytes]\n")
}

/// A `Write` sink that keeps at most `limit` bytes: the first half as written, and
/// the last half in a ring.
#[derive(Debug)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_limit: usize,
    tail_limit: usize,
    total: u64,
}

impl Capture {
    pub fn new(limit: usize) -> Capture {
        let head_limit = limit / 2;
        Capture {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_limit,
            tail_limit: limit - head_limit,
            total: 0,
        }
    }

    /// Bytes written so far, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The kept head and tail apart, and how many bytes were dropped between them
    /// (for a reader that must look at the cut, as secret redaction does).
    pub fn finish_parts(self) -> (Vec<u8>, Vec<u8>, u64) {
        let dropped = self.total - (self.head.len() + self.tail.len()) as u64;
        (self.head, self.tail.into(), dropped)
    }

    /// The kept bytes and how many were dropped. When some were, a marker line
    /// (`[benchpipe: N bytes dropped]`) stands where they were.
    pub fn finish(self) -> (Vec<u8>, u64) {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let dropped = self.total - kept;
        let mut out = self.head;
        if dropped > 0 {
            if !out.ends_with(b"\n") {
                out.push(b'\n');
            }
            out.extend_from_slice(drop_marker(dropped, self.total).as_bytes());
        }
        out.extend(self.tail);
        (out, dropped)
    }
}

impl Write for Capture {
    fn write(&mut self, mut buf: &[u8]) -> std::io::Result<usize> {
        let n = buf.len();
        self.total += n as u64;
        let room = self.head_limit - self.head.len();
        if room > 0 {
            let take = room.min(buf.len());
            self.head.extend_from_slice(&buf[..take]);
            buf = &buf[take..];
        }
        if buf.len() >= self.tail_limit {
            self.tail.clear();
            self.tail.extend(&buf[buf.len() - self.tail_limit..]);
        } else {
            let overflow = (self.tail.len() + buf.len()).saturating_sub(self.tail_limit);
            self.tail.drain(..overflow);
            self.tail.extend(buf);
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(limit: usize, chunks: &[&[u8]]) -> (Vec<u8>, u64) {
        let mut c = Capture::new(limit);
        for ch in chunks {
            c.write_all(ch).unwrap();
        }
        c.finish()
    }

    #[test]
    fn small_output_is_kept_whole() {
        assert_eq!(captured(10, &[b"abc", b"de"]), (b"abcde".to_vec(), 0));
        assert_eq!(captured(10, &[b"0123456789"]), (b"0123456789".to_vec(), 0));
    }

    #[test]
    fn large_output_keeps_head_and_tail_around_a_marker() {
        let (out, dropped) = captured(8, &[b"0123", b"4567", b"89ab", b"cdef"]);
        assert_eq!(dropped, 8);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "0123\n[benchpipe: 8 bytes dropped here; the stream was 16 bytes]\ncdef"
        );
        // One big write and many small ones keep the same bytes.
        let all: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        let big = captured(100, &[&all]);
        let small: Vec<&[u8]> = all.chunks(7).collect();
        assert_eq!(big, captured(100, &small));
        assert_eq!(big.1, 9_900);
        assert!(big.0.ends_with(&all[all.len() - 50..]));
        assert!(big.0.starts_with(&all[..50]));
    }
}
