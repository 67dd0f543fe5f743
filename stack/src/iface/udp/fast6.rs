//! The IPv6 fast path ([`try_udp6`]): a UDP datagram right after a plain
//! IPv6 header (no extension headers), unicast to one of the arriving
//! link's addresses.
//!
//! Like the IPv4 one (`fast4`) it reads the 62 header bytes once, at the
//! named offsets of `v6::at` into one array, validates exactly what the
//! general path validates, and looks the socket up; see [`super::fast`]
//! for what the two share. Per packet; owning lcore.

use super::super::state::Core;
use super::fast::{ethernet_to_us, udp_answerable, word, Fast};
use super::v6::{at, HEADERS6};
use crate::port::Buf;
use crate::udp::table::FlowKey6;
use crate::udp::Datagram;
use crate::wire::checksum;
use crate::wire::ethernet::field as eth;
use crate::wire::ipv6::next_header;
use core::net::{Ipv6Addr, SocketAddrV6};

/// The IPv6 EtherType, as it lies in the frame.
const ETHERTYPE_IPV6: [u8; 2] = [0x86, 0xdd];

#[inline]
fn address(h: &[u8; HEADERS6], at: usize) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&h[at..at + 16]);
    Ipv6Addr::from(octets)
}

/// The little-endian 8-byte word at `at`, for checksums (see `fast4`'s
/// `word32_le`: a little-endian sum verifies exactly when the big-endian
/// one does).
#[inline(always)]
fn word64_le(h: &[u8; HEADERS6], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&h[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// Tries the IPv6 fast path on a frame the IPv4 one did not take.
#[inline(always)]
pub(crate) fn try_udp6<B: Buf>(core: &Core<B>, link: usize, buf: B) -> Fast<B> {
    let Some(here) = core.shared.links.get(link) else {
        return Fast::General(buf);
    };
    let data = buf.data();
    let frame_len = data.len();
    let Some(h) = data.first_chunk::<HEADERS6>() else {
        return Fast::General(buf);
    };
    // Ethernet: see `ethernet_to_us`. IPv6: version 6, UDP next, hop limit
    // > 0, payload within the frame and exactly the UDP datagram, with a
    // checksum (mandatory over IPv6).
    let payload_len = usize::from(word(h, at::PAYLOAD_LEN));
    let udp_len = usize::from(word(h, at::UDP_LENGTH));
    let plain = ethernet_to_us(h, here.mac)
        && h[eth::ETHERTYPE..eth::ETHERTYPE + 2] == ETHERTYPE_IPV6
        && h[at::VER_TC_FLOW] >> 4 == 6
        && h[at::NEXT_HEADER] == next_header::UDP
        && h[at::HOP_LIMIT] != 0
        && udp_answerable(udp_len, word(h, at::SRC_PORT))
        && udp_len == payload_len
        && at::UDP + payload_len <= frame_len
        && word(h, at::UDP_CHECKSUM) != 0;
    if !plain {
        return Fast::General(buf);
    }
    let (src, dst) = (address(h, at::SRC), address(h, at::DST));
    // A unicast source, not loopback; a destination of this link (the
    // general path takes the rest: other links' addresses, groups).
    // On the address's bits: multicast is ff00::/8, unspecified 0,
    // loopback 1.
    let src_bits = src.to_bits();
    if src_bits >> 120 == 0xff || src_bits <= 1 || !here.has_address6(dst) {
        return Fast::General(buf);
    }
    let udp_end = at::UDP + udp_len;
    let checksum_ok = match core
        .shared
        .config
        .checksum
        .device_verdict(buf.rx_offload().l4_checksum)
    {
        Some(verdict) => verdict,
        None => {
            // The pseudo-header, summed little-endian as IPv4's is: both
            // addresses as four 8-byte words, then the length and the
            // protocol (big-endian values, times 256); then the datagram.
            let mut addresses = 0;
            for word in [at::SRC, at::SRC + 8, at::DST, at::DST + 8] {
                addresses = checksum::add_with_carry(addresses, word64_le(h, word));
            }
            // Folded to 33 bits (2^32 is 1 modulo 0xffff): the
            // verification takes a pseudo-header sum below 2^47.
            let addresses = (addresses & 0xffff_ffff) + (addresses >> 32);
            let length_and_protocol = (udp_len as u64 + u64::from(next_header::UDP)) << 8;
            let pseudo_le = addresses + length_and_protocol;
            checksum::span_verifies_le(data, at::UDP, udp_end, pseudo_le)
        }
    };
    if !checksum_ok {
        return Fast::General(buf);
    }
    let key = FlowKey6 {
        src: SocketAddrV6::new(src, word(h, at::SRC_PORT), 0, 0),
        dst: SocketAddrV6::new(dst, word(h, at::DST_PORT), 0, 0),
        device: link as u16,
        lcore: core.lcore.index,
    };
    let Some(socket) = core.shared.udp.lookup6(&key) else {
        return Fast::General(buf);
    };
    let mut datagram = Datagram::new(buf, HEADERS6..udp_end, false, link as u16);
    datagram.v6 = true;
    // No Ethernet padding after the datagram: the frame can be turned around.
    datagram.plain = udp_end == frame_len;
    Fast::Deliver(socket, datagram)
}
