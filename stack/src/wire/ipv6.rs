//! IPv6 fixed headers (RFC 8200) and the walk over extension headers.
//!
//! `check_len` validates the version and that the payload length fits the
//! buffer (a longer buffer is Ethernet padding). [`walk_extensions`] follows
//! the next-header chain through hop-by-hop, routing, fragment and
//! destination-options headers with a hard bound on the number of headers
//! and never reads past the payload, so a hostile chain can neither loop nor
//! overrun: it ends at the upper-layer protocol or an error.

use super::checksum;
use super::{read_u16, write_u16, WireError, WireResult};
use core::net::Ipv6Addr;

/// Field offsets in the IPv6 fixed header (the fast paths index frames with them too).
pub mod field {
    #![allow(missing_docs)]
    pub const VER_TC_FLOW: usize = 0;
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
}

/// Length of the fixed header.
pub const HEADER_LEN: usize = 40;

/// Next-header values dpstack knows.
pub mod next_header {
    /// Hop-by-hop options.
    pub const HOP_BY_HOP: u8 = 0;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// Routing header.
    pub const ROUTING: u8 = 43;
    /// Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// No next header.
    pub const NONE: u8 = 59;
    /// Destination options.
    pub const DEST_OPTIONS: u8 = 60;
}

/// Most extension headers [`walk_extensions`] follows before giving up.
pub const MAX_EXTENSION_HEADERS: usize = 8;

fn read_ipv6(bytes: &[u8], at: usize) -> Ipv6Addr {
    let mut octets = [0u8; 16];
    octets.copy_from_slice(&bytes[at..at + 16]);
    Ipv6Addr::from(octets)
}

/// A view of an IPv6 packet.
#[derive(Debug, Clone)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// Wraps `buffer` after [`Self::check_len`].
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Fails unless the version is 6 and the payload fits the buffer.
    pub fn check_len(&self) -> WireResult<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if self.version() != 6 {
            return Err(WireError::Malformed);
        }
        if HEADER_LEN + usize::from(self.payload_len()) > len {
            return Err(WireError::Truncated);
        }
        Ok(())
    }

    fn bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The version field.
    pub fn version(&self) -> u8 {
        self.bytes()[field::VER_TC_FLOW] >> 4
    }

    /// The traffic class (DSCP/ECN).
    pub fn traffic_class(&self) -> u8 {
        let b = self.bytes();
        b[field::VER_TC_FLOW] << 4 | b[field::VER_TC_FLOW + 1] >> 4
    }

    /// Payload length (everything after the fixed header).
    pub fn payload_len(&self) -> u16 {
        read_u16(self.bytes(), field::PAYLOAD_LEN)
    }

    /// The first next-header value.
    pub fn next_header(&self) -> u8 {
        self.bytes()[field::NEXT_HEADER]
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.bytes()[field::HOP_LIMIT]
    }

    /// Source address.
    pub fn src(&self) -> Ipv6Addr {
        read_ipv6(self.bytes(), field::SRC)
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv6Addr {
        read_ipv6(self.bytes(), field::DST)
    }

    /// The payload: extension headers and upper-layer data.
    pub fn payload(&self) -> &[u8] {
        &self.bytes()[HEADER_LEN..HEADER_LEN + usize::from(self.payload_len())]
    }
}

