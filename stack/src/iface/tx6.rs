//! The IPv6 send path: ICMPv6 errors built in the invoking packet's
//! buffer, Neighbor Discovery messages, and the hand-off of a finished
//! IPv6 frame to its link: like every IPv6 packet we send, one over the
//! path MTU leaves in fragments ([`transmit6`]). UDP's replies and sends
//! are in `udp`.

use super::buffers::new_frame;
use super::config::DEFAULT_HOP_LIMIT;
use super::ip::{transmit6, MIN_MTU};
use super::next_hop::NextHopAddr;
use super::transmit::{Out, SendError};
use super::{Core, Link};
use crate::counters::{DropReason, Stat};
use crate::neighbor::NeighborCache;
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv6::{emit_router_solicitation, NdpRepr, ROUTER_SOLICITATION_LEN};
use crate::wire::icmpv6::{msg_type, Icmpv6Packet, CODE_PORT_UNREACHABLE, HEADER_LEN as ICMP6_LEN};
use crate::wire::ipv6::{multicast_mac, solicited_node};
use crate::wire::ipv6::{next_header, Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN};
use core::net::Ipv6Addr;

/// The packet an ICMPv6 error answers.
pub(crate) struct Invoking {
    /// Where it was sent (one of ours, or a group).
    pub(crate) ours: Ipv6Addr,
    /// Its sender.
    pub(crate) peer: Ipv6Addr,
    /// The end of its IPv6 packet in the frame.
    pub(crate) end: usize,
}

/// Which ICMPv6 error to send.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Icmp6Error {
    pub(crate) kind: u8,
    pub(crate) code: u8,
    /// The second word of the message (pointer, MTU, or zero).
    pub(crate) word: u32,
    /// Also answer packets sent to a group (RFC 4443 2.4 (e.3): packet too
    /// big, and parameter problem code 2).
    pub(crate) to_groups: bool,
}

impl Icmp6Error {
    /// Destination unreachable, port unreachable.
    pub(crate) const PORT_UNREACHABLE: Icmp6Error = Icmp6Error {
        kind: msg_type::DEST_UNREACHABLE,
        code: CODE_PORT_UNREACHABLE,
        word: 0,
        to_groups: false,
    };

    /// Parameter problem `code` pointing at byte `pointer` of the invoking
    /// packet.
    pub(crate) fn parameter_problem(code: u8, pointer: usize) -> Icmp6Error {
        Icmp6Error {
            kind: msg_type::PARAMETER_PROBLEM,
            code,
            word: pointer as u32,
            to_groups: code == 2,
        }
    }
}

/// Answers the packet in `buf` with an ICMPv6 error, reusing its buffer: new
/// headers go in front of the invoking packet, which is quoted as far as
/// the minimum MTU allows (RFC 4443 3.1). Never for a packet from the
/// unspecified address, nor (mostly) for one sent to a group (RFC 4443 2.4
/// (e)); rate-limited with the interface's ICMP errors. Counts its message
/// type.
#[allow(clippy::too_many_arguments)]
pub(crate) fn icmp6_error<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    mut buf: P::Buf,
    eth_src: MacAddr,
    invoking: Invoking,
    error: Icmp6Error,
) {
    if invoking.ours.is_multicast() && !error.to_groups || invoking.peer.is_unspecified() {
        return; // the caller counted the invoking packet's drop
    }
    if !core.lcore.icmp_limit.take(now) {
        return core.lcore.counters.count_drop(DropReason::IcmpRateLimited);
    }
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let source = if invoking.ours.is_multicast() {
        match core
            .shared
            .links
            .get(link)
            .and_then(|l| l.source_for6(invoking.peer))
        {
            Some(ip) => ip,
            None => return core.lcore.counters.count_drop(DropReason::TxNoRoute),
        }
    } else {
        invoking.ours
    };
    let quoted = invoking
        .end
        .saturating_sub(ETH_LEN)
        .min(MIN_MTU - IP6_LEN - ICMP6_LEN);
    let excess = buf.len().saturating_sub(ETH_LEN + quoted);
    buf.trim(excess);
    if buf.prepend(IP6_LEN + ICMP6_LEN).is_none() {
        return core.lcore.counters.count_drop(DropReason::TxNoBuffer);
    }
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(eth_src);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv6);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src: source,
        dst: invoking.peer,
        next_header: next_header::ICMPV6,
        payload_len: (ICMP6_LEN + quoted) as u16,
        hop_limit: DEFAULT_HOP_LIMIT,
    });
    let mut icmp = Icmpv6Packet::new_unchecked(&mut frame[ETH_LEN + IP6_LEN..]);
    icmp.set_type_code(error.kind, error.code);
    icmp.set_body_word(error.word.to_be_bytes());
    icmp.fill_checksum(source, invoking.peer);
    core.lcore.counters.count(match error.kind {
        msg_type::DEST_UNREACHABLE => Stat::Icmp6OutDestUnreachs,
        _ => Stat::Icmp6OutParmProblems,
    });
    core.lcore.counters.count(Stat::Ip6OutRequests);
    out.push(link, buf, &core.lcore.counters);
}

