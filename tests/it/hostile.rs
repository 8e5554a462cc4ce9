//! Integration tests: the hostile-input corpus. Each file in `tests/hostile/*.toml` is one
//! input a careless user or an attacker could write, plant or serve; the real binary must
//! refuse it with the expected message, without a panic, a hang, unbounded output or
//! memory, a leaked secret, or a write outside its workspace.
//!
//! A case builds a workspace, plants what it says, and runs one or more commands in it:
//!
//! ```toml
//! guards = "the ARCHITECTURE.md invariant this case protects"
//! workspace = "base"                      # or "example": the repo's scenarios and
//!                                         # recipes, examples/lab's boards and store
//! args = ["check", "scenarios/s.toml"]    # optional; this is the default
//! exit = 2                                # optional; this is the default
//! expect = ["boards/pi.toml:14:", "..."]  # substrings stderr must all contain
//! expect_stdout = ["..."]                 # substrings stdout must all contain
//! forbid = ["\u001b"]                     # substrings found nowhere in `forbid_in`
//! forbid_in = ["stdout", "reports"]       # default: stdout, stderr, reports, results,
//!                                         # image-cache (every file below, no link followed)
//! limit_as_mib = 2048                     # the command's address-space limit
//! timeout_s = 60                          # the default; a hang fails the case
//! [[edit]]                                # applied in order; `*` in a path segment must
//! file = "boards/pi.toml"                 # match exactly one existing file
//! find = "text that must exist"
//! replace = "its replacement"
//! [files]                                 # whole files, new or replacing (`*` allowed
//! "pipeline/evil.toml" = '''...'''        # in the directories)
//! [[plant]]                               # special files (`*` allowed in directories)
//! path = "image-cache/x.part"
//! kind = "symlink"                        # file | fifo | symlink | dir
//! target = "{outside}/victim"
//! text = "x"                              # a file's bytes, `repeat` times,
//! repeat = 1                              # between `head` and `tail`
//! mode = 0o600
//! [[then]]                                # more commands in the same workspace
//! args = ["plan", "scenarios/s.toml"]
//! exit = 0
//! [server]                                # a local HTTP server (`hostile/server.rs`)
//! [[server.reply]]
//! status = 200
//! ```
//!
//! In args, edits, files and plants, `{server}` is the server's `http://127.0.0.1:PORT`
//! (`{server_host}` its `127.0.0.1:PORT`, for a URL with userinfo), `{ws}` the workspace
//! and `{outside}` a directory beside it holding a file `victim` and whatever the case
//! planted there: the case fails if anything in that directory changed, appeared or was
//! written through a link while its commands ran.

use std::fmt::Write as _;
mod server;

use crate::scratch::Scratch;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::repo;
use serde::Deserialize;
use sha2::Digest;

/// Output beyond this is itself a failure: bounded diagnostics are one of the guarantees.
const MAX_STDERR: usize = 64 << 10;
/// What is kept of stdout for `expect_stdout` and `forbid`; more fails the case.
const MAX_STDOUT: usize = 16 << 20;
/// What the `{outside}` directory's victim file holds.
const VICTIM: &[u8] = b"victim\n";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    guards: String,
    #[serde(default)]
    workspace: Workspace,
    #[serde(default = "default_args")]
    args: Vec<String>,
    #[serde(default = "default_exit")]
    exit: i32,
    #[serde(default)]
    expect: Vec<String>,
    #[serde(default)]
    expect_stdout: Vec<String>,
    #[serde(default)]
    then: Vec<Run>,
    #[serde(default)]
    forbid: Vec<String>,
    #[serde(default = "default_forbid_in")]
    forbid_in: Vec<String>,
    limit_as_mib: Option<u64>,
    #[serde(default = "default_timeout")]
    timeout_s: u64,
    #[serde(default)]
    edit: Vec<Edit>,
    #[serde(default)]
    files: BTreeMap<String, String>,
    #[serde(default)]
    plant: Vec<Plant>,
    server: Option<server::Script>,
}

