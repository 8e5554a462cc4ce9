//! Integration tests: flashing with dd onto real loop devices, locally and over SSH to
//! lab boards, the refusals that keep dd off the wrong disk, and the lab's power cycle
//! booting what was flashed. They need root; without it they fail loudly.

use crate::lab::sh;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use benchpipe::flash::dd::{self, DdReport};
use benchpipe::flash::{FlashError, Phase, Progress};
use benchpipe::lab::image::{self, Compression, ImageSpec};
use benchpipe::lab::{self, PowerAction};
use benchpipe::transport::local::Local;
use benchpipe::transport::{Transport, TransportError, quote};
use sha2::{Digest, Sha256};

use crate::lab::Lab;

pub(crate) fn need_root() {
    // SAFETY: geteuid has no preconditions.
    assert!(
        unsafe { libc::geteuid() } == 0,
        "FLASH TESTS NEED ROOT for losetup, mount and the lab; they never pass silently"
    );
}

/// A raw lab image `name` in `dir`, whose os-release says `ID=bpflash` and
/// `VERSION_ID=version`, with no first-boot preparation: a lab board that boots it
/// keeps SSH off.
pub(crate) fn bpflash_image(dir: &Path, name: &str, version: &str) -> PathBuf {
    image::build(
        dir,
        name,
        &ImageSpec::new("bpflash", version),
        Compression::None,
    )
    .unwrap()
}

/// `bpflash_image`, its boot partition letting root in with `lab`'s key: the image
/// most flash tests write and boot.
pub(crate) fn bpflash_ready(lab: &Lab, dir: &Path, name: &str, version: &str) -> PathBuf {
    crate::firstboot::lab_ready(
        lab,
        dir,
        name,
        &ImageSpec::new("bpflash", version),
        Compression::None,
    )
}

pub(crate) fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bp-it-flash-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A sparse file on a loop device; unmounted, detached and removed on drop.
struct LoopDisk {
    device: String,
    file: PathBuf,
    mounted: Option<PathBuf>,
}

impl LoopDisk {
    fn new(dir: &Path, name: &str, mib: u64) -> LoopDisk {
        need_root();
        let file = dir.join(format!("{name}.disk"));
        sh(&format!(
            "truncate -s {mib}M {}",
            quote::sh(&file.to_string_lossy())
        ));
        let device = sh(&format!(
            "losetup --find --show {}",
            quote::sh(&file.to_string_lossy())
        ));
        LoopDisk {
            device,
            file,
            mounted: None,
        }
    }

    fn sha256_of_first(&self, bytes: u64) -> String {
        let mut f = std::fs::File::open(&self.device).unwrap();
        let mut buf = vec![0u8; bytes as usize];
        f.read_exact(&mut buf).unwrap();
        hex(&Sha256::digest(&buf))
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        if let Some(m) = &self.mounted {
            let _ = Command::new("umount").arg(m).status();
        }
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// A symlink in /dev to a device, as udev's by-id names are; removed on drop.
struct DevLink(String);

impl DevLink {
    fn new(device: &str, tag: &str) -> DevLink {
        let link = format!("/dev/bp-it-flash-{tag}-{}", std::process::id());
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(device, &link).unwrap();
        DevLink(link)
    }
}

impl Drop for DevLink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut out, x| {
        let _ = write!(out, "{x:02x}");
        out
    })
}

pub(crate) fn file_sha256(p: &Path) -> String {
    hex(&Sha256::digest(std::fs::read(p).unwrap()))
}

/// A reader that must never be read: a refusal comes before any byte is written.
struct Untouchable;

impl Read for Untouchable {
    fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
        panic!("the image was read although the device should have been refused first")
    }
}

fn no_progress(_: Progress) {}

fn flash(
    t: &mut dyn Transport,
    device: &str,
    declared: &[&str],
    image: &Path,
    known_len: bool,
) -> Result<DdReport, FlashError> {
    let len = std::fs::metadata(image).unwrap().len();
    let mut f = std::fs::File::open(image).unwrap();
    dd::write(
        t,
        device,
        declared,
        &mut f,
        known_len.then_some(len),
        &no_progress,
    )
}

fn flash_len(device: &str, image: &Path, len: u64) -> Result<DdReport, FlashError> {
    let mut f = std::fs::File::open(image).unwrap();
    dd::write(
        &mut Local::new(),
        device,
        &[device],
        &mut f,
        Some(len),
        &no_progress,
    )
}

