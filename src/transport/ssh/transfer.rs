//! Copying files to and from a board with `cat` over a channel, with progress.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use super::SshTransport;
use crate::transport::{Transport, TransportError, quote};

impl SshTransport {
    /// Copies a local file to `remote` with `cat >` on the board, reporting
    /// (bytes sent, total) after each chunk.
    pub fn upload_with_progress(
        &mut self,
        local: &Path,
        remote: &str,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(), TransportError> {
        let mut file = std::fs::File::open(local)
            .map_err(|e| self.other(format!("cannot read {}: {e}", local.display())))?;
        let total = file.metadata().map_or(0, |m| m.len());
        let command = format!("cat > {}", quote::sh(remote));
        let mut channel = self.start(&command)?;
        let mut buf = vec![0u8; 256 * 1024];
        let mut sent = 0u64;
        loop {
            let n = file
                .read(&mut buf)
                .map_err(|e| self.other(format!("reading {}: {e}", local.display())))?;
            if n == 0 {
                break;
            }
            let mut off = 0;
            // A stalled write (no window for too long) counts as a lost connection.
            let mut stall_deadline = Instant::now() + self.timeout.max(Duration::from_secs(10));
            while off < n {
                match channel.write(&buf[off..n]) {
                    Ok(0) => {
                        return Err(self.other(format!("{remote}: the board stopped reading")));
                    }
                    Ok(w) => {
                        off += w;
                        sent += w as u64;
                        stall_deadline = Instant::now() + self.timeout.max(Duration::from_secs(10));
                        if let Some(c) = self.conn.as_mut() {
                            c.heard();
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        if let Err(stop) = self.wait(Some(stall_deadline)) {
                            return Err(self.lost(&stop));
                        }
                    }
                    Err(e) => {
                        // cat may have failed (no such directory): its stderr says why.
                        let mut why = Vec::new();
                        let _ = channel.stderr().read_to_end(&mut why);
                        self.conn = None;
                        let why = String::from_utf8_lossy(&why);
                        return Err(self.other(format!(
                            "upload to {remote} failed: {} {}",
                            super::words::channel_io_error(&e),
                            why.trim()
                        )));
                    }
                }
            }
            progress(sent, total);
        }
        let deadline = Some(Instant::now() + self.timeout.max(Duration::from_secs(10)));
        if let Err(stop) = self.retry(deadline, |_| channel.send_eof()) {
            return Err(self.lost(&stop));
        }
        let mut out = Vec::new();
        let mut err = Vec::new();
        let exit = self.drain(&mut channel, &command, None, &mut out, &mut err)?;
        if !exit.success() {
            return Err(self.other(format!(
                "upload to {remote}: {exit}: {}",
                String::from_utf8_lossy(&err).trim()
            )));
        }
        Ok(())
    }

    /// Copies `remote` to a local file with `cat` on the board.
    pub fn download_with_progress(
        &mut self,
        remote: &str,
        local: &Path,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(), TransportError> {
        struct Counting<'a> {
            file: std::io::BufWriter<std::fs::File>,
            n: u64,
            progress: &'a mut dyn FnMut(u64),
        }
        impl Write for Counting<'_> {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                let w = self.file.write(b)?;
                self.n += w as u64;
                (self.progress)(self.n);
                Ok(w)
            }
            fn flush(&mut self) -> std::io::Result<()> {
                self.file.flush()
            }
        }
        let file = std::fs::File::create(local)
            .map_err(|e| self.other(format!("cannot write {}: {e}", local.display())))?;
        let mut sink = Counting {
            file: std::io::BufWriter::with_capacity(256 * 1024, file),
            n: 0,
            progress,
        };
        let mut err = Vec::new();
        let command = format!("cat {}", quote::sh(remote));
        let exit = self.exec(&command, None, &mut sink, &mut err)?;
        sink.flush()
            .map_err(|e| self.other(format!("writing {}: {e}", local.display())))?;
        if !exit.success() {
            return Err(self.other(format!(
                "download of {remote}: {exit}: {}",
                String::from_utf8_lossy(&err).trim()
            )));
        }
        Ok(())
    }
}
