//! What each first-boot kind writes into the boot partition, as bytes: cloud-init's
//! NoCloud seed, Raspberry Pi OS's `ssh`, `userconf.txt`, `firstrun.sh` and `cmdline.txt`
//! edit (as Raspberry Pi Imager writes them), Armbian's `armbian_first_run.txt`. Pure:
//! every value is checked by `config` and quoted for where it goes (YAML double quotes,
//! shell single quotes).

use crate::model::{FirstbootKind, Preparation};
use crate::transport::quote::sh;
use std::fmt::Write as _;

/// What `cmdline.txt` gains so that systemd runs `firstrun.sh` once and reboots, as
/// Raspberry Pi Imager appends it.
pub const SYSTEMD_RUN: &str = "systemd.run=/boot/firstrun.sh systemd.run_success_action=reboot systemd.unit=kernel-command-line.target";

/// The longest kernel command line a Raspberry Pi's firmware passes on.
pub const MAX_CMDLINE: usize = 4096;

/// One file of the boot partition's root directory and its new content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootFile {
    pub name: &'static str,
    pub bytes: Vec<u8>,
}

/// What a preparation needs besides its declaration: the crypt hash to write (the
/// declared one, or for `raspios` one of a random password nobody knows) and the
/// derivation key that names it (cloud-init's instance id, the MIME boundary).
pub struct Written<'p> {
    pub prep: &'p Preparation,
    pub password_hash: Option<&'p str>,
    pub derivation_key: &'p str,
}

/// The files `w`'s kind writes. `cmdline` is the partition's `cmdline.txt` when the
/// kind edits it (`raspios`); an error says what is missing or wrong.
pub fn boot_files(w: &Written<'_>, cmdline: Option<&str>) -> Result<Vec<BootFile>, String> {
    let file = |name, text: String| BootFile {
        name,
        bytes: text.into_bytes(),
    };
    Ok(match w.prep.kind {
        FirstbootKind::CloudInit => {
            let mut out = vec![
                file("user-data", user_data(w)?),
                file("meta-data", meta_data(w)),
            ];
            if let Some(n) = &w.prep.network_config {
                out.push(file("network-config", n.text.clone()));
            }
            out
        }
        FirstbootKind::Raspios => {
            let hash = w
                .password_hash
                .ok_or("raspios needs a password hash for userconf.txt")?;
            let cmdline = cmdline.ok_or(
                "the boot partition has no cmdline.txt: not a Raspberry Pi OS image (kind = \"raspios\")",
            )?;
            vec![
                file("ssh", String::new()),
                file("userconf.txt", format!("{}:{hash}\n", w.prep.user)),
                file("firstrun.sh", firstrun(w)),
                file("cmdline.txt", with_systemd_run(cmdline)?),
            ]
        }
        FirstbootKind::Armbian => vec![
            file("armbian_first_run.txt", armbian(w)),
            file(ARMBIAN_KEY_FILE, format!("{}\n", w.prep.key.line)),
        ],
    })
}

/// YAML double-quoted: `config` allows no `"`, `\` or control character in these values
/// (user and host names, key lines, crypt hashes), so quoting cannot be broken out of.
fn yq(s: &str) -> String {
    debug_assert!(!s.contains(['"', '\\']) && !s.contains(char::is_control));
    format!("\"{s}\"")
}

