//! The IPv6 fast path ([`try_udp6`]): a UDP datagram right after a plain
//! IPv6 header (no extension headers), unicast to one of the arriving
//! link's addresses.
//!
//! Like the IPv4 one (`fast4`) it reads the 62 header bytes once, at the
//! named offsets of `v6::at` into one array, validates exactly what the
//! general path validates, and looks the socket up; see [`super::fast`]
//! for what the two share. Per packet; owning lcore.

use super::super::state::Core;
use super::fast::{ethernet_mismatch, udp_answerable, word, word64_le, BurstView, Fast};
use super::v6::{at, HEADERS6};
use crate::port::{Buf, ChecksumStatus};
use crate::udp::table::FlowKey6;
use crate::udp::Datagram;
use crate::wire::checksum;
use crate::wire::ipv6::next_header;
use core::net::{Ipv6Addr, SocketAddrV6};

/// The IPv6 EtherType and version 6, as the frame's bytes 8-16 read
/// little-endian ([`word64_le`]: the source MAC's last four bytes, the
/// EtherType, the version with the traffic class and flow label's first
/// bits; all but the EtherType and the version are masked off).
const IPV6: u64 = u64::from_le_bytes([0, 0, 0, 0, 0x86, 0xdd, 0x60, 0]);
const IPV6_MASK: u64 = u64::from_le_bytes([0, 0, 0, 0, 0xff, 0xff, 0xf0, 0]);
/// Bytes 16-24 read little-endian (flow label's last bits, payload
/// length, next header, hop limit, source address's first two bytes):
/// UDP next.
const UDP_NEXT: u64 = u64::from_le_bytes([0, 0, 0, 0, next_header::UDP, 0, 0, 0]);
const UDP_NEXT_MASK: u64 = u64::from_le_bytes([0, 0, 0, 0, 0xff, 0, 0, 0]);
// The words above are laid out for these offsets.
const _: () = assert!(at::VER_TC_FLOW == 14 && at::NEXT_HEADER == 20);

#[inline]
fn address(h: &[u8; HEADERS6], at: usize) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&h[at..at + 16]);
    Ipv6Addr::from(octets)
}

/// Tries the IPv6 fast path on a frame the IPv4 one did not take.
#[inline(always)]
pub(crate) fn try_udp6<B: Buf>(core: &Core<B>, view: &BurstView, link: usize, buf: B) -> Fast<B> {
    let data = buf.data();
    let frame_len = data.len();
    let Some(h) = data.first_chunk::<HEADERS6>() else {
        return Fast::General(buf);
    };
    // Ethernet: see `ethernet_to_us`. IPv6: version 6, UDP next (any hop
    // limit: RFC 8200 3), payload within the frame and exactly the UDP
    // datagram, with a checksum (mandatory over IPv6).
    let payload_len = usize::from(word(h, at::PAYLOAD_LEN));
    let udp_len = usize::from(word(h, at::UDP_LENGTH));
    let next_word = word64_le(h, 16);
    let mismatch = ethernet_mismatch(h, view)
        | ((word64_le(h, 8) & IPV6_MASK) ^ IPV6)
        | ((next_word & UDP_NEXT_MASK) ^ UDP_NEXT);
    let plain = mismatch == 0
        && udp_answerable(udp_len, word(h, at::SRC_PORT))
        && udp_len == payload_len
        && at::UDP + payload_len <= frame_len
        && word(h, at::UDP_CHECKSUM) != 0;
    if !plain {
        return Fast::General(buf);
    }
    let (src, dst) = (address(h, at::SRC), address(h, at::DST));
    // A unicast source, not loopback nor IPv4-mapped; a destination of
    // this link (the general path takes the rest: other links' addresses,
    // groups). On the address's bits: multicast is ff00::/8, unspecified 0,
    // loopback 1, IPv4-mapped ::ffff:0:0/96.
    let src_bits = src.to_bits();
    let dst_halves = [word64_le(h, at::DST), word64_le(h, at::DST + 8)];
    let to_here = view.is_first_global6(dst_halves)
        || core
            .shared
            .links
            .get(link)
            .is_some_and(|here| here.has_address6(dst));
    if src_bits >> 120 == 0xff || src_bits <= 1 || src_bits >> 32 == 0xffff || !to_here {
        return Fast::General(buf);
    }
    let udp_end = at::UDP + udp_len;
    // What the device says of the checksum, if anything; virtual devices
    // say nothing, and then the policy is not even read.
    let offload = buf.rx_offload().l4_checksum;
    let verdict = if offload == ChecksumStatus::Unknown {
        None
    } else {
        core.shared.config.checksum.device_verdict(offload)
    };
    let checksum_ok = match verdict {
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
