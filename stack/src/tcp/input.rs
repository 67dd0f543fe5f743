//! Segment arrival (RFC 9293 3.10.7), with RFC 5961's defences against
//! blind resets, SYNs and ACKs, RFC 7323's PAWS (and, as Linux, a SYN-ACK
//! refused for echoing a timestamp we never sent), RFC 1337's TIME-WAIT
//! that no reset ends (and RFC 6191's test of a SYN that may), and the ACK
//! processing that drives retransmission, RTT samples and congestion
//! control.
//!
//! `on_segment` never sends: it updates the state and leaves what is owed
//! (an ACK, a challenge ACK, a reset, a fast retransmit) in flags that
//! [`super::output`] turns into segments. It returns a [`Verdict`]: the
//! segment was taken, or refused for a [`Refusal`] the caller counts.

use super::buffer::Refused;
use super::congestion::{CongestionControl, DupAckAction};
use super::conn::{Connection, State, TcpError, Timestamps, OOW_ACK_INTERVAL};
use super::pool::BufferPool;
use super::seq::Seq;
use crate::time::{Duration, Instant};
use crate::wire::tcp::{flags, TcpRepr};
use crate::wire::Ecn;

/// What became of a segment, for the caller's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Processed (a valid reset that closed the connection included).
    Accepted,
    /// Dropped; any answer it is owed (an ACK, a challenge ACK, a reset)
    /// is left in the connection's flags like every other.
    Refused(Refusal),
}

/// Why a connection refused a segment, and what it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// An older timestamp than `TS.Recent` (PAWS, RFC 7323 5.3): answered
    /// with an ACK.
    Paws,
    /// Not in the receive window (RFC 9293 3.10.7.4, first check):
    /// answered with an ACK.
    OutOfWindow,
    /// An ACK of something not yet sent, or older than the peer's largest
    /// window (RFC 5961 5.2): a challenge ACK; an unacceptable ACK in
    /// SYN-SENT or SYN-RECEIVED gets a reset instead (`challenged` false).
    BadAck {
        /// A challenge ACK answers it.
        challenged: bool,
    },
    /// In SYN-SENT, a segment acknowledging our SYN whose TSecr is not
    /// zero and no TSval we sent: older than our first SYN or newer than
    /// our clock (Linux's `PAWSActiveRejected`): an old duplicate or a
    /// forgery. Answered with a reset, unless it is one.
    PawsActive,
    /// A reset not exactly at `RCV.NXT` (RFC 5961 3.2): in the window, a
    /// challenge ACK; outside it (or without an ACK in SYN-SENT), nothing.
    BadReset {
        /// A challenge ACK answers it.
        challenged: bool,
    },
    /// A SYN on a synchronized connection, whatever its sequence number
    /// (RFC 5961 4.2): a challenge ACK.
    BadSyn,
    /// Flags this state does not take: no ACK once synchronized, neither
    /// SYN nor RST in SYN-SENT (RFC 9293 3.10.7.3, 3.10.7.4 fifth check).
    BadFlags,
    /// A reset in TIME-WAIT, which does not end it (RFC 1337): dropped
    /// silently.
    TimeWaitReset,
    /// The connection is closed.
    Closed,
}

impl Refusal {
    /// Whether a challenge ACK (RFC 5961) answers the segment.
    pub fn challenge_ack(self) -> bool {
        match self {
            Refusal::BadAck { challenged } | Refusal::BadReset { challenged } => challenged,
            Refusal::BadSyn => true,
            Refusal::Paws
            | Refusal::PawsActive
            | Refusal::OutOfWindow
            | Refusal::BadFlags
            | Refusal::TimeWaitReset
            | Refusal::Closed => false,
        }
    }
}

impl Connection {
    /// Processes one arriving segment (`seg`'s header, `payload` its
    /// data) whose IP header was not ECN-marked: [`Self::on_segment_ecn`].
    pub fn on_segment(
        &mut self,
        seg: &TcpRepr,
        payload: &[u8],
        now: Instant,
        pool: &mut BufferPool,
    ) -> Verdict {
        self.on_segment_ecn(seg, payload, Ecn::NotEct, now, pool)
    }

