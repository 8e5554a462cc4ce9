//! Figures (no assertions): benchpipe's recorded throughput for the `http` and
//! `iperf3-board-to-controller` recipes on a lab board, beside the same client run by
//! hand over the same link against a server set up by hand the same way, in one run,
//! interleaved (the order alternates each round, ABBA). The goal is within 2%.
//!
//! `sudo cargo bench --bench serving` (root: it builds a one-board lab of its own,
//! names `bpbsrv`/`benchsrv`, and always takes it down); `-- --quick` for fewer,
//! shorter rounds. The board's link is shaped to 1 Gbit/s (`tc ... tbf` on its side of
//! the veth), as a gigabit board's Ethernet: unshaped (`-- --unshaped`), a lab link
//! runs as fast as the shared machine's CPU, and the figures measure its load. Each benchpipe round is one `benchpipe apply --redo test=...` of
//! the shipped recipe with one measured run, whose stored metric is read back; the
//! hand round is `curl ... -w '%{speed_download}'` against an nginx with the recipe's
//! nginx.conf on a tmpfs (port 8090), or `iperf3 -J -R -c` against `iperf3 -s`
//! (port 5202), both started on the board with `ip netns exec`.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use benchpipe::lab::{LabBoard, LabOptions};

const HTTP_MIB: u64 = 256;
const HAND_HTTP_PORT: u16 = 8090;
const HAND_IPERF_PORT: u16 = 5202;

fn main() {
    if !common::is_root("serving") {
        return;
    }
    let quick = common::quick();
    if let Err(e) = run(quick) {
        eprintln!("benches/serving: {e}");
        std::process::exit(1);
    }
}

/// A server started by hand on the board, in a process group of its own, killed when
/// dropped.
struct HandServer(Child);

