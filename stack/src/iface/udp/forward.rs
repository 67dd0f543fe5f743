//! Zero-copy UDP forwarding ([`forward_udp`] over IPv4, [`forward_udp6`]
//! over IPv6): a received datagram leaves from another socket to another
//! destination in its own buffer, headers rewritten, payload untouched.
//!
//! Over IPv4, three ways through. The relay's steady state, a plain frame
//! (checksums verified, no IPv4 options, no Ethernet padding) that fits
//! the MTU, sent from a socket that keeps a header template for the
//! destination made under the current generation
//! ([`RouteMemo::template`](crate::udp::RouteMemo::template)), gets the
//! template's 42 bytes of headers in one copy, its lengths, a fresh
//! identification and both checksums from the template's partial sums
//! ([`super::template`]): no route, neighbour, link or socket read. A plain
//! frame from a socket that keeps a valid route to the destination but no
//! template ([`RouteMemo::cached_send`](crate::udp::RouteMemo::cached_send))
//! gets one made from that route (once per destination and change of the
//! shared state) and then stamped. Everything else (the first packet to a
//! destination, a changed route or neighbour, padding, options, an
//! unverified checksum, a frame over the MTU) goes the general way: route
//! and neighbour lookups, the UDP checksum updated for a plain frame and
//! summed afresh otherwise, fragments where needed ([`forward_general`],
//! written once for both families). IPv6 always goes the general way,
//! which, through the route the sending socket keeps
//! ([`super::send::path_to`]), does no lookup either while nothing changed.
//!
//! Invariants: per packet, no allocation and no panic; a datagram that
//! cannot be sent is freed, counted and the caller told why; every way
//! puts the same headers on the wire (tests compare them byte for byte).

use super::super::buffers::cut_to_payload;
use super::super::state::Core;
use super::super::transmit::{Out, SendError};
use super::family::UdpFamily;
use super::send::{path_to, port_zero, send_framed};
use super::template;
use super::v4::FAST_HEADERS;
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, Port};
use crate::time::Instant;
use crate::udp::{Datagram, SocketId};
use crate::wire::ethernet::HEADER_LEN as ETH_LEN;
use crate::wire::udp::HEADER_LEN as UDP_LEN;
use core::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};

/// Forwards a received IPv4 datagram's payload from socket `from` to `dst`
/// in the datagram's own buffer (zero-copy): new headers go right before
/// the payload (IPv4 options and Ethernet padding are dropped), with
/// `from`'s address and port as the source (its route's address if it is
/// bound to ANY) and `from`'s TOS byte. A plain datagram (checksums
/// verified, payload untouched) gets its UDP checksum updated for the new
/// addresses and ports (RFC 1624); any other is summed afresh. Routed and
/// resolved as a send is. Per packet; owning lcore. Always inlined, and
/// small: it only takes the datagram apart, so that the call after it
/// passes the buffer in a register instead of a copy of the whole
/// datagram in memory.
#[inline(always)]
pub(crate) fn forward_udp<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    datagram: Datagram<P::Buf>,
    from: SocketId,
    dst: SocketAddrV4,
) -> Result<(), SendError> {
    let Datagram {
        buf,
        payload_start,
        payload_end,
        plain,
        ..
    } = datagram;
    let in_place =
        plain && payload_start as usize == FAST_HEADERS && buf.len() == payload_end as usize;
    if in_place {
        return forward_plain(core, out, now, buf, from, dst);
    }
    // Only here: the plain case above passes no `Payload`.
    let payload = Payload {
        start: payload_start,
        end: payload_end,
        plain,
    };
    forward_general::<Ipv4Addr, P>(core, out, now, buf, payload, from, dst)
}

/// Forwards a received IPv6 datagram's payload from socket `from` to `dst`
/// in the datagram's own buffer (zero-copy), as [`forward_udp`] does for
/// IPv4: new headers right before the payload (extension headers and
/// padding dropped), `from`'s port, its address (the route's for a socket
/// bound to `::`) and traffic class; the UDP checksum updated
/// incrementally for a plain datagram, summed afresh otherwise. Per
/// packet; owning lcore. Always inlined: it only takes the datagram apart
/// (the datagram never passed by reference out of line).
#[inline(always)]
pub(crate) fn forward_udp6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    datagram: Datagram<P::Buf>,
    from: SocketId,
    dst: SocketAddrV6,
) -> Result<(), SendError> {
    let (buf, payload) = take_apart(datagram);
    forward_general::<Ipv6Addr, P>(core, out, now, buf, payload, from, dst)
}

/// A datagram's buffer and where its payload lies.
#[inline]
fn take_apart<B: Buf>(datagram: Datagram<B>) -> (B, Payload) {
    let Datagram {
        buf,
        payload_start,
        payload_end,
        plain,
        ..
    } = datagram;
    let payload = Payload {
        start: payload_start,
        end: payload_end,
        plain,
    };
    (buf, payload)
}

/// Where a datagram's payload lies in its frame, and whether the frame is
/// plain (see [`Datagram`]'s fields of the same names).
#[derive(Clone, Copy)]
struct Payload {
    start: u32,
    end: u32,
    plain: bool,
}

/// [`forward_udp`] for a plain frame (Ethernet, IPv4 without options, UDP
/// with a verified checksum, no padding: the payload at [`FAST_HEADERS`]
/// to the end): the sending socket's header template stamped on it if the
/// socket keeps one for `dst` that holds and the frame fits the MTU, else
/// [`forward_untemplated`]. Per packet; always inlined: small now, and
/// the buffer and addresses stay in the caller's registers.
#[inline(always)]
fn forward_plain<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    buf: P::Buf,
    from: SocketId,
    dst: SocketAddrV4,
) -> Result<(), SendError> {
    match stamp(core, out, buf, from, dst, core.generation()) {
        Ok(sent) => sent,
        Err(buf) => forward_untemplated(core, out, now, buf, from, dst),
    }
}