/// One command of a case and what must come of it: the case's own `args`, `exit`,
/// `expect` and `expect_stdout` (kept flat in the case: serde's `flatten` would let
/// unknown keys through), then each `[[then]]`.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Run {
    #[serde(default = "default_args")]
    args: Vec<String>,
    #[serde(default = "default_exit")]
    exit: i32,
    #[serde(default)]
    expect: Vec<String>,
    #[serde(default)]
    expect_stdout: Vec<String>,
}

#[derive(Clone, Copy, Default, Deserialize, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum Workspace {
    #[default]
    Base,
    Example,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Edit {
    file: String,
    find: String,
    replace: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Plant {
    path: String,
    kind: PlantKind,
    target: Option<String>,
    #[serde(default)]
    text: String,
    #[serde(default = "one")]
    repeat: usize,
    /// Written once before and after the repeated text: a huge JSON string is a head,
    /// one character repeated, and a tail.
    #[serde(default)]
    head: String,
    #[serde(default)]
    tail: String,
    mode: Option<u32>,
}

#[derive(Clone, Copy, Deserialize, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
enum PlantKind {
    File,
    Fifo,
    Symlink,
    Dir,
}

impl Case {
    fn runs(&self) -> Vec<Run> {
        let first = Run {
            args: self.args.clone(),
            exit: self.exit,
            expect: self.expect.clone(),
            expect_stdout: self.expect_stdout.clone(),
        };
        std::iter::once(first)
            .chain(self.then.iter().cloned())
            .collect()
    }
}

fn one() -> usize {
    1
}

fn default_args() -> Vec<String> {
    vec!["check".into(), "scenarios/s.toml".into()]
}

fn default_exit() -> i32 {
    2
}

fn default_timeout() -> u64 {
    60
}

fn default_forbid_in() -> Vec<String> {
    ["stdout", "stderr", "reports", "results", "image-cache"]
        .map(String::from)
        .to_vec()
}

fn corpus_dir() -> PathBuf {
    repo().join("tests/hostile")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// The values a case's text may name, replaced in args, edits, files and plants.
struct Places {
    ws: PathBuf,
    outside: PathBuf,
    server: Option<String>,
}

impl Places {
    fn fill(&self, text: &str) -> String {
        let mut s = text
            .replace("{ws}", &self.ws.display().to_string())
            .replace("{outside}", &self.outside.display().to_string());
        if let Some(url) = &self.server {
            s = s
                .replace("{server}", url)
                .replace("{server_host}", url.trim_start_matches("http://"));
        }
        s
    }
}

/// `rel` under `dir`, each `*` segment matched against what exists: exactly one path,
/// or why not. With `last_is_new`, the last segment is taken as written (a new file).
fn resolve(dir: &Path, rel: &str, last_is_new: bool) -> Result<PathBuf, String> {
    let segments: Vec<&str> = rel.split('/').filter(|s| !s.is_empty()).collect();
    let mut found = vec![dir.to_path_buf()];
    for (i, seg) in segments.iter().enumerate() {
        let literal = !seg.contains('*') || (last_is_new && i + 1 == segments.len());
        let mut next = Vec::new();
        for at in &found {
            if literal {
                next.push(at.join(seg));
                continue;
            }
            let Ok(entries) = std::fs::read_dir(at) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| glob_match(seg, n))
                .collect();
            names.sort();
            next.extend(names.into_iter().map(|n| at.join(n)));
        }
        found = next;
    }
    match found.len() {
        1 => Ok(found.pop().unwrap()),
        0 => Err(format!("{rel}: matches nothing")),
        n => Err(format!("{rel}: matches {n} paths, expected one")),
    }
}

/// `*` matches any run of characters, everything else itself.
fn glob_match(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().unwrap();
    let Some(mut tail) = name.strip_prefix(first) else {
        return false;
    };
    for (i, part) in rest.iter().enumerate() {
        if i + 1 == rest.len() {
            return tail.len() >= part.len() && tail.ends_with(part);
        }
        match tail.find(part) {
            Some(at) => tail = &tail[at + part.len()..],
            None => return false,
        }
    }
    tail.is_empty()
}

/// Builds the case's workspace in `places.ws`; a case whose edit no longer matches is a
/// broken case, not a pass. Not a `Project`: the case file says what the workspace is.
fn workspace(case: &Case, places: &Places) -> Result<(), String> {
    let dir = &places.ws;
    match case.workspace {
        Workspace::Base => copy_tree(&corpus_dir().join("base"), dir),
        Workspace::Example => {
            copy_tree(&repo().join("scenarios"), &dir.join("scenarios"));
            copy_tree(&repo().join("pipeline"), &dir.join("pipeline"));
            copy_tree(&repo().join("examples/lab/boards"), &dir.join("boards"));
            copy_tree(&repo().join("examples/lab/results"), &dir.join("results"));
        }
    }
    for e in &case.edit {
        let path = resolve(dir, &places.fill(&e.file), false)?;
        let text = std::fs::read_to_string(&path).map_err(|err| format!("{}: {err}", e.file))?;
        let find = places.fill(&e.find);
        if !text.contains(&find) {
            return Err(format!("edit: {} does not contain {:?}", e.file, e.find));
        }
        std::fs::write(&path, text.replacen(&find, &places.fill(&e.replace), 1)).unwrap();
    }
    for (rel, text) in &case.files {
        let path = resolve(dir, &places.fill(rel), true)?;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, places.fill(text)).unwrap();
    }
    for p in &case.plant {
        plant(p, places)?;
    }
    Ok(())
}