#[test]
fn the_image_helper_makes_an_mbr_with_a_fat_boot_and_an_ext4_root_the_same_bytes_each_time() {
    let dir = scratch("image");
    let spec = ImageSpec::new("bplab", "7");
    let a = image::build(&dir, "a", &spec, Compression::None).unwrap();
    let b = image::build(&dir, "b", &spec, Compression::None).unwrap();
    assert_eq!(std::fs::metadata(&a).unwrap().len(), 8 << 20);
    assert_eq!(file_sha256(&a), file_sha256(&b), "not reproducible");
    let table = sh(&format!("sfdisk -d {}", a.display()));
    assert!(table.contains("label: dos"), "{table}");
    assert!(
        table.contains("start=        2048, size=        4096, type=c")
            && table.contains("start=        6144, size=       10240, type=83"),
        "{table}"
    );
    let boot = sh(&format!(
        "blkid -p -O {} -o value -s TYPE {}",
        image::BOOT_OFFSET,
        a.display()
    ));
    assert_eq!(boot, "vfat");
    // The boot partition is empty: no first-boot declaration.
    let files = sh(&format!(
        "MTOOLS_SKIP_CHECK=1 mdir -b -i {}@@{} ::",
        a.display(),
        image::BOOT_OFFSET
    ));
    assert_eq!(files, "", "{files}");
    let root = format!("{}?offset={}", a.display(), image::ROOT_OFFSET);
    let os_release = sh(&format!(
        "debugfs -R 'cat /etc/os-release' {root} 2>/dev/null"
    ));
    assert!(os_release.contains("ID=bplab\n"), "{os_release}");
    assert!(os_release.contains("VERSION_ID=\"7\""), "{os_release}");
    let other = image::build(&dir, "c", &ImageSpec::new("bplab", "8"), Compression::None).unwrap();
    assert_ne!(file_sha256(&a), file_sha256(&other));
    for (c, decompress) in [
        (Compression::Xz, "xz -dc"),
        (Compression::Gz, "gzip -dc"),
        (Compression::Zstd, "zstd -dcq"),
    ] {
        let packed = image::build(&dir, "p", &spec, c).unwrap();
        assert!(packed.to_string_lossy().ends_with(c.suffix()));
        let sum = sh(&format!("{decompress} {} | sha256sum", packed.display()));
        assert_eq!(&sum[..64], file_sha256(&a), "{c:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lab_image_prints_the_same_sha256_for_the_same_options() {
    let dir = scratch("cli");
    let run = |id: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args(["lab", "image", "img", "--id", id, "--version-id", "3"])
            .args(["--compress", "zstd", "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let first = run("bpcli");
    let path = dir.join("img.img.zst");
    assert_eq!(
        first,
        format!("{}  sha256 {}", path.display(), file_sha256(&path))
    );
    assert_eq!(run("bpcli"), first);
    assert_ne!(run("bpcli2"), first);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dd_writes_a_loop_device_and_verifies_it_by_read_back() {
    let dir = scratch("local");
    let disk = LoopDisk::new(&dir, "target", 32);
    let img = image::build(
        &dir,
        "img",
        &ImageSpec::new("bplocal", "1"),
        Compression::None,
    )
    .unwrap();
    let len = std::fs::metadata(&img).unwrap().len();
    let seen = std::sync::Mutex::new(Vec::new());
    let progress = |p: Progress| seen.lock().unwrap().push(p);
    let mut f = std::fs::File::open(&img).unwrap();
    let report = dd::write(
        &mut Local::new(),
        &disk.device,
        &[disk.device.as_str()],
        &mut f,
        Some(len),
        &progress,
    )
    .unwrap();
    assert_eq!(report.bytes, len);
    assert_eq!(report.sha256, file_sha256(&img));
    assert_eq!(report.device, disk.device);
    assert_eq!(disk.sha256_of_first(len), report.sha256);
    let seen = seen.into_inner().unwrap();
    let last_write = seen.iter().rev().find(|p| p.phase == Phase::Write).unwrap();
    assert_eq!((last_write.bytes, last_write.total), (len, Some(len)));
    assert_eq!(seen.last().unwrap().phase, Phase::Verify);
    // The lab image is partitioned (a FAT boot partition and an ext4 root).
    assert_eq!(
        sh(&format!("blkid -p -o value -s PTTYPE {}", disk.device)),
        "dos"
    );

    // A stream shorter than its declared length (a decompressor that died) fails.
    let err = flash_len(&disk.device, &img, len + 4096).unwrap_err();
    assert!(matches!(err, FlashError::Length { .. }), "{err}");

    // An xz image streamed through a decompressor, its length unknown: same result.
    let xz = image::build(
        &dir,
        "img2",
        &ImageSpec::new("bplocal", "2"),
        Compression::Xz,
    )
    .unwrap();
    let mut child = Command::new("xz")
        .args(["-dc"])
        .arg(&xz)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stream = child.stdout.take().unwrap();
    let report = dd::write(
        &mut Local::new(),
        &disk.device,
        &[disk.device.as_str()],
        &mut stream,
        None,
        &no_progress,
    )
    .unwrap();
    child.wait().unwrap();
    let plain = sh(&format!("xz -dc {} | sha256sum", xz.display()));
    assert_eq!(report.sha256, &plain[..64]);
    assert_eq!(disk.sha256_of_first(report.bytes), report.sha256);
    drop(disk);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The local transport behind a fake faulty link: one byte of the input flips on its
/// way into the command, as a bad cable, card or controller would corrupt it.
struct FakeCorruptingLink(Local);

impl Transport for FakeCorruptingLink {
    fn target(&self) -> String {
        "flaky-link".into()
    }
    fn exec(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdout: &mut dyn std::io::Write,
        stderr: &mut dyn std::io::Write,
    ) -> Result<benchpipe::transport::Exit, TransportError> {
        self.0.exec(command, timeout, stdout, stderr)
    }
    fn exec_input(
        &mut self,
        command: &str,
        timeout: Option<Duration>,
        stdin: &mut dyn Read,
        stdout: &mut dyn std::io::Write,
        stderr: &mut dyn std::io::Write,
    ) -> Result<benchpipe::transport::Exit, TransportError> {
        struct Flip<'a>(&'a mut dyn Read, u64);
        impl Read for Flip<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.read(buf)?;
                let at = 1_000_000u64;
                if self.1 <= at && at < self.1 + n as u64 {
                    buf[(at - self.1) as usize] ^= 0x5a;
                }
                self.1 += n as u64;
                Ok(n)
            }
        }
        self.0
            .exec_input(command, timeout, &mut Flip(stdin, 0), stdout, stderr)
    }
    fn upload(&mut self, local: &Path, remote: &str) -> Result<(), TransportError> {
        self.0.upload(local, remote)
    }
    fn download(&mut self, remote: &str, local: &Path) -> Result<(), TransportError> {
        self.0.download(remote, local)
    }
}

#[test]
fn a_byte_corrupted_on_a_fake_faulty_link_fails_the_read_back() {
    let dir = scratch("corrupt");
    let disk = LoopDisk::new(&dir, "target", 16);
    let img = image::build(
        &dir,
        "img",
        &ImageSpec::new("bpbad", "1"),
        Compression::None,
    )
    .unwrap();
    let d = disk.device.clone();
    let err = flash(&mut FakeCorruptingLink(Local::new()), &d, &[&d], &img, true).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, FlashError::Verify { .. }), "{msg}");
    assert!(msg.contains(&file_sha256(&img)), "{msg}");
    drop(disk);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dd_refuses_an_undeclared_device_and_names_what_a_link_resolves_to() {
    let dir = scratch("undeclared");
    let declared = LoopDisk::new(&dir, "declared", 16);
    let other = LoopDisk::new(&dir, "other", 16);
    let link = DevLink::new(&other.device, "byid");
    let img = image::build(&dir, "img", &ImageSpec::new("x", "1"), Compression::None).unwrap();
    let err = flash(&mut Local::new(), &link.0, &[&declared.device], &img, true).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, FlashError::Refused { .. }), "{msg}");
    assert!(
        msg.contains(&link.0) && msg.contains(&other.device),
        "{msg}"
    );
    assert!(msg.contains(&declared.device), "{msg}");
    assert_eq!(
        other.sha256_of_first(1 << 20),
        hex(&Sha256::digest(vec![0u8; 1 << 20]))
    );
    // Nothing declared: nothing may be written.
    let err = dd::write(
        &mut Local::new(),
        &other.device,
        &[],
        &mut Untouchable,
        None,
        &no_progress,
    )
    .unwrap_err();
    assert!(err.to_string().contains("declares no device"), "{err}");
    // Declared by its link, asked by its node: the same device, accepted.
    let report = flash(&mut Local::new(), &other.device, &[&link.0], &img, true).unwrap();
    assert_eq!(report.device, other.device);
    drop((declared, other, link));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dd_refuses_a_mounted_device_and_an_image_larger_than_the_device() {
    let dir = scratch("mounted");
    let mut disk = LoopDisk::new(&dir, "disk", 16);
    let at = dir.join("mnt");
    std::fs::create_dir_all(&at).unwrap();
    sh(&format!(
        "mkfs.ext4 -q -F {d} && mount {d} {}",
        at.display(),
        d = disk.device
    ));
    disk.mounted = Some(at.clone());
    std::fs::write(at.join("precious"), "keep me").unwrap();
    let d = disk.device.clone();
    let err = dd::write(
        &mut Local::new(),
        &d,
        &[&d],
        &mut Untouchable,
        None,
        &no_progress,
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, FlashError::Refused { .. }), "{msg}");
    assert!(
        msg.contains("is mounted") && msg.contains(&at.to_string_lossy().to_string()),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(at.join("precious")).unwrap(),
        "keep me"
    );
    sh(&format!("umount {}", at.display()));
    disk.mounted = None;

    // Known length: refused before a byte goes out.
    let big = image::build(
        &dir,
        "big",
        &ImageSpec {
            bytes: 24 << 20,
            ..ImageSpec::new("big", "1")
        },
        Compression::None,
    )
    .unwrap();
    let before = disk.sha256_of_first(16 << 20);
    let err = flash(&mut Local::new(), &d, &[&d], &big, true).unwrap_err();
    assert!(matches!(err, FlashError::Refused { .. }), "{err}");
    assert!(err.to_string().contains("larger than the device"), "{err}");
    assert_eq!(
        disk.sha256_of_first(16 << 20),
        before,
        "written although refused"
    );
    // Unknown length (a compressed stream): cut at the device's end, and said so.
    let err = flash(&mut Local::new(), &d, &[&d], &big, false).unwrap_err();
    assert!(matches!(err, FlashError::TooLarge { .. }), "{err}");
    drop(disk);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dd_refuses_the_device_holding_the_running_root() {
    need_root();
    let root = sh("findmnt -no SOURCE /");
    let real = sh(&format!(
        "readlink -f -- {} 2>/dev/null || true",
        quote::sh(&root)
    ));
    if !Path::new(&real).exists()
        || !sh(&format!("test -b {} && echo y || true", quote::sh(&real))).contains('y')
    {
        crate::cannot_run(
            "dd_refuses_the_device_holding_the_running_root",
            &format!("/ is on {root}, not a block device here"),
        );
        return;
    }
    // Untouchable: were the refusal missing, dd would get no byte to write.
    let err = dd::write(
        &mut Local::new(),
        &real,
        &[&real],
        &mut Untouchable,
        None,
        &no_progress,
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, FlashError::Refused { .. }), "{msg}");
    assert!(msg.contains("holds the running system"), "{msg}");
}

