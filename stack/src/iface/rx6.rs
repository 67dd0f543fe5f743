//! The IPv6 receive path: header validation, the bounded extension-header
//! walk, reassembly, and UDP delivery (ICMPv6, with Neighbor Discovery, goes
//! on to `icmp6`; TCP segments to `tcp`).
//!
//! Per packet, owning lcore only: no allocation, no panic (every view is
//! checked before use). A packet ends in exactly one of: a reply pushed to
//! the link's transmit batch, a datagram handed back in `delivered`, or a
//! counted drop. Replies are built in the
//! received buffer and go back to the Ethernet source (the previous hop),
//! so answering resolves nothing.

use super::icmp::{IcmpIn, Invoking};
use super::icmp6::{icmp6_error, icmp6_input, Icmp6Error};
use super::rx::{reassemble, Delivered};
use super::transmit::Out;
use super::Core;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::reassembly::{Fragment, Key6};
use crate::time::Instant;
use crate::udp::table::FlowKey6;
use crate::udp::Datagram;
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::icmpv6::{
    CODE_ERRONEOUS_FIELD, CODE_INCOMPLETE_CHAIN, CODE_UNRECOGNIZED_NEXT_HEADER,
    CODE_UNRECOGNIZED_OPTION,
};
use crate::wire::ipv6::pseudo_header;
use crate::wire::ipv6::{next_header, walk_extensions, Ipv6Packet, HEADER_LEN as IP6_LEN};
use crate::wire::ipv6::{Extensions, FragmentHeader};
use crate::wire::udp::{UdpPacket, HEADER_LEN as UDP_LEN};
use crate::wire::WireError;
use core::net::IpAddr;
use core::net::Ipv6Addr;
use core::net::SocketAddrV6;

/// What the IPv6 layer found out for its upper layers.
struct Local6 {
    src: Ipv6Addr,
    dst: Ipv6Addr,
    /// Offset of the upper-layer message in the frame.
    start: usize,
    /// End of the IPv6 packet in the frame.
    end: usize,
}

pub(super) fn ipv6_input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    eth_src: MacAddr,
    delivered: &mut Delivered<P::Buf>,
) {
    core.counters.count(Stat::Ip6InReceives);
    if core.links.get(link).is_none_or(|l| !l.ipv6) {
        // IPv6 is off on this link.
        return core.counters.count_drop(DropReason::EthUnknownType);
    }
    let ip = match Ipv6Packet::new_checked(&buf.data()[ETH_LEN..]) {
        Ok(ip) => ip,
        Err(WireError::Truncated) => return core.counters.count_drop(DropReason::Ipv6Truncated),
        Err(_) => return core.counters.count_drop(DropReason::Ipv6Malformed),
    };
    if ip.version() != 6 {
        return core.counters.count_drop(DropReason::Ipv6Malformed);
    }
    let (src, dst, hop_limit) = (ip.src(), ip.dst(), ip.hop_limit());
    if src.is_multicast() {
        return core.counters.count_drop(DropReason::Ipv6BadSource);
    }
    if src.is_loopback() || dst.is_loopback() {
        // RFC 4291 2.5.3: ::1 never leaves a node, so a packet that has it
        // came from a liar, and a reply would go onto the wire to ::1 (as
        // IPv4 drops 127/8 sources).
        return core.counters.count_drop(DropReason::Ipv6Martian);
    }
    let for_us = if dst.is_multicast() {
        core.links[link].joined(dst)
    } else {
        core.is_local6(link, dst)
    };
    if !for_us {
        return core.counters.count_drop(DropReason::Ipv6NotForUs);
    }
    if hop_limit == 0 {
        return core.counters.count_drop(DropReason::Ipv6HopLimitZero);
    }
    local6_input(core, out, link, now, buf, eth_src, delivered, false);
}

/// The part of IPv6 receive after the fixed header was validated: the
/// extension walk (options that demand it get a parameter problem),
/// fragments into reassembly, then ICMPv6 or UDP. `reassembled` marks a
/// datagram that came out of reassembly (a fragment inside it is refused).
#[allow(clippy::too_many_arguments)]
fn local6_input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    eth_src: MacAddr,
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
        Err(_) => return core.counters.count_drop(DropReason::Ipv6BadExtensions),
    };
    if let Some(bad) = extensions.bad_option {
        core.counters.count_drop(DropReason::Ipv6BadOption);
        if bad.action == 2 || bad.action == 3 && !dst.is_multicast() {
            let error = Icmp6Error::parameter_problem(CODE_UNRECOGNIZED_OPTION, bad.at);
            icmp6_error(core, out, link, now, buf, eth_src, invoking, error);
        }
        return;
    }
    if let (Some(fragment), Some(at)) = (extensions.fragment, extensions.fragment_at) {
        // RFC 6946: an "atomic" fragment (offset 0, no more) is a whole
        // datagram; anything else goes to reassembly.
        if fragment.offset != 0 || fragment.more {
            if reassembled {
                return core.counters.count_drop(DropReason::Ipv6BadExtensions);
            }
            let piece = FragmentIn {
                fragment,
                at,
                extensions: &extensions,
                invoking,
                hop_limit,
            };
            return reassemble6(core, out, link, now, buf, eth_src, delivered, piece);
        }
    }
    let local = Local6 {
        src,
        dst,
        start: ETH_LEN + IP6_LEN + extensions.offset,
        end,
    };
    // Only duplicate address detection may come from the unspecified
    // address (an NS, checked below).
    let icmp = extensions.protocol == next_header::ICMPV6;
    if src.is_unspecified() && !icmp {
        return core.counters.count_drop(DropReason::Ipv6BadSource);
    }
    match extensions.protocol {
        next_header::ICMPV6 => {
            core.counters.count(Stat::Ip6InDelivers);
            let message = IcmpIn {
                eth_src,
                src,
                dst,
                to_group: dst.is_multicast(),
                start: local.start,
                end: local.end,
            };
            icmp6_input(core, out, link, now, buf, message)
        }
        next_header::UDP => {
            core.counters.count(Stat::Ip6InDelivers);
            udp6_input(core, out, link, now, buf, eth_src, &local, delivered)
        }
        next_header::TCP if !dst.is_multicast() => {
            core.counters.count(Stat::Ip6InDelivers);
            let scope = if src.is_unicast_link_local() {
                link as u32
            } else {
                0
            };
            let addresses = (IpAddr::V6(src), IpAddr::V6(dst));
            let segment = local.start..local.end;
            // A reassembled datagram's buffer is fresh: `Unknown`.
            let offload = buf.rx_offload().l4_checksum;
            super::tcp::input(core, out, now, buf, addresses, segment, scope, offload)
        }
        _ => {
            core.counters.count_drop(DropReason::Ipv6UnknownNextHeader);
            let error = Icmp6Error::parameter_problem(
                CODE_UNRECOGNIZED_NEXT_HEADER,
                extensions.protocol_at,
            );
            icmp6_error(core, out, link, now, buf, eth_src, invoking, error);
        }
    }
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

