//! Integration tests: example. The committed example store (examples/lab/, a real lab
//! run): its committed reports are what it renders to now, byte for byte; it holds a
//! number or a reason for every cell of its scenarios; it holds nothing of the machine
//! that recorded it; and its reports are the same bytes whatever the time zone, locale,
//! working directory, the store's path, the order its files were written in, and the
//! process (hash seeds). None of these checks knows what a report says.

use crate::scratch::Scratch;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::cannot_run;
use crate::repo;

fn example() -> PathBuf {
    repo().join("examples/lab")
}

fn text(o: &Output) -> String {
    format!(
        "exit {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The scenario names examples/lab/SCENARIOS lists.
fn scenarios() -> Vec<String> {
    let list = std::fs::read_to_string(example().join("SCENARIOS")).unwrap();
    let names: Vec<String> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    assert!(
        !names.is_empty(),
        "examples/lab/SCENARIOS lists no scenario"
    );
    names
}

/// Every regular file under `dir`, by path relative to it, with its bytes.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Where two trees differ: files only in one, and the first differing line of each file
/// in both.
fn differences(want: &BTreeMap<PathBuf, Vec<u8>>, got: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, a) in want {
        match got.get(path) {
            None => out.push(format!("{}: only in the first", path.display())),
            Some(b) if a != b => {
                let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
                let line = a
                    .lines()
                    .zip(b.lines())
                    .enumerate()
                    .find(|(_, (x, y))| x != y)
                    .map_or_else(
                        || "one is a prefix of the other".into(),
                        |(i, (x, y))| format!("line {}:\n  - {x}\n  + {y}", i + 1),
                    );
                out.push(format!("{}: {line}", path.display()));
            }
            Some(_) => {}
        }
    }
    for path in got.keys().filter(|p| !want.contains_key(*p)) {
        out.push(format!("{}: only in the second", path.display()));
    }
    out
}

/// A workspace as render.sh makes one: the repository's scenarios and recipes, the
/// recorded boards, and the store copied by `copy` (in an order of its choosing). Not a
/// `Project`: it is built at paths the test chooses, two of them side by side.
fn workspace(at: &Path, store: &Path, copy: impl Fn(&Path, &Path)) {
    for d in ["scenarios", "pipeline"] {
        copy_sorted(&repo().join(d), &at.join(d));
    }
    copy_sorted(&example().join("boards"), &at.join("boards"));
    copy(&example().join("results"), store);
}

/// Every file and directory under `dir`, parents before children, in sorted order.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    for p in names {
        out.push(p.clone());
        if p.is_dir() {
            out.extend(entries(&p));
        }
    }
    out
}

fn copy_in_order(from: &Path, to: &Path, reverse: bool) {
    let mut all = entries(from);
    if reverse {
        // Children before parents would fail; reversed, with each parent made on demand.
        all.reverse();
    }
    std::fs::create_dir_all(to).unwrap();
    for p in all {
        let dest = to.join(p.strip_prefix(from).unwrap());
        if p.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::write(&dest, std::fs::read(&p).unwrap()).unwrap();
        }
    }
}

fn copy_sorted(from: &Path, to: &Path) {
    copy_in_order(from, to, false);
}

fn copy_reversed(from: &Path, to: &Path) {
    copy_in_order(from, to, true);
}

