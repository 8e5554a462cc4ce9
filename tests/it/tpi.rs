//! Integration tests: flashing through a Turing Pi 2 BMC (`[flash] method = "tpi"`)
//! against a FAKE `tpi` on a lab board acting as the BMC (no BMC exists here), and
//! flash and power templates run on a named lab host (`via`), with `boards power`.
//! They need root; without it they fail loudly.

use crate::flash::bpflash_ready;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use benchpipe::lab::LabBoard;
use benchpipe::lab::image::{Compression, ImageSpec};
use benchpipe::transport::{Transport, quote};

use crate::flash::{apply, file_sha256, flash_project, versions};
use crate::lab::Lab;
use crate::scratch::Scratch;

/// The board file's `[power] cycle` (the lab's `lab power cycle B ...`), naming this
/// build's benchpipe.
fn lab_cycle(board: &LabBoard) -> String {
    let text = std::fs::read_to_string(&board.board_file).unwrap();
    let v: toml::Value = toml::from_str(&text).unwrap();
    let cycle = v["power"]["cycle"].as_str().unwrap().to_string();
    let exe = env!("CARGO_BIN_EXE_benchpipe");
    let cycle = if cycle.starts_with("benchpipe ") {
        cycle.replacen("benchpipe", &quote::sh(exe), 1)
    } else {
        cycle
    };
    assert!(cycle.contains(" lab power cycle "), "{cycle}");
    cycle
}

/// `lab power WORD B ...` for `$1` = on or off, run in the controller's network and
/// mount namespaces (the lab checks that the board's sshd listens, and boards cannot
/// reach one another's subnets).
fn lab_power_as_controller(board: &LabBoard) -> String {
    let pid = std::process::id();
    format!(
        "nsenter --net=/proc/{pid}/ns/net --mount=/proc/{pid}/ns/mnt -- {}",
        lab_cycle(board).replacen(" lab power cycle ", " lab power \"$1\" ", 1)
    )
}

/// Replaces the board file's `[flash]` and `[power]` tables (everything up to its
/// first `[[storage]]`) with `tables`.
fn set_flash_and_power(board: &LabBoard, tables: &str) {
    let text = std::fs::read_to_string(&board.board_file).unwrap();
    let (from, to) = (
        text.find("[flash]\n").unwrap(),
        text.find("[[storage]]").unwrap(),
    );
    let text = format!("{}{tables}\n{}", &text[..from], &text[to..]);
    std::fs::write(&board.board_file, text).unwrap();
}

/// Installs a FAKE `tpi` inside the BMC board's own environment only: a tmpfs over
/// `/usr/local/sbin` (on sshd's default PATH) in the mount namespace of that board's
/// sshd, holding a script that logs its argv to `log`, writes `flash`'s image to the
/// node's lab boot disk, and powers nodes through `lab power`. Node N is `nodes[N-1]`;
/// a file `fail-node-N` in `dir` makes its flash fail the way tpi reports a BMC error.
fn install_fake_tpi(lab: &Lab, bmc: usize, nodes: &[usize], dir: &Path, log: &Path) {
    let mut cases = String::new();
    for (i, &b) in nodes.iter().enumerate() {
        let board = lab.board(b);
        let _ = writeln!(
            cases,
            "  {n}) dev={dev}; power={power};;",
            n = i + 1,
            dev = quote::sh(&board.boot.as_ref().unwrap().device),
            power = quote::sh(&lab_power_as_controller(board)),
        );
    }
    let log = quote::sh(&log.to_string_lossy());
    let fail = quote::sh(&dir.to_string_lossy());
    let script = format!(
        r#"#!/bin/sh
# A FAKE Turing Pi 2 `tpi` for benchpipe's lab tests: the argv and messages of the real
# CLI (turing-machines/tpi), a lab boot disk for the node's eMMC, `lab power` for its power.
printf '%s\n' "$*" >> {log}
cmd=$1; shift
word=
if [ "$cmd" = power ]; then word=$1; shift; fi
node= image=
while [ $# -gt 0 ]; do
  case $1 in
    -n|--node) node=$2; shift 2;;
    -i|--image-path) image=$2; shift 2;;
    -l|--local) shift;;
    *) echo "error: unexpected argument '$1' found" >&2; exit 2;;
  esac