    /// Processes one arriving segment (`seg`'s header, `payload` its
    /// data, `ecn` its IP header's ECN field, see [`super::ecn`]). Data is
    /// stored in receive storage from `pool`; send storage the segment's
    /// ACK leaves empty goes back to it.
    pub fn on_segment_ecn(
        &mut self,
        seg: &TcpRepr,
        payload: &[u8],
        ecn: Ecn,
        now: Instant,
        pool: &mut BufferPool,
    ) -> Verdict {
        let verdict = match self.state {
            State::Closed => Verdict::Refused(Refusal::Closed),
            State::SynSent => self.syn_sent(seg, now),
            _ => self.synchronized(seg, payload, now, pool),
        };
        if self.ecn.on && verdict == Verdict::Accepted && seg.flags & flags::SYN == 0 {
            self.ecn_in(seg.flags, payload.len(), ecn);
        }
        if self.send_buf.is_empty() {
            self.send_buf.release_idle(pool);
        }
        verdict
    }

    /// RFC 9293 3.10.7.3.
    fn syn_sent(&mut self, seg: &TcpRepr, now: Instant) -> Verdict {
        let (syn, ack, rst) = (
            seg.flags & flags::SYN != 0,
            seg.flags & flags::ACK != 0,
            seg.flags & flags::RST != 0,
        );
        let ack_no = Seq(seg.ack);
        if ack && (ack_no <= self.iss || ack_no > self.snd_max) {
            if rst {
                return Verdict::Refused(Refusal::BadReset { challenged: false });
            }
            self.rst_pending = Some((ack_no, None));
            return Verdict::Refused(Refusal::BadAck { challenged: false });
        }
        // RFC 7323 leaves a SYN-ACK's TSecr unchecked; Linux
        // (tcp_rcv_synsent_state_process) refuses one that echoes no TSval
        // of ours, reset or not, and so do we: it answers no SYN we sent.
        if ack && self.echo_not_ours(seg, now) {
            if !rst {
                self.rst_pending = Some((ack_no, None));
            }
            return Verdict::Refused(Refusal::PawsActive);
        }
        if rst {
            if ack {
                self.enter_closed(Some(TcpError::Refused));
                return Verdict::Accepted;
            }
            return Verdict::Refused(Refusal::BadReset { challenged: false });
        }
        if !syn {
            return Verdict::Refused(Refusal::BadFlags);
        }
        self.take_syn(seg, now);
        self.ecn.answered(seg.flags);
        if ack {
            self.snd_una = ack_no;
            self.snd_wl2 = ack_no;
            self.sample_rtt(seg, ack_no, now);
            self.rto_at = None;
            self.retries = 0;
            self.state = State::Established;
            // The window of a SYN-ACK is not scaled (RFC 7323 2.2):
            // `take_syn` took it as it is.
            self.ack_now = true;
            self.heard_from_peer(now);
        } else {
            // Simultaneous open: our SYN goes again, with an ACK.
            self.state = State::SynReceived;
            self.snd_nxt = self.iss;
        }
        Verdict::Accepted
    }

    /// True if `seg`, in SYN-SENT, echoes a TSval that is not zero and
    /// that we cannot have sent: before our first SYN left (`last_sent`)
    /// or after `now` (Linux's `between(tsecr, retrans_stamp, now)`).
    fn echo_not_ours(&self, seg: &TcpRepr, now: Instant) -> bool {
        let Some((_, echo)) = seg.options.timestamps.filter(|_| self.offer_rfc7323) else {
            return false;
        };
        let first = self.ts_now(self.last_sent);
        echo != 0 && echo.wrapping_sub(first) > self.ts_now(now).wrapping_sub(first)
    }

