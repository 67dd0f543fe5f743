//! The fast path for the common IPv6 frame: a UDP datagram right after a
//! plain IPv6 header (no extension headers), unicast to one of the arriving
//! link's addresses.
//!
//! Like the IPv4 fast path ([`super::fast`]) it reads the 62 header bytes
//! once from one fixed array, validates exactly what the general path
//! validates, and looks the socket up; anything it does not fully accept
//! goes to the general path, which counts the reason. Per packet; owning
//! lcore.

use super::fast::Fast;
use super::Core;
use crate::counters::Stat;
use crate::port::Buf;
use crate::udp::table::FlowKey6;
use crate::udp::Datagram;
use crate::wire::checksum;
use core::net::{Ipv6Addr, SocketAddrV6};

/// Ethernet (14) + IPv6 (40) + UDP (8).
pub(super) const HEADERS6: usize = 62;

#[inline]
fn word(h: &[u8; HEADERS6], at: usize) -> u16 {
    u16::from_be_bytes([h[at], h[at + 1]])
}

#[inline]
fn address(h: &[u8; HEADERS6], at: usize) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&h[at..at + 16]);
    Ipv6Addr::from(octets)
}

/// Tries the IPv6 fast path on a frame the IPv4 one did not take.
#[inline(never)]
pub(super) fn try_udp6<B: Buf>(core: &Core<B>, link: usize, buf: B) -> Fast<B> {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return Fast::General(buf);
    };
    let data = buf.data();
    let frame_len = data.len();
    let Some(h) = data.first_chunk::<HEADERS6>() else {
        return Fast::General(buf);
    };
    // Ethernet: to our MAC, from a unicast MAC (the group bit clear: the
    // reply goes back to it), IPv6. IPv6: version 6, UDP next, hop limit
    // > 0, payload within the frame and exactly the UDP datagram, from a
    // source port other than 0 (nothing can answer it), with a checksum.
    let payload_len = usize::from(word(h, 18));
    let udp_len = usize::from(word(h, 58));
    let plain = h[..6] == our_mac.0
        && h[6] & 1 == 0
        && h[12..14] == [0x86, 0xdd]
        && h[14] >> 4 == 6
        && h[20] == crate::wire::ipv6::next_header::UDP
        && h[21] != 0
        && udp_len >= 8
        && udp_len == payload_len
        && 54 + payload_len <= data.len()
        && word(h, 54) != 0
        && word(h, 60) != 0;
    if !plain {
        return Fast::General(buf);
    }
    let (src, dst) = (address(h, 22), address(h, 38));
    let Some(here) = core.shared.links.get(link) else {
        return Fast::General(buf);
    };
    // A unicast source, not loopback; a destination of this link (the
    // general path takes the rest: other links' addresses, groups).
    if src.is_multicast() || src.is_unspecified() || src.is_loopback() || !here.has_address6(dst) {
        return Fast::General(buf);
    }
    let checksum_ok = match core
        .shared
        .config
        .checksum
        .device_verdict(buf.rx_offload().l4_checksum)
    {
        Some(verdict) => verdict,
        None => {
            // The pseudo-header: both addresses, the length and the
            // protocol; then the datagram.
            let addresses = checksum::accumulate_span(data, 22, 54);
            let pseudo = addresses + udp_len as u64 + 17;
            checksum::fold(pseudo + checksum::accumulate_span(data, 54, 54 + udp_len)) == 0xffff
        }
    };
    if !checksum_ok {
        return Fast::General(buf);
    }
    let key = FlowKey6 {
        src: SocketAddrV6::new(src, word(h, 54), 0, 0),
        dst: SocketAddrV6::new(dst, word(h, 56), 0, 0),
        device: link as u16,
    };
    let Some(socket) = core.shared.udp.lookup6(&key) else {
        return Fast::General(buf);
    };
    let counters = &core.lcore.counters;
    counters.count(Stat::EthInFrames);
    counters.count(Stat::Ip6InReceives);
    counters.count(Stat::Ip6InDelivers);
    counters.count(Stat::UdpInDatagrams);
    let end = 54 + udp_len;
    let mut datagram = Datagram::new(buf, HEADERS6..end, false, link as u16);
    datagram.v6 = true;
    // No Ethernet padding after the datagram: the frame can be turned around.
    datagram.plain = end == frame_len;
    Fast::Deliver(socket, datagram)
}