/// What [`Ipv6Packet::emit_header`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Header {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// The next header.
    pub next_header: u8,
    /// Payload length.
    pub payload_len: u16,
    /// Hop limit.
    pub hop_limit: u8,
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    /// Sets the traffic class (DSCP/ECN, the IPv4 TOS byte's twin), which
    /// straddles the first two bytes; version and flow label are kept.
    #[inline]
    pub fn set_traffic_class(&mut self, class: u8) {
        let b = self.buffer.as_mut();
        b[field::VER_TC_FLOW] = b[field::VER_TC_FLOW] & 0xf0 | class >> 4;
        b[field::VER_TC_FLOW + 1] = b[field::VER_TC_FLOW + 1] & 0x0f | class << 4;
    }

    /// Writes the fixed header (traffic class and flow label zero).
    pub fn emit_header(&mut self, header: &Ipv6Header) {
        let b = self.buffer.as_mut();
        b[..4].copy_from_slice(&[0x60, 0, 0, 0]);
        write_u16(b, field::PAYLOAD_LEN, header.payload_len);
        b[field::NEXT_HEADER] = header.next_header;
        b[field::HOP_LIMIT] = header.hop_limit;
        b[field::SRC..field::SRC + 16].copy_from_slice(&header.src.octets());
        b[field::DST..field::DST + 16].copy_from_slice(&header.dst.octets());
    }
}

/// The fragment header's fields (RFC 8200 section 4.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentHeader {
    /// Offset of this fragment's data in bytes.
    pub offset: usize,
    /// More fragments follow.
    pub more: bool,
    /// Identification.
    pub ident: u32,
}

/// An option the stack does not recognize whose type asks for the packet
/// to be discarded (RFC 8200 4.2: the two high bits are the action).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadOption {
    /// Offset of the option type from the start of the IPv6 header (the
    /// parameter-problem pointer).
    pub at: usize,
    /// 1: discard silently; 2: discard and send a parameter problem; 3: the
    /// same, unless the destination was a group.
    pub action: u8,
}

/// Where the extension-header walk ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extensions {
    /// The upper-layer protocol (or [`next_header::NONE`]).
    pub protocol: u8,
    /// Offset from the start of the IPv6 header of the byte that names
    /// `protocol` (the parameter-problem pointer for an unknown one).
    pub protocol_at: usize,
    /// The first option that says "discard", if one was met (the walk
    /// stops there).
    pub bad_option: Option<BadOption>,
    /// A routing header with segments left, if one was met (the walk
    /// stops there): the offset of its routing type from the start of the
    /// IPv6 header (the parameter-problem pointer). No routing type is
    /// processed here, so such a packet is not ours to deliver (RFC 8200
    /// 4.4).
    pub routing_left: Option<usize>,
    /// Offset of the upper-layer data within the IPv6 payload.
    pub offset: usize,
    /// The fragment header, if one was on the way.
    pub fragment: Option<FragmentHeader>,
    /// The offset of the fragment header within the payload, if any (the
    /// part before it is the unfragmentable part).
    pub fragment_at: Option<usize>,
}

/// Option types the stack knows (and skips): Pad1, PadN, router alert.
const KNOWN_OPTIONS: [u8; 3] = [0, 1, 5];

/// The first option in an options header (`header`, whole) that is not
/// recognized and whose action is not "skip", as (offset in the header,
/// action).
fn first_bad_option(header: &[u8]) -> WireResult<Option<(usize, u8)>> {
    let mut at = 2;
    while at < header.len() {
        let kind = header[at];
        if kind == 0 {
            at += 1;
            continue;
        }
        let len = usize::from(*header.get(at + 1).ok_or(WireError::Truncated)?);
        if at + 2 + len > header.len() {
            return Err(WireError::Truncated);
        }
        if !KNOWN_OPTIONS.contains(&kind) && kind >> 6 != 0 {
            return Ok(Some((at, kind >> 6)));
        }
        at += 2 + len;
    }
    Ok(None)
}

