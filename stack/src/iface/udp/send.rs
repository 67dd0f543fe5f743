//! UDP out from a socket, both families: a datagram from a socket to any
//! destination ([`send_any`], [`send_buffer`]), the way it takes
//! ([`path_to`]) and the hand-off of the finished frame ([`send_framed`]).
//!
//! A socket keeps the route and next-hop MAC of its last destination
//! (`UdpTable::cached_route`, `cached_route6`), stamped with the family's
//! route and neighbour generation: while nothing changed, a send to the
//! same destination does no route or neighbour lookup; any route or
//! neighbour change moves the generation on and the next send looks up
//! afresh (and keeps the new answer). Broadcast and multicast destinations
//! need no neighbour; link-local IPv6 destinations are routed by their
//! scope and not kept.

use super::super::buffers::new_with_payload;
use super::super::next_hop::send_to_neighbor;
use super::super::state::Core;
use super::super::transmit::{set_destination_mac, Out, SendError};
use super::family::UdpFamily;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, MacAddr, Port};
use crate::time::Instant;
use crate::udp::table::CachedRoute;
use crate::udp::SocketId;
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use core::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4};

/// How a datagram from a socket leaves: the link, the neighbour to resolve
/// (unless the socket's kept route already knows its MAC) and the route's
/// source address.
#[derive(Debug, Clone, Copy)]
pub(super) struct Path<A> {
    pub(super) link: usize,
    pub(super) via: A,
    pub(super) source: A,
    /// The next hop's MAC if the socket had it ([`packed_mac`]), else
    /// [`NO_MAC`]: one 8-byte word, so copying a `Path` never reloads a
    /// 6-byte field with a wider load (a store-forwarding stall).
    pub(super) cached_mac: u64,
    pub(super) generation: u64,
}

/// No cached MAC (a MAC has 48 bits).
const NO_MAC: u64 = u64::MAX;

/// A MAC in the low 48 bits of a word.
#[inline]
fn packed_mac(mac: MacAddr) -> u64 {
    let m = mac.0;
    u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0])
}

/// The inverse of [`packed_mac`].
#[inline]
fn unpacked_mac(bits: u64) -> MacAddr {
    let b = bits.to_le_bytes();
    MacAddr([b[0], b[1], b[2], b[3], b[4], b[5]])
}

/// Finds the way to `dst` for `socket`: the route the socket keeps (early
/// demux: no lookup while nothing changed), else the route cache.
pub(super) fn path_to<A: UdpFamily, B: Buf>(
    core: &mut Core<B>,
    socket: SocketId,
    dst: &A::SocketAddr,
) -> Result<Path<A>, SendError> {
    let generation = core.generation();
    if let Some(route) = A::kept_route(core, socket, dst, generation) {
        return Ok(Path {
            link: usize::from(route.link),
            via: route.dst,
            source: route.source,
            cached_mac: packed_mac(route.mac),
            generation,
        });
    }
    let Some((link, via, source)) = A::route(core, dst, generation) else {
        core.lcore.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    Ok(Path {
        link,
        via,
        source,
        cached_mac: NO_MAC,
        generation,
    })
}

/// Sends `payload` from `socket` to `dst`, IPv4 or IPv6 (an IPv4-mapped
/// IPv6 destination goes out as IPv4), in a new buffer from the outgoing
/// link's pool.
pub(crate) fn send_any<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: SocketAddr,
    payload: &[u8],
) -> Result<(), SendError> {
    match dst {
        SocketAddr::V4(v4) => send::<Ipv4Addr, P>(core, out, now, socket, v4, payload),
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => {
                let v4 = SocketAddrV4::new(v4, v6.port());
                send::<Ipv4Addr, P>(core, out, now, socket, v4, payload)
            }
            None => send::<Ipv6Addr, P>(core, out, now, socket, v6, payload),
        },
    }
}

