//! The pipeline's state: the links ([`Link`]: MAC, addresses, MTU,
//! neighbour caches) and everything the receive and send paths read and
//! write ([`Core`]), below every path of `iface` and above nothing of it
//! but the IP families' state (`ip::family`).
//!
//! The pipeline's state is in two halves, one per kind of owner:
//! - [`LcoreState`], what one polling lcore owns (written per packet, never
//!   shared): the counters, the reassemblers, the route caches and fragment
//!   identifications of both families ([`IpLcore`]), the routes UDP sockets
//!   keep to their last destinations, the ICMP rate limit and the socket
//!   errors of a burst; the transmit batches are per lcore too (`transmit`,
//!   outside `Core`);
//! - [`SharedState`], what all lcores share (read per packet, written
//!   rarely): the configuration, the links' addresses and neighbours, both
//!   families' route tables and learned path MTUs ([`IpShared`]), the
//!   advertised default route, the address classes (`local`, `special`),
//!   the UDP socket table and the queues of queue-mode sockets. A pipeline
//!   reads it as a published snapshot and writes it through the shared
//!   tables' lock ([`super::tables`]); the authoritative copy is a
//!   [`Master`], which adds the neighbour caches themselves.
//!
//! TCP's endpoint (`tcp`) sits beside the two halves: one per pipeline,
//! with its connections, listeners, timers and pacing heap.
//!
//! Invariants: `special` and `special_filter` describe exactly the
//! configured IPv4 addresses and their broadcasts; the learned path-MTU
//! tables hold at most [`PATH_MTUS`] entries each.

use super::config::{InterfaceConfig, LinkConfig};
use super::ip::family::{IpFamily, IpLcore, IpShared};
use super::limit::TokenBucket;
use super::steering::Steering;
use super::tables::{Authoritative, CowArc, SharedView};
use super::tcp;
use crate::counters::Counters;
use crate::neighbor::{NeighborCache, NeighborView};
use crate::port::{Buf, MacAddr};
use crate::route::{Ipv4Cidr, Ipv6Cidr, V4, V6};
use crate::socket::SocketQueue;
use crate::tcp::ids::ConnRef;
use crate::tcp::table::ConnTable;
use crate::time::{Duration, Instant};
use crate::udp::RouteMemo;
use crate::udp::{PeerError, SocketId, UdpTable};
use crate::wire::ipv6::multicast_mac;
use arrayvec::ArrayVec;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// One port's link-layer state: its MAC, addresses, MTU and what the
/// packet path reads of its neighbours.
#[derive(Debug, Clone)]
pub(crate) struct Link {
    pub(crate) mac: MacAddr,
    pub(crate) addresses: Vec<Ipv4Cidr>,
    pub(crate) mtu: usize,
    /// IPv6's MTU on the link: `mtu`, or less once a router advertised
    /// less (RFC 4861 6.3.4; never below 1280).
    pub(crate) mtu6: usize,
    pub(crate) neighbors: Arc<NeighborView<Ipv4Addr>>,
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
    /// What Multicast Listener Discovery still has to report of
    /// `groups6` and `socket_groups6` (`mld`).
    pub(crate) mld: MldState,
    /// IPv4 groups sockets joined on this link, each with its members
    /// (`membership`); IGMP reports them (`igmp`).
    pub(crate) groups4: Vec<Membership<Ipv4Addr>>,
    /// IPv6 groups sockets joined on this link, each with its members; MLD
    /// reports them beside `groups6`.
    pub(crate) socket_groups6: Vec<Membership<Ipv6Addr>>,
    /// What IGMP still has to report of `groups4` (`igmp`).
    pub(crate) igmp: IgmpState,
    pub(crate) neighbors6: Arc<NeighborView<Ipv6Addr>>,
}

impl Link {
    /// Our address to speak from towards `peer` on this link: the one whose
    /// network holds it, else the link's first.
    #[inline]
    pub(crate) fn source_for(&self, peer: Ipv4Addr) -> Ipv4Addr {
        self.addresses
            .iter()
            .find(|a| a.contains(peer))
            .or(self.addresses.first())
            .map_or(Ipv4Addr::UNSPECIFIED, |a| a.addr)
    }

    /// Our IPv6 address on this link to answer `peer` from: the
    /// link-local one for a link-local peer, else the first other one in
    /// use (the link-local one if there is none).
    #[inline]
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

