//! The IPv4 send path: replies built in the received buffer, new packets
//! built in fresh buffers, and the hand-off of a finished IPv4 frame to its
//! link, fragmented to the MTU ([`transmit_ipv4`]).
//!
//! Replies reuse the request's buffer: a UDP echo swaps addresses and ports
//! (which leaves the UDP checksum valid: the ones' complement sum does not
//! depend on their order); the headers are turned around here for ICMP's
//! echo replies too (`icmp4`).

use super::buffers::{cut_to_payload, new_frame, new_with_payload};
use super::config::DEFAULT_HOP_LIMIT;
use super::next_hop::send_to_neighbor;
use super::transmit::{set_destination_mac, Out, SendError};
use super::Core;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::udp::table::CachedRoute;
use crate::udp::SocketId;
use crate::wire::checksum;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::udp::{UdpPacket, HEADER_LEN as UDP_LEN};
use core::net::{Ipv4Addr, SocketAddrV4};

/// Swaps the Ethernet addresses: the reply goes back to the previous hop.
pub(super) fn turn_around_ethernet<B: Buf>(buf: &mut B, our_mac: MacAddr, eth_src: MacAddr) {
    let mut eth = EthernetFrame::new_unchecked(buf.data_mut());
    eth.set_dst(eth_src);
    eth.set_src(our_mac);
}

/// Turns the IPv4 header around for a reply. A plain 20-byte header is
/// rewritten in place with an incremental checksum update (the common case);
/// a header with options is rebuilt without them, right before the payload.
pub(super) fn turn_around_ipv4<B: Buf>(core: &mut Core<B>, buf: &mut B, mtu: usize) {
    let Some(bytes) = buf.data_mut().get_mut(ETH_LEN..) else {
        return;
    };
    let ip = Ipv4Packet::new_unchecked(&*bytes);
    let header_len = ip.header_len();
    let fits = usize::from(ip.total_len()) <= mtu;
    if header_len == IP_LEN && fits {
        return Ipv4Packet::new_unchecked(bytes).reverse_for_reply(DEFAULT_HOP_LIMIT);
    }
    let (src, dst, proto, payload_len) = (
        ip.src(),
        ip.dst(),
        ip.protocol(),
        ip.total_len().saturating_sub(header_len as u16),
    );
    let start = header_len - IP_LEN;
    let ident = core.ident();
    Ipv4Packet::new_unchecked(&mut bytes[start..]).emit_header(&Ipv4Header {
        src: dst,
        dst: src,
        protocol: proto,
        payload_len,
        ttl: DEFAULT_HOP_LIMIT,
        ident,
        dont_fragment: false,
        tos: 0,
    });
    if start > 0 {
        // Move the Ethernet header up to the new IP header.
        let data = buf.data_mut();
        data.copy_within(0..ETH_LEN, start);
        buf.adjust(start);
    }
}

/// The general case of [`super::udp_out::reply_udp_in_place`]: headers rebuilt from scratch.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
pub(super) fn rebuild_udp_reply<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mut buf: P::Buf,
    peer: SocketAddrV4,
    ours: SocketAddrV4,
    payload: core::ops::Range<usize>,
    (broadcast, tos): (bool, u8),
) {
    let eth_src = EthernetFrame::new_unchecked(buf.data()).src();
    let payload_len = payload.end.saturating_sub(payload.start);
    let Some((mac, mtu)) = core.links.get(link).map(|l| (l.mac, l.mtu)) else {
        return core.counters.count_drop(DropReason::TxNoRoute);
    };
    let source = if broadcast {
        core.links[link].source_for(*peer.ip())
    } else {
        *ours.ip()
    };
    // Drop any IPv4 options: headers go right before the UDP header.
    let udp_start = payload.start.saturating_sub(UDP_LEN);
    let header_start = udp_start.saturating_sub(ETH_LEN + IP_LEN);
    cut_to_payload(&mut buf, header_start, payload.end);
    let Some(frame) = buf
        .data_mut()
        .get_mut(..ETH_LEN + IP_LEN + UDP_LEN + payload_len)
    else {
        return core.counters.count_drop(DropReason::TxNoBuffer);
    };
    let src = SocketAddrV4::new(source, ours.port());
    write_udp_headers(core, frame, (src, peer), mac, mtu, tos);
    EthernetFrame::new_unchecked(frame).set_dst(eth_src);
    transmit_ipv4(core, out, link, buf);
}

/// Writes Ethernet (source MAC and type; the caller sets the destination),
/// IPv4 and UDP headers in front of the payload that fills the rest of
/// `frame`, with the UDP checksum over that payload and `tos` as the IPv4
/// type of service, and counts the datagram.
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
    Ipv4Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&udp_ip_header(
        (src, dst),
        ident,
        udp_len,
        mtu,
        tos,
    ));
    core.counters.count(Stat::UdpOutDatagrams);
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
        ttl: DEFAULT_HOP_LIMIT,
        ident,
        dont_fragment: IP_LEN + udp_len <= mtu,
        tos,
    }
}

/// Ethernet + IPv4 without options + UDP.
pub(super) const FAST_HEADERS: usize = ETH_LEN + IP_LEN + UDP_LEN;

