//! UDP over IPv4: the [`UdpFamily`] implementation of `Ipv4Addr`, and the
//! IPv4 header work that is per family: writing a datagram's headers
//! ([`write_udp_headers`]), turning a plain request around into its reply
//! ([`turn_around_plain_udp`]) and readdressing a plain frame for a
//! forward ([`readdress_plain`]), the last two on one fixed-size array
//! indexed by the named offsets of [`at`].

use super::super::config::{hop_limit_to4, DEFAULT_HOP_LIMIT};
use super::super::poll::{Arrival, Poll};
use super::super::state::{Core, Link};
use super::super::transmit::SendError;
use super::family::{UdpFamily, UdpIn};
use crate::counters::Stat;
use crate::port::{Buf, MacAddr, Port};
use crate::udp::table::{CachedRoute, FlowKey};
use crate::udp::SocketId;
use crate::wire::checksum;
use crate::wire::ethernet::{swap_addresses, EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::udp::{UdpPacket, HEADER_LEN as UDP_LEN};
use core::net::{Ipv4Addr, SocketAddrV4};

/// Where the fields of a plain UDP/IPv4 frame (Ethernet, IPv4 without
/// options, UDP) lie in it: the wire's header offsets, placed.
pub(crate) mod at {
    use crate::wire::ethernet::{field as eth, HEADER_LEN as ETH_LEN};
    use crate::wire::ipv4::{field as ip, HEADER_LEN as IP_LEN};
    use crate::wire::udp::field as udp;
    use core::ops::Range;

    pub(crate) const ETH_DST: Range<usize> = eth::DST;
    pub(crate) const ETH_SRC: Range<usize> = eth::SRC;
    pub(crate) const ETHERTYPE: usize = eth::ETHERTYPE;
    const IP: usize = ETH_LEN;
    pub(crate) const VER_IHL: usize = IP + ip::VER_IHL;
    pub(crate) const TOS: usize = IP + ip::TOS;
    pub(crate) const LENGTH: usize = IP + ip::LENGTH;
    pub(crate) const IDENT: usize = IP + ip::IDENT;
    pub(crate) const FLAGS_FRAG: usize = IP + ip::FLAGS_FRAG;
    pub(crate) const TTL: usize = IP + ip::TTL;
    pub(crate) const PROTOCOL: usize = IP + ip::PROTOCOL;
    pub(crate) const CHECKSUM: usize = IP + ip::CHECKSUM;
    pub(crate) const SRC: usize = IP + ip::SRC;
    pub(crate) const DST: usize = IP + ip::DST;
    pub(crate) const UDP: usize = IP + IP_LEN;
    pub(crate) const SRC_PORT: usize = UDP + udp::SRC_PORT;
    pub(crate) const DST_PORT: usize = UDP + udp::DST_PORT;
    pub(crate) const UDP_LENGTH: usize = UDP + udp::LENGTH;
    pub(crate) const UDP_CHECKSUM: usize = UDP + udp::CHECKSUM;
}

/// Ethernet + IPv4 without options + UDP: a plain frame's headers.
pub(crate) const FAST_HEADERS: usize = ETH_LEN + IP_LEN + UDP_LEN;

impl UdpFamily for Ipv4Addr {
    type SocketAddr = SocketAddrV4;

    const V6: bool = false;
    const IP_LEN: usize = IP_LEN;
    const MAX_UDP_LEN: usize = u16::MAX as usize - IP_LEN;
    const ZERO_CHECKSUM_IS_NONE: bool = true;

    #[inline]
    fn split(addr: SocketAddrV4) -> (Ipv4Addr, u16) {
        (*addr.ip(), addr.port())
    }

    /// Without a learned path MTU (the common case) no lookup.
    #[inline]
    fn send_mtu<B: Buf>(core: &Core<B>, dst: Ipv4Addr, link_mtu: usize) -> usize {
        if core.shared.ip.v4.path_mtus.is_empty() {
            return link_mtu;
        }
        core.path_mtu4(dst, link_mtu)
    }

    #[inline]
    fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, udp_len: u16) -> u64 {
        checksum::pseudo_header_v4(src, dst, protocol::UDP, udp_len)
    }

    #[inline]
    fn lookup<B: Buf>(
        core: &Core<B>,
        src: (Ipv4Addr, u16),
        dst: (Ipv4Addr, u16),
        link: usize,
    ) -> Option<SocketId> {
        core.shared.udp.lookup(&FlowKey {
            src: SocketAddrV4::new(src.0, src.1),
            dst: SocketAddrV4::new(dst.0, dst.1),
            device: link as u16,
            lcore: core.lcore.index,
        })
    }

    fn port_unreachable<P: Port>(
        poll: &mut Poll<'_, '_, P>,
        buf: P::Buf,
        arrival: Arrival,
        datagram: &UdpIn<Ipv4Addr>,
    ) {
        if !datagram.to_group {
            poll.port_unreachable_in_place(buf, arrival, datagram.end - ETH_LEN);
        }
    }

    #[inline]
    fn addresses(frame: &[u8], payload_start: usize) -> ((Ipv4Addr, Ipv4Addr), (u16, u16)) {
        crate::udp::addresses(frame, payload_start)
    }

    #[inline]
    fn reply_source(link: &Link, peer: Ipv4Addr) -> Option<Ipv4Addr> {
        Some(link.source_for(peer))
    }

    #[inline]
    fn local<B: Buf>(core: &Core<B>, socket: SocketId) -> Result<(Ipv4Addr, u16), SendError> {
        let local = core
            .shared
            .udp
            .local_addr(socket)
            .ok_or(SendError::NoSocket)?;
        Ok((*local.ip(), local.port()))
    }

    #[inline]
    fn kept_route<B: Buf>(
        core: &Core<B>,
        socket: SocketId,
        dst: &SocketAddrV4,
        generation: u64,
    ) -> Option<CachedRoute> {
        core.lcore.udp_routes.cached_route(socket, *dst, generation)
    }

    #[inline]
    fn keep_route<B: Buf>(core: &mut Core<B>, socket: SocketId, route: CachedRoute) {
        core.lcore
            .udp_routes
            .remember_route(&core.shared.udp, socket, route);
    }

    #[inline]
    fn route<B: Buf>(
        core: &mut Core<B>,
        dst: &SocketAddrV4,
        generation: u64,
    ) -> Option<(usize, Ipv4Addr, Ipv4Addr)> {
        core.lcore.counters.count(Stat::RouteLookups);
        let hop = core.lcore.ip.v4.route_cache.next_hop(
            &core.shared.ip.v4.routes,
            generation,
            *dst.ip(),
        )?;
        Some((usize::from(hop.port), hop.via, hop.source))
    }

    #[inline]
    fn source(local: Ipv4Addr, _dst: Ipv4Addr, route_source: Ipv4Addr) -> Ipv4Addr {
        // A socket bound to a group sends from the route's source (as
        // Linux, whose bind to a group sets no source address).
        if local.is_unspecified() || local.is_multicast() {
            route_source
        } else {
            local
        }
    }

    #[inline]
    fn group_mac<B: Buf>(core: &Core<B>, dst: Ipv4Addr) -> Option<MacAddr> {
        if core.is_broadcast(dst) {
            // The limited broadcast or one of our subnets' (every station
            // of the link, as Linux sends it: no ARP for it).
            return Some(MacAddr::BROADCAST);
        }
        // RFC 1112 6.4: the group's low 23 bits under 01:00:5e.
        let [_, b, c, d] = dst.octets();
        dst.is_multicast()
            .then_some(MacAddr([0x01, 0x00, 0x5e, b & 0x7f, c, d]))
    }

    #[inline]
    fn write_headers<B: Buf>(
        core: &mut Core<B>,
        frame: &mut [u8],
        (src, dst): ((Ipv4Addr, u16), (Ipv4Addr, u16)),
        (our_mac, mtu): (MacAddr, usize),
        tos: u8,
    ) {
        let (src, dst) = (
            SocketAddrV4::new(src.0, src.1),
            SocketAddrV4::new(dst.0, dst.1),
        );
        write_udp_headers(core, frame, (src, dst), our_mac, mtu, tos);
    }

    #[inline]
    fn readdress_plain<B: Buf>(
        core: &mut Core<B>,
        frame: &mut [u8],
        (src, dst): ((Ipv4Addr, u16), (Ipv4Addr, u16)),
        (our_mac, mtu): (MacAddr, usize),
        tos: u8,
    ) -> bool {
        let udp_len = frame.len().saturating_sub(ETH_LEN + IP_LEN);
        let Some(h) = frame.first_chunk_mut::<FAST_HEADERS>() else {
            return false;
        };
        let (src, dst) = (
            SocketAddrV4::new(src.0, src.1),
            SocketAddrV4::new(dst.0, dst.1),
        );
        readdress_plain(h, (src, dst), core.ident(), udp_len, mtu, tos);
        let mut eth = EthernetFrame::new_unchecked(&mut h[..]);
        eth.set_src(our_mac);
        eth.set_ethertype(EtherType::Ipv4);
        true
    }
}