    /// True if `ip` is on one of this link's connected networks.
    #[inline]
    pub(crate) fn on_link(&self, ip: Ipv4Addr) -> bool {
        self.addresses.iter().any(|a| a.contains(ip))
    }

    /// True if `ip` is one of this link's IPv6 addresses in use.
    #[inline]
    pub(crate) fn has_address6(&self, ip: Ipv6Addr) -> bool {
        self.addresses6.iter().any(|a| a.addr == ip)
    }

    /// True if `ip` is one of this link's tentative IPv6 addresses.
    #[inline]
    pub(crate) fn is_tentative6(&self, ip: Ipv6Addr) -> bool {
        self.tentative6.iter().any(|t| t.cidr.addr == ip)
    }

    /// True if the link joined multicast group `ip` (itself, or a socket
    /// on it).
    #[inline]
    pub(crate) fn joined(&self, ip: Ipv6Addr) -> bool {
        self.groups6.contains(&ip) || self.socket_groups6.iter().any(|m| m.group == ip)
    }

    /// True if the link joined IPv4 group `ip`: all-systems (224.0.0.1,
    /// which every host is a member of, RFC 1112 4), or a group a socket
    /// joined on it.
    #[inline]
    pub(crate) fn joined4(&self, ip: Ipv4Addr) -> bool {
        ip == ALL_SYSTEMS || self.groups4.iter().any(|m| m.group == ip)
    }

    /// True if the link listens to Ethernet multicast address `mac` (the
    /// mapping of a group it joined). Not per unicast frame: only frames
    /// to a group MAC ask.
    #[inline]
    pub(crate) fn listens(&self, mac: MacAddr) -> bool {
        self.groups6.iter().any(|&g| multicast_mac(g) == mac)
            || (self.socket_groups6.iter()).any(|m| multicast_mac(m.group) == mac)
            || mac == multicast_mac4(ALL_SYSTEMS)
            || self.groups4.iter().any(|m| multicast_mac4(m.group) == mac)
    }

    /// Every Ethernet multicast address the link listens to (for the
    /// device's filter), without repeats.
    pub(crate) fn multicast_macs(&self) -> Vec<MacAddr> {
        let mut macs: Vec<MacAddr> = Vec::new();
        let all = (self.groups6.iter().copied().map(multicast_mac))
            .chain(self.socket_groups6.iter().map(|m| multicast_mac(m.group)))
            .chain(core::iter::once(multicast_mac4(ALL_SYSTEMS)))
            .chain(self.groups4.iter().map(|m| multicast_mac4(m.group)));
        for mac in all {
            if !macs.contains(&mac) {
                macs.push(mac);
            }
        }
        macs
    }

    /// The sockets that hear a datagram to group `dst` on this link, if
    /// only members do: every IPv4 group, and IPv6 groups the link did not
    /// join itself (its all-nodes and solicited-node groups are heard by
    /// every socket bound to the port, as before sockets could join).
    /// `None` for a destination that is no such group (unicast,
    /// broadcast).
    #[inline]
    pub(crate) fn group_members(&self, dst: IpAddr) -> Option<&[SocketId]> {
        match dst {
            IpAddr::V4(ip) if ip.is_multicast() => Some(
                (self.groups4.iter())
                    .find(|m| m.group == ip)
                    .map_or(&[][..], |m| &m.sockets[..]),
            ),
            IpAddr::V6(ip) if ip.is_multicast() && !self.groups6.contains(&ip) => Some(
                (self.socket_groups6.iter())
                    .find(|m| m.group == ip)
                    .map_or(&[][..], |m| &m.sockets[..]),
            ),
            _ => None,
        }
    }

    /// The address that routes through this link speak from: the first
    /// global one (in use or tentative), else the link-local one.
    #[inline]
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
    #[inline]
    pub(crate) fn on_link6(&self, ip: Ipv6Addr) -> bool {
        self.addresses6
            .iter()
            .chain(self.tentative6.iter().map(|t| &t.cidr))
            .any(|a| a.len < 128 && !a.addr.is_unicast_link_local() && a.contains(ip))
    }

    /// The link-local address, once it is in use.
    #[inline]
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

/// A group sockets joined on a link, with the sockets (no repeats, never
/// empty: the last leave removes the group). Its reference count is the
/// number of sockets: one report for the first join, one leave for the
/// last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Membership<A> {
    pub(crate) group: A,
    pub(crate) sockets: Vec<SocketId>,
}

