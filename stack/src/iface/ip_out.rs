//! Sending an upper-layer packet that is already in a buffer (TCP
//! segments): the IPv4 or IPv6 header and the Ethernet header go in front,
//! the route picks the link and next hop, the neighbour cache its MAC (the
//! packet waits in the neighbour's bounded queue while a request is out).
//! Slow-path plumbing shared by protocols other than UDP, whose datagrams
//! have their own paths in `tx.rs` and `tx6.rs`.

use super::ip;
use super::next_hop::send_to_neighbor;
use super::transmit::{set_destination_mac, Out, SendError};
use super::tx6;
use super::Core;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::ipv4::{Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::ipv6::{multicast_mac, Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN};
use core::net::{Ipv4Addr, Ipv6Addr, SocketAddrV6};

/// Hop limit / TTL of packets we originate.
const HOPS: u8 = 64;

/// A next hop a connection remembers (early demux on send): its link and
/// MAC, valid while the generation it was found in stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CachedHop {
    generation: u64,
    link: usize,
    mac: MacAddr,
}

impl CachedHop {
    /// The link it leaves through.
    pub(crate) fn link(&self) -> usize {
        self.link
    }
}

/// The generation cached IPv6 hops are stamped with: IPv6 routes and
/// neighbours (IPv4 ones use [`Core::generation`]).
pub(crate) fn generation6<B: Buf>(core: &Core<B>) -> u64 {
    let neighbors = core
        .shared
        .links
        .iter()
        .fold(0u64, |sum, l| sum.wrapping_add(l.neighbors6.generation()));
    core.shared.ip.v6.routes.generation() ^ neighbors.rotate_left(32)
}

/// Writes Ethernet (source, type) and IPv4 headers in front of the payload
/// in `buf`, for `link`.
fn frame_ipv4<B: Buf>(
    core: &mut Core<B>,
    link: usize,
    (src, dst): (Ipv4Addr, Ipv4Addr),
    protocol: u8,
    buf: &mut B,
) -> Result<(), SendError> {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return Err(SendError::NoRoute);
    };
    let payload_len = buf.len();
    if buf.prepend(ETH_LEN + IP_LEN).is_none() {
        core.lcore.counters.count_drop(DropReason::TxNoBuffer);
        return Err(SendError::NoBuffer);
    }
    let ident = core.ident();
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv4);
    Ipv4Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv4Header {
        src,
        dst,
        protocol,
        payload_len: payload_len as u16,
        ttl: HOPS,
        ident,
        dont_fragment: true,
        tos: 0,
    });
    Ok(())
}

/// Writes Ethernet (source, type) and IPv6 headers in front of the payload
/// in `buf`, for `link`.
fn frame_ipv6<B: Buf>(
    core: &mut Core<B>,
    link: usize,
    (src, dst): (Ipv6Addr, Ipv6Addr),
    next_header: u8,
    buf: &mut B,
) -> Result<(), SendError> {
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return Err(SendError::NoRoute);
    };
    let payload_len = buf.len();
    if buf.prepend(ETH_LEN + IP6_LEN).is_none() {
        core.lcore.counters.count_drop(DropReason::TxNoBuffer);
        return Err(SendError::NoBuffer);
    }
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_src(our_mac);
    eth.set_ethertype(EtherType::Ipv6);
    Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]).emit_header(&Ipv6Header {
        src,
        dst,
        next_header,
        payload_len: payload_len as u16,
        hop_limit: HOPS,
    });
    Ok(())
}

