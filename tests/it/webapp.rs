//! Integration tests: the web-app recipes (pipeline/wordpress.toml, drupal.toml) and
//! the mechanisms they use: WordPress from Debian's packages with its own MariaDB,
//! php-fpm and nginx on each lab board, wrk on the controller after a real login; the
//! secrets (the admin password, the login cookie) in no log, store file, report,
//! output or command line, also when a run fails after the login; metric flags (non-2xx
//! responses) shown in reports; and nothing left running afterwards.

use crate::scratch::Scratch;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use benchpipe::lab::LabBoard;
use serde_json::Value;

use crate::lab::{Lab, bp, text};
use crate::repo;

/// A workspace with the shipped wordpress recipe (edited by `edit`) and the shipped
/// lab-apps scenario on this lab's boards.
fn workspace(lab: &Lab, edit: impl Fn(String) -> String) {
    let recipe = std::fs::read_to_string(repo().join("pipeline/wordpress.toml")).unwrap();
    lab.project()
        .file("pipeline/wordpress.toml", &edit(recipe))
        .recipe("burn-in-wordpress")
        .scenario("s", &lab.shipped_scenario("lab-apps"));
}

/// Copies every secret file that appears in the boards' directories on the controller
/// while `run` runs (the secret directories exist from a cell's opening to its end).
pub(crate) fn capturing_secrets<T>(
    lab: &Lab,
    boards: &[LabBoard],
    run: impl FnOnce() -> T,
) -> (T, BTreeSet<String>) {
    capturing_secrets_in(
        boards
            .iter()
            .map(|b| lab.controller_dir(b.name.as_str()))
            .collect(),
        run,
    )
}

/// `capturing_secrets` in the given directories on the controller (a cluster's).
pub(crate) fn capturing_secrets_in<T>(
    dirs: Vec<PathBuf>,
    run: impl FnOnce() -> T,
) -> (T, BTreeSet<String>) {
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, done) = (seen.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                for d in &dirs {
                    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
                        if !e.file_name().to_string_lossy().starts_with("secrets-") {
                            continue;
                        }
                        for name in ["admin_password", "password", "cookie"] {
                            if let Ok(v) = std::fs::read_to_string(e.path().join(name))
                                && !v.trim().is_empty()
                                && (name != "cookie" || v.ends_with('\n'))
                            {
                                seen.lock().unwrap().insert(v.trim().to_string());
                            }
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let out = run();
    done.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    let seen = seen.lock().unwrap().clone();
    (out, seen)
}

/// Every distinct command line of the machine's processes seen while `run` runs (a
/// /proc scan every few milliseconds; lab boards share the process table), at most
/// 100000 of them.
pub(crate) fn watching_command_lines<T>(run: impl FnOnce() -> T) -> (T, BTreeSet<String>) {
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, done) = (seen.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                    if !e
                        .file_name()
                        .to_string_lossy()
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                    {
                        continue;
                    }
                    if let Ok(raw) = std::fs::read(e.path().join("cmdline"))
                        && !raw.is_empty()
                    {
                        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
                        let mut seen = seen.lock().unwrap();
                        if seen.len() < 100_000 {
                            seen.insert(cmd);
                        }
                    }
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    let out = run();
    done.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    let seen = seen.lock().unwrap().clone();
    (out, seen)
}

/// The command lines that hold one of `needles`.
pub(crate) fn command_lines_holding(lines: &BTreeSet<String>, needles: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| needles.iter().any(|n| l.contains(n.as_str())))
        .cloned()
        .collect()
}

/// What must never appear: each secret whole, and each cookie's value alone, as sent
/// and percent-decoded (as PHP shows it).
pub(crate) fn needles(secrets: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for s in secrets {
        out.push(s.clone());
        for part in s.split(';') {
            if let Some((_, v)) = part.split_once('=') {
                out.push(v.trim().to_string());
                out.push(v.trim().replace("%7C", "|"));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Every file under `dir` that holds one of `needles`, with which.
pub(crate) fn files_holding(dir: &Path, needles: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let text = String::from_utf8_lossy(&bytes);
                for n in needles {
                    if text.contains(n.as_str()) {
                        found.push(format!("{} holds `{n}`", p.display()));
                    }
                }
            }
        }
    }
    found
}

/// Processes of the web-app recipes left for this board: its daemons (mariadbd,
/// php-fpm, nginx) in its network namespace, and wrk or ab aimed at its address on
/// the controller, after they had up to 15 s to die. Lab boards share the process
/// table; other tests' servers are in other namespaces, their clients aimed elsewhere.
fn left_for(board: &LabBoard) -> String {
    let address = format!("//{}:", board.address);
    crate::leftovers::processes_where(
        &["mariadbd", "php-fpm", "nginx", "wrk", "ab "],
        |pid, cmd| {
            let argv0 = cmd.split(' ').next().unwrap_or("");
            let name = argv0.rsplit('/').next().unwrap_or("");
            let daemon = ["mariadbd", "nginx"].contains(&name)
                || name.starts_with("php-fpm")
                || cmd.starts_with("php-fpm");
            let client = ["wrk", "ab"].contains(&name) && cmd.contains(&address);
            (daemon && crate::leftovers::in_board_netns(board, pid)) || client
        },
        std::time::Duration::from_secs(15),
    )
}

/// Nothing of the recipe is left: no process, no cell directory on the board, no
/// secret directory on the controller.
pub(crate) fn assert_nothing_left(lab: &Lab, board: &LabBoard) {
    assert_eq!(left_for(board), "", "processes left for {}", board.name);
    let left: Vec<String> = std::fs::read_dir(&board.workdir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("wp-"))
        .collect();
    assert!(left.is_empty(), "left in the workdir: {left:?}");
    let secrets: Vec<String> = std::fs::read_dir(lab.controller_dir(board.name.as_str()))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("secrets-"))
        .collect();
    assert!(
        secrets.is_empty(),
        "secrets left on the controller: {secrets:?}"
    );
}

/// Every stored sample of the store, as (the cell's test, the sample).
pub(crate) fn samples(root: &Path) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let Ok(cell) = std::fs::read_to_string(e.path().join("cell.json")) else {
            continue;
        };
        let cell: Value = serde_json::from_str(&cell).unwrap();
        let test = cell["address"]["test"].as_str().unwrap_or("").to_string();
        let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for l in text.lines() {
            out.push((test.clone(), serde_json::from_str(l).unwrap()));
        }
    }
    out
}