/// 224.0.0.1, the all-systems group every IPv4 host is a member of (RFC
/// 1112 4), where general queries go; never reported (RFC 3376 5).
pub(crate) const ALL_SYSTEMS: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 1);

/// The Ethernet address an IPv4 group maps to (RFC 1112 6.4): the group's
/// low 23 bits under 01:00:5e.
#[inline]
pub(crate) fn multicast_mac4(group: Ipv4Addr) -> MacAddr {
    let [_, b, c, d] = group.octets();
    MacAddr([0x01, 0x00, 0x5e, b & 0x7f, c, d])
}

/// A link's group membership reporting state, MLD's (RFC 3810) or IGMP's
/// (RFC 3376) as a listener: the groups reported and what is still to
/// send of them.
#[derive(Debug, Clone)]
pub(crate) struct Reports<A> {
    /// Each group reported, and each group left whose leave is still
    /// being repeated.
    pub(crate) groups: Vec<Listening<A>>,
    /// When the answer to a general query is due (the Interface Timer).
    pub(crate) general_due: Option<Instant>,
    /// Until when the link speaks the protocol's previous version (MLDv1,
    /// IGMPv2), such a querier having been heard (RFC 3810 8.2.1, RFC
    /// 3376 7.2.1's Older Version Querier Present Timeout).
    pub(crate) v1_until: Option<Instant>,
    /// IGMP only: until when the link speaks IGMPv1, an IGMPv1 querier
    /// having been heard (RFC 3376 7.2.1).
    pub(crate) oldest_until: Option<Instant>,
}

impl<A> Default for Reports<A> {
    fn default() -> Self {
        Reports {
            groups: Vec::new(),
            general_due: None,
            v1_until: None,
            oldest_until: None,
        }
    }
}

/// MLD's state on a link.
pub(crate) type MldState = Reports<Ipv6Addr>;
/// IGMP's state on a link.
pub(crate) type IgmpState = Reports<Ipv4Addr>;

/// One group's MLD or IGMP state on a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Listening<A = Ipv6Addr> {
    pub(crate) group: A,
    /// Joined (else left: its leave is still being repeated).
    pub(crate) member: bool,
    /// State change reports still to send.
    pub(crate) changes_left: u8,
    /// When the next state change report is due.
    pub(crate) change_due: Instant,
    /// When the answer to a query for this group is due (its Multicast
    /// Address Timer).
    pub(crate) query_due: Option<Instant>,
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

/// State of the receive and send paths (everything but the handler and
/// the per-poll transmit batches), in the two halves the module
/// documentation describes.
#[derive(Debug)]
pub(crate) struct Core<B: Buf> {
    /// What all lcores share, as this lcore's snapshot of it.
    pub(crate) shared: SharedView<Master<B>>,
    /// What this polling lcore owns alone.
    pub(crate) lcore: LcoreState<B>,
    /// TCP connections, listeners and their timers.
    pub(crate) tcp: tcp::TcpCore<B>,
}

/// The half of [`Core`] all lcores share: read per packet, written from
/// control paths and by the receive steps that learn (neighbours, path
/// MTUs, advertised routes). Its large parts are shared between snapshots
/// until written ([`CowArc`]).
#[derive(Debug)]
pub(crate) struct SharedState<B: Buf> {
    pub(crate) config: CowArc<InterfaceConfig>,
    pub(crate) links: Vec<Link>,
    /// Both families' route tables and learned path MTUs.
    pub(crate) ip: CowArc<IpShared>,
    pub(crate) udp: CowArc<UdpTable>,
    /// The receive queues of queue-mode sockets, by socket index.
    pub(crate) queues: QueueTable<B>,
    /// The TCP connection table every pipeline's endpoint reads and
    /// writes (it has its own RCU reads and per-bucket locks).
    pub(crate) tcp_table: Arc<ConnTable<ConnRef>>,
    /// The pipelines' steering rings.
    pub(crate) steering: Arc<Steering<B>>,
    /// Every local address, of every link (computed once).
    pub(crate) local: Vec<Ipv4Addr>,
    /// Every address that is ours or a broadcast address, with its
    /// [`LOCAL`]/[`BROADCAST`] bits (computed once; one scan per question).
    pub(crate) special: Vec<(u32, u8)>,
    /// One bit per [`special_bit`] of each special address: a clear bit
    /// answers "neither local nor broadcast" without the scan (the common
    /// question about a source address).
    pub(crate) special_filter: u64,
    /// The default route a router advertisement installed: (link, router,
    /// until when).
    pub(crate) ra_default: Option<(usize, Ipv6Addr, Instant)>,
    /// Moves on with every publish: what cached routes (and the routes
    /// sockets keep) are stamped with, so that any change of routes,
    /// neighbours or sockets turns them stale.
    pub(crate) generation: u64,
}

