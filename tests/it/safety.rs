//! Integration tests: safety of what benchpipe does as root on a board. It removes
//! files only in a workdir it claimed, reaches it only through directories nobody else
//! controls, signals only services it started, keeps no more output than a bound, and
//! leaves no process of a command behind, whatever the board user's login shell.

use crate::scratch::Scratch;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use benchpipe::transport::local::Local;
use benchpipe::transport::ssh::{ConnectOptions, SshTransport, login_shell_neutral};
use benchpipe::transport::{CAPTURE_LIMIT, Transport, workdir};

use crate::lab::{Lab, options};
use crate::spine::{Project, text};
use crate::{cannot_run, processes_matching};

/// A scratch directory others may enter (0755): the tests run commands as other users.
fn open_dir(tag: &str) -> Scratch {
    let d = Scratch::new(&format!("safety-{tag}"));
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A user's own things, as a home directory holds them.
fn plant_user_files(dir: &Path) {
    for (sub, file) in [("telemetry", "notes.txt"), ("xz", "thesis.tex")] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join(file), "mine\n").unwrap();
    }
}

fn user_files_intact(dir: &Path) -> bool {
    ["telemetry/notes.txt", "xz/thesis.tex"]
        .iter()
        .all(|f| std::fs::read_to_string(dir.join(f)).ok().as_deref() == Some("mine\n"))
}

fn chown(p: &Path, uid: u32) {
    std::os::unix::fs::lchown(p, Some(uid), None).unwrap();
}

const NOBODY: u32 = 65534;

/// A board whose workdir is a directory holding the user's `telemetry/` and `xz/`:
/// apply refuses it, and both survive (each run used to `rm -rf <workdir>/telemetry`,
/// and a recipe's teardown `<workdir>/xz`). A new workdir is claimed and works.
#[test]
fn a_workdir_holding_a_users_telemetry_and_xz_is_refused_and_they_survive() {
    let p = Project::local("safety-userdir");
    let user = p.dir.join("user");
    plant_user_files(&user);
    let scratch = p.dir.join("scratch");
    let board = |w: &Path| {
        format!(
            "model = \"test controller\"\nlocal = true\nworkdir = \"{w}\"\n\n\
             [[storage]]\nname = \"scratch\"\nrole = \"scratch\"\npath = \"{s}\"\n",
            w = w.display(),
            s = scratch.display()
        )
    };
    let p = p
        .file("boards/here.toml", &board(&user))
        .file(
            "pipeline/tidy.toml",
            r#"description = "works in the workdir and tidies up after itself"
uses_storage = false
[run]
command = "mkdir -p {{ workdir }}/xz && echo '{\"value\": 1}'"
parse = "json"
[metrics]
value = { from = "value", unit = "s", better = "lower" }
[[teardown]]
command = "rm -rf {{ workdir }}/xz"
"#,
        )
        .local_scenario("s", &["tidy"], 1, "");
    let out = p.bp(&["apply", "scenarios/s.toml"]);
    let t = text(&out);
    assert!(!out.status.success(), "{t}");
    assert!(t.contains("did not put there"), "{t}");
    assert!(
        user_files_intact(&user),
        "the user's files were touched\n{t}"
    );
    assert!(!user.join(workdir::MARKER).exists());

    let fresh = p.dir.join("fresh/work");
    let p = p.file("boards/here.toml", &board(&fresh));
    let out = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(fresh.join(workdir::MARKER).is_file());
    let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "a new workdir is the running user's alone");
    assert_eq!(
        p.samples("tidy").len(),
        2,
        "one warm-up and one measured run"
    );
}

