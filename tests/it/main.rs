//! The one integration-test binary. Each module is one area; cases are data-driven
//! where the area allows.

mod config;
mod lab;
mod parallel;
mod parsers;
mod spine;
mod stats;
mod storage;
mod telemetry;

/// Command lines of live processes containing `needle`; lab boards share the
/// controller's process table, so their processes are visible here.
pub fn lab_processes(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(") ").next().is_some_and(|r| r.starts_with('Z'));
        if cmd.contains(needle) && !zombie {
            found.push(cmd);
        }
    }
    found
}
