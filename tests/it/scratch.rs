//! Scratch directories and projects: the one way a test makes a directory of its own
//! (`Scratch`) and a benchpipe project in it or at a lab's root (`Project`).

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh, empty directory under the system's temporary directory, named by the test's
/// tag, this process's pid and a counter, so that tests running side by side (threads of
/// this binary, or two binaries) never share one. Removed on drop, also when the test
/// panicked.
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        Scratch::under(&std::env::temp_dir(), tag)
    }

    /// A scratch directory under `base` (a tmpfs, say) instead of the temporary directory.
    pub fn under(base: &Path, tag: &str) -> Scratch {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let path = base.join(format!("bp-it-{tag}-{}-{n}", std::process::id()));
        // A directory of this name is a leftover of an earlier process with the same pid.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
        Scratch { path }
    }

    /// Writes `text` to `rel` under the directory, creating its parents.
    pub fn write(&self, rel: &str, text: impl AsRef<[u8]>) -> &Self {
        write_under(&self.path, rel, text.as_ref());
        self
    }
}

/// `rel` under `dir`, its parent directories made first.
fn write_under(dir: &Path, rel: &str, bytes: &[u8]) {
    let file = dir.join(rel);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&file, bytes).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
}

impl Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A benchpipe project: boards/, pipeline/ and scenarios/ in a fresh `Scratch` (`new`),
/// or at a lab's root (`at`, which the lab removes). Built by value, so that
/// `Project::new(tag).recipe("xz").scenario("s", text)` reads as the project it makes.
pub struct Project {
    pub dir: PathBuf,
    _scratch: Option<Scratch>,
}

impl Project {
    pub fn new(tag: &str) -> Project {
        let scratch = Scratch::new(tag);
        Project {
            dir: scratch.to_path_buf(),
            _scratch: Some(scratch),
        }
        .dirs()
    }

    /// A project at `root` (a lab's root), which the caller removes.
    pub fn at(root: &Path) -> Project {
        Project {
            dir: root.to_path_buf(),
            _scratch: None,
        }
        .dirs()
    }

    fn dirs(self) -> Project {
        for sub in ["boards", "pipeline", "scenarios"] {
            std::fs::create_dir_all(self.dir.join(sub)).unwrap();
        }
        self
    }

    /// The repository's shipped recipe `pipeline/{name}.toml`, copied in.
    pub fn recipe(self, name: &str) -> Project {
        let rel = format!("pipeline/{name}.toml");
        std::fs::copy(crate::repo().join(&rel), self.dir.join(&rel))
            .unwrap_or_else(|e| panic!("copy the shipped {rel}: {e}"));
        self
    }

    /// Each of the shipped recipes `names`.
    pub fn recipes(self, names: &[&str]) -> Project {
        names.iter().fold(self, |p, name| p.recipe(name))
    }

    /// Every shipped recipe (the repository's pipeline/).
    pub fn all_recipes(self) -> Project {
        for e in std::fs::read_dir(crate::repo().join("pipeline"))
            .unwrap()
            .flatten()
        {
            if e.path().extension().is_some_and(|x| x == "toml") {
                std::fs::copy(e.path(), self.dir.join("pipeline").join(e.file_name())).unwrap();
            }
        }
        self
    }

    /// Writes `text` to `rel` under the project, creating its parents.
    pub fn file(self, rel: &str, text: &str) -> Project {
        write_under(&self.dir, rel, text.as_bytes());
        self
    }

    /// `scenarios/{name}.toml`.
    pub fn scenario(self, name: &str, text: &str) -> Project {
        self.file(&format!("scenarios/{name}.toml"), text)
    }

    /// Replaces `from` with `to` in one of the project's files; `from` must be there.
    pub fn edit(self, rel: &str, from: &str, to: &str) -> Project {
        let text = std::fs::read_to_string(self.dir.join(rel)).unwrap();
        assert!(text.contains(from), "{rel} has no `{from}`");
        let edited = text.replacen(from, to, 1);
        self.file(rel, &edited)
    }

    /// `bp` started and left running, its output discarded (a test that watches or
    /// kills it while it runs).
    pub fn spawn(&self, args: &[&str]) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(crate::scripted(args))
            .current_dir(&self.dir)
            .env("NO_COLOR", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    }

    /// The real binary in the project, as a script runs it (`crate::scripted`).
    pub fn bp(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(crate::scripted(args))
            .current_dir(&self.dir)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }
}

impl Deref for Project {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.dir
    }
}

impl AsRef<Path> for Project {
    fn as_ref(&self) -> &Path {
        &self.dir
    }
}

impl AsRef<std::ffi::OsStr> for Project {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.dir.as_os_str()
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}
