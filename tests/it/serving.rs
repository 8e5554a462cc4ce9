//! Integration tests: the serving recipes (pipeline/http.toml, smb.toml, nfs.toml,
//! smb-fs.toml): their parsing of real curl and smbclient output, and on real lab boards
//! nginx, smbd and nfs-ganesha serving a tmpfs or the cell's filesystem to curl,
//! smbclient and nfs-cat on the controller; afterwards no server of theirs runs and
//! nothing of theirs is mounted, after a success and after a failed run.

use crate::leftovers::board_processes_left;
use crate::scratch::Project;
use std::path::Path;

use benchpipe::lab::{DROP_COPIED_LOOP_MOUNTS, LabBoard};

use crate::lab::{Lab, bp, text};
use crate::repo;
use crate::xz::{benchpipe_tmpfs, board_mounts, in_board};

pub(crate) fn fixture(name: &str) -> String {
    let path = repo().join("tests/data/tool-outputs").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub(crate) fn shipped(name: &str) -> benchpipe::model::Recipe {
    let mut recipes = benchpipe::config::load_recipes(repo()).expect("the shipped recipes load");
    recipes
        .remove(&benchpipe::model::TestName::new(name))
        .expect("the recipe")
}

/// curl's `-w '%{json}'` (real, curl 7.88): speed_download is bytes per second.
#[test]
fn http_reads_curls_json_speed_in_mb_per_s() {
    let http = shipped("http");
    let got = benchpipe::bench::metrics(&http, &fixture("curl-json.json"), "").unwrap();
    assert_eq!(got["download"], 535939320.0 * 1e-6);
    assert_eq!(got["seconds"], 0.097826);
}

/// smbclient's get and put lines (real, smbclient 4.17, on stderr): KiloBytes/sec and
/// kb/s are both KiB/s; a failed get, or output with no put line, is no number.
#[test]
fn smb_recipes_read_smbclients_get_and_put_rates_in_mb_per_s() {
    for name in ["smb", "smb-fs"] {
        let smb = shipped(name);
        let got = benchpipe::bench::metrics(&smb, "", &fixture("smbclient-get-put.txt")).unwrap();
        assert_eq!(got["read"], 691891.0 * 0.001024, "{name}");
        assert_eq!(got["write"], 184504.3 * 0.001024, "{name}");
        let err = benchpipe::bench::metrics(&smb, "", &fixture("smbclient-error.txt"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("NT_STATUS_OBJECT_NAME_NOT_FOUND"),
            "{name}: {err}"
        );
        // Only the get: the put's pattern matches nothing.
        let err = benchpipe::bench::metrics(&smb, "", &fixture("smbclient.txt"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("pattern 2"), "{name}: {err}");
    }
}

/// The serving recipes' servers and benchpipe's board-side helpers.
pub(crate) const SERVERS: [&str; 6] = [
    "nginx",
    "smbd",
    "ganesha.nfsd",
    "iperf",
    "stress-ng",
    "benchpipe-guard",
];

fn board_servers_left(board: &LabBoard, names: &[&str]) -> String {
    board_processes_left(board, names, std::time::Duration::from_secs(15))
}

/// A lab workspace with the shipped serving recipes and a scenario for board 0.
pub(crate) fn scenario(lab: &Lab, tests: &str, filesystems: &str, params: &str) {
    let board = lab.board(0);
    let storage = if filesystems.is_empty() {
        String::new()
    } else {
        format!(
            "storage = [\"{}\"]\nfilesystem = [{filesystems}]\n",
            board.disks[0].name
        )
    };
    // Lab disks are 64 MiB: btrfs needs mixed block groups below about 114 MiB.
    Project::at(&lab.root)
        .recipes(&["http", "smb", "nfs", "smb-fs"])
        .scenario(
            "s",
            &format!(
                "title = \"serving\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\n\
             [filesystems.btrfs-lzo]\nkind = \"btrfs\"\nmkfs_options = [\"--mixed\"]\n\
             mount_options = [\"compress-force=lzo\"]\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}\"]\n{storage}test = [{tests}]\n\
             [method]\nwarmup = {{ runs = 1 }}\nruns = {{ min = 2, max = 2 }}\n{params}\n",
                board.name
            ),
        );
}

/// (cell.json, sample) of every stored measured run (warm-ups are checked too: every
/// run's numbers are asserted on).
pub(crate) fn samples(root: &Path) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(root.join("results")) else {
        return out;
    };
    for e in dir.flatten() {
        let cell = std::fs::read_to_string(e.path().join("cell.json")).unwrap_or_default();
        let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for l in text.lines() {
            let s: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_positive_metrics(&s);
            if s["kind"] == "measured" {
                out.push((cell.clone(), s));
            }
        }
    }
    out
}

/// Every metric a run stored is a finite positive number.
fn assert_positive_metrics(s: &serde_json::Value) {
    for (m, v) in s["metrics"].as_object().unwrap() {
        let v = v.as_f64().unwrap_or(f64::NAN);
        assert!(v.is_finite() && v > 0.0, "{m} = {v}: {s}");
    }
}

pub(crate) fn assert_positive(samples: &[(String, serde_json::Value)], metrics: &[&str]) {
    for (_, s) in samples {
        for m in metrics {
            let v = s["metrics"][m].as_f64().unwrap_or(f64::NAN);
            assert!(v.is_finite() && v > 0.0, "{m} = {v}: {s}");
        }
    }
}

/// Nothing of the serving recipes is left on the board: no nginx, smbd or ganesha (nor
/// a guard of benchpipe's) in its network namespace, no tmpfs of benchpipe's, no
/// directory of theirs in the workdir; and no client of theirs on the controller.
pub(crate) fn assert_nothing_left(board: &LabBoard) {
    assert_eq!(board_servers_left(board, &SERVERS), "", "servers left");
    assert_eq!(benchpipe_tmpfs(board), "", "tmpfs left mounted");
    assert_workdir_clean(board);
    assert_eq!(clients_left(board), "", "clients left on the controller");
}

/// No directory of the serving recipes (a tmpfs mount point, smbd's) in the workdir.
pub(crate) fn assert_workdir_clean(board: &LabBoard) {
    let left: Vec<_> = std::fs::read_dir(&board.workdir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| ["http-", "smb-", "nfs-"].iter().any(|p| n.starts_with(p)))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "left in the workdir: {left:?}");
}

/// curl, smbclient or nfs-cat on the controller still talking to the board.
pub(crate) fn clients_left(board: &LabBoard) -> String {
    let host = board.address.to_string();
    crate::processes_matching(&["curl", "smbclient", "nfs-cat"])
        .lines()
        .filter(|l| l.contains(&host))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn http_and_smb_on_a_lab_board_serve_a_tmpfs_and_stop_their_servers() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    scenario(
        &lab,
        "\"http\", \"smb\"",
        "",
        "[params.http]\nsize_mib = 16\n[params.smb]\nsize_mib = 16\n",
    );
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let samples = samples(&lab.root);
    let http: Vec<_> = samples
        .iter()
        .filter(|(c, _)| c.contains("\"http\""))
        .cloned()
        .collect();
    let smb: Vec<_> = samples
        .iter()
        .filter(|(c, _)| c.contains("\"smb\""))
        .cloned()
        .collect();
    assert_eq!(http.len(), 2, "{}", text(&out));
    assert_eq!(smb.len(), 2, "{}", text(&out));
    assert_positive(&http, &["download", "seconds"]);
    assert_positive(&smb, &["read", "write"]);
    assert_nothing_left(&board);
}

/// The seed's comparison on a lab disk: Samba to and from ext4 and btrfs with lzo.
#[test]
fn smb_fs_writes_and_reads_through_ext4_and_btrfs_lzo_on_a_lab_disk() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    in_board(&board, DROP_COPIED_LOOP_MOUNTS);
    scenario(
        &lab,
        "\"smb-fs\"",
        "\"ext4\", \"btrfs-lzo\"",
        "[params.smb-fs]\nsize_mib = 12\n",
    );
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let samples = samples(&lab.root);
    assert_eq!(samples.len(), 4, "two runs per filesystem: {}", text(&out));
    for fs in ["\"ext4\"", "\"btrfs\""] {
        assert_eq!(
            samples.iter().filter(|(c, _)| c.contains(fs)).count(),
            2,
            "{fs}"
        );
    }
    assert_positive(&samples, &["read", "write"]);
    assert_nothing_left(&board);
    assert_eq!(
        board_mounts(&board, &board.disks[0].path),
        "",
        "the disk is unmounted"
    );
}