done
case $node in
{cases}  *) echo "error: invalid value '$node' for '--node <NODE>'" >&2; exit 2;;
esac
case $cmd in
  flash)
    if [ -e {fail}/fail-node-$node ]; then echo "Error: Failed to begin flashing: 500 Internal Server Error"; exit 1; fi
    echo "Flashing from image file $image..."
    dd if="$image" of="$dev" bs=4M conv=fsync status=none || exit 1
    echo "Verifying checksum..."
    echo Done;;
  power)
    case $word in on|off) ;; *) echo "error: invalid value '$word'" >&2; exit 2;; esac
    sh -c "$power" sh "$word" >/dev/null || {{ echo "Error: power $word of node $node failed"; exit 1; }}
    echo ok;;
  *) echo "error: unrecognized subcommand '$cmd'" >&2; exit 2;;
esac
"#
    );
    let pid = std::fs::read_to_string(&lab.board(bmc).sshd_pid_file).unwrap();
    let mut child = Command::new("nsenter")
        .arg(format!("--mount=/proc/{}/ns/mnt", pid.trim()))
        .args([
            "--",
            "sh",
            "-c",
            "mount -t tmpfs -o size=1m,mode=0755 bp-fake-tpi /usr/local/sbin \
             && cat > /usr/local/sbin/tpi && chmod 0755 /usr/local/sbin/tpi",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "installing the fake tpi");
    // The fake is on the BMC's PATH, and only there.
    let mut t = lab.connect(bmc);
    let out = t.run("command -v tpi", None).unwrap();
    assert_eq!(out.stdout_str().trim(), "/usr/local/sbin/tpi");
    assert!(!Path::new("/usr/local/sbin/tpi").exists());
}

