//! The IPv4 fast path ([`try_udp`]): a unicast UDP datagram to us in a
//! plain IPv4 header (no options, not a fragment).
//!
//! It reads the 42 header bytes once, at the named offsets of `v4::at`
//! into one array (one bounds check), validates exactly what the general
//! path validates, and looks the socket up; see [`super::fast`] for what
//! it shares with the IPv6 one. Per packet; owning lcore.

use super::super::state::{Core, LOCAL};
use super::fast::{ethernet_to_us, udp_answerable, word, Fast};
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
/// options), as the frame's bytes 12-14 read little-endian ([`word32_le`]
/// at the EtherType; the TOS byte after them is masked off).
const IPV4_NO_OPTIONS: u64 = u32::from_le_bytes([0x08, 0x00, 0x45, 0]) as u64;
const IPV4_NO_OPTIONS_MASK: u64 = u32::from_le_bytes([0xff, 0xff, 0xff, 0]) as u64;
/// Flags and fragment offset, TTL and protocol read as one little-endian
/// word: more-fragments clear, offset 0 (the don't-fragment bit and the
/// TTL are masked off), UDP.
const UDP_NOT_FRAGMENT: u64 = u32::from_le_bytes([0, 0, 0, protocol::UDP]) as u64;
const UDP_NOT_FRAGMENT_MASK: u64 = u32::from_le_bytes([
    ((FLAG_MORE_FRAGMENTS | FRAGMENT_OFFSET_MASK) >> 8) as u8,
    (FLAG_MORE_FRAGMENTS | FRAGMENT_OFFSET_MASK) as u8,
    0,
    0xff,
]) as u64;

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
pub(crate) fn try_udp<B: Buf>(core: &Core<B>, link: usize, buf: B) -> Fast<B> {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return Fast::General(buf);
    };
    let data = buf.data();
    let Some(h) = data.first_chunk::<FAST_HEADERS>() else {
        return Fast::General(buf);
    };
    // Ethernet: see `ethernet_to_us`. IPv4: version 4, IHL 5, UDP, TTL >
    // 0, not a fragment (MF clear, offset 0), total length within the
    // frame.
    // Each test reads a whole 32-bit word of the header where it can.
    let frame_len = data.len();
    let total = usize::from(word(h, at::LENGTH));
    let plain = ethernet_to_us(h, our_mac)
        && word32_le(h, at::ETHERTYPE) & IPV4_NO_OPTIONS_MASK == IPV4_NO_OPTIONS
        && word32_le(h, at::FLAGS_FRAG) & UDP_NOT_FRAGMENT_MASK == UDP_NOT_FRAGMENT
        && h[at::TTL] != 0
        && total >= IP_LEN + UDP_LEN
        && ETH_LEN + total <= frame_len;
    if !plain {
        return Fast::NotUdp4(buf);
    }
    let (src_ip, dst_ip) = (addr(h, at::SRC), addr(h, at::DST));
    // Most datagrams go to the first local address: asked before the
    // address classes' filter.
    let first_local = core.shared.special.first() == Some(&(dst_ip.to_bits(), LOCAL));
    if !first_local && core.class(dst_ip.to_bits()) != LOCAL || core.is_martian(src_ip) {
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
    let addresses = word32_le(h, at::SRC) + word32_le(h, at::DST);
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
    // No Ethernet padding after the datagram: the frame can be turned around.
    datagram.plain = udp_end == frame_len;
    Fast::Deliver(socket, datagram)
}
