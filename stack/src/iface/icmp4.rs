//! ICMPv4 (RFC 792) on one link: echo requests answered in their own
//! buffer, errors about our packets received, port unreachable sent; the
//! steps IPv6 shares are written once in `icmp`, over this module's
//! [`IcmpFamily`] implementation for `Ipv4Addr`.
//!
//! Broadcast pings are ignored and broadcast errors dropped, as Linux does.
//! Owning lcore only: no allocation, no panic, every drop counted.

use super::config::DEFAULT_HOP_LIMIT;
use super::icmp::{error_input, reply_echo, IcmpError, IcmpFamily, IcmpIn, Invoking, Quote};
use super::ip::{transmit_ipv4, turn_around_ipv4, MIN_PATH_MTU4};
use super::poll::{Arrival, Poll};
use super::transmit::Out;
use super::{Core, Link};
use crate::counters::{Counters, DropReason, Stat};
use crate::port::{Buf, Port};
use crate::udp::table::FlowKey;
use crate::udp::{PeerError, SocketId};
use crate::wire::ethernet::{EtherType, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv4::CODE_PORT_UNREACHABLE;
use crate::wire::icmpv4::{msg_type, Icmpv4Packet, CODE_FRAGMENTATION_NEEDED};
use crate::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use core::marker::PhantomData;
use core::net::{Ipv4Addr, SocketAddrV4};

/// Which ICMP error to send.
pub(crate) type Icmp4Error = IcmpError<Ipv4Addr>;

impl IcmpError<Ipv4Addr> {
    /// Destination unreachable, port unreachable.
    pub(crate) const PORT_UNREACHABLE: Icmp4Error = IcmpError {
        kind: msg_type::DEST_UNREACHABLE,
        code: CODE_PORT_UNREACHABLE,
        word: 0,
        to_groups: false,
        stat: Stat::IcmpOutDestUnreachs,
        family: PhantomData,
    };

    /// Destination unreachable, protocol unreachable (RFC 1122 3.2.2.1).
    pub(crate) const PROTOCOL_UNREACHABLE: Icmp4Error = IcmpError {
        kind: msg_type::DEST_UNREACHABLE,
        code: 2,
        word: 0,
        to_groups: false,
        stat: Stat::IcmpOutDestUnreachs,
        family: PhantomData,
    };

    /// Time exceeded, fragment reassembly time exceeded (RFC 792).
    pub(crate) const REASSEMBLY_TIME_EXCEEDED: Icmp4Error = IcmpError {
        kind: msg_type::TIME_EXCEEDED,
        code: 1,
        word: 0,
        to_groups: false,
        stat: Stat::IcmpOutTimeExcds,
        family: PhantomData,
    };
}

impl<P: Port> Poll<'_, '_, P> {
    /// An ICMPv4 message for us: a checked echo request is answered, an error
    /// about a packet we sent goes to [`error_input`], anything else is
    /// dropped (counted).
    pub(super) fn icmp_input(&mut self, buf: P::Buf, link: usize, message: IcmpIn<Ipv4Addr>) {
        let (core, out, now) = (&mut *self.core, &mut *self.out, self.now);
        let bytes = &buf.data()[message.start..message.end];
        let icmp = match Icmpv4Packet::new_checked(bytes) {
            Ok(icmp) if icmp.verify_checksum() => icmp,
            _ => return core.lcore.counters.count_drop(DropReason::IcmpMalformed),
        };
        let kind = icmp.msg_type();
        if !message.to_group
            && matches!(
                kind,
                msg_type::DEST_UNREACHABLE | msg_type::TIME_EXCEEDED | msg_type::PARAMETER_PROBLEM
            )
        {
            return error_input::<P, Ipv4Addr>(core, out, link, now, bytes);
        }
        if kind != msg_type::ECHO_REQUEST || icmp.code() != 0 || message.to_group {
            // Echo replies, other types and broadcast pings (ignored, as Linux
            // does).
            return core.lcore.counters.count_drop(DropReason::IcmpUnhandled);
        }
        core.lcore.counters.count(Stat::IcmpInEchos);
        reply_echo(core, out, link, buf, &message);
    }
}

impl<P: Port> Poll<'_, '_, P> {
    /// Answers a datagram for a closed port (its IPv4 packet `ip_total_len`
    /// bytes long) with ICMP port unreachable, reusing its buffer
    /// ([`Poll::send_error`]).
    pub(crate) fn port_unreachable_in_place(
        &mut self,
        buf: P::Buf,
        arrival: Arrival,
        ip_total_len: usize,
    ) {
        let ip = Ipv4Packet::new_unchecked(&buf.data()[ETH_LEN..]);
        let invoking = Invoking {
            ours: ip.dst(),
            peer: ip.src(),
            end: ETH_LEN + ip_total_len,
        };
        let error = Icmp4Error::PORT_UNREACHABLE;
        self.send_error(buf, arrival, invoking, error);
    }
}

impl IcmpFamily for Ipv4Addr {
    const HEADER_LEN: usize = IP_LEN;
    const ETHER_TYPE: EtherType = EtherType::Ipv4;
    const ERROR_MAX: usize = 576;
    const ECHO_REPLY: u8 = msg_type::ECHO_REPLY;
    const OUT_ECHO_REPLIES: Stat = Stat::IcmpOutEchoReps;
    const IN_ERRORS: Stat = Stat::IcmpInErrors;
    const MALFORMED: DropReason = DropReason::IcmpMalformed;
    const BAD_QUOTE: DropReason = DropReason::IcmpBadQuote;

    fn is_group(ip: Ipv4Addr) -> bool {
        // Directed broadcasts never get here: the receive path answers only
        // packets to our own addresses.
        ip.is_multicast() || ip.is_broadcast()
    }

    fn is_unspecified(ip: Ipv4Addr) -> bool {
        ip.is_unspecified()
    }

    fn source_toward(link: &Link, peer: Ipv4Addr) -> Option<Ipv4Addr> {
        Some(link.source_for(peer))
    }

    /// An ICMP message in the first fragment (or a whole datagram) whose
    /// type is an error's: unreachable, source quench, redirect, time
    /// exceeded, parameter problem (as Linux's `icmp_pointers[].error`).
    fn carries_error(packet: &[u8]) -> bool {
        let Some(header) = packet.get(..IP_LEN) else {
            return false;
        };
        let ip = Ipv4Packet::new_unchecked(header);
        if ip.protocol() != protocol::ICMP || ip.fragment_offset() != 0 {
            return false;
        }
        let header_len = usize::from(header[0] & 0x0f) * 4;
        packet
            .get(header_len)
            .is_some_and(|kind| matches!(*kind, 3 | 4 | 5 | 11 | 12))
    }

    /// The quote: the IPv4 header and at least 8 bytes of its payload (RFC
    /// 792), so a TCP quote always holds its ports and sequence number.
    fn quote(message: &[u8]) -> Option<Quote<'_, Ipv4Addr>> {
        let quoted = message.get(8..)?;
        let header_len = usize::from(quoted.first()? & 0x0f) * 4;
        if header_len < IP_LEN {
            return None;
        }
        quoted.get(header_len..header_len + 8)?;
        let ip = Ipv4Packet::new_unchecked(quoted);
        Some(Quote {
            ours: ip.src(),
            peer: ip.dst(),
            protocol: Some(ip.protocol()),
            transport: &quoted[header_len..],
            sent: usize::from(ip.total_len()),
        })
    }

    fn peer_error(_counters: &Counters, message: &[u8]) -> PeerError {
        let icmp = Icmpv4Packet::new_unchecked(message);
        match (icmp.msg_type(), icmp.code()) {
            (msg_type::DEST_UNREACHABLE, CODE_PORT_UNREACHABLE) => PeerError::Refused,
            // No lower than MIN_PATH_MTU4 (a router of RFC 792's day says
            // 0: the floor then too).
            (msg_type::DEST_UNREACHABLE, CODE_FRAGMENTATION_NEEDED) => PeerError::TooBig {
                mtu: u32::from(icmp.next_hop_mtu()).max(MIN_PATH_MTU4 as u32),
            },
            (msg_type::DEST_UNREACHABLE, _) => PeerError::Unreachable,
            (msg_type::TIME_EXCEEDED, _) => PeerError::TimeExceeded,
            _ => PeerError::ParameterProblem,
        }
    }

    /// Linux's `__udp4_lib_err`: a parameter problem, fragmentation needed
    /// (EMSGSIZE under IP_PMTUDISC_WANT) and the unreachable codes
    /// `icmp_err_convert` marks fatal: protocol and port unreachable,
    /// network or host unknown, host isolated, administratively prohibited
    /// (9, 10, 13), precedence violation and cutoff. Network and host
    /// unreachable (also for the TOS), source route failed, codes past 15
    /// and time exceeded are soft.
    fn is_hard(message: &[u8]) -> bool {
        let icmp = Icmpv4Packet::new_unchecked(message);
        match icmp.msg_type() {
            msg_type::DEST_UNREACHABLE => matches!(icmp.code(), 2..=4 | 6..=10 | 13..=15),
            msg_type::PARAMETER_PROBLEM => true,
            _ => false,
        }
    }

    fn connected_socket<B: Buf>(
        core: &Core<B>,
        link: usize,
        (ours, our_port): (Ipv4Addr, u16),
        (peer, peer_port): (Ipv4Addr, u16),
    ) -> Option<SocketId> {
        let peer = SocketAddrV4::new(peer, peer_port);
        let key = FlowKey {
            src: peer,
            dst: SocketAddrV4::new(ours, our_port),
            device: link as u16,
            lcore: core.lcore.index,
        };
        let socket = core.shared.udp.lookup(&key)?;
        // IPv4-mapped peers of IPv6 sockets included.
        (core.shared.udp.peer_addr(socket) == Some(peer)).then_some(socket)
    }

    /// The request's padding trimmed, then its IPv4 header turned around
    /// (in place, or rebuilt without options).
    fn turn_around_echo<B: Buf>(
        core: &mut Core<B>,
        link: usize,
        buf: &mut B,
        request: &IcmpIn<Ipv4Addr>,
    ) -> Option<(Ipv4Addr, Ipv4Addr)> {
        let padding = buf.len().saturating_sub(request.end);
        if padding > 0 {
            buf.trim(padding);
        }
        let Some(mtu) = core.shared.links.get(link).map(|l| l.mtu) else {
            core.lcore.counters.count_drop(DropReason::TxNoRoute);
            return None;
        };
        turn_around_ipv4(core, buf, mtu);
        Some((request.dst, request.src))
    }

    fn emit_header<B: Buf>(
        core: &mut Core<B>,
        ip: &mut [u8],
        (src, dst): (Ipv4Addr, Ipv4Addr),
        len: usize,
    ) {
        let ident = core.ident();
        Ipv4Packet::new_unchecked(ip).emit_header(&Ipv4Header {
            src,
            dst,
            protocol: protocol::ICMP,
            payload_len: len as u16,
            ttl: DEFAULT_HOP_LIMIT,
            ident,
            dont_fragment: false,
            tos: 0,
        });
    }

    fn finish_message(
        message: &mut [u8],
        _addresses: (Ipv4Addr, Ipv4Addr),
        (kind, code): (u8, u8),
        word: Option<u32>,
    ) {
        let mut icmp = Icmpv4Packet::new_unchecked(message);
        icmp.set_type_code(kind, code);
        if let Some(word) = word {
            icmp.set_body_word(word.to_be_bytes());
        }
        icmp.fill_checksum();
    }

    /// Fragmented if the link's MTU is below the error's 576 bytes.
    fn transmit_error<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        buf: P::Buf,
    ) {
        transmit_ipv4(core, out, link, buf);
    }
}
