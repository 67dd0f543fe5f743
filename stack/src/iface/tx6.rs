//! The IPv6 send path: UDP replies built in the received buffer.
//!
//! A plain request (no extension headers, no padding, payload untouched,
//! unicast to us) is turned around in place. Otherwise the reply keeps the
//! request's buffer with new Ethernet, IPv6 and UDP headers right before
//! the payload (extension headers are not repeated) and a computed UDP
//! checksum (mandatory over IPv6); a request sent to a multicast group is
//! answered from our own address on that link. Replies go back to the
//! Ethernet source of the request; like every IPv6 packet we send, one over
//! the path MTU leaves in fragments ([`transmit6`]).

use super::buffers::{cut_to_payload, new_with_payload};
use super::config::DEFAULT_HOP_LIMIT;
use super::next_hop::send_to_neighbor;
use super::transmit::{set_destination_mac, Out, SendError};
use super::Core;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::udp::addresses6;
use crate::udp::SocketId;
use crate::wire::checksum;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::ipv6::multicast_mac;
use crate::wire::ipv6::{
    next_header, pseudo_header, Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN,
};
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use core::net::Ipv6Addr;
use core::net::{SocketAddr, SocketAddrV6};
use core::ops::Range;

/// An ICMPv6 error and the packet it quotes fit the minimum IPv6 MTU; no
/// path MTU is taken below it.
pub(crate) const MIN_MTU: usize = 1280;

/// Length of the fragment header.
const FRAGMENT_HEADER_LEN: usize = 8;

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
    let Some(our_mac) = core.links.get(link).map(|l| l.mac) else {
        return core.counters.count_drop(DropReason::TxNoRoute);
    };
    let ((peer, ours), (peer_port, our_port)) = addresses6(buf.data(), payload.start);
    let eth_src = EthernetFrame::new_unchecked(buf.data()).src();
    let source = if to_group {
        match source_for(core, link, peer) {
            Some(ip) => ip,
            None => return core.counters.count_drop(DropReason::TxNoRoute),
        }
    } else {
        ours
    };
    let headers = ETH_LEN + IP6_LEN + UDP_LEN;
    let Some(header_start) = payload.start.checked_sub(headers) else {
        return core.counters.count_drop(DropReason::UdpMalformed);
    };
    cut_to_payload(&mut buf, header_start, payload.end);
    let udp_len = UDP_LEN + payload.len();
    let frame = buf.data_mut();
    if frame.len() != headers + payload.len() {
        return core.counters.count_drop(DropReason::UdpMalformed);
    }
    write_headers(
        frame,
        (our_mac, eth_src),
        (source, peer),
        (our_port, peer_port),
        udp_len,
        class,
    );
    core.counters.count(Stat::UdpOutDatagrams);
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
    let here = core.links.get(link)?;
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
        let runs_ipv6 = |l: usize| core.links.get(l).is_some_and(|k| k.ipv6);
        let scope = dst.scope_id() as usize;
        let link = if runs_ipv6(scope) {
            scope
        } else {
            let mut ipv6_links = (0..core.links.len()).filter(|&l| runs_ipv6(l));
            match (scope, ipv6_links.next(), ipv6_links.next()) {
                (0, Some(only), None) => only,
                _ => return None,
            }
        };
        (link, ip, core.links[link].link_local6()?)
    } else {
        core.counters.count(Stat::RouteLookups);
        let generation = core.routes6.generation();
        let hop = core.route_cache6.next_hop(&core.routes6, generation, ip)?;
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
    let buf = new_with_payload(&core.counters, out, path.link, headers, payload)?;
    let class = core.udp.tos(socket);
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
    let class = core.udp.tos(socket);
    send_on_path6(core, out, now, (local_port, class), path, dst, buf)
}

