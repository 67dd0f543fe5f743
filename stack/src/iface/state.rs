//! The pipeline's state: the links ([`Link`]: MAC, addresses, MTU,
//! neighbour caches) and everything the receive and send paths read and
//! write ([`Core`]), below every path of `iface` and above nothing of it.
//!
//! The seam for many lcores. Today one lcore owns all of it. Split across
//! lcores, it falls in two parts:
//! - **per lcore** (written per packet, never shared): the transmit batches
//!   (`transmit`, outside `Core`), the reassemblers, the counters, the ICMP
//!   rate limit, the IPv4 and IPv6 fragment identifications, the route
//!   caches, the socket errors of a burst, and TCP's timers and pacing heap;
//! - **shared by all lcores** (read per packet, written rarely, from a
//!   control path): the configuration, the links' addresses and neighbour
//!   caches, the route tables, the learned path MTUs and the advertised
//!   default route, the address classes (`local`, `special`), the UDP
//!   socket table, and TCP's listeners and connection table (a connection
//!   itself is owned by one lcore).
//!
//! Invariants: `special` and `special_filter` describe exactly the
//! configured IPv4 addresses and their broadcasts; the learned path-MTU
//! tables hold at most [`PATH_MTUS`] entries each.

use super::config::{InterfaceConfig, LinkConfig};
use super::limit::TokenBucket;
use super::tcp;
use crate::counters::Counters;
use crate::neighbor::NeighborCache;
use crate::port::{Buf, MacAddr};
use crate::reassembly::{Key6, Reassembler};
use crate::route::{Ipv4Cidr, Ipv6Cidr, RouteCache, RouteTable};
use crate::route6::RouteTable6;
use crate::time::{Duration, Instant};
use crate::udp::{PeerError, SocketId, UdpTable};
use crate::wire::ipv6::multicast_mac;
use arrayvec::ArrayVec;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::collections::HashMap;
use std::sync::Arc;

/// One port's link-layer state: its MAC, addresses, MTU and neighbours.
#[derive(Debug)]
pub(crate) struct Link<B> {
    pub(crate) mac: MacAddr,
    pub(crate) addresses: Vec<Ipv4Cidr>,
    pub(crate) mtu: usize,
    pub(crate) neighbors: NeighborCache<B>,
    /// IPv6 runs on the link.
    pub(crate) ipv6: bool,
    /// IPv6 addresses in use (duplicate address detection passed).
    pub(crate) addresses6: Vec<Ipv6Cidr>,
    /// IPv6 addresses still under duplicate address detection.
    pub(crate) tentative6: Vec<Tentative>,
    /// IPv6 addresses another node turned out to use (never used here).
    pub(crate) duplicates6: Vec<Ipv6Cidr>,
    /// Multicast groups joined: all-nodes and each address's solicited-node
    /// group.
    pub(crate) groups6: Vec<Ipv6Addr>,
    pub(crate) neighbors6: NeighborCache<B, Ipv6Addr>,
}

impl<B> Link<B> {
    /// Our address to speak from towards `peer` on this link: the one whose
    /// network holds it, else the link's first.
    pub(crate) fn source_for(&self, peer: Ipv4Addr) -> Ipv4Addr {
        self.addresses
            .iter()
            .find(|a| a.contains(peer))
            .or(self.addresses.first())
            .map_or(Ipv4Addr::UNSPECIFIED, |a| a.addr)
    }

    /// True if `ip` is on one of this link's connected networks.
    pub(crate) fn on_link(&self, ip: Ipv4Addr) -> bool {
        self.addresses.iter().any(|a| a.contains(ip))
    }

    /// True if `ip` is one of this link's IPv6 addresses in use.
    pub(crate) fn has_address6(&self, ip: Ipv6Addr) -> bool {
        self.addresses6.iter().any(|a| a.addr == ip)
    }

    /// True if `ip` is one of this link's tentative IPv6 addresses.
    pub(crate) fn is_tentative6(&self, ip: Ipv6Addr) -> bool {
        self.tentative6.iter().any(|t| t.cidr.addr == ip)
    }

    /// True if the link joined multicast group `ip`.
    pub(crate) fn joined(&self, ip: Ipv6Addr) -> bool {
        self.groups6.contains(&ip)
    }

    /// True if the link listens to Ethernet multicast address `mac` (the
    /// mapping of a group it joined).
    pub(crate) fn listens(&self, mac: MacAddr) -> bool {
        self.groups6.iter().any(|&g| multicast_mac(g) == mac)
    }

    /// The address that routes through this link speak from: the first
    /// global one (in use or tentative), else the link-local one.
    pub(crate) fn route_source6(&self) -> Option<Ipv6Addr> {
        let all = || {
            self.addresses6
                .iter()
                .chain(self.tentative6.iter().map(|t| &t.cidr))
        };
        all()
            .find(|a| !a.addr.is_unicast_link_local())
            .or_else(|| all().next())
            .map(|a| a.addr)
    }

