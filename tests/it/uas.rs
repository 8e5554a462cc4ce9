//! Storage facts and the UAS comparison: `lsusb -t` parsed on real outputs of both
//! formats, a lab board's loop scratch device described from the real sysfs, and the
//! UAS board-state step on a lab board whose USB storage is a FAKE sysfs tree (USB
//! storage cannot exist in the lab): the lab's power cycle reads the board's kernel
//! command line file and points the fake interface's driver link accordingly.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use benchpipe::apply::{self, Event, Progress, StepStatus};
use benchpipe::storage::lsusb::{self, UsbInterface};
use benchpipe::store::Store;

use crate::lab::{Lab, bp, text};

fn data(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/lsusb")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A mass-storage interface as the tests compare it: device, interface number, driver,
/// speed and USB id.
type Storage = (String, u32, Option<String>, String, Option<String>);

fn storage_of(t: &lsusb::UsbTree) -> Vec<Storage> {
    t.mass_storage()
        .map(|i: &UsbInterface| {
            (
                i.device.clone(),
                i.interface,
                i.driver.clone(),
                i.speed.clone(),
                i.id.clone(),
            )
        })
        .collect()
}

#[test]
fn lsusb_t_old_two_digit_format_gives_each_disks_driver_and_speed() {
    let seed = lsusb::parse(&data("old-2digit-pi4-uas-seed.txt")).unwrap();
    assert_eq!(seed.buses.len(), 1);
    assert_eq!(
        (seed.buses[0].bus, seed.buses[0].speed.as_str()),
        (2, "5000M")
    );
    assert_eq!(
        storage_of(&seed),
        [("2-1".into(), 0, Some("uas".into()), "5000M".into(), None)]
    );
    let hub = lsusb::parse(&data("old-2digit-pi4-hub.txt")).unwrap();
    assert_eq!(hub.buses.iter().map(|b| b.bus).collect::<Vec<_>>(), [2, 1]);
    // Nested: the HID devices sit on port 3 and 4 of the hub on port 1 of bus 1.
    let hid: Vec<&str> = hub
        .interfaces
        .iter()
        .filter(|i| i.class == "Human Interface Device")
        .map(|i| i.device.as_str())
        .collect();
    assert_eq!(hid, ["1-1.3", "1-1.3", "1-1.4"]);
    assert_eq!(
        hub.device("1-1.3").map(|i| i.interface).collect::<Vec<_>>(),
        [0, 1]
    );
    assert_eq!(hub.interfaces[0].speed, "5000M");
    assert_eq!(hub.device("1-1.4").next().unwrap().speed, "1.5M");
    // `-v` on the old format: ID lines with descriptions, a disk at 5000M on a 10000M bus.
    let tv = lsusb::parse(&data("old-2digit-tv-seagate.txt")).unwrap();
    assert_eq!(
        storage_of(&tv),
        [(
            "4-1".into(),
            0,
            Some("uas".into()),
            "5000M".into(),
            Some("0bc2:231a".into())
        )]
    );
    assert_eq!(tv.device("3-10").count(), 2);
}

#[test]
fn lsusb_t_new_three_digit_format_with_ids_and_nested_hubs() {
    let jms = lsusb::parse(&data("new-3digit-id-jms578.txt")).unwrap();
    assert_eq!(
        storage_of(&jms),
        [
            (
                "1-2".into(),
                0,
                Some("usb-storage".into()),
                "480M".into(),
                Some("ffff:5678".into())
            ),
            (
                "2-1".into(),
                0,
                Some("uas".into()),
                "5000M".into(),
                Some("152d:0578".into())
            ),
        ]
    );
    // `Port 010` is port 10, not a string.
    assert_eq!(jms.device("1-10").count(), 2);
    let pi = lsusb::parse(&data("new-3digit-pi-argon.txt")).unwrap();
    assert_eq!(
        storage_of(&pi),
        [("2-2".into(), 0, Some("uas".into()), "5000M".into(), None)]
    );
    let nested = lsusb::parse(&data("new-3digit-nested-hubs.txt")).unwrap();
    assert_eq!(
        storage_of(&nested),
        [(
            "3-6.3.1".into(),
            0,
            Some("usb-storage".into()),
            "12M".into(),
            Some("2e8a:0003".into())
        )]
    );
    // `Driver=[none]` is no driver; a hub three levels down has its full port path.
    let unbound = nested.device("3-6.3.1").find(|i| i.interface == 1).unwrap();
    assert_eq!(unbound.driver, None);
    assert!(nested.device("2-3.3.4").next().is_some());
    assert_eq!(nested.buses.len(), 4);
}

/// Records walked steps and the power cycles' phase lines.
#[derive(Default)]
struct Recorder {
    lines: Mutex<Vec<String>>,
}

impl Progress for Recorder {
    fn event(&self, e: Event<'_>) {
        let line = match e {
            Event::Step { step, status, .. } => {
                let status = match status {
                    StepStatus::Ran => "ran".to_string(),
                    StepStatus::Done => "done".to_string(),
                    StepStatus::Skipped { reason } => format!("skipped: {reason}"),
                    StepStatus::Failed { cause } => format!("FAILED: {cause}"),
                };
                format!("{} [{status}]", step.action.label())
            }
            Event::Phase { phase, .. } if phase == "power cycle" => "* power cycle".into(),
            _ => return,
        };
        self.lines.lock().unwrap().push(line);
    }
}

/// The real transports, with the boards' sysfs read from a FAKE tree.
struct FakeSysfs(String);

impl benchpipe::transport::Connector for FakeSysfs {
    fn board(
        &self,
        board: &benchpipe::model::Board,
    ) -> Result<Box<dyn benchpipe::transport::Transport>, benchpipe::transport::TransportError>
    {
        benchpipe::transport::RealConnector.board(board)
    }
    fn controller(&self) -> Box<dyn benchpipe::transport::Transport> {
        benchpipe::transport::RealConnector.controller()
    }
    fn sysfs(&self) -> &str {
        &self.0
    }
}

const ID: &str = "174c:55aa";
const CMDLINE: &str =
    "console=serial0,115200 console=tty1 root=PARTUUID=4e639091-02 rootfstype=ext4 rootwait\n";

/// A FAKE sysfs tree in which the lab disk `loop` hangs off USB interface 2-1:1.0 of a
/// 174c:55aa bridge at 5000M; returns the root and the interface's directory.
fn fake_usb_sysfs(dir: &Path, loop_name: &str) -> (PathBuf, PathBuf) {
    fake_usb_disk(dir, loop_name, "2-1", ID, "uas")
}

/// Adds to the FAKE sysfs tree under `dir` the lab disk `loop` on USB port `port`'s
/// interface :1.0 of bridge `id` at 5000M, bound to `driver`; returns the root and the
/// interface's directory.
fn fake_usb_disk(
    dir: &Path,
    loop_name: &str,
    port: &str,
    id: &str,
    driver: &str,
) -> (PathBuf, PathBuf) {
    let root = dir.join("fake-sys");
    let usb = root.join("devices/platform/fake-xhci/usb2").join(port);
    let iface = usb.join(format!("{port}:1.0"));
    let scsi = iface.join("host0/target0:0:0/0:0:0:0");
    let disk = scsi.join("block").join(loop_name);
    std::fs::create_dir_all(disk.join("queue")).unwrap();
    for d in ["uas", "usb-storage"] {
        std::fs::create_dir_all(root.join("bus/usb/drivers").join(d)).unwrap();
    }
    let w = |p: PathBuf, t: &str| std::fs::write(p, t).unwrap();
    let (vendor, product) = id.split_once(':').unwrap();
    w(disk.join("size"), "65536\n");
    w(disk.join("queue/rotational"), "0\n");
    w(disk.join("queue/scheduler"), "[mq-deadline] none\n");
    w(scsi.join("model"), "SA400S37240G    \n");
    w(scsi.join("vendor"), "KINGSTON\n");
    w(iface.join("bInterfaceNumber"), "00\n");
    w(usb.join("speed"), "5000\n");
    w(usb.join("idVendor"), &format!("{vendor}\n"));
    w(usb.join("idProduct"), &format!("{product}\n"));
    w(usb.join("version"), " 3.10\n");
    std::os::unix::fs::symlink("../../../0:0:0:0", disk.join("device")).unwrap();
    for link in ["block", "class/block"] {
        let at = root.join(link);
        std::fs::create_dir_all(&at).unwrap();
        std::os::unix::fs::symlink(&disk, at.join(loop_name)).unwrap();
    }
    bind(&iface, driver);
    (root, iface)
}

/// Points the FAKE interface's driver link at `driver`, as the kernel binds one.
fn bind(iface: &Path, driver: &str) {
    let link = iface.join("driver");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(format!("../../../../../bus/usb/drivers/{driver}"), link).unwrap();
}

/// A lab board with a FAKE USB disk: `[boot] cmdline`, two storages on its loop disk
/// (`ssd-bot` with `uas = false`, `ssd-uas` with `uas = true`), and a power cycle that
/// runs the lab's, then (with `fake_follows`) sets the fake driver link from the
/// command line, as the kernel would at boot.
fn uas_project(lab: &Lab, fake_follows: bool) -> (PathBuf, PathBuf, PathBuf) {
    let board = lab.board(0);
    let disk = &board.disks[0];
    let loop_name = disk.device.rsplit('/').next().unwrap();
    let (sys, iface) = fake_usb_sysfs(&lab.root, loop_name);
    let firmware = lab.root.join("firmware");
    std::fs::create_dir_all(&firmware).unwrap();
    let cmdline = firmware.join("cmdline.txt");
    std::fs::write(&cmdline, CMDLINE).unwrap();
    let text = std::fs::read_to_string(&board.board_file).unwrap();
    let exe = env!("CARGO_BIN_EXE_benchpipe");
    let text = text.replace(
        "cycle = \"benchpipe lab power",
        &format!("cycle = \"{exe} lab power"),
    );
    let lab_cycle = text
        .lines()
        .find_map(|l| l.strip_prefix("cycle = "))
        .map(|v| {
            toml::from_str::<toml::Value>(&format!("v = {v}")).unwrap()["v"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .expect("the lab board has a [power] cycle");
    let follow = format!(
        "; if grep -q 'usb-storage.quirks=[^ ]*{ID}:u' {c}; then d=usb-storage; else d=uas; fi; ln -sfn ../../../../../bus/usb/drivers/$d {i}/driver",
        c = cmdline.display(),
        i = iface.display()
    );
    let cycle = format!(
        "{lab_cycle}{}",
        if fake_follows { follow.as_str() } else { "" }
    );
    let mut text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("cycle = ") {
                format!("cycle = '''{cycle}'''")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let _ = write!(
        text,
        "\n[boot]\ncmdline = \"{}\"\n\n[[storage]]\nname = \"ssd-bot\"\nrole = \"scratch\"\ndevice = \"{dev}\"\nuas = false\n\n\
         [[storage]]\nname = \"ssd-uas\"\nrole = \"scratch\"\ndevice = \"{dev}\"\nuas = true\nusb_id = \"174C:55AA\"\n",
        cmdline.display(),
        dev = disk.device
    );
    std::fs::write(&board.board_file, text).unwrap();
    write_drv_scenario(lab, "uas", board.name.as_str(), ["ssd-uas", "ssd-bot"]);
    (sys, cmdline, iface)
}

/// A recipe writing a small file on its storage, and `scenarios/NAME.toml` running it
/// once on `board`'s two `storage`s, ext4 each.
fn write_drv_scenario(lab: &Lab, name: &str, board: &str, storage: [&str; 2]) {
    for d in ["pipeline", "scenarios"] {
        std::fs::create_dir_all(lab.root.join(d)).unwrap();
    }
    std::fs::write(
        lab.root.join("pipeline/drv.toml"),
        "description = \"a file on the disk\"\n[run]\ncommand = '''dd if=/dev/zero of={{ dir }}/f bs=64k count=4 conv=fsync 2>/dev/null && printf '{\"v\": 1}\\n' '''\nparse = \"json\"\n[metrics]\nv = { from = \"v\", unit = \"x\", better = \"higher\" }\n",
    )
    .unwrap();
    std::fs::write(
        lab.root.join(format!("scenarios/{name}.toml")),
        format!(
            "title = \"{name}\"\n[images.installed]\ninstalled = true\n[filesystems.ext4]\nkind = \"ext4\"\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{board}\"]\nstorage = [\"{}\", \"{}\"]\n\
             filesystem = [\"ext4\"]\ntest = [\"drv\"]\n[method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n",
            storage[0], storage[1]
        ),
    )
    .unwrap();
}

struct Applied {
    steps: Vec<String>,
    outcome: apply::Outcome,
    /// Each cell's facts.json and failure.json, by storage name.
    facts: Vec<(String, serde_json::Value, Option<String>)>,
}

fn apply_fake(lab: &Lab, sys: &Path) -> Applied {
    apply_fake_scenario(lab, sys, "scenarios/uas.toml")
}

fn apply_fake_scenario(lab: &Lab, sys: &Path, scenario: &str) -> Applied {
    let root = &lab.root;
    let ws = benchpipe::check::load(root, &[root.join(scenario)]).expect("loads");
    let cells: Vec<_> = benchpipe::cli::plans(&ws)
        .into_iter()
        .flat_map(|(_, p)| p.cells)
        .collect();
    assert_eq!(cells.len(), 2);
    let store = Store::open(root.join("results")).unwrap();
    let recorder = Recorder::default();
    let connector = FakeSysfs(sys.display().to_string());
    let outcome = apply::apply_with(
        &ws,
        &cells,
        &store,
        &recorder,
        &AtomicBool::new(false),
        &connector,
    )
    .unwrap();
    let mut facts = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap() {
        let dir = e.unwrap().path();
        let Ok(cell) = std::fs::read_to_string(dir.join("cell.json")) else {
            continue;
        };
        let cell: serde_json::Value = serde_json::from_str(&cell).unwrap();
        let f = std::fs::read_to_string(dir.join("facts.json"))
            .map_or(serde_json::Value::Null, |t| {
                serde_json::from_str(&t).unwrap()
            });
        let failure = std::fs::read_to_string(dir.join("failure.json")).ok();
        facts.push((
            cell["address"]["storage"].as_str().unwrap().to_string(),
            f,
            failure,
        ));
    }
    facts.sort_by(|a, b| a.0.cmp(&b.0));
    Applied {
        steps: recorder.lines.into_inner().unwrap(),
        outcome,
        facts,
    }
}

#[test]
fn fake_usb_sysfs_uas_off_and_on_reboot_between_verify_each_driver_and_restore_the_cmdline() {
    let Some(lab) = Lab::up(1) else { return };
    let (sys, cmdline, _) = uas_project(&lab, true);
    let root = &lab.root;
    // The plan shows the board-state steps in order, touching nothing.
    let dry = bp(root, &["apply", "--dry-run", "scenarios/uas.toml"]);
    let dry_text = text(&dry);
    assert!(dry.status.success(), "{dry_text}");
    let a = dry_text
        .find("USB driver of ssd-bot: usb-storage")
        .expect(&dry_text);
    let b = dry_text
        .find("USB driver of ssd-uas: uas")
        .expect(&dry_text);
    let c = dry_text
        .find("restore the kernel command line")
        .expect(&dry_text);
    assert!(a < b && b < c, "{dry_text}");

    let w = apply_fake(&lab, &sys);
    assert!(
        w.outcome.failed.is_empty(),
        "{:?}\n{}",
        w.outcome.failed,
        w.steps.join("\n")
    );
    assert_eq!(w.outcome.completed, 2, "{}", w.steps.join("\n"));
    let steps: Vec<&str> = w
        .steps
        .iter()
        .map(String::as_str)
        .filter(|l| {
            l.contains("USB driver")
                || l.contains("power cycle")
                || l.contains("restore")
                || l.starts_with("measure")
        })
        .collect();
    assert_eq!(
        steps,
        [
            "* power cycle",
            "USB driver of ssd-bot: usb-storage (kernel command line, power cycle, verify) [ran]",
            "measure 1 run(s), blocked [ran]",
            "* power cycle",
            "USB driver of ssd-uas: uas (kernel command line, power cycle, verify) [ran]",
            "measure 1 run(s), blocked [ran]",
            // The last group left the command line as it was: nothing to reboot for.
            "restore the kernel command line (power cycle if it changed) [done]",
        ],
        "{}",
        w.steps.join("\n")
    );
    // Each cell's facts say which driver it was measured under.
    let driver = |i: usize| w.facts[i].1["storage"]["usb"]["driver"].clone();
    assert_eq!(w.facts[0].0, "ssd-bot");
    assert_eq!(driver(0), "usb-storage");
    assert_eq!(driver(1), "uas");
    let usb = &w.facts[1].1["storage"]["usb"];
    assert_eq!(
        (usb["speed"].as_str(), usb["id"].as_str()),
        (Some("5000M"), Some(ID))
    );
    assert_eq!(w.facts[1].1["storage"]["model"], "SA400S37240G");
    assert_eq!(w.facts[1].1["storage"]["size_bytes"], 65536 * 512);
    // The command line is the original again, byte for byte, and no backup is left.
    assert_eq!(std::fs::read_to_string(&cmdline).unwrap(), CMDLINE);
    assert!(!Path::new(&format!("{}.benchpipe-backup", cmdline.display())).exists());

    // Measured again, the uas cell finds the board already in its state: no edit, no
    // power cycle.
    let uas_cell = std::fs::read_dir(root.join("results"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|d| {
            std::fs::read_to_string(d.join("cell.json")).is_ok_and(|t| t.contains("\"ssd-uas\""))
        })
        .unwrap();
    std::fs::remove_dir_all(uas_cell).unwrap();
    let again = apply_fake(&lab, &sys);
    assert_eq!(again.outcome.completed, 1, "{}", again.steps.join("\n"));
    assert!(
        again
            .steps
            .iter()
            .any(|l| l.starts_with("USB driver of ssd-uas: uas") && l.ends_with("[done]")),
        "{}",
        again.steps.join("\n")
    );
    assert!(
        !again.steps.iter().any(|l| l == "* power cycle"),
        "{}",
        again.steps.join("\n")
    );
    assert_eq!(std::fs::read_to_string(&cmdline).unwrap(), CMDLINE);
}

#[test]
fn fake_usb_sysfs_a_driver_that_does_not_change_fails_those_cells_with_the_cause() {
    let Some(lab) = Lab::up(1) else { return };
    // The fake ignores the command line: the device stays under `uas`.
    let (sys, cmdline, _) = uas_project(&lab, false);
    let w = apply_fake(&lab, &sys);
    assert_eq!(w.outcome.completed, 1, "{}", w.steps.join("\n"));
    assert_eq!(w.outcome.failed.len(), 1);
    let (address, cause) = &w.outcome.failed[0];
    assert_eq!(address.storage.as_ref().unwrap().as_str(), "ssd-bot");
    let cause = cause.to_string();
    assert!(
        cause.contains(&format!(
            "the USB device {ID} runs under `uas`, not usb-storage"
        )),
        "{cause}"
    );
    let failure = w.facts[0].2.as_deref().expect("failure.json of ssd-bot");
    assert!(failure.contains("not usb-storage"), "{failure}");
    // The uas cell still ran, and the command line is back as it was.
    assert_eq!(w.facts[1].1["storage"]["usb"]["driver"], "uas");
    assert_eq!(std::fs::read_to_string(&cmdline).unwrap(), CMDLINE);

    // Through the binary the real sysfs is read: the loop device is no USB device, so
    // nothing is edited and the cell fails saying so.
    let out = bp(&lab.root, &["apply", "--no-report", "scenarios/uas.toml"]);
    let err = text(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is not a USB device"), "{err}");
    assert_eq!(std::fs::read_to_string(&cmdline).unwrap(), CMDLINE);
}

/// The seed's UASP comparison as the seed made it: two cases, one without UASP and one
/// with, each its own USB device (here FAKE sysfs devices on the lab board's two loop
/// disks: USB storage cannot exist in the lab), declared as two storages with the
/// `driver` each must run under. Both measure with no command line edit and no power
/// cycle, each cell's facts saying its driver; with the cases swapped, each cell fails
/// saying which driver it found.
#[test]
fn fake_usb_sysfs_two_cases_with_and_without_uasp_each_measure_under_its_declared_driver() {
    let Some(lab) = Lab::up_with_options(1, |o| o.disks_per_board = 2) else {
        return;
    };
    let board = lab.board(0);
    let loop_of = |i: usize| {
        board.disks[i]
            .device
            .rsplit('/')
            .next()
            .unwrap()
            .to_string()
    };
    let (sys, uas_iface) = fake_usb_disk(&lab.root, &loop_of(0), "2-1", ID, "uas");
    let (_, bot_iface) = fake_usb_disk(&lab.root, &loop_of(1), "2-2", "174c:5106", "usb-storage");
    let mut file = std::fs::read_to_string(&board.board_file).unwrap();
    let _ = write!(
        file,
        "\n[[storage]]\nname = \"case-bot\"\nrole = \"scratch\"\ndevice = \"{}\"\n\
         model = \"Kingston SSD, Inateck case without UASP\"\ndriver = \"usb-storage\"\n\n\
         [[storage]]\nname = \"case-uas\"\nrole = \"scratch\"\ndevice = \"{}\"\n\
         model = \"Kingston SSD, Inateck case with UASP\"\ndriver = \"uas\"\n",
        board.disks[1].device, board.disks[0].device
    );
    std::fs::write(&board.board_file, file).unwrap();
    write_drv_scenario(&lab, "cases", board.name.as_str(), ["case-bot", "case-uas"]);
    let check = bp(&lab.root, &["check", "scenarios/cases.toml"]);
    assert!(check.status.success(), "{}", text(&check));

    let w = apply_fake_scenario(&lab, &sys, "scenarios/cases.toml");
    assert!(
        w.outcome.failed.is_empty(),
        "{:?}\n{}",
        w.outcome.failed,
        w.steps.join("\n")
    );
    assert_eq!(w.outcome.completed, 2, "{}", w.steps.join("\n"));
    // No board state: the cases are what they are.
    assert!(
        !w.steps
            .iter()
            .any(|l| l.contains("power cycle") || l.contains("USB driver")),
        "{}",
        w.steps.join("\n")
    );
    assert_eq!(w.facts[0].0, "case-bot");
    let usb = |i: usize| w.facts[i].1["storage"]["usb"].clone();
    assert_eq!(
        (usb(0)["driver"].as_str(), usb(0)["id"].as_str()),
        (Some("usb-storage"), Some("174c:5106"))
    );
    assert_eq!(
        (usb(1)["driver"].as_str(), usb(1)["id"].as_str()),
        (Some("uas"), Some(ID))
    );

    // The cases swapped between the ports: neither cell measures the case it names.
    bind(&uas_iface, "usb-storage");
    bind(&bot_iface, "uas");
    std::fs::remove_dir_all(lab.root.join("results")).unwrap();
    let w = apply_fake_scenario(&lab, &sys, "scenarios/cases.toml");
    assert_eq!(w.outcome.completed, 0, "{}", w.steps.join("\n"));
    let mut causes: Vec<String> = w
        .outcome
        .failed
        .iter()
        .map(|(_, c)| c.to_string())
        .collect();
    causes.sort();
    assert_eq!(causes.len(), 2, "{causes:?}");
    assert!(
        causes[0].contains("storage case-bot declares driver `usb-storage`, but its device")
            && causes[0].contains("runs under `uas` (USB 174c:5106)"),
        "{causes:?}"
    );
    assert!(
        causes[1].contains("storage case-uas declares driver `uas`, but its device")
            && causes[1].contains("runs under `usb-storage` (USB 174c:55aa)"),
        "{causes:?}"
    );
}

#[test]
fn a_lab_boards_loop_scratch_device_is_described_from_the_real_sysfs() {
    let Some(lab) = Lab::up(1) else { return };
    let board = lab.board(0);
    let disk = &board.disks[0];
    for d in ["pipeline", "scenarios"] {
        std::fs::create_dir_all(lab.root.join(d)).unwrap();
    }
    std::fs::write(
        lab.root.join("pipeline/touch.toml"),
        "description = \"a file on the disk\"\n[run]\ncommand = '''touch {{ dir }}/f && printf '{\"v\": 1}\\n' '''\nparse = \"json\"\n[metrics]\nv = { from = \"v\", unit = \"x\", better = \"higher\" }\n",
    )
    .unwrap();
    std::fs::write(
        lab.root.join("scenarios/facts.toml"),
        format!(
            "title = \"facts\"\n[images.installed]\ninstalled = true\n[filesystems.ext4]\nkind = \"ext4\"\n\
             [matrix]\nimage = [\"installed\"]\nboard = [\"{}\"]\nstorage = [\"{}\"]\n\
             filesystem = [\"ext4\"]\ntest = [\"touch\"]\n[method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n",
            board.name, disk.name
        ),
    )
    .unwrap();
    let out = bp(&lab.root, &["apply", "--no-report", "scenarios/facts.toml"]);
    assert!(out.status.success(), "{}", text(&out));
    let facts: Vec<serde_json::Value> = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("facts.json")).ok())
        .map(|t| serde_json::from_str(&t).unwrap())
        .collect();
    assert_eq!(facts.len(), 1);
    let s = &facts[0]["storage"];
    let name = disk.device.rsplit('/').next().unwrap();
    assert_eq!(s["device"], disk.device.as_str());
    assert_eq!(s["disk"], name);
    assert_eq!(s["size_bytes"], 64u64 << 20, "{s}");
    assert!(s["rotational"].is_boolean(), "{s}");
    assert!(
        s["scheduler"]
            .as_str()
            .is_some_and(|v| !v.is_empty() && !v.contains('[')),
        "{s}"
    );
    assert!(
        s["backing_file"]
            .as_str()
            .is_some_and(|f| f.ends_with(".img")),
        "{s}"
    );
    // A loop device has no model, serial or USB interface: absent, not an error.
    for absent in ["model", "serial", "usb", "error"] {
        assert!(s.get(absent).is_none(), "{absent}: {s}");
    }
}
