//! The IPv4 forward's header template: what a forward from one socket to
//! one destination writes on every frame, prepared once
//! ([`ForwardTemplate`], kept per socket in the lcore's
//! [`RouteMemo`](crate::udp::RouteMemo)) and then stamped on each plain
//! frame with one 42-byte copy ([`readdress`]) and the five per-packet
//! fields: both lengths, the identification ([`finish`]) and both
//! checksums, each from a precomputed partial sum. The UDP checksum is
//! the received one updated for the new addresses and ports (RFC 1624):
//! the payload and the UDP length are unchanged, so nothing of the
//! payload is summed.
//!
//! Invariants: a template is used only under the generation it was made
//! under ([`build`] stamps it), which moves on with any change of routes,
//! neighbours, links or sockets (a socket's TOS comes with its bind), so a
//! change is seen on the next packet; only for its own destination; only
//! on a plain frame (checksums verified, no IPv4 options, no padding) that
//! fits the link's MTU with DF set; anything else goes the general way.
//! The headers it writes are the ones the general way writes (a test
//! compares them byte for byte, identification and checksum aside).

use super::super::config::hop_limit_to4;
use super::v4::{at, FAST_HEADERS};
use crate::port::MacAddr;
use crate::udp::table::{CachedSend, ForwardTemplate};
use crate::udp::RouteMemo;
use crate::udp::SocketId;
use crate::wire::checksum;
use crate::wire::ethernet::{EtherType, HEADER_LEN as ETH_LEN};
use crate::wire::ipv4::{protocol, HEADER_LEN as IP_LEN};
use core::net::SocketAddrV4;

/// A 32-bit word of `h` at `at`, in memory order (the ones' complement sum
/// does not depend on byte order, RFC 1071 2(B), so no swap is needed).
#[inline(always)]
fn word(h: &[u8; FAST_HEADERS], at: usize) -> u64 {
    u64::from(u32::from_ne_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]))
}

/// A 16-bit word of `h` at `at`, in memory order.
#[inline(always)]
fn half(h: &[u8; FAST_HEADERS], at: usize) -> u64 {
    u64::from(u16::from_ne_bytes([h[at], h[at + 1]]))
}

/// The template for forwards from the socket `send` describes (its
/// address, or its route's source for a socket bound to ANY; its port and
/// TOS byte; its route) to `dst`, on a link of MAC `ours` and MTU `mtu`,
/// stamped with `generation`. Once per destination and generation.
pub(super) fn build(
    send: &CachedSend,
    dst: SocketAddrV4,
    ours: MacAddr,
    mtu: usize,
    generation: u64,
) -> ForwardTemplate {
    let route = send.route;
    let src_ip = if send.local4.is_unspecified() {
        route.source
    } else {
        send.local4
    };
    let mut h = [0u8; FAST_HEADERS];
    h[at::ETH_DST].copy_from_slice(&route.mac.0);
    h[at::ETH_SRC].copy_from_slice(&ours.0);
    h[at::ETHERTYPE..at::ETHERTYPE + 2].copy_from_slice(&u16::from(EtherType::Ipv4).to_be_bytes());
    h[at::VER_IHL] = 0x45;
    h[at::TOS] = send.tos;
    h[at::FLAGS_FRAG] = 0x40; // DF, offset 0: only frames that fit use it
    h[at::TTL] = hop_limit_to4(*dst.ip());
    h[at::PROTOCOL] = protocol::UDP;
    h[at::SRC..at::SRC + 4].copy_from_slice(&src_ip.octets());
    h[at::DST..at::DST + 4].copy_from_slice(&dst.ip().octets());
    h[at::SRC_PORT..at::SRC_PORT + 2].copy_from_slice(&send.port.to_be_bytes());
    h[at::DST_PORT..at::DST_PORT + 2].copy_from_slice(&dst.port().to_be_bytes());
    // The IPv4 words each packet leaves alone (length, identification and
    // checksum are zero here, so they add nothing).
    let ip_sum = (at::VER_IHL..at::UDP)
        .step_by(2)
        .map(|i| half(&h, i))
        .sum::<u64>();
    let udp_sum = word(&h, at::SRC) + word(&h, at::DST) + word(&h, at::SRC_PORT);
    // Link MTUs are at most 65,535 (the configuration refuses more).
    let max_udp_len = mtu.min(usize::from(u16::MAX)).saturating_sub(IP_LEN) as u16;
    ForwardTemplate {
        header: h,
        max_udp_len,
        link: route.link,
        ip_sum: checksum::fold_small(ip_sum),
        udp_sum: u32::from(checksum::fold_small(udp_sum)),
        generation,
    }
}

