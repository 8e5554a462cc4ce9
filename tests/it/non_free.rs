//! Integration tests: apt packages outside the distribution's main component
//! (`[needs] apt_non_free`): the seeds' iozone, Debian's `iozone3` in non-free, on a
//! board whose apt sources have main only (a stock Debian image, as this machine is),
//! read from the board's own mirror through private lists, installed, recorded with the
//! cells and run; the board's /etc/apt left as it was. The board is the controller
//! itself (`local = true`), and benchpipe runs in a private mount namespace whose /usr,
//! /etc, /var/lib, /var/cache and /var/log are copy-on-write layers (overlayfs on a
//! tmpfs): apt and dpkg are real, and what they do vanishes with the namespace. There
//! the board is made a stock Debian (main alone in its sources, no iozone3), whatever
//! this machine has (`.ci/run` installs iozone3 for the lab tests); this machine's own
//! packages never change, whether the test passes, fails or panics.

use std::path::Path;
use std::process::{Command, Output};

use crate::lab::{sh, text};
use crate::scratch::{Project, Scratch};

const NAME: &str = "iozone3_comes_from_non_free_on_a_board_whose_sources_have_main_only";

/// The test's directories, removed when dropped, on a panic too: the workspace, and
/// on this machine's disk (/var/tmp: O_DIRECT needs no tmpfs) the board's work and
/// scratch directories and the namespace's layers.
struct Dirs {
    root: Project,
    _work: Scratch,
    layers: Scratch,
}

/// A workspace with the shipped iozone recipe, a local board and a scenario running
/// iozone once on a directory of this machine's disk (O_DIRECT needs no tmpfs).
fn workspace() -> Dirs {
    let var_tmp = Path::new("/var/tmp");
    let work = Scratch::under(var_tmp, "nonfree");
    let root = Project::new("nonfree")
        .recipe("iozone")
        .file(
            "boards/here.toml",
            &format!(
                "model = \"The controller\"\nlocal = true\nworkdir = \"{w}/work\"\n\
                 [[storage]]\nname = \"scratch-dir\"\nrole = \"scratch\"\npath = \"{w}/scratch\"\n",
                w = work.display()
            ),
        )
        .scenario(
            "s",
            "title = \"iozone\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"here\"]\nstorage = [\"scratch-dir\"]\n\
             filesystem = [\"as-is\"]\ntest = [\"iozone\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = { runs = 0 }\nruns = { min = 1, max = 1 }\n\
             [params.iozone]\nsize = \"4M\"\n",
        );
    Dirs {
        root,
        _work: work,
        layers: Scratch::under(var_tmp, "nonfree-layers"),
    }
}

/// Runs `script` as root in a private mount namespace whose system directories are
/// overlayfs layers on a tmpfs at `layers` (the namespace, and all it did, ends with it).
fn in_private_system(layers: &Path, script: &str) -> Output {
    std::fs::create_dir_all(layers).unwrap();
    let mut s = format!(
        "set -e\nmount -t tmpfs -o size=2g,mode=0700 benchpipe-it-layers {}\n",
        layers.display()
    );
    for dir in ["/usr", "/etc", "/var/lib", "/var/cache", "/var/log"] {
        let l = layers.join(dir.trim_start_matches('/').replace('/', "-"));
        s.push_str(&format!(
            "mkdir -p {u} {w}\nmount -t overlay overlay -o lowerdir={dir},upperdir={u},workdir={w} {dir}\n",
            u = l.join("upper").display(),
            w = l.join("work").display()
        ));
    }
    s.push_str("set +e\n");
    s.push_str(script);
    Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "sh", "-c", &s])
        .output()
        .unwrap()
}

fn iozone_on_this_machine() -> bool {
    sh("command -v iozone || true").trim().starts_with('/')
}