fn plant(p: &Plant, places: &Places) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let path = resolve(&places.ws, &places.fill(&p.path), true)?;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(&path);
    match p.kind {
        PlantKind::File => {
            let text = places.fill(&p.text);
            let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
            std::io::Write::write_all(&mut f, places.fill(&p.head).as_bytes()).unwrap();
            for _ in 0..p.repeat {
                std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
            }
            std::io::Write::write_all(&mut f, places.fill(&p.tail).as_bytes()).unwrap();
        }
        PlantKind::Fifo => {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
            // SAFETY: mkfifo reads the NUL-terminated path, which outlives the call.
            if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
                return Err(format!(
                    "mkfifo {}: {}",
                    p.path,
                    std::io::Error::last_os_error()
                ));
            }
        }
        PlantKind::Symlink => {
            let target = p
                .target
                .as_deref()
                .ok_or("a symlink plant needs `target`")?;
            std::os::unix::fs::symlink(places.fill(target), &path).unwrap();
        }
        PlantKind::Dir => std::fs::create_dir_all(&path).unwrap(),
    }
    if let Some(mode) = p.mode {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    Ok(())
}

/// What one command did.
struct Ran {
    code: Option<i32>,
    timed_out: bool,
    stdout: Vec<u8>,
    stdout_len: usize,
    stderr: Vec<u8>,
    stderr_len: usize,
}

/// Reads a pipe to its end, keeping at most `keep` bytes and counting the rest.
fn drain(
    mut r: impl Read + Send + 'static,
    keep: usize,
) -> std::thread::JoinHandle<(Vec<u8>, usize)> {
    std::thread::spawn(move || {
        let (mut kept, mut total, mut buf) = (Vec::new(), 0usize, vec![0u8; 64 << 10]);
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total += n;
                    let room = keep.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&buf[..room]);
                }
            }
        }
        (kept, total)
    })
}

const BINARY: &str = env!("CARGO_BIN_EXE_benchpipe");

