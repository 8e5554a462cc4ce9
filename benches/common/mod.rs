//! What the lab benchmarks share: a lab brought up under names of their own and always
//! torn down (`LabGuard`), benchpipe's SSH session to its board, and the OpenSSH client
//! they are measured against.
#![allow(dead_code)] // each bench uses part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use benchpipe::lab::{self, LabInfo, LabOptions};
use benchpipe::transport::quote;
use benchpipe::transport::ssh::{ConnectOptions, SshTransport};

/// `-- --quick`, as `.ci/run` runs every bench: one short round of each figure, so that
/// the benches are built and run between the times someone reads them (the figures are
/// printed, never judged).
pub fn quick() -> bool {
    std::env::args().any(|a| a == "--quick")
}

/// Whether this process may build a lab; says how to run `bench` when not.
pub fn is_root(bench: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        println!(
            "benches/{bench}: skipped, the lab needs root (run `sudo cargo bench --bench {bench}`)"
        );
        // As tests/it's `cannot_run`: under `.ci/run` a bench that cannot run fails.
        if std::env::var_os("BENCHPIPE_TESTS_MUST_RUN").is_some_and(|v| v == "1") {
            std::process::exit(1);
        }
    }
    root
}

/// Takes the lab down (and its root directory away) when the bench ends, however.
pub struct LabGuard {
    root: PathBuf,
    options: LabOptions,
}

impl Drop for LabGuard {
    fn drop(&mut self) {
        if let Err(e) = lab::down_with(&self.root, &self.options) {
            eprintln!("lab down failed: {e}");
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A one-board lab under `root`, after sweeping what an interrupted earlier run of the
/// same bench left under the same names.
pub fn lab_up(root: &Path, options: LabOptions) -> Result<(LabInfo, LabGuard), String> {
    lab::down_with(root, &options).map_err(|e| format!("sweeping an old bench lab: {e}"))?;
    let info = lab::up_with(root, 1, &options).map_err(|e| format!("lab up: {e}"))?;
    Ok((
        info,
        LabGuard {
            root: root.to_path_buf(),
            options,
        },
    ))
}

/// benchpipe's SSH session to the lab's board (never the user's ~/.ssh).
pub fn connect(info: &LabInfo) -> Result<SshTransport, String> {
    let board = &info.boards[0];
    let opts = ConnectOptions {
        ssh_config: Some(PathBuf::from("/dev/null")),
        use_agent_and_default_keys: false,
        ..ConnectOptions::default()
    };
    SshTransport::connect_with(
        &board.name,
        &info.ssh_target(board),
        Duration::from_secs(10),
        opts,
    )
    .map_err(|e| e.to_string())
}

pub fn sh(cmd: &str) -> Result<(), String> {
    let status = Command::new("sh")
        .args(["-c", cmd])
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{cmd}` failed: {status}"))
    }
}

/// The OpenSSH client with a reused master connection and the lab's key and known_hosts.
pub struct OpenSsh {
    args: Vec<String>,
}

impl OpenSsh {
    pub fn new(info: &LabInfo, root: &Path) -> OpenSsh {
        let board = &info.boards[0];
        let args = vec![
            "-F".into(),
            "/dev/null".into(),
            "-o".into(),
            "BatchMode=yes".into(),
            "-o".into(),
            "StrictHostKeyChecking=yes".into(),
            "-o".into(),
            format!("UserKnownHostsFile={}", info.known_hosts.display()),
            "-i".into(),
            info.identity.display().to_string(),
            "-o".into(),
            "ControlMaster=auto".into(),
            "-o".into(),
            format!("ControlPath={}", root.join("cm.sock").display()),
            "-o".into(),
            "ControlPersist=120".into(),
            format!("root@{}", board.address),
        ];
        OpenSsh { args }
    }

    /// `ssh board command`, its stdin from `stdin` (or nothing).
    pub fn run(&self, command: &str, stdin: Option<&Path>) -> Result<(), String> {
        let stdin = match stdin {
            Some(p) => Stdio::from(std::fs::File::open(p).map_err(|e| e.to_string())?),
            None => Stdio::null(),
        };
        let status = Command::new("ssh")
            .args(&self.args)
            .arg(command)
            .stdin(stdin)
            .status()
            .map_err(|e| format!("ssh: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("ssh {command}: {status}"))
        }
    }

    /// `producer | ssh board command`.
    pub fn run_piped(&self, producer: &str, command: &str) -> Result<(), String> {
        let ssh: Vec<String> = self.args.iter().map(|a| quote::sh(a)).collect();
        sh(&format!(
            "{producer} | ssh {} {}",
            ssh.join(" "),
            quote::sh(command)
        ))
    }

    /// Ends the master connection.
    pub fn stop(&self) {
        let _ = Command::new("ssh")
            .args(&self.args)
            .args(["-O", "exit"])
            .stderr(Stdio::null())
            .status();
    }
}