    /// RFC 9293 3.10.7.4, for SYN-RECEIVED and every later state.
    fn synchronized(
        &mut self,
        seg: &TcpRepr,
        payload: &[u8],
        now: Instant,
        pool: &mut BufferPool,
    ) -> Verdict {
        let (syn, ack, rst, fin) = (
            seg.flags & flags::SYN != 0,
            seg.flags & flags::ACK != 0,
            seg.flags & flags::RST != 0,
            seg.flags & flags::FIN != 0,
        );
        let seq = Seq(seg.seq);
        // Simultaneous open: the peer's SYN-ACK acknowledges our SYN and
        // repeats its own (accepted as Linux does; RFC 9293 figure 8).
        if self.state == State::SynReceived
            && syn
            && ack
            && seq + 1u32 == self.rcv_nxt
            && Seq(seg.ack) == self.snd_max
        {
            self.snd_una = self.snd_max;
            self.snd_wnd = u32::from(seg.window);
            self.max_snd_wnd = self.snd_wnd;
            self.snd_wl1 = seq;
            self.snd_wl2 = self.snd_una;
            self.rto_at = None;
            self.retries = 0;
            self.state = State::Established;
            self.ack_now = true;
            return Verdict::Accepted;
        }
        // A retransmitted SYN in SYN-RECEIVED: our SYN-ACK was lost.
        if self.state == State::SynReceived && syn && !ack && seq == self.irs {
            self.snd_nxt = self.iss;
            return Verdict::Accepted;
        }
        // RFC 1337: a reset must not end TIME-WAIT early. Whether an old
        // duplicate or a blind guess, it would free the 4-tuple for a new
        // incarnation while this one's segments may still be in flight.
        if self.state == State::TimeWait && rst {
            return Verdict::Refused(Refusal::TimeWaitReset);
        }
        // PAWS (RFC 7323 5.3).
        if let (Some(ts), Some((value, _))) = (self.timestamps, seg.options.timestamps) {
            if !rst && ts.rejects(value, now) {
                // A SYN is challenged whatever else is wrong with it (RFC
                // 5961 4.2; Linux sends its PAWS failures to syn_challenge
                // too): an old SYN in TIME-WAIT meets this first.
                if syn {
                    self.challenge = true;
                    return Verdict::Refused(Refusal::BadSyn);
                }
                self.ack_now = self.oow_ack_due(payload.is_empty() && !fin, now);
                return Verdict::Refused(Refusal::Paws);
            }
        }
        // 1. Sequence acceptability.
        let seg_len = payload.len() as u32 + u32::from(syn) + u32::from(fin);
        if !self.acceptable(seq, seg_len) {
            if rst {
                return Verdict::Refused(Refusal::BadReset { challenged: false });
            }
            if self.state == State::TimeWait && fin {
                self.time_wait_at = Some(now + self.time_wait);
            }
            self.note_old_duplicate(seq, payload.len());
            // RFC 5961 4.2: a SYN is answered the same way in or out of
            // the window (a challenge ACK), and counted as a SYN.
            if syn {
                self.challenge = true;
                return Verdict::Refused(Refusal::BadSyn);
            }
            self.ack_now = self.oow_ack_due(payload.is_empty() && !fin, now);
            return Verdict::Refused(Refusal::OutOfWindow);
        }
        // 2. Resets (RFC 5961 3.2).
        if rst {
            if seq != self.rcv_nxt {
                self.challenge = true;
                return Verdict::Refused(Refusal::BadReset { challenged: true });
            }
            let error = match self.state {
                State::SynReceived => Some(TcpError::Refused),
                State::Closing | State::LastAck => None,
                _ => Some(TcpError::Reset),
            };
            self.enter_closed(error);
            return Verdict::Accepted;
        }
        // 4. SYN in a synchronized state (RFC 5961 4).
        if syn {
            self.challenge = true;
            return Verdict::Refused(Refusal::BadSyn);
        }
        // 5. The ACK field.
        if !ack {
            return Verdict::Refused(Refusal::BadFlags);
        }
        let ack_no = Seq(seg.ack);
        if self.state == State::SynReceived {
            if ack_no <= self.snd_una || ack_no > self.snd_max {
                self.rst_pending = Some((ack_no, None));
                return Verdict::Refused(Refusal::BadAck { challenged: false });
            }
            self.state = State::Established;
            self.snd_wnd = u32::from(seg.window) << self.snd_shift;
            self.max_snd_wnd = self.snd_wnd;
            self.snd_wl1 = seq;
            self.snd_wl2 = ack_no;
        }
        if ack_no > self.snd_max {
            self.challenge = true;
            return Verdict::Refused(Refusal::BadAck { challenged: true });
        }
        if ack_no < self.snd_una - self.max_snd_wnd.max(1) {
            // RFC 5961 5.2: too old to be a duplicate.
            self.challenge = true;
            return Verdict::Refused(Refusal::BadAck { challenged: true });
        }
        // Timestamps to echo (RFC 7323 4.3): from segments that start at or
        // before Last.ACK.sent (not RCV.NXT: while an ACK is delayed over
        // several segments it echoes the first one's TSval, so the peer's
        // RTT sample includes the delay), once their ACK is taken (as
        // Linux): a segment refused for its ACK may be a blind injection,
        // whose TSval would make PAWS refuse the real peer. PAWS above
        // already refused a TSval older than TS.Recent.
        if let (Some(ts), Some((value, _))) = (self.timestamps.as_mut(), seg.options.timestamps) {
            if seq <= self.last_ack_sent {
                *ts = Timestamps::new(value, now);
            }
        }
        self.process_ack(seg, ack_no, payload.len(), fin, now);
        if self.state == State::Closed {
            return Verdict::Accepted;
        }
        self.heard_from_peer(now);
        // 7. Data. New data for an orphaned connection, whose application
        // will read nothing more, aborts it (RFC 1122 4.2.2.13: the peer
        // learns its data was lost; Linux's TCPAbortOnData).
        if self.orphaned && seq + payload.len() > self.rcv_nxt && !payload.is_empty() {
            self.abort();
            return Verdict::Accepted;
        }
        if !payload.is_empty() && self.take_data(seq, payload, now, pool) {
            self.tune_receive_window(seg, now, pool);
        }
        // 8. FIN, once everything before it arrived. One that came ahead
        // of a hole is kept until the hole fills (as Linux's out-of-order
        // queue keeps it): dropped, it would have to come again, and only
        // on the peer's RTO, as no duplicate ACK reports a FIN missing.
        if let Some(at) = self.fin_ahead.filter(|&at| at <= self.rcv_nxt) {
            self.fin_ahead = None;
            if at == self.rcv_nxt && !self.recv_buf.has_gaps() {
                self.take_fin(now);
            }
        }
        let fin_at = seq + payload.len();
        if fin && fin_at == self.rcv_nxt && !self.recv_buf.has_gaps() {
            self.take_fin(now);
        } else if fin {
            self.ack_now = true; // out of order: a duplicate ACK
            let receiving = matches!(
                self.state,
                State::Established | State::FinWait1 | State::FinWait2
            );
            if receiving && fin_at > self.rcv_nxt {
                self.fin_ahead = Some(fin_at);
            }
        }
        Verdict::Accepted
    }

