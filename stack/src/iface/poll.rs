//! The per-poll context of the pipeline: what every step of receiving a
//! frame needs, built once per burst and borrowed by each step ([`Poll`]),
//! and where one received frame came from ([`Arrival`]).
//!
//! The pipeline's steps (`ethernet`, `ip::input`, TCP's glue, ...) are
//! methods of [`Poll`] defined beside their protocol, so that a step's
//! signature lists only what is its own: the frame and what the previous
//! step learned about it.
//!
//! Per packet: [`Poll`] is three words and [`Arrival`] two, built where the
//! burst loop already holds their parts; nothing here allocates or copies a
//! frame. Below every path of `iface`: this module imports only the state
//! and the transmit context.

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
/// Ethernet source (replies built in place go back to it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival {
    pub(crate) link: usize,
    pub(crate) eth_src: MacAddr,
}
