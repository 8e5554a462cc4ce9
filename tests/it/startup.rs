//! Integration tests: start-up time (pipeline/startup-nginx.toml, the mechanism the
//! Minecraft recipe shares) on a real lab board: seconds until nginx's ready line, the
//! service and the log follower gone afterwards, a line that never comes a timeout; and
//! the ready regex checked at `check`; the Minecraft recipe's log read through a
//! command of the scenario's; the seed's figure (the server's own `Done (N.NNNs)`)
//! read from the new pod's log alone, with a fake kubectl (no Kubernetes here).

use crate::scratch::{Project, Scratch};
use std::path::{Path, PathBuf};
use std::time::Duration;

use benchpipe::lab::LabBoard;

use crate::lab::{Lab, bp, text};
use crate::repo;

/// A lab workspace with the shipped recipe and a scenario running it on board 0.
fn scenario(lab: &Lab, params: &str) -> PathBuf {
    lab.project().recipe("startup-nginx").scenario(
        "s",
        &format!(
            "title = \"startup\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"startup-nginx\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.startup-nginx]\n{params}\n",
            lab.board(0).name
        ),
    );
    lab.root.clone()
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

/// What of the recipe's processes is still alive in this board's namespace: nginx with
/// its workdir in its command line, or the `tail -F` of its log (other labs' are not
/// this test's).
fn leftovers(board: &LabBoard) -> String {
    crate::leftovers::board_processes_left(
        board,
        &[
            &format!("{}/startup-", board.workdir),
            "tail -c +1 -F error.log",
        ],
        Duration::from_secs(15),
    )
}

#[test]
fn startup_time_of_nginx_on_a_lab_board_is_seconds_and_leaves_nothing_running() {
    let Some(lab) = Lab::up(1) else { return };
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
    assert_eq!(leftovers(&board), "", "nginx and the follower are stopped");
}

#[test]
fn a_service_that_never_prints_its_ready_line_fails_with_a_timeout_cause() {
    let Some(lab) = Lab::up(1) else { return };
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
    assert_eq!(leftovers(&board), "", "nginx and the follower are stopped");
}

