//! Integration tests: comparisons that answer the question. Every shipped scenario's
//! `[[report.compare]]` rows select pairs of cells; a report warns about wide
//! intervals and states the outlier rule; `report --compare` judges configurations
//! across two stores and two scenarios; the shipped lab scenario, run on a lab of two
//! boards, gives one pooled ext4-vs-btrfs-lzo verdict beside the per-board rows.

use crate::scratch::Scratch;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use benchpipe::model::Pool;
use benchpipe::stats::Verdict;
use serde_json::Value;

use crate::lab::{Lab, bp};
use crate::repo;
use crate::spine::{Project, text};

/// A board file shaped like the ones `lab up` writes, for planning only.
fn lab_board(i: usize, key: &Path) -> String {
    format!(
        "model = \"benchpipe virtual lab board\"\nworkdir = \"/var/tmp/benchpipe-plan/lab-{i}\"\n\
         [ssh]\nhost = \"198.18.0.{h}\"\nport = 22\nuser = \"root\"\nidentity = \"{key}\"\n\
         [flash]\nmethod = \"dd\"\nvia = \"lab-{i}\"\ndevice = \"/dev/loop9{i}0\"\n\
         [power]\ncycle = \"true\"\n\
         [[storage]]\nname = \"boot\"\nrole = \"boot\"\ndevice = \"/dev/loop9{i}0\"\npath = \"/var/tmp/benchpipe-plan/lab-{i}/boot\"\n\
         [[storage]]\nname = \"disk1\"\nrole = \"scratch\"\ndevice = \"/dev/loop9{i}1\"\npath = \"/var/tmp/benchpipe-plan/lab-{i}/disk1\"\n\
         [[storage]]\nname = \"disk2\"\nrole = \"scratch\"\ndevice = \"/dev/loop9{i}2\"\npath = \"/var/tmp/benchpipe-plan/lab-{i}/disk2\"\n\
         [[network]]\nname = \"lan\"\naddress = \"198.18.0.{h}\"\ninterface = \"eth0\"\nkind = \"wired\"\n\
         [[network]]\nname = \"wifi\"\naddress = \"198.18.2.{h}\"\ninterface = \"wlan0\"\nkind = \"wifi\"\n",
        h = i + 1,
        key = key.display()
    )
}

/// The repository's boards and scenarios and the seed workspace's (examples/seeds/),
/// the built-in recipes, and two lab-shaped boards. Not a `Project`, which makes a
/// pipeline/.
fn shipped_workspace() -> Scratch {
    let root = Scratch::new("compare-shipped");
    for (from, d) in [
        ("", "boards"),
        ("", "scenarios"),
        ("examples/seeds", "boards"),
        ("examples/seeds", "scenarios"),
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
        for e in std::fs::read_dir(repo().join(from).join(d))
            .unwrap()
            .flatten()
        {
            if e.path().extension().is_some_and(|x| x == "toml") {
                std::fs::copy(e.path(), root.join(d).join(e.file_name())).unwrap();
            }
        }
    }
    // The lab's key, as `lab up` writes one: lab-flash's first boot authorises it.
    let keygen = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(root.join("lab-key"))
        .output()
        .unwrap();
    assert!(keygen.status.success(), "{keygen:?}");
    // Three: scenarios/lab-cluster.toml's larger cluster has three members.
    for i in 1..=3 {
        std::fs::write(
            root.join(format!("boards/lab-{i}.toml")),
            lab_board(i, &root.join("lab-key")),
        )
        .unwrap();
    }
    root
}