fn render_script(out: &Path) -> Output {
    Command::new("bash")
        .arg(example().join("render.sh"))
        .arg(out)
        .env("BENCHPIPE", env!("CARGO_BIN_EXE_benchpipe"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

const REGENERATE: &str = "re-render the reports with `examples/lab/render.sh` (the \
    report changed), or regenerate the store with `sudo examples/lab/regenerate.sh` (the \
    scenarios or recipes changed the cells' keys), and commit examples/lab/";

#[test]
fn the_committed_reports_are_what_the_committed_store_renders_to_now() {
    let scratch = Scratch::new("committed");
    let out = scratch.join("reports");
    let o = render_script(&out);
    assert!(o.status.success(), "render.sh: {}", text(&o));
    let committed = tree(&example().join("reports"));
    let fresh = tree(&out);
    for s in scenarios() {
        assert!(
            committed.keys().any(|p| p.starts_with(&s)),
            "examples/lab/reports/{s}/ is not committed; {REGENERATE}"
        );
    }
    let diff = differences(&committed, &fresh);
    assert!(
        diff.is_empty(),
        "the committed reports (first) differ from a fresh render (second):\n{}\n\n{REGENERATE}",
        diff.join("\n")
    );
}

#[test]
fn the_example_store_has_a_number_or_a_reason_for_every_cell_of_its_scenarios() {
    let scratch = Scratch::new("plan");
    let ws = &scratch;
    workspace(ws, &ws.join("results"), copy_sorted);
    let names = scenarios();
    let files: Vec<String> = names
        .iter()
        .map(|s| format!("scenarios/{s}.toml"))
        .collect();
    let mut args = vec!["plan", "--json", "--store", "results"];
    args.extend(files.iter().map(String::as_str));
    let o = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(&args)
        .current_dir(ws)
        .output()
        .unwrap();
    assert!(o.status.success(), "plan: {}", text(&o));
    let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
    let summary = &plan["summary"];
    for state in ["missing", "partial", "failed"] {
        assert_eq!(
            summary[state], 0,
            "the example store has {state} cells: its keys no longer match the scenarios \
             and recipes ({summary}); {REGENERATE}"
        );
    }
    // Every scenario has measured cells, not only skipped ones.
    for s in &names {
        let complete = plan["cells"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["scenario"] == s.as_str() && c["state"]["state"] == "complete")
            .count();
        assert!(
            complete > 0,
            "scenario {s} has no complete cell in the example store: {summary}"
        );
    }
}

#[test]
fn the_example_holds_no_key_path_or_lab_setting_of_the_machine_that_recorded_it() {
    // regenerate.sh refuses to write an example holding the repository's path, $HOME
    // or the host name, or its workspace's path anywhere but as a lab disk's backing
    // file (a storage fact: lab boards share the controller's filesystem); this checks
    // what was committed.
    let files = tree(&example());
    assert!(
        files.keys().any(|p| p.starts_with("results")),
        "no committed store"
    );
    let recorded = files.iter().filter(|(p, _)| {
        ["results", "boards", "reports"]
            .iter()
            .any(|d| p.starts_with(d))
    });
    for (path, bytes) in recorded {
        let body = String::from_utf8_lossy(bytes);
        for line in body
            .lines()
            .filter(|l| l.contains("/var/tmp/benchpipe-example"))
        {
            assert!(
                line.trim_start().starts_with("\"backing_file\": "),
                "examples/lab/{} names the workspace outside a backing file: {line}",
                path.display()
            );
        }
        for needle in [
            "benchpipe-example-render.",
            "PRIVATE KEY",
            "/work/",
            "/home/",
            "/root/",
        ] {
            assert!(
                !body.contains(needle),
                "examples/lab/{} holds `{needle}`",
                path.display()
            );
        }
        if path.starts_with("boards") {
            for key in ["identity", "known_hosts", "[power]", "[flash]"] {
                assert!(
                    !body.contains(key),
                    "examples/lab/{} holds `{key}`",
                    path.display()
                );
            }
        }
    }
}

/// Whether `dir` is on a tmpfs, where a directory lists its entries in the order they
/// were made, so a store written in another order reads in another order.
fn on_tmpfs(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
    // SAFETY: statfs writes into the zeroed struct we own; the path is NUL-terminated.
    unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &raw mut s) == 0 && s.f_type == libc::TMPFS_MAGIC
    }
}

fn listing(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect()
}

#[test]
fn reports_are_the_same_bytes_whatever_tz_locale_cwd_store_path_file_order_and_process() {
    let test = "example::reports_are_the_same_bytes_whatever_tz_locale_cwd_store_path_file_order_and_process";
    let shm = Path::new("/dev/shm");
    let scratch = if shm.is_dir() && on_tmpfs(shm) {
        Scratch::under(shm, "determinism")
    } else {
        Scratch::new("determinism")
    };
    // Two workspaces at different absolute paths; the second's store has another name
    // and depth, and its files were written in the reverse order.
    let (a, b) = (scratch.join("a"), scratch.join("b/some/deeper/place"));
    let (store_a, store_b) = (a.join("results"), scratch.join("b/stores/copy-of-the-lab"));
    workspace(&a, &store_a, copy_sorted);
    workspace(&b, &store_b, copy_reversed);
    if listing(&store_a) == listing(&store_b) {
        cannot_run(
            test,
            &format!(
                "{} lists a directory in one order however it was written: the file-order \
                 variation would be no variation",
                scratch.parent().unwrap_or(&scratch).display()
            ),
        );
        return;
    }
    let names = scenarios();

    // Run 1: relative paths from inside the workspace, UTC, the C locale.
    let mut one = Command::new(env!("CARGO_BIN_EXE_benchpipe"));
    one.args(["report", "--store", "results", "--out", "out"])
        .args(names.iter().map(|s| format!("scenarios/{s}.toml")))
        .current_dir(&a)
        .env("TZ", "UTC")
        .env("LANG", "C")
        .env("LC_ALL", "C");
    // Run 2: absolute paths from `/`, a time zone 12:45 ahead, German and Turkish
    // locales (a decimal comma; a dotless i when upper-casing).
    let out_b = scratch.join("b/out");
    let mut two = Command::new(env!("CARGO_BIN_EXE_benchpipe"));
    two.arg("report")
        .arg("--store")
        .arg(&store_b)
        .arg("--out")
        .arg(&out_b)
        .args(names.iter().map(|s| b.join(format!("scenarios/{s}.toml"))))
        .current_dir("/")
        .env("TZ", "Pacific/Chatham")
        .env("LANG", "de_DE.UTF-8")
        .env("LC_ALL", "tr_TR.UTF-8")
        .env("LC_NUMERIC", "de_DE.UTF-8");
    // Each run is a process of its own: std's RandomState draws new hash keys in every
    // process, so any output in HashMap order differs between the two.
    for cmd in [&mut one, &mut two] {
        let o = cmd.output().unwrap();
        assert!(o.status.success(), "report: {}", text(&o));
    }
    let (first, second) = (tree(&a.join("out")), tree(&out_b));
    assert!(
        names.iter().all(|s| first.keys().any(|p| p.starts_with(s))),
        "a scenario rendered no report: {:?}",
        first.keys().collect::<Vec<_>>()
    );
    assert!(
        first.values().all(|b| !b.is_empty()),
        "an empty report file"
    );
    let diff = differences(&first, &second);
    assert!(
        diff.is_empty(),
        "the two renders differ:\n{}",
        diff.join("\n")
    );
}

/// regenerate.sh runs as root and removes its workspace in world-writable /var/tmp
/// before it starts: only a root-owned directory, no link, holding its root-owned
/// marker. A planted link, a directory of another user's or one without the marker is
/// refused (exit 2) and left as it was. The script runs from a copy of examples/lab/
/// in a scratch repository, so that a wrong acceptance could touch no checkout.
#[test]
fn regenerate_refuses_a_planted_workspace_and_leaves_it_as_it_was() {
    type Plant<'a> = Box<dyn Fn(&Path) + 'a>;
    let test = "example::regenerate_refuses_a_planted_workspace_and_leaves_it_as_it_was";
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        cannot_run(
            test,
            "regenerate.sh runs as root only; run the tests as root",
        );
        return;
    }
    let scratch = Scratch::new("planted");
    let fake_repo = scratch.join("repo");
    let scripts = fake_repo.join("examples/lab");
    std::fs::create_dir_all(&scripts).unwrap();
    for d in ["scenarios", "pipeline"] {
        std::fs::create_dir_all(fake_repo.join(d)).unwrap();
    }
    for f in ["regenerate.sh", "render.sh"] {
        std::fs::copy(example().join(f), scripts.join(f)).unwrap();
    }
    std::fs::write(scripts.join("SCENARIOS"), "no-such-scenario\n").unwrap();
    let mark = ".benchpipe-example-workspace";
    let victim = scratch.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    std::fs::write(victim.join("precious"), "keep me").unwrap();
    std::fs::write(victim.join(mark), "").unwrap();

    let planted: Vec<(&str, Plant)> = vec![
        (
            "a link to a directory holding the marker",
            Box::new(|ws: &Path| std::os::unix::fs::symlink(&victim, ws).unwrap()),
        ),
        (
            "another user's directory holding the marker",
            Box::new(|ws: &Path| {
                std::fs::create_dir(ws).unwrap();
                std::fs::write(ws.join("precious"), "keep me").unwrap();
                std::fs::write(ws.join(mark), "").unwrap();
                std::os::unix::fs::chown(ws, Some(65534), Some(65534)).unwrap();
            }),
        ),
        (
            "a root directory without the marker",
            Box::new(|ws: &Path| {
                std::fs::create_dir(ws).unwrap();
                std::fs::write(ws.join("precious"), "keep me").unwrap();
            }),
        ),
        (
            "a root directory whose marker is a link",
            Box::new(|ws: &Path| {
                std::fs::create_dir(ws).unwrap();
                std::fs::write(ws.join("precious"), "keep me").unwrap();
                std::os::unix::fs::symlink(victim.join(mark), ws.join(mark)).unwrap();
            }),
        ),
    ];
    for (i, (what, plant)) in planted.iter().enumerate() {
        let ws = scratch.join(format!("ws-{i}"));
        plant(&ws);
        let o = Command::new("bash")
            .arg(scripts.join("regenerate.sh"))
            .env("WORKSPACE", &ws)
            .env("BENCHPIPE", env!("CARGO_BIN_EXE_benchpipe"))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{what}: {}", text(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("is not a workspace of this script's"),
            "{what}: {}",
            text(&o)
        );
        assert_eq!(
            std::fs::read_to_string(ws.join("precious")).unwrap(),
            "keep me",
            "{what}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(victim.join("precious")).unwrap(),
        "keep me"
    );
    assert!(victim.join(mark).exists());
}