/// Writes Ethernet (source MAC and type; the caller sets the destination),
/// IPv4 and UDP headers in front of the payload that fills the rest of
/// `frame`, with the UDP checksum over that payload and `tos` as the IPv4
/// type of service.
pub(super) fn write_udp_headers<B: Buf>(
    core: &mut Core<B>,
    frame: &mut [u8],
    (src, dst): (SocketAddrV4, SocketAddrV4),
    our_mac: MacAddr,
    mtu: usize,
    tos: u8,
) {
    let ident = core.ident();
    let payload_len = frame.len() - (ETH_LEN + IP_LEN + UDP_LEN);
    let udp_len = UDP_LEN + payload_len;
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv4);
    UdpPacket::new_unchecked(&mut frame[ETH_LEN + IP_LEN..]).emit_header(
        (*src.ip(), src.port()),
        (*dst.ip(), dst.port()),
        payload_len as u16,
    );
    let header = udp_ip_header((src, dst), ident, udp_len, mtu, tos);
    Ipv4Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&header);
}

/// The IPv4 header of a UDP datagram of `udp_len` bytes from `src` to
/// `dst`: our TTL, DF when it fits `mtu`, `tos`.
#[inline]
pub(super) fn udp_ip_header(
    (src, dst): (SocketAddrV4, SocketAddrV4),
    ident: u16,
    udp_len: usize,
    mtu: usize,
    tos: u8,
) -> Ipv4Header {
    Ipv4Header {
        src: *src.ip(),
        dst: *dst.ip(),
        protocol: protocol::UDP,
        payload_len: udp_len as u16,
        ttl: hop_limit_to4(*dst.ip()),
        ident,
        dont_fragment: IP_LEN + udp_len <= mtu,
        tos,
    }
}

