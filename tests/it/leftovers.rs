//! What a test left running: live processes by command line, on the controller or in a
//! lab board's network namespace, given a moment to die before they count. The one copy
//! of the leftover checks the lab, serving, nfs, web-app and cluster tests make.

use std::time::{Duration, Instant};

use benchpipe::lab::LabBoard;

/// `pid cmdline` lines of live processes whose command line contains any of `needles`
/// (a /proc scan, so the search never finds itself the way `pgrep -f` under `sh -c`
/// does; zombies are left out, since PID 1 here may not reap them). Lab boards share
/// the controller's process table, so their processes are visible here too.
pub fn processes_matching(needles: &[&str]) -> String {
    let mut found = String::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        // One line per process: a command line may hold newlines (`sh -c` of a script).
        let cmd = String::from_utf8_lossy(&raw).replace(['\0', '\n'], " ");
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(") ").next().is_some_and(|r| r.starts_with('Z'));
        if needles.iter().any(|n| cmd.contains(n)) && !zombie {
            found.push_str(&format!("{pid} {cmd}\n"));
        }
    }
    found
}

/// The `pid cmdline` lines of `processes_matching(needles)` that `keep(pid, cmdline)`
/// keeps, once they had up to `wait` to die. A group benchpipe killed dies as soon as the
/// kernel schedules each member; on a loaded machine that can take a moment, while a
/// process nobody killed lives on.
pub fn processes_where(
    needles: &[&str],
    keep: impl Fn(&str, &str) -> bool,
    wait: Duration,
) -> String {
    let t0 = Instant::now();
    loop {
        let mut left = String::new();
        for line in processes_matching(needles).lines() {
            let Some((pid, cmd)) = line.split_once(' ') else {
                continue;
            };
            if keep(pid, cmd) {
                left.push_str(line);
                left.push('\n');
            }
        }
        if left.is_empty() || t0.elapsed() > wait {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What is left of the processes matching `needles` once they had up to 15 s to die.
pub fn processes_left(needles: &[&str]) -> String {
    processes_where(needles, |_, _| true, Duration::from_secs(15))
}

/// Whether process `pid` lives in the board's network namespace (lab boards share the
/// controller's process table, so the namespace tells a board's own; read from
/// `/run/netns`, so it holds also once the board's sshd is gone).
pub fn in_board_netns(board: &LabBoard, pid: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(ns) = std::fs::metadata(format!("/run/netns/{}", board.netns)) else {
        return false;
    };
    std::fs::read_link(format!("/proc/{pid}/ns/net"))
        .is_ok_and(|l| l.to_string_lossy() == format!("net:[{}]", ns.ino()))
}

/// `pid cmdline` of the live processes in the board's network namespace whose command
/// line names one of `names`, after they had up to `wait` to die.
pub fn board_processes_left(board: &LabBoard, names: &[&str], wait: Duration) -> String {
    board_processes_where(board, names, |_| true, wait)
}

/// `board_processes_left`, of the `pid cmdline` lines `keep` keeps.
pub fn board_processes_where(
    board: &LabBoard,
    names: &[&str],
    keep: impl Fn(&str) -> bool,
    wait: Duration,
) -> String {
    processes_where(
        names,
        |pid, cmd| keep(&format!("{pid} {cmd}")) && in_board_netns(board, pid),
        wait,
    )
}
