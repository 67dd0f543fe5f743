//! ICMP for both families, the steps they share written once over
//! [`IcmpFamily`]: an error received (its quote checked, then handed to TCP,
//! a connected UDP socket or the path-MTU table, [`error_input`]), an echo
//! request turned into its reply in its own buffer ([`reply_echo`]), and an
//! error sent in the invoking packet's buffer, its quote bounded and the
//! rate held by the interface's one token bucket ([`Poll::send_error`]).
//!
//! What each family does alone (its message types, its dispatch, Neighbor
//! Discovery) is in `icmp4` and `icmp6`, which implement [`IcmpFamily`] for
//! `Ipv4Addr` and `Ipv6Addr`.
//!
//! Owning lcore only; not the measured hot path (pings and errors), but
//! per packet all the same: no allocation, no panic, every drop counted.

use super::ip::turn_around_ethernet;
use super::next_hop::NextHopAddr;
use super::poll::{Arrival, Poll};
use super::tcp;
use super::transmit::Out;
use super::{Core, Link};
use crate::counters::{Counters, DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::udp::{PeerError, SocketId};
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv4::HEADER_LEN as ICMP_LEN;
use crate::wire::ipv4::protocol;
use core::marker::PhantomData;
use core::net::IpAddr;

/// An ICMP message as its IP layer handed it over.
#[derive(Debug, Clone, Copy)]
pub(super) struct IcmpIn<A> {
    /// The previous hop, where replies go.
    pub(super) eth_src: MacAddr,
    pub(super) src: A,
    pub(super) dst: A,
    /// Sent to a group: an IPv4 broadcast or an IPv6 multicast address.
    pub(super) to_group: bool,
    /// Where the message starts in the frame (its ICMP header).
    pub(super) start: usize,
    /// Where its IP packet ends in the frame.
    pub(super) end: usize,
}

/// The packet an ICMP error answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Invoking<A> {
    /// Where it was sent (one of ours, or a group).
    pub(crate) ours: A,
    /// Its sender.
    pub(crate) peer: A,
    /// The end of its IP packet in the frame.
    pub(crate) end: usize,
}

/// Which ICMP error to send, in the numbers of family `A` (the
/// constructors are in `icmp4` and `icmp6`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct IcmpError<A> {
    pub(super) kind: u8,
    pub(super) code: u8,
    /// The second word of the message (pointer, MTU, or zero).
    pub(super) word: u32,
    /// Also answer packets sent to a group (RFC 4443 2.4 (e.3): packet too
    /// big, and parameter problem code 2).
    pub(super) to_groups: bool,
    /// The counter of this message sent.
    pub(super) stat: Stat,
    pub(super) family: PhantomData<A>,
}

/// The packet an ICMP error quotes, as far as the quote goes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Quote<'a, A> {
    /// Its source: ours, if we sent it.
    pub(super) ours: A,
    /// Its destination.
    pub(super) peer: A,
    /// Its transport protocol (IANA numbers, as both families' headers
    /// name them), if the quoted headers say.
    pub(super) protocol: Option<u8>,
    /// The quoted transport header onward, possibly cut short.
    pub(super) transport: &'a [u8],
    /// Its length as sent (the quoted IP header's length field).
    pub(super) sent: usize,
}

/// What the shared ICMP steps need to know of an address family.
pub(super) trait IcmpFamily: NextHopAddr + Into<IpAddr> {
    /// The IP header ICMP messages go out with (no options, no extension
    /// headers).
    const HEADER_LEN: usize;
    const ETHER_TYPE: EtherType;
    /// The longest error we send: the invoking packet is quoted up to it
    /// (IPv4: RFC 1812 4.3.2.3's 576 bytes; IPv6: the minimum MTU, RFC
    /// 4443 2.4 (c)).
    const ERROR_MAX: usize;
    const ECHO_REPLY: u8;
    const OUT_ECHO_REPLIES: Stat;
    const IN_ERRORS: Stat;
    /// An error message too short for its quote.
    const MALFORMED: DropReason;
    /// An error quoting a packet we did not send.
    const BAD_QUOTE: DropReason;

    /// True if `ip` names a group (no error answers a packet sent to one
    /// unless it says so).
    fn is_group(ip: Self) -> bool;

