//! The text of the files `benchpipe init` writes: a board file from what a host said
//! (`probe::HostFacts`), the starter scenario, the example board and `.gitignore`.
//! Every value from the host is cleaned to one printable line and written as a TOML
//! basic string (`q`), so that neither a value nor a comment can end its line.

use crate::network::links::Link;
use crate::probe::{HostFacts, Privilege};
use crate::storage::lsblk::Disk;
use std::fmt::Write as _;

/// The starter scenario's path in the workspace.
pub const SCENARIO: &str = "scenarios/first.toml";
/// The storage init declares on every board: a directory on the system disk.
pub const SYSTEM_STORAGE: &str = "system";

/// What the board file says of how it is reached.
pub struct Reach<'a> {
    pub name: &'a str,
    pub host: &'a str,
    pub port: Option<u16>,
    pub user: &'a str,
    pub identity: Option<&'a str>,
    /// The workspace known_hosts and the fingerprint init recorded there.
    pub known_hosts: Option<(&'a str, &'a str)>,
}

/// `s` as a TOML basic string on one line: `"` and `\` escaped, any control character
/// as `\uXXXX`.
pub fn q(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A host's text for a comment: printable, one line, at most 160 characters.
fn note(s: &str) -> String {
    let s: String = s.chars().filter(|c| !c.is_control()).take(160).collect();
    s.trim().to_string()
}

/// `335544320 bytes (320.0 MiB)`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = "bytes";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    if unit == "bytes" {
        format!("{n} bytes")
    } else {
        format!("{n} bytes ({v:.1} {unit})")
    }
}

/// The workdir a board named `name` gets by default, and the system storage's path in it.
pub fn workdir(name: &str) -> String {
    format!("/var/tmp/benchpipe/{name}")
}

/// The board file for one probed host.
pub fn board_file(reach: &Reach, h: &HostFacts) -> String {
    let mut s = String::new();
    let name = reach.name;
    let _ = writeln!(
        s,
        "# Written by `benchpipe init` from what {} said about itself; edit it freely.",
        note(reach.host)
    );
    let os = h
        .os_release
        .get("PRETTY_NAME")
        .or(h.os_release.get("ID"))
        .map_or_else(|| "a system without /etc/os-release".into(), |o| note(o));
    let _ = write!(
        s,
        "# It runs {os}{}; benchpipe logs in as {}.\n\n",
        h.arch
            .as_deref()
            .map(|a| format!(" ({a})"))
            .unwrap_or_default(),
        note(reach.user)
    );
    s.push_str(
        "# Part of every cell's key (numbers from another model are other numbers): rename\n\
         # it as reports should call this kind of board, before the first apply.\n",
    );
    if let Some(m) = h.model.as_deref().map(note).filter(|m| !m.is_empty()) {
        let _ = writeln!(s, "model = {}", q(&m));
    } else {
        s.push_str("# The board named no model (no device tree, no DMI): name it here.\n");
        let arch = h.arch.as_deref().unwrap_or("unknown");
        let _ = writeln!(s, "model = {}", q(&format!("unknown {arch} board")));
    }
    if let Some(a) = &h.arch {
        let _ = writeln!(s, "arch = {}", q(a));
    }
    if let Some(kib) = h.memory_kib.filter(|k| *k >= 1024) {
        s.push_str("# MemTotal: what the kernel manages, a little under the RAM fitted.\n");
        let _ = writeln!(s, "memory = {}", q(&format!("{} MiB", kib / 1024)));
    }
    let _ = write!(s, "workdir = {}\n\n[ssh]\n", q(&workdir(name)));
    let _ = writeln!(s, "host = {}", q(reach.host));
    if let Some(p) = reach.port {
        let _ = writeln!(s, "port = {p}");
    }
    let _ = writeln!(s, "user = {}", q(reach.user));
    if let Some(id) = reach.identity {
        let _ = writeln!(s, "identity = {}", q(id));
    }
    if let Some((file, fingerprint)) = reach.known_hosts {
        let _ = write!(
            s,
            "# The host key init recorded with --accept-new-host-key: {fingerprint}.\nknown_hosts = {}\n",
            q(file)
        );
    }
    match h.privilege {
        Privilege::Root => {}
        Privilege::PasswordlessSudo => s.push_str(
            "# Not root: formatting, mounting (xz's tmpfs too) and installing run through\n\
             # sudo, which needs no password here.\n\
             become = \"sudo\"\n",
        ),
        Privilege::SudoWithPassword => {
            let _ = write!(
                s,
                "# Not root, and sudo asks for a password: formatting, mounting (xz's tmpfs too)\n\
             # and installing need root. Allow NOPASSWD for this user, or uncomment both\n\
             # lines and export the password in that variable before apply.\n\
             # become = \"sudo\"\n\
             # sudo_password_env = {}\n",
                q(&format!(
                    "{}_SUDO_PASSWORD",
                    name.to_ascii_uppercase().replace(['-', '.'], "_")
                ))
            );
        }
        Privilege::None => s.push_str(
            "# Not root and no sudo: formatting, mounting (xz's tmpfs too) and installing\n\
             # need root; log in as root, or install sudo and set become = \"sudo\".\n",
        ),
    }
    networks(&mut s, h);
    storage(&mut s, name, h);
    s
}