/// `/`, a home directory (root's, from /etc/passwd and $HOME) and a directory with
/// someone's files are refused before anything is written; an empty one is claimed.
#[test]
fn the_claim_refuses_root_a_home_and_a_used_directory_and_claims_an_empty_one() {
    let d = open_dir("claim");
    let mut t = Local::new();
    for refused in ["/", "/root", "/root/"] {
        let e = workdir::claim(&mut t, refused).expect_err(refused);
        assert!(e.to_string().contains("refusing"), "{refused}: {e}");
    }
    assert!(!Path::new("/root").join(workdir::MARKER).exists());

    let used = d.join("used");
    plant_user_files(&used);
    let e = workdir::claim(&mut t, s(&used)).unwrap_err().to_string();
    assert!(
        e.contains("did not put there") && e.contains("telemetry"),
        "{e}"
    );
    assert!(user_files_intact(&used) && !used.join(workdir::MARKER).exists());

    let empty = d.join("empty");
    std::fs::create_dir(&empty).unwrap();
    workdir::claim(&mut t, s(&empty)).unwrap();
    assert!(empty.join(workdir::MARKER).is_file());
    // Claimed once, it stays benchpipe's with whatever benchpipe put in it.
    std::fs::create_dir(empty.join("telemetry")).unwrap();
    workdir::claim(&mut t, s(&empty)).unwrap();
}

/// The default workdirs live under a shared, world-writable directory
/// (`/var/tmp/benchpipe/NAME`). Here a root-owned sticky directory stands for
/// /var/tmp: a `benchpipe` planted in it as a symlink or a directory of another user,
/// or made group- or world-writable, is refused; one benchpipe creates is 0700.
#[test]
fn a_planted_symlink_or_foreign_owned_parent_is_refused() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return cannot_run(
            "safety::a_planted_symlink_or_foreign_owned_parent_is_refused",
            "planting another user's directory needs root (chown)",
        );
    }
    let d = open_dir("parents");
    let vartmp = d.join("vartmp");
    std::fs::create_dir(&vartmp).unwrap();
    std::fs::set_permissions(&vartmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let shared = vartmp.join("benchpipe");
    let work = shared.join("pi");
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let mut t = Local::new();

    // Another user's symlink to a directory of root's choosing.
    std::os::unix::fs::symlink(&elsewhere, &shared).unwrap();
    chown(&shared, NOBODY);
    let e = workdir::claim(&mut t, s(&work)).unwrap_err().to_string();
    assert!(e.contains("symbolic link owned by uid 65534"), "{e}");
    assert!(!elsewhere.join("pi").exists(), "followed the planted link");
    std::fs::remove_file(&shared).unwrap();

    // Another user's directory.
    std::fs::create_dir(&shared).unwrap();
    chown(&shared, NOBODY);
    let e = workdir::claim(&mut t, s(&work)).unwrap_err().to_string();
    assert!(e.contains("owned by uid 65534"), "{e}");
    assert!(!work.exists());
    chown(&shared, 0);

    // Root's own, but writable by everyone (without the sticky bit).
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = workdir::claim(&mut t, s(&work)).unwrap_err().to_string();
    assert!(e.contains("writable by others"), "{e}");
    std::fs::remove_dir(&shared).unwrap();

    // A workdir that is a symlink, or owned by another user.
    std::fs::create_dir(&shared).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &work).unwrap();
    let e = workdir::claim(&mut t, s(&work)).unwrap_err().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    std::fs::remove_file(&work).unwrap();
    std::fs::create_dir(&work).unwrap();
    chown(&work, NOBODY);
    let e = workdir::claim(&mut t, s(&work)).unwrap_err().to_string();
    assert!(e.contains("owned by uid 65534"), "{e}");
    std::fs::remove_dir(&work).unwrap();
    std::fs::remove_dir(&shared).unwrap();

    // Nothing planted: both levels are created, owned by the running user, the workdir
    // mode 0700 and the directory on the way 0711 (a service's own user passes through).
    workdir::claim(&mut t, s(&work)).unwrap();
    for (dir, mode) in [(&shared, 0o711), (&work, 0o700)] {
        let m = std::fs::symlink_metadata(dir).unwrap();
        assert!(m.is_dir());
        assert_eq!(m.uid(), unsafe { libc::geteuid() });
        assert_eq!(m.permissions().mode() & 0o7777, mode, "{}", dir.display());
    }
}

