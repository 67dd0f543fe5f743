//! The IPv4 fast path ([`try_udp`]): a unicast UDP datagram to us in a
//! plain IPv4 header (no options, not a fragment).
//!
//! It reads the 42 header bytes once, at the named offsets of `v4::at`
//! into one array (one bounds check), validates exactly what the general
//! path validates, and looks the socket up; see [`super::fast`] for what
//! it shares with the IPv6 one. Per packet; owning lcore.

use super::super::state::{Core, LOCAL};
use super::fast::{ethernet_mismatch, udp_answerable, word, word64_le, BurstView, Fast};
use super::v4::{at, FAST_HEADERS};
use crate::port::{Buf, ChecksumStatus};
use crate::udp::table::FlowKey;
use crate::udp::Datagram;
use crate::wire::checksum;
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::ipv4::{
    protocol, FLAG_MORE_FRAGMENTS, FRAGMENT_OFFSET_MASK, HEADER_LEN as IP_LEN,
};
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use core::net::{Ipv4Addr, SocketAddrV4};

/// The IPv4 EtherType and version 4 with a header of five 32-bit words (no
/// options), as the frame's bytes 8-16 read little-endian ([`word64_le`]:
/// the source MAC's last four bytes, the EtherType, version and IHL, TOS;
/// the MAC's bytes and the TOS are masked off).
const IPV4_NO_OPTIONS: u64 = u64::from_le_bytes([0, 0, 0, 0, 0x08, 0x00, 0x45, 0]);
const IPV4_NO_OPTIONS_MASK: u64 = u64::from_le_bytes([0, 0, 0, 0, 0xff, 0xff, 0xff, 0]);
/// Bytes 16-24 read little-endian (total length, identification, flags
/// and fragment offset, TTL, protocol): more-fragments clear, offset 0
/// (the don't-fragment bit is masked off), UDP.
const UDP_NOT_FRAGMENT: u64 = u64::from_le_bytes([0, 0, 0, 0, 0, 0, 0, protocol::UDP]);
const UDP_NOT_FRAGMENT_MASK: u64 = u64::from_le_bytes([
    0,
    0,
    0,
    0,
    ((FLAG_MORE_FRAGMENTS | FRAGMENT_OFFSET_MASK) >> 8) as u8,
    (FLAG_MORE_FRAGMENTS | FRAGMENT_OFFSET_MASK) as u8,
    0,
    0xff,
]);
// The words above are laid out for these offsets.
const _: () = assert!(at::ETHERTYPE == 12 && at::LENGTH == 16 && at::FLAGS_FRAG == 20);
const _: () = assert!(at::TTL == 22 && at::PROTOCOL == 23);

/// A 32-bit word read little-endian, for checksums: the ones' complement
/// sum of such words is the big-endian one times 256 modulo 0xffff (a byte
/// swap of a 16-bit word), which verifies exactly when the big-endian sum
/// does, without a byte swap per word (see [`checksum::span_verifies_le`]).
#[inline]
fn word32_le(h: &[u8; FAST_HEADERS], at: usize) -> u64 {
    u64::from(u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]))
}

#[inline]
fn addr(h: &[u8; FAST_HEADERS], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(h[at], h[at + 1], h[at + 2], h[at + 3])
}

