//! A private file a scenario names on the controller (`wordpress-login`'s
//! `password_file`): refused by its path at `check`, and at run time opened through no
//! link, only when it and every directory above it belong to root or the user and
//! nobody else can change them.
//!
//! benchpipe runs as root and sends the file's first line to a server. A path under a
//! directory everybody can write (`/tmp`, `/dev/shm`) names whatever another user put
//! there, and a link anywhere on the way would make root read a file it was never
//! meant to: so the path's text is checked first (`check_path`, at `check`, with the
//! scenario's file:line:col), then each directory is opened with `O_NOFOLLOW` from `/`
//! down and its owner and mode read from the open descriptor, and the file itself too
//! (`open`): what is checked is what is read.

use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;

/// Directories every user may write to (sticky or not): a file under them may be
/// anyone's, so a path there is refused from its text alone.
pub const SHARED_DIRS: [&str; 8] = [
    "/tmp",
    "/var/tmp",
    "/dev/shm",
    "/run/shm",
    "/run/lock",
    "/var/lock",
    "/dev/mqueue",
    "/var/crash",
];

/// The most a private file may hold: a password is far smaller.
pub const MAX_BYTES: u64 = crate::secrets::MAX_FILE_BYTES;

/// Why a private file's path is refused from its text alone.
pub fn check_path(path: &str) -> Result<(), String> {
    let Some(rest) = path.strip_prefix('/') else {
        return Err("it is not an absolute path".into());
    };
    if path.contains('\0') || path.contains('\n') {
        return Err("it holds a NUL or a newline".into());
    }
    if rest.is_empty() || rest.ends_with('/') {
        return Err("it names a directory, not a file".into());
    }
    for part in rest.split('/') {
        match part {
            "" => return Err("it holds an empty component (`//`)".into()),
            "." | ".." => {
                return Err(format!(
                    "it holds a `{part}` component, so its text is not where it leads"
                ));
            }
            _ => {}
        }
    }
    if let Some(shared) = SHARED_DIRS
        .iter()
        .find(|d| path.starts_with(&format!("{d}/")))
    {
        return Err(format!(
            "it is under {shared}, where every user may put files: keep it in a directory only root (or you) can write, such as /etc/benchpipe or /root"
        ));
    }
    Ok(())
}

/// Opens `path` for reading: no link followed anywhere on the way; each directory
/// owned by root or by the user benchpipe runs as and writable by its owner alone; the
/// file a regular one, owned by that user, writable by that user alone, at most
/// `MAX_BYTES`. The error says why in words, without the path (the caller names the
/// parameter).
pub fn open(path: &str) -> Result<File, String> {
    check_path(path)?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let parts: Vec<&str> = path[1..].split('/').collect();
    let (name, dirs) = parts.split_last().ok_or("it names no file")?;
    let mut dir = open_at(None, "/", libc::O_PATH | libc::O_DIRECTORY)
        .map_err(|e| format!("cannot open /: {e}"))?;
    let mut walked = String::new();
    check_dir(&dir, "/", me)?;
    for part in dirs {
        walked.push('/');
        walked.push_str(part);
        dir = open_at(
            Some(&dir),
            part,
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        )
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ENOTDIR | libc::ELOOP) => format!(
                "{walked} is a symbolic link or not a directory; no link is followed on the way to a private file"
            ),
            _ => format!("cannot open the directory {walked}: {}", e.kind()),
        })?;
        check_dir(&dir, &walked, me)?;
    }
    let file = open_at(
        Some(&dir),
        name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
    )
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => {
            "it is a symbolic link; a private file is opened without following links".into()
        }
        _ => format!("cannot open it: {}", e.kind()),
    })?;
    let file = File::from(file);
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read what it is: {}", e.kind()))?;
    if !meta.file_type().is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.uid() != me {
        return Err(format!(
            "it is owned by uid {}, not by uid {me} who runs benchpipe",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "others may write to it (mode {:o}): chmod go-w it",
            meta.mode() & 0o7777
        ));
    }
    if meta.len() > MAX_BYTES {
        return Err(format!(
            "it holds {} bytes, more than the {MAX_BYTES} a private file may",
            meta.len()
        ));
    }
    Ok(file)
}

