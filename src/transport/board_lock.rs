//! One apply per board at a time, across stores and controllers: a record in the board's
//! claimed workdir naming the apply that holds the board and the SSH sessions it holds
//! it through, taken back by anyone once all those sessions are gone.
//!
//! The store's lock keeps two applies of one store apart; two controllers (or a person
//! at the bench and a timer, each with a store of their own) reach one board through
//! nothing they share but the board. So the board keeps the record:
//! `<workdir>/.benchpipe-holder`, written under `flock(1)` of a file beside it. A
//! session's liveness is its anchor (`guard.rs`: the sshd process serving it, with its
//! start time; locally, benchpipe itself), which the kernel ends with the connection
//! however the controller died, kill -9 and a pulled cable included: no lease to renew,
//! no timeout to guess. One apply reaching a board through several sessions (its walk,
//! a peer's) adds each session's anchor; the board is held while any of them lives.
//! Nothing removes the record: a record whose sessions are all gone holds nothing, and
//! the next claim replaces it. A session without an anchor (a board with no /proc)
//! holds nothing, as its liveness cannot be judged.

use std::time::Duration;

use super::guard::START_TIME_FN;
use super::{Transport, TransportError, quote};

/// The record's file in the workdir.
pub const HOLDER_FILE: &str = ".benchpipe-holder";

/// The most anchors a record keeps: one per session of one apply.
const MAX_ANCHORS: usize = 64;

/// The most bytes of another holder's record read back.
const MAX_RECORD_BYTES: usize = 4096;

/// Who claims a board: a token unique to one apply, and the one-line record (JSON, no
/// newline) a refused apply is shown.
#[derive(Clone, Debug)]
pub struct Claimant {
    pub token: String,
    pub record: String,
}

/// Why a board was not taken.
#[derive(Debug)]
pub enum NotTaken {
    /// Another apply holds it through a live session; its record, as it wrote it.
    Held { record: String },
    /// The board could not be asked, or the take failed there.
    Failed(TransportError),
}

/// Takes `workdir`'s board for `claimant`, or says who holds it. The workdir must be
/// claimed (`workdir::claim`) first: the record is written there.
pub fn take(t: &mut dyn Transport, workdir: &str, claimant: &Claimant) -> Result<(), NotTaken> {
    let token_ok = !claimant.token.is_empty()
        && claimant.token.len() <= 64
        && claimant
            .token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !token_ok || claimant.record.contains(['\n', '\r', '\0']) {
        return Err(NotTaken::Failed(TransportError::Other {
            target: t.target(),
            reason:
                "a holder token other than letters, digits and '-', or a record with a line break"
                    .into(),
        }));
    }
    let out = t
        .run(&script(workdir, claimant), Some(Duration::from_secs(60)))
        .map_err(NotTaken::Failed)?;
    if out.exit.success() {
        return Ok(());
    }
    let stdout = out.stdout_str();
    if out.exit.code == Some(4)
        && let Some(record) = stdout.strip_prefix("held\n")
    {
        let record: String = record.trim_end().chars().take(MAX_RECORD_BYTES).collect();
        return Err(NotTaken::Held { record });
    }
    let why = out.stderr_str();
    Err(NotTaken::Failed(TransportError::Other {
        target: t.target(),
        reason: format!(
            "{workdir}/{HOLDER_FILE}: {}",
            match why.trim() {
                "" => format!("taking the board ended with {}", out.exit),
                w => w.to_string(),
            }
        ),
    }))
}

/// The take, for `sh`: exit 0 taken (or already this apply's), 4 held (stdout `held`,
/// then the holder's record line), 3 and stderr otherwise.
fn script(workdir: &str, c: &Claimant) -> String {
    format!(
        r#"set -f
f={w}/{file}; tok={tok}
{START_TIME_FN}if command -v flock >/dev/null 2>&1; then
  exec 9>>"$f.mutex" || exit 3
  flock -w 20 9 || {{ echo "$f.mutex: still locked after 20 s" >&2; exit 3; }}
fi
nl='
'
alive=
if [ -f "$f" ] && [ ! -L "$f" ]; then
  ftok=
  while read -r k p s; do
    case $k in
      token) ftok=$p ;;
      anchor)
        case $p$s in ''|*[!0-9]*) continue ;; esac
        [ "$(live_start_time "$p")" = "$s" ] && alive="$alive$p $s$nl" ;;
    esac
  done < "$f"
  if [ -n "$alive" ] && [ "$ftok" != "$tok" ]; then
    printf 'held\n'; sed -n 's/^holder //p' "$f" | head -n 1 | head -c {max}; echo
    exit 4
  fi
  [ "$ftok" = "$tok" ] || alive=
