//! Installing packages with apt so that no daemon they bring starts and none they
//! enable stays enabled: the script provisioning runs on a side, and what it reports.
//!
//! `apt-get install nginx samba mariadb-server` on a Debian board starts and enables the
//! distribution's daemons, which outlive benchpipe and hold the ports its recipes need.
//! So every install runs under one lock, in this order:
//! - a `/usr/sbin/policy-rc.d` that answers 101 ("forbidden") to every start, which
//!   `invoke-rc.d` and `deb-systemd-invoke` ask: benchpipe's own (marked, removed at
//!   the end), or the board's when it already forbids starts (kept as it is); one that
//!   allows them is refused, never replaced;
//! - the units enabled (links in /etc/systemd/system/*.wants and *.requires, and
//!   /etc/rc?.d/S* links) and the packages installed, written down before the install,
//!   with a marker saying an install is under way;
//! - `apt-get install --no-install-recommends`;
//! - every unit enabled now and not before disabled again (`deb-systemd-helper
//!   disable`, `update-rc.d disable`, the link removed if it is still there), the new
//!   packages listed, the marker and benchpipe's policy-rc.d removed.
//!
//! An install that was interrupted (a killed apply, a lost board) leaves the marker, the
//! lists and perhaps benchpipe's policy-rc.d: the next install finds them under the
//! same lock, finishes what dpkg left half-done (`dpkg --configure -a`, daemons still
//! kept from starting), takes back what it enabled and removes the policy file. The
//! script prints what it did, one `KIND<TAB>NAME` line each, for the board's record
//! (`store::Install`).

use crate::transport::quote;

/// The file `invoke-rc.d` and `deb-systemd-invoke` ask whether a daemon may start.
pub const POLICY: &str = "/usr/sbin/policy-rc.d";
/// benchpipe's state on the side: the lock, the lists and the marker (root's, 0700).
pub const STATE: &str = "/var/lib/benchpipe/provision";
/// The line that marks a policy-rc.d as benchpipe's.
pub const MARK: &str =
    "# benchpipe: no daemon starts while benchpipe installs packages; it removes this file";

/// The whole install, for `sh` as root (with no package: only an unfinished install
/// taken back). Exit status: apt-get's, or 3 when refused (stderr says why).
pub fn apt_script(packages: &[&str]) -> String {
    apt_script_with(packages, "")
}

/// `apt_script` whose apt-get takes `apt_options` too: shell words benchpipe wrote
/// (`non_free`'s private lists), never a value from a file.
pub fn apt_script_with(packages: &[&str], apt_options: &str) -> String {
    format!(
        r#"set -u
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
p={policy}; s={state}; mark={mark}
refuse() {{ echo "provision: $*" >&2; exit 3; }}
# benchpipe's state: root's alone, reached through no link.
for dir in "${{s%/*}}" "$s"; do
  [ ! -L "$dir" ] || refuse "$dir is a symbolic link"
  [ -d "$dir" ] || mkdir -m 0700 -- "$dir" || refuse "cannot create $dir"
  set -- $(ls -ldn -- "$dir")
  [ "$3" = 0 ] || refuse "$dir is owned by uid $3, not by root"
  case $1 in d????-??-?*) ;; *) refuse "$dir is writable by others (mode $1)" ;; esac