    /// True if `ip` is on one of the link's IPv6 prefixes (in use or
    /// tentative).
    pub(crate) fn on_link6(&self, ip: Ipv6Addr) -> bool {
        self.addresses6
            .iter()
            .chain(self.tentative6.iter().map(|t| &t.cidr))
            .any(|a| a.len < 128 && !a.addr.is_unicast_link_local() && a.contains(ip))
    }

    /// Our IPv6 address to answer `peer` from on this link: the link-local
    /// one for a link-local peer, else the first other one in use (the
    /// link-local one if there is none).
    pub(crate) fn source_for6(&self, peer: Ipv6Addr) -> Option<Ipv6Addr> {
        if peer.is_unicast_link_local() {
            return self.link_local6();
        }
        self.addresses6
            .iter()
            .find(|a| !a.addr.is_unicast_link_local())
            .map(|a| a.addr)
            .or_else(|| self.link_local6())
    }

    /// The link-local address, once it is in use.
    pub(crate) fn link_local6(&self) -> Option<Ipv6Addr> {
        self.addresses6
            .iter()
            .find(|a| a.addr.is_unicast_link_local())
            .map(|a| a.addr)
    }
}

/// An IPv6 address under duplicate address detection.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tentative {
    pub(crate) cidr: Ipv6Cidr,
    /// Solicitations still to send.
    pub(crate) probes_left: u8,
    /// When to send the next one, or to take the address into use;
    /// `None` before the first.
    pub(crate) deadline: Option<Instant>,
}

/// [`Core::class`]: one of our addresses.
pub(crate) const LOCAL: u8 = 1;
/// [`Core::class`]: a directed broadcast address of one of our networks, or
/// the limited broadcast.
pub(crate) const BROADCAST: u8 = 2;

/// An address's bit in [`Core::special_filter`] (a multiplicative hash's
/// top six bits).
#[inline]
pub(super) fn special_bit(ip: u32) -> u64 {
    1 << (ip.wrapping_mul(0x9e37_79b1) >> 26)
}

/// The address classes of a configuration: each local address, each
/// directed broadcast address (prefixes shorter than /31) and the limited
/// broadcast, with an address in two roles getting both bits.
pub(super) fn special_addresses(links: &[LinkConfig]) -> Vec<(u32, u8)> {
    let mut special: Vec<(u32, u8)> = vec![(Ipv4Addr::BROADCAST.to_bits(), BROADCAST)];
    let mut add =
        |ip: Ipv4Addr, class: u8| match special.iter_mut().find(|(a, _)| *a == ip.to_bits()) {
            Some((_, bits)) => *bits |= class,
            None => special.push((ip.to_bits(), class)),
        };
    for address in links.iter().flat_map(|l| l.addresses.iter()) {
        add(address.addr, LOCAL);
        if address.len < 31 {
            add(address.broadcast(), BROADCAST);
        }
    }
    // Local addresses first: they are what most packets ask about.
    special.sort_by_key(|&(_, class)| class & LOCAL == 0);
    special
}

/// State shared by the receive and send paths (everything but the handler
/// and the per-poll transmit batches). See the module documentation for
/// which fields belong to one lcore and which all lcores will share.
#[derive(Debug)]
pub(crate) struct Core<B: Buf> {
    pub(crate) config: InterfaceConfig,
    pub(crate) links: Vec<Link<B>>,
    pub(crate) routes: RouteTable,
    /// IPv6 routes: on-link prefixes of the configured addresses, static
    /// routes (link-local destinations are not routed: they name a link).
    pub(crate) routes6: RouteTable6,
    pub(crate) route_cache: RouteCache,
    /// The IPv6 routes' cache (stamped with their generation).
    pub(crate) route_cache6: RouteCache<RouteTable6>,
    pub(crate) reassembler: Reassembler<B>,
    pub(crate) reassembler6: Reassembler<B, Key6>,
    pub(crate) udp: UdpTable,
    pub(crate) counters: Arc<Counters>,
    /// Every local address, of every link (computed once).
    pub(crate) local: Vec<Ipv4Addr>,
    /// Every address that is ours or a broadcast address, with its
    /// [`LOCAL`]/[`BROADCAST`] bits (computed once; one scan per question).
    pub(crate) special: Vec<(u32, u8)>,
    /// One bit per [`special_bit`] of each special address: a clear bit
    /// answers "neither local nor broadcast" without the scan (the common
    /// question about a source address).
    pub(crate) special_filter: u64,
    pub(crate) icmp_limit: TokenBucket,
    pub(crate) next_ident: u16,
    /// IPv6 fragment identification: a counter from a keyed start (RFC
    /// 7739: not predictable from outside).
    pub(crate) next_ident6: u32,
    /// Path MTUs below the link's, learned from packet-too-big messages
    /// (RFC 8201), with when to forget them. Bounded.
    pub(crate) path_mtus6: HashMap<Ipv6Addr, (usize, Instant)>,
    /// Path MTUs below the link's, learned from ICMP "fragmentation
    /// needed" about our TCP segments (RFC 1191), with when to forget
    /// them. Bounded.
    pub(crate) path_mtus4: HashMap<Ipv4Addr, (usize, Instant)>,
    /// ICMP errors for connected sockets found during a burst, handed over
    /// after it (bounded: more in one burst are dropped).
    pub(crate) socket_errors: ArrayVec<(SocketId, PeerError), SOCKET_ERRORS>,
    /// The default route a router advertisement installed: (link, router,
    /// until when).
    pub(crate) ra_default: Option<(usize, Ipv6Addr, Instant)>,
    /// TCP connections, listeners and their timers.
    pub(crate) tcp: tcp::TcpCore<B>,
}

