//! The link facts command's output, read purely: its `@@name` sections, sysfs values,
//! `ethtool IF` and `iw dev IF link`. Real captured samples are in
//! `tests/data/network/` (their sources in its README).

use serde::{Deserialize, Serialize};

use super::LinkFacts;

/// `ethtool IF`'s speed, duplex and link state.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EthtoolLink {
    pub speed_mbps: Option<u64>,
    pub duplex: Option<String>,
    pub link_detected: Option<bool>,
}

/// `iw dev IF link`: the association's radio facts. The SSID and the access point's
/// address are left out: they name someone's network, not the link's speed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WifiLink {
    pub connected: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freq_mhz: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal_dbm: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rx_bitrate_mbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_bitrate_mbps: Option<f64>,
    /// The tx bitrate line as iw prints it after the colon (`72.2 MBit/s MCS 7 short GI`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tx_bitrate: Option<String>,
    /// What iw said instead, when it gave no link (`command failed: ...`), one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A kept value: one line, printable, at most 200 characters.
fn line(s: &str) -> Option<String> {
    let s: String = s
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    (!s.is_empty()).then_some(s)
}

/// sysfs `speed`: Mbit/s; -1 (or its unsigned 32-bit form) means unknown.
pub fn sysfs_speed(s: &str) -> Option<u64> {
    s.trim()
        .parse::<u64>()
        .ok()
        .filter(|&v| v > 0 && v < u64::from(u32::MAX))
}

/// sysfs `duplex`: `full` or `half`; `unknown` is none.
pub fn sysfs_duplex(s: &str) -> Option<String> {
    match s.trim() {
        d @ ("full" | "half") => Some(d.to_string()),
        _ => None,
    }
}

/// `ethtool IF`: `Speed: 1000Mb/s` (`Unknown!` is none), `Duplex: Full`,
/// `Link detected: yes`.
pub fn ethtool(text: &str) -> EthtoolLink {
    let mut out = EthtoolLink::default();
    for l in text.lines() {
        let Some((key, value)) = l.trim().split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "Speed" => {
                out.speed_mbps = value
                    .strip_suffix("Mb/s")
                    .and_then(|v| v.trim().parse().ok())
                    .filter(|&v: &u64| v > 0);
            }
            "Duplex" => {
                out.duplex = match value.to_ascii_lowercase().as_str() {
                    d @ ("full" | "half") => Some(d.to_string()),
                    _ => None,
                };
            }
            "Link detected" => out.link_detected = Some(value == "yes"),
            _ => {}
        }
    }
    out
}

/// `N MBit/s ...` (iw's bitrate) as Mbit/s.
fn mbit(value: &str) -> Option<f64> {
    let mut words = value.split_whitespace();
    let n: f64 = words.next()?.parse().ok()?;
    (words.next() == Some("MBit/s") && n.is_finite() && n >= 0.0).then_some(n)
}

/// `iw dev IF link`: `Connected to ...` with tab-indented `key: value` lines, or
/// `Not connected.`, or an error (`command failed: No such device (-19)`).
pub fn iw_link(text: &str) -> WifiLink {
    let mut out = WifiLink::default();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    match lines.next() {
        Some(first) if first.starts_with("Connected to ") => out.connected = true,
        Some("Not connected.") => return out,
        Some(other) => {
            out.error = line(other);
            return out;
        }
        None => {
            out.error = Some("iw printed nothing".into());
            return out;
        }
    }
    for l in lines {
        let Some((key, value)) = l.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match key.trim() {
            "freq" => out.freq_mhz = value.parse().ok().filter(|f: &f64| f.is_finite()),
            "signal" => {
                out.signal_dbm = value
                    .strip_suffix("dBm")
                    .and_then(|v| v.trim().parse().ok());
            }
            "rx bitrate" => out.rx_bitrate_mbps = mbit(value),
            "tx bitrate" => {
                out.tx_bitrate_mbps = mbit(value);
                out.tx_bitrate = line(value);
            }
            _ => {}
        }
    }
    out
}

