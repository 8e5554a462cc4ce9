//! `lsblk -J -b` output, read purely: a board's whole disks with what is mounted on
//! them (theirs, their partitions' and their holders'), so that `init` can tell a disk
//! in use from one that may be declared scratch. Every count, depth and text is bounded:
//! the JSON comes from the board.

use serde_json::Value;

/// Disks kept from one listing; more are counted, not kept.
pub const MAX_DISKS: usize = 64;
/// Mount points kept per disk (the count of the rest is kept).
pub const MAX_MOUNTS: usize = 8;
/// How deep partitions and holders are followed (disk, partition, LVM, crypt...).
const MAX_DEPTH: usize = 8;
/// Nodes walked in all: a listing of many thousand devices is not a board's.
const MAX_NODES: usize = 4096;
/// The longest text kept of one field.
const MAX_TEXT: usize = 128;

/// One whole disk (or loop device) as lsblk lists it at the top level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Disk {
    /// The kernel name (`sda`, `mmcblk0`, `nvme0n1`): only `[A-Za-z0-9_-]`.
    pub name: String,
    /// `disk`, `loop`, `rom`...
    pub kind: String,
    pub size: Option<u64>,
    pub model: Option<String>,
    pub serial: Option<String>,
    /// `usb`, `sata`, `nvme`, `mmc`...
    pub tran: Option<String>,
    /// Mount points on it, its partitions or holders (`[SWAP]` for swap), at most
    /// `MAX_MOUNTS`.
    pub mounts: Vec<String>,
    /// Mount points left out past `MAX_MOUNTS`.
    pub more_mounts: usize,
}

impl Disk {
    /// Whether anything is mounted (or swapped) on it.
    pub fn in_use(&self) -> bool {
        !self.mounts.is_empty() || self.more_mounts > 0
    }

    /// Whether it can hold a benchmark's scratch filesystem: a disk or a loop device
    /// with a size, not RAM (`zram`, `ram`) nor an eMMC's boot or RPMB area.
    pub fn is_storage(&self) -> bool {
        let special = self.name.starts_with("zram")
            || self.name.starts_with("ram")
            || self.name.contains("boot")
            || self.name.ends_with("rpmb");
        matches!(self.kind.as_str(), "disk" | "loop") && !special && self.size.unwrap_or(0) > 0
    }
}

/// The listing's top-level devices, in its order; the count of disks left out past
/// `MAX_DISKS` or for a name that is not a plain kernel name.
pub fn parse(text: &str) -> Result<(Vec<Disk>, usize), String> {
    let start = text
        .find('{')
        .ok_or_else(|| "lsblk printed no JSON".to_string())?;
    let doc: Value =
        serde_json::from_str(&text[start..]).map_err(|e| format!("lsblk's JSON: {e}"))?;
    let devices = doc
        .get("blockdevices")
        .and_then(Value::as_array)
        .ok_or_else(|| "lsblk's JSON has no `blockdevices` list".to_string())?;
    let mut disks = Vec::new();
    let mut left_out = 0;
    let mut nodes = 0;
    for d in devices {
        let name = text_of(d.get("name")).unwrap_or_default();
        if disks.len() >= MAX_DISKS || !kernel_name(&name) {
            left_out += 1;
            continue;
        }
        let mut disk = Disk {
            name,
            kind: text_of(d.get("type")).unwrap_or_default(),
            size: number_of(d.get("size")),
            model: text_of(d.get("model")),
            serial: text_of(d.get("serial")),
            tran: text_of(d.get("tran")),
            ..Disk::default()
        };
        collect_mounts(d, 0, &mut nodes, &mut disk);
        disks.push(disk);
    }
    Ok((disks, left_out))
}

/// A name lsblk gives a block device: what `/dev/NAME` may be built from.
pub fn kernel_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn collect_mounts(node: &Value, depth: usize, nodes: &mut usize, disk: &mut Disk) {
    *nodes += 1;
    if depth > MAX_DEPTH || *nodes > MAX_NODES {
        // Unseen below here: count it as in use rather than call it free.
        disk.more_mounts += 1;
        return;
    }
    let points: Vec<&Value> = match node.get("mountpoints") {
        Some(Value::Array(a)) => a.iter().collect(),
        _ => node.get("mountpoint").into_iter().collect(),
    };
    for p in points {
        if let Some(p) = text_of(Some(p)) {
            if disk.mounts.len() < MAX_MOUNTS {
                if !disk.mounts.contains(&p) {
                    disk.mounts.push(p);
                }
            } else {
                disk.more_mounts += 1;
            }
        }
    }
    if let Some(Value::Array(children)) = node.get("children") {
        for c in children {
            collect_mounts(c, depth + 1, nodes, disk);
        }
    }
}

