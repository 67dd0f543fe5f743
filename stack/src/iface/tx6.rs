//! The IPv6 send path: UDP replies built in the received buffer.
//!
//! A plain request (no extension headers, no padding, payload untouched,
//! unicast to us) is turned around in place. Otherwise the reply keeps the
//! request's buffer with new Ethernet, IPv6 and UDP headers right before
//! the payload (extension headers are not repeated) and a computed UDP
//! checksum (mandatory over IPv6); a request sent to a multicast group is
//! answered from our own address on that link. Replies go back to the
//! Ethernet source of the request.

use super::tx::Out;
use super::Core;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::udp::addresses6;
use crate::wire::checksum;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv6::{msg_type, Icmpv6Packet, CODE_PORT_UNREACHABLE, HEADER_LEN as ICMP6_LEN};
use crate::wire::ipv6::{
    next_header, pseudo_header, Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN,
};
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use core::net::Ipv6Addr;
use core::ops::Range;

/// Hop limit of packets we originate.
const HOP_LIMIT: u8 = 64;

/// An ICMPv6 error and the packet it quotes fit the minimum IPv6 MTU.
const MIN_MTU: usize = 1280;

/// The packet an ICMPv6 error answers.
pub(crate) struct Invoking {
    /// Where it was sent (one of ours, or a group).
    pub(crate) ours: Ipv6Addr,
    /// Its sender.
    pub(crate) peer: Ipv6Addr,
    /// The end of its IPv6 packet in the frame.
    pub(crate) end: usize,
}

/// Answers a datagram for a closed port with ICMPv6 destination unreachable
/// (port), reusing its buffer: new headers go in front of the invoking
/// packet, which is quoted as far as the minimum MTU allows (RFC 4443 3.1).
/// Not for packets sent to a group (RFC 4443 2.4 (e)); rate-limited with
/// the interface's ICMP errors.
pub(crate) fn port_unreachable6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    mut buf: P::Buf,
    eth_src: MacAddr,
    invoking: Invoking,
) {
    if invoking.ours.is_multicast() {
        return; // counted as UdpNoSocket by the caller
    }
    if !core.icmp_limit.take(now) {
        return core.counters.count_drop(DropReason::IcmpRateLimited);
    }
    let Some(our_mac) = core.links.get(link).map(|l| l.mac) else {
        return core.counters.count_drop(DropReason::TxNoRoute);
    };
    let quoted = invoking
        .end
        .saturating_sub(ETH_LEN)
        .min(MIN_MTU - IP6_LEN - ICMP6_LEN);
    let excess = buf.len().saturating_sub(ETH_LEN + quoted);
    buf.trim(excess);
    if buf.prepend(IP6_LEN + ICMP6_LEN).is_none() {
        return core.counters.count_drop(DropReason::TxNoBuffer);
    }
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(eth_src);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv6);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src: invoking.ours,
        dst: invoking.peer,
        next_header: next_header::ICMPV6,
        payload_len: (ICMP6_LEN + quoted) as u16,
        hop_limit: HOP_LIMIT,
    });
    let mut icmp = Icmpv6Packet::new_unchecked(&mut frame[ETH_LEN + IP6_LEN..]);
    icmp.set_type_code(msg_type::DEST_UNREACHABLE, CODE_PORT_UNREACHABLE);
    icmp.set_body_word([0; 4]);
    icmp.fill_checksum(invoking.ours, invoking.peer);
    core.counters.count(Stat::Icmp6OutDestUnreachs);
    core.counters.count(Stat::Ip6OutRequests);
    out.push(link, buf, &core.counters);
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
    let padding = buf.len().saturating_sub(payload.end);
    if padding > 0 {
        buf.trim(padding);
    }
    if header_start > 0 {
        buf.adjust(header_start);
    }
    let udp_len = UDP_LEN + payload.len();
    let frame = buf.data_mut();
    if frame.len() != headers + payload.len() {
        return core.counters.count_drop(DropReason::UdpMalformed);
    }
    write_headers(
        frame, our_mac, eth_src, source, peer, our_port, peer_port, udp_len,
    );
    core.counters.count(Stat::UdpOutDatagrams);
    core.counters.count(Stat::Ip6OutRequests);
    out.push(link, buf, &core.counters);
}

/// Turns the headers of a plain UDP/IPv6 frame around in place: MACs (the
/// reply goes to the previous hop), addresses and ports swapped (which
/// leaves the UDP checksum valid: the pseudo-header sums both addresses
/// alike), hop limit reset. IPv6 has no header checksum, so that is all.
#[inline]
pub(crate) fn turn_around_plain_udp6(h: &mut [u8; super::fast6::HEADERS6], our_mac: MacAddr) {
    h.copy_within(6..12, 0);
    h[6..12].copy_from_slice(&our_mac.0);
    h[21] = HOP_LIMIT;
    let mut src = [0u8; 16];
    src.copy_from_slice(&h[22..38]);
    h.copy_within(38..54, 22);
    h[38..54].copy_from_slice(&src);
    if let Some(ports) = h[54..58].first_chunk_mut::<4>() {
        *ports = u32::from_ne_bytes(*ports).rotate_left(16).to_ne_bytes();
    }
}

/// Our address on `link` to answer `peer` from: the link-local one for a
/// link-local peer, else the first configured one (the link-local one if
/// there is none).
fn source_for<B: Buf>(core: &Core<B>, link: usize, peer: Ipv6Addr) -> Option<Ipv6Addr> {
    let addresses = &core.links.get(link)?.addresses6;
    if peer.is_unicast_link_local() {
        return addresses.first().map(|a| a.addr);
    }
    addresses.get(1).or(addresses.first()).map(|a| a.addr)
}

/// Writes Ethernet, IPv6 and UDP headers in front of the payload that fills
/// the rest of `frame`, with the UDP checksum.
#[allow(clippy::too_many_arguments)]
fn write_headers(
    frame: &mut [u8],
    our_mac: MacAddr,
    peer_mac: MacAddr,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    src_port: u16,
    dst_port: u16,
    udp_len: usize,
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
        hop_limit: HOP_LIMIT,
    });
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
