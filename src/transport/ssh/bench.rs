//! Hooks for `benches/transport.rs`, which times where one command's time goes: the
//! exec requests of a command with each layer of the wrapper taken away or put back,
//! run as they are, and a channel opened and closed with nothing run. Nothing in
//! benchpipe calls them: a command run through them has no lifeline.

use std::time::Instant;

use super::channel::Stop;
use super::{SshTransport, wrapper};
use crate::transport::{Output, TransportError, guard, quote};

impl SshTransport {
    /// `command`'s exec request with the wrapper's layers added one by one (the last
    /// of these is what `Transport::run` sends), then variants of the whole: the
    /// anchor found per command, the `setsid` group sudo boards get, the decoder csh
    /// and fish boards get, and all of those together with the extra /bin/sh of
    /// 40fd072's wrapper, whose structure that is.
    #[doc(hidden)]
    pub fn bench_layers(
        &mut self,
        command: &str,
    ) -> Result<Vec<(&'static str, String)>, TransportError> {
        self.ensure_connected()?;
        let facts = self.session_facts()?;
        let (anchor, posix) = (facts.anchor.as_str(), facts.posix_login);
        let script = wrapper::script(command, anchor);
        let walked = format!("{}{script}", guard::anchor_fn());
        let before = format!(
            "exec /bin/sh -c {} /bin/sh",
            quote::sh(&format!("{}{script}", guard::anchor_fn()))
        );
        Ok(vec![
            ("the login shell runs it", command.to_string()),
            (
                "+ exec /bin/sh -c",
                format!("exec /bin/sh -c {}", quote::sh(command)),
            ),
            (
                "+ wrapper, no watcher",
                wrapper::prelude_request(&script, "", posix),
            ),
            (
                "+ watcher (= run's request)",
                wrapper::led_request(&script, posix),
            ),
            (
                "run's, anchor walked per command",
                wrapper::led_request(&walked, posix),
            ),
            (
                "run's, setsid group (sudo)",
                wrapper::request(&script, posix),
            ),
            (
                "run's, decoded (csh, fish)",
                wrapper::led_request(&script, false),
            ),
            (
                "as on 40fd072 (all of these)",
                wrapper::request(&before, false),
            ),
        ])
    }

    /// Runs an exec request as it is, keeping at most 1 MiB of each stream.
    #[doc(hidden)]
    pub fn bench_run_request(&mut self, request: &str) -> Result<Output, TransportError> {
        self.ensure_connected()?;
        self.run_request(request, "a bench request", 1 << 20)
    }

    /// Opens a channel and closes it again, running nothing: the protocol's share.
    #[doc(hidden)]
    pub fn bench_open_close(&mut self) -> Result<(), TransportError> {
        self.ensure_connected()?;
        let deadline = Some(Instant::now() + self.timeout);
        let mut channel = self
            .retry(deadline, ssh2::Session::channel_session)
            .map_err(|stop| self.lost(&stop))?;
        let closed = self
            .retry(deadline, |_| channel.close())
            .and_then(|()| self.retry(deadline, |_| channel.wait_close()));
        closed.map_err(|stop: Stop| self.lost(&stop))
    }
}
