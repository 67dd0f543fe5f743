//! The UDP send side: one 32-byte [`SendSlot`] per socket, in a dense array
//! indexed like the sockets, with what a send or forward from the socket
//! reads (its IPv4 address and port, TOS byte, and the route and next-hop
//! MAC to the last IPv4 destination it sent to).
//!
//! The table (shared by every lcore, written only by binds, connects and
//! closes) holds each socket's slot without a route. Each lcore keeps its
//! own [`RouteMemo`]: copies of the slots of the sockets it sent from,
//! with the routes it found (IPv4 in the slot, IPv6 in a second dense
//! array), so a send or forward reads one line and nothing shared is
//! written per packet; and, per socket that forwards over IPv4, a
//! [`ForwardTemplate`] (a third dense array, one line each): the headers
//! of its latest destination, ready to copy.
//!
//! Invariants: a table slot is [`LIVE`] exactly while its socket is bound;
//! a kept route (and the slot copied with it) is used only for the
//! destination it was computed for and under the generation it was stamped
//! with, and the generation moves on with any change of routes, neighbours,
//! links or sockets, so a memo never speaks for a socket rebound since; a
//! template likewise holds only under the generation it was made under.

use super::{SocketId, UdpTable};
use core::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4};

/// The route a socket keeps to its latest destination, of either family
/// (IPv4 by default), valid while `generation` is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedRoute<A = Ipv4Addr> {
    /// The destination it leads to.
    pub dst: A,
    /// The route table and neighbour cache generation it was computed under.
    pub generation: u64,
    /// The route's source address for it.
    pub source: A,
    /// The next hop's MAC address.
    pub mac: crate::port::MacAddr,
    /// The link it leaves through.
    pub link: u16,
}

/// What [`UdpTable::cached_send`] gives: a socket's IPv4 address (ANY:
/// use the route's source), port and TOS byte, and its route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedSend {
    /// The address the socket is bound to (IPv4, or ANY).
    pub local4: Ipv4Addr,
    /// Its port.
    pub port: u16,
    /// The TOS byte it sends with.
    pub tos: u8,
    /// Its route to the destination asked about.
    pub route: CachedRoute,
}

/// What the send path reads of a socket, in one 32-byte slot of a dense
/// array (indexed like `sockets`): with tens of thousands of sockets a
/// forward or send touches one line of the table, not the three of the
/// socket's [`Socket`] and [`Hot`] entries.
#[derive(Debug, Clone, Copy)]
pub(super) struct SendSlot {
    /// The route to the last destination sent to (valid with [`ROUTED`]).
    pub(super) route: CachedRoute,
    /// The IPv4 address it speaks from (unspecified: any), with
    /// [`SPEAKS_V4`]. As its bytes, not a number: a send reads it as an
    /// address (no byte swap a packet).
    pub(super) local4: Ipv4Addr,
    pub(super) port: u16,
    pub(super) tos: u8,
    /// [`LIVE`], [`SPEAKS_V4`], [`ROUTED`], [`ROUTED6`].
    pub(super) flags: u8,
}

// Two slots per cache line.
const _: () = assert!(core::mem::size_of::<SendSlot>() == 32);

/// A bound socket's slot.
pub(super) const LIVE: u8 = 1;
/// The socket speaks IPv4 (an IPv4 socket, or an IPv6 one that hears IPv4).
pub(super) const SPEAKS_V4: u8 = 2;
/// `route` holds a route.
pub(super) const ROUTED: u8 = 4;
/// The socket's entry in the table's IPv6 routes holds a route.
pub(super) const ROUTED6: u8 = 8;

/// An IPv6 route no socket keeps (the IPv6 routes' filler).
pub(super) const NO_ROUTE6: CachedRoute<Ipv6Addr> = CachedRoute {
    dst: Ipv6Addr::UNSPECIFIED,
    generation: 0,
    source: Ipv6Addr::UNSPECIFIED,
    mac: crate::port::MacAddr([0; 6]),
    link: 0,
};

