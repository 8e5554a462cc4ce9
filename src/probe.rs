//! What a host says about itself, for `benchpipe init`: model, architecture, memory,
//! distribution, whether the login is root or has password-less sudo, the address SSH
//! came in on, its disks (`storage::lsblk`, then each free one's sysfs facts for its
//! serial and `/dev/disk/by-id` name) and its links (`network::links`). One bounded
//! command prints `@@name` sections; `parse` reads them, purely. Everything the host
//! prints is hostile: each file read is cut, each tool bounded in time and output.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::network::links::{self, Link};
use crate::storage::facts::{self, StorageFacts};
use crate::storage::lsblk::{self, Disk};
use crate::transport::{Transport, TransportError};

/// The free disks whose sysfs facts are read, one command each.
pub const MAX_DISK_FACTS: usize = 16;

/// The board-side command. Paths are constants; nothing in it comes from anyone.
pub const SCRIPT: &str = r#"rd() { [ -f "$1" ] && head -c 256 -- "$1" 2>/dev/null | tr -d '\000' | head -n 1; }
echo "@@dt_model"; rd /proc/device-tree/model
echo "@@dmi_product"; rd /sys/class/dmi/id/product_name
echo "@@arch"; uname -m 2>/dev/null | head -c 64
echo "@@memtotal"; grep -m 1 '^MemTotal:' /proc/meminfo 2>/dev/null | head -c 128
echo "@@os_release"; { head -c 16384 /etc/os-release 2>/dev/null || head -c 16384 /usr/lib/os-release 2>/dev/null; } | head -n 64
echo "@@uid"; id -u 2>/dev/null | head -c 32
echo "@@user"; id -un 2>/dev/null | head -c 64
echo "@@sudo"
if [ "$(id -u 2>/dev/null)" = 0 ]; then echo root
elif command -v sudo >/dev/null 2>&1 && timeout 15 sudo -n true </dev/null >/dev/null 2>&1; then echo nopasswd
elif command -v sudo >/dev/null 2>&1; then echo password
else echo none; fi
echo "@@ssh_connection"; printf '%s\n' "${SSH_CONNECTION:-}" | head -c 256
echo "@@lsblk"
{ timeout 20 lsblk -J -b -o NAME,MODEL,SERIAL,SIZE,TYPE,MOUNTPOINTS,TRAN 2>/dev/null || timeout 20 lsblk -J -b -o NAME,MODEL,SERIAL,SIZE,TYPE,MOUNTPOINT,TRAN 2>/dev/null; } | head -c 1048576
echo; echo "@@ip"; timeout 10 ip -j addr 2>/dev/null | head -c 1048576
echo; echo "@@wireless"
for d in /sys/class/net/*; do if [ -d "$d/wireless" ] || [ -e "$d/phy80211" ]; then echo "${d##*/}"; fi; done 2>/dev/null | head -n 64
"#;

/// Whether the login can run what benchpipe needs root for (mkfs, mount, apt-get).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Privilege {
    Root,
    /// Not root; `sudo -n true` works.
    PasswordlessSudo,
    /// Not root; sudo is there but asks for a password.
    SudoWithPassword,
    /// Not root and no sudo.
    None,
}

/// What the host said. What it did not say is absent.
#[derive(Clone, Debug, PartialEq)]
pub struct HostFacts {
    /// `/proc/device-tree/model` (ARM boards), else DMI's product name.
    pub model: Option<String>,
    pub arch: Option<String>,
    pub memory_kib: Option<u64>,
    pub os_release: BTreeMap<String, String>,
    pub user: Option<String>,
    pub privilege: Privilege,
    /// The board's own address of the SSH connection (`$SSH_CONNECTION`'s third word).
    pub ssh_address: Option<String>,
    pub disks: Vec<Disk>,
    /// Why there is no disk list (lsblk missing or unreadable), or devices left out.
    pub disks_note: Option<String>,
    pub links: Vec<Link>,
    pub wireless: BTreeSet<String>,
    /// The sysfs facts of free disks, by kernel name (serial as apply compares it,
    /// `/dev/disk/by-id` names).
    pub disk_facts: BTreeMap<String, StorageFacts>,
}

/// Asks the host, within bounded time: the script, then the sysfs facts of up to
/// `MAX_DISK_FACTS` free disks (`storage::facts`, as apply reads them).
pub fn gather(t: &mut dyn Transport) -> Result<HostFacts, TransportError> {
    let out = t.run(SCRIPT, Some(Duration::from_secs(90)))?;
    let mut host = parse(&out.stdout_str());
    let free: Vec<String> = host
        .disks
        .iter()
        .filter(|d| d.is_storage() && !d.in_use())
        .take(MAX_DISK_FACTS)
        .map(|d| d.name.clone())
        .collect();
    for name in free {
        let f = facts::gather(t, facts::SYSFS, &format!("/dev/{name}"))?;
        host.disk_facts.insert(name, f);
    }
    Ok(host)
}