/// Every shipped scenario that sets configurations against each other (more than one
/// image, storage, filesystem or cluster) ships `[[report.compare]]` rows, and each row selects
/// at least one pair of cells; a `pool = "model"` row over the lab's two boards gives
/// a pooled row for both. With no runs stored every row is "not comparable", never a
/// number.
#[test]
fn every_shipped_comparison_selects_pairs_of_cells_and_pools_the_lab_boards() {
    let root = shipped_workspace();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("scenarios"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let mut compared = BTreeSet::new();
    for file in &files {
        let ws = benchpipe::check::load(&root, std::slice::from_ref(file))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let scenario = &ws.scenarios[0];
        let plan = benchpipe::plan::expand(&ws, scenario);
        // Per test: more than one image, storage or filesystem among its cells.
        let alternatives = scenario.matrix.test.iter().any(|t| {
            let distinct = |f: fn(&benchpipe::plan::Address) -> String| {
                plan.cells
                    .iter()
                    .filter(|c| &c.address.test == t)
                    .map(|c| f(&c.address))
                    .collect::<BTreeSet<_>>()
                    .len()
            };
            let clusters = plan
                .cells
                .iter()
                .filter(|c| &c.address.test == t && c.cluster.is_some())
                .map(|c| c.address.board.to_string())
                .collect::<BTreeSet<_>>()
                .len();
            distinct(|a| a.image.to_string()) > 1
                || distinct(|a| format!("{:?}", a.storage)) > 1
                || distinct(|a| format!("{:?}", a.filesystem)) > 1
                || clusters > 1
        });
        assert_eq!(
            alternatives,
            !scenario.compare.is_empty(),
            "{}: configurations against each other need [[report.compare]] rows",
            scenario.name
        );
        for (i, c) in scenario.compare.iter().enumerate() {
            let mut one = scenario.clone();
            one.compare = vec![c.clone()];
            let rows = benchpipe::report::comparisons(&ws, &one, &plan, &BTreeMap::new());
            let what = format!(
                "{} compare #{} ({}.{})",
                scenario.name,
                i + 1,
                c.test,
                c.metric
            );
            assert!(!rows.is_empty(), "{what} selects no pair of cells");
            for r in &rows {
                assert_ne!(r.baseline, r.candidate, "{what}");
                assert_eq!(r.verdict, Verdict::NotComparable, "{what}: {r:?}");
                assert_eq!((r.ratio, r.diff_pct), (None, None), "{what}");
                assert!(
                    r.verdict_text.contains("needs at least 2 runs"),
                    "{what}: {r:?}"
                );
            }
            let on_lab = plan
                .cells
                .iter()
                .all(|c| c.address.board.as_str().starts_with("lab-"));
            if c.pool == Some(Pool::Model) && on_lab {
                let pooled: Vec<_> = rows.iter().filter_map(|r| r.pooled.as_ref()).collect();
                assert!(!pooled.is_empty(), "{what}: no pooled row");
                for p in pooled {
                    assert_eq!(p.model, "benchpipe virtual lab board", "{what}");
                    assert!(
                        p.boards.is_empty() && p.left_out.len() == 3,
                        "{what}: {p:?}"
                    );
                }
            }
            compared.insert(scenario.name.clone());
        }
    }
    for name in [
        "lab",
        "lab-storage",
        "lab-flash",
        "lab-serving",
        "lab-sbc-xz-fs",
        "lab-turing-pi-disk",
        "turing-pi-disk",
        "sbc-xz-fs",
        "sbc-serving",
        "lab-sbc-serving",
        "lab-cluster",
        "turing-pi-apps",
    ] {
        assert!(compared.contains(name), "{name} ships no comparison");
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A recipe that prints the next number of `feed/values` each run (a counter in
/// `feed/counter`), so a test knows every value; `pad` only changes the cell's key.
fn feed_recipe(p: &Project) -> String {
    let feed = p.dir.join("feed");
    std::fs::create_dir_all(&feed).unwrap();
    format!(
        "description = \"prints the next number of a list\"\nuses_storage = false\n\
         [params]\npad = 0\n[run]\n\
         command = '''n=$(cat {f}/counter 2>/dev/null || echo 0); n=$((n+1)); echo $n > {f}/counter; : {{{{ pad }}}}; printf '{{\"value\": %s}}\\n' \"$(sed -n \"${{n}}p\" {f}/values)\"'''\n\
         parse = \"json\"\n[metrics]\nvalue = {{ from = \"value\", unit = \"MB/s\", better = \"higher\" }}\n",
        f = feed.display()
    )
}

fn feed(p: &Project, values: &[f64]) {
    let feed = p.dir.join("feed");
    let lines: String = values.iter().fold(String::new(), |mut out, v| {
        let _ = writeln!(out, "{v}");
        out
    });
    std::fs::write(feed.join("values"), lines).unwrap();
    let _ = std::fs::remove_file(feed.join("counter"));
}

fn feed_scenario(images: &[&str], pad: u32) -> String {
    let decl: String = images.iter().fold(String::new(), |mut out, i| {
        let _ = write!(out, "[images.{i}]\ninstalled = true\n");
        out
    });
    let list: Vec<String> = images.iter().map(|i| format!("\"{i}\"")).collect();
    format!(
        "title = \"feed\"\n{decl}[matrix]\nimage = [{}]\nboard = [\"here\"]\ntest = [\"feed\"]\n\
         [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 4, max = 4 }}\ncooldown = \"0s\"\n\
         [params.feed]\npad = {pad}\n",
        list.join(", ")
    )
}

fn json(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", text(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

/// Last month's store against tonight's: the configuration measured in both is judged
/// (faster, with Fieller's interval), the input that changed between them is named, and
/// the configuration only tonight's store has is listed as such. Then two scenarios in
/// one store (one image each): configurations pair up but for the image.
#[test]
fn report_compare_judges_configurations_across_two_stores_and_two_scenarios() {
    let p = Project::local("across");
    let recipe = feed_recipe(&p);
    let p = p.file("pipeline/feed.toml", &recipe);
    let p = p.file("scenarios/s.toml", &feed_scenario(&["before"], 0));
    feed(&p, &[100.0, 101.0, 99.0, 100.5]);
    let out = p.bp(&["apply", "--store", "old", "--no-report", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));

    // Tonight: another parameter, and a second image measured only now.
    let p = p.file("scenarios/s.toml", &feed_scenario(&["before", "after"], 1));
    feed(
        &p,
        &[150.0, 151.0, 149.0, 150.5, 150.0, 151.0, 149.0, 150.5],
    );
    let out = p.bp(&["apply", "--store", "new", "--no-report", "scenarios/s.toml"]);
    assert!(out.status.success(), "{}", text(&out));

    let md = p.bp(&["report", "scenarios/s.toml", "--compare", "old", "new"]);
    assert!(md.status.success(), "{}", text(&md));
    let md = String::from_utf8_lossy(&md.stdout).to_string();
    assert!(md.starts_with("# new against old (s)"), "{md}");
    assert!(md.contains("## feed on here / before"), "{md}");
    assert!(
        md.contains("- differs: input ~ ") && md.contains("pad"),
        "{md}"
    );
    assert!(md.contains("| feed.value (MB/s) | 4 vs 4 | +"), "{md}");
    assert!(md.contains("faster (p = "), "{md}");
    assert!(
        md.contains("## Only in new\n\n- feed on here / after"),
        "{md}"
    );

    let doc = json(&p.bp(&[
        "report",
        "scenarios/s.toml",
        "--compare",
        "old",
        "new",
        "--json",
    ]));
    let configs = doc[0]["configs"].as_array().unwrap();
    let both = configs
        .iter()
        .find(|c| c["presence"] == "both")
        .expect("a pair");
    let row = &both["rows"][0];
    assert_eq!(row["verdict"], "better", "{row}");
    assert_eq!(row["significant"], true);
    let ratio = row["ratio"].as_f64().unwrap();
    assert!((ratio - 150.125 / 100.125).abs() < 1e-9, "{row}");
    let (lo, hi) = (
        row["ci_low_pct"].as_f64().unwrap(),
        row["ci_high_pct"].as_f64().unwrap(),
    );
    assert!(
        lo > 40.0 && hi < 60.0 && lo < (ratio - 1.0) * 100.0,
        "{row}"
    );
    assert!(
        configs.iter().any(|c| c["presence"] == "only-candidate"),
        "{doc}"
    );

    // Two scenarios of one image each, in tonight's store: the image is what differs.
    let p = p
        .file("scenarios/before.toml", &feed_scenario(&["before"], 1))
        .file("scenarios/after.toml", &feed_scenario(&["after"], 1));
    let doc = json(&p.bp(&[
        "report",
        "--store",
        "new",
        "--compare",
        "scenarios/before.toml",
        "scenarios/after.toml",
        "--json",
    ]));
    assert_eq!(
        doc[0]["matched_axes"],
        serde_json::json!(["board", "storage", "filesystem", "network"])
    );
    let c = &doc[0]["configs"][0];
    assert_eq!(c["presence"], "both", "{doc}");
    assert_eq!(c["config"], "here / before -> here / after");
    assert!(c["changes"].to_string().contains("after"), "{c}");
    // The same values on both sides: a ratio of 1 whose interval fits in ±2%.
    assert_eq!(c["rows"][0]["verdict"], "equivalent", "{c}");
    assert_eq!(c["rows"][0]["ratio"], 1.0);

    for (args, want) in [
        (
            vec!["report", "scenarios/s.toml", "--compare", "nope", "new"],
            "no store at nope",
        ),
        (
            vec![
                "report",
                "scenarios/s.toml",
                "--compare",
                "old",
                "scenarios/s.toml",
            ],
            "not one of each",
        ),
        (
            vec!["report", "--compare", "old", "new"],
            "name the scenario files",
        ),
        (
            vec!["report", "scenarios/s.toml", "--compare", "old"],
            "--compare",
        ),
    ] {
        let out = p.bp(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(want), "{args:?}: {}", text(&out));
    }
}

/// A table value whose interval is wider than `[report] wide_ci` is a warning saying
/// how wide and what would narrow it, with its outlier counted by the stated rule.
#[test]
fn a_report_warns_about_a_wide_interval_and_states_the_outlier_rule() {
    let p = Project::local("wide");
    let recipe = feed_recipe(&p);
    let p = p.file("pipeline/feed.toml", &recipe).file(
        "scenarios/w.toml",
        &feed_scenario(&["installed"], 0)
            .replace("min = 4, max = 4", "min = 5, max = 5")
            .replace("[params.feed]", "[report]\nwide_ci = \"5%\"\n[params.feed]"),
    );
    // Q1 = 100, Q3 = 101: 160 is a severe outlier; mean 112 ± 33 (95%).
    feed(&p, &[100.0, 101.0, 99.0, 100.0, 160.0]);
    let out = p.bp(&["apply", "scenarios/w.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let md = std::fs::read_to_string(p.dir.join("reports/w/index.md")).unwrap();
    assert!(md.contains("## Wide intervals"), "{md}");
    assert!(
        md.contains(
            "Values whose 95% CI is wider than ±5% of the mean. What would narrow them: more runs"
        ),
        "{md}"
    );
    assert!(
        md.contains("- feed on here / installed: value 112 ± 33 MB/s (n=5, ±29.76%, 1 severe outlier); about "),
        "{md}"
    );
    assert!(md.contains("runs would narrow it"), "{md}");
    assert!(
        md.contains("Outliers: an outlier lies beyond Tukey's fences"),
        "{md}"
    );
    let doc: Value =
        serde_json::from_slice(&std::fs::read(p.dir.join("reports/w/report.json")).unwrap())
            .unwrap();
    assert_eq!(doc["precision"]["wide_ci"], 0.05);
    let v = &doc["precision"]["wide"][0]["values"][0];
    assert_eq!(v["n"], 5);
    let runs = v["runs_needed"]["runs"].as_u64().unwrap();
    // 26.8 / 112 = 24% relative sd: about (2 · 0.24 / 0.05)² ≈ 90 runs.
    assert!((60..140).contains(&runs), "{v}");
    assert_eq!(v["outliers"]["severe"], 1);
}

/// The shipped lab scenario on a lab of two boards, as shipped but for the board glob:
/// ext4 against btrfs-lzo per board, and one pooled verdict for the lab's model, every
/// interval within the possible range and every verdict one of the four.
#[test]
fn the_shipped_lab_scenario_on_two_boards_answers_ext4_against_btrfs_lzo_per_model() {
    // btrfs wants 114 MB at least, dd-write writes 64 MiB.
    let Some(lab) = Lab::up_with_options(2, |o| {
        o.disks_per_board = 1;
        o.disk_bytes = 256 << 20;
    }) else {
        return;
    };
    let root = lab.root.clone();
    for e in std::fs::read_dir(repo().join("pipeline"))
        .unwrap()
        .flatten()
    {
        std::fs::create_dir_all(root.join("pipeline")).unwrap();
        std::fs::copy(e.path(), root.join("pipeline").join(e.file_name())).unwrap();
    }
    let shipped = std::fs::read_to_string(repo().join("scenarios/lab.toml")).unwrap();
    let prefix = &lab.options.board_prefix;
    let text_of = shipped.replace("board = [\"lab-*\"]", &format!("board = [\"{prefix}-*\"]"));
    assert_ne!(text_of, shipped);
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(root.join("scenarios/lab.toml"), text_of).unwrap();
    let out = bp(&root, &["apply", "scenarios/lab.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let doc: Value =
        serde_json::from_slice(&std::fs::read(root.join("reports/lab/report.json")).unwrap())
            .unwrap();
    let rows = doc["comparisons"].as_array().unwrap();
    for metric in [
        "disk-4k.random_read",
        "disk-4k.random_write",
        "dd-write.sequential_write",
    ] {
        let of: Vec<&Value> = rows.iter().filter(|r| r["metric"] == metric).collect();
        let pooled: Vec<&&Value> = of.iter().filter(|r| !r["pooled"].is_null()).collect();
        assert_eq!(
            (of.len(), pooled.len()),
            (3, 1),
            "2 boards and their model: {of:?}"
        );
        let p = &pooled[0]["pooled"];
        assert_eq!(p["model"], "benchpipe virtual lab board");
        assert_eq!(p["boards"].as_array().unwrap().len(), 2, "{p}");
        assert_eq!(
            pooled[0]["numbers"]["baseline_n"], 6,
            "3 runs on each of 2 boards"
        );
        for r in &of {
            let v = r["verdict"].as_str().unwrap();
            assert!(
                ["better", "worse", "equivalent", "inconclusive"].contains(&v),
                "{r}"
            );
            assert!(
                r["numbers"]["ci_low_pct"]
                    .as_f64()
                    .is_none_or(|l| l >= -100.0),
                "{r}"
            );
            if v == "inconclusive" {
                assert!(
                    r["numbers"]["runs_needed"]["runs"].as_u64().unwrap() > 3,
                    "{r}"
                );
                assert!(
                    r["difference"].as_str().unwrap().starts_with("95% CI"),
                    "{r}"
                );
            }
        }
    }
    let md = std::fs::read_to_string(root.join("reports/lab/index.md")).unwrap();
    // The pooled rows, under the boards' labels: the model they share said once.
    assert!(md.contains(&format!("| pooled: {prefix}-")), "{md}");
    assert!(md.contains(": benchpipe virtual lab board."), "{md}");
    assert!(md.contains("Fieller's 95% confidence interval"), "{md}");
}
