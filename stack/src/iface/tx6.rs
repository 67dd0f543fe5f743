//! The IPv6 send path: UDP replies built in the received buffer.
//!
//! A plain request (no extension headers, no padding, payload untouched,
//! unicast to us) is turned around in place. Otherwise the reply keeps the
//! request's buffer with new Ethernet, IPv6 and UDP headers right before
//! the payload (extension headers are not repeated) and a computed UDP
//! checksum (mandatory over IPv6); a request sent to a multicast group is
//! answered from our own address on that link. Replies go back to the
//! Ethernet source of the request; like every IPv6 packet we send, one over
//! the path MTU leaves in fragments (`ip::transmit6`).

use super::buffers::{cut_to_payload, new_frame, new_with_payload};
use super::config::DEFAULT_HOP_LIMIT;
use super::ip::{transmit6, MIN_MTU};
use super::next_hop::{send_to_neighbor, NextHopAddr};
use super::transmit::{set_destination_mac, Out, SendError};
use super::{Core, Link};
use crate::counters::{DropReason, Stat};
use crate::neighbor::NeighborCache;
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::udp::addresses6;
use crate::udp::SocketId;
use crate::wire::checksum;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv6::{emit_router_solicitation, NdpRepr, ROUTER_SOLICITATION_LEN};
use crate::wire::icmpv6::{msg_type, Icmpv6Packet, CODE_PORT_UNREACHABLE, HEADER_LEN as ICMP6_LEN};
use crate::wire::ipv6::{multicast_mac, solicited_node};
use crate::wire::ipv6::{
    next_header, pseudo_header, Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN,
};
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use core::net::Ipv6Addr;
use core::net::{SocketAddr, SocketAddrV6};
use core::ops::Range;

/// The packet an ICMPv6 error answers.
pub(crate) struct Invoking {
    /// Where it was sent (one of ours, or a group).
    pub(crate) ours: Ipv6Addr,
    /// Its sender.
    pub(crate) peer: Ipv6Addr,
    /// The end of its IPv6 packet in the frame.
    pub(crate) end: usize,
}

/// Which ICMPv6 error to send.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Icmp6Error {
    pub(crate) kind: u8,
    pub(crate) code: u8,
    /// The second word of the message (pointer, MTU, or zero).
    pub(crate) word: u32,
    /// Also answer packets sent to a group (RFC 4443 2.4 (e.3): packet too
    /// big, and parameter problem code 2).
    pub(crate) to_groups: bool,
}

impl Icmp6Error {
    /// Destination unreachable, port unreachable.
    pub(crate) const PORT_UNREACHABLE: Icmp6Error = Icmp6Error {
        kind: msg_type::DEST_UNREACHABLE,
        code: CODE_PORT_UNREACHABLE,
        word: 0,
        to_groups: false,
    };

    /// Parameter problem `code` pointing at byte `pointer` of the invoking
    /// packet.
    pub(crate) fn parameter_problem(code: u8, pointer: usize) -> Icmp6Error {
        Icmp6Error {
            kind: msg_type::PARAMETER_PROBLEM,
            code,
            word: pointer as u32,
            to_groups: code == 2,
        }
    }
}

/// Answers the packet in `buf` with an ICMPv6 error, reusing its buffer: new
/// headers go in front of the invoking packet, which is quoted as far as
/// the minimum MTU allows (RFC 4443 3.1). Never for a packet from the
/// unspecified address, nor (mostly) for one sent to a group (RFC 4443 2.4
/// (e)); rate-limited with the interface's ICMP errors. Counts its message
/// type.
#[allow(clippy::too_many_arguments)]
pub(crate) fn icmp6_error<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    mut buf: P::Buf,
    eth_src: MacAddr,
    invoking: Invoking,
    error: Icmp6Error,
) {
    if invoking.ours.is_multicast() && !error.to_groups || invoking.peer.is_unspecified() {
        return; // the caller counted the invoking packet's drop
    }
    if !core.lcore.icmp_limit.take(now) {
        return core.lcore.counters.count_drop(DropReason::IcmpRateLimited);
    }
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let source = if invoking.ours.is_multicast() {
        match source_for(core, link, invoking.peer) {
            Some(ip) => ip,
            None => return core.lcore.counters.count_drop(DropReason::TxNoRoute),
        }
    } else {
        invoking.ours
    };
    let quoted = invoking
        .end
        .saturating_sub(ETH_LEN)
        .min(MIN_MTU - IP6_LEN - ICMP6_LEN);
    let excess = buf.len().saturating_sub(ETH_LEN + quoted);
    buf.trim(excess);
    if buf.prepend(IP6_LEN + ICMP6_LEN).is_none() {
        return core.lcore.counters.count_drop(DropReason::TxNoBuffer);
    }
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(eth_src);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv6);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src: source,
        dst: invoking.peer,
        next_header: next_header::ICMPV6,
        payload_len: (ICMP6_LEN + quoted) as u16,
        hop_limit: DEFAULT_HOP_LIMIT,
    });
    let mut icmp = Icmpv6Packet::new_unchecked(&mut frame[ETH_LEN + IP6_LEN..]);
    icmp.set_type_code(error.kind, error.code);
    icmp.set_body_word(error.word.to_be_bytes());
    icmp.fill_checksum(source, invoking.peer);
    core.lcore.counters.count(match error.kind {
        msg_type::DEST_UNREACHABLE => Stat::Icmp6OutDestUnreachs,
        _ => Stat::Icmp6OutParmProblems,
    });
    core.lcore.counters.count(Stat::Ip6OutRequests);
    out.push(link, buf, &core.lcore.counters);
}

