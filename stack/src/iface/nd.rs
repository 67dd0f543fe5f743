//! Neighbor Discovery (RFC 4861) and duplicate address detection (RFC
//! 4862) on each IPv6 link: solicitations for the link's addresses
//! answered with an advertisement built in the solicitation's own buffer,
//! advertisements and router advertisements learned, the solicitations we
//! send (to resolve next hops, [`send_solicitation`]; to probe tentative
//! addresses, [`run_dad`]; for routers, [`send_router_solicitation`]), and
//! the neighbour cache's timers ([`poll_neighbors`]).
//!
//! Every message we receive or send carries hop limit 255, which proves it
//! was not forwarded (RFC 4861 7.1); one whose link-layer address option
//! holds a group MAC is dropped (`NdGroupLinkAddress`), as ARP refuses
//! group senders. A tentative address is not answered for; another node's
//! advertisement for it, or its own detection, makes it a duplicate, never
//! used. Owning lcore only; no allocation per message, every drop counted.

use super::buffers::new_frame;
use super::icmp::IcmpIn;
use super::ip::{transmit6, MIN_MTU};
use super::next_hop::{release_waiting, NextHopAddr};
use super::transmit::{Out, SendError};
use super::{Core, Link, Tentative, ALL_NODES};
use super::{LinkNeighbors, SharedState};
use crate::counters::{DropReason, Stat};
use crate::neighbor::{NeighborCache, NeighborView, Probe};
use crate::port::{Buf, MacAddr, Port};
use crate::route::Ipv6Cidr;
use crate::route::Route6;
use crate::time::{Duration, Instant};
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::icmpv6::{emit_router_solicitation, ROUTER_SOLICITATION_LEN};
use crate::wire::icmpv6::{Icmpv6Packet, NdpRepr, RouterAdvert};
use crate::wire::ipv6::{multicast_mac, next_header, solicited_node};
use crate::wire::ipv6::{Ipv6Header, Ipv6Packet, HEADER_LEN as IP6_LEN};
use core::net::Ipv6Addr;

/// Neighbor Discovery messages carry this hop limit, which proves they were
/// not forwarded (RFC 4861 7.1).
const ND_HOP_LIMIT: u8 = 255;

/// ff02::2, the all-routers group.
const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);

/// A neighbour solicitation or advertisement (RFC 4861 7.1 validity: hop
/// limit 255, a well-formed message, no group MAC as its link-layer
/// address).
pub(super) fn neighbor_message<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    message: &IcmpIn<Ipv6Addr>,
) {
    let ndp = match NdpRepr::parse(&buf.data()[message.start..message.end]) {
        Ok(ndp) if unforwarded(&buf) => ndp,
        _ => return core.lcore.counters.count_drop(DropReason::NdInvalid),
    };
    let link_address = match &ndp {
        NdpRepr::Solicitation { source_mac, .. } => source_mac,
        NdpRepr::Advertisement { target_mac, .. } => target_mac,
    };
    if link_address.is_some_and(|mac| mac.is_multicast()) {
        // No neighbour has a group MAC: learned, it would send our unicast
        // traffic (and our advertisement) to a group.
        return core
            .lcore
            .counters
            .count_drop(DropReason::NdGroupLinkAddress);
    }
    match ndp {
        NdpRepr::Solicitation { target, source_mac } => {
            solicitation(core, out, link, now, buf, message, (target, source_mac))
        }
        NdpRepr::Advertisement {
            solicited,
            override_,
            target,
            target_mac,
            ..
        } => {
            let flags = (solicited, override_);
            advertisement(core, out, link, now, message, (target, target_mac), flags)
        }
    }
}

/// True if the IPv6 packet in `buf` arrived with ND's hop limit.
fn unforwarded<B: Buf>(buf: &B) -> bool {
    buf.data()
        .get(ETH_LEN..)
        .filter(|ip| ip.len() >= IP6_LEN)
        .is_some_and(|ip| Ipv6Packet::new_unchecked(ip).hop_limit() == ND_HOP_LIMIT)
}