fi
set -- ${{BENCHPIPE_ANCHOR:-}}
if [ $# -eq 2 ]; then
  case "$nl$alive" in *"$nl$1 $2$nl"*) ;; *) alive="$alive$1 $2$nl" ;; esac
fi
{{ printf 'benchpipe-board-lock 1\ntoken %s\nholder %s\n' "$tok" {record}
  printf '%s' "$alive" | head -n {anchors} | sed 's/^/anchor /'; }} > "$f.new.$$" &&
  mv -f "$f.new.$$" "$f" || {{ rm -f "$f.new.$$"; echo "cannot write $f" >&2; exit 3; }}
"#,
        w = quote::sh(workdir),
        file = HOLDER_FILE,
        tok = quote::sh(&c.token),
        record = quote::sh(&c.record),
        max = MAX_RECORD_BYTES,
        anchors = MAX_ANCHORS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::local::Local;

    fn claimant(token: &str) -> Claimant {
        Claimant {
            token: token.into(),
            record: format!("{{\"who\":\"{token}\"}}"),
        }
    }

    fn dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!(
            "bp-board-lock-{tag}-{}-{}",
            std::process::id(),
            crate::transport::random_hex::<4>()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// Locally the anchor is this process: alive for the whole test, so a second
    /// apply (another token) is refused with the first's record, and the first takes
    /// it again as often as it likes.
    #[test]
    fn a_board_held_by_a_live_apply_is_refused_to_another_and_kept_by_its_own() {
        let d = dir("live");
        let w = d.to_str().unwrap();
        let mut t = Local::new();
        take(&mut t, w, &claimant("aaaa")).unwrap();
        take(&mut t, w, &claimant("aaaa")).unwrap();
        match take(&mut t, w, &claimant("bbbb")) {
            Err(NotTaken::Held { record }) => assert_eq!(record, "{\"who\":\"aaaa\"}"),
            other => panic!("{other:?}"),
        }
        let text = std::fs::read_to_string(d.join(HOLDER_FILE)).unwrap();
        assert_eq!(text.matches("\nanchor ").count(), 1, "{text}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A record whose sessions are gone (a pid that no longer has the recorded start
    /// time, a malformed anchor) holds nothing: the next claimant takes it over.
    #[test]
    fn a_record_whose_sessions_are_gone_is_taken_over() {
        let d = dir("gone");
        let w = d.to_str().unwrap();
        std::fs::write(
            d.join(HOLDER_FILE),
            "benchpipe-board-lock 1\ntoken old\nholder {}\nanchor 1 999999999999\nanchor x y\n",
        )
        .unwrap();
        let mut t = Local::new();
        take(&mut t, w, &claimant("new")).unwrap();
        let text = std::fs::read_to_string(d.join(HOLDER_FILE)).unwrap();
        assert!(text.contains("\ntoken new\n"), "{text}");
        assert!(!text.contains("999999999999"), "{text}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Hostile text in a record stays data: a token or record with shell syntax is
    /// written as given, and a line break is refused before the board is asked.
    #[test]
    fn records_are_quoted_and_odd_tokens_and_line_breaks_refused() {
        let d = dir("quote");
        let w = d.to_str().unwrap();
        let mut t = Local::new();
        let odd = Claimant {
            token: "t-1".into(),
            record: "`touch pwned` $(touch pwned) $HOME 'x'\"".into(),
        };
        take(&mut t, w, &odd).unwrap();
        let text = std::fs::read_to_string(d.join(HOLDER_FILE)).unwrap();
        assert!(
            text.contains("holder `touch pwned` $(touch pwned) $HOME 'x'\"\n"),
            "{text}"
        );
        assert!(!d.join("pwned").exists() && !std::path::Path::new("pwned").exists());
        for (token, record) in [("t", "a\nanchor 1 1"), ("$(id) x", "{}"), ("", "{}")] {
            let broken = Claimant {
                token: token.into(),
                record: record.into(),
            };
            let r = take(&mut t, w, &broken);
            assert!(matches!(r, Err(NotTaken::Failed(_))), "{token:?}: {r:?}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}
