//! Integration tests: a player of contrib/github/benchpipe-labs.yml (`workflow.rs` runs
//! it on two local boards standing for two labs), as GitHub's runner runs it: jobs in
//! `needs` order, the matrix
//! expanded, each `if:`, `env:` and `${{ }}` evaluated, each script run by `bash
//! --noprofile --norc -eo pipefail` with GITHUB_OUTPUT and GITHUB_PATH, and the actions
//! it uses played on directories (checkout, upload-artifact without hidden files or
//! empty directories, download-artifact, a cache hit). What GitHub does beyond that is
//! not played: an expression or action this file does not know fails the test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::workflow::workflow;

/// An expression's value.
#[derive(Clone, Debug, PartialEq)]
enum V {
    Null,
    Bool(bool),
    Str(String),
}

impl V {
    fn truthy(&self) -> bool {
        match self {
            V::Null => false,
            V::Bool(b) => *b,
            V::Str(s) => !s.is_empty(),
        }
    }
    fn text(&self) -> String {
        match self {
            V::Null => String::new(),
            V::Bool(b) => b.to_string(),
            V::Str(s) => s.clone(),
        }
    }
}

/// What an expression may read: the contexts this workflow uses.
#[derive(Default)]
struct Ctx {
    contexts: BTreeMap<String, BTreeMap<String, String>>,
    /// `success()` is false: an earlier step (or a needed job) failed.
    failed: bool,
}

impl Ctx {
    fn set(&mut self, context: &str, key: &str, value: &str) {
        // GitHub reads a context's properties whatever their case.
        self.contexts
            .entry(context.to_string())
            .or_default()
            .insert(key.to_lowercase(), value.to_string());
    }
}

fn tokens(expr: &str) -> Vec<String> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'\'' {
            let mut s = String::from("'");
            i += 1;
            loop {
                assert!(i < b.len(), "unclosed string in `{expr}`");
                if b[i] == b'\'' && b.get(i + 1) == Some(&b'\'') {
                    s.push('\'');
                    i += 2;
                } else if b[i] == b'\'' {
                    i += 1;
                    break;
                } else {
                    s.push(b[i] as char);
                    i += 1;
                }
            }
            out.push(s);
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-') {
                i += 1;
            }
            out.push(expr[start..i].to_string());
        } else {
            let two = expr.get(i..i + 2).unwrap_or("");
            let op = if ["||", "&&", "==", "!="].contains(&two) {
                two
            } else {
                &expr[i..=i]
            };
            assert!(
                ["||", "&&", "==", "!=", "!", "(", ")", "."].contains(&op),
                "`{op}` in `{expr}`: not played here"
            );
            out.push(op.to_string());
            i += op.len();
        }
    }
    out
}

/// A recursive-descent evaluator of the expression language's part this file uses.
struct Eval<'a> {
    t: Vec<String>,
    at: usize,
    ctx: &'a Ctx,
}

impl Eval<'_> {
    fn peek(&self) -> Option<&str> {
        self.t.get(self.at).map(String::as_str)
    }
    fn next(&mut self) -> String {
        self.at += 1;
        self.t[self.at - 1].clone()
    }
    fn or(&mut self) -> V {
        let mut v = self.and();
        while self.peek() == Some("||") {
            self.next();
            let r = self.and();
            if !v.truthy() {
                v = r;
            }
        }
        v
    }
    fn and(&mut self) -> V {
        let mut v = self.unary();
        while self.peek() == Some("&&") {
            self.next();
            let r = self.unary();
            if v.truthy() {
                v = r;
            }
        }
        v
    }
    fn unary(&mut self) -> V {
        if self.peek() == Some("!") {
            self.next();
            return V::Bool(!self.unary().truthy());
        }
        let l = self.primary();
        match self.peek() {
            Some("==" | "!=") => {
                let eq = self.next() == "==";
                let r = self.primary();
                V::Bool((l.text().to_lowercase() == r.text().to_lowercase()) == eq)
            }
            _ => l,
        }
    }
    fn primary(&mut self) -> V {
        let t = self.next();
        if t == "(" {
            let v = self.or();
            assert_eq!(self.next(), ")");
            return v;
        }
        if let Some(s) = t.strip_prefix('\'') {
            return V::Str(s.to_string());
        }
        if self.peek() == Some("(") {
            self.next();
            assert_eq!(self.next(), ")", "{t}(): only calls without arguments");
            return V::Bool(match t.as_str() {
                "always" => true,
                "cancelled" => false,
                "success" => !self.ctx.failed,
                "failure" => self.ctx.failed,
                other => panic!("{other}(): not played here"),
            });
        }
        let mut path = vec![t];
        while self.peek() == Some(".") {
            self.next();
            path.push(self.next());
        }
        let context = self
            .ctx
            .contexts
            .get(&path[0])
            .unwrap_or_else(|| panic!("context `{}` is not played here", path[0]));
        context
            .get(&path[1..].join(".").to_lowercase())
            .map_or(V::Null, |s| V::Str(s.clone()))
    }
}