/// benchpipe's own `#cloud-config`: the host name, the user with the key, SSH on with
/// password logins off; merged before the user's extra user-data, which may add to it
/// but not replace it.
fn own_cloud_config(w: &Written<'_>) -> String {
    let p = w.prep;
    let mut s = String::from("#cloud-config\n");
    s.push_str("# Written by benchpipe (first-boot preparation): the board's name, and the user and key benchpipe logs in with.\n");
    let _ = writeln!(s, "hostname: {}", yq(&p.hostname));
    s.push_str("manage_etc_hosts: true\n");
    s.push_str("ssh_pwauth: false\n");
    // Raspberry Pi OS's cloud-init turns sshd on only when asked; others ignore it.
    s.push_str("enable_ssh: true\n");
    s.push_str("users:\n");
    let _ = writeln!(s, "  - name: {}", yq(&p.user));
    s.push_str("    shell: /bin/bash\n");
    match w.password_hash {
        Some(h) => {
            s.push_str("    lock_passwd: false\n");
            let _ = writeln!(s, "    passwd: {}", yq(h));
        }
        None => s.push_str("    lock_passwd: true\n"),
    }
    if p.sudo {
        s.push_str("    sudo: \"ALL=(ALL) NOPASSWD:ALL\"\n");
    }
    s.push_str("    ssh_authorized_keys:\n");
    let _ = writeln!(s, "      - {}", yq(&p.key.line));
    s
}

/// `user-data`: benchpipe's `#cloud-config`, alone or, with extra user-data, as a MIME
/// multi-part whose parts cloud-init merges in order (lists appended, no key replaced).
fn user_data(w: &Written<'_>) -> Result<String, String> {
    const MERGE: &str = "Merge-Type: list(append)+dict(no_replace,recurse_list)+str()";
    let own = own_cloud_config(w);
    let Some(extra) = &w.prep.user_data else {
        return Ok(own);
    };
    let boundary = format!("benchpipe-{}", &w.derivation_key[..32]);
    if extra.text.contains(&boundary) {
        return Err(format!(
            "the extra user-data holds the MIME boundary `{boundary}`; it cannot be merged"
        ));
    }
    let part = |body: &str| {
        format!(
            "--{boundary}\nContent-Type: text/cloud-config; charset=\"utf-8\"\nMIME-Version: 1.0\n{MERGE}\n\n{body}{}",
            if body.ends_with('\n') { "" } else { "\n" }
        )
    };
    Ok(format!(
        "Content-Type: multipart/mixed; boundary=\"{boundary}\"\nMIME-Version: 1.0\n\n{}{}--{boundary}--\n",
        part(&own),
        part(&extra.text)
    ))
}

/// `meta-data`: an instance id of this derivation, so cloud-init runs its first-boot
/// modules again for a new preparation, and the host name.
fn meta_data(w: &Written<'_>) -> String {
    format!(
        "instance-id: {}\nlocal-hostname: {}\n",
        yq(&format!("benchpipe-{}", &w.derivation_key[..32])),
        yq(&w.prep.hostname)
    )
}

/// `cmdline.txt` with `SYSTEMD_RUN` appended (any `systemd.run...` it had replaced),
/// kept one line.
pub fn with_systemd_run(cmdline: &str) -> Result<String, String> {
    if cmdline.contains('\0') || cmdline.len() > MAX_CMDLINE {
        return Err(format!(
            "cmdline.txt is not one kernel command line of at most {MAX_CMDLINE} bytes"
        ));
    }
    let words: Vec<&str> = cmdline
        .split_whitespace()
        .filter(|w| !w.starts_with("systemd.run") && !w.starts_with("systemd.unit="))
        .collect();
    let line = format!("{} {SYSTEMD_RUN}\n", words.join(" "));
    if line.len() > MAX_CMDLINE {
        return Err(format!(
            "cmdline.txt would be longer than {MAX_CMDLINE} bytes with `{SYSTEMD_RUN}`"
        ));
    }
    Ok(line)
}

