//! The IPv6 receive path: header validation, the bounded extension-header
//! walk, ICMPv6 echo, and Neighbor Discovery (solicitations for our
//! addresses answered, advertisements learned); UDP datagrams go on to
//! `udp`, TCP segments to `tcp`.
//!
//! Per packet, owning lcore only: no allocation, no panic (every view is
//! checked before use). A packet ends in exactly one of: a reply pushed to
//! the link's transmit batch, a datagram handed back in `delivered`, or a
//! counted drop. Replies are built in the
//! received buffer and go back to the Ethernet source (the previous hop),
//! so answering resolves nothing.

use super::ip::{transmit6, Local6, MIN_MTU};
use super::next_hop::release_waiting;
use super::transmit::Out;
use super::{tcp, Core, ALL_NODES};
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::route::Ipv6Cidr;
use crate::route::Route6;
use crate::time::Duration;
use crate::time::Instant;
use crate::udp::table::FlowKey6;
use crate::udp::PeerError;
use crate::wire::ethernet::{EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv6::RouterAdvert;
use crate::wire::icmpv6::{msg_type, Icmpv6Packet, NdpRepr};
use crate::wire::icmpv6::{CODE_PORT_UNREACHABLE, HEADER_LEN as ICMP6_LEN};
use crate::wire::ipv6::{
    multicast_mac, next_header, solicited_node, walk_extensions, Ipv6Header, Ipv6Packet,
    HEADER_LEN as IP6_LEN,
};
use core::net::Ipv6Addr;
use core::net::SocketAddrV6;
use core::net::{IpAddr, SocketAddr};

/// Hop limit of packets we originate.
const HOP_LIMIT: u8 = 64;

/// Neighbor Discovery messages carry this hop limit, which proves they were
/// not forwarded (RFC 4861 7.1).
const ND_HOP_LIMIT: u8 = 255;

pub(super) fn icmp6_input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    eth_src: MacAddr,
    local: Local6,
) {
    let message = &buf.data()[local.start..local.end];
    let icmp = match Icmpv6Packet::new_checked(message) {
        Ok(icmp) if icmp.verify_checksum(local.src, local.dst) => icmp,
        _ => return core.lcore.counters.count_drop(DropReason::Icmp6Malformed),
    };
    let kind = icmp.msg_type();
    if local.src.is_unspecified() && kind != msg_type::NEIGHBOR_SOLICITATION {
        return core.lcore.counters.count_drop(DropReason::Ipv6BadSource);
    }
    match kind {
        msg_type::ECHO_REQUEST if icmp.code() == 0 => {
            core.lcore.counters.count(Stat::Icmp6InEchos);
            reply_echo(core, out, link, buf, eth_src, &local);
        }
        msg_type::NEIGHBOR_SOLICITATION | msg_type::NEIGHBOR_ADVERTISEMENT => {
            let ndp = match NdpRepr::parse(message) {
                Ok(ndp) if local.hop_limit == ND_HOP_LIMIT => ndp,
                _ => return core.lcore.counters.count_drop(DropReason::NdInvalid),
            };
            let link_address = match &ndp {
                NdpRepr::Solicitation { source_mac, .. } => source_mac,
                NdpRepr::Advertisement { target_mac, .. } => target_mac,
            };
            if link_address.is_some_and(|mac| mac.is_multicast()) {
                // No neighbour has a group MAC: learned, it would send our
                // unicast traffic (and our advertisement) to a group.
                return core
                    .lcore
                    .counters
                    .count_drop(DropReason::NdGroupLinkAddress);
            }
            match ndp {
                NdpRepr::Solicitation { target, source_mac } => solicitation(
                    core, out, link, now, buf, eth_src, &local, target, source_mac,
                ),
                NdpRepr::Advertisement {
                    solicited,
                    override_,
                    target,
                    target_mac,
                    ..
                } => {
                    // RFC 4861 7.1.2: a multicast advertisement is unsolicited.
                    if local.dst.is_multicast() && solicited {
                        return core.lcore.counters.count_drop(DropReason::NdInvalid);
                    }
                    core.lcore
                        .counters
                        .count(Stat::Icmp6InNeighborAdvertisements);
                    if core.shared.links[link].is_tentative6(target) {
                        // RFC 4862 5.4.4: someone has it (unless it is us,
                        // looped back).
                        if eth_src != core.shared.links[link].mac {
                            super::address_in_use6(core, link, target);
                        }
                        return;
                    }
                    let (waiting, mac) = core.shared.links[link]
                        .neighbors6
                        .advertised(target, target_mac, solicited, override_, now);
                    if let Some(mac) = mac {
                        release_waiting::<_, Ipv6Addr>(core, out, link, waiting, mac);
                    }
                }
            }
        }
        msg_type::ROUTER_ADVERTISEMENT => router_advert(core, out, link, now, &local, message),
        msg_type::DEST_UNREACHABLE
        | msg_type::PACKET_TOO_BIG
        | msg_type::TIME_EXCEEDED
        | msg_type::PARAMETER_PROBLEM => error_input(core, out, link, now, message),
        _ => core.lcore.counters.count_drop(DropReason::Icmp6Unhandled),
    }
}

