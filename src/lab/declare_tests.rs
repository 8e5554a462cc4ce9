//! Unit tests of `lab::declare`: each kind of declaration, and hostile ones.

use super::*;
use std::fmt::Write as _;

const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHKzdBGCekknKp0Hfq8lXL4QkNTf9Z0BGGfN8LXRs7l6";
const OTHER: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGCpjF0W5n/ymis6U2eo+rnz6B2xe2wjf5CNukjKNbQA";

fn run(files: &[(&str, &str)], armbian_root: Option<&str>) -> (Option<Declared>, Vec<String>) {
    let map: BTreeMap<String, Vec<u8>> = files
        .iter()
        .map(|(n, t)| (n.to_string(), t.as_bytes().to_vec()))
        .collect();
    let boot = move |name: &str| Ok(map.get(name).cloned());
    let src = Sources {
        boot: &boot,
        armbian_root: armbian_root.map(|t| t.as_bytes().to_vec()),
    };
    let mut log = Log::default();
    let d = declared(&src, &mut log);
    (d, log.0)
}

fn user(name: &str, keys: &[&str]) -> User {
    User {
        name: name.into(),
        keys: keys.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn nothing_on_the_boot_partition_keeps_ssh_off() {
    let (d, log) = run(&[("config.txt", "arm_64bit=1")], None);
    assert_eq!(d, None);
    assert!(log[0].contains("SSH stays off"), "{log:?}");
}

#[test]
fn cloud_init_users_and_default_keys_with_hostname() {
    let ud = format!(
        "#cloud-config\nhostname: rack-1\nssh_pwauth: false\nusers:\n  - default\n  - name: bench\n    sudo: ALL=(ALL) NOPASSWD:ALL\n    ssh_authorized_keys:\n      - {KEY} me@host\nssh_authorized_keys:\n  - {OTHER}\nruncmd:\n  - [rm, -rf, /]\n"
    );
    let (d, log) = run(&[("user-data", &ud)], None);
    let d = d.unwrap();
    assert!(d.ssh);
    assert_eq!(d.kinds, ["cloud-init"]);
    assert_eq!(d.hostname.as_deref(), Some("rack-1"));
    assert_eq!(
        d.users,
        [user(DEFAULT_USER, &[OTHER]), user("bench", &[KEY])]
    );
    let log = log.join("\n");
    assert!(log.contains("`runcmd` is not modelled"), "{log}");
    assert!(log.contains("users[1]: `sudo` is not modelled"), "{log}");
    assert!(log.contains("PasswordAuthentication no"), "{log}");
}

#[test]
fn cloud_init_gives_root_the_default_keys_only_with_disable_root_false() {
    let ud = format!("#cloud-config\nusers: []\nssh_authorized_keys: [\"{KEY}\"]\n");
    let (d, _) = run(&[("user-data", &ud)], None);
    assert_eq!(d.unwrap().users, []);
    let ud = format!(
        "#cloud-config\ndisable_root: false\nusers: []\nssh_authorized_keys: [\"{KEY}\"]\n"
    );
    let (d, _) = run(&[("user-data", &ud)], None);
    assert_eq!(d.unwrap().users, [user("root", &[KEY])]);
}

#[test]
fn hostile_user_data_is_refused_line_by_line() {
    let ud = format!(
        "#cloud-config\nhostname: \"a;b\"\nusers:\n  - name: \"root; rm -rf /\"\n    ssh_authorized_keys: [\"{KEY}\"]\n  - name: ok\n    ssh_authorized_keys:\n      - command=\"/bin/sh\" {KEY}\n      - ssh-ed25519 AAAA\n      - ssh-rsa {}\n",
        KEY.split(' ').nth(1).unwrap()
    );
    let (d, log) = run(&[("user-data", &ud)], None);
    let d = d.unwrap();
    assert_eq!(d.users, [user("ok", &[])]);
    assert_eq!(d.hostname, None);
    let log = log.join("\n");
    assert!(
        log.contains("user name \"root; rm -rf /\" refused"),
        "{log}"
    );
    assert!(log.contains("a key with options"), "{log}");
    assert!(
        log.contains("not base64") || log.contains("not a ssh-ed25519"),
        "{log}"
    );
    assert!(log.contains("is not a ssh-rsa key"), "{log}");
    assert!(log.contains("hostname \"a;b\" refused"), "{log}");
}

#[test]
fn user_data_that_is_a_script_binary_or_not_yaml_is_refused() {
    for (ud, why) in [
        ("#!/bin/sh\nrm -rf /\n", "not #cloud-config"),
        ("#cloud-config\n\0\x01\x02", "not a text file"),
        ("#cloud-config\nusers: [\n", "not YAML"),
        ("#cloud-config\n- a\n- b\n", "not a mapping"),
        ("#cloud-config\nusers: bob\n", "users is not a list"),
    ] {
        let (d, log) = run(&[("user-data", ud)], None);
        assert!(d.unwrap().users.is_empty(), "{ud}");
        assert!(log.join("\n").contains(why), "{ud}: {log:?}");
    }
    let binary = [b"#cloud-config\n".as_slice(), &[0xff, 0xfe, 0x00]].concat();
    let map: BTreeMap<String, Vec<u8>> = [("user-data".to_string(), binary)].into();
    let boot = move |n: &str| Ok(map.get(n).cloned());
    let mut log = Log::default();
    let d = declared(
        &Sources {
            boot: &boot,
            armbian_root: None,
        },
        &mut log,
    )
    .unwrap();
    assert!(d.users.is_empty());
}

#[test]
fn a_yaml_alias_bomb_is_refused_quickly() {
    let mut ud = String::from(
        "#cloud-config\na: &a [\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\",\"x\"]\n",
    );
    let mut prev = 'a';
    for c in 'b'..='z' {
        let _ = writeln!(
            ud,
            "{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]"
        );
        prev = c;
    }
    let (_, log) = run(&[("user-data", &ud)], None);
    assert!(log.join("\n").contains("not YAML"), "{log:?}");
}

#[test]
fn raspios_files_as_imager_writes_them() {
    let firstrun = format!(
        "#!/bin/bash\n\nset +e\n\nCURRENT_HOSTNAME=`cat /etc/hostname | tr -d \" \\t\\n\\r\"`\n\
if [ -f /usr/lib/raspberrypi-sys-mods/imager_custom ]; then\n   /usr/lib/raspberrypi-sys-mods/imager_custom set_hostname pi-3\n\
else\n   echo pi-3 >/etc/hostname\nfi\n\
FIRSTUSER=`getent passwd 1000 | cut -d: -f1`\n\
if [ -f /usr/lib/raspberrypi-sys-mods/imager_custom ]; then\n   /usr/lib/raspberrypi-sys-mods/imager_custom enable_ssh -k '{KEY} me@host'\n\
else\n   install -o \"$FIRSTUSER\" -m 700 -d \"$FIRSTUSERHOME/.ssh\"\n   install -o \"$FIRSTUSER\" -m 600 <(printf \"{KEY} me@host\") \"$FIRSTUSERHOME/.ssh/authorized_keys\"\n   echo 'PasswordAuthentication no' >>/etc/ssh/sshd_config\n   systemctl enable ssh\nfi\n\
if [ -f /usr/lib/userconf-pi/userconf ]; then\n   /usr/lib/userconf-pi/userconf 'bench' '$5$abc$def'\nelse\n   echo \"$FIRSTUSER:\"'$5$abc$def' | chpasswd -e\nfi\n\
rm -f /boot/firstrun.sh\nexit 0\n"
    );
    let (d, log) = run(&[("firstrun.sh", &firstrun)], None);
    let d = d.unwrap();
    assert!(d.ssh);
    assert_eq!(d.users, [user("bench", &[KEY])]);
    assert_eq!(d.hostname.as_deref(), Some("pi-3"));
    assert!(
        !log.join("\n").contains("$5$"),
        "no hash in the log: {log:?}"
    );
    // The older files: `ssh` and `userconf.txt` (a password only: no key to log in with).
    let (d, _) = run(&[("ssh", ""), ("userconf.txt", "pi:$6$salt$hash\n")], None);
    let d = d.unwrap();
    assert!(d.ssh);
    assert_eq!(d.users, [user("pi", &[])]);
    // userconf without ssh: SSH stays off.
    let (d, log) = run(&[("userconf.txt", "pi:$6$x\n")], None);
    assert!(!d.unwrap().ssh);
    assert!(log.join("\n").contains("SSH stays off"), "{log:?}");
    let (d, log) = run(
        &[("ssh.txt", ""), ("userconf.txt", "root; rm -rf /:x\n")],
        None,
    );
    assert!(d.unwrap().users.is_empty());
    assert!(log.join("\n").contains("refused"), "{log:?}");
}

#[test]
fn armbian_presets_take_keys_from_the_boot_partition_only() {
    let preset = "PRESET_ROOT_PASSWORD=s3cret\nPRESET_USER_NAME=bench\nPRESET_USER_PASSWORD='s3cret'\n\
PRESET_USER_KEY=file:///boot/bench.pub\nPRESET_ROOT_KEY=https://github.com/me.keys\nPRESET_TIMEZONE=Etc/UTC\n";
    let keys = format!("{KEY} me@host\n");
    let (d, log) = run(&[("bench.pub", &keys)], Some(preset));
    let d = d.unwrap();
    assert_eq!(d.kinds, ["armbian"]);
    assert_eq!(d.users, [user("bench", &[KEY])]);
    let log = log.join("\n");
    assert!(log.contains("PRESET_ROOT_KEY names a URL"), "{log}");
    assert!(!log.contains("s3cret"), "{log}");
    // The same preset on the boot partition.
    let (d, _) = run(
        &[("armbian_first_run.txt", preset), ("bench.pub", &keys)],
        None,
    );
    assert_eq!(d.unwrap().users, [user("bench", &[KEY])]);
    let (d, log) = run(
        &[],
        Some("PRESET_USER_NAME=$(reboot)\nPRESET_USER_KEY=file:///boot/../etc/shadow\n"),
    );
    assert!(d.unwrap().users.is_empty());
    assert!(log.join("\n").contains("shell syntax"), "{log:?}");
}

#[test]
fn keys_are_checked_to_the_blob() {
    assert_eq!(key(&format!("{KEY} comment with spaces")).unwrap(), KEY);
    assert!(key("ssh-dss AAAAB3NzaC1kc3M=").is_err());
    assert!(
        key(&format!("no-pty,command=\"x\" {KEY}"))
            .unwrap_err()
            .contains("options")
    );
    assert!(key("ssh-ed25519 !!!!").is_err());
    assert!(user_ok("pi") && user_ok("_svc") && !user_ok("Root") && !user_ok("a b"));
    assert!(!user_ok("-x") && !user_ok(&"a".repeat(33)));
}
