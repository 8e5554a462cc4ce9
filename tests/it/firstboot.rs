//! Integration tests: a lab board's first boot after a flash lets in only whom the
//! flashed boot partition declares (cloud-init user-data, the Raspberry Pi OS files, an
//! Armbian preset), written here with mtools and debugfs, and by benchpipe's own
//! first-boot preparation (`[images.NAME.firstboot]`); an unprepared flash leaves the
//! board unreachable and apply says why; a prepared image is derived once and a board
//! running it is not flashed again; hostile declarations are refused and write nothing
//! outside the lab's run directory. They need root (the lab); without it they fail
//! loudly.

use std::path::{Path, PathBuf};
use std::time::Duration;

use benchpipe::lab::image::{self, BOOT_OFFSET, Compression, ImageSpec, ROOT_OFFSET};
use benchpipe::lab::{self, PowerAction, PowerOutcome};
use benchpipe::transport::ssh::SshTransport;
use benchpipe::transport::{Transport, TransportError, quote};

use crate::flash::{apply, file_sha256, flash_project, versions};
use crate::lab::{Lab, sh};
use crate::scratch::Scratch;

/// The lab's public key, as a preparation would put the controller's in an image.
pub(crate) fn lab_key(lab: &Lab) -> String {
    let p = lab.info.identity.with_extension("pub");
    std::fs::read_to_string(&p).unwrap().trim().to_string()
}

/// Writes `bytes` as `name` in the image's FAT boot partition, with mtools.
pub(crate) fn put_boot_file(img: &Path, name: &str, bytes: &[u8]) {
    let src = img.with_extension(format!("boot-{}", name.replace('/', "_")));
    std::fs::write(&src, bytes).unwrap();
    sh(&format!(
        "MTOOLS_SKIP_CHECK=1 mcopy -o -i {} {} ::{}",
        quote::sh(&format!("{}@@{BOOT_OFFSET}", img.display())),
        quote::sh(&src.to_string_lossy()),
        quote::sh(name)
    ));
    let _ = std::fs::remove_file(&src);
}

/// Writes `bytes` as `/dir/name` in the image's ext4 root partition, with debugfs.
fn put_root_file(img: &Path, dir: &str, name: &str, bytes: &[u8]) {
    let src = img.with_extension("root-file");
    std::fs::write(&src, bytes).unwrap();
    let cmds = img.with_extension("debugfs");
    std::fs::write(
        &cmds,
        format!("mkdir {dir}\ncd {dir}\nwrite {} {name}\n", src.display()),
    )
    .unwrap();
    sh(&format!(
        "debugfs -w -f {} {} >/dev/null 2>&1",
        quote::sh(&cmds.to_string_lossy()),
        quote::sh(&format!("{}?offset={ROOT_OFFSET}", img.display()))
    ));
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&cmds);
}

/// A cloud-init user-data letting `user` in with `key`.
fn user_data(user: &str, key: &str, hostname: &str) -> String {
    format!(
        "#cloud-config\nhostname: {hostname}\nssh_pwauth: false\nusers:\n  - name: {user}\n    \
         sudo: ALL=(ALL) NOPASSWD:ALL\n    ssh_authorized_keys:\n      - {key}\n"
    )
}

/// A lab image whose boot partition lets `root` in with the lab's key (a cloud-init
/// user-data): what a flash test needs to find its board again after the power cycle.
pub(crate) fn lab_ready(
    lab: &Lab,
    dir: &Path,
    name: &str,
    spec: &ImageSpec,
    compression: Compression,
) -> PathBuf {
    let img = image::build(dir, name, spec, Compression::None).unwrap();
    put_boot_file(
        &img,
        "user-data",
        user_data("root", &lab_key(lab), name).as_bytes(),
    );
    image::compress(&img, compression).unwrap()
}

fn dd(lab: &Lab, img: &Path) {
    let boot = lab.board(0).boot.clone().expect("a boot disk");
    sh(&format!(
        "dd if={} of={} bs=4M conv=fsync status=none",
        quote::sh(&img.to_string_lossy()),
        quote::sh(&boot.device)
    ));
}