impl SendSlot {
    pub(super) const EMPTY: SendSlot = SendSlot {
        route: CachedRoute {
            dst: Ipv4Addr::UNSPECIFIED,
            generation: 0,
            source: Ipv4Addr::UNSPECIFIED,
            mac: crate::port::MacAddr([0; 6]),
            link: 0,
        },
        local4: Ipv4Addr::UNSPECIFIED,
        port: 0,
        tos: 0,
        flags: 0,
    };
}

impl UdpTable {
    /// The TOS byte a socket sends with ([`BindOptions::tos`]; 0 for no
    /// such socket). Per packet: one byte load.
    #[inline]
    pub fn tos(&self, id: SocketId) -> u8 {
        self.send.get(id.0 as usize).map_or(0, |s| s.tos)
    }

    /// The IPv4 address a socket speaks from to IPv4 peers: its own for an
    /// IPv4 socket, the mapped one or ANY for an IPv6 socket that hears
    /// IPv4; `None` for a socket that does not (or does not exist).
    #[inline]
    pub fn local_addr(&self, id: SocketId) -> Option<SocketAddrV4> {
        let slot = self.send.get(id.0 as usize)?;
        (slot.flags & (LIVE | SPEAKS_V4) == LIVE | SPEAKS_V4)
            .then(|| SocketAddrV4::new(slot.local4, slot.port))
    }
}

/// The headers a forward from one socket to one IPv4 destination puts on
/// every frame, prepared once (`iface::udp::template` builds and applies
/// it): all 42 bytes of Ethernet, IPv4 and UDP headers but the five fields
/// each packet writes (IPv4 total length, identification and checksum, UDP
/// length and checksum), and the partial sums those checksums start from.
/// One cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub struct ForwardTemplate {
    /// The headers, per-packet fields zero. The destination (IPv4 address
    /// and UDP port) in them is the one the template is for.
    pub header: [u8; 42],
    /// The longest UDP datagram that fits the link's MTU (and gets the
    /// template's DF bit).
    pub max_udp_len: u16,
    /// The link it leaves through.
    pub link: u16,
    /// The ones' complement sum (folded, in memory order) of the IPv4
    /// header's words without its length, identification and checksum.
    pub ip_sum: u16,
    /// The ones' complement sum (folded, in memory order) of the IPv4
    /// source and destination and both UDP ports: what the pseudo-header
    /// and UDP header add to a payload's checksum.
    pub udp_sum: u32,
    /// The generation of the shared state it was made under (the
    /// template holds while that is current).
    pub generation: u64,
}

// One cache line.
const _: () = assert!(core::mem::size_of::<ForwardTemplate>() == 64);

impl ForwardTemplate {
    /// A template that holds under no generation (the memo's filler).
    pub const NONE: ForwardTemplate = ForwardTemplate {
        header: [0; 42],
        max_udp_len: 0,
        link: 0,
        ip_sum: 0,
        udp_sum: 0,
        generation: u64::MAX,
    };
}

/// One lcore's routes for the sockets it sends from: see the module
/// documentation.
#[derive(Debug, Default)]
pub struct RouteMemo {
    /// Copies of the table's slots, with routes (same index as sockets).
    slots: Vec<SendSlot>,
    /// The route each socket keeps to its last IPv6 destination (same
    /// index; valid with [`ROUTED6`] in its slot).
    routes6: Vec<CachedRoute<Ipv6Addr>>,
    /// The forward template of each socket's latest IPv4 destination (same
    /// index; [`ForwardTemplate::NONE`] where none was made).
    templates: Vec<ForwardTemplate>,
}

impl RouteMemo {
    /// An empty memo.
    pub fn new() -> RouteMemo {
        RouteMemo::default()
    }

    /// The route a socket keeps to the last destination it sent to (its
    /// peer, if connected), if that is `dst` and the route is still valid
    /// under `generation`: a socket that talks to one peer, connected or
    /// not (an RTP leg), skips the route and neighbour lookups.
    #[inline]
    pub fn cached_route(
        &self,
        id: SocketId,
        dst: SocketAddrV4,
        generation: u64,
    ) -> Option<CachedRoute> {
        let slot = self.slots.get(id.0 as usize)?;
        let route = slot.route;
        let valid = slot.flags & ROUTED != 0 && route.generation == generation;
        (valid && route.dst == *dst.ip()).then_some(route)
    }

