//! Integration tests: lab. The virtual lab and the SSH transport against real sshds in
//! network namespaces. They need root; without it they say so through `cannot_run`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use benchpipe::lab::{self, LabBoard, LabInfo, LabOptions};
use benchpipe::model::SshTarget;
use benchpipe::transport::local::Local;
use benchpipe::transport::ssh::{self, Accept, ConnectOptions, SshTransport};
use benchpipe::transport::{Output, Transport, TransportError, quote};
use sha2::{Digest, Sha256};

use crate::processes_matching;
use crate::scratch::{Project, Scratch};

/// Labs run side by side, each under prefixes, subnets and workdirs of its own: most of a
/// lab test's time is spent waiting (cool-downs, sshd, services), not computing.
static SLOTS: Slots = Slots {
    state: Mutex::new(SlotState {
        in_use: 0,
        exclusive: false,
        owner: None,
        exclusive_waiting: 0,
    }),
    changed: Condvar::new(),
};

/// How many labs may be up at once: `BENCHPIPE_IT_LABS`, 6 by default, at least 1.
fn lab_slots() -> usize {
    std::env::var("BENCHPIPE_IT_LABS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6usize)
        .clamp(1, 16)
}

struct SlotState {
    in_use: usize,
    exclusive: bool,
    /// The test holding the machine alone: a lab it brings up itself is its own.
    owner: Option<std::thread::ThreadId>,
    exclusive_waiting: usize,
}

/// A counting semaphore with an exclusive mode: a lab takes one slot; a test that
/// inspects the whole machine (a sentinel namespace copies the mounts of the moment)
/// takes the machine, once every lab is down and before any new one comes up.
struct Slots {
    state: Mutex<SlotState>,
    changed: Condvar,
}

/// One slot, or the whole machine; given back on drop, also when the test panicked.
pub struct Slot {
    exclusive: bool,
}

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn shared(&'static self) -> Slot {
        let max = lab_slots();
        let mut s = self.lock();
        if s.exclusive && s.owner == Some(std::thread::current().id()) {
            s.in_use += 1;
            return Slot { exclusive: false };
        }
        while s.exclusive || s.exclusive_waiting > 0 || s.in_use >= max {
            s = self
                .changed
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        s.in_use += 1;
        Slot { exclusive: false }
    }

    fn exclusive(&'static self) -> Slot {
        let mut s = self.lock();
        s.exclusive_waiting += 1;
        while s.exclusive || s.in_use > 0 {
            s = self
                .changed
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        s.exclusive_waiting -= 1;
        s.exclusive = true;
        s.owner = Some(std::thread::current().id());
        Slot { exclusive: true }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = SLOTS.lock();
        if self.exclusive {
            s.exclusive = false;
            s.owner = None;
        } else {
            s.in_use -= 1;
        }
        drop(s);
        SLOTS.changed.notify_all();
    }
}

/// The whole machine for a test that judges machine-wide state: no lab is up meanwhile.
pub fn machine_alone() -> Slot {
    SLOTS.exclusive()
}

/// A slot beside the labs for a test that brings up none but must not run while a test
/// holds the machine alone (that one's swap traffic, kernel-log line or CPU burners
/// would be this one's too).
pub fn beside_labs() -> Slot {
    SLOTS.shared()
}
static COUNTER: AtomicUsize = AtomicUsize::new(0);
const TIMEOUT: Duration = Duration::from_secs(5);
/// What "did not hang" means in these tests: far beyond TIMEOUT, so a loaded CI machine
/// never fails them, yet well short of the minutes a missed timeout would take.
const HANG: Duration = Duration::from_secs(25);

/// A lab under a fresh temporary root, with names of its own; torn down on drop, also
/// when the test panicked.
pub struct Lab {
    pub root: PathBuf,
    pub options: LabOptions,
    pub info: LabInfo,
    down_done: bool,
    _slot: Slot,
    /// The root's directory, removed once the lab is down (fields drop after `drop`).
    _dir: Scratch,
}

impl Lab {
    /// A lab of `boards` boards, or None when this machine cannot build one (not root:
    /// labs create network namespaces, veth links, loop devices and sshds), said through
    /// `cannot_run`. Call sites read `let Some(lab) = Lab::up(1) else { return };`.
    pub fn up(boards: usize) -> Option<Lab> {
        Lab::up_with_disks(boards, None)
    }

    /// `up`, with loop disks of `disk_bytes` each when given (mkfs.xfs wants 300 MB).
    pub fn up_with_disks(boards: usize, disk_bytes: Option<u64>) -> Option<Lab> {
        Lab::up_with_options(boards, |o| {
            if let Some(bytes) = disk_bytes {
                o.disk_bytes = bytes;
            }
        })
    }

    /// `up`, with the test's own changes to the options (disks per board, their size).
    pub fn up_with_options(boards: usize, edit: impl FnOnce(&mut LabOptions)) -> Option<Lab> {
        if !crate::need_root("a lab (network namespaces, veth links, loop devices, sshds)") {
            return None;
        }
        let slot = SLOTS.shared();
        let (dir, mut options) = fresh_workspace("bt", "lab");
        edit(&mut options);
        let root = dir.to_path_buf();
        let info = lab::up_with(&root, boards, &options).unwrap_or_else(|e| {
            panic!("LAB UP FAILED (needs root, `ip netns`, loop devices, /usr/sbin/sshd): {e}")
        });
        Some(Lab {
            root,
            options,
            info,
            down_done: false,
            _slot: slot,
            _dir: dir,
        })
    }

    /// The directory an apply of this lab's project keeps for `name` (a board or a
    /// cluster) on the controller: `benchpipe::apply::controller_dir` of its store.
    pub fn controller_dir(&self, name: &str) -> PathBuf {
        PathBuf::from(benchpipe::apply::controller_dir(
            &self.root.join("results"),
            name,
        ))
    }

    /// A project at the lab's root (removed with the lab).
    pub fn project(&self) -> Project {
        Project::at(&self.root)
    }

    /// The lab's project with `recipes` (name, text) and `scenarios/s.toml` running
    /// `tests` on every board of the lab, no warm-up and `runs` measured runs each.
    pub fn project_on_every_board(
        &self,
        recipes: &[(&str, &str)],
        tests: &[&str],
        runs: u32,
    ) -> Project {
        let p = recipes.iter().fold(self.project(), |p, (name, text)| {
            p.file(&format!("pipeline/{name}.toml"), text)
        });
        let tests: Vec<String> = tests.iter().map(|t| format!("\"{t}\"")).collect();
        p.scenario(
            "s",
            &format!(
                "title = \"lab\"\n[images.installed]\ninstalled = true\n[matrix]\n\
                 image = [\"installed\"]\nboard = [\"{}-*\"]\ntest = [{}]\n[method]\n\
                 warmup = {{ runs = 0 }}\nruns = {{ min = {runs}, max = {runs} }}\n",
                self.options.board_prefix,
                tests.join(", ")
            ),
        )
    }

    /// The repository's `scenarios/{name}.toml` on this lab's boards: its one
    /// `board = ["lab-*"]` names this lab's prefix.
    pub fn shipped_scenario(&self, name: &str) -> String {
        let shipped =
            std::fs::read_to_string(crate::repo().join(format!("scenarios/{name}.toml"))).unwrap();
        assert_eq!(shipped.matches("board = [\"lab-*\"]").count(), 1, "{name}");
        shipped.replace(
            "board = [\"lab-*\"]",
            &format!("board = [\"{}-*\"]", self.options.board_prefix),
        )
    }

    pub fn board(&self, i: usize) -> &LabBoard {
        &self.info.boards[i]
    }

    pub fn target(&self, i: usize) -> SshTarget {
        self.info.ssh_target(self.board(i))
    }

    pub fn connect(&self, i: usize) -> SshTransport {
        SshTransport::connect_with(&self.board(i).name, &self.target(i), TIMEOUT, options())
            .unwrap_or_else(|e| panic!("connect to lab board: {e}"))
    }

    pub fn down(&mut self) {
        self.down_done = true;
        lab::down_with(&self.root, &self.options).expect("lab down");
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if !self.down_done
            && let Err(e) = lab::down_with(&self.root, &self.options)
        {
            eprintln!("LAB DOWN FAILED for {}: {e}", self.root.display());
            assert!(std::thread::panicking(), "lab down failed: {e}");
        }
    }
}

/// Never the user's ~/.ssh: no config file, no agent, no default keys.
pub fn options() -> ConnectOptions {
    ConnectOptions {
        ssh_config: Some(PathBuf::from("/nonexistent/benchpipe-test-ssh-config")),
        use_agent_and_default_keys: false,
        ..ConnectOptions::default()
    }
}

fn local(command: &str) -> String {
    Local::new()
        .run(command, Some(Duration::from_secs(30)))
        .unwrap()
        .stdout_str()
}

fn pgrep(needle: &str) -> String {
    processes_matching(&[needle])
}

/// Runs a command and keeps all of its output (`run` caps what it keeps).
fn run_whole(t: &mut SshTransport, command: &str, timeout: Option<Duration>) -> Output {
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let exit = t.exec(command, timeout, &mut stdout, &mut stderr).unwrap();
    Output {
        exit,
        stdout,
        stderr,
        stdout_dropped: 0,
        stderr_dropped: 0,
    }
}

#[test]
fn a_command_returns_exit_codes_and_both_streams_intact_even_50_mb() {
    let Some(lab) = Lab::up(1) else { return };
    let mut t = lab.connect(0);

    let out = t.run("echo out; echo err >&2; exit 3", None).unwrap();
    assert_eq!(out.stdout_str(), "out\n");
    assert_eq!(out.stderr_str(), "err\n");
    assert_eq!(out.exit.code, Some(3));

    let out = t.run("kill -TERM $$", None).unwrap();
    assert_eq!(out.exit.signal.as_deref(), Some("TERM"), "{:?}", out.exit);
    assert_eq!(out.exit.code, None);

    let file = format!("{}/random.bin", lab.board(0).workdir);
    let size = 50 * 1024 * 1024;
    let out = run_whole(
        &mut t,
        &format!(
            "head -c {size} /dev/urandom > {f} && sha256sum {f} >&2 && cat {f}",
            f = quote::sh(&file)
        ),
        Some(Duration::from_secs(120)),
    );
    assert!(out.exit.success(), "{:?} {}", out.exit, out.stderr_str());
    assert_eq!(out.stdout.len(), size);
    let ours: String = Sha256::digest(&out.stdout)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let theirs = out.stderr_str();
    assert_eq!(theirs.split_whitespace().next(), Some(ours.as_str()));

    // Both streams at once, several window sizes each: no deadlock, nothing lost.
    let out = run_whole(
        &mut t,
        "head -c 8000000 /dev/zero >&2 & head -c 9000000 /dev/zero; wait",
        Some(Duration::from_secs(60)),
    );
    assert_eq!((out.stdout.len(), out.stderr.len()), (9_000_000, 8_000_000));

    // Upload and download round-trip through the same session.
    let back = lab.root.join("back.bin");
    let copy = format!("{}/copy.bin", lab.board(0).workdir);
    t.upload(Path::new(&file), &copy).unwrap();
    t.download(&copy, &back).unwrap();
    assert_eq!(std::fs::read(&back).unwrap(), out_of(&file));
}

fn out_of(path: &str) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn unknown_and_wrong_host_keys_are_refused_and_trust_accepts() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0);
    let name = board.name.clone();
    let host_pub = lab
        .info
        .state_dir
        .join(board.name.as_str())
        .join("ssh_host_ed25519_key.pub");
    let expected = local(&format!(
        "ssh-keygen -lf {}",
        quote::sh(&host_pub.to_string_lossy())
    ));
    let expected_fp = expected.split_whitespace().nth(1).unwrap().to_string();
    assert!(expected_fp.starts_with("SHA256:"));

    // Unknown: an empty known_hosts.
    let mut target = lab.target(0);
    let kh = lab.root.join("user_known_hosts");
    std::fs::write(&kh, "").unwrap();
    target.known_hosts = Some(kh.clone());
    let err = SshTransport::connect_with(&name, &target, TIMEOUT, options())
        .err()
        .expect("an unknown host key must be refused");
    let msg = err.to_string();
    assert!(matches!(err, TransportError::HostKey { .. }), "{msg}");
    assert!(msg.contains(&expected_fp), "{msg}");
    assert!(
        msg.contains(&format!("benchpipe boards trust {name}")),
        "{msg}"
    );
    assert!(msg.starts_with(&format!("{name}:")), "{msg}");

    // The refusal names no file: it becomes failure.json's cause.
    assert!(!msg.contains(&kh.to_string_lossy().into_owned()), "{msg}");

    // The explicit trust step records the key the user saw; then the connection is accepted.
    let t = ssh::trust_with(
        &name,
        &target,
        TIMEOUT,
        &options(),
        &Accept::Fingerprint(expected_fp.clone()),
    )
    .unwrap();
    assert_eq!(t.fingerprint, expected_fp);
    let mut t = SshTransport::connect_with(&name, &target, TIMEOUT, options()).unwrap();
    assert!(t.run("true", None).unwrap().exit.success());

    // Hashed entries (ssh-keygen -H) are understood too.
    local(&format!(
        "ssh-keygen -H -f {} 2>&1",
        quote::sh(&kh.to_string_lossy())
    ));
    let hashed = std::fs::read_to_string(&kh).unwrap();
    assert!(hashed.starts_with("|1|"), "{hashed}");
    SshTransport::connect_with(&name, &target, TIMEOUT, options()).unwrap();

    // Wrong: another key recorded for this address.
    let other = lab.root.join("other_key");
    local(&format!(
        "ssh-keygen -q -t ed25519 -N '' -f {}",
        quote::sh(&other.to_string_lossy())
    ));
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let mut fields = other_pub.split_whitespace();
    let line = format!(
        "{} {} {}\n",
        board.address,
        fields.next().unwrap(),
        fields.next().unwrap()
    );
    let wrong = lab.root.join("wrong_known_hosts");
    std::fs::write(&wrong, line).unwrap();
    target.known_hosts = Some(wrong);
    let err = SshTransport::connect_with(&name, &target, TIMEOUT, options())
        .err()
        .expect("a wrong host key must be refused");
    let msg = err.to_string();
    assert!(matches!(err, TransportError::HostKey { .. }), "{msg}");
    assert!(
        msg.contains("does NOT match") && msg.contains(&expected_fp),
        "{msg}"
    );
}