/// Runs `program` in `dir` in a process group of its own, killed whole at the timeout.
fn run_command(
    program: &str,
    args: &[String],
    dir: &Path,
    limit_as_mib: Option<u64>,
    timeout: Duration,
) -> Ran {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(mib) = limit_as_mib {
        let bytes = mib << 20;
        // SAFETY: setrlimit is async-signal-safe and touches only the child's limits.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &raw const lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().unwrap();
    let out = drain(child.stdout.take().unwrap(), MAX_STDOUT);
    let err = drain(child.stderr.take().unwrap(), MAX_STDERR);
    let t0 = Instant::now();
    let (status, timed_out) = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break (s, false);
        }
        if t0.elapsed() > timeout {
            // SAFETY: the group is the child's own (process_group(0) above).
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            break (child.wait().unwrap(), true);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What the command started in its group must not hold the pipes open past it.
    // SAFETY: as above; the group may already be gone, which kill reports and we ignore.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let (stdout, stdout_len) = out.join().unwrap();
    let (stderr, stderr_len) = err.join().unwrap();
    Ran {
        code: status.code(),
        timed_out,
        stdout,
        stdout_len,
        stderr,
        stderr_len,
    }
}

/// What is wrong with one command's outcome.
fn judge(run: &Run, ran: &Ran, timeout: Duration) -> Vec<String> {
    let stderr = String::from_utf8_lossy(&ran.stderr);
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let mut wrong = Vec::new();
    if ran.timed_out {
        wrong.push(format!("still running after {timeout:?}: killed"));
    } else if ran.code != Some(run.exit) {
        wrong.push(format!("exit {:?}, expected {}", ran.code, run.exit));
    }
    if stderr.contains("panicked") {
        wrong.push("it panicked".to_string());
    }
    if ran.stderr_len > MAX_STDERR {
        wrong.push(format!("{} bytes of stderr", ran.stderr_len));
    }
    if ran.stdout_len > MAX_STDOUT {
        wrong.push(format!("{} bytes of stdout", ran.stdout_len));
    }
    for e in &run.expect {
        if !stderr.contains(e.as_str()) {
            wrong.push(format!("stderr lacks {e:?}"));
        }
    }
    for e in &run.expect_stdout {
        if !stdout.contains(e.as_str()) {
            wrong.push(format!("stdout lacks {e:?}"));
        }
    }
    wrong
}

/// Every regular file below `dir`, no link followed.
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            files_below(&e.path(), out);
        } else if t.is_file() {
            out.push(e.path());
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Where a forbidden string was found.
fn forbidden(case: &Case, ws: &Path, runs: &[Ran]) -> Vec<String> {
    let mut wrong = Vec::new();
    for needle in &case.forbid {
        let n = needle.as_bytes();
        for place in &case.forbid_in {
            let hit = match place.as_str() {
                "stdout" => runs.iter().any(|r| find(&r.stdout, n)),
                "stderr" => runs.iter().any(|r| find(&r.stderr, n)),
                dir => {
                    let mut files = Vec::new();
                    files_below(&ws.join(dir), &mut files);
                    if let Some(f) = files
                        .iter()
                        .find(|f| std::fs::read(f).is_ok_and(|b| find(&b, n)))
                    {
                        wrong.push(format!(
                            "{needle:?} found in {}",
                            f.strip_prefix(ws).unwrap_or(f).display()
                        ));
                    }
                    false
                }
            };
            if hit {
                wrong.push(format!("{needle:?} found in {place}"));
            }
        }
    }
    wrong
}

/// What a directory holds, by name: each entry's kind and, for a file, its bytes. Links
/// are recorded as links (with their target), never followed.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return all;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let what = match std::fs::symlink_metadata(e.path()) {
            Ok(m) if m.file_type().is_symlink() => {
                format!("link to {:?}", std::fs::read_link(e.path()).ok())
            }
            Ok(m) if m.is_file() => match std::fs::read(e.path()) {
                Ok(b) => format!(
                    "file of {} bytes starting {:?}, sha256 {}",
                    b.len(),
                    String::from_utf8_lossy(&b[..b.len().min(60)]),
                    sha2::Sha256::digest(&b)
                        .iter()
                        .fold(String::new(), |mut out, x| {
                            let _ = write!(out, "{x:02x}");
                            out
                        })
                ),
                Err(err) => format!("unreadable file: {err}"),
            },
            Ok(m) if m.is_dir() => format!("directory holding {:?}", snapshot(&e.path())),
            Ok(m) => format!("{:?}", m.file_type()),
            Err(err) => format!("gone: {err}"),
        };
        all.insert(name, what);
    }
    all
}

