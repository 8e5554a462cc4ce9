//! Unit tests of `lab::multipart`: what first-boot preparation writes, cloud-init's merge
//! types, and every part the lab refuses.

use super::*;
use crate::lab::declare::{Declared, Sources, User, declared};
use std::collections::BTreeMap;
use std::fmt::Write as _;

const KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHKzdBGCekknKp0Hfq8lXL4QkNTf9Z0BGGfN8LXRs7l6";
const OTHER: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGCpjF0W5n/ymis6U2eo+rnz6B2xe2wjf5CNukjKNbQA";
const APPEND: &str = "Merge-Type: list(append)+dict(no_replace,recurse_list)+str()";

/// The boot partition holding `user-data` alone, read as the lab's boot step does.
fn boot(user_data: &str) -> (Option<Declared>, String) {
    let map: BTreeMap<String, Vec<u8>> =
        [("user-data".to_string(), user_data.as_bytes().to_vec())].into();
    let read = move |n: &str| Ok(map.get(n).cloned());
    let mut log = Log::default();
    let d = declared(
        &Sources {
            boot: &read,
            armbian_root: None,
        },
        &mut log,
    );
    (d, log.0.join("\n"))
}

fn multipart(parts: &[(&str, &str)]) -> String {
    let mut s = String::from(
        "Content-Type: multipart/mixed; boundary=\"BND\"\nMIME-Version: 1.0\n\npreamble\n",
    );
    for (headers, body) in parts {
        if headers.is_empty() {
            let _ = write!(s, "--BND\n\n{body}\n");
        } else {
            let _ = write!(s, "--BND\n{headers}\n\n{body}\n");
        }
    }
    s.push_str("--BND--\nepilogue\n");
    s
}