#[test]
fn values_with_shell_syntax_reach_the_board_literally() {
    let Some(lab) = Lab::up(1) else { return };
    let mut t = lab.connect(0);
    let workdir = lab.board(0).workdir.clone();
    let canary = format!("{workdir}/canary");
    std::fs::write(&canary, "alive").unwrap();

    let value =
        "; rm -rf / $(touch pwned1) `touch pwned2` 'single' \"double\" \\ spaced  out & | > *";
    let out = t
        .run(&format!("printf %s {}", quote::sh(value)), None)
        .unwrap();
    assert_eq!(out.stdout_str(), value);

    // A file name can hold everything but '/'.
    let name = "; rm -rf ~ $(touch pwned3) `touch pwned4` it's \"q\" a  b";
    let path = format!("{workdir}/{name}");
    let out = t
        .run(
            &format!("cd {} && touch {}", quote::sh(&workdir), quote::sh(&path)),
            None,
        )
        .unwrap();
    assert!(out.exit.success(), "{}", out.stderr_str());
    assert!(
        Path::new(&path).exists(),
        "the file with the literal name was not created"
    );
    assert_eq!(std::fs::read_to_string(&canary).unwrap(), "alive");
    let entries: Vec<String> = std::fs::read_dir(&workdir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !entries.iter().any(|e| e.starts_with("pwned")),
        "a command substitution ran on the board: {entries:?}"
    );
}