/// Turns the headers of a plain UDP/IPv4 frame around in place, on one
/// fixed-size array: MACs swapped (the reply goes to the previous hop, from
/// our MAC, which a plain frame was sent to), addresses and
/// ports swapped (which leaves both checksums valid: the ones' complement
/// sum does not depend on word order), TTL reset and DF set, and the TOS
/// byte set to the socket's `tos` (only touched when it differs). Those words
/// change, so the IPv4 checksum is updated incrementally (RFC 1624), which
/// is exact because the receive path verified the request's checksum.
#[inline(always)]
pub(super) fn turn_around_plain_udp(h: &mut [u8; FAST_HEADERS], tos: u8) {
    if let Some(macs) = h.first_chunk_mut::<12>() {
        swap_addresses(macs);
    }
    // Source and destination address swap as the halves of one word, and
    // so do the ports.
    if let Some(addresses) = h[at::SRC..at::DST + 4].first_chunk_mut::<8>() {
        *addresses = u64::from_ne_bytes(*addresses).rotate_left(32).to_ne_bytes();
    }
    if let Some(ports) = h[at::SRC_PORT..at::DST_PORT + 2].first_chunk_mut::<4>() {
        *ports = u32::from_ne_bytes(*ports).rotate_left(16).to_ne_bytes();
    }
    // Flags/offset and TTL/protocol as one 32-bit word: its complement and
    // its new value fold like their 16-bit halves. The sum is taken in the
    // machine's byte order, which the ones' complement sum does not mind
    // (RFC 1071 2(B)), so no byte swaps are needed.
    const WORD: usize = at::FLAGS_FRAG;
    let old = [h[WORD], h[WORD + 1], h[WORD + 2], h[WORD + 3]];
    let new = [0x40, 0x00, DEFAULT_HOP_LIMIT, h[at::PROTOCOL]]; // DF, offset 0
    h[WORD..WORD + 4].copy_from_slice(&new);
    let check = u16::from_ne_bytes([h[at::CHECKSUM], h[at::CHECKSUM + 1]]);
    let mut sum = u64::from(!check)
        + u64::from(!u32::from_ne_bytes(old))
        + u64::from(u32::from_ne_bytes(new));
    if h[at::TOS] != tos {
        // Version/IHL and TOS as one 16-bit word, in the same byte order.
        let old = u16::from_ne_bytes([h[at::VER_IHL], h[at::TOS]]);
        h[at::TOS] = tos;
        sum += u64::from(!old) + u64::from(u16::from_ne_bytes([h[at::VER_IHL], tos]));
    }
    h[at::CHECKSUM..at::CHECKSUM + 2].copy_from_slice(&(!checksum::fold_small(sum)).to_ne_bytes());
}