/// A run as root leaves its workdir 0700 and root's (and the shared parent,
/// `/var/tmp/benchpipe`, 0711); a user's run after it then said "... is owned by uid ,
/// not by root" (`ls` could not look in, and its empty answer was taken for the owner). The real binary,
/// run as another user, now says permission denied, whose directory it is and what to do.
#[test]
fn a_users_run_after_a_root_run_says_permission_denied_and_whose_the_workdir_is() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return cannot_run(
            "safety::a_users_run_after_a_root_run_says_permission_denied_and_whose_the_workdir_is",
            "running the binary as another user needs root (setuid)",
        );
    }
    let d = open_dir("user-after-root");
    let vartmp = d.join("vartmp");
    std::fs::create_dir(&vartmp).unwrap();
    std::fs::set_permissions(&vartmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // What a root run's claim leaves: both levels root's, the workdir mode 0700.
    let shared = vartmp.join("benchpipe");
    let work = shared.join("here");
    workdir::claim(&mut Local::new(), s(&work)).unwrap();
    let ws = d.join("ws");
    let write = |rel: &str, text: &str| {
        let path = ws.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "boards/here.toml",
        &format!(
            "model = \"test controller\"\nlocal = true\nworkdir = \"{w}\"\n\n\
             [[storage]]\nname = \"scratch\"\nrole = \"scratch\"\npath = \"{w}/scratch\"\n",
            w = work.display()
        ),
    );
    // A test that needs no root (xz mounts a tmpfs, which a user is refused before
    // anything else): the workdir is what the user's run trips on.
    write(
        "scenarios/s.toml",
        "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\n\
         board = [\"here\"]\nstorage = [\"scratch\"]\nfilesystem = [\"as-is\"]\ntest = [\"disk-4k\"]\n\
         [method]\ncooldown = \"0s\"\nruns = { min = 1, max = 1 }\n[params.disk-4k]\nsize = \"1M\"\nruntime = 1\n",
    );
    let o = Command::new("chown")
        .args(["-R", &format!("{NOBODY}:{NOBODY}")])
        .arg(&ws)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let o = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(&ws)
        .env("HOME", &ws)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!o.status.success(), "{out}");
    let said = format!(
        "cannot look into {} as uid {NOBODY} (Permission denied): it is uid 0's, mode drwx------",
        work.display()
    );
    assert!(out.contains(&said), "{out}");
    assert!(
        out.contains("set another workdir in the board file"),
        "{out}"
    );
    assert!(!out.contains("owned by uid ,"), "{out}");
    // The user's run changed nothing of root's.
    assert!(work.join(workdir::MARKER).is_file());
}

/// The claim over SSH, on a lab board: `/` and the user's home are refused, a new
/// directory is claimed, one with a user's files is refused and they survive.
#[test]
fn a_lab_board_claims_its_workdir_in_one_round_trip_and_refuses_a_home() {
    let Some(lab) = Lab::up(1) else { return };
    let mut t = lab.connect(0);
    for refused in ["/", "/root"] {
        let e = workdir::claim(&mut t, refused).expect_err(refused);
        assert!(e.to_string().contains("refusing"), "{e}");
    }
    let base = PathBuf::from(&lab.board(0).workdir);
    let fresh = base.join("nested/fresh");
    workdir::claim(&mut t, s(&fresh)).unwrap();
    assert!(fresh.join(workdir::MARKER).is_file());
    let used = base.join("used");
    plant_user_files(&used);
    assert!(workdir::claim(&mut t, s(&used)).is_err());
    assert!(user_files_intact(&used));
    // The lab's own workdirs are marked when the lab makes them.
    workdir::claim(&mut t, s(&base)).unwrap();
}

fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty() && !stat.rsplit(") ").next().unwrap_or("").starts_with('Z')
}