/// Builds and sends a UDP datagram of family `A` from `socket` to `dst`
/// (copies `payload` into a new buffer from the outgoing link's pool).
fn send<A: UdpFamily, P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: A::SocketAddr,
    payload: &[u8],
) -> Result<(), SendError> {
    if A::split(dst).1 == 0 {
        return Err(port_zero(core));
    }
    let local = A::local(core, socket)?;
    let path = path_to::<A, _>(core, socket, &dst)?;
    let headers = ETH_LEN + A::IP_LEN + UDP_LEN;
    let buf = new_with_payload(&core.lcore.counters, out, path.link, headers, payload)?;
    send_on_path(core, out, now, (socket, local), dst, buf, path)
}

/// Sends the payload already in `buf` (queue mode) as a UDP datagram from
/// `socket` to `dst`, either family: the headers are prepended in the
/// buffer's headroom.
pub(crate) fn send_buffer<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: SocketAddr,
    buf: P::Buf,
) -> Result<(), SendError> {
    match dst {
        SocketAddr::V4(v4) => send_in::<Ipv4Addr, P>(core, out, now, socket, v4, buf),
        SocketAddr::V6(v6) => send_in::<Ipv6Addr, P>(core, out, now, socket, v6, buf),
    }
}

/// [`send_buffer`] for family `A`.
fn send_in<A: UdpFamily, P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: A::SocketAddr,
    buf: P::Buf,
) -> Result<(), SendError> {
    if A::split(dst).1 == 0 {
        return Err(port_zero(core));
    }
    let local = A::local(core, socket)?;
    let path = path_to::<A, _>(core, socket, &dst)?;
    send_on_path(core, out, now, (socket, local), dst, buf, path)
}

/// Refuses a datagram to port 0, as Linux's `sendto` does (`EINVAL`): no
/// socket can listen there. Counted.
#[cold]
pub(super) fn port_zero<B: Buf>(core: &Core<B>) -> SendError {
    core.lcore.counters.count_drop(DropReason::TxPortZero);
    SendError::PortZero
}

/// Prepends the headers to the payload in `buf` (source: the socket's
/// address, or the route's for a socket bound to ANY; its TOS byte) and
/// sends it along `path`.
fn send_on_path<A: UdpFamily, P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    (socket, (local, local_port)): (SocketId, (A, u16)),
    dst: A::SocketAddr,
    mut buf: P::Buf,
    path: Path<A>,
) -> Result<(), SendError> {
    let Some((mac, mtu)) = core.shared.links.get(path.link).map(|l| (l.mac, l.mtu)) else {
        core.lcore.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    let (dst_ip, dst_port) = A::split(dst);
    let mtu = A::send_mtu(core, dst_ip, mtu);
    let src_ip = A::source(local, dst_ip, path.source);
    if UDP_LEN + buf.len() > A::MAX_UDP_LEN {
        return Err(SendError::TooLarge);
    }
    if buf.prepend(ETH_LEN + A::IP_LEN + UDP_LEN).is_none() {
        return Err(SendError::TooLarge);
    }
    let tos = core.shared.udp.tos(socket);
    let addresses = ((src_ip, local_port), (dst_ip, dst_port));
    A::write_headers(core, buf.data_mut(), addresses, (mac, mtu), tos);
    core.lcore.counters.count(Stat::UdpOutDatagrams);
    send_framed(core, out, now, socket, dst_ip, buf, path)
}

/// Sends a finished frame along `path`: to the socket's kept next hop, to
/// a group's MAC, or through the neighbour cache (the socket keeps the
/// route to `dst` once the neighbour is known).
pub(super) fn send_framed<A: UdpFamily, P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    socket: SocketId,
    dst: A,
    mut buf: P::Buf,
    path: Path<A>,
) -> Result<(), SendError> {
    let link = path.link;
    if path.cached_mac != NO_MAC {
        set_destination_mac(&mut buf, unpacked_mac(path.cached_mac));
        return A::transmit(core, out, link, buf);
    }
    if let Some(group) = A::group_mac(core, dst) {
        set_destination_mac(&mut buf, group);
        return A::transmit(core, out, link, buf);
    }
    let via = (path.source, path.via);
    if let Some(mac) = send_to_neighbor(core, out, now, link, via, buf)? {
        let route = CachedRoute {
            dst,
            generation: path.generation,
            source: path.source,
            mac,
            link: link as u16,
        };
        A::keep_route(core, socket, route);
    }
    Ok(())
}