fn networks(s: &mut String, h: &HostFacts) {
    let via = h
        .ssh_address
        .as_deref()
        .and_then(|a| crate::network::links::holding(&h.links, a).map(|l| (a, l)));
    let kind = |name: &str| {
        if h.wireless.contains(name) {
            "wifi"
        } else {
            "wired"
        }
    };
    if let Some((address, link)) = via
        && crate::network::rules::address_problem(address).is_none()
    {
        let _ = write!(
            s,
            "\n# The link SSH came in on; a scenario's `network` axis can name it.\n\
             [[network]]\nname = {}\naddress = {}\ninterface = {}\nkind = {}\n",
            q(if kind(&link.name) == "wifi" {
                "wifi"
            } else {
                "lan"
            }),
            q(address),
            q(&link.name),
            q(kind(&link.name)),
        );
    }
    let others: Vec<_> = h
        .links
        .iter()
        .filter(|l| !l.loopback && via.is_none_or(|(_, v)| v.name != l.name))
        .collect();
    let (with, without): (Vec<&Link>, Vec<&Link>) =
        others.into_iter().partition(|l| !l.ipv4.is_empty());
    if !with.is_empty() {
        s.push_str("\n# The board's other links (uncomment one to test over it too):\n");
        for l in with {
            let _ = write!(
                s,
                "# [[network]]\n# name = {}\n# address = {}\n# interface = {}\n# kind = {}\n",
                q(&l.name),
                q(&l.ipv4[0]),
                q(&l.name),
                q(kind(&l.name)),
            );
        }
    }
    if !without.is_empty() {
        let names: Vec<&str> = without.iter().map(|l| l.name.as_str()).collect();
        let _ = writeln!(s, "# Links without an IPv4 address: {}.", names.join(", "));
    }
}

fn storage(s: &mut String, name: &str, h: &HostFacts) {
    let _ = write!(
        s,
        "\n# `{SYSTEM_STORAGE}`: a directory on the disk the system runs from. Tests measure its\n\
         # filesystem as it is (filesystem \"as-is\"); benchpipe never formats it.\n\
         [[storage]]\nname = {}\nrole = \"boot\"\npath = {}\n",
        q(SYSTEM_STORAGE),
        q(&format!("{}/{SYSTEM_STORAGE}", workdir(name))),
    );
    let storage: Vec<&Disk> = h.disks.iter().filter(|d| d.is_storage()).collect();
    for d in storage.iter().filter(|d| d.in_use()) {
        let mut at: Vec<String> = d.mounts.iter().map(|m| note(m)).collect();
        if d.more_mounts > 0 {
            at.push(format!("{} more", d.more_mounts));
        }
        let _ = writeln!(
            s,
            "# In use, never a scratch device: {}{}, mounted at {}.",
            d.name,
            described(d),
            at.join(", ")
        );
    }
    let free: Vec<&&Disk> = storage
        .iter()
        .filter(|d| !d.in_use() && d.name != SYSTEM_STORAGE && crate::model::is_plain_name(&d.name))
        .collect();
    if free.is_empty() {
        s.push_str("# No free disk: plug one in and run `benchpipe init` for a new board file, or\n# add a [[storage]] with role = \"scratch\" by hand (docs/FORMAT.md).\n");
    } else {
        s.push_str(
            "\n# Free disks. Uncommenting a block lets benchpipe FORMAT that disk for a scenario's\n\
             # filesystem cells: everything on it is lost. Its serial and size (or its by-id\n\
             # path) make apply refuse any other disk that shows up under that name.\n",
        );
    }
    for d in free {
        scratch_block(s, d, h);
    }
    if let Some(n) = &h.disks_note {
        let _ = writeln!(s, "# Disks: {}.", note(n));
    }
}

/// `, 500107862016 bytes (465.8 GiB), usb, Portable SSD T5`.
fn described(d: &Disk) -> String {
    let mut parts = Vec::new();
    if let Some(n) = d.size {
        parts.push(bytes(n));
    }
    if let Some(t) = &d.tran {
        parts.push(note(t));
    }
    if let Some(m) = &d.model {
        parts.push(note(m));
    }
    if d.kind == "loop" {
        parts.push("a loop device".into());
    }
    parts.iter().fold(String::new(), |mut out, p| {
        let _ = write!(out, ", {p}");
        out
    })
}

