//! Integration tests: dd flashing with a block map (bmaptool on the host writes only the
//! mapped blocks of a real sparse ext4 image, and only those are read back), a bmap
//! that leaves out data, and a self-hashing image stream whose digest is the one the
//! read-back is compared with; and, after a flash, the wait for boot asking a fake
//! systemctl again while it says `starting`. They need root (loop devices, the lab).

use crate::lab::sh;
use crate::scratch::Scratch;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use benchpipe::flash::bmap::{self, Bmap};
use benchpipe::flash::dd::{self, Options, SelfHashing, Source};
use benchpipe::flash::{FlashError, Progress};
use benchpipe::transport::local::Local;
use benchpipe::transport::{Transport, quote};
use sha2::{Digest, Sha256};

use crate::lab::Lab;

/// A loop device over a file filled with 0xAA, so a block never written shows.
struct LoopDisk {
    device: String,
    file: PathBuf,
}

impl LoopDisk {
    fn new(dir: &Path, mib: u64) -> LoopDisk {
        let file = dir.join("target.disk");
        let f = quote::sh(&file.to_string_lossy());
        sh(&format!(
            "head -c {} /dev/zero | tr '\\0' '\\252' > {f}",
            mib << 20
        ));
        let device = sh(&format!("losetup --find --show {f}"));
        LoopDisk { device, file }
    }

    fn read(&self, offset: u64, len: usize) -> Vec<u8> {
        use std::io::{Seek, SeekFrom};
        let mut f = std::fs::File::open(&self.file).unwrap();
        f.seek(SeekFrom::Start(offset)).unwrap();
        let mut buf = vec![0u8; len];
        f.read_exact(&mut buf).unwrap();
        buf
    }
}

impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.device]).status();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// A sparse 24 MiB image holding a fresh ext4, and its bmap from `bmaptool create`.
fn sparse_image(dir: &Path) -> (PathBuf, Bmap) {
    let img = dir.join("sparse.img");
    let i = quote::sh(&img.to_string_lossy());
    sh(&format!("truncate -s 24M {i} && mkfs.ext4 -q -F {i}"));
    let map = dir.join("sparse.img.bmap");
    sh(&format!(
        "bmaptool create {i} > {}",
        quote::sh(&map.to_string_lossy())
    ));
    assert_eq!(bmap::beside(&img).as_deref(), Some(map.as_path()));
    (img.clone(), bmap::read(&map).unwrap())
}

fn no_progress(_: Progress) {}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The first block no range of `b` covers.
fn unmapped_block(b: &Bmap) -> u64 {
    let bs = b.block_bytes;
    (0..b.image_bytes / bs)
        .map(|k| k * bs)
        .find(|off| !b.ranges.iter().any(|(s, e)| s <= off && *off < *e))
        .expect("a sparse image has unmapped blocks")
}

/// A transport that notes the temporary directories `mktemp -d` made through it.
struct TempDirs<T: Transport> {
    inner: T,
    made: Vec<String>,
}

impl<T: Transport> Transport for TempDirs<T> {
    fn target(&self) -> String {
        self.inner.target()
    }

    fn exec(
        &mut self,
        command: &str,
        timeout: Option<std::time::Duration>,
        stdout: &mut dyn std::io::Write,
        stderr: &mut dyn std::io::Write,
    ) -> Result<benchpipe::transport::Exit, benchpipe::transport::TransportError> {
        if !command.starts_with("mktemp -d ") {
            return self.inner.exec(command, timeout, stdout, stderr);
        }
        let mut out = Vec::new();
        let exit = self.inner.exec(command, timeout, &mut out, stderr)?;
        self.made
            .push(String::from_utf8_lossy(&out).trim().to_string());
        stdout.write_all(&out).unwrap();
        Ok(exit)
    }