/// Answers a neighbour solicitation for one of the link's addresses with an
/// advertisement, built in the solicitation's buffer; learns the solicitor.
fn solicitation<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    mut buf: P::Buf,
    message: &IcmpIn<Ipv6Addr>,
    (target, source_mac): (Ipv6Addr, Option<MacAddr>),
) {
    // RFC 4861 7.1.1: from the unspecified address (duplicate address
    // detection), only to a solicited-node group and without a link-layer
    // address option.
    let dad = message.src.is_unspecified();
    if dad && (message.dst != solicited_node(target) || source_mac.is_some()) {
        return core.lcore.counters.count_drop(DropReason::NdInvalid);
    }
    let our_mac = core.shared.links[link].mac;
    if core.shared.links[link].is_tentative6(target) {
        // RFC 4862 5.4.3: another node's detection for our tentative
        // address means it is taken; a resolution for it is not ours to
        // answer yet. One from our own MAC is our own solicitation looped
        // back (or a tap's kernel side, which starts with the port's MAC):
        // not another node (as Linux ignores looped-back DAD).
        if dad && message.eth_src != our_mac {
            address_in_use(core, link, target);
        }
        return core.lcore.counters.count_drop(DropReason::NdNotForUs);
    }
    if !core.shared.links[link].has_address6(target) {
        return core.lcore.counters.count_drop(DropReason::NdNotForUs);
    }
    core.lcore.counters.count(Stat::Icmp6InNeighborSolicits);
    if let (false, Some(mac)) = (dad, source_mac) {
        let src = message.src;
        let waiting = core
            .shared
            .edit_neighbors(|shared| shared.neighbors[link].v6.observe(src, mac, true, now));
        release_waiting::<_, Ipv6Addr>(core, out, link, waiting, mac);
    }
    // The advertisement: to the solicitor, or to all nodes when the
    // solicitor has no address yet.
    let (dst, dst_mac) = if dad {
        (ALL_NODES, multicast_mac(ALL_NODES))
    } else {
        (message.src, source_mac.unwrap_or(message.eth_src))
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

/// A neighbour advertisement: learned as RFC 4861 7.2.5 says (it never
/// creates an entry), releasing what waited for the neighbour; one for a
/// tentative address of ours means another node has it.
fn advertisement<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    message: &IcmpIn<Ipv6Addr>,
    (target, target_mac): (Ipv6Addr, Option<MacAddr>),
    (solicited, override_): (bool, bool),
) {
    // RFC 4861 7.1.2: a multicast advertisement is unsolicited.
    if message.to_group && solicited {
        return core.lcore.counters.count_drop(DropReason::NdInvalid);
    }
    core.lcore
        .counters
        .count(Stat::Icmp6InNeighborAdvertisements);
    if core.shared.links[link].is_tentative6(target) {
        // RFC 4862 5.4.4: someone has it (unless it is us, looped back).
        if message.eth_src != core.shared.links[link].mac {
            address_in_use(core, link, target);
        }
        return;
    }
    let (waiting, mac) = core.shared.edit_neighbors(|shared| {
        shared.neighbors[link]
            .v6
            .advertised(target, target_mac, solicited, override_, now)
    });
    if let Some(mac) = mac {
        release_waiting::<_, Ipv6Addr>(core, out, link, waiting, mac);
    }
}

/// A router advertisement (RFC 4861 6.1.2 validity: hop limit 255, from a
/// link-local address; and no group MAC as its link-layer address). The
/// router's MAC is learned (stale); with
/// [`super::InterfaceConfig::accept_ra`], its MTU option sets the link's
/// IPv6 MTU ([`advertised_mtu`]), a non-zero router lifetime
/// installs (or refreshes) the default route through it, and zero from the
/// current default router removes it. A static default route is left alone.
pub(super) fn router_advert<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: &P::Buf,
    message: &IcmpIn<Ipv6Addr>,
) {
    let router = message.src;
    let advert = match RouterAdvert::parse(&buf.data()[message.start..message.end]) {
        Ok(advert) if unforwarded(buf) && router.is_unicast_link_local() => advert,
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
    if let Some(mtu) = advert.mtu {
        advertised_mtu(core, link, mtu);
    }
    if let Some(mac) = advert.source_mac {
        let waiting = core
            .shared
            .edit_neighbors(|shared| shared.neighbors[link].v6.observe(router, mac, true, now));
        release_waiting::<_, Ipv6Addr>(core, out, link, waiting, mac);
    }
    let ours = core.shared.ra_default.is_some();
    if !ours && core.shared.ip.v6.routes.get(Ipv6Cidr::DEFAULT).is_some() {
        return; // a static default route
    }
    let current = |shared: &SharedState<P::Buf>| {
        shared
            .ra_default
            .is_some_and(|(l, r, _)| l == link && r == router)
    };
    if advert.lifetime_secs == 0 {
        if current(&core.shared) {
            core.shared.edit(|shared| {
                shared.ra_default = None;
                shared.ip.v6.routes.remove(Ipv6Cidr::DEFAULT);
            });
        }
        return;
    }
    let Some(source) = core.shared.links[link].route_source6() else {
        return;
    };
    let until = now + Duration::from_secs(u64::from(advert.lifetime_secs));
    core.shared.edit(|shared| {
        let same = current(shared);
        shared.ra_default = Some((link, router, until));
        if !same {
            shared.ip.v6.routes.add(Route6 {
                prefix: Ipv6Cidr::DEFAULT,
                gateway: Some(router),
                port: link as u16,
                source,
            });
        }
    });
}

/// A router advertisement's MTU option (RFC 4861 6.3.4): the link's IPv6
/// MTU if it is at least the IPv6 minimum and at most what the link
/// carries; ignored otherwise (counted, `Icmp6InRaMtuIgnored`).
fn advertised_mtu<B: Buf>(core: &mut Core<B>, link: usize, mtu: u32) {
    let Some(here) = core.shared.links.get(link) else {
        return;
    };
    let mtu = usize::try_from(mtu).unwrap_or(usize::MAX);
    if !(MIN_MTU..=here.mtu).contains(&mtu) {
        return core.lcore.counters.count(Stat::Icmp6InRaMtuIgnored);
    }
    if here.mtu6 != mtu {
        core.shared.edit(|shared| shared.links[link].mtu6 = mtu);
    }
}

/// A link's first poll: duplicate address detection starts, and with
/// `accept_ra` routers are asked to advertise once the link-local address
/// is in use.
pub(super) fn start<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
) {
    run_dad(core, out, link, now);
    let ready = core.shared.links[link].link_local6().is_some();
    if core.shared.config.accept_ra && ready {
        send_router_solicitation(core, out, link);
    }
}