#[test]
fn a_host_alias_from_ssh_config_is_honoured() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0);
    let config = lab.root.join("ssh_config");
    std::fs::write(
        &config,
        format!(
            "Host other\n  HostName 192.0.2.1\nHost lab-alias-*\n  HostName {}\n  User root\n  Port 22\n  IdentityFile {}\n",
            board.address,
            lab.info.identity.display()
        ),
    )
    .unwrap();
    let target = SshTarget {
        host: "lab-alias-1".into(),
        port: None,
        user: None,
        identity: None,
        password_env: None,
        known_hosts: Some(lab.info.known_hosts.clone()),
        ..SshTarget::default()
    };
    let opts = ConnectOptions {
        ssh_config: Some(config),
        use_agent_and_default_keys: false,
        ..ConnectOptions::default()
    };
    let mut t = SshTransport::connect_with(&board.name, &target, TIMEOUT, opts).unwrap();
    assert_eq!(t.run("id -un", None).unwrap().stdout_str(), "root\n");
}

#[test]
fn a_wrong_key_fails_authentication_naming_the_board() {
    let Some(lab) = Lab::up(1) else { return };
    let other = lab.root.join("stranger_key");
    local(&format!(
        "ssh-keygen -q -t ed25519 -N '' -f {}",
        quote::sh(&other.to_string_lossy())
    ));
    let mut target = lab.target(0);
    target.identity = Some(other);
    let started = Instant::now();
    let err = SshTransport::connect_with(&lab.board(0).name, &target, TIMEOUT, options())
        .err()
        .expect("a stranger's key must be refused");
    assert!(matches!(err, TransportError::Auth { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with(&format!("{}:", lab.board(0).name))
    );
    assert!(started.elapsed() < HANG);
}

#[test]
fn a_timeout_kills_the_remote_command_and_the_session_stays_usable() {
    let Some(lab) = Lab::up(1) else { return };
    let mut t = lab.connect(0);
    let started = Instant::now();
    let r = t.run(
        "sleep 31337 & sleep 31338; echo never",
        Some(Duration::from_millis(800)),
    );
    assert!(matches!(r, Err(TransportError::Timeout { .. })), "{r:?}");
    assert!(started.elapsed() < HANG, "{:?}", started.elapsed());
    let left = crate::processes_left(&["sleep 31337", "sleep 31338"]);
    assert!(left.trim().is_empty(), "left behind on the board: {left}");
    assert_eq!(t.run("echo ok", None).unwrap().stdout_str(), "ok\n");
}

#[test]
fn killing_sshd_mid_command_is_a_lost_connection_and_reconnect_works() {
    let Some(lab) = Lab::up(1) else { return };
    let mut t = lab.connect(0);
    let board = lab.board(0).clone();
    let killer = std::thread::spawn({
        let board = board.clone();
        move || {
            std::thread::sleep(Duration::from_millis(700));
            lab::kill_sshd(&board).unwrap()
        }
    });
    let started = Instant::now();
    let r = t.run("sleep 31347; echo never", None);
    let killed = killer.join().unwrap();
    assert!(
        killed >= 2,
        "expected the listener and the session's sshd, killed {killed}"
    );
    let err = r.expect_err("a command whose sshd died cannot succeed");
    assert!(
        matches!(
            err,
            TransportError::Lost { .. } | TransportError::Unreachable { .. }
        ),
        "{err}"
    );
    assert!(
        err.to_string().starts_with(&format!("{}:", board.name)),
        "{err}"
    );
    assert!(started.elapsed() < HANG);
    let left = crate::processes_left(&["sleep 31347"]);
    assert!(left.trim().is_empty(), "left behind on the board: {left}");

    // While sshd is down, the next command fails within the timeout...
    let started = Instant::now();
    let err = t.run("true", None).expect_err("no sshd, no command");
    assert!(matches!(err, TransportError::Unreachable { .. }), "{err}");
    assert!(started.elapsed() < HANG);
    // ...and once it is back, the same transport reconnects.
    lab::start_sshd(&board).unwrap();
    assert_eq!(t.run("echo back", None).unwrap().stdout_str(), "back\n");
    t.wait_for_ssh(TIMEOUT).unwrap();
}

#[test]
fn services_stop_with_their_whole_process_group() {
    let Some(lab) = Lab::up(1) else { return };
    let mut t = lab.connect(0);
    let dir = lab.board(0).workdir.clone();
    let s = t
        .start_service(&dir, "sleeper", "sleep 31357 & sleep 31358")
        .unwrap();
    assert!(
        !processes_matching(&["sleep 31357", "sleep 31358"])
            .trim()
            .is_empty(),
        "the service did not start"
    );
    t.stop_service(&s).unwrap();
    let left = crate::processes_left(&["sleep 31357", "sleep 31358"]);
    assert!(left.trim().is_empty(), "left behind: {left}");

    t.start_service(&dir, "a", "sleep 31367").unwrap();
    t.start_service(&dir, "b", "trap '' TERM; sleep 31368")
        .unwrap();
    t.stop_all_services(&dir).unwrap();
    let left = crate::processes_left(&["sleep 31367", "sleep 31368"]);
    assert!(left.trim().is_empty(), "left behind: {left}");
}

/// A session left idle for longer than the board's timeout (its board busy with a run on
/// the controller, or waiting for a shared resource) is still the session the next
/// command runs on: it is not judged dead for having heard nothing while nothing was
/// asked, so the service started under it, whose guard watches that session, runs on.
#[test]
fn an_idle_session_outlives_the_timeout_and_keeps_its_services() {
    let Some(lab) = Lab::up(1) else { return };
    // Silent for 5 s (the larger of the timeout and three keepalives) would be dead: long
    // enough for a loaded machine's sshd to answer, and shorter than the idle time below.
    let quick = ConnectOptions {
        keepalive: Duration::from_secs(1),
        ..options()
    };
    let mut t =
        SshTransport::connect_with(&lab.board(0).name, &lab.target(0), TIMEOUT, quick).unwrap();
    let anchor = |t: &mut SshTransport| {
        t.run("echo \"$BENCHPIPE_ANCHOR\"", None)
            .unwrap()
            .stdout_str()
    };
    let before = anchor(&mut t);
    assert!(
        !before.trim().is_empty(),
        "commands know their session's sshd"
    );
    t.start_service(&lab.board(0).workdir, "idle", "sleep 31387")
        .unwrap();
    std::thread::sleep(TIMEOUT + Duration::from_secs(3));
    assert_eq!(
        anchor(&mut t),
        before,
        "the next command ran on a new session"
    );
    // A guard polls once a second: give a wrongly fired one the time to act.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !processes_matching(&["sleep 31387"]).trim().is_empty(),
        "the service's guard stopped it"
    );
    t.stop_all_services(&lab.board(0).workdir).unwrap();
}

#[test]
fn lab_down_leaves_nothing_behind_even_without_its_state_file() {
    let Some(mut lab) = Lab::up(2) else { return };
    assert!(lab::up_with(&lab.root, 2, &lab.options).unwrap().already_up);
    let prefix = lab.options.prefix.clone();
    let board = lab.board(0).clone();
    let file = std::fs::read_to_string(&board.board_file).unwrap();
    assert!(
        file.contains(&format!("host = \"{}\"", board.address)),
        "{file}"
    );
    assert!(file.contains("role = \"scratch\""), "{file}");

    // Things a crashed run leaves: a mounted loop disk, a running service, a command.
    let disk = &board.disks[0];
    local(&format!(
        "mkfs.ext4 -q {} && mount {} {}",
        disk.device,
        disk.device,
        quote::sh(&disk.path)
    ));
    let mut t = lab.connect(0);
    t.start_service(&board.workdir, "left", "sleep 31377")
        .unwrap();
    drop(t);
    // A crash that lost the state file: down must find everything by name.
    std::fs::remove_file(lab.info.state_dir.join("state.json")).unwrap();
    lab.down();

    let netns = local("ip netns list");
    assert!(!netns.contains(&prefix), "namespaces left: {netns}");
    let links = local("ip -o link show");
    assert!(!links.contains(&prefix), "links left: {links}");
    let loops = local("losetup -a");
    assert!(!loops.contains(&prefix), "loop devices left: {loops}");
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&disk.path), "mount left: {mounts}");
    let procs = pgrep(&lab.info.state_dir.to_string_lossy()) + &pgrep("sleep 31377");
    assert!(procs.trim().is_empty(), "processes left: {procs}");
    assert!(!lab.info.state_dir.exists());
    for b in &lab.info.boards {
        assert!(
            !Path::new(&b.workdir).exists(),
            "workdir left: {}",
            b.workdir
        );
    }
}