/// A string field (older lsblk prints numbers as strings too), one line of printable
/// text, trimmed and cut to `MAX_TEXT` characters; none when empty or null.
fn text_of(v: Option<&Value>) -> Option<String> {
    let s = match v? {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let s: String = s
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_TEXT)
        .collect();
    let s = s.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// A byte count: a JSON number, or (lsblk before 2.33) a string of digits.
fn number_of(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Raspberry Pi 4 booted from SD with a USB SSD and swap on a file (lsblk 2.38).
    const PI: &str = r#"{
   "blockdevices": [
      {"name":"sda", "model":"Portable SSD T5", "serial":"S49WNP0N120517A", "size":500107862016, "type":"disk", "mountpoints":[null], "tran":"usb",
         "children": [
            {"name":"sda1", "model":null, "serial":null, "size":500105740288, "type":"part", "mountpoints":[null], "tran":null}
         ]
      },
      {"name":"mmcblk0", "model":null, "serial":"0x1a2b3c4d", "size":31914983424, "type":"disk", "mountpoints":[null], "tran":null,
         "children": [
            {"name":"mmcblk0p1", "size":536870912, "type":"part", "mountpoints":["/boot/firmware"]},
            {"name":"mmcblk0p2", "size":31373541376, "type":"part", "mountpoints":["/"]}
         ]
      },
      {"name":"mmcblk0boot0", "size":4194304, "type":"disk", "mountpoints":[null]},
      {"name":"zram0", "size":0, "type":"disk", "mountpoints":["[SWAP]"]}
   ]
}"#;

    #[test]
    fn a_disk_with_a_mounted_partition_is_in_use_and_special_areas_are_no_storage() {
        let (disks, left_out) = parse(PI).unwrap();
        assert_eq!(left_out, 0);
        let sda = &disks[0];
        assert_eq!(sda.name, "sda");
        assert_eq!(sda.size, Some(500107862016));
        assert_eq!(sda.model.as_deref(), Some("Portable SSD T5"));
        assert_eq!(sda.serial.as_deref(), Some("S49WNP0N120517A"));
        assert_eq!(sda.tran.as_deref(), Some("usb"));
        assert!(!sda.in_use() && sda.is_storage());
        let sd = &disks[1];
        assert_eq!(sd.mounts, ["/boot/firmware", "/"]);
        assert!(sd.in_use());
        assert!(!disks[2].is_storage(), "an eMMC boot area");
        assert!(!disks[3].is_storage() && disks[3].in_use(), "zram swap");
    }

    #[test]
    fn old_lsblk_strings_and_a_single_mountpoint_are_read() {
        let text = r#"{"blockdevices": [{"name":"sdb","size":"1000204886016","type":"disk","mountpoint":null,
            "children":[{"name":"sdb1","type":"part","mountpoint":"/srv/backup"}]}]}"#;
        let (disks, _) = parse(text).unwrap();
        assert_eq!(disks[0].size, Some(1000204886016));
        assert_eq!(disks[0].mounts, ["/srv/backup"]);
    }

    #[test]
    fn hostile_names_texts_and_depths_are_bounded() {
        let deep = (0..40).fold(
            String::from(r#"{"name":"x","mountpoints":[null]}"#),
            |acc, _| format!(r#"{{"name":"p","mountpoints":[null],"children":[{acc}]}}"#),
        );
        let text = format!(
            r#"{{"blockdevices":[
              {{"name":"../../etc/x","type":"disk","size":1}},
              {{"name":"sdc","type":"disk","size":5,"model":"evil\u001b[31m{long}","children":[{deep}]}}
            ]}}"#,
            long = "m".repeat(10_000),
        );
        let (disks, left_out) = parse(&text).unwrap();
        assert_eq!(left_out, 1, "a name that is no kernel name is left out");
        let d = &disks[0];
        let model = d.model.as_deref().unwrap();
        assert!(!model.contains('\u{1b}') && model.chars().count() <= MAX_TEXT);
        assert!(d.in_use(), "what lies too deep to see is not called free");
    }

    #[test]
    fn not_json_is_an_error_not_a_panic() {
        assert!(parse("lsblk: unknown column: MOUNTPOINTS").is_err());
        assert!(parse("{\"x\":1}").is_err());
    }
}
