//! A board's network links: the rules a declared interface and address must follow
//! (`rules`), and the link's facts read on the board (speed and duplex from sysfs,
//! `ethtool` where sysfs says nothing, `iw dev IF link` for a wireless interface, the
//! root qdisc from `tc`), recorded in the facts of each cell that uses the link. One
//! bounded command prints `@@name` sections; `parse` reads them, purely. `addresses`:
//! the address a cell's servers bind to and the one they admit.

pub mod addresses;
pub mod links;
pub mod parse;
pub mod rules;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::transport::{Transport, TransportError, quote};

pub use parse::{EthtoolLink, WifiLink};

/// The board's sysfs, where the facts come from outside tests.
pub use crate::transport::connector::SYSFS;

/// What a link is, as the board says now. What the board cannot say is absent. Stored in
/// a cell's facts (`store::CellFacts`) and read back from them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkFacts {
    /// The board-side interface as declared.
    pub interface: String,
    /// False when the board has no interface of that name.
    pub present: bool,
    /// `up`, `down`, `dormant`, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operstate: Option<String>,
    /// The negotiated speed in Mbit/s; absent where the driver does not say (Wi-Fi).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u64>,
    /// `full` or `half`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplex: Option<String>,
    /// Where speed and duplex were read: `sysfs` or `ethtool`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed_from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u64>,
    /// The driver bound to the interface's device (`smsc95xx`, `brcmfmac`, `r8152`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// The interface is wireless (sysfs `wireless` or `phy80211`).
    pub wireless: bool,
    /// `iw dev IF link`, where the interface is wireless and `iw` is installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wifi: Option<WifiLink>,
    /// The root queueing discipline (`tc qdisc show`), which can shape the link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<String>,
}

/// The board-side command for `interface` (checked by `rules::interface_problem`, and
/// quoted all the same). Every file read is a few bytes of a regular file; every tool's
/// output is cut and bounded in time.
pub fn script(sysfs: &str, interface: &str) -> String {
    format!(
        r#"sys={sys}; i={i}
rd() {{ [ -f "$1" ] && head -c 256 -- "$1" 2>/dev/null | tr -d '\000' | head -n 1; }}
d="$sys/class/net/$i"
[ -e "$d" ] || exit 0
echo "@@present"; echo 1
echo "@@operstate"; rd "$d/operstate"
echo "@@speed"; rd "$d/speed"
echo "@@duplex"; rd "$d/duplex"
echo "@@mtu"; rd "$d/mtu"
echo "@@driver"; if [ -L "$d/device/driver" ]; then l=$(readlink -- "$d/device/driver"); echo "${{l##*/}}"; fi
w=; if [ -d "$d/wireless" ] || [ -e "$d/phy80211" ]; then w=1; echo "@@wireless"; echo 1; fi
if command -v ethtool >/dev/null 2>&1; then echo "@@ethtool"; timeout 10 ethtool "$i" 2>/dev/null | head -c 16384; fi
if [ -n "$w" ] && command -v iw >/dev/null 2>&1; then echo "@@iw"; timeout 10 iw dev "$i" link 2>&1 | head -c 16384; fi
if command -v tc >/dev/null 2>&1; then echo "@@qdisc"; timeout 10 tc qdisc show dev "$i" 2>/dev/null | grep -m 1 ' root' | head -c 512; fi
"#,
        sys = quote::sh(sysfs),
        i = quote::sh(interface),
    )
}

/// Reads the facts of `interface` on the board; `sysfs` is `SYSFS` but in tests.
pub fn gather(
    t: &mut dyn Transport,
    sysfs: &str,
    interface: &str,
) -> Result<LinkFacts, TransportError> {
    let out = t.run(&script(sysfs, interface), Some(Duration::from_secs(60)))?;
    Ok(parse::facts(interface, &out.stdout_str()))
}