/// Sends the payload of an IPv6 datagram back to its sender from its own
/// buffer.
pub(crate) fn reply_udp6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mut buf: P::Buf,
    payload: Range<usize>,
    to_group: bool,
    class: u8,
) {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let ((peer, ours), (peer_port, our_port)) = addresses6(buf.data(), payload.start);
    let eth_src = EthernetFrame::new_unchecked(buf.data()).src();
    let source = if to_group {
        match source_for(core, link, peer) {
            Some(ip) => ip,
            None => return core.lcore.counters.count_drop(DropReason::TxNoRoute),
        }
    } else {
        ours
    };
    let headers = ETH_LEN + IP6_LEN + UDP_LEN;
    let Some(header_start) = payload.start.checked_sub(headers) else {
        return core.lcore.counters.count_drop(DropReason::UdpMalformed);
    };
    cut_to_payload(&mut buf, header_start, payload.end);
    let udp_len = UDP_LEN + payload.len();
    let frame = buf.data_mut();
    if frame.len() != headers + payload.len() {
        return core.lcore.counters.count_drop(DropReason::UdpMalformed);
    }
    write_headers(
        frame,
        (our_mac, eth_src),
        (source, peer),
        (our_port, peer_port),
        udp_len,
        class,
    );
    core.lcore.counters.count(Stat::UdpOutDatagrams);
    let _ = transmit6(core, out, link, buf); // failures are counted inside
}

/// Turns the headers of a plain UDP/IPv6 frame around in place: MACs (the
/// reply goes to the previous hop), addresses and ports swapped (which
/// leaves the UDP checksum valid: the pseudo-header sums both addresses
/// alike), hop limit reset, traffic class set to the socket's `class`
/// (only touched when it differs). IPv6 has no header checksum, so that is
/// all.
#[inline]
pub(crate) fn turn_around_plain_udp6(
    h: &mut [u8; super::fast6::HEADERS6],
    our_mac: MacAddr,
    class: u8,
) {
    h.copy_within(6..12, 0);
    h[6..12].copy_from_slice(&our_mac.0);
    h[21] = DEFAULT_HOP_LIMIT;
    if h[14] << 4 | h[15] >> 4 != class {
        Ipv6Packet::new_unchecked(&mut h[ETH_LEN..]).set_traffic_class(class);
    }
    let mut src = [0u8; 16];
    src.copy_from_slice(&h[22..38]);
    h.copy_within(38..54, 22);
    h[38..54].copy_from_slice(&src);
    if let Some(ports) = h[54..58].first_chunk_mut::<4>() {
        *ports = u32::from_ne_bytes(*ports).rotate_left(16).to_ne_bytes();
    }
}

/// Our address on `link` to answer `peer` from: the link-local one for a
/// link-local peer, else the first other one in use (the link-local one if
/// there is none).
fn source_for<B: Buf>(core: &Core<B>, link: usize, peer: Ipv6Addr) -> Option<Ipv6Addr> {
    let here = core.shared.links.get(link)?;
    if peer.is_unicast_link_local() {
        return here.link_local6();
    }
    here.addresses6
        .iter()
        .find(|a| !a.addr.is_unicast_link_local())
        .map(|a| a.addr)
        .or_else(|| here.link_local6())
}

