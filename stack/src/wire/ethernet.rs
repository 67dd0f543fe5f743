//! Ethernet II frames.

use super::{read_u16, write_u16, WireError, WireResult};
use crate::port::MacAddr;

/// Field offsets in the Ethernet header (the fast paths index frames with them too).
pub mod field {
    #![allow(missing_docs)]
    use core::ops::Range;
    pub const DST: Range<usize> = 0..6;
    pub const SRC: Range<usize> = 6..12;
    pub const ETHERTYPE: usize = 12;
    pub const PAYLOAD: usize = 14;
}

/// Length of the Ethernet header.
pub const HEADER_LEN: usize = field::PAYLOAD;

/// Swaps a frame's destination and source addresses in place (its first
/// twelve bytes), for a reply to a frame that came to our address: the
/// reply goes to the previous hop, from the address the request was sent
/// to. On one 64-bit and one 32-bit word, shifted into place, not byte by
/// byte through memory.
#[inline(always)]
pub fn swap_addresses(addresses: &mut [u8; 12]) {
    let (head, tail) = addresses.split_at_mut(8);
    let (Some(head), Some(tail)) = (head.first_chunk_mut::<8>(), tail.first_chunk_mut::<4>())
    else {
        return;
    };
    let (low, high) = (
        u64::from_le_bytes(*head),
        u64::from(u32::from_le_bytes(*tail)),
    );
    let dst = low & 0xffff_ffff_ffff;
    let src = low >> 48 | high << 16;
    *head = (src | dst << 48).to_le_bytes();
    *tail = ((dst >> 16) as u32).to_le_bytes();
}

/// The EtherType of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EtherType {
    /// IPv4 (0x0800).
    Ipv4,
    /// ARP (0x0806).
    Arp,
    /// IPv6 (0x86dd).
    Ipv6,
    /// Anything else.
    Unknown(u16),
}

impl From<u16> for EtherType {
    fn from(value: u16) -> Self {
        match value {
            0x0800 => EtherType::Ipv4,
            0x0806 => EtherType::Arp,
            0x86dd => EtherType::Ipv6,
            other => EtherType::Unknown(other),
        }
    }
}

impl From<EtherType> for u16 {
    fn from(value: EtherType) -> Self {
        match value {
            EtherType::Ipv4 => 0x0800,
            EtherType::Arp => 0x0806,
            EtherType::Ipv6 => 0x86dd,
            EtherType::Unknown(other) => other,
        }
    }
}

/// A view of an Ethernet II frame.
#[derive(Debug, Clone)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        let frame = Self::new_unchecked(buffer);
        frame.check_len()?;
        Ok(frame)
    }

    /// Fails unless the buffer holds a whole header.
    pub fn check_len(&self) -> WireResult<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    /// The destination address.
    pub fn dst(&self) -> MacAddr {
        let mut mac = [0; 6];
        mac.copy_from_slice(&self.buffer.as_ref()[field::DST]);
        MacAddr(mac)
    }

    /// The source address.
    pub fn src(&self) -> MacAddr {
        let mut mac = [0; 6];
        mac.copy_from_slice(&self.buffer.as_ref()[field::SRC]);
        MacAddr(mac)
    }

    /// The EtherType.
    pub fn ethertype(&self) -> EtherType {
        read_u16(self.buffer.as_ref(), field::ETHERTYPE).into()
    }

    /// The bytes after the header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    pub fn set_dst(&mut self, mac: MacAddr) {
        self.buffer.as_mut()[field::DST].copy_from_slice(&mac.0);
    }

    /// Sets the source address.
    pub fn set_src(&mut self, mac: MacAddr) {
        self.buffer.as_mut()[field::SRC].copy_from_slice(&mac.0);
    }

    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, ethertype: EtherType) {
        write_u16(self.buffer.as_mut(), field::ETHERTYPE, ethertype.into());
    }

    /// The bytes after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

impl MacAddr {
    /// True for a multicast (or broadcast) address: the I/G bit is set.
    pub const fn is_multicast(self) -> bool {
        self.0[0] & 1 == 1
    }

    /// True for ff:ff:ff:ff:ff:ff.
    pub const fn is_broadcast(self) -> bool {
        matches!(self.0, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: [u8; 16] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // src
        0x08, 0x06, // ARP
        0xaa, 0xbb,
    ];

    #[test]
    fn deconstruct() {
        let frame = EthernetFrame::new_checked(&FRAME[..]).expect("valid");
        assert!(frame.dst().is_broadcast() && frame.dst().is_multicast());
        assert_eq!(frame.src(), MacAddr([2, 0, 0, 0, 0, 1]));
        assert!(!frame.src().is_multicast());
        assert_eq!(frame.ethertype(), EtherType::Arp);
        assert_eq!(frame.payload(), &[0xaa, 0xbb]);
    }

    #[test]
    fn construct() {
        let mut bytes = [0u8; 16];
        let mut frame = EthernetFrame::new_unchecked(&mut bytes[..]);
        frame.set_dst(MacAddr::BROADCAST);
        frame.set_src(MacAddr([2, 0, 0, 0, 0, 1]));
        frame.set_ethertype(EtherType::Arp);
        frame.payload_mut().copy_from_slice(&[0xaa, 0xbb]);
        assert_eq!(bytes, FRAME);
    }

    #[test]
    fn short_frames_are_truncated() {
        assert_eq!(
            EthernetFrame::new_checked(&FRAME[..13]).err(),
            Some(WireError::Truncated)
        );
        assert_eq!(EtherType::from(0x1234), EtherType::Unknown(0x1234));
        assert_eq!(u16::from(EtherType::Unknown(0x1234)), 0x1234);
    }

    #[test]
    fn swapping_addresses_exchanges_destination_and_source() {
        let mut addresses = [1, 2, 3, 4, 5, 6, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6];
        swap_addresses(&mut addresses);
        assert_eq!(
            addresses,
            [0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 1, 2, 3, 4, 5, 6]
        );
        swap_addresses(&mut addresses);
        assert_eq!(
            addresses,
            [1, 2, 3, 4, 5, 6, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6]
        );
    }
}