/// Tries the fast path on one frame. Inlined into its one caller: its
/// result (a whole datagram) then stays in registers instead of going
/// through memory, where rereading it at other widths than it was
/// written stalled on store forwarding.
#[inline(always)]
pub(crate) fn try_udp<B: Buf>(core: &Core<B>, view: &BurstView, link: usize, buf: B) -> Fast<B> {
    let data = buf.data();
    let Some(h) = data.first_chunk::<FAST_HEADERS>() else {
        return Fast::General(buf);
    };
    // Ethernet: see `ethernet_mismatch`. IPv4: version 4, IHL 5, UDP (any
    // TTL: RFC 1122 3.2.1.7), not a fragment (MF clear, offset 0), total
    // length within the frame. The fixed fields are tested on three 64-bit words at once,
    // one branch for all.
    let frame_len = data.len();
    let total = usize::from(word(h, at::LENGTH));
    let lengths_word = word64_le(h, at::LENGTH);
    let mismatch = ethernet_mismatch(h, view)
        | ((word64_le(h, 8) & IPV4_NO_OPTIONS_MASK) ^ IPV4_NO_OPTIONS)
        | ((lengths_word & UDP_NOT_FRAGMENT_MASK) ^ UDP_NOT_FRAGMENT);
    let plain = mismatch == 0 && total >= IP_LEN + UDP_LEN && ETH_LEN + total <= frame_len;
    if !plain {
        return Fast::NotUdp4(buf);
    }
    let (src_le, dst_le) = (word32_le(h, at::SRC), word32_le(h, at::DST));
    let (src_ip, dst_ip) = (addr(h, at::SRC), addr(h, at::DST));
    // Most datagrams go to the first local address: asked before the
    // address classes' filter.
    if !view.is_first_local(dst_le as u32) && core.class(dst_ip.to_bits()) != LOCAL
        || core.is_martian(src_ip)
    {
        return Fast::General(buf);
    }
    let udp_len = usize::from(word(h, at::UDP_LENGTH));
    let udp_end = at::UDP + udp_len;
    if udp_end > ETH_LEN + total || !udp_answerable(udp_len, word(h, at::SRC_PORT)) {
        return Fast::General(buf);
    }
    // What the device says of the checksums, if anything; virtual devices
    // say nothing, and then the policy is not even read.
    let offload = buf.rx_offload();
    let (ip_verdict, udp_verdict) = if offload.ip_checksum == ChecksumStatus::Unknown
        && offload.l4_checksum == ChecksumStatus::Unknown
    {
        (None, None)
    } else {
        let policy = core.shared.config.checksum;
        (
            policy.device_verdict(offload.ip_checksum),
            policy.device_verdict(offload.l4_checksum),
        )
    };
    // Both checksums are verified on little-endian sums ([`word32_le`]).
    // The addresses are summed once, for the header and the pseudo-header
    // (each 32-bit word folds like its two 16-bit halves).
    let addresses = src_le + dst_le;
    let ip_ok = match ip_verdict {
        Some(verdict) => verdict,
        None => {
            // The header's other three words: version to length,
            // identification to fragment offset, TTL to checksum.
            let rest = word32_le(h, at::VER_IHL) + word32_le(h, at::IDENT) + word32_le(h, at::TTL);
            checksum::sum_verifies(addresses + rest)
        }
    };
    let udp_ok = match udp_verdict {
        Some(verdict) => verdict,
        None => {
            word(h, at::UDP_CHECKSUM) == 0 || {
                // Protocol and length, big-endian values, times 256.
                let pseudo_le = addresses + ((u64::from(protocol::UDP) + udp_len as u64) << 8);
                checksum::span_verifies_le(data, at::UDP, udp_end, pseudo_le)
            }
        }
    };
    if !ip_ok || !udp_ok {
        return Fast::General(buf);
    }
    let src = SocketAddrV4::new(src_ip, word(h, at::SRC_PORT));
    let dst = SocketAddrV4::new(dst_ip, word(h, at::DST_PORT));
    let key = FlowKey {
        src,
        dst,
        device: link as u16,
        lcore: core.lcore.index,
    };
    let Some(socket) = core.shared.udp.lookup(&key) else {
        return Fast::General(buf);
    };
    // The counters themselves, not the `Arc`: its pointer is read once,
    // not again after each (atomic) store.
    let mut datagram = Datagram::new(buf, FAST_HEADERS..udp_end, false, link as u16);
    // No Ethernet padding after the datagram, and a packet the link
    // carries: the frame can be turned around.
    datagram.plain = udp_end == frame_len && total <= view.mtu;
    Fast::Deliver(socket, datagram)
}