/// Writes Ethernet, IPv6 (traffic class `class`) and UDP headers in front
/// of the payload that fills the rest of `frame`, with the UDP checksum.
fn write_headers(
    frame: &mut [u8],
    (our_mac, peer_mac): (MacAddr, MacAddr),
    (src, dst): (Ipv6Addr, Ipv6Addr),
    (src_port, dst_port): (u16, u16),
    udp_len: usize,
    class: u8,
) {
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(peer_mac);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv6);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header: next_header::UDP,
        payload_len: udp_len as u16,
        hop_limit: DEFAULT_HOP_LIMIT,
    });
    if class != 0 {
        Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).set_traffic_class(class);
    }
    let udp = &mut frame[ETH_LEN + IP6_LEN..];
    udp[0..2].copy_from_slice(&src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    udp[6..8].copy_from_slice(&[0, 0]);
    let sum = pseudo_header(src, dst, next_header::UDP, udp_len as u32);
    let mut check = !checksum::fold(checksum::accumulate(sum, &udp[..udp_len]));
    if check == 0 {
        check = 0xffff; // zero means "no checksum", which IPv6 forbids
    }
    udp[6..8].copy_from_slice(&check.to_be_bytes());
}

/// How an IPv6 datagram leaves: the link, the neighbour to resolve and
/// our source address.
pub(crate) struct Path6 {
    pub(crate) link: usize,
    pub(crate) via: Ipv6Addr,
    pub(crate) source: Ipv6Addr,
}

/// Picks the way to `dst` for a socket bound to `local`: a link-local
/// destination names its link by the scope id (the link number; the only
/// IPv6 link when there is one), anything else takes the IPv6 routes.
pub(crate) fn path6<B: Buf>(
    core: &mut Core<B>,
    local: Ipv6Addr,
    dst: &SocketAddrV6,
) -> Option<Path6> {
    let ip = *dst.ip();
    let (link, via, route_source) = if ip.is_unicast_link_local() {
        // The scope names the link; scope 0 is fine when only one link
        // runs IPv6. (No allocation: this runs per datagram.)
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
        (link, ip, core.shared.links[link].link_local6()?)
    } else {
        core.lcore.counters.count(Stat::RouteLookups);
        let generation = core.shared.ip.v6.routes.generation();
        let hop =
            core.lcore
                .ip
                .v6
                .route_cache
                .next_hop(&core.shared.ip.v6.routes, generation, ip)?;
        (usize::from(hop.port), hop.via, hop.source)
    };
    let source =
        if local.is_unspecified() || local.is_unicast_link_local() != ip.is_unicast_link_local() {
            route_source
        } else {
            local
        };
    Some(Path6 { link, via, source })
}

/// Builds and sends a UDP/IPv6 datagram from `socket` to `dst` (copies
/// `payload` into a new buffer from the outgoing link's pool).
pub(crate) fn send_udp6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: SocketAddrV6,
    payload: &[u8],
) -> Result<(), SendError> {
    let (local_port, path) = route_for(core, socket, &dst)?;
    let headers = ETH_LEN + IP6_LEN + UDP_LEN;
    let buf = new_with_payload(&core.lcore.counters, out, path.link, headers, payload)?;
    let class = core.shared.udp.tos(socket);
    send_on_path6(core, out, now, (local_port, class), path, dst, buf)
}

/// Sends the payload already in `buf` as a UDP/IPv6 datagram from `socket`
/// to `dst` (queue mode): the headers go in the buffer's headroom.
pub(crate) fn send_udp6_buffer<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: SocketAddrV6,
    buf: P::Buf,
) -> Result<(), SendError> {
    let (local_port, path) = route_for(core, socket, &dst)?;
    let class = core.shared.udp.tos(socket);
    send_on_path6(core, out, now, (local_port, class), path, dst, buf)
}

/// The socket's port and the way to `dst`.
fn route_for<B: Buf>(
    core: &mut Core<B>,
    socket: SocketId,
    dst: &SocketAddrV6,
) -> Result<(u16, Path6), SendError> {
    let local = match core.shared.udp.local_socket_addr(socket) {
        Some(SocketAddr::V6(local)) => local,
        Some(SocketAddr::V4(_)) => return Err(SendError::NoRoute),
        None => return Err(SendError::NoSocket),
    };
    match path6(core, *local.ip(), dst) {
        Some(path) => Ok((local.port(), path)),
        None => {
            core.lcore.counters.count_drop(DropReason::TxNoRoute);
            Err(SendError::NoRoute)
        }
    }
}

