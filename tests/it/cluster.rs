//! Integration tests: clusters as the system under test and peer boards, on lab
//! boards. The shipped `scenarios/lab-cluster.toml` (an nginx load balancer on one
//! member in front of the app on the others, deployed by shell templates) runs end to
//! end, 2 nodes against 3; iperf3 to every member at once sums the rates of one run;
//! a client runs on a peer board; afterwards no server, guard or deployed process is
//! left on any member or the controller, also when a member is lost mid-run.

use crate::scratch::{Project, Scratch};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::lab::{Lab, bp, text};
use crate::repo;

/// The shipped recipes and the shipped lab-cluster scenario with the lab's board names.
fn workspace(lab: &Lab, edit: impl FnOnce(String) -> String) -> String {
    let mut text = std::fs::read_to_string(repo().join("scenarios/lab-cluster.toml")).unwrap();
    for i in 1..=3 {
        text = text.replace(
            &format!("\"lab-{i}\""),
            &format!("\"{}\"", lab.board(i - 1).name),
        );
    }
    Project::at(&lab.root)
        .all_recipes()
        .scenario("lab-cluster", &edit(text));
    "scenarios/lab-cluster.toml".to_string()
}

/// `(address, samples)` of every stored cell.
fn cells(root: &Path) -> Vec<(Value, Vec<Value>)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(root.join("results")) else {
        return out;
    };
    for e in dir.flatten() {
        let Ok(cell) = std::fs::read_to_string(e.path().join("cell.json")) else {
            continue;
        };
        let cell: Value = serde_json::from_str(&cell).unwrap();
        let samples = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        let samples = samples
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        out.push((cell["address"].clone(), samples));
    }
    out
}

fn measured(samples: &[Value]) -> Vec<&Value> {
    samples.iter().filter(|s| s["kind"] == "measured").collect()
}

/// Processes of the lab boards' network namespaces whose command line names one of
/// `names`, and of the controller's that also name one of the lab's boards (its
/// address or workdir: other tests' tools run on the controller too), after up to 20 s.
pub(crate) fn left_on(lab: &Lab, names: &[&str]) -> String {
    left_on_boards(lab, lab.info.boards.len(), names)
}

/// `left_on` for the controller and the first `n` boards.
fn left_on_boards(lab: &Lab, n: usize, names: &[&str]) -> String {
    let own = std::fs::read_link("/proc/self/ns/net").unwrap();
    let mut spaces = Vec::new();
    let ours: Vec<String> = lab
        .info
        .boards
        .iter()
        .flat_map(|b| {
            [
                format!("{} ", b.address),
                format!("{}:", b.address),
                b.workdir.clone(),
                format!("/{}", b.name),
            ]
        })
        .chain([
            lab.root.to_string_lossy().into_owned(),
            // The clusters' directories on the controller (lab-c2, lab-c3), this lab's.
            lab.controller_dir("lab-c").to_string_lossy().into_owned(),
        ])
        .collect();
    for b in &lab.info.boards[..n] {
        let sshd = std::fs::read_to_string(&b.sshd_pid_file).unwrap_or_default();
        if let Ok(ns) = std::fs::read_link(format!("/proc/{}/ns/net", sshd.trim())) {
            spaces.push(ns);
        }
        if let Ok(out) = std::process::Command::new("ip")
            .args(["netns", "pids", &b.netns])
            .output()
            && let Some(pid) = String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .next()
            && let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/net"))
        {
            spaces.push(ns);
        }
    }
    let left = crate::leftovers::processes_where(
        names,
        |pid, cmd| {
            let ns = std::fs::read_link(format!("/proc/{pid}/ns/net")).ok();
            let on_controller =
                ns.as_ref() == Some(&own) && ours.iter().any(|o| cmd.contains(o.as_str()));
            on_controller || ns.is_some_and(|n| spaces.contains(&n))
        },
        Duration::from_secs(20),
    );
    // The tail of each command line: a board-side script's is long, its end says whose.
    left.lines()
        .map(|line| {
            let (pid, cmd) = line.split_once(' ').unwrap_or((line, ""));
            let tail: String = cmd
                .chars()
                .rev()
                .take(160)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!("{pid} ...{tail}\n")
        })
        .collect()
}

/// Nothing of the cluster's is left: no nginx, iperf3, wrk or guard on any member or
/// the controller, and no directory of the deploy in any member's workdir.
fn assert_nothing_left(lab: &Lab) {
    assert_nothing_left_on(lab, lab.info.boards.len());
}

/// `assert_nothing_left` on the controller and the first `n` boards.
fn assert_nothing_left_on(lab: &Lab, n: usize) {
    let mut names: Vec<String> = vec![
        "nginx".into(),
        "iperf3".into(),
        "wrk ".into(),
        "benchpipe-sampler".into(),
    ];
    for b in &lab.info.boards[..n] {
        names.push(b.workdir.clone());
    }
    let needles: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(left_on_boards(lab, n, &needles), "", "processes left");
    for b in &lab.info.boards[..n] {
        for d in ["cluster-app", "cluster-lb"] {
            let p = Path::new(&b.workdir).join(d);
            assert!(!p.exists(), "{} is left", p.display());
        }
    }
}

