//! IP in, for both families: a packet that `ethernet` found addressed to
//! us is validated (IPv4: [`Poll::ipv4_input`]; IPv6: [`Poll::ipv6_input`]
//! and the bounded extension-header walk of `local6_input`), a fragment
//! goes to the lcore's reassembler of its family (`reassemble`, written
//! once), and a whole datagram goes to its protocol: ICMP or ICMPv6, UDP,
//! TCP. Each step is a method of the per-poll context ([`Poll`]) and takes
//! the frame's [`Arrival`]. The reassemblers' timeouts are handled here too
//! ([`Poll::reassembly_timeouts`], from the timers).
//!
//! Per packet, owning lcore only: no allocation, no lookup beyond the
//! address checks, no panic (every view is checked before it is read). A
//! packet ends in exactly one of: a reply pushed to the tx batch, a
//! datagram handed back in `delivered`, or a counted drop.

use super::family::IpFamily;
use super::Delivered;
use crate::counters::{DropReason, Stat};
use crate::iface::icmp::{IcmpIn, Invoking};
use crate::iface::icmp4::Icmp4Error;
use crate::iface::icmp6::Icmp6Error;
use crate::iface::igmp;
use crate::iface::poll::{Arrival, Poll};
use crate::iface::tcp::{self, TcpIn};
use crate::iface::udp::UdpIn;
use crate::port::{Buf, ChecksumStatus, Port};
use crate::reassembly::{Fragment, Key4, Key6, Origin, Reassembly, TimedOut};
use crate::route::{V4, V6};
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::icmpv6::{
    CODE_ERRONEOUS_FIELD, CODE_INCOMPLETE_CHAIN, CODE_UNRECOGNIZED_NEXT_HEADER,
    CODE_UNRECOGNIZED_OPTION,
};
use crate::wire::ipv4::{field as ipv4_field, protocol, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::ipv6::HEADER_LEN as IP6_LEN;
use crate::wire::ipv6::{next_header, walk_extensions, Extensions, FragmentHeader, Ipv6Packet};
use crate::wire::tcp::HEADER_LEN as TCP_LEN;
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use crate::wire::{Ecn, WireError};
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

impl<P: Port> Poll<'_, '_, P> {
    /// IPv4 in: version, header length, total length against the frame and
    /// the header checksum (per the checksum policy), martian sources, our
    /// address or a broadcast one (any TTL); a fragment goes to reassembly; then
    /// the protocol's input.
    pub(crate) fn ipv4_input(
        &mut self,
        buf: P::Buf,
        arrival: Arrival,
        delivered: &mut Delivered<P::Buf>,
    ) {
        self.core.lcore.counters.count(Stat::IpInReceives);
        let offload = buf.rx_offload();
        let ip = match Ipv4Packet::new_checked(&buf.data()[ETH_LEN..]) {
            Ok(ip) => ip,
            Err(WireError::Truncated) => {
                return self
                    .core
                    .lcore
                    .counters
                    .count_drop(DropReason::Ipv4Truncated)
            }
            Err(_) => {
                return self
                    .core
                    .lcore
                    .counters
                    .count_drop(DropReason::Ipv4Malformed)
            }
        };
        if !self
            .core
            .shared
            .config
            .checksum
            .accepts(offload.ip_checksum, || ip.verify_checksum())
        {
            return self
                .core
                .lcore
                .counters
                .count_drop(DropReason::Ipv4BadChecksum);
        }
        let (src, dst) = (ip.src(), ip.dst());
        if self.core.is_martian(src) {
            return self
                .core
                .lcore
                .counters
                .count_drop(DropReason::Ipv4MartianSource);
        }
        let mut broadcast = self.core.is_broadcast(dst);
        if !broadcast && !self.core.is_local(dst) {
            if !self.joined4(arrival.link, dst) {
                return self
                    .core
                    .lcore
                    .counters
                    .count_drop(DropReason::Ipv4NotForUs);
            }
            // A group the link joined: delivered as a broadcast is (to
            // every socket that hears it, never answered with an error,
            // never TCP).
            broadcast = true;
        }
        // Whatever its TTL: a host MUST NOT discard a datagram for a TTL
        // under 2 (RFC 1122 3.2.1.7); only forwarding does, and we do not
        // forward.
        let local = Local {
            src,
            dst,
            header_len: ip.header_len(),
            total_len: usize::from(ip.total_len()),
            protocol: ip.protocol(),
            broadcast,
            l4_checksum: offload.l4_checksum,
        };
        if !ip.is_fragment() {
            return self.deliver_local(buf, arrival, local, delivered);
        }
        self.core.lcore.counters.count(Stat::IpReasmReqds);
        let fragment = Fragment {
            key: Key4 {
                src,
                dst,
                protocol: local.protocol,
                ident: ip.ident(),
            },
            protocol: local.protocol,
            offset: ip.fragment_offset(),
            more: ip.more_fragments(),
            payload_start: ETH_LEN + local.header_len,
            payload_len: local.total_len - local.header_len,
            ttl: ip.ttl(),
            ecn: Ecn::from_bits(ip.tos()),
        };
        let origin = Origin {
            link: arrival.link,
            eth_src: arrival.eth_src,
            to_group: broadcast || arrival.to_group_mac,
        };
        let Some(whole) = self.reassemble::<V4>(origin, &buf, fragment) else {
            return;
        };
        let local = Local {
            header_len: IP_LEN,
            total_len: whole.len() - ETH_LEN,
            l4_checksum: ChecksumStatus::Unknown,
            ..local
        };
        self.deliver_local(whole, arrival, local, delivered);
    }

    /// True if `dst` is an IPv4 group `link` joined. Out of line: only
    /// packets for none of our addresses ask.
    #[cold]
    #[inline(never)]
    fn joined4(&self, link: usize, dst: Ipv4Addr) -> bool {
        dst.is_multicast() && (self.core.shared.links.get(link)).is_some_and(|l| l.joined4(dst))
    }

    /// Adds the fragment in `buf` (from `origin`) to its datagram in the
    /// lcore's reassembler of family `F`: the whole datagram once its last
    /// piece came (counted as reassembled), `None` while pieces are missing
    /// or when the fragment was dropped (counted). A first fragment is kept
    /// in mind for the error a timeout sends.
    fn reassemble<F: IpFamily>(
        &mut self,
        origin: Origin,
        buf: &P::Buf,
        fragment: Fragment<F::FragmentKey>,
    ) -> Option<P::Buf> {
        let counters = &self.core.lcore.counters;
        let Some(port) = self.out.port(origin.link) else {
            counters.count_drop(DropReason::EthNotForUs);
            return None;
        };
        let reassembler = &mut F::lcore(&mut self.core.lcore.ip).reassembler;
        match reassembler.add(port, buf, fragment, self.now, counters) {
            Reassembly::Pending => {
                if fragment.offset == 0 {
                    reassembler.heard_first(buf, &fragment, origin);
                }
                None
            }
            Reassembly::Dropped(reason) => {
                counters.count_drop(reason);
                None
            }
            Reassembly::Complete(whole) => {
                counters.count(F::REASM_OKS);
                Some(whole)
            }
        }
    }

    fn deliver_local(
        &mut self,
        buf: P::Buf,
        arrival: Arrival,
        local: Local,
        delivered: &mut Delivered<P::Buf>,
    ) {
        self.core.lcore.counters.count(Stat::IpInDelivers);
        match local.protocol {
            protocol::ICMP => {
                let message = IcmpIn {
                    eth_src: arrival.eth_src,
                    src: local.src,
                    dst: local.dst,
                    to_group: local.broadcast,
                    start: ETH_LEN + local.header_len,
                    end: ETH_LEN + local.total_len,
                };
                self.icmp_input(buf, arrival.link, message)
            }
            protocol::UDP => {
                let l4 = UdpIn {
                    src: local.src,
                    dst: local.dst,
                    start: ETH_LEN + local.header_len,
                    end: ETH_LEN + local.total_len,
                    to_group: local.broadcast,
                    l4_checksum: local.l4_checksum,
                };
                self.udp_input(buf, arrival, l4, delivered)
            }
            protocol::IGMP => {
                let message = IcmpIn {
                    eth_src: arrival.eth_src,
                    src: local.src,
                    dst: local.dst,
                    to_group: local.broadcast,
                    start: ETH_LEN + local.header_len,
                    end: ETH_LEN + local.total_len,
                };
                igmp::input(self.core, arrival.link, self.now, &buf, &message)
            }
            protocol::TCP if !local.broadcast && !arrival.to_group_mac => {
                let start = ETH_LEN + local.header_len;
                let end = ETH_LEN + local.total_len;
                let addresses = (IpAddr::V4(local.src), IpAddr::V4(local.dst));
                // The TOS byte's low bits (its header was read just now).
                let tos = buf.data().get(ETH_LEN + ipv4_field::TOS).copied();
                let segment = TcpIn {
                    ends: addresses,
                    segment: start..end,
                    scope: 0,
                    offload: local.l4_checksum,
                    ecn: Ecn::from_bits(tos.unwrap_or(0)),
                    steered: false,
                };
                tcp::input(self.core, self.out, self.now, buf, segment)
            }
            protocol::TCP => self
                .core
                .lcore
                .counters
                .count_drop(DropReason::TcpNotUnicast),
            _ => {
                self.core
                    .lcore
                    .counters
                    .count_drop(DropReason::Ipv4UnknownProtocol);
                // RFC 1122 3.2.2.1, as Linux; never for a broadcast.
                let invoking = Invoking {
                    ours: local.dst,
                    peer: local.src,
                    end: ETH_LEN + local.total_len,
                };
                let arrival = Arrival {
                    to_group_mac: arrival.to_group_mac || local.broadcast,
                    ..arrival
                };
                let error = Icmp4Error::PROTOCOL_UNREACHABLE;
                self.send_error(buf, arrival, invoking, error);
            }
        }
    }

    /// IPv6 in: IPv6 on the link, version, payload length against the frame,
    /// sources no sender has (multicast, loopback, IPv4-mapped), the destination (ours, or
    /// a group the link joined), any hop limit; then `local6_input`.
    pub(crate) fn ipv6_input(
        &mut self,
        buf: P::Buf,
        arrival: Arrival,
        delivered: &mut Delivered<P::Buf>,
    ) {
        self.core.lcore.counters.count(Stat::Ip6InReceives);
        if self
            .core
            .shared
            .links
            .get(arrival.link)
            .is_none_or(|l| !l.ipv6)
        {
            // IPv6 is off on this link.
            return self
                .core
                .lcore
                .counters
                .count_drop(DropReason::EthUnknownType);
        }
        let ip = match Ipv6Packet::new_checked(&buf.data()[ETH_LEN..]) {
            Ok(ip) => ip,
            Err(WireError::Truncated) => {
                return self
                    .core
                    .lcore
                    .counters
                    .count_drop(DropReason::Ipv6Truncated)
            }
            Err(_) => {
                return self
                    .core
                    .lcore
                    .counters
                    .count_drop(DropReason::Ipv6Malformed)
            }
        };
        if ip.version() != 6 {
            return self
                .core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6Malformed);
        }
        let (src, dst) = (ip.src(), ip.dst());
        if src.is_multicast() {
            return self
                .core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6BadSource);
        }
        if src.is_loopback() || dst.is_loopback() || src.to_ipv4_mapped().is_some() {
            // RFC 4291 2.5.3: ::1 never leaves a node, so a packet that has it
            // came from a liar, and a reply would go onto the wire to ::1 (as
            // IPv4 drops 127/8 sources). No node sends from an IPv4-mapped
            // address either: a dual-stack socket would take the sender for
            // an IPv4 peer (::ffff:127.0.0.1 for this host) and answer it
            // over IPv4 (Linux drops these too).
            return self.core.lcore.counters.count_drop(DropReason::Ipv6Martian);
        }
        let for_us = if dst.is_multicast() {
            self.core.shared.links[arrival.link].joined(dst)
        } else {
            self.core.is_local6(arrival.link, dst)
        };
        if !for_us {
            return self
                .core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6NotForUs);
        }
        // A destination processes a packet whatever its hop limit, 0
        // included (RFC 8200 3); only forwarding discards.
        self.local6_input(buf, arrival, delivered, false);
    }

    /// The part of IPv6 receive after the fixed header was validated: the
    /// extension walk (options that demand it get a parameter problem),
    /// fragments into reassembly, then ICMPv6 or UDP. `reassembled` marks a
    /// datagram that came out of reassembly (a fragment inside it is refused).
    fn local6_input(
        &mut self,
        buf: P::Buf,
        arrival: Arrival,
        delivered: &mut Delivered<P::Buf>,
        reassembled: bool,
    ) {
        let ip = Ipv6Packet::new_unchecked(&buf.data()[ETH_LEN..]);
        let (src, dst, hop_limit) = (ip.src(), ip.dst(), ip.hop_limit());
        let payload = ip.payload();
        let end = ETH_LEN + IP6_LEN + payload.len();
        let invoking = Invoking {
            ours: dst,
            peer: src,
            end,
        };
        let extensions = match walk_extensions(ip.next_header(), payload) {
            Ok(extensions) => extensions,
            Err(_) => {
                return self
                    .core
                    .lcore
                    .counters
                    .count_drop(DropReason::Ipv6BadExtensions)
            }
        };
        if let Some(bad) = extensions.bad_option {
            self.core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6BadOption);
            // Action 3: not for a group, IP or link-layer (RFC 4443 2.4 (e)).
            let to_group = dst.is_multicast() || arrival.to_group_mac;
            if bad.action == 2 || bad.action == 3 && !to_group {
                let error = Icmp6Error::parameter_problem(CODE_UNRECOGNIZED_OPTION, bad.at);
                self.icmp6_error(buf, arrival, invoking, error);
            }
            return;
        }
        if let Some(at) = extensions.routing_left {
            // RFC 8200 4.4: an unrecognized routing type (we process none)
            // with segments left; RFC 5095 treats type 0 the same.
            self.core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6RoutingHeader);
            let error = Icmp6Error::parameter_problem(CODE_ERRONEOUS_FIELD, at);
            return self.icmp6_error(buf, arrival, invoking, error);
        }
        if let (Some(fragment), Some(at)) = (extensions.fragment, extensions.fragment_at) {
            // RFC 6946: an "atomic" fragment (offset 0, no more) is a whole
            // datagram; anything else goes to reassembly.
            if fragment.offset != 0 || fragment.more {
                if reassembled {
                    return self
                        .core
                        .lcore
                        .counters
                        .count_drop(DropReason::Ipv6BadExtensions);
                }
                let piece = FragmentIn {
                    fragment,
                    at,
                    extensions: &extensions,
                    invoking,
                    hop_limit,
                };
                return self.reassemble6(buf, arrival, delivered, piece);
            }
        }
        // The upper-layer message's place in the frame.
        let start = ETH_LEN + IP6_LEN + extensions.offset;
        // Only duplicate address detection may come from the unspecified
        // address (an NS, checked below).
        let icmp = extensions.protocol == next_header::ICMPV6;
        if src.is_unspecified() && !icmp {
            return self
                .core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6BadSource);
        }
        match extensions.protocol {
            next_header::ICMPV6 => {
                let fragmented = reassembled || extensions.fragment.is_some();
                let nd = |kind: &u8| (ND_FIRST..=ND_LAST).contains(kind);
                if fragmented && buf.data().get(start).is_some_and(nd) {
                    // RFC 6980 5: Neighbor Discovery is never fragmented; one
                    // that was is ignored (how RA-Guard is evaded), atomic
                    // fragments included, as Linux's suppress_frag_ndisc.
                    return self.core.lcore.counters.count_drop(DropReason::NdInvalid);
                }
                self.core.lcore.counters.count(Stat::Ip6InDelivers);
                let message = IcmpIn {
                    eth_src: arrival.eth_src,
                    src,
                    dst,
                    to_group: dst.is_multicast(),
                    start,
                    end,
                };
                self.icmp6_input(buf, arrival.link, message)
            }
            next_header::UDP => {
                self.core.lcore.counters.count(Stat::Ip6InDelivers);
                let l4 = UdpIn {
                    src,
                    dst,
                    start,
                    end,
                    to_group: dst.is_multicast(),
                    // A reassembled datagram's buffer is fresh: `Unknown`.
                    l4_checksum: buf.rx_offload().l4_checksum,
                };
                self.udp_input(buf, arrival, l4, delivered)
            }
            next_header::TCP if !dst.is_multicast() && !arrival.to_group_mac => {
                self.core.lcore.counters.count(Stat::Ip6InDelivers);
                let scope = if src.is_unicast_link_local() {
                    arrival.link as u32
                } else {
                    0
                };
                // The traffic class's low bits: the high nibble of its second
                // byte (the header was read just now).
                let class = buf.data().get(ETH_LEN + 1).map_or(0, |b| b >> 4);
                let segment = TcpIn {
                    ends: (IpAddr::V6(src), IpAddr::V6(dst)),
                    segment: start..end,
                    scope,
                    // A reassembled datagram's buffer is fresh: `Unknown`.
                    offload: buf.rx_offload().l4_checksum,
                    ecn: Ecn::from_bits(class),
                    steered: false,
                };
                tcp::input(self.core, self.out, self.now, buf, segment)
            }
            next_header::TCP => self
                .core
                .lcore
                .counters
                .count_drop(DropReason::TcpNotUnicast),
            // RFC 8200 4.7: nothing follows, which is no unrecognized next
            // header (no parameter problem).
            next_header::NONE => self
                .core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6NoNextHeader),
            _ => {
                self.core
                    .lcore
                    .counters
                    .count_drop(DropReason::Ipv6UnknownNextHeader);
                let error = Icmp6Error::parameter_problem(
                    CODE_UNRECOGNIZED_NEXT_HEADER,
                    extensions.protocol_at,
                );
                self.icmp6_error(buf, arrival, invoking, error);
            }
        }
    }

    /// Adds a fragment to its datagram (RFC 8200 4.5, RFC 5722 overlaps, RFC
    /// 7112 header chains); a completed datagram runs through the local input
    /// again, whole.
    fn reassemble6(
        &mut self,
        buf: P::Buf,
        arrival: Arrival,
        delivered: &mut Delivered<P::Buf>,
        piece: FragmentIn<'_>,
    ) {
        self.core.lcore.counters.count(Stat::Ip6ReasmReqds);
        let FragmentIn {
            fragment,
            at,
            extensions,
            invoking,
            hop_limit,
        } = piece;
        let payload_start = ETH_LEN + IP6_LEN + at + 8;
        let payload_len = invoking.end.saturating_sub(payload_start);
        if fragment.more && payload_len % 8 != 0 {
            // RFC 8200 4.5: pointing at the payload length.
            self.core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6FragmentMalformed);
            let error = Icmp6Error::parameter_problem(CODE_ERRONEOUS_FIELD, 4);
            return self.icmp6_error(buf, arrival, invoking, error);
        }
        if fragment.offset + payload_len > 65535 {
            // Pointing at the fragment offset.
            self.core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6ReassemblyTooBig);
            let error = Icmp6Error::parameter_problem(CODE_ERRONEOUS_FIELD, IP6_LEN + at + 2);
            return self.icmp6_error(buf, arrival, invoking, error);
        }
        let first_header_len = match extensions.protocol {
            next_header::TCP => TCP_LEN,
            next_header::UDP => UDP_LEN,
            next_header::ICMPV6 => 4,
            _ => 0,
        };
        if fragment.offset == 0 && extensions.protocol == next_header::HOP_BY_HOP {
            // RFC 8200 4.1: hop-by-hop options after the fragment header (as
            // after any header but the IPv6 header) are an unrecognized next
            // header; reassembled, they would pass as the first header.
            self.core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6UnknownNextHeader);
            let error = Icmp6Error::parameter_problem(
                CODE_UNRECOGNIZED_NEXT_HEADER,
                extensions.protocol_at,
            );
            return self.icmp6_error(buf, arrival, invoking, error);
        }
        if fragment.offset == 0
            && invoking.end < ETH_LEN + IP6_LEN + extensions.offset + first_header_len
        {
            // RFC 7112: the first fragment must hold the whole header chain.
            self.core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6FragmentIncomplete);
            let error = Icmp6Error::parameter_problem(CODE_INCOMPLETE_CHAIN, 0);
            return self.icmp6_error(buf, arrival, invoking, error);
        }
        let piece = Fragment {
            key: Key6 {
                src: invoking.peer,
                dst: invoking.ours,
                ident: fragment.ident,
            },
            protocol: buf.data()[ETH_LEN + IP6_LEN + at],
            offset: fragment.offset,
            more: fragment.more,
            payload_start,
            payload_len,
            ttl: hop_limit,
            ecn: Ecn::from_bits(buf.data()[ETH_LEN + 1] >> 4),
        };
        let origin = Origin {
            link: arrival.link,
            eth_src: arrival.eth_src,
            to_group: arrival.to_group_mac,
        };
        let Some(whole) = self.reassemble::<V6>(origin, &buf, piece) else {
            return;
        };
        drop(buf);
        self.local6_input(whole, arrival, delivered, true);
    }
}