/// Prepends the headers to the payload in `buf` and sends it along `path`:
/// Neighbor Discovery resolves the next hop's MAC; until it answers, the
/// datagram waits in the neighbour's bounded queue.
fn send_on_path6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    (local_port, class): (u16, u8),
    path: Path6,
    dst: SocketAddrV6,
    mut buf: P::Buf,
) -> Result<(), SendError> {
    let udp_len = UDP_LEN + buf.len();
    if udp_len > usize::from(u16::MAX) {
        return Err(SendError::TooLarge);
    }
    let Some(our_mac) = core.shared.links.get(path.link).map(|l| l.mac) else {
        return Err(SendError::NoRoute);
    };
    if buf.prepend(ETH_LEN + IP6_LEN + UDP_LEN).is_none() {
        return Err(SendError::TooLarge);
    }
    write_headers(
        buf.data_mut(),
        (our_mac, MacAddr::default()),
        (path.source, *dst.ip()),
        (local_port, dst.port()),
        udp_len,
        class,
    );
    core.lcore.counters.count(Stat::UdpOutDatagrams);
    send_framed6(core, out, now, path, buf)
}

/// Forwards a received IPv6 datagram's payload from socket `from` to `dst`
/// in the datagram's own buffer (zero-copy), as [`super::tx::forward_udp`]
/// does for IPv4: new headers right before the payload (extension headers
/// and padding dropped), `from`'s port, the route's source address and
/// `from`'s traffic class; the UDP checksum updated incrementally for a
/// plain datagram, summed afresh otherwise. Per packet; owning lcore.
pub(crate) fn forward_udp6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    datagram: crate::udp::Datagram<P::Buf>,
    from: SocketId,
    dst: SocketAddrV6,
) -> Result<(), SendError> {
    let crate::udp::Datagram {
        mut buf,
        payload_start,
        payload_end,
        plain,
        ..
    } = datagram;
    let (local_port, path) = route_for(core, from, &dst)?;
    let Some(our_mac) = core.shared.links.get(path.link).map(|l| l.mac) else {
        return Err(SendError::NoRoute);
    };
    let (start, end) = (payload_start as usize, payload_end as usize);
    let udp_len = UDP_LEN + end.saturating_sub(start);
    if udp_len > usize::from(u16::MAX) {
        return Err(SendError::TooLarge);
    }
    let headers = ETH_LEN + IP6_LEN + UDP_LEN;
    let Some(header_start) = start.checked_sub(headers) else {
        core.lcore.counters.count_drop(DropReason::UdpMalformed);
        return Err(SendError::TooLarge);
    };
    cut_to_payload(&mut buf, header_start, end);
    let class = core.shared.udp.tos(from);
    let frame = buf.data_mut();
    if frame.len() != headers + udp_len - UDP_LEN {
        core.lcore.counters.count_drop(DropReason::UdpMalformed);
        return Err(SendError::TooLarge);
    }
    match frame.first_chunk_mut::<{ super::fast6::HEADERS6 }>() {
        Some(h) if plain && header_start == 0 => {
            // The checksum covers the addresses (pseudo-header) and the
            // ports: take their old sum out and put the new one in.
            let old = checksum::fold(checksum::accumulate(0, &h[22..58]));
            let check = u16::from_be_bytes([h[60], h[61]]);
            let mut eth = EthernetFrame::new_unchecked(&mut h[..]);
            eth.set_src(our_mac);
            eth.set_ethertype(EtherType::Ipv6);
            let mut ip = Ipv6Packet::new_unchecked(&mut h[ETH_LEN..]);
            ip.emit_header(&Ipv6Header {
                src: path.source,
                dst: *dst.ip(),
                next_header: next_header::UDP,
                payload_len: udp_len as u16,
                hop_limit: DEFAULT_HOP_LIMIT,
            });
            ip.set_traffic_class(class);
            h[54..56].copy_from_slice(&local_port.to_be_bytes());
            h[56..58].copy_from_slice(&dst.port().to_be_bytes());
            let new = checksum::accumulate(0, &h[22..58]);
            let mut check = !checksum::fold(u64::from(!check) + u64::from(!old) + new);
            if check == 0 {
                check = 0xffff; // zero means "no checksum", which IPv6 forbids
            }
            h[60..62].copy_from_slice(&check.to_be_bytes());
        }
        _ => write_headers(
            frame,
            (our_mac, MacAddr::default()),
            (path.source, *dst.ip()),
            (local_port, dst.port()),
            udp_len,
            class,
        ),
    }
    core.lcore.counters.count(Stat::UdpOutDatagrams);
    core.lcore.counters.count(Stat::UdpForwardedInPlace);
    send_framed6(core, out, now, path, buf)
}

/// Sends a finished frame along `path`: to a group's MAC, or to the next
/// hop once Neighbor Discovery knows it (the frame waits in the
/// neighbour's bounded queue until then).
fn send_framed6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    path: Path6,
    mut buf: P::Buf,
) -> Result<(), SendError> {
    if path.via.is_multicast() {
        set_destination_mac(&mut buf, multicast_mac(path.via));
        return transmit6(core, out, path.link, buf);
    }
    let via = (path.source, path.via);
    send_to_neighbor(core, out, now, path.link, via, buf).map(|_| ())
}

