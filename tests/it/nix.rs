//! Integration tests: nix. flake.nix and its NixOS module, evaluated by Debian's nix-bin
//! against the offline nixpkgs stand-in in tests/data/nix-stub/ (Nix cannot download
//! nixpkgs here), and the module's systemd units checked by systemd-analyze, as are
//! contrib/systemd's, whose cron equivalent README.md gives. What needs real nixpkgs
//! (building, the unit tests in the sandbox) runs where Nix has network.

use crate::scratch::Scratch;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::cannot_run;
use crate::repo;

fn text(o: &Output) -> String {
    format!(
        "exit {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// The repository's files as a git repository of their own under a fresh directory:
/// `nix flake check` sees only what git tracks, and a test must neither depend on what
/// this checkout has committed nor add anything to its index. Removed on drop.
struct FlakeCopy {
    dir: PathBuf,
    home: PathBuf,
    _base: Scratch,
}

impl FlakeCopy {
    fn new(tag: &str) -> FlakeCopy {
        let base = Scratch::new(&format!("nix-{tag}"));
        let dir = base.join("flake");
        let home = base.join("home");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        // Tracked files and new ones not ignored: what a commit of this tree would hold.
        let listed = Command::new("git")
            .args([
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])
            .current_dir(repo())
            .output()
            .expect("git runs");
        assert!(listed.status.success(), "git ls-files: {}", text(&listed));
        for rel in listed.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
            let rel = Path::new(std::str::from_utf8(rel).unwrap());
            let from = repo().join(rel);
            let Ok(meta) = std::fs::symlink_metadata(&from) else {
                continue; // deleted in the worktree, not yet in the index
            };
            let to = dir.join(rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            if meta.file_type().is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(&from).unwrap(), &to).unwrap();
            } else {
                std::fs::copy(&from, &to).unwrap();
            }
        }
        let copy = FlakeCopy {
            dir,
            home,
            _base: base,
        };
        copy.git(&["init", "-q"]);
        copy.git(&["add", "-A"]);
        copy
    }

    fn git(&self, args: &[&str]) {
        let o = Command::new("git")
            .args(args)
            .current_dir(&self.dir)
            .env("HOME", &self.home)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", text(&o));
    }

    fn stub(&self) -> String {
        format!("path:{}", self.dir.join("tests/data/nix-stub").display())
    }

    /// `nix ARGS` with flakes on, no build users and no sandbox (TOOLS.md), a home of its
    /// own, and nixpkgs replaced by the stub.
    fn nix(&self, args: &[&str]) -> Output {
        Command::new("nix")
            .args(args)
            .args(["--override-input", "nixpkgs", &self.stub()])
            .current_dir(&self.dir)
            .env("HOME", &self.home)
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env(
                "NIX_CONFIG",
                "experimental-features = nix-command flakes\nbuild-users-group =\nsandbox = false",
            )
            .output()
            .expect("nix runs")
    }

    fn edit(&self, file: &str, from: &str, to: &str) {
        let path = self.dir.join(file);
        let old = std::fs::read_to_string(&path).unwrap();
        assert!(old.contains(from), "{file} holds no `{from}`");
        std::fs::write(&path, old.replacen(from, to, 1)).unwrap();
        self.git(&["add", "-A"]);
    }
}

fn nix_here(test: &str) -> bool {
    for (tool, package) in [("nix", "nix-bin"), ("git", "git")] {
        if !on_path(tool) {
            cannot_run(
                test,
                &format!("`{tool}` is not installed (apt-get install {package})"),
            );
            return false;
        }
    }
    true
}

