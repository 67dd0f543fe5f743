//! ARP (RFC 826) on one link: requests for our addresses answered in the
//! request's own buffer, senders learned into the link's neighbour cache
//! (releasing what waited for them), martian senders refused, the requests
//! we send to resolve IPv4 next hops ([`send_request`]), the gratuitous
//! announcement of our addresses ([`announce`]) and the neighbour cache's
//! timers ([`poll_neighbors`]).

use super::buffers::new_frame;
use super::next_hop::{release_waiting, NextHopAddr};
use super::poll::Poll;
use super::transmit::{Out, SendError};
use super::LinkNeighbors;
use super::{Core, Link};
use crate::counters::{DropReason, Stat};
use crate::neighbor::{NeighborCache, NeighborView, Probe};
use crate::port::{Buf, MacAddr, Port};
use crate::route::Ipv4Cidr;
use crate::time::Instant;
use crate::wire::arp::{ArpOperation, ArpRepr, PACKET_LEN as ARP_LEN};
use crate::wire::ethernet::{EtherType, EthernetFrame, HEADER_LEN as ETH_LEN};
use crate::wire::WireError;
use core::net::Ipv4Addr;

impl<P: Port> Poll<'_, '_, P> {
    /// ARP on `link`: we answer for that link's own addresses, and learn
    /// neighbours into that link's cache; martian senders are refused.
    pub(super) fn arp_input(&mut self, mut buf: P::Buf, link: usize) {
        let (core, out, now) = (&mut *self.core, &mut *self.out, self.now);
        let arp = match ArpRepr::parse(&buf.data()[ETH_LEN..]) {
            Ok(arp) => arp,
            Err(WireError::Unsupported) => {
                return core.lcore.counters.count_drop(DropReason::ArpUnsupported)
            }
            Err(_) => return core.lcore.counters.count_drop(DropReason::ArpMalformed),
        };
        if arp.sender_mac.is_multicast()
            || arp.sender_ip.is_unspecified() && arp.operation == ArpOperation::Reply
        {
            return core.lcore.counters.count_drop(DropReason::ArpMalformed);
        }
        if let Some(reason) = martian_sender(core, link, &arp) {
            // Neither learned (the entry would capture traffic to that
            // address) nor answered.
            return core.lcore.counters.count_drop(reason);
        }
        let here = &core.shared.links[link];
        let our_mac = here.mac;
        let for_us = here.addresses.iter().any(|a| a.addr == arp.target_ip);
        // Only on-link senders get a new entry: an off-link address in an ARP
        // packet is bogus, and must not take room in the cache.
        let on_link = here.on_link(arp.sender_ip);
        if !arp.sender_ip.is_unspecified() {
            let create = for_us && on_link;
            let released = core.shared.edit_neighbors(|shared| {
                shared.neighbors[link]
                    .v4
                    .learn(arp.sender_ip, arp.sender_mac, create, now)
            });
            release_waiting::<_, Ipv4Addr>(core, out, link, released, arp.sender_mac);
        }
        match arp.operation {
            ArpOperation::Reply => core.lcore.counters.count(Stat::ArpInReplies),
            ArpOperation::Request if for_us => {
                core.lcore.counters.count(Stat::ArpInRequests);
                let reply = ArpRepr {
                    operation: ArpOperation::Reply,
                    sender_mac: our_mac,
                    sender_ip: arp.target_ip,
                    target_mac: arp.sender_mac,
                    target_ip: arp.sender_ip,
                };
                let data = buf.data_mut();
                reply.emit(&mut data[ETH_LEN..]);
                let mut frame = EthernetFrame::new_unchecked(data);
                frame.set_dst(arp.sender_mac);
                frame.set_src(our_mac);
                core.lcore.counters.count(Stat::ArpOutReplies);
                out.push(link, buf, &core.lcore.counters);
            }
            ArpOperation::Request if arp.sender_ip == arp.target_ip => {
                // An announcement: learned above if the neighbour was known.
                core.lcore.counters.count(Stat::ArpInGratuitous);
            }
            ArpOperation::Request => core.lcore.counters.count_drop(DropReason::ArpNotForUs),
        }
    }
}

