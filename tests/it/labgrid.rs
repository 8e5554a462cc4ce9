//! Integration tests: board reservation through a real labgrid coordinator (each test
//! starts its own, on a free port, in a scratch directory): apply acquires a board's
//! place before its first step and releases it after its last, also after a failed
//! step and on Ctrl-C; a place someone else holds fails the board's cells naming the
//! holder, or is waited for.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::scratch::Scratch;
use crate::spine::{Project, text};

/// Someone else, as labgrid names its holders (`host/user`).
const OTHER: (&str, &str) = ("elsewhere", "someone-else");

/// The directory of `labgrid-client` and `labgrid-coordinator`: on PATH (`.ci/run`
/// links them into /usr/local/bin), else the venv `.ci/run` installs them in.
fn labgrid_bin() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/opt/benchpipe-labgrid/bin")])
        .find(|d| d.join("labgrid-client").is_file() && d.join("labgrid-coordinator").is_file())
}

/// A coordinator of the test's own, stopped when dropped.
struct Coordinator {
    bin: PathBuf,
    addr: String,
    child: Child,
    _dir: Scratch,
}

impl Coordinator {
    /// Started and answering, or `None` (said through `cannot_run`) without labgrid.
    fn start() -> Option<Coordinator> {
        let Some(bin) = labgrid_bin() else {
            crate::cannot_run(
                &crate::this_test(),
                "labgrid-client and labgrid-coordinator are not installed (.ci/run installs them)",
            );
            return None;
        };
        // A port free a moment ago; another test may take it first, so a coordinator
        // that never answers is started again on another.
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let dir = Scratch::new("labgrid-coordinator");
            let addr = format!("127.0.0.1:{port}");
            let child = Command::new(bin.join("labgrid-coordinator"))
                .args(["-l", &addr])
                .current_dir(&*dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut c = Coordinator {
                bin: bin.clone(),
                addr,
                child,
                _dir: dir,
            };
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(120) {
                if c.child.try_wait().unwrap().is_some() {
                    break;
                }
                if c.client(None, &["places"]).status.success() {
                    return Some(c);
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        panic!("no labgrid coordinator answered");
    }

    /// `labgrid-client -x ADDR ARGS`, as `who` (host, user) or as this machine's user.
    fn client(&self, who: Option<(&str, &str)>, args: &[&str]) -> Output {
        let mut c = Command::new(self.bin.join("labgrid-client"));
        c.args(["-x", &self.addr]).args(args);
        if let Some((host, user)) = who {
            c.env("LG_HOSTNAME", host).env("LG_USERNAME", user);
        }
        c.output().unwrap()
    }

    /// A new place, named for the test (tests share no coordinator, but say whose).
    fn place(&self, name: &str) -> String {
        let out = self.client(None, &["-p", name, "create"]);
        assert!(out.status.success(), "create {name}: {}", text(&out));
        name.to_string()
    }

    /// The place's holder (`host/user`), or `None` when it is free.
    fn holder(&self, place: &str) -> Option<String> {
        let out = self.client(None, &["-p", place, "show"]);
        assert!(out.status.success(), "show {place}: {}", text(&out));
        let shown = String::from_utf8_lossy(&out.stdout).to_string();
        let line = shown
            .lines()
            .find_map(|l| l.trim().strip_prefix("acquired: "))
            .unwrap_or_else(|| panic!("no `acquired:` in {shown}"));
        (line != "None").then(|| line.to_string())
    }

    /// benchpipe in `p`, with the labgrid client on its PATH.
    fn bp(&self, p: &Project, args: &[&str]) -> Command {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let path = std::env::join_paths(
            [self.bin.clone()]
                .into_iter()
                .chain(std::env::split_paths(&path)),
        )
        .unwrap();
        let mut c = Command::new(env!("CARGO_BIN_EXE_benchpipe"));
        c.args(crate::scripted(args))
            .current_dir(&p.dir)
            .env("NO_COLOR", "1")
            .env("PATH", path)
            .env_remove("LG_HOSTNAME")
            .env_remove("LG_USERNAME");
        c
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A local project whose board `here` names `place` (waiting `wait`), and a
/// `lg-check` recipe whose run records who holds the place while it runs.
fn project(tag: &str, c: &Coordinator, place: &str, wait: Option<&str>) -> Project {
    let wait = wait
        .map(|w| format!(", wait = \"{w}\""))
        .unwrap_or_default();
    let p = Project::local(tag).edit(
        "boards/here.toml",
        "[[storage]]",
        &format!(
            "labgrid = {{ coordinator = \"{}\", place = \"{place}\"{wait} }}\n\n[[storage]]",
            c.addr
        ),
    );
    let seen = p.dir.join("seen");
    let recipe = format!(
        r#"description = "records who holds the place"
uses_storage = false
[run]
command = "{} -x {} -p {place} show > {} 2>&1; echo '{{\"value\": 1}}'"
parse = "json"
[metrics]
value = {{ from = "value", unit = "s", better = "lower" }}
"#,
        c.bin.join("labgrid-client").display(),
        c.addr,
        seen.display()
    );
    p.file("pipeline/lg-check.toml", &recipe)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn labgrid_apply_holds_the_place_through_the_walk_and_releases_it() {
    let Some(c) = Coordinator::start() else {
        return;
    };
    let place = c.place("bp-held-through");
    let p = project("labgrid-through", &c, &place, None).local_scenario("s", &["lg-check"], 2, "");

    let plan = c
        .bp(&p, &["apply", "--dry-run", "scenarios/s.toml"])
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", text(&plan));
    let shown = String::from_utf8_lossy(&plan.stdout);
    assert!(
        shown.contains(&format!("acquire labgrid place {place}")),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("release labgrid place {place}")),
        "{shown}"
    );
    assert_eq!(c.holder(&place), None, "a dry run acquires nothing");

    let out = c
        .bp(&p, &["apply", "--no-report", "scenarios/s.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let seen = std::fs::read_to_string(p.dir.join("seen")).unwrap();
    assert!(
        seen.lines()
            .any(|l| l.trim().starts_with("acquired: ") && !l.contains("None")),
        "the place was benchpipe's while its cells ran: {seen}"
    );
    assert_eq!(c.holder(&place), None, "released after the last step");
    assert_eq!(p.samples("lg-check").len(), 3);

    // The plan's JSON puts the acquire first and the release last.
    let json = c
        .bp(
            &p,
            &["plan", "--json", "--redo", "test=*", "scenarios/s.toml"],
        )
        .output()
        .unwrap();
    assert!(json.status.success(), "{}", text(&json));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let steps = v["schedule"]["boards"][0]["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        steps.first().map(|s| &s["action"]),
        Some(&"acquire-labgrid-place".into()),
        "{v}"
    );
    assert_eq!(
        steps.last().map(|s| &s["action"]),
        Some(&"release-labgrid-place".into()),
        "{v}"
    );
}

#[test]
fn labgrid_a_place_someone_else_holds_fails_its_boards_cells_naming_the_holder() {
    let Some(c) = Coordinator::start() else {
        return;
    };
    let place = c.place("bp-held-elsewhere");
    let p = project("labgrid-elsewhere", &c, &place, None)
        .local_board("there", "there-work")
        .scenario(
            "s",
            "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\n\
             board = [\"here\", \"there\"]\ntest = [\"sleepy\"]\n[method]\nruns = { min = 2, max = 2 }\n",
        );
    let held = c.client(Some(OTHER), &["-p", &place, "acquire"]);
    assert!(held.status.success(), "{}", text(&held));

    let out = c
        .bp(&p, &["apply", "--no-report", "scenarios/s.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = stderr(&out);
    assert!(err.contains("held by elsewhere/someone-else"), "{err}");
    assert!(
        err.contains("1 cell(s) completed"),
        "the board without a place measured: {err}"
    );
    assert_eq!(
        c.holder(&place).as_deref(),
        Some("elsewhere/someone-else"),
        "someone else's place is left to them"
    );
}

#[test]
fn labgrid_a_held_place_is_waited_for_until_its_holder_releases_it() {
    let Some(c) = Coordinator::start() else {
        return;
    };
    let place = c.place("bp-waited-for");
    let p =
        project("labgrid-wait", &c, &place, Some("10m")).local_scenario("s", &["sleepy"], 2, "");
    let held = c.client(Some(OTHER), &["-p", &place, "acquire"]);
    assert!(held.status.success(), "{}", text(&held));

    let log = p.dir.join("apply.log");
    let mut child = c
        .bp(&p, &["apply", "--no-report", "scenarios/s.toml"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let waiting = format!("waiting for labgrid place {place}, held by elsewhere/someone-else");
    wait_for(&log, &waiting, &mut child);
    let freed = c.client(Some(OTHER), &["-p", &place, "release"]);
    assert!(freed.status.success(), "{}", text(&freed));
    let status = wait_exit(&mut child, Duration::from_secs(600));
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status, Some(0), "{err}");
    assert!(err.contains("1 cell(s) completed"), "{err}");
    assert_eq!(c.holder(&place), None);

    // Ctrl-C while waiting ends the wait; the holder keeps the place.
    let held = c.client(Some(OTHER), &["-p", &place, "acquire"]);
    assert!(held.status.success(), "{}", text(&held));
    let log = p.dir.join("again.log");
    let mut child = c
        .bp(
            &p,
            &[
                "apply",
                "--no-report",
                "--redo",
                "test=sleepy",
                "scenarios/s.toml",
            ],
        )
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_for(&log, &waiting, &mut child);
    // SAFETY: kill(2) on the child we started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = wait_exit(&mut child, Duration::from_secs(300));
    let err = std::fs::read_to_string(&log).unwrap();
    assert_ne!(status, Some(0), "{err}");
    assert_eq!(
        c.holder(&place).as_deref(),
        Some("elsewhere/someone-else"),
        "{err}"
    );
}

#[test]
fn labgrid_a_failed_step_and_an_interrupt_still_release_the_place() {
    let Some(c) = Coordinator::start() else {
        return;
    };
    let place = c.place("bp-released-anyway");
    let p = project("labgrid-release", &c, &place, None)
        .local_scenario("fails", &["broken"], 2, "")
        .local_scenario("long", &["sleepy"], 2, "[params.sleepy]\nseconds = 300\n");

    let out = c
        .bp(&p, &["apply", "--no-report", "scenarios/fails.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(c.holder(&place), None, "released after a failed step");

    let log = p.dir.join("apply.log");
    let mut child = c
        .bp(&p, &["apply", "--no-report", "scenarios/long.toml"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_for(&log, "acquired labgrid place", &mut child);
    let t0 = Instant::now();
    while c.holder(&place).is_none() {
        assert!(t0.elapsed() < Duration::from_secs(120), "never acquired");
        std::thread::sleep(Duration::from_millis(500));
    }
    // SAFETY: kill(2) on the child we started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = wait_exit(&mut child, Duration::from_secs(300));
    let err = std::fs::read_to_string(&log).unwrap();
    assert_ne!(status, Some(0), "{err}");
    assert_eq!(c.holder(&place), None, "released on Ctrl-C: {err}");
}

/// Waits until `log` holds `needle` (the child still running).
fn wait_for(log: &Path, needle: &str, child: &mut Child) {
    let t0 = Instant::now();
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(needle) {
            return;
        }
        if let Some(s) = child.try_wait().unwrap() {
            panic!("apply ended ({s}) before `{needle}`: {text}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "no `{needle}` in {text}"
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// The child's exit code, once it ended within `limit` (killed and failed if not).
fn wait_exit(child: &mut Child, limit: Duration) -> Option<i32> {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("apply did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A cluster whose two lab members each name a labgrid place: both are acquired before
/// the cluster's first step (the deploy and the runs see them held) and released after
/// its last; the plan puts the acquires first and the releases last.
#[test]
fn labgrid_a_clusters_members_places_are_held_through_its_walk() {
    let Some(c) = Coordinator::start() else {
        return;
    };
    let Some(lab) = crate::lab::Lab::up(2) else {
        return;
    };
    let (b1, b2) = (lab.board(0).name.clone(), lab.board(1).name.clone());
    let places = [c.place("bp-member-1"), c.place("bp-member-2")];
    for (b, place) in [&b1, &b2].into_iter().zip(&places) {
        let file = lab.root.join(format!("boards/{b}.toml"));
        let old = std::fs::read_to_string(&file).unwrap();
        // A top-level key: before the file's first table.
        let line = format!(
            "labgrid = {{ coordinator = \"{}\", place = \"{place}\" }}\n",
            c.addr
        );
        std::fs::write(&file, format!("{line}{old}")).unwrap();
    }
    let client = c.bin.join("labgrid-client");
    let show = |place: &str, into: &std::path::Path| {
        format!(
            "{} -x {} -p {place} show >> {} 2>&1",
            client.display(),
            c.addr,
            into.display()
        )
    };
    let (at_deploy, at_run) = (lab.root.join("at-deploy"), lab.root.join("at-run"));
    // On the controller: the coordinator listens on its loopback, which a lab board's
    // network namespace does not share.
    let deploy = format!(
        "{}; {}",
        show(&places[0], &at_deploy),
        show(&places[1], &at_deploy)
    );
    let run = format!(
        "{}; {}; echo '{{\"value\": 1}}'",
        show(&places[0], &at_run),
        show(&places[1], &at_run)
    );
    let p = lab
        .project()
        .file(
            "pipeline/lg-one.toml",
            &format!(
                "description = \"records who holds the members' places\"\nuses_storage = false\n\
                 [run]\non = \"controller\"\ncommand = '''{run}'''\nparse = \"json\"\n\
                 [metrics]\nvalue = {{ from = \"value\", unit = \"x\", better = \"higher\" }}\n"
            ),
        )
        .scenario(
            "c",
            &format!(
                "title = \"a reserved cluster\"\n[images.installed]\ninstalled = true\n\
                 [clusters.lab-lg]\nmembers = [\"{b1}\", \"{b2}\"]\n\
                 [[clusters.lab-lg.deploy]]\non = \"controller\"\ncommand = '''{deploy}'''\n\
                 [matrix]\nimage = [\"installed\"]\nboard = [\"lab-lg\"]\ntest = [\"lg-one\"]\n\
                 [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n"
            ),
        );
    let plan = c
        .bp(&p, &["plan", "--json", "scenarios/c.toml"])
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", text(&plan));
    let v: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let steps = v["schedule"]["boards"][0]["steps"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let actions: Vec<&str> = steps.iter().filter_map(|s| s["action"].as_str()).collect();
    assert_eq!(
        actions[..2],
        ["acquire-labgrid-place", "acquire-labgrid-place"],
        "{v}"
    );
    assert_eq!(
        actions[actions.len() - 2..],
        ["release-labgrid-place", "release-labgrid-place"],
        "{v}"
    );

    let out = c
        .bp(&p, &["apply", "--no-report", "scenarios/c.toml"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    for (what, file) in [("deploy", &at_deploy), ("run", &at_run)] {
        let seen = std::fs::read_to_string(file).unwrap_or_default();
        let held = seen
            .lines()
            .filter(|l| l.trim().starts_with("acquired: ") && !l.contains("None"))
            .count();
        assert_eq!(held, 2, "both places held at the {what}: {seen}");
    }
    for place in &places {
        assert_eq!(
            c.holder(place),
            None,
            "{place} released after the last step"
        );
    }
    let plan = c
        .bp(&p, &["plan", "--json", "scenarios/c.toml"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(v["summary"]["complete"], 1, "{v}");
}
