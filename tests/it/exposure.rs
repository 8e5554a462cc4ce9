//! Integration tests: the servers a cell starts on a board are open to the controller
//! alone, on the link the test uses (issue 37): on a lab of two boards, a LAN shared
//! with others, nginx, smbd and nfs-ganesha listen on the board's test address only
//! and refuse the second board while the controller measures; smbd takes no guest, and
//! its per-cell login is in no process's arguments or environment, no store file and
//! no output; iperf and iperf3 servers bind to the address of the cell's link.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use benchpipe::lab::{DROP_COPIED_LOOP_MOUNTS, LabBoard};

use crate::lab::{Lab, bp, text};
use crate::serving::{assert_nothing_left, samples, scenario};
use crate::xz::in_board;

/// Far beyond what any step here takes, so a loaded CI machine never fails on it, yet a
/// bound on a wait that would otherwise be endless.
const HANG: Duration = Duration::from_secs(180);

/// `cmd` in the board's network namespace (a lab board's processes share the
/// controller's files: only the network is the board's), bounded by `timeout`.
fn in_netns(board: &LabBoard, cmd: &[&str]) -> Output {
    Command::new("ip")
        .args(["netns", "exec", &board.netns, "timeout", "60"])
        .args(cmd)
        .output()
        .unwrap()
}

/// On the controller, bounded the same way.
fn on_controller(cmd: &[&str]) -> Output {
    Command::new("timeout")
        .arg("60")
        .args(cmd)
        .output()
        .unwrap()
}