#[test]
fn an_rsa_key_in_openssh_format_authenticates_too() {
    let Some(lab) = Lab::up(1) else { return };
    let rsa = lab.root.join("rsa_key");
    local(&format!(
        "ssh-keygen -q -t rsa -b 3072 -N '' -f {}",
        quote::sh(&rsa.to_string_lossy())
    ));
    let public = std::fs::read_to_string(rsa.with_extension("pub")).unwrap();
    assert!(public.starts_with("ssh-rsa "), "{public}");
    assert!(
        std::fs::read_to_string(&rsa)
            .unwrap()
            .starts_with("-----BEGIN OPENSSH PRIVATE KEY-----"),
        "the new OpenSSH key format, not PEM"
    );
    let authorized = lab.info.authorized_keys();
    let mut keys = std::fs::read_to_string(&authorized).unwrap();
    keys.push_str(&public);
    std::fs::write(&authorized, keys).unwrap();

    let mut target = lab.target(0);
    target.identity = Some(rsa);
    let mut t = SshTransport::connect_with(&lab.board(0).name, &target, TIMEOUT, options())
        .unwrap_or_else(|e| panic!("RSA key refused: {e}"));
    assert_eq!(t.run("echo rsa-ok", None).unwrap().stdout_str(), "rsa-ok\n");
}