/// What changed in the `{outside}` directory since `before`.
fn outside_changed(outside: &Path, before: &BTreeMap<String, String>) -> Option<String> {
    let after = snapshot(outside);
    let mut changes = Vec::new();
    for (name, was) in before {
        match after.get(name) {
            None => changes.push(format!("{name} is gone (was {was})")),
            Some(now) if now != was => changes.push(format!("{name} changed: {now} (was {was})")),
            Some(_) => {}
        }
    }
    for (name, now) in &after {
        if !before.contains_key(name) {
            changes.push(format!("{name} appeared: {now}"));
        }
    }
    (!changes.is_empty()).then(|| format!("{{outside}} changed: {}", changes.join("; ")))
}

/// Runs one case and returns what is wrong with the outcome, if anything.
fn run_case(name: &str, case: &Case) -> Option<String> {
    let base = Scratch::new(&format!("hostile-{name}"));
    let ws = base.join("ws");
    let outside = base.join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("victim"), VICTIM).unwrap();
    let server = case.server.as_ref().map(server::Server::start);
    let places = Places {
        ws: ws.clone(),
        outside: outside.clone(),
        server: server.as_ref().map(server::Server::url),
    };
    let result = (|| {
        workspace(case, &places)?;
        let before = snapshot(&outside);
        let timeout = Duration::from_secs(case.timeout_s);
        let mut wrong = Vec::new();
        let mut ran = Vec::new();
        let mut last_stderr = String::new();
        for (i, run) in case.runs().iter().enumerate() {
            let args: Vec<String> = run.args.iter().map(|a| places.fill(a)).collect();
            let r = run_command(BINARY, &args, &ws, case.limit_as_mib, timeout);
            for w in judge(run, &r, timeout) {
                wrong.push(format!("command {} ({}): {w}", i + 1, args.join(" ")));
            }
            last_stderr = String::from_utf8_lossy(&r.stderr)
                .chars()
                .take(4000)
                .collect();
            ran.push(r);
        }
        wrong.extend(forbidden(case, &ws, &ran));
        wrong.extend(outside_changed(&outside, &before));
        if wrong.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} (guards: {})\n--- stderr of the last command:\n{last_stderr}",
                wrong.join("; "),
                case.guards
            ))
        }
    })();
    drop(server);
    let _ = std::fs::remove_dir_all(&base);
    result.err()
}

#[test]
fn the_base_workspace_is_accepted() {
    let case: Case = toml::from_str("guards = \"the corpus itself\"\nexit = 0\n").unwrap();
    assert_eq!(run_case("base", &case), None);
}

/// The runner itself: each check it makes fails a case that breaks it.
#[test]
fn the_runner_fails_cases_that_break_its_checks() {
    let cases = [
        // A file written into {outside} is seen.
        (
            "outside",
            r#"guards = "runner"
exit = 0
args = ["report", "--out", "{outside}/r", "scenarios/s.toml"]
"#,
            "{outside} changed: r appeared",
        ),
        // A forbidden string in a file below the workspace is found.
        (
            "forbid",
            r#"guards = "runner"
exit = 0
forbid = ["NEEDLE"]
[files]
"results/x/y.txt" = "a NEEDLE here"
"#,
            "\"NEEDLE\" found in results/x/y.txt",
        ),
        // A glob that matches two files is a broken case.
        (
            "glob",
            r#"guards = "runner"
[[edit]]
file = "boards/*.toml"
find = "a"
replace = "b"
"#,
            "matches 2 paths",
        ),
        // A wrong exit and a missing stdout line are both reported.
        (
            "exit",
            r#"guards = "runner"
args = ["--version"]
exit = 3
expect_stdout = ["no such words"]
"#,
            "exit Some(0), expected 3",
        ),
    ];
    for (name, text, wrong) in cases {
        let case: Case = toml::from_str(text).unwrap();
        let got = run_case(&format!("runner-{name}"), &case);
        assert!(
            got.as_deref().is_some_and(|g| g.contains(wrong)),
            "{name}: expected {wrong:?}, got {got:?}"
        );
    }
}