fn user(name: &str, keys: &[&str]) -> User {
    User {
        name: name.into(),
        keys: keys.iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn the_user_data_first_boot_preparation_writes_with_extra_user_data_is_read() {
    use crate::image::firstboot::files::{Written, boot_files};
    use crate::model::{Attachment, AuthorizedKey, FirstbootKind, Preparation};
    let prep = Preparation {
        kind: FirstbootKind::CloudInit,
        user: "bench".into(),
        key: AuthorizedKey {
            line: format!("{KEY} controller"),
            fingerprint: "SHA256:x".into(),
        },
        sudo: true,
        password_hash: None,
        user_data: Some(Attachment {
            text: format!(
                "#cloud-config\nhostname: elsewhere\npackages: [fio]\nusers:\n  - name: alice\n    ssh_authorized_keys: [\"{OTHER}\"]\n"
            ),
            sha256: "00".into(),
        }),
        network_config: None,
        hostname: "lab-1".into(),
    };
    let written = Written {
        prep: &prep,
        password_hash: None,
        derivation_key: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    };
    let files = boot_files(&written, None).unwrap();
    let ud = std::str::from_utf8(&files[0].bytes).unwrap();
    assert!(ud.starts_with("Content-Type: multipart/mixed"), "{ud}");
    let (d, log) = boot(ud);
    let d = d.unwrap();
    assert!(d.ssh, "{log}");
    // Lists appended in order; the host name benchpipe wrote is not replaced
    // (`dict(no_replace)`), as cloud-init merges them.
    assert_eq!(d.users, [user("bench", &[KEY]), user("alice", &[OTHER])]);
    assert_eq!(d.hostname.as_deref(), Some("lab-1"));
    assert!(log.contains("2 text/cloud-config part(s) merged"), "{log}");
}

#[test]
fn merge_types_decide_what_a_later_part_changes() {
    let first = format!(
        "#cloud-config\nhostname: one\nusers:\n  - name: bob\n    ssh_authorized_keys: [\"{KEY}\"]\n"
    );
    let second =
        format!("hostname: two\nusers:\n  - name: carol\n    ssh_authorized_keys: [\"{OTHER}\"]\n");
    // No Merge-Type: cloud-init's `dict(replace)+list()+str()`, the later part wins.
    let (d, log) = boot(&multipart(&[
        ("Content-Type: text/cloud-config", &first),
        ("Content-Type: text/cloud-config", &second),
    ]));
    let d = d.unwrap();
    assert_eq!(d.users, [user("carol", &[OTHER])], "{log}");
    assert_eq!(d.hostname.as_deref(), Some("two"));
    // Appending lists, keeping set keys.
    let h = format!("Content-Type: text/cloud-config\n{APPEND}");
    let (d, _) = boot(&multipart(&[(&h, &first), (&h, &second)]));
    let d = d.unwrap();
    assert_eq!(d.users, [user("bob", &[KEY]), user("carol", &[OTHER])]);
    assert_eq!(d.hostname.as_deref(), Some("one"));
    // `merge_how` in the part itself, prepending.
    let second_how = format!("merge_how: 'list(prepend)+dict(recurse_list)'\n{second}");
    let (d, _) = boot(&multipart(&[
        (&h, &first),
        ("", &format!("#cloud-config\n{second_how}")),
    ]));
    let d = d.unwrap();
    assert_eq!(d.users, [user("carol", &[OTHER]), user("bob", &[KEY])]);
    assert_eq!(d.hostname.as_deref(), Some("one"));
    assert_eq!(
        merge_type("list(append)+dict(no_replace,recurse_list)+str()"),
        Some(Merge {
            dict_replace: false,
            recurse_list: true,
            list: ListMerge::Append
        })
    );
    assert_eq!(merge_type("dict(allow_delete)"), None);
    assert_eq!(merge_type("list(append"), None);
}

#[test]
fn parts_that_are_not_cloud_config_are_refused_each_with_a_log_line() {
    let good =
        format!("#cloud-config\nusers:\n  - name: bob\n    ssh_authorized_keys: [\"{KEY}\"]\n");
    let (d, log) = boot(&multipart(&[
        (
            "Content-Type: text/x-shellscript",
            "#!/bin/sh\ntouch /pwned\n",
        ),
        (
            "Content-Type: text/cloud-boothook",
            "#cloud-boothook\nrm -rf /\n",
        ),
        (
            "Content-Type: text/x-include-url",
            "#include\nhttps://example.com/x\n",
        ),
        (
            "Content-Type: text/part-handler",
            "#part-handler\ndef handle_part(): pass\n",
        ),
        (
            "Content-Type: multipart/mixed; boundary=\"IN\"",
            "--IN\n\n#cloud-config\n--IN--\n",
        ),
        ("", "#!/bin/sh\necho untyped\n"),
        (
            "Content-Type: text/cloud-config\nContent-Transfer-Encoding: base64",
            "I2Nsb3VkLWNvbmZpZwo=",
        ),
        (
            "Content-Type: text/cloud-config\nMerge-Type: dict(allow_delete)",
            &good,
        ),
        ("Content-Type: text/cloud-config", "- a\n- b\n"),
        ("Content-Type: text/cloud-config", "users: [\n"),
        ("Content-Type: text/cloud-config", &good),
    ]));
    let d = d.unwrap();
    assert_eq!(d.users, [user("bob", &[KEY])], "{log}");
    for (n, why) in [
        (1, "text/x-shellscript is not text/cloud-config"),
        (2, "text/cloud-boothook is not text/cloud-config"),
        (3, "text/x-include-url is not text/cloud-config"),
        (4, "text/part-handler is not text/cloud-config"),
        (5, "multipart/mixed is not text/cloud-config"),
        (6, "text/plain is not text/cloud-config"),
        (7, "an encoded body"),
        (8, "a merge type the lab does not model"),
        (9, "not a mapping"),
        (10, "not YAML"),
    ] {
        assert!(
            log.contains(&format!("user-data part {n}: {why}")),
            "part {n}: {why}: {log}"
        );
    }
    assert!(log.contains("1 text/cloud-config part(s) merged"), "{log}");
    assert!(!log.contains("pwned") && !log.contains("rm -rf"), "{log}");
    // Nothing the lab takes: SSH stays off.
    let (d, log) = boot(&multipart(&[(
        "Content-Type: text/x-shellscript",
        "#!/bin/sh\n",
    )]));
    let d = d.unwrap();
    assert!(!d.ssh && d.users.is_empty(), "{log}");
    assert!(log.contains("no text/cloud-config part"), "{log}");
}

#[test]
fn a_hostile_envelope_is_refused_and_parts_are_bounded() {
    for (ud, why) in [
        (
            "Content-Type: text/x-shellscript\n\n#!/bin/sh\n".to_string(),
            "not multipart/mixed",
        ),
        (
            "Content-Type: multipart/mixed\n\n--x\n\n#cloud-config\n--x--\n".into(),
            "without a boundary",
        ),
        (
            format!(
                "Content-Type: multipart/mixed; boundary=\"{}\"\n\n",
                "b".repeat(71)
            ),
            "without a boundary",
        ),
        (
            "Content-Type: multipart/mixed; boundary=\"a;b\\\"\"\n\n".into(),
            "without a boundary",
        ),
        (
            format!(
                "Content-Type: multipart/mixed; boundary=B\n{}\n",
                "X-A: 1\n".repeat(MAX_HEADERS + 1)
            ),
            "more than 32 header lines",
        ),
        (
            "MIME-Version: 1.0\nno colon here\n".into(),
            "no `Name: value`",
        ),
    ] {
        let (d, log) = boot(&ud);
        assert!(d.unwrap().users.is_empty(), "{ud}");
        assert!(log.contains(why), "{why}: {log}");
    }
    // Thousands of parts in a file within the 64 KiB bound: MAX_PARTS are read.
    let part = format!("Content-Type: text/cloud-config\n{APPEND}");
    let body = "users: [default]\n";
    let many: Vec<(&str, &str)> = (0..2000).map(|_| (part.as_str(), body)).collect();
    let ud = multipart(&many);
    let (d, log) = boot(&ud[..ud.len().min(super::super::declare::MAX_FILE as usize)]);
    assert!(d.is_some());
    assert!(
        log.contains(&format!("more than {MAX_PARTS} parts")),
        "{log}"
    );
    assert!(
        log.contains(&format!("{MAX_PARTS} text/cloud-config part(s) merged")),
        "{log}"
    );
    assert!(log.contains("no closing boundary"), "{log}");
    // CRLF line ends and transport padding after a delimiter are MIME too.
    let crlf = multipart(&[(
        "Content-Type: text/cloud-config",
        &format!("users:\n  - name: bob\n    ssh_authorized_keys: [\"{KEY}\"]"),
    )])
    .replace("--BND\n", "--BND  \n")
    .replace('\n', "\r\n");
    let (d, log) = boot(&crlf);
    assert_eq!(d.unwrap().users, [user("bob", &[KEY])], "{log}");
}
