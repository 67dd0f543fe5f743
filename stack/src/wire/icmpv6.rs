//! ICMPv6 (RFC 4443) and the Neighbor Discovery messages dpstack uses
//! (RFC 4861: neighbour solicitation and advertisement with link-layer
//! address options).
//!
//! The checksum covers the IPv6 pseudo-header; `verify_checksum` and
//! `fill_checksum` take the addresses. Option walks are bounded by the
//! message: an option of length 0 (which would loop) is malformed.

use super::checksum;
use super::ipv6::{next_header, pseudo_header};
use super::{read_u16, write_u16, WireError, WireResult};
use crate::port::MacAddr;
use core::net::Ipv6Addr;

/// Length of the ICMPv6 header (type, code, checksum, 4 bytes of body).
pub const HEADER_LEN: usize = 8;

/// ICMPv6 message types.
pub mod msg_type {
    /// Destination unreachable.
    pub const DEST_UNREACHABLE: u8 = 1;
    /// Packet too big.
    pub const PACKET_TOO_BIG: u8 = 2;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 3;
    /// Parameter problem.
    pub const PARAMETER_PROBLEM: u8 = 4;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 128;
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 129;
    /// Multicast listener query (MLD, RFC 3810 5.1).
    pub const MLD_QUERY: u8 = 130;
    /// Version 1 multicast listener report (MLDv1, RFC 2710 3).
    pub const MLD_REPORT_V1: u8 = 131;
    /// Multicast listener done (MLDv1, RFC 2710 3).
    pub const MLD_DONE: u8 = 132;
    /// Router solicitation.
    pub const ROUTER_SOLICITATION: u8 = 133;
    /// Router advertisement.
    pub const ROUTER_ADVERTISEMENT: u8 = 134;
    /// Neighbour solicitation.
    pub const NEIGHBOR_SOLICITATION: u8 = 135;
    /// Neighbour advertisement.
    pub const NEIGHBOR_ADVERTISEMENT: u8 = 136;
    /// Version 2 multicast listener report (RFC 3810 5.2).
    pub const MLD_REPORT_V2: u8 = 143;
}

/// Destination-unreachable code for a closed port.
pub const CODE_PORT_UNREACHABLE: u8 = 4;
/// Parameter problem: erroneous header field.
pub const CODE_ERRONEOUS_FIELD: u8 = 0;
/// Parameter problem: unrecognized next header type.
pub const CODE_UNRECOGNIZED_NEXT_HEADER: u8 = 1;
/// Parameter problem: unrecognized IPv6 option.
pub const CODE_UNRECOGNIZED_OPTION: u8 = 2;
/// Parameter problem: first fragment has an incomplete header chain (RFC
/// 7112).
pub const CODE_INCOMPLETE_CHAIN: u8 = 3;