fn os_release_over_ssh(t: &mut dyn Transport) -> String {
    t.run("cat /etc/os-release", Some(Duration::from_secs(20)))
        .unwrap()
        .stdout_str()
}

fn cycle(lab: &Lab, i: usize) -> lab::PowerOutcome {
    lab::power_with(
        &lab.root,
        &lab.options,
        lab.board(i).name.as_str(),
        PowerAction::Cycle,
    )
    .unwrap()
}

#[test]
fn over_ssh_dd_flashes_a_lab_boards_boot_disk_and_the_power_cycle_boots_it() {
    let lab = Lab::up(1);
    let board = lab.board(0).clone();
    let boot = board.boot.clone().expect("the lab board has a boot disk");
    let text = std::fs::read_to_string(&board.board_file).unwrap();
    assert!(
        text.contains("method = \"dd\"") && text.contains("role = \"boot\""),
        "{text}"
    );
    let dir = scratch("ssh");
    let img = bpflash_ready(&lab, &dir, "v1", "1");
    let mut t = lab.connect(0);
    let before = os_release_over_ssh(&mut t);
    assert!(!before.contains("ID=bpflash"), "{before}");

    let report = flash(&mut t, &boot.device, &[&boot.device], &img, true).unwrap();
    assert_eq!(report.sha256, file_sha256(&img));
    assert!(report.write_seconds >= 0.0 && report.verify_seconds >= 0.0);
    // Still the old system until it reboots.
    assert!(!os_release_over_ssh(&mut t).contains("ID=bpflash"));
    drop(t);
    let outcome = cycle(&lab, 0);
    assert_eq!(outcome.booted, Some(true), "{outcome:?}");
    let mut t = lab.connect(0);
    let after = os_release_over_ssh(&mut t);
    assert!(
        after.contains("ID=bpflash") && after.contains("VERSION_ID=\"1\""),
        "{after}"
    );
    // The board holds no mount of its boot disk, so it can be flashed through itself again.
    let v2 = bpflash_ready(&lab, &dir, "v2", "2");
    flash(&mut t, &boot.device, &[&boot.device], &v2, true).unwrap();
    drop(t);
    cycle(&lab, 0);
    let mut t = lab.connect(0);
    assert!(os_release_over_ssh(&mut t).contains("VERSION_ID=\"2\""));
    // The controller's own os-release is untouched: the bind mount lives in the board.
    assert!(
        !std::fs::read_to_string("/etc/os-release")
            .unwrap()
            .contains("bpflash")
    );

    // A mount of the image's root partition the board's shell sees: the whole disk is
    // refused over SSH, naming where its partition is mounted. The lab attaches the disk
    // without partition scanning, so the test adds the partitions itself.
    let mnt = format!("{}/mnt-user", board.workdir);
    let dev = &boot.device;
    let mounted = t
        .run(
            &format!("partx -a {dev} && mkdir -p {mnt} && mount -o ro {dev}p2 {mnt}"),
            None,
        )
        .unwrap();
    assert!(mounted.exit.success(), "{mounted:?}");
    let err = dd::write(
        &mut t,
        &boot.device,
        &[&boot.device],
        &mut Untouchable,
        None,
        &no_progress,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("is mounted") && err.to_string().contains(&mnt),
        "{err}"
    );
    // The same disk holding the board's /boot: refused as the running system.
    let mounted = t
        .run(&format!("umount {mnt} && mount -o ro {dev}p2 /boot"), None)
        .unwrap();
    assert!(mounted.exit.success(), "{mounted:?}");
    let err = dd::write(
        &mut t,
        &boot.device,
        &[&boot.device],
        &mut Untouchable,
        None,
        &no_progress,
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("holds the running system"),
        "{err}"
    );
    t.run(&format!("umount /boot; partx -d {dev}"), None)
        .unwrap();
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_flashed_image_can_bring_a_new_host_key_or_never_come_back() {
    let lab = Lab::up(1);
    let boot = lab.board(0).boot.clone().unwrap();
    let dir = scratch("keys");
    let rekey = ImageSpec {
        new_host_key: true,
        ..ImageSpec::new("bprekey", "1")
    };
    let img = crate::firstboot::lab_ready(&lab, &dir, "rekey", &rekey, Compression::None);
    let mut t = lab.connect(0);
    flash(&mut t, &boot.device, &[&boot.device], &img, true).unwrap();
    drop(t);
    assert_eq!(cycle(&lab, 0).booted, Some(true));
    let r = benchpipe::transport::ssh::SshTransport::connect_with(
        &lab.board(0).name,
        &lab.target(0),
        Duration::from_secs(5),
        crate::lab::options(),
    );
    assert!(
        matches!(r, Err(TransportError::HostKey { .. })),
        "{:?}",
        r.err()
    );

    // The lab's key is stale now; trust the new one to flash an image that never boots.
    benchpipe::transport::ssh::trust_with(
        &lab.board(0).name,
        &lab.target(0),
        Duration::from_secs(5),
        &crate::lab::options(),
        &benchpipe::transport::ssh::Accept::Offered,
    )
    .unwrap();
    let dead = ImageSpec {
        no_boot: true,
        ..ImageSpec::new("bpdead", "1")
    };
    let img = image::build(&dir, "dead", &dead, Compression::None).unwrap();
    let mut t = lab.connect(0);
    flash(&mut t, &boot.device, &[&boot.device], &img, true).unwrap();
    drop(t);
    let outcome = cycle(&lab, 0);
    assert_eq!(outcome.booted, Some(false), "{outcome:?}");
    assert!(outcome.note.unwrap_or_default().contains("does not boot"));
    let r = benchpipe::transport::ssh::SshTransport::connect_with(
        &lab.board(0).name,
        &lab.target(0),
        Duration::from_secs(2),
        crate::lab::options(),
    );
    assert!(
        matches!(r, Err(TransportError::Unreachable { .. })),
        "{:?}",
        r.err()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn over_ssh_exec_input_streams_input_intact_and_stops_feeding_a_command_that_ended() {
    let lab = Lab::up(1);
    let mut t = lab.connect(0);
    let data = crate::xorshift_bytes(24 << 20, 99);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = t
        .exec_input(
            "sha256sum; echo fed >&2",
            None,
            &mut data.as_slice(),
            &mut out,
            &mut err,
        )
        .unwrap();
    assert!(exit.success(), "{exit}");
    assert_eq!(
        String::from_utf8_lossy(&out)[..64],
        hex(&Sha256::digest(&data))
    );
    assert_eq!(err, b"fed\n");
    // A command that reads a little and exits: its exit, not a hang on endless input.
    let exit = t
        .exec_input(
            "head -c 1000 >/dev/null; exit 5",
            None,
            &mut std::io::repeat(1).take(1 << 30),
            &mut Vec::new(),
            &mut Vec::new(),
        )
        .unwrap();
    assert_eq!(exit.code, Some(5));
    // A timeout ends the feeding and the command.
    let r = t.exec_input(
        "cat >/dev/null",
        Some(Duration::from_millis(500)),
        &mut std::io::repeat(0),
        &mut Vec::new(),
        &mut Vec::new(),
    );
    assert!(matches!(r, Err(TransportError::Timeout { .. })), "{r:?}");
    assert!(t.run("true", None).unwrap().exit.success());
}

/// A lab board's project for `apply`: its [power] cycle runs this build's benchpipe,
/// a recipe that reports the booted image's VERSION_ID, and a scenario flashing `images`
/// (name, file, VERSION_ID) each with its expectations.
pub(crate) fn flash_project(lab: &Lab, images: &[(&str, &Path, &str)]) -> String {
    let board = lab.board(0);
    let name = board.name.to_string();
    let text = std::fs::read_to_string(&board.board_file).unwrap();
    // The test binary built the lab: the power cycle names the benchpipe on PATH.
    let text = text.replace(
        "cycle = \"benchpipe lab power",
        &format!("cycle = \"{} lab power", env!("CARGO_BIN_EXE_benchpipe")),
    );
    assert!(text.contains(env!("CARGO_BIN_EXE_benchpipe")), "{text}");
    std::fs::write(&board.board_file, text).unwrap();
    for d in ["pipeline", "scenarios"] {
        std::fs::create_dir_all(lab.root.join(d)).unwrap();
    }
    std::fs::write(
        lab.root.join("pipeline/osver.toml"),
        r#"description = "the booted image's VERSION_ID, as a number"
uses_storage = false
[run]
command = '''. /etc/os-release && printf '{"version": %s}\n' "$VERSION_ID"'''
parse = "json"
[metrics]
version = { from = "version", unit = "VERSION_ID", better = "higher" }
"#,
    )
    .unwrap();
    let mut tables = String::new();
    let mut names = Vec::new();
    for (image, file, version) in images {
        let _ = write!(
            tables,
            "[images.{image}]\npath = \"{}\"\nsha256 = \"{}\"\n\
             [images.{image}.expect]\nos_release = {{ ID = \"bpflash\", VERSION_ID = \"{version}\" }}\n",
            file.display(),
            file_sha256(file)
        );
        names.push(format!("\"{image}\""));
    }
    std::fs::write(
        lab.root.join("scenarios/lab-flash.toml"),
        format!(
            "title = \"flash\"\n{tables}[matrix]\nimage = [{}]\nboard = [\"{name}\"]\n\
             test = [\"osver\"]\n[method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 2, max = 2 }}\n",
            names.join(", ")
        ),
    )
    .unwrap();
    name
}

pub(crate) fn apply(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_benchpipe"))
        .current_dir(root)
        .args(crate::scripted(args))
        .output()
        .unwrap()
}

/// Every stored sample's `version` metric of the cells of `image`.
pub(crate) fn versions(root: &Path, image: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root.join("results")).unwrap() {
        let dir = e.unwrap().path();
        let Ok(cell) = std::fs::read_to_string(dir.join("cell.json")) else {
            continue;
        };
        let cell: serde_json::Value = serde_json::from_str(&cell).unwrap();
        if cell["address"]["image"] != image {
            continue;
        }
        for line in std::fs::read_to_string(dir.join("samples.jsonl"))
            .unwrap_or_default()
            .lines()
        {
            let s: serde_json::Value = serde_json::from_str(line).unwrap();
            out.push(s["metrics"]["version"].as_f64().unwrap());
        }
    }
    out
}

#[test]
fn apply_flashes_each_image_once_verifies_its_boot_and_measures_it_on_its_own_image() {
    need_root();
    let lab = Lab::up(1);
    let dir = scratch("apply");
    let v1 = bpflash_ready(&lab, &dir, "v1", "1");
    let v2 = crate::firstboot::lab_ready(
        &lab,
        &dir,
        "v2",
        &ImageSpec::new("bpflash", "2"),
        Compression::Xz,
    );
    let name = flash_project(&lab, &[("v1", &v1, "1"), ("v2", &v2, "2")]);

    // The plan says which board is reflashed with which image, touching nothing.
    let dry = apply(
        &lab.root,
        &["apply", "--dry-run", "scenarios/lab-flash.toml"],
    );
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{text}");
    assert_eq!(text.matches("REFLASH with").count(), 2, "{text}");

    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("verified by read-back"), "{err}");
    // Each image's cell was measured on that image, as the board itself reports it.
    assert_eq!(versions(&lab.root, "v1"), [1.0, 1.0]);
    assert_eq!(versions(&lab.root, "v2"), [2.0, 2.0]);
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lab.root.join(format!("results/boards/{name}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(state["image"], "v2");
    assert_eq!(state["identity"], format!("sha256:{}", file_sha256(&v2)));
    let list = apply(&lab.root, &["boards", "list"]);
    let list = String::from_utf8_lossy(&list.stdout);
    let sha = file_sha256(&v2);
    assert!(
        list.lines().any(|l| l.starts_with(&name)
            && l.contains(&format!(
                "image: v2 (sha256:{}), verified in session",
                &sha[..12]
            ))),
        "{list}"
    );
    // Each cell's facts say what was written: the xz file's digest and the content's.
    let facts: Vec<serde_json::Value> = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("facts.json")).ok())
        .map(|t| serde_json::from_str(&t).unwrap())
        .collect();
    let v2_facts = facts
        .iter()
        .find(|f| f["flashed"]["file_sha256"] == file_sha256(&v2))
        .expect("v2's cell records its flash");
    assert_eq!(v2_facts["flashed"]["written_bytes"], 8 << 20);
    assert_eq!(
        v2_facts["flashed"]["written_sha256"],
        v2_facts["flashed"]["uncompressed_sha256"]
    );

    // The board is at v2: measuring v2 again needs no flash, v1 does.
    let again = apply(
        &lab.root,
        &[
            "apply",
            "--dry-run",
            "--redo",
            "image=v2",
            "scenarios/lab-flash.toml",
        ],
    );
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(!text.contains("REFLASH"), "{text}");
    assert!(text.contains("verify image v2"), "{text}");
    let out = apply(
        &lab.root,
        &[
            "apply",
            "--no-report",
            "--redo",
            "image=v2",
            "scenarios/lab-flash.toml",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("read-back"), "reflashed: {err}");
    assert_eq!(versions(&lab.root, "v2"), [2.0, 2.0, 2.0, 2.0]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn apply_refuses_an_image_whose_sha256_differs_and_one_that_boots_as_something_else() {
    need_root();
    let lab = Lab::up(1);
    let dir = scratch("apply-bad");
    let v1 = bpflash_ready(&lab, &dir, "v1", "1");
    // v3's expectations say VERSION_ID 3, but the file holds 1.
    flash_project(&lab, &[("v1", &v1, "1"), ("v3", &v1, "3")]);
    let s = lab.root.join("scenarios/lab-flash.toml");
    let text = std::fs::read_to_string(&s).unwrap();
    // v1's declared digest is wrong.
    let sha = file_sha256(&v1);
    let text = text.replacen(&sha, &"0".repeat(64), 1);
    std::fs::write(&s, text).unwrap();
    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("nothing was flashed"), "{err}");
    assert!(
        err.contains("os_release.VERSION_ID is \"1\", expected \"3\""),
        "{err}"
    );
    assert!(versions(&lab.root, "v1").is_empty() && versions(&lab.root, "v3").is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_board_that_never_comes_back_fails_its_cells_with_the_cause_and_the_others_finish() {
    need_root();
    let lab = Lab::up(2);
    let dir = scratch("no-boot");
    let spec = ImageSpec {
        no_boot: true,
        ..ImageSpec::new("bpflash", "1")
    };
    let dead = image::build(&dir, "dead", &spec, Compression::None).unwrap();
    // Board 1 gets the image that never boots, with a short boot_timeout.
    let b1 = flash_project(&lab, &[("dead", &dead, "1")]);
    let file = &lab.board(0).board_file;
    let text = std::fs::read_to_string(file)
        .unwrap()
        .replace("[power]\n", "[power]\nboot_timeout = \"5s\"\n");
    std::fs::write(file, text).unwrap();
    // Board 2 runs the same test on what it has installed, in a scenario of its own.
    let b2 = lab.board(1).name.to_string();
    std::fs::write(
        lab.root.join("scenarios/here.toml"),
        format!(
            "title = \"here\"\n[images.installed]\ninstalled = true\n[matrix]\nimage = [\"installed\"]\n\
             board = [\"{b2}\"]\ntest = [\"osver\"]\n[method]\nwarmup = {{ runs = 0 }}\n\
             runs = {{ min = 2, max = 2 }}\n"
        ),
    )
    .unwrap();
    let out = apply(
        &lab.root,
        &[
            "apply",
            "--no-report",
            "scenarios/lab-flash.toml",
            "scenarios/here.toml",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{b1}: did not come back within 5 s of its power cycle"
        )),
        "{err}"
    );
    assert!(err.contains("1 cell(s) completed"), "{err}");
    assert!(versions(&lab.root, "dead").is_empty());
    assert_eq!(
        versions(&lab.root, "installed").len(),
        2,
        "{b2} finished: {err}"
    );
    // Nothing vouches for the dead board's image.
    let state =
        std::fs::read_to_string(lab.root.join(format!("results/boards/{b1}.json"))).unwrap();
    assert!(state.contains("\"unverified\""), "{state}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_shipped_lab_flash_scenario_pins_the_digests_lab_image_builds() {
    // The README's commands, run here: the scenario's sha256s must be what they build.
    let dir = scratch("shipped");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenario = std::fs::read_to_string(repo.join("scenarios/lab-flash.toml")).unwrap();
    for (name, version, compression) in [
        ("bpflash-1", "1", Compression::None),
        ("bpflash-2", "2", Compression::Xz),
    ] {
        let file =
            image::build(&dir, name, &ImageSpec::new("bpflash", version), compression).unwrap();
        let rel = format!("images/{}", file.file_name().unwrap().to_string_lossy());
        assert!(scenario.contains(&format!("path = \"{rel}\"")), "{rel}");
        let sha = file_sha256(&file);
        assert!(
            scenario.contains(&format!("sha256 = \"{sha}\"")),
            "{name}: `benchpipe lab image` builds sha256 {sha} here; scenarios/lab-flash.toml pins another"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_new_host_key_after_a_flash_is_refused_unless_the_board_opts_in_and_then_recorded() {
    need_root();
    let lab = Lab::up(1);
    let dir = scratch("new-key");
    let spec = ImageSpec {
        new_host_key: true,
        ..ImageSpec::new("bpflash", "1")
    };
    let rekeyed = crate::firstboot::lab_ready(&lab, &dir, "rekeyed", &spec, Compression::None);
    let name = flash_project(&lab, &[("rekeyed", &rekeyed, "1")]);
    // Strict by default: the flashed board's new key is refused, nothing is measured.
    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("host key"), "{err}");
    assert!(versions(&lab.root, "rekeyed").is_empty());

    // The boot window of that flash has passed: the board (dd runs through it) stays
    // refused until the user trusts its key, as after any change.
    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    assert_eq!(out.status.code(), Some(1));
    let out = apply(&lab.root, &["boards", "trust", &name, "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Opted in: the key that changes right after benchpipe's own verified flash is
    // trusted, recorded in the board's state and beside the cell, and the cell runs.
    // (The lab makes a new key once per filesystem: a second image, so a second key.)
    let spec2 = ImageSpec {
        new_host_key: true,
        ..ImageSpec::new("bpflash", "2")
    };
    let rekeyed2 = crate::firstboot::lab_ready(&lab, &dir, "rekeyed2", &spec2, Compression::None);
    flash_project(&lab, &[("rekeyed2", &rekeyed2, "2")]);
    let file = &lab.board(0).board_file;
    let text = std::fs::read_to_string(file)
        .unwrap()
        .replace("[flash]\n", "[flash]\naccept_new_host_key = true\n");
    std::fs::write(file, text).unwrap();
    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("accepted the new host key SHA256:"), "{err}");
    assert_eq!(versions(&lab.root, "rekeyed2"), [2.0, 2.0]);
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lab.root.join(format!("results/boards/{name}.json"))).unwrap(),
    )
    .unwrap();
    let key = state["host_key"]
        .as_str()
        .expect("the accepted key is recorded");
    assert!(key.starts_with("SHA256:"), "{state}");
    let facts = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("facts.json")).ok())
        .find(|f| f.contains("accepted_host_key"))
        .expect("the cell's facts name the accepted key");
    assert!(facts.contains(key), "{facts}");
    // The report's provenance shows the accepted key as its fingerprint.
    let out = apply(&lab.root, &["report", "scenarios/lab-flash.toml"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let md = std::fs::read_to_string(lab.root.join("reports/lab-flash/index.md")).unwrap();
    assert!(
        md.contains(&format!("| host key accepted after the flash | {key} |")),
        "{md}"
    );
    assert!(md.contains("| image | sha256:"), "{md}");
    // No flash, no acceptance: measuring again connects with the key now trusted.
    let out = apply(
        &lab.root,
        &[
            "apply",
            "--no-report",
            "--redo",
            "image=rekeyed2",
            "scenarios/lab-flash.toml",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("accepted the new host key"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_flash_command_writes_the_image_on_the_controller_and_the_boot_is_verified() {
    need_root();
    let lab = Lab::up(1);
    let dir = scratch("command");
    let v1 = bpflash_ready(&lab, &dir, "v1", "1");
    let name = flash_project(&lab, &[("v1", &v1, "1")]);
    // The lab's boot disk is a loop device on this machine: the controller itself can
    // write it, as a flasher with an SD mux would.
    let boot = lab.board(0).boot.clone().unwrap();
    let file = &lab.board(0).board_file;
    let text = std::fs::read_to_string(file).unwrap();
    let old = format!(
        "method = \"dd\"\nvia = \"{name}\"\ndevice = \"{}\"\n",
        boot.device
    );
    assert!(text.contains(&old), "{text}");
    let text = text.replace(
        &old,
        &format!(
            "method = \"command\"\ncommand = \"dd if={{{{ image }}}} of={} bs=4M conv=fsync status=none\"\n",
            boot.device
        ),
    );
    std::fs::write(file, text).unwrap();
    let dry = apply(
        &lab.root,
        &["apply", "--dry-run", "scenarios/lab-flash.toml"],
    );
    let text = String::from_utf8_lossy(&dry.stdout);
    assert!(
        text.contains("REFLASH with v1: the board's [flash] command"),
        "{text}"
    );
    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("flash v1 with the board's [flash] command"),
        "{err}"
    );
    assert_eq!(versions(&lab.root, "v1"), [1.0, 1.0]);
    // A command that fails fails the image's cells with its cause, and nothing runs.
    // (Without the board's state, benchpipe no longer knows it is at v1: it reflashes.)
    let text = std::fs::read_to_string(file).unwrap().replace(
        "command = \"dd if=",
        "command = \"echo no SD mux >&2; false && dd if=",
    );
    std::fs::write(file, text).unwrap();
    std::fs::remove_file(lab.root.join(format!("results/boards/{name}.json"))).unwrap();
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
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("flash v1: [flash] command") && err.contains("no SD mux"),
        "{err}"
    );
    assert_eq!(
        versions(&lab.root, "v1").len(),
        2,
        "nothing measured after the failure"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
