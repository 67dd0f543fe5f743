//! Explicit Congestion Notification (RFC 3168) for one connection, as
//! Linux's default (`net.ipv4.tcp_ecn = 2`): agreed to when the peer's SYN
//! asks for it, asked for only under [`EcnMode::Request`] (`tcp_ecn = 1`).
//!
//! Negotiation (6.1.1): a SYN with both ECE and CWR asks for ECN; the
//! SYN-ACK agrees with ECE alone. A SYN-ACK with anything else (no ECE, or
//! ECE and CWR both, a peer that reflects the flags it does not know)
//! leaves ECN off. A retransmitted SYN asks for nothing, in case a
//! middlebox drops SYNs with those flags (6.1.1.1; as Linux, which then
//! still takes a SYN-ACK that agrees). A SYN whose IP header is itself
//! ECN-marked is answered without ECE: RFC 3168 forbids ECT on a SYN, so
//! the path rewrites the field and its marks mean nothing (as Linux's
//! `tcp_ecn_create_request`). Once agreed, the receiver (6.1.3) answers a
//! data segment marked CE (congestion experienced: a router marked it
//! instead of dropping it) with ECE on every segment it sends until a
//! segment with CWR arrives; the first ACK owing ECE goes at once (as
//! Linux's quick ACK), so does the ACK of data with CWR. The sender
//! (6.1.2) sends new data as ECT(0), never a pure ACK, a retransmission, a
//! window probe or a SYN (6.1.1, 6.1.4-6.1.6; Linux's `tcp_ecn_send` too:
//! only segments with data at `SND.MAX`). An ACK with ECE reduces the
//! congestion window as a loss would, without resending anything, once per
//! window of data and not during loss recovery; after any reduction (an
//! echo, a loss, a timeout) the next new data segment carries CWR. Echoes
//! that come before it are the peer's repetitions of the same one. No ACK
//! with ECE grows the window (as in Linux's CWR state). A loss found in a
//! window already reduced for (an echo, then a drop from the same window)
//! enters recovery without a second reduction: one per window for drops
//! and marks together (6.1.2). Without
//! ECN agreed, nothing here changes a segment, and CE marks are ignored.
//!
//! The IP layer hands the ECN field of each segment in
//! (`Connection::on_segment_ecn`, which asks [`EcnState::received`]); the
//! flags go on in `Connection::poll_transmit` ([`EcnState::outgoing`]).
//! This module knows nothing of the connection, which holds an
//! [`EcnState`].

use super::seq::Seq;
use crate::wire::tcp::flags;
use crate::wire::Ecn;

/// Whether connections use ECN (Linux's `net.ipv4.tcp_ecn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EcnMode {
    /// Never (`tcp_ecn = 0`): a SYN asking for ECN is answered without it.
    Off,
    /// Agreed to when the peer's SYN asks for it, never asked for
    /// (`tcp_ecn = 2`, Linux's default).
    #[default]
    Accept,
    /// Agreed to, and asked for in the SYN of every connect (`tcp_ecn =
    /// 1`).
    Request,
}

/// A connection's ECN state: its mode, then flags that stay false
/// without ECN.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EcnState {
    /// What the configuration allows.
    mode: EcnMode,
    /// Both sides agreed to ECN.
    pub(crate) on: bool,
    /// A CE-marked data segment arrived: every segment we send carries ECE
    /// until one with CWR arrives.
    ece_owed: bool,
    /// Our window was reduced: the next new data segment carries CWR.
    cwr_owed: bool,
    /// Our window was reduced with this much sent: echoes are not answered
    /// again until an ACK goes beyond it (as Linux's CWR state: past it, so
    /// that the data that carried CWR is known to have arrived). Cleared by
    /// that ACK (so it never lingers to compare wrongly 2^31 bytes on).
    reduced_until: Option<Seq>,
}

/// What an arriving segment asks of the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Received {
    /// An ACK is to go at once.
    pub(crate) ack_now: bool,
    /// It was data marked CE (`TcpInCE`).
    pub(crate) congestion: bool,
}

/// True if `syn_flags` ask for ECN: ECE and CWR both (RFC 3168 6.1.1).
fn asks_for_ecn(syn_flags: u8) -> bool {
    syn_flags & (flags::ECE | flags::CWR) == flags::ECE | flags::CWR
}

/// True if a listener under `mode` agrees to ECN for a SYN with
/// `syn_flags` whose IP header carried `field` (see the module
/// documentation).
pub(crate) fn agrees(mode: EcnMode, syn_flags: u8, field: Ecn) -> bool {
    mode != EcnMode::Off && asks_for_ecn(syn_flags) && field == Ecn::NotEct
}