    /// True if `ip` is the unspecified address (no error answers it).
    fn is_unspecified(ip: Self) -> bool;

    /// Our address on `link` to speak to `peer` from.
    fn source_toward(link: &Link, peer: Self) -> Option<Self>;

    /// True if the IP `packet` (an error's invoking packet) carries an
    /// ICMP error message of this family, which no error answers (RFC
    /// 1122 3.2.2, RFC 4443 2.4 (e.1)).
    fn carries_error(packet: &[u8]) -> bool;

    /// The packet error `message` (its 8-byte header checked) quotes;
    /// `None` if the quote is too short to read.
    fn quote(message: &[u8]) -> Option<Quote<'_, Self>>;

    /// What error `message` (its 8-byte header checked) means to the sender
    /// of the quoted packet (counting the family's per-type input
    /// counters).
    fn peer_error(counters: &Counters, message: &[u8]) -> PeerError;

    /// True if error `message` (its 8-byte header checked) is "hard":
    /// reported to a connected UDP socket, as Linux does without
    /// IP_RECVERR (`icmp_err_convert`'s fatal errors, `icmpv6_err_convert`
    /// for IPv6, and a "too big" under the default path MTU discovery); a
    /// soft one (network or host unreachable, time exceeded) is transient
    /// and not the socket's business.
    fn is_hard(message: &[u8]) -> bool;

    /// The UDP socket that sent from `ours` to `peer` and is connected to
    /// `peer`: only those hear errors (as the kernel without IP_RECVERR).
    fn connected_socket<B: Buf>(
        core: &Core<B>,
        link: usize,
        ours: (Self, u16),
        peer: (Self, u16),
    ) -> Option<SocketId>;

    /// Turns the IP header of the echo request in `buf` around for its
    /// reply (the Ethernet header is left to the caller) and trims the
    /// frame to the reply's end; returns the reply's (source, destination),
    /// or `None` when it was dropped (counted).
    fn turn_around_echo<B: Buf>(
        core: &mut Core<B>,
        link: usize,
        buf: &mut B,
        request: &IcmpIn<Self>,
    ) -> Option<(Self, Self)>;

    /// Writes at the start of `ip` the header of an ICMP message of `len`
    /// bytes from `src` to `dst`.
    fn emit_header<B: Buf>(core: &mut Core<B>, ip: &mut [u8], addresses: (Self, Self), len: usize);

    /// Sets the message's type and code, its second word if `word` says,
    /// and its checksum (over the pseudo-header of `addresses` where the
    /// family has one).
    fn finish_message(
        message: &mut [u8],
        addresses: (Self, Self),
        kind_code: (u8, u8),
        word: Option<u32>,
    );

    /// Sends a finished error out of `link`.
    fn transmit_error<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        buf: P::Buf,
    );
}

/// An ICMP error about a packet we sent (RFC 1122 3.2.2, RFC 4443 2.4):
/// its quote must name one of our addresses as source; one about a TCP
/// segment goes to its connection ([`tcp::icmp_error`], which checks the
/// quote further); otherwise a "too big" may lower the path MTU (never
/// raise it, RFC 8201 4), and a hard error ([`IcmpFamily::is_hard`])
/// about a datagram of a UDP socket connected to the quoted destination is
/// recorded for that socket.
pub(super) fn error_input<P: Port, A: IcmpFamily>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    message: &[u8],
) {
    core.lcore.counters.count(A::IN_ERRORS);
    let Some(quote) = A::quote(message) else {
        return core.lcore.counters.count_drop(A::MALFORMED);
    };
    if !A::is_ours(core, link, quote.ours) {
        return core.lcore.counters.count_drop(A::BAD_QUOTE);
    }
    let error = A::peer_error(&core.lcore.counters, message);
    if quote.protocol == Some(protocol::TCP) {
        let Some(head) = quote.transport.get(..8) else {
            return core.lcore.counters.count_drop(A::MALFORMED);
        };
        let addresses = (quote.ours.into(), quote.peer.into());
        let quoted = tcp::IcmpQuote::new(addresses, head, quote.sent);
        return tcp::icmp_error(core, out, now, quoted, tcp::IcmpKind::from(error));
    }
    // A "too big" about anything but a TCP segment (TCP checks its own)
    // lowers the path MTU: IPv6 sends fragment to it, IPv4 ones set DF only
    // on what fits it and fragment the rest to it.
    if let PeerError::TooBig { mtu } = error {
        core.learn_path_mtu(quote.peer.into(), mtu as usize, now);
    }
    let (Some(protocol::UDP), Some(ports)) = (quote.protocol, quote.transport.get(..4)) else {
        return;
    };
    if !A::is_hard(message) {
        return;
    }
    let our_port = u16::from_be_bytes([ports[0], ports[1]]);
    let peer_port = u16::from_be_bytes([ports[2], ports[3]]);
    let ours = (quote.ours, our_port);
    if let Some(socket) = A::connected_socket(core, link, ours, (quote.peer, peer_port)) {
        record_socket_error(core, socket, error);
    }
}

