//! A board's workdir, claimed as benchpipe's own before anything is written or removed
//! in it: never `/`, a home directory, or a directory holding files benchpipe did not
//! put there; reached only through directories nobody else can change.
//!
//! Recipes remove `{{ workdir }}/xz` and the sampler `<workdir>/telemetry/...`, as
//! root. That is safe only because the workdir is benchpipe's: made by it (mode 0700,
//! the directories it makes on the way 0711) or found empty, and marked with `.benchpipe-workdir`. The whole claim is one POSIX
//! sh script, so it costs one round trip.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::{Transport, TransportError, quote};

/// The file that marks a directory as benchpipe's workdir.
pub const MARKER: &str = ".benchpipe-workdir";

const MARKER_TEXT: &str = "benchpipe workdir: benchpipe creates and removes files here\n";

/// Checks and creates `workdir` (see the module comment), or says why it is refused.
/// Components it creates get mode 0700.
pub fn claim(t: &mut dyn Transport, workdir: &str) -> Result<(), TransportError> {
    check_path(workdir).map_err(|e| TransportError::Other {
        target: t.target(),
        reason: format!("workdir {workdir}: {e}"),
    })?;
    let out = t.run(&claim_script(workdir), Some(Duration::from_secs(60)))?;
    if out.exit.success() {
        return Ok(());
    }
    let why = out.stderr_str();
    let why = why.trim();
    Err(TransportError::Other {
        target: t.target(),
        reason: format!(
            "workdir {workdir}: {}",
            if why.is_empty() {
                format!("the claim ended with {}", out.exit)
            } else {
                why.to_string()
            }
        ),
    })
}

/// Marks a directory this process has just created as a workdir (the lab's boards,
/// whose workdirs are made on the controller before their sshd runs).
pub fn mark_local(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(dir.join(MARKER))?;
    f.write_all(MARKER_TEXT.as_bytes())
}

/// A workdir refused without asking the board.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadWorkdir {
    #[error("must be an absolute path")]
    Relative,
    #[error("refusing `/`: benchpipe removes files in its workdir")]
    Root,
    #[error("must not contain `.` or `..` components")]
    DotComponent,
    #[error("must not contain a newline")]
    Newline,
}

/// What can be refused without asking the board: not absolute, `/`, `.` or `..`.
fn check_path(workdir: &str) -> Result<(), BadWorkdir> {
    if !workdir.starts_with('/') {
        return Err(BadWorkdir::Relative);
    }
    let parts: Vec<&str> = workdir.split('/').filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return Err(BadWorkdir::Root);
    }
    if parts.iter().any(|p| *p == "." || *p == "..") {
        return Err(BadWorkdir::DotComponent);
    }
    if workdir.contains(['\n', '\0']) {
        return Err(BadWorkdir::Newline);
    }
    Ok(())
}

