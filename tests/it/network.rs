//! Integration tests: the network recipes on the virtual lab over real SSH: iperf3
//! `--bidir` and iperf 2, servers on the boards, clients on the controller; nothing of
//! theirs is left running afterwards.

use crate::lab::bp;
use std::path::Path;

use crate::lab::Lab;
use crate::spine::text;

/// Each measured run's metrics of `test`, by board.
fn metrics(root: &Path, test: &str) -> Vec<(String, serde_json::Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        let Some(board) = name
            .get(33..)
            .and_then(|r| r.strip_prefix(&format!("{test}-")))
        else {
            continue;
        };
        let text = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap_or_default();
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            out.push((board.to_string(), v["metrics"].clone()));
        }
    }
    out
}

#[test]
fn iperf3_bidir_and_iperf2_measure_both_ways_on_lab_boards_and_leave_nothing_running() {
    let Some(lab) = Lab::up(2) else { return };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for name in ["iperf3-bidir", "iperf"] {
        std::fs::copy(
            repo.join(format!("pipeline/{name}.toml")),
            root.join(format!("pipeline/{name}.toml")),
        )
        .unwrap();
    }
    // Ports of this test alone, so the process scan below finds no other test's iperf.
    std::fs::write(
        root.join("scenarios/s.toml"),
        format!(
            "title = \"lab\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}-*\"]\ntest = [\"iperf3-bidir\", \"iperf\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.iperf3-bidir]\nseconds = 1\nport = 5273\n\
             [params.iperf]\nseconds = 1\nport = 5073\n",
            lab.options.board_prefix
        ),
    )
    .unwrap();
    let apply = bp(root, &["apply", "scenarios/s.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));

    let bidir = metrics(root, "iperf3-bidir");
    assert_eq!(bidir.len(), 4, "2 boards x 2 runs: {bidir:?}");
    for (board, m) in &bidir {
        for key in ["controller_to_board", "board_to_controller"] {
            let mbit = m[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{board}: no {key}: {m}"));
            assert!(mbit.is_finite() && mbit > 0.0, "{board} {key}: {mbit}");
        }
    }
    // Two directions, two numbers: not one direction's rate reported twice. One run may
    // carry the same bytes both ways when both are starved of CPU alike (a loaded
    // machine; seen under the whole suite), so some run must differ, not every run.
    assert!(
        bidir
            .iter()
            .any(|(_, m)| m["controller_to_board"] != m["board_to_controller"]),
        "every run reports one rate both ways: {bidir:?}"
    );
    let v2 = metrics(root, "iperf");
    assert_eq!(v2.len(), 4, "2 boards x 2 runs: {v2:?}");
    for (board, m) in &v2 {
        let mbit = m["throughput"].as_f64().unwrap();
        assert!(mbit.is_finite() && mbit > 0.0, "{board}: {mbit}");
    }
    // The servers stopped with their cells, and no client outlived its run.
    let left = crate::processes_left(&["-p 5273", "-p 5073"]);
    assert!(left.trim().is_empty(), "left running: {left}");
}

/// Each measured run's `metric` of `test`, by the network its cell ran over, with the
/// link facts its cell recorded.
pub fn by_network(root: &Path, test: &str, metric: &str) -> Vec<(String, f64, serde_json::Value)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap().flatten() {
        let Ok(cell) = std::fs::read_to_string(e.path().join("cell.json")) else {
            continue;
        };
        let cell: serde_json::Value = serde_json::from_str(&cell).unwrap();
        if cell["address"]["test"] != test {
            continue;
        }
        let network = cell["address"]["network"]
            .as_str()
            .unwrap_or("-")
            .to_string();
        let facts: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(e.path().join("facts.json")).unwrap())
                .unwrap();
        let samples = std::fs::read_to_string(e.path().join("samples.jsonl")).unwrap();
        for line in samples.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let x = v["metrics"][metric].as_f64().unwrap();
            out.push((network.clone(), x, facts["network"].clone()));
        }
    }
    out
}