/// Adds a fragment to its datagram (RFC 8200 4.5, RFC 5722 overlaps, RFC
/// 7112 header chains); a completed datagram runs through the local input
/// again, whole.
#[allow(clippy::too_many_arguments)]
fn reassemble6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    eth_src: MacAddr,
    delivered: &mut Delivered<P::Buf>,
    piece: FragmentIn<'_>,
) {
    core.counters.count(Stat::Ip6ReasmReqds);
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
        core.counters.count_drop(DropReason::Ipv6FragmentMalformed);
        let error = Icmp6Error::parameter_problem(CODE_ERRONEOUS_FIELD, 4);
        return icmp6_error(core, out, link, now, buf, eth_src, invoking, error);
    }
    if fragment.offset + payload_len > 65535 {
        // Pointing at the fragment offset.
        core.counters.count_drop(DropReason::Ipv6ReassemblyTooBig);
        let error = Icmp6Error::parameter_problem(CODE_ERRONEOUS_FIELD, IP6_LEN + at + 2);
        return icmp6_error(core, out, link, now, buf, eth_src, invoking, error);
    }
    let first_header_len = match extensions.protocol {
        next_header::UDP => UDP_LEN,
        next_header::ICMPV6 => 4,
        _ => 0,
    };
    if fragment.offset == 0
        && invoking.end < ETH_LEN + IP6_LEN + extensions.offset + first_header_len
    {
        // RFC 7112: the first fragment must hold the whole header chain.
        core.counters.count_drop(DropReason::Ipv6FragmentIncomplete);
        let error = Icmp6Error::parameter_problem(CODE_INCOMPLETE_CHAIN, 0);
        return icmp6_error(core, out, link, now, buf, eth_src, invoking, error);
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
    };
    let reassembler = &mut core.reassembler6;
    let piece = (&buf, piece);
    let Some(whole) = reassemble(reassembler, &core.counters, out, link, now, piece) else {
        return;
    };
    drop(buf);
    core.counters.count(Stat::Ip6ReasmOKs);
    local6_input(core, out, link, now, whole, eth_src, delivered, true);
}

/// UDP over IPv6: length and (mandatory) checksum checked, source port 0
/// refused, the socket looked up, the datagram handed back for delivery.
#[allow(clippy::too_many_arguments)]
fn udp6_input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    eth_src: MacAddr,
    local: &Local6,
    delivered: &mut Delivered<P::Buf>,
) {
    let segment = &buf.data()[local.start..local.end];
    let Ok(udp) = UdpPacket::new_checked(segment) else {
        return core.counters.count_drop(DropReason::UdpMalformed);
    };
    let udp_len = usize::from(udp.len());
    let pseudo = || pseudo_header(local.src, local.dst, next_header::UDP, udp_len as u32);
    // RFC 8200 8.1: a zero UDP checksum is not allowed over IPv6.
    if !core
        .config
        .checksum
        .accepts(buf.rx_offload().l4_checksum, || {
            udp.checksum() != 0 && udp.verify_checksum(pseudo())
        })
    {
        return core.counters.count_drop(DropReason::UdpBadChecksum);
    }
    if udp.src_port() == 0 {
        // No answer can go to port 0 (as over IPv4).
        return core.counters.count_drop(DropReason::UdpSourcePortZero);
    }
    let key = FlowKey6 {
        src: SocketAddrV6::new(local.src, udp.src_port(), 0, 0),
        dst: SocketAddrV6::new(local.dst, udp.dst_port(), 0, 0),
        device: link as u16,
    };
    let Some(socket) = core.udp.lookup6(&key) else {
        core.counters.count_drop(DropReason::UdpNoSocket);
        let invoking = Invoking {
            ours: local.dst,
            peer: local.src,
            end: local.end,
        };
        let error = Icmp6Error::PORT_UNREACHABLE;
        return icmp6_error(core, out, link, now, buf, eth_src, invoking, error);
    };
    core.counters.count(Stat::UdpInDatagrams);
    let payload = local.start + UDP_LEN..local.start + udp_len;
    let mut datagram = Datagram::new(buf, payload, local.dst.is_multicast(), link as u16);
    datagram.v6 = true;
    *delivered = Some((socket, datagram));
}