impl<P: Port> Poll<'_, '_, P> {
    /// Reassembly timeouts of both families (timers, not per packet): each
    /// datagram dropped is counted, and one whose first fragment came is
    /// answered with a "fragment reassembly time exceeded" quoting that
    /// fragment (RFC 1122 3.3.2, RFC 8200 4.5), within the ICMP error rate.
    pub(crate) fn reassembly_timeouts(&mut self) {
        let now = self.now;
        let mut timed_out4 = Vec::new();
        let expired = (self.core.lcore.ip.v4.reassembler).expire_with(now, |t| timed_out4.push(t));
        for _ in 0..expired {
            self.core
                .lcore
                .counters
                .count_drop(DropReason::Ipv4ReassemblyTimeout);
        }
        for TimedOut {
            key,
            frame,
            end,
            origin,
        } in timed_out4
        {
            let invoking = Invoking {
                ours: key.dst,
                peer: key.src,
                end,
            };
            let error = Icmp4Error::REASSEMBLY_TIME_EXCEEDED;
            self.send_error(frame, timed_out_arrival(origin), invoking, error);
        }
        let mut timed_out6 = Vec::new();
        let expired = (self.core.lcore.ip.v6.reassembler).expire_with(now, |t| timed_out6.push(t));
        for _ in 0..expired {
            self.core
                .lcore
                .counters
                .count_drop(DropReason::Ipv6ReassemblyTimeout);
        }
        for TimedOut {
            key,
            frame,
            end,
            origin,
        } in timed_out6
        {
            let invoking = Invoking {
                ours: key.dst,
                peer: key.src,
                end,
            };
            let error = Icmp6Error::REASSEMBLY_TIME_EXCEEDED;
            self.send_error(frame, timed_out_arrival(origin), invoking, error);
        }
    }
}

/// The arrival a timed-out datagram's error answers: its first fragment's.
fn timed_out_arrival(origin: Origin) -> Arrival {
    Arrival {
        link: origin.link,
        eth_src: origin.eth_src,
        to_group_mac: origin.to_group,
    }
}

/// The ICMPv6 types of Neighbor Discovery (RFC 4861 4: router
/// solicitation to redirect).
const ND_FIRST: u8 = 133;
const ND_LAST: u8 = 137;

/// A datagram for us, validated (and reassembled if it was fragmented).
#[derive(Debug, Clone, Copy)]
struct Local {
    src: Ipv4Addr,
    dst: Ipv4Addr,
    header_len: usize,
    total_len: usize,
    protocol: u8,
    broadcast: bool,
    l4_checksum: ChecksumStatus,
}

/// A fragment as the extension walk found it.
struct FragmentIn<'a> {
    fragment: FragmentHeader,
    /// Offset of the fragment header in the IPv6 payload.
    at: usize,
    extensions: &'a Extensions,
    invoking: Invoking<Ipv6Addr>,
    hop_limit: u8,
}