/// Walks the extension headers of an IPv6 payload starting with
/// `next_header`. Bounded: at most [`MAX_EXTENSION_HEADERS`] headers, never
/// past `payload`; hop-by-hop anywhere but first ends the walk as its
/// upper-layer protocol, which no layer knows (RFC 8200 4.1: it is an
/// unrecognized next header).
/// Options headers are checked for unknown options that demand a discard
/// (the walk stops at the first, see [`Extensions::bad_option`]), routing
/// headers for segments left (the walk stops there too, see
/// [`Extensions::routing_left`]). The walk
/// also stops after the fragment header of a fragment other than the first:
/// what follows is data, not headers.
pub fn walk_extensions(mut next: u8, payload: &[u8]) -> WireResult<Extensions> {
    let mut offset = 0;
    let mut fragment = None;
    let mut fragment_at = None;
    let mut protocol_at = field::NEXT_HEADER;
    for index in 0..=MAX_EXTENSION_HEADERS {
        match next {
            next_header::HOP_BY_HOP | next_header::ROUTING | next_header::DEST_OPTIONS => {
                if next == next_header::HOP_BY_HOP && index != 0 {
                    // RFC 8200 4.1: an unrecognized next header, reported
                    // at the byte that names it.
                    return Ok(stopped(next, protocol_at, offset, (fragment, fragment_at)));
                }
                let header = payload
                    .get(offset..offset + 2)
                    .ok_or(WireError::Truncated)?;
                let len = (usize::from(header[1]) + 1) * 8;
                let whole = payload
                    .get(offset..offset + len)
                    .ok_or(WireError::Truncated)?;
                if next == next_header::ROUTING && whole[3] != 0 {
                    return Ok(Extensions {
                        routing_left: Some(HEADER_LEN + offset + 2),
                        ..stopped(next, protocol_at, offset, (fragment, fragment_at))
                    });
                }
                if next != next_header::ROUTING {
                    if let Some((at, action)) = first_bad_option(whole)? {
                        let bad = BadOption {
                            at: HEADER_LEN + offset + at,
                            action,
                        };
                        return Ok(Extensions {
                            bad_option: Some(bad),
                            ..stopped(next, protocol_at, offset, (fragment, fragment_at))
                        });
                    }
                }
                protocol_at = HEADER_LEN + offset;
                next = whole[0];
                offset += len;
            }
            next_header::FRAGMENT => {
                let header = payload
                    .get(offset..offset + 8)
                    .ok_or(WireError::Truncated)?;
                if fragment.is_some() {
                    return Err(WireError::Malformed);
                }
                let field = read_u16(header, 2);
                fragment = Some(FragmentHeader {
                    offset: usize::from(field & 0xfff8),
                    more: field & 1 == 1,
                    ident: u32::from_be_bytes([header[4], header[5], header[6], header[7]]),
                });
                fragment_at = Some(offset);
                protocol_at = HEADER_LEN + offset;
                next = header[0];
                offset += 8;
                if field & 0xfff8 != 0 {
                    return Ok(stopped(next, protocol_at, offset, (fragment, fragment_at)));
                }
            }
            protocol => {
                return Ok(stopped(
                    protocol,
                    protocol_at,
                    offset,
                    (fragment, fragment_at),
                ));
            }
        }
    }
    Err(WireError::Malformed)
}

/// Where the walk stopped, at `protocol` (named at `protocol_at`), `offset`
/// bytes into the payload, with the fragment header met on the way: no
/// bad option, no routing header left (the callers that found one say so).
#[inline]
fn stopped(
    protocol: u8,
    protocol_at: usize,
    offset: usize,
    (fragment, fragment_at): (Option<FragmentHeader>, Option<usize>),
) -> Extensions {
    Extensions {
        protocol,
        protocol_at,
        bad_option: None,
        routing_left: None,
        offset,
        fragment,
        fragment_at,
    }
}

