//! Routing: a longest-prefix-match table, written once for both address
//! families ([`RouteTable<F>`] over a [`Family`]: [`V4`] or [`V6`]), and a
//! per-destination route cache stamped with a generation number.
//!
//! The table holds connected routes (from the interface addresses) and
//! static routes with gateways. Lookup walks the prefix lengths present, most
//! specific first, with one hash probe each (at most 33, usually 2 or 3).
//! The cache remembers the answer per destination; an entry is valid only
//! while its stamp equals the current generation (table changes plus
//! neighbour changes), so any change invalidates stale entries on next use
//! without a sweep. Owned by one lcore.

use core::net::{Ipv4Addr, Ipv6Addr};
use std::collections::HashMap;

/// An IPv4 prefix: address and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    /// The address (host bits may be set: it is also an interface address).
    pub addr: Ipv4Addr,
    /// Prefix length, 0 to 32.
    pub len: u8,
}

impl Ipv4Cidr {
    /// `0.0.0.0/0`: every address (the default route's prefix).
    pub const DEFAULT: Ipv4Cidr = Ipv4Cidr {
        addr: Ipv4Addr::UNSPECIFIED,
        len: 0,
    };

    /// `addr/len`; `None` if `len` > 32.
    pub fn new(addr: Ipv4Addr, len: u8) -> Option<Ipv4Cidr> {
        (len <= 32).then_some(Ipv4Cidr { addr, len })
    }

    /// The network mask.
    pub fn mask(self) -> u32 {
        if self.len == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(self.len))
        }
    }

    /// The network address (host bits cleared).
    pub fn network(self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) & self.mask())
    }

    /// The directed broadcast address of the network.
    pub fn broadcast(self) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.addr) | !self.mask())
    }

    /// True if `ip` is inside the prefix.
    pub fn contains(self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & self.mask() == u32::from(self.addr) & self.mask()
    }

    /// True if `addr` can be a host's (an interface's) address on this
    /// prefix: unicast (not unspecified, multicast, loopback, class E or
    /// the limited broadcast) and, on a prefix of 30 bits or shorter,
    /// neither the network's address nor its broadcast address (a /31
    /// has no such addresses, RFC 3021).
    pub fn is_host_address(self) -> bool {
        let ip = self.addr;
        let special = ip.is_unspecified()
            || ip.is_multicast()
            || ip.is_loopback()
            || ip.is_broadcast()
            || ip.octets()[0] >= 240;
        let edge = self.len <= 30 && (ip == self.network() || ip == self.broadcast());
        !special && !edge
    }
}

impl core::str::FromStr for Ipv4Cidr {
    type Err = String;

    /// Parses `A.B.C.D/LEN`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (addr, len) = s
            .split_once('/')
            .ok_or_else(|| format!("'{s}' is not ADDRESS/PREFIX (e.g. 10.0.0.1/24)"))?;
        let addr: Ipv4Addr = addr
            .parse()
            .map_err(|_| format!("bad IPv4 address '{addr}'"))?;
        let len: u8 = len
            .parse()
            .map_err(|_| format!("bad prefix length '{len}'"))?;
        Ipv4Cidr::new(addr, len).ok_or_else(|| format!("prefix length {len} is over 32"))
    }
}

impl core::fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// An IPv6 prefix: address and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv6Cidr {
    /// The address (host bits may be set: it is also an interface address).
    pub addr: Ipv6Addr,
    /// Prefix length, 0 to 128.
    pub len: u8,
}

impl Ipv6Cidr {
    /// `::/0`, the default route's prefix.
    pub const DEFAULT: Ipv6Cidr = Ipv6Cidr {
        addr: Ipv6Addr::UNSPECIFIED,
        len: 0,
    };

    /// `addr/len`; `None` if `len` > 128.
    pub fn new(addr: Ipv6Addr, len: u8) -> Option<Ipv6Cidr> {
        (len <= 128).then_some(Ipv6Cidr { addr, len })
    }

    /// The network mask.
    pub fn mask(self) -> u128 {
        if self.len == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(self.len))
        }
    }

    /// True if `ip` is inside the prefix.
    pub fn contains(self, ip: Ipv6Addr) -> bool {
        (ip.to_bits() ^ self.addr.to_bits()) & self.mask() == 0
    }
}

impl core::str::FromStr for Ipv6Cidr {
    type Err = String;

