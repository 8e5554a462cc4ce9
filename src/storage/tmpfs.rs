//! A cell's own tmpfs (a recipe's `[tmpfs]`): its size, resolved and bounded, and the
//! board-side mount, unmount and sweep of leftovers, which touch only a mount that is
//! benchpipe's own.
//!
//! The tmpfs of a cell is `<workdir>/<test>-<cell key>`, mounted with the source name
//! `benchpipe-<test>` and marked by a `.benchpipe-tmpfs` file holding a token of the
//! mount. A mount at that place is unmounted only when it is a tmpfs with that source
//! name and a marker file: a leftover of a killed apply is replaced, anything else is
//! refused and left alone; nothing is mounted over a non-empty directory or a link.
//! A guard (`transport::guard`) unmounts it when the session that mounted it dies
//! before the cell's unmount step could run (a lost board, a killed benchpipe).

use std::collections::BTreeMap;

use super::StorageError;
use crate::bench::{self, Vars};
use crate::model::{ParamValue, TmpfsSize};
use crate::transport::{Transport, guard, quote};

/// The file at the root of every tmpfs benchpipe mounts for a cell.
pub const MARKER: &str = ".benchpipe-tmpfs";

/// The largest tmpfs in MiB (256 GiB): more is surely a mistake.
pub const MAX_MIB: u64 = 256 * 1024;

/// The largest share of the board's RAM a tmpfs may take: the board must keep some.
pub const MAX_PERCENT: u64 = 90;

/// Where a cell's tmpfs is mounted.
pub fn point(workdir: &str, test: &str, cell: &str) -> String {
    format!("{}/{test}-{cell}", workdir.trim_end_matches('/'))
}

/// The source name a cell's tmpfs is mounted with (`findmnt`'s SOURCE).
pub fn source(test: &str) -> String {
    format!("benchpipe-{test}")
}

/// A size as written after rendering: MiB (`24`) or a share of the RAM (`50%`),
/// within the bounds.
pub fn parse_size(text: &str) -> Result<TmpfsSize, String> {
    let t = text.trim();
    let (digits, percent) = match t.strip_suffix('%') {
        Some(d) => (d, true),
        None => (t, false),
    };
    let n: u64 = match digits.parse() {
        Ok(n) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => {
            return Err(format!(
                "`{}` is not a size: expected whole MiB (`64`) or a share of the board's RAM (`50%`)",
                t.escape_debug()
            ));
        }
    };
    match percent {
        true if (1..=MAX_PERCENT).contains(&n) => Ok(TmpfsSize::PercentOfRam(n)),
        true => Err(format!(
            "{n}% of the board's RAM: expected 1% to {MAX_PERCENT}%"
        )),
        false if (1..=MAX_MIB).contains(&n) => Ok(TmpfsSize::Mib(n)),
        false => Err(format!("{n} MiB: expected 1 to {MAX_MIB} MiB")),
    }
}

/// A recipe's `[tmpfs] size` for a cell's parameters: the template rendered with them
/// (bounded as every template is), then parsed and bounded. Pure.
pub fn resolve(size: &str, params: &BTreeMap<String, ParamValue>) -> Result<TmpfsSize, String> {
    let mut vars = Vars::new();
    vars.params(params);
    let text = bench::render(size, &vars).map_err(|e| e.reason())?;
    parse_size(&text)
}

/// tmpfs's `size=` option.
fn size_option(size: TmpfsSize) -> String {
    match size {
        TmpfsSize::Mib(n) => format!("size={n}m"),
        TmpfsSize::PercentOfRam(p) => format!("size={p}%"),
    }
}

/// Shell: whether `$p` is a tmpfs of source `$s` with benchpipe's marker.
const OURS_FN: &str = r#"bp_ours() {
  [ "$(findmnt -rn -o FSTYPE,SOURCE -M "$p" 2>/dev/null)" = "tmpfs $s" ] && [ -f "$p/.benchpipe-tmpfs" ]
}
"#;

/// Exit status of a script that refused to touch what it found.
const REFUSED: i32 = 3;

/// The guard's undo: retries the unmount for 30 s while the session's services are
/// being stopped by their own guards, then detaches the mount lazily; always only while
/// the mount is still this one (its source and its marker's token).
const GUARD_UNDO: &str = r#"p=$1; s=$2; tok=$3
bp_mine() {
  m=; { read -r m < "$p/.benchpipe-tmpfs"; } 2>/dev/null
  [ "$(findmnt -rn -o FSTYPE,SOURCE -M "$p" 2>/dev/null)" = "tmpfs $s" ] && [ "$m" = "$tok" ]
}
i=0
while [ "$i" -lt 30 ]; do
  bp_mine || exit 0
  umount "$p" 2>/dev/null && { rmdir "$p" 2>/dev/null; exit 0; }
  i=$((i + 1)); sleep 1