fn eval(expr: &str, ctx: &Ctx) -> V {
    let mut e = Eval {
        t: tokens(expr),
        at: 0,
        ctx,
    };
    let v = e.or();
    assert!(e.peek().is_none(), "`{expr}`: left over");
    v
}

/// `text` with each `${{ expr }}` replaced by its value.
fn interpolate(text: &str, ctx: &Ctx) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${{") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find("}}").expect("a closed expression") + i;
        out.push_str(&eval(&rest[i + 3..end], ctx).text());
        rest = &rest[end + 2..];
    }
    out + rest
}

/// An `if:`: a status function is implied as `success() && (...)` when it names none.
fn condition(cond: &Value, ctx: &Ctx) -> bool {
    let expr = match cond {
        Value::Null => return !ctx.failed,
        Value::Bool(b) => return *b,
        Value::String(s) => s.trim(),
        other => panic!("if: {other}"),
    };
    let expr = expr
        .strip_prefix("${{")
        .and_then(|e| e.strip_suffix("}}"))
        .unwrap_or(expr);
    let status = ["always(", "cancelled(", "success(", "failure("]
        .iter()
        .any(|f| expr.contains(f));
    (status || !ctx.failed) && eval(expr, ctx).truthy()
}

/// Copies the regular files under `from` into `to`, leaving out hidden ones unless
/// `hidden` (a directory is made only for a file in it, as an artifact keeps none empty).
fn copy_files(from: &Path, to: &Path, hidden: bool) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let name = e.file_name();
        if !hidden && name.to_string_lossy().starts_with('.') {
            continue;
        }
        let ty = e.file_type().unwrap();
        if ty.is_dir() {
            copy_files(&e.path(), &to.join(&name), hidden);
        } else if ty.is_file() {
            std::fs::create_dir_all(to).unwrap();
            std::fs::write(to.join(&name), std::fs::read(e.path()).unwrap()).unwrap();
        }
    }
}

#[derive(Debug)]
pub struct StepRun {
    pub name: String,
    pub outcome: &'static str,
    pub log: String,
}

#[derive(Debug)]
pub struct JobRun {
    pub job: String,
    pub runner: String,
    pub failed: bool,
    pub steps: Vec<StepRun>,
}

impl JobRun {
    fn step(&self, name: &str) -> &StepRun {
        self.steps
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{}: no step {name}: {self:#?}", self.job))
    }

    pub fn outcome(&self, step: &str) -> &'static str {
        self.step(step).outcome
    }

    /// What the step printed (a script's exit, stdout and stderr).
    pub fn log(&self, step: &str) -> &str {
        &self.step(step).log
    }
}

/// The runners and artifacts of one repository's runs. A self-hosted runner (one per
/// lab label) keeps its home across runs; a hosted one and each run's artifacts are new.
pub struct Actions {
    root: PathBuf,
    repo: PathBuf,
    /// Where a self-hosted runner finds benchpipe on its PATH.
    bin: PathBuf,
    pub vars: BTreeMap<String, String>,
    runs: usize,
}