#[test]
fn the_flake_evaluates_against_the_nixpkgs_stub_with_every_output_the_issue_names() {
    let test =
        "nix::the_flake_evaluates_against_the_nixpkgs_stub_with_every_output_the_issue_names";
    if !nix_here(test) {
        return;
    }
    let flake = FlakeCopy::new("check");
    let check = flake.nix(&["flake", "check", "--no-build", "--no-write-lock-file"]);
    assert!(check.status.success(), "nix flake check: {}", text(&check));

    let show = flake.nix(&["flake", "show", "--json", "--no-write-lock-file"]);
    assert!(show.status.success(), "nix flake show: {}", text(&show));
    let outputs: Value = serde_json::from_slice(&show.stdout).unwrap();
    for system in ["x86_64-linux", "aarch64-linux"] {
        for (kind, name, what) in [
            ("packages", "default", "derivation"),
            ("packages", "benchpipe", "derivation"),
            ("packages", "reports", "derivation"),
            ("checks", "unit-tests", "derivation"),
            ("checks", "reports", "derivation"),
            ("devShells", "default", "derivation"),
        ] {
            let out = &outputs[kind][system][name];
            assert_eq!(out["type"], what, "{kind}.{system}.{name}: {outputs:#}");
        }
    }
    assert_eq!(
        outputs["nixosModules"]["default"]["type"], "nixos-module",
        "{outputs:#}"
    );
}

#[test]
fn the_flake_check_fails_on_a_package_nixpkgs_does_not_have() {
    // What the stub checks is real: a misspelt tool in the dev shell, or a Cargo.lock
    // the package does not have, fails the evaluation as real nixpkgs would.
    let test = "nix::the_flake_check_fails_on_a_package_nixpkgs_does_not_have";
    if !nix_here(test) {
        return;
    }
    let flake = FlakeCopy::new("typo");
    flake.edit("flake.nix", "stress-ng wrk", "stress-ng wrkk");
    let check = flake.nix(&["flake", "check", "--no-build", "--no-write-lock-file"]);
    assert!(
        !check.status.success(),
        "a misspelt package passed: {}",
        text(&check)
    );
    assert!(
        String::from_utf8_lossy(&check.stderr).contains("wrkk"),
        "the error names the package: {}",
        text(&check)
    );

    let flake = FlakeCopy::new("lock");
    flake.edit(
        "flake.nix",
        "cargoLock.lockFile = ./Cargo.lock;",
        "cargoLock.lockFile = ./Cargo.lockx;",
    );
    let check = flake.nix(&["flake", "check", "--no-build", "--no-write-lock-file"]);
    assert!(
        !check.status.success(),
        "a missing Cargo.lock passed: {}",
        text(&check)
    );
}

/// The module evaluated in a NixOS system (the stub's `lib.nixosSystem`) with `options`
/// (a Nix attribute set), as JSON: its units' text, users, groups and tmpfiles rules.
fn evaluate_module(flake: &FlakeCopy, options: &str) -> Result<Value, String> {
    let apply = format!(
        r#"module: let
          nixpkgs = builtins.getFlake "{stub}";
          sys = nixpkgs.lib.nixosSystem {{
            system = "x86_64-linux";
            modules = [ module {{ services.benchpipe = {options}; }} ];
          }};
        in {{
          units = builtins.mapAttrs (_: u: u.text) sys.config.systemd.units;
          users = sys.config.users;
          tmpfiles = sys.config.systemd.tmpfiles.rules;
          package = "${{sys.config.services.benchpipe.package}}";
        }}"#,
        stub = flake.stub(),
    );
    let installable = format!("path:{}#nixosModules.default", flake.dir.display());
    let o = flake.nix(&[
        "eval",
        "--impure",
        "--json",
        "--no-write-lock-file",
        &installable,
        "--apply",
        &apply,
    ]);
    if !o.status.success() {
        return Err(text(&o));
    }
    Ok(serde_json::from_slice(&o.stdout).unwrap())
}

/// The `Key=value` lines of `key` in a unit's text.
fn values<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(key)?.strip_prefix('='))
        .collect()
}

/// systemd-analyze's complaints about the units: unknown keys, bad values, a calendar
/// spec it cannot parse. The package path (a stub derivation nothing built) is replaced
/// by this test's benchpipe, so that ExecStart names an executable.
pub(crate) fn systemd_complaints(service: &str, timer: &str, package: &str, dir: &Path) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let service = service.replace(
        &format!("{package}/bin/benchpipe"),
        env!("CARGO_BIN_EXE_benchpipe"),
    );
    std::fs::write(dir.join("benchpipe.service"), service).unwrap();
    std::fs::write(dir.join("benchpipe.timer"), timer).unwrap();
    let o = Command::new("systemd-analyze")
        .args(["verify", "--man=no", "benchpipe.service", "benchpipe.timer"])
        .current_dir(dir)
        .output()
        .unwrap();
    let mut complaints: Vec<String> = String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.contains("benchpipe.service") || l.contains("benchpipe.timer"))
        .map(str::to_string)
        .collect();
    if !o.status.success() {
        complaints.push(format!("systemd-analyze verify: {}", text(&o)));
    }
    complaints.join("\n")
}

