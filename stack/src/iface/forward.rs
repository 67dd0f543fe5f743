//! Zero-copy UDP forwarding over IPv4 ([`forward_udp`]): a received
//! datagram leaves from another socket to another destination in its own
//! buffer, headers rewritten, payload untouched.
//!
//! Two ways through. The relay's steady state, a plain frame (checksums
//! verified, no IPv4 options, no Ethernet padding) sent from a socket that
//! keeps a valid route to the destination, reads that socket's send slot
//! once ([`UdpTable::cached_send`](crate::udp::table::UdpTable::cached_send))
//! and writes every header in place: the UDP checksum updated for the new
//! addresses and ports (RFC 1624), a fresh IPv4 header, both Ethernet
//! addresses. Everything else (the first packet to a destination, a changed
//! route or neighbour, padding, options, an unverified checksum) goes the
//! general way: route and neighbour lookups, headers summed afresh unless
//! the frame is plain.
//!
//! Invariants: per packet, no allocation and no panic; a datagram that
//! cannot be sent is freed, counted and the caller told why; both ways put
//! the same headers on the wire (a test compares them byte for byte).

use super::buffers::cut_to_payload;
use super::ip::transmit_ipv4;
use super::transmit::{Out, SendError};
use super::tx::{path_to, send_framed, udp_ip_header, write_udp_headers, FAST_HEADERS};
use super::Core;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::udp::table::CachedSend;
use crate::udp::{Datagram, SocketId};
use crate::wire::checksum;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::ipv4::{Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use core::net::SocketAddrV4;

/// Forwards a received IPv4 datagram's payload from socket `from` to `dst`
/// in the datagram's own buffer (zero-copy): new headers go right before
/// the payload (IPv4 options and Ethernet padding are dropped), with
/// `from`'s address and port as the source (its route's address if it is
/// bound to ANY) and `from`'s TOS byte. A plain datagram (checksums
/// verified, payload untouched) gets its UDP checksum updated for the new
/// addresses and ports (RFC 1624); any other is summed afresh. Routed and
/// resolved as a send is. Per packet; owning lcore. Always inlined, and
/// small: it only takes the datagram apart, so that the call after it
/// passes the buffer in a register instead of a copy of the whole
/// datagram in memory.
#[inline(always)]
pub(crate) fn forward_udp<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    datagram: Datagram<P::Buf>,
    from: SocketId,
    dst: SocketAddrV4,
) -> Result<(), SendError> {
    let Datagram {
        buf,
        payload_start,
        payload_end,
        plain,
        ..
    } = datagram;
    let in_place =
        plain && payload_start as usize == FAST_HEADERS && buf.len() == payload_end as usize;
    if in_place {
        return forward_plain(core, out, now, buf, from, dst);
    }
    let payload = Payload {
        start: payload_start,
        end: payload_end,
        plain,
    };
    forward_general(core, out, now, buf, payload, from, dst)
}

/// Where a datagram's payload lies in its frame, and whether the frame is
/// plain (see [`Datagram`]'s fields of the same names).
#[derive(Clone, Copy)]
struct Payload {
    start: u32,
    end: u32,
    plain: bool,
}

/// [`forward_udp`] for a plain frame (Ethernet, IPv4 without options, UDP
/// with a verified checksum, no padding: the payload at [`FAST_HEADERS`]
/// to the end): the fast way if the sending socket keeps a valid route to
/// `dst`, else the general way. Per packet; [`forward_cached`] is inlined
/// into it.
#[inline]
fn forward_plain<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    buf: P::Buf,
    from: SocketId,
    dst: SocketAddrV4,
) -> Result<(), SendError> {
    if let Some(send) = core.shared.udp.cached_send(from, dst, core.generation()) {
        return forward_cached(core, out, buf, send, dst);
    }
    // A plain frame's payload ends with it (`forward_udp`), well below 2^32.
    let payload = Payload {
        start: FAST_HEADERS as u32,
        end: buf.len() as u32,
        plain: true,
    };
    forward_general(core, out, now, buf, payload, from, dst)
}