/// Why the sender of `arp` cannot be a neighbour, if it cannot: one of our
/// addresses (claimed by another MAC: an address conflict; from our own
/// MAC: our own packet looped back), a network or broadcast address of one
/// of our subnets, or any source IPv4 never accepts. The unspecified sender
/// of an address probe (RFC 5227) is not one: it teaches nothing.
fn martian_sender<B: Buf>(core: &Core<B>, link: usize, arp: &ArpRepr) -> Option<DropReason> {
    let ip = arp.sender_ip;
    if ip.is_unspecified() {
        return None;
    }
    if core.is_local(ip) {
        let looped_back = core
            .shared
            .links
            .get(link)
            .is_some_and(|l| l.mac == arp.sender_mac);
        return Some(if looped_back {
            DropReason::ArpMartianSender
        } else {
            DropReason::ArpAddressConflict
        });
    }
    let network = |a: &Ipv4Cidr| a.len < 31 && a.network() == ip;
    let network = core
        .shared
        .links
        .iter()
        .any(|l| l.addresses.iter().any(network));
    (network || core.is_martian(ip)).then_some(DropReason::ArpMartianSender)
}

/// Asks "who has `target`? tell `source`", broadcast (with
/// `source == target`: a gratuitous ARP announcing our address) or, to
/// confirm a known neighbour, unicast to `to`.
pub(crate) fn send_request<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    source: Ipv4Addr,
    target: Ipv4Addr,
    to: Option<MacAddr>,
) {
    let Some(mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::TxNoRoute);
    };
    let Some(mut buf) = new_frame(&core.lcore.counters, out, link, ETH_LEN + ARP_LEN) else {
        return;
    };
    let frame = buf.data_mut();
    let mut eth = EthernetFrame::new_unchecked(&mut *frame);
    eth.set_dst(to.unwrap_or(MacAddr::BROADCAST));
    eth.set_src(mac);
    eth.set_ethertype(EtherType::Arp);
    ArpRepr {
        operation: ArpOperation::Request,
        sender_mac: mac,
        sender_ip: source,
        target_mac: MacAddr::default(),
        target_ip: target,
    }
    .emit(&mut frame[ETH_LEN..]);
    core.lcore.counters.count(Stat::ArpOutRequests);
    out.push(link, buf, &core.lcore.counters);
}

/// Announces each of `link`'s addresses with a gratuitous ARP request (its
/// first poll).
pub(super) fn announce<P: Port>(core: &mut Core<P::Buf>, out: &mut Out<'_, P>, link: usize) {
    for i in 0..core.shared.links[link].addresses.len() {
        let ip = core.shared.links[link].addresses[i].addr;
        send_request(core, out, link, ip, ip, None);
    }
}

/// The IPv4 neighbour cache's timers on `link`: entries aged, requests
/// repeated for neighbours still unresolved or being probed, and the
/// packets of those given up on dropped (counted). `probes` is scratch
/// space kept between calls.
pub(super) fn poll_neighbors<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    probes: &mut Vec<Probe<Ipv4Addr>>,
) {
    probes.clear();
    let given_up = core
        .shared
        .edit_neighbors(|shared| shared.neighbors[link].v4.poll(now, probes));
    for _ in 0..given_up {
        core.lcore
            .counters
            .count_drop(DropReason::TxNeighborUnresolved);
    }
    for &Probe { ip, mac } in probes.iter() {
        let source = core.shared.links[link].source_for(ip);
        send_request(core, out, link, source, ip, mac);
    }
}

impl NextHopAddr for Ipv4Addr {
    fn cache<B>(caches: &mut LinkNeighbors<B>) -> &mut NeighborCache<B, Ipv4Addr> {
        &mut caches.v4
    }

    fn view(link: &Link) -> &NeighborView<Ipv4Addr> {
        &link.neighbors
    }

    fn is_ours<B: Buf>(core: &Core<B>, _link: usize, ip: Ipv4Addr) -> bool {
        core.is_local(ip)
    }

    fn ask<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        source: Ipv4Addr,
        target: Ipv4Addr,
    ) {
        send_request(core, out, link, source, target, None);
    }

    fn transmit<P: Port>(
        core: &mut Core<P::Buf>,
        out: &mut Out<'_, P>,
        link: usize,
        buf: P::Buf,
    ) -> Result<(), SendError> {
        super::ip::transmit_ipv4(core, out, link, buf);
        Ok(())
    }
}
