//! IPv4 headers (RFC 791).
//!
//! `check_len` validates everything the receive path needs before it reads a
//! field: version 4, a header length of at least 20 bytes that fits the
//! buffer, and a total length between the header length and the buffer
//! length (a longer buffer is Ethernet padding; the payload ends at the total
//! length). Options are skipped, never interpreted.

use super::checksum;
use super::{read_ipv4, read_u16, write_u16, WireError, WireResult};
use core::net::Ipv4Addr;

/// Field offsets in the IPv4 header (the fast paths index frames with them too).
pub mod field {
    #![allow(missing_docs)]
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const LENGTH: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
}

/// Length of a header without options.
pub const HEADER_LEN: usize = 20;

/// IP protocol numbers dpstack knows.
pub mod protocol {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// IGMP (RFC 3376).
    pub const IGMP: u8 = 2;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
}

const FLAG_DONT_FRAGMENT: u16 = 0x4000;
/// More fragments follow (in the flags and fragment offset word).
pub const FLAG_MORE_FRAGMENTS: u16 = 0x2000;
/// The fragment offset's bits (in the flags and fragment offset word).
pub const FRAGMENT_OFFSET_MASK: u16 = 0x1fff;

/// A view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Validates version and length fields against the buffer.
    pub fn check_len(&self) -> WireResult<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if self.version() != 4 {
            return Err(WireError::Malformed);
        }
        let header_len = self.header_len();
        let total_len = usize::from(self.total_len());
        if header_len < HEADER_LEN || total_len < header_len {
            return Err(WireError::Malformed);
        }
        if header_len > len || total_len > len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The version field.
    pub fn version(&self) -> u8 {
        self.bytes()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL x 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.bytes()[field::VER_IHL] & 0x0f) * 4
    }

    /// The DSCP/ECN byte.
    pub fn tos(&self) -> u8 {
        self.bytes()[field::TOS]
    }

    /// Total length (header and payload).
    pub fn total_len(&self) -> u16 {
        read_u16(self.bytes(), field::LENGTH)
    }

    /// The identification field.
    pub fn ident(&self) -> u16 {
        read_u16(self.bytes(), field::IDENT)
    }

    /// The don't-fragment flag.
    pub fn dont_fragment(&self) -> bool {
        read_u16(self.bytes(), field::FLAGS_FRAG) & FLAG_DONT_FRAGMENT != 0
    }

    /// The more-fragments flag.
    pub fn more_fragments(&self) -> bool {
        read_u16(self.bytes(), field::FLAGS_FRAG) & FLAG_MORE_FRAGMENTS != 0
    }

    /// Fragment offset in bytes.
    pub fn fragment_offset(&self) -> usize {
        usize::from(read_u16(self.bytes(), field::FLAGS_FRAG) & FRAGMENT_OFFSET_MASK) * 8
    }

    /// True if this is a fragment (more to come, or not the first).
    pub fn is_fragment(&self) -> bool {
        read_u16(self.bytes(), field::FLAGS_FRAG) & (FLAG_MORE_FRAGMENTS | FRAGMENT_OFFSET_MASK)
            != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.bytes()[field::TTL]
    }

    /// The protocol of the payload.
    pub fn protocol(&self) -> u8 {
        self.bytes()[field::PROTOCOL]
    }

    /// The header checksum field.
    pub fn checksum(&self) -> u16 {
        read_u16(self.bytes(), field::CHECKSUM)
    }

    /// Source address.
    pub fn src(&self) -> Ipv4Addr {
        read_ipv4(self.bytes(), field::SRC)
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv4Addr {
        read_ipv4(self.bytes(), field::DST)
    }

    /// True if the header checksum is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::accumulate(0, &self.bytes()[..self.header_len()])) == 0xffff
    }

    /// The header, options included.
    pub fn header(&self) -> &[u8] {
        &self.bytes()[..self.header_len()]
    }

    /// The payload: from the end of the header to the total length.
    pub fn payload(&self) -> &[u8] {
        &self.bytes()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    fn bytes_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Writes a 20-byte header (no options, checksum filled in) for a packet
    /// with `payload_len` bytes of payload. Always inlined: per datagram
    /// sent or forwarded, and small once its caller's constants fold in.
    #[inline(always)]
    pub fn emit_header(&mut self, header: &Ipv4Header) {
        // Built as five 32-bit words in registers, summed there (no bytes
        // stored and read back) and stored once (a single bounds check):
        // this runs for every datagram sent or forwarded.
        let total = (HEADER_LEN as u16).wrapping_add(header.payload_len);
        let flags = if header.dont_fragment {
            FLAG_DONT_FRAGMENT
        } else {
            0
        };
        // Each word as its bytes lie on the wire, read in native order:
        // the ones' complement sum does not depend on byte order, up to a
        // swap (RFC 1071 section 2(B)), so the checksum is summed and
        // stored in native order, and the addresses are not swapped at all.
        let [t0, t1] = total.to_be_bytes();
        let [i0, i1] = header.ident.to_be_bytes();
        let [f0, f1] = flags.to_be_bytes();
        let ver_tos_len = u32::from_ne_bytes([0x45, header.tos, t0, t1]);
        let ident_flags = u32::from_ne_bytes([i0, i1, f0, f1]);
        let ttl_proto = u32::from_ne_bytes([header.ttl, header.protocol, 0, 0]);
        let (src, dst) = (
            u32::from_ne_bytes(header.src.octets()),
            u32::from_ne_bytes(header.dst.octets()),
        );
        let sum = [ver_tos_len, ident_flags, ttl_proto, src, dst]
            .iter()
            .map(|&w| u64::from(w))
            .sum::<u64>();
        // Never zero: the first word holds 0x45.
        let [c0, c1] = checksum::complement_nonzero(sum).to_ne_bytes();
        let words = [
            ver_tos_len,
            ident_flags,
            ttl_proto | u32::from_ne_bytes([0, 0, c0, c1]),
            src,
            dst,
        ];
        let mut h = [0u8; HEADER_LEN];
        for (bytes, word) in h.chunks_exact_mut(4).zip(words) {
            bytes.copy_from_slice(&word.to_ne_bytes());
        }
        if let Some(b) = self.bytes_mut().first_chunk_mut::<HEADER_LEN>() {
            *b = h;
        }
    }

    /// Marks the packet as the fragment at `offset` bytes (a multiple of 8)
    /// with more to follow or not; clears don't-fragment. The checksum must be
    /// refilled after.
    pub fn set_fragment(&mut self, offset: usize, more: bool) {
        let field =
            (offset / 8) as u16 & FRAGMENT_OFFSET_MASK | if more { FLAG_MORE_FRAGMENTS } else { 0 };
        write_u16(self.bytes_mut(), field::FLAGS_FRAG, field);
    }

    /// Turns the header around for a reply, in place: swaps the addresses
    /// (which leaves the checksum as it is), sets the TTL and marks the
    /// datagram don't-fragment / unfragmented (RFC 6864 lets an atomic
    /// datagram keep any identification). The checksum is updated
    /// incrementally (RFC 1624), not recomputed.
    pub fn reverse_for_reply(&mut self, ttl: u8) {
        let b = self.bytes_mut();
        let mut check = read_u16(b, field::CHECKSUM);
        let old_flags = read_u16(b, field::FLAGS_FRAG);
        check = checksum::update(check, old_flags, FLAG_DONT_FRAGMENT);
        write_u16(b, field::FLAGS_FRAG, FLAG_DONT_FRAGMENT);
        let old_ttl_proto = read_u16(b, field::TTL);
        let new_ttl_proto = u16::from_be_bytes([ttl, b[field::PROTOCOL]]);
        check = checksum::update(check, old_ttl_proto, new_ttl_proto);
        b[field::TTL] = ttl;
        let (src, dst) = b[field::SRC..field::DST + 4].split_at_mut(4);
        src.swap_with_slice(dst);
        write_u16(b, field::CHECKSUM, check);
    }

    /// Sets the DSCP/ECN byte, updating the checksum incrementally (RFC
    /// 1624; exact when the checksum was correct before). Nothing to do,
    /// and nothing done, when the byte already holds `tos`.
    #[inline]
    pub fn set_tos(&mut self, tos: u8) {
        let b = self.bytes_mut();
        if b[field::TOS] == tos {
            return;
        }
        let old = read_u16(b, field::VER_IHL);
        b[field::TOS] = tos;
        let new = read_u16(b, field::VER_IHL);
        let check = checksum::update(read_u16(b, field::CHECKSUM), old, new);
        write_u16(b, field::CHECKSUM, check);
    }

    /// Sets the TTL (the checksum must be refilled after).
    pub fn set_ttl(&mut self, ttl: u8) {
        self.bytes_mut()[field::TTL] = ttl;
    }

    /// Recomputes the header checksum.
    #[inline]
    pub fn fill_checksum(&mut self) {
        write_u16(self.bytes_mut(), field::CHECKSUM, 0);
        // The common 20-byte header: five word loads, no loop.
        let sum = match self.bytes().first_chunk::<20>() {
            Some(h) if self.header_len() == 20 => !checksum::ipv4_header_sum(h),
            _ => checksum::checksum(&self.bytes()[..self.header_len()]),
        };
        write_u16(self.bytes_mut(), field::CHECKSUM, sum);
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let range = self.header_len()..usize::from(self.total_len());
        &mut self.bytes_mut()[range]
    }
}