fn cycle(lab: &Lab) -> PowerOutcome {
    let name = lab.board(0).name.to_string();
    lab::power_with(&lab.root, &lab.options, &name, PowerAction::Cycle).unwrap()
}

fn connect(lab: &Lab, user: &str) -> Result<SshTransport, TransportError> {
    let mut target = lab.target(0);
    target.user = Some(user.into());
    SshTransport::connect_with(
        &lab.board(0).name,
        &target,
        Duration::from_secs(5),
        crate::lab::options(),
    )
}

fn boot_log(lab: &Lab) -> String {
    std::fs::read_to_string(lab::boot_log(lab.board(0))).unwrap_or_default()
}

#[test]
fn an_unprepared_flash_leaves_the_board_unreachable_and_apply_fails_with_that_cause() {
    if !crate::need_root("losetup, mount and the lab") {
        return;
    }
    let Some(lab) = Lab::up(1) else { return };
    let dir = Scratch::new("firstboot-unprepared");
    let img = crate::flash::bpflash_image(&dir, "v1", "1");
    flash_project(&lab, &[("stock", &img, "1")]);
    let file = &lab.board(0).board_file;
    let text = std::fs::read_to_string(file)
        .unwrap()
        .replace("[power]\n", "[power]\nboot_timeout = \"5s\"\n");
    std::fs::write(file, text).unwrap();
    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("did not answer SSH after the flash of stock"),
        "{err}"
    );
    assert!(
        err.contains("flashed without first-boot preparation")
            && err.contains("[images.stock.firstboot]"),
        "{err}"
    );
    assert!(versions(&lab.root, "stock").is_empty());
    let failure = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .find_map(|e| std::fs::read_to_string(e.unwrap().path().join("failure.json")).ok())
        .expect("the cell's failure is stored");
    assert!(failure.contains("first-boot preparation"), "{failure}");
    // The board itself: SSH is off, nothing listens; the boot log says why.
    let outcome = cycle(&lab);
    assert_eq!(outcome.booted, Some(false), "{outcome:?}");
    assert!(
        outcome
            .note
            .as_deref()
            .unwrap_or("")
            .contains("SSH stays off"),
        "{outcome:?}"
    );
    assert!(
        matches!(
            connect(&lab, "root"),
            Err(TransportError::Unreachable { .. })
        ),
        "an unprepared image answered SSH"
    );
    assert!(
        boot_log(&lab).contains("no first-boot declaration"),
        "{}",
        boot_log(&lab)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three images, one per kind of declaration, each letting user `bench` in with the
/// lab's key.
fn prepared_images(lab: &Lab, dir: &Path) -> [(&'static str, PathBuf, &'static str); 3] {
    let key = lab_key(lab);
    let ci = image::build(
        dir,
        "ci",
        &ImageSpec::new("bpflash", "1"),
        Compression::None,
    )
    .unwrap();
    put_boot_file(
        &ci,
        "user-data",
        user_data("bench", &key, "ci-host").as_bytes(),
    );
    put_boot_file(&ci, "meta-data", b"instance-id: ci-host\n");

    let rpi = image::build(
        dir,
        "rpi",
        &ImageSpec::new("bpflash", "2"),
        Compression::None,
    )
    .unwrap();
    put_boot_file(&rpi, "ssh", b"");
    put_boot_file(&rpi, "userconf.txt", b"bench:$6$salt$notarealhash\n");
    let firstrun = format!(
        "#!/bin/bash\n\nset +e\n\nCURRENT_HOSTNAME=`cat /etc/hostname | tr -d \" \\t\\n\\r\"`\n\
         if [ -f /usr/lib/raspberrypi-sys-mods/imager_custom ]; then\n   \
         /usr/lib/raspberrypi-sys-mods/imager_custom set_hostname rpi-host\nelse\n   \
         echo rpi-host >/etc/hostname\nfi\n\
         FIRSTUSER=`getent passwd 1000 | cut -d: -f1`\n\
         FIRSTUSERHOME=`getent passwd 1000 | cut -d: -f6`\n\
         if [ -f /usr/lib/raspberrypi-sys-mods/imager_custom ]; then\n   \
         /usr/lib/raspberrypi-sys-mods/imager_custom enable_ssh -k '{key}'\nelse\n   \
         install -o \"$FIRSTUSER\" -m 700 -d \"$FIRSTUSERHOME/.ssh\"\n   \
         install -o \"$FIRSTUSER\" -m 600 <(printf \"{key}\") \"$FIRSTUSERHOME/.ssh/authorized_keys\"\n   \
         echo 'PasswordAuthentication no' >>/etc/ssh/sshd_config\n   systemctl enable ssh\nfi\n\
         rm -f /boot/firstrun.sh\nexit 0\n"
    );
    put_boot_file(&rpi, "firstrun.sh", firstrun.as_bytes());

    let arm = image::build(
        dir,
        "arm",
        &ImageSpec::new("bpflash", "3"),
        Compression::None,
    )
    .unwrap();
    put_root_file(
        &arm,
        "/root",
        ".not_logged_in_yet",
        b"PRESET_NET_CHANGE_DEFAULTS=0\nPRESET_ROOT_PASSWORD=s3cret-root\nPRESET_USER_NAME=bench\n\
          PRESET_USER_PASSWORD=s3cret-user\nPRESET_USER_KEY=file:///boot/bench.pub\n",
    );
    put_boot_file(&arm, "bench.pub", format!("{key}\n").as_bytes());
    [("ci", ci, "1"), ("rpi", rpi, "2"), ("arm", arm, "3")]
}

/// Makes board 0 (named `name`) log in as `user` and have the controller write its boot
/// disk (`[flash] method = "command"`): a board that logs in as `user` only once it runs a
/// flashed image cannot be flashed through itself before.
fn flash_from_the_controller_as(lab: &Lab, name: &str, user: &str) {
    let boot = lab.board(0).boot.clone().unwrap();
    let file = &lab.board(0).board_file;
    let text = std::fs::read_to_string(file).unwrap();
    let old = format!(
        "method = \"dd\"\nvia = \"{name}\"\ndevice = \"{}\"\n",
        boot.device
    );
    assert!(
        text.contains(&old) && text.contains("user = \"root\""),
        "{text}"
    );
    let text = text
        .replace(
            &old,
            &format!(
                "method = \"command\"\ncommand = \"dd if={{{{ image }}}} of={} bs=4M conv=fsync status=none\"\n",
                boot.device
            ),
        )
        .replace("user = \"root\"", &format!("user = \"{user}\""));
    std::fs::write(file, text).unwrap();
}

#[test]
fn each_kind_of_declaration_with_the_lab_key_boots_reachable_and_is_measured() {
    if !crate::need_root("losetup, mount and the lab") {
        return;
    }
    let Some(lab) = Lab::up(1) else { return };
    let dir = Scratch::new("firstboot-kinds");
    let images = prepared_images(&lab, &dir);
    let list: Vec<(&str, &Path, &str)> = images
        .iter()
        .map(|(n, p, v)| (*n, p.as_path(), *v))
        .collect();
    let name = flash_project(&lab, &list);
    // The board logs in as the declared user, and the controller writes the boot disk
    // (the board, flashed without preparation, could not be reached through itself).
    flash_from_the_controller_as(&lab, &name, "bench");
    let passwd = std::fs::read("/etc/passwd").unwrap();

    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(versions(&lab.root, "ci"), [1.0, 1.0], "{err}");
    assert_eq!(versions(&lab.root, "rpi"), [2.0, 2.0], "{err}");
    assert_eq!(versions(&lab.root, "arm"), [3.0, 3.0], "{err}");
    // The last boot was Armbian's: its log names the preset's user, never its passwords.
    let log = boot_log(&lab);
    assert!(
        log.contains("bench (armbian): 1 key(s) may log in"),
        "{log}"
    );
    assert!(!log.contains("s3cret"), "{log}");
    // The declared user exists in the board's own view only.
    assert_eq!(std::fs::read("/etc/passwd").unwrap(), passwd);
    let mut t = connect(&lab, "bench").unwrap();
    let who = t.run("id -u; grep -c '^bench:' /etc/passwd", None).unwrap();
    assert_eq!(who.stdout_str(), "0\n1\n");
    assert!(matches!(
        connect(&lab, "root"),
        Err(TransportError::Auth { .. })
    ));

    // The hostname a declaration names is the board's (the cloud-init image again).
    dd(&lab, &images[0].1);
    let outcome = cycle(&lab);
    assert_eq!(outcome.booted, Some(true), "{outcome:?}");
    let mut t = connect(&lab, "bench").unwrap();
    let host = t.run("cat /etc/hostname", None).unwrap();
    assert_eq!(host.stdout_str(), "ci-host\n");
    assert_ne!(
        std::fs::read_to_string("/etc/hostname").unwrap_or_default(),
        "ci-host\n"
    );
    assert!(
        boot_log(&lab).contains("hostname: ci-host"),
        "{}",
        boot_log(&lab)
    );
    let _ = (file_sha256(&images[0].1), std::fs::remove_dir_all(&dir));
}

/// What may change on this machine when a board boots: nothing outside the run dir.
fn machine_state() -> Vec<(String, Vec<u8>)> {
    let mut files = vec![];
    for p in ["/etc/passwd", "/etc/group", "/etc/shadow", "/etc/hostname"] {
        files.push((p.to_string(), std::fs::read(p).unwrap_or_default()));
    }
    let listing =
        sh("ls -la /root/.ssh 2>/dev/null; cat /root/.ssh/authorized_keys 2>/dev/null; true");
    files.push(("/root/.ssh".into(), listing.into_bytes()));
    files
}

#[test]
fn another_key_or_a_hostile_declaration_leaves_the_board_unreachable_and_writes_nothing_else() {
    if !crate::need_root("losetup, mount and the lab") {
        return;
    }
    let Some(lab) = Lab::up(1) else { return };
    let dir = Scratch::new("firstboot-hostile");
    let before = machine_state();
    let other = {
        let k = dir.join("other");
        sh(&format!(
            "ssh-keygen -q -t ed25519 -N '' -C other -f {}",
            quote::sh(&k.to_string_lossy())
        ));
        std::fs::read_to_string(k.with_extension("pub")).unwrap()
    };
    let key = lab_key(&lab);
    let huge = format!(
        "#cloud-config\n# {}\n{}",
        "x".repeat(100 << 10),
        user_data("root", &key, "h")
    );
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "other key",
            user_data("root", other.trim(), "other").into_bytes(),
            "root (cloud-init): 1 key(s) may log in",
        ),
        (
            "huge",
            huge.into_bytes(),
            "more than the 65536 the lab reads",
        ),
        (
            "binary",
            [
                b"#cloud-config\n".as_slice(),
                &[0xff, 0, 0x1b, 0x5b, 0x32, 0x4a],
            ]
            .concat(),
            "not a text file",
        ),
        (
            "shell user",
            user_data("root; rm -rf /", &key, "x").into_bytes(),
            "refused (not a login name)",
        ),
        (
            "key options",
            user_data(
                "root",
                &format!("command=\"/bin/sh -c 'touch /tmp/bp-owned'\" {key}"),
                "x",
            )
            .into_bytes(),
            "a key with options",
        ),
        (
            "script",
            format!(
                "#!/bin/sh\ntouch /tmp/bp-owned\n{}",
                user_data("root", &key, "x")
            )
            .into_bytes(),
            "not #cloud-config",
        ),
    ];
    let _ = std::fs::remove_file("/tmp/bp-owned");
    for (case, ud, expect) in cases {
        let img = image::build(
            &dir,
            "h",
            &ImageSpec::new("bphostile", "1"),
            Compression::None,
        )
        .unwrap();
        put_boot_file(&img, "user-data", &ud);
        dd(&lab, &img);
        let outcome = cycle(&lab);
        let log = boot_log(&lab);
        assert!(log.contains(expect), "{case}: {outcome:?}\n{log}");
        assert!(
            !log.contains('\u{1b}'),
            "{case}: a control byte in the log: {log}"
        );
        match connect(&lab, "root") {
            Err(TransportError::Unreachable { .. } | TransportError::Auth { .. }) => {}
            other => panic!("{case}: the board let the lab in: {:?}", other.map(|_| ())),
        }
        // Nothing but plain, checked key files in the board's keys directory.
        let keys = lab::boot_log(lab.board(0)).with_file_name("keys");
        for e in std::fs::read_dir(&keys).into_iter().flatten() {
            let e = e.unwrap();
            assert_eq!(e.file_name(), "root", "{case}");
            let text = std::fs::read_to_string(e.path()).unwrap();
            assert!(!text.contains("command="), "{case}: {text}");
        }
    }
    assert_eq!(
        machine_state(),
        before,
        "something outside the lab's run dir changed"
    );
    assert!(
        !Path::new("/tmp/bp-owned").exists(),
        "the image ran something"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `(inode, mtime)` of each prepared image (`<sha256>.img`) in the workspace's image
/// cache, by name.
fn derived_images(root: &Path) -> Vec<(String, u64, std::time::SystemTime)> {
    use std::os::unix::fs::MetadataExt;
    let mut out: Vec<_> = std::fs::read_dir(root.join("image-cache"))
        .into_iter()
        .flatten()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".img"))
        .map(|e| {
            let m = e.metadata().unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                m.ino(),
                m.modified().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// The done-when of issue 38's first boot: stock lab images (no declaration on their
/// boot partitions) flashed with `[images.NAME.firstboot]` of each kind come up
/// reachable and are measured; the prepared images are derived once, and a board
/// already running one is not flashed again. (The unprepared flash is
/// `an_unprepared_flash_leaves_the_board_unreachable_and_apply_fails_with_that_cause`.)
#[test]
fn benchpipes_own_preparation_of_each_kind_boots_reachable_is_measured_and_derived_once() {
    if !crate::need_root("losetup, mount and the lab") {
        return;
    }
    let Some(lab) = Lab::up(1) else { return };
    let dir = Scratch::new("firstboot-prepared");
    let build = |name: &str, version: &str| {
        image::build(
            &dir,
            name,
            &ImageSpec::new("bpflash", version),
            Compression::None,
        )
        .unwrap()
    };
    let (ci, rpi, arm) = (build("ci", "1"), build("rpi", "2"), build("arm", "3"));
    // Part of the base image, as on every Raspberry Pi OS image: the kernel command line
    // `raspios` preparation appends to. Nothing declares a user.
    put_boot_file(
        &rpi,
        "cmdline.txt",
        b"console=serial0,115200 root=PARTUUID=0001-02 rootfstype=ext4 rootwait\n",
    );
    let name = flash_project(
        &lab,
        &[("ci", &ci, "1"), ("rpi", &rpi, "2"), ("arm", &arm, "3")],
    );
    flash_from_the_controller_as(&lab, &name, "bench");
    // Extra cloud-config: first-boot preparation then writes a MIME multipart user-data,
    // which the lab's boot merges as cloud-init does.
    std::fs::create_dir_all(lab.root.join("seed")).unwrap();
    std::fs::write(
        lab.root.join("seed/extra.yaml"),
        "#cloud-config\npackages: [fio]\n",
    )
    .unwrap();
    let s = lab.root.join("scenarios/lab-flash.toml");
    let mut text = std::fs::read_to_string(&s).unwrap();
    text.push_str(
        "[images.ci.firstboot]\nkind = \"cloud-init\"\nuser = \"bench\"\nsudo = true\n\
         hostname = \"ci-{{ board }}\"\nuser_data = \"seed/extra.yaml\"\n\
         [images.rpi.firstboot]\nkind = \"raspios\"\nuser = \"bench\"\n\
         [images.arm.firstboot]\nkind = \"armbian\"\nuser = \"bench\"\n",
    );
    std::fs::write(&s, text).unwrap();
    let key = lab_key(&lab);
    let base_digests: Vec<String> = [&ci, &rpi, &arm].iter().map(|p| file_sha256(p)).collect();

    let dry = apply(
        &lab.root,
        &["apply", "--dry-run", "scenarios/lab-flash.toml"],
    );
    let plan = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.status.success(), "{plan}");
    for kind in ["cloud-init", "raspios", "armbian"] {
        assert!(plan.contains(&format!("first boot ({kind})")), "{plan}");
    }
    assert!(
        !plan.contains(&key[12..40]),
        "the key's text in the plan: {plan}"
    );

    let out = apply(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Each kind booted reachable, and its cell was measured on its own image.
    assert_eq!(versions(&lab.root, "ci"), [1.0, 1.0], "{err}");
    assert_eq!(versions(&lab.root, "rpi"), [2.0, 2.0], "{err}");
    assert_eq!(versions(&lab.root, "arm"), [3.0, 3.0], "{err}");
    assert_eq!(
        err.matches("derived the prepared image").count(),
        3,
        "{err}"
    );
    assert!(!err.contains("reused the image cache's"), "{err}");
    // Nothing was written into the base images: they keep their digests.
    let after: Vec<String> = [&ci, &rpi, &arm].iter().map(|p| file_sha256(p)).collect();
    assert_eq!(after, base_digests);
    let derived = derived_images(&lab.root);
    assert_eq!(
        derived.len(),
        3,
        "one prepared image per image: {derived:?}"
    );

    // The board runs the last image flashed: measuring it again flashes nothing and
    // derives nothing.
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(lab.root.join(format!("results/boards/{name}.json"))).unwrap(),
    )
    .unwrap();
    let last = state["image"].as_str().unwrap().to_string();
    assert!(
        state["identity"].as_str().unwrap().contains("+firstboot:"),
        "{state}"
    );
    let redo = format!("image={last}");
    let err = apply_ok(
        &lab.root,
        &[
            "apply",
            "--no-report",
            "--redo",
            &redo,
            "scenarios/lab-flash.toml",
        ],
    );
    assert!(
        !err.contains("flash") && !err.contains("read-back"),
        "reflashed: {err}"
    );
    assert!(!err.contains("derived the"), "{err}");
    assert_eq!(versions(&lab.root, &last).len(), 4, "{err}");
    assert_eq!(
        derived_images(&lab.root),
        derived,
        "the image cache changed"
    );
    // A whole second apply has nothing to do.
    let err = apply_ok(
        &lab.root,
        &["apply", "--no-report", "scenarios/lab-flash.toml"],
    );
    assert!(
        !err.contains("[flash] command") && !err.contains("first boot ("),
        "{err}"
    );
    assert_eq!(
        derived_images(&lab.root),
        derived,
        "the image cache changed"
    );

    // Another image is flashed again from the cache's prepared copy, not derived anew;
    // its cloud-init user-data (a multipart with the extra part) names the host.
    let other = if last == "ci" { "rpi" } else { "ci" };
    let redo = format!("image={other}");
    let err = apply_ok(
        &lab.root,
        &[
            "apply",
            "--no-report",
            "--redo",
            &redo,
            "scenarios/lab-flash.toml",
        ],
    );
    assert!(
        err.contains("reused the image cache's prepared image"),
        "{err}"
    );
    assert!(!err.contains("derived the"), "{err}");
    assert_eq!(versions(&lab.root, other).len(), 4, "{err}");
    assert_eq!(
        derived_images(&lab.root),
        derived,
        "the image cache changed"
    );
    if other == "ci" {
        let log = boot_log(&lab);
        assert!(log.contains("2 text/cloud-config part(s) merged"), "{log}");
        assert!(log.contains(&format!("hostname: ci-{name}")), "{log}");
        let mut t = connect(&lab, "bench").unwrap();
        let host = t.run("cat /etc/hostname", None).unwrap();
        assert_eq!(host.stdout_str(), format!("ci-{name}\n"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The shipped `scenarios/lab-flash.toml` as its comment says to run it: the two images
/// `benchpipe lab image` builds (the digests the scenario pins), a lab whose boards log
/// in as the user the images' first boot declares (`lab up --user bench`, flashed from
/// the controller), and one apply: each image prepared, flashed, booted reachable as
/// bench, verified and measured; a second apply derives, flashes and measures nothing.
#[test]
fn the_shipped_lab_flash_scenario_prepares_flashes_and_measures_with_lab_up_user() {
    let Some(lab) = bench_lab(1, &[("bpflash-1", "1", "none"), ("bpflash-2", "2", "xz")]) else {
        return;
    };
    let root = lab.root.clone();
    std::fs::create_dir_all(root.join("pipeline")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/xz.toml"),
        root.join("pipeline/xz.toml"),
    )
    .unwrap();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/lab-flash.toml"),
    )
    .unwrap();
    assert_eq!(shipped.matches("board = [\"lab-*\"]").count(), 1);
    std::fs::create_dir_all(root.join("scenarios")).unwrap();
    std::fs::write(
        root.join("scenarios/lab-flash.toml"),
        shipped.replace(
            "board = [\"lab-*\"]",
            &format!("board = [\"{}-*\"]", lab.options.board_prefix),
        ),
    )
    .unwrap();
    let out = apply(&root, &["apply", "--no-report", "scenarios/lab-flash.toml"]);
    let err =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The first apply did derive and flash: the second's silence below means something.
    assert!(
        err.contains("derived the prepared image") && err.contains("[flash] command"),
        "{err}"
    );
    let cells = cell_dirs(&root);
    assert_eq!(cells.len(), 2, "one xz cell per image: {err}");
    for c in &cells {
        assert!(measured_runs(c) >= 3, "{}\n{err}", c.display());
    }
    let again = apply(&root, &["apply", "--no-report", "scenarios/lab-flash.toml"]);
    let said = String::from_utf8_lossy(&again.stdout).to_string()
        + &String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{said}");
    assert!(
        !said.contains("[flash] command")
            && !said.contains("derived the prepared image")
            && !said.contains("run 1/"),
        "nothing derived, flashed or measured again: {said}"
    );
}

/// A lab of `boards` whose boards log in as `bench` (`lab up --user bench`: what a
/// flashed image's first boot declares, flashed from the controller), each power cycle
/// through this build's `benchpipe lab power`, and `images` (name, VERSION_ID,
/// compression) built in its root by `benchpipe lab image` with ID `bpflash`.
pub(crate) fn bench_lab(boards: usize, images: &[(&str, &str, &str)]) -> Option<Lab> {
    let lab = Lab::up_with_options(boards, |o| o.login_user = Some("bench".into()))?;
    let root = lab.root.clone();
    for i in 0..boards {
        let file = &lab.board(i).board_file;
        let text = std::fs::read_to_string(file).unwrap();
        assert!(
            text.contains("user = \"bench\"") && text.contains("method = \"command\""),
            "{text}"
        );
        let this_build = format!("cycle = \"{} lab power", env!("CARGO_BIN_EXE_benchpipe"));
        std::fs::write(
            file,
            text.replace("cycle = \"benchpipe lab power", &this_build),
        )
        .unwrap();
    }
    for (name, version, compress) in images {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_benchpipe"))
            .args([
                "lab",
                "image",
                name,
                "--id",
                "bpflash",
                "--version-id",
                version,
            ])
            .args(["--compress", compress])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", crate::lab::text(&out));
    }
    Some(lab)
}

/// The store's cell directories (those holding a `cell.json`).
pub(crate) fn cell_dirs(root: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(root.join("results"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("cell.json").exists())
        .collect()
}

/// How many measured runs a cell directory's samples hold.
pub(crate) fn measured_runs(cell: &Path) -> usize {
    let samples = std::fs::read_to_string(cell.join("samples.jsonl")).unwrap_or_default();
    samples
        .lines()
        .filter(|l| l.contains("\"measured\""))
        .count()
}

/// `apply` that must succeed; its stderr.
fn apply_ok(root: &Path, args: &[&str]) -> String {
    let out = apply(root, args);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    err
}