/// A ready regex `grep -E` would read otherwise than `check` does is refused at its
/// file:line:col, exit 2.
#[test]
fn a_ready_regex_grep_cannot_read_is_refused_at_check() {
    let lab_less = Project::new("startup")
        .recipe("startup-nginx")
        .file("boards/b.toml", "model = \"m\"\nlocal = true\n")
        .scenario(
            "s",
            "title = \"t\"\n[images.installed]\ninstalled = true\n[matrix]\n\
         image = [\"installed\"]\nboard = [\"b\"]\ntest = [\"startup-nginx\"]\n\
         [params.startup-nginx]\nready = '\\d+ workers'\n",
        );
    let out = bp(&lab_less, &["check", "scenarios/s.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("scenarios/s.toml:9:"), "{t}");
    assert!(t.contains("not POSIX ERE"), "{t}");
}

/// The seed's Minecraft recipe passes `check` and `plan` with each way of reading its
/// log (journal, file, kubectl logs through the cluster), and a `follow` it does not
/// know is refused at its value. It cannot run here: no Minecraft server, no cluster.
#[test]
fn minecraft_startup_passes_check_and_plan_with_each_follower() {
    let root = Project::new("mc-startup")
        .recipe("minecraft-startup")
        .file("boards/b.toml", "model = \"m\"\nlocal = true\n");
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
/// printed a second after the restart command ran): the line's own seconds, a wall
/// clock of at least that second, the follower gone afterwards.
#[test]
fn minecraft_startup_reads_its_ready_line_through_a_log_command_on_a_lab_board() {
    let Some(lab) = Lab::up(1) else { return };
    let root = lab.root.clone();
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::copy(
        repo().join("pipeline/minecraft-startup.toml"),
        root.join("pipeline/minecraft-startup.toml"),
    )
    .unwrap();
    let log = root.join("mc.log").display().to_string();
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
    let mut runs = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let t = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for l in t.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            runs.push(v["metrics"].clone());
        }
    }
    assert_eq!(runs.len(), 2, "{}", text(&out));
    for m in runs {
        // The server's own figure, as its line says; the wall clock from the restart
        // command, which printed it a second later (a loaded machine may add to it).
        assert_eq!(m["server_seconds"].as_f64(), Some(1.001), "{m}");
        let wall = m["wall_seconds"].as_f64().unwrap();
        assert!(wall >= 0.9, "{m}");
    }
    assert_eq!(
        crate::processes_left(&[&format!("-F {log}")]),
        "",
        "the log command is stopped"
    );
    let _ = std::fs::remove_file(&log);
}

/// A stand-in for kubectl, since no Kubernetes can run here: one Deployment whose pod
/// of generation G is `minecraft-5d8f-pG` (uid `uid-G`). A delete starts generation
/// G+1; the old pod keeps running while it terminates, is listed first, and its log
/// holds its own start's `Done (1.111s)` at once; the new pod is listed from the second
/// list after the delete, and its log prints `Done (7.654s)` a second after it is
/// opened. `kubectl logs -l` (every pod of the label) gives the old pod's line. Each
/// call is appended to `calls` with where it ran (`SSH_CONNECTION`, or `controller`).
/// A log being followed sleeps `follower` seconds: a number of the test's own, so that
/// its check for a follower left over never sees another test's.
/// Returns the directory to put first on PATH and the calls file.
pub(crate) fn fake_kubectl(root: &Path, follower: u32) -> (PathBuf, PathBuf) {
    let bin = root.join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let calls = bin.join("calls");
    let q = |p: &Path| benchpipe::transport::quote::sh(&p.to_string_lossy());
    let old = "[12:00:00] [Server thread/INFO]: Done (1.111s)! For help, type \"help\"";
    std::fs::write(
        bin.join("kubectl"),
        format!(
            r#"#!/bin/sh
s={bin}
echo "$* | ${{SSH_CONNECTION:-controller}}" >> {calls}
g=$(cat "$s/gen" 2>/dev/null || echo 0)
l=$(cat "$s/lists" 2>/dev/null | wc -l)
case " $* " in
*" delete "*) echo $((g + 1)) > "$s/gen"; : > "$s/lists"; exit 0 ;;
*" get pods "*)
  echo . >> "$s/lists"
  if [ "$g" -gt 0 ]; then echo "uid-$((g - 1))   minecraft-5d8f-p$((g - 1))"; fi
  if [ "$g" -eq 0 ] || [ "$l" -ge 1 ]; then echo "uid-$g   minecraft-5d8f-p$g"; fi
  exit 0 ;;
*" logs "*)
  case " $* " in
  *" pod/minecraft-5d8f-p$g "*)
    echo '[12:00:05] [Server thread/INFO]: Starting minecraft server version 1.16.4'
    sleep 1
    echo '[12:00:12] [Server thread/INFO]: Done (7.654s)! For help, type "help"'
    exec sleep {follower} ;;
  *) echo '{old}'; exec sleep {follower} ;;
  esac ;;
esac
exit 1
"#,
            bin = q(&bin),
            calls = q(&calls),
        ),
    )
    .unwrap();
    crate::lab::sh(&format!("chmod 755 {}", q(&bin.join("kubectl"))));
    (bin, calls)
}

/// Copies the shipped recipe `name` into `root`'s pipeline/ with `bin` first on its
/// run's PATH.
pub(crate) fn recipe_with_path(root: &Path, name: &str, bin: &Path) {
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    let shipped = std::fs::read_to_string(repo().join(format!("pipeline/{name}.toml"))).unwrap();
    let (head, tail) = shipped.split_once("command = \"\"\"\n").unwrap();
    std::fs::write(
        root.join(format!("pipeline/{name}.toml")),
        format!(
            "{head}command = \"\"\"\nPATH={}:$PATH; export PATH\n{tail}",
            bin.display()
        ),
    )
    .unwrap();
}