    /// Parses `ADDRESS/LEN`, e.g. `2001:db8::1/64`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (addr, len) = s
            .split_once('/')
            .ok_or_else(|| format!("'{s}' is not ADDRESS/PREFIX (e.g. 2001:db8::1/64)"))?;
        let addr: Ipv6Addr = addr
            .parse()
            .map_err(|_| format!("bad IPv6 address '{addr}'"))?;
        let len: u8 = len
            .parse()
            .map_err(|_| format!("bad prefix length '{len}'"))?;
        Ipv6Cidr::new(addr, len).ok_or_else(|| format!("prefix length {len} is over 128"))
    }
}

impl core::fmt::Display for Ipv6Cidr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// An address family's part in routing: its address, prefix and the bits
/// a prefix is keyed by. Lets one [`RouteTable`] serve IPv4 and IPv6.
pub trait Family: Copy + core::fmt::Debug + Default + 'static {
    /// The address type.
    type Addr: Copy + Eq + core::hash::Hash + core::fmt::Debug;
    /// The prefix type.
    type Cidr: Copy + Eq + core::fmt::Debug;
    /// An address as an integer, the key of a prefix's network.
    type Bits: Copy + Eq + core::hash::Hash + core::fmt::Debug;
    /// The longest prefix (32 or 128).
    const MAX_LEN: u8;
    /// A prefix's address and length.
    fn split(prefix: Self::Cidr) -> (Self::Addr, u8);
    /// The network of `addr` under a prefix of `len` bits, as an integer.
    fn network(addr: Self::Addr, len: u8) -> Self::Bits;
}

/// IPv4 routing ([`Ipv4Cidr`] prefixes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct V4;

/// IPv6 routing ([`Ipv6Cidr`] prefixes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct V6;

impl Family for V4 {
    type Addr = Ipv4Addr;
    type Cidr = Ipv4Cidr;
    type Bits = u32;
    const MAX_LEN: u8 = 32;
    fn split(prefix: Ipv4Cidr) -> (Ipv4Addr, u8) {
        (prefix.addr, prefix.len)
    }
    fn network(addr: Ipv4Addr, len: u8) -> u32 {
        u32::from(addr) & Ipv4Cidr { addr, len }.mask()
    }
}

impl Family for V6 {
    type Addr = Ipv6Addr;
    type Cidr = Ipv6Cidr;
    type Bits = u128;
    const MAX_LEN: u8 = 128;
    fn split(prefix: Ipv6Cidr) -> (Ipv6Addr, u8) {
        (prefix.addr, prefix.len)
    }
    fn network(addr: Ipv6Addr, len: u8) -> u128 {
        addr.to_bits() & Ipv6Cidr { addr, len }.mask()
    }
}

/// A route of family `F`: where packets to a prefix go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRoute<F: Family> {
    /// The destination prefix.
    pub prefix: F::Cidr,
    /// Next hop, or `None` for a directly connected network.
    pub gateway: Option<F::Addr>,
    /// Output port index.
    pub port: u16,
    /// Source address for packets that take this route.
    pub source: F::Addr,
}

/// An IPv4 route.
pub type Route = IpRoute<V4>;

/// Where one packet of family `F` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNextHop<F: Family> {
    /// The address to resolve with ARP or ND (the destination or the
    /// gateway).
    pub via: F::Addr,
    /// Output port index.
    pub port: u16,
    /// Source address to use.
    pub source: F::Addr,
}

/// Where one IPv4 packet goes.
pub type NextHop = IpNextHop<V4>;

/// An IPv6 route. Link-local destinations (fe80::/10) are not routed: they
/// name a link, which the caller knows (the socket address's scope).
pub type Route6 = IpRoute<V6>;

/// Where one IPv6 packet goes.
pub type NextHop6 = IpNextHop<V6>;

/// The IPv6 table: [`RouteTable`] over [`V6`].
pub type RouteTable6 = RouteTable<V6>;

/// The longest-prefix-match table of family `F` (IPv4 by default). See
/// the module documentation.
#[derive(Debug, Clone)]
pub struct RouteTable<F: Family = V4> {
    /// Routes by prefix length, keyed by network address.
    by_len: Vec<HashMap<F::Bits, IpRoute<F>>>,
    /// Prefix lengths present, longest first.
    lengths: Vec<u8>,
    generation: u64,
}

impl<F: Family> Default for RouteTable<F> {
    fn default() -> Self {
        RouteTable::new()
    }
}

impl<F: Family> RouteTable<F> {
    /// An empty table.
    pub fn new() -> RouteTable<F> {
        RouteTable {
            by_len: (0..=F::MAX_LEN).map(|_| HashMap::new()).collect(),
            lengths: Vec::new(),
            generation: 0,
        }
    }

