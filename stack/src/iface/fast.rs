//! The fast path for the common frame: a unicast UDP datagram to us in a
//! plain IPv4 header (no options, not a fragment).
//!
//! It reads the 42 header bytes once, as fixed offsets into one array (one
//! bounds check), validates exactly what the general path validates, and
//! looks the socket up. It never drops: any frame it does not fully accept
//! goes to the general path ([`super::ethernet::receive_frame`]), which counts the
//! reason, so drop accounting lives in one place. Per packet; owning lcore.

use super::Core;
use crate::counters::{Counters, Stat};
use crate::port::Buf;
use crate::udp::table::FlowKey;
use crate::udp::{Datagram, SocketId};
use crate::wire::checksum;
use core::net::{Ipv4Addr, SocketAddrV4};

/// Ethernet (14) + IPv4 without options (20) + UDP (8).
const HEADERS: usize = 42;

/// The outcome of [`try_udp`].
pub(super) enum Fast<B: Buf> {
    /// Validated and matched: deliver to this socket.
    Deliver(SocketId, Datagram<B>),
    /// Not the common case, or something to count: use the general path.
    General(B),
    /// Not plain UDP over IPv4 (any other frame): perhaps plain UDP over IPv6
    /// ([`super::fast6::try_udp6`]). A separate outcome, so that each fast
    /// path hands its datagram over on its own (a shared hand-over made the
    /// compiler pass the IPv4 datagram through memory).
    NotUdp4(B),
}

#[inline]
fn word(h: &[u8; HEADERS], at: usize) -> u16 {
    u16::from_be_bytes([h[at], h[at + 1]])
}

/// A 32-bit word read little-endian, for checksums: the ones' complement
/// sum of such words is the big-endian one times 256 modulo 0xffff (a byte
/// swap of a 16-bit word), which verifies exactly when the big-endian sum
/// does, without a byte swap per word (see [`checksum::span_verifies_le`]).
#[inline]
fn word32_le(h: &[u8; HEADERS], at: usize) -> u64 {
    u64::from(u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]))
}

#[inline]
fn addr(h: &[u8; HEADERS], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(h[at], h[at + 1], h[at + 2], h[at + 3])
}

/// Tries the fast path on one frame. Inlined into its one caller: its
/// result (a whole datagram) then stays in registers instead of going
/// through memory, where rereading it at other widths than it was
/// written stalled on store forwarding (~3% of a relayed packet).
#[inline(always)]
pub(super) fn try_udp<B: Buf>(core: &Core<B>, link: usize, buf: B) -> Fast<B> {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return Fast::General(buf);
    };
    let data = buf.data();
    let Some(h) = data.first_chunk::<HEADERS>() else {
        return Fast::General(buf);
    };
    // Ethernet: to our MAC, from a unicast MAC (the group bit clear: the
    // reply goes back to it), IPv4. IPv4: version 4, IHL 5, UDP, TTL > 0,
    // not a fragment (MF clear, offset 0), total length within the frame.
    let frame_len = data.len();
    let total = usize::from(word(h, 16));
    // Our MAC as a 4- and a 2-byte compare, each straight against the
    // frame (not both assembled into 48-bit values first).
    let [m0, m1, m2, m3, m4, m5] = our_mac.0;
    let plain = h[..4] == [m0, m1, m2, m3]
        && h[4..6] == [m4, m5]
        && h[6] & 1 == 0
        && h[12..14] == [0x08, 0x00]
        && h[14] == 0x45
        && h[23] == crate::wire::ipv4::protocol::UDP
        && h[22] != 0
        && word(h, 20) & 0x3fff == 0
        && total >= 28
        && 14 + total <= frame_len;
    if !plain {
        return Fast::NotUdp4(buf);
    }
    let (src_ip, dst_ip) = (addr(h, 26), addr(h, 30));
    if core.class(dst_ip.to_bits()) != super::LOCAL || is_martian(core, src_ip) {
        return Fast::General(buf);
    }
    // Source port 0 (nothing can answer it) is the general path's to drop.
    let udp_len = usize::from(word(h, 38));
    if udp_len < 8 || 34 + udp_len > 14 + total || word(h, 34) == 0 {
        return Fast::General(buf);
    }
    let offload = buf.rx_offload();
    let policy = core.shared.config.checksum;
    // Both checksums are verified on little-endian sums ([`word32_le`]).
    // The addresses are summed once, for the header and the pseudo-header
    // (each 32-bit word folds like its two 16-bit halves).
    let addresses = word32_le(h, 26) + word32_le(h, 30);
    let ip_ok = match policy.device_verdict(offload.ip_checksum) {
        Some(verdict) => verdict,
        None => {
            let sum = addresses + word32_le(h, 14) + word32_le(h, 18) + word32_le(h, 22);
            checksum::sum_verifies(sum)
        }
    };
    let udp_ok = match policy.device_verdict(offload.l4_checksum) {
        Some(verdict) => verdict,
        None => {
            word(h, 40) == 0 || {
                // Protocol and length, big-endian values, times 256.
                let pseudo_le = addresses + ((17 + udp_len as u64) << 8);
                checksum::span_verifies_le(data, 34, 34 + udp_len, pseudo_le)
            }
        }
    };
    if !ip_ok || !udp_ok {
        return Fast::General(buf);
    }
    let src = SocketAddrV4::new(src_ip, word(h, 34));
    let dst = SocketAddrV4::new(dst_ip, word(h, 36));
    let key = FlowKey {
        src,
        dst,
        device: link as u16,
    };
    let Some(socket) = core.shared.udp.lookup(&key) else {
        return Fast::General(buf);
    };
    // The counters themselves, not the `Arc`: its pointer is read once,
    // not again after each (atomic) store.
    let counters: &Counters = &core.lcore.counters;
    counters.count(Stat::EthInFrames);
    counters.count(Stat::IpInReceives);
    counters.count(Stat::IpInDelivers);
    counters.count(Stat::UdpInDatagrams);
    let mut datagram = Datagram::new(buf, HEADERS..34 + udp_len, false, link as u16);
    // No Ethernet padding after the datagram: the frame can be turned around.
    datagram.plain = 34 + udp_len == frame_len;
    Fast::Deliver(socket, datagram)
}

/// A source no packet may come from (the general path's rule).
#[inline]
pub(super) fn is_martian<B: Buf>(core: &Core<B>, src: Ipv4Addr) -> bool {
    let bits = src.to_bits();
    // Multicast (224/4), loopback (127/8), unspecified, ours or a broadcast.
    bits >> 28 == 0xe || bits >> 24 == 127 || bits == 0 || core.class(bits) != 0
}