done
bp_mine && umount -l "$p" && rmdir "$p" 2>/dev/null
"#;

/// The guard's condition: the marker still holds the mount's token.
const GUARD_ALIVE: &str =
    r#"{ read -r bp_m < "$1/.benchpipe-tmpfs"; } 2>/dev/null && [ "$bp_m" = "$3" ]"#;

fn mount_script(point: &str, source: &str, size: TmpfsSize, token: &str) -> String {
    let memory_check = match size {
        TmpfsSize::Mib(n) => format!(
            r#"bp_avail=$(awk '/^MemAvailable:/ {{ print int($2 / 1024) }}' /proc/meminfo 2>/dev/null)
case $bp_avail in
  ''|*[!0-9]*) ;;
  *) if [ {n} -gt "$bp_avail" ]; then
       echo "a tmpfs of {n} MiB at $p, but the board has only $bp_avail MiB of memory available (MemAvailable): give the test a smaller size" >&2; exit {REFUSED}
     fi;;
esac
"#
        ),
        TmpfsSize::PercentOfRam(_) => String::new(),
    };
    format!(
        r#"p={p}; s={s}
{OURS_FN}{memory_check}if [ -L "$p" ]; then echo "$p is a symbolic link; refusing to mount a tmpfs there" >&2; exit {REFUSED}; fi
if mountpoint -q "$p" 2>/dev/null; then
  if bp_ours; then umount "$p" || exit 1
  else echo "$p is a mount benchpipe did not make; refusing to use it" >&2; exit {REFUSED}; fi
fi
mkdir -p -- "$p" || exit 1
[ -d "$p" ] && [ ! -L "$p" ] || {{ echo "$p is not a directory" >&2; exit {REFUSED}; }}
[ -z "$(ls -A -- "$p")" ] || {{ echo "$p is not an empty directory; refusing to mount a tmpfs over it" >&2; exit {REFUSED}; }}
mount -t tmpfs -o mode=0700,noatime,{size} "$s" "$p" || exit 1
printf '%s\n' {tok} > "$p/{MARKER}" || {{ umount "$p"; exit 1; }}
{guard}"#,
        p = quote::sh(point),
        s = quote::sh(source),
        size = size_option(size),
        tok = quote::sh(token),
        guard = guard::launch(&guard::Guard {
            kind: "tmpfs",
            alive: GUARD_ALIVE,
            undo: GUARD_UNDO,
            args: &[quote::sh(point), quote::sh(source), quote::sh(token)],
            ready: &format!("{point}/.benchpipe-guard"),
        }),
    )
}

fn unmount_script(point: &str, source: &str) -> String {
    format!(
        r#"p={p}; s={s}
{OURS_FN}[ -e "$p" ] || [ -L "$p" ] || exit 0
if mountpoint -q "$p" 2>/dev/null; then
  if bp_ours; then umount "$p" || exit 1
  else echo "$p is a mount benchpipe did not make; left alone" >&2; exit {REFUSED}; fi
fi
[ ! -d "$p" ] || [ -L "$p" ] || rmdir -- "$p"
"#,
        p = quote::sh(point),
        s = quote::sh(source),
    )
}