    /// Whether a segment refused as out of the window or by PAWS gets its
    /// duplicate ACK: a segment with data or a FIN always (it is no part of
    /// an ACK loop), a pure ACK at most once per [`OOW_ACK_INTERVAL`] (as
    /// Linux's `tcp_oow_rate_limited`).
    fn oow_ack_due(&mut self, pure_ack: bool, now: Instant) -> bool {
        if !pure_ack {
            return true;
        }
        if self
            .last_oow_ack
            .is_some_and(|last| now - last < OOW_ACK_INTERVAL)
        {
            return false;
        }
        self.last_oow_ack = Some(now);
        true
    }

    /// ECN's part of an accepted segment other than a SYN, with
    /// `seg_flags` and `data` bytes, marked `field` ([`super::ecn`]): the
    /// echo we owe, and the peer's echo of congestion, answered once per
    /// window of data by reducing the window as a loss would, with nothing
    /// to resend (RFC 3168 6.1.2).
    fn ecn_in(&mut self, seg_flags: u8, data: usize, field: Ecn) {
        let asks = self.ecn.received(seg_flags, data, field);
        self.ack_now |= asks.ack_now;
        self.loss.ce_received += u32::from(asks.congestion);
        let recovering = self.recovery.is_some() || self.cc.in_recovery();
        if self.ecn.echo_to_answer(seg_flags, self.snd_una, recovering) {
            self.cc.on_ecn_echo(self.flight());
            self.ecn.reduced(self.snd_max);
            self.loss.ece_reductions += 1;
        }
    }