/// A view of an ICMPv6 message.
#[derive(Debug, Clone)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// Wraps `buffer` without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv6Packet { buffer }
    }

    /// Wraps `buffer` after checking it holds the 8-byte header.
    pub fn new_checked(buffer: T) -> WireResult<Self> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Self::new_unchecked(buffer))
    }

    /// The message type.
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[0]
    }

    /// The code.
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[1]
    }

    /// The 4 bytes after the checksum (echo identifier and sequence, NA
    /// flags, MTU, pointer, ...).
    pub fn body_word(&self) -> [u8; 4] {
        let b = self.buffer.as_ref();
        [b[4], b[5], b[6], b[7]]
    }

    /// The echo identifier.
    pub fn echo_ident(&self) -> u16 {
        read_u16(self.buffer.as_ref(), 4)
    }

    /// The echo sequence number.
    pub fn echo_seq(&self) -> u16 {
        read_u16(self.buffer.as_ref(), 6)
    }

    /// The bytes after the 8-byte header.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    /// True if the checksum over the pseudo-header and message is correct.
    pub fn verify_checksum(&self, src: Ipv6Addr, dst: Ipv6Addr) -> bool {
        let data = self.buffer.as_ref();
        let sum = pseudo_header(src, dst, next_header::ICMPV6, data.len() as u32);
        checksum::fold(checksum::accumulate(sum, data)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    /// Sets type and code.
    pub fn set_type_code(&mut self, msg_type: u8, code: u8) {
        let b = self.buffer.as_mut();
        b[0] = msg_type;
        b[1] = code;
    }

    /// Sets the 4 bytes after the checksum.
    pub fn set_body_word(&mut self, word: [u8; 4]) {
        self.buffer.as_mut()[4..8].copy_from_slice(&word);
    }

    /// The bytes after the header, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }

    /// Recomputes the checksum for a message from `src` to `dst`.
    pub fn fill_checksum(&mut self, src: Ipv6Addr, dst: Ipv6Addr) {
        write_u16(self.buffer.as_mut(), 2, 0);
        let data = self.buffer.as_ref();
        let sum = pseudo_header(src, dst, next_header::ICMPV6, data.len() as u32);
        let value = !checksum::fold(checksum::accumulate(sum, data));
        write_u16(self.buffer.as_mut(), 2, value);
    }
}

/// NDP option types dpstack reads or writes.
pub mod option {
    /// Source link-layer address.
    pub const SOURCE_LINK_ADDR: u8 = 1;
    /// Target link-layer address.
    pub const TARGET_LINK_ADDR: u8 = 2;
    /// Link MTU (router advertisements).
    pub const MTU: u8 = 5;
}

/// A neighbour solicitation or advertisement, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdpRepr {
    /// Who has `target`? (With the sender's MAC unless it is doing DAD.)
    Solicitation {
        /// The address being resolved.
        target: Ipv6Addr,
        /// The source link-layer address option.
        source_mac: Option<MacAddr>,
    },
    /// `target` is at `target_mac`.
    Advertisement {
        /// Router flag.
        router: bool,
        /// Solicited flag (a reply to a solicitation).
        solicited: bool,
        /// Override flag.
        override_: bool,
        /// The address advertised.
        target: Ipv6Addr,
        /// The target link-layer address option.
        target_mac: Option<MacAddr>,
    },
}

const FLAG_ROUTER: u8 = 0x80;
const FLAG_SOLICITED: u8 = 0x40;
const FLAG_OVERRIDE: u8 = 0x20;

/// Walks NDP options; calls `f(type, body)` for each. Fails on a zero or
/// overlong length.
fn walk_options(mut options: &[u8], mut f: impl FnMut(u8, &[u8])) -> WireResult<()> {
    while !options.is_empty() {
        let (kind, units) = match options {
            [kind, units, ..] => (*kind, usize::from(*units)),
            _ => return Err(WireError::Truncated),
        };
        let len = units * 8;
        if len == 0 {
            return Err(WireError::Malformed);
        }
        let body = options.get(2..len).ok_or(WireError::Truncated)?;
        f(kind, body);
        options = &options[len..];
    }
    Ok(())
}

fn mac_option(body: &[u8]) -> Option<MacAddr> {
    let bytes: [u8; 6] = body.get(..6)?.try_into().ok()?;
    Some(MacAddr(bytes))
}

fn target_at(message: &[u8]) -> WireResult<Ipv6Addr> {
    let bytes: [u8; 16] = message
        .get(8..24)
        .ok_or(WireError::Truncated)?
        .try_into()
        .map_err(|_| WireError::Truncated)?;
    Ok(Ipv6Addr::from(bytes))
}

impl NdpRepr {
    /// Parses an NS or NA message (the whole ICMPv6 message). Other types
    /// are `Unsupported`; a code other than 0 is `Malformed` (RFC 4861 7.1).
    pub fn parse(message: &[u8]) -> WireResult<NdpRepr> {
        let icmp = Icmpv6Packet::new_checked(message)?;
        if icmp.code() != 0 {
            return Err(WireError::Malformed);
        }
        let target = target_at(message)?;
        if target.is_multicast() {
            return Err(WireError::Malformed);
        }
        let options = &message[24..];
        match icmp.msg_type() {
            msg_type::NEIGHBOR_SOLICITATION => {
                let mut source_mac = None;
                walk_options(options, |kind, body| {
                    if kind == option::SOURCE_LINK_ADDR {
                        source_mac = mac_option(body);
                    }
                })?;
                Ok(NdpRepr::Solicitation { target, source_mac })
            }
            msg_type::NEIGHBOR_ADVERTISEMENT => {
                let flags = message[4];
                let mut target_mac = None;
                walk_options(options, |kind, body| {
                    if kind == option::TARGET_LINK_ADDR {
                        target_mac = mac_option(body);
                    }
                })?;
                Ok(NdpRepr::Advertisement {
                    router: flags & FLAG_ROUTER != 0,
                    solicited: flags & FLAG_SOLICITED != 0,
                    override_: flags & FLAG_OVERRIDE != 0,
                    target,
                    target_mac,
                })
            }
            _ => Err(WireError::Unsupported),
        }
    }

