//! The remote side of every command: the /bin/sh script around it (its process group,
//! its lifeline, its session's anchor), the exec request any login shell passes through
//! unchanged, and what a session learns about its board once, on its first command.

use super::SshTransport;
use crate::transport::guard::{self, ANCHOR_ENV};
use crate::transport::{TransportError, quote};

/// The lifeline: a process in the command's group that holds the channel's stdin (fd
/// 3) and its stdout and stderr. Stdin ends when the command's shell exits (sshd closes
/// the pipe on its exit), when benchpipe sends EOF (a timeout, Ctrl-C) and when the
/// connection or sshd goes; the watcher then kills the whole group, itself last. Since
/// it holds stdout until then, the channel cannot close, nor the command be reported
/// over, before the group was killed.
pub(super) const WATCHER: &str =
    "  { while read -r _ <&3; do :; done; kill -s KILL -- -$$; } </dev/null &\n";

/// What the login shell (or the decoder's /bin/sh, `login_shell_neutral`) runs before
/// the command's /bin/sh, `$bp_x` being that shell's script (`script`).
///
/// sshd makes each session's process the leader of a session and process group of its
/// own before it runs the login shell, and `exec` keeps the pid: when this shell leads
/// its group, that group holds the command and nothing else. The watcher starts here,
/// before the `exec`, so that it is no job of the command's shell (whose `wait` would
/// wait for it). Where the shell does not lead its group, or cannot tell (no /proc, a
/// login shell that reads the line otherwise), the script makes a group of its own.
const PRELUDE: &str = r#"bp_s=; { read -r bp_s < "/proc/$$/stat"; } 2>/dev/null
set -f; set -- ${bp_s##*") "}; set +f
if [ "${3:-}" = "$$" ]; then
  exec 3<&0
WATCHER  exec /bin/sh -c "$bp_x" /bin/sh led 3<&-
fi
exec /bin/sh -c "$bp_x" /bin/sh
"#;

/// The command's /bin/sh, after `bp_c` and the anchor are set (`script`).
///
/// With `led` (its group is its own and watched, `PRELUDE`), the shell runs the
/// command itself (`eval`, no process in between), so the command's `$$`, `exec` and
/// exit are its own and sshd reports its exit code or signal as it would without a
/// wrapper. An exit status of 129 to 159 (the last process died of a signal) kills the
/// shell with that signal on its way out, so that sshd reports the signal, unless the
/// command set an EXIT trap of its own. The command sees no positional parameter, no
/// `bp_` variable, no job and stdin from /dev/null.
///
/// Otherwise (sudo, or `PRELUDE` could not tell) the command runs in a `setsid` group
/// of its own, which the script kills when the command ends, and a watcher outside
/// that group kills it when stdin ends first. The group id is free for reuse only once
/// every member is gone, so a kill right after `wait` cannot reach another group.
const WRAPPER: &str = r#"if [ "${1-}" = led ]; then
  set --
  exec </dev/null
  trap 'bp_rc=$?; if [ "$bp_rc" -gt 128 ] && [ "$bp_rc" -lt 160 ]; then trap - EXIT "$((bp_rc - 128))"; kill -"$((bp_rc - 128))" $$; fi' EXIT
  eval "unset -v bp_c; $bp_c"
else
  set --
  exec 3<&0
  setsid /bin/sh -c "$bp_c" </dev/null &
  bp_pid=$!
  { while read -r _ <&3; do :; done; kill -s KILL -- -$bp_pid 2>/dev/null; } &
  bp_watch=$!
  wait $bp_pid
  bp_rc=$?
  kill -s KILL -- -$bp_pid 2>/dev/null
  kill $bp_watch 2>/dev/null
  if [ $bp_rc -gt 128 ] && [ $bp_rc -lt 160 ]; then kill -$((bp_rc - 128)) $$; fi
  exit $bp_rc
fi
"#;

/// The /bin/sh script that runs `command` under the wrapper, its session's anchor
/// exported (`guard`'s `BENCHPIPE_ANCHOR`, learnt once per session by `facts_probe`).
/// Run by `led_request`, or as it is (under sudo: its own `setsid` group).
pub(super) fn script(command: &str, anchor: &str) -> String {
    format!(
        "bp_c={}\n{ANCHOR_ENV}={}; export {ANCHOR_ENV}\n{WRAPPER}",
        quote::sh(command),
        quote::sh(anchor),
    )
}

/// The exec request that runs `script`'s output through `PRELUDE`.
pub(super) fn led_request(script: &str, posix_login: bool) -> String {
    prelude_request(script, WATCHER, posix_login)
}

/// `led_request` with `watcher` in the watcher's place (benches take it away).
pub(super) fn prelude_request(script: &str, watcher: &str, posix_login: bool) -> String {
    let text = format!(
        "bp_x={}\n{}",
        quote::sh(script),
        PRELUDE.replacen("WATCHER", watcher, 1)
    );
    if posix_login {
        text
    } else {
        login_shell_neutral(&text)
    }
}

/// The exec request that runs `script` under /bin/sh: as POSIX shell words for a login
/// shell that was seen to take them (`SessionFacts::posix_login`), otherwise through
/// `login_shell_neutral`.
pub(super) fn request(script: &str, posix_login: bool) -> String {
    if posix_login {
        format!("exec /bin/sh -c {}", quote::sh(script))
    } else {
        login_shell_neutral(script)
    }
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

/// What a session's commands need to know about its board, learnt once per session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct SessionFacts {
    /// `PID STARTTIME` of the sshd serving this session (`guard::anchor_fn`), the same
    /// for every command on it; empty where it cannot be found (no guard starts then).
    pub anchor: String,
    /// The login shell reads sh's language: requests skip the decoder, and the login
    /// shell runs `PRELUDE` itself.
    pub posix_login: bool,
}

/// The first request of a session, in the form every login shell takes: the anchor as
/// `anchor_fn` finds it from a command's shell (its parent is the session's sshd, as
/// every later command's is) and the login shell sshd ran it with.
pub(super) fn facts_probe() -> String {
    login_shell_neutral(&format!(
        "{}printf '%s\\n' \"${ANCHOR_ENV}\" \"${{SHELL:-}}\"\n",
        guard::anchor_fn()
    ))
}

/// The anchor and the login shell from `facts_probe`'s output: its last two lines (a
/// login shell's start-up files may print before them). An anchor that is not two
/// numbers is none.
pub(super) fn parse_facts(stdout: &str) -> (String, String) {
    let mut lines = stdout.lines().rev();
    let shell = lines.next().unwrap_or_default().to_string();
    let anchor = lines.next().unwrap_or_default();
    let numbers = anchor.split(' ').collect::<Vec<_>>();
    let valid = numbers.len() == 2
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    (
        if valid {
            anchor.to_string()
        } else {
            String::new()
        },
        shell,
    )
}

/// Login shells that read sh's language, `PRELUDE`'s and its quoting (single quotes
/// keep every byte, `'\''` is a quote); csh (newlines, `!`) and fish (backslashes in
/// quotes) do not. One that reads `PRELUDE`'s line splitting otherwise (zsh) only
/// fails its test, and its commands get a `setsid` group.
pub(super) fn posix_login_shell(shell: &str) -> bool {
    let name = shell.rsplit('/').next().unwrap_or_default();
    matches!(
        name,
        "sh" | "bash" | "dash" | "ash" | "ksh" | "mksh" | "zsh"
    )
}

/// Bytes a login shell must hand through POSIX single quotes untouched: a quote, `!`
/// (csh's history), backslashes (fish), a newline (csh), a tab, `$`, `%`, UTF-8. None
/// can redirect or run anything should a shell still parse them otherwise.
pub(super) const QUOTING_PROBE: &str = "it's \"q\" !x !! \\ \\\\n\n\t$HOME %s ~ * é";

/// The second request of a session whose login shell is named POSIX: it must print
/// `QUOTING_PROBE` byte for byte, through the form `request` gives such a shell.
pub(super) fn quoting_probe() -> String {
    request(&format!("printf '%s' {}", quote::sh(QUOTING_PROBE)), true)
}

impl SshTransport {
    /// The session's facts, learnt on its first command (`facts_probe`, then
    /// `quoting_probe` for a login shell named POSIX) and kept with the session: a new
    /// session (a reconnect) learns them afresh, so a command never carries another
    /// session's anchor.
    pub(super) fn session_facts(&mut self) -> Result<SessionFacts, TransportError> {
        if let Some(facts) = self.conn.as_ref().and_then(|c| c.facts.clone()) {
            return Ok(facts);
        }
        let out = self.run_request(&facts_probe(), "the session's first command", 64 << 10)?;
        if !out.exit.success() {
            return Err(self.other(format!(
                "the session's first command (its anchor and login shell) ended with {}: {}",
                out.exit,
                out.stderr_str().trim()
            )));
        }
        let (anchor, shell) = parse_facts(&out.stdout_str());
        let posix_login = posix_login_shell(&shell) && {
            let out = self.run_request(&quoting_probe(), "the login shell's quoting", 64 << 10)?;
            out.exit.success() && out.stdout.ends_with(QUOTING_PROBE.as_bytes())
        };
        let facts = SessionFacts {
            anchor,
            posix_login,
        };
        if let Some(c) = self.conn.as_mut() {
            c.facts = Some(facts.clone());
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_output_gives_a_numeric_anchor_or_none() {
        let shell = || "/bin/bash".to_string();
        assert_eq!(
            parse_facts("motd\n123 456\n/bin/bash\n"),
            ("123 456".into(), shell())
        );
        assert_eq!(parse_facts("\n/bin/bash\n"), (String::new(), shell()));
        assert_eq!(parse_facts("0 0\n/bin/bash\n"), ("0 0".into(), shell()));
        for bad in ["12; rm -rf /", "1 2 3", "12 ", " 12", "a b"] {
            assert_eq!(parse_facts(&format!("{bad}\n/bin/bash\n")).0, "", "{bad}");
        }
        assert_eq!(parse_facts(""), (String::new(), String::new()));
    }

    #[test]
    fn only_sh_like_login_shells_skip_the_decoder() {
        for s in [
            "/bin/sh",
            "/bin/bash",
            "/usr/bin/dash",
            "/bin/ash",
            "/bin/zsh",
        ] {
            assert!(posix_login_shell(s), "{s}");
        }
        for s in [
            "/bin/tcsh",
            "/bin/csh",
            "/usr/bin/fish",
            "/bin/nu",
            "",
            "/bin/",
        ] {
            assert!(!posix_login_shell(s), "{s}");
        }
    }

    #[test]
    fn the_watcher_is_in_the_request() {
        assert!(PRELUDE.contains("WATCHER"));
        assert!(led_request("true", true).contains(WATCHER));
    }
}