impl Actions {
    pub fn new(repo: &Path, root: &Path) -> Actions {
        let bin = root.join("installed/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_benchpipe"), bin.join("benchpipe")).unwrap();
        Actions {
            root: root.to_path_buf(),
            repo: repo.to_path_buf(),
            bin,
            vars: BTreeMap::new(),
            runs: 0,
        }
    }

    /// One run of the workflow with `inputs` (none: a scheduled run).
    pub fn run(&mut self, inputs: &[(&str, &str)]) -> Vec<JobRun> {
        self.runs += 1;
        let wf = workflow();
        let run_dir = self.root.join(format!("run-{}", self.runs));
        let artifacts = run_dir.join("artifacts");
        std::fs::create_dir_all(&artifacts).unwrap();
        let mut base = Ctx::default();
        for (k, v) in inputs {
            base.set("inputs", k, v);
        }
        base.contexts.entry("inputs".into()).or_default();
        base.contexts.entry("vars".into()).or_default();
        for (k, v) in &self.vars {
            base.set("vars", k, v);
        }
        let mut done: Vec<JobRun> = Vec::new();
        let jobs = wf["jobs"].as_object().unwrap();
        while done
            .iter()
            .map(|j| &j.job)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            < jobs.len()
        {
            let (id, body) = jobs
                .iter()
                .find(|(id, body)| {
                    !done.iter().any(|j| &j.job == *id)
                        && body["needs"]
                            .as_str()
                            .is_none_or(|n| done.iter().any(|j| j.job == n))
                })
                .expect("a job whose needs are done");
            let needs_failed = body["needs"]
                .as_str()
                .is_some_and(|n| done.iter().any(|j| j.job == n && j.failed));
            let matrix = body["strategy"]["matrix"].as_object();
            let instances: Vec<(String, String)> = match matrix {
                None => vec![(String::new(), String::new())],
                Some(m) => {
                    assert_eq!(m.len(), 1, "one matrix axis is played: {m:?}");
                    let (axis, values) = m.iter().next().unwrap();
                    values
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| (axis.clone(), v.as_str().unwrap().to_string()))
                        .collect()
                }
            };
            for (index, (axis, value)) in instances.iter().enumerate() {
                let mut ctx = Ctx {
                    contexts: base.contexts.clone(),
                    failed: needs_failed,
                };
                ctx.set("matrix", axis, value);
                ctx.set("strategy", "job-index", &index.to_string());
                ctx.set("strategy", "job-total", &instances.len().to_string());
                let run = self.job(&wf, id, body, ctx, &run_dir, &artifacts);
                done.push(run);
            }
        }
        done
    }

    #[allow(clippy::too_many_lines)]
    fn job(
        &self,
        wf: &Value,
        id: &str,
        body: &Value,
        mut ctx: Ctx,
        run_dir: &Path,
        artifacts: &Path,
    ) -> JobRun {
        let labels: Vec<String> = match &body["runs-on"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a
                .iter()
                .map(|l| interpolate(l.as_str().unwrap(), &ctx))
                .collect(),
            other => panic!("runs-on: {other}"),
        };
        let self_hosted = labels.iter().any(|l| l == "self-hosted");
        let runner = labels.last().unwrap().clone();
        let mut run = JobRun {
            job: id.to_string(),
            runner: runner.clone(),
            failed: false,
            steps: Vec::new(),
        };
        if !condition(&body["if"], &ctx) {
            return run;
        }
        // A self-hosted runner's home outlives its runs; a hosted runner is new.
        let machine = if self_hosted {
            self.root.join("runners").join(&runner)
        } else {
            run_dir.join("hosted").join(id)
        };
        let (home, work, temp) = (
            machine.join("home"),
            machine.join("work"),
            machine.join("temp"),
        );
        let _ = std::fs::remove_dir_all(&temp);
        for d in [&home, &work, &temp] {
            std::fs::create_dir_all(d).unwrap();
        }
        ctx.set("runner", "temp", temp.to_str().unwrap());
        ctx.set("runner", "os", "Linux");
        ctx.set("runner", "arch", "X64");
        let github_path = temp.join("github-path");
        std::fs::write(&github_path, "").unwrap();
        let mut env: Vec<(String, String)> = Vec::new();
        for scope in [&wf["env"], &body["env"]] {
            for (k, v) in scope.as_object().into_iter().flatten() {
                env.push((k.clone(), interpolate(v.as_str().unwrap(), &ctx)));
            }
        }
        ctx.contexts.insert("steps".into(), BTreeMap::new());
        ctx.failed = false;
        for (n, step) in body["steps"].as_array().unwrap().iter().enumerate() {
            let name = step["name"]
                .as_str()
                .or(step["uses"].as_str())
                .unwrap()
                .to_string();
            if !condition(&step["if"], &ctx) {
                run.steps.push(StepRun {
                    name,
                    outcome: "skipped",
                    log: String::new(),
                });
                if let Some(sid) = step["id"].as_str() {
                    ctx.set("steps", &format!("{sid}.outcome"), "skipped");
                }
                continue;
            }
            let with = |key: &str| step["with"][key].as_str().map(|v| interpolate(v, &ctx));
            let mut outputs: Vec<(String, String)> = Vec::new();
            let (ok, log) = if let Some(script) = step["run"].as_str() {
                let mut step_env = env.clone();
                for (k, v) in step["env"].as_object().into_iter().flatten() {
                    step_env.push((k.clone(), interpolate(v.as_str().unwrap(), &ctx)));
                }
                let file = temp.join(format!("step-{n}.sh"));
                std::fs::write(&file, script).unwrap();
                let output_file = temp.join(format!("output-{n}"));
                std::fs::write(&output_file, "").unwrap();
                let mut path: Vec<PathBuf> = std::fs::read_to_string(&github_path)
                    .unwrap()
                    .lines()
                    .rev()
                    .map(PathBuf::from)
                    .collect();
                if self_hosted {
                    path.push(self.bin.clone());
                }
                path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
                let o = Command::new("bash")
                    .args(["--noprofile", "--norc", "-eo", "pipefail"])
                    .arg(&file)
                    .current_dir(&work)
                    .envs(step_env)
                    .env("PATH", std::env::join_paths(path).unwrap())
                    .env("HOME", &home)
                    .env("RUNNER_TEMP", &temp)
                    .env("GITHUB_WORKSPACE", &work)
                    .env("GITHUB_OUTPUT", &output_file)
                    .env("GITHUB_PATH", &github_path)
                    .env("CI", "true")
                    .env("NO_COLOR", "1")
                    .output()
                    .unwrap();
                for line in std::fs::read_to_string(&output_file).unwrap().lines() {
                    let (k, v) = line.split_once('=').expect("name=value outputs only");
                    outputs.push((k.to_string(), v.to_string()));
                }
                (o.status.success(), crate::spine::text(&o))
            } else {
                let uses = step["uses"].as_str().unwrap();
                let action = uses.split('@').next().unwrap();
                let at = |p: String| work.join(p);
                match action {
                    "actions/checkout" => {
                        std::fs::remove_dir_all(&work).unwrap();
                        for sub in ["boards", "pipeline", "scenarios"] {
                            copy_files(&self.repo.join(sub), &work.join(sub), true);
                        }
                        (true, String::new())
                    }
                    "actions/upload-artifact" => {
                        let name = with("name").unwrap();
                        let from = at(with("path").unwrap());
                        let to = artifacts.join(&name);
                        let overwrite = with("overwrite").as_deref() == Some("true");
                        if !from.exists() {
                            (
                                with("if-no-files-found").as_deref() != Some("error"),
                                "no files".into(),
                            )
                        } else if to.exists() && !overwrite {
                            (false, format!("artifact {name} exists"))
                        } else {
                            let _ = std::fs::remove_dir_all(&to);
                            let hidden = with("include-hidden-files").as_deref() == Some("true");
                            copy_files(&from, &to, hidden);
                            (true, format!("uploaded {name}"))
                        }
                    }
                    "actions/download-artifact" => {
                        let pattern = with("pattern").unwrap();
                        let prefix = pattern.strip_suffix('*').expect("a `prefix*` pattern");
                        let into = at(with("path").unwrap());
                        for e in std::fs::read_dir(artifacts).unwrap().flatten() {
                            let name = e.file_name().to_string_lossy().to_string();
                            if name.starts_with(prefix) {
                                copy_files(&e.path(), &into.join(&name), true);
                            }
                        }
                        (true, String::new())
                    }
                    "actions/cache" => {
                        // A hit: what `cargo install --root PATH` left, restored.
                        let bin = PathBuf::from(with("path").unwrap()).join("bin");
                        std::fs::create_dir_all(&bin).unwrap();
                        std::os::unix::fs::symlink(
                            env!("CARGO_BIN_EXE_benchpipe"),
                            bin.join("benchpipe"),
                        )
                        .unwrap();
                        outputs.push(("cache-hit".into(), "true".into()));
                        (true, String::new())
                    }
                    other => panic!("action {other} is not played here"),
                }
            };
            if let Some(sid) = step["id"].as_str() {
                for (k, v) in &outputs {
                    ctx.set("steps", &format!("{sid}.outputs.{k}"), v);
                }
                ctx.set(
                    "steps",
                    &format!("{sid}.outcome"),
                    if ok { "success" } else { "failure" },
                );
            }
            ctx.failed |= !ok;
            run.steps.push(StepRun {
                name,
                outcome: if ok { "success" } else { "failure" },
                log,
            });
        }
        run.failed = ctx.failed;
        run
    }
}

#[test]
fn the_expression_player_reads_what_github_would() {
    let mut ctx = Ctx::default();
    ctx.set("inputs", "scenarios", "");
    ctx.set("steps", "share.outcome", "success");
    ctx.set("steps", "cache.outputs.cache-hit", "true");
    assert_eq!(
        interpolate("${{ inputs.scenarios || 'scenarios/*.toml' }}", &ctx),
        "scenarios/*.toml"
    );
    ctx.set("inputs", "scenarios", "a.toml b.toml");
    assert_eq!(
        interpolate("x ${{ inputs.scenarios || 'y' }}", &ctx),
        "x a.toml b.toml"
    );
    let when = |s: &str, ctx: &Ctx| condition(&Value::String(s.into()), ctx);
    assert!(!when("steps.cache.outputs.cache-hit != 'true'", &ctx));
    assert!(when("always() && steps.share.outcome == 'success'", &ctx));
    ctx.failed = true;
    assert!(!when("steps.share.outcome == 'success'", &ctx));
    assert!(when("always() && steps.share.outcome == 'success'", &ctx));
    assert!(when(
        "${{ !cancelled() && steps.merge.outcome != 'skipped' }}",
        &ctx
    ));
    assert!(!condition(&Value::Null, &ctx));
}
