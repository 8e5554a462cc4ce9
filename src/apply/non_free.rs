//! apt packages outside the distribution's main component (`[needs] apt_non_free`:
//! iozone3 is Debian's and Raspberry Pi OS's `non-free`, Ubuntu's `multiverse`), where
//! the side's apt sources lack that component: read from the side's own mirrors and
//! releases with it, in private lists in a directory of benchpipe's own, and installed
//! from there. `/etc/apt` is never changed, and the private lists are removed after.

use crate::transport::quote;
use std::collections::BTreeMap;

/// The component that holds non-free software on a distribution, by its os-release:
/// Ubuntu's (and its derivatives') `multiverse`, else Debian's `non-free` (Raspberry Pi
/// OS and Armbian are Debian's here).
pub(super) fn component(os_release: &BTreeMap<String, String>) -> &'static str {
    let id = os_release.get("ID").map(String::as_str).unwrap_or_default();
    let like = os_release
        .get("ID_LIKE")
        .map(String::as_str)
        .unwrap_or_default();
    if std::iter::once(id)
        .chain(like.split_whitespace())
        .any(|i| i.eq_ignore_ascii_case("ubuntu"))
    {
        "multiverse"
    } else {
        "non-free"
    }
}

/// The apt sources that carry `main`, as `URI SUITE SIGNED-BY` lines (SIGNED-BY `-`
/// when the source names no key file): from sources.list and sources.list.d's one-line
/// `.list` files and deb822 `.sources` files, each read up to 1 MiB. An inline key
/// (deb822 `Signed-By:` holding a key block) is left to the system's keyrings.
const MAIN_SOURCES: &str = r#"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [ -f "$f" ] && head -c 1048576 "$f" && echo
done | awk '
  { sub(/#.*/, "") }
  $1 != "deb" { next }
  {
    i = 2; sb = "-"
    if ($2 ~ /^\[/) {
      while (i <= NF) {
        o = $i; gsub(/\[/, "", o); gsub(/\]/, "", o)
        if (o ~ /^signed-by=/) sb = substr(o, 11)
        if ($i ~ /\]$/) { i++; break }
        i++
      }
    }
    for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i, $(i + 1), sb; break }
  }'
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && head -c 1048576 "$f" && printf '\n\n'
done | awk '
  function flush(   n, m, u, s, a, b, k) {
    if (types ~ /(^| )deb( |$)/ && comps ~ /(^| )main( |$)/ && enabled !~ /^[Nn]o$/) {
      n = split(uris, a, " "); m = split(suites, b, " ")
      for (u = 1; u <= n; u++) for (s = 1; s <= m; s++) print a[u], b[s], (sb == "" ? "-" : sb)
    }
    types = ""; uris = ""; suites = ""; comps = ""; sb = ""; enabled = ""
  }
  /^[ \t]*#/ { next }
  /^[ \t]*$/ { flush(); next }
  /^[ \t]/ { next }
  {
    k = tolower(substr($0, 1, index($0, ":"))); v = $0; sub(/^[^:]*:[ \t]*/, "", v); gsub(/[ \t]+/, " ", v)
    if (k == "types:") types = v
    else if (k == "uris:") uris = v
    else if (k == "suites:") suites = v
    else if (k == "components:") comps = v
    else if (k == "enabled:") enabled = v
    else if (k == "signed-by:") sb = (v ~ /^\// ? v : "")
  }
  END { flush() }'
"#;

// The private lists live in a fresh 0700 directory, which apt's `_apt` user cannot
// enter: their download runs as root (`APT::Sandbox::User`) rather than after a
// warning; the InRelease signatures are checked as ever. No package cache is written
// (`pkgcache`), so the system's apt sees nothing of these lists. They hold main beside
// the component, so that a dependency from main resolves too.

/// The script that installs `packages` (apt names, checked at `check`) from the side's
/// mirrors with its non-free `component`, through private lists in a directory it
/// makes and removes: `quiet_install`'s script (daemons kept from starting, what it
/// installed reported on stdout), with the lists' options. Run as root.
pub(super) fn install_script(component: &str, packages: &[&str]) -> String {
    let options = "-o Dir::Etc::SourceList=\"$bp_d/sources.list\" \
        -o Dir::Etc::SourceParts=\"$bp_d/parts\" -o Dir::State::Lists=\"$bp_d/lists\" \
        -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root";
    format!(
        r#"export DEBIAN_FRONTEND=noninteractive
bp_c={c}
bp_d=$(mktemp -d /tmp/benchpipe-apt-non-free.XXXXXX) || exit 1
trap 'rm -rf -- "$bp_d"' EXIT
mkdir -p "$bp_d/lists/partial" "$bp_d/parts" || exit 1
{{ {MAIN_SOURCES}
}} | awk -v c="$bp_c" 'NF == 3 && !seen[$1 " " $2]++ {{
  if ($3 == "-") print "deb", $1, $2, "main", c; else print "deb [signed-by=" $3 "]", $1, $2, "main", c
}}' > "$bp_d/sources.list"
if ! [ -s "$bp_d/sources.list" ]; then
  echo "no apt source with the main component to read $bp_c from" >&2; exit 1
fi
apt-get -o DPkg::Lock::Timeout=600 {options} update -q >&2 || exit 1
( {install} )
"#,
        c = quote::sh(component),
        install = super::quiet_install::apt_script_with(packages, options),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::expect::parse_os_release;

    #[test]
    fn ubuntu_and_its_derivatives_read_multiverse_and_the_rest_non_free() {
        for (text, want) in [
            ("ID=ubuntu\n", "multiverse"),
            ("ID=pop\nID_LIKE=\"ubuntu debian\"\n", "multiverse"),
            ("ID=debian\n", "non-free"),
            ("ID=raspbian\nID_LIKE=debian\n", "non-free"),
            ("ID=armbian\nID_LIKE=debian\n", "non-free"),
            ("", "non-free"),
        ] {
            assert_eq!(component(&parse_os_release(text)), want, "{text}");
        }
    }

    /// The sources scan on real files: Raspbian's one-line list with options, Debian
    /// 12's deb822 with a key file, an inline key and a disabled entry, and comments.
    #[test]
    fn the_main_sources_are_read_from_one_line_and_deb822_files() {
        let root = std::env::temp_dir().join(format!("bp-non-free-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let etc = root.join("etc/apt/sources.list.d");
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(
            root.join("etc/apt/sources.list"),
            "# deb http://old.example/ stretch main\n\
             deb [arch=armhf signed-by=/usr/share/keyrings/raspbian.gpg] http://raspbian.raspberrypi.org/raspbian/ buster main contrib rpi\n\
             deb-src http://raspbian.raspberrypi.org/raspbian/ buster main\n\
             deb http://archive.raspberrypi.org/debian/ buster ui\n",
        )
        .unwrap();
        std::fs::write(
            etc.join("debian.sources"),
            "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n\
             Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n\
             Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n\
             Components: main\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n abc\n\n\
             Types: deb\nURIs: http://off.example/\nSuites: x\nComponents: main\nEnabled: no\n",
        )
        .unwrap();
        let script = MAIN_SOURCES.replace("/etc/apt", &format!("{}/etc/apt", root.display()));
        let out = crate::transport::Transport::run(
            &mut crate::transport::local::Local::new(),
            &script,
            Some(std::time::Duration::from_secs(60)),
        )
        .unwrap();
        assert!(out.exit.success(), "{out:?}");
        let got = out.stdout_str();
        assert_eq!(
            got,
            "http://raspbian.raspberrypi.org/raspbian/ buster /usr/share/keyrings/raspbian.gpg\n\
             http://deb.debian.org/debian bookworm /usr/share/keyrings/debian-archive-keyring.gpg\n\
             http://deb.debian.org/debian bookworm-updates /usr/share/keyrings/debian-archive-keyring.gpg\n\
             http://deb.debian.org/debian-security bookworm-security -\n"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
