//! Integration tests: config. Loading the committed examples, one table of mistakes with
//! the position and message each must produce, and garbage that must not panic.

use std::path::{Path, PathBuf};

use benchpipe::model::{Connection, Cooldown, Flash, ParserSpec};
use benchpipe::{check, config};

use crate::scratch::Scratch;

const PI: &str = r#"model = "Raspberry Pi 4"
arch = "aarch64"

[ssh]
host = "10.0.0.2"
user = "pi"

[flash]
method = "dd"
via = "helper"
device = "/dev/mmcblk0"

[[storage]]
name = "sd"
role = "boot"
device = "/dev/mmcblk0"
path = "/home/pi"

[[storage]]
name = "usb"
role = "scratch"
device = "/dev/sda"
size = 500107862016

[power]
cycle = "plug {{ host }} cycle"
"#;

const LOCAL: &str = r#"model = "The controller"
local = true

[[storage]]
name = "scratch-dir"
role = "scratch"
path = "/var/tmp/bp/scratch"
"#;

const XZ: &str = r#"description = "xz"
uses_storage = false

[params]
corpus_mib = 8

[run]
command = "cd {{ workdir }} && /usr/bin/time -f '%e %U %S %M' xz -c {{ corpus_mib }}"
parse = "time"
timeout = "30m"

[metrics]
real = { from = "real", unit = "s", better = "lower" }
"#;

const DISK: &str = r#"description = "fio"

[params]
size = "100M"
runtime = 10

[run]
on = "board"
command = "fio --filename={{ dir }}/f --size={{ size }} --runtime={{ runtime }}"
parse = "fio-json"

[metrics]
random_read = { from = "jobs[jobname=randread].read.bw_bytes", unit = "B/s", better = "higher", primary = true }
random_write = { from = "jobs[jobname=randwrite].write.bw_bytes", unit = "B/s", better = "higher" }

[[teardown]]
command = "rm -f {{ dir }}/f"
"#;

const SCENARIO: &str = r#"title = "Study"

[images.installed]
installed = true

[images.debian]
url = "https://example.org/debian.img.xz"
sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
expect = { os_release = { ID = "debian" } }

[filesystems.ext4-plain]
kind = "ext4"

[matrix]
image = ["installed", "debian"]
board = ["pi", "local*"]
storage = ["usb", "scratch-*"]
filesystem = ["as-is", "ext4-plain"]
test = ["xz", "disk"]
exclude = [{ board = "local", image = "debian" }]

[method]
cooldown = { until_below = "50C", max = "15m" }
warmup = { runs = 1, duration = "30s" }
runs = { min = 3, max = 10, target = "2%" }
confidence = 0.95
order = "interleaved"

[params.disk]
size = "32M"

[[report.compare]]
metric = "disk.random_read"
baseline = { storage = "usb" }
candidate = { board = "local*" }
"#;

const BASE: [(&str, &str); 5] = [
    ("boards/pi.toml", PI),
    ("boards/local.toml", LOCAL),
    ("pipeline/xz.toml", XZ),
    ("pipeline/disk.toml", DISK),
    ("scenarios/s.toml", SCENARIO),
];

/// Writes the base workspace with `file`'s text `from` replaced by `to`, and loads it.
fn load_with(file: &str, from: &str, to: &str) -> Result<benchpipe::model::Workspace, String> {
    let dir = Scratch::new("config");
    let mut replaced = false;
    for (path, text) in BASE {
        if path == file {
            assert!(text.contains(from), "{file} does not contain {from:?}");
            dir.write(path, text.replacen(from, to, 1));
            replaced = true;
        } else {
            dir.write(path, text);
        }
    }
    if !replaced {
        dir.write(file, to);
    }
    check::load(&dir, &[dir.join("scenarios/s.toml")]).map_err(|d| d.to_string())
}

#[test]
fn base_workspace_loads() {
    let ws = load_with("scenarios/s.toml", "", "").unwrap_or_else(|e| panic!("{e}"));
    let s = &ws.scenarios[0];
    assert_eq!(s.file, PathBuf::from("scenarios/s.toml"));
    let boards: Vec<&str> = s
        .matrix
        .board
        .iter()
        .map(benchpipe::model::BoardName::as_str)
        .collect();
    assert_eq!(boards, ["pi", "local"]);
    assert_eq!(s.method.runs.target, Some(0.02));
    assert!(matches!(s.method.cooldown, Cooldown::UntilBelow { celsius, .. } if celsius == 50.0));
    assert_eq!(s.compare[0].test.as_str(), "disk");
    assert_eq!(s.compare[0].metric, "random_read");
    let pi = &ws.boards[&"pi".into()];
    assert_eq!(pi.file, PathBuf::from("boards/pi.toml"));
    assert_eq!(pi.workdir, "/var/tmp/benchpipe/pi");
    assert_eq!(pi.storage[1].path, "/var/tmp/benchpipe/pi/mnt/usb");
    assert!(matches!(&pi.flash, Flash::Dd { device, .. } if device == "/dev/mmcblk0"));
    assert!(matches!(
        ws.boards[&"local".into()].connection,
        Connection::Local
    ));
    let disk = &ws.recipes[&"disk".into()];
    assert_eq!(disk.parser, ParserSpec::named("fio-json").unwrap());
    // One metric is marked primary, so the other is not; xz marks none, so all are.
    assert_eq!(disk.metrics.iter().filter(|m| m.primary).count(), 1);
    assert!(ws.recipes[&"xz".into()].metrics.iter().all(|m| m.primary));
}

