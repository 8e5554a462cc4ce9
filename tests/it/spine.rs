//! Integration tests: the spine end to end on the local machine, through the real
//! binary: check, plan, apply (real xz and fio), resume, failures, interrupts, reports.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub use crate::scratch::Project;

impl Project {
    /// A project with a local board (`here`, the controller itself), the repository's
    /// xz, disk-4k, hdparm and dd-write recipes and three made-up ones: `sleepy`,
    /// `broken` (the tool fails), `garbled` (its output does not parse).
    pub fn local(tag: &str) -> Project {
        Project::new(tag)
            .recipes(&["xz", "disk-4k", "hdparm", "dd-write"])
            .local_board("here", "board-work")
            .file(
                "pipeline/sleepy.toml",
                r#"description = "sleeps, then prints a number"
uses_storage = false
[params]
seconds = 0.1
value = 1.5
[run]
command = "sleep {{ seconds }}; echo '{\"value\": {{ value }} }'"
parse = "json"
[metrics]
value = { from = "value", unit = "s", better = "lower" }
"#,
            )
            .file(
                "pipeline/broken.toml",
                r#"description = "a tool that fails"
uses_storage = false
[run]
command = "echo 'fio: cannot open file' >&2; exit 3"
parse = "json"
[metrics]
value = { from = "value", unit = "s", better = "lower" }
"#,
            )
            .file(
                "pipeline/garbled.toml",
                r#"description = "a tool whose output does not parse"
uses_storage = false
[run]
command = "echo 'no time line here'"
parse = "time"
[metrics]
real = { from = "real", unit = "s", better = "lower" }
"#,
            )
    }

    /// `boards/{name}.toml`: this machine as a board, its workdir `{work}` in the
    /// project, its scratch storage in the workdir.
    pub fn local_board(self, name: &str, work: &str) -> Project {
        let work = self.dir.join(work);
        self.file(
            &format!("boards/{name}.toml"),
            &format!(
                "model = \"test controller\"\nlocal = true\nworkdir = \"{w}\"\n\n\
                 [[storage]]\nname = \"scratch\"\nrole = \"scratch\"\npath = \"{w}/scratch\"\n",
                w = work.display()
            ),
        )
    }

    /// `scenarios/{name}.toml`: `tests` on the local board, `runs` measured runs each.
    pub fn local_scenario(self, name: &str, tests: &[&str], runs: u32, extra: &str) -> Project {
        let tests: Vec<String> = tests.iter().map(|t| format!("\"{t}\"")).collect();
        let text = format!(
            "title = \"Test {name}\"\n\n[images.installed]\ninstalled = true\n\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"here\"]\nstorage = [\"scratch\"]\n\
             filesystem = [\"as-is\"]\ntest = [{}]\n\n[method]\nwarmup = {{ runs = 1 }}\n\
             runs = {{ min = {runs}, max = {runs} }}\n\n[params.xz]\ncorpus_mib = 1\n\n\
             [params.disk-4k]\nsize = \"4M\"\nruntime = 1\n{extra}",
            tests.join(", ")
        );
        self.file(&format!("scenarios/{name}.toml"), &text)
    }

    pub fn samples(&self, test: &str) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(self.dir.join("results")).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            if name.ends_with(&format!("-{test}-here")) {
                let text =
                    std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
                for line in text.lines() {
                    out.push(serde_json::from_str(line).expect("every stored line is whole JSON"));
                }
            }
        }
        out
    }
}

pub fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn measured(samples: &[serde_json::Value]) -> usize {
    samples.iter().filter(|s| s["kind"] == "measured").count()
}

