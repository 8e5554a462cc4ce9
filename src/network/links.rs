//! `ip -j addr` output, read purely: a board's interfaces and their addresses, for
//! `init` to write the link SSH came in on and list the others. Bounded in links,
//! addresses and text: the JSON comes from the board.

use serde_json::Value;

/// Links kept from one listing.
pub const MAX_LINKS: usize = 64;
/// Addresses kept per link and family.
const MAX_ADDRESSES: usize = 16;

/// One interface as `ip -j addr` lists it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Link {
    /// The interface name, only when `rules::interface_problem` finds none.
    pub name: String,
    pub loopback: bool,
    /// `UP`, `DOWN`, `UNKNOWN`...
    pub operstate: Option<String>,
    pub ipv4: Vec<String>,
    pub ipv6: Vec<String>,
}

/// The listing's links, in its order, and how many were left out (past `MAX_LINKS`,
/// or with a name no interface may have).
pub fn parse(text: &str) -> Result<(Vec<Link>, usize), String> {
    let start = text
        .find('[')
        .ok_or_else(|| "ip printed no JSON".to_string())?;
    let doc: Value = serde_json::from_str(&text[start..]).map_err(|e| format!("ip's JSON: {e}"))?;
    let list = doc
        .as_array()
        .ok_or_else(|| "ip's JSON is not a list".to_string())?;
    let mut links = Vec::new();
    let mut left_out = 0;
    for l in list {
        let name = l.get("ifname").and_then(Value::as_str).unwrap_or("");
        if links.len() >= MAX_LINKS || super::rules::interface_problem(name).is_some() {
            left_out += 1;
            continue;
        }
        let mut link = Link {
            name: name.to_string(),
            loopback: l.get("link_type").and_then(Value::as_str) == Some("loopback"),
            operstate: l
                .get("operstate")
                .and_then(Value::as_str)
                .filter(|s| s.len() <= 16 && s.chars().all(|c| c.is_ascii_alphabetic()))
                .map(str::to_string),
            ..Link::default()
        };
        for a in l
            .get("addr_info")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(local) = a.get("local").and_then(Value::as_str) else {
                continue;
            };
            match a.get("family").and_then(Value::as_str) {
                Some("inet") if link.ipv4.len() < MAX_ADDRESSES => {
                    if let Ok(ip) = local.parse::<std::net::Ipv4Addr>() {
                        link.ipv4.push(ip.to_string());
                    }
                }
                Some("inet6") if link.ipv6.len() < MAX_ADDRESSES => {
                    if let Ok(ip) = local.parse::<std::net::Ipv6Addr>() {
                        link.ipv6.push(ip.to_string());
                    }
                }
                _ => {}
            }
        }
        links.push(link);
    }
    Ok((links, left_out))
}

/// The link holding `address` (as `$SSH_CONNECTION` names the board's end), if any; an
/// IPv4-mapped IPv6 address is its IPv4 one.
pub fn holding<'a>(links: &'a [Link], address: &str) -> Option<&'a Link> {
    let address = address.strip_prefix("::ffff:").unwrap_or(address);
    links
        .iter()
        .find(|l| l.ipv4.iter().chain(&l.ipv6).any(|a| a == address))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PI: &str = r#"[{"ifindex":1,"ifname":"lo","link_type":"loopback","operstate":"UNKNOWN",
      "addr_info":[{"family":"inet","local":"127.0.0.1","prefixlen":8}]},
      {"ifindex":2,"ifname":"eth0","link_type":"ether","operstate":"UP","address":"dc:a6:32:01:02:03",
      "addr_info":[{"family":"inet","local":"192.168.1.20","prefixlen":24},{"family":"inet6","local":"fe80::1","prefixlen":64}]},
      {"ifindex":3,"ifname":"wlan0","link_type":"ether","operstate":"DOWN","addr_info":[]}]"#;

    #[test]
    fn links_and_their_addresses_are_read_and_the_ssh_one_found() {
        let (links, left_out) = parse(PI).unwrap();
        assert_eq!(left_out, 0);
        assert!(links[0].loopback);
        assert_eq!(links[1].name, "eth0");
        assert_eq!(links[1].operstate.as_deref(), Some("UP"));
        assert_eq!(links[1].ipv4, ["192.168.1.20"]);
        assert_eq!(links[1].ipv6, ["fe80::1"]);
        assert_eq!(holding(&links, "192.168.1.20").unwrap().name, "eth0");
        assert_eq!(holding(&links, "::ffff:192.168.1.20").unwrap().name, "eth0");
        assert!(holding(&links, "10.0.0.1").is_none());
    }

    #[test]
    fn hostile_names_and_addresses_are_left_out() {
        let text = r#"[{"ifname":"eth0; reboot","addr_info":[]},
          {"ifname":"eth1","operstate":"UP\u001b[2J","addr_info":[{"family":"inet","local":"1.2.3.4\n[[storage]]"}]}]"#;
        let (links, left_out) = parse(text).unwrap();
        assert_eq!(left_out, 1);
        assert_eq!(links[0].name, "eth1");
        assert_eq!(links[0].operstate, None);
        assert!(links[0].ipv4.is_empty());
        assert!(parse("Command \"j\" is unknown").is_err());
    }
}