/// The socket's port and the way to `dst`.
fn route_for<B: Buf>(
    core: &mut Core<B>,
    socket: SocketId,
    dst: &SocketAddrV6,
) -> Result<(u16, Path6), SendError> {
    let local = match core.udp.local_socket_addr(socket) {
        Some(SocketAddr::V6(local)) => local,
        Some(SocketAddr::V4(_)) => return Err(SendError::NoRoute),
        None => return Err(SendError::NoSocket),
    };
    match path6(core, *local.ip(), dst) {
        Some(path) => Ok((local.port(), path)),
        None => {
            core.counters.count_drop(DropReason::TxNoRoute);
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
    let Some(our_mac) = core.links.get(path.link).map(|l| l.mac) else {
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
    core.counters.count(Stat::UdpOutDatagrams);
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
    let Some(our_mac) = core.links.get(path.link).map(|l| l.mac) else {
        return Err(SendError::NoRoute);
    };
    let (start, end) = (payload_start as usize, payload_end as usize);
    let udp_len = UDP_LEN + end.saturating_sub(start);
    if udp_len > usize::from(u16::MAX) {
        return Err(SendError::TooLarge);
    }
    let headers = ETH_LEN + IP6_LEN + UDP_LEN;
    let Some(header_start) = start.checked_sub(headers) else {
        core.counters.count_drop(DropReason::UdpMalformed);
        return Err(SendError::TooLarge);
    };
    cut_to_payload(&mut buf, header_start, end);
    let class = core.udp.tos(from);
    let frame = buf.data_mut();
    if frame.len() != headers + udp_len - UDP_LEN {
        core.counters.count_drop(DropReason::UdpMalformed);
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
    core.counters.count(Stat::UdpOutDatagrams);
    core.counters.count(Stat::UdpForwardedInPlace);
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

/// Sends a finished IPv6 frame out of `link`, in fragments if it exceeds
/// the path MTU (the link's, or less if a packet-too-big said so).
pub(crate) fn transmit6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    buf: P::Buf,
) -> Result<(), SendError> {
    let Some(link_mtu) = core.links.get(link).map(|l| l.mtu) else {
        core.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    let mut mtu = link_mtu;
    if buf.len() > ETH_LEN + MIN_MTU {
        if let Some(ip) = buf
            .data()
            .get(ETH_LEN..)
            .and_then(|d| Ipv6Packet::new_checked(d).ok())
        {
            mtu = core.path_mtu6(ip.dst(), link_mtu);
        }
    }
    if buf.len() <= ETH_LEN + mtu {
        core.counters.count(Stat::Ip6OutRequests);
        out.push(link, buf, &core.counters);
        return Ok(());
    }
    fragment6(core, out, link, mtu, &buf)
}

/// Splits an oversized IPv6 frame (fixed header only, as the stack builds
/// them) into fragments in new buffers, each with a fragment header (RFC
/// 8200 4.5) and an identification from the interface's unpredictable
/// sequence. Slow path.
fn fragment6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mtu: usize,
    whole: &P::Buf,
) -> Result<(), SendError> {
    let data = whole.data();
    let Ok(ip) = Ipv6Packet::new_checked(&data[ETH_LEN..]) else {
        core.counters.count_drop(DropReason::TxTooBig);
        return Err(SendError::TooLarge);
    };
    let header = Ipv6Header {
        src: ip.src(),
        dst: ip.dst(),
        next_header: next_header::FRAGMENT,
        payload_len: 0,
        hop_limit: ip.hop_limit(),
    };
    let protocol = ip.next_header();
    let payload = ip.payload();
    let chunk = (mtu.max(MIN_MTU) - IP6_LEN - FRAGMENT_HEADER_LEN) & !7;
    let ident = core.fragment_ident6();
    let pieces = payload.len().div_ceil(chunk);
    for (i, piece) in payload.chunks(chunk).enumerate() {
        let Some(mut buf) = out.alloc(link) else {
            core.counters.count_drop(DropReason::TxNoBuffer);
            return Err(SendError::NoBuffer);
        };
        let Some(frame) = buf.append(ETH_LEN + IP6_LEN + FRAGMENT_HEADER_LEN + piece.len()) else {
            core.counters.count_drop(DropReason::TxTooBig);
            return Err(SendError::TooLarge);
        };
        frame[..ETH_LEN].copy_from_slice(&data[..ETH_LEN]);
        Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
            payload_len: (FRAGMENT_HEADER_LEN + piece.len()) as u16,
            ..header
        });
        let offset = (i * chunk) as u16 | u16::from(i + 1 < pieces);
        let at = ETH_LEN + IP6_LEN;
        frame[at..at + 2].copy_from_slice(&[protocol, 0]);
        frame[at + 2..at + 4].copy_from_slice(&offset.to_be_bytes());
        frame[at + 4..at + 8].copy_from_slice(&ident.to_be_bytes());
        frame[at + 8..].copy_from_slice(piece);
        core.counters.count(Stat::Ip6FragCreates);
        core.counters.count(Stat::Ip6OutRequests);
        out.push(link, buf, &core.counters);
    }
    core.counters.count(Stat::Ip6FragOKs);
    Ok(())
}