/// benchpipe builds a libssh2 patched to encrypt whole packets (vendor/libssh2-sys):
/// every cipher the board's sshd offers must still carry data intact both ways.
#[test]
fn every_cipher_carries_uploads_and_output_intact_with_the_patched_libssh2() {
    let Some(lab) = Lab::up(1) else { return };
    let data = crate::xorshift_bytes(20_000_000, 0x9e3779b97f4a7c15);
    let local_file = lab.root.join("payload.bin");
    std::fs::write(&local_file, &data).unwrap();
    let hex = |bytes: &[u8]| -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let want = hex(&data);
    for cipher in [
        "aes128-gcm@openssh.com",
        "aes256-gcm@openssh.com",
        "chacha20-poly1305@openssh.com",
        "aes128-ctr",
        "aes256-ctr",
    ] {
        let opts = ConnectOptions {
            ciphers: Some(cipher.to_string()),
            ..options()
        };
        let mut t = SshTransport::connect_with(&lab.board(0).name, &lab.target(0), TIMEOUT, opts)
            .unwrap_or_else(|e| panic!("{cipher}: {e}"));
        assert_eq!(t.cipher().as_deref(), Some(cipher));
        let remote = format!("{}/payload-{cipher}", lab.board(0).workdir);
        t.run(
            &format!("mkdir -p {}", quote::sh(&lab.board(0).workdir)),
            None,
        )
        .unwrap();
        t.upload(&local_file, &remote)
            .unwrap_or_else(|e| panic!("{cipher}: {e}"));
        let sum = t
            .run(&format!("sha256sum {}", quote::sh(&remote)), None)
            .unwrap()
            .stdout_str();
        assert!(sum.starts_with(&want), "{cipher} upload: {sum} vs {want}");
        let back = run_whole(&mut t, &format!("cat {}", quote::sh(&remote)), None);
        assert_eq!(back.stdout.len(), data.len(), "{cipher} download length");
        assert_eq!(hex(&back.stdout), want, "{cipher} download");
        t.run(&format!("rm -f {}", quote::sh(&remote)), None)
            .unwrap();
    }
}

/// A board on a port other than 22 is recorded as `[host]:port` in known_hosts, and a
/// key trusted for port 22 does not vouch for it.
#[test]
fn a_non_standard_port_has_its_own_known_hosts_entry() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0);
    // A second sshd of the same board on port 2222, with the same host key.
    let config = std::fs::read_to_string(&board.sshd_config).unwrap();
    let alt_pid = board.sshd_config.with_file_name("sshd-2222.pid");
    let alt_config = board.sshd_config.with_file_name("sshd_config-2222");
    std::fs::write(
        &alt_config,
        config
            .replace(
                &format!("ListenAddress {}:22", board.address),
                &format!("ListenAddress {}:2222", board.address),
            )
            .replace(
                &board.sshd_pid_file.display().to_string(),
                &alt_pid.display().to_string(),
            ),
    )
    .unwrap();
    // In a session of its own first (`setsid -w`), as `lab up` starts sshd: a command's
    // process group is killed when it ends, and the daemon could be caught between its
    // fork and its own setsid, never to listen.
    local(&format!(
        "setsid -w ip netns exec {} /usr/sbin/sshd -f {}",
        quote::sh(&board.netns),
        quote::sh(&alt_config.to_string_lossy())
    ));
    let addr = std::net::SocketAddr::from((board.address, 2222));
    let t0 = Instant::now();
    // A loaded CI machine can take seconds to start a daemon: the bound is for one
    // that never starts, not for a slow one.
    while std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "sshd on 2222 never listened (its pid file: {:?})",
            std::fs::read_to_string(&alt_pid).ok()
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let kh = lab.root.join("known_hosts-2222");
    std::fs::write(&kh, "").unwrap();
    let mut target = lab.target(0);
    target.known_hosts = Some(kh.clone());
    // Trusted for port 22 only: port 2222 is still unknown.
    ssh::trust_with(&board.name, &target, TIMEOUT, &options(), &Accept::Offered).unwrap();
    target.port = Some(2222);
    let err = SshTransport::connect_with(&board.name, &target, TIMEOUT, options())
        .err()
        .expect("a key trusted for port 22 must not vouch for port 2222");
    assert!(matches!(err, TransportError::HostKey { .. }), "{err}");

    let fingerprint = ssh::trust_with(&board.name, &target, TIMEOUT, &options(), &Accept::Offered)
        .unwrap()
        .fingerprint;
    let entries = std::fs::read_to_string(&kh).unwrap();
    assert!(
        entries.contains(&format!("[{}]:2222 ", board.address)),
        "{entries}"
    );
    let mut t = SshTransport::connect_with(&board.name, &target, TIMEOUT, options()).unwrap();
    assert_eq!(t.run("echo 2222", None).unwrap().stdout_str(), "2222\n");
    assert!(fingerprint.starts_with("SHA256:"));
    if let Ok(pid) = std::fs::read_to_string(&alt_pid) {
        local(&format!("kill {}", pid.trim()));
    }
}