fn sections(text: &str) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("@@") {
            current = Some(name.trim());
            out.entry(name.trim()).or_default();
        } else if let Some(c) = current {
            out.entry(c).or_default().push(line);
        }
    }
    out
}

/// One line of printable text, trimmed, at most 128 characters; none when empty.
fn clean(s: &str) -> Option<String> {
    let s: String = s.chars().filter(|c| !c.is_control()).take(128).collect();
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// The text the script printed, as facts.
pub fn parse(text: &str) -> HostFacts {
    let s = sections(text);
    let one = |k: &str| s.get(k).and_then(|v| v.first()).and_then(|v| clean(v));
    let whole = |k: &str| s.get(k).map(|v| v.join("\n")).unwrap_or_default();
    let (disks, disks_note) = match lsblk::parse(&whole("lsblk")) {
        Ok((d, 0)) => (d, None),
        Ok((d, n)) => (
            d,
            Some(format!(
                "{n} device(s) not listed (too many, or an unusual name)"
            )),
        ),
        Err(e) => (Vec::new(), Some(format!("no disks listed: {e}"))),
    };
    let links = links::parse(&whole("ip"))
        .map(|(l, _)| l)
        .unwrap_or_default();
    let os_release = crate::image::expect::parse_os_release(&whole("os_release"))
        .into_iter()
        .filter_map(|(k, v)| Some((k, clean(&v)?)))
        .take(64)
        .collect();
    HostFacts {
        model: one("dt_model").or_else(|| one("dmi_product")),
        arch: one("arch")
            .filter(|a| a.len() <= 32 && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')),
        memory_kib: one("memtotal").and_then(|l| {
            let kib = l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?;
            kib.trim().parse().ok()
        }),
        os_release,
        user: one("user"),
        privilege: match one("sudo").as_deref() {
            Some("root") => Privilege::Root,
            Some("nopasswd") => Privilege::PasswordlessSudo,
            Some("password") => Privilege::SudoWithPassword,
            _ => Privilege::None,
        },
        ssh_address: one("ssh_connection")
            .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
            .filter(|a| a.parse::<std::net::IpAddr>().is_ok()),
        disks,
        disks_note,
        links,
        wireless: s
            .get("wireless")
            .into_iter()
            .flatten()
            .filter(|n| crate::network::rules::interface_problem(n).is_none())
            .map(ToString::to_string)
            .collect(),
        disk_facts: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pi_says_its_model_memory_distribution_and_link() {
        let text = "@@dt_model\nRaspberry Pi 4 Model B Rev 1.4\n@@dmi_product\n@@arch\naarch64\n\
            @@memtotal\nMemTotal:        3884328 kB\n@@os_release\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n\
            @@uid\n1000\n@@user\npi\n@@sudo\nnopasswd\n@@ssh_connection\n192.168.1.5 50000 192.168.1.20 22\n\
            @@lsblk\n{\"blockdevices\":[{\"name\":\"sda\",\"type\":\"disk\",\"size\":5}]}\n\
            @@ip\n[{\"ifname\":\"eth0\",\"addr_info\":[{\"family\":\"inet\",\"local\":\"192.168.1.20\"}]}]\n@@wireless\nwlan0\n";
        let h = parse(text);
        assert_eq!(h.model.as_deref(), Some("Raspberry Pi 4 Model B Rev 1.4"));
        assert_eq!(h.arch.as_deref(), Some("aarch64"));
        assert_eq!(h.memory_kib, Some(3884328));
        assert_eq!(h.os_release["ID"], "debian");
        assert_eq!(h.user.as_deref(), Some("pi"));
        assert_eq!(h.privilege, Privilege::PasswordlessSudo);
        assert_eq!(h.ssh_address.as_deref(), Some("192.168.1.20"));
        assert_eq!(h.disks[0].name, "sda");
        assert_eq!(h.links[0].name, "eth0");
        assert!(h.wireless.contains("wlan0"));
    }

    #[test]
    fn a_host_that_says_nothing_or_garbage_gives_absent_facts() {
        let h = parse(
            "@@dt_model\n\u{1b}]0;x\u{7}\n@@arch\naarch64; rm -rf /\n@@lsblk\nnope\n@@ssh_connection\na b c d\n",
        );
        assert_eq!(h.model.as_deref(), Some("]0;x"), "controls dropped");
        assert_eq!(h.arch, None);
        assert_eq!(h.ssh_address, None);
        assert!(h.disks.is_empty() && h.disks_note.is_some());
        assert_eq!(h.privilege, Privilege::None);
    }
}