    fn exec_input(
        &mut self,
        command: &str,
        timeout: Option<std::time::Duration>,
        stdin: &mut dyn Read,
        stdout: &mut dyn std::io::Write,
        stderr: &mut dyn std::io::Write,
    ) -> Result<benchpipe::transport::Exit, benchpipe::transport::TransportError> {
        self.inner
            .exec_input(command, timeout, stdin, stdout, stderr)
    }

    fn upload(
        &mut self,
        local: &Path,
        remote: &str,
    ) -> Result<(), benchpipe::transport::TransportError> {
        self.inner.upload(local, remote)
    }

    fn download(
        &mut self,
        remote: &str,
        local: &Path,
    ) -> Result<(), benchpipe::transport::TransportError> {
        self.inner.download(remote, local)
    }
}

#[test]
fn bmaptool_over_ssh_writes_only_the_mapped_blocks_of_a_sparse_image_and_they_are_read_back() {
    let Some(lab) = Lab::up(1) else { return };
    let dir = Scratch::new("dd-bmap-ssh");
    let (img, map) = sparse_image(&dir);
    assert!(map.mapped_bytes() < map.image_bytes / 2, "{map:?}");
    let boot = lab
        .board(0)
        .boot
        .clone()
        .expect("the lab board has a boot disk");
    // The boot disk first holds 0xAA everywhere, so a skipped block shows.
    sh(&format!(
        "head -c {} /dev/zero | tr '\\0' '\\252' | dd of={} bs=4M conv=fsync status=none",
        map.image_bytes,
        quote::sh(&boot.device)
    ));
    let mut t = TempDirs {
        inner: lab.connect(0),
        made: Vec::new(),
    };
    let mut f = std::fs::File::open(&img).unwrap();
    let options = Options {
        expected_len: Some(map.image_bytes),
        bmap: Some(&map),
    };
    let report = dd::write_with(
        &mut t,
        &boot.device,
        &[boot.device.as_str()],
        Source::Plain(&mut f),
        &options,
        &no_progress,
    )
    .unwrap();
    let image = std::fs::read(&img).unwrap();
    assert_eq!(report.sha256, hex(&Sha256::digest(&image)));
    let b = report.bmap.expect("bmaptool was used");
    assert_eq!(b.mapped_bytes, map.mapped_bytes());
    let mut mapped = Vec::new();
    for (s, e) in &map.ranges {
        mapped.extend_from_slice(&image[*s as usize..*e as usize]);
    }
    assert_eq!(b.mapped_sha256, hex(&Sha256::digest(&mapped)));
    // On the device: the mapped ranges are the image's, an unmapped block was skipped.
    let mut dev = std::fs::File::open(&boot.device).unwrap();
    let mut on_dev = vec![0u8; map.image_bytes as usize];
    dev.read_exact(&mut on_dev).unwrap();
    for (s, e) in &map.ranges {
        assert!(on_dev[*s as usize..*e as usize] == image[*s as usize..*e as usize]);
    }
    let hole = unmapped_block(&map) as usize;
    assert!(on_dev[hole..hole + 4096].iter().all(|b| *b == 0xAA));
    // The host keeps nothing of the flash. Only this flash's directory is looked for:
    // the lab board's /tmp is the machine's, where other tests flash at the same time.
    assert_eq!(t.made.len(), 1, "{:?}", t.made);
    let left = t
        .inner
        .run(
            &format!(
                "test -e {} && echo left || echo gone",
                quote::sh(&t.made[0])
            ),
            None,
        )
        .unwrap();
    assert_eq!(left.stdout_str().trim(), "gone", "{:?}", t.made);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bmap_that_leaves_out_data_the_image_holds_fails_the_flash() {
    if !crate::need_root("losetup and the lab") {
        return;
    }
    let dir = Scratch::new("dd-bmap-stray");
    let (img, map) = sparse_image(&dir);
    let disk = LoopDisk::new(&dir, 32);
    // Data written into a block the bmap calls empty.
    let hole = unmapped_block(&map);
    sh(&format!(
        "printf 'not empty' | dd of={} bs=1 seek={} conv=notrunc status=none",
        quote::sh(&img.to_string_lossy()),
        hole + 100
    ));
    let mut f = std::fs::File::open(&img).unwrap();
    let options = Options {
        expected_len: Some(map.image_bytes),
        bmap: Some(&map),
    };
    let err = dd::write_with(
        &mut Local::new(),
        &disk.device,
        &[disk.device.as_str()],
        Source::Plain(&mut f),
        &options,
        &no_progress,
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, FlashError::Image(_)), "{err:?}");
    assert!(
        text.contains("leaves out data") && text.contains(&format!("byte {}", hole + 100)),
        "{text}"
    );
    // A bmap for another image size is refused before anything is written.
    let wrong = Options {
        expected_len: Some(map.image_bytes + 4096),
        bmap: Some(&map),
    };
    let before = disk.read(0, 4096);
    let err = dd::write_with(
        &mut Local::new(),
        &disk.device,
        &[disk.device.as_str()],
        Source::Plain(&mut std::fs::File::open(&img).unwrap()),
        &wrong,
        &no_progress,
    )
    .unwrap_err();
    assert!(err.to_string().contains("describes a"), "{err}");
    assert_eq!(disk.read(0, 4096), before, "written although refused");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fake self-hashing stream: yields `data` and then claims `digest`.
struct FakeHashed {
    data: std::io::Cursor<Vec<u8>>,
    digest: String,
    ended: bool,
}

impl Read for FakeHashed {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.data.read(buf)?;
        self.ended |= n == 0;
        Ok(n)
    }
}

