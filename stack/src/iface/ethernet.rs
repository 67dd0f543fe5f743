//! Ethernet in: the first step of the general receive path. A frame is
//! checked for length and for being addressed to us (our MAC, broadcast, or
//! a group the link listens to), and goes on by its EtherType to ARP
//! (`arp`) or IP (`ip::input`).
//!
//! Frames from a group (multicast or broadcast) source MAC are dropped
//! before anything else: replies go back to the source MAC.

use super::ip::Delivered;
use super::poll::{Arrival, Poll};
use crate::counters::{DropReason, Stat};
use crate::port::{Buf, Port};
use crate::wire::ethernet::{EtherType, EthernetFrame};

/// Runs one received frame through the pipeline; a datagram for a queue
/// socket comes back in `delivered`. Kept out of line: it is the general
/// path, and inlined into the burst loop it would cost the fast paths there
/// registers.
impl<P: Port> Poll<'_, '_, P> {
    /// Runs one frame received on `link` through the pipeline; a datagram
    /// for a queue socket comes back in `delivered`. Kept out of line: it
    /// is the general path, and inlined into the burst loop it would cost
    /// the fast paths there registers.
    #[inline(never)]
    pub(super) fn receive_frame(
        &mut self,
        link: usize,
        buf: P::Buf,
        delivered: &mut Delivered<P::Buf>,
    ) {
        let core = &mut *self.core;
        core.lcore.counters.count(Stat::EthInFrames);
        let Some(our_mac) = core.shared.links.get(link).map(|l| l.mac) else {
            return core.lcore.counters.count_drop(DropReason::EthNotForUs);
        };
        let (dst, src, ethertype) = match EthernetFrame::new_checked(buf.data()) {
            Ok(frame) => (frame.dst(), frame.src(), frame.ethertype()),
            Err(_) => return core.lcore.counters.count_drop(DropReason::EthTruncated),
        };
        if src.is_multicast() {
            // No station sends from a group address; our in-place replies
            // go back to the source MAC, so one spoofed frame would make us
            // answer the whole group.
            return core.lcore.counters.count_drop(DropReason::EthGroupSource);
        }
        let multicast_for_us = || core.shared.links.get(link).is_some_and(|l| l.listens(dst));
        if dst != our_mac && !dst.is_broadcast() && !multicast_for_us() {
            return core.lcore.counters.count_drop(DropReason::EthNotForUs);
        }
        let arrival = Arrival {
            link,
            eth_src: src,
            to_group_mac: dst.is_multicast(),
        };
        match ethertype {
            EtherType::Arp => self.arp_input(buf, link),
            EtherType::Ipv4 => self.ipv4_input(buf, arrival, delivered),
            EtherType::Ipv6 => self.ipv6_input(buf, arrival, delivered),
            _ => self
                .core
                .lcore
                .counters
                .count_drop(DropReason::EthUnknownType),
        }
    }
}