#[test]
fn the_lab_cluster_compares_two_nodes_with_three_and_leaves_nothing_running() {
    let Some(lab) = Lab::up(3) else { return };
    let file = workspace(&lab, |t| t);
    let check = bp(&lab.root, &["check", &file]);
    assert!(check.status.success(), "{}", text(&check));
    let dry = bp(&lab.root, &["apply", "--dry-run", &file]);
    let dry_text = text(&dry);
    assert!(dry.status.success(), "{dry_text}");
    for want in [
        "cluster lab-c3 (",
        "connect member",
        "arm the guards",
        "deploy on",
        "disarm the guards",
    ] {
        assert!(dry_text.contains(want), "{want}: {dry_text}");
    }
    let out = bp(&lab.root, &["apply", &file]);
    assert!(out.status.success(), "{}", text(&out));
    let all = cells(&lab.root);
    assert_eq!(all.len(), 4, "2 clusters x 2 tests: {all:?}");
    for (address, samples) in &all {
        let runs = measured(samples);
        assert_eq!(runs.len(), 3, "{address}");
        let test = address["test"].as_str().unwrap();
        let cluster = address["board"].as_str().unwrap();
        let members = if cluster == "lab-c3" { 3 } else { 2 };
        for s in runs {
            let m = &s["metrics"];
            if test == "http-load" {
                assert!(m["requests_per_sec"].as_f64().unwrap() > 0.0, "{s}");
                assert_eq!(m["errors"], 0.0, "{s}");
            } else {
                let rates: Vec<f64> = lab.info.boards[..members]
                    .iter()
                    .map(|b| m[format!("rate@{}", b.name)].as_f64().unwrap())
                    .collect();
                assert!(rates.iter().all(|r| *r > 0.0), "{s}");
                let sum = m["sum"].as_f64().unwrap();
                assert!((sum - rates.iter().sum::<f64>()).abs() < 1e-6 * sum, "{s}");
            }
            // The sampler ran on every member.
            let t = s["telemetry"]["members"].as_object().unwrap();
            assert_eq!(t.len(), members, "{s}");
        }
    }
    let report = std::fs::read_to_string(lab.root.join("reports/lab-cluster/index.md")).unwrap();
    assert!(
        report.contains("lab-c2") && report.contains("lab-c3"),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "{}, {}, {}",
            lab.board(0).name,
            lab.board(1).name,
            lab.board(2).name
        )),
        "the report names the members: {report}"
    );
    assert_nothing_left(&lab);

    // The lab's board files gone (`lab down`, boards retired): the report from the store
    // and the scenario alone is the one apply wrote, its clusters' cells and all.
    let boards = lab.root.join("boards");
    let aside = lab.root.join("boards.aside");
    std::fs::rename(&boards, &aside).unwrap();
    std::fs::create_dir(&boards).unwrap();
    let alone = bp(&lab.root, &["report", "--out", "reports-alone", &file]);
    std::fs::remove_dir(&boards).unwrap();
    std::fs::rename(&aside, &boards).unwrap();
    assert!(alone.status.success(), "{}", text(&alone));
    for name in ["index.md", "index.html", "report.json", "results.csv"] {
        let with_files = std::fs::read(lab.root.join("reports/lab-cluster").join(name)).unwrap();
        let from_store =
            std::fs::read(lab.root.join("reports-alone/lab-cluster").join(name)).unwrap();
        assert!(
            with_files == from_store,
            "{name} differs without the board files:\n{}\n---\n{}",
            String::from_utf8_lossy(&with_files),
            String::from_utf8_lossy(&from_store)
        );
    }
}

/// The shipped scenario cut to the 3-node cluster's load test, with many short runs,
/// and a plain board beside it measuring iperf3 to itself (a per-member run of one).
fn long_running(lab: &Lab) -> String {
    let plain = lab.board(3).name.to_string();
    workspace(lab, |t| {
        t.replace("board = [\"lab-c2\", \"lab-c3\"]", &format!("board = [\"lab-c3\", \"{plain}\"]"))
            .replace(
                "test = [\"http-load\", \"iperf3-all-boards\"]",
                &format!(
                    "test = [\"http-load\", \"iperf3-all-boards\"]\n\
                     exclude = [{{ board = \"lab-c3\", test = \"iperf3-all-boards\" }}, \
                     {{ board = \"{plain}\", test = \"http-load\" }}]"
                ),
            )
            .replace("runs = { min = 3, max = 3 }", "runs = { min = 15, max = 15 }")
            .replace("[params.http-load]\nseconds = 2", "[params.http-load]\nseconds = 1")
            .replace("[params.iperf3-all-boards]\nseconds = 2", "[params.iperf3-all-boards]\nseconds = 1")
            .replace(
                "[[report.compare]]\nmetric = \"http-load.requests_per_sec\"\nbaseline = { board = \"lab-c2\" }\ncandidate = { board = \"lab-c3\" }\n",
                "",
            )
    })
}