#[test]
fn apply_runs_real_xz_and_fio_then_a_second_apply_runs_nothing() {
    let p = Project::local("spine").local_scenario("s", &["xz", "disk-4k"], 2, "");
    let plan = p.bp(&["plan", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let out = String::from_utf8_lossy(&plan.stdout);
    assert!(out.contains("missing (2 runs)"), "{out}");
    assert!(
        out.contains("2 cell(s): 0 complete, 0 partial, 2 missing"),
        "{out}"
    );

    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));

    let xz = p.samples("xz");
    assert_eq!(xz.len(), 3, "one warm-up and two measured runs");
    assert_eq!(xz[0]["kind"], "warmup");
    assert_eq!(measured(&xz), 2);
    for s in &xz {
        let real = s["metrics"]["real"].as_f64().unwrap();
        let user = s["metrics"]["user"].as_f64().unwrap();
        assert!(real > 0.0 && user > 0.0, "{s}");
    }
    let disk = p.samples("disk-4k");
    assert_eq!(measured(&disk), 2);
    for s in &disk {
        assert!(s["metrics"]["random_read"].as_f64().unwrap() > 0.0, "{s}");
        assert!(
            s["metrics"]["random_write_iops"].as_f64().unwrap() > 0.0,
            "{s}"
        );
    }

    // Tool versions come from the committed recipes' [facts], each in its own cells.
    for (test, tool, starts) in [("xz", "xz", "xz (XZ Utils)"), ("disk-4k", "fio", "fio-")] {
        let dir = std::fs::read_dir(p.dir.join("results"))
            .unwrap()
            .flatten()
            .find(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(&format!("-{test}-here"))
            })
            .unwrap()
            .path();
        let facts: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("facts.json")).unwrap()).unwrap();
        let tools = facts["tools"].as_object().unwrap();
        assert_eq!(tools.keys().collect::<Vec<_>>(), [tool], "{facts}");
        assert!(tools[tool].as_str().unwrap().starts_with(starts), "{facts}");
    }

    let again = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("0 cell(s) completed, 2 already complete"),
        "{}",
        text(&again)
    );
    assert_eq!(p.samples("xz").len(), 3, "nothing ran again");

    let plan = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    assert_eq!(doc["summary"]["complete"], 2, "{doc}");
    assert_eq!(doc["cells"][0]["state"]["state"], "complete");

    // The report exists, has the numbers, and is the same bytes when rendered again
    // from another directory and time zone.
    let md = std::fs::read_to_string(p.dir.join("reports/s/index.md")).unwrap();
    assert!(md.contains("## xz") && md.contains("## disk-4k"), "{md}");
    // `(n=2, 1 flagged)` when the loaded machine flagged a run: n is what counts here.
    assert!(md.contains("(n=2") && md.contains(" ± "), "{md}");
    assert!(
        md.contains("- Measured runs: 2 measured runs per cell in the tables")
            && md.contains(
                "- Warm-up: 1 run before a cell's measured runs, discarded (1 run stored per cell)"
            ),
        "{md}"
    );
    let other = p.dir.join("elsewhere");
    let render = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(["report", "--out"])
        .arg(&other)
        .arg(p.dir.join("scenarios/s.toml"))
        .arg("--store")
        .arg(p.dir.join("results"))
        .env("TZ", "Asia/Kathmandu")
        .env("LC_ALL", "de_DE.UTF-8")
        .output()
        .unwrap();
    assert!(render.status.success(), "{}", text(&render));
    for f in ["index.md", "index.html", "report.json"] {
        let a = std::fs::read(p.dir.join("reports/s").join(f)).unwrap();
        let b = std::fs::read(other.join("s").join(f)).unwrap();
        assert!(a == b, "{f} differs between renders");
        let s = String::from_utf8_lossy(&a);
        assert!(
            !s.contains(&*p.dir.to_string_lossy()),
            "{f} leaks an absolute path"
        );
    }
}

#[test]
fn a_failing_tool_fails_its_cell_with_the_cause_and_stores_no_sample() {
    let p = Project::local("broken").local_scenario("s", &["broken", "garbled", "sleepy"], 2, "");
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert_eq!(apply.status.code(), Some(1), "{}", text(&apply));
    let err = String::from_utf8_lossy(&apply.stderr);
    assert!(err.contains("FAILED broken on here"), "{err}");
    assert!(
        err.contains("fio: cannot open file"),
        "the tool's stderr is in the cause: {err}"
    );
    assert!(err.contains("exit status 3"), "{err}");
    assert!(err.contains("FAILED garbled on here"), "{err}");
    assert!(err.contains("time output"), "{err}");
    assert_eq!(p.samples("broken").len(), 0);
    assert_eq!(p.samples("garbled").len(), 0);
    // The healthy cell on the same board completed anyway.
    assert_eq!(measured(&p.samples("sleepy")), 2);

    let plan = p.bp(&["plan", "scenarios/s.toml"]);
    let out = String::from_utf8_lossy(&plan.stdout);
    assert!(out.contains("failed (0 of 2)"), "{out}");
    assert!(out.contains("last failure:"), "{out}");

    // The report lists the failure with its cause, but not the log's path, which holds
    // the store's location and the session's start time.
    let md = std::fs::read_to_string(p.dir.join("reports/s/index.md")).unwrap();
    assert!(
        md.contains("broken on here (installed): failed (0 of 2 runs)"),
        "{md}"
    );
    assert!(md.contains("exit status 3: fio: cannot open file"), "{md}");
    assert!(!md.contains("logs/failed-"), "{md}");
}