impl<B: Buf> Clone for SharedState<B> {
    fn clone(&self) -> Self {
        SharedState {
            config: self.config.clone(),
            links: self.links.clone(),
            ip: self.ip.clone(),
            udp: self.udp.clone(),
            queues: self.queues.clone(),
            tcp_table: Arc::clone(&self.tcp_table),
            steering: Arc::clone(&self.steering),
            local: self.local.clone(),
            special: self.special.clone(),
            special_filter: self.special_filter,
            ra_default: self.ra_default,
            generation: self.generation,
        }
    }
}

/// The receive queues of queue-mode sockets, by socket index.
pub(crate) type QueueTable<B> = CowArc<Vec<Option<Arc<SocketQueue<B>>>>>;

/// One link's neighbour caches, with the packets that wait for them.
#[derive(Debug)]
pub(crate) struct LinkNeighbors<B> {
    pub(crate) v4: NeighborCache<B, Ipv4Addr>,
    pub(crate) v6: NeighborCache<B, Ipv6Addr>,
}

/// The authoritative copy of the shared state, which writers change under
/// the shared tables' lock: the state (read as [`SharedState`] through
/// `Deref`) and the links' neighbour caches ([`Master::neighbors`]), whose
/// views the state's links carry.
#[derive(Debug)]
pub(crate) struct Master<B: Buf> {
    pub(crate) state: SharedState<B>,
    /// Per link, in link order.
    pub(crate) neighbors: Vec<LinkNeighbors<B>>,
}

impl<B: Buf> Authoritative for Master<B> {
    type Snapshot = SharedState<B>;

    fn next_snapshot(&mut self) -> SharedState<B> {
        self.refresh_views();
        self.state.generation += 1;
        self.state.clone()
    }

    fn generation(snapshot: &SharedState<B>) -> u64 {
        snapshot.generation
    }

    /// The neighbour caches' generations, summed.
    fn neighbor_generations(&self) -> u64 {
        self.neighbors.iter().fold(0u64, |sum, n| {
            sum.wrapping_add(n.v4.generation())
                .wrapping_add(n.v6.generation().rotate_left(32))
        })
    }
}

impl<B: Buf> Master<B> {
    /// Brings the links' neighbour views up to their caches (their
    /// packets stay here).
    fn refresh_views(&mut self) {
        for (link, caches) in self.state.links.iter_mut().zip(&self.neighbors) {
            if link.neighbors.generation() != caches.v4.generation() {
                link.neighbors = Arc::new(caches.v4.view());
            }
            if link.neighbors6.generation() != caches.v6.generation() {
                link.neighbors6 = Arc::new(caches.v6.view());
            }
        }
    }
}

impl<B: Buf> core::ops::Deref for Master<B> {
    type Target = SharedState<B>;

    fn deref(&self) -> &SharedState<B> {
        &self.state
    }
}

impl<B: Buf> core::ops::DerefMut for Master<B> {
    fn deref_mut(&mut self) -> &mut SharedState<B> {
        &mut self.state
    }
}