/// Pid files that say 0, 1, -1, a bare live pid (a reused one: here a `sleep` in a
/// process group of its own), or that pid with a wrong start time: stopping services
/// signals nothing, says why, and removes the bogus files.
#[test]
fn planted_pid_files_0_1_and_a_reused_pid_signal_nothing() {
    let d = open_dir("pids");
    let services = d.join("services");
    std::fs::create_dir(&services).unwrap();
    let mut victim = Command::new("sleep")
        .arg("31411")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = victim.id();
    for (name, text) in [
        ("zero", "0".to_string()),
        ("one", "1".to_string()),
        ("minus", "-1".to_string()),
        ("reused", pid.to_string()),
        ("restarted", format!("{pid} 1 0123abcd")),
    ] {
        std::fs::write(services.join(format!("{name}.pid")), format!("{text}\n")).unwrap();
    }
    let mut t = Local::new();
    let e = t.stop_all_services(s(&d)).unwrap_err().to_string();
    assert!(e.contains("nothing signalled"), "{e}");
    assert!(alive(pid), "the unrelated process group was signalled: {e}");
    assert_eq!(std::fs::read_dir(&services).unwrap().count(), 0, "{e}");
    victim.kill().unwrap();
    victim.wait().unwrap();
}

/// A service whose first process died leaves its children in its group: they are
/// still found (by the group, the session and the token in their environment) and
/// stopped, and nothing else is.
#[test]
fn a_service_whose_leader_died_still_has_its_children_stopped() {
    let d = open_dir("orphans");
    let mut t = Local::new();
    let svc = t
        .start_service(s(&d), "leader", "sleep 31421 & sleep 31422")
        .unwrap();
    let before = processes_matching(&["sleep 31421"]);
    assert!(!before.trim().is_empty(), "the service did not start");
    // The leader (the shell, or the `sleep 31422` it became) goes first.
    unsafe {
        libc::kill(svc.pgid as i32, libc::SIGKILL);
    }
    std::thread::sleep(Duration::from_millis(200));
    t.stop_all_services(s(&d)).unwrap();
    let left = crate::processes_left(&["sleep 31421", "sleep 31422"]);
    assert!(left.trim().is_empty(), "left behind: {left}");
}

/// `sleep &` inside a command: the command returns at once and the sleep is gone, on
/// a lab board and locally (the wrapper used to kill only its watcher; a child holding
/// stdout even kept the command from returning).
#[test]
fn a_background_child_ends_with_its_command() {
    let Some(lab) = Lab::up(1) else { return };
    let mut ssh = lab.connect(0);
    let mut local = Local::new();
    let targets: [(&mut dyn Transport, &str, &str); 2] =
        [(&mut ssh, "31431", "31432"), (&mut local, "31433", "31434")];
    for (t, a, b) in targets {
        let command = format!("sleep {a} & sleep {b} >/dev/null 2>&1 & echo started");
        let out = t.run(&command, Some(Duration::from_secs(60))).unwrap();
        assert_eq!(out.stdout_str(), "started\n");
        // Without the group kill at the command's end they would live for hours.
        let left = crate::processes_left(&[&format!("sleep {a}"), &format!("sleep {b}")]);
        assert!(
            left.trim().is_empty(),
            "{}: left behind: {left}",
            t.target()
        );
    }
}