/// Runs that fail while the servers run (a file the server does not have): the cells
/// fail, and nginx and smbd are stopped, their tmpfs unmounted all the same.
#[test]
fn failing_http_and_smb_runs_still_stop_their_servers_and_unmount() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    scenario(
        &lab,
        "\"http\", \"smb\"",
        "",
        "[params.http]\nsize_mib = 1\n[params.smb]\nsize_mib = 1\n",
    );
    for (r, from, to) in [
        ("http", ":{{ port }}/file", ":{{ port }}/missing"),
        ("smb", "'get file /dev/null'", "'get missing /dev/null'"),
    ] {
        let p = lab.root.join(format!("pipeline/{r}.toml"));
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(t.contains(from), "{r}");
        std::fs::write(&p, t.replace(from, to)).unwrap();
    }
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("404"), "curl said why: {}", text(&out));
    assert!(
        text(&out).contains("NT_STATUS_OBJECT_NAME_NOT_FOUND"),
        "smbclient said why: {}",
        text(&out)
    );
    assert!(samples(&lab.root).is_empty());
    assert_nothing_left(&board);
}

/// A port something else listens on: the setup refuses it, naming the parameter, and
/// the tmpfs is never left mounted.
#[test]
fn an_http_port_in_use_on_the_board_is_refused() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    scenario(
        &lab,
        "\"http\"",
        "",
        "[params.http]\nsize_mib = 1\nport = 8090\n",
    );
    let held = hold_port(&board, 8090);
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    drop(held);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("port 8090 is already in use on the board"),
        "{}",
        text(&out)
    );
    assert_nothing_left(&board);
}