/// The sum of the IPv6 pseudo-header for upper-layer checksums (RFC 8200
/// section 8.1).
pub fn pseudo_header(src: Ipv6Addr, dst: Ipv6Addr, protocol: u8, length: u32) -> u64 {
    let sum = checksum::accumulate(0, &src.octets());
    let sum = checksum::accumulate(sum, &dst.octets());
    checksum::add_with_carry(sum, u64::from(length) + u64::from(protocol))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    const DST: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);

    // fe80::1 -> fe80::2, UDP, 8 bytes of payload, hop limit 64.
    const HEADER: [u8; 40] = [
        0x60, 0, 0, 0, 0, 8, 17, 64, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xfe,
        0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
    ];

    #[test]
    fn deconstruct() {
        let mut bytes = HEADER.to_vec();
        bytes.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8, 0, 0]); // 2 bytes of padding
        let p = Ipv6Packet::new_checked(&bytes[..]).expect("valid");
        assert_eq!(
            (p.version(), p.payload_len(), p.next_header(), p.hop_limit()),
            (6, 8, 17, 64)
        );
        assert_eq!((p.src(), p.dst()), (SRC, DST));
        assert_eq!(p.payload(), &[1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn construct() {
        let mut bytes = [0u8; 40];
        Ipv6Packet::new_unchecked(&mut bytes[..]).emit_header(&Ipv6Header {
            src: SRC,
            dst: DST,
            next_header: next_header::UDP,
            payload_len: 8,
            hop_limit: 64,
        });
        assert_eq!(bytes, HEADER);
    }

    #[test]
    fn traffic_class_keeps_version_and_flow_label() {
        let mut bytes = HEADER;
        bytes[1] = 0x0a; // flow label 0xa1234
        bytes[2..4].copy_from_slice(&[0x12, 0x34]);
        Ipv6Packet::new_unchecked(&mut bytes[..]).set_traffic_class(0xb8);
        assert_eq!(bytes[..4], [0x6b, 0x8a, 0x12, 0x34]);
        let p = Ipv6Packet::new_unchecked(&bytes[..]);
        assert_eq!((p.version(), p.traffic_class()), (6, 0xb8));
    }

    #[test]
    fn bad_versions_and_lengths_are_rejected() {
        let mut bytes = HEADER.to_vec();
        bytes.extend_from_slice(&[0; 8]);
        assert_eq!(
            Ipv6Packet::new_checked(&bytes[..47]).err(),
            Some(WireError::Truncated)
        );
        assert_eq!(
            Ipv6Packet::new_checked(&bytes[..39]).err(),
            Some(WireError::Truncated)
        );
        bytes[0] = 0x40;
        assert_eq!(
            Ipv6Packet::new_checked(&bytes[..]).err(),
            Some(WireError::Malformed)
        );
    }

    #[test]
    fn extension_chains_are_followed_to_the_upper_layer() {
        // hop-by-hop (8 bytes) -> fragment (8 bytes, offset 8, more) -> UDP
        let payload = [
            next_header::FRAGMENT,
            0,
            1,
            4,
            0,
            0,
            0,
            0, // hop-by-hop: PadN
            next_header::UDP,
            0,
            0,
            9,
            0xde,
            0xad,
            0xbe,
            0xef, // fragment: offset 8, M
            9,
            9,
            9,
            9,
        ];
        let ext = walk_extensions(next_header::HOP_BY_HOP, &payload).expect("valid chain");
        assert_eq!(
            (ext.protocol, ext.offset, ext.fragment_at),
            (next_header::UDP, 16, Some(8))
        );
        assert_eq!(
            ext.fragment,
            Some(FragmentHeader {
                offset: 8,
                more: true,
                ident: 0xdead_beef
            })
        );
    }

    #[test]
    fn unknown_options_that_demand_a_discard_stop_the_walk() {
        // Destination options: PadN(0), then type 0x80 (action 2), length 2.
        let payload = [
            next_header::UDP,
            0,
            1,
            0,
            0x80,
            2,
            0,
            0,
            9,
            9,
            9,
            9,
            9,
            9,
            9,
            9,
        ];
        let ext = walk_extensions(next_header::DEST_OPTIONS, &payload).unwrap();
        assert_eq!(ext.bad_option, Some(BadOption { at: 44, action: 2 }));
        // Type 0x1e (action 0: skip) is walked over.
        let mut skipped = payload;
        skipped[4] = 0x1e;
        let ext = walk_extensions(next_header::DEST_OPTIONS, &skipped).unwrap();
        assert_eq!((ext.bad_option, ext.protocol), (None, next_header::UDP));
        assert_eq!(ext.protocol_at, 40, "the options header names UDP");
    }

    #[test]
    fn a_later_fragment_is_not_walked_into() {
        // Fragment header, offset 16, next header destination options;
        // then data that is not a header.
        let payload = [next_header::DEST_OPTIONS, 0, 0, 16, 0, 0, 0, 1, 0xff, 0xff];
        let ext = walk_extensions(next_header::FRAGMENT, &payload).unwrap();
        assert_eq!(
            (ext.protocol, ext.offset, ext.fragment.map(|f| f.offset)),
            (next_header::DEST_OPTIONS, 8, Some(16))
        );
    }

    #[test]
    fn hostile_chains_end_in_an_error() {
        // Destination options pointing at destination options, forever.
        let looping = [next_header::DEST_OPTIONS, 0, 0, 0, 0, 0, 0, 0].repeat(20);
        assert_eq!(
            walk_extensions(next_header::DEST_OPTIONS, &looping),
            Err(WireError::Malformed)
        );
        // A header that claims to run past the packet.
        assert_eq!(
            walk_extensions(next_header::ROUTING, &[17, 200, 0, 0]),
            Err(WireError::Truncated)
        );
        // Hop-by-hop not first: the walk ends there, pointing at the byte
        // that names it (RFC 8200 4.1: an unrecognized next header).
        let late = [
            next_header::HOP_BY_HOP,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            17,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        let ext = walk_extensions(next_header::DEST_OPTIONS, &late).expect("ends early");
        assert_eq!(
            (ext.protocol, ext.protocol_at, ext.offset),
            (next_header::HOP_BY_HOP, HEADER_LEN, 8)
        );
        // Two fragment headers.
        let twice = [
            next_header::FRAGMENT,
            0,
            0,
            0,
            0,
            0,
            0,
            1,
            17,
            0,
            0,
            0,
            0,
            0,
            0,
            1,
        ];
        assert_eq!(
            walk_extensions(next_header::FRAGMENT, &twice),
            Err(WireError::Malformed)
        );
        // Empty payload with an extension header announced.
        assert_eq!(
            walk_extensions(next_header::HOP_BY_HOP, &[]),
            Err(WireError::Truncated)
        );
    }
}

/// The link-local address a port derives from its MAC (RFC 4291 appendix A,
/// modified EUI-64: the universal/local bit flipped, ff:fe in the middle).
pub fn link_local_from_mac(mac: crate::port::MacAddr) -> Ipv6Addr {
    let m = mac.0;
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        m[0] ^ 0x02,
        m[1],
        m[2],
        0xff,
        0xfe,
        m[3],
        m[4],
        m[5],
    ])
}