pub fn bp(root: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args(crate::scripted(args))
        .current_dir(root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// Runs `cmd` under `sh -c` on the controller; its trimmed stdout, or a panic naming the
/// command and its stderr.
pub fn sh(cmd: &str) -> String {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`{cmd}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn text(o: &std::process::Output) -> String {
    crate::spine::text(o)
}

/// A unique prefix (bx...) and workspace for tests that plant files; no lab is built,
/// but `lab up` and `lab down` run as root only: None (said through `cannot_run`) when not.
fn planted_workspace(tag: &str) -> Option<(Scratch, LabOptions)> {
    if !crate::need_root("`lab up` and `lab down`") {
        return None;
    }
    Some(fresh_workspace("bx", &format!("planted-{tag}")))
}

/// An empty workspace and lab options with names no other test or process uses:
/// `letters` + this process's pid + a counter letter.
fn fresh_workspace(letters: &str, tag: &str) -> (Scratch, LabOptions) {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let pid = std::process::id() % 100_000;
    // Two letters of the counter: labs run side by side, and no two of one run may share
    // a prefix (10 characters at most: 2 letters, 5 digits of the pid, 2 of the counter).
    let letter = |i: usize| (b'a' + (i % 26) as u8) as char;
    let prefix = format!("{letters}{pid}{}{}", letter(n / 26), letter(n));
    let root = Scratch::new(tag);
    let options = LabOptions {
        prefix: prefix.clone(),
        board_prefix: prefix,
        disks_per_board: 1,
        disk_bytes: 64 << 20,
        first_subnet: 4000,
        ..LabOptions::default()
    };
    (root, options)
}

/// A state file exactly as `lab up` writes it for one board of `options` under `root`
/// (root-owned, 0600, in a 0700 directory), after `edit`.
fn plant_state(root: &Path, o: &LabOptions, mode: u32, edit: impl FnOnce(&mut serde_json::Value)) {
    use std::os::unix::fs::PermissionsExt;
    let root = std::path::absolute(root).unwrap();
    let dir = lab::state_dir(&root);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let name = format!("{}-1", o.board_prefix);
    let netns = format!("{}-1", o.prefix);
    let workdir = format!("/var/tmp/benchpipe/{name}");
    let subnet = 7000u32;
    let base = u32::from(std::net::Ipv4Addr::new(198, 18, 0, 0)) + subnet * 4;
    let mut v = serde_json::json!({
        "version": 1,
        "prefix": o.prefix,
        "board_prefix": o.board_prefix,
        "state_dir": dir,
        "identity": dir.join("id_ed25519"),
        "known_hosts": dir.join("known_hosts"),
        "boards": [{
            "name": name,
            "netns": netns,
            "subnet": subnet,
            "controller_address": std::net::Ipv4Addr::from(base + 1).to_string(),
            "address": std::net::Ipv4Addr::from(base + 2).to_string(),
            "workdir": workdir,
            "board_file": root.join("boards").join(format!("{name}.toml")),
            "sshd_config": dir.join(&name).join("sshd_config"),
            "sshd_pid_file": dir.join(&name).join("sshd.pid"),
            "disks": [{
                "name": "disk1",
                "device": "/dev/loop999",
                "file": dir.join("disks").join(format!("{netns}-d1.img")),
                "path": format!("{workdir}/disk1"),
            }],
        }],
    });
    edit(&mut v);
    let file = dir.join("state.json");
    std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Things outside any lab that a planted state file points at; removed on drop.
struct Sentinels {
    dir: PathBuf,
    netns: String,
    sleeper: std::process::Child,
    loop_device: String,
}

impl Sentinels {
    fn new(tag: &str, lab_prefix: &str) -> Sentinels {
        let pid = std::process::id() % 100_000;
        let dir = PathBuf::from(format!("/var/tmp/benchpipe-it-sentinel-{tag}-{pid}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("keep.txt"), "precious\n").unwrap();
        // Named like one of the lab's disks, but not in the lab's directory.
        let image = dir.join(format!("{lab_prefix}-1-d1.img"));
        std::fs::write(&image, vec![0u8; 1 << 20]).unwrap();
        let loop_device = local(&format!(
            "losetup --find --show {}",
            quote::sh(&image.to_string_lossy())
        ))
        .trim()
        .to_string();
        assert!(loop_device.starts_with("/dev/loop"), "{loop_device}");
        let netns = format!("bxs{tag}{pid}");
        local(&format!("ip netns add {netns}"));
        let sleeper = std::process::Command::new("ip")
            .args(["netns", "exec", &netns, "sleep", "31391"])
            .spawn()
            .unwrap();
        Sentinels {
            dir,
            netns,
            sleeper,
            loop_device,
        }
    }

    /// Panics unless every sentinel is as it was made.
    fn assert_untouched(&mut self) {
        assert_eq!(
            std::fs::read_to_string(self.dir.join("keep.txt"))
                .ok()
                .as_deref(),
            Some("precious\n"),
            "the sentinel directory was touched"
        );
        assert!(
            local("ip netns list").contains(&self.netns),
            "the sentinel namespace was deleted"
        );
        assert!(
            self.sleeper.try_wait().unwrap().is_none(),
            "the process in the sentinel namespace was killed"
        );
        let back = local(&format!("losetup -n -O BACK-FILE {}", self.loop_device));
        assert!(
            back.contains(&self.dir.to_string_lossy().into_owned()),
            "the sentinel loop device was detached: {back:?}"
        );
    }
}

impl Drop for Sentinels {
    fn drop(&mut self) {
        let _ = self.sleeper.kill();
        let _ = self.sleeper.wait();
        local(&format!("ip netns delete {} 2>&1", self.netns));
        local(&format!("losetup -d {} 2>&1", self.loop_device));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A cloned repository can carry `.benchpipe/lab/state.json`, and `lab down` runs as
/// root: a state naming anything the lab would not have made is refused whole.
#[test]
fn lab_down_refuses_a_planted_state_file_and_touches_nothing_outside() {
    // Serial with the other labs: a sentinel namespace copies the mounts of the moment.
    let _machine = machine_alone();
    let Some((root, o)) = planted_workspace("state") else {
        return;
    };
    let mut s = Sentinels::new("st", &o.prefix);
    let escape = format!(
        "/var/tmp/benchpipe/../{}",
        s.dir.file_name().unwrap().to_string_lossy()
    );
    let sentinel_ns = s.netns.clone();
    type Edit = Box<dyn FnOnce(&mut serde_json::Value)>;
    let cases: Vec<(&str, u32, Edit, &[&str])> = vec![
        (
            "a workdir escaping with ..",
            0o600,
            Box::new(move |v| v["boards"][0]["workdir"] = escape.into()),
            &[
                "refusing the lab state file",
                ": a workdir is /var/tmp/benchpipe/../",
            ],
        ),
        (
            "a foreign namespace",
            0o600,
            Box::new(move |v| v["boards"][0]["netns"] = sentinel_ns.into()),
            &["refusing the lab state file", "-1\" in namespace \"bxs"],
        ),
        (
            "another prefix",
            0o600,
            Box::new(|v| v["prefix"] = "bxs".into()),
            &[
                "refusing the lab state file",
                ": it names prefixes \"bxs\"/",
            ],
        ),
        (
            "a group-writable state file",
            0o620,
            Box::new(|_| {}),
            &["writable by group or others"],
        ),
    ];
    for (what, mode, edit, expected) in cases {
        plant_state(&root, &o, mode, edit);
        let err = lab::down_with(&root, &o).expect_err(what);
        for e in expected {
            assert!(err.to_string().contains(e), "{what}: {err}");
        }
        // Names read as the user wrote them, not as Rust's debug output.
        assert!(!err.to_string().contains("BoardName("), "{what}: {err}");
        s.assert_untouched();
    }
}

/// `lab down` detaches only loop devices backed by this lab's own images, and checks
/// the backing file again right before each detach.
#[test]
fn lab_down_never_detaches_a_loop_device_backed_by_another_file() {
    // Serial with the other labs: a sentinel namespace copies the mounts of the moment.
    let _machine = machine_alone();
    let Some((root, o)) = planted_workspace("loop") else {
        return;
    };
    let mut s = Sentinels::new("lp", &o.prefix);
    let device = s.loop_device.clone();
    // A valid state whose disk names the foreign device.
    plant_state(&root, &o, 0o600, move |v| {
        v["boards"][0]["disks"][0]["device"] = device.into();
    });
    lab::down_with(&root, &o).unwrap();
    s.assert_untouched();
    assert!(!lab::state_dir(&root).exists());
}

/// A workspace can carry links where `lab up` writes as root; none is followed.
#[test]
fn lab_up_never_writes_through_planted_symlinks() {
    use std::os::unix::fs::symlink;
    let _machine = machine_alone();
    let Some((root, o)) = planted_workspace("links") else {
        return;
    };
    let pid = std::process::id();
    let sentinel_dir = PathBuf::from(format!("/var/tmp/benchpipe-it-sentinel-links-{pid}"));
    let _ = std::fs::remove_dir_all(&sentinel_dir);
    std::fs::create_dir_all(&sentinel_dir).unwrap();
    let sentinel = sentinel_dir.join("keep.txt");
    std::fs::write(&sentinel, "precious\n").unwrap();
    let untouched = || {
        assert_eq!(std::fs::read_to_string(&sentinel).unwrap(), "precious\n");
        let entries = std::fs::read_dir(&sentinel_dir).unwrap().count();
        assert_eq!(
            entries, 1,
            "something was written into the sentinel directory"
        );
    };
    let name = format!("{}-1", o.board_prefix);
    let state = lab::state_dir(&root);

    // Links inside a root-owned leftover state directory (a repository checked out as
    // root): the directory is replaced, not written through.
    std::fs::create_dir_all(state.join("disks")).unwrap();
    std::fs::create_dir_all(state.join(&name)).unwrap();
    for link in [
        "known_hosts".to_string(),
        "state.json.tmp".into(),
        "id_ed25519".into(),
        "authorized_keys".into(),
        format!("disks/{}-1-d1.img", o.prefix),
        format!("{name}/sshd_config"),
        format!("{name}/ssh_host_ed25519_key"),
    ] {
        symlink(&sentinel, state.join(link)).unwrap();
    }
    let info = lab::up_with(&root, 1, &o).unwrap_or_else(|e| panic!("lab up: {e}"));
    untouched();
    let config = std::fs::read_to_string(&info.boards[0].sshd_config).unwrap();
    assert!(config.contains("StrictModes yes"), "{config}");
    lab::down_with(&root, &o).unwrap();

    // A link at the board file: refused, naming it.
    std::fs::create_dir_all(root.join("boards")).unwrap();
    let board_file = root.join("boards").join(format!("{name}.toml"));
    symlink(&sentinel, &board_file).unwrap();
    let err = lab::up_with(&root, 1, &o).expect_err("a linked board file must be refused");
    assert!(err.to_string().contains(&format!("{name}.toml")), "{err}");
    untouched();
    std::fs::remove_file(&board_file).unwrap();

    // A link at the board's workdir, or at the workspace's .benchpipe: refused.
    let workdir = PathBuf::from(format!("/var/tmp/benchpipe/{name}"));
    symlink(&sentinel_dir, &workdir).unwrap();
    let err = lab::up_with(&root, 1, &o).expect_err("a linked workdir must be refused");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    untouched();
    std::fs::remove_file(&workdir).unwrap();

    let _ = std::fs::remove_dir_all(root.join(".benchpipe"));
    symlink(&sentinel_dir, root.join(".benchpipe")).unwrap();
    let err = lab::up_with(&root, 1, &o).expect_err("a linked .benchpipe must be refused");
    assert!(err.to_string().contains("link"), "{err}");
    untouched();

    let _ = lab::down_with(&root, &o);
    let _ = std::fs::remove_dir_all(&sentinel_dir);
    let left = local("ip netns list");
    assert!(!left.contains(&o.prefix), "namespaces left: {left}");
}

#[test]
fn lab_up_without_sshd_names_the_package_and_builds_nothing() {
    // Serial with the other labs: a sentinel namespace copies the mounts of the moment.
    let _machine = machine_alone();
    let Some((root, mut o)) = planted_workspace("nosshd") else {
        return;
    };
    o.sshd = PathBuf::from("/nonexistent/sbin/sshd");
    let err = lab::up_with(&root, 1, &o).expect_err("no sshd, no lab");
    let msg = err.to_string();
    assert!(
        msg.contains("openssh-server") && msg.contains("apt-get install"),
        "{msg}"
    );
    assert!(!local("ip netns list").contains(&o.prefix));
    assert!(!lab::state_dir(&root).exists());
}

/// `boards trust` writes only the key whose fingerprint the user names (or, with
/// --yes, what is offered), and says what it wrote.
#[test]
fn boards_trust_writes_only_the_fingerprint_the_user_saw() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0);
    let name = board.name.to_string();
    let host_pub = lab
        .info
        .state_dir
        .join(&name)
        .join("ssh_host_ed25519_key.pub");
    let fp = local(&format!(
        "ssh-keygen -lf {}",
        quote::sh(&host_pub.to_string_lossy())
    ))
    .split_whitespace()
    .nth(1)
    .unwrap()
    .to_string();
    // The board file checks against a known_hosts of its own, empty so far.
    let kh = lab.root.join("trust_known_hosts");
    std::fs::write(&kh, "").unwrap();
    let file = std::fs::read_to_string(&board.board_file).unwrap();
    let file = file.replace(
        &format!("known_hosts = \"{}\"", lab.info.known_hosts.display()),
        &format!("known_hosts = \"{}\"", kh.display()),
    );
    std::fs::write(&board.board_file, file).unwrap();

    let out = bp(&lab.root, &["boards", "trust", &name]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("--fingerprint {fp}")),
        "{}",
        text(&out)
    );
    let wrong = "SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
    let out = bp(
        &lab.root,
        &["boards", "trust", &name, "--fingerprint", wrong],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(wrong) && err.contains(&fp), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(&kh).unwrap(),
        "",
        "nothing may be written"
    );

    let out = bp(&lab.root, &["boards", "trust", &name, "--fingerprint", &fp]);
    assert!(out.status.success(), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    for part in [
        board.address.to_string(),
        "ssh-ed25519".into(),
        fp.clone(),
        kh.display().to_string(),
    ] {
        assert!(said.contains(&part), "{part} missing from: {said}");
    }
    let entries = std::fs::read_to_string(&kh).unwrap();
    assert!(
        entries.starts_with(&format!("{} ssh-ed25519 ", board.address)),
        "{entries}"
    );
    let out = bp(&lab.root, &["boards", "trust", &name, "--yes"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&kh).unwrap(), entries);
}

/// failure.json and reports hold no absolute path; a host-key refusal used to carry
/// the known_hosts file's.
#[test]
fn a_host_key_refusal_stores_a_cause_without_any_path() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0);
    let kh = lab.root.join("empty_known_hosts");
    std::fs::write(&kh, "").unwrap();
    let file = std::fs::read_to_string(&board.board_file).unwrap().replace(
        &format!("known_hosts = \"{}\"", lab.info.known_hosts.display()),
        &format!("known_hosts = \"{}\"", kh.display()),
    );
    std::fs::write(&board.board_file, file).unwrap();
    std::fs::create_dir_all(lab.root.join("pipeline")).unwrap();
    std::fs::create_dir_all(lab.root.join("scenarios")).unwrap();
    std::fs::write(
        lab.root.join("pipeline/echo.toml"),
        "description = \"a value\"\nuses_storage = false\n[run]\n\
         command = \"echo '{\\\"value\\\": 1}'\"\nparse = \"json\"\n[metrics]\n\
         value = { from = \"value\", unit = \"x\", better = \"higher\" }\n",
    )
    .unwrap();
    std::fs::write(
        lab.root.join("scenarios/s.toml"),
        format!(
            "title = \"lab\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"echo\"]\n[method]\n\
             warmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n",
            board.name
        ),
    )
    .unwrap();
    let out = bp(&lab.root, &["apply", "scenarios/s.toml"]);
    assert!(!out.status.success(), "{}", text(&out));
    let results: Vec<PathBuf> = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .map(|e| e.unwrap().path().join("failure.json"))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(results.len(), 1, "{}", text(&out));
    let failure: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results[0]).unwrap()).unwrap();
    let cause = failure["cause"].as_str().unwrap();
    assert!(
        cause.contains("host key") && cause.contains("SHA256:"),
        "{cause}"
    );
    let paths: Vec<&str> = cause
        .split(|c: char| c.is_whitespace() || "()`'\",;".contains(c))
        .filter(|w| w.starts_with('/'))
        .collect();
    assert!(
        paths.is_empty(),
        "absolute paths {paths:?} in the cause: {cause}"
    );
    // The terminal may name the file.
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&kh.display().to_string()),
        "{}",
        text(&out)
    );
}