fn spawn_apply(root: &Path, file: &str) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", file]))
        .current_dir(root)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the cluster's load test has stored a measured run.
fn wait_for_a_cluster_run(lab: &Lab) {
    let t0 = Instant::now();
    loop {
        let measuring = cells(&lab.root).iter().any(|(a, s)| {
            a["board"] == "lab-c3" && a["test"] == "http-load" && !measured(s).is_empty()
        });
        if measuring {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(300),
            "the cluster never measured"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A member lost mid-run (its sshd killed): the cluster's cells fail with the member's
/// loss, the board beside it finishes its cells, and nothing is left running: the
/// other members and the controller are torn down by benchpipe, the lost member by its
/// guard.
#[test]
fn a_member_lost_mid_run_fails_the_cluster_alone_and_its_guard_tears_it_down() {
    let Some(lab) = Lab::up(4) else { return };
    let file = long_running(&lab);
    let child = spawn_apply(&lab.root, &file);
    wait_for_a_cluster_run(&lab);
    let lost = lab.board(1);
    let app = crate::processes_matching(&[&format!("{}/cluster-app", lost.workdir)]);
    assert!(app.contains("nginx"), "the app runs on the member: {app}");
    benchpipe::lab::kill_sshd(lost).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    let failure = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with("http-load-lab-c3")
        })
        .map(|e| std::fs::read_to_string(e.path().join("failure.json")).unwrap())
        .expect("the cluster's cell failed");
    let failure: Value = serde_json::from_str(&failure).unwrap();
    assert_eq!(failure["failure"]["kind"], "board_lost", "{failure}");
    let cause = failure["failure"]["cause"].as_str().unwrap();
    assert!(
        cause.contains(&format!("member {} of cluster lab-c3 is lost", lost.name)),
        "{cause}"
    );
    // The plain board went on to the end.
    let plain = cells(&lab.root)
        .into_iter()
        .find(|(a, _)| a["board"] == lab.board(3).name.as_str())
        .expect("the plain board's cell");
    assert_eq!(measured(&plain.1).len(), 15, "{err}");
    assert_nothing_left(&lab);
}

/// benchpipe killed (SIGKILL) while the cluster serves: its connections end, and every
/// member's guard (and the controller's) tears its own side down by itself.
#[test]
fn a_killed_apply_leaves_nothing_on_the_cluster_its_guards_tear_it_down() {
    let Some(lab) = Lab::up(4) else { return };
    let file = long_running(&lab);
    let mut child = spawn_apply(&lab.root, &file);
    wait_for_a_cluster_run(&lab);
    let deployed = left_on(&lab, &["nginx"]);
    assert!(deployed.contains("nginx"), "the cluster serves: {deployed}");
    child.kill().unwrap();
    child.wait().unwrap();
    // The members and the controller by their guards; the plain board's server, as
    // for any board, waits for the next apply to stop it.
    assert_nothing_left_on(&lab, 3);
    // The next apply finds nothing in its way and measures.
    let rerun = bp(&lab.root, &["apply", &file]);
    assert!(rerun.status.success(), "{}", text(&rerun));
    assert_nothing_left(&lab);
}

/// A workspace of the shipped recipes and a scenario over boards 1 and 2.
fn peer_workspace(lab: &Lab, tests: &str, params: &str, extra: &[(&str, &str)]) -> String {
    let p = extra
        .iter()
        .fold(lab.project().all_recipes(), |p, (name, text)| {
            p.file(&format!("pipeline/{name}.toml"), text)
        });
    p.scenario(
        "peer",
        &format!(
            "title = \"peer\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\n\
             board = [\"{}\", \"{}\"]\ntest = [{tests}]\n[method]\ncooldown = \"0s\"\n\
             warmup = {{ runs = 1 }}\nruns = {{ min = 3, max = 3 }}\n{params}",
            lab.board(0).name,
            lab.board(1).name
        ),
    );
    "scenarios/peer.toml".to_string()
}

/// iperf3 from a peer board to the board: measured, the peer held so that its own
/// cells never run at the same time, its own cell of the test skipped (a board is no
/// peer of itself), and nothing left running on either.
#[test]
fn a_client_on_a_peer_board_measures_while_the_peer_is_held() {
    let Some(lab) = Lab::up(2) else { return };
    let (a, b) = (lab.board(0).name.to_string(), lab.board(1).name.to_string());
    let file = peer_workspace(
        &lab,
        "\"iperf3-peer\", \"iperf3-all-boards\"",
        &format!(
            "[params.iperf3-peer]\npeer = \"{b}\"\nseconds = 1\n[params.iperf3-all-boards]\nseconds = 1\n"
        ),
        &[],
    );
    let check = bp(&lab.root, &["check", &file]);
    assert!(check.status.success(), "{}", text(&check));
    let plan = bp(&lab.root, &["plan", &file]);
    let plan_text = text(&plan);
    assert!(
        plan_text.contains(&format!(
            "the peer of test iperf3-peer on {b} is {b} itself"
        )),
        "{plan_text}"
    );
    let dry = bp(&lab.root, &["apply", "--dry-run", &file]);
    let dry_text = text(&dry);
    assert!(
        dry_text.contains(&format!("connect peer {b}")),
        "{dry_text}"
    );
    assert!(dry_text.contains(&format!("hold {b}")), "{dry_text}");
    let out = bp(&lab.root, &["apply", &file]);
    assert!(out.status.success(), "{}", text(&out));
    let all = cells(&lab.root);
    let peer = all
        .iter()
        .find(|(c, _)| c["test"] == "iperf3-peer")
        .expect("the peer cell");
    assert_eq!(peer.0["board"], a.as_str());
    let runs = measured(&peer.1);
    assert_eq!(runs.len(), 3);
    for s in &runs {
        assert!(s["metrics"]["throughput"].as_f64().unwrap() > 0.0, "{s}");
    }
    // The peer's own cell never ran while the peer was held by the other walk.
    let (ps, pe) = (
        runs.iter()
            .map(|s| s["started"].as_f64().unwrap())
            .fold(f64::MAX, f64::min),
        runs.iter()
            .map(|s| s["ended"].as_f64().unwrap())
            .fold(0.0, f64::max),
    );
    let own = all
        .iter()
        .find(|(c, _)| c["test"] == "iperf3-all-boards" && c["board"] == b.as_str())
        .expect("the peer's own cell");
    for s in measured(&own.1) {
        let (s0, s1) = (s["started"].as_f64().unwrap(), s["ended"].as_f64().unwrap());
        assert!(
            s1 <= ps || s0 >= pe,
            "the peer ran its own cell meanwhile: {s}"
        );
    }
    let cell = std::fs::read_to_string(
        std::fs::read_dir(lab.root.join("results"))
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().contains("iperf3-peer"))
            .unwrap()
            .path()
            .join("cell.json"),
    )
    .unwrap();
    let cell: Value = serde_json::from_str(&cell).unwrap();
    assert_eq!(
        cell["inputs"]["peer"]["name"],
        b.as_str(),
        "the peer is in the key"
    );
    let report = std::fs::read_to_string(lab.root.join("reports/peer/index.md")).unwrap();
    assert!(
        report.contains(&format!("| peer board | {b} (")),
        "{report}"
    );
    assert_nothing_left(&lab);
}

