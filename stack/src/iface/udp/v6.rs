//! UDP over IPv6: the [`UdpFamily`] implementation of `Ipv6Addr`, the way
//! to an IPv6 destination ([`path6`], which TCP, ping and the IP layer
//! use too), and the IPv6 header work that is per family: writing a
//! datagram's headers ([`write_udp6_headers`]; the UDP checksum is
//! mandatory), turning a plain request around into its reply
//! ([`turn_around_plain_udp6`]) and readdressing a plain frame for a
//! forward, the last two indexed by the named offsets of [`at`].

use super::super::config::{hop_limit_to6, DEFAULT_HOP_LIMIT};
use super::super::icmp::Invoking;
use super::super::icmp6::Icmp6Error;
use super::super::poll::{Arrival, Poll};
use super::super::state::{Core, Link};
use super::super::transmit::SendError;
use super::family::{UdpFamily, UdpIn};
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::udp::table::{CachedRoute, FlowKey6};
use crate::udp::SocketId;
use crate::wire::checksum;
use crate::wire::ethernet::{swap_addresses, EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::ipv6::{
    multicast_mac, next_header, pseudo_header, Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN,
};
use crate::wire::udp::{UdpPacket, HEADER_LEN as UDP_LEN};
use core::net::{Ipv6Addr, SocketAddr, SocketAddrV6};

/// Where the fields of a plain UDP/IPv6 frame (Ethernet, the fixed IPv6
/// header, UDP) lie in it: the wire's header offsets, placed.
pub(crate) mod at {
    use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
    use crate::wire::ipv6::{field as ip, HEADER_LEN as IP6_LEN};
    use crate::wire::udp::field as udp;

    const IP: usize = ETH_LEN;
    pub(crate) const VER_TC_FLOW: usize = IP + ip::VER_TC_FLOW;
    pub(crate) const PAYLOAD_LEN: usize = IP + ip::PAYLOAD_LEN;
    pub(crate) const NEXT_HEADER: usize = IP + ip::NEXT_HEADER;
    pub(crate) const HOP_LIMIT: usize = IP + ip::HOP_LIMIT;
    pub(crate) const SRC: usize = IP + ip::SRC;
    pub(crate) const DST: usize = IP + ip::DST;
    pub(crate) const UDP: usize = IP + IP6_LEN;
    pub(crate) const SRC_PORT: usize = UDP + udp::SRC_PORT;
    pub(crate) const DST_PORT: usize = UDP + udp::DST_PORT;
    pub(crate) const UDP_LENGTH: usize = UDP + udp::LENGTH;
    pub(crate) const UDP_CHECKSUM: usize = UDP + udp::CHECKSUM;
}

/// Ethernet + IPv6 + UDP: a plain frame's headers.
pub(crate) const HEADERS6: usize = ETH_LEN + IP6_LEN + UDP_LEN;

impl UdpFamily for Ipv6Addr {
    type SocketAddr = SocketAddrV6;

    const V6: bool = true;
    const IP_LEN: usize = IP6_LEN;
    const MAX_UDP_LEN: usize = u16::MAX as usize;
    const ZERO_CHECKSUM_IS_NONE: bool = false;

    #[inline]
    fn split(addr: SocketAddrV6) -> (Ipv6Addr, u16) {
        (*addr.ip(), addr.port())
    }

    #[inline]
    fn send_mtu<B: Buf>(_core: &Core<B>, _dst: Ipv6Addr, link_mtu: usize) -> usize {
        link_mtu
    }

    #[inline]
    fn pseudo_header(src: Ipv6Addr, dst: Ipv6Addr, udp_len: u16) -> u64 {
        pseudo_header(src, dst, next_header::UDP, u32::from(udp_len))
    }

    #[inline]
    fn lookup<B: Buf>(
        core: &Core<B>,
        src: (Ipv6Addr, u16),
        dst: (Ipv6Addr, u16),
        link: usize,
    ) -> Option<SocketId> {
        core.shared.udp.lookup6(&FlowKey6 {
            src: SocketAddrV6::new(src.0, src.1, 0, 0),
            dst: SocketAddrV6::new(dst.0, dst.1, 0, 0),
            device: link as u16,
            lcore: core.lcore.index,
        })
    }

    fn port_unreachable<P: Port>(
        poll: &mut Poll<'_, '_, P>,
        buf: P::Buf,
        arrival: Arrival,
        datagram: &UdpIn<Ipv6Addr>,
    ) {
        // Not for groups: `icmp6_error` holds that rule for every error.
        let invoking = Invoking {
            ours: datagram.dst,
            peer: datagram.src,
            end: datagram.end,
        };
        let error = Icmp6Error::PORT_UNREACHABLE;
        poll.icmp6_error(buf, arrival, invoking, error);
    }

    #[inline]
    fn addresses(frame: &[u8], payload_start: usize) -> ((Ipv6Addr, Ipv6Addr), (u16, u16)) {
        crate::udp::addresses6(frame, payload_start)
    }

    #[inline]
    fn reply_source(link: &Link, peer: Ipv6Addr) -> Option<Ipv6Addr> {
        link.source_for6(peer)
    }

    #[inline]
    fn local<B: Buf>(core: &Core<B>, socket: SocketId) -> Result<(Ipv6Addr, u16), SendError> {
        match core.shared.udp.local_socket_addr(socket) {
            Some(SocketAddr::V6(local)) if local.ip().to_ipv4_mapped().is_none() => {
                Ok((*local.ip(), local.port()))
            }
            Some(_) => {
                // An IPv4 socket, or one bound (or narrowed by connect) to
                // an IPv4-mapped address, which no IPv6 packet may come
                // from, has no way to an IPv6 destination (Linux:
                // EAFNOSUPPORT).
                core.lcore.counters.count_drop(DropReason::TxNoRoute);
                Err(SendError::NoRoute)
            }
            None => Err(SendError::NoSocket),
        }
    }

    /// A link-local destination is never kept: its link is the
    /// destination's scope, which the route does not record.
    #[inline]
    fn kept_route<B: Buf>(
        core: &Core<B>,
        socket: SocketId,
        dst: &SocketAddrV6,
        generation: u64,
    ) -> Option<CachedRoute<Ipv6Addr>> {
        core.lcore
            .udp_routes
            .cached_route6(socket, *dst.ip(), generation)
    }

    #[inline]
    fn keep_route<B: Buf>(core: &mut Core<B>, socket: SocketId, route: CachedRoute<Ipv6Addr>) {
        if !route.dst.is_unicast_link_local() {
            core.lcore
                .udp_routes
                .remember_route6(&core.shared.udp, socket, route);
        }
    }

    #[inline]
    fn route<B: Buf>(
        core: &mut Core<B>,
        dst: &SocketAddrV6,
        _generation: u64,
    ) -> Option<(usize, Ipv6Addr, Ipv6Addr)> {
        route6(core, dst)
    }

    #[inline]
    fn source(local: Ipv6Addr, dst: Ipv6Addr, route_source: Ipv6Addr) -> Ipv6Addr {
        source6(local, dst, route_source)
    }

    #[inline]
    fn group_mac<B: Buf>(_core: &Core<B>, dst: Ipv6Addr) -> Option<MacAddr> {
        dst.is_multicast().then(|| multicast_mac(dst))
    }

    #[inline]
    fn write_headers<B: Buf>(
        _core: &mut Core<B>,
        frame: &mut [u8],
        (src, dst): ((Ipv6Addr, u16), (Ipv6Addr, u16)),
        (our_mac, _mtu): (MacAddr, usize),
        class: u8,
    ) {
        write_udp6_headers(frame, our_mac, (src, dst), class);
    }

    #[inline]
    fn readdress_plain<B: Buf>(
        _core: &mut Core<B>,
        frame: &mut [u8],
        (src, dst): ((Ipv6Addr, u16), (Ipv6Addr, u16)),
        (our_mac, _mtu): (MacAddr, usize),
        class: u8,
    ) -> bool {
        let udp_len = frame.len().saturating_sub(ETH_LEN + IP6_LEN);
        let Some(h) = frame.first_chunk_mut::<HEADERS6>() else {
            return false;
        };
        // The checksum covers the addresses (pseudo-header) and the ports:
        // take their old sum out and put the new one in.
        let old = checksum::fold(checksum::accumulate(0, &h[at::SRC..at::DST_PORT + 2]));
        let check = u16::from_be_bytes([h[at::UDP_CHECKSUM], h[at::UDP_CHECKSUM + 1]]);
        let mut eth = EthernetFrame::new_unchecked(&mut h[..]);
        eth.set_src(our_mac);
        eth.set_ethertype(EtherType::Ipv6);
        let mut ip = Ipv6Packet::new_unchecked(&mut h[ETH_LEN..]);
        ip.emit_header(&Ipv6Header {
            src: src.0,
            dst: dst.0,
            next_header: next_header::UDP,
            payload_len: udp_len as u16,
            hop_limit: hop_limit_to6(dst.0),
        });
        ip.set_traffic_class(class);
        h[at::SRC_PORT..at::SRC_PORT + 2].copy_from_slice(&src.1.to_be_bytes());
        h[at::DST_PORT..at::DST_PORT + 2].copy_from_slice(&dst.1.to_be_bytes());
        let new = checksum::accumulate(0, &h[at::SRC..at::DST_PORT + 2]);
        let mut check = !checksum::fold(u64::from(!check) + u64::from(!old) + new);
        if check == 0 {
            check = 0xffff; // zero means "no checksum", which IPv6 forbids
        }
        h[at::UDP_CHECKSUM..at::UDP_CHECKSUM + 2].copy_from_slice(&check.to_be_bytes());
        true
    }
}

/// How an IPv6 packet leaves: the link, the neighbour to resolve and our
/// source address.
pub(crate) struct Path6 {
    pub(crate) link: usize,
    pub(crate) via: Ipv6Addr,
    pub(crate) source: Ipv6Addr,
}

/// Picks the way to `dst` for a sender bound to `local`: a link-local
/// destination, or a link-scoped group, names its link by the scope id (the
/// link number; the only IPv6 link when there is one), anything else takes
/// the IPv6 routes.
pub(crate) fn path6<B: Buf>(
    core: &mut Core<B>,
    local: Ipv6Addr,
    dst: &SocketAddrV6,
) -> Option<Path6> {
    let (link, via, route_source) = route6(core, dst)?;
    let source = source6(local, *dst.ip(), route_source);
    Some(Path6 { link, via, source })
}

/// The link, next hop and route source towards `dst` (see [`path6`]).
fn route6<B: Buf>(core: &mut Core<B>, dst: &SocketAddrV6) -> Option<(usize, Ipv6Addr, Ipv6Addr)> {
    let ip = *dst.ip();
    // A link-scoped group (ff01::/16, ff02::/16) is named by its link as a
    // link-local address is: no route leads to it.
    let link_scoped_group = ip.is_multicast() && ip.segments()[0] & 0x000f <= 2;
    if !ip.is_unicast_link_local() && !link_scoped_group {
        core.lcore.counters.count(Stat::RouteLookups);
        let generation = core.generation();
        let hop =
            core.lcore
                .ip
                .v6
                .route_cache
                .next_hop(&core.shared.ip.v6.routes, generation, ip)?;
        return Some((usize::from(hop.port), hop.via, hop.source));
    }
    // The scope names the link; scope 0 is fine when only one link runs
    // IPv6. (No allocation: this runs per datagram.)
    let runs_ipv6 = |l: usize| core.shared.links.get(l).is_some_and(|k| k.ipv6);
    let scope = dst.scope_id() as usize;
    let link = if runs_ipv6(scope) {
        scope
    } else {
        let mut ipv6_links = (0..core.shared.links.len()).filter(|&l| runs_ipv6(l));
        match (scope, ipv6_links.next(), ipv6_links.next()) {
            (0, Some(only), None) => only,
            _ => return None,
        }
    };
    Some((link, ip, core.shared.links[link].link_local6()?))
}

/// The source of a packet from `local` to `dst` on a route whose source is
/// `route_source`: `local`, unless it is unspecified or of the other scope
/// (link-local against global).
#[inline]
fn source6(local: Ipv6Addr, dst: Ipv6Addr, route_source: Ipv6Addr) -> Ipv6Addr {
    // A socket bound to a group sends from the route's source (as Linux,
    // whose bind to a group sets no source address).
    if local.is_unspecified()
        || local.is_multicast()
        || local.is_unicast_link_local() != dst.is_unicast_link_local()
    {
        route_source
    } else {
        local
    }
}

/// Writes the Ethernet source and type, the IPv6 header (traffic class
/// `class`) and the UDP header with its checksum in front of the payload
/// that fills the rest of `frame`.
pub(super) fn write_udp6_headers(
    frame: &mut [u8],
    our_mac: MacAddr,
    ((src, src_port), (dst, dst_port)): ((Ipv6Addr, u16), (Ipv6Addr, u16)),
    class: u8,
) {
    let udp_len = frame.len() - (ETH_LEN + IP6_LEN);
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv6);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header: next_header::UDP,
        payload_len: udp_len as u16,
        hop_limit: hop_limit_to6(dst),
    });
    if class != 0 {
        Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).set_traffic_class(class);
    }
    let pseudo = pseudo_header(src, dst, next_header::UDP, udp_len as u32);
    let payload_len = (udp_len - UDP_LEN) as u16;
    UdpPacket::new_unchecked(&mut frame[ETH_LEN + IP6_LEN..]).emit(
        (src_port, dst_port),
        payload_len,
        pseudo,
    );
}