    /// True if both sides agreed to ECN (RFC 3168, [`super::ecn`]).
    pub fn ecn_enabled(&self) -> bool {
        self.ecn.on
    }

    /// The SYN this passive open came from arrived with `field` in its IP
    /// header ([`super::ecn`]: a marked one refuses ECN). Before the
    /// SYN-ACK goes.
    pub(crate) fn syn_arrived_with(&mut self, field: Ecn) {
        self.ecn.syn_arrived_with(field);
    }

    /// True if `seg` would complete our passive open (SYN-RECEIVED to
    /// ESTABLISHED: it acknowledges our SYN). A caller that cannot take the
    /// connection yet (its accept queue is full) drops such a segment
    /// instead, as Linux does: the half-open connection stays, and the
    /// peer's next ACK (or data, or the answer to our retransmitted
    /// SYN-ACK) completes it once there is room.
    pub fn completes_handshake(&self, seg: &TcpRepr) -> bool {
        self.state == State::SynReceived
            && seg.flags & (flags::ACK | flags::RST | flags::SYN) == flags::ACK
            && Seq(seg.ack) == self.snd_max
    }

    /// May `syn`, a SYN for this connection's 4-tuple that arrives while it
    /// is in TIME-WAIT, open a new incarnation (RFC 6191; Linux's
    /// tcp_timewait_state_process)? Only if it cannot be an old duplicate:
    /// with timestamps on both, its TSval is newer than the last one seen,
    /// or equal with an ISN beyond `RCV.NXT`; without, its ISN is beyond
    /// `RCV.NXT`. If so, the lowest ISS the new incarnation may take
    /// (Linux's: 64 KiB past everything this one sent, so that the peer
    /// cannot take an old segment of ours for a new one); the caller ends
    /// this connection and answers the SYN as a listener would. Anything
    /// else is for [`Connection::on_segment`] (a challenge ACK, RFC 5961).
    pub fn time_wait_reopen(&self, syn: &TcpRepr) -> Option<Seq> {
        let only_syn = syn.flags & (flags::SYN | flags::ACK | flags::RST) == flags::SYN;
        if self.state != State::TimeWait || !only_syn {
            return None;
        }
        let beyond = Seq(syn.seq) > self.rcv_nxt;
        let fresh = match (self.timestamps, syn.options.timestamps) {
            (Some(ts), Some((value, _))) => {
                let newer = value.wrapping_sub(ts.recent) as i32;
                newer > 0 || (newer == 0 && beyond)
            }
            _ => beyond,
        };
        fresh.then(|| self.snd_max + 65_537u32)
    }

    /// RFC 9293 3.10.7.4 "first, check sequence number", with the
    /// allowance it asks for ACKs when the window is zero: a segment at
    /// `RCV.NXT` is taken for its ACK (its data is refused), and a bare ACK
    /// may sit at the right edge (the peer filled the window, as Linux
    /// accepts). Otherwise two peers that each wait on a full buffer
    /// ignore the very ACKs that would free it.
    fn acceptable(&self, seq: Seq, seg_len: u32) -> bool {
        let window = self.receive_window();
        let start = self.rcv_nxt;
        let end = start + window;
        match (seg_len, window) {
            (0, 0) => seq == start,
            (0, _) => seq.in_range(start, end) || seq == end,
            (_, 0) => seq == start,
            (len, _) => seq.in_range(start, end) || (seq + (len - 1)).in_range(start, end),
        }
    }

