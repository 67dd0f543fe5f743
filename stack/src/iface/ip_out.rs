//! Sending an upper-layer packet that is already in a buffer (TCP
//! segments, pings): the IPv4 or IPv6 header and the Ethernet header go in
//! front, the route picks the link and next hop, the neighbour cache its
//! MAC (the packet waits in the neighbour's bounded queue while a request
//! is out). Plumbing shared by protocols other than UDP, whose datagrams
//! have their own paths in `tx.rs` and `tx6.rs`.
//!
//! [`IpOut`] is this layer as TCP's endpoint sees it: the implementation
//! of [`SegmentOut`] over the pipeline's state and the poll's transmit
//! context.

use super::config::{hop_limit_to4, hop_limit_to6};
use super::ip;
use super::next_hop::send_to_neighbor;
use super::transmit::{set_destination_mac, Out, SendError};
use super::udp;
use super::Core;
use crate::counters::{Counters, DropReason, Stat};
use crate::port::{Buf, ChecksumStatus, MacAddr, Port};
use crate::tcp::endpoint::{PeerRoute, SegmentOut};
use crate::time::Instant;
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::ipv4::{protocol, Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::ipv6::{
    multicast_mac, next_header, Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN,
};
use crate::wire::Ecn;
use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddrV6};

/// A next hop a connection remembers (early demux on send): its link and
/// MAC, valid while the generation it was found in stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CachedHop {
    generation: u64,
    link: usize,
    mac: MacAddr,
}

/// Writes Ethernet (source, type) and IPv4 headers in front of the payload
/// in `buf`, for `link`; `(protocol, tos)`: the protocol and TOS byte.
fn frame_ipv4<B: Buf>(
    core: &mut Core<B>,
    link: usize,
    (src, dst): (Ipv4Addr, Ipv4Addr),
    (protocol, tos): (u8, u8),
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
        ttl: hop_limit_to4(dst),
        ident,
        dont_fragment: true,
        tos,
    });
    Ok(())
}

/// Writes Ethernet (source, type) and IPv6 headers in front of the payload
/// in `buf`, for `link`; `(next_header, class)`: the upper-layer protocol
/// and traffic class.
fn frame_ipv6<B: Buf>(
    core: &mut Core<B>,
    link: usize,
    (src, dst): (Ipv6Addr, Ipv6Addr),
    (next_header, class): (u8, u8),
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
    let mut ip = Ipv6Packet::new_unchecked(&mut frame[ETH_LEN..]);
    ip.emit_header(&Ipv6Header {
        src,
        dst,
        next_header,
        payload_len: payload_len as u16,
        hop_limit: hop_limit_to6(dst),
    });
    if class != 0 {
        ip.set_traffic_class(class);
    }
    Ok(())
}

/// Sends through a remembered next hop if it is still valid: no route
/// lookup, no neighbour lookup. Hands `buf` back when it is not.
/// `protocol`: the upper-layer protocol and TOS byte (traffic class).
fn send_cached<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    hop: CachedHop,
    (src, dst): (IpAddr, IpAddr),
    protocol: (u8, u8),
    mut buf: P::Buf,
) -> Result<Result<(), SendError>, P::Buf> {
    let current = match dst {
        IpAddr::V4(_) => core.generation(),
        IpAddr::V6(_) => core.generation(),
    };
    if hop.generation != current {
        return Err(buf);
    }
    let framed = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => frame_ipv4(core, hop.link, (s, d), protocol, &mut buf),
        (IpAddr::V6(s), IpAddr::V6(d)) => frame_ipv6(core, hop.link, (s, d), protocol, &mut buf),
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

/// Sends the upper-layer packet in `buf` from `src` to `dst` over IPv4
/// (`protocol`: the protocol and TOS byte); returns the next hop to
/// remember when its MAC was known.
pub(crate) fn send_ipv4<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    (src, dst): (Ipv4Addr, Ipv4Addr),
    protocol: (u8, u8),
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
/// link-local `dst` names its link by `scope`; `next_header`: the
/// upper-layer protocol and traffic class); returns the next hop to
/// remember when its MAC was known.
pub(crate) fn send_ipv6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    now: Instant,
    (src, dst, scope): (Ipv6Addr, Ipv6Addr, u32),
    next_header: (u8, u8),
    mut buf: P::Buf,
) -> Result<Option<CachedHop>, SendError> {
    let Some(path) = udp::path6(core, src, &SocketAddrV6::new(dst, 0, 0, scope)) else {
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
        generation: core.generation(),
        link: path.link,
        mac,
    }))
}