/// The shipped lab scenario on two lab boards: each board's own WordPress (MariaDB,
/// php-fpm, nginx in its workdir) is loaded by wrk, anonymous and with a real login's
/// cookie; both rates are stored for every run; the password and cookie, captured on
/// the controller while the cells ran, are in no store file, report or output, nor on
/// any command line of the machine's process table sampled meanwhile (the logged-in
/// wrk among them); and nothing is left running or on disk.
#[test]
fn wordpress_on_two_lab_boards_is_measured_logged_in_and_leaks_no_secret() {
    let Some(lab) = Lab::up(2) else { return };
    let boards: Vec<LabBoard> = lab.info.boards.clone();
    workspace(&lab, |r| r);
    let check = bp(&lab.root, &["check", "scenarios/s.toml"]);
    assert!(check.status.success(), "{}", text(&check));
    let ((out, commands), secrets) = capturing_secrets(&lab, &boards, || {
        watching_command_lines(|| bp(&lab.root, &["apply", "scenarios/s.toml"]))
    });
    let output = text(&out);
    assert!(out.status.success(), "{output}");
    let measured: Vec<Value> = samples(&lab.root)
        .into_iter()
        .filter(|(t, s)| t == "wordpress" && s["kind"] == "measured")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(measured.len(), 4, "two runs per board: {output}");
    for s in &measured {
        for m in ["anonymous", "authenticated"] {
            let v = s["metrics"][m].as_f64().unwrap_or(f64::NAN);
            assert!(v.is_finite() && v > 0.0, "{m} = {v}: {s}");
        }
        for m in ["anonymous_non_2xx", "authenticated_non_2xx"] {
            assert_eq!(s["metrics"][m], 0.0, "{m}: the site answered 200: {s}");
        }
    }
    // The burn-in under wrk: its rate, and the board's temperature and clock over the run.
    let burn_in: Vec<Value> = samples(&lab.root)
        .into_iter()
        .filter(|(t, s)| t == "burn-in-wordpress" && s["kind"] == "measured")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(burn_in.len(), 4, "two runs per board: {output}");
    for s in &burn_in {
        let v = s["metrics"]["requests_per_second"]
            .as_f64()
            .unwrap_or(f64::NAN);
        assert!(v.is_finite() && v > 0.0, "{v}: {s}");
        let series = s["telemetry"]["series"].as_array().expect("a series");
        assert!(series.len() >= 2, "{s}");
    }
    // Per board, wordpress's password and cookie and the burn-in's password, really
    // captured.
    let cookies: Vec<&String> = secrets
        .iter()
        .filter(|s| s.contains("wordpress_logged_in_"))
        .collect();
    assert_eq!(cookies.len(), 2, "{secrets:?}");
    assert_eq!(secrets.len(), 6, "{secrets:?}");
    let report = bp(
        &lab.root,
        &["report", "scenarios/s.toml", "--out", "reports"],
    );
    assert!(report.status.success(), "{}", text(&report));
    let needles = needles(&secrets);
    for dir in ["results", "reports"] {
        let found = files_holding(&lab.root.join(dir), &needles);
        assert!(found.is_empty(), "{found:?}");
    }
    for n in &needles {
        assert!(!output.contains(n.as_str()), "apply printed a secret");
        assert!(
            !text(&report).contains(n.as_str()),
            "report printed a secret"
        );
    }
    // The logged-in load ran (wrk with the script that reads the cookie from its file,
    // seen in the process table), and no process ever had a secret on its command line.
    let exposed = command_lines_holding(&commands, &needles);
    assert!(exposed.is_empty(), "secrets on command lines: {exposed:?}");
    assert!(
        commands
            .iter()
            .any(|c| c.starts_with("wrk ") && c.contains("/login.lua")),
        "the logged-in wrk was never seen"
    );
    for b in &boards {
        assert_nothing_left(&lab, b);
    }
}

