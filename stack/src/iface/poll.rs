//! The per-poll context of the pipeline: what every step of receiving a
//! frame needs, built once per poll and borrowed by each step ([`Poll`]),
//! and where one received frame came from ([`Arrival`]).
//!
//! The receive pipeline's steps are methods of [`Poll`], each defined
//! beside its protocol: Ethernet in (`ethernet`), ARP in (`arp`), IP in
//! for both families with reassembly (`ip::input`), ICMP and ICMPv6 in and
//! the errors they send (`icmp`, `icmp4`, `icmp6`), UDP's general path
//! (`udp::input`) and TCP's input glue (`tcp`). A step's signature lists
//! only what is its own: the frame and what the previous steps learned of
//! it. The paths they call (Neighbor Discovery, the send and reply paths)
//! and the timers still take the state and the transmit batches as two
//! arguments.
//!
//! Per packet: [`Poll`] is three words, built once before the burst
//! loop, and [`Arrival`] two, built by Ethernet in; nothing here allocates
//! or copies a frame. Below every path of `iface`: this module imports
//! only the state and the transmit context.

use super::state::Core;
use super::transmit::Out;
use crate::port::{MacAddr, Port};
use crate::time::Instant;

/// One poll of one lcore: the pipeline's state, the transmit batches and
/// the poll's time (the clock is read once, by the caller of the poll).
pub(crate) struct Poll<'a, 'o, P: Port> {
    pub(crate) core: &'a mut Core<P::Buf>,
    pub(crate) out: &'a mut Out<'o, P>,
    pub(crate) now: Instant,
}

impl<'a, 'o, P: Port> Poll<'a, 'o, P> {
    #[inline(always)]
    pub(crate) fn new(core: &'a mut Core<P::Buf>, out: &'a mut Out<'o, P>, now: Instant) -> Self {
        Poll { core, out, now }
    }
}

/// Where a received frame came from: the link it arrived on and its
/// Ethernet source (replies built in place go back to it), and whether it
/// was sent to a link-layer group (broadcast or multicast) rather than to
/// our MAC (no ICMP error answers such a frame, RFC 1122 3.2.2, RFC 4443
/// 2.4 (e)).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival {
    pub(crate) link: usize,
    pub(crate) eth_src: MacAddr,
    pub(crate) to_group_mac: bool,
}
