//! IPv6 routing: the one [`RouteTable`] of [`crate::route`] over IPv6
//! prefixes: routes by prefix length, one hash probe per length present,
//! most specific first, and a generation that changes with every route
//! added or removed (stamped into the same per-destination cache scheme).
//! Owned by one lcore.
//!
//! Link-local destinations (fe80::/10) are not routed: they name a link,
//! which the caller knows (the socket address's scope).

use crate::route::{IpNextHop, IpRoute, RouteTable, V6};

/// An IPv6 route.
pub type Route6 = IpRoute<V6>;

/// Where one IPv6 packet goes.
pub type NextHop6 = IpNextHop<V6>;

/// The IPv6 table: [`RouteTable`] over [`V6`].
pub type RouteTable6 = RouteTable<V6>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::Ipv6Cidr;
    use core::net::Ipv6Addr;

    fn cidr(s: &str) -> Ipv6Cidr {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn longest_prefix_wins_and_changes_bump_the_generation() {
        let mut t = RouteTable6::new();
        let source = ip("2001:db8::1");
        t.add(Route6 {
            prefix: cidr("2001:db8::/64"),
            gateway: None,
            port: 0,
            source,
        });
        t.add(Route6 {
            prefix: cidr("::/0"),
            gateway: Some(ip("fe80::1")),
            port: 1,
            source,
        });
        t.add(Route6 {
            prefix: cidr("2001:db8:0:0:8000::/65"),
            gateway: Some(ip("2001:db8::fe")),
            port: 0,
            source,
        });
        let hop = |d: &str| t.next_hop(ip(d)).map(|h| (h.via, h.port));
        assert_eq!(hop("2001:db8::7"), Some((ip("2001:db8::7"), 0)));
        assert_eq!(hop("2001:db8::8000:0:0:7"), Some((ip("2001:db8::fe"), 0)));
        assert_eq!(hop("2001:db9::1"), Some((ip("fe80::1"), 1)));
        let mut listed: Vec<(String, u16)> =
            t.iter().map(|r| (r.prefix.to_string(), r.port)).collect();
        assert_eq!(listed[0].0, "2001:db8:0:0:8000::/65", "longest first");
        listed.sort();
        assert_eq!(
            listed,
            [
                ("2001:db8:0:0:8000::/65".to_owned(), 0),
                ("2001:db8::/64".to_owned(), 0),
                ("::/0".to_owned(), 1),
            ]
        );
        let before = t.generation();
        assert!(t.remove(cidr("::/0")));
        assert!(!t.remove(cidr("::/0")));
        assert!(t.generation() > before);
        assert_eq!(t.next_hop(ip("2001:db9::1")), None);
        assert_eq!(t.iter().count(), 2, "the removed route is not listed");
    }
}