/// A router advertisement (RFC 4861 6.1.2 validity: hop limit 255, from a
/// link-local address; and no group MAC as its link-layer address). The
/// router's MAC is learned (stale); with
/// [`super::InterfaceConfig::accept_ra`], a non-zero router lifetime
/// installs (or refreshes) the default route through it, and zero from the
/// current default router removes it. A static default route is left alone.
fn router_advert<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    local: &Local6,
    message: &[u8],
) {
    let advert = match RouterAdvert::parse(message) {
        Ok(advert) if local.hop_limit == ND_HOP_LIMIT && local.src.is_unicast_link_local() => {
            advert
        }
        _ => return core.lcore.counters.count_drop(DropReason::NdInvalid),
    };
    if advert.source_mac.is_some_and(|mac| mac.is_multicast()) {
        return core
            .lcore
            .counters
            .count_drop(DropReason::NdGroupLinkAddress);
    }
    if !core.shared.config.accept_ra {
        return core.lcore.counters.count_drop(DropReason::Icmp6Unhandled);
    }
    core.lcore.counters.count(Stat::Icmp6InRouterAdvertisements);
    let router = local.src;
    if let Some(mac) = advert.source_mac {
        let waiting = core.shared.links[link]
            .neighbors6
            .observe(router, mac, true, now);
        release_waiting::<_, Ipv6Addr>(core, out, link, waiting, mac);
    }
    let ours = core.shared.ra_default.is_some();
    if !ours && core.shared.ip.v6.routes.get(Ipv6Cidr::DEFAULT).is_some() {
        return; // a static default route
    }
    if advert.lifetime_secs == 0 {
        if core
            .shared
            .ra_default
            .is_some_and(|(l, r, _)| l == link && r == router)
        {
            core.shared.ra_default = None;
            core.shared.ip.v6.routes.remove(Ipv6Cidr::DEFAULT);
        }
        return;
    }
    let Some(source) = core.shared.links[link].route_source6() else {
        return;
    };
    let until = now + Duration::from_secs(u64::from(advert.lifetime_secs));
    let same = core
        .shared
        .ra_default
        .is_some_and(|(l, r, _)| l == link && r == router);
    core.shared.ra_default = Some((link, router, until));
    if !same {
        core.shared.ip.v6.routes.add(Route6 {
            prefix: Ipv6Cidr::DEFAULT,
            gateway: Some(router),
            port: link as u16,
            source,
        });
    }
}