    /// The window segments are checked against: what we advertised (the
    /// right edge never shrinks), or the buffer's room if larger.
    pub(crate) fn receive_window(&self) -> u32 {
        let advertised = if self.rcv_adv > self.rcv_nxt {
            self.rcv_adv.since(self.rcv_nxt)
        } else {
            0
        };
        advertised.max(self.recv_buf.window() as u32)
    }

    /// RFC 9293 3.10.7.4 fifth step for ESTABLISHED and later states.
    fn process_ack(
        &mut self,
        seg: &TcpRepr,
        ack_no: Seq,
        data_len: usize,
        fin: bool,
        now: Instant,
    ) {
        let window = u32::from(seg.window) << self.snd_shift;
        let seq = Seq(seg.seq);
        let mark = self.delivery_mark();
        self.take_sack(seg, ack_no);
        let advanced = ack_no > self.snd_una;
        let duplicate = ack_no == self.snd_una
            && data_len == 0
            && !fin
            && window == self.snd_wnd
            && self.snd_max > self.snd_una;
        if ack_no > self.snd_una {
            self.new_ack(seg, ack_no, now);
        } else if duplicate && !self.sack_ok {
            // A duplicate ACK (RFC 5681 2).
            let reduce = !self.ecn.reduced_for(self.snd_una);
            if self
                .cc
                .on_dup_ack(self.flight(), self.snd_max, self.snd_una, reduce)
                == DupAckAction::FastRetransmit
            {
                self.fast_retransmit = true;
                self.timing = None;
                self.loss.reno_recoveries += 1;
                self.ecn.reduced(self.snd_max);
                if self.path_probe.in_flight() == Some(self.snd_una) {
                    // The probe is what NewReno resends (at the current MSS).
                    if self.path_probe.on_loss(now).is_some() {
                        self.loss.mtu_probe_failures += 1;
                    }
                }
            }
        }
        if self.sack_ok {
            if advanced || !duplicate {
                self.dup_acks = 0;
            }
            self.sack_after_ack(duplicate, now);
            self.prr_on_ack(mark);
        } else if duplicate {
            // Counted here too for limited transmit (`output`).
            self.dup_acks += 1;
        } else if advanced {
            self.dup_acks = 0;
        }
        // Window update (RFC 9293 3.10.7.4, SND.WL1/WL2).
        if self.snd_wl1 < seq || (self.snd_wl1 == seq && self.snd_wl2 <= ack_no) {
            let opened = self.snd_wnd == 0 && window > 0;
            self.snd_wnd = window;
            self.max_snd_wnd = self.max_snd_wnd.max(window);
            self.snd_wl1 = seq;
            self.snd_wl2 = ack_no;
            if opened {
                self.persist_at = None;
                self.persist_backoff = 0;
                self.probe = false;
            }
        }
        // State changes on our FIN's acknowledgment.
        if self.fin_acked() {
            match self.state {
                State::FinWait1 => {
                    self.state = State::FinWait2;
                    if self.orphaned {
                        self.time_wait_at = Some(now + super::conn::FIN_WAIT2_ORPHANED);
                    }
                }
                State::Closing => self.enter_time_wait(now),
                State::LastAck => self.enter_closed(None),
                _ => {}
            }
        }
    }

