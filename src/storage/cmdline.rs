//! The kernel command line file a board declares (`[boot] cmdline`), and the one edit
//! benchpipe makes to it: a USB device's `u` flag in `usb-storage.quirks=VID:PID:FLAGS`,
//! which makes the kernel drive it with `usb-storage` instead of `uas`.
//!
//! The edit is pure (`edit`): the file is one line; every other byte of it stays as it
//! was, other parameters and other devices' quirks included. On the board (`write`),
//! the original is first kept in a backup benchpipe marks (`BACKUP_MARK`) beside the
//! file, the new text goes to a temporary file in the same directory and replaces the
//! file by rename, and nothing is written when the file changed since it was read.
//! `restore` puts the backup's original back and removes the backup. A backup left by
//! an apply that was killed is kept by the next edit (it holds the true original) and
//! restored at that apply's end.

use std::time::Duration;

use crate::transport::{Transport, TransportError, quote};

/// The first line of a backup benchpipe wrote; a file without it is never trusted.
pub const BACKUP_MARK: &str =
    "# benchpipe backup: the original kernel command line, restored at the end of an apply";
/// Where the backup of `path` is kept.
pub fn backup_path(path: &str) -> String {
    format!("{path}.benchpipe-backup")
}
/// The most a command line file may hold: a Raspberry Pi's must fit in 4 KiB.
pub const MAX_BYTES: usize = 4096;
const PARAM: &str = "usb-storage.quirks=";

#[derive(Debug, thiserror::Error)]
pub enum CmdlineError {
    #[error(
        "{path} is not a single line ({lines} lines); benchpipe edits only a one-line kernel command line"
    )]
    NotOneLine { path: String, lines: usize },
    #[error("{path} holds more than {MAX_BYTES} bytes; it is not a kernel command line")]
    TooLong { path: String },
    #[error("{path} holds a control character; it is not a kernel command line benchpipe edits")]
    Control { path: String },
    #[error(
        "{path} has `usb-storage.quirks` {count} times; benchpipe will not guess which one the kernel takes"
    )]
    Twice { path: String, count: usize },
    #[error(
        "{path} quotes `usb-storage.quirks`; benchpipe edits only a plain `usb-storage.quirks=VID:PID:FLAGS,...`"
    )]
    Quoted { path: String },
    #[error(
        "{path} names {id} in `usb-storage.quirks` twice; benchpipe will not guess which entry counts"
    )]
    Ambiguous { path: String, id: String },
    #[error("{path}: {reason}")]
    Board { path: String, reason: String },
    #[error("{0}")]
    Transport(#[from] TransportError),
}

/// The line and its ending, refused unless the text is one line.
fn one_line<'a>(path: &str, text: &'a str) -> Result<(&'a str, &'a str), CmdlineError> {
    if text.len() > MAX_BYTES {
        return Err(CmdlineError::TooLong { path: path.into() });
    }
    let (line, end) = match text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
    {
        Some(l) => (l, &text[l.len()..]),
        None => (text, ""),
    };
    if line.contains(['\n', '\r']) {
        return Err(CmdlineError::NotOneLine {
            path: path.into(),
            lines: text.lines().count(),
        });
    }
    if line.chars().any(|c| c.is_control() && c != '\t') {
        return Err(CmdlineError::Control { path: path.into() });
    }
    Ok((line, end))
}

/// The byte range of each whitespace-separated word.
fn words(line: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in line.char_indices() {
        match (c == ' ' || c == '\t', start) {
            (true, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, line.len()));
    }
    out
}

/// The `usb-storage.quirks` word, if any (its range), refused when ambiguous.
fn quirks_word(path: &str, line: &str) -> Result<Option<(usize, usize)>, CmdlineError> {
    let found: Vec<(usize, usize)> = words(line)
        .into_iter()
        .filter(|(a, b)| {
            line[*a..*b].starts_with(PARAM) || line[*a..*b].starts_with("\"usb-storage.quirks=")
        })
        .collect();
    match found.as_slice() {
        [] => Ok(None),
        [(a, b)] if line[*a..*b].contains('"') => Err(CmdlineError::Quoted { path: path.into() }),
        [w] => Ok(Some(*w)),
        more => Err(CmdlineError::Twice {
            path: path.into(),
            count: more.len(),
        }),
    }
}

/// Whether the line sets `id`'s `u` flag (the kernel then ignores UAS for it).
pub fn has_quirk(path: &str, text: &str, id: &str) -> Result<bool, CmdlineError> {
    let (line, _) = one_line(path, text)?;
    let Some((a, b)) = quirks_word(path, line)? else {
        return Ok(false);
    };
    let entries = entries_of(path, &line[a + PARAM.len()..b], id)?;
    Ok(entries
        .iter()
        .any(|(mine, e)| *mine && flags(e).contains(['u', 'U'])))
}