/// What [`Ipv4Packet::emit_header`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Header {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Payload protocol.
    pub protocol: u8,
    /// Payload length in bytes.
    pub payload_len: u16,
    /// Time to live.
    pub ttl: u8,
    /// Identification.
    pub ident: u16,
    /// Set the don't-fragment flag.
    pub dont_fragment: bool,
    /// The DSCP/ECN byte (type of service): 0 unless a socket asked for
    /// one (0xb8: DSCP EF, 46, for media).
    pub tos: u8,
}

#[cfg(test)]
mod tests {
    use super::*;

    // 192.168.0.1 -> 192.168.0.199, UDP, 0x73 bytes, DF, TTL 64.
    const HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    fn packet_with_payload(len: usize) -> Vec<u8> {
        let mut p = HEADER.to_vec();
        p.resize(0x73, 0xab);
        p.resize(len, 0); // Ethernet padding beyond total length
        p
    }

    #[test]
    fn deconstruct() {
        let bytes = packet_with_payload(0x73 + 4);
        let p = Ipv4Packet::new_checked(&bytes[..]).expect("valid");
        assert_eq!((p.version(), p.header_len(), p.total_len()), (4, 20, 0x73));
        assert!(p.dont_fragment() && !p.more_fragments() && !p.is_fragment());
        assert_eq!((p.ttl(), p.protocol()), (64, protocol::UDP));
        assert_eq!(p.src(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(p.dst(), Ipv4Addr::new(192, 168, 0, 199));
        assert!(p.verify_checksum());
        assert_eq!(p.payload().len(), 0x73 - 20, "padding is not payload");
    }

    #[test]
    fn construct() {
        let mut bytes = [0u8; 20];
        Ipv4Packet::new_unchecked(&mut bytes[..]).emit_header(&Ipv4Header {
            src: Ipv4Addr::new(192, 168, 0, 1),
            dst: Ipv4Addr::new(192, 168, 0, 199),
            protocol: protocol::UDP,
            payload_len: 0x73 - 20,
            ttl: 64,
            ident: 0,
            dont_fragment: true,
            tos: 0,
        });
        assert_eq!(bytes, HEADER);
    }

    #[test]
    fn construct_with_tos() {
        let mut bytes = [0u8; 20];
        Ipv4Packet::new_unchecked(&mut bytes[..]).emit_header(&Ipv4Header {
            src: Ipv4Addr::new(192, 168, 0, 1),
            dst: Ipv4Addr::new(192, 168, 0, 199),
            protocol: protocol::UDP,
            payload_len: 0x73 - 20,
            ttl: 64,
            ident: 0,
            dont_fragment: true,
            tos: 0xb8,
        });
        // Only the TOS byte and the checksum differ from HEADER:
        // 0xb861 - 0x00b8 = 0xb7a9.
        let mut expected = HEADER;
        expected[1] = 0xb8;
        expected[10..12].copy_from_slice(&[0xb7, 0xa9]);
        assert_eq!(bytes, expected);
        let p = Ipv4Packet::new_unchecked(&bytes[..]);
        assert_eq!(p.tos(), 0xb8);
        assert!(p.verify_checksum());
    }

    #[test]
    fn set_tos_updates_the_checksum_incrementally() {
        for (from, to) in [(0x00, 0xb8), (0xb8, 0x00), (0xff, 0x01), (0x2e, 0x2e)] {
            let mut bytes = packet_with_payload(0x73);
            bytes[1] = from;
            Ipv4Packet::new_unchecked(&mut bytes[..]).fill_checksum();
            Ipv4Packet::new_unchecked(&mut bytes[..]).set_tos(to);
            let p = Ipv4Packet::new_checked(&bytes[..]).expect("valid");
            assert_eq!(p.tos(), to);
            assert!(p.verify_checksum(), "{from:#x} -> {to:#x}");
        }
    }

    #[test]
    fn bad_lengths_and_versions_are_rejected() {
        let ok = packet_with_payload(0x73);
        assert_eq!(
            Ipv4Packet::new_checked(&ok[..19]).err(),
            Some(WireError::Truncated)
        );
        assert_eq!(
            Ipv4Packet::new_checked(&ok[..0x72]).err(),
            Some(WireError::Truncated)
        );
        let mut v6 = ok.clone();
        v6[0] = 0x65;
        assert_eq!(
            Ipv4Packet::new_checked(&v6[..]).err(),
            Some(WireError::Malformed)
        );
        let mut short_ihl = ok.clone();
        short_ihl[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&short_ihl[..]).err(),
            Some(WireError::Malformed)
        );
        let mut long_ihl = ok.clone();
        long_ihl[0] = 0x4f; // a 60-byte header
        long_ihl[3] = 0x30; // but a total length of 48
        assert_eq!(
            Ipv4Packet::new_checked(&long_ihl[..]).err(),
            Some(WireError::Malformed)
        );
        let mut bad_sum = ok;
        bad_sum[10] ^= 1;
        assert!(!Ipv4Packet::new_checked(&bad_sum[..])
            .expect("lengths ok")
            .verify_checksum());
    }

    #[test]
    fn options_are_skipped() {
        let mut bytes = vec![0x46, 0, 0, 28];
        bytes.extend_from_slice(&HEADER[4..]);
        bytes.extend_from_slice(&[1, 1, 1, 0]); // NOP NOP NOP EOL
        bytes.extend_from_slice(&[9, 9, 9, 9]);
        let mut p = Ipv4Packet::new_unchecked(&mut bytes[..]);
        p.fill_checksum();
        let p = Ipv4Packet::new_checked(&bytes[..]).expect("valid");
        assert_eq!(p.header_len(), 24);
        assert!(p.verify_checksum());
        assert_eq!(p.payload(), &[9, 9, 9, 9]);
    }

    #[test]
    fn set_fragment_round_trips() {
        let mut bytes = packet_with_payload(0x73);
        let mut p = Ipv4Packet::new_unchecked(&mut bytes[..]);
        p.set_fragment(1480, true);
        p.fill_checksum();
        let p = Ipv4Packet::new_checked(&bytes[..]).expect("valid");
        assert_eq!(
            (p.fragment_offset(), p.more_fragments(), p.dont_fragment()),
            (1480, true, false)
        );
        assert!(p.verify_checksum());
    }

    #[test]
    fn reverse_for_reply_keeps_a_valid_checksum() {
        let mut bytes = packet_with_payload(0x73);
        bytes[8] = 3; // a TTL routers have decremented
        Ipv4Packet::new_unchecked(&mut bytes[..]).fill_checksum();
        Ipv4Packet::new_unchecked(&mut bytes[..]).reverse_for_reply(64);
        let p = Ipv4Packet::new_checked(&bytes[..]).expect("valid");
        assert!(p.verify_checksum());
        assert_eq!(
            (p.src(), p.dst(), p.ttl()),
            (
                Ipv4Addr::new(192, 168, 0, 199),
                Ipv4Addr::new(192, 168, 0, 1),
                64
            )
        );
        assert!(p.dont_fragment() && !p.is_fragment());
    }

    #[test]
    fn fragment_fields() {
        let mut bytes = packet_with_payload(0x73);
        bytes[6] = 0x20; // MF
        bytes[7] = 0x03; // offset 3 * 8
        let p = Ipv4Packet::new_checked(&bytes[..]).expect("valid");
        assert!(p.more_fragments() && p.is_fragment() && !p.dont_fragment());
        assert_eq!(p.fragment_offset(), 24);
    }
}