/// The lab's second link is shaped by tc to 50 Mbit/s: iperf3 both ways over `lan` and
/// `wifi` measures `wifi` slower, each cell's facts name its link, and the report says
/// which link each row ran over, with its speed, duplex and queueing discipline.
#[test]
fn iperf3_over_lan_and_the_labs_shaped_wifi_link_finds_wifi_slower_and_reports_the_links() {
    let Some(lab) = Lab::up(1) else { return };
    let rate = f64::from(lab.options.wifi_rate_mbit);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    for name in [
        "iperf3-board-to-controller",
        "iperf3-controller-to-board",
        "xz",
    ] {
        std::fs::copy(
            repo.join(format!("pipeline/{name}.toml")),
            root.join(format!("pipeline/{name}.toml")),
        )
        .unwrap();
    }
    // xz uses no network: one cell, with no network value, beside the networked ones.
    std::fs::write(
        root.join("scenarios/links.toml"),
        format!(
            "title = \"lan and wifi\"\n[images.installed]\ninstalled = true\n[matrix]\n\
             image = [\"installed\"]\nboard = [\"{}-*\"]\nnetwork = [\"lan\", \"wifi\"]\n\
             test = [\"iperf3-board-to-controller\", \"iperf3-controller-to-board\", \"xz\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n\
             [params.iperf3-board-to-controller]\nseconds = 2\nport = 5291\n\
             [params.iperf3-controller-to-board]\nseconds = 2\nport = 5292\n\
             [params.xz]\ncorpus_mib = 1\n\
             [[report.compare]]\nmetric = \"iperf3-board-to-controller.throughput\"\n\
             baseline = {{ network = \"lan\" }}\ncandidate = {{ network = \"wifi\" }}\n",
            lab.options.board_prefix
        ),
    )
    .unwrap();
    let check = bp(root, &["check", "scenarios/links.toml"]);
    assert!(check.status.success(), "{}", text(&check));
    let apply = bp(root, &["apply", "scenarios/links.toml"]);
    assert!(apply.status.success(), "{}", text(&apply));

    for test in ["iperf3-board-to-controller", "iperf3-controller-to-board"] {
        let runs = by_network(root, test, "throughput");
        assert_eq!(runs.len(), 4, "{test}: 2 links x 2 runs: {runs:?}");
        let mean = |net: &str| {
            let xs: Vec<f64> = runs.iter().filter(|r| r.0 == net).map(|r| r.1).collect();
            assert_eq!(xs.len(), 2, "{test} over {net}: {runs:?}");
            xs.iter().sum::<f64>() / 2.0
        };
        let (lan, wifi) = (mean("lan"), mean("wifi"));
        assert!(
            wifi > 0.0 && wifi < lan,
            "{test}: wifi {wifi} Mbit/s, lan {lan}"
        );
        // A token bucket caps the rate whatever the machine's load.
        assert!(
            wifi < rate * 1.5,
            "{test}: wifi {wifi} Mbit/s over a {rate} Mbit/s link"
        );
        for (net, _, facts) in &runs {
            assert_eq!(facts["name"], net.as_str(), "{facts}");
            let link = &facts["link"];
            assert_eq!(link["present"], true, "{facts}");
            assert!(
                link["speed_mbps"].as_u64().is_some_and(|s| s > 0),
                "{facts}"
            );
            assert_eq!(link["speed_from"], "sysfs", "{facts}");
            assert!(
                facts.get("address").is_none(),
                "no address in the facts: {facts}"
            );
            let tbf = link["qdisc"].as_str().unwrap_or("").contains("tbf");
            assert_eq!(tbf, net == "wifi", "the shaped link is wifi's: {facts}");
        }
    }
    let xz = by_network(root, "xz", "real");
    assert!(
        !xz.is_empty() && xz.iter().all(|r| r.0 == "-" && r.2.is_null()),
        "{xz:?}"
    );

    let report = bp(root, &["report", "scenarios/links.toml"]);
    assert!(report.status.success(), "{}", text(&report));
    let md = std::fs::read_to_string(root.join("reports/links/index.md")).unwrap();
    for want in [
        "| network |",
        "wifi (wlan0, wifi)",
        "lan (eth0, wired)",
        "Mb/s full duplex (from sysfs)",
        "qdisc tbf",
    ] {
        assert!(md.contains(want), "no {want:?} in the report:\n{md}");
    }
    let board = lab.board(0);
    for address in [board.address, board.wifi.as_ref().unwrap().address] {
        assert!(
            !md.contains(&address.to_string()),
            "{address} in the report:\n{md}"
        );
    }
    let left = crate::processes_left(&["-p 5291", "-p 5292"]);
    assert!(left.trim().is_empty(), "left running: {left}");
}