fn flags(entry: &str) -> &str {
    entry.splitn(3, ':').nth(2).unwrap_or("")
}

/// The value's entries, each marked when it is `id`'s; two of `id`'s are refused.
fn entries_of<'a>(
    path: &str,
    value: &'a str,
    id: &str,
) -> Result<Vec<(bool, &'a str)>, CmdlineError> {
    let prefix = format!("{id}:");
    let out: Vec<(bool, &str)> = value
        .split(',')
        .map(|e| (e.to_ascii_lowercase().starts_with(&prefix), e))
        .collect();
    if out.iter().filter(|(m, _)| *m).count() > 1 {
        return Err(CmdlineError::Ambiguous {
            path: path.into(),
            id: id.into(),
        });
    }
    Ok(out)
}

/// The file's text with `id`'s `u` flag set (`uas = false`) or cleared (`uas = true`);
/// `None` when it already is. `id` is `vvvv:pppp`, lower case.
pub fn edit(path: &str, text: &str, id: &str, uas: bool) -> Result<Option<String>, CmdlineError> {
    let (line, end) = one_line(path, text)?;
    let word = quirks_word(path, line)?;
    let new_line = match (word, uas) {
        (None, true) => return Ok(None),
        (None, false) => {
            let sep = if line.is_empty() || line.ends_with([' ', '\t']) {
                ""
            } else {
                " "
            };
            format!("{line}{sep}{PARAM}{id}:u")
        }
        (Some((a, b)), _) => {
            let value = &line[a + PARAM.len()..b];
            let entries = entries_of(path, value, id)?;
            let mine = entries.iter().position(|(m, _)| *m);
            let mut out: Vec<String> = entries.iter().map(|(_, e)| e.to_string()).collect();
            match (mine, uas) {
                (Some(i), false) if flags(&out[i]).contains(['u', 'U']) => return Ok(None),
                (Some(i), false) => {
                    // `vvvv:pppp` alone has an empty flag list: add the separator.
                    if out[i].matches(':').count() < 2 {
                        out[i].push(':');
                    }
                    out[i].push('u');
                }
                (None, false) => out.push(format!("{id}:u")),
                (Some(i), true) if flags(&out[i]).contains(['u', 'U']) => {
                    // The flags `has_quirk` reads: all after the second `:`, a third
                    // `:` included (split at the last one, `a:b:u:x` kept its `u`).
                    let fl = flags(&out[i]);
                    let head = &out[i][..out[i].len() - fl.len()];
                    let kept: String = fl.chars().filter(|c| !matches!(c, 'u' | 'U')).collect();
                    if kept.is_empty() {
                        out.remove(i);
                    } else {
                        out[i] = format!("{head}{kept}");
                    }
                }
                (_, true) => return Ok(None),
            }
            let out: Vec<String> = out.into_iter().filter(|e| !e.is_empty()).collect();
            if out.is_empty() {
                // The parameter goes with the space before it (or after it, at the start).
                let (a2, b2) = if a > 0 {
                    (line[..a].trim_end_matches([' ', '\t']).len(), b)
                } else {
                    (
                        a,
                        b + (line[b..].len() - line[b..].trim_start_matches([' ', '\t']).len()),
                    )
                };
                format!("{}{}", &line[..a2], &line[b2..])
            } else {
                format!("{}{PARAM}{}{}", &line[..a], out.join(","), &line[b..])
            }
        }
    };
    Ok(Some(format!("{new_line}{end}")))
}

const TIMEOUT: Option<Duration> = Some(Duration::from_secs(60));

fn board_err(path: &str, out: &crate::transport::Output) -> CmdlineError {
    CmdlineError::Board {
        path: path.into(),
        reason: out.stderr_str().trim().to_string(),
    }
}

/// The file as the board has it: a regular file (not a link) of at most `MAX_BYTES`.
pub fn read(t: &mut dyn Transport, path: &str) -> Result<String, CmdlineError> {
    let f = quote::sh(path);
    let out = t.run(
        &format!(
            "f={f}; if [ -L \"$f\" ] || [ ! -f \"$f\" ]; then echo 'not a regular file (benchpipe follows no link here)' >&2; exit 3; fi; head -c {} -- \"$f\"",
            MAX_BYTES + 1
        ),
        TIMEOUT,
    )?;
    if !out.exit.success() {
        return Err(board_err(path, &out));
    }
    String::from_utf8(out.stdout).map_err(|_| CmdlineError::Control { path: path.into() })
}