/// A command that never ends is killed with its group at the timeout and fails its run;
/// one under an address-space limit too small to start fails rather than passing.
#[test]
fn the_runner_kills_a_hanging_command_and_applies_the_memory_limit() {
    let dir = Scratch::new("hostile-runner");
    let t0 = Instant::now();
    let ran = run_command("sleep", &["600".into()], &dir, None, Duration::from_secs(1));
    let run = Run {
        args: vec![],
        exit: 0,
        expect: vec![],
        expect_stdout: vec![],
    };
    let wrong = judge(&run, &ran, Duration::from_secs(1));
    assert!(
        ran.timed_out && wrong.iter().any(|w| w.contains("killed")),
        "{wrong:?}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(60),
        "the runner waited {:?}",
        t0.elapsed()
    );
    let tiny: Case =
        toml::from_str("guards = \"runner\"\nexit = 0\nlimit_as_mib = 1\nargs = [\"--version\"]\n")
            .unwrap();
    assert!(run_case("runner-tiny", &tiny).is_some());
}

/// The example workspace is a store the report renders: the base for store cases.
#[test]
fn the_example_workspace_reports() {
    let case: Case = toml::from_str(
        r#"guards = "the corpus itself"
workspace = "example"
args = ["report", "--out", "reports", "scenarios/lab.toml"]
exit = 0
[[then]]
args = ["plan", "scenarios/lab.toml"]
exit = 0
"#,
    )
    .unwrap();
    assert_eq!(run_case("example", &case), None);
}

#[test]
fn every_hostile_input_is_refused_with_its_message() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    cases.sort();
    assert!(!cases.is_empty(), "no cases in {}", corpus_dir().display());
    // Each case has a workspace, an {outside} and a server of its own, and most of a
    // case is waiting on the benchpipe it started: three run at once, each case judged
    // alone, the failures listed in the corpus's order.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(path) = cases.get(i) else { break };
                    if let Some(wrong) = judge_file(path) {
                        found
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .push((i, wrong));
                    }
                }
            });
        }
    });
    let mut found = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    found.sort();
    let failures: Vec<String> = found.into_iter().map(|(_, w)| w).collect();
    assert!(
        failures.is_empty(),
        "{} of {} hostile cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// One case file run and judged: what is wrong with it, if anything, named by the case.
fn judge_file(path: &Path) -> Option<String> {
    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
    let text = std::fs::read_to_string(path).unwrap();
    match toml::from_str::<Case>(&text) {
        Ok(case) => run_case(&name, &case).map(|wrong| format!("{name}: {wrong}")),
        Err(e) => Some(format!("{name}: not a valid case: {e}")),
    }
}

/// The download cases' server answers requests with its replies in order (the last one
/// repeating) and cuts a reply short where the case says.
#[test]
fn the_runner_server_answers_in_order_and_cuts_short() {
    use std::io::Write;
    let script: server::Script = toml::from_str(
        r#"[[reply]]
status = 206
headers = { "Content-Range" = "bytes 10-12/5" }
body = "abc"
[[reply]]
body = "0123456789"
close_after = 4
"#,
    )
    .unwrap();
    let s = server::Server::start(&script);
    let get = || {
        let addr = s.url().trim_start_matches("http://").to_string();
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    };
    let first = get();
    assert!(first.starts_with("HTTP/1.1 206"), "{first}");
    assert!(first.contains("Content-Range: bytes 10-12/5\r\n") && first.ends_with("\r\n\r\nabc"));
    for _ in 0..2 {
        let cut = get();
        assert!(
            cut.contains("Content-Length: 10\r\n") && cut.ends_with("\r\n\r\n0123"),
            "{cut}"
        );
    }
}