/// The board's own byte counters on its SSH link (eth0), read in its namespace:
/// (received, sent).
fn board_bytes(board: &benchpipe::lab::LabBoard) -> (u64, u64) {
    let read = |what: &str| -> u64 {
        let out = std::process::Command::new("ip")
            .args(["netns", "exec", &board.netns, "cat"])
            .arg(format!("/sys/class/net/eth0/statistics/{what}_bytes"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    (read("rx"), read("tx"))
}

/// The iperf3 recipes are named by the path the data takes, and the data takes it: by
/// the lab board's own interface counters (the kernel's, not iperf3's word),
/// `iperf3-controller-to-board` (the second seed's UP, `iperf3 -c BOARD`) brings at
/// least the bytes it measured into the board and sends less out, and
/// `iperf3-board-to-controller` (the seed's DOWN, `-R`) the other way round.
#[test]
fn iperf3_named_by_path_moves_its_bytes_that_way_by_the_boards_own_counters() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0).clone();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = &lab.root;
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    let seconds = 2.0;
    for (test, into_board) in [
        ("iperf3-controller-to-board", true),
        ("iperf3-board-to-controller", false),
    ] {
        std::fs::copy(
            repo.join(format!("pipeline/{test}.toml")),
            root.join(format!("pipeline/{test}.toml")),
        )
        .unwrap();
        std::fs::write(
            root.join(format!("scenarios/{test}.toml")),
            format!(
                "title = \"direction\"\n[images.installed]\ninstalled = true\n[matrix]\n\
                 image = [\"installed\"]\nboard = [\"{}\"]\ntest = [\"{test}\"]\n\
                 [method]\ncooldown = \"0s\"\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n\
                 [params.{test}]\nseconds = {seconds}\nport = 5296\n",
                board.name
            ),
        )
        .unwrap();
        let (rx0, tx0) = board_bytes(&board);
        let out = bp(root, &["apply", &format!("scenarios/{test}.toml")]);
        assert!(out.status.success(), "{test}: {}", text(&out));
        let (rx1, tx1) = board_bytes(&board);
        let runs = metrics(root, test);
        assert_eq!(runs.len(), 1, "{test}: {runs:?}");
        // What iperf3's receiver counted: Mbit/s over the run's seconds, in bytes.
        let measured = runs[0].1["throughput"].as_f64().unwrap() * 1e6 / 8.0 * seconds;
        let (into, out_of) = ((rx1 - rx0) as f64, (tx1 - tx0) as f64);
        let (carried, other) = if into_board {
            (into, out_of)
        } else {
            (out_of, into)
        };
        assert!(
            carried >= 0.9 * measured && carried > other,
            "{test}: into the board {into} bytes, out of it {out_of}, iperf3 measured {measured}"
        );
    }
    let left = crate::processes_left(&["-p 5296"]);
    assert!(left.trim().is_empty(), "left running: {left}");
}