    /// Everything a send from `id` to `dst` reads, in one slot read, when
    /// the socket speaks IPv4 and keeps a route to `dst` that is valid
    /// under `generation` (see [`RouteMemo::cached_route`]): the forwarding
    /// relay's case. `None` otherwise (then the caller looks things up one
    /// by one).
    #[inline]
    pub fn cached_send(
        &self,
        id: SocketId,
        dst: SocketAddrV4,
        generation: u64,
    ) -> Option<CachedSend> {
        let slot = self.slots.get(id.0 as usize)?;
        let ready = LIVE | SPEAKS_V4 | ROUTED;
        let route = slot.route;
        let valid =
            slot.flags & ready == ready && route.generation == generation && route.dst == *dst.ip();
        valid.then_some(CachedSend {
            local4: slot.local4,
            port: slot.port,
            tos: slot.tos,
            route,
        })
    }

    /// Lets socket `id` of `table` keep `route` (stamped with the
    /// generation `table` was read under) to its latest destination.
    #[inline]
    pub fn remember_route(&mut self, table: &UdpTable, id: SocketId, route: CachedRoute) {
        if let Some(kept) = self.slot(table, id) {
            kept.route = route;
            kept.flags |= ROUTED;
        }
    }

    /// [`RouteMemo::cached_route`] for an IPv6 destination: the route the
    /// socket keeps to `dst`, if it keeps one still valid under
    /// `generation`. Kept apart from the 32-byte slot (an IPv6 route does
    /// not fit it), in a dense array indexed like it.
    #[inline]
    pub fn cached_route6(
        &self,
        id: SocketId,
        dst: Ipv6Addr,
        generation: u64,
    ) -> Option<CachedRoute<Ipv6Addr>> {
        let slot = self.slots.get(id.0 as usize)?;
        let route = self.routes6.get(id.0 as usize)?;
        let valid = slot.flags & ROUTED6 != 0 && route.generation == generation;
        (valid && route.dst == dst).then_some(*route)
    }

    /// Lets socket `id` of `table` keep `route` to its latest IPv6
    /// destination.
    #[inline]
    pub fn remember_route6(
        &mut self,
        table: &UdpTable,
        id: SocketId,
        route: CachedRoute<Ipv6Addr>,
    ) {
        if let Some(kept) = self.slot(table, id) {
            kept.flags |= ROUTED6;
            self.routes6[id.0 as usize] = route;
        }
    }

    /// Socket `id`'s forward template, if it was made under `generation`
    /// (for whichever destination: the caller compares). Per packet.
    #[inline]
    pub fn template(&self, id: SocketId, generation: u64) -> Option<&ForwardTemplate> {
        let template = self.templates.get(id.0 as usize)?;
        (template.generation == generation).then_some(template)
    }

    /// Lets socket `id` keep `template` (for its latest destination, in
    /// place of any older one). Only on a change of destination or
    /// generation: it grows the memo to the socket's index.
    pub fn keep_template(&mut self, id: SocketId, template: ForwardTemplate) {
        let at = id.0 as usize;
        if self.templates.len() <= at {
            self.templates.resize(at + 1, ForwardTemplate::NONE);
        }
        self.templates[at] = template;
    }

    /// The memo's slot for a live socket `id` of `table`, its fields
    /// copied from the table's (a slot left from another socket of the same
    /// index, or from before a connect, is refreshed; its routes are
    /// stamped with older generations and never match again). `None` for a
    /// socket that is not bound.
    fn slot(&mut self, table: &UdpTable, id: SocketId) -> Option<&mut SendSlot> {
        let at = id.0 as usize;
        let current = *table.send.get(at)?;
        if current.flags & LIVE == 0 {
            return None;
        }
        if self.slots.len() <= at {
            self.slots.resize(at + 1, SendSlot::EMPTY);
            self.routes6.resize(at + 1, NO_ROUTE6);
        }
        let kept = &mut self.slots[at];
        let routed = kept.flags & (ROUTED | ROUTED6);
        *kept = SendSlot {
            route: kept.route,
            flags: current.flags | routed,
            ..current
        };
        Some(kept)
    }
}