    /// New data (or our SYN or FIN) acknowledged.
    fn new_ack(&mut self, seg: &TcpRepr, ack_no: Seq, now: Instant) {
        let acked = ack_no.since(self.snd_una);
        // Data bytes acknowledged: the ACK less what our SYN and FIN took.
        let data_end = self.fin_seq();
        let data_acked = ack_no.min(data_end).since(self.data_start.min(ack_no)) as usize;
        let data_acked = if ack_no > self.data_start {
            data_acked
        } else {
            0
        };
        self.send_buf.drain(data_acked);
        if ack_no > self.data_start {
            self.data_start = ack_no.min(data_end);
        }
        self.snd_una = ack_no;
        if self.snd_nxt < self.snd_una {
            self.snd_nxt = self.snd_una;
        }
        // Marks left behind SND.UNA would, 2^31 bytes later, compare as
        // ahead of it (sequence numbers compare modulo 2^32): RACK's edge
        // would call everything outstanding lost, Nagle would hold every
        // small segment. They follow SND.UNA up.
        if self.rack_edge < self.snd_una {
            self.rack_edge = self.snd_una;
        }
        if self.snd_sml < self.snd_una {
            self.snd_sml = self.snd_una;
        }
        let sample = self.sample_rtt(seg, ack_no, now);
        self.retries = 0;
        self.path_mtu_on_ack(ack_no, now);
        let flight = self.snd_max.since(self.snd_una);
        let srtt = self.rtt.srtt().unwrap_or_default();
        let ack = (acked, ack_no, self.snd_nxt);
        let grow = self.hystart.on_ack(&mut self.cc, ack, sample);
        // An ACK echoing congestion (ECN) grows nothing (RFC 3168 6.1.2).
        let echo = self.ecn.on && seg.flags & flags::ECE != 0;
        let cwnd_limited = !echo
            && self
                .cwnd_use
                .allows_growth(self.cc.window(), self.cc.in_slow_start());
        if self
            .cc
            .on_ack(grow, ack_no, flight, now, srtt, cwnd_limited)
        {
            // RFC 6582: a partial acknowledgment retransmits the next hole.
            self.fast_retransmit = true;
        }
        self.rto_at = if self.snd_una == self.snd_max {
            None
        } else {
            Some(now + self.rtt.rto())
        };
        self.arm_tail_loss_probe(now);
    }

    /// An RTT sample: from the timed segment once it is acknowledged (our
    /// own clock, to the nanosecond; Karn's algorithm: never a
    /// retransmitted one, the timer is dropped on retransmission), else from
    /// the echoed timestamp. Returns the sample.
    ///
    /// The timed segment comes first, as in Linux, because the timestamp
    /// clock ticks in milliseconds: an echo within the current tick says
    /// only "under about a millisecond". Such a sample is skipped once the
    /// estimate is already below a millisecond, so that on a short path
    /// the smoothed RTT (and the pacing rate, RACK's reordering window and
    /// the loss probe's timeout, all derived from it) follows the round
    /// trip, not the tick.
    fn sample_rtt(&mut self, seg: &TcpRepr, ack_no: Seq, now: Instant) -> Option<Duration> {
        if let Some((end, sent)) = self.timing {
            if ack_no >= end {
                self.timing = None;
                self.rtt.sample(now - sent);
                return Some(now - sent);
            }
        }
        let (Some(_), Some((_, echo))) = (self.timestamps, seg.options.timestamps) else {
            return None;
        };
        let elapsed = self.ts_now(now).wrapping_sub(echo);
        if echo == 0 || elapsed >= 60_000 {
            return None;
        }
        let tick = Duration::from_millis(1);
        if elapsed <= 1 && self.rtt.srtt().is_some_and(|srtt| srtt < tick) {
            return None;
        }
        let sample = Duration::from_millis(u64::from(elapsed.max(1)));
        self.rtt.sample(sample);
        Some(sample)
    }