/// The shell lines that set the host name, give the user its key (and sudo, and its
/// password hash) and turn SSH on, run as root on the first boot by
/// `armbian_first_run.txt`. Every value is single-quoted (`quote::sh`).
fn account_lines(w: &Written<'_>, out: &mut String) {
    let p = w.prep;
    let user = sh(&p.user);
    let host = sh(&p.hostname);
    let mut line = |l: String| {
        out.push_str(&l);
        out.push('\n');
    };
    line(format!("BENCHPIPE_USER={user}"));
    line(format!("BENCHPIPE_HOST={host}"));
    line("OLD_HOST=$(tr -d ' \\t\\n\\r' </etc/hostname)".into());
    line("printf '%s\\n' \"$BENCHPIPE_HOST\" >/etc/hostname".into());
    line("sed -i \"s/127.0.1.1.*$OLD_HOST/127.0.1.1\\t$BENCHPIPE_HOST/g\" /etc/hosts".into());
    line("hostname \"$BENCHPIPE_HOST\" 2>/dev/null".into());
    line(
        "id \"$BENCHPIPE_USER\" >/dev/null 2>&1 || useradd -m -s /bin/bash \"$BENCHPIPE_USER\""
            .into(),
    );
    if let Some(h) = w.password_hash {
        line(format!("usermod -p {} \"$BENCHPIPE_USER\"", sh(h)));
    }
    line("BENCHPIPE_HOME=$(getent passwd \"$BENCHPIPE_USER\" | cut -d: -f6)".into());
    line("install -d -m 700 -o \"$BENCHPIPE_USER\" -g \"$(id -gn \"$BENCHPIPE_USER\")\" \"$BENCHPIPE_HOME/.ssh\"".into());
    line(format!(
        "printf '%s\\n' {} >\"$BENCHPIPE_HOME/.ssh/authorized_keys\"",
        sh(&p.key.line)
    ));
    line("chown \"$BENCHPIPE_USER:$(id -gn \"$BENCHPIPE_USER\")\" \"$BENCHPIPE_HOME/.ssh/authorized_keys\"".into());
    line("chmod 600 \"$BENCHPIPE_HOME/.ssh/authorized_keys\"".into());
    if p.sudo {
        line("printf '%s ALL=(ALL) NOPASSWD:ALL\\n' \"$BENCHPIPE_USER\" >/etc/sudoers.d/090_benchpipe".into());
        line("chmod 440 /etc/sudoers.d/090_benchpipe".into());
    }
    line("systemctl enable ssh 2>/dev/null || systemctl enable sshd 2>/dev/null".into());
}