/// What [`readdress`] leaves to [`finish`]: the link the frame leaves
/// through and the IPv4 header's sum without its identification.
#[derive(Clone, Copy)]
pub(super) struct Stamped {
    pub(super) link: u16,
    ip_sum: u32,
}

/// Stamps the template socket `from` keeps in `memo` on the plain frame
/// `h` for `dst`, if the template holds (made under `generation`, for
/// `dst`) and the frame fits its link's MTU: the headers copied whole, both
/// lengths set and the UDP checksum updated from the received one (a zero
/// one, none, stays zero). `None` (the frame untouched) otherwise. The
/// caller then writes the identification with [`finish`]. Per packet.
#[inline(always)]
pub(super) fn readdress(
    memo: &RouteMemo,
    h: &mut [u8; FAST_HEADERS],
    frame_len: usize,
    from: SocketId,
    dst: SocketAddrV4,
    generation: u64,
) -> Option<Stamped> {
    let t = memo.template(from, generation)?;
    let to_ip = [
        t.header[at::DST],
        t.header[at::DST + 1],
        t.header[at::DST + 2],
        t.header[at::DST + 3],
    ];
    let to_port = u16::from_be_bytes([t.header[at::DST_PORT], t.header[at::DST_PORT + 1]]);
    if to_ip != dst.ip().octets() || to_port != dst.port() {
        return None;
    }
    // A plain frame holds its 42 bytes of headers.
    let udp_len = frame_len.wrapping_sub(ETH_LEN + IP_LEN);
    if udp_len > usize::from(t.max_udp_len) {
        return None;
    }
    let old = word(h, at::SRC) + word(h, at::DST) + word(h, at::SRC_PORT);
    let check = half(h, at::UDP_CHECKSUM);
    *h = t.header;
    // At most `max_udp_len`: IP's length still fits 16 bits.
    let udp_len = udp_len as u16;
    let ip_len = (udp_len + IP_LEN as u16).to_be_bytes();
    h[at::UDP_LENGTH..at::UDP_LENGTH + 2].copy_from_slice(&udp_len.to_be_bytes());
    h[at::LENGTH..at::LENGTH + 2].copy_from_slice(&ip_len);
    if check != 0 {
        // Subtracting a 32-bit word in ones' complement adds its
        // complement, 0xffff_ffff - w, which folds like the complements
        // of its halves (and the old checksum's complement is
        // 0xffff - check): the complements' constants once, then each
        // old word subtracted.
        const COMPLEMENTS: u64 = 0xffff + 3 * 0xffff_ffff;
        let sum = COMPLEMENTS + u64::from(t.udp_sum) - check - old;
        let check = checksum::udp_complement(sum);
        h[at::UDP_CHECKSUM..at::UDP_CHECKSUM + 2].copy_from_slice(&check.to_ne_bytes());
    }
    Some(Stamped {
        link: t.link,
        ip_sum: u32::from(t.ip_sum) + u32::from(u16::from_ne_bytes(ip_len)),
    })
}

/// Writes the IPv4 identification `ident` and the header checksum into a
/// frame [`readdress`] stamped. Per packet.
#[inline(always)]
pub(super) fn finish(h: &mut [u8; FAST_HEADERS], stamped: Stamped, ident: u16) {
    let ident = ident.to_be_bytes();
    h[at::IDENT..at::IDENT + 2].copy_from_slice(&ident);
    let sum = u64::from(stamped.ip_sum) + u64::from(u16::from_ne_bytes(ident));
    let check = checksum::complement_nonzero(sum);
    h[at::CHECKSUM..at::CHECKSUM + 2].copy_from_slice(&check.to_ne_bytes());
}