/// The claim, for `sh`. Exit 0: claimed; otherwise stderr says why.
fn claim_script(workdir: &str) -> String {
    let parts: Vec<&str> = workdir.split('/').filter(|p| !p.is_empty()).collect();
    format!(
        r#"set -f
w={w}
marker="$w"/{marker}
me=$(id -u) || exit 1
refuse() {{ echo "$*" >&2; exit 3; }}
phys() {{ (cd -P -- "$1" 2>/dev/null && pwd -P); }}
# ls -ldn: mode, links, owner uid. $1 a path; the mode of what it names itself. A
# directory this user cannot enter (a run as root made it 0700) is said as that, with
# its owner and mode as its parent shows them, never as an empty owner.
meta() {{
  bp_l=$(LC_ALL=C ls -ldn -- "$1" 2>&1) || cannot_enter "${{1%/.}}" "${{bp_l##*: }}"
  set -- $bp_l; bp_m=$1; bp_u=$3
}}
cannot_enter() {{
  set -- "$1" "$2" $(LC_ALL=C ls -ldn -- "$1" 2>/dev/null)
  [ -n "${{5:-}}" ] || refuse "cannot look into $1 as uid $me: $2"
  refuse "cannot look into $1 as uid $me ($2): it is uid $5's, mode $3, as a run of benchpipe as uid $5 leaves it; run benchpipe as uid $5 (on a board: become = \"sudo\" when that is root), or set another workdir in the board file"
}}
writable_by_others() {{
  case $bp_m in ?????w*|????????w*) return 0 ;; esac
  return 1
}}
# Home directories: the workdir must be none of them.
wp=$(phys "$w")
for h in "$HOME" $(cut -d: -f6 /etc/passwd 2>/dev/null); do
  h=${{h%/}}
  [ -n "$h" ] || continue
  if [ "$h" = "$w" ] || {{ [ -n "$wp" ] && [ "$(phys "$h")" = "$wp" ]; }}; then
    refuse "refusing a home directory: benchpipe removes files in its workdir; use a directory of its own, such as $w/benchpipe"
  fi
done
# Every directory on the way: owned by root or us, and nobody else may change what
# lies below it (a world-writable one only with the sticky bit, and owned by root).
p=
for c in {parts}; do
  p=$p/$c
  last=; [ "$p" = "$w" ] && last=1
  if [ -L "$p" ]; then
    meta "$p"
    [ "$bp_u" = 0 ] || [ "$bp_u" = "$me" ] || refuse "$p is a symbolic link owned by uid $bp_u, not by root or uid $me"
    [ -z "$last" ] || refuse "$p is a symbolic link; name the directory itself"
  elif [ ! -e "$p" ]; then
    # The workdir 0700; a directory on the way 0711, passable but not listable: a
    # recipe's service that drops to its own user (MariaDB, nginx and php-fpm as
    # www-data) reaches the directory the recipe opens to it below the workdir.
    mode=711; [ -z "$last" ] || mode=700
    if ! bp_l=$(LC_ALL=C mkdir -m "$mode" -- "$p" 2>&1); then
      # Made meanwhile by a claim beside this one (two boards' directories on the
      # controller share their project's); checked below like any directory found.
      {{ [ -d "$p" ] && [ ! -L "$p" ]; }} || refuse "cannot create $p as uid $me: ${{bp_l##*: }}"
    fi
  fi
  [ -d "$p" ] || refuse "$p is not a directory"
  meta "$p/."
  if [ -n "$last" ]; then
    [ "$bp_u" = "$me" ] || refuse "$p is owned by uid $bp_u, not by uid $me who runs benchpipe"
    writable_by_others && refuse "$p is writable by others (mode $bp_m): chmod go-w it, or use another directory"
  else
    [ "$bp_u" = 0 ] || [ "$bp_u" = "$me" ] || refuse "$p is owned by uid $bp_u, not by root or uid $me"
    if writable_by_others; then
      case $bp_m in ?????????[tT]*) sticky=1 ;; *) sticky= ;; esac
      [ -n "$sticky" ] && [ "$bp_u" = 0 ] || refuse "$p is writable by others (mode $bp_m): what lies below it could be swapped"
    fi
  fi
done
if [ -f "$marker" ] && [ ! -L "$marker" ]; then
  :
elif [ -z "$(ls -A -- "$w")" ]; then
  printf '%s' {text} > "$marker" || refuse "cannot write $marker"
else
  refuse "refusing a directory that holds files benchpipe did not put there ($(ls -A -- "$w" | head -n 5 | tr '\n' ' ')): benchpipe removes files in its workdir; use a new or empty directory"
fi
chmod 700 -- "$w" || refuse "cannot chmod $w"
"#,
        w = quote::sh(workdir),
        marker = quote::sh(MARKER),
        parts = quote::join(&parts),
        text = quote::sh(MARKER_TEXT),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::local::Local;

    #[test]
    fn paths_refused_without_asking_the_board() {
        for (bad, why) in [
            ("/", BadWorkdir::Root),
            ("//", BadWorkdir::Root),
            ("relative", BadWorkdir::Relative),
            ("/a/../b", BadWorkdir::DotComponent),
            ("/a/./b", BadWorkdir::DotComponent),
            ("/a\nb", BadWorkdir::Newline),
        ] {
            assert_eq!(check_path(bad), Err(why), "{bad}");
        }
        assert!(check_path("/var/tmp/benchpipe/pi").is_ok());
    }

    /// Boards of one apply claim their directories on the controller at once, under one
    /// parent none of them found: each claim makes it or finds it made, none refuses.
    #[test]
    fn claims_at_once_under_one_new_parent_all_succeed() {
        let root = std::env::temp_dir().join(format!("bp-claims-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir(&root).unwrap();
        for round in 0..5 {
            let parent = root.join(format!("project-{round}"));
            let claims: Vec<_> = (0..8)
                .map(|i| {
                    let dir = parent.join(format!("board-{i}")).display().to_string();
                    std::thread::spawn(move || claim(&mut Local::new(), &dir))
                })
                .collect();
            for c in claims {
                c.join().unwrap().unwrap();
            }
        }
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_claim_script_is_valid_sh() {
        let script = claim_script("/a b/$(id)/c'd");
        let out = Local
            .run(&format!("sh -n -c {}", quote::sh(&script)), None)
            .unwrap();
        assert!(out.exit.success(), "{}", out.stderr_str());
    }
}