    /// Length of the emitted message (with its link-layer option, if any).
    pub fn len(&self) -> usize {
        let has_option = match self {
            NdpRepr::Solicitation { source_mac, .. } => source_mac.is_some(),
            NdpRepr::Advertisement { target_mac, .. } => target_mac.is_some(),
        };
        24 + if has_option { 8 } else { 0 }
    }

    /// Always false: a message has at least its header and target.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the message (checksum left zero: fill it with
    /// [`Icmpv6Packet::fill_checksum`]) into the first [`Self::len`] bytes.
    pub fn emit(&self, message: &mut [u8]) {
        message[..24].fill(0);
        let (kind, flags, target, option) = match *self {
            NdpRepr::Solicitation { target, source_mac } => (
                msg_type::NEIGHBOR_SOLICITATION,
                0,
                target,
                source_mac.map(|m| (option::SOURCE_LINK_ADDR, m)),
            ),
            NdpRepr::Advertisement {
                router,
                solicited,
                override_,
                target,
                target_mac,
            } => (
                msg_type::NEIGHBOR_ADVERTISEMENT,
                if router { FLAG_ROUTER } else { 0 }
                    | if solicited { FLAG_SOLICITED } else { 0 }
                    | if override_ { FLAG_OVERRIDE } else { 0 },
                target,
                target_mac.map(|m| (option::TARGET_LINK_ADDR, m)),
            ),
        };
        message[0] = kind;
        message[4] = flags;
        message[8..24].copy_from_slice(&target.octets());
        if let Some((kind, mac)) = option {
            message[24] = kind;
            message[25] = 1;
            message[26..32].copy_from_slice(&mac.0);
        }
    }
}

/// What a router advertisement says (RFC 4861 4.2), as far as a host
/// that takes a default route from it cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterAdvert {
    /// Hop limit the router suggests (0: unspecified).
    pub hop_limit: u8,
    /// How long the router is a default router, in seconds (0: it is not).
    pub lifetime_secs: u16,
    /// The router's link-layer address option.
    pub source_mac: Option<MacAddr>,
    /// The MTU option.
    pub mtu: Option<u32>,
}

impl RouterAdvert {
    /// Length of the fixed part of the message.
    pub const FIXED_LEN: usize = 16;

    /// Parses a router advertisement (the whole ICMPv6 message): code 0,
    /// at least 16 bytes, well-formed options (RFC 4861 6.1.2).
    pub fn parse(message: &[u8]) -> WireResult<RouterAdvert> {
        let icmp = Icmpv6Packet::new_checked(message)?;
        if icmp.msg_type() != msg_type::ROUTER_ADVERTISEMENT {
            return Err(WireError::Unsupported);
        }
        if icmp.code() != 0 {
            return Err(WireError::Malformed);
        }
        let fixed = message.get(..Self::FIXED_LEN).ok_or(WireError::Truncated)?;
        let mut advert = RouterAdvert {
            hop_limit: fixed[4],
            lifetime_secs: u16::from_be_bytes([fixed[6], fixed[7]]),
            source_mac: None,
            mtu: None,
        };
        walk_options(&message[Self::FIXED_LEN..], |kind, body| match kind {
            option::SOURCE_LINK_ADDR => advert.source_mac = mac_option(body),
            option::MTU => {
                advert.mtu = body
                    .get(2..6)
                    .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]));
            }
            _ => {}
        })?;
        Ok(advert)
    }
}

/// Length of a router solicitation with a source link-layer option.
pub const ROUTER_SOLICITATION_LEN: usize = 16;

