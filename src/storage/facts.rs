//! What a storage device is, read from the board's sysfs: model, serial, size,
//! rotational, I/O scheduler and, for USB storage, the driver (`uas` or `usb-storage`),
//! the link speed and the device's VID:PID. Recorded in each cell's facts and read by
//! the UAS step to verify the driver. A partition is resolved to its disk, a
//! `/dev/disk/by-id` link to its device. What a device lacks (a loop device has no
//! model) is absent, never an error. One bounded command; the text it prints is parsed
//! here, purely.

use std::time::Duration;

use serde::Serialize;

use super::lsusb;
use crate::transport::{Transport, TransportError, quote};

/// The board's sysfs, where the facts come from outside tests.
pub use crate::transport::connector::SYSFS;

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StorageFacts {
    /// The device as declared.
    pub device: String,
    /// Links resolved (`/dev/sda1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real: Option<String>,
    /// The kernel name of the whole disk (`sda` for `/dev/sda1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// Whether the declared device is a partition of `disk`.
    pub partition: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotational: Option<bool>,
    /// The scheduler in use (the bracketed one of `queue/scheduler`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheduler: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// From sysfs (`device/serial`: eMMC, SD, NVMe), else udev's `ID_SERIAL_SHORT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// The disk's names under `/dev/disk/by-id` (at most 8).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_id: Vec<String>,
    /// A loop device's backing file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backing_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usb: Option<UsbFacts>,
}

/// The USB interface a disk hangs off, and its device.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct UsbFacts {
    /// The device's sysfs name (`2-1`).
    pub device: String,
    /// The interface's sysfs name (`2-1:1.0`).
    pub interface: String,
    /// `uas` or `usb-storage` (whatever driver is bound); absent when none is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Where the driver was read: `sysfs` or `lsusb -t`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_from: Option<String>,
    /// The link speed as lsusb prints it: `480M`, `5000M`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<String>,
    /// `vvvv:pppp`, lower case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The USB version the device declares (`3.10`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The board-side command: prints `@@name` sections. Every file read is a few bytes of