#[test]
fn boards_check_gives_one_line_per_board_with_the_real_cause() {
    let Some(lab) = Lab::up(1) else { return };
    let name = lab.board(0).name.to_string();
    // A board nobody listens for, and the lab board again under a known_hosts that
    // does not know its key.
    std::fs::write(
        lab.root.join("boards/gone.toml"),
        "model = \"gone\"\nworkdir = \"/var/tmp/bp-gone\"\n[ssh]\nhost = \"127.0.0.1\"\nport = 1\nuser = \"root\"\n",
    )
    .unwrap();
    let kh = lab.root.join("empty_known_hosts");
    std::fs::write(&kh, "").unwrap();
    let file = std::fs::read_to_string(&lab.board(0).board_file).unwrap();
    std::fs::write(
        lab.root.join("boards/stranger.toml"),
        file.replace(
            &format!("known_hosts = \"{}\"", lab.info.known_hosts.display()),
            &format!("known_hosts = \"{}\"", kh.display()),
        ),
    )
    .unwrap();
    let out = bp(&lab.root, &["boards", "check"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    let line = |b: &str| {
        *lines
            .iter()
            .find(|l| l.starts_with(&format!("{b}  ")))
            .unwrap_or_else(|| panic!("no line for {b}: {stdout}"))
    };
    let ok = line(&name);
    assert!(ok.starts_with(&format!("{name}  ok  reachable")), "{ok}");
    assert!(ok.contains("login root") && ok.contains("free for"), "{ok}");
    let gone = line("gone");
    assert!(
        gone.contains("FAIL  unreachable") && gone.contains("refused"),
        "{gone}"
    );
    let stranger = line("stranger");
    assert!(
        stranger.contains("FAIL  host key not trusted"),
        "{stranger}"
    );
    // Naming one board checks only that one.
    let out = bp(&lab.root, &["boards", "check", &name]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
}

/// A namespace of this lab's prefix that another lab holds (another workspace's, with
/// the same default prefix): `lab up` refuses before building anything, so its cleanup
/// after a failure, which removes labs by name, never reaches the other lab.
#[test]
fn lab_up_refuses_a_prefix_another_lab_holds_and_leaves_that_lab_alone() {
    let _machine = machine_alone();
    if !crate::need_root("`lab up`") {
        return;
    }
    let (root, options) = fresh_workspace("bt", "taken");
    let netns = format!("{}-1", options.prefix);
    local(&format!("ip netns add {netns}"));
    let r = lab::up_with(&root, 1, &options);
    let still = Path::new("/run/netns").join(&netns).exists();
    let state = lab::state_dir(&root).join("state.json").exists();
    local(&format!("ip netns delete {netns}"));
    let e = r.expect_err("lab up over a namespace another lab holds");
    assert!(e.to_string().contains("another lab with prefix"), "{e}");
    assert!(still, "the other lab's namespace was removed");
    assert!(!state, "a state file was written");
}