/// A freshly flashed Debian has no iozone, and its sources no non-free: benchpipe reads
/// non-free from the board's own mirror and release for iozone3 alone (private lists in
/// a directory of its own, removed after), installs it, runs the seed's iozone, and records
/// the package with its section; /etc/apt is byte for byte what it was.
#[test]
fn iozone3_comes_from_non_free_on_a_board_whose_sources_have_main_only() {
    let before = iozone_on_this_machine();
    let dirs = workspace();
    // In the namespace: a stock Debian board (main alone in its sources, no iozone3),
    // benchpipe's apply, and what it left.
    let script = format!(
        "export DEBIAN_FRONTEND=noninteractive\n\
         . /etc/os-release\n\
         dpkg --purge iozone3 >/dev/null 2>&1\n\
         rm -f /etc/apt/sources.list.d/*\n\
         echo \"deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $VERSION_CODENAME main\" > /etc/apt/sources.list\n\
         apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null 2>&1 || {{ echo 'MIRROR UNREACHABLE'; exit 0; }}\n\
         apt-cache show iozone3 >/dev/null 2>&1 && {{ echo 'NON-FREE LISTED'; exit 0; }}\n\
         command -v iozone >/dev/null && {{ echo 'IOZONE NOT FROM IOZONE3'; exit 0; }}\n\
         cp -a /etc/apt /tmp/benchpipe-it-etc-apt-before.$$\n\
         cd {root} && {bin} apply scenarios/s.toml 2>&1; echo \"APPLY EXIT $?\"\n\
         command -v iozone >/dev/null && echo 'IOZONE INSTALLED'\n\
         diff -r /tmp/benchpipe-it-etc-apt-before.$$ /etc/apt && echo 'ETC APT AS IT WAS'\n\
         rm -rf /tmp/benchpipe-it-etc-apt-before.$$\n\
         ls -d /tmp/benchpipe-apt-non-free.* 2>/dev/null && echo 'PRIVATE LISTS LEFT'\n\
         exit 0\n",
        root = benchpipe::transport::quote::sh(&dirs.root.dir.to_string_lossy()),
        bin = benchpipe::transport::quote::sh(env!("CARGO_BIN_EXE_benchpipe")),
    );
    let out = in_private_system(&dirs.layers, &script);
    let said = text(&out);
    // Whatever happened inside, this machine is as it was.
    assert_eq!(
        iozone_on_this_machine(),
        before,
        "iozone changed outside the namespace"
    );
    // The test must run: a machine without the mirror fails it.
    assert!(
        !said.contains("MIRROR UNREACHABLE"),
        "TEST COULD NOT RUN: {NAME}: Debian's mirror is unreachable from this machine: {said}"
    );
    assert!(
        !said.contains("NON-FREE LISTED"),
        "TEST COULD NOT RUN: {NAME}: a board with main alone in its sources lists iozone3: the path for sources without non-free is not taken"
    );
    assert!(
        !said.contains("IOZONE NOT FROM IOZONE3"),
        "TEST COULD NOT RUN: {NAME}: an iozone that no package installed is on this machine: {said}"
    );
    assert!(
        out.status.success() && said.contains("APPLY EXIT 0"),
        "{said}"
    );
    assert!(said.contains("IOZONE INSTALLED"), "{said}");
    let mut measured = 0;
    let mut facts = String::new();
    for e in std::fs::read_dir(dirs.root.dir.join("results"))
        .unwrap()
        .flatten()
    {
        let samples = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for l in samples.lines() {
            let s: serde_json::Value = serde_json::from_str(l).unwrap();
            let v = s["metrics"]["random_read"].as_f64().unwrap();
            assert!(v.is_finite() && v > 0.0, "{s}");
            measured += 1;
        }
        facts.push_str(&std::fs::read_to_string(e.path().join("facts.json")).unwrap_or_default());
    }
    assert_eq!(measured, 1, "{said}");
    // The tool fact says which package and from where; the package's version beside it.
    assert!(facts.contains("(non-free/utils)"), "{facts}");
    assert!(facts.contains("\"iozone3\""), "{facts}");
    assert!(facts.contains("Version $Revision: 3."), "{facts}");
    assert!(said.contains("ETC APT AS IT WAS"), "{said}");
    assert!(
        !said.contains("PRIVATE LISTS LEFT"),
        "the private lists are removed: {said}"
    );
}