/// The wrapper runs a command in the shell that leads its group (no /bin/sh in
/// between): the command still sees a shell of its own, with none of the wrapper's
/// state, no job of the wrapper's (its `wait` ends with its own jobs), and its exits
/// and signals reported as sshd would report them without a wrapper.
#[test]
fn a_command_sees_a_shell_of_its_own_and_its_exit_is_reported_as_its_own() {
    let Some(lab) = Lab::up(1) else { return };
    let mut t = lab.connect(0);
    let seen = "echo \"$0|$#|${bp_c-unset}|${bp_s-unset}|$!|\"; jobs; \
                { true <&3; } 2>/dev/null && echo fd3 || echo no-fd3; \
                read -r x && echo stdin || echo no-stdin; \
                read -r s < /proc/$$/stat; set -- ${s##*\") \"}; [ \"$3\" = $$ ] && echo leads";
    let out = t.run(seen, Some(Duration::from_secs(60))).unwrap();
    assert_eq!(
        out.stdout_str(),
        "/bin/sh|0|unset|unset||\nno-fd3\nno-stdin\nleads\n",
        "{}",
        out.stderr_str()
    );
    let cases: [(&str, Option<i32>, Option<&str>, &str); 6] = [
        ("sleep 1 & wait; echo waited", Some(0), None, "waited\n"),
        ("trap 'echo bye' EXIT; exit 4", Some(4), None, "bye\n"),
        ("sh -c 'kill -USR1 $$'", None, Some("USR1"), ""),
        (
            "trap 'echo no' TERM; sh -c 'kill -TERM $$'",
            None,
            Some("TERM"),
            "",
        ),
        ("exec sh -c 'exit 5'", Some(5), None, ""),
        ("set -e; false; echo no", Some(1), None, ""),
    ];
    for (command, code, signal, stdout) in cases {
        let out = t.run(command, Some(Duration::from_secs(60))).unwrap();
        assert_eq!(
            (
                out.exit.code,
                out.exit.signal.as_deref(),
                out.stdout_str().as_str()
            ),
            (code, signal, stdout),
            "{command}: {}",
            out.stderr_str()
        );
    }
}

/// 100 MB of output: `run` keeps the head and the tail within the cap, with a marker
/// line and the dropped byte count in its output (it used to keep everything; a board's
/// `thermal = "/dev/zero"` made apply try to allocate 8 GiB).
#[test]
fn a_command_printing_100_mb_is_captured_within_the_cap() {
    let Some(lab) = Lab::up(1) else { return };
    let mut ssh = lab.connect(0);
    let mut local = Local::new();
    let total: u64 = 100_000_000 + "THE-END\n".len() as u64;
    let targets: [&mut dyn Transport; 2] = [&mut ssh, &mut local];
    for t in targets {
        let out = t
            .run(
                "yes 0123456789 | head -c 100000000; echo THE-END; echo err >&2",
                Some(Duration::from_secs(300)),
            )
            .unwrap();
        assert!(out.exit.success(), "{}", t.target());
        assert!(
            out.stdout.len() <= CAPTURE_LIMIT + 200,
            "{}",
            out.stdout.len()
        );
        let marker = format!(
            "\n[benchpipe: {} bytes dropped here; the stream was {total} bytes]\n",
            out.stdout_dropped
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(&marker), "{}: no marker", t.target());
        assert_eq!(
            out.stdout.len() as u64 - marker.len() as u64 + out.stdout_dropped,
            total
        );
        assert!(text.starts_with("0123456789\n0123456789\n"));
        assert!(text.ends_with("0THE-END\n"), "{}", t.target());
        assert_eq!(
            (out.stderr_str().as_str(), out.stderr_dropped),
            ("err\n", 0)
        );
    }
}

/// A board whose thermal source is `/dev/zero` measures normally: temperatures are
/// read as a few bytes of regular files only.
#[test]
fn a_thermal_source_of_dev_zero_does_not_stop_apply() {
    let p = Project::local("safety-zero")
        .edit(
            "boards/here.toml",
            "local = true\n",
            "local = true\nthermal = \"/dev/zero\"\n",
        )
        .local_scenario("s", &["sleepy"], 2, "");
    let out = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(p.samples("sleepy").len(), 3);
}