/// A service of the cell's on the peer, and the board lost mid-run: the peer's service
/// is stopped all the same, as the controller's would be.
#[test]
fn a_peers_services_are_stopped_when_the_board_is_lost() {
    let Some(lab) = Lab::up(2) else { return };
    let b = lab.board(1).name.to_string();
    let marker = lab.root.join("run-started");
    let recipe = format!(
        "description = \"a server on the peer, a long run on the board\"\nuses_storage = false\n\
         [params]\npeer = \"\"\n\
         [[services]]\nname = \"holder\"\non = \"peer\"\ncommand = \"cd {{{{ peer_dir }}}} && sleep 603\"\n\
         [run]\ncommand = \"touch {} && sleep 30 && echo '{{\\\"v\\\": 1}}'\"\nparse = \"json\"\n\
         [metrics]\nv = {{ from = \"v\", unit = \"x\", better = \"higher\" }}\n",
        marker.display()
    );
    let file = peer_workspace(
        &lab,
        "\"holds-peer\"",
        &format!("[params.holds-peer]\npeer = \"{b}\"\n"),
        &[("holds-peer", &recipe)],
    );
    let check = bp(&lab.root, &["check", &file]);
    assert!(check.status.success(), "{}", text(&check));
    let child = spawn_apply(&lab.root, &file);
    let t0 = Instant::now();
    while !marker.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "the run never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let holder = crate::processes_matching(&["sleep 603"]);
    assert!(
        holder.contains("peer-"),
        "the service runs on the peer: {holder}"
    );
    benchpipe::lab::kill_sshd(lab.board(0)).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        crate::processes_left(&["sleep 603"]),
        "",
        "the peer's service outlived the board's loss"
    );
}