/// The fast way of [`forward_udp`]: `buf` holds a plain frame (Ethernet,
/// IPv4 without options, UDP with a verified checksum, no padding), and
/// `send` is what the sending socket keeps about itself and its route to
/// `dst`.
#[inline]
fn forward_cached<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    mut buf: P::Buf,
    send: CachedSend,
    dst: SocketAddrV4,
) -> Result<(), SendError> {
    let route = send.route;
    let link = usize::from(route.link);
    let Some((our_mac, mtu)) = core.shared.links.get(link).map(|l| (l.mac, l.mtu)) else {
        core.lcore.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    let src_ip = if send.local4.is_unspecified() {
        route.source
    } else {
        send.local4
    };
    let ident = core.ident();
    let frame = buf.data_mut();
    let frame_len = frame.len();
    let Some(h) = frame.first_chunk_mut::<FAST_HEADERS>() else {
        core.lcore.counters.count_drop(DropReason::UdpMalformed);
        return Err(SendError::TooLarge);
    };
    // At least the headers' 42 bytes: no saturating subtraction needed.
    let udp_len = frame_len - (ETH_LEN + IP_LEN);
    if udp_len > usize::from(u16::MAX) - IP_LEN {
        return Err(SendError::TooLarge);
    }
    let src = SocketAddrV4::new(src_ip, send.port);
    // The Ethernet header first, while both addresses are fresh in
    // registers (written after the others, they were kept on the stack).
    write_ethernet(h, route.mac, our_mac);
    readdress_plain(h, (src, dst), ident, udp_len, mtu, send.tos);
    core.lcore.counters.count(Stat::UdpOutDatagrams);
    core.lcore.counters.count(Stat::UdpForwardedInPlace);
    if IP_LEN + udp_len <= mtu {
        core.lcore.counters.count(Stat::IpOutRequests);
        out.push(link, buf, &core.lcore.counters);
    } else {
        transmit_ipv4(core, out, link, buf);
    }
    Ok(())
}

/// The UDP and IPv4 headers of a plain frame for `src` to `dst`: ports
/// and UDP checksum updated in place ([`readdress_plain_udp`]), a fresh
/// IPv4 header (`udp_len` bytes of UDP, DF when it fits `mtu`). Inlined
/// (the compiler would not: it has two callers): per relayed packet.
#[inline(always)]
fn readdress_plain(
    h: &mut [u8; FAST_HEADERS],
    (src, dst): (SocketAddrV4, SocketAddrV4),
    ident: u16,
    udp_len: usize,
    mtu: usize,
    tos: u8,
) {
    readdress_plain_udp(h, src, dst);
    Ipv4Packet::new_unchecked(&mut h[ETH_LEN..]).emit_header(&udp_ip_header(
        (src, dst),
        ident,
        udp_len,
        mtu,
        tos,
    ));
}

/// Both Ethernet addresses and the IPv4 type, in one pass.
#[inline]
fn write_ethernet(h: &mut [u8; FAST_HEADERS], to: MacAddr, ours: MacAddr) {
    let mut eth = [0u8; ETH_LEN];
    eth[..6].copy_from_slice(&to.0);
    eth[6..12].copy_from_slice(&ours.0);
    eth[12..].copy_from_slice(&u16::from(EtherType::Ipv4).to_be_bytes());
    h[..ETH_LEN].copy_from_slice(&eth);
}

/// The general way of [`forward_udp`]: the route and next hop looked up
/// (and kept in the socket for next time), IPv4 options and Ethernet
/// padding dropped, the headers rewritten (plain) or summed afresh.
fn forward_general<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    mut buf: P::Buf,
    payload: Payload,
    from: SocketId,
    dst: SocketAddrV4,
) -> Result<(), SendError> {
    let Payload {
        start: payload_start,
        end: payload_end,
        plain,
    } = payload;
    let local = core
        .shared
        .udp
        .local_addr(from)
        .ok_or(SendError::NoSocket)?;
    let path = path_to(core, from, dst)?;
    let Some((mac, mtu)) = core.shared.links.get(path.link).map(|l| (l.mac, l.mtu)) else {
        core.lcore.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    let (start, end) = (payload_start as usize, payload_end as usize);
    let udp_len = UDP_LEN + end.saturating_sub(start);
    if udp_len > usize::from(u16::MAX) - IP_LEN {
        return Err(SendError::TooLarge);
    }
    let Some(header_start) = start.checked_sub(FAST_HEADERS) else {
        core.lcore.counters.count_drop(DropReason::UdpMalformed);
        return Err(SendError::TooLarge);
    };
    cut_to_payload(&mut buf, header_start, end);
    let src_ip = if local.ip().is_unspecified() {
        path.source
    } else {
        *local.ip()
    };
    let src = SocketAddrV4::new(src_ip, local.port());
    let tos = core.shared.udp.tos(from);
    let frame = buf.data_mut();
    if frame.len() != FAST_HEADERS + udp_len - UDP_LEN {
        core.lcore.counters.count_drop(DropReason::UdpMalformed);
        return Err(SendError::TooLarge);
    }
    match frame.first_chunk_mut::<FAST_HEADERS>() {
        Some(h) if plain && header_start == 0 => {
            readdress_plain(h, (src, dst), core.ident(), udp_len, mtu, tos);
            let mut eth = EthernetFrame::new_unchecked(&mut h[..]);
            eth.set_src(mac);
            eth.set_ethertype(EtherType::Ipv4);
            core.lcore.counters.count(Stat::UdpOutDatagrams);
        }
        _ => write_udp_headers(core, frame, (src, dst), mac, mtu, tos),
    }
    core.lcore.counters.count(Stat::UdpForwardedInPlace);
    send_framed(core, out, now, from, dst, buf, path)
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
    let old = [word(h, 26), word(h, 30), word(h, 34)];
    let new = [
        u64::from(u32::from_ne_bytes(src.ip().octets())),
        u64::from(u32::from_ne_bytes(dst.ip().octets())),
        u64::from(u32::from_ne_bytes(ports)),
    ];
    h[34..38].copy_from_slice(&ports);
    let check = u16::from_ne_bytes([h[40], h[41]]);
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
    h[40..42].copy_from_slice(&check.to_ne_bytes());
}