/// Keeps `error` for `socket` until the burst's end, when the handler
/// hears it; errors for connected sockets past the list's bound in one
/// burst are dropped and counted.
fn record_socket_error<B: Buf>(core: &mut Core<B>, socket: SocketId, error: PeerError) {
    if core.lcore.socket_errors.try_push((socket, error)).is_err() {
        core.lcore
            .counters
            .count_drop(DropReason::IcmpSocketErrorOverflow);
    }
}

/// Turns an echo request into its reply in its own buffer, back to the
/// previous hop (the family turns the IP header around), and sends it; a
/// reply over the MTU leaves in fragments.
pub(super) fn reply_echo<P: Port, A: IcmpFamily>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mut buf: P::Buf,
    request: &IcmpIn<A>,
) {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let Some(addresses) = A::turn_around_echo(core, link, &mut buf, request) else {
        return;
    };
    turn_around_ethernet(&mut buf, our_mac, request.eth_src);
    let Some(message) = buf.data_mut().get_mut(ETH_LEN + A::HEADER_LEN..) else {
        // The request held both headers, so this cannot happen.
        return core.lcore.counters.count_drop(A::MALFORMED);
    };
    A::finish_message(message, addresses, (A::ECHO_REPLY, 0), None);
    core.lcore.counters.count(A::OUT_ECHO_REPLIES);
    let _ = A::transmit(core, out, link, buf); // failures are counted inside
}

impl<P: Port> Poll<'_, '_, P> {
    /// Answers the packet in `buf` with `error`, reusing its buffer: new
    /// headers go in front of the invoking packet, quoted as far as
    /// [`IcmpFamily::ERROR_MAX`] allows, back to the previous hop (the
    /// arrival's Ethernet source) through the arrival link. Never for a
    /// packet from the unspecified address, nor for one sent to a group
    /// (its IP destination, or its Ethernet one: a link-layer broadcast or
    /// multicast) unless the error says so, nor for an ICMP error (RFC
    /// 1122 3.2.2, RFC 4443 2.4 (e)); within the interface's
    /// ICMP error rate (`Core::icmp_limit`, one bucket for both families).
    /// Counts the message.
    pub(super) fn send_error<A: IcmpFamily>(
        &mut self,
        mut buf: P::Buf,
        arrival: Arrival,
        invoking: Invoking<A>,
        error: IcmpError<A>,
    ) {
        let (core, out, now) = (&mut *self.core, &mut *self.out, self.now);
        let Arrival {
            link,
            eth_src,
            to_group_mac,
        } = arrival;
        let to_group = A::is_group(invoking.ours);
        // RFC 1122 3.2.2, RFC 4443 2.4 (e.2, e.4): a link-layer broadcast or
        // multicast is answered as a packet to a group.
        if (to_group || to_group_mac) && !error.to_groups || A::is_unspecified(invoking.peer) {
            return; // the caller counted the invoking packet's drop
        }
        let invoking_packet = buf.data().get(ETH_LEN..invoking.end);
        if invoking_packet.is_some_and(A::carries_error) {
            return; // likewise
        }
        if !core.lcore.icmp_limit.take(now) {
            return core.lcore.counters.count_drop(DropReason::IcmpRateLimited);
        }
        let Some(here) = core.shared.links.get(link) else {
            return core.lcore.counters.count_drop(DropReason::TxNoRoute);
        };
        let our_mac = here.mac;
        let source = if to_group {
            match A::source_toward(here, invoking.peer) {
                Some(ip) => ip,
                None => return core.lcore.counters.count_drop(DropReason::TxNoRoute),
            }
        } else {
            invoking.ours
        };
        let quoted = invoking
            .end
            .saturating_sub(ETH_LEN)
            .min(A::ERROR_MAX - A::HEADER_LEN - ICMP_LEN);
        let excess = buf.len().saturating_sub(ETH_LEN + quoted);
        buf.trim(excess);
        if buf.prepend(A::HEADER_LEN + ICMP_LEN).is_none() {
            return core.lcore.counters.count_drop(DropReason::TxNoBuffer);
        }
        let frame = buf.data_mut();
        let mut eth = EthernetFrame::new_unchecked(&mut *frame);
        eth.set_dst(eth_src);
        eth.set_src(our_mac);
        eth.set_ethertype(A::ETHER_TYPE);
        let addresses = (source, invoking.peer);
        A::emit_header(core, &mut frame[ETH_LEN..], addresses, ICMP_LEN + quoted);
        let message = &mut frame[ETH_LEN + A::HEADER_LEN..];
        A::finish_message(
            message,
            addresses,
            (error.kind, error.code),
            Some(error.word),
        );
        core.lcore.counters.count(error.stat);
        A::transmit_error(core, out, link, buf);
    }
}

