//! Fingerprints, known_hosts rewriting (hashed, shared lines, symlinks) and checking
//! against libssh2's own reader.

use super::*;
use std::fmt::Write as _;

use std::os::unix::fs::PermissionsExt;

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("benchpipe-hostkey-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn key(byte: u8) -> HostKey {
    HostKey {
        algorithm: "ssh-ed25519".into(),
        blob: vec![byte; 51],
    }
}

/// A real ed25519 public key from ssh-keygen: (algorithm, base64 blob).
fn real_key(dir: &Path) -> (String, String) {
    let k = dir.join("k");
    let out = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&k)
        .output()
        .expect("ssh-keygen (openssh-client) must be installed");
    assert!(out.status.success(), "{out:?}");
    let public = std::fs::read_to_string(k.with_extension("pub")).unwrap();
    let mut f = public.split_whitespace();
    (f.next().unwrap().into(), f.next().unwrap().into())
}

#[test]
fn removing_one_host_of_a_shared_line_keeps_the_other_hosts() {
    let dir = temp_dir("shared");
    let file = dir.join("known_hosts");
    let old = key(1).known_hosts_line("a,b,c");
    std::fs::write(&file, format!("# mine\n{old}")).unwrap();
    append(&file, "b", &key(2)).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        format!(
            "# mine\n{}{}",
            key(1).known_hosts_line("a,c"),
            key(2).known_hosts_line("b")
        )
    );
    // The last host of a line takes the line with it.
    std::fs::write(&file, key(1).known_hosts_line("b")).unwrap();
    append(&file, "b", &key(2)).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text, key(2).known_hosts_line("b"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_symlinked_known_hosts_is_refused_and_its_target_untouched() {
    let dir = temp_dir("symlink");
    let sentinel = dir.join("sentinel");
    std::fs::write(&sentinel, "precious\n").unwrap();
    let file = dir.join("known_hosts");
    std::os::unix::fs::symlink(&sentinel, &file).unwrap();
    let err = append(&file, "a", &key(1)).expect_err("a symlink must be refused");
    assert!(
        matches!(&err, KnownHostsError::Symlink { file: f } if *f == file),
        "{err:?}"
    );
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read_to_string(&sentinel).unwrap(), "precious\n");
    assert!(
        std::fs::symlink_metadata(&file)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_rewrite_uses_an_exclusive_temp_file_and_keeps_the_mode() {
    let dir = temp_dir("temp");
    let sentinel = dir.join("sentinel");
    std::fs::write(&sentinel, "precious\n").unwrap();
    let file = dir.join("known_hosts");
    std::fs::write(&file, key(1).known_hosts_line("a")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    // A link planted at the temporary name the old code always used.
    std::os::unix::fs::symlink(&sentinel, dir.join("known_hosts.benchpipe-tmp")).unwrap();
    append(&file, "a", &key(2)).unwrap();
    assert_eq!(std::fs::read_to_string(&sentinel).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        key(2).known_hosts_line("a")
    );
    let meta = std::fs::symlink_metadata(&file).unwrap();
    assert!(meta.is_file());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
    // No temporary file is left behind.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("benchpipe-") && n != "known_hosts.benchpipe-tmp")
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hmac_sha1_matches_rfc2202() {
    let mac = hmac_sha1(b"Jefe", b"what do ya want for nothing?");
    let hex: String = mac.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    });
    assert_eq!(hex, "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
    assert_eq!(base64_decode("Zm9vYmE=").unwrap(), b"fooba");
    assert_eq!(base64_decode("Zm9vYmE").unwrap(), b"fooba");
    assert_eq!(base64_decode("Zm9v!"), None);
}

#[test]
fn a_hashed_file_gets_hashed_entries_that_openssh_finds() {
    let dir = temp_dir("hashed");
    let (alg, blob) = real_key(&dir);
    let file = dir.join("known_hosts");
    std::fs::write(&file, format!("other {alg} {blob}\nb {alg} {blob}\n")).unwrap();
    let out = std::process::Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let new = key(7);
    // Replacing the hashed entry for `b`, adding one for a non-standard port.
    append(&file, "b", &new).unwrap();
    append(&file, "[c]:2222", &new).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines.iter().all(|l| l.starts_with("|1|")), "{text}");
    assert!(
        hashed_host_matches(lines[0].split(' ').next().unwrap(), "other"),
        "{text}"
    );
    for host in ["b", "[c]:2222"] {
        let found = std::process::Command::new("ssh-keygen")
            .args(["-F", host, "-f"])
            .arg(&file)
            .output()
            .unwrap();
        let found = String::from_utf8_lossy(&found.stdout).into_owned();
        assert!(found.contains(&base64(&new.blob, true)), "{host}: {found}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_matches_hashed_and_plain_entries_by_host_and_port() {
    let dir = temp_dir("check");
    let (alg, blob) = real_key(&dir);
    let offered = HostKey {
        algorithm: alg.clone(),
        blob: base64_decode(&blob).unwrap(),
    };
    let session = Session::new().unwrap();
    let file = dir.join("known_hosts");
    for hashed in [false, true] {
        std::fs::write(&file, format!("a,[b]:2222 {alg} {blob}\n")).unwrap();
        if hashed {
            let out = std::process::Command::new("ssh-keygen")
                .arg("-H")
                .arg("-f")
                .arg(&file)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            assert!(std::fs::read_to_string(&file).unwrap().starts_with("|1|"));
        }
        let v = |host: &str, port: u16| check(&session, &file, host, port, &offered).unwrap();
        assert_eq!(v("a", 22), Verdict::Match, "hashed: {hashed}");
        assert_eq!(v("b", 2222), Verdict::Match, "hashed: {hashed}");
        assert_eq!(v("b", 22), Verdict::Unknown, "hashed: {hashed}");
        assert_eq!(v("a", 2222), Verdict::Unknown, "hashed: {hashed}");
        assert_eq!(
            check(&session, &file, "a", 22, &key(3)).unwrap(),
            Verdict::Mismatch,
            "hashed: {hashed}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn typed_fingerprints_compare_with_or_without_padding() {
    let fp = key(1).fingerprint();
    assert!(same_fingerprint(&fp, &fp));
    assert!(same_fingerprint(&format!(" {fp}= \n"), &fp));
    assert!(!same_fingerprint(&key(2).fingerprint(), &fp));
    assert!(!same_fingerprint(fp.trim_start_matches("SHA256:"), &fp));
    assert!(!same_fingerprint("SHA256:", "SHA256:"));
}

#[test]
fn base64_matches_rfc4648_vectors() {
    for (input, padded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(input.as_bytes(), true), padded);
        assert_eq!(
            base64(input.as_bytes(), false),
            padded.trim_end_matches('=')
        );
    }
}

#[test]
fn host_patterns_follow_openssh() {
    assert_eq!(host_pattern("pi", 22), "pi");
    assert_eq!(host_pattern("198.18.1.2", 2222), "[198.18.1.2]:2222");
}

#[test]
fn pinned_keys_parse_only_whole_keys_of_their_algorithm() {
    let blob = {
        let mut b = vec![0, 0, 0, 11];
        b.extend_from_slice(b"ssh-ed25519");
        b.extend_from_slice(&[0, 0, 0, 32]);
        b.extend_from_slice(&[7; 32]);
        b
    };
    let text = format!("ssh-ed25519 {} root@board", base64(&blob, true));
    let key = HostKey::parse(&text).unwrap();
    assert_eq!((key.algorithm.as_str(), &key.blob), ("ssh-ed25519", &blob));
    let as_rsa = format!("ssh-rsa {}", base64(&blob, true));
    assert!(
        HostKey::parse(&as_rsa)
            .unwrap_err()
            .contains("not an `ssh-rsa` key")
    );
    assert!(
        HostKey::parse("ssh-ed25519")
            .unwrap_err()
            .contains("expected")
    );
    assert!(
        HostKey::parse("ssh-foo AAAA")
            .unwrap_err()
            .contains("unknown host key algorithm")
    );
    assert!(
        HostKey::parse("ssh-ed25519 !!!")
            .unwrap_err()
            .contains("base64")
    );
}