impl EcnState {
    /// A connection's state under `mode`, before any SYN.
    pub(crate) fn new(mode: EcnMode) -> EcnState {
        EcnState {
            mode,
            ..EcnState::default()
        }
    }

    /// A passive open: the peer's SYN came with `syn_flags`.
    pub(crate) fn passive_open(&mut self, syn_flags: u8) {
        self.on = self.mode != EcnMode::Off && asks_for_ecn(syn_flags);
    }

    /// In SYN-SENT, the peer's SYN-ACK (or, opening at the same time, its
    /// SYN) came with `syn_flags`: ECN is on if we asked and it agreed.
    pub(crate) fn answered(&mut self, syn_flags: u8) {
        let agreed = if syn_flags & flags::ACK != 0 {
            syn_flags & (flags::ECE | flags::CWR) == flags::ECE
        } else {
            asks_for_ecn(syn_flags)
        };
        self.on = self.mode == EcnMode::Request && agreed;
    }

    /// The SYN of a passive open arrived with `field` in its IP header:
    /// one marked ECT or CE refuses ECN (see the module documentation).
    pub(crate) fn syn_arrived_with(&mut self, field: Ecn) {
        if field != Ecn::NotEct {
            self.on = false;
        }
    }

    /// A segment other than a SYN, with `seg_flags` and `data` bytes, was
    /// accepted, its IP header marked `field` (RFC 3168 6.1.3).
    #[inline]
    pub(crate) fn received(&mut self, seg_flags: u8, data: usize, field: Ecn) -> Received {
        let mut asks = Received::default();
        if !self.on {
            return asks;
        }
        if seg_flags & flags::CWR != 0 {
            // The sender reduced its window: the echo ends. Its window may
            // be a segment or two now, so its data is not kept waiting.
            self.ece_owed = false;
            asks.ack_now = data > 0;
        }
        if field == Ecn::Ce && data > 0 {
            asks.congestion = true;
            if !self.ece_owed {
                self.ece_owed = true;
                asks.ack_now = true;
            }
        }
        asks
    }

    /// An acceptable ACK with `seg_flags` moved `SND.UNA` to `snd_una`
    /// (`recovering`: loss recovery already reduced the window). True if
    /// it echoes congestion the sender is to answer now.
    #[inline]
    pub(crate) fn echo_to_answer(&mut self, seg_flags: u8, snd_una: Seq, recovering: bool) -> bool {
        if !self.on {
            return false;
        }
        if self.reduced_until.is_some_and(|end| snd_una > end) {
            self.reduced_until = None;
        }
        let echo = seg_flags & flags::ECE != 0;
        echo && !recovering && !self.cwr_owed && self.reduced_until.is_none()
    }

    /// True if the window was reduced (by an echo or a loss) for the
    /// window of data that the unacknowledged data from `snd_una` belongs
    /// to: a loss found there now is the same congestion, not reduced for
    /// again (RFC 3168 6.1.2).
    pub(crate) fn reduced_for(&self, snd_una: Seq) -> bool {
        self.reduced_until.is_some_and(|end| snd_una < end)
    }

    /// Our congestion window was reduced with `snd_max` sent, for any
    /// reason (RFC 3168 6.1.2): CWR goes on the next new data.
    pub(crate) fn reduced(&mut self, snd_max: Seq) {
        if self.on {
            self.cwr_owed = true;
            self.reduced_until = Some(snd_max);
        }
    }

    /// ECN's flags on a segment about to leave with `header_flags`
    /// (`new_data`: it carries data from `SND.MAX` on; `first`: nothing was
    /// sent before it): ECE and CWR on the first SYN of a connect under
    /// [`EcnMode::Request`]; ECE on a SYN-ACK agreeing to ECN, and on
    /// everything else but resets while an echo is owed; CWR on new data
    /// once owed. Returns the segment's IP ECN field: ECT(0) for new data.
    #[inline]
    pub(crate) fn outgoing(&mut self, header_flags: &mut u8, new_data: bool, first: bool) -> Ecn {
        if !self.on {
            let syn_only = *header_flags & (flags::SYN | flags::ACK) == flags::SYN;
            if first && syn_only && self.mode == EcnMode::Request {
                *header_flags |= flags::ECE | flags::CWR;
            }
            return Ecn::NotEct;
        }
        let syn = *header_flags & flags::SYN != 0;
        let rst = *header_flags & flags::RST != 0;
        if syn || (!rst && self.ece_owed) {
            *header_flags |= flags::ECE;
        }
        if !new_data || syn {
            return Ecn::NotEct;
        }
        if core::mem::take(&mut self.cwr_owed) {
            *header_flags |= flags::CWR;
        }
        Ecn::Ect0
    }
}
