//! Integration tests: start-up time (pipeline/startup-nginx.toml, the mechanism the
//! Minecraft recipe shares) on a real lab board: seconds until nginx's ready line, the
//! service and the log follower gone afterwards, a line that never comes a timeout; and
//! the ready regex checked at `check`; the Minecraft recipe's log read through a
//! command of the scenario's.

use std::path::{Path, PathBuf};

use crate::lab::{Lab, bp, text};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A lab workspace with the shipped recipe and a scenario running it on board 0.
fn scenario(lab: &Lab, params: &str) -> PathBuf {
    let root = lab.root.clone();
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::copy(
        repo().join("pipeline/startup-nginx.toml"),
        root.join("pipeline/startup-nginx.toml"),
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"startup\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"startup-nginx\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.startup-nginx]\n{params}\n",
            lab.board(0).name
        ),
    )
    .unwrap();
    root
}

fn samples(root: &Path) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        if e.file_name().to_string_lossy().contains("startup-nginx") {
            let t = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
            out.extend(t.lines().map(|l| serde_json::from_str(l).unwrap()));
        }
    }
    out
}

/// What of the recipe's processes is still alive: nginx with this board's workdir in
/// its command line, or the `tail -F` of its log.
fn leftovers(workdir: &str) -> String {
    crate::processes_left(&[&format!("{workdir}/startup-"), "tail -c +1 -F error.log"])
}

#[test]
fn startup_time_of_nginx_on_a_lab_board_is_seconds_and_leaves_nothing_running() {
    let lab = Lab::up(1);
    let board = lab.board(0).clone();
    let root = scenario(&lab, "timeout_s = 60");
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let s = samples(&root);
    assert_eq!(s.len(), 2, "{}", text(&out));
    for x in &s {
        let v = x["metrics"]["seconds"].as_f64().unwrap();
        assert!(v.is_finite() && v > 0.0 && v < 60.0, "seconds = {v}");
    }
    assert_eq!(
        leftovers(&board.workdir),
        "",
        "nginx and the follower are stopped"
    );
}

#[test]
fn a_service_that_never_prints_its_ready_line_fails_with_a_timeout_cause() {
    let lab = Lab::up(1);
    let board = lab.board(0).clone();
    let root = scenario(&lab, "timeout_s = 2\nready = \"this line never comes\"");
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(samples(&root).is_empty());
    let failures: String = std::fs::read_dir(root.join("results"))
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("failure.json")).ok())
        .collect();
    assert!(
        failures.contains("timed out: no log line matching the ready regex within 2 s"),
        "failure: {failures}\n{}",
        text(&out)
    );
    assert_eq!(
        leftovers(&board.workdir),
        "",
        "nginx and the follower are stopped"
    );
}

/// A ready regex `grep -E` would read otherwise than `check` does is refused at its
/// file:line:col, exit 2.
#[test]
fn a_ready_regex_grep_cannot_read_is_refused_at_check() {
    let lab_less = std::env::temp_dir().join(format!("bp-it-startup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&lab_less);
    for d in ["pipeline", "scenarios", "boards"] {
        std::fs::create_dir_all(lab_less.join(d)).unwrap();
    }
    std::fs::copy(
        repo().join("pipeline/startup-nginx.toml"),
        lab_less.join("pipeline/startup-nginx.toml"),
    )
    .unwrap();
    std::fs::write(
        lab_less.join("boards/b.toml"),
        "model = \"m\"\nlocal = true\n",
    )
    .unwrap();
    std::fs::write(
        lab_less.join("scenarios/s.toml"),
        "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\n\
         image = [\"installed\"]\nboard = [\"b\"]\ntest = [\"startup-nginx\"]\n\
         [params.startup-nginx]\nready = '\\d+ workers'\n",
    )
    .unwrap();
    let out = bp(&lab_less, &["check", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("scenarios/s.toml:9:"), "{t}");
    assert!(t.contains("not POSIX ERE"), "{t}");
    let _ = std::fs::remove_dir_all(&lab_less);
}

/// The seed's Minecraft recipe passes `check` and `plan` with each way of reading its
/// log (journal, file, kubectl logs through the cluster), and a `follow` it does not
/// know is refused at its value. It cannot run here: no Minecraft server, no cluster.
#[test]
fn minecraft_startup_passes_check_and_plan_with_each_follower() {
    let root = std::env::temp_dir().join(format!("bp-it-mc-startup-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for d in ["pipeline", "scenarios", "boards"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::copy(
        repo().join("pipeline/minecraft-startup.toml"),
        root.join("pipeline/minecraft-startup.toml"),
    )
    .unwrap();
    std::fs::write(root.join("boards/b.toml"), "model = \"m\"\nlocal = true\n").unwrap();
    let scenario = |follow: &str| {
        std::fs::write(
            root.join("scenarios/s.toml"),
            format!(
                "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\n\
                 image = [\"installed\"]\nboard = [\"b\"]\ntest = [\"minecraft-startup\"]\n\
                 [params.minecraft-startup]\nfollow = \"{follow}\"\n"
            ),
        )
        .unwrap();
    };
    for follow in ["journal", "file", "kubectl", "command"] {
        scenario(follow);
        for cmd in ["check", "plan"] {
            let out = bp(&root, &[cmd, "scenarios/s.toml"]);
            assert!(out.status.success(), "{follow} {cmd}: {}", text(&out));
        }
    }
    scenario("docker");
    let out = bp(&root, &["check", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("scenarios/s.toml:9:10"),
        "{}",
        text(&out)
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// The Minecraft recipe's `follow = "command"`: its log line read through a command
/// template of the scenario's, here on a lab board with a stand-in server (a line
/// printed a second after the restart command ran): about a second, the follower gone
/// afterwards.
#[test]
fn minecraft_startup_reads_its_ready_line_through_a_log_command_on_a_lab_board() {
    let lab = Lab::up(1);
    let root = lab.root.clone();
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::copy(
        repo().join("pipeline/minecraft-startup.toml"),
        root.join("pipeline/minecraft-startup.toml"),
    )
    .unwrap();
    let log = std::env::temp_dir()
        .join(format!("bp-it-mc-{}.log", std::process::id()))
        .display()
        .to_string();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"startup\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{board}\"]\ntest = [\"minecraft-startup\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.minecraft-startup]\nfollow = \"command\"\ntimeout_s = 60\n\
             restart_command = ''': > {log}; (sleep 1; echo 'Done (1.001s)! For help, type \"help\"' >> {log}) &'''\n\
             log_command = \"tail -n +1 -F {log}\"\n",
            board = lab.board(0).name
        ),
    )
    .unwrap();
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let mut seconds = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let t = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for l in t.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            seconds.push(v["metrics"]["seconds"].as_f64().unwrap());
        }
    }
    assert_eq!(seconds.len(), 2, "{}", text(&out));
    for s in seconds {
        // The line comes a second after the restart; a loaded machine may add to it.
        assert!((0.9..50.0).contains(&s), "seconds = {s}");
    }
    assert_eq!(
        crate::processes_left(&[&format!("-F {log}")]),
        "",
        "the log command is stopped"
    );
    let _ = std::fs::remove_file(&log);
}