#[test]
fn the_nixos_module_runs_apply_on_a_timer_with_the_scenarios_store_schedule_and_user() {
    let test =
        "nix::the_nixos_module_runs_apply_on_a_timer_with_the_scenarios_store_schedule_and_user";
    if !nix_here(test) {
        return;
    }
    if !on_path("systemd-analyze") {
        cannot_run(
            test,
            "systemd-analyze is not installed (apt-get install systemd)",
        );
        return;
    }
    let flake = FlakeCopy::new("module");
    // A scenario path with a space and a `%`: systemd would split the one and expand
    // the other, unless ExecStart quotes them.
    let got = evaluate_module(
        &flake,
        r#"{
          enable = true;
          workspace = "/srv/bench";
          scenarios = [ "scenarios/lab.toml" "/srv/bench/my scenarios/100%.toml" ];
          schedule = "Sun *-*-* 03:00:00";
          store = "/srv/store/results";
          reportsDir = "/srv/www/reports";
          user = "bench";
          group = "lab";
          extraArgs = [ "--on-drift" "keep" ];
        }"#,
    )
    .unwrap_or_else(|e| panic!("module evaluation: {e}"));
    let service = got["units"]["benchpipe.service"]
        .as_str()
        .expect("a service unit");
    let timer = got["units"]["benchpipe.timer"]
        .as_str()
        .expect("a timer unit");
    let package = got["package"].as_str().unwrap();

    let exec = values(service, "ExecStart");
    assert_eq!(
        exec,
        [format!(
            r#""{package}/bin/benchpipe" "apply" "--quiet" "--yes" "--store" "/srv/store/results" "--out" "/srv/www/reports" "--on-drift" "keep" "scenarios/lab.toml" "/srv/bench/my scenarios/100%%.toml""#
        )],
        "{service}"
    );
    assert_eq!(
        values(service, "ExecStartPost"),
        [format!(
            r#""{package}/bin/benchpipe" "history" "--fail-on" "regression" "--findings" "/srv/www/reports/findings.json" "--store" "/srv/store/results" "scenarios/lab.toml" "/srv/bench/my scenarios/100%%.toml""#
        )],
        "{service}"
    );
    assert_eq!(values(service, "Type"), ["oneshot"], "{service}");
    assert_eq!(values(service, "User"), ["bench"], "{service}");
    assert_eq!(values(service, "Group"), ["lab"], "{service}");
    assert_eq!(
        values(service, "WorkingDirectory"),
        ["/srv/bench"],
        "{service}"
    );
    // Confined (the user is not root): writes only the store, its image cache, reports.
    assert_eq!(values(service, "ProtectSystem"), ["strict"], "{service}");
    assert_eq!(
        values(service, "ReadWritePaths"),
        [
            "/srv/store/results",
            "/srv/store/image-cache",
            "/srv/www/reports"
        ],
        "{service}"
    );
    assert_eq!(values(service, "CapabilityBoundingSet"), [""], "{service}");
    assert_eq!(
        values(timer, "OnCalendar"),
        ["Sun *-*-* 03:00:00"],
        "{timer}"
    );
    assert_eq!(values(timer, "Unit"), ["benchpipe.service"], "{timer}");
    assert_eq!(values(timer, "Persistent"), ["true"], "{timer}");
    // A user the machine already has is not created.
    assert_eq!(got["users"]["users"], serde_json::json!({}), "{got:#}");
    assert!(
        got["tmpfiles"]
            .as_array()
            .unwrap()
            .contains(&Value::from("d /srv/store/results 0750 bench lab -")),
        "{got:#}"
    );
    let dir = flake.dir.parent().unwrap().join("units");
    let complaints = systemd_complaints(service, timer, package, &dir);
    assert!(complaints.is_empty(), "{complaints}\n{service}\n{timer}");

    // The defaults: a benchpipe system user, daily; root runs unconfined (a localhost
    // board or the lab need mkfs, mounts, namespaces, the kernel log).
    let got = evaluate_module(
        &flake,
        r#"{ enable = true; workspace = "/srv/bench"; scenarios = [ "scenarios/lab.toml" ]; }"#,
    )
    .unwrap_or_else(|e| panic!("module evaluation with defaults: {e}"));
    let service = got["units"]["benchpipe.service"].as_str().unwrap();
    assert_eq!(values(service, "User"), ["benchpipe"], "{service}");
    assert_eq!(
        got["users"]["users"]["benchpipe"]["isSystemUser"], true,
        "{got:#}"
    );
    assert_eq!(
        got["users"]["users"]["benchpipe"]["group"], "benchpipe",
        "{got:#}"
    );
    assert!(got["users"]["groups"]["benchpipe"].is_object(), "{got:#}");
    let timer = got["units"]["benchpipe.timer"].as_str().unwrap();
    assert_eq!(values(timer, "OnCalendar"), ["daily"], "{timer}");
    assert!(
        values(service, "ExecStart")[0].contains(r#""--store" "/var/lib/benchpipe/results""#),
        "{service}"
    );

    let got = evaluate_module(
        &flake,
        r#"{ enable = true; workspace = "/srv/bench"; scenarios = [ "scenarios/lab.toml" ]; user = "root"; group = "root"; }"#,
    )
    .unwrap_or_else(|e| panic!("module evaluation as root: {e}"));
    let service = got["units"]["benchpipe.service"].as_str().unwrap();
    assert_eq!(values(service, "User"), ["root"], "{service}");
    assert!(values(service, "ProtectSystem").is_empty(), "{service}");
    assert_eq!(values(service, "NoNewPrivileges"), ["true"], "{service}");
    assert_eq!(got["users"]["users"], serde_json::json!({}), "{got:#}");

    // Off by default: no unit at all.
    let got = evaluate_module(
        &flake,
        r#"{ workspace = "/srv/bench"; scenarios = [ "x.toml" ]; }"#,
    )
    .unwrap_or_else(|e| panic!("module evaluation, disabled: {e}"));
    assert_eq!(got["units"], serde_json::json!({}), "{got:#}");
}