/// The burn-in's WordPress is wordpress's: the same board setup, install, services and
/// teardown, so a fix to one cannot miss the other.
#[test]
fn the_wordpress_burn_in_sets_up_the_same_wordpress() {
    let recipes = benchpipe::config::load_recipes(repo()).expect("the shipped recipes load");
    let wp = &recipes[&"wordpress".into()];
    let burn = &recipes[&"burn-in-wordpress".into()];
    assert!(burn.series && !wp.series);
    assert_eq!(burn.setup, wp.setup);
    assert_eq!(burn.setup_after_services[0], wp.setup_after_services[0]);
    assert_eq!(burn.setup_after_services.len(), 1, "no login");
    assert_eq!(burn.services, wp.services);
    assert_eq!(burn.teardown, wp.teardown);
    let wrk = std::fs::read_to_string(repo().join("tests/data/tool-outputs/wrk-404.txt")).unwrap();
    let m = benchpipe::bench::metrics(burn, &wrk, "").unwrap();
    assert_eq!(m["requests_per_second"], 17144.83);
    assert_eq!(m["non_2xx"], 17194.0);
    assert_eq!(burn.metric_flags(&m), ["non-2xx"]);
}

/// A run that fails after the login, printing both secrets (to stderr and stdout):
/// the cell fails, its failure and its log keep what the run said with the secrets
/// replaced by `[secret NAME]`, no secret is anywhere in the store, the reports or
/// apply's output, and every server is stopped.
#[test]
fn a_run_failing_after_the_login_stores_its_output_with_the_secrets_redacted() {
    let Some(lab) = Lab::up(1) else { return };
    let boards: Vec<LabBoard> = lab.info.boards.clone();
    workspace(&lab, |r| {
        let from = "s={{ secrets }}; u=http://{{ host }}:{{ port }}{{ path }}\n";
        assert!(r.contains(from));
        r.replace(
            from,
            &format!(
                "{from}echo \"the cookie: $(cat \"$s/cookie\")\" >&2; echo \"pw=$(cat \"$s/admin_password\")\"; exit 3\n"
            ),
        )
    });
    let s = lab.root.join("scenarios/s.toml");
    let both = "test = [\"wordpress\", \"burn-in-wordpress\"]";
    let scenario = std::fs::read_to_string(&s).unwrap();
    assert!(scenario.contains(both));
    std::fs::write(&s, scenario.replace(both, "test = [\"wordpress\"]")).unwrap();
    let (out, secrets) = capturing_secrets(&lab, &boards, || {
        bp(&lab.root, &["apply", "scenarios/s.toml"])
    });
    let output = text(&out);
    assert_eq!(out.status.code(), Some(1), "{output}");
    assert_eq!(secrets.len(), 2, "{secrets:?}\n{output}");
    assert!(
        output.contains("the cookie: [secret cookie]"),
        "the cause keeps its words: {output}"
    );
    let failure = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .flatten()
        .find_map(|e| std::fs::read_to_string(e.path().join("failure.json")).ok())
        .expect("the cell failed");
    assert!(failure.contains("[secret cookie]"), "{failure}");
    let logs = files_holding(
        &lab.root.join("results"),
        &["pw=[secret admin_password]".into()],
    );
    assert!(!logs.is_empty(), "the failed run's log keeps its stdout");
    let report = bp(
        &lab.root,
        &["report", "scenarios/s.toml", "--out", "reports"],
    );
    assert!(report.status.success(), "{}", text(&report));
    let needles = needles(&secrets);
    for dir in ["results", "reports"] {
        let found = files_holding(&lab.root.join(dir), &needles);
        assert!(found.is_empty(), "{found:?}");
    }
    for n in &needles {
        assert!(
            !output.contains(n.as_str()),
            "apply printed a secret: {output}"
        );
    }
    assert_nothing_left(&lab, &boards[0]);
    // A secret directory an apply killed with SIGKILL would leave: the next apply
    // removes it before any cell runs.
    let planted = lab
        .controller_dir(boards[0].name.as_str())
        .join(format!("secrets-{}", "ab".repeat(16)));
    std::fs::create_dir(&planted).unwrap();
    std::fs::write(planted.join("cookie"), "left=by-a-killed-apply\n").unwrap();
    let again = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again));
    assert!(!planted.exists(), "{}", text(&again));
    assert_nothing_left(&lab, &boards[0]);
}