/// Writes a router solicitation (RFC 4861 4.1) with our link-layer
/// address into `message` ([`ROUTER_SOLICITATION_LEN`] bytes); the
/// checksum is left to the caller.
pub fn emit_router_solicitation(message: &mut [u8], source_mac: MacAddr) {
    message[..8].copy_from_slice(&[msg_type::ROUTER_SOLICITATION, 0, 0, 0, 0, 0, 0, 0]);
    message[8] = option::SOURCE_LINK_ADDR;
    message[9] = 1;
    message[10..16].copy_from_slice(&source_mac.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn router_advertisement_golden_bytes() {
        // Hop limit 64, lifetime 1800 s, reachable/retrans 0; source
        // link-layer option 02:00:00:00:00:fe; MTU option 1480; an unknown
        // option (prefix information, 32 bytes) skipped.
        let mut m = vec![
            134, 0, 0, 0, 64, 0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0, // fixed
            1, 1, 2, 0, 0, 0, 0, 0xfe, // source link-layer address
            5, 1, 0, 0, 0, 0, 0x05, 0xc8, // MTU
        ];
        m.extend_from_slice(&[3, 4]);
        m.extend_from_slice(&[0; 30]);
        assert_eq!(
            RouterAdvert::parse(&m),
            Ok(RouterAdvert {
                hop_limit: 64,
                lifetime_secs: 1800,
                source_mac: Some(MacAddr([2, 0, 0, 0, 0, 0xfe])),
                mtu: Some(1480),
            })
        );
        m[1] = 1;
        assert_eq!(RouterAdvert::parse(&m), Err(WireError::Malformed));
        m[1] = 0;
        m[17] = 0; // a zero-length option
        assert_eq!(RouterAdvert::parse(&m), Err(WireError::Malformed));
    }

    #[test]
    fn router_solicitation_golden_bytes() {
        let mut m = [0u8; ROUTER_SOLICITATION_LEN];
        emit_router_solicitation(&mut m, MacAddr([2, 0, 0, 0, 0, 1]));
        assert_eq!(m, [133, 0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 0, 0, 0, 0, 1]);
    }

    const SRC: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    const SOLICITED_NODE: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 1, 0xff00, 2);
    const TARGET: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 2);
    const MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);

    // NS for fe80::2 with source link-layer address 02:00:00:00:00:01.
    const NS: [u8; 32] = [
        135, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 2, 0,
        0, 0, 0, 1,
    ];

    #[test]
    fn parse_and_emit_a_solicitation() {
        let ns = NdpRepr::Solicitation {
            target: TARGET,
            source_mac: Some(MAC),
        };
        assert_eq!(NdpRepr::parse(&NS), Ok(ns));
        let mut bytes = [0xffu8; 32];
        ns.emit(&mut bytes);
        assert_eq!(bytes, NS);
        assert_eq!(ns.len(), 32);
    }

    #[test]
    fn advertisement_flags_round_trip() {
        let na = NdpRepr::Advertisement {
            router: false,
            solicited: true,
            override_: true,
            target: TARGET,
            target_mac: Some(MAC),
        };
        let mut bytes = [0u8; 32];
        na.emit(&mut bytes);
        assert_eq!(bytes[4], 0x60);
        assert_eq!(NdpRepr::parse(&bytes), Ok(na));
    }

    #[test]
    fn checksums_cover_the_pseudo_header() {
        let mut bytes = NS;
        let mut icmp = Icmpv6Packet::new_unchecked(&mut bytes[..]);
        icmp.fill_checksum(SRC, SOLICITED_NODE);
        // 0x7a97 computed independently (Python, RFC 8200 pseudo-header).
        assert_eq!(&bytes[2..4], &[0x7a, 0x97]);
        let icmp = Icmpv6Packet::new_checked(&bytes[..]).expect("valid");
        assert!(icmp.verify_checksum(SRC, SOLICITED_NODE));
        assert!(!icmp.verify_checksum(SRC, TARGET));
    }

    #[test]
    fn bad_options_and_codes_are_rejected() {
        let mut zero_len = NS;
        zero_len[25] = 0;
        assert_eq!(NdpRepr::parse(&zero_len), Err(WireError::Malformed));
        let mut overlong = NS;
        overlong[25] = 2;
        assert_eq!(NdpRepr::parse(&overlong), Err(WireError::Truncated));
        let mut code = NS;
        code[1] = 1;
        assert_eq!(NdpRepr::parse(&code), Err(WireError::Malformed));
        let mut multicast_target = NS;
        multicast_target[8] = 0xff;
        assert_eq!(NdpRepr::parse(&multicast_target), Err(WireError::Malformed));
        assert_eq!(NdpRepr::parse(&NS[..20]), Err(WireError::Truncated));
        let mut echo = NS;
        echo[0] = msg_type::ECHO_REQUEST;
        assert_eq!(NdpRepr::parse(&echo), Err(WireError::Unsupported));
    }
}
