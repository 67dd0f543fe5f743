//! ICMPv4 messages (RFC 792): the 8-byte header and its payload.

use super::checksum;
use super::{read_u16, write_u16, WireError, WireResult};

mod field {
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: usize = 2;
    pub const IDENT: usize = 4;
    pub const SEQ: usize = 6;
    pub const REST: core::ops::Range<usize> = 4..8;
    pub const NEXT_HOP_MTU: usize = 6;
}

/// Length of the ICMP header.
pub const HEADER_LEN: usize = 8;

/// ICMP message types dpstack uses.
pub mod msg_type {
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 3;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 8;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 11;
    /// Parameter problem.
    pub const PARAMETER_PROBLEM: u8 = 12;
}

/// Destination-unreachable code for a closed port.
pub const CODE_PORT_UNREACHABLE: u8 = 3;
/// Destination-unreachable code "fragmentation needed and DF set" (the
/// next-hop MTU is in the low half of the second word, RFC 1191).
pub const CODE_FRAGMENTATION_NEEDED: u8 = 4;

/// A view of an ICMPv4 message.
#[derive(Debug, Clone)]
pub struct Icmpv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv4Packet<T> {
    /// Wraps `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv4Packet { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Fails unless the buffer holds the 8-byte header.
    pub fn check_len(&self) -> WireResult<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The message type.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// The code.
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// The echo identifier (echo messages).
    pub fn echo_ident(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::IDENT)
    }

    /// The echo sequence number (echo messages).
    pub fn echo_seq(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::SEQ)
    }

    /// The second header word (echo identifier and sequence, a pointer, an
    /// MTU, or zero).
    pub fn body_word(&self) -> [u8; 4] {
        let b = &self.buffer.as_ref()[field::REST];
        [b[0], b[1], b[2], b[3]]
    }

    /// The next-hop MTU of a "fragmentation needed" (RFC 1191 4: the low
    /// half of the second word; 0 from routers older than it).
    pub fn next_hop_mtu(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::NEXT_HOP_MTU)
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    /// True if the checksum over the whole message is correct.
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::accumulate(0, self.buffer.as_ref())) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv4Packet<T> {
    /// Sets type and code.
    pub fn set_type_code(&mut self, msg_type: u8, code: u8) {
        let b = self.buffer.as_mut();
        b[field::TYPE] = msg_type;
        b[field::CODE] = code;
    }

    /// Sets the second header word (echo identifier and sequence, or zero).
    pub fn set_rest(&mut self, ident: u16, seq: u16) {
        let b = self.buffer.as_mut();
        write_u16(b, field::IDENT, ident);
        write_u16(b, field::SEQ, seq);
    }

    /// Sets the second header word.
    pub fn set_body_word(&mut self, word: [u8; 4]) {
        self.buffer.as_mut()[field::REST].copy_from_slice(&word);
    }

    /// Recomputes the checksum over the whole buffer.
    pub fn fill_checksum(&mut self) {
        write_u16(self.buffer.as_mut(), field::CHECKSUM, 0);
        let sum = checksum::checksum(self.buffer.as_ref());
        write_u16(self.buffer.as_mut(), field::CHECKSUM, sum);
    }

    /// The bytes after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // An echo request, ident 0x1234, seq 1, payload "abcd"; checksum 0x2104
    // computed independently (Python).
    const ECHO: [u8; 12] = [
        8, 0, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, b'a', b'b', b'c', b'd',
    ];

    #[test]
    fn deconstruct() {
        let p = Icmpv4Packet::new_checked(&ECHO[..]).expect("valid");
        assert_eq!((p.msg_type(), p.code()), (msg_type::ECHO_REQUEST, 0));
        assert_eq!((p.echo_ident(), p.echo_seq()), (0x1234, 1));
        assert_eq!(p.payload(), b"abcd");
        assert!(p.verify_checksum());
    }

    #[test]
    fn construct() {
        let mut bytes = [0u8; 12];
        let mut p = Icmpv4Packet::new_unchecked(&mut bytes[..]);
        p.set_type_code(msg_type::ECHO_REQUEST, 0);
        p.set_rest(0x1234, 1);
        p.payload_mut().copy_from_slice(b"abcd");
        p.fill_checksum();
        assert_eq!(bytes, ECHO);
    }

    // Destination unreachable, fragmentation needed, next-hop MTU 1400
    // (0x0578), quoting nothing.
    const FRAG_NEEDED: [u8; 8] = [3, 4, 0, 0, 0, 0, 0x05, 0x78];

    #[test]
    fn second_word() {
        let p = Icmpv4Packet::new_checked(&FRAG_NEEDED[..]).expect("valid");
        assert_eq!(p.next_hop_mtu(), 1400);
        assert_eq!(p.body_word(), [0, 0, 0x05, 0x78]);
        let mut bytes = [3, 4, 0, 0, 0xff, 0xff, 0xff, 0xff];
        Icmpv4Packet::new_unchecked(&mut bytes[..]).set_body_word([0, 0, 0x05, 0x78]);
        assert_eq!(bytes, FRAG_NEEDED);
    }

    #[test]
    fn short_messages_are_truncated() {
        assert_eq!(
            Icmpv4Packet::new_checked(&ECHO[..7]).err(),
            Some(WireError::Truncated)
        );
    }
}