/// `firstrun.sh` as Raspberry Pi Imager writes it, line for line where it can (the
/// lines `imager_custom`, `userconf`, the `install ... <(printf ...)` of the keys): the
/// host name set, the key given to the image's first user (uid 1000) and SSH enabled,
/// then that user renamed and given the password hash (`userconf`). Bookworm's
/// `imager_fixup` maps its `/boot` paths to `/boot/firmware`. It removes itself and its
/// `cmdline.txt` words; systemd then reboots. `sudo = true` adds a sudoers line, as the
/// image's own `010_pi-nopasswd` does for its first user.
fn firstrun(w: &Written<'_>) -> String {
    const CUSTOM: &str = "/usr/lib/raspberrypi-sys-mods/imager_custom";
    let p = w.prep;
    let (user, host, key) = (sh(&p.user), sh(&p.hostname), &p.key.line);
    let mut s = String::from("#!/bin/bash\n\nset +e\n\n");
    s.push_str("# Written by benchpipe (first-boot preparation), run once by systemd.run= in cmdline.txt.\n");
    s.push_str("CURRENT_HOSTNAME=`cat /etc/hostname | tr -d \" \\t\\n\\r\"`\n");
    let _ = write!(
        s,
        "if [ -f {CUSTOM} ]; then\n   {CUSTOM} set_hostname {host}\nelse\n"
    );
    let _ = writeln!(s, "   echo {host} >/etc/hostname");
    let _ = write!(
        s,
        "   sed -i \"s/127.0.1.1.*$CURRENT_HOSTNAME/127.0.1.1\\t{}/g\" /etc/hosts\nfi\n",
        p.hostname
    );
    s.push_str("FIRSTUSER=`getent passwd 1000 | cut -d: -f1`\n");
    s.push_str("FIRSTUSERHOME=`getent passwd 1000 | cut -d: -f6`\n");
    // The key line is checked (`config`): a type and base64, nothing a shell or printf
    // reads inside double quotes (no `$`, backquote, `\\`, `\"` or `%`).
    debug_assert!(!key.contains(['$', '`', '\\', '"', '%', '\'']));
    let _ = write!(
        s,
        "if [ -f {CUSTOM} ]; then\n   {CUSTOM} enable_ssh -k '{key}'\nelse\n"
    );
    s.push_str("   install -o \"$FIRSTUSER\" -m 700 -d \"$FIRSTUSERHOME/.ssh\"\n");
    let _ = writeln!(
        s,
        "   install -o \"$FIRSTUSER\" -m 600 <(printf \"{key}\") \"$FIRSTUSERHOME/.ssh/authorized_keys\""
    );
    s.push_str("   echo 'PasswordAuthentication no' >>/etc/ssh/sshd_config\n");
    s.push_str("   systemctl enable ssh\nfi\n");
    if let Some(h) = w.password_hash {
        let hash = sh(h);
        s.push_str("if [ -f /usr/lib/userconf-pi/userconf ]; then\n");
        let _ = write!(s, "   /usr/lib/userconf-pi/userconf {user} {hash}\nelse\n");
        let _ = writeln!(s, "   echo \"$FIRSTUSER:\"{hash} | chpasswd -e");
        let _ = writeln!(s, "   if [ \"$FIRSTUSER\" != {user} ]; then");
        let _ = writeln!(s, "      usermod -l {user} \"$FIRSTUSER\"");
        let _ = writeln!(s, "      usermod -m -d /home/{user} {user}");
        let _ = writeln!(s, "      groupmod -n {user} \"$FIRSTUSER\"");
        s.push_str("      if [ -f /etc/sudoers.d/010_pi-nopasswd ]; then\n");
        let _ = writeln!(
            s,
            "         sed -i \"s/^$FIRSTUSER /{} /\" /etc/sudoers.d/010_pi-nopasswd",
            p.user
        );
        s.push_str("      fi\n   fi\nfi\n");
    }
    if p.sudo {
        let _ = writeln!(
            s,
            "printf '%s ALL=(ALL) NOPASSWD:ALL\\n' {user} >/etc/sudoers.d/090_benchpipe"
        );
        s.push_str("chmod 440 /etc/sudoers.d/090_benchpipe\n");
    }
    s.push_str("rm -f /boot/firstrun.sh /boot/firmware/firstrun.sh\n");
    s.push_str(
        "sed -i 's| systemd.run.*||g' /boot/cmdline.txt /boot/firmware/cmdline.txt 2>/dev/null\n",
    );
    s.push_str("exit 0\n");
    s
}

/// The boot partition's file holding the user's public key, named by `PRESET_USER_KEY`.
pub const ARMBIAN_KEY_FILE: &str = "benchpipe_authorized_keys";