/// Starts an apply of the scenario in `lab` with 500 runs per cell, waits until it has
/// measured one, and returns it running.
fn apply_until_measuring(lab: &Lab, test: &str) -> std::process::Child {
    let s = lab.root.join("scenarios/s.toml");
    let two = std::fs::read_to_string(&s).unwrap();
    std::fs::write(
        &s,
        two.replace("max = 2", "max = 500")
            .replace("min = 2", "min = 500"),
    )
    .unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(&lab.root)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while samples(&lab.root).is_empty() {
        assert!(t0.elapsed().as_secs() < 120, "{test}: never measured");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::fs::write(&s, two).unwrap();
    child
}

/// benchpipe itself is killed (SIGKILL) while nginx and smbd serve: their SSH session
/// dies with it, and their guards stop them and unmount the tmpfs; the next apply
/// measures and leaves nothing behind.
#[test]
fn servers_of_a_killed_apply_stop_with_its_session() {
    for test in ["http", "smb"] {
        let Some(lab) = Lab::up(1) else { return };
        let board = lab.board(0).clone();
        scenario(
            &lab,
            &format!("\"{test}\""),
            "",
            &format!("[params.{test}]\nsize_mib = 4\n"),
        );
        let mut child = apply_until_measuring(&lab, test);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(
            board_processes_left(&board, &SERVERS, std::time::Duration::from_secs(60)),
            "",
            "{test}: servers outlived the killed apply's session"
        );
        assert_eq!(benchpipe_tmpfs(&board), "", "{test}: tmpfs left mounted");
        assert_workdir_clean(&board);
        let rerun = bp(
            &lab.root,
            &[
                "apply",
                "--redo",
                &format!("test={test}"),
                "scenarios/s.toml",
            ],
        );
        assert!(rerun.status.success(), "{test}: {}", text(&rerun));
        assert_nothing_left(&board);
    }
}

/// benchpipe is killed (SIGKILL) while nginx and smbd serve, and their guards are gone
/// too (killed first), so nothing on the board can clean up: the servers outlive it,
/// the tmpfs stays mounted, and the next apply (of another cell) stops them (its
/// stop-leftovers step, before any setup would find the port taken) and unmounts the
/// old cell's tmpfs, measures, and leaves no server and no tmpfs behind.
#[test]
fn servers_left_by_a_killed_apply_are_stopped_by_the_next_apply() {
    for (test, server) in [("http", "nginx"), ("smb", "smbd")] {
        let Some(lab) = Lab::up(1) else { return };
        let board = lab.board(0).clone();
        scenario(
            &lab,
            &format!("\"{test}\""),
            "",
            &format!("[params.{test}]\nsize_mib = 4\n"),
        );
        let mut child = apply_until_measuring(&lab, test);
        let guards =
            board_processes_left(&board, &["benchpipe-guard"], std::time::Duration::default());
        assert!(
            guards.lines().count() >= 2,
            "{test}: a service's and the tmpfs's: {guards}"
        );
        for pid in guards.lines().filter_map(|l| l.split(' ').next()) {
            // SAFETY: kill(2) on a pid just listed as a guard in the board's namespace.
            unsafe { libc::kill(pid.parse().unwrap(), libc::SIGKILL) };
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let running = crate::processes_matching(&[&board.workdir]);
        assert!(
            running.contains(server),
            "{test}: the server outlives the killed apply: {running}"
        );
        assert!(
            benchpipe_tmpfs(&board).contains(&format!("benchpipe-{test}")),
            "{test}: the tmpfs is still mounted"
        );
        // Another size is another cell: only the stop-leftovers step can unmount the
        // old cell's tmpfs, whose cell no longer runs.
        let s = lab.root.join("scenarios/s.toml");
        let text_s = std::fs::read_to_string(&s).unwrap();
        std::fs::write(&s, text_s.replace("size_mib = 4", "size_mib = 3")).unwrap();
        let rerun = bp(&lab.root, &["apply", "scenarios/s.toml"]);
        assert!(rerun.status.success(), "{test}: {}", text(&rerun));
        assert_nothing_left(&board);
    }
}

/// `[[before_run]]` (smb-fs drops the page cache with it): on its side before every
/// warm-up and measured run, ahead of the run's command; one that fails fails that run,
/// and its number is never stored. A recording fake transport, no board.
#[test]
fn fake_transport_before_run_steps_come_before_every_run_and_a_failing_one_fails_it() {
    use benchpipe::transport::fake::{FakeConnector, Log, Reply};
    use std::sync::{Arc, Mutex};
    struct Quiet;
    impl benchpipe::apply::Progress for Quiet {
        fn event(&self, _: benchpipe::apply::Event<'_>) {}
    }
    let dir = Project::new("before-run")
        .file(
            "boards/b1.toml",
            "model = \"fake\"\nlocal = true\nworkdir = \"/var/tmp/bp-fake-before/b1\"\n",
        )
        .file(
            "pipeline/cold.toml",
            "description = \"cold reads\"\nuses_storage = false\n\
         [[before_run]]\non = \"board\"\ncommand = \"echo BEFORE-{{ run }}\"\n\
         [run]\non = \"controller\"\ncommand = \"echo RUN-{{ run }}\"\nparse = \"json\"\n\
         [metrics]\nv = { from = \"v\", unit = \"s\", better = \"lower\" }\n",
        )
        .scenario(
            "s",
            "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"b1\"]\ntest = [\"cold\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = { runs = 1 }\nruns = { min = 2, max = 2 }\n",
        );
    let walk = |fail_second: bool| {
        let ws = benchpipe::check::load(&dir, &[dir.join("scenarios/s.toml")]).unwrap();
        let cells: Vec<_> = benchpipe::cli::plans(&ws)
            .into_iter()
            .flat_map(|(_, p)| p.cells)
            .collect();
        let _ = std::fs::remove_dir_all(dir.join("results"));
        let store = benchpipe::store::Store::open(dir.join("results")).unwrap();
        let log: Log = Arc::new(Mutex::new(Vec::new()));
        let connector = FakeConnector {
            script: Arc::new(move |_, c: &str| {
                if c.contains("RUN-") {
                    Reply::Ok("{\"v\": 1}\n".into())
                } else if fail_second && c.contains("BEFORE-2") {
                    Reply::Fail(1, "cannot drop the page cache".into())
                } else {
                    Reply::Ok(String::new())
                }
            }),
            log: log.clone(),
        };
        let outcome = benchpipe::apply::apply_with(
            &ws,
            &cells,
            &store,
            &Quiet,
            &std::sync::atomic::AtomicBool::new(false),
            &connector,
        )
        .unwrap();
        let order: Vec<String> = log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("BEFORE-") || l.contains("RUN-"))
            .cloned()
            .collect();
        (outcome, order)
    };
    let (outcome, order) = walk(false);
    assert_eq!(outcome.completed, 1);
    assert_eq!(
        order,
        [
            "b1: echo BEFORE-1",
            "controller: echo RUN-1",
            "b1: echo BEFORE-1",
            "controller: echo RUN-1",
            "b1: echo BEFORE-2",
            "controller: echo RUN-2",
        ],
        "the warm-up, then two measured runs"
    );
    let (outcome, order) = walk(true);
    assert_eq!(outcome.failed.len(), 1, "{order:?}");
    let cause = outcome.failed[0].1.to_string();
    assert!(
        cause.contains("before_run 1") && cause.contains("cannot drop the page cache"),
        "{cause}"
    );
    assert_eq!(order.last().map(String::as_str), Some("b1: echo BEFORE-2"));
    let measured = samples(&dir).len();
    assert_eq!(
        measured, 1,
        "only the run before the failing step is stored"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A listener of someone else's on `port` in the board's network namespace (an iperf3
/// server), up once `ss` sees it; stopped when dropped.
pub(crate) struct HeldPort(std::process::Child);

pub(crate) fn hold_port(board: &LabBoard, port: u16) -> HeldPort {
    let child = std::process::Command::new("ip")
        .args(["netns", "exec", &board.netns, "iperf3", "-s", "-p"])
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let held = HeldPort(child);
    let t0 = std::time::Instant::now();
    let listening = || {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &board.netns, "ss", "-Hltn"])
            .arg(format!("sport = :{port}"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).contains(&port.to_string())
    };
    while !listening() {
        assert!(t0.elapsed().as_secs() < 30, "iperf3 never listened");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    held
}

impl Drop for HeldPort {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
