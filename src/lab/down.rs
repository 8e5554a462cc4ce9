//! `lab down`: removes a lab from its state file and by its names, after a crash too,
//! touching only what the lab itself made.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{
    BOARD_FILE_MARK, LabLock, LabOptions, WORKDIRS, check_options, cmd, fail, io, netns_pids,
    require_root, run_dir, state, state_dir,
};
use crate::error::Error;

/// `benchpipe lab down`: removes the lab under `root`, and anything else named with its
/// prefix (`bp-lab-*` by default) that a crashed run left behind.
pub fn down(root: &Path) -> Result<(), Error> {
    down_with(root, &LabOptions::default())
}

pub fn down_with(root: &Path, options: &LabOptions) -> Result<(), Error> {
    require_root()?;
    check_options(options, 1)?;
    let _lock = LabLock::take()?;
    let root = super::workspace(root)?;
    // A state file that is not the lab's own stops everything: it may name anything.
    let state = state::read(&root, options)?;
    let prefix = options.prefix.clone();
    let ours = |name: &str| {
        name.strip_prefix(&prefix)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let mut problems = Vec::new();

    // Namespaces: every process in them (sshd, sessions, services) dies with them.
    let mut namespaces: Vec<String> = state
        .iter()
        .flat_map(|s| s.boards.iter().map(|b| b.netns.clone()))
        .collect();
    if let Ok(out) = cmd(&["ip", "netns", "list"]) {
        for line in out.stdout_str().lines() {
            if let Some(name) = line.split_whitespace().next()
                && ours(name)
                && !namespaces.iter().any(|n| n == name)
            {
                namespaces.push(name.to_string());
            }
        }
    }
    for ns in namespaces.iter().filter(|n| ours(n)) {
        if !Path::new("/run/netns").join(ns).exists() {
            continue;
        }
        if let Err(e) = kill_namespace_processes(ns) {
            problems.push(e.to_string());
        }
        if let Err(e) = cmd(&["ip", "netns", "delete", ns]) {
            problems.push(e.to_string());
        }
    }

    // Controller-side veths normally vanish with their peer (and their qdiscs with
    // them); sweep any left.
    if let Ok(out) = cmd(&["ip", "-o", "link", "show"]) {
        for line in out.stdout_str().lines() {
            let Some(name) = line.split(':').nth(1) else {
                continue;
            };
            let name = name.trim().split('@').next().unwrap_or("");
            // `<netns>b` and `<netns>v` are peers moved into a namespace; `<netns>w` the
            // second link's controller side.
            let peer = ['b', 'w', 'v']
                .iter()
                .any(|c| name.strip_suffix(*c).is_some_and(ours));
            // A link of a namespace just deleted goes away on its own, a moment later:
            // one gone by the time it is deleted is no problem.
            if (ours(name) || peer)
                && let Err(e) = cmd(&["ip", "link", "delete", name])
                && Path::new("/sys/class/net").join(name).exists()
            {
                problems.push(e.to_string());
            }
        }
    }

    // Loop devices backed by this workspace's lab images (exactly), unmounted first.
    let disks = state::disk_image(&root, "x", 1);
    let disks = disks.parent().unwrap_or(&root).to_path_buf();
    let lab_image = |file: &str| {
        let file = file.strip_suffix(" (deleted)").unwrap_or(file);
        let path = Path::new(file);
        path.parent() == Some(disks.as_path())
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".img"))
                .and_then(|b| b.rsplit_once("-d"))
                .is_some_and(|(ns, k)| {
                    ours(ns) && !k.is_empty() && k.bytes().all(|c| c.is_ascii_digit())
                })
    };
    for (device, file) in loop_devices()?.into_iter().filter(|(_, f)| lab_image(f)) {
        let file = file.strip_suffix(" (deleted)").unwrap_or(&file).to_string();
        if let Err(e) = detach_loop(&device, Path::new(&file)) {
            problems.push(e.to_string());
        }
    }

    // Workdirs: `WORKDIRS/BOARDPREFIX-N`, those recorded and those found by name, since
    // only lab boards keep their workdir on the controller.
    let board_prefix = options.board_prefix.clone();
    let numbered = |name: &str| {
        name.strip_prefix(&board_prefix)
            .and_then(|r| r.strip_prefix('-'))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    let mut workdirs: Vec<String> = state
        .iter()
        .flat_map(|s| s.boards.iter().map(|b| b.workdir.clone()))
        .collect();
    if let Ok(entries) = fs::read_dir(WORKDIRS) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = format!("{WORKDIRS}/{name}");
            if numbered(&name) && !workdirs.contains(&path) {
                workdirs.push(path);
            }
        }
    }
    for w in &workdirs {
        let ok = w
            .strip_prefix(WORKDIRS)
            .and_then(|r| r.strip_prefix('/'))
            .is_some_and(numbered);
        if !ok {
            continue;
        }
        if let Err(e) =
            state::check_no_links(Path::new(w)).and_then(|()| remove_workdir(Path::new(w)))
        {
            problems.push(e.to_string());
        }
    }
    if let Some(s) = &state {
        for b in &s.boards {
            let is_ours = state::read_no_follow(&b.board_file, 1 << 20)
                .ok()
                .flatten()
                .is_some_and(|(t, _)| t.starts_with(BOARD_FILE_MARK));
            if is_ours {
                let _ = fs::remove_file(&b.board_file);
            }
        }
    }
    let run = run_dir(&prefix);
    if let Ok(m) = fs::symlink_metadata(&run)
        && let Err(e) = state::check_no_links(&run)
            .and_then(|()| state::check_owned(&run, &m, false))
            .and_then(|()| fs::remove_dir_all(&run).map_err(io(&run)))
    {
        problems.push(e.to_string());
    }
    let dir = state_dir(&root);
    if let Ok(m) = fs::symlink_metadata(&dir) {
        let parent = dir.parent().unwrap_or(&root);
        let removed = fs::symlink_metadata(parent)
            .map_err(io(parent))
            .and_then(|p| {
                if p.file_type().is_symlink() {
                    Err(fail(format!("{} is a symbolic link", parent.display())))
                } else {
                    Ok(())
                }
            })
            .and_then(|()| state::check_owned(&dir, &m, false))
            .and_then(|()| fs::remove_dir_all(&dir).map_err(io(&dir)));
        if let Err(e) = removed {
            problems.push(format!("left {}: {e}", dir.display()));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(fail(format!(
            "lab down left problems behind:\n  {}",
            problems.join("\n  ")
        )))
    }
}