/// A recipe whose metric has a `flag`: wrk on a page nginx answers 404 (real nginx on
/// a lab board, real wrk on the controller). Every run stores its numbers and the flag
/// `non-2xx`, the report counts the flagged runs by that name, and a scenario that
/// excludes flagged runs leaves them out (so the cell cannot complete).
#[test]
fn runs_with_non_2xx_responses_are_flagged_and_reported() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(
        root.join("pipeline/missing.toml"),
        r#"description = "wrk on a page nginx does not have"
uses_storage = false
exclusive = ["controller-network"]
[needs.board]
commands = ["nginx"]
[needs.controller]
commands = ["wrk"]
[params]
port = 8093
[[setup]]
command = '''
d={{ workdir }}/wp-flag-{{ cell }}; mkdir -p "$d/t" && cat > "$d/nginx.conf" <<EOF
daemon off; pid $d/nginx.pid; error_log $d/error.log; user root; worker_processes 1;
events { worker_connections 64; }
http { access_log off; client_body_temp_path $d/t; proxy_temp_path $d/t; fastcgi_temp_path $d/t; uwsgi_temp_path $d/t; scgi_temp_path $d/t;
  server { listen {{ port }}; location / { return 404; } } }
EOF
'''
[[services]]
name = "nginx"
command = "d={{ workdir }}/wp-flag-{{ cell }}; exec nginx -p \"$d\" -e \"$d/error.log\" -c \"$d/nginx.conf\""
ready = "ss -Hltn \"sport = :{{ port }}\" | grep -q ."
[run]
on = "controller"
command = "wrk -t1 -c2 -d1s --timeout 5s http://{{ host }}:{{ port }}/missing"
parse = "wrk"
[metrics]
rate = { from = "requests_per_second", unit = "req/s", better = "higher", primary = true }
non_2xx = { from = "non_2xx_or_3xx", unit = "responses", better = "lower", flag = "non-2xx" }
socket_errors = { from = "socket_errors", unit = "errors", better = "lower", flag = "socket-errors" }
[[teardown]]
command = "rm -rf {{ workdir }}/wp-flag-{{ cell }}"
"#,
    )
    .unwrap();
    let scenario = |exclude: bool| {
        format!(
            "title = \"flags\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"missing\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             validity = {{ exclude_flagged = {exclude} }}\n",
            board.name
        )
    };
    std::fs::write(root.join("scenarios/s.toml"), scenario(false)).unwrap();
    let out = bp(root, &["apply", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let measured: Vec<Value> = samples(root)
        .into_iter()
        .filter(|(_, s)| s["kind"] == "measured")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(measured.len(), 2, "{}", text(&out));
    for s in &measured {
        assert!(s["metrics"]["non_2xx"].as_f64().unwrap() > 0.0, "{s}");
        assert_eq!(s["metrics"]["socket_errors"], 0.0, "{s}");
        let flags: Vec<&str> = s["flags"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|f| f.as_str())
            .collect();
        assert!(flags.contains(&"non-2xx"), "{s}");
        assert!(!flags.contains(&"socket-errors"), "{s}");
    }
    let report = bp(root, &["report", "scenarios/s.toml", "--out", "reports"]);
    assert!(report.status.success(), "{}", text(&report));
    let md = std::fs::read_to_string(root.join("reports/s/index.md")).unwrap();
    // The cell's validity line counts the non-2xx runs and keeps them; the shared
    // machine may add flags of its own beside them (swapping, background load).
    let warning = md
        .lines()
        .find(|l| l.starts_with("- missing on ") && l.contains("runs non-2xx"))
        .unwrap_or_else(|| panic!("no validity warning for non-2xx:\n{md}"));
    assert!(
        warning.contains(": 2 of 2 runs non-2xx") && warning.ends_with("(kept in the statistics)"),
        "{warning}"
    );
    assert!(
        md.contains("some runs: non-2xx (kept in the statistics)"),
        "{md}"
    );
    // Excluded, the flagged runs do not count: the plan still wants runs.
    std::fs::write(root.join("scenarios/s.toml"), scenario(true)).unwrap();
    let plan = bp(root, &["plan", "--json", "scenarios/s.toml"]);
    let doc: Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(doc["summary"]["complete"], 0, "{doc}");
    assert_eq!(left_for(&board), "");
}

/// Drupal cannot run here (Debian 12 packages none, and no release can be fetched):
/// its shipped recipe, given a tarball and its digest as the recipe asks, passes
/// `check` and `plan` beside WordPress; without them its setup would refuse.
#[test]
fn the_drupal_recipe_passes_check_and_plan_beside_wordpress() {
    let root = Scratch::new("drupal");
    // A seed board (rpi3-1) and the built-in recipes.
    std::fs::create_dir_all(root.join("boards")).unwrap();
    std::fs::copy(
        repo().join("examples/seeds/boards/rpi3-1.toml"),
        root.join("boards/rpi3-1.toml"),
    )
    .unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(
        root.join("scenarios/apps.toml"),
        "title = \"apps\"\n[images.installed]\ninstalled = true\n[matrix]\n\
         image = [\"installed\"]\nboard = [\"rpi3-1\"]\ntest = [\"wordpress\", \"drupal\"]\n\
         [params.drupal]\ntarball = \"drupal-10.1.8.tar.gz\"\n\
         tarball_sha256 = \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n",
    )
    .unwrap();
    let check = bp(&root, &["check", "scenarios/apps.toml"]);
    assert!(check.status.success(), "{}", text(&check));
    let plan = bp(&root, &["plan", "--json", "scenarios/apps.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let doc: Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(doc["summary"]["missing"], 2, "{doc}");
    let steps = doc.to_string();
    assert!(steps.contains("\"after_services\":true"), "{steps}");
    // A digest that is not one is refused at check, at its line.
    let bad = std::fs::read_to_string(root.join("scenarios/apps.toml"))
        .unwrap()
        .replace("0123456789abcdef0123", "not-a-digest");
    std::fs::write(root.join("scenarios/apps.toml"), bad).unwrap();
    let check = bp(&root, &["check", "scenarios/apps.toml"]);
    assert_eq!(check.status.code(), Some(2), "{}", text(&check));
    assert!(
        text(&check).contains("the tarball's sha256"),
        "{}",
        text(&check)
    );
    let _ = std::fs::remove_dir_all(&root);
}
