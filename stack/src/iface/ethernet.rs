//! Ethernet in: the first step of the general receive path. A frame is
//! checked for length and for being addressed to us (our MAC, broadcast, or
//! a group the link listens to), and goes on by its EtherType to ARP
//! (`arp`) or IP (`ip::input`).
//!
//! Frames from a group (multicast or broadcast) source MAC are dropped
//! before anything else: replies go back to the source MAC.

use super::ip::input::{ipv4_input, ipv6_input};
use super::ip::Delivered;
use super::transmit::Out;
use super::{arp, Core};
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, Port};
use crate::time::Instant;
use crate::wire::ethernet::{EtherType, EthernetFrame};

/// Runs one received frame through the pipeline; a datagram for a queue
/// socket comes back in `delivered`. Kept out of line: it is the general
/// path, and inlined into the burst loop it would cost the fast paths there
/// registers.
#[inline(never)]
pub(super) fn receive_frame<P: Port>(
    core: &mut Core<P::Buf>,
    out: &mut Out<'_, P>,
    link: usize,
    now: Instant,
    buf: P::Buf,
    delivered: &mut Delivered<P::Buf>,
) {
    core.lcore.counters.count(Stat::EthInFrames);
    let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
        return core.lcore.counters.count_drop(DropReason::EthNotForUs);
    };
    let (dst, src, ethertype) = match EthernetFrame::new_checked(buf.data()) {
        Ok(frame) => (frame.dst(), frame.src(), frame.ethertype()),
        Err(_) => return core.lcore.counters.count_drop(DropReason::EthTruncated),
    };
    if src.is_multicast() {
        // No station sends from a group address; our in-place replies go
        // back to the source MAC, so one spoofed frame would make us
        // answer the whole group.
        return core.lcore.counters.count_drop(DropReason::EthGroupSource);
    }
    let multicast_for_us = || core.shared.links.get(link).is_some_and(|l| l.listens(dst));
    if dst != our_mac && !dst.is_broadcast() && !multicast_for_us() {
        return core.lcore.counters.count_drop(DropReason::EthNotForUs);
    }
    match ethertype {
        EtherType::Arp => arp::arp_input(core, out, link, now, buf),
        EtherType::Ipv4 => ipv4_input(core, out, link, now, buf, src, delivered),
        EtherType::Ipv6 => ipv6_input(core, out, link, now, buf, src, delivered),
        _ => core.lcore.counters.count_drop(DropReason::EthUnknownType),
    }
}