#[test]
fn the_nixos_module_refuses_a_misspelt_option_an_empty_scenario_list_and_a_bad_schedule() {
    let test =
        "nix::the_nixos_module_refuses_a_misspelt_option_an_empty_scenario_list_and_a_bad_schedule";
    if !nix_here(test) {
        return;
    }
    let flake = FlakeCopy::new("refuse");
    let err = evaluate_module(
        &flake,
        r#"{ enable = true; workspace = "/srv"; scenarios = [ "a.toml" ]; shedule = "daily"; }"#,
    )
    .expect_err("a misspelt option evaluated");
    assert!(
        err.contains("services.benchpipe.shedule' does not exist"),
        "{err}"
    );

    let err = evaluate_module(
        &flake,
        r#"{ enable = true; workspace = "/srv"; scenarios = [ ]; }"#,
    )
    .expect_err("an empty scenario list evaluated");
    assert!(err.contains("services.benchpipe.scenarios"), "{err}");

    // The schedule is systemd's to parse: a bad one evaluates, and systemd-analyze,
    // which the test above runs on every unit, refuses it.
    if !on_path("systemd-analyze") {
        cannot_run(
            test,
            "systemd-analyze is not installed (apt-get install systemd)",
        );
        return;
    }
    let got = evaluate_module(
        &flake,
        r#"{ enable = true; workspace = "/srv"; scenarios = [ "a.toml" ]; schedule = "every other tuesday"; }"#,
    )
    .unwrap();
    let dir = flake.dir.parent().unwrap().join("units");
    let complaints = systemd_complaints(
        got["units"]["benchpipe.service"].as_str().unwrap(),
        got["units"]["benchpipe.timer"].as_str().unwrap(),
        got["package"].as_str().unwrap(),
        &dir,
    );
    assert!(
        complaints.contains("calendar specification"),
        "{complaints:?}"
    );
}