/// A directory on the way: root's or the user's, and nobody else may change what lies
/// below it (no group or other write bit, sticky or not).
fn check_dir(dir: &OwnedFd, shown: &str, me: u32) -> Result<(), String> {
    // SAFETY: an all-zero `stat` is a valid value for fstat to fill.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `dir` is an open descriptor and `st` a valid, writable stat.
    if unsafe { libc::fstat(dir.as_raw_fd(), &raw mut st) } != 0 {
        return Err(format!(
            "cannot read what {shown} is: {}",
            std::io::Error::last_os_error().kind()
        ));
    }
    if st.st_uid != 0 && st.st_uid != me {
        return Err(format!(
            "the directory {shown} is owned by uid {}, not by root or uid {me}",
            st.st_uid
        ));
    }
    if st.st_mode & 0o022 != 0 {
        return Err(format!(
            "others may write to the directory {shown} (mode {:o}), so what lies below it could be swapped",
            st.st_mode & 0o7777
        ));
    }
    Ok(())
}

/// `openat(dir, name, flags | O_CLOEXEC)`; `dir` None for an absolute `name`.
fn open_at(dir: Option<&OwnedFd>, name: &str, flags: i32) -> std::io::Result<OwnedFd> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let at = dir.map_or(libc::AT_FDCWD, std::os::fd::AsRawFd::as_raw_fd);
    // SAFETY: `c` is a NUL-terminated string that outlives the call; `at` is an open
    // descriptor or AT_FDCWD.
    let fd = unsafe { libc::openat(at, c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn paths_refused_from_their_text() {
        for (bad, why) in [
            ("wp-password", "absolute"),
            ("/tmp/wp-password", "/tmp"),
            ("/dev/shm/wp-password", "/dev/shm"),
            ("/var/tmp/x/wp-password", "/var/tmp"),
            ("/etc/../tmp/wp-password", "`..`"),
            ("/etc/./wp-password", "`.`"),
            ("/etc//wp-password", "empty"),
            ("/etc/benchpipe/", "directory"),
            ("/", "directory"),
        ] {
            let e = check_path(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        for ok in [
            "/etc/benchpipe/wordpress-password",
            "/root/k3s/wp-password",
            "/tmpx/p",
        ] {
            assert_eq!(check_path(ok), Ok(()), "{ok}");
        }
    }

    /// A directory of the test's own under /run (root's, 0755), removed on drop.
    struct Dir(std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn private_dir(tag: &str) -> Option<Dir> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return None;
        }
        let d = std::path::PathBuf::from(format!(
            "/run/benchpipe-private-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        Some(Dir(d))
    }

    /// Run as root (the test suite is): a plain file reads; a link to it, a file of
    /// another owner, a group-writable file, a FIFO and a file below a directory others
    /// can write are each refused, saying why.
    #[test]
    fn a_private_file_is_opened_only_through_owned_directories_and_no_link() {
        let Some(d) = private_dir("open") else {
            eprintln!("SKIPPED: needs root to own files of other users");
            return;
        };
        let at = |n: &str| d.0.join(n).to_str().unwrap().to_string();
        std::fs::write(at("wp-password"), "s3cret-pass\n").unwrap();
        std::fs::set_permissions(at("wp-password"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut open(&at("wp-password")).unwrap(), &mut text).unwrap();
        assert_eq!(text, "s3cret-pass\n");
        std::os::unix::fs::symlink(at("wp-password"), at("link-password")).unwrap();
        assert!(
            open(&at("link-password"))
                .unwrap_err()
                .contains("symbolic link")
        );
        std::fs::write(at("theirs-password"), "x").unwrap();
        std::os::unix::fs::chown(at("theirs-password"), Some(65534), None).unwrap();
        assert!(
            open(&at("theirs-password"))
                .unwrap_err()
                .contains("owned by uid 65534")
        );
        std::fs::write(at("gw-password"), "x").unwrap();
        std::fs::set_permissions(at("gw-password"), std::fs::Permissions::from_mode(0o620))
            .unwrap();
        assert!(open(&at("gw-password")).unwrap_err().contains("mode 620"));
        let fifo = std::ffi::CString::new(at("fifo-password")).unwrap();
        // SAFETY: a valid path string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(
            open(&at("fifo-password"))
                .unwrap_err()
                .contains("not a regular")
        );
        std::fs::create_dir(at("open")).unwrap();
        std::fs::set_permissions(at("open"), std::fs::Permissions::from_mode(0o1777)).unwrap();
        std::fs::write(at("open/wp-password"), "x").unwrap();
        assert!(
            open(&at("open/wp-password"))
                .unwrap_err()
                .contains("others may write to the directory")
        );
        std::os::unix::fs::symlink(&d.0, at("linked-dir")).unwrap();
        assert!(
            open(&at("linked-dir/wp-password"))
                .unwrap_err()
                .contains("symbolic link or not a directory")
        );
    }
}
