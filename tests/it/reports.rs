//! Integration tests: reports. A report is made from the scenario and the store alone
//! (a lab torn down, its board files gone: the same bytes); report.json validates against
//! docs/report.schema.json in Python's jsonschema, and it and results.csv load in
//! Python's json and csv with the same numbers.

use std::collections::BTreeMap;
use std::path::Path;

use crate::lab::{Lab, bp};
use crate::spine::{Project, text};

const FILES: [&str; 4] = ["index.md", "index.html", "report.json", "results.csv"];

/// Every report file of scenario `s` under `root/reports`.
fn reports(root: &Path, scenario: &str) -> BTreeMap<&'static str, Vec<u8>> {
    FILES
        .iter()
        .map(|f| {
            let path = root.join("reports").join(scenario).join(f);
            (
                *f,
                std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
            )
        })
        .collect()
}

fn same_reports(before: &BTreeMap<&str, Vec<u8>>, after: &BTreeMap<&str, Vec<u8>>) {
    for f in FILES {
        assert!(
            before[f] == after[f],
            "{f} differs without the board files:\n{}\n--- now\n{}",
            String::from_utf8_lossy(&before[f]),
            String::from_utf8_lossy(&after[f])
        );
    }
}

fn board_files(root: &Path) -> Vec<String> {
    std::fs::read_dir(root.join("boards"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.ends_with(".toml"))
                .collect()
        })
        .unwrap_or_default()
}

