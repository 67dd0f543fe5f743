//! What the two hand-tuned fast paths (`fast4`, `fast6`) share: their
//! outcome ([`Fast`]), what they read of the link once per burst
//! ([`BurstView`]) and the validation predicates both apply to the fixed
//! header array they read a frame from.
//!
//! A fast path takes only the common frame, a unicast UDP datagram to one
//! of our addresses right after a fixed IP header, and validates exactly
//! what the general path validates. It never drops: any frame it does not
//! fully accept goes to the general path
//! ([`super::super::poll::Poll::receive_frame`]), which counts the reason,
//! so drop accounting lives in one place. Per packet; owning lcore.

use super::super::state::{Core, LOCAL};
use crate::port::Buf;
use crate::udp::{Datagram, SocketId};
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

/// What the fast paths read of the arriving link and the address
/// classes, once per burst: the shared state is a snapshot that holds for
/// the whole poll, and reading it per frame cost loads the compiler could
/// not hoist past the batch's stores.
#[derive(Clone, Copy)]
pub(crate) struct BurstView {
    /// Our MAC as the frame's first eight bytes read little-endian (the
    /// destination, then the source's first two bytes) hold it, zero above.
    mac_le: u64,
    /// The first local IPv4 address (the one most datagrams go to) as the
    /// frame's four bytes read little-endian, if the address classes start
    /// with a local one; otherwise a value no 32-bit word equals.
    first_local_le: u64,
    /// The link's MTU: a plain IPv4 datagram's packet fits it, so that its
    /// reply does (`Datagram::plain`).
    pub(super) mtu: usize,
    /// The link's first IPv6 address outside fe80::/10, as the frame's two
    /// 8-byte halves read little-endian hold it: most IPv6 datagrams go to
    /// it, and it is compared before the link's list is searched.
    first_global6: Option<[u64; 2]>,
}

/// The bits [`ethernet_mismatch`] compares: the destination and the group
/// bit of the source's first byte.
const TO_US_MASK: u64 = 0x0001_ffff_ffff_ffff;

impl BurstView {
    /// The view of `link` (none for a link the snapshot does not know: its
    /// frames take the general path, which counts them).
    #[inline(always)]
    pub(crate) fn of<B: Buf>(core: &Core<B>, link: usize) -> Option<BurstView> {
        let here = core.shared.links.get(link)?;
        let [m0, m1, m2, m3, m4, m5] = here.mac.0;
        let first_local_le = match core.shared.special.first() {
            Some(&(address, LOCAL)) => u64::from(u32::from_le_bytes(address.to_be_bytes())),
            _ => u64::MAX,
        };
        Some(BurstView {
            mac_le: u64::from_le_bytes([m0, m1, m2, m3, m4, m5, 0, 0]),
            first_local_le,
            mtu: here.mtu,
            first_global6: here
                .addresses6
                .iter()
                .find(|a| a.addr.segments()[0] & 0xffc0 != 0xfe80)
                .map(|a| {
                    let octets = a.addr.octets();
                    [0, 8].map(|at| word64_le(&octets, at))
                }),
        })
    }

    /// The IPv6 destination address, read as two little-endian halves, is
    /// the link's first global one.
    #[inline(always)]
    pub(super) fn is_first_global6(&self, dst_halves: [u64; 2]) -> bool {
        self.first_global6 == Some(dst_halves)
    }

    /// The destination address, read as [`BurstView::first_local_le`]
    /// holds it, is the first local one.
    #[inline(always)]
    pub(super) fn is_first_local(&self, dst_le: u32) -> bool {
        u64::from(dst_le) == self.first_local_le
    }
}

/// The little-endian 64-bit word at `at` of a header array.
#[inline(always)]
pub(super) fn word64_le<const N: usize>(h: &[u8; N], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&h[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// The bits of the frame's first eight bytes that tell whether the
/// Ethernet addresses are ones a fast path takes, zero if they are: to
/// our MAC, from a unicast MAC (the group bit clear: the reply goes back
/// to it). One word, so that a caller can OR it with its other header
/// tests and branch once; the caller checks the EtherType.
#[inline(always)]
pub(super) fn ethernet_mismatch<const N: usize>(h: &[u8; N], view: &BurstView) -> u64 {
    (word64_le(h, 0) ^ view.mac_le) & TO_US_MASK
}

/// The UDP header is one a fast path takes: its length field holds at
/// least the header, and its source port is not 0 (the general path
/// delivers that one not `plain`, so a reply, which cannot go to port 0,
/// is refused there and the plain turn-around never sees it).
#[inline(always)]
pub(super) fn udp_answerable(udp_len: usize, src_port: u16) -> bool {
    udp_len >= UDP_LEN && src_port != 0
}