/// Metrics keep the order their recipe declares (a TOML table's keys sort by name), with
/// their labels; `[report.labels]` keep theirs, and `[[report.table]]` loads as written.
#[test]
fn metrics_keep_their_order_and_report_labels_and_tables_load() {
    let dir = Scratch::new("config");
    for (path, text) in BASE {
        let text = match path {
            "pipeline/xz.toml" => text.replace(
                "real = { from = \"real\", unit = \"s\", better = \"lower\" }",
                "real = { label = \"real time\", from = \"real\", unit = \"s\", better = \"lower\" }\n\
                 user = { from = \"user\", unit = \"s\", better = \"lower\" }\n\
                 sys = { label = \" system CPU \", from = \"sys\", unit = \"s\", better = \"lower\" }",
            ),
            "scenarios/s.toml" => format!(
                "{text}\n[report.labels]\nboard = {{ \"pi\" = \"Pi 4\", \"local*\" = \"this machine\", \"*\" = \"other\" }}\n\
                 metric = {{ \"xz.user\" = \"user CPU\" }}\n\
                 [[report.table]]\ntitle = \"Disk\"\ncolumns = [\"disk.random_write\", \"xz.sys\"]\n\
                 labels = {{ \"xz.sys\" = \"sys\" }}\nrows = [\"board\"]\npivot = \"storage\"\n"
            ),
            _ => text.to_string(),
        };
        dir.write(path, text);
    }
    let ws = check::load(&dir, &[dir.join("scenarios/s.toml")]).unwrap_or_else(|e| panic!("{e}"));
    let xz = &ws.recipes[&"xz".into()];
    let metrics: Vec<(&str, &str)> = xz
        .metrics
        .iter()
        .map(|m| (m.name.as_str(), m.label()))
        .collect();
    assert_eq!(
        metrics,
        [
            ("real", "real time"),
            ("user", "user"),
            ("sys", "system CPU")
        ]
    );
    let r = &ws.scenarios[0].report;
    let boards: Vec<(&str, &str)> = r.labels.axes[&benchpipe::model::Axis::Board]
        .iter()
        .map(|(g, l)| (g.as_str(), l.as_str()))
        .collect();
    assert_eq!(
        boards,
        [("pi", "Pi 4"), ("local*", "this machine"), ("*", "other")],
        "first match wins, so the file's order is kept"
    );
    assert_eq!(r.labels.metric(&"xz".into(), "user"), Some("user CPU"));
    let t = &r.tables[0];
    assert_eq!(t.title, "Disk");
    let columns: Vec<(&str, &str, Option<&str>)> = t
        .columns
        .iter()
        .map(|c| (c.test.as_str(), c.metric.as_str(), c.label.as_deref()))
        .collect();
    assert_eq!(
        columns,
        [("disk", "random_write", None), ("xz", "sys", Some("sys"))]
    );
    assert_eq!(t.rows, Some(vec![benchpipe::model::Axis::Board]));
    assert_eq!(t.pivot, Some(benchpipe::model::Axis::Storage));
}

