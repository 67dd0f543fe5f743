//! UDP out of the pipeline, for both families: the echo reply built in the
//! request's own buffer ([`reply_udp_in_place`]) and a datagram sent from a
//! socket to any destination ([`send_any`]), each choosing the IPv4 path
//! (`tx`) or the IPv6 path (`tx6`).
//!
//! The family paths do not call each other; only this module knows both.

use super::fast6::HEADERS6;
use super::ip::MIN_MTU;
use super::transmit::{Out, SendError};
use super::{tx, tx6, Core};
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, Port};
use crate::time::Instant;
use crate::udp::{Datagram, SocketId};
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use core::net::{SocketAddr, SocketAddrV4};

/// Sends a datagram's payload back to where it came from, in its own buffer.
///
/// The common case (a plain header, unmodified payload, sent to one of our
/// addresses) is turned around on the fixed header array. Otherwise the
/// reply is rebuilt carefully: headers without options, the IPv4 length
/// matching the UDP length, our own address as the source when the request
/// went to a broadcast address, and the UDP checksum recomputed when the
/// source or the payload changed.
#[inline]
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
    let Some((mac, mtu)) = core.shared.links.get(link).map(|l| (l.mac, l.mtu)) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    if v6 {
        if plain && !broadcast {
            if let Some(h) = buf.data_mut().first_chunk_mut::<{ HEADERS6 }>() {
                tx6::turn_around_plain_udp6(h, mac, tos);
                core.lcore.counters.count(Stat::UdpOutDatagrams);
                if buf.len() <= ETH_LEN + MIN_MTU {
                    core.lcore.counters.count(Stat::Ip6OutRequests);
                    return out.push(link, buf, &core.lcore.counters);
                }
                // It may exceed the link's or a learned path MTU (the
                // sender's link may carry larger frames than ours).
                let _ = super::ip::transmit6(core, out, link, buf); // counted inside
                return;
            }
        }
        let payload = payload_start as usize..payload_end as usize;
        return tx6::reply_udp6(core, out, link, buf, payload, broadcast, tos);
    }
    if plain && buf.len() <= ETH_LEN + mtu {
        if let Some(h) = buf.data_mut().first_chunk_mut::<{ tx::FAST_HEADERS }>() {
            tx::turn_around_plain_udp(h, mac, tos);
            core.lcore.counters.count(Stat::UdpOutDatagrams);
            core.lcore.counters.count(Stat::IpOutRequests);
            return out.push(link, buf, &core.lcore.counters);
        }
    }
    let payload = payload_start as usize..payload_end as usize;
    let ((peer_ip, our_ip), (peer_port, our_port)) =
        crate::udp::addresses(buf.data(), payload.start);
    let peer = SocketAddrV4::new(peer_ip, peer_port);
    let ours = SocketAddrV4::new(our_ip, our_port);
    tx::rebuild_udp_reply(core, out, link, buf, peer, ours, payload, (broadcast, tos));
}

/// Sends `payload` from `socket` to `dst`, IPv4 or IPv6 (an IPv4-mapped
/// IPv6 destination goes out as IPv4).
pub(crate) fn send_any<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: SocketAddr,
    payload: &[u8],
) -> Result<(), SendError> {
    match dst {
        SocketAddr::V4(v4) => tx::send_udp(core, out, now, socket, v4, payload),
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => {
                let v4 = SocketAddrV4::new(v4, v6.port());
                tx::send_udp(core, out, now, socket, v4, payload)
            }
            None => tx6::send_udp6(core, out, now, socket, v6, payload),
        },
    }
}