done
exec 9>>"$s/lock" || refuse "cannot open $s/lock"
flock -w 900 9 || refuse "another install held $s/lock for 15 minutes"
enabled() {{
  find /etc/systemd/system -mindepth 2 -maxdepth 2 -type l \( -path '*.wants/*' -o -path '*.requires/*' \) 2>/dev/null
  for l in /etc/rc[S2345].d/S*; do [ ! -L "$l" ] || echo "$l"; done
  return 0
}}
installed() {{ dpkg-query -W -f='${{db:Status-Abbrev}} ${{Package}}\n' 2>/dev/null | awk '$1 == "ii" {{ print $2 }}' | sort -u; }}
# Units enabled since the lists were written, disabled again; the packages added.
take_back() {{
  enabled | sort -u > "$s/enabled-after"
  sort -u "$s/enabled-before" | comm -13 - "$s/enabled-after" | while IFS= read -r link; do
    name=${{link##*/}}
    case $link in
      /etc/rc*)
        n=${{name#S[0-9][0-9]}}
        update-rc.d "$n" disable >/dev/null 2>&1 || true
        [ ! -L "$link" ] || rm -f -- "$link"
        printf '%sdisabled\tinit.d/%s\n' "$1" "$n" ;;
      *)
        deb-systemd-helper disable "$name" >/dev/null 2>&1 || systemctl disable "$name" >/dev/null 2>&1 || true
        [ ! -L "$link" ] || rm -f -- "$link"
        printf '%sdisabled\t%s\n' "$1" "$name" ;;
    esac
  done
  installed | comm -13 "$s/installed-before" - | while IFS= read -r pkg; do
    printf '%sinstalled\t%s\n' "$1" "$pkg"
  done
}}
ours() {{ [ -f "$p" ] && [ ! -L "$p" ] && grep -qxF -- "$mark" "$p"; }}
own=
if ours; then
  own=1
elif [ -e "$p" ] || [ -L "$p" ]; then
  [ -f "$p" ] && [ ! -L "$p" ] && [ -x "$p" ] || refuse "$p is not benchpipe's and not an executable file; benchpipe never replaces it: remove it, or make it a script that exits 101"
  rc=0; "$p" benchpipe-check start </dev/null >/dev/null 2>&1 9>&- || rc=$?
  [ "$rc" = 101 ] || refuse "$p is not benchpipe's and lets daemons start (it answers $rc to a start, not 101); benchpipe never replaces it: make it exit 101 while packages are installed, or remove it"
else
  (set -C; umask 022; printf '#!/bin/sh\n%s\nexit 101\n' "$mark" > "$p") && chmod 0755 "$p" || refuse "cannot write $p"
  own=1
fi
if [ -n "$own" ]; then echo "policy	benchpipe"; else echo "policy	kept"; fi
# An install an earlier apply left unfinished: finished, then taken back.
if [ -f "$s/in-progress" ] && [ -f "$s/enabled-before" ] && [ -f "$s/installed-before" ]; then
  dpkg --configure -a >/dev/null 2>&1 9>&- || echo "provision: dpkg --configure -a failed after an interrupted install" >&2
  take_back recovered-
fi
rm -f -- "$s/in-progress"
enabled | sort -u > "$s/enabled-before" && installed > "$s/installed-before" && : > "$s/in-progress" || refuse "cannot write to $s"
rc=0
# The lock stays with this shell: a daemon that started anyway must not hold it. No
# pty for dpkg, which would put it and the maintainer scripts in a session of their
# own, out of reach of the end of benchpipe's command.
if [ -n {packages_word} ]; then
  apt-get -o DPkg::Lock::Timeout=600 -o DPkg::Use-Pty=false {apt_options} install -y -q --no-install-recommends -- {packages} >/dev/null 9>&- || rc=$?
fi
take_back ""
# The policy first, the marker last: a policy-rc.d of benchpipe's is never left
# without the marker that makes the next install take it back.
[ -z "$own" ] || rm -f -- "$p" || refuse "cannot remove $p"
rm -f -- "$s/enabled-before" "$s/enabled-after" "$s/installed-before" "$s/in-progress"
exit $rc
"#,
        policy = quote::sh(POLICY),
        state = quote::sh(STATE),
        mark = quote::sh(MARK),
        packages = quote::join(packages),
        packages_word = quote::sh(&packages.join(" ")),
    )
}

/// What the script reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// `benchpipe` or `kept`; empty when the script stopped before choosing.
    pub policy: String,
    pub packages: Vec<String>,
    pub disabled: Vec<String>,
    pub recovered_packages: Vec<String>,
    pub recovered_disabled: Vec<String>,
}

/// Reads the script's stdout: its `KIND<TAB>NAME` lines, each name a plain package or
/// unit name (anything else is not the script's and is left out), at most
/// `store::installed::MAX_NAMES` per list.
pub fn parse(stdout: &str) -> Report {
    let mut r = Report::default();
    let plain = |n: &str| {
        !n.is_empty()
            && n.len() <= 256
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.+:@/\\".contains(&b))
    };
    for line in stdout.lines() {
        let Some((kind, name)) = line.split_once('\t') else {
            continue;
        };
        if !plain(name) {
            continue;
        }
        let list = match kind {
            "policy" if matches!(name, "benchpipe" | "kept") => {
                r.policy = name.to_string();
                continue;
            }
            "installed" => &mut r.packages,
            "disabled" => &mut r.disabled,
            "recovered-installed" => &mut r.recovered_packages,
            "recovered-disabled" => &mut r.recovered_disabled,
            _ => continue,
        };
        if list.len() < crate::store::MAX_NAMES && !list.iter().any(|n| n == name) {
            list.push(name.to_string());
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Transport;
    use crate::transport::local::Local;

    #[test]
    fn the_script_is_valid_sh_and_quotes_the_packages() {
        let script = apt_script(&["nginx", "$(reboot)"]);
        assert!(script.contains("-- nginx '$(reboot)'"), "{script}");
        let out = Local
            .run(&format!("sh -n -c {}", quote::sh(&script)), None)
            .unwrap();
        assert!(out.exit.success(), "{}", out.stderr_str());
    }

    #[test]
    fn its_report_is_read_and_nothing_else() {
        let r = parse(
            "policy\tbenchpipe\ninstalled\tnginx\ninstalled\tnginx-common\n\
             disabled\tnginx.service\ndisabled\tnginx.service\ndisabled\tinit.d/nginx\n\
             recovered-installed\tbp-test\nrecovered-disabled\tbp-test.service\n\
             installed\tevil name\ninstalled\t\u{1b}[31m\nnoise from apt\nother\tx\n",
        );
        assert_eq!(r.policy, "benchpipe");
        assert_eq!(r.packages, ["nginx", "nginx-common"]);
        assert_eq!(r.disabled, ["nginx.service", "init.d/nginx"]);
        assert_eq!(r.recovered_packages, ["bp-test"]);
        assert_eq!(r.recovered_disabled, ["bp-test.service"]);
    }
}