impl Drop for HandServer {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group of a child we spawned as its leader.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

fn spawn_in_board(board: &LabBoard, script: &str) -> Result<HandServer, String> {
    Command::new("ip")
        .args(["netns", "exec", &board.netns, "sh", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map(HandServer)
        .map_err(|e| format!("ip netns exec: {e}"))
}

fn wait_listening(board: &LabBoard, port: u16) -> Result<(), String> {
    let addr = SocketAddr::from((board.address, port));
    let t0 = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if t0.elapsed() > Duration::from_secs(30) {
            return Err(format!("nothing listens on {addr}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// nginx as pipeline/http.toml configures it, on a tmpfs in the mount namespace of its
/// own `ip netns exec`, which goes with it.
fn hand_nginx(board: &LabBoard, root: &Path) -> Result<HandServer, String> {
    let d = root.join("hand-http");
    std::fs::create_dir_all(d.join("www")).map_err(|e| e.to_string())?;
    let d = d.display();
    let script = format!(
        r#"set -e
d={d}; w="$d/www"
mount -t tmpfs -o mode=0700,noatime,size={size}m bpbench-hand "$w"
head -c $(({mib} * 1048576)) /dev/urandom > "$w/file"
mkdir -p "$d/temp"
printf '%s\n' 'daemon off;' 'master_process on;' 'worker_processes auto;' 'user root;' \
  "pid $d/nginx.pid;" "error_log $d/error.log;" 'events {{ worker_connections 512; }}' 'http {{' \
  '  access_log off;' '  sendfile on;' "  client_body_temp_path $d/temp/body;" \
  "  proxy_temp_path $d/temp/proxy;" "  fastcgi_temp_path $d/temp/fastcgi;" \
  "  uwsgi_temp_path $d/temp/uwsgi;" "  scgi_temp_path $d/temp/scgi;" \
  '  server {{' "    listen {port};" "    root $w;" '    location / {{ autoindex on; }}' '  }}' '}}' > "$d/nginx.conf"
exec nginx -p "$d" -e "$d/error.log" -c "$d/nginx.conf""#,
        size = HTTP_MIB + 8,
        mib = HTTP_MIB,
        port = HAND_HTTP_PORT,
    );
    let server = spawn_in_board(board, &script)?;
    wait_listening(board, HAND_HTTP_PORT)?;
    Ok(server)
}

/// The recipe's curl, by hand: MB/s.
fn hand_curl(board: &LabBoard) -> Result<f64, String> {
    let out = Command::new("curl")
        .args([
            "-fsS",
            "--noproxy",
            "*",
            "--max-time",
            "1800",
            "-o",
            "/dev/null",
            "-w",
            "%{speed_download}",
            &format!("http://{}:{HAND_HTTP_PORT}/file", board.address),
        ])
        .output()
        .map_err(|e| format!("curl: {e}"))?;
    if !out.status.success() {
        return Err(format!("curl: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let bytes_per_s: f64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("curl's speed_download: {e}"))?;
    Ok(bytes_per_s * 1e-6)
}

/// The recipe's iperf3 client, by hand: Mbit/s received (`-R`: the board sends).
fn hand_iperf3(board: &LabBoard, seconds: u32) -> Result<f64, String> {
    let out = Command::new("iperf3")
        .args([
            "-J",
            "-R",
            "-c",
            &board.address.to_string(),
            "-p",
            &HAND_IPERF_PORT.to_string(),
            "-t",
            &seconds.to_string(),
        ])
        .output()
        .map_err(|e| format!("iperf3: {e}"))?;
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("iperf3 -J: {e}"))?;
    doc["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .map(|b| b * 1e-6)
        .ok_or_else(|| format!("iperf3: no end.sum_received: {}", doc["error"]))
}

/// One benchpipe apply of `test` (a fresh measured run), and the metric it stored.
fn benchpipe_run(root: &Path, test: &str, metric: &str) -> Result<f64, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .args([
            "apply",
            "--redo",
            &format!("test={test}"),
            "scenarios/s.toml",
        ])
        .current_dir(root)
        .env("NO_COLOR", "1")
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "benchpipe apply {test}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let dir = std::fs::read_dir(root.join("results"))
        .map_err(|e| e.to_string())?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(&format!("-{test}-")))
        })
        .ok_or_else(|| format!("no cell of {test} in the store"))?;
    let samples = std::fs::read_to_string(dir.join("samples.jsonl")).map_err(|e| e.to_string())?;
    let last = samples
        .lines()
        .rev()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap_or_default())
        .find(|s| s["kind"] == "measured")
        .ok_or("no measured run stored")?;
    last["metrics"][metric]
        .as_f64()
        .ok_or_else(|| format!("no {metric} in {last}"))
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        f64::midpoint(v[n / 2 - 1], v[n / 2])
    }
}

/// `rounds` interleaved pairs of (benchpipe, hand), the order alternating.
fn interleaved(
    rounds: usize,
    mut ours: impl FnMut() -> Result<f64, String>,
    mut hand: impl FnMut() -> Result<f64, String>,
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        if r % 2 == 0 {
            a.push(ours()?);
            b.push(hand()?);
        } else {
            b.push(hand()?);
            a.push(ours()?);
        }
    }
    Ok((a, b))
}

fn report(what: &str, unit: &str, ours: &[f64], hand: &[f64]) {
    let (m, h) = (median(ours), median(hand));
    println!(
        "{what:<40} {m:>10.1} {unit:<6} {h:>10.1} {unit:<6} {:>7.3}   ({:+.1}%, goal within 2%)",
        m / h,
        (m / h - 1.0) * 100.0
    );
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "  rounds, in order: benchpipe [{}], by hand [{}]",
        list(ours),
        list(hand)
    );
}

/// Shapes what the board sends (the download and `-R`'s direction) to `rate`.
fn shape(board: &LabBoard, rate: &str) -> Result<String, String> {
    let out = Command::new("ip")
        .args(["netns", "exec", &board.netns, "ip", "-o", "link", "show"])
        .output()
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let dev = text
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|d| d.split('@').next().unwrap_or(d))
        .find(|d| *d != "lo")
        .ok_or_else(|| format!("no link in {}: {text}", board.netns))?
        .to_string();
    common::sh(&format!(
        "ip netns exec {} tc qdisc replace dev {dev} root tbf rate {rate} burst 256kb latency 50ms",
        board.netns
    ))?;
    Ok(dev)
}

fn run(quick: bool) -> Result<(), String> {
    let (http_rounds, iperf_rounds, iperf_seconds) = if quick { (3, 2, 2) } else { (9, 5, 5) };
    let root = std::env::temp_dir().join(format!("benchpipe-bench-serving-{}", std::process::id()));
    let options = LabOptions {
        prefix: "bpbsrv".into(),
        board_prefix: "benchsrv".into(),
        disks_per_board: 1,
        disk_bytes: 64 << 20,
        first_subnet: 6200,
        ..LabOptions::default()
    };
    let (info, _guard) = common::lab_up(&root, options)?;
    let board = info.boards[0].clone();
    let link = if std::env::args().any(|a| a == "--unshaped") {
        "unshaped veth".to_string()
    } else {
        format!("veth {} shaped to 1 Gbit/s", shape(&board, "1gbit")?)
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["pipeline", "scenarios"] {
        std::fs::create_dir_all(root.join(dir)).map_err(|e| e.to_string())?;
    }
    for r in ["http", "iperf3-board-to-controller"] {
        std::fs::copy(
            repo.join(format!("pipeline/{r}.toml")),
            root.join(format!("pipeline/{r}.toml")),
        )
        .map_err(|e| e.to_string())?;
    }
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"bench\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"http\", \"iperf3-board-to-controller\"]\n\
             [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n\
             [params.http]\nsize_mib = {HTTP_MIB}\n[params.iperf3-board-to-controller]\nseconds = {iperf_seconds}\n",
            board.name
        ),
    )
    .map_err(|e| e.to_string())?;

    let nginx = hand_nginx(&board, &root)?;
    // One of each first, unrecorded: caches, ARP, the first connection.
    hand_curl(&board)?;
    benchpipe_run(&root, "http", "download")?;
    let (http_ours, http_hand) = interleaved(
        http_rounds,
        || benchpipe_run(&root, "http", "download"),
        || hand_curl(&board),
    )?;
    drop(nginx);

    let iperf = spawn_in_board(&board, &format!("exec iperf3 -s -p {HAND_IPERF_PORT}"))?;
    wait_listening(&board, HAND_IPERF_PORT)?;
    let (iperf_ours, iperf_hand) = interleaved(
        iperf_rounds,
        || benchpipe_run(&root, "iperf3-board-to-controller", "throughput"),
        || hand_iperf3(&board, iperf_seconds),
    )?;
    drop(iperf);

    println!(
        "benchpipe's recorded throughput vs the same client by hand, lab board {} ({}, {link}), interleaved",
        board.name, board.address
    );
    println!(
        "{:<40} {:>17} {:>17} {:>7}",
        "", "benchpipe", "by hand", "ratio"
    );
    report(
        &format!("http, curl of {HTTP_MIB} MiB (median of {http_rounds})"),
        "MB/s",
        &http_ours,
        &http_hand,
    );
    report(
        &format!("iperf3-board-to-controller, -R -t {iperf_seconds} (median of {iperf_rounds})"),
        "Mbit/s",
        &iperf_ours,
        &iperf_hand,
    );
    Ok(())
}