/// Unmounts whatever is mounted at or below `dir` on the controller (deepest first), so
/// that removing it never reaches into a mounted filesystem, then removes it.
pub(super) fn remove_workdir(dir: &Path) -> Result<(), Error> {
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut below: Vec<String> = mountinfo
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .map(|m| m.replace("\\040", " "))
        .filter(|m| Path::new(m).starts_with(dir))
        .collect();
    below.sort_by_key(|m| std::cmp::Reverse(m.len()));
    for m in below {
        if cmd(&["umount", &m]).is_err() {
            cmd(&["umount", "-l", &m])?;
        }
    }
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// Ends every process in a namespace: SIGTERM first, so that a shell in the middle of
/// something (a lock file, a temporary file) can clean up, then SIGKILL after a second.
fn kill_namespace_processes(ns: &str) -> Result<(), Error> {
    let started = Instant::now();
    let mut signal = libc::SIGTERM;
    loop {
        let pids = netns_pids(ns)?;
        if pids.is_empty() {
            return Ok(());
        }
        if started.elapsed() > Duration::from_secs(1) {
            signal = libc::SIGKILL;
        }
        for pid in &pids {
            // SAFETY: kill(2) on pids listed as members of our namespace.
            unsafe {
                libc::kill(*pid, signal);
            }
        }
        if started.elapsed() > Duration::from_secs(6) {
            return Err(fail(format!(
                "processes {pids:?} in namespace {ns} survived SIGKILL"
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// (device, backing file) of every loop device.
fn loop_devices() -> Result<Vec<(String, String)>, Error> {
    let out = cmd(&[
        "losetup",
        "--list",
        "--noheadings",
        "--raw",
        "-O",
        "NAME,BACK-FILE",
    ])?;
    Ok(out
        .stdout_str()
        .lines()
        .filter_map(|l| {
            let (dev, file) = l.split_once(' ')?;
            Some((dev.to_string(), file.replace("\\x20", " ")))
        })
        .collect())
}

/// The file behind a loop device now (`None` once it is detached), from sysfs.
fn backing_file(device: &str) -> Option<String> {
    let name = device.strip_prefix("/dev/")?;
    let text = fs::read_to_string(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    let text = text.trim_end_matches('\n');
    Some(text.strip_suffix(" (deleted)").unwrap_or(text).to_string())
}

/// Unmounts everything mounted from `device` on the controller, then detaches it and
/// waits until the kernel has let it go. Each step first checks that the device is
/// still backed by `file`: once the lab's device is gone, another program may attach
/// the same `/dev/loopN`, and that one is not ours to unmount or detach.
fn detach_loop(device: &str, file: &Path) -> Result<(), Error> {
    let ours = || backing_file(device).is_some_and(|b| Path::new(&b) == file);
    if !state::is_loop_device(device) || !ours() {
        return Ok(());
    }
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mountinfo.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let Some(dash) = fields.iter().position(|f| *f == "-") else {
            continue;
        };
        if fields.get(dash + 2) == Some(&device)
            && let Some(mount_point) = fields.get(4)
            && ours()
        {
            let mp = mount_point.replace("\\040", " ");
            if cmd(&["umount", &mp]).is_err() {
                cmd(&["umount", "-l", &mp])?;
            }
        }
    }
    let started = Instant::now();
    loop {
        if !ours() {
            return Ok(());
        }
        // A device still held (a mount namespace being torn down) detaches on last close.
        let _ = cmd(&["losetup", "-d", device]);
        if started.elapsed() > Duration::from_secs(10) {
            return Err(fail(format!("loop device {device} is still attached")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The race `detach_loop` closes: between two detach attempts the lab's device is
    /// gone and another program has attached the same /dev/loopN. Here the device is
    /// another file's from the start; it must stay attached. Needs root and losetup.
    #[test]
    fn a_loop_device_backed_by_another_file_is_never_detached() {
        let dir = std::env::temp_dir().join(format!("benchpipe-detach-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let foreign = dir.join("foreign.img");
        fs::write(&foreign, vec![0u8; 1 << 20]).unwrap();
        let device = cmd(&["losetup", "--find", "--show", &foreign.to_string_lossy()])
            .expect("LOOP TEST NEEDS ROOT AND losetup")
            .stdout_str()
            .trim()
            .to_string();
        let ours = dir.join("bp-lab-1-d1.img");
        let r = detach_loop(&device, &ours);
        let still = backing_file(&device);
        let _ = cmd(&["losetup", "-d", &device]);
        let _ = fs::remove_dir_all(&dir);
        r.unwrap();
        assert_eq!(still.as_deref(), Some(foreign.to_str().unwrap()));
    }
}
