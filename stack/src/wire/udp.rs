//! UDP headers (RFC 768).

use super::checksum;
use super::{read_u16, write_u16, WireError, WireResult};
use core::net::Ipv4Addr;

/// Field offsets in the UDP header (the fast paths index frames with them too).
pub mod field {
    #![allow(missing_docs)]
    pub const SRC_PORT: usize = 0;
    pub const DST_PORT: usize = 2;
    pub const LENGTH: usize = 4;
    pub const CHECKSUM: usize = 6;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// A view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Fails unless the length field is at least 8 and fits the buffer.
    pub fn check_len(&self) -> WireResult<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let field_len = usize::from(self.len());
        if field_len < HEADER_LEN {
            return Err(WireError::Malformed);
        }
        if field_len > len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// The length field (header and payload).
    pub fn len(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::LENGTH)
    }

    /// True if the length field says there is no payload.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) == HEADER_LEN
    }

    /// The checksum field (0: none was sent).
    pub fn checksum(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The payload, up to the length field.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }

    /// True if the checksum is correct over the datagram and `pseudo`, the
    /// sum of its pseudo-header (`checksum::pseudo_header_v4` or
    /// `ipv6::pseudo_header`), as [`TcpPacket`]'s. A zero field (no
    /// checksum sent) is the caller's to judge: allowed over IPv4, not over
    /// IPv6.
    ///
    /// [`TcpPacket`]: super::tcp::TcpPacket
    pub fn verify_checksum(&self, pseudo: u64) -> bool {
        let len = usize::from(self.len());
        checksum::fold(checksum::accumulate(pseudo, &self.buffer.as_ref()[..len])) == 0xffff
    }
}

/// For tests: whether `udp`, sent from `src` to `dst` over IPv4, carries a
/// correct checksum (a zero field counts as none, as RFC 768 allows).
#[cfg(test)]
pub(crate) fn checksum_holds_v4<T: AsRef<[u8]>>(
    udp: &UdpPacket<T>,
    src: Ipv4Addr,
    dst: Ipv4Addr,
) -> bool {
    let pseudo = checksum::pseudo_header_v4(src, dst, super::ipv4::protocol::UDP, udp.len());
    udp.checksum() == 0 || udp.verify_checksum(pseudo)
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Writes the header for `payload_len` bytes of payload sent over IPv4
    /// from `src` to `dst` and fills the checksum over the payload already
    /// in place ([`UdpPacket::emit`] with the IPv4 pseudo-header).
    pub fn emit_header(&mut self, src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16), payload_len: u16) {
        let len = HEADER_LEN as u16 + payload_len;
        let pseudo = checksum::pseudo_header_v4(src.0, dst.0, super::ipv4::protocol::UDP, len);
        self.emit((src.1, dst.1), payload_len, pseudo);
    }

    /// Writes the header for `payload_len` bytes of payload from port
    /// `src_port` to `dst_port` and fills the checksum over the payload
    /// already in place and `pseudo`, the sum of the pseudo-header of
    /// either family (`checksum::pseudo_header_v4` or
    /// `ipv6::pseudo_header`), as [`UdpPacket::verify_checksum`] takes it.
    /// A computed zero is sent as all ones: zero means "no checksum" (and
    /// is refused over IPv6).
    pub fn emit(&mut self, (src_port, dst_port): (u16, u16), payload_len: u16, pseudo: u64) {
        let len = HEADER_LEN as u16 + payload_len;
        let b = self.buffer.as_mut();
        write_u16(b, field::SRC_PORT, src_port);
        write_u16(b, field::DST_PORT, dst_port);
        write_u16(b, field::LENGTH, len);
        write_u16(b, field::CHECKSUM, 0);
        let sum = checksum::accumulate(pseudo, &self.buffer.as_ref()[..usize::from(len)]);
        let value = match !checksum::fold(sum) {
            0 => 0xffff,
            v => v,
        };
        write_u16(self.buffer.as_mut(), field::CHECKSUM, value);
    }

    /// The payload, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 168, 1, 2);
    // 1234 -> 5678, "hi!"; checksum 0xd81a computed independently (Python).
    const DATAGRAM: [u8; 11] = [
        0x04, 0xd2, 0x16, 0x2e, 0x00, 0x0b, 0xd8, 0x1a, b'h', b'i', b'!',
    ];

    #[test]
    fn deconstruct() {
        let p = UdpPacket::new_checked(&DATAGRAM[..]).expect("valid");
        assert_eq!((p.src_port(), p.dst_port(), p.len()), (1234, 5678, 11));
        assert_eq!(p.payload(), b"hi!");
        assert!(p.verify_checksum(pseudo(SRC, DST)));
        assert!(!p.verify_checksum(pseudo(SRC, Ipv4Addr::new(192, 168, 1, 3))));
    }

    #[test]
    fn construct() {
        let mut bytes = [0u8; 11];
        bytes[8..].copy_from_slice(b"hi!");
        UdpPacket::new_unchecked(&mut bytes[..]).emit_header((SRC, 1234), (DST, 5678), 3);
        assert_eq!(bytes, DATAGRAM);
    }

    /// The pseudo-header sum of [`DATAGRAM`] from `src` to `dst`.
    fn pseudo(src: Ipv4Addr, dst: Ipv4Addr) -> u64 {
        checksum::pseudo_header_v4(src, dst, crate::wire::ipv4::protocol::UDP, 11)
    }

    #[test]
    fn emit_fills_the_checksum_for_either_family_s_pseudo_header() {
        let (src, dst) = (
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        );
        let over_six = crate::wire::ipv6::pseudo_header(src, dst, 17, 11);
        let mut bytes = [0u8; 11];
        bytes[8..].copy_from_slice(b"hi!");
        UdpPacket::new_unchecked(&mut bytes[..]).emit((1234, 5678), 3, over_six);
        let p = UdpPacket::new_checked(&bytes[..]).expect("valid");
        assert_eq!((p.src_port(), p.dst_port(), p.len()), (1234, 5678, 11));
        assert!(p.verify_checksum(over_six));
        assert!(!p.verify_checksum(pseudo(SRC, DST)));
    }

    #[test]
    fn a_zero_field_is_the_callers_to_judge() {
        // Zero means "no checksum" over IPv4 and is refused over IPv6: the
        // parser reports it and does not verify it away.
        let mut bytes = DATAGRAM;
        bytes[6] = 0;
        bytes[7] = 0;
        let p = UdpPacket::new_checked(&bytes[..]).expect("valid");
        assert_eq!(p.checksum(), 0);
        assert!(!p.verify_checksum(pseudo(SRC, DST)));
    }

    #[test]
    fn bad_lengths_are_rejected() {
        assert_eq!(
            UdpPacket::new_checked(&DATAGRAM[..7]).err(),
            Some(WireError::Truncated)
        );
        assert_eq!(
            UdpPacket::new_checked(&DATAGRAM[..10]).err(),
            Some(WireError::Truncated)
        );
        let mut short = DATAGRAM;
        short[5] = 7;
        assert_eq!(
            UdpPacket::new_checked(&short[..]).err(),
            Some(WireError::Malformed)
        );
    }
}