/// The History example (examples/history/, eight applies of a stand-in test, the board
/// replaced by a new revision at the sixth): its committed reports are what its store
/// renders to now, byte for byte; they have a History section whose change starts at
/// run 6 and names the board's model; and `benchpipe history` finds the same change.
#[test]
fn the_history_examples_reports_are_what_its_store_renders_to_and_show_the_change() {
    let history = repo().join("examples/history");
    let scratch = Scratch::new("history-example");
    let out = scratch.join("reports");
    let o = Command::new("bash")
        .arg(history.join("render.sh"))
        .arg(&out)
        .env("BENCHPIPE", env!("CARGO_BIN_EXE_benchpipe"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "render.sh: {}", text(&o));
    let diff = differences(&tree(&history.join("reports")), &tree(&out));
    assert!(
        diff.is_empty(),
        "the committed History example's reports (first) differ from a fresh render (second):\n{}\n\n\
         re-render them with `examples/history/render.sh` and commit examples/history/",
        diff.join("\n")
    );
    let fresh = tree(&out.join("nightly"));
    for file in [
        "index.md",
        "index.html",
        "report.json",
        "results.csv",
        "history.csv",
        "history-nightly-step.svg",
    ] {
        assert!(
            fresh.contains_key(Path::new(file)),
            "no {file}: {:?}",
            fresh.keys()
        );
    }
    let md = String::from_utf8_lossy(&fresh[Path::new("index.md")]).to_string();
    assert!(md.contains("## History"), "{md}");
    let row = md
        .lines()
        .find(|l| l.contains("| worse |"))
        .unwrap_or_else(|| panic!("no change row:\n{md}"));
    assert!(
        row.contains("| 8 | 6 |") && row.contains("inputs.board.model"),
        "{row}"
    );
    let svg = String::from_utf8_lossy(&fresh[Path::new("history-nightly-step.svg")]).to_string();
    assert_eq!(svg.matches("<path class=\"change\"").count(), 1, "{svg}");
    assert!(svg.contains("a change at run 6: +"), "{svg}");

    // `benchpipe history` on the same store: the change at run 6, naming the model.
    let ws = scratch.join("ws");
    for d in ["scenarios", "pipeline", "boards"] {
        copy_sorted(&history.join(d), &ws.join(d));
    }
    let o = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(["history", "--json", "--store"])
        .arg(history.join("results"))
        .arg("scenarios/nightly.toml")
        .current_dir(&ws)
        .output()
        .unwrap();
    assert!(o.status.success(), "history: {}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let series = &doc["scenarios"][0]["series"][0];
    assert_eq!(series["points"].as_array().unwrap().len(), 8, "{doc}");
    let changes = series["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{doc}");
    assert_eq!(changes[0]["point"], 5, "{doc}");
    assert!(
        changes[0]["facts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["name"] == "inputs.board.model" && f["after"] == "Example board rev 1.2"),
        "{doc}"
    );
}