/// The IP layer for TCP's endpoint: the pipeline's state (without the
/// endpoint, lent out while it runs) and the poll's transmit context.
pub(crate) struct IpOut<'c, 'o, 'p, P: Port> {
    pub(crate) core: &'c mut Core<P::Buf>,
    pub(crate) out: &'o mut Out<'p, P>,
}

impl<P: Port> SegmentOut for IpOut<'_, '_, '_, P> {
    type Buf = P::Buf;
    type Hop = CachedHop;

    #[inline]
    fn counters(&self) -> &Counters {
        &self.core.lcore.counters
    }

    #[inline]
    fn checksum_ok(&self, offload: ChecksumStatus, verify: impl FnOnce() -> bool) -> bool {
        self.core.shared.config.checksum.accepts(offload, verify)
    }

    /// No route leads to one of our own addresses: the stack has no
    /// loopback, so a connection to itself fails at once.
    fn route(&mut self, local: IpAddr, remote: IpAddr, scope: u32) -> Option<PeerRoute> {
        match (local, remote) {
            (_, IpAddr::V4(dst)) => {
                let hop = self.core.shared.ip.v4.routes.next_hop(dst)?;
                if self.core.is_local(hop.via) {
                    return None;
                }
                Some(PeerRoute {
                    link: usize::from(hop.port),
                    source: IpAddr::V4(hop.source),
                })
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let to = SocketAddrV6::new(dst, 0, 0, scope);
                let path = udp::path6(self.core, src, &to)?;
                if self.core.is_local6(path.link, dst) {
                    return None;
                }
                Some(PeerRoute {
                    link: path.link,
                    source: IpAddr::V6(path.source),
                })
            }
            _ => None,
        }
    }

    fn path_mtu(&self, link: usize, remote: IpAddr) -> Option<usize> {
        let here = self.core.shared.links.get(link)?;
        Some(match remote {
            IpAddr::V4(dst) => self.core.path_mtu4(dst, here.mtu),
            IpAddr::V6(dst) => self.core.path_mtu6(dst, here.mtu6),
        })
    }

    fn learn_path_mtu(&mut self, remote: IpAddr, mtu: usize, now: Instant) {
        self.core.learn_path_mtu(remote, mtu, now);
    }

    #[inline]
    fn alloc(&mut self, link: Option<usize>) -> Option<P::Buf> {
        // No route: any pool will do (the send then fails for want of a
        // route); the first link always exists.
        self.out.alloc(link.unwrap_or(0))
    }

    #[inline]
    fn hop_link(hop: &CachedHop) -> usize {
        hop.link
    }

    fn send(
        &mut self,
        now: Instant,
        (src, dst, scope): (IpAddr, IpAddr, u32),
        ecn: Ecn,
        buf: P::Buf,
    ) -> Option<CachedHop> {
        let tos = ecn as u8;
        let sent = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                send_ipv4(self.core, self.out, now, (s, d), (protocol::TCP, tos), buf)
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => send_ipv6(
                self.core,
                self.out,
                now,
                (s, d, scope),
                (next_header::TCP, tos),
                buf,
            ),
            _ => Err(SendError::NoRoute),
        };
        sent.ok().flatten()
    }

    #[inline]
    fn send_cached(
        &mut self,
        hop: CachedHop,
        (src, dst): (IpAddr, IpAddr),
        ecn: Ecn,
        buf: P::Buf,
    ) -> Result<(), P::Buf> {
        let protocol = if dst.is_ipv4() {
            protocol::TCP
        } else {
            next_header::TCP
        };
        let protocol = (protocol, ecn as u8);
        send_cached(self.core, self.out, hop, (src, dst), protocol, buf).map(|_| ())
    }
}
