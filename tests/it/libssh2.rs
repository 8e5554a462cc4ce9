//! Integration tests: the patched libssh2 (vendor/libssh2-sys). Its whole-packet
//! encryption must write, byte for byte, what upstream's per-block loop writes, for
//! every cipher this libssh2 offers, and refuse a packet that is not whole cipher blocks.

use std::ffi::CString;

use ssh2::{MethodType, Session};

// transport.c's test hook (see its comment there and README.patched.md). It lives in
// the libssh2 that ssh2 links, so no #[link] is needed.
unsafe extern "C" {
    fn _libssh2_test_encrypt_packets(
        cipher: *const libc::c_char,
        etm: libc::c_int,
        mode: libc::c_int,
        secret: *const u8,
        secret_len: libc::size_t,
        iv: *const u8,
        iv_len: libc::size_t,
        payload_lens: *const libc::size_t,
        count: libc::size_t,
        plain: *const u8,
        plain_len: libc::size_t,
        out: *mut u8,
        out_cap: libc::size_t,
        out_len: *mut libc::size_t,
    ) -> libc::c_int;
}

/// How the hook treats the packets (the `mode` argument).
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// Upstream's loop: one cipher call per block.
    Upstream = 0,
    /// benchpipe's: the first block, then the rest of the packet in one call.
    WholePacket = 1,
    /// Laid out as the send path does, not encrypted.
    Plaintext = 2,
    /// Whole-packet, on a packet one byte short of whole blocks.
    ShortPacket = 3,
    /// The same, past transport.c's check, straight to OpenSSL.
    ShortPacketToCipher = 4,
}

const LIBSSH2_ERROR_ENCRYPT: i32 = -44;

/// Payload lengths around block and packet edges, and the largest the send path takes
/// (MAX_SSH_PACKET_LEN 35000 less 0x100); channel data goes out in 32 KiB packets.
const PAYLOADS: &[usize] = &[
    0, 1, 3, 7, 8, 11, 12, 15, 16, 17, 27, 28, 31, 32, 33, 100, 1000, 4096, 16397, 32768, 34743,
];

fn encrypt(cipher: &str, etm: bool, mode: Mode, payloads: &[usize]) -> Result<Vec<u8>, i32> {
    let key = crate::xorshift_bytes(64, 0x5eed_0001);
    let iv = crate::xorshift_bytes(64, 0x5eed_0002);
    // Payload and padding bytes for every packet (padding is at most 255 a packet).
    let plain = crate::xorshift_bytes(payloads.iter().map(|p| p + 256).sum(), 0x5eed_0003);
    let mut out = vec![0u8; payloads.iter().map(|p| p + 5 + 256 + 64).sum()];
    let mut out_len = 0;
    let name = CString::new(cipher).unwrap();
    // SAFETY: every pointer comes with its length, and the hook writes at most
    // `out.len()` bytes to `out`.
    let rc = unsafe {
        _libssh2_test_encrypt_packets(
            name.as_ptr(),
            etm.into(),
            mode as libc::c_int,
            key.as_ptr(),
            key.len(),
            iv.as_ptr(),
            iv.len(),
            payloads.as_ptr(),
            payloads.len(),
            plain.as_ptr(),
            plain.len(),
            out.as_mut_ptr(),
            out.len(),
            &raw mut out_len,
        )
    };
    if rc != 0 {
        return Err(rc);
    }
    out.truncate(out_len);
    Ok(out)
}

/// Every cipher this libssh2 would negotiate (the ssh2 crate initialises libssh2).
fn offered_ciphers() -> Vec<&'static str> {
    Session::new()
        .unwrap()
        .supported_algs(MethodType::CryptCs)
        .unwrap()
}

fn is_aead(cipher: &str) -> bool {
    cipher.contains("-gcm@") || cipher.starts_with("chacha20-poly1305")
}

/// Whether the hook can start a cipher context (a build offering a cipher OpenSSL keeps
/// in its legacy provider could not use it in a session either).
fn usable(cipher: &str) -> bool {
    encrypt(cipher, false, Mode::Upstream, &[0]).is_ok()
}

