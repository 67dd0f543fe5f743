//! What our segments carry in their TCP headers: the options of a segment
//! ([`Connection::options_for`]: timestamps and SACK blocks once agreed; on
//! a SYN everything we offer, on a SYN-ACK what the peer's SYN allows), the
//! payload room those options leave, and the header itself with the window
//! field ([`Connection::header`]: scaled except in a SYN, with receiver-side
//! silly window avoidance).
//!
//! Invariant: `rcv_adv`, the right edge of the window advertised, never
//! moves back (RFC 7323 2.4), whatever the scale rounds.

use super::conn::{ts_clock, Connection, State};
use super::seq::Seq;
use crate::time::Instant;
use crate::wire::tcp::{flags, SackBlocks, TcpOptions, TcpRepr};

impl Connection {
    /// Our timestamp clock: milliseconds plus the connection's offset.
    pub(crate) fn ts_now(&self, now: Instant) -> u32 {
        ts_clock(now, self.ts_offset)
    }

    /// Options for a segment: timestamps once agreed; on a SYN everything
    /// we offer (or, on a SYN-ACK, what the peer's SYN allows).
    pub(crate) fn options_for(&self, syn: bool, now: Instant) -> TcpOptions {
        let ts_value = self.ts_now(now);
        if !syn {
            return TcpOptions {
                timestamps: self.timestamps.map(|t| (ts_value, t.recent)),
                sack: self.sack_blocks(),
                ..TcpOptions::default()
            };
        }
        if self.state == State::SynSent {
            // Everything we offer.
            return TcpOptions {
                mss: Some(self.our_mss),
                window_scale: self.offer_rfc7323.then_some(self.rcv_shift),
                sack_permitted: self.offer_sack,
                timestamps: self.offer_rfc7323.then_some((ts_value, 0)),
                ..TcpOptions::default()
            };
        }
        // A SYN-ACK: what the peer's SYN allowed.
        TcpOptions {
            mss: Some(self.our_mss),
            window_scale: self.ws_ok.then_some(self.rcv_shift),
            sack_permitted: self.sack_ok,
            timestamps: self.timestamps.map(|t| (ts_value, t.recent)),
            ..TcpOptions::default()
        }
    }

    /// The SACK blocks our next ACK carries (RFC 2018): none unless SACK
    /// was agreed and something is out of order or duplicated; 3 beside
    /// timestamps, else 4 (what fits in 40 option bytes).
    fn sack_blocks(&self) -> SackBlocks {
        if !self.sack_ok || (!self.recv_buf.has_gaps() && self.sack_rx.dsack.is_none()) {
            return SackBlocks::default();
        }
        let max = if self.timestamps.is_some() { 3 } else { 4 };
        self.sack_rx
            .blocks(self.rcv_nxt, self.recv_buf.out_of_order(), max)
    }

    /// Payload bytes a data segment with `options` may carry: the MSS
    /// (which already allows for timestamps) less the SACK blocks, so the
    /// segment still fits the path (as Linux's tcp_current_mss).
    pub(crate) fn payload_room(&self, options: &TcpOptions) -> usize {
        self.payload_room_of(self.mss, options)
    }

    /// The payload a segment of `mss` carries beside `options`.
    pub(crate) fn payload_room_of(&self, mss: u16, options: &TcpOptions) -> usize {
        let blocks = if options.sack.is_empty() {
            0
        } else {
            4 + 8 * options.sack.len()
        };
        usize::from(mss).saturating_sub(blocks).max(1)
    }

    /// A header with our ports, `seq`, the ACK fields when synchronized
    /// and the current window.
    pub(crate) fn header(&mut self, seq: Seq, extra: u8, options: TcpOptions) -> TcpRepr {
        let ack = self.state != State::SynSent || extra & flags::SYN == 0;
        let window = self.window_to_advertise(extra & flags::SYN != 0);
        TcpRepr {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: seq.0,
            ack: if ack { self.rcv_nxt.0 } else { 0 },
            flags: extra | if ack { flags::ACK } else { 0 },
            window,
            options,
        }
    }

    /// The window field to send (scaled down, unless in a SYN; never
    /// shrinking the right edge already advertised), recording the new
    /// right edge.
    fn window_to_advertise(&mut self, syn: bool) -> u16 {
        let open = self.recv_buf.window() as u32;
        let promised = self.rcv_adv.since(self.rcv_nxt);
        let promised = if self.rcv_adv > self.rcv_nxt {
            promised
        } else {
            0
        };
        // Receiver-side silly window avoidance (RFC 9293 3.8.6.2.2, as
        // Linux's __tcp_select_window): room under min(an MSS, half the
        // buffer) is not offered (the edge already promised stays), or a
        // reader that frees a few bytes at a time would be sent segments
        // of a few bytes.
        let step = u32::from(self.mss).min(self.recv_buf.capacity() as u32 / 2);
        let window = if open < step {
            promised
        } else {
            open.max(promised)
        };
        // In a SYN or SYN-ACK the window is not scaled; in every other
        // segment it is, SYN-RECEIVED's ACKs included: the peer that took
        // our SYN-ACK scales them (RFC 7323 2.2). (In SYN-SENT we send no
        // segment without SYN but resets, whose window is 0.)
        let shift = if syn { 0 } else { self.rcv_shift };
        let mut field = (window >> shift).min(u32::from(u16::MAX));
        if field << shift < promised {
            // Shifted down, the edge already offered would move back
            // (RFC 7323 2.4): rounded up instead, as Linux, offering less
            // than 2^shift bytes the buffer may not hold yet.
            field = promised.div_ceil(1 << shift).min(u32::from(u16::MAX));
        }
        let edge = self.rcv_nxt + (field << shift);
        if edge > self.rcv_adv {
            self.rcv_adv = edge;
        }
        field as u16
    }
}
