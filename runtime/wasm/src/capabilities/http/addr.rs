//! Which addresses a request may reach when only a wildcard grant covers its host: public ones.
//! A DNS name under `*.example.com` that resolves to loopback, a private range or the like would
//! let a guest reach the host machine or its network, so it is refused unless a grant names that
//! very host. IPv4 addresses carried inside IPv6 ones (mapped, compatible, NAT64, 6to4) are
//! judged as the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The kind of non-public range `ip` is in, or `None` for a public address.
pub(crate) fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(ip) => non_public_v4(ip),
        IpAddr::V6(ip) => non_public_v6(ip),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "unspecified (0.0.0.0/8)",
        (127, _, _) => "loopback",
        (10, _, _) => "private (10.0.0.0/8)",
        (172, 16..=31, _) => "private (172.16.0.0/12)",
        (192, 168, _) => "private (192.168.0.0/16)",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared address space (100.64.0.0/10)",
        (192, 0, 0) => "IETF protocol assignments (192.0.0.0/24)",
        (198, 18..=19, _) => "benchmarking (198.18.0.0/15)",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved (240.0.0.0/4, broadcast)",
        _ => return None,
    })
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    let segments = ip.segments();
    let octets = ip.octets();
    let embedded_v4 = |at: usize| Ipv4Addr::new(octets[at], octets[at + 1], octets[at + 2], octets[at + 3]);
    match segments {
        // ::ffff:a.b.c.d (mapped) is the IPv4 address it carries.
        [0, 0, 0, 0, 0, 0xffff, _, _] => non_public_v4(embedded_v4(12)),
        // ::a.b.c.d (IPv4-compatible) is deprecated: never a public destination.
        [0, 0, 0, 0, 0, 0, _, _] => Some(non_public_v4(embedded_v4(12)).unwrap_or("IPv4-compatible (::/96)")),
        // NAT64 (64:ff9b::/96) carries a v4 address in its last 32 bits.
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => non_public_v4(embedded_v4(12)),
        [0x64, 0xff9b, 1, ..] => Some("local-use NAT64 (64:ff9b:1::/48)"),
        // 6to4 (2002::/16) carries one in bits 16..48.
        [0x2002, ..] => non_public_v4(embedded_v4(2)),
        [first, ..] if first & 0xfe00 == 0xfc00 => Some("unique local (fc00::/7)"),
        [first, ..] if first & 0xffc0 == 0xfe80 => Some("link-local (fe80::/10)"),
        [first, ..] if first & 0xffc0 == 0xfec0 => Some("site-local (fec0::/10)"),
        [first, ..] if first & 0xff00 == 0xff00 => Some("multicast"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(ip: &str) -> Option<&'static str> {
        non_public(ip.parse().unwrap())
    }

    #[test]
    fn loopback_private_link_local_and_unspecified_v4_are_not_public() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
        ] {
            assert!(kind(ip).is_some(), "{ip} is not public");
        }
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "172.15.0.1",
            "172.32.0.1",
            "192.169.0.1",
            "100.128.0.1",
        ] {
            assert_eq!(kind(ip), None, "{ip} is public");
        }
        assert_eq!(kind("127.0.0.1"), Some("loopback"));
    }

    #[test]
    fn v6_ranges_and_v4_inside_v6_are_judged() {
        for ip in [
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::8.8.8.8",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "2002:7f00:1::1",
            "2002:c0a8:101::1",
        ] {
            assert!(kind(ip).is_some(), "{ip} is not public");
        }
        for ip in [
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert_eq!(kind(ip), None, "{ip} is public");
        }
        assert_eq!(kind("::ffff:127.0.0.1"), Some("loopback"));
    }
}
