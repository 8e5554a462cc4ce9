//! The lab's network links: the /30s in 198.18.0.0/15 each board's two veth pairs
//! use, the second link shaped by `tc` to a Wi-Fi-like rate, and the names another lab
//! already holds.

use std::net::Ipv4Addr;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{LabOptions, cmd, fail};
use crate::error::Error;

/// A board's second link: its /30 and the rate `tc` shapes it to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LabLink {
    pub subnet: u32,
    pub controller_address: Ipv4Addr,
    pub address: Ipv4Addr,
    pub rate_mbit: u32,
}

/// The board-side names of the lab's two links.
pub const LAN_INTERFACE: &str = "eth0";
pub const WIFI_INTERFACE: &str = "wlan0";

/// The /30 numbered `subnet` in 198.18.0.0/15: (controller, board) addresses.
pub(super) fn subnet_addresses(subnet: u32) -> (Ipv4Addr, Ipv4Addr) {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + subnet * 4;
    (Ipv4Addr::from(base + 1), Ipv4Addr::from(base + 2))
}

/// Subnets already holding an address on this machine (another lab, another test).
pub(super) fn used_subnets() -> Result<Vec<u32>, Error> {
    let out = cmd(&["ip", "-o", "-4", "addr", "show"])?;
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0));
    let mut used = Vec::new();
    for line in out.stdout_str().lines() {
        let mut words = line.split_whitespace();
        while let Some(w) = words.next() {
            if w == "inet"
                && let Some(addr) = words.next().and_then(|a| a.split('/').next())
                && let Ok(ip) = addr.parse::<Ipv4Addr>()
            {
                let n = u32::from(ip);
                if n >= base && n < base + (1 << 17) {
                    used.push((n - base) / 4);
                }
            }
        }
    }
    Ok(used)
}

/// Refuses a prefix whose namespace or link (`<prefix>-N`, its `b`, `w`, `v` peers)
/// exists already.
pub(super) fn refuse_taken_prefix(o: &LabOptions, boards: usize) -> Result<(), Error> {
    // A namespace or link of this prefix that no state of this workspace names is
    // another lab's (another workspace's, a test's): building would fail on it, and the
    // teardown after a failure removes labs by their names. Refused before anything.
    for i in 1..=boards {
        let netns = format!("{}-{i}", o.prefix);
        let taken = Path::new("/run/netns").join(&netns).exists()
            || ["", "b", "w", "v"].iter().any(|s| {
                Path::new("/sys/class/net")
                    .join(format!("{netns}{s}"))
                    .exists()
            });
        if taken {
            return Err(fail(format!(
                "network namespace or link {netns} exists: another lab with prefix {} is up, \
                 perhaps of another workspace; run `benchpipe lab down` where it was built, or \
                 give this lab another prefix",
                o.prefix
            )));
        }
    }
    Ok(())
}

/// The second link: a veth pair `<netns>w` (controller) and `wlan0` (board) on its own
/// /30, shaped each way by a token bucket (`tc qdisc ... tbf`) to the link's rate, so
/// that traffic to and from the board's second address crosses a slower link.
pub(super) fn shaped_link(netns: &str, link: &LabLink) -> Result<(), Error> {
    let outer = format!("{netns}w");
    let peer = format!("{netns}v");
    cmd(&[
        "ip", "link", "add", &outer, "type", "veth", "peer", "name", &peer,
    ])?;
    cmd(&["ip", "link", "set", &peer, "netns", netns])?;
    cmd(&[
        "ip",
        "-n",
        netns,
        "link",
        "set",
        &peer,
        "name",
        WIFI_INTERFACE,
    ])?;
    let board_cidr = format!("{}/30", link.address);
    let controller_cidr = format!("{}/30", link.controller_address);
    cmd(&[
        "ip",
        "-n",
        netns,
        "addr",
        "add",
        &board_cidr,
        "dev",
        WIFI_INTERFACE,
    ])?;
    cmd(&["ip", "-n", netns, "link", "set", WIFI_INTERFACE, "up"])?;
    cmd(&["ip", "addr", "add", &controller_cidr, "dev", &outer])?;
    cmd(&["ip", "link", "set", &outer, "up"])?;
    let rate = format!("{}mbit", link.rate_mbit);
    let tbf = [
        "root", "tbf", "rate", &rate, "burst", "64kb", "latency", "50ms",
    ];
    let mut controller_side = vec!["tc", "qdisc", "add", "dev", &outer];
    controller_side.extend(tbf);
    cmd(&controller_side)?;
    let mut board_side = vec!["tc", "-n", netns, "qdisc", "add", "dev", WIFI_INTERFACE];
    board_side.extend(tbf);
    cmd(&board_side)?;
    Ok(())
}