/// contrib/systemd's units, as shipped (their binary replaced by this build's): no
/// complaint from systemd-analyze, a deadline that stops apply as Ctrl-C does, and an
/// ExecStart whose arguments this benchpipe takes (run in an empty directory, it is
/// refused for the missing scenario, never for an argument), and so its ExecStartPost's
/// `history --fail-on regression`.
#[test]
fn contrib_systemd_units_verify_and_their_apply_takes_every_argument() {
    if !on_path("systemd-analyze") {
        return cannot_run(
            "nix::contrib_systemd_units_verify_and_their_apply_takes_every_argument",
            "systemd-analyze is not installed (Debian package systemd)",
        );
    }
    let read =
        |name: &str| std::fs::read_to_string(repo().join("contrib/systemd").join(name)).unwrap();
    let (service, timer) = (read("benchpipe.service"), read("benchpipe.timer"));
    let dir = Scratch::new("contrib-units");
    let complaints = systemd_complaints(&service, &timer, "/usr/local", &dir.join("units"));
    assert_eq!(complaints, "", "{service}");
    for want in [
        "TimeoutStartSec=10h",
        "KillMode=mixed",
        "SuccessExitStatus=143",
        "Type=oneshot",
    ] {
        assert!(service.contains(want), "{want}");
    }
    let exec = service
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("an ExecStart=");
    let mut args = exec.split_whitespace();
    assert_eq!(args.next(), Some("/usr/local/bin/benchpipe"));
    let args: Vec<&str> = args.collect();
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(&args)
        .current_dir(&empty)
        .output()
        .unwrap();
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(said.contains("scenarios/lab.toml"), "{said}");
    assert!(!said.contains("unexpected argument"), "{said}");
    // The history check after it: its arguments taken too (refused for the missing
    // store, never for an argument).
    let post = service
        .lines()
        .find_map(|l| l.strip_prefix("ExecStartPost="))
        .expect("an ExecStartPost=");
    let mut args = post.split_whitespace();
    assert_eq!(args.next(), Some("/usr/local/bin/benchpipe"));
    let args: Vec<&str> = args.collect();
    assert_eq!(args[..3], ["history", "--fail-on", "regression"]);
    let o = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(&args)
        .current_dir(&empty)
        .output()
        .unwrap();
    let said = text(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(said.contains("no store at"), "{said}");
    assert!(!said.contains("unexpected argument"), "{said}");
}

/// The cron equivalent of contrib/systemd's units, as README.md and the service's
/// comment give it: the service's command in its working directory at the timer's time,
/// under `timeout` with the service's deadline (SIGTERM, apply's Ctrl-C) and no `flock`
/// (apply locks its store itself). The test above checks that command's arguments.
#[test]
fn the_cron_line_is_the_units_run_under_the_units_deadline() {
    let read = |rel: &str| std::fs::read_to_string(repo().join(rel)).unwrap();
    let (service, timer) = (
        read("contrib/systemd/benchpipe.service"),
        read("contrib/systemd/benchpipe.timer"),
    );
    let value = |unit: &str, key: &str| values(unit, key).first().copied().unwrap().to_string();
    assert_eq!(value(&timer, "OnCalendar"), "*-*-* 01:00:00");
    let want = format!(
        "0 1 * * * cd {} && timeout -s TERM -k 5m {} {}",
        value(&service, "WorkingDirectory"),
        value(&service, "TimeoutStartSec"),
        value(&service, "ExecStart"),
    );
    let readme = read("README.md");
    let in_readme: Vec<&str> = readme
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("0 1 * * * "))
        .collect();
    assert_eq!(in_readme, [want.as_str()], "README.md's crontab line");
    // The service's comment, its continuation lines joined.
    let comment: Vec<&str> = service
        .lines()
        .filter_map(|l| l.strip_prefix('#'))
        .skip_while(|l| !l.trim_start().starts_with("0 1 * * * "))
        .take_while(|l| l.starts_with("   "))
        .map(|l| l.trim().trim_end_matches('\\').trim())
        .collect();
    assert_eq!(comment.join(" "), want, "benchpipe.service's cron comment");
    assert!(!want.contains("flock"));
}