/// Turns the headers of a plain UDP/IPv4 frame around in place, on one
/// fixed-size array: MACs (the reply goes to the previous hop), addresses and
/// ports swapped (which leaves both checksums valid: the ones' complement
/// sum does not depend on word order), TTL reset and DF set, and the TOS
/// byte set to the socket's `tos` (only touched when it differs). Those words
/// change, so the IPv4 checksum is updated incrementally (RFC 1624), which
/// is exact because the receive path verified the request's checksum.
#[inline]
pub(super) fn turn_around_plain_udp(h: &mut [u8; FAST_HEADERS], our_mac: MacAddr, tos: u8) {
    h.copy_within(6..12, 0);
    h[6..12].copy_from_slice(&our_mac.0);
    // Source and destination address swap as the halves of one word, and
    // so do the ports.
    if let Some(addresses) = h[26..34].first_chunk_mut::<8>() {
        *addresses = u64::from_ne_bytes(*addresses).rotate_left(32).to_ne_bytes();
    }
    if let Some(ports) = h[34..38].first_chunk_mut::<4>() {
        *ports = u32::from_ne_bytes(*ports).rotate_left(16).to_ne_bytes();
    }
    // Flags/offset and TTL/protocol as one 32-bit word: its complement and
    // its new value fold like their 16-bit halves. The sum is taken in the
    // machine's byte order, which the ones' complement sum does not mind
    // (RFC 1071 2(B)), so no byte swaps are needed.
    let old = [h[20], h[21], h[22], h[23]];
    let new = [0x40, 0x00, DEFAULT_HOP_LIMIT, h[23]]; // DF, offset 0
    h[20..24].copy_from_slice(&new);
    let check = u16::from_ne_bytes([h[24], h[25]]);
    let mut sum = u64::from(!check)
        + u64::from(!u32::from_ne_bytes(old))
        + u64::from(u32::from_ne_bytes(new));
    if h[15] != tos {
        // Version/IHL and TOS as one 16-bit word, in the same byte order.
        let old = u16::from_ne_bytes([h[14], h[15]]);
        h[15] = tos;
        sum += u64::from(!old) + u64::from(u16::from_ne_bytes([h[14], tos]));
    }
    h[24..26].copy_from_slice(&(!checksum::fold_small(sum)).to_ne_bytes());
}

/// How a datagram from a socket leaves: the link, the neighbour to resolve
/// (unless the socket's cached route already knows its MAC) and our source
/// address.
#[derive(Debug, Clone, Copy)]
pub(super) struct Path {
    pub(super) link: usize,
    pub(super) via: Ipv4Addr,
    pub(super) source: Ipv4Addr,
    /// The next hop's MAC if the socket had it ([`packed_mac`]), else
    /// [`NO_MAC`]: one 8-byte word, so copying a `Path` never reloads a
    /// 6-byte field with a wider load (a store-forwarding stall measured at
    /// 4% of a relayed packet).
    pub(super) cached_mac: u64,
    pub(super) generation: u64,
}

/// No cached MAC (a MAC has 48 bits).
const NO_MAC: u64 = u64::MAX;

/// A MAC in the low 48 bits of a word.
#[inline]
fn packed_mac(mac: MacAddr) -> u64 {
    let m = mac.0;
    u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0])
}

/// The inverse of [`packed_mac`].
#[inline]
fn unpacked_mac(bits: u64) -> MacAddr {
    let b = bits.to_le_bytes();
    MacAddr([b[0], b[1], b[2], b[3], b[4], b[5]])
}

/// Finds the way to `dst` for `socket`: early demux first (a connected
/// socket keeps its route and next-hop MAC while nothing changed), then the
/// route cache.
pub(super) fn path_to<B: Buf>(
    core: &mut Core<B>,
    socket: SocketId,
    dst: SocketAddrV4,
) -> Result<Path, SendError> {
    let generation = core.generation();
    if let Some(route) = core.udp.cached_route(socket, dst, generation) {
        return Ok(Path {
            link: usize::from(route.link),
            via: Ipv4Addr::UNSPECIFIED,
            source: route.source,
            cached_mac: packed_mac(route.mac),
            generation,
        });
    }
    core.counters.count(Stat::RouteLookups);
    let hop = core
        .route_cache
        .next_hop(&core.routes, generation, *dst.ip())
        .ok_or_else(|| {
            core.counters.count_drop(DropReason::TxNoRoute);
            SendError::NoRoute
        })?;
    Ok(Path {
        link: usize::from(hop.port),
        via: hop.via,
        source: hop.source,
        cached_mac: NO_MAC,
        generation,
    })
}

/// Builds and sends a UDP datagram from `socket` to `dst` (copies `payload`
/// into a new buffer from the outgoing link's pool).
pub(crate) fn send_udp<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: SocketAddrV4,
    payload: &[u8],
) -> Result<(), SendError> {
    let local = core.udp.local_addr(socket).ok_or(SendError::NoSocket)?;
    let path = path_to(core, socket, dst)?;
    let headers = ETH_LEN + IP_LEN + UDP_LEN;
    let buf = new_with_payload(&core.counters, out, path.link, headers, payload)?;
    send_on_path(core, out, now, socket, local, dst, buf, path)
}