/// A `/dev/disk/by-id/` name benchpipe writes: a plain file name.
fn safe_by_id(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 200
        && !n.starts_with('.')
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._:+@-".contains(c))
}

fn scratch_block(s: &mut String, d: &Disk, h: &HostFacts) {
    let facts = h.disk_facts.get(&d.name);
    // The serial and size apply compares are sysfs's (`storage::facts`), not lsblk's.
    let serial = facts
        .and_then(|f| f.serial.as_deref())
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() <= 128 && !v.chars().any(char::is_control));
    let size = facts.and_then(|f| f.size_bytes).or(d.size);
    let by_id = facts.and_then(|f| {
        let ok: Vec<&String> = f.by_id.iter().filter(|n| safe_by_id(n)).collect();
        ok.iter()
            .find(|n| !n.starts_with("wwn-"))
            .or(ok.first())
            .map(|n| format!("/dev/disk/by-id/{n}"))
    });
    let device = by_id.unwrap_or_else(|| format!("/dev/{}", d.name));
    let backing = facts
        .and_then(|f| f.backing_file.as_deref())
        .map(|b| format!(" on {}", note(b)))
        .unwrap_or_default();
    let _ = write!(s, "\n# {}{}{backing}.\n", d.name, described(d));
    let _ = write!(
        s,
        "# [[storage]]\n# name = {}\n# role = \"scratch\"\n# device = {}\n",
        q(&d.name),
        q(&device)
    );
    if let Some(m) = d
        .model
        .as_deref()
        .or(facts.and_then(|f| f.model.as_deref()))
    {
        let _ = writeln!(s, "# model = {}", q(&note(m)));
    }
    if let Some(v) = serial {
        let _ = writeln!(s, "# serial = {}", q(v));
    }
    if let Some(n) = size {
        let _ = writeln!(s, "# size = {n}");
    }
}

/// The starter scenario: xz and 4K random I/O on every board's system disk.
pub fn scenario() -> String {
    format!(
        r#"# Your first scenario, written by `benchpipe init`: the CPU (xz) and the disk the
# system runs from (4K random reads and writes with fio) on every board in boards/.
title = "First look: xz and 4K random I/O"

# "installed": whatever each board runs now; benchpipe flashes nothing.
[images.installed]
installed = true

[matrix]
image = ["installed"]
board = ["*"]
# `{SYSTEM_STORAGE}` is the directory on each board's system disk that init declared; "as-is"
# measures its filesystem as it is. To measure another disk: uncomment its [[storage]]
# block in the board file (benchpipe will FORMAT it), add its name here, and add a
# filesystem below, e.g. filesystem = ["as-is", "ext4"] with the [filesystems.ext4] table.
storage = ["{SYSTEM_STORAGE}"]
filesystem = ["as-is"]
test = ["xz", "disk-4k"]

# [filesystems.ext4]
# kind = "ext4"
# mount_options = ["noatime"]

[method]
cooldown = "30s"
warmup = {{ runs = 1 }}
# At least 3 measured runs, up to 10 until the 95% interval is within 5% of the mean.
runs = {{ min = 3, max = 10, target = "5%" }}

# Smaller than the recipes' defaults, for a first run of a few minutes per board.
[params.xz]
corpus_mib = 32

[params.disk-4k]
size = "64M"
runtime = 5
"#
    )
}

/// `.gitignore`: measurements and rendered reports stay out of version control.
pub const GITIGNORE: &str =
    "# benchpipe: the store and the rendered reports\n/results/\n/reports/\n";

/// The example board file `init` writes when no board was named (every line a comment).
pub fn example_board() -> String {
    let name = "pi4-1";
    format!(
        r#"# An example board file. Copy it to boards/<name>.toml (the file's name is the
# board's), remove the `# ` before each line and describe your board; or let
# `benchpipe init --board [user@]HOST` write one from what the board says about itself.
# Every key is in docs/FORMAT.md.
#
# model = "Raspberry Pi 4 Model B Rev 1.4"
# arch = "aarch64"
# memory = "4 GiB"
# workdir = {workdir}
#
# [ssh]
# host = "192.168.1.20"
# user = "pi"
# become = "sudo"
#
# [[storage]]
# name = "{SYSTEM_STORAGE}"
# role = "boot"
# path = {path}
#
# # A disk benchpipe may FORMAT (everything on it is lost), named by its by-id path.
# [[storage]]
# name = "ssd"
# role = "scratch"
# device = "/dev/disk/by-id/usb-Samsung_Portable_SSD_T5_S49WNP0N120517A-0:0"
# serial = "S49WNP0N120517A"
# size = 500107862016
"#,
        workdir = q(&workdir(name)),
        path = q(&format!("{}/{SYSTEM_STORAGE}", workdir(name))),
    )
}