    fn key(prefix: F::Cidr) -> (usize, F::Bits) {
        let (addr, len) = F::split(prefix);
        (usize::from(len), F::network(addr, len))
    }

    /// Adds or replaces the route for `route.prefix`.
    pub fn add(&mut self, route: IpRoute<F>) {
        let (len, key) = Self::key(route.prefix);
        self.by_len[len].insert(key, route);
        let len = len as u8;
        if !self.lengths.contains(&len) {
            self.lengths.push(len);
            self.lengths.sort_unstable_by(|a, b| b.cmp(a));
        }
        self.generation += 1;
    }

    /// Removes the route for `prefix`; true if there was one.
    pub fn remove(&mut self, prefix: F::Cidr) -> bool {
        let (len, key) = Self::key(prefix);
        let removed = self.by_len[len].remove(&key).is_some();
        if removed {
            if self.by_len[len].is_empty() {
                self.lengths.retain(|&l| usize::from(l) != len);
            }
            self.generation += 1;
        }
        removed
    }

    /// The route for exactly `prefix`, if there is one.
    pub fn get(&self, prefix: F::Cidr) -> Option<&IpRoute<F>> {
        let (len, key) = Self::key(prefix);
        self.by_len[len].get(&key)
    }

    /// Changes whenever a route is added or removed.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The most specific route to `dst`.
    pub fn lookup(&self, dst: F::Addr) -> Option<&IpRoute<F>> {
        self.lengths
            .iter()
            .find_map(|&len| self.by_len[usize::from(len)].get(&F::network(dst, len)))
    }

    /// The next hop for `dst`.
    pub fn next_hop(&self, dst: F::Addr) -> Option<IpNextHop<F>> {
        self.lookup(dst).map(|r| IpNextHop {
            via: r.gateway.unwrap_or(dst),
            port: r.port,
            source: r.source,
        })
    }

    /// Every route, longest prefixes first (in no set order within a
    /// length). Control path: for listings, not per packet.
    pub fn iter(&self) -> impl Iterator<Item = &IpRoute<F>> + '_ {
        (self.lengths.iter()).flat_map(|&len| self.by_len[usize::from(len)].values())
    }
}

/// A route table a [`RouteCache`] can sit in front of.
pub trait NextHopTable {
    /// The destination address type.
    type Addr: Copy + Eq + core::hash::Hash;
    /// What a lookup answers.
    type Hop: Copy;
    /// The most specific route's next hop for `dst`.
    fn next_hop_for(&self, dst: Self::Addr) -> Option<Self::Hop>;
}

impl<F: Family> NextHopTable for RouteTable<F> {
    type Addr = F::Addr;
    type Hop = IpNextHop<F>;
    fn next_hop_for(&self, dst: F::Addr) -> Option<IpNextHop<F>> {
        self.next_hop(dst)
    }
}

/// A per-destination cache of next-hop answers of a table `T` (IPv4's
/// [`RouteTable`] by default, or [`RouteTable6`]), each
/// stamped with the generation it was computed in.
#[derive(Debug)]
pub struct RouteCache<T: NextHopTable = RouteTable> {
    entries: HashMap<T::Addr, (u64, T::Hop), crate::hash::AddressHash>,
    capacity: usize,
}

impl<T: NextHopTable> RouteCache<T> {
    /// A cache of at most `capacity` destinations.
    pub fn new(capacity: usize) -> RouteCache<T> {
        RouteCache {
            entries: HashMap::with_hasher(crate::hash::AddressHash::random()),
            capacity,
        }
    }

