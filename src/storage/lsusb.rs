//! Reads `lsusb -t`: the USB tree as interfaces, each with its sysfs name, driver and
//! link speed. Both formats: usbutils before 016 (`Bus 02.Port 1: Dev 1`) and from 016
//! on (`Bus 002.Port 001: Dev 001`, with `ID vvvv:pppp description` lines under each
//! entry, and `-vv`'s sysfs and /dev paths). Pure: the text in, the tree out.

/// One interface line of the tree (a device with two interfaces has two lines).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsbInterface {
    /// The device's sysfs name, `BUS-PORT[.PORT...]` (`2-1`, `3-6.3.1`), as in
    /// `/sys/bus/usb/devices/`.
    pub device: String,
    /// `If N`.
    pub interface: u32,
    /// `Dev N`: the device number on its bus.
    pub dev: u32,
    /// `Class=...`: `Mass Storage`, `Hub`, ...
    pub class: String,
    /// `Driver=...`: `uas`, `usb-storage`, `hub/4p`; `None` when none is bound (empty
    /// or `[none]`).
    pub driver: Option<String>,
    /// The link speed as printed: `480M`, `5000M`, `1.5M`.
    pub speed: String,
    /// `vvvv:pppp` from the `ID` line below it (usbutils >= 016, or `-v`).
    pub id: Option<String>,
}

/// A root hub line: `/:  Bus 02.Port 1: Dev 1, Class=root_hub, Driver=xhci_hcd/4p, 5000M`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsbBus {
    pub bus: u32,
    pub driver: Option<String>,
    pub speed: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsbTree {
    pub buses: Vec<UsbBus>,
    pub interfaces: Vec<UsbInterface>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("lsusb -t line {line}: {message}")]
pub struct LsusbError {
    pub line: usize,
    pub message: String,
}

/// The most lines read: a tree of thousands of interfaces is not a USB bus.
const MAX_LINES: usize = 4096;

impl UsbTree {
    /// The interfaces of the device `device` (its sysfs name, `2-1`), in printed order.
    pub fn device(&self, device: &str) -> impl Iterator<Item = &UsbInterface> {
        self.interfaces.iter().filter(move |i| i.device == device)
    }

    /// The mass-storage interfaces: where `uas` or `usb-storage` drives a disk.
    pub fn mass_storage(&self) -> impl Iterator<Item = &UsbInterface> {
        self.interfaces
            .iter()
            .filter(|i| i.class.eq_ignore_ascii_case("Mass Storage"))
    }
}

fn err(line: usize, message: impl Into<String>) -> LsusbError {
    LsusbError {
        line,
        message: message.into(),
    }
}

/// `Driver=` values that mean no driver is bound.
fn driver(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty() && v != "[none]").then(|| v.to_string())
}

/// `N` or `NNN` (leading zeros in the new format).
fn number(line: usize, what: &str, v: &str) -> Result<u32, LsusbError> {
    v.trim()
        .parse()
        .map_err(|_| err(line, format!("{what} `{}` is not a number", v.trim())))
}

/// The fields after `Dev N, `: `[If N, ]Class=..., Driver=..., SPEED`. The class may hold
/// spaces and quotes, so the driver and speed are taken from the right.
fn fields(
    line: usize,
    rest: &str,
) -> Result<(Option<u32>, String, Option<String>, String), LsusbError> {
    let (head, speed) = rest
        .rsplit_once(", ")
        .ok_or_else(|| err(line, "no link speed after the last `, `"))?;
    let speed = speed.trim().to_string();
    if !speed.ends_with('M') || speed[..speed.len() - 1].parse::<f64>().is_err() {
        return Err(err(
            line,
            format!("link speed `{speed}` is not like `480M`"),
        ));
    }
    let (head, drv) = head
        .rsplit_once(", Driver=")
        .ok_or_else(|| err(line, "no `Driver=`"))?;
    let (interface, class) = match head.strip_prefix("If ") {
        Some(r) => {
            let (n, class) = r
                .split_once(", ")
                .ok_or_else(|| err(line, "no `Class=` after `If N`"))?;
            (Some(number(line, "interface", n)?), class)
        }
        None => (None, head),
    };
    let class = class
        .strip_prefix("Class=")
        .ok_or_else(|| err(line, "no `Class=`"))?;
    Ok((interface, class.to_string(), driver(drv), speed))
}