/// Sends one Neighbor Discovery message on `link` (hop limit 255, RFC 4861
/// 7.1): `emit` writes its `len` bytes, the ICMPv6 checksum is filled for
/// `src` and `dst`; counts `stat`.
fn send_nd<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    (src, dst, dst_mac): (Ipv6Addr, Ipv6Addr, MacAddr),
    (len, emit): (usize, impl FnOnce(&mut [u8])),
    stat: Stat,
) {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let Some(mut buf) = new_frame(&core.lcore.counters, out, link, ETH_LEN + IP6_LEN + len) else {
        return;
    };
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(dst_mac);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv6);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header: next_header::ICMPV6,
        payload_len: len as u16,
        hop_limit: 255,
    });
    let message = &mut frame[ETH_LEN + IP6_LEN..];
    emit(message);
    Icmpv6Packet::new_unchecked(message).fill_checksum(src, dst);
    core.lcore.counters.count(stat);
    core.lcore.counters.count(Stat::Ip6OutRequests);
    out.push(link, buf, &core.lcore.counters);
}

/// Asks "who has `target`?" on `link` with our link-layer address (RFC
/// 4861 7.2.2), from the link's address on the target's prefix or its
/// link-local one: multicast to the target's solicited-node group, or, to
/// confirm a known neighbour (`Probe` state), unicast to it at `to`.
pub(crate) fn send_solicitation<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    target: Ipv6Addr,
    to: Option<MacAddr>,
) {
    let Some(here) = core.shared.links.get(link) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let our_mac = here.mac;
    let Some(source) = here
        .addresses6
        .iter()
        .find(|a| a.contains(target) && !target.is_unicast_link_local())
        .map(|a| a.addr)
        .or_else(|| here.link_local6())
        .or_else(|| here.addresses6.first().map(|a| a.addr))
    else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let (dst, dst_mac) = match to {
        Some(mac) => (target, mac),
        None => (
            solicited_node(target),
            multicast_mac(solicited_node(target)),
        ),
    };
    let solicitation = NdpRepr::Solicitation {
        target,
        source_mac: Some(our_mac),
    };
    send_ns(core, out, link, (source, dst, dst_mac), solicitation);
}

/// Asks the link whether anyone uses `target`, which we want (duplicate
/// address detection, RFC 4862 5.4.2): from the unspecified address, to
/// the target's solicited-node group, without a link-layer address.
pub(crate) fn send_dad_solicitation<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    target: Ipv6Addr,
) {
    let group = solicited_node(target);
    let solicitation = NdpRepr::Solicitation {
        target,
        source_mac: None,
    };
    let addressing = (Ipv6Addr::UNSPECIFIED, group, multicast_mac(group));
    send_ns(core, out, link, addressing, solicitation);
}

/// Sends `solicitation` on `link`, addressed as [`send_nd`] takes it.
fn send_ns<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    addressing: (Ipv6Addr, Ipv6Addr, MacAddr),
    solicitation: NdpRepr,
) {
    let message = (solicitation.len(), |m: &mut [u8]| solicitation.emit(m));
    let stat = Stat::Icmp6OutNeighborSolicits;
    send_nd(core, out, link, addressing, message, stat);
}

/// Asks the routers on `link` to advertise themselves (RFC 4861 6.3.7),
/// from our link-local address, with our link-layer address.
pub(crate) fn send_router_solicitation<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
) {
    let Some((our_mac, source)) = core
        .shared
        .links
        .get(link)
        .and_then(|l| Some((l.mac, l.link_local6()?)))
    else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let all_routers = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
    let message = (ROUTER_SOLICITATION_LEN, |m: &mut [u8]| {
        emit_router_solicitation(m, our_mac)
    });
    send_nd(
        core,
        out,
        link,
        (source, all_routers, multicast_mac(all_routers)),
        message,
        Stat::Icmp6OutRouterSolicits,
    );
}

impl NextHopAddr for Ipv6Addr {
    fn cache<B>(link: &mut Link<B>) -> &mut NeighborCache<B, Ipv6Addr> {
        &mut link.neighbors6
    }

    fn ask<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        _source: Ipv6Addr,
        target: Ipv6Addr,
    ) {
        send_solicitation(core, out, link, target, None);
    }

    fn transmit<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        buf: P::Buf,
    ) -> Result<(), SendError> {
        transmit6(core, out, link, buf)
    }
}