/// Sends through a remembered next hop if it is still valid: no route
/// lookup, no neighbour lookup. Hands `buf` back when it is not.
pub(crate) fn send_cached<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    hop: Option<CachedHop>,
    (src, dst): (core::net::IpAddr, core::net::IpAddr),
    protocol: u8,
    mut buf: P::Buf,
) -> Result<Result<(), SendError>, P::Buf> {
    let Some(hop) = hop else {
        return Err(buf);
    };
    let current = match dst {
        core::net::IpAddr::V4(_) => core.generation(),
        core::net::IpAddr::V6(_) => generation6(core),
    };
    if hop.generation != current {
        return Err(buf);
    }
    let framed = match (src, dst) {
        (core::net::IpAddr::V4(s), core::net::IpAddr::V4(d)) => {
            frame_ipv4(core, hop.link, (s, d), protocol, &mut buf)
        }
        (core::net::IpAddr::V6(s), core::net::IpAddr::V6(d)) => {
            frame_ipv6(core, hop.link, (s, d), protocol, &mut buf)
        }
        _ => Err(SendError::NoRoute),
    };
    if let Err(error) = framed {
        return Ok(Err(error));
    }
    set_destination_mac(&mut buf, hop.mac);
    Ok(match dst {
        core::net::IpAddr::V4(_) => {
            ip::transmit_ipv4(core, out, hop.link, buf);
            Ok(())
        }
        core::net::IpAddr::V6(_) => ip::transmit6(core, out, hop.link, buf),
    })
}

/// Sends the upper-layer packet in `buf` from `src` to `dst` over IPv4;
/// returns the next hop to remember when its MAC was known.
pub(crate) fn send_ipv4<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    (src, dst): (Ipv4Addr, Ipv4Addr),
    protocol: u8,
    mut buf: P::Buf,
) -> Result<Option<CachedHop>, SendError> {
    let generation = core.generation();
    core.lcore.counters.count(Stat::RouteLookups);
    let Some(hop) =
        core.lcore
            .ip
            .v4
            .route_cache
            .next_hop(&core.shared.ip.v4.routes, generation, dst)
    else {
        core.lcore.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    let link = usize::from(hop.port);
    frame_ipv4(core, link, (src, dst), protocol, &mut buf)?;
    let mac = send_to_neighbor(core, out, now, link, (hop.source, hop.via), buf)?;
    Ok(mac.map(|mac| CachedHop {
        generation: core.generation(),
        link,
        mac,
    }))
}

/// Sends the upper-layer packet in `buf` from `src` to `dst` over IPv6 (a
/// link-local `dst` names its link by `scope`); returns the next hop to
/// remember when its MAC was known.
pub(crate) fn send_ipv6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    (src, dst, scope): (Ipv6Addr, Ipv6Addr, u32),
    next_header: u8,
    mut buf: P::Buf,
) -> Result<Option<CachedHop>, SendError> {
    let Some(path) = tx6::path6(core, src, &SocketAddrV6::new(dst, 0, 0, scope)) else {
        core.lcore.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    frame_ipv6(core, path.link, (src, dst), next_header, &mut buf)?;
    if path.via.is_multicast() {
        set_destination_mac(&mut buf, multicast_mac(path.via));
        return ip::transmit6(core, out, path.link, buf).map(|()| None);
    }
    let mac = send_to_neighbor(core, out, now, path.link, (path.source, path.via), buf)?;
    Ok(mac.map(|mac| CachedHop {
        generation: generation6(core),
        link: path.link,
        mac,
    }))
}

/// The link a packet to `dst` leaves through (for allocating its buffer
/// from that port's pool), or `None` without a route.
pub(crate) fn link_for<B: Buf>(
    core: &mut Core<B>,
    src: core::net::IpAddr,
    dst: core::net::IpAddr,
    scope: u32,
) -> Option<usize> {
    match (src, dst) {
        (_, core::net::IpAddr::V4(dst)) => core
            .shared
            .ip
            .v4
            .routes
            .next_hop(dst)
            .map(|h| usize::from(h.port)),
        (core::net::IpAddr::V6(src), core::net::IpAddr::V6(dst)) => {
            tx6::path6(core, src, &SocketAddrV6::new(dst, 0, 0, scope)).map(|p| p.link)
        }
        _ => None,
    }
}