/// Sends one Neighbor Discovery message on `link` (hop limit 255, RFC 4861
/// 7.1): `emit` writes its `len` bytes, the ICMPv6 checksum is filled for
/// `src` and `dst`; counts `stat`.
fn send_nd<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    (src, dst, dst_mac): (Ipv6Addr, Ipv6Addr, MacAddr),
    (len, emit): (usize, impl FnOnce(&mut [u8])),
    stat: Stat,
) {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let Some(mut buf) = new_frame(&core.lcore.counters, out, link, ETH_LEN + IP6_LEN + len) else {
        return;
    };
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(dst_mac);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv6);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header: next_header::ICMPV6,
        payload_len: len as u16,
        hop_limit: 255,
    });
    let message = &mut frame[ETH_LEN + IP6_LEN..];
    emit(message);
    Icmpv6Packet::new_unchecked(message).fill_checksum(src, dst);
    core.lcore.counters.count(stat);
    core.lcore.counters.count(Stat::Ip6OutRequests);
    out.push(link, buf, &core.lcore.counters);
}

/// Asks "who has `target`?" on `link` with our link-layer address (RFC
/// 4861 7.2.2), from the link's address on the target's prefix or its
/// link-local one: multicast to the target's solicited-node group, or, to
/// confirm a known neighbour (`Probe` state), unicast to it at `to`.
pub(crate) fn send_solicitation<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    target: Ipv6Addr,
    to: Option<MacAddr>,
) {
    let Some(here) = core.shared.links.get(link) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let our_mac = here.mac;
    let Some(source) = here
        .addresses6
        .iter()
        .find(|a| a.contains(target) && !target.is_unicast_link_local())
        .map(|a| a.addr)
        .or_else(|| here.link_local6())
        .or_else(|| here.addresses6.first().map(|a| a.addr))
    else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let (dst, dst_mac) = match to {
        Some(mac) => (target, mac),
        None => (
            solicited_node(target),
            multicast_mac(solicited_node(target)),
        ),
    };
    let solicitation = NdpRepr::Solicitation {
        target,
        source_mac: Some(our_mac),
    };
    send_ns(core, out, link, (source, dst, dst_mac), solicitation);
}

/// Asks the link whether anyone uses `target`, which we want (duplicate
/// address detection, RFC 4862 5.4.2): from the unspecified address, to
/// the target's solicited-node group, without a link-layer address.
pub(crate) fn send_dad_solicitation<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    target: Ipv6Addr,
) {
    let group = solicited_node(target);
    let solicitation = NdpRepr::Solicitation {
        target,
        source_mac: None,
    };
    let addressing = (Ipv6Addr::UNSPECIFIED, group, multicast_mac(group));
    send_ns(core, out, link, addressing, solicitation);
}

/// Sends `solicitation` on `link`, addressed as [`send_nd`] takes it.
fn send_ns<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    addressing: (Ipv6Addr, Ipv6Addr, MacAddr),
    solicitation: NdpRepr,
) {
    let message = (solicitation.len(), |m: &mut [u8]| solicitation.emit(m));
    let stat = Stat::Icmp6OutNeighborSolicits;
    send_nd(core, out, link, addressing, message, stat);
}

/// Asks the routers on `link` to advertise themselves (RFC 4861 6.3.7),
/// from our link-local address, with our link-layer address.
pub(crate) fn send_router_solicitation<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
) {
    let Some((our_mac, source)) = core
        .shared
        .links
        .get(link)
        .and_then(|l| Some((l.mac, l.link_local6()?)))
    else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let all_routers = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);
    let message = (ROUTER_SOLICITATION_LEN, |m: &mut [u8]| {
        emit_router_solicitation(m, our_mac)
    });
    send_nd(
        core,
        out,
        link,
        (source, all_routers, multicast_mac(all_routers)),
        message,
        Stat::Icmp6OutRouterSolicits,
    );
}

impl NextHopAddr for Ipv6Addr {
    fn cache<B>(link: &mut Link<B>) -> &mut NeighborCache<B, Ipv6Addr> {
        &mut link.neighbors6
    }

    fn ask<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        _source: Ipv6Addr,
        target: Ipv6Addr,
    ) {
        send_solicitation(core, out, link, target, None);
    }

    fn transmit<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        buf: P::Buf,
    ) -> Result<(), SendError> {
        transmit6(core, out, link, buf)
    }
}