/// The UDP and IPv4 headers of a plain frame for `src` to `dst`: ports
/// and UDP checksum updated in place ([`readdress_plain_udp`]), a fresh
/// IPv4 header (`udp_len` bytes of UDP, DF when it fits `mtu`): the
/// forward's general path, for a plain frame the socket's template does
/// not serve (see `template`).
#[inline(always)]
pub(super) fn readdress_plain(
    h: &mut [u8; FAST_HEADERS],
    (src, dst): (SocketAddrV4, SocketAddrV4),
    ident: u16,
    udp_len: usize,
    mtu: usize,
    tos: u8,
) {
    readdress_plain_udp(h, src, dst);
    let header = udp_ip_header((src, dst), ident, udp_len, mtu, tos);
    Ipv4Packet::new_unchecked(&mut h[ETH_LEN..]).emit_header(&header);
}

/// Rewrites the UDP source and destination (addresses and ports) of a
/// plain frame whose UDP checksum is valid, updating that checksum
/// incrementally over the changed words (a zero checksum, "none", stays
/// zero). The IPv4 header is left to the caller (its addresses are only
/// read here).
#[inline]
fn readdress_plain_udp(h: &mut [u8; FAST_HEADERS], src: SocketAddrV4, dst: SocketAddrV4) {
    // Every word is taken as it lies in memory (native order): the ones'
    // complement sum does not depend on byte order, up to a swap (RFC 1071
    // section 2(B)), so a checksum worked out and stored in native order
    // is the big-endian one, and no word is byte-swapped on the way.
    let word = |h: &[u8; FAST_HEADERS], at: usize| {
        u64::from(u32::from_ne_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]))
    };
    // Both ports as one big-endian word: built once, stored and summed
    // whole.
    let ports = (u32::from(src.port()) << 16 | u32::from(dst.port())).to_be_bytes();
    let old = [word(h, at::SRC), word(h, at::DST), word(h, at::SRC_PORT)];
    let new = [
        u64::from(u32::from_ne_bytes(src.ip().octets())),
        u64::from(u32::from_ne_bytes(dst.ip().octets())),
        u64::from(u32::from_ne_bytes(ports)),
    ];
    h[at::SRC_PORT..at::SRC_PORT + 4].copy_from_slice(&ports);
    let check = u16::from_ne_bytes([h[at::UDP_CHECKSUM], h[at::UDP_CHECKSUM + 1]]);
    if check == 0 {
        return;
    }
    // Subtracting a 32-bit word in ones' complement adds its complement,
    // 0xffff_ffff - w, which folds like the complements of its two halves
    // (and the old checksum's complement is 0xffff - check): the same sum
    // with the complements' constants added once and each word subtracted,
    // no complement per word.
    const COMPLEMENTS: u64 = 0xffff + 3 * 0xffff_ffff;
    let sum = COMPLEMENTS + new.iter().sum::<u64>() - u64::from(check) - old.iter().sum::<u64>();
    let check = checksum::udp_complement(sum);
    h[at::UDP_CHECKSUM..at::UDP_CHECKSUM + 2].copy_from_slice(&check.to_ne_bytes());
}