/// The login shell sshd runs commands with (`$SHELL -c`) is tcsh for this user: csh
/// syntax differs from sh in quoting, newlines and `!`. Commands still see /bin/sh.
#[test]
fn a_board_user_whose_login_shell_is_tcsh_runs_commands_under_sh() {
    let shell = "/bin/tcsh";
    if !Path::new(shell).exists() {
        return cannot_run(
            "safety::a_board_user_whose_login_shell_is_tcsh_runs_commands_under_sh",
            "no /bin/tcsh (apt-get install tcsh): it stands for a board user's csh login shell",
        );
    }
    let user = "bp-tcsh";
    let made = Command::new("useradd")
        .args(["-M", "-d", "/nonexistent", "-s", shell, user])
        .status()
        .unwrap();
    // 9: it exists already (an earlier or a parallel run).
    assert!(made.success() || made.code() == Some(9), "useradd {user}");
    // No password, but not locked (`!`): sshd without PAM refuses locked accounts.
    let unlocked = Command::new("usermod")
        .args(["-p", "*", user])
        .status()
        .unwrap();
    assert!(unlocked.success(), "usermod -p '*' {user}");
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    // The lab's sshd reads its one authorized_keys file; this user gets a copy in a
    // directory that passes sshd's StrictModes checks.
    // Not under the temporary directory: sshd's StrictModes refuses a world-writable
    // parent such as /tmp.
    let keys = Scratch::under(Path::new("/var/lib"), "tcsh");
    let public = std::fs::read_to_string(lab.info.identity.with_extension("pub")).unwrap();
    std::fs::write(keys.join("authorized_keys"), public).unwrap();
    let mut config = std::fs::read_to_string(&board.sshd_config).unwrap();
    config.push_str(&format!(
        "Match User {user}\n    AuthorizedKeysFile {}/authorized_keys\n",
        keys.display()
    ));
    std::fs::write(&board.sshd_config, config).unwrap();
    benchpipe::lab::kill_sshd(&board).unwrap();
    benchpipe::lab::start_sshd(&board).unwrap();

    let mut target = lab.target(0);
    target.user = Some(user.into());
    let mut t = SshTransport::connect_with(
        &board.name,
        &target,
        Duration::from_secs(5),
        ConnectOptions { ..options() },
    )
    .unwrap();
    let script = "x=$((6 * 7))\nfor w in \"it's\" 'a \"b\"' '!x' '\\\\n' '%s'; do printf '%s|' \"$w\"; done\n\
                  echo \"$x\" \"$SHELL\" \"$(id -un)\"";
    let out = t.run(script, Some(Duration::from_secs(30))).unwrap();
    assert!(out.exit.success(), "{:?} {}", out.exit, out.stderr_str());
    assert_eq!(
        out.stdout_str(),
        format!("it's|a \"b\"|!x|\\\\n|%s|42 {shell} {user}\n")
    );
    let out = t.run("exit 7", None).unwrap();
    assert_eq!(out.exit.code, Some(7));
}

/// What sshd does with a request, `$SHELL -c REQUEST`, for every login shell a board
/// user may have: each runs the same script under /bin/sh, byte for byte, with quotes,
/// `!`, `%`, backslashes, tabs, newlines, UTF-8, and 40 KB (csh refuses long words).
#[test]
fn every_login_shell_hands_the_same_script_to_sh() {
    let shells = [
        "/bin/sh",
        "/bin/bash",
        "/bin/bsd-csh",
        "/bin/tcsh",
        "/usr/bin/fish",
    ];
    let missing: Vec<&str> = shells
        .iter()
        .copied()
        .filter(|s| !Path::new(s).exists())
        .collect();
    if !missing.is_empty() {
        return cannot_run(
            "safety::every_login_shell_hands_the_same_script_to_sh",
            &format!("missing login shells {missing:?} (apt-get install csh tcsh fish)"),
        );
    }
    let awkward =
        "it's \"quoted\" !! !$ ^x^y %s %% \\ \\n \t\ttab ~ * ? {a,b} $HOME `id` $(id) é ✓";
    let script = format!(
        "printf '%s\\n' {q}\nx=$((6 * 7)); echo \"$x\" \"$0\"\nprintf '%s' {big} | wc -c",
        q = benchpipe::transport::quote::sh(awkward),
        big = "y".repeat(40_000)
    );
    let want = format!("{awkward}\n42 benchpipe\n40000\n");
    for shell in shells {
        let out = Command::new(shell)
            .arg("-c")
            .arg(login_shell_neutral(&script))
            .env("HOME", "/nonexistent")
            .output()
            .unwrap();
        assert_eq!(
            (
                String::from_utf8_lossy(&out.stdout).trim_start(),
                out.status.code()
            ),
            (want.as_str(), Some(0)),
            "{shell}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