/// Stamps the sending socket's template for `dst` on a plain frame and
/// queues it, if the socket keeps one that holds under `generation` and
/// the frame fits its MTU; otherwise hands the buffer back.
#[inline(always)]
fn stamp<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    mut buf: P::Buf,
    from: SocketId,
    dst: SocketAddrV4,
    generation: u64,
) -> Result<Result<(), SendError>, P::Buf> {
    let frame_len = buf.len();
    if let Some(h) = buf.data_mut().first_chunk_mut::<FAST_HEADERS>() {
        let memo = &core.lcore.udp_routes;
        if let Some(stamped) = template::readdress(memo, h, frame_len, from, dst, generation) {
            template::finish(h, stamped, core.ident());
            return Ok(send_stamped(core, out, usize::from(stamped.link), buf));
        }
    }
    Err(buf)
}

/// Counts a forwarded frame whose headers are complete and that fits its
/// link, and queues it there.
#[inline(always)]
fn send_stamped<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    buf: P::Buf,
) -> Result<(), SendError> {
    core.lcore.counters.count(Stat::UdpOutDatagrams);
    core.lcore.counters.count(Stat::UdpForwardedInPlace);
    core.lcore.counters.count(Stat::IpOutRequests);
    out.push(link, buf, &core.lcore.counters);
    Ok(())
}

/// [`forward_plain`] without a template that holds (a destination port 0 is
/// refused here, so no template is ever made for it): if the sending socket
/// keeps a valid route to `dst`, its template is made from that route (and
/// kept for the next packets) and stamped on the frame; the frame goes the
/// general way if there is no such route or it does not fit the MTU (it is
/// then fragmented). Once per destination and change of the shared state,
/// and for frames over the MTU: out of line.
#[inline(never)]
fn forward_untemplated<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    mut buf: P::Buf,
    from: SocketId,
    dst: SocketAddrV4,
) -> Result<(), SendError> {
    // Before a template is made: one for port 0 would serve every next
    // forward there.
    if dst.port() == 0 {
        return Err(port_zero(core));
    }
    let generation = core.generation();
    let routes = &core.lcore.udp_routes;
    if let Some(send) = routes.cached_send(from, dst, generation) {
        if let Some(link) = core.shared.links.get(usize::from(send.route.link)) {
            // A learned path MTU holds until the generation moves on.
            let mtu = Ipv4Addr::send_mtu(core, *dst.ip(), link.mtu);
            let made = template::build(&send, dst, link.mac, mtu, generation);
            core.lcore.udp_routes.keep_template(from, made);
            match stamp(core, out, buf, from, dst, generation) {
                Ok(sent) => return sent,
                Err(unsent) => buf = unsent,
            }
        }
    }
    // A plain frame's payload ends with it (`forward_udp`), well below 2^32.
    let payload = Payload {
        start: FAST_HEADERS as u32,
        end: buf.len() as u32,
        plain: true,
    };
    forward_general::<Ipv4Addr, P>(core, out, now, buf, payload, from, dst)
}

/// The general way of [`forward_udp`] and [`forward_udp6`]: the socket's
/// kept route, or the route and next hop looked up (and kept in the socket
/// for next time), IP options or extension headers and Ethernet padding
/// dropped, the headers rewritten (plain) or summed afresh.
fn forward_general<A: UdpFamily, P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    mut buf: P::Buf,
    payload: Payload,
    from: SocketId,
    dst: A::SocketAddr,
) -> Result<(), SendError> {
    let Payload {
        start: payload_start,
        end: payload_end,
        plain,
    } = payload;
    if A::split(dst).1 == 0 {
        return Err(port_zero(core));
    }
    let (local, local_port) = A::local(core, from)?;
    let path = path_to::<A, _>(core, from, &dst)?;
    let Some((mac, mtu)) = core.shared.links.get(path.link).map(|l| (l.mac, l.mtu)) else {
        core.lcore.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    let mtu = A::send_mtu(core, A::split(dst).0, mtu);
    let (start, end) = (payload_start as usize, payload_end as usize);
    let udp_len = UDP_LEN + end.saturating_sub(start);
    if udp_len > A::MAX_UDP_LEN {
        return Err(SendError::TooLarge);
    }
    let headers = ETH_LEN + A::IP_LEN + UDP_LEN;
    let Some(header_start) = start.checked_sub(headers) else {
        core.lcore.counters.count_drop(DropReason::UdpMalformed);
        return Err(SendError::TooLarge);
    };
    cut_to_payload(&mut buf, header_start, end);
    let (dst_ip, dst_port) = A::split(dst);
    let src = (A::source(local, dst_ip, path.source), local_port);
    let tos = core.shared.udp.tos(from);
    let frame = buf.data_mut();
    if frame.len() != headers + udp_len - UDP_LEN {
        core.lcore.counters.count_drop(DropReason::UdpMalformed);
        return Err(SendError::TooLarge);
    }
    let addresses = (src, (dst_ip, dst_port));
    let readdressed =
        plain && header_start == 0 && A::readdress_plain(core, frame, addresses, (mac, mtu), tos);
    if !readdressed {
        A::write_headers(core, frame, addresses, (mac, mtu), tos);
    }
    core.lcore.counters.count(Stat::UdpOutDatagrams);
    core.lcore.counters.count(Stat::UdpForwardedInPlace);
    send_framed(core, out, now, from, dst_ip, buf, path)
}