fn fixture(name: &str) -> String {
    repo()
        .join("tests/data/tool-outputs")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// iperf3-all-boards' metrics from real iperf3 output, through the real script: each
/// member's rate and their sum; a member's refused connection (iperf3's error JSON,
/// whatever its exit status) gives no sum at all.
#[test]
fn iperf3_all_boards_sums_every_members_rate_and_a_refused_member_gives_no_sum() {
    use benchpipe::bench::members;
    use benchpipe::transport::Transport;
    let recipes = benchpipe::config::load_recipes(repo()).unwrap();
    let recipe = &recipes[&benchpipe::model::TestName::new("iperf3-all-boards")];
    let dir = Scratch::new("sum");
    let run = |commands: &[(&str, String)]| {
        let nonce = members::nonce();
        let owned: Vec<(String, String)> = commands
            .iter()
            .map(|(m, c)| (m.to_string(), c.clone()))
            .collect();
        let script = members::script(&dir.to_string_lossy(), &nonce, &owned);
        let out = benchpipe::transport::local::Local::new()
            .run(&script, None)
            .unwrap();
        let names: Vec<String> = owned.iter().map(|(m, _)| m.clone()).collect();
        members::split(&nonce, &names, &out.stdout_str(), &out.stderr_str()).unwrap()
    };
    let cat = |f: &str| format!("cat {}", benchpipe::transport::quote::sh(&fixture(f)));
    let sections = run(&[("a", cat("iperf3-down.json")), ("b", cat("iperf3-up.json"))]);
    let got = members::metrics(recipe, &sections).unwrap();
    let rate = |f: &str| {
        let doc: Value =
            serde_json::from_str(&std::fs::read_to_string(fixture(f)).unwrap()).unwrap();
        doc["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap()
            * 1e-6
    };
    assert_eq!(got["rate@a"], rate("iperf3-down.json"));
    assert_eq!(got["rate@b"], rate("iperf3-up.json"));
    assert_eq!(got["sum"], got["rate@a"] + got["rate@b"]);
    for (exit, label) in [("exit 0", "exit 0"), ("exit 1", "exit 1")] {
        let sections = run(&[
            ("a", cat("iperf3-down.json")),
            ("b", format!("{}; {exit}", cat("iperf3-error.json"))),
        ]);
        let e = members::metrics(recipe, &sections).unwrap_err().to_string();
        assert!(
            e.starts_with("member b: ") && e.contains("Connection refused"),
            "{label}: {e}"
        );
    }
}

/// Through apply on a 2-board cluster: one member's client fails, so the run fails
/// naming that member, and no sample (no partial sum) is stored.
#[test]
fn a_member_whose_client_fails_fails_the_run_and_no_partial_sum_is_stored() {
    let Some(lab) = Lab::up(2) else { return };
    let bad = lab.board(1).name.to_string();
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    let shipped = std::fs::read_to_string(repo().join("pipeline/iperf3-all-boards.toml")).unwrap();
    let from = "command = \"iperf3 -J -c {{ host }}";
    assert!(shipped.contains(from));
    let failing = shipped.replace(
        from,
        &format!("command = \"if [ {{{{ board }}}} = {bad} ]; then echo refused >&2; exit 3; fi; iperf3 -J -c {{{{ host }}}}"),
    );
    std::fs::write(root.join("pipeline/iperf3-all-boards.toml"), failing).unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"sum\"\n[images.installed]\ninstalled = true\n\
             [clusters.pair]\nmembers = [\"{}\", \"{bad}\"]\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"pair\"]\ntest = [\"iperf3-all-boards\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.iperf3-all-boards]\nseconds = 1\n",
            lab.board(0).name
        ),
    )
    .unwrap();
    let out = bp(root, &["apply", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let all = cells(root);
    assert_eq!(all.len(), 1);
    assert!(all[0].1.is_empty(), "no sample: {:?}", all[0].1);
    let failure = std::fs::read_dir(root.join("results"))
        .unwrap()
        .flatten()
        .find_map(|e| std::fs::read_to_string(e.path().join("failure.json")).ok())
        .expect("a failure.json");
    assert!(
        failure.contains(&format!("Measured run 1 on member {bad}")) && failure.contains("refused"),
        "{failure}"
    );
    assert_nothing_left(&lab);
}

/// A K3s-shaped cluster on the shipped Turing Pi boards (which CI cannot reach): a helm
/// deploy and a kubectl teardown on the controller, the Minecraft start-up read with
/// kubectl on the control member and on the controller, web load on the ingress. It
/// passes `check`, and its plan holds the cluster's steps.
#[test]
fn a_k3s_shaped_cluster_scenario_passes_check_and_plan() {
    let root = Scratch::new("k3s");
    // The seed workspace's boards (the Turing Pi's nodes) and the built-in recipes.
    std::fs::create_dir_all(root.join("boards")).unwrap();
    for e in std::fs::read_dir(repo().join("examples/seeds/boards"))
        .unwrap()
        .flatten()
    {
        std::fs::copy(e.path(), root.join("boards").join(e.file_name())).unwrap();
    }
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(
        root.join("scenarios/k3s.toml"),
        r#"title = "K3s on a Turing Pi: Minecraft and Drupal through one ingress"

[images.installed]
installed = true

[clusters.turing-k3s]
members = ["turing-cm3-*"]
control = "turing-cm3-1"
endpoint = { host = "drupal.turing.local", port = 80 }

[[clusters.turing-k3s.deploy]]
command = "helm upgrade --install drupal oci://registry-1.docker.io/bitnamicharts/drupal -n drupal --create-namespace --wait --timeout 15m"

[[clusters.turing-k3s.deploy]]
on = "turing-cm3-1"
command = "kubectl apply -f /home/pi/k3s/minecraft.yaml && kubectl -n minecraft rollout status deploy/minecraft --timeout=15m"

[[clusters.turing-k3s.teardown]]
on = "turing-cm3-1"
command = "kubectl delete -f /home/pi/k3s/minecraft.yaml --wait --ignore-not-found"

[[clusters.turing-k3s.teardown]]
command = "helm uninstall drupal -n drupal --wait"

[matrix]
image = ["installed"]
board = ["turing-k3s"]
test = ["http-load", "minecraft-startup", "startup-kubectl"]

[method]
cooldown = "1m"
runs = { min = 3, max = 3 }

[params.minecraft-startup]
follow = "kubectl"

[params.http-load]
seconds = 30
threads = 4
connections = 100
"#,
    )
    .unwrap();
    let check = bp(&root, &["check", "scenarios/k3s.toml"]);
    assert!(check.status.success(), "{}", text(&check));
    let plan = bp(&root, &["plan", "--json", "scenarios/k3s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let doc: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let walk = &doc["schedule"]["boards"][0];
    assert_eq!(walk["board"], "turing-k3s");
    // The seed's seven CM3+ nodes, every board file `turing-cm3-*` matches.
    let seven: Vec<String> = (1..=7).map(|n| format!("turing-cm3-{n}")).collect();
    assert_eq!(walk["members"], serde_json::json!(seven));
    let actions: Vec<String> = walk["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let a = s["action"].as_str().unwrap().to_string();
            match s.get("on").and_then(Value::as_str) {
                Some(on) => format!("{a} {on}"),
                None => a,
            }
        })
        .collect();
    for want in [
        "connect-member",
        "member-facts",
        "arm-guard",
        "deploy controller",
        "deploy turing-cm3-1",
        "measure",
        "undeploy turing-cm3-1",
        "undeploy controller",
        "disarm-guard",
    ] {
        assert!(
            actions
                .iter()
                .any(|a| a == want || a.starts_with(&format!("{want} "))),
            "{want}: {actions:?}"
        );
    }
    assert_eq!(doc["cells"].as_array().unwrap().len(), 3);
    let _ = std::fs::remove_dir_all(&root);
}

/// The start-up time read through a command template (`kubectl logs -f`, a fake
/// kubectl on the test's PATH, since there is no Kubernetes here: tests/it/startup.rs's
/// stand-in, whose old pod still prints its `Done` line): on the cluster's control
/// member (minecraft-startup, `follow = "kubectl"`) and on the controller
/// (startup-kubectl). The fake says where it ran.
#[test]
fn fake_kubectl_start_up_time_is_read_on_the_control_member_and_on_the_controller() {
    let Some(lab) = Lab::up(2) else { return };
    let root = &lab.root;
    let (bin, calls) = crate::startup::fake_kubectl(root, 602);
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for name in ["minecraft-startup", "startup-kubectl"] {
        crate::startup::recipe_with_path(root, name, &bin);
    }
    let control = lab.board(1);
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"start-up\"\n[images.installed]\ninstalled = true\n\
             [clusters.k]\nmembers = [\"{}\", \"{}\"]\ncontrol = \"{}\"\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"k\"]\ntest = [\"minecraft-startup\", \"startup-kubectl\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.minecraft-startup]\nfollow = \"kubectl\"\ntimeout_s = 30\n\
             [params.startup-kubectl]\ntimeout_s = 30\n",
            lab.board(0).name,
            control.name,
            control.name
        ),
    )
    .unwrap();
    let out = bp(root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let all = cells(root);
    assert_eq!(all.len(), 2);
    for (address, samples) in &all {
        let runs = measured(samples);
        assert_eq!(runs.len(), 2, "{address}");
        for s in runs {
            // The new pod's own figure, never the terminating pod's 1.111 s.
            assert_eq!(
                s["metrics"]["server_seconds"].as_f64(),
                Some(7.654),
                "{address}: {s}"
            );
        }
    }
    let calls = std::fs::read_to_string(&calls).unwrap();
    let on_member = calls
        .lines()
        .filter(|l| l.contains(&format!(" {} 22", control.address)))
        .count();
    let on_controller = calls.lines().filter(|l| l.ends_with(" controller")).count();
    assert!(on_member >= 2 && on_controller >= 2, "{calls}");
    assert!(
        !calls.contains(&format!(" {} 22", lab.board(0).address)),
        "{calls}"
    );
    assert_eq!(
        crate::processes_left(&["sleep 602"]),
        "",
        "the follower outlived its run"
    );
}

/// A project of two fake boards (`local`, nothing runs) and a cluster of both, whose
/// deploy and teardown run on b2 and the controller, with a per-member test.
fn fake_project(tag: &str) -> Project {
    let mut p = Project::new(&format!("cluster-{tag}"));
    for b in ["b1", "b2"] {
        p = p.file(
            &format!("boards/{b}.toml"),
            &format!(
                "model = \"fake board\"\nlocal = true\nworkdir = \"/var/tmp/bp-fake-cluster/{b}\"\n"
            ),
        );
    }
    p = p.file(
        "pipeline/gamma.toml",
        r#"description = "a server on every member, a client per member on the controller"
uses_storage = false
[[services]]
name = "srv"
on = "members"
command = "serve {{ board }}"
[run]
on = "controller"
per_member = true
command = "client {{ host }} RUN-gamma"
parse = "json"
[metrics]
rate = { from = "v", unit = "x", better = "higher", per_member = true }
sum = { sum_of = "rate", unit = "x", better = "higher" }
"#,
    );
    p = p.file(
        "scenarios/s.toml",
        r#"title = "fake cluster"
[images.installed]
installed = true
[clusters.c]
members = ["b1", "b2"]
[[clusters.c.deploy]]
on = "b2"
command = "echo DEPLOY-b2 {{ host }}"
[[clusters.c.deploy]]
command = "echo DEPLOY-controller {{ endpoint_host }}"
[[clusters.c.teardown]]
on = "b2"
command = "echo UNDEPLOY-b2"
[[clusters.c.teardown]]
command = "echo UNDEPLOY-controller"
[matrix]
image = ["installed"]
board = ["c"]
test = ["gamma"]
[method]
cooldown = "0s"
warmup = { runs = 1 }
runs = { min = 2, max = 2 }
"#,
    );
    p
}

/// The fake's answers: a guard's carrier, and each member's section of a per-member
/// run (read from the marker lines the script would print).
fn fake_replies(command: &str) -> benchpipe::transport::fake::Reply {
    use benchpipe::transport::fake::Reply;
    if command.contains("start_time")
        && command.starts_with("start_time()")
        && command.contains("echo ")
        && !command.contains("stop_group")
    {
        return Reply::Ok("4242 99\n".into());
    }
    if command.contains("RUN-gamma") {
        let mut out = String::new();
        for line in command.lines().filter(|l| {
            l.starts_with("printf '\\n%s %s <==\\n' '==> benchpipe-") && !l.contains(">&2")
        }) {
            let marker = line.split('\'').nth(3).unwrap();
            out.push_str(&format!("\n{marker} 0 <==\n{{\"v\": 2}}\n"));
        }
        return Reply::Ok(out);
    }
    Reply::Ok(String::new())
}

#[derive(Default)]
struct Steps(std::sync::Mutex<Vec<String>>);

impl benchpipe::apply::Progress for Steps {
    fn event(&self, e: benchpipe::apply::Event<'_>) {
        use benchpipe::apply::{Event, StepStatus};
        let line = match e {
            Event::Step { step, status, .. } => {
                let status = match status {
                    StepStatus::Ran => "ran".to_string(),
                    StepStatus::Done => "done".to_string(),
                    StepStatus::Skipped { reason } => format!("skipped: {reason}"),
                    StepStatus::Failed { cause } => format!("FAILED: {cause}"),
                };
                format!("{} [{status}]", step.action.label())
            }
            Event::CellFailed { cell, cause, .. } => format!("= failed {}: {cause}", cell.label()),
            Event::CellDone { cell, .. } => format!("= done {}", cell.label()),
            _ => return,
        };
        self.0.lock().unwrap().push(line);
    }
}

fn fake_walk(
    dir: &Path,
    script: benchpipe::transport::fake::Script,
) -> (Vec<String>, Vec<String>, benchpipe::apply::Outcome) {
    let ws = benchpipe::check::load(dir, &[dir.join("scenarios/s.toml")]).expect("loads");
    let cells: Vec<_> = benchpipe::cli::plans(&ws)
        .into_iter()
        .flat_map(|(_, p)| p.cells)
        .collect();
    let store = benchpipe::store::Store::open(dir.join("results")).unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let connector = benchpipe::transport::fake::FakeConnector {
        script,
        log: log.clone(),
    };
    let steps = Steps::default();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let outcome =
        benchpipe::apply::apply_with(&ws, &cells, &store, &steps, &stop, &connector).unwrap();
    let commands = log.lock().unwrap().clone();
    (steps.0.into_inner().unwrap(), commands, outcome)
}

/// The cluster's walk over fakes: every member connected and asked for its facts, the
/// guards armed before the deploy, the cell's service on every member and a client per
/// member in one run, then the teardown where it says and the guards disarmed; the
/// steps walked are the ones `plan --json` shows, in its order.
#[test]
fn fake_transport_cluster_walk_is_the_planned_one() {
    let dir = fake_project("walk");
    let plan = bp(&dir, &["plan", "--json", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let doc: Value = serde_json::from_slice(&plan.stdout).unwrap();
    let planned: Vec<String> = doc["schedule"]["boards"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["action"].as_str().unwrap().to_string())
        .collect();
    let (steps, commands, outcome) = fake_walk(&dir, std::sync::Arc::new(|_, c| fake_replies(c)));
    let want = [
        "connect member b1 [ran]",
        "connect member b2 [ran]",
        "claim workdir (and the controller's) [ran]",
        "provision gamma [ran]",
        "stop leftover services [ran]",
        "gather facts of member b1 [ran]",
        "gather facts of member b2 [ran]",
        "arm the guards (teardown if a connection ends) [ran]",
        "deploy on b2 (1 command(s)) [ran]",
        "deploy on controller (1 command(s)) [ran]",
        "open gamma [ran]",
        "start srv for gamma [ran]",
        "cool-down: none [ran]",
        "warm up gamma (1 run(s)) [ran]",
        "measure 2 run(s), blocked [ran]",
        "stop srv for gamma [ran]",
        "tear down the cluster on b2 (1 command(s)) [ran]",
        "tear down the cluster on controller (1 command(s)) [ran]",
        "disarm the guards [ran]",
        "= done gamma on c (installed)",
    ];
    assert_eq!(steps, want, "{steps:#?}");
    assert_eq!(planned.len(), want.len() - 1, "{planned:?}");
    assert_eq!(outcome.completed, 1);
    let at = |needle: &str| {
        commands
            .iter()
            .position(|c| c.contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {commands:#?}"))
    };
    assert!(commands[at("DEPLOY-b2")].starts_with("b2: "));
    assert!(commands[at("DEPLOY-controller")].starts_with("controller: "));
    assert!(
        at("#start-service guard-c") < at("DEPLOY-b2"),
        "guards first"
    );
    assert!(
        at("UNDEPLOY-b2") < at("#stop-service guard-c"),
        "guards last"
    );
    for b in ["b1", "b2"] {
        assert!(
            commands
                .iter()
                .any(|c| c.starts_with(&format!("{b}: #start-service"))
                    && c.contains(&format!("serve {b}"))),
            "the service runs on {b}: {commands:#?}"
        );
    }
    let store = std::fs::read_dir(dir.join("results"))
        .unwrap()
        .flatten()
        .find(|e| e.path().join("samples.jsonl").exists())
        .unwrap();
    let samples = std::fs::read_to_string(store.path().join("samples.jsonl")).unwrap();
    let last: Value = serde_json::from_str(samples.lines().last().unwrap()).unwrap();
    assert_eq!(last["metrics"]["rate@b1"], 2.0);
    assert_eq!(last["metrics"]["sum"], 4.0);
}

/// b2 lost during the measured runs: the cluster's cell fails with the member's loss;
/// b2's own teardown is left to its guard, the controller's still runs.
#[test]
fn fake_transport_a_lost_member_fails_the_cluster_and_the_controller_still_tears_down() {
    use benchpipe::transport::fake::Reply;
    let dir = fake_project("lost");
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    let (steps, commands, outcome) = fake_walk(
        &dir,
        std::sync::Arc::new(move |target, c| {
            if c.contains("RUN-gamma") {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            let measuring = counter.load(std::sync::atomic::Ordering::SeqCst) >= 2;
            if target == "b2" && measuring && !c.contains("#connect") {
                return Reply::Lost;
            }
            fake_replies(c)
        }),
    );
    let lost = "member b2 of cluster c is lost: b2: connection lost: fake: connection lost";
    let walked: Vec<&str> = steps
        .iter()
        .map(String::as_str)
        .filter(|s| !s.starts_with("= "))
        .collect();
    let tail = &walked[walked.len() - 5..];
    assert_eq!(
        tail,
        [
            format!("measure 2 run(s), blocked [FAILED: {lost}]").as_str(),
            "stop srv for gamma [ran]",
            "tear down the cluster on b2 (1 command(s)) [skipped: b2 is lost; its guard tears it down]",
            "tear down the cluster on controller (1 command(s)) [ran]",
            "disarm the guards [ran]",
        ],
        "{steps:#?}"
    );
    assert!(
        steps
            .iter()
            .any(|s| s == &format!("= failed gamma on c (installed): {lost}")),
        "{steps:#?}"
    );
    assert_eq!(outcome.failed.len(), 1);
    // b2's teardown went to its guard when it was armed, and was never run by benchpipe.
    assert!(
        commands
            .iter()
            .any(|c| c.starts_with("b2: #start-service guard-c") && c.contains("echo UNDEPLOY-b2"))
    );
    assert!(
        !commands.iter().any(|c| c == "b2: echo UNDEPLOY-b2"),
        "{commands:#?}"
    );
    assert!(
        commands
            .iter()
            .any(|c| c == "controller: echo UNDEPLOY-controller"),
        "{commands:#?}"
    );
}

/// Ctrl-C while the cluster serves: the walk stops, the cluster's teardown runs in
/// order on every member (its guards then disarmed), and nothing is left anywhere.
#[test]
fn ctrl_c_tears_the_cluster_down_in_order() {
    let Some(lab) = Lab::up(4) else { return };
    let file = long_running(&lab);
    let child = spawn_apply(&lab.root, &file);
    wait_for_a_cluster_run(&lab);
    // SAFETY: kill(2) on the child we spawned.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(128 + libc::SIGINT), "{err}");
    assert!(
        err.contains("tear down the cluster") || err.contains("teardown"),
        "{err}"
    );
    assert_nothing_left(&lab);
}
