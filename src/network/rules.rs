//! What a declared network interface and address may be, for `check`: the interface
//! name goes into a sysfs path and onto `ethtool`, `iw` and `tc` command lines on the
//! board, and the address into every template that reads `{{ host }}`.

use std::net::Ipv4Addr;

/// The kernel's limit on an interface name (IFNAMSIZ, 16 with its NUL).
pub const MAX_INTERFACE: usize = 15;

/// Why `name` is not an interface name benchpipe uses; `None` when it is one.
pub fn interface_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if name.len() > MAX_INTERFACE {
        return Some(format!(
            "longer than {MAX_INTERFACE} bytes, the kernel's limit for an interface name"
        ));
    }
    if name == "." || name == ".." {
        return Some("`.` and `..` name directories, not interfaces".into());
    }
    if !name.as_bytes()[0].is_ascii_alphanumeric() {
        return Some("it must start with a letter or digit".into());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    {
        return Some("use letters, digits, `-`, `_` and `.` only".into());
    }
    None
}

/// One label of a host name (RFC 1123): 1 to 63 letters, digits and inner `-`.
pub fn dns_label_ok(l: &str) -> bool {
    !l.is_empty()
        && l.len() <= 63
        && !l.starts_with('-')
        && !l.ends_with('-')
        && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// Why `address` is not an address tests can reach a board at; `None` when it is an
/// IPv4 address or a DNS host name.
pub fn address_problem(address: &str) -> Option<String> {
    if address.is_empty() {
        return Some("it is empty".into());
    }
    if address.contains(':') {
        return Some(
            "an IPv6 address (or a port): templates put `host` in URLs (`http://{{ host }}:8089/`), where it would need brackets"
                .into(),
        );
    }
    if address.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return match address.parse::<Ipv4Addr>() {
            Ok(_) => None,
            Err(_) => Some(format!("`{address}` is not an IPv4 address")),
        };
    }
    if address.len() > 253 {
        return Some("a host name is at most 253 characters".into());
    }
    if !address.trim_end_matches('.').split('.').all(dns_label_ok) {
        return Some(format!(
            "`{address}` is neither an IPv4 address nor a host name (labels of letters, digits and inner `-`, joined by `.`)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_names_are_short_plain_words() {
        for ok in [
            "eth0",
            "end0",
            "wlan0",
            "enp1s0",
            "eth0.100",
            "br-lan",
            "wlx00c0ca_1",
        ] {
            assert_eq!(interface_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "-eth0",
            "eth0;reboot",
            "../../etc",
            "eth 0",
            "wlan0/x",
            "averyveryverylong0",
            "eth0\n",
            "$(id)",
        ] {
            assert!(interface_problem(bad).is_some(), "{bad:?}");
        }
        assert_eq!(interface_problem(&"e".repeat(15)), None);
        assert!(interface_problem(&"e".repeat(16)).is_some());
    }

    #[test]
    fn addresses_are_ipv4_or_host_names() {
        for ok in [
            "10.236.200.103",
            "192.168.1.20",
            "rpi3-wifi",
            "pi.lan",
            "pi.lan.",
        ] {
            assert_eq!(address_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "300.1.1.1",
            "10.0.0",
            "fe80::1",
            "10.0.0.1:22",
            "-pi",
            "pi-",
            "a..b",
            "pi lan",
            "pi;reboot",
            "$(id)",
            "pi/x",
            "'pi'",
        ] {
            assert!(address_problem(bad).is_some(), "{bad:?}");
        }
        assert!(address_problem(&format!("{}.x", "a".repeat(64))).is_some());
    }
}
