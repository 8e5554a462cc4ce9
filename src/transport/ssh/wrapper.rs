//! The remote side of every command: the /bin/sh wrapper that owns the command's
//! process group, and the exec request any login shell passes through unchanged.

use crate::transport::{guard, quote};

/// The remote side of every command: see the module comment. `$1` is the command.
/// When the command ends, the rest of its process group (`sleep 300 &`) is killed too,
/// as on a timeout: nothing it started outlives it, and a child holding stdout open
/// cannot keep the channel open. (The group id is free for reuse only once every
/// member is gone, so the kill right after `wait` cannot reach another group.)
/// A command killed by a signal makes the wrapper kill itself with the same signal, so
/// that sshd reports the signal as it would without the wrapper. Before it, the
/// session's anchor is exported for guards (`guard::anchor_fn`).
const WRAPPER: &str = r#"exec 3<&0
setsid /bin/sh -c "$1" </dev/null &
pid=$!
{ while read -r _ <&3; do :; done; kill -s KILL -- -$pid 2>/dev/null; } &
watch=$!
wait $pid
rc=$?
kill -s KILL -- -$pid 2>/dev/null
kill $watch 2>/dev/null
if [ $rc -gt 128 ] && [ $rc -lt 160 ]; then kill -$((rc - 128)) $$; fi
exit $rc"#;

pub(super) fn wrap(command: &str) -> String {
    format!(
        "exec /bin/sh -c {} benchpipe {}",
        quote::sh(&format!("{}{WRAPPER}", guard::anchor_fn())),
        quote::sh(command)
    )
}

/// The exec request's text, for whatever login shell the board's user has.
///
/// sshd hands the request to the user's login shell (`$SHELL -c`), which may be csh or
/// fish: newlines, `!`, `'` or `\` mean different things there. So the login shell only
/// ever sees `exec /bin/sh -c '<decoder>' benchpipe '<chunk>'...`, where each chunk is
/// `script` with every byte outside a small safe set written as a printf octal escape
/// (`\012`), and the decoder in /bin/sh turns the chunks back into `script` and runs it.
/// Chunks stay short because csh refuses long words.
pub fn login_shell_neutral(script: &str) -> String {
    const CHUNK: usize = 900;
    let safe = |b: u8| b.is_ascii_alphanumeric() || b" -_./=:,+@#&|;<>()[]{}*?~\"$`".contains(&b);
    let mut chunks: Vec<String> = vec![String::new()];
    for &b in script.as_bytes() {
        let piece = if safe(b) {
            (b as char).to_string()
        } else {
            format!("\\{b:03o}")
        };
        if chunks.last().is_some_and(|c| c.len() + piece.len() > CHUNK) {
            chunks.push(String::new());
        }
        if let Some(c) = chunks.last_mut() {
            c.push_str(&piece);
        }
    }
    let mut out = String::from(r#"exec /bin/sh -c 'eval "$(IFS=; printf "$*")"' benchpipe"#);
    for c in chunks {
        out.push_str(" '");
        out.push_str(&c);
        out.push('\'');
    }
    out
}