    /// The next hop for `dst`, from the cache if its stamp equals
    /// `generation`, else from `table` (and cached).
    pub fn next_hop(&mut self, table: &T, generation: u64, dst: T::Addr) -> Option<T::Hop> {
        if let Some(&(stamp, hop)) = self.entries.get(&dst) {
            if stamp == generation {
                return Some(hop);
            }
        }
        let hop = table.next_hop_for(dst)?;
        if self.entries.len() >= self.capacity {
            // Stale entries go first; a full cache of fresh ones is cleared.
            self.entries.retain(|_, (stamp, _)| *stamp == generation);
            if self.entries.len() >= self.capacity {
                self.entries.clear();
            }
        }
        self.entries.insert(dst, (generation, hop));
        Some(hop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr(s: &str) -> Ipv4Cidr {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> Ipv4Addr {
        s.parse().unwrap()
    }

    #[test]
    fn host_addresses_are_unicast_and_not_a_prefix_s_edges() {
        for good in [
            "10.0.0.1/24",
            "10.0.0.254/24",
            "10.0.0.0/31",
            "10.0.0.1/31",
            "10.0.0.0/32",
        ] {
            assert!(cidr(good).is_host_address(), "{good}");
        }
        for bad in [
            "10.0.0.0/24",
            "10.0.0.255/24",
            "10.0.0.4/30",
            "0.0.0.0/8",
            "127.0.0.1/8",
            "224.0.0.1/24",
            "240.0.0.1/8",
            "255.255.255.255/32",
        ] {
            assert!(!cidr(bad).is_host_address(), "{bad}");
        }
    }

    #[test]
    fn iter_lists_every_route_once_longest_first_and_forgets_removed_ones() {
        let mut t = table();
        let listed = |t: &RouteTable| -> Vec<String> {
            t.iter()
                .map(|r| format!("{} {:?}", r.prefix, r.gateway))
                .collect()
        };
        let mut all = listed(&t);
        assert_eq!(all.len(), 4, "{all:?}");
        assert_eq!(all[3], "0.0.0.0/0 Some(10.0.0.1)", "the default is last");
        all.sort();
        assert_eq!(
            all,
            [
                "0.0.0.0/0 Some(10.0.0.1)",
                "10.0.0.0/24 None",
                "10.1.0.0/16 Some(10.0.0.254)",
                "10.1.2.0/24 Some(10.0.0.253)",
            ]
        );
        assert!(t.remove(cidr("10.1.0.0/16")));
        assert_eq!(listed(&t).len(), 3);
        assert!(!listed(&t).iter().any(|r| r.starts_with("10.1.0.0/16")));
    }

    fn table() -> RouteTable {
        let mut t = RouteTable::new();
        let source = ip("10.0.0.1");
        t.add(Route {
            prefix: cidr("10.0.0.0/24"),
            gateway: None,
            port: 0,
            source,
        });
        t.add(Route {
            prefix: cidr("10.1.0.0/16"),
            gateway: Some(ip("10.0.0.254")),
            port: 0,
            source,
        });
        t.add(Route {
            prefix: cidr("10.1.2.0/24"),
            gateway: Some(ip("10.0.0.253")),
            port: 1,
            source,
        });
        t.add(Route {
            prefix: cidr("0.0.0.0/0"),
            gateway: Some(ip("10.0.0.1")),
            port: 0,
            source,
        });
        t
    }

    #[test]
    fn longest_prefix_wins() {
        let t = table();
        let rows = [
            ("10.0.0.7", ip("10.0.0.7"), 0),
            ("10.1.9.9", ip("10.0.0.254"), 0),
            ("10.1.2.3", ip("10.0.0.253"), 1),
            ("192.0.2.1", ip("10.0.0.1"), 0),
        ];
        for (dst, via, port) in rows {
            let hop = t.next_hop(ip(dst)).unwrap();
            assert_eq!((hop.via, hop.port), (via, port), "dst {dst}");
        }
    }

    #[test]
    fn without_a_default_route_unknown_networks_have_no_route() {
        let mut t = table();
        assert!(t.remove(cidr("0.0.0.0/0")));
        assert!(!t.remove(cidr("0.0.0.0/0")));
        assert_eq!(t.next_hop(ip("192.0.2.1")), None);
    }

    #[test]
    fn cache_entries_are_refreshed_after_a_change() {
        let mut t = table();
        let mut cache = RouteCache::new(16);
        let dst = ip("10.1.2.3");
        let first = cache.next_hop(&t, t.generation(), dst).unwrap();
        assert_eq!(first.via, ip("10.0.0.253"));
        t.remove(cidr("10.1.2.0/24"));
        let second = cache.next_hop(&t, t.generation(), dst).unwrap();
        assert_eq!(second.via, ip("10.0.0.254"), "the stale entry was not used");
    }

    #[test]
    fn cidr_parsing_and_arithmetic() {
        let c = cidr("10.0.0.1/24");
        assert_eq!(c.network(), ip("10.0.0.0"));
        assert_eq!(c.broadcast(), ip("10.0.0.255"));
        assert!(c.contains(ip("10.0.0.200")) && !c.contains(ip("10.0.1.1")));
        assert!("10.0.0.1".parse::<Ipv4Cidr>().is_err());
        assert!("10.0.0.1/33".parse::<Ipv4Cidr>().is_err());
        assert_eq!(cidr("0.0.0.0/0").mask(), 0);
    }

    /// The same table over IPv6 prefixes.
    mod v6 {
        use super::super::*;

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
}