/// Parses `lsusb -t` output. Lines it does not know are an error naming the line, so a
/// format change is seen, never misread.
pub fn parse(text: &str) -> Result<UsbTree, LsusbError> {
    let mut tree = UsbTree::default();
    let mut bus: Option<u32> = None;
    // The ports from the root hub down to the device last seen at each depth.
    let mut ports: Vec<u32> = Vec::new();
    // Where an `ID` line belongs: the last interface (None: the bus line).
    let mut last_is_bus = false;
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        if n > MAX_LINES {
            return Err(err(n, format!("more than {MAX_LINES} lines")));
        }
        let line = raw.trim_end();
        if line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("/:") {
            // `  Bus 02.Port 1: Dev 1, Class=root_hub, Driver=xhci_hcd/4p, 5000M`
            let rest = rest.trim_start();
            let rest = rest
                .strip_prefix("Bus ")
                .ok_or_else(|| err(n, "a root line without `Bus`"))?;
            let (b, rest) = rest
                .split_once(".Port ")
                .ok_or_else(|| err(n, "a root line without `.Port`"))?;
            let (_, rest) = rest
                .split_once(": Dev ")
                .ok_or_else(|| err(n, "a root line without `: Dev`"))?;
            let (_, rest) = rest
                .split_once(", ")
                .ok_or_else(|| err(n, "a root line without fields after `Dev N`"))?;
            let (_, _, drv, speed) = fields(n, rest)?;
            let b = number(n, "bus", b)?;
            tree.buses.push(UsbBus {
                bus: b,
                driver: drv,
                speed,
            });
            bus = Some(b);
            ports.clear();
            last_is_bus = true;
            continue;
        }
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(rest) = trimmed.strip_prefix("|__ Port ") {
            let Some(b) = bus else {
                return Err(err(n, "a port before any `/:  Bus` line"));
            };
            // Children of the root hub are indented 4, each level 4 more.
            let depth = indent / 4;
            if indent % 4 != 0 || depth == 0 || depth > ports.len() + 1 {
                return Err(err(n, format!("unexpected indentation ({indent} spaces)")));
            }
            let (port, rest) = rest
                .split_once(": Dev ")
                .ok_or_else(|| err(n, "a port line without `: Dev`"))?;
            let (dev, rest) = rest
                .split_once(", ")
                .ok_or_else(|| err(n, "a port line without fields after `Dev N`"))?;
            let (interface, class, drv, speed) = fields(n, rest)?;
            ports.truncate(depth - 1);
            ports.push(number(n, "port", port)?);
            let path: Vec<String> = ports.iter().map(u32::to_string).collect();
            tree.interfaces.push(UsbInterface {
                device: format!("{b}-{}", path.join(".")),
                interface: interface.ok_or_else(|| err(n, "a port line without `If N`"))?,
                dev: number(n, "device", dev)?,
                class,
                driver: drv,
                speed,
                id: None,
            });
            last_is_bus = false;
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("ID ") {
            let id = rest.split_whitespace().next().unwrap_or("");
            let ok = id.len() == 9
                && id.as_bytes()[4] == b':'
                && id
                    .bytes()
                    .enumerate()
                    .all(|(k, c)| k == 4 || c.is_ascii_hexdigit());
            if !ok {
                return Err(err(n, format!("`ID {id}` is not `vvvv:pppp`")));
            }
            if !last_is_bus {
                match tree.interfaces.last_mut() {
                    Some(i) => i.id = Some(id.to_ascii_lowercase()),
                    None => return Err(err(n, "an `ID` line before any entry")),
                }
            }
            continue;
        }
        // `-vv`: `/sys/bus/usb/devices/1-2  /dev/bus/usb/001/002`; `-vvv` adds strings.
        if trimmed.starts_with("/sys/")
            || trimmed.starts_with("Manufactuer=")
            || trimmed.starts_with("Manufacturer=")
        {
            continue;
        }
        return Err(err(
            n,
            format!("not an `lsusb -t` line: `{}`", cut(trimmed)),
        ));
    }
    Ok(tree)
}

/// At most 60 characters of a line, for a message.
fn cut(s: &str) -> String {
    s.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_line_whose_class_holds_quotes_and_an_unbound_driver() {
        let t = parse(
            "/:  Bus 02.Port 1: Dev 1, Class=root_hub, Driver=ehci_hcd/3p, 480M\n    |__ Port 3: Dev 7, If 0, Class='bInterfaceClass 0xe0 not yet handled', Driver=, 12M\n",
        )
        .unwrap();
        let i = &t.interfaces[0];
        assert_eq!(i.class, "'bInterfaceClass 0xe0 not yet handled'");
        assert_eq!((i.driver.as_deref(), i.speed.as_str()), (None, "12M"));
        assert_eq!(i.device, "2-3");
    }

    #[test]
    fn unknown_lines_and_bad_indentation_are_errors_naming_the_line() {
        let e = parse("/:  Bus 02.Port 1: Dev 1, Class=root_hub, Driver=x/1p, 480M\nBus 001 Device 001: ID 1d6b:0002\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = parse("/:  Bus 02.Port 1: Dev 1, Class=root_hub, Driver=x/1p, 480M\n        |__ Port 1: Dev 2, If 0, Class=Hub, Driver=hub/4p, 480M\n").unwrap_err();
        assert!(e.message.contains("indentation"), "{e}");
        let e = parse("    |__ Port 1: Dev 2, If 0, Class=Hub, Driver=hub/4p, 480M\n").unwrap_err();
        assert!(e.message.contains("before any"), "{e}");
        let e = parse("/:  Bus 02.Port 1: Dev 1, Class=root_hub, Driver=x/1p, fast\n").unwrap_err();
        assert!(e.message.contains("link speed"), "{e}");
    }
}