/// The half of [`Core`] one polling lcore owns: written per packet, never
/// shared.
#[derive(Debug)]
pub(crate) struct LcoreState<B> {
    /// Which pipeline of the stack this is: 0 for the first (the home
    /// pipeline), then in the order [`super::Interface::pipeline`] made them.
    pub(crate) index: u16,
    /// Single writer: this lcore (readable from any thread).
    pub(crate) counters: Arc<Counters>,
    /// Both families' reassemblers, route caches and fragment
    /// identifications.
    pub(crate) ip: IpLcore<B>,
    /// The routes UDP sockets keep to their last destinations (this
    /// lcore's sends only).
    pub(crate) udp_routes: RouteMemo,
    pub(crate) icmp_limit: TokenBucket,
    /// ICMP errors for connected sockets found during a burst, handed over
    /// after it (bounded: more in one burst are dropped).
    pub(crate) socket_errors: ArrayVec<(SocketId, PeerError), SOCKET_ERRORS>,
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
        if self.shared.special_filter & special_bit(ip) == 0 {
            return 0;
        }
        for &(address, class) in &self.shared.special {
            if address == ip {
                return class;
            }
        }
        0
    }

    /// True if no IPv4 packet may come from `src`: multicast (224/4),
    /// loopback (127/8), unspecified, ours or a broadcast address. Per
    /// packet (the fast path asks it too).
    #[inline]
    pub(crate) fn is_martian(&self, src: Ipv4Addr) -> bool {
        let bits = src.to_bits();
        bits >> 28 == 0xe || bits >> 24 == 127 || bits == 0 || self.class(bits) != 0
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

    /// The next fragment identification of family `F`.
    pub(crate) fn next_ident<F: IpFamily>(&mut self) -> F::Ident {
        let state = F::lcore(&mut self.lcore.ip);
        state.next_ident = F::next_ident(state.next_ident);
        state.next_ident
    }

    /// The next IPv4 identification.
    #[inline]
    pub(crate) fn ident(&mut self) -> u16 {
        self.next_ident::<V4>()
    }

    /// The MTU towards `dst` (of family `F`) on a link of `link_mtu`.
    pub(crate) fn path_mtu<F: IpFamily>(&self, dst: F::Addr, link_mtu: usize) -> usize {
        match F::shared(&self.shared.ip).path_mtus.get(&dst) {
            Some(&(mtu, _)) => mtu.min(link_mtu),
            None => link_mtu,
        }
    }

    /// The MTU towards `dst` on a link of `link_mtu` (IPv6).
    pub(crate) fn path_mtu6(&self, dst: Ipv6Addr, link_mtu: usize) -> usize {
        self.path_mtu::<V6>(dst, link_mtu)
    }

    /// The MTU towards `dst` on a link of `link_mtu` (IPv4).
    pub(crate) fn path_mtu4(&self, dst: Ipv4Addr, link_mtu: usize) -> usize {
        self.path_mtu::<V4>(dst, link_mtu)
    }

    /// Records a path MTU to `dst` learned now (a full table takes no new
    /// destinations; a known one is only lowered, RFC 8201 4: a report
    /// never raises the estimate). ICMP errors only, not per packet.
    pub(crate) fn learn_path_mtu(&mut self, dst: IpAddr, mtu: usize, now: Instant) {
        match dst {
            IpAddr::V4(dst) => self.learn_family_path_mtu::<V4>(dst, mtu, now),
            IpAddr::V6(dst) => self.learn_family_path_mtu::<V6>(dst, mtu, now),
        }
    }

    fn learn_family_path_mtu<F: IpFamily>(&mut self, dst: F::Addr, mtu: usize, now: Instant) {
        let no_lower = |known: Option<&(usize, Instant)>| {
            known.is_some_and(|&(known, until)| known <= mtu && now < until)
        };
        if no_lower(F::shared(&self.shared.ip).path_mtus.get(&dst)) {
            return; // without taking the lock
        }
        self.shared.edit(|shared| {
            let path_mtus = &mut F::shared_mut(&mut shared.ip).path_mtus;
            // Another pipeline may have learned a lower one meanwhile.
            if no_lower(path_mtus.get(&dst)) {
                return;
            }
            if path_mtus.contains_key(&dst) || path_mtus.len() < PATH_MTUS {
                path_mtus.insert(dst, (mtu, now + PATH_MTU_TIMEOUT));
            }
        });
    }

    /// Changes whenever the shared state does (routes, neighbours,
    /// sockets): the stamp of cached routes.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.shared.generation
    }

    /// True if `ip` is one of our IPv6 addresses (on any link: the weak
    /// host model, except that link-local addresses are per link).
    pub(crate) fn is_local6(&self, link: usize, ip: Ipv6Addr) -> bool {
        if ip.is_unicast_link_local() {
            return self
                .shared
                .links
                .get(link)
                .is_some_and(|l| l.has_address6(ip));
        }
        self.shared.links.iter().any(|l| l.has_address6(ip))
    }
}