/// Sends the payload already in `buf` as a UDP datagram from `socket` to
/// `dst`: the headers are prepended in the buffer's headroom.
pub(crate) fn send_udp_buffer<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: SocketAddrV4,
    buf: P::Buf,
) -> Result<(), SendError> {
    let local = core.udp.local_addr(socket).ok_or(SendError::NoSocket)?;
    let path = path_to(core, socket, dst)?;
    send_on_path(core, out, now, socket, local, dst, buf, path)
}

#[allow(clippy::too_many_arguments)]
fn send_on_path<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    local: SocketAddrV4,
    dst: SocketAddrV4,
    mut buf: P::Buf,
    path: Path,
) -> Result<(), SendError> {
    let Some((mac, mtu)) = core.links.get(path.link).map(|l| (l.mac, l.mtu)) else {
        core.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    let src_ip = if local.ip().is_unspecified() {
        path.source
    } else {
        *local.ip()
    };
    let payload_len = buf.len();
    let udp_len = UDP_LEN + payload_len;
    if udp_len > usize::from(u16::MAX) - IP_LEN {
        return Err(SendError::TooLarge);
    }
    if buf.prepend(ETH_LEN + IP_LEN + UDP_LEN).is_none() {
        return Err(SendError::TooLarge);
    }
    let src = SocketAddrV4::new(src_ip, local.port());
    let tos = core.udp.tos(socket);
    write_udp_headers(core, buf.data_mut(), (src, dst), mac, mtu, tos);
    send_framed(core, out, now, socket, dst, buf, path)
}

/// Sends a finished frame along `path`: the socket's cached next hop, the
/// broadcast address, or the neighbour cache (the socket remembers the
/// route to this destination once it resolves).
#[allow(clippy::too_many_arguments)]
pub(super) fn send_framed<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: SocketAddrV4,
    mut buf: P::Buf,
    path: Path,
) -> Result<(), SendError> {
    let link = path.link;
    if path.cached_mac != NO_MAC {
        set_destination_mac(&mut buf, unpacked_mac(path.cached_mac));
        transmit_ipv4(core, out, link, buf);
        return Ok(());
    }
    if dst.ip().is_broadcast() {
        set_destination_mac(&mut buf, MacAddr::BROADCAST);
        transmit_ipv4(core, out, link, buf);
        return Ok(());
    }
    let via = (path.source, path.via);
    if let Some(mac) = send_to_neighbor(core, out, now, link, via, buf)? {
        let route = CachedRoute {
            dst: *dst.ip(),
            generation: path.generation,
            source: path.source,
            mac,
            link: link as u16,
        };
        core.udp.remember_route(socket, route);
    }
    Ok(())
}

/// Sends a finished IPv4 frame out of `link`, fragmenting it if it exceeds
/// the link's MTU.
pub(crate) fn transmit_ipv4<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    buf: P::Buf,
) {
    core.counters.count(Stat::IpOutRequests);
    let Some(mtu) = core.links.get(link).map(|l| l.mtu) else {
        return core.counters.count_drop(DropReason::TxNoRoute);
    };
    if buf.len() <= ETH_LEN + mtu {
        return out.push(link, buf, &core.counters);
    }
    fragment(core, out, link, mtu, &buf);
}

/// Splits an oversized IPv4 frame into fragments in new buffers (slow path).
fn fragment<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mtu: usize,
    whole: &P::Buf,
) {
    let data = whole.data();
    let ip = Ipv4Packet::new_unchecked(&data[ETH_LEN..]);
    let header = Ipv4Header {
        src: ip.src(),
        dst: ip.dst(),
        protocol: ip.protocol(),
        payload_len: 0,
        ttl: ip.ttl(),
        ident: ip.ident(),
        dont_fragment: false,
        tos: ip.tos(),
    };
    let start = ETH_LEN + ip.header_len();
    let end = (ETH_LEN + usize::from(ip.total_len())).min(data.len());
    let payload = &data[start.min(end)..end];
    let chunk = (mtu.saturating_sub(IP_LEN) & !7).max(8);
    let pieces = payload.len().div_ceil(chunk);
    for (i, piece) in payload.chunks(chunk).enumerate() {
        let len = ETH_LEN + IP_LEN + piece.len();
        let Some(mut buf) = new_frame(&core.counters, out, link, len) else {
            return;
        };
        let frame = buf.data_mut();
        frame[..ETH_LEN].copy_from_slice(&data[..ETH_LEN]);
        frame[ETH_LEN + IP_LEN..].copy_from_slice(piece);
        let mut ip = Ipv4Packet::new_unchecked(&mut frame[ETH_LEN..]);
        ip.emit_header(&Ipv4Header {
            payload_len: piece.len() as u16,
            ..header
        });
        ip.set_fragment(i * chunk, i + 1 < pieces);
        ip.fill_checksum();
        core.counters.count(Stat::IpFragCreates);
        out.push(link, buf, &core.counters);
    }
    core.counters.count(Stat::IpFragOKs);
}