    /// Stores segment text (RFC 9293 3.10.7.4 seventh step): in order, it
    /// advances `RCV.NXT` (with any out-of-order data it joins); out of
    /// order, it waits in the buffer and a duplicate ACK goes out at once.
    /// True if it advanced `RCV.NXT`.
    fn take_data(&mut self, seq: Seq, payload: &[u8], now: Instant, pool: &mut BufferPool) -> bool {
        if !matches!(
            self.state,
            State::Established | State::FinWait1 | State::FinWait2
        ) {
            return false;
        }
        // Trim what was already received.
        let (offset, bytes) = if seq < self.rcv_nxt {
            let old = self.rcv_nxt.since(seq) as usize;
            self.note_old_duplicate(seq, payload.len());
            (0, payload.get(old..).unwrap_or(&[]))
        } else {
            (seq.since(self.rcv_nxt) as usize, payload)
        };
        if bytes.is_empty() {
            self.ack_now = true;
            return false;
        }
        let had_gaps = self.recv_buf.has_gaps();
        if self.sack_ok && offset > 0 {
            let end = offset + bytes.len();
            let held = self.recv_buf.out_of_order().iter();
            if held
                .clone()
                .any(|&(s, e)| s as usize <= offset && end <= e as usize)
            {
                self.sack_rx.dsack = Some((seq, seq + bytes.len()));
                self.loss.dsacks_ofo_sent += 1;
            }
        }
        match self.recv_buf.write_at(offset, bytes, pool) {
            Err(refused) => {
                match refused {
                    Refused::TooManyRanges => self.loss.ofo_drops += 1,
                    Refused::NoMemory => self.loss.rcv_memory_drops += 1,
                }
                // Tell the peer where we are; it sends the data again.
                self.ack_now = true;
                false
            }
            Ok(0) => {
                // Out of order (or no room): tell the peer where we are,
                // the new segment's block first.
                if self.recv_buf.window() == 0 {
                    self.loss.zero_window_drops += 1;
                }
                if offset > 0 && self.sack_ok {
                    self.sack_rx.note(seq);
                }
                self.ack_now = true;
                false
            }
            Ok(advanced) => {
                self.rcv_nxt = self.rcv_nxt + advanced;
                if had_gaps || offset > 0 {
                    self.ack_now = true; // a hole filled: ACK at once
                } else {
                    self.schedule_ack(bytes.len(), now);
                }
                true
            }
        }
    }

    /// Receive-window auto-tuning ([`super::autotune`]) after in-order
    /// data: a round-trip sample, then maybe a larger window.
    fn tune_receive_window(&mut self, seg: &TcpRepr, now: Instant, pool: &mut BufferPool) {
        let window = self.recv_buf.capacity();
        if window >= self.recv_buf.limit() {
            return;
        }
        match (self.timestamps, seg.options.timestamps) {
            (Some(_), Some((_, echo))) if echo != 0 => {
                let age = self.ts_now(now).wrapping_sub(echo);
                if age < 60_000 {
                    self.tuning.sample(Duration::from_millis(u64::from(age)));
                }
            }
            _ => self.tuning.data_arrived(self.rcv_nxt, window, now),
        }
        if let Some(size) = self.tuning.grow_to(window, now) {
            if !self.recv_buf.grow(size, pool) {
                self.loss.memory_limited += 1;
            }
        }
    }

    /// Delayed ACKs (RFC 9293 3.8.6.3, RFC 5681 4.2): every second
    /// full-sized segment is acknowledged at once, others within the
    /// delayed-ACK time.
    fn schedule_ack(&mut self, len: usize, now: Instant) {
        if len >= usize::from(self.mss) {
            self.unacked_segments = self.unacked_segments.saturating_add(1);
        }
        if self.unacked_segments >= 2 {
            self.ack_now = true;
        } else if self.ack_at.is_none() {
            self.ack_at = Some(now + self.delayed_ack);
        }
    }

    /// The peer's FIN, in order (RFC 9293 3.10.7.4 eighth step).
    fn take_fin(&mut self, now: Instant) {
        if self.fin_received {
            // A retransmitted FIN: acknowledge again.
            self.ack_now = true;
            if self.state == State::TimeWait {
                self.time_wait_at = Some(now + self.time_wait);
            }
            return;
        }
        self.fin_received = true;
        self.fin_ahead = None;
        self.rcv_nxt = self.rcv_nxt + 1u32;
        self.ack_now = true;
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 => {
                if self.fin_acked() {
                    self.enter_time_wait(now);
                } else {
                    self.state = State::Closing;
                }
            }
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }
}
