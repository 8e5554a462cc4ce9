//! Integration tests: provisioning with real apt and dpkg on a lab board keeps a
//! package's daemon from starting and takes back the units its install enabled.
//!
//! The package is built here with dpkg-deb: its maintainer scripts do what a real
//! daemon's do (`deb-systemd-helper enable` of its unit, `update-rc.d defaults` and
//! `invoke-rc.d start` of its init script, which starts a small TCP listener in a
//! session of its own), served from a local apt repository (a `file:` source). The
//! board's /usr, /etc, /var/lib, /var/cache and /var/log are copy-on-write layers
//! (overlayfs) in its own mount namespace, whose sources list names only that
//! repository: apt, dpkg and the maintainer scripts are real and run through the real
//! provision step, and this machine's own package database and files are never
//! touched. One stand-in: a namespace has no init, so `runlevel` (which invoke-rc.d
//! asks before it starts anything) answers `N 2` there, as on a booted sysvinit board;
//! without it invoke-rc.d would start no daemon whatever the policy.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use benchpipe::lab::LabBoard;
use serde_json::Value;

use crate::lab::{Lab, bp, text};

const PACKAGE: &str = "benchpipe-test-daemon";
/// The port its daemon listens on.
const PORT: u16 = 47913;
/// What its listener calls itself in the process table.
const LISTENER: &str = "benchpipe-test-daemon-listening";

