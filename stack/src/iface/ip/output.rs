//! IP out, once for both families: a finished frame handed to its link
//! ([`transmit`]: fit the MTU, else fragment), and the turn-around of a
//! received frame's Ethernet and IPv4 headers for a reply built in its
//! buffer.
//!
//! Per packet, owning lcore only: no allocation unless the frame must be
//! fragmented, no panic. A frame ends pushed to its link's transmit batch,
//! in fragments, or as a counted drop.

use super::fragment::{fragment, Fragmenting, MIN_MTU};
use crate::counters::DropReason;
use crate::iface::config::DEFAULT_HOP_LIMIT;
use crate::iface::state::{Core, Link};
use crate::iface::transmit::{Out, SendError};
use crate::port::{Buf, MacAddr, Port};
use crate::route::{V4, V6};
use crate::wire::ethernet::{EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::ipv4::{Ipv4Header, Ipv4Packet, HEADER_LEN as IP_LEN};
use crate::wire::ipv6::Ipv6Packet;

/// A family's choice of the MTU a frame must fit.
pub(crate) trait Sending: Fragmenting {
    /// The MTU for `frame` (an Ethernet frame of this family) on a link of
    /// `link_mtu`.
    fn mtu<B: Buf>(core: &Core<B>, frame: &[u8], link_mtu: usize) -> usize;

    /// The family's MTU on `link`.
    fn link_mtu(link: &Link) -> usize;
}

impl Sending for V4 {
    /// The link's for a frame with DF (TCP sizes its segments to the path
    /// MTU itself; a router tells when one does not fit), and for every
    /// frame while no path MTU is learned; otherwise the path MTU to the
    /// destination, for a datagram UDP sent without DF because it exceeds
    /// it (fragmented here, as Linux's IP_PMTUDISC_WANT, rather than lost
    /// on the path for ever).
    #[inline]
    fn mtu<B: Buf>(core: &Core<B>, frame: &[u8], link_mtu: usize) -> usize {
        if core.shared.ip.v4.path_mtus.is_empty() || frame.len() <= ETH_LEN + MIN_PATH_MTU4 {
            return link_mtu;
        }
        match frame.get(ETH_LEN..).map(Ipv4Packet::new_checked) {
            Some(Ok(ip)) if !ip.dont_fragment() => core.path_mtu::<V4>(ip.dst(), link_mtu),
            _ => link_mtu,
        }
    }

    #[inline]
    fn link_mtu(link: &Link) -> usize {
        link.mtu
    }
}

/// The smallest IPv4 path MTU a "fragmentation needed" about a datagram
/// may teach: every host takes 576-byte datagrams (RFC 1122), TCP's floor
/// for the same table too; a lower report is raised to it, so a forged
/// one cannot make every datagram a shower of tiny fragments.
pub(crate) const MIN_PATH_MTU4: usize = 576;

impl Sending for V6 {
    /// The path MTU to the destination (the link's, or less if a packet
    /// too big said so); frames that fit the minimum MTU skip the lookup.
    #[inline]
    fn mtu<B: Buf>(core: &Core<B>, frame: &[u8], link_mtu: usize) -> usize {
        if frame.len() <= ETH_LEN + MIN_MTU {
            return link_mtu;
        }
        match frame.get(ETH_LEN..).map(Ipv6Packet::new_checked) {
            Some(Ok(ip)) => core.path_mtu::<V6>(ip.dst(), link_mtu),
            _ => link_mtu,
        }
    }

    /// The link's, or less if a router advertised less.
    #[inline]
    fn link_mtu(link: &Link) -> usize {
        link.mtu6
    }
}

/// Sends a finished frame of family `F` out of `link`, in fragments if it
/// exceeds the MTU ([`Sending::mtu`]). Failures are counted here.
pub(crate) fn transmit<F: Sending, P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    buf: P::Buf,
) -> Result<(), SendError> {
    if !F::OUT_REQUESTS_PER_FRAME {
        core.lcore.counters.count(F::OUT_REQUESTS);
    }
    let Some(link_mtu) = core.shared.links.get(link).map(F::link_mtu) else {
        core.lcore.counters.count_drop(DropReason::TxNoRoute);
        return Err(SendError::NoRoute);
    };
    let mtu = F::mtu(core, buf.data(), link_mtu);
    if buf.len() <= ETH_LEN + mtu {
        if F::OUT_REQUESTS_PER_FRAME {
            core.lcore.counters.count(F::OUT_REQUESTS);
        }
        out.push(link, buf, &core.lcore.counters);
        return Ok(());
    }
    fragment::<F, P>(core, out, link, mtu, &buf)
}

/// [`transmit`] for IPv4, whose callers learn of failures from the
/// counters only.
#[inline]
pub(crate) fn transmit_ipv4<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    buf: P::Buf,
) {
    let _ = transmit::<V4, P>(core, out, link, buf); // failures are counted inside
}

/// [`transmit`] for IPv6.
#[inline]
pub(crate) fn transmit6<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    buf: P::Buf,
) -> Result<(), SendError> {
    transmit::<V6, P>(core, out, link, buf)
}

/// Swaps the Ethernet addresses: the reply goes back to the previous hop.
pub(crate) fn turn_around_ethernet<B: Buf>(buf: &mut B, our_mac: MacAddr, eth_src: MacAddr) {
    let mut eth = EthernetFrame::new_unchecked(buf.data_mut());
    eth.set_dst(eth_src);
    eth.set_src(our_mac);
}

/// Turns the IPv4 header around for a reply. A plain 20-byte header is
/// rewritten in place with an incremental checksum update (the common case);
/// a header with options is rebuilt without them, right before the payload.
pub(crate) fn turn_around_ipv4<B: Buf>(core: &mut Core<B>, buf: &mut B, mtu: usize) {
    let Some(bytes) = buf.data_mut().get_mut(ETH_LEN..) else {
        return;
    };
    let ip = Ipv4Packet::new_unchecked(&*bytes);
    let header_len = ip.header_len();
    let fits = usize::from(ip.total_len()) <= mtu;
    if header_len == IP_LEN && fits {
        return Ipv4Packet::new_unchecked(bytes).reverse_for_reply(DEFAULT_HOP_LIMIT);
    }
    let (src, dst, proto, payload_len) = (
        ip.src(),
        ip.dst(),
        ip.protocol(),
        ip.total_len().saturating_sub(header_len as u16),
    );
    let start = header_len - IP_LEN;
    let ident = core.ident();
    Ipv4Packet::new_unchecked(&mut bytes[start..]).emit_header(&Ipv4Header {
        src: dst,
        dst: src,
        protocol: proto,
        payload_len,
        ttl: DEFAULT_HOP_LIMIT,
        ident,
        dont_fragment: false,
        tos: 0,
    });
    if start > 0 {
        // Move the Ethernet header up to the new IP header.
        let data = buf.data_mut();
        data.copy_within(0..ETH_LEN, start);
        buf.adjust(start);
    }
}