/// (file, text to replace, replacement, expected `file:line:col`, expected message part).
const MISTAKES: &[(&str, &str, &str, &str, &str)] = &[
    // Unknown keys, in each kind of file, pointed at the key.
    (
        "boards/pi.toml",
        "arch =",
        "arhc =",
        "boards/pi.toml:2:1",
        "did you mean `arch`?",
    ),
    (
        "pipeline/xz.toml",
        "timeout =",
        "timout =",
        "pipeline/xz.toml:10:1",
        "unknown key `timout`",
    ),
    (
        "scenarios/s.toml",
        "order =",
        "ordr =",
        "scenarios/s.toml:27:1",
        "did you mean `order`?",
    ),
    (
        "scenarios/s.toml",
        "{ board = \"local\"",
        "{ bord = \"local\"",
        "scenarios/s.toml:20:14",
        "unknown key `bord`",
    ),
    // Undefined names.
    (
        "scenarios/s.toml",
        "board = [\"pi\",",
        "board = [\"pj\",",
        "scenarios/s.toml:16:10",
        "did you mean `pi`?",
    ),
    (
        "scenarios/s.toml",
        "image = [\"installed\",",
        "image = [\"instaled\",",
        "scenarios/s.toml:15:10",
        "did you mean `installed`?",
    ),
    (
        "scenarios/s.toml",
        "test = [\"xz\",",
        "test = [\"xzz\",",
        "scenarios/s.toml:19:9",
        "unknown test `xzz`",
    ),
    (
        "scenarios/s.toml",
        "\"local*\"]",
        "\"turing-*\"]",
        "scenarios/s.toml:16:16",
        "available boards: `local`, `pi`",
    ),
    (
        "scenarios/s.toml",
        "filesystem = [\"as-is\", \"ext4-plain\"]",
        "filesystem = [\"as-is\", \"ext4\"]",
        "scenarios/s.toml:18:24",
        "unknown filesystem `ext4`",
    ),
    (
        "scenarios/s.toml",
        "storage = [\"usb\",",
        "storage = [\"ubs\",",
        "scenarios/s.toml:17:12",
        "did you mean `usb`?",
    ),
    (
        "scenarios/s.toml",
        "board = [\"pi\", \"local*\"]",
        "board = [\"pi\", \"pi\"]",
        "scenarios/s.toml:16:16",
        "listed twice",
    ),
    (
        "scenarios/s.toml",
        "[filesystems.ext4-plain]",
        "[filesystems.as-is]\nkind = \"ext4\"\n[filesystems.ext4-plain]",
        "scenarios/s.toml:11:14",
        "built in",
    ),
    // Boards.
    (
        "boards/pi.toml",
        "name = \"usb\"",
        "name = \"sd\"",
        "boards/pi.toml:20:8",
        "storage `sd` is declared twice",
    ),
    (
        "boards/pi.toml",
        "user = \"pi\"",
        "user = \"pi\"\npassword = \"hunter2\"",
        "boards/pi.toml:7:1",
        "password_env",
    ),
    (
        "boards/pi.toml",
        "device = \"/dev/mmcblk0\"\n\n[[",
        "device = \"/dev/sda\"\n\n[[",
        "boards/pi.toml:11:10",
        "role is scratch",
    ),
    (
        "boards/pi.toml",
        "method = \"dd\"",
        "method = \"ddd\"",
        "boards/pi.toml:9:10",
        "did you mean `dd`?",
    ),
    (
        "boards/pi.toml",
        "role = \"boot\"",
        "role = \"os\"",
        "boards/pi.toml:15:8",
        "expected `boot` or `scratch`",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "local = true\n[ssh]",
        "boards/pi.toml:4:9",
        "not both",
    ),
    (
        "boards/pi.toml",
        "host = \"10.0.0.2\"",
        "host = \"10.0.0.2\"\nport = 99999999999",
        "boards/pi.toml:6:8",
        "expected 1 to 65535",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "[[health]]\nname = \"disk\"\ncommand = \"  \"\n\n[ssh]",
        "boards/pi.toml:6:11",
        "`command` must not be empty",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "[[health]]\nname = \"disk\"\ncommand = \"true\"\ntimeout = \"2h\"\n\n[ssh]",
        "boards/pi.toml:7:11",
        "at most 1h",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "[[health]]\nname = \"disk\"\ncommnd = \"true\"\n\n[ssh]",
        "boards/pi.toml:6:1",
        "commnd",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "labgrid = { coordinator = \"lab:20408\", place = \"\" }\n\n[ssh]",
        "boards/pi.toml:4:48",
        "`place` must not be empty",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "labgrid = { coordinator = \"lab:20408\", place = \"+tok\" }\n\n[ssh]",
        "boards/pi.toml:4:48",
        "a labgrid place's exact name",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "labgrid = { coordinator = \"lab\", place = \"rpi\" }\n\n[ssh]",
        "boards/pi.toml:4:27",
        "`coordinator` must be HOST:PORT",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "labgrid = { coordinator = \"lab:0\", place = \"rpi\" }\n\n[ssh]",
        "boards/pi.toml:4:27",
        "no valid port",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "labgrid = { coordinator = \"lab:20408\", place = \"rpi\", wiat = \"1m\" }\n\n[ssh]",
        "boards/pi.toml:4:55",
        "did you mean `wait`?",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "labgrid = { coordinator = \"lab:20408\", place = \"rpi\", wait = \"forever\" }\n\n[ssh]",
        "boards/pi.toml:4:62",
        "bad duration `forever`",
    ),
    (
        "boards/pi.toml",
        "[ssh]",
        "labgrid = { place = \"rpi\" }\n\n[ssh]",
        "boards/pi.toml:4:11",
        "missing required key `coordinator`",
    ),
    // Recipes.
    (
        "pipeline/xz.toml",
        "timeout = \"30m\"",
        "timeout = \"30 minutes\"",
        "pipeline/xz.toml:10:11",
        "expected a whole number and a unit",
    ),
    (
        "pipeline/xz.toml",
        "parse = \"time\"",
        "parse = \"fio\"",
        "pipeline/xz.toml:9:9",
        "unknown parser `fio`",
    ),
    (
        "pipeline/xz.toml",
        "xz -c {{ corpus_mib }}",
        "xz -c {{ corpus_mb }}",
        "pipeline/xz.toml:8:",
        "unknown template variable `corpus_mb`",
    ),
    (
        "pipeline/xz.toml",
        "xz -c {{ corpus_mib }}",
        "xz -c {{ corpus_mib }",
        "pipeline/xz.toml:8:11",
        "bad command template",
    ),
    (
        "pipeline/xz.toml",
        "corpus_mib = 8",
        "corpus_mib = 8\nrun = 1",
        "pipeline/xz.toml:6:1",
        "hide the built-in",
    ),
    (
        "pipeline/xz.toml",
        "cd {{ workdir }}",
        "cd {{ dir }}",
        "pipeline/xz.toml:8:",
        "uses_storage = false",
    ),
    (
        "pipeline/xz.toml",
        "better = \"lower\"",
        "better = \"less\"",
        "pipeline/xz.toml:13:",
        "expected `higher` or `lower`",
    ),
    (
        "pipeline/disk.toml",
        "[metrics]\nrandom_read = { from = \"jobs[jobname=randread].read.bw_bytes\", unit = \"B/s\", better = \"higher\", primary = true }\nrandom_write = { from = \"jobs[jobname=randwrite].write.bw_bytes\", unit = \"B/s\", better = \"higher\" }\n",
        "",
        "pipeline/disk.toml:7:1",
        "no `[metrics]`",
    ),
    // Scenario values.
    (
        "scenarios/s.toml",
        "sha256 = \"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"\n",
        "",
        "scenarios/s.toml:6:1",
        "missing sha256",
    ),
    (
        "scenarios/s.toml",
        "sha256 = \"0123456789abcdef0123456789abcdef",
        "sha256 = \"0123456789abcdef0123456789abcdeg",
        "scenarios/s.toml:8:10",
        "expected 64 hexadecimal digits",
    ),
    (
        "scenarios/s.toml",
        "[images.installed]\ninstalled = true",
        "[images.installed]\ninstalled = true\npath = \"x.img\"",
        "scenarios/s.toml:3:1",
        "more than one source",
    ),
    (
        "scenarios/s.toml",
        "until_below = \"50C\"",
        "until_below = \"50F\"",
        "scenarios/s.toml:23:28",
        "like `50C`",
    ),
    (
        "scenarios/s.toml",
        "until_below = \"50C\"",
        "until_below = \"idle+five\"",
        "scenarios/s.toml:23:28",
        "\"idle+5C\"",
    ),
    (
        "scenarios/s.toml",
        "cooldown = { until_below",
        "idle = { load_below = 0.5, for = \"30 s\" }\ncooldown = { until_below",
        "scenarios/s.toml:23:34",
        "bad duration `30 s`",
    ),
    (
        "scenarios/s.toml",
        "max = \"15m\"",
        "max = \"15min\"",
        "scenarios/s.toml:23:41",
        "bad duration `15min`",
    ),
    (
        "scenarios/s.toml",
        "target = \"2%\"",
        "target = \"2\"",
        "scenarios/s.toml:25:38",
        "like `2%`",
    ),
    (
        "scenarios/s.toml",
        "min = 3, max = 10",
        "min = 5, max = 2",
        "scenarios/s.toml:25:25",
        "`max` (2) is less than `min` (5)",
    ),
    (
        "scenarios/s.toml",
        "min = 3,",
        "min = 0,",
        "scenarios/s.toml:25:16",
        "expected a whole number from 1",
    ),
    (
        "scenarios/s.toml",
        "confidence = 0.95",
        "confidence = 95",
        "scenarios/s.toml:26:14",
        "between 0 and 1",
    ),
    (
        "scenarios/s.toml",
        "size = \"32M\"",
        "sise = \"32M\"",
        "scenarios/s.toml:30:1",
        "did you mean `size`?",
    ),
    (
        "scenarios/s.toml",
        "size = \"32M\"",
        "size = 32",
        "scenarios/s.toml:30:8",
        "is a string",
    ),
    (
        "scenarios/s.toml",
        "[params.disk]",
        "[params.dsik]",
        "scenarios/s.toml:29:9",
        "did you mean `disk`?",
    ),
    (
        "scenarios/s.toml",
        "metric = \"disk.random_read\"",
        "metric = \"disk.random_reed\"",
        "scenarios/s.toml:33:10",
        "did you mean `random_read`?",
    ),
    (
        "scenarios/s.toml",
        "baseline = { storage = \"usb\" }",
        "baseline = { storage = \"usb4\" }",
        "scenarios/s.toml:34:24",
        "matches nothing",
    ),
    // Missing keys: at the top level the whole file is meant, in a table the table.
    (
        "boards/pi.toml",
        "model = \"Raspberry Pi 4\"\n",
        "",
        "boards/pi.toml: missing required key `model`",
        "model",
    ),
    (
        "boards/pi.toml",
        "host = \"10.0.0.2\"\n",
        "",
        "boards/pi.toml:4:1",
        "missing required key `host`",
    ),
    (
        "pipeline/xz.toml",
        "parse = \"time\"\n",
        "",
        "pipeline/xz.toml:7:1",
        "missing required key `parse`",
    ),
    // Recipes with two sides: what each side needs, services' ready waits, facts.
    (
        "pipeline/xz.toml",
        "[params]",
        "[[services]]\nname = \"s\"\non = \"controller\"\ncommand = \"sleep 9\"\n\n[needs]\napt = [\"xz-utils\"]\n\n[params]",
        "pipeline/xz.toml:10:7",
        "split it into `[needs.board]` and `[needs.controller]`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[needs.controller]\ncommands = [\"nginx\"]\n\n[params]",
        "pipeline/xz.toml:4:1",
        "`[needs.controller]`, but no step or service of this recipe runs on the controller",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[needs]\ncommands = [\"xz\"]\n[needs.board]\napt = [\"xz-utils\"]\n\n[params]",
        "pipeline/xz.toml:5:12",
        "mixes flat `apt`/`commands` with `[needs.board]`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[needs.board]\npackages = [\"xz-utils\"]\n\n[params]",
        "pipeline/xz.toml:5:1",
        "unknown key `packages`; expected one of `apt`, `apt_non_free`, `dnf`, `apk`, `pacman`, `commands`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[facts]\nxz = { command = \"xz --version\", side = \"board\" }\n\n[params]",
        "pipeline/xz.toml:5:",
        "unknown key `side`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[needs.bord]\napt = [\"xz-utils\"]\n\n[params]",
        "pipeline/xz.toml:4:8",
        "unknown key `bord`; expected one of `apt`, `apt_non_free`, `dnf`, `apk`, `pacman`, `commands`, `board`, `controller`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[[services]]\nname = \"s\"\ncommand = \"sleep 9\"\nready = \"true\"\nready_timeout = \"5 parsecs\"\n\n[params]",
        "pipeline/xz.toml:8:17",
        "bad `ready_timeout`: bad duration `5 parsecs`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[[services]]\nname = \"s\"\ncommand = \"sleep 9\"\nready = \"true\"\nready_timeout = \"2h\"\n\n[params]",
        "pipeline/xz.toml:8:17",
        "expected more than 0 s and at most 1 h",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[[services]]\nname = \"s\"\ncommand = \"sleep 9\"\nready_timeout = \"1m\"\n\n[params]",
        "pipeline/xz.toml:7:17",
        "`ready_timeout` without `ready`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[facts]\nxz = \"cat '{{ workdir }}/v'\"\n\n[params]",
        "pipeline/xz.toml:5:12",
        "is inside single quotes",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[facts]\nxz = \"xz --version {{ dir }}\"\n\n[params]",
        "pipeline/xz.toml:5:23",
        "unknown template variable `dir`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[facts]\n\"x z\" = \"xz --version\"\n\n[params]",
        "pipeline/xz.toml:5:1",
        "bad fact name `x z`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[facts]\nxz = { on = \"moon\", command = \"xz --version\" }\n\n[params]",
        "pipeline/xz.toml:5:13",
        "unknown side `moon`",
    ),
    (
        "pipeline/xz.toml",
        "[params]",
        "[facts]\nxz = 5\n\n[params]",
        "pipeline/xz.toml:5:6",
        "expected a command, or a table like { on = \"controller\"",
    ),
    // TOML syntax, and a file that cannot be read.
    (
        "scenarios/s.toml",
        "title = \"Study\"",
        "title = \"Study",
        "scenarios/s.toml:1:",
        "invalid basic string",
    ),
    (
        "boards/pi.toml",
        "arch = \"aarch64\"",
        "arch = aarch64",
        "boards/pi.toml:2:",
        "string values must be quoted",
    ),
    (
        "boards/bad name.toml",
        "",
        "model = \"x\"\nlocal = true\n",
        "boards/bad name.toml",
        "bad board name",
    ),
];

#[test]
fn each_mistake_is_reported_at_its_position() {
    let mut failures = Vec::new();
    for (file, from, to, location, message) in MISTAKES {
        match load_with(file, from, to) {
            Ok(_) => failures.push(format!("{file}: {from:?} -> {to:?}: loaded without error")),
            Err(text) => {
                if !text.contains(location) || !text.contains(message) {
                    failures.push(format!(
                        "{file}: {from:?} -> {to:?}: expected `{location}` and `{message}` in:\n{text}"
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        MISTAKES.len(),
        failures.join("\n\n")
    );
}

#[test]
fn all_mistakes_are_reported_together() {
    let dir = Scratch::new("config");
    for (path, text) in BASE {
        dir.write(path, text);
    }
    // Three independent mistakes in three files: one load reports all of them.
    dir.write("boards/pi.toml", PI.replace("arch =", "arhc ="));
    dir.write("pipeline/xz.toml", XZ.replace("\"30m\"", "\"30\""));
    dir.write("scenarios/s.toml", SCENARIO.replace("\"2%\"", "\"2\""));
    let err = check::load(&dir, &[dir.join("scenarios/s.toml")]).expect_err("mistakes");
    let text = err.to_string();
    assert_eq!(err.0.len(), 3, "{text}");
    assert!(text.contains("3 errors"), "{text}");
    // The broken board and recipe are not reported a second time as unknown.
    assert!(
        !text.contains("unknown board") && !text.contains("unknown test"),
        "{text}"
    );
}

#[test]
fn every_unknown_key_in_one_file_is_reported() {
    let err = load_with(
        "boards/pi.toml",
        "arch = \"aarch64\"",
        "arhc = \"aarch64\"\ncolour = \"red\"",
    )
    .expect_err("two unknown keys");
    assert!(
        err.contains("boards/pi.toml:2:1") && err.contains("`arhc`"),
        "{err}"
    );
    assert!(
        err.contains("boards/pi.toml:3:1") && err.contains("`colour`"),
        "{err}"
    );
    // Inside an array of tables too.
    let err = load_with(
        "boards/pi.toml",
        "role = \"boot\"",
        "role = \"boot\"\nsize = 1\nspeed = 2",
    )
    .expect_err("two unknown keys in [[storage]]");
    assert!(err.contains("`size`") && err.contains("`speed`"), "{err}");
}

#[test]
fn a_syntax_error_is_told_alone_at_the_bracket_left_open() {
    // One missing `]` made the parser's recovery report 20 errors on the lines after it.
    let err = load_with(
        "scenarios/s.toml",
        "test = [\"xz\", \"disk\"]",
        "test = [\"xz\", \"disk\"",
    )
    .expect_err("a missing `]`");
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    assert!(err.ends_with("1 error in input files"), "{err}");
    assert!(
        err.contains("this array is never closed: a `]` is missing"),
        "{err}"
    );
    let line = SCENARIO
        .lines()
        .position(|l| l.starts_with("test = ["))
        .expect("the matrix's test line")
        + 1;
    assert!(err.contains(&format!("scenarios/s.toml:{line}:8")), "{err}");
    // In a board file the scenario uses: that file's one error, and no echo of it
    // elsewhere (no unknown board, storage or test).
    let err = load_with(
        "boards/pi.toml",
        "arch = \"aarch64\"",
        "arch = [\"aarch64\"",
    )
    .expect_err("a missing `]` in a board");
    assert_eq!(err.matches("error:").count(), 1, "{err}");
    assert!(err.contains("boards/pi.toml:2:8"), "{err}");
    // Two mistakes in one file: the first is told, and the file's checks end there.
    let err = load_with(
        "boards/pi.toml",
        "arch = \"aarch64\"",
        "arch = aarch64\nmemory = 4 GiB",
    )
    .expect_err("two syntax errors");
    assert!(err.contains("boards/pi.toml:2:8"), "{err}");
    assert_eq!(err.matches("error:").count(), 1, "{err}");
}

#[test]
fn a_board_or_recipe_given_as_a_scenario_is_named_as_such() {
    let dir = Scratch::new("config");
    for (path, text) in BASE {
        dir.write(path, text);
    }
    let check = |file: &str| {
        check::load(&dir, &[dir.join(file)])
            .expect_err(file)
            .to_string()
    };
    // It gave one "unknown key" error per top-level key, with no hint.
    let err = check("boards/pi.toml");
    assert!(
        err.contains(
            "this is a board file (it has [ssh], [[storage]] and `model`), not a scenario"
        ),
        "{err}"
    );
    assert!(!err.contains("unknown key"), "{err}");
    assert!(err.ends_with("1 error in input files"), "{err}");
    let err = check("pipeline/xz.toml");
    assert!(err.contains("this is a recipe (it has [run]"), "{err}");
    assert!(!err.contains("unknown key"), "{err}");
    // The reverse: a scenario left in pipeline/ fails as what it is.
    dir.write("pipeline/study.toml", SCENARIO);
    let err = check("scenarios/s.toml");
    assert!(
        err.contains("pipeline/study.toml: this is a scenario (it has `title`, [matrix] and [images]), not a recipe"),
        "{err}"
    );
    assert!(!err.contains("unknown key"), "{err}");
    // A scenario with a misspelt key of its own is still a scenario.
    std::fs::remove_file(dir.join("pipeline/study.toml")).unwrap();
    dir.write("scenarios/s.toml", SCENARIO.replace("[method]", "[metod]"));
    let err = check("scenarios/s.toml");
    assert!(err.contains("unknown key `metod`"), "{err}");
}

#[test]
fn missing_directories_and_files_are_clear_errors() {
    let dir = Scratch::new("config");
    let err = check::load(&dir, &[dir.join("scenarios/nope.toml")]).expect_err("empty");
    let text = err.to_string();
    assert!(text.contains("cannot read the board directory"), "{text}");
    // No pipeline/ is no mistake: the built-in recipes stand in.
    assert!(!text.contains("recipe directory"), "{text}");
    assert!(text.contains("nope.toml: cannot read"), "{text}");

    std::fs::create_dir_all(dir.join("boards")).expect("mkdir");
    let text = config::load_boards(&dir)
        .expect_err("no boards")
        .to_string();
    assert!(text.contains("no boards"), "{text}");
}

/// The lab scenario names boards that only `benchpipe lab up` writes: load it beside a
/// board file shaped like the lab's, in a copy of the project.
#[test]
fn the_lab_scenario_loads_against_lab_shaped_boards_and_says_what_to_do_without_them() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = Scratch::new("config");
    for sub in ["boards", "pipeline", "scenarios"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    for f in [
        "pipeline/xz.toml",
        "pipeline/disk-4k.toml",
        "pipeline/iperf3-board-to-controller.toml",
        "pipeline/iperf3-controller-to-board.toml",
        "pipeline/hdparm.toml",
        "pipeline/dd-write.toml",
        "scenarios/lab.toml",
        "boards/localhost.toml",
    ] {
        std::fs::copy(repo.join(f), dir.join(f)).unwrap();
    }
    let err = check::load(&dir, &[dir.join("scenarios/lab.toml")])
        .expect_err("no lab boards yet")
        .to_string();
    assert!(err.contains("no board matches `lab-*`"), "{err}");
    assert!(err.contains("benchpipe lab up"), "{err}");

    std::fs::write(
        dir.join("boards/lab-1.toml"),
        "model = \"benchpipe virtual lab board\"\nworkdir = \"/var/tmp/benchpipe/lab-1\"\n\
         [ssh]\nhost = \"198.18.0.2\"\nport = 22\nuser = \"root\"\n\
         [[storage]]\nname = \"disk1\"\nrole = \"scratch\"\ndevice = \"/dev/loop9\"\n\
         path = \"/var/tmp/benchpipe/lab-1/disk1\"\n",
    )
    .unwrap();
    let ws = check::load(&dir, &[dir.join("scenarios/lab.toml")]).unwrap_or_else(|e| panic!("{e}"));
    let plan = benchpipe::plan::expand(&ws, &ws.scenarios[0]);
    assert_eq!(
        plan.cells.len(),
        8,
        "xz, disk-4k and dd-write on ext4 and btrfs-lzo, hdparm once on the device, iperf3 up and down"
    );
}

#[test]
fn committed_examples_load() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Every committed scenario but the lab's (lab.toml, lab-*.toml), whose boards
    // `benchpipe lab up` writes: the clone's own (localhost), and the seed workspace's
    // (examples/seeds/, with no pipeline/: the built-in recipes).
    let scenarios_of = |root: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(root.join("scenarios"))
            .expect("scenarios dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .filter(|p| {
                let stem = p.file_stem().unwrap().to_string_lossy();
                stem != "lab" && !stem.starts_with("lab-")
            })
            .collect()
    };
    let scenarios = scenarios_of(repo);
    assert!(!scenarios.is_empty(), "localhost: {scenarios:?}");
    let ws = check::load(repo, &scenarios).unwrap_or_else(|e| panic!("{e}"));
    assert!(ws.boards.contains_key(&"localhost".into()));
    assert!(ws.recipes.contains_key(&"xz".into()) && ws.recipes.contains_key(&"disk-4k".into()));
    let local = ws
        .scenarios
        .iter()
        .find(|s| s.name == "localhost")
        .expect("localhost scenario");
    assert_eq!(local.file, PathBuf::from("scenarios/localhost.toml"));
    assert!(local.file.is_relative());
    assert!(ws.boards.values().all(|b| b.file.is_relative()));
    config::load_boards(repo).unwrap_or_else(|e| panic!("{e}"));
    config::load_recipes(repo).unwrap_or_else(|e| panic!("{e}"));

    let seeds = repo.join("examples/seeds");
    let files = scenarios_of(&seeds);
    assert_eq!(files.len(), 4, "the seed studies: {files:?}");
    assert!(
        !seeds.join("pipeline").exists(),
        "the seeds use the built-in recipes"
    );
    assert_eq!(config::find_root(&files[..1]), seeds);
    let ws = check::load(&seeds, &files).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ws.scenarios.len(), 4);
    assert!(ws.boards.contains_key(&"dramble-pi4-1".into()));
}

#[test]
fn garbage_input_never_panics() {
    let garbage: Vec<Vec<u8>> = vec![
        vec![0xff, 0xfe, 0x00, 0x01, 0x80],
        b"\x00\x00\x00".to_vec(),
        b"[[[[[[[[".to_vec(),
        b"model = 99999999999999999999999999".to_vec(),
        b"title = \"x\"\n[matrix]\nimage = [1, 2]".to_vec(),
        "title = \"\u{00e9}\u{1F600}\"\n[matrix]\nboard = [\"\u{1F600}*\"]\nimage=[]\ntest=[]\n"
            .into(),
        b"[method]\nruns = { min = -9223372036854775808, max = 9223372036854775807 }".to_vec(),
        b"[method]\nconfidence = nan\ncooldown = { until_below = \"1e308C\" }".to_vec(),
        "a = \"\u{1F600}\"\n\u{1F600} = 1".into(),
        b"x = 1\r\ny = \"\r\n".to_vec(),
        vec![b'['; 100_000],
        [b"a = ".to_vec(), vec![b'['; 100_000]].concat(),
        [b"a = ".to_vec(), b"{ b = ".repeat(50_000)].concat(),
        [b"a = ".to_vec(), vec![b'['; 5_000], vec![b']'; 5_000]].concat(),
    ];
    for (i, bytes) in garbage.iter().enumerate() {
        for file in ["boards/pi.toml", "pipeline/xz.toml", "scenarios/s.toml"] {
            let dir = Scratch::new("config");
            for (path, text) in BASE {
                dir.write(path, text);
            }
            dir.write(file, bytes);
            let result = check::load(&dir, &[dir.join("scenarios/s.toml")]);
            let err = result.expect_err(&format!("garbage {i} in {file} loaded"));
            // Rendering walks the source lines and carets: it must not panic either.
            let _ = err.to_string();
        }
    }
}

/// The injection the shell-context check closes, shown with a real shell: a string
/// value inside single quotes in a template runs as code, while the same value as a
/// bare word stays one literal argument. `check` refuses the quoted form.
#[test]
fn a_value_inside_quotes_ran_as_code_in_a_real_shell_and_check_refuses_it() {
    let dir = Scratch::new("config");
    let sh = |command: &str| {
        std::process::Command::new("/bin/sh")
            .args(["-c", command])
            .output()
            .expect("run /bin/sh")
    };
    // Inside single quotes a value's own quotes close the template's; inside double
    // quotes its single quotes are literal and `$(...)` runs. As a bare word, the same
    // values stay one literal argument.
    for (n, (template, value)) in [
        ("echo '{{ name }}'", "x; touch {proof}"),
        ("echo \"{{ name }}\"", "$(touch {proof})"),
    ]
    .into_iter()
    .enumerate()
    {
        let proof = dir.join(format!("pwned-{n}"));
        let value = value.replace("{proof}", &proof.display().to_string());
        let mut vars = benchpipe::bench::Vars::new();
        vars.set("name", value.as_str());
        let bare = benchpipe::bench::render("echo {{ name }}", &vars).unwrap();
        let out = sh(&bare);
        assert!(!proof.exists(), "{bare}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), value);
        let quoted = benchpipe::bench::render(template, &vars).unwrap();
        sh(&quoted);
        assert!(proof.exists(), "`{quoted}` was expected to run code");
    }

    for (template, context) in [
        ("echo '{{ size }}'", "single quotes"),
        ("echo \\\"{{ size }}\\\"", "double quotes"),
        ("echo $(( {{ size }} ))", "shell arithmetic"),
        ("echo `echo {{ size }}`", "backticks"),
    ] {
        let err = load_with(
            "pipeline/disk.toml",
            "command = \"rm -f {{ dir }}/f\"",
            &format!("command = \"{template}\""),
        )
        .expect_err(template);
        assert!(err.contains("pipeline/disk.toml:17:"), "{template}: {err}");
        assert!(err.contains(context), "{template}: {err}");
    }
    // Numbers cannot break out of any context: the committed xz recipe's arithmetic
    // on an integer parameter stays accepted.
    load_with(
        "pipeline/disk.toml",
        "command = \"rm -f {{ dir }}/f\"",
        "command = \"echo $(( {{ runtime }} * 2 )) \\\"{{ runtime }}\\\" '{{ runtime }}'\"",
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_broken_board_no_scenario_uses_is_a_warning_and_one_it_uses_an_error() {
    let dir = Scratch::new("config");
    for (path, text) in BASE {
        dir.write(path, text);
    }
    dir.write(
        "boards/broken.toml",
        "model = \"x\"\nlocal = true\nworkdir = \"/\"\n",
    );
    let ws = check::load(&dir, &[dir.join("scenarios/s.toml")])
        .unwrap_or_else(|e| panic!("an unused broken board blocked the load:\n{e}"));
    // The base scenario's `debian` image is flashed without first-boot preparation:
    // that warning is another test's.
    let warnings: Vec<&String> = ws
        .warnings
        .iter()
        .filter(|w| !w.contains("firstboot]`"))
        .collect();
    assert_eq!(warnings.len(), 1, "{:?}", ws.warnings);
    assert!(
        warnings[0].starts_with("warning: `workdir` cannot be `/`")
            && warnings[0].contains("boards/broken.toml:3:11")
            && warnings[0].contains("not used"),
        "{}",
        warnings[0]
    );
    dir.write(
        "scenarios/s.toml",
        SCENARIO.replace("board = [\"pi\", \"local*\"]", "board = [\"pi\", \"b*\"]"),
    );
    let err = check::load(&dir, &[dir.join("scenarios/s.toml")]).expect_err("used");
    let text = err.to_string();
    assert!(
        text.contains("error: `workdir` cannot be `/`") && text.contains("boards/broken.toml:3:11"),
        "{text}"
    );
}

#[test]
fn the_cell_limit_is_counted_before_expanding_and_max_cells_raises_it() {
    let dir = Scratch::new("config");
    for (path, text) in BASE {
        dir.write(path, text);
    }
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let ok = run(&["check", "scenarios/s.toml", "--max-cells", "100"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    for command in ["check", "plan", "apply", "report"] {
        let out = run(&[command, "scenarios/s.toml", "--max-cells", "3"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {err}");
        assert!(
            err.contains("scenarios/s.toml:14:1")
                && err.contains("more than the limit of 3")
                && err.contains("image 2 x board 2 x storage 2 x filesystem 2 x test 2"),
            "{command}: {err}"
        );
    }
}

#[test]
fn each_side_gets_its_own_needs_and_a_flat_needs_means_the_one_side_a_recipe_runs_on() {
    use benchpipe::model::Side;
    use std::time::Duration;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ws = check::load(root, &[root.join("scenarios/localhost.toml")])
        .unwrap_or_else(|e| panic!("{e}"));
    let up = &ws.recipes[&"iperf3-board-to-controller".into()];
    // ss is the board's ready check: the controller neither needs nor installs it.
    assert_eq!(up.needs[&Side::Board].commands, ["iperf3", "ss"]);
    assert_eq!(up.needs[&Side::Controller].commands, ["iperf3"]);
    assert_eq!(
        up.needs[&Side::Controller].packages_for(benchpipe::model::PackageManager::Apt),
        ["iperf3"]
    );
    let on: Vec<(&str, Side)> = up.facts.iter().map(|f| (f.name.as_str(), f.on)).collect();
    assert_eq!(
        on,
        [
            ("iperf3", Side::Board),
            ("iperf3_controller", Side::Controller)
        ]
    );
    assert_eq!(
        up.services[0].ready_timeout,
        Duration::from_secs(10),
        "the default"
    );
    let xz = &ws.recipes[&"xz".into()];
    assert_eq!(xz.needs.keys().collect::<Vec<_>>(), [&Side::Board]);
    assert_eq!(xz.facts[0].command, "xz --version | head -n1");

    // A recipe that runs only on the controller: its flat [needs] is the controller's.
    let ws = load_with(
        "pipeline/xz.toml",
        "[run]\ncommand",
        "[needs]\ncommands = [\"xz\"]\n\n[[services]]\nname = \"s\"\non = \"controller\"\n\
         command = \"sleep 9\"\nready = \"true\"\nready_timeout = \"5m\"\n\n[run]\non = \"controller\"\ncommand",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let xz = &ws.recipes[&"xz".into()];
    assert_eq!(xz.needs.keys().collect::<Vec<_>>(), [&Side::Controller]);
    assert_eq!(xz.services[0].ready_timeout, Duration::from_secs(300));
}

#[test]
fn image_expectations_load_into_the_model_and_file_urls_are_accepted() {
    let ws = load_with(
        "scenarios/s.toml",
        r#"url = "https://example.org/debian.img.xz"
sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
expect = { os_release = { ID = "debian" } }"#,
        r#"url = "file:///srv/images/debian%2012.img.xz"
sha256 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
expect = { os_release = { ID = "debian", VERSION_ID = "12" }, uname_m = "aarch64" }"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let image = &ws.scenarios[0].images[&"debian".into()];
    assert_eq!(image.expect.uname_m.as_deref(), Some("aarch64"));
    let keys: Vec<(&str, &str)> = image
        .expect
        .os_release
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(keys, [("ID", "debian"), ("VERSION_ID", "12")]);
    let installed = &ws.scenarios[0].images[&"installed".into()];
    assert_eq!(installed.expect, benchpipe::model::Expectations::default());
}

#[test]
fn each_kind_of_meter_loads_with_its_scale_and_idle_window() {
    use benchpipe::model::{Meter, MeterSource};
    let meter = |table: &str| -> Meter {
        let ws = load_with(
            "boards/pi.toml",
            "[[storage]]",
            &format!("[meter]\n{table}\n[[storage]]"),
        )
        .unwrap_or_else(|e| panic!("{table}: {e}"));
        ws.boards[&"pi".into()].meter.clone().expect("a meter")
    };
    let m = meter("file = \"/sys/class/hwmon/hwmon2/power1_input\"");
    assert_eq!(
        m.source,
        MeterSource::File {
            path: "/sys/class/hwmon/hwmon2/power1_input".into(),
            scale: 1e-6
        }
    );
    assert_eq!(m.idle, std::time::Duration::from_secs(5));
    let m = meter(
        "current = \"/sys/a/curr1_input\"\nvoltage = \"/sys/a/in1_input\"\nvoltage_unit = \"V\"\nidle = \"0s\"",
    );
    assert!(matches!(m.source, MeterSource::Pair { scale, .. } if (scale - 1e-3).abs() < 1e-15));
    assert!(m.idle.is_zero());
    assert_eq!(meter("pmic = true").source, MeterSource::Pmic);
    let m = meter(
        "command = \"curl -fsS --max-time 2 http://{{ board }}-plug/rpc/Switch.GetStatus?id=0\"\njson = \"apower\"",
    );
    assert!(matches!(&m.source, MeterSource::Command { json: Some(j), .. } if j == "apower"));
    assert!(!m.source.on_board());
    // No meter: nothing is read.
    let ws = load_with("scenarios/s.toml", "", "").unwrap();
    assert!(ws.boards[&"pi".into()].meter.is_none());
    let err = load_with(
        "boards/pi.toml",
        "[[storage]]",
        "[meter]\nidle = \"1m\"\npmic = true\n[[storage]]",
    )
    .unwrap_err();
    assert!(
        err.contains("`idle` `1m` is out of range: expected 0"),
        "{err}"
    );
}

#[test]
fn derived_metrics_load_with_their_defaults_and_are_never_primary() {
    use benchpipe::model::{Better, Derived};
    let ws = load_with(
        "pipeline/xz.toml",
        "real = { from = \"real\", unit = \"s\", better = \"lower\" }",
        "real = { from = \"real\", unit = \"s\", better = \"lower\" }\n\
         real_per_w = { per_watt = \"real\" }\nenergy = { joules = true, unit = \"kJ\" }",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let r = &ws.recipes[&"xz".into()];
    let m = |n: &str| r.metrics.iter().find(|m| m.name == n).unwrap().clone();
    assert_eq!(
        m("real_per_w").derive,
        Some(Derived::PerWatt("real".into()))
    );
    assert_eq!(
        (m("real_per_w").unit.as_str(), m("real_per_w").better),
        ("s/W", Better::Lower)
    );
    assert_eq!(
        (m("energy").unit.as_str(), m("energy").derive),
        ("kJ", Some(Derived::Joules))
    );
    assert_eq!(r.primary_metrics(), vec!["real".to_string()]);
    let err = load_with(
        "pipeline/xz.toml",
        "real = { from = \"real\", unit = \"s\", better = \"lower\" }",
        "real = { from = \"real\", unit = \"s\", better = \"lower\" }\nj = { joules = true, from = \"real\" }\nbare = { unit = \"s\" }",
    )
    .unwrap_err();
    assert!(
        err.contains("`from` does not apply to derived metric `j`"),
        "{err}"
    );
    assert!(
        err.contains("metric `bare` needs `from` and `better`"),
        "{err}"
    );
}