impl SelfHashing for FakeHashed {
    fn sha256(&self) -> Option<String> {
        self.ended.then(|| self.digest.clone())
    }
}

#[test]
fn fake_self_hashing_stream_its_digest_is_the_one_the_read_back_must_match() {
    if !crate::need_root("losetup and the lab") {
        return;
    }
    let dir = Scratch::new("dd-hashed");
    let disk = LoopDisk::new(&dir, 8);
    let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
    let right = hex(&Sha256::digest(&data));
    let write = |digest: &str| {
        let mut s = FakeHashed {
            data: std::io::Cursor::new(data.clone()),
            digest: digest.to_string(),
            ended: false,
        };
        dd::write_with(
            &mut Local::new(),
            &disk.device,
            &[disk.device.as_str()],
            Source::Hashed(&mut s),
            &Options {
                expected_len: Some(data.len() as u64),
                bmap: None,
            },
            &no_progress,
        )
    };
    let report = write(&right).unwrap();
    assert_eq!(report.sha256, right);
    assert_eq!(disk.read(0, data.len()), data);
    // dd took the stream's word for its digest (it did not hash the bytes again), and
    // the read-back holds it to it.
    let wrong = "0".repeat(64);
    match write(&wrong) {
        Err(FlashError::Verify {
            expected, found, ..
        }) => {
            assert_eq!(expected, wrong);
            assert_eq!(found, right);
        }
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A lab board whose `[power] cycle` runs this build's benchpipe and, with `fake`, also
/// puts it over `/usr/bin/systemctl` in the booted sshd's mount namespace (that board's
/// only), and a scenario flashing `img`.
fn boot_project(lab: &Lab, img: &Path, fake: Option<&Path>) {
    let board = lab.board(0);
    let text = std::fs::read_to_string(&board.board_file).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("cycle = "))
        .expect("the lab board declares a power cycle")
        .to_string();
    let command: String = toml::from_str::<toml::Value>(&line).unwrap()["cycle"]
        .as_str()
        .unwrap()
        .to_string();
    let command = command.replacen("benchpipe", env!("CARGO_BIN_EXE_benchpipe"), 1);
    let command = match fake {
        Some(fake) => format!(
            "{command} && nsenter -t \"$(cat {})\" -m mount --bind {} /usr/bin/systemctl",
            quote::sh(&board.sshd_pid_file.to_string_lossy()),
            quote::sh(&fake.to_string_lossy())
        ),
        None => command,
    };
    let value = toml::Value::String(command).to_string();
    std::fs::write(
        &board.board_file,
        text.replace(&line, &format!("cycle = {value}")),
    )
    .unwrap();
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
    let sha = hex(&Sha256::digest(std::fs::read(img).unwrap()));
    std::fs::write(
        lab.root.join("scenarios/boot.toml"),
        format!(
            "title = \"boot\"\n[images.v1]\npath = \"{}\"\nsha256 = \"{sha}\"\n\
             [images.v1.expect]\nos_release = {{ ID = \"bpboot\", VERSION_ID = \"1\" }}\n\
             [matrix]\nimage = [\"v1\"]\nboard = [\"{}\"]\ntest = [\"osver\"]\n\
             [method]\nwarmup = {{ runs = 0 }}\nruns = {{ min = 1, max = 1 }}\n",
            img.display(),
            board.name
        ),
    )
    .unwrap();
}

#[test]
fn fake_systemctl_the_wait_for_boot_keeps_asking_while_systemd_says_starting() {
    let Some(lab) = Lab::up(1) else { return };
    let dir = Scratch::new("dd-systemctl");
    let img = crate::firstboot::lab_ready(
        &lab,
        &dir,
        "v1",
        &benchpipe::lab::image::ImageSpec::new("bpboot", "1"),
        benchpipe::lab::image::Compression::None,
    );
    // Says `starting` (and returns at once, as a systemctl without --wait does) on its
    // first three calls, then `running`; counts the calls.
    let calls = dir.join("calls");
    let fake = dir.join("systemctl");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$*\" in *is-system-running*) ;; *) exit 0;; esac\n\
             n=$(($(cat {c} 2>/dev/null || echo 0) + 1)); echo \"$n\" > {c}\n\
             if [ \"$n\" -le 3 ]; then echo starting; exit 1; fi\necho running\n",
            c = quote::sh(&calls.to_string_lossy())
        ),
    )
    .unwrap();
    sh(&format!("chmod 755 {}", quote::sh(&fake.to_string_lossy())));
    boot_project(&lab, &img, Some(&fake));
    let out = crate::lab::bp(&lab.root, &["apply", "--no-report", "scenarios/boot.toml"]);
    let said = crate::lab::text(&out);
    assert!(out.status.success(), "{said}");
    assert_eq!(
        std::fs::read_to_string(&calls).unwrap().trim(),
        "4",
        "{said}"
    );
    assert!(said.contains("systemd says starting: waiting"), "{said}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn apply_flashes_with_the_bmap_beside_the_image_and_records_the_mapped_bytes() {
    let Some(lab) = Lab::up(1) else { return };
    let dir = Scratch::new("dd-bmap-apply");
    let img = crate::firstboot::lab_ready(
        &lab,
        &dir,
        "v1",
        &benchpipe::lab::image::ImageSpec::new("bpboot", "1"),
        benchpipe::lab::image::Compression::None,
    );
    let i = quote::sh(&img.to_string_lossy());
    sh(&format!("bmaptool create {i} > {i}.bmap"));
    let map = bmap::read(&bmap::beside(&img).unwrap()).unwrap();
    boot_project(&lab, &img, None);
    let out = crate::lab::bp(&lab.root, &["apply", "--no-report", "scenarios/boot.toml"]);
    let said = crate::lab::text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains(&format!(
            "({} mapped bytes written by bmaptool, read back)",
            map.mapped_bytes()
        )),
        "{said}"
    );
    let facts: Vec<serde_json::Value> = std::fs::read_dir(lab.root.join("results"))
        .unwrap()
        .filter_map(|e| std::fs::read_to_string(e.unwrap().path().join("facts.json")).ok())
        .map(|t| serde_json::from_str(&t).unwrap())
        .collect();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0]["flashed"]["bmap_mapped_bytes"], map.mapped_bytes());
    let _ = std::fs::remove_dir_all(&dir);
}