/// A command in the board's mount namespace (its sshd's), as root; its stdout.
fn in_board(board: &LabBoard, script: &str) -> String {
    let pid = std::fs::read_to_string(&board.sshd_pid_file).unwrap();
    let out = Command::new("nsenter")
        .args(["-t", pid.trim(), "-m", "--", "sh", "-c", script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`{script}` on the board: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn sh(dir: &Path, script: &str) {
    let out = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`{script}`: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the package and a repository of it under `root`; its postinst waits while
/// `root/block` exists, having written `root/reached`, after enabling its unit and its
/// init script and before starting the daemon. Returns the repository's directory.
fn build_repository(root: &Path) -> PathBuf {
    let pkg = root.join("deb/pkg");
    let write = |rel: &str, text: &str, mode: u32| {
        use std::os::unix::fs::PermissionsExt;
        let p = pkg.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    write(
        "DEBIAN/control",
        &format!(
            "Package: {PACKAGE}\nVersion: 1.0\nArchitecture: all\nMaintainer: benchpipe tests <t@example.invalid>\n\
             Depends: perl-base, init-system-helpers\nDescription: a daemon package for benchpipe's tests\n"
        ),
        0o644,
    );
    write(
        &format!("usr/bin/{PACKAGE}"),
        &format!(
            "#!/bin/sh\n[ \"${{1:-}}\" = --version ] && {{ echo '{{\"version\": 1}}'; exit 0; }}\n\
             exec perl -MIO::Socket::INET -e '$0 = \"{LISTENER}\"; my $s = IO::Socket::INET->new(LocalPort => {PORT}, Listen => 5, ReuseAddr => 1) or die; sleep 1 while 1'\n"
        ),
        0o755,
    );
    write(
        &format!("etc/init.d/{PACKAGE}"),
        &format!(
            "#!/bin/sh\n### BEGIN INIT INFO\n# Provides: {PACKAGE}\n# Required-Start: $remote_fs\n\
             # Required-Stop: $remote_fs\n# Default-Start: 2 3 4 5\n# Default-Stop: 0 1 6\n\
             # Short-Description: a test daemon\n### END INIT INFO\n\
             case \"$1\" in\n  start) setsid /usr/bin/{PACKAGE} </dev/null >/dev/null 2>&1 & ;;\n  \
             stop|restart|force-reload|status) ;;\nesac\nexit 0\n"
        ),
        0o755,
    );
    write(
        &format!("lib/systemd/system/{PACKAGE}.service"),
        &format!(
            "[Unit]\nDescription=a test daemon\n[Service]\nExecStart=/usr/bin/{PACKAGE}\n\
             [Install]\nWantedBy=multi-user.target\n"
        ),
        0o644,
    );
    // debhelper's snippets, as a real daemon package has them.
    write(
        "DEBIAN/postinst",
        &format!(
            "#!/bin/sh\nset -e\nif [ \"$1\" = configure ]; then\n\
             deb-systemd-helper unmask '{PACKAGE}.service' >/dev/null || true\n\
             if deb-systemd-helper --quiet was-enabled '{PACKAGE}.service'; then\n\
               deb-systemd-helper enable '{PACKAGE}.service' >/dev/null || true\n\
             else\n  deb-systemd-helper update-state '{PACKAGE}.service' >/dev/null || true\nfi\n\
             update-rc.d {PACKAGE} defaults >/dev/null\n\
             if [ -e '{block}' ]; then : > '{reached}'; while [ -e '{block}' ]; do sleep 0.2; done; fi\n\
             invoke-rc.d {PACKAGE} start || exit 1\nfi\nexit 0\n",
            block = root.join("block").display(),
            reached = root.join("reached").display(),
        ),
        0o755,
    );
    write(
        "DEBIAN/postrm",
        &format!(
            "#!/bin/sh\nset -e\nif [ \"$1\" = purge ]; then update-rc.d {PACKAGE} remove >/dev/null || true; \
             deb-systemd-helper purge '{PACKAGE}.service' >/dev/null || true; fi\nexit 0\n"
        ),
        0o755,
    );
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    sh(
        root,
        &format!(
            "dpkg-deb --root-owner-group --build deb/pkg repo/{PACKAGE}_1.0_all.deb >/dev/null"
        ),
    );
    sh(
        &repo,
        "dpkg-scanpackages --multiversion . > Packages 2>/dev/null",
    );
    repo
}

/// The board's /usr, /etc, /var/lib, /var/cache and /var/log become copy-on-write
/// layers in its mount namespace, its apt sources the repository alone, and its
/// /usr/sbin/policy-rc.d `policy` (none when `None`).
fn sandbox(board: &LabBoard, root: &Path, repo: &Path, policy: Option<&str>) {
    let layers = root.join("layers");
    let mut script = String::from("set -e\n");
    for dir in ["/usr", "/etc", "/var/lib", "/var/cache", "/var/log"] {
        let l = layers.join(dir.trim_start_matches('/').replace('/', "-"));
        std::fs::create_dir_all(l.join("upper")).unwrap();
        std::fs::create_dir_all(l.join("work")).unwrap();
        let _ = writeln!(
            script,
            "mount -t overlay overlay -o lowerdir={dir},upperdir={u},workdir={w} {dir}",
            u = l.join("upper").display(),
            w = l.join("work").display()
        );
    }
    let _ = write!(
        script,
        "rm -f /etc/apt/sources.list.d/* /etc/apt/sources.list\n\
         echo 'deb [trusted=yes] file:{} ./' > /etc/apt/sources.list\n\
         rm -rf /var/lib/apt/lists/* /var/lib/benchpipe /usr/sbin/policy-rc.d\n\
         rm -f /usr/sbin/runlevel && printf '#!/bin/sh\\necho N 2\\n' > /usr/sbin/runlevel && chmod 0755 /usr/sbin/runlevel\n",
        repo.display()
    );
    if let Some(text) = policy {
        let _ = write!(
            script,
            "cat > /usr/sbin/policy-rc.d <<'EOF'\n{text}EOF\nchmod 0755 /usr/sbin/policy-rc.d\n"
        );
    }
    in_board(board, &script);
    // The premise: the board has neither the package nor its command yet.
    assert_eq!(
        in_board(board, &format!("command -v {PACKAGE} || true")),
        "",
        "{PACKAGE} is there already"
    );
}

/// A workspace whose one recipe needs the package's command on the board.
fn workspace(lab: &Lab) {
    lab.project()
        .file(
            "pipeline/daemon.toml",
            &format!(
                "description = \"needs a package whose install starts and enables a daemon\"\n\
             uses_storage = false\n[needs]\napt = [\"{PACKAGE}\"]\ncommands = [\"{PACKAGE}\"]\n\
             [run]\ncommand = \"{PACKAGE} --version\"\nparse = \"json\"\n\
             [metrics]\nversion = {{ from = \"version\", unit = \"s\", better = \"lower\" }}\n"
            ),
        )
        .scenario(
            "s",
            &format!(
                "title = \"quiet installs\"\n[images.installed]\ninstalled = true\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"daemon\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n",
                lab.board(0).name
            ),
        );
}

/// Whether anything listens on the daemon's port in the board's network namespace.
fn listening(board: &LabBoard) -> bool {
    let pid = std::fs::read_to_string(&board.sshd_pid_file).unwrap();
    let port = format!(":{PORT:04X} ");
    ["tcp", "tcp6"].iter().any(|t| {
        std::fs::read_to_string(format!("/proc/{}/net/{t}", pid.trim()))
            .unwrap_or_default()
            .lines()
            .any(|l| l.contains(&port) && l.split_whitespace().nth(3) == Some("0A"))
    })
}

/// The units and init-script links enabled on the board that name the package.
fn enabled(board: &LabBoard) -> String {
    in_board(
        board,
        &format!(
            "find /etc/systemd/system /etc/rc2.d /etc/rc3.d /etc/rc4.d /etc/rc5.d -name '*{PACKAGE}*' \
             \\( -path '*.wants/*' -o -name 'S*' \\) 2>/dev/null; true"
        ),
    )
}

/// After a provision, nothing of the package runs or is enabled, no file benchpipe
/// kept during the install is left, and the package is installed.
fn assert_quiet(board: &LabBoard) {
    assert!(
        !listening(board),
        "a new listener on port {PORT}: {}",
        crate::processes_matching(&[LISTENER])
    );
    assert_eq!(
        crate::processes_matching(&[LISTENER]),
        "",
        "the daemon runs"
    );
    assert_eq!(enabled(board), "", "left enabled");
    assert_eq!(
        in_board(
            board,
            &format!("dpkg-query -W -f='${{db:Status-Abbrev}}' {PACKAGE}")
        )
        .trim(),
        "ii"
    );
    assert_eq!(
        in_board(
            board,
            "ls /var/lib/benchpipe/provision/in-progress /var/lib/benchpipe/provision/enabled-before 2>/dev/null; true"
        ),
        ""
    );
    // This machine's own package database never saw it.
    let host = Command::new("dpkg-query")
        .args(["-W", PACKAGE])
        .output()
        .unwrap();
    assert!(
        !host.status.success(),
        "{PACKAGE} reached this machine's dpkg"
    );
}

/// The board's record of what provisioning installed there.
fn record(lab: &Lab) -> Value {
    let p = lab
        .root
        .join("results/boards")
        .join(format!("{}.installed.json", lab.board(0).name));
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap()
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn lab_with_package() -> Option<(Lab, PathBuf)> {
    let lab = Lab::up(1)?;
    let repo = build_repository(&lab.root);
    workspace(&lab);
    Some((lab, repo))
}

/// A board with no policy-rc.d (a plain Debian system): the package installs through
/// the real provision step, its postinst's `invoke-rc.d start` is refused by the
/// policy-rc.d benchpipe writes (so no daemon, no new listener), the unit and init
/// script its install enabled are disabled again, benchpipe's policy-rc.d is gone,
/// and the board's record names the package, the units and benchpipe's policy.
#[test]
fn an_apt_install_starts_no_daemon_and_leaves_no_unit_enabled_and_is_recorded() {
    let Some((lab, repo)) = lab_with_package() else {
        return;
    };
    let board = lab.board(0).clone();
    sandbox(&board, &lab.root, &repo, None);
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_quiet(&board);
    assert_eq!(
        in_board(&board, "ls /usr/sbin/policy-rc.d 2>/dev/null; true"),
        "",
        "benchpipe's policy-rc.d was left"
    );
    let r = record(&lab);
    let install = &r["installs"][0];
    assert_eq!(install["side"], board.name.as_str(), "{r}");
    assert_eq!(install["manager"], "apt", "{r}");
    assert_eq!(install["policy"], "benchpipe", "{r}");
    assert!(
        install["session"].as_str().is_some_and(|s| !s.is_empty()),
        "{r}"
    );
    assert!(
        names(&install["packages"]).contains(&PACKAGE.to_string()),
        "{r}"
    );
    let disabled = names(&install["disabled"]);
    for unit in [format!("{PACKAGE}.service"), format!("init.d/{PACKAGE}")] {
        assert!(disabled.contains(&unit), "{unit}: {r}");
    }
}

/// The board's own policy-rc.d: one that forbids starts (as Docker's images have) is
/// kept, byte for byte, and used; one that lets daemons start is refused, never
/// replaced: the recipe fails with the reason and nothing is installed.
#[test]
fn a_policy_rc_d_of_the_boards_own_is_kept_when_it_forbids_starts_and_refused_when_not() {
    let Some((lab, repo)) = lab_with_package() else {
        return;
    };
    let board = lab.board(0).clone();
    let theirs = "#!/bin/sh\n# the board's own\nexit 101\n";
    sandbox(&board, &lab.root, &repo, Some(theirs));
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_quiet(&board);
    assert_eq!(in_board(&board, "cat /usr/sbin/policy-rc.d"), theirs);
    assert_eq!(record(&lab)["installs"][0]["policy"], "kept");
    // A fresh board whose policy-rc.d lets daemons start.
    in_board(&board, "umount -l /usr /etc /var/lib /var/cache /var/log");
    std::fs::remove_dir_all(lab.root.join("layers")).unwrap();
    std::fs::remove_dir_all(lab.root.join("results")).unwrap();
    let allows = "#!/bin/sh\nexit 0\n";
    sandbox(&board, &lab.root, &repo, Some(allows));
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("is not benchpipe's and lets daemons start"),
        "{t}"
    );
    assert_eq!(in_board(&board, "cat /usr/sbin/policy-rc.d"), allows);
    assert_eq!(
        in_board(&board, &format!("command -v {PACKAGE} || true")),
        "",
        "installed under a policy that lets it start"
    );
    assert!(!listening(&board));
}

/// An install killed in the middle (benchpipe SIGKILLed while the package's postinst
/// runs, having enabled its unit and init script): benchpipe's policy-rc.d and its
/// marker are left, dpkg has the package half-configured. The next apply finishes the
/// install with daemons still kept from starting, disables what it enabled, removes
/// the policy-rc.d, and records what it took back.
#[test]
fn an_interrupted_install_is_finished_and_taken_back_by_the_next_apply() {
    let Some((lab, repo)) = lab_with_package() else {
        return;
    };
    let board = lab.board(0).clone();
    sandbox(&board, &lab.root, &repo, None);
    std::fs::write(lab.root.join("block"), "").unwrap();
    let mut apply = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(&lab.root)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !lab.root.join("reached").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(600),
            "the postinst never ran"
        );
        assert!(apply.try_wait().unwrap().is_none(), "apply ended first");
        std::thread::sleep(Duration::from_millis(100));
    }
    apply.kill().unwrap();
    apply.wait().unwrap();
    // The install dies with benchpipe's session.
    let left = crate::processes_left(&[&format!("{PACKAGE}.postinst")]);
    assert_eq!(left, "", "the postinst outlived benchpipe");
    std::fs::remove_file(lab.root.join("block")).unwrap();
    assert!(
        in_board(&board, "cat /usr/sbin/policy-rc.d").contains("benchpipe"),
        "the premise: the killed install left benchpipe's policy-rc.d"
    );
    assert_ne!(enabled(&board), "", "the premise: the unit was enabled");
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_quiet(&board);
    assert_eq!(
        in_board(&board, "ls /usr/sbin/policy-rc.d 2>/dev/null; true"),
        ""
    );
    let r = record(&lab);
    let installs = r["installs"].as_array().unwrap();
    let recovered: Vec<String> = installs
        .iter()
        .flat_map(|i| names(&i["recovered_disabled"]))
        .collect();
    assert!(recovered.contains(&format!("{PACKAGE}.service")), "{r}");
    let packages: Vec<String> = installs
        .iter()
        .flat_map(|i| names(&i["recovered_packages"]))
        .collect();
    assert!(packages.contains(&PACKAGE.to_string()), "{r}");
}