/// An ICMPv6 error about a packet we sent (RFC 4443 2.4): one about a TCP
/// segment goes to its connection ([`tcp::icmp_error`], which checks the
/// quote first); otherwise a packet too big lowers the path MTU to its
/// sender's destination (RFC 8201, never below 1280), and any error about a
/// datagram of a socket connected to that destination is recorded for the
/// socket.
fn error_input<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    message: &[u8],
) {
    core.lcore.counters.count(Stat::Icmp6InErrors);
    // The quoted packet is cut short, so its header is read as is.
    let Some(quoted) = message.get(ICMP6_LEN..).filter(|q| q.len() >= IP6_LEN) else {
        return core.lcore.counters.count_drop(DropReason::Icmp6Malformed);
    };
    let ip = Ipv6Packet::new_unchecked(quoted);
    let (ours, peer) = (ip.src(), ip.dst());
    if !core.is_local6(link, ours) {
        return core.lcore.counters.count_drop(DropReason::Icmp6BadQuote);
    }
    let (kind, code) = (message[0], message[1]);
    let word = u32::from_be_bytes([message[4], message[5], message[6], message[7]]);
    let error = match kind {
        msg_type::DEST_UNREACHABLE if code == CODE_PORT_UNREACHABLE => PeerError::Refused,
        msg_type::DEST_UNREACHABLE => PeerError::Unreachable,
        msg_type::PACKET_TOO_BIG => {
            core.lcore.counters.count(Stat::Icmp6InPktTooBigs);
            PeerError::TooBig {
                mtu: word.max(MIN_MTU as u32),
            }
        }
        msg_type::TIME_EXCEEDED => PeerError::TimeExceeded,
        _ => PeerError::ParameterProblem,
    };
    // Which socket sent it: the quoted ports, looked up as if the peer had
    // sent us a datagram back.
    let rest = &quoted[IP6_LEN..];
    let walked = walk_extensions(ip.next_header(), rest).ok();
    if let Some(at) = walked.filter(|e| e.protocol == next_header::TCP) {
        let Some(head) = rest.get(at.offset..at.offset + 8) else {
            return core.lcore.counters.count_drop(DropReason::Icmp6Malformed);
        };
        let sent = IP6_LEN + usize::from(ip.payload_len());
        let quote = tcp::IcmpQuote::new((IpAddr::V6(ours), IpAddr::V6(peer)), head, sent);
        return tcp::icmp_error(core, out, now, quote, tcp::IcmpKind::from(error));
    }
    if let PeerError::TooBig { mtu } = error {
        core.learn_path_mtu(IpAddr::V6(peer), mtu as usize, now);
    }
    let Some(extensions) = walked else {
        return;
    };
    let Some(ports) = rest.get(extensions.offset..extensions.offset + 4) else {
        return;
    };
    if extensions.protocol != next_header::UDP {
        return;
    }
    let our_port = u16::from_be_bytes([ports[0], ports[1]]);
    let peer_port = u16::from_be_bytes([ports[2], ports[3]]);
    let key = FlowKey6 {
        src: SocketAddrV6::new(peer, peer_port, 0, 0),
        dst: SocketAddrV6::new(ours, our_port, 0, 0),
        device: link as u16,
    };
    let Some(socket) = core.shared.udp.lookup6(&key) else {
        return;
    };
    // As the kernel without IP_RECVERR: only connected sockets hear errors.
    let connected_to_peer = matches!(
        core.shared.udp.remote_addr(socket),
        Some(SocketAddr::V6(remote)) if *remote.ip() == peer && remote.port() == peer_port
    );
    if connected_to_peer {
        let _ = core.lcore.socket_errors.try_push((socket, error));
    }
}

