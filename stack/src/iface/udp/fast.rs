//! What the two hand-tuned fast paths (`fast4`, `fast6`) share: their
//! outcome ([`Fast`]) and the validation predicates both apply to the
//! fixed header array they read a frame from.
//!
//! A fast path takes only the common frame, a unicast UDP datagram to one
//! of our addresses right after a fixed IP header, and validates exactly
//! what the general path validates. It never drops: any frame it does not
//! fully accept goes to the general path
//! ([`super::super::poll::Poll::receive_frame`]), which counts the reason,
//! so drop accounting lives in one place. Per packet; owning lcore.

use crate::port::{Buf, MacAddr};
use crate::udp::{Datagram, SocketId};
use crate::wire::ethernet::field as eth;
use crate::wire::udp::HEADER_LEN as UDP_LEN;

/// The outcome of a fast path.
pub(crate) enum Fast<B: Buf> {
    /// Validated and matched: deliver to this socket.
    Deliver(SocketId, Datagram<B>),
    /// Not the common case, or something to count: use the general path.
    General(B),
    /// Not plain UDP over IPv4 (any other frame): perhaps plain UDP over
    /// IPv6 (`fast6::try_udp6`). A separate outcome, so that each fast
    /// path hands its datagram over on its own (a shared hand-over made
    /// the compiler pass the IPv4 datagram through memory).
    NotUdp4(B),
}

/// The big-endian 16-bit word at `at` of a header array.
#[inline(always)]
pub(super) fn word<const N: usize>(h: &[u8; N], at: usize) -> u16 {
    u16::from_be_bytes([h[at], h[at + 1]])
}

/// The Ethernet addresses are ones a fast path takes: to our MAC, from a
/// unicast MAC (the group bit clear: the reply goes back to it); the
/// caller checks the EtherType. Our MAC is compared as a 4- and a 2-byte
/// word, each straight against the frame (not both assembled into 48-bit
/// values first).
#[inline(always)]
pub(super) fn ethernet_to_us<const N: usize>(h: &[u8; N], our_mac: MacAddr) -> bool {
    let [m0, m1, m2, m3, m4, m5] = our_mac.0;
    h[eth::DST.start..eth::DST.start + 4] == [m0, m1, m2, m3]
        && h[eth::DST.start + 4..eth::DST.end] == [m4, m5]
        && h[eth::SRC.start] & 1 == 0
}

/// The UDP header is one a fast path takes: its length field holds at
/// least the header, and its source port is not 0 (port 0 cannot be
/// answered: the general path drops it, counted).
#[inline(always)]
pub(super) fn udp_answerable(udp_len: usize, src_port: u16) -> bool {
    udp_len >= UDP_LEN && src_port != 0
}