/// a regular file, every loop has a bound, and the whole command a timeout.
pub fn script(sysfs: &str, device: &str) -> String {
    let real_sys = sysfs == SYSFS;
    format!(
        r#"sys={sys}; dev={dev}
rd() {{ [ -f "$1" ] && head -c 256 -- "$1" 2>/dev/null | tr -d '\000' | head -n 1; }}
r=$(readlink -f -- "$dev" 2>/dev/null)
echo "@@real"; echo "$r"
name=${{r##*/}}
[ -n "$name" ] && [ -e "$sys/class/block/$name" ] || exit 0
disk=$name
if [ -e "$sys/class/block/$name/partition" ]; then p=$(readlink -f -- "$sys/class/block/$name/.."); disk=${{p##*/}}; echo "@@partition"; echo 1; fi
d="$sys/block/$disk"
echo "@@disk"; echo "$disk"
echo "@@size"; rd "$d/size"
echo "@@rotational"; rd "$d/queue/rotational"
echo "@@scheduler"; rd "$d/queue/scheduler"
echo "@@model"; rd "$d/device/model" || rd "$d/device/name"
echo "@@vendor"; rd "$d/device/vendor"
echo "@@serial"; rd "$d/device/serial"
echo "@@backing_file"; rd "$d/loop/backing_file"
p=$(readlink -f -- "$d" 2>/dev/null); i=0
while [ -n "$p" ] && [ "$p" != / ] && [ "$i" -lt 64 ]; do
  if [ -f "$p/bInterfaceNumber" ]; then
    u=${{p%/*}}
    echo "@@usb_interface"; echo "${{p##*/}}"
    echo "@@usb_driver"; if [ -L "$p/driver" ]; then l=$(readlink -- "$p/driver"); echo "${{l##*/}}"; fi
    echo "@@usb_device"; echo "${{u##*/}}"
    echo "@@usb_speed"; rd "$u/speed"
    echo "@@usb_vendor"; rd "$u/idVendor"
    echo "@@usb_product"; rd "$u/idProduct"
    echo "@@usb_version"; rd "$u/version"
    {lsusb}
    break
  fi
  p=${{p%/*}}; i=$((i + 1))
done
{udev}"#,
        sys = quote::sh(sysfs),
        dev = quote::sh(device),
        // Only the real sysfs has a udev database, by-id links and an lsusb that
        // describe it.
        lsusb = if real_sys {
            r#"if command -v lsusb >/dev/null 2>&1; then echo "@@lsusb"; timeout 10 lsusb -t 2>/dev/null | head -c 65536; fi"#
        } else {
            ""
        },
        udev = if real_sys {
            r#"if command -v udevadm >/dev/null 2>&1; then echo "@@udev"; timeout 10 udevadm info --query=property --name="/dev/$disk" 2>/dev/null | grep -E '^ID_SERIAL_SHORT=' | head -n 1; fi
echo "@@by_id"; for l in /dev/disk/by-id/*; do [ -L "$l" ] && [ "$(readlink -f -- "$l")" = "/dev/$disk" ] && echo "${l##*/}"; done 2>/dev/null | head -n 8
"#
        } else {
            ""
        },
    )
}

/// Reads the facts of `device` on the board; `sysfs` is `SYSFS` but in tests.
pub fn gather(
    t: &mut dyn Transport,
    sysfs: &str,
    device: &str,
) -> Result<StorageFacts, TransportError> {
    let out = t.run(&script(sysfs, device), Some(Duration::from_secs(60)))?;
    Ok(parse(device, &out.stdout_str()))
}

/// The text `script` printed, as facts.
pub fn parse(device: &str, text: &str) -> StorageFacts {
    let s = crate::sections::parse(text);
    let one = |k: &str| {
        s.get(k)
            .and_then(|v| v.first())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    let scheduler = one("scheduler").map(|v| match (v.find('['), v.find(']')) {
        (Some(a), Some(b)) if a < b => v[a + 1..b].to_string(),
        _ => v,
    });
    let usb = one("usb_interface").map(|interface| {
        let device = one("usb_device").unwrap_or_default();
        let mut usb = UsbFacts {
            driver: one("usb_driver"),
            driver_from: None,
            speed: one("usb_speed").map(|v| format!("{v}M")),
            id: match (one("usb_vendor"), one("usb_product")) {
                (Some(v), Some(p)) => Some(format!("{v}:{p}").to_ascii_lowercase()),
                _ => None,
            },
            version: one("usb_version"),
            device,
            interface,
        };
        if usb.driver.is_some() {
            usb.driver_from = Some("sysfs".into());
        } else if let Some(tree) = s
            .get("lsusb")
            .and_then(|lines| lsusb::parse(&lines.join("\n")).ok())
        {
            // `2-1:1.0` is configuration 1, interface 0 of device `2-1`.
            let number = usb
                .interface
                .rsplit_once('.')
                .and_then(|(_, n)| n.parse::<u32>().ok());
            if let Some(i) = tree
                .device(&usb.device)
                .find(|i| Some(i.interface) == number)
            {
                usb.driver = i.driver.clone();
                usb.driver_from = i.driver.as_ref().map(|_| "lsusb -t".to_string());
                usb.speed = usb.speed.or_else(|| Some(i.speed.clone()));
                usb.id = usb.id.or_else(|| i.id.clone());
            }
        }
        usb
    });
    StorageFacts {
        device: device.to_string(),
        real: one("real"),
        disk: one("disk"),
        partition: one("partition").is_some(),
        size_bytes: one("size")
            .and_then(|v| v.parse::<u64>().ok())
            .map(|sectors| sectors.saturating_mul(512)),
        rotational: one("rotational").and_then(|v| match v.as_str() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        }),
        scheduler,
        model: one("model"),
        vendor: one("vendor"),
        serial: one("serial").or_else(|| {
            one("udev").and_then(|v| v.strip_prefix("ID_SERIAL_SHORT=").map(String::from))
        }),
        by_id: s
            .get("by_id")
            .map(|v| {
                v.iter()
                    .map(|l| l.trim().to_string())
                    .filter(|l| !l.is_empty())
                    .take(8)
                    .collect()
            })
            .unwrap_or_default(),
        backing_file: one("backing_file"),
        usb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_device_has_no_model_and_that_is_absent_not_an_error() {
        let f = parse(
            "/dev/loop3",
            "@@real\n/dev/loop3\n@@disk\nloop3\n@@size\n131072\n@@rotational\n0\n@@scheduler\n[none] mq-deadline\n@@model\n@@vendor\n@@serial\n@@backing_file\n/var/lib/x.img\n",
        );
        assert_eq!(f.size_bytes, Some(64 << 20));
        assert_eq!(f.rotational, Some(false));
        assert_eq!(f.scheduler.as_deref(), Some("none"));
        assert_eq!((f.model, f.serial, f.usb), (None, None, None));
        assert_eq!(f.backing_file.as_deref(), Some("/var/lib/x.img"));
    }

    #[test]
    fn without_a_driver_link_the_driver_comes_from_lsusb_t() {
        let text = format!(
            "@@real\n/dev/sda1\n@@partition\n1\n@@disk\nsda\n@@usb_interface\n2-1:1.0\n@@usb_driver\n@@usb_device\n2-1\n@@usb_speed\n\n@@lsusb\n{}",
            std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/data/lsusb/old-2digit-pi4-uas-seed.txt"
            ))
            .unwrap()
        );
        let f = parse("/dev/disk/by-id/usb-X-part1", &text);
        assert!(f.partition);
        let usb = f.usb.unwrap();
        assert_eq!(usb.driver.as_deref(), Some("uas"));
        assert_eq!(usb.driver_from.as_deref(), Some("lsusb -t"));
        assert_eq!(usb.speed.as_deref(), Some("5000M"));
    }

    #[test]
    fn the_script_quotes_the_device_and_the_root() {
        let s = script("/tmp/a b", "/dev/x'; rm -rf /");
        assert!(
            s.starts_with("sys='/tmp/a b'; dev='/dev/x'\\''; rm -rf /'"),
            "{s}"
        );
        assert!(
            !s.contains("udevadm") && !s.contains("lsusb"),
            "fake roots use sysfs only"
        );
        assert!(script(SYSFS, "/dev/sda").contains("lsusb -t"));
    }
}
