//! ARP for IPv4 over Ethernet (RFC 826).

use super::{read_ipv4, read_u16, write_u16, WireError, WireResult};
use crate::port::MacAddr;
use core::net::Ipv4Addr;

mod field {
    pub const HTYPE: usize = 0;
    pub const PTYPE: usize = 2;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: usize = 6;
    pub const SHA: usize = 8;
    pub const SPA: usize = 14;
    pub const THA: usize = 18;
    pub const TPA: usize = 24;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = 28;

/// The ARP operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArpOperation {
    /// Who has `target_ip`?
    Request,
    /// `sender_ip` is at `sender_mac`.
    Reply,
}

/// An Ethernet/IPv4 ARP packet, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpRepr {
    /// Request or reply.
    pub operation: ArpOperation,
    /// Sender hardware address.
    pub sender_mac: MacAddr,
    /// Sender protocol address.
    pub sender_ip: Ipv4Addr,
    /// Target hardware address (zero in requests).
    pub target_mac: MacAddr,
    /// Target protocol address.
    pub target_ip: Ipv4Addr,
}

fn mac_at(bytes: &[u8], at: usize) -> MacAddr {
    let mut mac = [0; 6];
    mac.copy_from_slice(&bytes[at..at + 6]);
    MacAddr(mac)
}

impl ArpRepr {
    /// Parses an ARP packet. Other hardware or protocol types are
    /// `Unsupported`; other operations (RARP, InARP) too.
    pub fn parse(bytes: &[u8]) -> WireResult<ArpRepr> {
        if bytes.len() < PACKET_LEN {
            return Err(WireError::Truncated);
        }
        if read_u16(bytes, field::HTYPE) != 1
            || read_u16(bytes, field::PTYPE) != 0x0800
            || bytes[field::HLEN] != 6
            || bytes[field::PLEN] != 4
        {
            return Err(WireError::Unsupported);
        }
        let operation = match read_u16(bytes, field::OPER) {
            1 => ArpOperation::Request,
            2 => ArpOperation::Reply,
            _ => return Err(WireError::Unsupported),
        };
        Ok(ArpRepr {
            operation,
            sender_mac: mac_at(bytes, field::SHA),
            sender_ip: read_ipv4(bytes, field::SPA),
            target_mac: mac_at(bytes, field::THA),
            target_ip: read_ipv4(bytes, field::TPA),
        })
    }

    /// Writes the packet into the first [`PACKET_LEN`] bytes of `bytes`.
    pub fn emit(&self, bytes: &mut [u8]) {
        write_u16(bytes, field::HTYPE, 1);
        write_u16(bytes, field::PTYPE, 0x0800);
        bytes[field::HLEN] = 6;
        bytes[field::PLEN] = 4;
        let oper = match self.operation {
            ArpOperation::Request => 1,
            ArpOperation::Reply => 2,
        };
        write_u16(bytes, field::OPER, oper);
        bytes[field::SHA..field::SHA + 6].copy_from_slice(&self.sender_mac.0);
        bytes[field::SPA..field::SPA + 4].copy_from_slice(&self.sender_ip.octets());
        bytes[field::THA..field::THA + 6].copy_from_slice(&self.target_mac.0);
        bytes[field::TPA..field::TPA + 4].copy_from_slice(&self.target_ip.octets());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Who has 10.0.0.2? Tell 10.0.0.1 (02:00:00:00:00:01).
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 10, 0,
        0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
    ];

    fn request() -> ArpRepr {
        ArpRepr {
            operation: ArpOperation::Request,
            sender_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            sender_ip: Ipv4Addr::new(10, 0, 0, 1),
            target_mac: MacAddr::default(),
            target_ip: Ipv4Addr::new(10, 0, 0, 2),
        }
    }

    #[test]
    fn parse() {
        assert_eq!(ArpRepr::parse(&REQUEST), Ok(request()));
    }

    #[test]
    fn emit() {
        let mut bytes = [0xffu8; 28];
        request().emit(&mut bytes);
        assert_eq!(bytes, REQUEST);
    }

    #[test]
    fn other_kinds_are_unsupported_and_short_ones_truncated() {
        assert_eq!(ArpRepr::parse(&REQUEST[..27]), Err(WireError::Truncated));
        let mut rarp = REQUEST;
        rarp[7] = 3;
        assert_eq!(ArpRepr::parse(&rarp), Err(WireError::Unsupported));
        let mut ipv6 = REQUEST;
        ipv6[2] = 0x86;
        assert_eq!(ArpRepr::parse(&ipv6), Err(WireError::Unsupported));
    }
}