/// Most socket errors kept per burst.
pub(crate) const SOCKET_ERRORS: usize = 16;

/// Most path MTUs remembered.
pub(crate) const PATH_MTUS: usize = 4096;

/// How long a learned path MTU holds (RFC 8201 5.3: at least 5 minutes).
pub(crate) const PATH_MTU_TIMEOUT: Duration = Duration::from_secs(600);

impl<B: Buf> Core<B> {
    /// [`LOCAL`] and/or [`BROADCAST`] for `ip`, or 0. Per packet.
    #[inline(always)]
    pub(crate) fn class(&self, ip: u32) -> u8 {
        if self.special_filter & special_bit(ip) == 0 {
            return 0;
        }
        for &(address, class) in &self.special {
            if address == ip {
                return class;
            }
        }
        0
    }

    /// True if `ip` is one of our addresses (on any link).
    #[inline]
    pub(crate) fn is_local(&self, ip: Ipv4Addr) -> bool {
        self.class(ip.to_bits()) & LOCAL != 0
    }

    /// True if `ip` is a broadcast address of one of our networks (or the
    /// limited broadcast).
    #[inline]
    pub(crate) fn is_broadcast(&self, ip: Ipv4Addr) -> bool {
        self.class(ip.to_bits()) & BROADCAST != 0
    }

    /// The next IPv6 fragment identification.
    pub(crate) fn fragment_ident6(&mut self) -> u32 {
        self.next_ident6 = self.next_ident6.wrapping_add(1);
        self.next_ident6
    }

    /// The MTU towards `dst` on a link of `link_mtu`.
    pub(crate) fn path_mtu6(&self, dst: Ipv6Addr, link_mtu: usize) -> usize {
        match self.path_mtus6.get(&dst) {
            Some(&(mtu, _)) => mtu.min(link_mtu),
            None => link_mtu,
        }
    }

    /// The MTU towards `dst` on a link of `link_mtu` (IPv4).
    pub(crate) fn path_mtu4(&self, dst: Ipv4Addr, link_mtu: usize) -> usize {
        match self.path_mtus4.get(&dst) {
            Some(&(mtu, _)) => mtu.min(link_mtu),
            None => link_mtu,
        }
    }

    /// Records a path MTU to `dst` learned now (a full table takes no new
    /// destinations; a known one is updated). ICMP errors only, not per
    /// packet.
    pub(crate) fn learn_path_mtu(&mut self, dst: IpAddr, mtu: usize, now: Instant) {
        let until = now + PATH_MTU_TIMEOUT;
        match dst {
            IpAddr::V4(dst) => {
                if self.path_mtus4.contains_key(&dst) || self.path_mtus4.len() < PATH_MTUS {
                    self.path_mtus4.insert(dst, (mtu, until));
                }
            }
            IpAddr::V6(dst) => {
                if self.path_mtus6.contains_key(&dst) || self.path_mtus6.len() < PATH_MTUS {
                    self.path_mtus6.insert(dst, (mtu, until));
                }
            }
        }
    }

    pub(crate) fn ident(&mut self) -> u16 {
        self.next_ident = self.next_ident.wrapping_add(1);
        self.next_ident
    }

    /// Changes whenever a route or any neighbour changes: the stamp of
    /// cached routes.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        let neighbors = match self.links.as_slice() {
            // One port, the common case: no loop.
            [link] => link.neighbors.generation(),
            links => links
                .iter()
                .fold(0u64, |sum, l| sum.wrapping_add(l.neighbors.generation())),
        };
        self.routes.generation() ^ neighbors.rotate_left(32)
    }

    /// The link whose connected networks hold `ip`.
    pub(crate) fn link_of(&self, ip: Ipv4Addr) -> Option<usize> {
        self.links.iter().position(|l| l.on_link(ip))
    }

    /// True if `ip` is one of our IPv6 addresses (on any link: the weak
    /// host model, except that link-local addresses are per link).
    pub(crate) fn is_local6(&self, link: usize, ip: Ipv6Addr) -> bool {
        if ip.is_unicast_link_local() {
            return self.links.get(link).is_some_and(|l| l.has_address6(ip));
        }
        self.links.iter().any(|l| l.has_address6(ip))
    }
}
