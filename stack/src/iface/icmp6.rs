//! ICMPv6 (RFC 4443) on one link: the receive dispatch (echo requests
//! answered in their own buffer, Neighbor Discovery to `nd`, errors about
//! our packets received) and the errors the IPv6 and UDP layers send
//! ([`Poll::icmp6_error`]: port unreachable, parameter problems). The
//! steps IPv4 shares are written once in `icmp`, over this module's
//! [`IcmpFamily`] implementation for `Ipv6Addr`.
//!
//! Packet too big is never sent: a host does not forward. Owning lcore
//! only: no allocation, no panic, every drop counted.

use super::config::DEFAULT_HOP_LIMIT;
use super::icmp::Invoking;
use super::icmp::{error_input, reply_echo, IcmpError, IcmpFamily, IcmpIn, Quote};
use super::ip::MIN_MTU;
use super::mld;
use super::nd;
use super::poll::{Arrival, Poll};
use super::transmit::Out;
use super::{Core, Link};
use crate::counters::{Counters, DropReason, Stat};
use crate::port::{Buf, Port};
use crate::udp::table::FlowKey6;
use crate::udp::{PeerError, SocketId};
use crate::wire::ethernet::{EtherType, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv6::{msg_type, Icmpv6Packet, CODE_PORT_UNREACHABLE, HEADER_LEN as ICMP6_LEN};
use crate::wire::ipv6::HEADER_LEN as IP6_LEN;
use crate::wire::ipv6::{
    next_header, walk_extensions, Ipv6Header, Ipv6Packet, MAX_EXTENSION_HEADERS,
};
use core::marker::PhantomData;
use core::net::{Ipv6Addr, SocketAddr, SocketAddrV6};

/// Which ICMPv6 error to send.
pub(crate) type Icmp6Error = IcmpError<Ipv6Addr>;

impl IcmpError<Ipv6Addr> {
    /// Destination unreachable, port unreachable.
    pub(crate) const PORT_UNREACHABLE: Icmp6Error = IcmpError {
        kind: msg_type::DEST_UNREACHABLE,
        code: CODE_PORT_UNREACHABLE,
        word: 0,
        to_groups: false,
        stat: Stat::Icmp6OutDestUnreachs,
        family: PhantomData,
    };

    /// Time exceeded, fragment reassembly time exceeded (RFC 4443 3.3).
    pub(crate) const REASSEMBLY_TIME_EXCEEDED: Icmp6Error = IcmpError {
        kind: msg_type::TIME_EXCEEDED,
        code: 1,
        word: 0,
        to_groups: false,
        stat: Stat::Icmp6OutTimeExcds,
        family: PhantomData,
    };

    /// Parameter problem `code` pointing at byte `pointer` of the invoking
    /// packet.
    pub(crate) fn parameter_problem(code: u8, pointer: usize) -> Icmp6Error {
        IcmpError {
            kind: msg_type::PARAMETER_PROBLEM,
            code,
            word: pointer as u32,
            to_groups: code == 2,
            stat: Stat::Icmp6OutParmProblems,
            family: PhantomData,
        }
    }
}

impl<P: Port> Poll<'_, '_, P> {
    /// An ICMPv6 message for us (its checksum checked here): echo
    /// requests answered, Neighbor Discovery handed to `nd`, errors about
    /// packets we sent to [`error_input`]; only a neighbour solicitation
    /// (duplicate address detection) may come from the unspecified
    /// address.
    pub(super) fn icmp6_input(&mut self, buf: P::Buf, link: usize, message: IcmpIn<Ipv6Addr>) {
        let (core, out, now) = (&mut *self.core, &mut *self.out, self.now);
        let bytes = &buf.data()[message.start..message.end];
        let icmp = match Icmpv6Packet::new_checked(bytes) {
            Ok(icmp) if icmp.verify_checksum(message.src, message.dst) => icmp,
            _ => return core.lcore.counters.count_drop(DropReason::Icmp6Malformed),
        };
        let kind = icmp.msg_type();
        if message.src.is_unspecified() && kind != msg_type::NEIGHBOR_SOLICITATION {
            return core.lcore.counters.count_drop(DropReason::Ipv6BadSource);
        }
        match kind {
            msg_type::ECHO_REQUEST if icmp.code() == 0 => {
                core.lcore.counters.count(Stat::Icmp6InEchos);
                reply_echo(core, out, link, buf, &message);
            }
            msg_type::NEIGHBOR_SOLICITATION | msg_type::NEIGHBOR_ADVERTISEMENT => {
                nd::neighbor_message(core, out, link, now, buf, &message)
            }
            msg_type::ROUTER_ADVERTISEMENT => {
                nd::router_advert(core, out, link, now, &buf, &message)
            }
            msg_type::MLD_QUERY => mld::query(core, link, now, &buf, &message),
            msg_type::DEST_UNREACHABLE
            | msg_type::PACKET_TOO_BIG
            | msg_type::TIME_EXCEEDED
            | msg_type::PARAMETER_PROBLEM => {
                error_input::<P, Ipv6Addr>(core, out, link, now, bytes)
            }
            _ => core.lcore.counters.count_drop(DropReason::Icmp6Unhandled),
        }
    }
}

impl<P: Port> Poll<'_, '_, P> {
    /// Answers the packet in `buf` with ICMPv6 `error`
    /// ([`Poll::send_error`]: in its buffer, quoting up to the minimum MTU,
    /// rate-limited; never to `::`, and to a group only for parameter
    /// problem code 2; never about an ICMPv6 error).
    pub(crate) fn icmp6_error(
        &mut self,
        buf: P::Buf,
        arrival: Arrival,
        invoking: Invoking<Ipv6Addr>,
        error: Icmp6Error,
    ) {
        self.send_error(buf, arrival, invoking, error);
    }
}

/// True if the IPv6 `packet`'s upper layer is an ICMPv6 error message,
/// found past its extension headers whatever their options say (as
/// Linux's `is_ineligible`); not known for a fragment other than the
/// first, nor when the message type is cut off.
fn carries_icmp6_error(packet: &[u8]) -> bool {
    let Some(&first) = packet.get(6) else {
        return false;
    };
    let (mut next, mut at) = (first, IP6_LEN);
    for _ in 0..=MAX_EXTENSION_HEADERS {
        match next {
            next_header::HOP_BY_HOP | next_header::ROUTING | next_header::DEST_OPTIONS => {
                let Some(&[following, units]) = packet.get(at..at + 2) else {
                    return false;
                };
                (next, at) = (following, at + (usize::from(units) + 1) * 8);
            }
            next_header::FRAGMENT => {
                let Some(&[following, _, offset_high, offset_low]) = packet.get(at..at + 4) else {
                    return false;
                };
                if u16::from_be_bytes([offset_high, offset_low]) & 0xfff8 != 0 {
                    return false;
                }
                (next, at) = (following, at + 8);
            }
            next_header::ICMPV6 => return packet.get(at).is_some_and(|&kind| kind < 128),
            _ => return false,
        }
    }
    false
}

impl IcmpFamily for Ipv6Addr {
    const HEADER_LEN: usize = IP6_LEN;
    const ETHER_TYPE: EtherType = EtherType::Ipv6;
    const ERROR_MAX: usize = MIN_MTU;
    const ECHO_REPLY: u8 = msg_type::ECHO_REPLY;
    const OUT_ECHO_REPLIES: Stat = Stat::Icmp6OutEchoReplies;
    const IN_ERRORS: Stat = Stat::Icmp6InErrors;
    const MALFORMED: DropReason = DropReason::Icmp6Malformed;
    const BAD_QUOTE: DropReason = DropReason::Icmp6BadQuote;

    fn is_group(ip: Ipv6Addr) -> bool {
        ip.is_multicast()
    }

    fn is_unspecified(ip: Ipv6Addr) -> bool {
        ip.is_unspecified()
    }

    fn source_toward(link: &Link, peer: Ipv6Addr) -> Option<Ipv6Addr> {
        link.source_for6(peer)
    }

    fn carries_error(packet: &[u8]) -> bool {
        carries_icmp6_error(packet)
    }

    /// The quote: at least the fixed IPv6 header (the packet is cut short,
    /// so its length field is not checked against it); its extension
    /// headers are walked to find the transport header.
    fn quote(message: &[u8]) -> Option<Quote<'_, Ipv6Addr>> {
        let quoted = message.get(ICMP6_LEN..)?;
        let rest = quoted.get(IP6_LEN..)?;
        let ip = Ipv6Packet::new_unchecked(quoted);
        let walked = walk_extensions(ip.next_header(), rest).ok();
        Some(Quote {
            ours: ip.src(),
            peer: ip.dst(),
            protocol: walked.as_ref().map(|e| e.protocol),
            transport: walked.map_or(&[][..], |e| rest.get(e.offset..).unwrap_or_default()),
            sent: IP6_LEN + usize::from(ip.payload_len()),
        })
    }

    fn peer_error(counters: &Counters, message: &[u8]) -> PeerError {
        let icmp = Icmpv6Packet::new_unchecked(message);
        match icmp.msg_type() {
            msg_type::DEST_UNREACHABLE if icmp.code() == CODE_PORT_UNREACHABLE => {
                PeerError::Refused
            }
            msg_type::DEST_UNREACHABLE => PeerError::Unreachable,
            msg_type::PACKET_TOO_BIG => {
                counters.count(Stat::Icmp6InPktTooBigs);
                PeerError::TooBig {
                    mtu: u32::from_be_bytes(icmp.body_word()).max(MIN_MTU as u32),
                }
            }
            msg_type::TIME_EXCEEDED => PeerError::TimeExceeded,
            _ => PeerError::ParameterProblem,
        }
    }

    /// Linux's `__udp6_lib_err` with `icmpv6_err_convert`: every
    /// unreachable code but no route (0), beyond the scope of the source
    /// address (2, the table's former "not a neighbour") and address
    /// unreachable (3), a packet too big (EMSGSIZE under
    /// IPV6_PMTUDISC_WANT) and a parameter problem; time exceeded is soft.
    fn is_hard(message: &[u8]) -> bool {
        let icmp = Icmpv6Packet::new_unchecked(message);
        match icmp.msg_type() {
            msg_type::DEST_UNREACHABLE => !matches!(icmp.code(), 0 | 2 | 3),
            msg_type::PACKET_TOO_BIG | msg_type::PARAMETER_PROBLEM => true,
            _ => false,
        }
    }

    fn connected_socket<B: Buf>(
        core: &Core<B>,
        link: usize,
        (ours, our_port): (Ipv6Addr, u16),
        (peer, peer_port): (Ipv6Addr, u16),
    ) -> Option<SocketId> {
        let key = FlowKey6 {
            src: SocketAddrV6::new(peer, peer_port, 0, 0),
            dst: SocketAddrV6::new(ours, our_port, 0, 0),
            device: link as u16,
            lcore: core.lcore.index,
        };
        let socket = core.shared.udp.lookup6(&key)?;
        let connected_to_peer = matches!(
            core.shared.udp.remote_addr(socket),
            Some(SocketAddr::V6(remote)) if *remote.ip() == peer && remote.port() == peer_port
        );
        connected_to_peer.then_some(socket)
    }

    /// The message moves up to right after a fresh IPv6 header (extension
    /// headers are not echoed) and the addresses swap; a request to a group
    /// is answered from our link-local address.
    fn turn_around_echo<B: Buf>(
        core: &mut Core<B>,
        link: usize,
        buf: &mut B,
        request: &IcmpIn<Ipv6Addr>,
    ) -> Option<(Ipv6Addr, Ipv6Addr)> {
        let source = if request.to_group {
            let Some(ip) = core.shared.links.get(link).and_then(|l| l.link_local6()) else {
                core.lcore.counters.count_drop(DropReason::TxNoRoute);
                return None;
            };
            ip
        } else {
            request.dst
        };
        let message_len = request.end - request.start;
        let frame_len = ETH_LEN + IP6_LEN + message_len;
        let frame = buf.data_mut();
        frame.copy_within(request.start..request.end, ETH_LEN + IP6_LEN);
        Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
            src: source,
            dst: request.src,
            next_header: next_header::ICMPV6,
            payload_len: message_len as u16,
            hop_limit: DEFAULT_HOP_LIMIT,
        });
        let excess = buf.len() - frame_len;
        if excess > 0 {
            buf.trim(excess);
        }
        Some((source, request.src))
    }

    fn emit_header<B: Buf>(
        _core: &mut Core<B>,
        ip: &mut [u8],
        (src, dst): (Ipv6Addr, Ipv6Addr),
        len: usize,
    ) {
        Ipv6Packet::new_unchecked(ip).emit_header(&Ipv6Header {
            src,
            dst,
            next_header: next_header::ICMPV6,
            payload_len: len as u16,
            hop_limit: DEFAULT_HOP_LIMIT,
        });
    }

    fn finish_message(
        message: &mut [u8],
        (src, dst): (Ipv6Addr, Ipv6Addr),
        (kind, code): (u8, u8),
        word: Option<u32>,
    ) {
        let mut icmp = Icmpv6Packet::new_unchecked(message);
        icmp.set_type_code(kind, code);
        if let Some(word) = word {
            icmp.set_body_word(word.to_be_bytes());
        }
        icmp.fill_checksum(src, dst);
    }

    /// Whole: an error fits the minimum MTU.
    fn transmit_error<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        buf: P::Buf,
    ) {
        core.lcore.counters.count(Stat::Ip6OutRequests);
        out.push(link, buf, &core.lcore.counters);
    }
}