/// Shell text that replaces file `$f` with `$new` through a temporary file beside it.
const REPLACE: &str = r#"tmp="${f%/*}/.${f##*/}.benchpipe-tmp"
cp -p -- "$f" "$tmp" && printf '%s' "$new" > "$tmp" && sync && mv -f -- "$tmp" "$f" && sync || { rm -f -- "$tmp"; echo "could not replace the file" >&2; exit 6; }"#;

/// Replaces `old` with `new` on the board: refused when the file is no longer `old`;
/// the backup of the original is written first unless benchpipe's is already there.
pub fn write(t: &mut dyn Transport, path: &str, old: &str, new: &str) -> Result<(), CmdlineError> {
    let script = format!(
        r#"f={f}; b={b}; old={old}; new={new}; mark={mark}
if [ -L "$f" ] || [ ! -f "$f" ]; then echo "not a regular file" >&2; exit 3; fi
if [ "$(head -c {max} -- "$f"; echo x)" != "${{old}}x" ]; then echo "changed since benchpipe read it; nothing was written" >&2; exit 4; fi
if [ -e "$b" ] || [ -L "$b" ]; then
  [ ! -L "$b" ] && [ "$(head -n 1 -- "$b")" = "$mark" ] || {{ echo "$b exists and benchpipe did not write it; nothing was written" >&2; exit 5; }}
else
  printf '%s\n%s' "$mark" "$old" > "$b.tmp" && sync && mv -f -- "$b.tmp" "$b" || {{ rm -f -- "$b.tmp"; echo "could not write the backup $b" >&2; exit 5; }}
fi
{REPLACE}"#,
        f = quote::sh(path),
        b = quote::sh(&backup_path(path)),
        old = quote::sh(old),
        new = quote::sh(new),
        mark = quote::sh(BACKUP_MARK),
        max = MAX_BYTES + 1,
    );
    let out = t.run(&script, TIMEOUT)?;
    if !out.exit.success() {
        return Err(board_err(path, &out));
    }
    Ok(())
}