/// The seed's figure is the server's own `Done (N.NNNs)` of the new pod: with a
/// stand-in whose old, terminating pod still prints its `Done` line, both kubectl
/// recipes (minecraft-startup on the board, startup-kubectl on the controller) store
/// the new pod's 7.654 s, never the old pod's 1.111 s, and a wall clock that includes
/// the second the new pod took; they follow only the new pod's log.
#[test]
fn fake_kubectl_start_up_is_the_new_pods_own_seconds_while_the_old_pod_still_prints_done() {
    let Some(lab) = Lab::up(1) else { return };
    let root = lab.root.clone();
    let (bin, calls) = fake_kubectl(&root, 601);
    recipe_with_path(&root, "minecraft-startup", &bin);
    recipe_with_path(&root, "startup-kubectl", &bin);
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"startup\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\n\
             test = [\"minecraft-startup\", \"startup-kubectl\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.minecraft-startup]\nfollow = \"kubectl\"\ntimeout_s = 60\n\
             [params.startup-kubectl]\ntimeout_s = 60\n",
            lab.board(0).name
        ),
    )
    .unwrap();
    let out = bp(&root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let mut runs = 0;
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let t = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for l in t.lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let m = &v["metrics"];
            assert_eq!(m["server_seconds"].as_f64(), Some(7.654), "{v}");
            // The new pod printed its line a second after its log was opened, which
            // was after the delete: a lower bound, whatever the machine's load.
            let wall = m["wall_seconds"].as_f64().unwrap();
            assert!(wall >= 1.0, "{v}");
            runs += 1;
        }
    }
    assert_eq!(runs, 4, "{}", text(&out));
    let calls = std::fs::read_to_string(&calls).unwrap();
    let logs: Vec<&str> = calls.lines().filter(|l| l.contains(" logs ")).collect();
    assert!(logs.len() >= 4, "{calls}");
    // Four deletes made generations 1 to 4; each run followed the pod it made.
    for l in &logs {
        assert!(!l.contains(" -l "), "a log of every pod of the label: {l}");
        assert!(
            (1..=4).any(|g| l.contains(&format!("pod/minecraft-5d8f-p{g} "))),
            "{l}"
        );
    }
    assert!(!calls.contains("pod/minecraft-5d8f-p0 "), "{calls}");
    assert_eq!(
        crate::processes_left(&["sleep 601"]),
        "",
        "the follower outlived its run"
    );
}

/// The shipped start-up recipes read the seed's figure from the ready line their run
/// prints (Minecraft's own format, old and new), the wall clock from the line after
/// it; a ready line without the server's own seconds, or with a decimal comma, is an
/// error quoting the output rather than a wrong number.
#[test]
fn start_up_recipes_parse_the_servers_own_seconds_and_the_wall_clock() {
    let dir = Scratch::new("startup-parse");
    std::fs::create_dir_all(dir.join("pipeline")).unwrap();
    for name in ["minecraft-startup", "startup-kubectl"] {
        std::fs::copy(
            repo().join(format!("pipeline/{name}.toml")),
            dir.join(format!("pipeline/{name}.toml")),
        )
        .unwrap();
    }
    let recipes = benchpipe::config::load_recipes(&dir).map_err(|d| d.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    let recipes = recipes.unwrap();
    // The loaded recipes include every built-in: these two are the start-up ones.
    let startup = ["minecraft-startup", "startup-kubectl"];
    for recipe in recipes
        .values()
        .filter(|r| startup.contains(&r.name.as_str()))
    {
        let ok = [
            (
                "ready line: [14:02:39] [Server thread/INFO]: Done (44.552s)! For help, type \"help\"\nwall_seconds 61.207\n",
                44.552,
                61.207,
            ),
            // Before 1.13: `or "?"`; a server that printed whole seconds.
            (
                "ready line: [12:00:20] [Server thread/INFO]: Done (983s)! For help, type \"help\" or \"?\"\nwall_seconds 1002.500\n",
                983.0,
                1002.5,
            ),
            // A log line posing as the wall clock is not at a line's start, and the
            // run's own line comes last.
            (
                "ready line: Done (3.5s)! For help wall_seconds 0.001\nwall_seconds 9.000\n",
                3.5,
                9.0,
            ),
        ];
        for (output, server, wall) in ok {
            let m = benchpipe::bench::metrics(recipe, output, "").unwrap();
            assert_eq!(m["server_seconds"], server, "{output}");
            assert_eq!(m["wall_seconds"], wall, "{output}");
        }
        for bad in [
            "ready line: [12:00:20] [Server thread/INFO]: Done (5,443s)! For help, type \"help\"\nwall_seconds 7.000\n",
            "ready line: nginx: ready\nwall_seconds 7.000\n",
            "ready line: Done (12.345s)! For help\n",
        ] {
            let err = benchpipe::bench::metrics(recipe, bad, "")
                .unwrap_err()
                .to_string();
            assert!(err.contains("matched nothing on stdout"), "{bad}: {err}");
        }
    }
}
