//! IPv6 routing: a longest-prefix-match table, the same design as the IPv4
//! one ([`crate::route`]): routes by prefix length, one hash probe per
//! length present, most specific first, and a generation that changes with
//! every route added or removed (stamped into the same per-destination
//! cache scheme). Owned by one lcore.
//!
//! Link-local destinations (fe80::/10) are not routed: they name a link,
//! which the caller knows (the socket address's scope).

use crate::route::{Ipv6Cidr, NextHopTable};
use core::net::Ipv6Addr;
use std::collections::HashMap;

/// An IPv6 route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route6 {
    /// The destination prefix.
    pub prefix: Ipv6Cidr,
    /// Next hop, or `None` for an on-link prefix.
    pub gateway: Option<Ipv6Addr>,
    /// Output link.
    pub port: u16,
    /// Source address for packets that take this route.
    pub source: Ipv6Addr,
}

/// Where one IPv6 packet goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NextHop6 {
    /// The address to resolve with Neighbor Discovery.
    pub via: Ipv6Addr,
    /// Output link.
    pub port: u16,
    /// Source address to use.
    pub source: Ipv6Addr,
}

/// The table. See the module documentation.
#[derive(Debug, Default)]
pub struct RouteTable6 {
    by_len: Vec<HashMap<u128, Route6>>,
    /// Prefix lengths present, longest first.
    lengths: Vec<u8>,
    generation: u64,
}

impl RouteTable6 {
    /// An empty table.
    pub fn new() -> RouteTable6 {
        RouteTable6 {
            by_len: (0..=128).map(|_| HashMap::new()).collect(),
            lengths: Vec::new(),
            generation: 0,
        }
    }

    /// Adds or replaces the route for `route.prefix`.
    pub fn add(&mut self, route: Route6) {
        let len = route.prefix.len;
        let key = route.prefix.addr.to_bits() & route.prefix.mask();
        self.by_len[usize::from(len)].insert(key, route);
        if !self.lengths.contains(&len) {
            self.lengths.push(len);
            self.lengths.sort_unstable_by(|a, b| b.cmp(a));
        }
        self.generation += 1;
    }

    /// Removes the route for `prefix`; true if there was one.
    pub fn remove(&mut self, prefix: Ipv6Cidr) -> bool {
        let key = prefix.addr.to_bits() & prefix.mask();
        let removed = self.by_len[usize::from(prefix.len)].remove(&key).is_some();
        if removed {
            if self.by_len[usize::from(prefix.len)].is_empty() {
                self.lengths.retain(|&l| l != prefix.len);
            }
            self.generation += 1;
        }
        removed
    }

    /// The route for exactly `prefix`, if there is one.
    pub fn get(&self, prefix: Ipv6Cidr) -> Option<&Route6> {
        let key = prefix.addr.to_bits() & prefix.mask();
        self.by_len[usize::from(prefix.len)].get(&key)
    }

    /// Changes whenever a route is added or removed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The most specific route to `dst`.
    pub fn lookup(&self, dst: Ipv6Addr) -> Option<&Route6> {
        let bits = dst.to_bits();
        self.lengths.iter().find_map(|&len| {
            let mask = Ipv6Cidr { addr: dst, len }.mask();
            self.by_len[usize::from(len)].get(&(bits & mask))
        })
    }

    /// The next hop for `dst`.
    pub fn next_hop(&self, dst: Ipv6Addr) -> Option<NextHop6> {
        self.lookup(dst).map(|r| NextHop6 {
            via: r.gateway.unwrap_or(dst),
            port: r.port,
            source: r.source,
        })
    }

    /// Every route, longest prefixes first (in no set order within a
    /// length). Control path: for listings, not per packet.
    pub fn iter(&self) -> impl Iterator<Item = &Route6> + '_ {
        (self.lengths.iter()).flat_map(|&len| self.by_len[usize::from(len)].values())
    }
}

impl NextHopTable for RouteTable6 {
    type Addr = Ipv6Addr;
    type Hop = NextHop6;
    fn next_hop_for(&self, dst: Ipv6Addr) -> Option<NextHop6> {
        self.next_hop(dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