/// Every tmpfs of benchpipe's directly under the workdir (a cell's, left by a killed
/// apply whose guard could not run): mounted with a `benchpipe-` source and marked,
/// at a `<test>-<32 hex digits>` directory. Bounded by the workdir's entries.
fn sweep_script(workdir: &str) -> String {
    format!(
        r#"w={w}; rc=0
[ -d "$w" ] || exit 0
for p in "$w"/*-????????????????????????????????; do
  [ -d "$p" ] && [ ! -L "$p" ] && mountpoint -q "$p" 2>/dev/null || continue
  s=$(findmnt -rn -o FSTYPE,SOURCE -M "$p" 2>/dev/null)
  case $s in "tmpfs benchpipe-"*) ;; *) continue;; esac
  [ -f "$p/{MARKER}" ] || continue
  if umount "$p"; then rmdir -- "$p" || rc=1; else rc=1; fi
done
exit $rc
"#,
        w = quote::sh(workdir),
    )
}

/// The outcome of a script: refused (exit 3) with its words, or failed.
fn finish(t: &mut dyn Transport, script: &str) -> Result<(), StorageError> {
    let out = t.run(script, Some(std::time::Duration::from_secs(120)))?;
    if out.exit.success() {
        return Ok(());
    }
    let stderr = out.stderr_str().trim().to_string();
    if out.exit.code == Some(REFUSED) {
        return Err(StorageError::refused(stderr));
    }
    Err(StorageError::Failed {
        command: script.lines().next().unwrap_or_default().to_string(),
        exit: out.exit,
        stderr,
    })
}

/// Mounts the cell's tmpfs at `point`, replacing a leftover of benchpipe's, and starts
/// its guard. `Refused` when something else is there.
pub fn mount(
    t: &mut dyn Transport,
    point: &str,
    source: &str,
    size: TmpfsSize,
) -> Result<(), StorageError> {
    finish(
        t,
        &mount_script(point, source, size, &crate::transport::random_hex::<8>()),
    )
}

/// Unmounts the cell's tmpfs and removes its mount point; nothing when it is gone. A
/// mount there that is not benchpipe's is left alone (`Refused`).
pub fn unmount(t: &mut dyn Transport, point: &str, source: &str) -> Result<(), StorageError> {
    finish(t, &unmount_script(point, source))
}

/// Unmounts every tmpfs of benchpipe's that a killed apply left under `workdir`.
pub fn sweep(t: &mut dyn Transport, workdir: &str) -> Result<(), StorageError> {
    finish(t, &sweep_script(workdir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, i64)]) -> BTreeMap<String, ParamValue> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), ParamValue::Int(*v)))
            .collect()
    }

    #[test]
    fn sizes_are_mib_or_a_share_of_ram_within_bounds() {
        assert_eq!(parse_size("24"), Ok(TmpfsSize::Mib(24)));
        assert_eq!(parse_size(" 50% "), Ok(TmpfsSize::PercentOfRam(50)));
        assert_eq!(parse_size("262144"), Ok(TmpfsSize::Mib(MAX_MIB)));
        for bad in [
            "0", "262145", "0%", "91%", "-1", "1.5", "", "%", "1e3", "12m", "+4",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert!(
            parse_size("99999999999999999999999")
                .unwrap_err()
                .contains("not a size")
        );
    }

    #[test]
    fn a_size_template_is_rendered_with_the_cells_parameters() {
        let p = params(&[("size_mib", 250)]);
        assert_eq!(resolve("{{ size_mib + 8 }}", &p), Ok(TmpfsSize::Mib(258)));
        assert_eq!(
            resolve("{{ 2 * size_mib + 8 }}", &p),
            Ok(TmpfsSize::Mib(508))
        );
        assert_eq!(resolve("50%", &p), Ok(TmpfsSize::PercentOfRam(50)));
        let huge = params(&[("size_mib", 1 << 40)]);
        let e = resolve("{{ size_mib }}", &huge).unwrap_err();
        assert!(e.contains("expected 1 to 262144 MiB"), "{e}");
        let e = resolve("{{ nope }}", &p).unwrap_err();
        assert!(e.contains("undefined"), "{e}");
        let e = resolve(
            "{% for i in range(100000) %}{% for j in range(100000) %}1{% endfor %}{% endfor %}",
            &p,
        )
        .unwrap_err();
        assert!(e.contains("too much work"), "{e}");
    }

    #[test]
    fn the_scripts_quote_the_point_and_touch_only_benchpipes_mounts() {
        let p = "/var/tmp/bench pipe/http-0123";
        let m = mount_script(p, "benchpipe-http", TmpfsSize::Mib(24), "abc");
        assert!(
            m.starts_with("p='/var/tmp/bench pipe/http-0123'; s=benchpipe-http\n"),
            "{m}"
        );
        assert!(m.contains("size=24m"), "{m}");
        assert!(m.contains("refusing to use it"), "{m}");
        assert!(m.contains("MemAvailable"), "{m}");
        let m = mount_script(p, "benchpipe-http", TmpfsSize::PercentOfRam(50), "abc");
        assert!(m.contains("size=50%") && !m.contains("MemAvailable"), "{m}");
        let u = unmount_script(p, "benchpipe-http");
        assert!(u.contains("left alone"), "{u}");
        let s = sweep_script("/var/tmp/x'y");
        assert!(s.starts_with("w='/var/tmp/x'\\''y'"), "{s}");
    }
}