#[test]
fn whole_packet_encryption_writes_upstreams_ciphertext_for_every_cipher() {
    let offered = offered_ciphers();
    for must in [
        "aes128-ctr",
        "aes192-ctr",
        "aes256-ctr",
        "aes128-gcm@openssh.com",
        "aes256-gcm@openssh.com",
        "chacha20-poly1305@openssh.com",
        "aes128-cbc",
        "aes192-cbc",
        "aes256-cbc",
        "rijndael-cbc@lysator.liu.se",
    ] {
        assert!(offered.contains(&must), "{must} not offered: {offered:?}");
        assert!(usable(must), "{must} cannot start a cipher context");
    }
    let mut compared = Vec::new();
    for &cipher in offered.iter().filter(|c| usable(c)) {
        // An encrypt-then-MAC MAC moves the encrypted part 4 bytes on; AEAD ciphers
        // bring their own MAC.
        let etms: &[bool] = if is_aead(cipher) {
            &[false]
        } else {
            &[false, true]
        };
        for &etm in etms {
            let what = format!("{cipher}{}", if etm { " with an -etm MAC" } else { "" });
            let upstream = encrypt(cipher, etm, Mode::Upstream, PAYLOADS)
                .unwrap_or_else(|rc| panic!("{what}: upstream's loop failed: {rc}"));
            let whole = encrypt(cipher, etm, Mode::WholePacket, PAYLOADS)
                .unwrap_or_else(|rc| panic!("{what}: whole packets failed: {rc}"));
            let plain = encrypt(cipher, etm, Mode::Plaintext, PAYLOADS).unwrap();
            assert_eq!(whole.len(), upstream.len(), "{what}: length");
            if let Some(at) = (0..whole.len()).find(|&i| whole[i] != upstream[i]) {
                panic!(
                    "{what}: whole-packet ciphertext differs from upstream's at byte {at} \
                     of {}",
                    whole.len()
                );
            }
            // Equal ciphertexts prove nothing if neither path encrypted at all.
            let unchanged = plain.iter().zip(&whole).filter(|(p, w)| p == w).count();
            assert!(
                unchanged < plain.len() / 20,
                "{what}: {unchanged} of {} bytes left as plaintext",
                plain.len()
            );
            compared.push(what);
        }
    }
    // 10 ciphers required above, 7 of them without AEAD tried twice.
    assert!(compared.len() >= 17, "compared only {compared:?}");
}

#[test]
fn whole_packet_encryption_refuses_a_packet_that_is_not_whole_cipher_blocks() {
    for &cipher in offered_ciphers().iter().filter(|c| usable(c)) {
        // transport.c's check, ahead of any cipher call.
        assert_eq!(
            encrypt(cipher, false, Mode::ShortPacket, &[100]),
            Err(LIBSSH2_ERROR_ENCRYPT),
            "{cipher}: a packet one byte short of whole blocks was encrypted"
        );
        if cipher.starts_with("chacha20-poly1305") {
            continue; // encrypts the whole packet in one call in upstream's code too
        }
        // openssl.c's check: block ciphers (CBC) must refuse a partial block, which
        // OpenSSL would complete by writing past the packet; stream modes need none.
        let got = encrypt(cipher, false, Mode::ShortPacketToCipher, &[100]);
        if cipher.ends_with("-cbc") || cipher.ends_with("@lysator.liu.se") {
            assert_eq!(
                got,
                Err(LIBSSH2_ERROR_ENCRYPT),
                "{cipher}: OpenSSL was handed a partial block"
            );
        } else {
            assert!(got.is_ok(), "{cipher}: stream mode refused: {got:?}");
        }
    }
}

/// The sources build.rs compiles (and the headers and template they include) each
/// name their licence (REUSE-style `SPDX-License-Identifier`); each licence's text ships
/// in libssh2/LICENSES/ and README.patched.md lists it. Vendoring once lost two texts
/// to libssh2's own .gitignore (`*-*-*`).
#[test]
fn every_licence_a_compiled_libssh2_source_names_ships_with_the_vendored_copy() {
    let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vendor/libssh2-sys");
    let build_rs = std::fs::read_to_string(crate_dir.join("build.rs")).unwrap();
    let mut sources: Vec<String> = build_rs
        .split(".file(\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect();
    assert!(
        sources.len() >= 30 && sources.contains(&"libssh2/src/chacha.c".to_string()),
        "build.rs lists {sources:?}"
    );
    for dir in ["libssh2/src", "libssh2/include"] {
        for e in std::fs::read_dir(crate_dir.join(dir)).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".h") || name.ends_with(".h.in") {
                sources.push(format!("{dir}/{name}"));
            }
        }
    }
    let readme = std::fs::read_to_string(crate_dir.join("README.patched.md")).unwrap();
    let mut licences = std::collections::BTreeSet::new();
    for source in &sources {
        let text = std::fs::read_to_string(crate_dir.join(source)).unwrap();
        let id = text
            .lines()
            .find_map(|l| l.split("SPDX-License-Identifier:").nth(1))
            .unwrap_or_else(|| panic!("{source} names no licence"))
            .trim()
            .to_string();
        licences.insert(id);
    }
    for id in &licences {
        let text = crate_dir.join(format!("libssh2/LICENSES/{id}.txt"));
        let len = std::fs::metadata(&text).map_or(0, |m| m.len());
        assert!(len > 100, "{} missing or empty", text.display());
        assert!(
            readme.contains(id.as_str()),
            "README.patched.md does not list {id}"
        );
    }
    for id in ["BSD-2-Clause", "SAX-PD-2.0", "BSD-3-Clause", "MIT"] {
        assert!(licences.contains(id), "{id} not found among {licences:?}");
    }
}