/// The whole command's output (`super::script`) for `interface`.
pub fn facts(interface: &str, text: &str) -> LinkFacts {
    let s = crate::sections::parse(text);
    let first = |k: &str| s.get(k).and_then(|v| v.first().copied());
    let mut f = LinkFacts {
        interface: interface.to_string(),
        present: first("present").is_some_and(|v| v.trim() == "1"),
        ..LinkFacts::default()
    };
    if !f.present {
        return f;
    }
    f.operstate = first("operstate").and_then(line);
    f.mtu = first("mtu").and_then(|v| v.trim().parse().ok());
    f.driver = first("driver").and_then(line);
    f.wireless = first("wireless").is_some_and(|v| v.trim() == "1");
    f.speed_mbps = first("speed").and_then(sysfs_speed);
    f.duplex = first("duplex").and_then(sysfs_duplex);
    if f.speed_mbps.is_some() {
        f.speed_from = Some("sysfs".into());
    } else if let Some(lines) = s.get("ethtool") {
        let e = ethtool(&lines.join("\n"));
        if let Some(speed) = e.speed_mbps {
            f.speed_mbps = Some(speed);
            f.duplex = e.duplex.or(f.duplex.take());
            f.speed_from = Some("ethtool".into());
        }
    }
    if let Some(lines) = s.get("iw") {
        f.wifi = Some(iw_link(&lines.join("\n")));
    }
    f.qdisc = first("qdisc").and_then(line);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    const VETH: &str = include_str!("../../tests/data/network/ethtool-veth.txt");
    const VIRTIO: &str = include_str!("../../tests/data/network/ethtool-virtio-unknown.txt");
    const PI5_2G: &str = include_str!("../../tests/data/network/iw-link-pi5-2g.txt");
    const PI5_5G: &str = include_str!("../../tests/data/network/iw-link-pi5-5g.txt");
    const HT: &str = include_str!("../../tests/data/network/iw-link-ht-mcs.txt");
    const NOT: &str = include_str!("../../tests/data/network/iw-not-connected.txt");
    const LAB: &str = include_str!("../../tests/data/network/facts-lab-wlan0.txt");

    #[test]
    fn ethtool_gives_speed_and_duplex_and_unknown_is_none() {
        assert_eq!(
            ethtool(VETH),
            EthtoolLink {
                speed_mbps: Some(10000),
                duplex: Some("full".into()),
                link_detected: Some(true)
            }
        );
        assert_eq!(
            ethtool(VIRTIO),
            EthtoolLink {
                speed_mbps: None,
                duplex: None,
                link_detected: Some(true)
            }
        );
        assert_eq!(ethtool(""), EthtoolLink::default());
    }

    #[test]
    fn iw_link_gives_the_radio_facts_and_never_the_ssid() {
        let w = iw_link(PI5_2G);
        assert!(w.connected);
        assert_eq!(w.freq_mhz, Some(2437.0));
        assert_eq!(w.signal_dbm, Some(-65));
        assert_eq!(w.rx_bitrate_mbps, Some(14.4));
        assert_eq!(w.tx_bitrate_mbps, Some(72.2));
        let w = iw_link(PI5_5G);
        assert_eq!(
            (
                w.freq_mhz,
                w.signal_dbm,
                w.rx_bitrate_mbps,
                w.tx_bitrate_mbps
            ),
            (Some(5620.0), Some(-66), Some(390.0), Some(292.5))
        );
        let w = iw_link(HT);
        assert_eq!(w.tx_bitrate.as_deref(), Some("72.2 MBit/s MCS 7 short GI"));
        assert_eq!((w.rx_bitrate_mbps, w.signal_dbm), (Some(58.5), Some(-38)));
        assert_eq!(w.freq_mhz, Some(5500.0), "a line indented by spaces");
        let json = serde_json::to_string(&w).unwrap();
        assert!(!json.contains("aterm") && !json.contains("a4:12"), "{json}");
        assert_eq!(iw_link(NOT), WifiLink::default());
        let e = iw_link("command failed: No such device (-19)\n");
        assert!(!e.connected);
        assert_eq!(
            e.error.as_deref(),
            Some("command failed: No such device (-19)")
        );
        assert!(iw_link("").error.is_some());
    }

    #[test]
    fn sysfs_speed_minus_one_and_u32_max_are_unknown() {
        assert_eq!(sysfs_speed("1000\n"), Some(1000));
        assert_eq!(sysfs_speed("-1"), None);
        assert_eq!(sysfs_speed("4294967295"), None);
        assert_eq!(sysfs_speed(""), None);
        assert_eq!(sysfs_duplex("unknown"), None);
        assert_eq!(sysfs_duplex("half\n").as_deref(), Some("half"));
    }

    /// The command's real output on a lab board's shaped veth (`wlan0`, no wireless
    /// directory, so no `iw`), captured from `script`.
    #[test]
    fn the_lab_links_output_gives_sysfs_speed_and_the_shaping_qdisc() {
        let f = facts("wlan0", LAB);
        assert!(f.present && !f.wireless && f.wifi.is_none());
        assert_eq!(f.speed_mbps, Some(10000));
        assert_eq!(f.speed_from.as_deref(), Some("sysfs"));
        assert_eq!(f.duplex.as_deref(), Some("full"));
        assert_eq!(f.operstate.as_deref(), Some("up"));
        assert!(
            f.qdisc.as_deref().is_some_and(|q| q.contains("tbf")),
            "{f:?}"
        );
    }

    #[test]
    fn ethtool_stands_in_when_sysfs_has_no_speed_and_iw_when_wireless() {
        let text = format!(
            "@@present\n1\n@@speed\n-1\n@@duplex\nunknown\n@@wireless\n1\n@@ethtool\n{VETH}@@iw\n{PI5_2G}"
        );
        let f = facts("wlan0", &text);
        assert_eq!(f.speed_from.as_deref(), Some("ethtool"));
        assert_eq!(
            (f.speed_mbps, f.duplex.as_deref()),
            (Some(10000), Some("full"))
        );
        assert!(f.wireless);
        assert_eq!(f.wifi.as_ref().and_then(|w| w.tx_bitrate_mbps), Some(72.2));
        let missing = facts("eth9", "");
        assert!(!missing.present && missing.speed_mbps.is_none());
    }
}