fn all(o: &Output) -> String {
    format!(
        "status {:?}\n{}{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The local addresses of the listening TCP sockets on `port` in the board's network
/// namespace, as `ss` prints them (`198.18.0.6`, `0.0.0.0`, `*`, `[::]`); an IPv4
/// address mapped into an IPv6 socket (ganesha's) as the IPv4 address.
fn listeners(board: &LabBoard, port: u16) -> BTreeSet<String> {
    let out = in_netns(board, &["ss", "-Hltn", &format!("sport = :{port}")]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(3))
        .filter_map(|local| local.rsplit_once(':').map(|(a, _)| a.to_string()))
        .map(|a| {
            a.trim_start_matches("[::ffff:")
                .trim_end_matches(']')
                .to_string()
        })
        .collect()
}

/// The login (user, password) of the smb or smb-fs cell running on `board`, from its
/// secret directory on the controller; none while no cell has one.
fn smb_login(lab: &Lab, board: &LabBoard) -> Option<(String, String)> {
    for e in std::fs::read_dir(lab.controller_dir(board.name.as_str()))
        .ok()?
        .flatten()
    {
        if !e.file_name().to_string_lossy().starts_with("secrets-") {
            continue;
        }
        let text = std::fs::read_to_string(e.path().join("smb_login")).unwrap_or_default();
        let mut lines = text.lines();
        if let (Some(u), Some(p)) = (lines.next(), lines.next()) {
            return Some((u.to_string(), p.to_string()));
        }
    }
    None
}

/// An apply of the scenario in `lab`, made to run 500 runs per cell, that has measured
/// one: its servers are up. Its output goes to a file outside the store.
struct Running {
    child: Option<Child>,
    output: PathBuf,
}

impl Running {
    fn start(lab: &Lab, test: &str) -> Running {
        let s = lab.root.join("scenarios/s.toml");
        let two = std::fs::read_to_string(&s).unwrap();
        std::fs::write(
            &s,
            two.replace("max = 2", "max = 500")
                .replace("min = 2", "min = 500"),
        )
        .unwrap();
        let output = lab.root.join(format!("apply-{test}.out"));
        let file = std::fs::File::create(&output).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(crate::scripted(&["apply", "scenarios/s.toml"]))
            .current_dir(&lab.root)
            .env("NO_COLOR", "1")
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        let mut running = Running {
            child: Some(child),
            output,
        };
        let t0 = Instant::now();
        while !samples(&lab.root)
            .iter()
            .any(|(c, _)| c.contains(&format!("\"test\": \"{test}\"")))
        {
            let exited = running.child.as_mut().unwrap().try_wait().unwrap();
            assert!(
                exited.is_none() && t0.elapsed() < HANG,
                "{test}: never measured: {}",
                running.stop()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::write(&s, two).unwrap();
        running
    }

    /// Interrupts the apply (SIGTERM: it ends its cell, stops its servers and removes
    /// its secrets) and returns what it printed.
    fn stop(&mut self) -> String {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            child.wait().unwrap();
        }
        std::fs::read_to_string(&self.output).unwrap_or_default()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `[params]` of a short serving cell.
fn small(test: &str) -> String {
    format!("[params.{test}]\nsize_mib = 4\n")
}

/// While each server serves the controller, which measures, it listens on the board's
/// address of the test's link alone (not the board's other link, not every address), and
/// the second lab board, another host on the LAN, is refused: nginx answers it 403,
/// smbd drops it, with or without the cell's login, and ganesha's export admits it not;
/// the controller, at the same moment, is served. smbd refuses a guest, also from the
/// controller.
#[test]
fn servers_listen_on_the_test_link_only_and_refuse_a_second_board_on_the_lan() {
    let Some(lab) = Lab::up(2) else { return };
    let board = lab.board(0).clone();
    let other = lab.board(1).clone();
    let addr = board.address.to_string();
    let wifi = board
        .wifi
        .as_ref()
        .expect("a lab board's second link")
        .address;
    let auth_dir = lab.root.join("auth");
    std::fs::create_dir_all(&auth_dir).unwrap();
    for (test, port) in [("http", 8089), ("smb", 4450), ("nfs", 20490)] {
        scenario(&lab, &format!("\"{test}\""), "", &small(test));
        let mut running = Running::start(&lab, test);
        let seen = listeners(&board, port);
        assert_eq!(
            seen,
            BTreeSet::from([addr.clone()]),
            "{test}: listens on the board's test address only (not {wifi}, not every address)"
        );
        match test {
            "http" => {
                let url = format!("http://{addr}:{port}/file");
                let code = |o: Output| String::from_utf8_lossy(&o.stdout).to_string();
                let curl = [
                    "curl",
                    "-sS",
                    "--noproxy",
                    "*",
                    "-o",
                    "/dev/null",
                    "-w",
                    "%{http_code}",
                ];
                let lan = code(in_netns(&other, &[&curl[..], &[url.as_str()]].concat()));
                assert_eq!(lan, "403", "{test}: the second board is refused");
                let own = code(on_controller(&[&curl[..], &[url.as_str()]].concat()));
                assert_eq!(own, "200", "{test}: the controller is served meanwhile");
            }
            "smb" => {
                let share = format!("//{addr}/bench");
                let get = |on: Option<&LabBoard>, auth: &[&str]| {
                    let mut a = vec!["smbclient", share.as_str(), "-p", "4450"];
                    a.extend(auth);
                    a.extend(["-c", "get file /dev/null"]);
                    let o = match on {
                        Some(b) => in_netns(b, &a),
                        None => on_controller(&a),
                    };
                    let got = o.status.success()
                        && String::from_utf8_lossy(&o.stderr).contains("getting file");
                    (got, all(&o))
                };
                let (got, said) = get(Some(&other), &["-N"]);
                assert!(!got, "{test}: a guest on the LAN: {said}");
                let (got, said) = get(None, &["-N"]);
                assert!(!got, "{test}: a guest from the controller: {said}");
                assert!(
                    ["NT_STATUS_ACCESS_DENIED", "NT_STATUS_LOGON_FAILURE"]
                        .iter()
                        .any(|s| said.contains(s)),
                    "{test}: smbd itself refused the guest: {said}"
                );
                let (user, password) = smb_login(&lab, &board).expect("the cell's login was made");
                let auth = auth_dir.join("smb_auth");
                std::fs::write(&auth, format!("username = {user}\npassword = {password}\n"))
                    .unwrap();
                let auth = auth.to_string_lossy().to_string();
                let (got, said) = get(Some(&other), &["-A", &auth]);
                assert!(!got, "{test}: the login from the LAN: {said}");
                let (got, said) = get(None, &["-A", &auth]);
                assert!(got, "{test}: the controller is served meanwhile: {said}");
            }
            _ => {
                let url = format!("nfs://{addr}/bench/file?version=4&nfsport={port}");
                let read = |o: &Output| o.status.success() && o.stdout.len() == 4 << 20;
                let lan = in_netns(&other, &["nfs-cat", &url]);
                assert!(!read(&lan), "{test}: the second board read the export");
                let own = on_controller(&["nfs-cat", &url]);
                assert!(
                    read(&own),
                    "{test}: the controller reads meanwhile: {}",
                    all(&own)
                );
            }
        }
        let out = running.stop();
        assert!(
            samples(&lab.root)
                .iter()
                .any(|(c, _)| c.contains(&format!("\"test\": \"{test}\""))),
            "{test}: the controller measured: {out}"
        );
        assert_nothing_left(&board);
    }
}

/// smb and smb-fs run with a login made for the cell: while smbclient transfers, no
/// process on the machine (the controller's, and a lab board's, which share its process
/// table) holds the user or password in its arguments or environment; afterwards no
/// file of the store and nothing apply printed holds either, and the cell's secret
/// directory is gone.
#[test]
fn the_smb_login_is_in_no_process_table_store_file_or_output() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    in_board(&board, DROP_COPIED_LOOP_MOUNTS);
    for (test, fs) in [("smb", ""), ("smb-fs", "\"ext4\"")] {
        let _ = std::fs::remove_dir_all(lab.root.join("results"));
        scenario(&lab, &format!("\"{test}\""), fs, &small(test));
        let mut running = Running::start(&lab, test);
        let (user, password) = smb_login(&lab, &board).expect("the cell's login was made");
        let needles = [user.as_str(), password.as_str()];
        let mut clients = BTreeSet::new();
        let mut holding = BTreeSet::new();
        let t0 = Instant::now();
        // Until three transfers were seen in the table (a transfer of 4 MiB is a
        // moment; the scan runs between them too).
        while clients.len() < 3 && t0.elapsed() < HANG {
            for (pid, cmdline, environ) in process_table() {
                if cmdline.contains("smbclient") {
                    clients.insert(pid.clone());
                }
                for n in needles {
                    if cmdline.contains(n) || environ.contains(n) {
                        holding.insert(format!("{pid}: {cmdline}"));
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let out = running.stop();
        assert!(
            clients.len() >= 3,
            "{test}: the scan saw smbclient transfer: {clients:?}"
        );
        assert!(
            holding.is_empty(),
            "{test}: a process held the login: {holding:?}"
        );
        let found =
            crate::webapp::files_holding(&lab.root.join("results"), &needles.map(String::from));
        assert!(found.is_empty(), "{test}: {found:?}");
        for n in needles {
            assert!(!out.contains(n), "{test}: apply printed the login");
        }
        assert_eq!(
            smb_login(&lab, &board),
            None,
            "{test}: the secret directory is gone"
        );
        assert_nothing_left(&board);
    }
}

/// Every shipped recipe that starts a server on a board (or on a cluster's members)
/// reads `bind_address`, so none listens on every address; no board file or lab needed.
/// The web-app recipes' nginx listens there only once the install is done
/// (`webapp_network::`).
#[test]
fn every_shipped_recipe_with_a_server_on_a_board_binds_it_to_the_test_address() {
    use benchpipe::model::Side;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let recipes = benchpipe::config::load_recipes(repo).expect("the shipped recipes load");
    let mut serving = Vec::new();
    for (name, r) in &recipes {
        let on_board = r
            .services
            .iter()
            .any(|s| matches!(s.on, Side::Board | Side::Members | Side::Peer));
        if !on_board {
            continue;
        }
        serving.push(name.to_string());
        assert!(
            r.uses_addresses,
            "{name} starts a server but reads no bind_address"
        );
        assert!(
            r.services.iter().all(|s| s.command.contains("bind_address")
                || r.setup.iter().any(|st| st.command.contains("bind_address"))),
            "{name}: a service with no bound address"
        );
        assert!(r.uses_network, "{name}");
    }
    assert!(serving.len() >= 10, "{serving:?}");
}

/// (pid, command line, environment) of every process, NULs as spaces.
fn process_table() -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = e.file_name().to_string_lossy().to_string();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let read = |f: &str| {
            let raw = std::fs::read(e.path().join(f)).unwrap_or_default();
            String::from_utf8_lossy(&raw).replace('\0', " ")
        };
        out.push((pid.clone(), read("cmdline"), read("environ")));
    }
    out
}

/// iperf3 and iperf 2 servers bind to the address of the cell's link: over the `lan`
/// and the `wifi` network of one board, each cell's server listens on that link's
/// address alone; iperf3-peer's, on the board's address as its peer reaches it. A
/// watcher reads the board's listening sockets while the applies run.
#[test]
fn iperf_servers_bind_to_the_address_of_the_cells_link() {
    let Some(lab) = Lab::up(2) else { return };
    let board = lab.board(0).clone();
    let peer = lab.board(1).clone();
    let lan = board.address.to_string();
    let wifi = board
        .wifi
        .as_ref()
        .expect("a lab board's second link")
        .address
        .to_string();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for name in ["iperf3-controller-to-board", "iperf", "iperf3-peer"] {
        std::fs::copy(
            repo.join(format!("pipeline/{name}.toml")),
            root.join(format!("pipeline/{name}.toml")),
        )
        .unwrap();
    }
    let head = format!(
        "[images.installed]\ninstalled = true\n[method]\nwarmup = {{ runs = 0 }}\n\
         runs = {{ min = 2, max = 2 }}\n[matrix]\nimage = [\"installed\"]\nboard = [\"{}\"]\n",
        board.name
    );
    std::fs::write(
        root.join("scenarios/links.toml"),
        format!(
            "title = \"links\"\n{head}network = [\"lan\", \"wifi\"]\ntest = [\"iperf3-controller-to-board\", \"iperf\"]\n\
             [params.iperf3-controller-to-board]\nseconds = 1\nport = 5294\n[params.iperf]\nseconds = 1\nport = 5094\n"
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("scenarios/peer.toml"),
        format!(
            "title = \"peer\"\n{head}test = [\"iperf3-peer\"]\n\
             [params.iperf3-peer]\nseconds = 1\nport = 5295\npeer = \"{}\"\n",
            peer.name
        ),
    )
    .unwrap();
    let ports = [5294u16, 5094, 5295];
    let seen: Arc<Mutex<BTreeSet<(u16, String)>>> = Arc::default();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, done, board) = (seen.clone(), done.clone(), board.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                for port in ports {
                    for a in listeners(&board, port) {
                        seen.lock().unwrap().insert((port, a));
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let links = bp(root, &["apply", "scenarios/links.toml"]);
    let peered = bp(root, &["apply", "scenarios/peer.toml"]);
    done.store(true, Ordering::SeqCst);
    watcher.join().unwrap();
    assert!(links.status.success(), "{}", text(&links));
    assert!(peered.status.success(), "{}", text(&peered));
    let seen = seen.lock().unwrap().clone();
    let want: BTreeSet<(u16, String)> = [
        (5294, lan.clone()),
        (5294, wifi.clone()),
        (5094, lan.clone()),
        (5094, wifi),
        (5295, lan),
    ]
    .into();
    assert_eq!(seen, want, "each server on its cell's link's address alone");
    let left = crate::processes_left(&["-p 5294", "-p 5094", "-p 5295"]);
    assert!(left.trim().is_empty(), "left running: {left}");
}