#[test]
fn an_interrupted_apply_keeps_whole_samples_and_the_next_apply_resumes() {
    for signal in [libc::SIGINT, libc::SIGKILL] {
        let p = Project::local(&format!("interrupt-{signal}")).local_scenario(
            "s",
            &["sleepy"],
            6,
            "\n[params.sleepy]\nseconds = 0.4\n",
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(crate::scripted(&["apply", "scenarios/s.toml"]))
            .current_dir(&p.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while measured(&p.samples_or_empty("sleepy")) < 2 {
            assert!(t0.elapsed() < Duration::from_secs(60), "no progress");
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let status = child.wait().unwrap();
        assert!(!status.success(), "signal {signal}: {status:?}");
        let before = measured(&p.samples("sleepy"));
        assert!((2..6).contains(&before), "signal {signal}: {before}");

        let apply = p.bp(&["apply", "scenarios/s.toml"]);
        assert!(apply.status.success(), "{}", text(&apply));
        let samples = p.samples("sleepy");
        assert_eq!(measured(&samples), 6, "resumed to exactly the wanted count");
        let seqs: Vec<u64> = samples.iter().map(|s| s["seq"].as_u64().unwrap()).collect();
        let want: Vec<u64> = (1..=samples.len() as u64).collect();
        assert_eq!(seqs, want, "sequence numbers stay dense");
    }
}

impl Project {
    fn samples_or_empty(&self, test: &str) -> Vec<serde_json::Value> {
        if self.dir.join("results").is_dir() {
            // A sample being written concurrently may be torn; skip such lines here.
            let mut out = Vec::new();
            for e in std::fs::read_dir(self.dir.join("results"))
                .unwrap()
                .flatten()
            {
                if e.file_name()
                    .to_string_lossy()
                    .ends_with(&format!("-{test}-here"))
                {
                    let t =
                        std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
                    out.extend(t.lines().filter_map(|l| serde_json::from_str(l).ok()));
                }
            }
            out
        } else {
            Vec::new()
        }
    }
}

#[test]
fn bad_input_exits_2_naming_file_line_and_column() {
    let p = Project::local("badinput").local_scenario("s", &["xz"], 2, "").file(
        "scenarios/bad.toml",
        "title = \"x\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\nboard = [\"hre\"]\nstorage = [\"*\"]\nfilesystem = [\"as-is\"]\ntest = [\"xz\"]\n",
    );
    for cmd in ["check", "plan", "apply"] {
        let out = p.bp(&[cmd, "scenarios/bad.toml"]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("scenarios/bad.toml:6:"), "{err}");
        assert!(err.contains("here"), "did-you-mean hint: {err}");
    }
    let ok = p.bp(&["check", "scenarios/s.toml"]);
    assert!(ok.status.success(), "{}", text(&ok));
}

fn keys_of(dir: &Path, scenario: &str) -> Vec<String> {
    let ws = benchpipe::check::load(dir, &[dir.join(scenario)]).expect("loads");
    benchpipe::plan::expand(&ws, &ws.scenarios[0])
        .cells
        .iter()
        .map(|c| c.key.to_string())
        .collect()
}

#[test]
fn comments_key_order_and_file_names_do_not_change_keys_but_inputs_do() {
    let p = Project::local("keys").local_scenario("s", &["xz", "disk-4k"], 2, "");
    let k0 = keys_of(&p.dir, "scenarios/s.toml");
    assert_eq!(k0.len(), 2);

    // The same study, reordered, commented, under another file name.
    let original = std::fs::read_to_string(p.dir.join("scenarios/s.toml")).unwrap();
    let mut lines: Vec<&str> = original.lines().collect();
    let title = lines.remove(0);
    let mut reordered = String::from("# a comment that changes nothing\n");
    reordered.push_str(&lines.join("\n# another comment\n"));
    reordered = reordered.replacen(
        "[images.installed]",
        &format!("{title}\n[images.installed]"),
        1,
    );
    let p = p.file("scenarios/renamed.toml", &reordered);
    std::fs::remove_file(p.dir.join("scenarios/s.toml")).unwrap();
    assert_eq!(keys_of(&p.dir, "scenarios/renamed.toml"), k0);

    // Reordered keys inside a recipe, and a comment in it: same keys.
    let recipe = std::fs::read_to_string(p.dir.join("pipeline/disk-4k.toml")).unwrap();
    let moved = recipe.replacen("uses_storage = true\n", "", 1) + "\n# moved to the end\n";
    let moved = moved.replacen("[needs]", "uses_storage = true\n\n[needs]", 1);
    let p = p.file("pipeline/disk-4k.toml", &moved);
    assert_eq!(keys_of(&p.dir, "scenarios/renamed.toml"), k0);

    // Changing the recipe's command changes its cell's key only.
    let p = p.file(
        "pipeline/disk-4k.toml",
        &moved.replace("--iodepth=1", "--iodepth=2"),
    );
    let k1 = keys_of(&p.dir, "scenarios/renamed.toml");
    assert_eq!(k1[0], k0[0], "xz is untouched");
    assert_ne!(k1[1], k0[1], "disk-4k's command changed");
}

#[test]
fn controller_side_steps_run_on_the_controller_transport() {
    let p = Project::local("controller")
        .file(
            "pipeline/probe.toml",
            r#"description = "the client runs on the controller, like an iperf3 client"
uses_storage = false
[run]
on = "controller"
command = "printf '{\"board\": \"%s\", \"host\": \"%s\", \"value\": 2}' {{ board }} {{ host }}"
parse = "json"
[metrics]
value = { from = "value", unit = "x", better = "higher" }
"#,
        )
        .local_scenario("s", &["probe"], 2, "");
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let s = p.samples("probe");
    assert_eq!(measured(&s), 2);
    assert_eq!(
        s[1]["command"],
        "printf '{\"board\": \"%s\", \"host\": \"%s\", \"value\": 2}' here localhost"
    );
}

#[test]
fn interleaved_order_takes_runs_in_turns_and_records_the_order() {
    let p = Project::local("interleave")
        .file(
            "pipeline/other.toml",
            r#"description = "another quick test"
uses_storage = false
[run]
command = "echo '{\"value\": 3}'"
parse = "json"
[metrics]
value = { from = "value", unit = "s", better = "lower" }
"#,
        )
        .local_scenario(
            "s",
            &["sleepy", "other"],
            3,
            "\n[params.sleepy]\nseconds = 0.01\n",
        );
    let p = p.edit(
        "scenarios/s.toml",
        "[method]\n",
        "[method]\norder = \"interleaved\"\n",
    );
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let seqs = |test: &str| -> Vec<(String, u64)> {
        p.samples(test)
            .iter()
            .map(|s| {
                assert_eq!(s["order"], "interleaved");
                (
                    s["kind"].as_str().unwrap().to_string(),
                    s["board_seq"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    let (a, b) = (seqs("sleepy"), seqs("other"));
    // Warm-ups first (1, 2), then measured runs alternate: A B A B A B.
    assert_eq!(
        a,
        [
            ("warmup".into(), 1),
            ("measured".into(), 3),
            ("measured".into(), 5),
            ("measured".into(), 7)
        ]
    );
    assert_eq!(
        b,
        [
            ("warmup".into(), 2),
            ("measured".into(), 4),
            ("measured".into(), 6),
            ("measured".into(), 8)
        ]
    );
}

#[test]
fn cooldown_waits_for_a_fake_thermal_source_and_the_idle_gate_reads_the_real_load() {
    let p = Project::local("cooldown").local_scenario(
        "s",
        &["sleepy"],
        1,
        "\n[params.sleepy]\nseconds = 0.01\n",
    );
    // A fake thermal zone: the lab VM has none. The board file points at it.
    let zone = p.dir.join("fake-thermal");
    std::fs::create_dir_all(&zone).unwrap();
    std::fs::write(zone.join("temp"), "61000\n").unwrap();
    let p = p.edit(
        "boards/here.toml",
        "local = true\n",
        &format!("local = true\nthermal = \"{}/temp\"\n", zone.display()),
    );
    let p = p.edit(
        "scenarios/s.toml",
        "[method]\n",
        "[method]\ncooldown = { until_below = \"50C\", max = \"5m\" }\n\
             idle = { load_below = 0.0001, for = \"1s\", max = \"2s\" }\n",
    );
    let cooler = {
        let zone = zone.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(1500));
            let at = benchpipe::store::now();
            std::fs::write(zone.join("temp"), "45000\n").unwrap();
            at
        })
    };
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    let cooled_at = cooler.join().unwrap();
    assert!(apply.status.success(), "{}", text(&apply));
    let err = String::from_utf8_lossy(&apply.stderr);
    assert!(err.contains("cool-down 61.0°C > 50.0°C"), "{err}");
    // The machine is never that idle, so the gate waits out its maximum and goes on.
    assert!(err.contains("waiting for idle: load"), "{err}");
    let first = &p.samples("sleepy")[0];
    assert!(
        first["started"].as_f64().unwrap() > cooled_at,
        "no run before the board cooled down: {first}"
    );
    let facts: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::fs::read_dir(p.dir.join("results"))
                .unwrap()
                .flatten()
                .find(|e| e.path().join("facts.json").exists())
                .unwrap()
                .path()
                .join("facts.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(facts["idle_temperature_c"], 61.0, "{facts}");
}

#[test]
fn a_precision_target_stops_stable_cells_early_and_noisy_ones_at_max() {
    let p = Project::local("adaptive")
        .file(
            "pipeline/noisy.toml",
            r#"description = "a value that drifts by about 10% a run"
uses_storage = false
[run]
command = "echo \"{\\\"value\\\": $(( ({{ run }} * 7919) % 1000 + 1 )) }\""
parse = "json"
[metrics]
value = { from = "value", unit = "x", better = "higher" }
"#,
        )
        .local_scenario(
            "s",
            &["sleepy", "noisy"],
            3,
            "\n[params.sleepy]\nseconds = 0.01\n",
        );
    let p = p.edit(
        "scenarios/s.toml",
        "runs = { min = 3, max = 3 }",
        "runs = { min = 3, max = 7, target = \"2%\" }",
    );
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    assert_eq!(
        measured(&p.samples("sleepy")),
        3,
        "constant values meet the target at min"
    );
    assert_eq!(
        measured(&p.samples("noisy")),
        7,
        "values spread 433..919 never do: max"
    );
    let md = std::fs::read_to_string(p.dir.join("reports/s/index.md")).unwrap();
    assert!(md.contains("| 3, target reached |"), "{md}");
    assert!(md.contains("| 7, max reached, target missed |"), "{md}");
    assert!(
        md.contains("3 to 7 measured runs, until the 95% CI is within ±2% of the mean"),
        "{md}"
    );
    let plan = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let rules: Vec<&str> = doc["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["state"]["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["target-reached", "max-reached"]);
}

#[test]
fn compare_on_the_command_line_tests_two_configurations_from_the_store() {
    let p = Project::local("compare");
    let value_file = p.dir.join("value");
    let p = p.file(
        "pipeline/reads.toml",
        &format!(
            "description = \"prints the number in a file, plus a little noise\"\nuses_storage = false\n\
             [run]\ncommand = \"echo \\\"{{\\\\\\\"value\\\\\\\": $(cat {}).$(od -An -N1 -tu1 /dev/urandom | tr -d ' ')}}\\\"\"\n\
             parse = \"json\"\n[metrics]\nvalue = {{ from = \"value\", unit = \"MB/s\", better = \"higher\" }}\n",
            value_file.display()
        ),
    );
    let scenario = |images: &str| {
        format!(
            "title = \"c\"\n[images.before]\ninstalled = true\n[images.after]\ninstalled = true\n\
             [matrix]\nimage = [{images}]\nboard = [\"here\"]\ntest = [\"reads\"]\n[method]\n\
             warmup = {{ runs = 0 }}\nruns = {{ min = 4, max = 4 }}\n"
        )
    };
    std::fs::write(&value_file, "100").unwrap();
    let p = p.file("scenarios/before.toml", &scenario("\"before\""));
    assert!(p.bp(&["apply", "scenarios/before.toml"]).status.success());
    std::fs::write(&value_file, "150").unwrap();
    let p = p.file("scenarios/both.toml", &scenario("\"before\", \"after\""));
    let apply = p.bp(&["apply", "scenarios/both.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));

    let out = p.bp(&[
        "compare",
        "scenarios/both.toml",
        "--metric",
        "reads.value",
        "--baseline",
        "image=before",
        "--json",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["verdict"], "better");
    assert_eq!(rows[0]["significant"], true);
    let diff = rows[0]["difference"].as_str().unwrap();
    let pct: f64 = diff[..diff.find('%').unwrap()].parse().unwrap();
    assert!((45.0..55.0).contains(&pct), "about +50%: {diff}");

    let bad = p.bp(&[
        "compare",
        "scenarios/both.toml",
        "--metric",
        "reads",
        "--baseline",
        "image=before",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    let bad = p.bp(&[
        "compare",
        "scenarios/both.toml",
        "--metric",
        "reads.value",
        "--baseline",
        "colour=red",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}

#[test]
fn on_a_terminal_apply_draws_progress_bars_and_without_one_plain_lines() {
    let p = Project::local("tty").local_scenario("s", &["sleepy"], 2, "");
    // `script` gives the command a pseudo-terminal, as a user's shell would.
    let out = Command::new("script")
        .args(["-qec"])
        .arg(format!(
            "{} apply --no-report scenarios/s.toml",
            env!("CARGO_BIN_EXE_benchpipe")
        ))
        .arg("/dev/null")
        .current_dir(&p.dir)
        .env_remove("NO_COLOR")
        .env("TERM", "xterm")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("all boards"), "the overall bar: {screen}");
    assert!(screen.contains("cells"), "{screen}");
    assert!(
        screen.contains("\u{1b}["),
        "terminal control sequences: {screen}"
    );
    // Measured-run lines are printed above the bars, whole.
    assert!(screen.contains("measured run took"), "{screen}");

    let p = Project::local("notty").local_scenario("s", &["sleepy"], 2, "");
    let plain = p.bp(&["apply", "--no-report", "scenarios/s.toml"]);
    let err = String::from_utf8_lossy(&plain.stderr);
    assert!(
        !err.contains("\u{1b}["),
        "no control sequences without a TTY: {err}"
    );
    assert!(
        err.contains("[here] sleepy on here (installed): run 1/2"),
        "{err}"
    );
}

#[test]
fn a_service_is_stopped_when_its_cell_fails() {
    let p = Project::local("service")
        .file(
            "pipeline/served.toml",
            r#"description = "a daemon for the cell, and a client that fails"
uses_storage = false
[[services]]
name = "daemon"
command = "sleep 3001"
ready = "true"
[run]
command = "echo 'client: connection refused' >&2; exit 1"
parse = "json"
[metrics]
value = { from = "value", unit = "x", better = "higher" }
"#,
        )
        .local_scenario("s", &["served"], 2, "");
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert_eq!(apply.status.code(), Some(1), "{}", text(&apply));
    assert!(String::from_utf8_lossy(&apply.stderr).contains("start service daemon"));
    assert!(
        crate::processes_left(&["sleep 3001"]).is_empty(),
        "the service outlived its failed cell: {:?}",
        crate::processes_matching(&["sleep 3001"])
    );
}

/// A progress sink that panics when one board's worker starts: a stand-in for any bug
/// in a board worker, reached through the public `Progress` seam.
struct PanicsOnBoard(&'static str);

impl benchpipe::apply::Progress for PanicsOnBoard {
    fn event(&self, event: benchpipe::apply::Event<'_>) {
        if let benchpipe::apply::Event::BoardStart { board, .. } = event
            && board == self.0
        {
            panic!("injected bug on {board}");
        }
    }
}

#[test]
fn a_panicking_board_worker_fails_its_cells_and_the_other_board_finishes() {
    let p = Project::local("worker-panic")
        .file(
            "boards/there.toml",
            "model = \"test controller\"\nlocal = true\n",
        )
        .local_scenario("s", &["sleepy"], 2, "")
        .edit(
            "scenarios/s.toml",
            "board = [\"here\"]",
            "board = [\"here\", \"there\"]",
        );
    let ws = benchpipe::check::load(&p.dir, &[p.dir.join("scenarios/s.toml")])
        .unwrap_or_else(|e| panic!("{e}"));
    let plan = benchpipe::plan::expand(&ws, &ws.scenarios[0]);
    let store = benchpipe::store::Store::open(p.dir.join("results")).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let outcome =
        benchpipe::apply::apply(&ws, &plan.cells, &store, &PanicsOnBoard("there"), &stop).unwrap();
    assert_eq!(outcome.completed, 1, "{outcome:?}");
    assert_eq!(outcome.failed.len(), 1, "{outcome:?}");
    assert_eq!(outcome.failed[0].0.board.as_str(), "there");
    assert!(
        matches!(
            &outcome.failed[0].1,
            benchpipe::failure::CellFailure::Panicked { board, message }
                if board == "there" && message.contains("injected bug")
        ),
        "{outcome:?}"
    );
    assert!(
        outcome.failed[0].1.to_string().contains("panicked"),
        "{outcome:?}"
    );
    // The failure is in the store too, so `plan` shows it and the exit code is 1.
    let out = p.bp(&["plan", "scenarios/s.toml"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("failed"), "{text}");
}

/// SIGTERM during a cool-down (the walk's longest wait) ends apply within a second or
/// so, with the signal's exit status (128 + 15), and `check` on a file it is still
/// reading ends at once too: no phase outlives the signal.
#[test]
fn sigterm_ends_apply_in_a_cooldown_with_the_signal_status() {
    let p = Project::local("term-cooldown")
        .local_scenario("s", &["sleepy"], 2, "")
        .edit(
            "scenarios/s.toml",
            "[method]\n",
            "[method]\ncooldown = \"10m\"\n",
        );
    let log = p.dir.join("apply.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(&p.dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("cool-down")
    {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "apply never reached its cool-down: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    // A generous bound: this is not a timing benchmark, only "it ends, not in 10 minutes".
    let t1 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t1.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("apply did not end within 10 s of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("interrupted"), "{said}");
}

/// With `exclude_flagged`, flagged runs do not count towards `runs.max`; a board that is
/// always hot must still end: the cell fails after a bounded number of tries.
#[test]
fn a_board_whose_every_run_is_flagged_fails_the_cell_after_a_bounded_number_of_runs() {
    let p = Project::local("always-hot").local_scenario(
        "s",
        &["sleepy"],
        2,
        "\n[params.sleepy]\nseconds = 0.01\n",
    );
    let zone = p.dir.join("fake-thermal");
    std::fs::create_dir_all(&zone).unwrap();
    std::fs::write(zone.join("temp"), "85000\n").unwrap();
    let p = p
        .edit(
            "boards/here.toml",
            "local = true\n",
            &format!("local = true\nthermal = \"{}/temp\"\n", zone.display()),
        )
        .edit(
            "scenarios/s.toml",
            "[method]\n",
            "[method]\nvalidity = { hot = \"80C\", exclude_flagged = true }\n",
        );
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(&["apply", "scenarios/s.toml"]))
        .current_dir(&p.dir)
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            panic!(
                "apply never ended: {} runs taken",
                p.samples("sleepy").len()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let measured = p
        .samples("sleepy")
        .iter()
        .filter(|s| s["kind"] == "measured")
        .count();
    // runs.max = 2: the budget is max(3 x 2, 2 + 10) = 12 tries.
    assert_eq!(measured, 12, "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("were not reached within 12 tries"),
        "{}",
        text(&out)
    );
}

/// Whether process `pid` has a handler for `signal` installed (`SigCgt` in /proc).
fn catches(pid: u32, signal: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let mask = s
                .lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&mask, 16).ok()
        })
        .is_some_and(|m| m & (1 << (signal - 1)) != 0)
}

/// SIGTERM while `check` or `plan` is loading and expanding a large scenario (62,500
/// cells, about a second of work) ends it at once with the signal's status: those
/// phases hold no board state, so nothing needs to wait for them.
#[test]
fn sigterm_ends_check_and_plan_mid_work_with_the_signal_status() {
    let p = Project::local("term-plan");
    let n = 250;
    for i in 0..n {
        std::fs::write(
            p.dir.join(format!("boards/b{i}.toml")),
            format!("model = \"m\"\nlocal = true\nworkdir = \"/var/tmp/bp-term/b{i}\"\n"),
        )
        .unwrap();
        std::fs::write(
            p.dir.join(format!("pipeline/t{i}.toml")),
            "description = \"t\"\nuses_storage = false\n[run]\ncommand = \"true\"\n\
             parse = \"json\"\n[metrics]\nv = { from = \"v\", unit = \"x\", better = \"higher\" }\n",
        )
        .unwrap();
    }
    let boards: Vec<String> = (0..n).map(|i| format!("\"b{i}\"")).collect();
    let tests: Vec<String> = (0..n).map(|i| format!("\"t{i}\"")).collect();
    std::fs::write(
        p.dir.join("scenarios/big.toml"),
        format!(
            "title = \"big\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [{}]\ntest = [{}]\n",
            boards.join(", "),
            tests.join(", ")
        ),
    )
    .unwrap();
    for command in ["check", "plan"] {
        // The work takes about a second; should it end before the signal lands on a
        // fast machine, try again.
        let mut caught = None;
        for _ in 0..5 {
            let mut child = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
                .args([command, "scenarios/big.toml"])
                .current_dir(&p.dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            while !catches(child.id(), libc::SIGTERM) && child.try_wait().unwrap().is_none() {
                std::thread::sleep(Duration::from_millis(1));
            }
            // SAFETY: signalling our own child.
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            let t0 = Instant::now();
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break s;
                }
                if t0.elapsed() > Duration::from_secs(30) {
                    let _ = child.kill();
                    panic!("{command} did not end after SIGTERM");
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            if status.code() != Some(0) {
                caught = Some(status);
                break;
            }
        }
        let status = caught.unwrap_or_else(|| panic!("{command} always ended before the signal"));
        assert_eq!(status.code(), Some(143), "{command}: {status:?}");
    }
}

#[test]
fn plan_says_which_inputs_differ_from_the_nearest_stored_cell() {
    let p = Project::local("why")
        .local_scenario("s", &["sleepy"], 2, "")
        .edit(
            "scenarios/s.toml",
            "[method]\n",
            "[method]\ncooldown = \"0s\"\n",
        );
    let plan = p.bp(&["plan", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    assert!(
        String::from_utf8_lossy(&plan.stdout).contains("+ new: no stored cell like it"),
        "{}",
        text(&plan)
    );
    let apply = p.bp(&["apply", "--no-report", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));

    let p = p.edit("scenarios/s.toml", "cooldown = \"0s\"", "cooldown = \"1s\"");
    let plan = p.bp(&["plan", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let out = String::from_utf8_lossy(&plan.stdout);
    let line = out
        .lines()
        .find(|l| l.contains("~ method.cooldown:"))
        .unwrap_or_else(|| panic!("no diff line naming method.cooldown:\n{out}"));
    let (old, new) = line.split_once(" -> ").expect("old -> new");
    // A zero cool-down is no cool-down in the cell's inputs.
    assert!(old.ends_with("\"none\""), "{line}");
    assert!(new.contains("fixed_s") && new.contains('1'), "{line}");
    assert!(out.contains("1 input(s) differ from stored cell"), "{out}");
    assert!(!out.contains("+ new:"), "{out}");

    let plan = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let why = &doc["cells"][0]["why"];
    assert_eq!(why["kind"], "changed", "{doc}");
    assert_eq!(why["same_address"], true, "{doc}");
    assert_eq!(why["changes"][0]["path"], "method.cooldown", "{doc}");
    assert_eq!(why["more"], 0, "{doc}");
}

#[test]
fn redo_reruns_a_complete_cell_and_keeps_the_old_samples() {
    let p = Project::local("redo").local_scenario("s", &["sleepy", "xz"], 2, "");
    let apply = p.bp(&["apply", "--no-report", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let before = p.samples("sleepy");
    assert_eq!(measured(&before), 2);

    // Plan only shows the redo; it writes nothing.
    let plan = p.bp(&["plan", "--redo", "test=sleepy", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let out = String::from_utf8_lossy(&plan.stdout);
    assert!(out.contains("1 complete, 0 partial, 1 missing"), "{out}");
    assert!(out.contains("! redo:"), "{out}");
    let plan = p.bp(&["plan", "scenarios/s.toml"]);
    assert!(
        String::from_utf8_lossy(&plan.stdout).contains("2 complete"),
        "plan --redo changed the store: {}",
        text(&plan)
    );

    let apply = p.bp(&[
        "apply",
        "--no-report",
        "--redo",
        "test=sleepy",
        "scenarios/s.toml",
    ]);
    assert!(apply.status.success(), "{}", text(&apply));
    assert!(
        String::from_utf8_lossy(&apply.stderr).contains("1 cell(s) completed, 1 already complete"),
        "{}",
        text(&apply)
    );
    let after = p.samples("sleepy");
    assert_eq!(&after[..before.len()], &before[..], "the old samples stay");
    assert_eq!(
        measured(&after),
        4,
        "two new measured runs beside the two old"
    );
    assert_eq!(p.samples("xz").len(), 3, "xz was not redone");

    // Only the new runs count: the cell is complete with 2, not 4.
    let plan = p.bp(&["plan", "--json", "scenarios/s.toml"]);
    let doc: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let cells = doc["cells"].as_array().unwrap();
    let sleepy = cells
        .iter()
        .find(|c| c["address"]["test"] == "sleepy")
        .unwrap();
    assert_eq!(sleepy["state"]["state"], "complete", "{doc}");
    assert_eq!(sleepy["state"]["have"], 2, "{doc}");
}

#[test]
fn only_runs_the_matching_cells_and_plan_shows_the_others_skipped() {
    let p = Project::local("only").local_scenario("s", &["sleepy", "xz"], 2, "");
    let plan = p.bp(&["plan", "--only", "test=sle*", "scenarios/s.toml"]);
    assert!(plan.status.success(), "{}", text(&plan));
    let out = String::from_utf8_lossy(&plan.stdout);
    let skipped: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("skipped by --only"))
        .collect();
    assert_eq!(skipped.len(), 2, "the xz row and the summary:\n{out}");
    assert!(skipped[0].contains("xz on here"), "{out}");
    assert!(out.contains("0 complete, 0 partial, 1 missing"), "{out}");

    let apply = p.bp(&[
        "apply",
        "--no-report",
        "--only",
        "test=sle*",
        "scenarios/s.toml",
    ]);
    assert!(apply.status.success(), "{}", text(&apply));
    assert_eq!(measured(&p.samples("sleepy")), 2);
    assert!(p.samples("xz").is_empty(), "xz ran despite --only");

    let bad = p.bp(&["apply", "--only", "colour=red", "scenarios/s.toml"]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("`colour` is not an axis"),
        "{}",
        text(&bad)
    );
}
