//! The addresses a cell's servers are held to (`bind_address`, `controller_address`):
//! the board's address they listen on, and the controller's address as the board sees
//! it, the only one their allow-lists admit. Both are found on the controller, where
//! the clients run: `host` resolved to IPv4, and the source address this machine's
//! routing picks to reach it (a UDP socket connected to it: no packet is sent).
//!
//! Why not the board's `$SSH_CONNECTION`: it names the SSH link only, while a cell on a
//! `[[network]]` link is reached at another address from another source; it is gone
//! under `become = "sudo"`; and behind a `proxy_jump` it names the jump host. The
//! routing lookup is what the clients' own connections do, on every link, for a board,
//! a peer's server and each cluster member. Where something rewrites addresses between
//! the two (NAT), the server refuses the controller or cannot bind: it fails closed.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs, UdpSocket};

/// The template variable holding the board's address a server binds to.
pub const BIND_ADDRESS: &str = "bind_address";
/// The template variable holding the controller's address as the board sees it.
pub const CONTROLLER_ADDRESS: &str = "controller_address";

/// Where a cell's servers listen, and the one address they admit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeAddresses {
    /// The board's address the controller reaches it at: what servers bind to.
    pub bind: Ipv4Addr,
    /// The controller's address toward `bind`: what the board sees its clients come from.
    pub controller: Ipv4Addr,
}

/// The addresses for a board reached at `host` (an IPv4 address or a host name, as
/// `rules::address_problem` allows).
pub fn find(host: &str) -> Result<ServeAddresses, String> {
    let bind = resolve(host)?;
    let controller = source_towards(bind).map_err(|e| {
        format!(
            "cannot find the controller's address toward {bind} (the board's `host`): {e}; \
             the test's servers admit that address only"
        )
    })?;
    Ok(ServeAddresses { bind, controller })
}

/// `host` as one IPv4 address a server can bind to: a literal as it is, a name
/// resolved here (the first IPv4 answer). Never the wildcard, a broadcast or a
/// multicast address, which would bind to no one link.
pub fn resolve(host: &str) -> Result<Ipv4Addr, String> {
    if let Some(problem) = super::rules::address_problem(host) {
        return Err(format!(
            "the board's `host` `{}` cannot be bound to: {problem}",
            host.escape_debug()
        ));
    }
    let ip = match host.parse::<Ipv4Addr>() {
        Ok(ip) => ip,
        Err(_) => (host, 0)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve the board's `host` `{host}`: {e}"))?
            .find_map(|a| match a.ip() {
                IpAddr::V4(v4) => Some(v4),
                IpAddr::V6(_) => None,
            })
            .ok_or_else(|| {
                format!("the board's `host` `{host}` has no IPv4 address, which servers bind to")
            })?,
    };
    if ip.is_unspecified() || ip.is_broadcast() || ip.is_multicast() {
        return Err(format!(
            "the board's `host` is {ip}, which is not one address of the board: a server bound to it would listen on every link, or none"
        ));
    }
    Ok(ip)
}

/// The local address this machine's routing picks for traffic to `to`: a connected UDP
/// socket's own address (connecting a UDP socket only chooses the route).
pub fn source_towards(to: Ipv4Addr) -> Result<Ipv4Addr, String> {
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).map_err(|e| e.to_string())?;
    // The discard port: nothing is sent, any port would do.
    socket.connect((to, 9)).map_err(|e| e.to_string())?;
    match socket.local_addr().map_err(|e| e.to_string())? {
        SocketAddr::V4(a) if !a.ip().is_unspecified() => Ok(*a.ip()),
        other => Err(format!("the route chose no IPv4 source address ({other})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_is_itself_and_localhost_is_loopback_on_both_ends() {
        assert_eq!(resolve("198.18.0.6").unwrap(), Ipv4Addr::new(198, 18, 0, 6));
        let local = find("localhost").unwrap();
        assert!(local.bind.is_loopback(), "{local:?}");
        assert!(local.controller.is_loopback(), "{local:?}");
        let lo = find("127.0.0.1").unwrap();
        assert_eq!(lo.controller, Ipv4Addr::LOCALHOST);
    }

    #[test]
    fn the_wildcard_broadcast_multicast_and_what_check_refuses_are_no_bind_address() {
        for bad in [
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "",
            "fe80::1",
            "-pi",
            "$(id)",
            "a b",
        ] {
            let e = resolve(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
        let e = resolve("0.0.0.0").unwrap_err();
        assert!(e.contains("every link"), "{e}");
    }

    #[test]
    fn a_name_that_does_not_resolve_is_an_error_naming_it() {
        // `.invalid` never resolves (RFC 6761).
        let e = resolve("no-such-board.invalid").unwrap_err();
        assert!(e.contains("no-such-board.invalid"), "{e}");
    }
}
