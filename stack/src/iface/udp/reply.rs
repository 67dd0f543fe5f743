//! UDP replies, both families ([`reply_udp_in_place`]): the reply to a
//! datagram is built in the datagram's own buffer and goes back to the
//! Ethernet source of the request (the previous hop), so answering needs
//! no route or neighbour lookup.
//!
//! The common case, a plain request (fixed IP header, no padding, payload
//! untouched, unicast to our MAC, IPv4 within the link's MTU), is turned
//! around on its fixed header array (`v4::turn_around_plain_udp`,
//! `v6::turn_around_plain_udp6`) with nothing looked up of the link:
//! swapping MACs, addresses and ports leaves the UDP checksum valid. Otherwise the reply
//! gets new headers right before the payload ([`rebuild_reply`], written
//! once for both families): IPv4 options and IPv6 extension headers are
//! not repeated, the UDP checksum is summed afresh, and a request sent to
//! a broadcast address or a group is answered from our own address on
//! that link.

use super::super::buffers::cut_to_payload;
use super::super::ip::{transmit6, MIN_MTU};
use super::super::state::Core;
use super::super::transmit::Out;
use super::family::UdpFamily;
use super::v4::{turn_around_plain_udp, FAST_HEADERS};
use super::v6::{turn_around_plain_udp6, HEADERS6};
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, Port};
use crate::udp::Datagram;
use crate::wire::ethernet::{EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use core::net::{Ipv4Addr, Ipv6Addr};
use core::ops::Range;

/// Sends a datagram's payload back to where it came from, in its own
/// buffer, from the socket's TOS byte (IPv6: traffic class). See the
/// module documentation. Inlined into its callers (an echo's receive
/// loop): passed through memory, the datagram cost more than the call.
#[inline(always)]
pub(crate) fn reply_udp_in_place<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    datagram: Datagram<P::Buf>,
) {
    let Datagram {
        mut buf,
        payload_start,
        payload_end,
        plain,
        to_broadcast: broadcast,
        link,
        v6,
        socket,
        received_at: _,
    } = datagram;
    let link = usize::from(link);
    let tos = core.shared.udp.tos(socket);
    let payload = payload_start as usize..payload_end as usize;
    // A plain request came to our MAC and fits the link's MTU (IPv4; see
    // `Datagram::plain`): its reply needs nothing of the link.
    if plain && !broadcast {
        if v6 {
            if let Some(h) = buf.data_mut().first_chunk_mut::<HEADERS6>() {
                turn_around_plain_udp6(h, tos);
                core.lcore.counters.count(Stat::UdpOutDatagrams);
                if buf.len() <= ETH_LEN + MIN_MTU {
                    core.lcore.counters.count(Stat::Ip6OutRequests);
                    return out.push(link, buf, &core.lcore.counters);
                }
                // It may exceed the link's or a learned path MTU (the
                // sender's link may carry larger frames than ours).
                let _ = transmit6(core, out, link, buf); // counted inside
                return;
            }
        } else if let Some(h) = buf.data_mut().first_chunk_mut::<FAST_HEADERS>() {
            turn_around_plain_udp(h, tos);
            core.lcore.counters.count(Stat::UdpOutDatagrams);
            core.lcore.counters.count(Stat::IpOutRequests);
            return out.push(link, buf, &core.lcore.counters);
        }
    }
    if v6 {
        return rebuild_reply::<Ipv6Addr, P>(core, out, link, buf, payload, (broadcast, tos));
    }
    rebuild_reply::<Ipv4Addr, P>(core, out, link, buf, payload, (broadcast, tos));
}

/// The general case of [`reply_udp_in_place`]: new headers right before
/// the payload, from our address on the link when the request went to a
/// broadcast address or a group, with `tos`; over the MTU, fragments.
#[inline(never)]
fn rebuild_reply<A: UdpFamily, P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    mut buf: P::Buf,
    payload: Range<usize>,
    (to_group, tos): (bool, u8),
) {
    let Some(here) = core.shared.links.get(link) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let (mac, mtu) = (here.mac, here.mtu);
    let ((peer, ours), (peer_port, our_port)) = A::addresses(buf.data(), payload.start);
    if peer_port == 0 {
        // Delivered, as in Linux, but no reply goes to port 0 (a plain
        // request never comes from it: the fast paths leave those here).
        return core.lcore.counters.count_drop(DropReason::TxPortZero);
    }
    let source = if to_group {
        match A::reply_source(here, peer) {
            Some(ip) => ip,
            None => return core.lcore.counters.count_drop(DropReason::TxNoRoute),
        }
    } else {
        ours
    };
    let eth_src = EthernetFrame::new_unchecked(buf.data()).src();
    let headers = ETH_LEN + A::IP_LEN + UDP_LEN;
    let Some(header_start) = payload.start.checked_sub(headers) else {
        return core.lcore.counters.count_drop(DropReason::UdpMalformed);
    };
    cut_to_payload(&mut buf, header_start, payload.end);
    let frame = buf.data_mut();
    if frame.len() != headers + payload.len() {
        return core.lcore.counters.count_drop(DropReason::UdpMalformed);
    }
    let addresses = ((source, our_port), (peer, peer_port));
    A::write_headers(core, frame, addresses, (mac, mtu), tos);
    EthernetFrame::new_unchecked(frame).set_dst(eth_src);
    core.lcore.counters.count(Stat::UdpOutDatagrams);
    let _ = A::transmit(core, out, link, buf); // failures are counted inside
}