/// The issue's case: `benchpipe report` failed with `no board matches lab-*` after `lab
/// down`. Here a lab apply, the lab torn down (which removes its board files), and the
/// report rendered again: the same bytes in every format, while `check` now refuses the
/// scenario for want of a board.
#[test]
fn a_lab_report_renders_the_same_after_lab_down_from_the_store_alone() {
    let Some(mut lab) = Lab::up(1) else { return };
    let root = lab.root.clone();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for r in ["xz", "disk-4k", "dd-write", "hdparm"] {
        std::fs::copy(
            repo.join(format!("pipeline/{r}.toml")),
            root.join(format!("pipeline/{r}.toml")),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("scenarios/lab-report.toml"),
        format!(
            "title = \"Lab report\"\n[images.installed]\ninstalled = true\n\
             [filesystems.ext4]\nkind = \"ext4\"\nmount_options = [\"noatime\"]\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}-*\"]\nstorage = [\"disk1\"]\n\
             filesystem = [\"ext4\"]\ntest = [\"xz\", \"disk-4k\", \"dd-write\", \"hdparm\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 1 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.xz]\ncorpus_mib = 1\n[params.disk-4k]\nsize = \"4M\"\nruntime = 1\n\
             [params.dd-write]\nmib = 8\n\
             [[report.table]]\ntitle = \"Disk\"\n\
             columns = [\"hdparm.buffered_read\", \"dd-write.sequential_write\", \"disk-4k.random_read\"]\n\
             rows = [\"board\", \"storage\"]\n",
            lab.options.board_prefix
        ),
    )
    .unwrap();
    let scenario = "scenarios/lab-report.toml";
    let apply = bp(&root, &["apply", scenario]);
    assert!(apply.status.success(), "{}", text(&apply));
    let before = reports(&root, "lab-report");
    let md = String::from_utf8_lossy(&before["index.md"]).to_string();
    assert!(md.contains("| 4K random read (MB/s"), "{md}");
    assert!(md.contains("n = 2 measured runs per value."), "{md}");
    assert!(
        md.contains("hdparm on") && md.contains("## Not applicable"),
        "hdparm on a loop device is skipped with its reason: {md}"
    );

    lab.down();
    assert_eq!(
        board_files(&root),
        Vec::<String>::new(),
        "lab down removes its board files"
    );
    let check = bp(&root, &["check", scenario]);
    assert_eq!(check.status.code(), Some(2), "{}", text(&check));
    assert!(String::from_utf8_lossy(&check.stderr).contains("no board matches"));

    let report = bp(&root, &["report", scenario]);
    assert!(report.status.success(), "{}", text(&report));
    let listed = String::from_utf8_lossy(&report.stdout);
    for f in FILES {
        assert!(listed.contains(f), "{listed}");
    }
    same_reports(&before, &reports(&root, "lab-report"));
}

/// A combination the plan cannot make a cell of (a board with no storage the matrix
/// names) is listed from what apply recorded once the board files are gone, and the
/// report is the same bytes.
#[test]
fn without_board_files_a_report_keeps_the_plans_skips_and_every_number() {
    let p = Project::local("report-alone")
        .local_scenario(
            "s",
            &["xz", "dd-write"],
            2,
            "\n[params.dd-write]\nmib = 4\n",
        )
        .edit(
            "scenarios/s.toml",
            "board = [\"here\"]",
            "board = [\"here\", \"there\"]",
        );
    let there = p.dir.join("there-work");
    let p = p.file(
        "boards/there.toml",
        &format!(
            "model = \"second controller\"\nlocal = true\nworkdir = \"{w}\"\n\n\
             [[storage]]\nname = \"other\"\nrole = \"scratch\"\npath = \"{w}/other\"\n",
            w = there.display()
        ),
    );
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let before = reports(&p.dir, "s");
    let md = String::from_utf8_lossy(&before["index.md"]).to_string();
    assert!(
        md.contains(
            "dd-write on there scratch (installed): board there has no storage matching \\`scratch\\`"
        ),
        "{md}"
    );
    assert!(p.dir.join("results/boards/there.skipped.json").is_file());
    assert!(
        !p.dir.join("results/boards/here.skipped.json").exists(),
        "nothing skipped there"
    );

    for b in ["here", "there"] {
        std::fs::remove_file(p.dir.join(format!("boards/{b}.toml"))).unwrap();
    }
    let report = p.bp(&["report", "scenarios/s.toml"]);
    assert!(report.status.success(), "{}", text(&report));
    same_reports(&before, &reports(&p.dir, "s"));
}

/// Python's json and csv read the exports, jsonschema accepts report.json against the
/// documented schema, and every table value's mean is the mean of the CSV's counted runs
/// of its cell.
#[test]
fn report_json_and_results_csv_load_in_python_with_the_same_numbers() {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import jsonschema, csv, json"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        crate::cannot_run(
            "reports::report_json_and_results_csv_load_in_python_with_the_same_numbers",
            "python3 with jsonschema is not installed (apt install python3-jsonschema)",
        );
        return;
    }
    let p = Project::local("report-python").local_scenario(
        "s",
        &["xz", "disk-4k"],
        3,
        "\n[[report.table]]\ntitle = \"Both\"\ncolumns = [\"xz.real\", \"disk-4k.random_read\"]\n",
    );
    let apply = p.bp(&["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));
    let stored: usize = ["xz", "disk-4k"].iter().map(|t| p.samples(t).len()).sum();
    let script = r#"
import csv, json, math, sys
import jsonschema
doc = json.load(open(sys.argv[1], encoding="utf-8"))
schema = json.load(open(sys.argv[2], encoding="utf-8"))
jsonschema.Draft202012Validator.check_schema(schema)
jsonschema.Draft202012Validator(schema).validate(doc)
with open(sys.argv[3], newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
checked = 0
for t in doc["tables"]:
    for r in t["rows"]:
        for col, v in zip(t["columns"], r["values"]):
            if v["n"] == 0:
                continue
            header = "%s (%s)" % (col["metric"], col["unit"])
            xs = [float(x[header]) for x in rows
                  if x["cell"] == v["cell"] and x["counted"] == "true" and x[header] != ""]
            assert len(xs) == v["n"], (header, xs, v)
            assert math.isclose(sum(xs) / len(xs), v["mean"], rel_tol=1e-12), (xs, v)
            assert isinstance(v["mean"], float) and isinstance(v["n"], int)
            checked += 1
print(checked, len(rows))
"#;
    let dir = p.dir.join("reports/s");
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir.join("report.json"))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/report.schema.json"))
        .arg(dir.join("results.csv"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    let mut words = said.split_whitespace().map(|w| w.parse::<usize>().unwrap());
    let (checked, rows) = (words.next().unwrap(), words.next().unwrap());
    // xz's 3 metrics, disk-4k's 4, and the scenario table's 2.
    assert_eq!(checked, 3 + 4 + 2, "{said}");
    assert_eq!(rows, stored, "one CSV row per stored run, warm-ups too");
}