/// Puts back the original a backup of benchpipe's holds, and removes the backup.
/// Returns whether the file changed; nothing happens without such a backup.
pub fn restore(t: &mut dyn Transport, path: &str) -> Result<bool, CmdlineError> {
    let script = format!(
        r#"f={f}; b={b}; mark={mark}
[ -f "$b" ] && [ ! -L "$b" ] && [ "$(head -n 1 -- "$b")" = "$mark" ] || {{ echo none; exit 0; }}
if [ -L "$f" ] || [ ! -f "$f" ]; then echo "not a regular file" >&2; exit 3; fi
new=$(tail -n +2 -- "$b"; echo x); new=${{new%x}}
if [ "$(cat -- "$f"; echo x)" = "${{new}}x" ]; then rm -f -- "$b"; sync; echo same; exit 0; fi
{REPLACE}
rm -f -- "$b"; sync; echo restored"#,
        f = quote::sh(path),
        b = quote::sh(&backup_path(path)),
        mark = quote::sh(BACKUP_MARK),
    );
    let out = t.run(&script, TIMEOUT)?;
    if !out.exit.success() {
        return Err(board_err(path, &out));
    }
    Ok(out.stdout_str().trim() == "restored")
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &str = "/boot/firmware/cmdline.txt";
    const ID: &str = "174c:55aa";
    const PI: &str = "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 fsck.repair=yes rootwait quiet splash\n";

    fn ed(text: &str, uas: bool) -> Option<String> {
        edit(P, text, ID, uas).unwrap()
    }

    #[test]
    fn the_quirk_is_added_and_removed_and_every_other_byte_stays() {
        let off = ed(PI, false).unwrap();
        assert_eq!(
            off,
            PI.replace("splash\n", "splash usb-storage.quirks=174c:55aa:u\n")
        );
        assert!(has_quirk(P, &off, ID).unwrap());
        assert_eq!(ed(&off, false), None, "already set");
        assert_eq!(ed(&off, true).unwrap(), PI, "removed with its space");
        assert_eq!(ed(PI, true), None, "nothing to remove");
        // No trailing newline stays none; other whitespace stays, the parameter's
        // own leading run goes with it.
        let odd = "a=1\t b=2  usb-storage.quirks=0bda:9210:u c=3";
        assert_eq!(
            edit(P, odd, "0bda:9210", true).unwrap().unwrap(),
            "a=1\t b=2 c=3"
        );
        let first = "usb-storage.quirks=174c:55aa:u  root=x";
        assert_eq!(ed(first, true).unwrap(), "root=x");
    }

    /// Found by fuzzing (`fuzz/corpus/board_output/cmdline-flags-with-a-colon`): flags
    /// holding a `:` lost their other `u` only after the last `:`, so the edit that
    /// clears the flag left it set, as `has_quirk` reads it.
    #[test]
    fn clearing_the_flag_clears_every_u_the_flags_hold() {
        for text in [
            "console=tty1 usb-storage.quirks=174c:55aa:u:x\n",
            "usb-storage.quirks=174c:55aa:quirks=174c:55aa",
        ] {
            assert!(has_quirk(P, text, ID).unwrap(), "{text}");
            let cleared = ed(text, true).unwrap();
            assert!(!has_quirk(P, &cleared, ID).unwrap(), "{cleared}");
        }
        assert_eq!(
            ed("a usb-storage.quirks=174c:55aa:u:x\n", true).unwrap(),
            "a usb-storage.quirks=174c:55aa::x\n"
        );
    }

    #[test]
    fn other_devices_quirks_and_other_flags_are_kept() {
        let two = "root=x usb-storage.quirks=0bda:9210:u,174C:55AA:k rootwait\n";
        let off = ed(two, false).unwrap();
        assert_eq!(
            off,
            "root=x usb-storage.quirks=0bda:9210:u,174C:55AA:ku rootwait\n"
        );
        assert_eq!(ed(&off, true).unwrap(), two);
        let other = "root=x usb-storage.quirks=0bda:9210:u\n";
        let off = ed(other, false).unwrap();
        assert_eq!(off, "root=x usb-storage.quirks=0bda:9210:u,174c:55aa:u\n");
        assert_eq!(ed(&off, true).unwrap(), other);
        assert!(!has_quirk(P, other, ID).unwrap());
    }

    #[test]
    fn what_benchpipe_will_not_guess_is_refused() {
        let e = |t: &str| edit(P, t, ID, false).unwrap_err();
        assert!(matches!(
            e("a\nb\n"),
            CmdlineError::NotOneLine { lines: 2, .. }
        ));
        assert!(matches!(
            e("usb-storage.quirks=1:2:u usb-storage.quirks=3:4:u"),
            CmdlineError::Twice { count: 2, .. }
        ));
        assert!(matches!(
            e("\"usb-storage.quirks=174c:55aa:u\""),
            CmdlineError::Quoted { .. }
        ));
        assert!(matches!(
            e("usb-storage.quirks=174c:55aa:u,174c:55aa:k"),
            CmdlineError::Ambiguous { .. }
        ));
        assert!(matches!(e(&"x".repeat(5000)), CmdlineError::TooLong { .. }));
        assert!(matches!(e("a=1\u{1b}[31m"), CmdlineError::Control { .. }));
        // A Windows line ending is one line, kept.
        assert_eq!(
            ed("root=x\r\n", false).unwrap(),
            "root=x usb-storage.quirks=174c:55aa:u\r\n"
        );
    }

    #[test]
    fn write_keeps_a_marked_backup_and_restore_puts_the_original_back() {
        let dir = std::env::temp_dir().join(format!("bp-cmdline-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("cmdline.txt");
        let path = f.to_str().unwrap();
        std::fs::write(&f, PI).unwrap();
        let mut t = crate::transport::local::Local::new();
        let text = read(&mut t, path).unwrap();
        assert_eq!(text, PI);
        let new = ed(&text, false).unwrap();
        // The file changed since it was read: nothing is written.
        let e = write(&mut t, path, "root=other\n", &new).unwrap_err();
        assert!(e.to_string().contains("changed since"), "{e}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), PI);
        write(&mut t, path, &text, &new).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), new);
        let backup = std::fs::read_to_string(backup_path(path)).unwrap();
        assert_eq!(backup, format!("{BACKUP_MARK}\n{PI}"));
        // A second edit keeps the first backup: it holds the original.
        let back = ed(&new, true).unwrap();
        write(&mut t, path, &new, &back).unwrap();
        write(&mut t, path, &back, &new).unwrap();
        assert_eq!(std::fs::read_to_string(backup_path(path)).unwrap(), backup);
        assert!(restore(&mut t, path).unwrap());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), PI);
        assert!(!std::path::Path::new(&backup_path(path)).exists());
        assert!(!restore(&mut t, path).unwrap(), "no backup, nothing to do");
        // A backup benchpipe did not write is never trusted or overwritten.
        std::fs::write(backup_path(path), "someone else's\n").unwrap();
        let e = write(&mut t, path, PI, &new).unwrap_err();
        assert!(e.to_string().contains("did not write it"), "{e}");
        assert!(!restore(&mut t, path).unwrap());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), PI);
        // A link is refused.
        let link = dir.join("link.txt");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        assert!(read(&mut t, link.to_str().unwrap()).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
