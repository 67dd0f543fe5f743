//! Wire formats: zero-copy views over packet bytes, one file per header.
//!
//! Each view `XPacket<T: AsRef<[u8]>>` wraps a buffer. `new_unchecked` wraps
//! without checking; `check_len` validates the length fields against the
//! buffer; `new_checked` does both. **After a successful `check_len`, no
//! accessor panics**, whatever the bytes are: the receive path relies on this
//! to never panic on input. Field offsets live in each header's public
//! `field` module, which the hand-tuned fast paths of `iface::udp` index
//! frames with as well. Setters need `T: AsMut<[u8]>` and assume a buffer
//! of the right size.
//!
//! Checksums are verified or filled only when asked: the policy (software, or
//! trust the device's rx flags) belongs to the caller.

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod icmpv4;
pub mod icmpv6;
pub mod igmp;
pub mod ipv4;
pub mod ipv6;
pub mod mld;
pub mod tcp;
pub mod udp;

/// Why a packet could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The buffer is shorter than the header or than a length field says.
    Truncated,
    /// A field has a value the format does not allow.
    Malformed,
    /// The checksum does not match.
    BadChecksum,
    /// Well-formed, but a kind dpstack does not handle.
    Unsupported,
}

/// A result of parsing.
pub type WireResult<T> = Result<T, WireError>;

/// The ECN field of an IP header (RFC 3168 5): the low two bits of the
/// IPv4 TOS byte or of the IPv6 traffic class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable transport (`00`).
    #[default]
    NotEct = 0,
    /// ECN-capable transport, ECT(1) (`01`).
    Ect1 = 1,
    /// ECN-capable transport, ECT(0) (`10`), what TCP sends.
    Ect0 = 2,
    /// Congestion experienced (`11`): a router marked the packet instead of
    /// dropping it.
    Ce = 3,
}

impl Ecn {
    /// The codepoint in the low two bits of `byte` (a TOS byte or traffic
    /// class).
    #[inline]
    pub const fn from_bits(byte: u8) -> Ecn {
        match byte & 3 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
}

pub(crate) fn read_u16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

pub(crate) fn write_u16(bytes: &mut [u8], at: usize, value: u16) {
    bytes[at..at + 2].copy_from_slice(&value.to_be_bytes());
}

pub(crate) fn read_ipv4(bytes: &[u8], at: usize) -> core::net::Ipv4Addr {
    core::net::Ipv4Addr::new(bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3])
}