#[cfg(test)]
mod tests {
    //! The two families' readings of an error, side by side: what each
    //! quote yields, and what each error means to the sender.

    use super::*;
    use crate::wire::ipv4::{Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
    use crate::wire::ipv6::{next_header, Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN};
    use crate::wire::{icmpv4, icmpv6};
    use core::net::{Ipv4Addr, Ipv6Addr};

    const OURS4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);
    const PEER4: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    const OURS6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    const PEER6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2);
    /// An error's type, code and second word.
    type Error = (u8, u8, [u8; 4]);

    /// The first bytes of a UDP header: ports 4000 -> 5000, length 16.
    const UDP_HEAD: [u8; 8] = [0x0f, 0xa0, 0x13, 0x88, 0, 16, 0, 0];

    /// An ICMPv4 error (`kind`, `code`, second word `word`) quoting an
    /// IPv4 packet of `protocol` from us to the peer and `transport` bytes
    /// of its payload.
    fn error4((kind, code, word): Error, protocol: u8, transport: &[u8]) -> Vec<u8> {
        let mut m = vec![kind, code, 0, 0, word[0], word[1], word[2], word[3]];
        let mut ip = [0u8; IP_LEN];
        Ipv4Packet::new_unchecked(&mut ip[..]).emit_header(&Ipv4Header {
            src: OURS4,
            dst: PEER4,
            protocol,
            payload_len: 16,
            ttl: 64,
            ident: 1,
            dont_fragment: true,
            tos: 0,
        });
        m.extend_from_slice(&ip);
        m.extend_from_slice(transport);
        m
    }

    /// The ICMPv6 twin of [`error4`], with `next` as the quoted next
    /// header.
    fn error6((kind, code, word): Error, next: u8, transport: &[u8]) -> Vec<u8> {
        let mut m = vec![kind, code, 0, 0, word[0], word[1], word[2], word[3]];
        let mut ip = [0u8; IP6_LEN];
        Ipv6Packet::new_unchecked(&mut ip[..]).emit_header(&Ipv6Header {
            src: OURS6,
            dst: PEER6,
            next_header: next,
            payload_len: 16,
            hop_limit: 64,
        });
        m.extend_from_slice(&ip);
        m.extend_from_slice(transport);
        m
    }

    const PORT4: Error = (icmpv4::msg_type::DEST_UNREACHABLE, 3, [0; 4]);
    const PORT6: Error = (icmpv6::msg_type::DEST_UNREACHABLE, 4, [0; 4]);

    #[test]
    fn a_whole_quote_names_its_addresses_protocol_transport_and_length() {
        let m = error4(PORT4, protocol::UDP, &UDP_HEAD);
        let q = Ipv4Addr::quote(&m).expect("quote");
        assert_eq!(
            (q.ours, q.peer, q.protocol),
            (OURS4, PEER4, Some(protocol::UDP))
        );
        assert_eq!((q.transport, q.sent), (&UDP_HEAD[..], IP_LEN + 16));

        let m = error6(PORT6, next_header::UDP, &UDP_HEAD);
        let q = Ipv6Addr::quote(&m).expect("quote");
        assert_eq!(
            (q.ours, q.peer, q.protocol),
            (OURS6, PEER6, Some(protocol::UDP))
        );
        assert_eq!((q.transport, q.sent), (&UDP_HEAD[..], IP6_LEN + 16));
    }

    #[test]
    fn quotes_too_short_to_read_are_refused() {
        // IPv4: the header and 8 bytes of payload (RFC 792), an IHL of at
        // least 5.
        assert!(Ipv4Addr::quote(&error4(PORT4, protocol::UDP, &UDP_HEAD[..7])).is_none());
        let mut m = error4(PORT4, protocol::UDP, &UDP_HEAD);
        m[8] = 0x44;
        assert!(Ipv4Addr::quote(&m).is_none());
        // IPv6: the fixed header; the transport header may be cut short (a
        // TCP quote is refused later, a UDP one ignored).
        let m = error6(PORT6, next_header::UDP, &[]);
        assert!(Ipv6Addr::quote(&m[..m.len() - 1]).is_none());
        let q = Ipv6Addr::quote(&m).expect("fixed header");
        assert_eq!((q.protocol, q.transport), (Some(protocol::UDP), &[][..]));
    }

    #[test]
    fn an_ipv6_quote_walks_extension_headers_to_the_transport() {
        // A destination options header (8 bytes, PadN) before UDP.
        let mut transport = vec![next_header::UDP, 0, 1, 4, 0, 0, 0, 0];
        transport.extend_from_slice(&UDP_HEAD);
        let m = error6(PORT6, next_header::DEST_OPTIONS, &transport);
        let q = Ipv6Addr::quote(&m).expect("quote");
        assert_eq!(
            (q.protocol, q.transport),
            (Some(protocol::UDP), &UDP_HEAD[..])
        );
        // A chain that runs past the quote: no protocol, nothing to read.
        let m = error6(PORT6, next_header::DEST_OPTIONS, &transport[..4]);
        let q = Ipv6Addr::quote(&m).expect("fixed header");
        assert_eq!((q.protocol, q.transport), (None, &[][..]));
    }

    #[test]
    fn each_family_reads_what_its_errors_mean() {
        use icmpv4::msg_type as v4;
        use icmpv6::msg_type as v6;
        let counters = Counters::default();
        let cases4: [(Error, PeerError); 5] = [
            (PORT4, PeerError::Refused),
            (
                (v4::DEST_UNREACHABLE, 4, [0, 0, 0x05, 0x78]),
                PeerError::TooBig { mtu: 1400 },
            ),
            ((v4::DEST_UNREACHABLE, 1, [0; 4]), PeerError::Unreachable),
            ((v4::TIME_EXCEEDED, 0, [0; 4]), PeerError::TimeExceeded),
            (
                (v4::PARAMETER_PROBLEM, 0, [0; 4]),
                PeerError::ParameterProblem,
            ),
        ];
        for (error, meaning) in cases4 {
            let m = error4(error, protocol::UDP, &UDP_HEAD);
            assert_eq!(Ipv4Addr::peer_error(&counters, &m), meaning, "{error:?}");
        }
        let cases6: [(Error, PeerError); 6] = [
            (PORT6, PeerError::Refused),
            ((v6::DEST_UNREACHABLE, 0, [0; 4]), PeerError::Unreachable),
            // Never below the minimum MTU (RFC 8201 4).
            (
                (v6::PACKET_TOO_BIG, 0, 1400u32.to_be_bytes()),
                PeerError::TooBig { mtu: 1400 },
            ),
            (
                (v6::PACKET_TOO_BIG, 0, 1000u32.to_be_bytes()),
                PeerError::TooBig { mtu: 1280 },
            ),
            ((v6::TIME_EXCEEDED, 0, [0; 4]), PeerError::TimeExceeded),
            (
                (v6::PARAMETER_PROBLEM, 1, [0; 4]),
                PeerError::ParameterProblem,
            ),
        ];
        for (error, meaning) in cases6 {
            let m = error6(error, next_header::UDP, &UDP_HEAD);
            assert_eq!(Ipv6Addr::peer_error(&counters, &m), meaning, "{error:?}");
        }
        assert_eq!(counters.get(Stat::Icmp6InPktTooBigs), 2);
    }
}