/// Duplicate address detection on `link`: solicitations for tentative
/// addresses whose time has come, and addresses that stayed unclaimed
/// taken into use.
pub(super) fn run_dad<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
) {
    let due = |t: &Tentative| t.deadline.is_none_or(|d| now >= d);
    if !core.shared.links[link].tentative6.iter().any(due) {
        return;
    }
    let retrans = core.shared.config.neighbor.retrans_time;
    // Decided under the lock, sent after it.
    let mut solicit = Vec::new();
    let mut in_use = Vec::new();
    core.shared.edit(|shared| {
        let mut index = 0;
        while let Some(tentative) = shared.links[link].tentative6.get_mut(index) {
            if !due(tentative) {
                index += 1;
                continue;
            }
            if tentative.probes_left > 0 {
                tentative.probes_left -= 1;
                tentative.deadline = Some(now + retrans);
                solicit.push(tentative.cidr.addr);
                index += 1;
                continue;
            }
            let cidr = tentative.cidr;
            shared.links[link].tentative6.remove(index);
            shared.links[link].addresses6.push(cidr);
            add_on_link_route6(shared, link, cidr);
            in_use.push(cidr);
        }
    });
    for target in solicit {
        send_dad_solicitation(core, out, link, target);
    }
    for cidr in in_use {
        if core.shared.config.accept_ra && cidr.addr.is_unicast_link_local() {
            send_router_solicitation(core, out, link);
        }
    }
}

/// Another node uses `ip`, tentative on `link`: it is never used here.
fn address_in_use<B: Buf>(core: &mut Core<B>, link: usize, ip: Ipv6Addr) {
    let found = core.shared.edit(|shared| {
        let tentative = &mut shared.links[link].tentative6;
        let at = tentative.iter().position(|t| t.cidr.addr == ip)?;
        let cidr = tentative.remove(at).cidr;
        shared.links[link].duplicates6.push(cidr);
        Some(cidr)
    });
    if found.is_some() {
        core.lcore.counters.count(Stat::Ip6DadDuplicates);
    }
}

/// The on-link route of an IPv6 address's prefix, once the address is in
/// use (none for link-local addresses, which name their link, or for
/// /128s).
pub(super) fn add_on_link_route6<B: Buf>(shared: &mut SharedState<B>, link: usize, cidr: Ipv6Cidr) {
    if cidr.len < 128 && !cidr.addr.is_unicast_link_local() {
        shared.ip.v6.routes.add(Route6 {
            prefix: cidr,
            gateway: None,
            port: link as u16,
            source: cidr.addr,
        });
    }
}

/// The IPv6 neighbour cache's timers on `link`: entries aged, solicitations
/// repeated for neighbours still unresolved or being probed, and the
/// packets of those given up on dropped (counted).
pub(super) fn poll_neighbors<B: Buf, P: Port<Buf = B>>(
    core: &mut Core<B>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
) {
    let mut probes = Vec::new();
    let given_up = core
        .shared
        .edit_neighbors(|shared| shared.neighbors[link].v6.poll(now, &mut probes));
    for _ in 0..given_up {
        core.lcore
            .counters
            .count_drop(DropReason::TxNeighborUnresolved);
    }
    for Probe { ip, mac } in probes {
        send_solicitation(core, out, link, ip, mac);
    }
}

/// Sends one Neighbor Discovery message on `link`: `emit` writes its `len`
/// bytes, the ICMPv6 checksum is filled for `src` and `dst`; counts `stat`.
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
        hop_limit: ND_HOP_LIMIT,
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
pub(super) fn send_solicitation<P: Port>(
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
fn send_dad_solicitation<P: Port>(
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
pub(super) fn send_router_solicitation<P: Port>(
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
    let message = (ROUTER_SOLICITATION_LEN, |m: &mut [u8]| {
        emit_router_solicitation(m, our_mac)
    });
    send_nd(
        core,
        out,
        link,
        (source, ALL_ROUTERS, multicast_mac(ALL_ROUTERS)),
        message,
        Stat::Icmp6OutRouterSolicits,
    );
}

impl NextHopAddr for Ipv6Addr {
    fn cache<B>(caches: &mut LinkNeighbors<B>) -> &mut NeighborCache<B, Ipv6Addr> {
        &mut caches.v6
    }

    fn view(link: &Link) -> &NeighborView<Ipv6Addr> {
        &link.neighbors6
    }

    fn is_ours<B: Buf>(core: &Core<B>, link: usize, ip: Ipv6Addr) -> bool {
        core.is_local6(link, ip)
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