/// The solicited-node multicast group of `addr` (RFC 4291 2.7.1):
/// ff02::1:ff00:0/104 plus the address's low 24 bits.
pub fn solicited_node(addr: Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::from([
        0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xff, o[13], o[14], o[15],
    ])
}

/// The Ethernet address an IPv6 multicast group maps to (RFC 2464 7):
/// 33:33 plus the group's low 32 bits.
pub fn multicast_mac(group: Ipv6Addr) -> crate::port::MacAddr {
    let o = group.octets();
    crate::port::MacAddr([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

#[cfg(test)]
mod address_tests {
    use super::*;
    use crate::port::MacAddr;

    #[test]
    fn link_local_uses_modified_eui64() {
        let mac = MacAddr([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);
        let expected: Ipv6Addr = "fe80::5054:ff:fe12:3456".parse().unwrap();
        assert_eq!(link_local_from_mac(mac), expected);
    }

    #[test]
    fn solicited_node_and_its_mac() {
        let addr: Ipv6Addr = "2001:db8::1:2:3:abcd:ef01".parse().unwrap();
        let group = solicited_node(addr);
        assert_eq!(group, "ff02::1:ffcd:ef01".parse::<Ipv6Addr>().unwrap());
        assert_eq!(
            multicast_mac(group),
            MacAddr([0x33, 0x33, 0xff, 0xcd, 0xef, 0x01])
        );
    }
}