#[test]
fn tpi_flash_through_a_fake_bmc_boots_and_measures_and_a_tpi_error_fails_only_its_node() {
    if !crate::need_root("losetup, mount and the lab") {
        return;
    }
    let Some(lab) = Lab::up(3) else { return };
    let dir = Scratch::new("tpi-tpi");
    let v1 = crate::firstboot::lab_ready(
        &lab,
        &dir,
        "v1",
        &ImageSpec::new("bpflash", "1"),
        Compression::Xz,
    );
    let b0 = flash_project(&lab, &[("v1", &v1, "1")]);
    let b1 = lab.board(1).name.to_string();
    let bmc = lab.board(2).name.to_string();
    let s = lab.root.join("scenarios/lab-flash.toml");
    let text = std::fs::read_to_string(&s).unwrap().replace(
        &format!("board = [\"{b0}\"]"),
        &format!("board = [\"{b0}\", \"{b1}\"]"),
    );
    std::fs::write(&s, text).unwrap();
    let log = dir.join("tpi.log");
    install_fake_tpi(&lab, 2, &[0, 1], &dir, &log);
    let images = dir.join("bmc-images");
    // Nodes 1 and 2 of the BMC, each without [power]: tpi's own power is the default.
    for (i, node) in [(0, 1), (1, 2)] {
        set_flash_and_power(
            lab.board(i),
            &format!(
                "[flash]\nmethod = \"tpi\"\nvia = \"{bmc}\"\nnode = {node}\ndir = \"{}\"\n",
                images.display()
            ),
        );
    }
    std::fs::write(dir.join("fail-node-2"), "").unwrap();

    let dry = apply(
        &lab.root,
        &["apply", "--dry-run", "scenarios/lab-flash.toml"],
    );
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{text}");
    for node in [1, 2] {
        assert!(
            text.contains(&format!(
                "REFLASH with v1: tpi flash node {node} on BMC {bmc}"
            )),
            "{text}"
        );
    }
    assert!(text.contains("power cycle"), "{text}");

    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // Node 2's tpi error fails its cells with tpi's own words; node 1 was measured.
    assert!(
        err.contains("Error: Failed to begin flashing: 500 Internal Server Error"),
        "{err}"
    );
    assert_eq!(versions(&lab.root, "v1"), [1.0, 1.0], "{err}");
    let calls = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    // What was uploaded is the image's decompressed content, named by its digest.
    let facts: Vec<serde_json::Value> = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("facts.json")).ok())
        .map(|t| serde_json::from_str(&t).unwrap())
        .collect();
    assert_eq!(facts.len(), 1, "{facts:?}");
    let flashed = &facts[0]["flashed"];
    assert_eq!(flashed["method"], "tpi");
    assert_eq!(flashed["file_sha256"], file_sha256(&v1));
    let content = flashed["uncompressed_sha256"].as_str().unwrap();
    let on_bmc = images.join(format!("{content}.img"));
    assert_eq!(file_sha256(&on_bmc), content);
    assert_eq!(std::fs::metadata(&on_bmc).unwrap().len(), 8 << 20);
    let path = on_bmc.display();
    for want in [
        format!("flash --local --node 1 --image-path {path}"),
        "power off --node 1".to_string(),
        "power on --node 1".to_string(),
        format!("flash --local --node 2 --image-path {path}"),
    ] {
        assert!(lines.contains(&want.as_str()), "{want:?} not in {calls}");
    }
    // Node 1: flashed, then switched off and on, in that order.
    let at = |l: &str| lines.iter().position(|x| *x == l).unwrap();
    assert!(
        at(&format!("flash --local --node 1 --image-path {path}")) < at("power off --node 1")
            && at("power off --node 1") < at("power on --node 1"),
        "{calls}"
    );
    // A failed flash is not followed by a power cycle of that node.
    assert!(!lines.contains(&"power off --node 2"), "{calls}");
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lab.root.join(format!("results/boards/{b0}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(state["identity"], format!("sha256:{}", file_sha256(&v1)));

    // With the BMC healthy again: node 2 is flashed and measured. Node 1, whose state
    // is forgotten, is flashed again from the copy already on the BMC, not re-sent.
    std::fs::remove_file(dir.join("fail-node-2")).unwrap();
    std::fs::remove_file(lab.root.join(format!("results/boards/{b0}.json"))).unwrap();
    let out = apply(
        &lab.root,
        &[
            "apply",
            "--no-report",
            "--redo",
            "image=v1",
            "scenarios/lab-flash.toml",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("is on the BMC already"), "{err}");
    assert_eq!(versions(&lab.root, "v1").len(), 6, "{err}");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(calls.lines().any(|l| l == "power on --node 2"), "{calls}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Mounts a tmpfs of `mib` MiB at `dir` in the BMC board's own mount namespace (its
/// SD card, small), so a flash that does not fit shows.
fn small_bmc_card(lab: &Lab, bmc: usize, dir: &Path, mib: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let pid = std::fs::read_to_string(&lab.board(bmc).sshd_pid_file).unwrap();
    let out = Command::new("nsenter")
        .arg(format!("--mount=/proc/{}/ns/mnt", pid.trim()))
        .args(["--", "mount", "-t", "tmpfs", "-o"])
        .arg(format!("size={mib}m,mode=0700"))
        .arg("bp-fake-bmc-sd")
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tpi_measures_the_image_itself_refuses_one_the_bmc_has_no_room_for_and_reuses_nothing_on_the_caches_word()
 {
    if !crate::need_root("losetup, mount and the lab") {
        return;
    }
    let Some(lab) = Lab::up(2) else { return };
    let dir = Scratch::new("tpi-tpi-trust");
    let v1 = bpflash_ready(&lab, &dir, "v1", "1");
    let v2 = bpflash_ready(&lab, &dir, "v2", "2");
    // 64 MiB of zeros in a few KiB of zstd: more than the BMC's card holds.
    let bomb = dir.join("bomb.img.zst");
    crate::lab::sh(&format!(
        "head -c 67108864 /dev/zero | zstd -q -c > {}",
        quote::sh(&bomb.to_string_lossy())
    ));
    flash_project(&lab, &[("v1", &v1, "1"), ("bomb", &bomb, "9")]);
    let bmc = lab.board(1).name.to_string();
    let log = dir.join("tpi.log");
    install_fake_tpi(&lab, 1, &[0], &dir, &log);
    let images = dir.join("bmc-images");
    small_bmc_card(&lab, 1, &images, 24);
    set_flash_and_power(
        lab.board(0),
        &format!(
            "[flash]\nmethod = \"tpi\"\nvia = \"{bmc}\"\nnode = 1\ndir = \"{}\"\n",
            images.display()
        ),
    );
    // v2's content is on the BMC under its own digest, and the cache's facts say v1
    // decompresses to it: v1 must still be what node 1 boots.
    let v2_content = file_sha256(&v2);
    let mut t = lab.connect(1);
    t.upload(&v2, &format!("{}/{v2_content}.img", images.display()))
        .unwrap();
    let cache = lab.root.join("image-cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::set_permissions(&cache, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let v1_sha = file_sha256(&v1);
    std::fs::write(
        cache.join(format!("{v1_sha}.facts.json")),
        serde_json::json!({
            "version": 1, "format": "raw",
            "compressed_bytes": std::fs::metadata(&v1).unwrap().len(), "sha256": v1_sha,
            "uncompressed_bytes": std::fs::metadata(&v2).unwrap().len(),
            "uncompressed_sha256": v2_content,
        })
        .to_string(),
    )
    .unwrap();

    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(versions(&lab.root, "v1"), [1.0, 1.0], "{err}");
    let v1_content = file_sha256(&v1);
    let calls = std::fs::read_to_string(&log).unwrap();
    assert!(
        calls.contains(&format!(
            "flash --local --node 1 --image-path {}/{v1_content}.img",
            images.display()
        )),
        "{calls}"
    );
    // The bomb: refused before a byte was sent, nothing left on the card.
    assert!(
        err.contains("it decompresses to 67108864 bytes") && err.contains("nothing was sent"),
        "{err}"
    );
    let listed = t
        .run(
            &format!("ls -A {}", quote::sh(&images.to_string_lossy())),
            None,
        )
        .unwrap();
    let mut names: Vec<String> = listed.stdout_str().lines().map(String::from).collect();
    names.sort();
    let mut want = vec![format!("{v1_content}.img"), format!("{v2_content}.img")];
    want.sort();
    assert_eq!(names, want, "{err}");
    // The cache's facts are the measured ones now.
    let facts: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(cache.join(format!("{v1_sha}.facts.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(facts["uncompressed_sha256"], v1_content.as_str());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether the board's sshd accepts a TCP connection.
fn listening(board: &LabBoard) -> bool {
    let addr = std::net::SocketAddr::from((board.address, 22));
    std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2)).is_ok()
}

#[test]
fn flash_and_power_templates_run_on_a_named_lab_host_and_boards_power_switches_the_board() {
    if !crate::need_root("losetup, mount and the lab") {
        return;
    }
    let Some(lab) = Lab::up(2) else { return };
    let dir = Scratch::new("tpi-via");
    let v1 = bpflash_ready(&lab, &dir, "v1", "1");
    let b0 = flash_project(&lab, &[("v1", &v1, "1")]);
    let host = lab.board(1).name.to_string();
    let power = lab_power_as_controller(lab.board(0));
    let log = dir.join("where.log");
    let logq = quote::sh(&log.to_string_lossy());
    // Each template says where it ran: the addresses of the host that ran it. The flash
    // command uses the documented variables `image` and `device`.
    let whereami = |what: &str| format!("echo {what} {{{{ board }}}} $(hostname -I) >> {logq}");
    let tables = format!(
        "[flash]\nmethod = \"command\"\nvia = \"{host}\"\ncommand = {command}\n\n\
         [power]\nvia = \"{host}\"\noff = {off}\non = {on}\n",
        command = toml_str(&format!(
            "dd if={{{{ image }}}} of={{{{ device }}}} bs=4M conv=fsync status=none && {}",
            whereami("flash")
        )),
        off = toml_str(&format!(
            "{} && sh -c {} sh off",
            whereami("off"),
            quote::sh(&power)
        )),
        on = toml_str(&format!(
            "{} && sh -c {} sh on",
            whereami("on"),
            quote::sh(&power)
        )),
    );
    set_flash_and_power(lab.board(0), &tables);
    let host_ip = lab.board(1).address.to_string();
    let own_ip = lab.board(0).address.to_string();
    let ran_on_host = |line: &str| line.contains(&host_ip) && !line.contains(&own_ip);

    // `boards power`: off, then on, then a cycle made of off and on, each on the host.
    let out = apply(&lab.root, &["boards", "power", "off", &b0]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("{b0}: power off: done on {host}")),
        "{text}"
    );
    assert!(!listening(lab.board(0)), "still on after power off");
    let out = apply(&lab.root, &["boards", "power", "on", &b0]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(listening(lab.board(0)), "not on after power on");
    let out = apply(&lab.root, &["boards", "power", "cycle", &b0]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(listening(lab.board(0)), "not on after power cycle");
    let lines = std::fs::read_to_string(&log).unwrap();
    let words: Vec<&str> = lines
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(words, ["off", "on", "off", "on"], "{lines}");
    assert!(lines.lines().all(ran_on_host), "{lines}");
    // A board without a way to do it says so, and exits 1.
    let out = apply(&lab.root, &["boards", "power", "on", &host]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("its [power] has no `on`"), "{text}");
    std::fs::remove_file(&log).unwrap();

    // apply: the flash command and the power cycle run on the host, then the boot is
    // verified and the cell measured.
    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("with the board's [flash] command on {host}")),
        "{err}"
    );
    assert_eq!(versions(&lab.root, "v1"), [1.0, 1.0]);
    let lines = std::fs::read_to_string(&log).unwrap();
    let words: Vec<&str> = lines
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(words, ["flash", "off", "on"], "{lines}");
    assert!(lines.lines().all(ran_on_host), "{lines}");
    assert!(
        lines
            .lines()
            .all(|l| l.split(' ').nth(1) == Some(b0.as_str())),
        "{lines}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// `tests/hostile/base` copied to a fresh directory with `pi.toml`'s `[flash]` table
/// (up to its storage) and its `[power]` replaced by `tables`, loaded as `check` loads it.
fn load_pi_with(tag: &str, tables: &str) -> benchpipe::model::Workspace {
    let dir = Scratch::new(tag);
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile/base");
    let out = Command::new("cp")
        .arg("-r")
        .arg(base.join("."))
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let pi = dir.join("boards/pi.toml");
    let text = std::fs::read_to_string(&pi).unwrap();
    // The base's [power], its last table, belongs to its dd flash: `tables` replace both.
    let text = match text.find("\n[power]") {
        Some(at) => text[..=at].to_string(),
        None => text,
    };
    let (from, to) = (
        text.find("[flash]").unwrap(),
        text.find("[[storage]]").unwrap(),
    );
    std::fs::write(&pi, format!("{}{tables}\n{}", &text[..from], &text[to..])).unwrap();
    let ws = benchpipe::check::load(&dir, &[dir.join("scenarios/s.toml")])
        .unwrap_or_else(|d| panic!("{d}"));
    let _ = std::fs::remove_dir_all(&dir);
    ws
}

#[test]
fn tpi_board_templates_use_node_device_board_and_host_and_tpi_power_is_the_default() {
    use benchpipe::model::Flash;
    use benchpipe::power::{PowerAction, plan};
    // Without [power]: the BMC's own tpi power, on the BMC.
    let ws = load_pi_with(
        "tpi-cfg",
        "[flash]\nmethod = \"tpi\"\nvia = \"bmc\"\nnode = 3\n",
    );
    let pi = &ws.boards[&"pi".into()];
    assert!(
        matches!(&pi.flash, Flash::Tpi { via, node: 3, dir } if via == "bmc" && dir == "/mnt/sdcard/benchpipe")
    );
    let p = plan(pi, PowerAction::Cycle).unwrap();
    assert_eq!(p.via.as_deref(), Some("bmc"));
    assert_eq!(
        p.commands,
        ["tpi power off --node 3", "tpi power on --node 3"]
    );
    assert_eq!(
        plan(pi, PowerAction::On).unwrap().commands,
        ["tpi power on --node 3"]
    );
    // With [power] off and on (no cycle): a cycle is off then on, with every variable.
    let ws = load_pi_with(
        "tpi-cfg-power",
        "[flash]\nmethod = \"tpi\"\nvia = \"bmc\"\nnode = 3\ndir = \"/srv/images/\"\n\n\
         [power]\nvia = \"pi@bmc:2222\"\n\
         off = \"relay {{ board }} {{ host }} {{ node }} {{ device }} off\"\n\
         on = \"relay {{ board }} {{ host }} {{ node }} {{ device }} on\"\n",
    );
    let pi = &ws.boards[&"pi".into()];
    assert!(matches!(&pi.flash, Flash::Tpi { dir, .. } if dir == "/srv/images"));
    let p = plan(pi, PowerAction::Cycle).unwrap();
    assert_eq!(p.via.as_deref(), Some("pi@bmc:2222"));
    assert_eq!(
        p.commands,
        [
            "relay pi 10.0.0.2 3 /dev/mmcblk0 off",
            "relay pi 10.0.0.2 3 /dev/mmcblk0 on"
        ]
    );
    let d = benchpipe::power::destination(p.via.as_deref().unwrap());
    assert_eq!(
        (d.user.as_deref(), d.host.as_str(), d.port),
        (Some("pi"), "bmc", Some(2222))
    );
}