/// Answers a neighbour solicitation for one of the link's addresses with an
/// advertisement, built in the solicitation's buffer; learns the solicitor.
#[allow(clippy::too_many_arguments)]
fn solicitation<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    mut buf: P::Buf,
    eth_src: MacAddr,
    local: &Local6,
    target: Ipv6Addr,
    source_mac: Option<MacAddr>,
) {
    // RFC 4861 7.1.1: from the unspecified address (duplicate address
    // detection), only to a solicited-node group and without a link-layer
    // address option.
    let dad = local.src.is_unspecified();
    if dad && (local.dst != solicited_node(target) || source_mac.is_some()) {
        return core.lcore.counters.count_drop(DropReason::NdInvalid);
    }
    let our_mac = core.shared.links[link].mac;
    if core.shared.links[link].is_tentative6(target) {
        // RFC 4862 5.4.3: another node's detection for our tentative
        // address means it is taken; a resolution for it is not ours to
        // answer yet. One from our own MAC is our own solicitation looped
        // back (or a tap's kernel side, which starts with the port's MAC):
        // not another node (as Linux ignores looped-back DAD).
        if dad && eth_src != our_mac {
            super::address_in_use6(core, link, target);
        }
        return core.lcore.counters.count_drop(DropReason::NdNotForUs);
    }
    if !core.shared.links[link].has_address6(target) {
        return core.lcore.counters.count_drop(DropReason::NdNotForUs);
    }
    core.lcore.counters.count(Stat::Icmp6InNeighborSolicits);
    if let (false, Some(mac)) = (dad, source_mac) {
        let waiting = core.shared.links[link]
            .neighbors6
            .observe(local.src, mac, true, now);
        release_waiting::<_, Ipv6Addr>(core, out, link, waiting, mac);
    }
    // The advertisement: to the solicitor, or to all nodes when the
    // solicitor has no address yet.
    let (dst, dst_mac) = if dad {
        (ALL_NODES, multicast_mac(ALL_NODES))
    } else {
        (local.src, source_mac.unwrap_or(eth_src))
    };
    let advert = NdpRepr::Advertisement {
        router: false,
        solicited: !dad,
        override_: true,
        target,
        target_mac: Some(our_mac),
    };
    let len = ETH_LEN + IP6_LEN + advert.len();
    let have = buf.len();
    if have > len {
        buf.trim(have - len);
    } else if have < len && buf.append(len - have).is_none() {
        return core.lcore.counters.count_drop(DropReason::TxNoBuffer);
    }
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(dst_mac);
    eth.set_src(our_mac);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src: target,
        dst,
        next_header: next_header::ICMPV6,
        payload_len: advert.len() as u16,
        hop_limit: ND_HOP_LIMIT,
    });
    let message = &mut frame[ETH_LEN + IP6_LEN..];
    advert.emit(message);
    Icmpv6Packet::new_unchecked(message).fill_checksum(target, dst);
    core.lcore
        .counters
        .count(Stat::Icmp6OutNeighborAdvertisements);
    core.lcore.counters.count(Stat::Ip6OutRequests);
    out.push(link, buf, &core.lcore.counters);
}

/// Turns an echo request into its reply in place: the ICMPv6 message moves
/// up to right after a fresh IPv6 header (extension headers are not
/// echoed), addresses swap (a request to a group is answered from our
/// link-local address), and the checksum is recomputed. A reply over the
/// path MTU leaves in fragments.
fn reply_echo<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mut buf: P::Buf,
    eth_src: MacAddr,
    local: &Local6,
) {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let source = if local.dst.is_multicast() {
        match core.shared.links[link].link_local6() {
            Some(ip) => ip,
            None => return core.lcore.counters.count_drop(DropReason::TxNoRoute),
        }
    } else {
        local.dst
    };
    let message_len = local.end - local.start;
    let frame_len = ETH_LEN + IP6_LEN + message_len;
    let frame = buf.data_mut();
    frame.copy_within(local.start..local.end, ETH_LEN + IP6_LEN);
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(eth_src);
    eth.set_src(our_mac);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src: source,
        dst: local.src,
        next_header: next_header::ICMPV6,
        payload_len: message_len as u16,
        hop_limit: HOP_LIMIT,
    });
    let mut icmp = Icmpv6Packet::new_unchecked(&mut frame[ETH_LEN + IP6_LEN..frame_len]);
    icmp.set_type_code(msg_type::ECHO_REPLY, 0);
    icmp.fill_checksum(source, local.src);
    let excess = buf.len() - frame_len;
    if excess > 0 {
        buf.trim(excess);
    }
    core.lcore.counters.count(Stat::Icmp6OutEchoReplies);
    // A reassembled request's reply may exceed the MTU: fragmented then.
    let _ = transmit6(core, out, link, buf); // failures are counted inside
}