/// Turns the headers of a plain UDP/IPv6 frame around in place: MACs
/// swapped (the reply goes to the previous hop, from our MAC, which a plain
/// frame was sent to), addresses and ports swapped (which
/// leaves the UDP checksum valid: the pseudo-header sums both addresses
/// alike), hop limit reset, traffic class set to the socket's `class`
/// (only touched when it differs). IPv6 has no header checksum, so that is
/// all.
#[inline]
pub(super) fn turn_around_plain_udp6(h: &mut [u8; HEADERS6], class: u8) {
    if let Some(macs) = h.first_chunk_mut::<12>() {
        swap_addresses(macs);
    }
    h[at::HOP_LIMIT] = DEFAULT_HOP_LIMIT;
    // The traffic class straddles the first two bytes.
    let first = at::VER_TC_FLOW;
    if h[first] << 4 | h[first + 1] >> 4 != class {
        Ipv6Packet::new_unchecked(&mut h[ETH_LEN..]).set_traffic_class(class);
    }
    let mut src = [0u8; 16];
    src.copy_from_slice(&h[at::SRC..at::SRC + 16]);
    h.copy_within(at::DST..at::DST + 16, at::SRC);
    h[at::DST..at::DST + 16].copy_from_slice(&src);
    if let Some(ports) = h[at::SRC_PORT..at::DST_PORT + 2].first_chunk_mut::<4>() {
        *ports = u32::from_ne_bytes(*ports).rotate_left(16).to_ne_bytes();
    }
}