/// `armbian_first_run.txt`: `armbian-firstrun-config` checks it with `bash -n` and
/// sources it as root on the first boot, then deletes it. It opens with Armbian's preset
/// of the first login (the `PRESET_USER_NAME` and `PRESET_USER_KEY` that
/// `/root/.not_logged_in_yet` takes, the key a `file:///boot/` URL of a file beside it):
/// plain `NAME=value` lines that a reader of presets takes without running anything.
/// Then the account lines run as it is sourced, root's well-known first password
/// (`1234`) is locked, and the console's interactive first login is switched off, the
/// user already made. The network is left alone.
fn armbian(w: &Written<'_>) -> String {
    let mut s = String::from(
        "# Written by benchpipe (first-boot preparation); sourced as root by armbian-firstrun-config.\n",
    );
    s.push_str("FR_general_delete_this_file_after_completion=1\n");
    s.push_str("FR_net_change_defaults=0\n");
    let _ = writeln!(s, "PRESET_USER_NAME={}", sh(&w.prep.user));
    let _ = writeln!(s, "PRESET_USER_KEY=file:///boot/{ARMBIAN_KEY_FILE}");
    s.push_str("PRESET_USER_SHELL=bash\n");
    account_lines(w, &mut s);
    s.push_str("passwd -l root >/dev/null 2>&1\n");
    s.push_str("rm -f /root/.not_logged_in_yet\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Attachment, AuthorizedKey};

    fn prep(kind: FirstbootKind) -> Preparation {
        Preparation {
            kind,
            user: "pi".into(),
            key: AuthorizedKey {
                line: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBenchpipeTestKey".into(),
                fingerprint: "SHA256:x".into(),
            },
            sudo: true,
            password_hash: None,
            user_data: None,
            network_config: None,
            hostname: "pi-1".into(),
        }
    }

    const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn cloud_init_writes_the_user_key_and_host_name() {
        let p = prep(FirstbootKind::CloudInit);
        let w = Written {
            prep: &p,
            password_hash: None,
            derivation_key: KEY,
        };
        let files = boot_files(&w, None).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.name).collect();
        assert_eq!(names, ["user-data", "meta-data"]);
        let ud = String::from_utf8(files[0].bytes.clone()).unwrap();
        assert!(ud.starts_with("#cloud-config\n"), "{ud}");
        assert!(ud.contains("hostname: \"pi-1\""), "{ud}");
        assert!(ud.contains("  - name: \"pi\""), "{ud}");
        assert!(ud.contains("lock_passwd: true"), "{ud}");
        assert!(ud.contains("      - \"ssh-ed25519 AAAAC3"), "{ud}");
        assert!(ud.contains("sudo: \"ALL=(ALL) NOPASSWD:ALL\""), "{ud}");
        let md = String::from_utf8(files[1].bytes.clone()).unwrap();
        assert_eq!(
            md,
            "instance-id: \"benchpipe-0123456789abcdef0123456789abcdef\"\nlocal-hostname: \"pi-1\"\n"
        );
    }

    #[test]
    fn extra_user_data_is_a_second_mime_part_merged_after_benchpipes() {
        let mut p = prep(FirstbootKind::CloudInit);
        p.user_data = Some(Attachment {
            text: "#cloud-config\npackages: [fio]\n".into(),
            sha256: "00".into(),
        });
        p.network_config = Some(Attachment {
            text: "version: 2\n".into(),
            sha256: "11".into(),
        });
        let w = Written {
            prep: &p,
            password_hash: None,
            derivation_key: KEY,
        };
        let files = boot_files(&w, None).unwrap();
        let ud = String::from_utf8(files[0].bytes.clone()).unwrap();
        assert!(ud.starts_with("Content-Type: multipart/mixed; boundary=\"benchpipe-"));
        assert_eq!(ud.matches("Merge-Type: list(append)").count(), 2, "{ud}");
        let own = ud.find("hostname: \"pi-1\"").unwrap();
        let extra = ud.find("packages: [fio]").unwrap();
        assert!(own < extra, "{ud}");
        assert!(ud.ends_with("--benchpipe-0123456789abcdef0123456789abcdef--\n"));
        assert_eq!(files[2].name, "network-config");
        assert_eq!(files[2].bytes, b"version: 2\n");
    }

    #[test]
    fn raspios_writes_ssh_userconf_firstrun_and_edits_the_cmdline() {
        let p = prep(FirstbootKind::Raspios);
        let w = Written {
            prep: &p,
            password_hash: Some("$6$salt$hash"),
            derivation_key: KEY,
        };
        assert!(boot_files(&w, None).unwrap_err().contains("cmdline.txt"));
        let files = boot_files(
            &w,
            Some("console=serial0,115200 root=PARTUUID=1-02 rootwait systemd.run=/old\n"),
        )
        .unwrap();
        let by = |n: &str| {
            String::from_utf8(files.iter().find(|f| f.name == n).unwrap().bytes.clone()).unwrap()
        };
        assert_eq!(by("ssh"), "");
        assert_eq!(by("userconf.txt"), "pi:$6$salt$hash\n");
        assert_eq!(
            by("cmdline.txt"),
            format!("console=serial0,115200 root=PARTUUID=1-02 rootwait {SYSTEMD_RUN}\n")
        );
        let run = by("firstrun.sh");
        assert!(run.starts_with("#!/bin/bash\n"), "{run}");
        assert!(
            run.contains("/usr/lib/userconf-pi/userconf pi '$6$salt$hash'"),
            "{run}"
        );
        // The lines Raspberry Pi Imager writes, which readers of its files look for.
        let key = &p.key.line;
        for line in [
            "   /usr/lib/raspberrypi-sys-mods/imager_custom set_hostname pi-1\n".to_string(),
            format!("   /usr/lib/raspberrypi-sys-mods/imager_custom enable_ssh -k '{key}'\n"),
            format!(
                "   install -o \"$FIRSTUSER\" -m 600 <(printf \"{key}\") \"$FIRSTUSERHOME/.ssh/authorized_keys\"\n"
            ),
            "   systemctl enable ssh\n".to_string(),
        ] {
            assert!(run.contains(&line), "{line:?} in {run}");
        }
        assert!(run.contains("/etc/sudoers.d/090_benchpipe"), "{run}");
        assert!(run.trim_end().ends_with("exit 0"));
    }

    #[test]
    fn armbian_leaves_the_network_and_ends_the_console_wizard() {
        let p = prep(FirstbootKind::Armbian);
        let w = Written {
            prep: &p,
            password_hash: None,
            derivation_key: KEY,
        };
        let files = boot_files(&w, None).unwrap();
        assert_eq!(files.len(), 2);
        let t = String::from_utf8(files[0].bytes.clone()).unwrap();
        assert!(t.contains("FR_net_change_defaults=0\n"));
        // The preset a reader of Armbian's first login takes, the key in a file beside it.
        assert!(t.contains("\nPRESET_USER_NAME=pi\n"), "{t}");
        assert!(
            t.contains("\nPRESET_USER_KEY=file:///boot/benchpipe_authorized_keys\n"),
            "{t}"
        );
        assert_eq!(files[1].name, ARMBIAN_KEY_FILE);
        assert_eq!(files[1].bytes, format!("{}\n", p.key.line).into_bytes());
        assert!(
            t.contains("passwd -l root"),
            "root's well-known password locked"
        );
        assert!(t.contains("useradd -m -s /bin/bash"));
        assert!(t.contains("rm -f /root/.not_logged_in_yet"));
        assert!(!t.contains("usermod -p"), "no hash declared: none written");
    }

    #[test]
    fn the_scripts_are_valid_shell() {
        for kind in [FirstbootKind::Raspios, FirstbootKind::Armbian] {
            use crate::transport::Transport;
            let p = prep(kind);
            let w = Written {
                prep: &p,
                password_hash: Some("$6$salt$hash"),
                derivation_key: KEY,
            };
            let files = boot_files(&w, Some("root=/dev/mmcblk0p2\n")).unwrap();
            let script = files
                .iter()
                .find(|f| {
                    f.name.ends_with(".sh")
                        || f.name.ends_with(".txt")
                            && f.name != "userconf.txt"
                            && f.name != "cmdline.txt"
                })
                .unwrap();
            let exit = crate::transport::local::Local::new()
                .exec_input(
                    "bash -n",
                    Some(std::time::Duration::from_secs(60)),
                    &mut script.bytes.as_slice(),
                    &mut std::io::sink(),
                    &mut std::io::sink(),
                )
                .unwrap();
            assert!(exit.success(), "{kind:?}: bash -n refused it");
        }
    }
}
