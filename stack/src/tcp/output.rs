//! What a connection sends next (RFC 9293 3.8, RFC 5681, RFC 6582, RFC
//! 6675): a pending reset, our SYN or SYN-ACK, a fast retransmission (with
//! SACK: the next lost hole, see [`super::recovery`]), new data within
//! the peer's and the congestion window (Nagle's rule for small segments),
//! our FIN after the data, a zero-window probe, or a bare ACK when one is
//! owed. One segment per call; the caller loops until `None`.

use super::congestion::{CongestionControl, Round};
use super::conn::{Connection, State};
use super::seq::Seq;
use crate::time::Instant;
use crate::wire::tcp::{flags, TcpOptions, TcpRepr};
use crate::wire::Ecn;

impl Connection {
    /// The next segment to send, if any: its header, with its payload
    /// copied into the front of `payload` (which should hold an MSS; the
    /// returned length says how much was used).
    pub fn poll_transmit(&mut self, now: Instant, payload: &mut [u8]) -> Option<(TcpRepr, usize)> {
        let (header, len, _) = self.poll_transmit_ecn(now, payload)?;
        Some((header, len))
    }

    /// [`Self::poll_transmit`], with the ECN field its IP header is to
    /// carry (see [`super::ecn`]).
    pub fn poll_transmit_ecn(
        &mut self,
        now: Instant,
        payload: &mut [u8],
    ) -> Option<(TcpRepr, usize, Ecn)> {
        let sent_before = self.snd_max;
        let (mut header, len) = self.next_segment(now, payload)?;
        let new_data = len > 0 && Seq(header.seq) == sent_before;
        let first = sent_before == self.iss;
        let ecn = self.ecn.outgoing(&mut header.flags, new_data, first);
        Some((header, len, ecn))
    }

    /// The next segment, before ECN's part.
    fn next_segment(&mut self, now: Instant, payload: &mut [u8]) -> Option<(TcpRepr, usize)> {
        if let Some((seq, ack)) = self.rst_pending.take() {
            return Some((self.reset(seq, ack), 0));
        }
        match self.state {
            State::Closed => return None,
            // Our SYN is due (again): also after a close in SYN-RECEIVED
            // moved us on before it was acknowledged, or data would go out
            // at the SYN's sequence number.
            _ if self.snd_nxt == self.iss => {
                return Some((self.send_syn(now), 0));
            }
            State::SynSent => return None,
            _ => {}
        }
        if self.recovery.is_some() {
            let force = core::mem::take(&mut self.fast_retransmit);
            if let Some(segment) = self.retransmit_lost(now, payload, force) {
                return Some(segment);
            }
        }
        if self.fast_retransmit {
            self.fast_retransmit = false;
            if let Some(segment) = self.retransmit_first(now, payload) {
                return Some(segment);
            }
        }
        if core::mem::take(&mut self.tlp_due) {
            if let Some(segment) = self.send_tail_probe(now, payload) {
                return Some(segment);
            }
        }
        if let Some(segment) = self.send_data(now, payload) {
            return Some(segment);
        }
        if self.probe {
            // A zero-window probe (as Linux): an old sequence number makes
            // the peer answer with its current window.
            self.probe = false;
            let options = self.options_for(false, now);
            let header = self.header(self.snd_una - 1u32, 0, options);
            return Some((self.acked(header), 0));
        }
        if self.ack_now || self.challenge {
            let options = self.options_for(false, now);
            let header = self.header(self.snd_nxt, 0, options);
            return Some((self.acked(header), 0));
        }
        None
    }

    /// A reset: with an ACK (answering a segment that had none), or at
    /// `seq` alone.
    fn reset(&mut self, seq: Seq, ack: Option<Seq>) -> TcpRepr {
        TcpRepr {
            src_port: self.local_port,
            dst_port: self.remote_port,
            seq: seq.0,
            ack: ack.map_or(0, |a| a.0),
            flags: flags::RST | if ack.is_some() { flags::ACK } else { 0 },
            window: 0,
            options: TcpOptions::default(),
        }
    }

    /// Our SYN (SYN-SENT) or SYN-ACK (SYN-RECEIVED), first or again.
    fn send_syn(&mut self, now: Instant) -> TcpRepr {
        let options = self.options_for(true, now);
        let header = self.header(self.iss, flags::SYN, options);
        if self.snd_max == self.iss {
            self.timing = Some((self.iss + 1u32, now));
            // The oldest TSval a SYN-ACK may echo (see `syn_sent`).
            self.last_sent = now;
        }
        self.snd_nxt = self.iss + 1u32;
        self.snd_max = self.snd_max.max(self.snd_nxt);
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
        if header.flags & flags::ACK != 0 {
            self.acked(header)
        } else {
            header
        }
    }

    /// Resends the first unacknowledged segment whatever the windows say
    /// (fast retransmit, or a partial acknowledgment in recovery).
    fn retransmit_first(&mut self, now: Instant, payload: &mut [u8]) -> Option<(TcpRepr, usize)> {
        let offset = self.snd_una.since(self.data_start) as usize;
        let options = self.options_for(false, now);
        let room = payload.len().min(self.payload_room(&options));
        let len = self.send_buf.copy_out(offset, &mut payload[..room]);
        let fin = self.fin_queued
            && self.snd_una + len == self.fin_seq()
            && self.snd_max > self.fin_seq();
        if len == 0 && !fin {
            return None;
        }
        let push = len > 0 && offset + len == self.send_buf.len();
        let extra = if fin { flags::FIN } else { 0 } | if push { flags::PSH } else { 0 };
        let header = self.header(self.snd_una, extra, options);
        self.retransmitted += 1;
        self.loss.fast_retransmits += 1;
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
        Some((self.acked(header), len))
    }

    /// New (or, after a timeout, resent) data from `SND.NXT`, within the
    /// send and congestion windows, with our FIN once all data is out.
    fn send_data(&mut self, now: Instant, payload: &mut [u8]) -> Option<(TcpRepr, usize)> {
        if !matches!(
            self.state,
            State::Established
                | State::CloseWait
                | State::FinWait1
                | State::Closing
                | State::LastAck
        ) {
            return None;
        }
        // Going back after a timeout: what the peer sacked is not sent
        // again (RFC 6675 5.1 keeps the scoreboard), only the holes.
        let resend_end = if self.snd_nxt < self.snd_max {
            while let Some(end) = self.scoreboard.sacked_end(self.snd_nxt) {
                self.snd_nxt = end.min(self.snd_max);
            }
            self.scoreboard.next_sacked(self.snd_nxt)
        } else {
            None
        };
        let offset = self.snd_nxt.since(self.data_start) as usize;
        let offset = if self.snd_nxt >= self.data_start {
            offset
        } else {
            0
        };
        let hole = resend_end.map_or(usize::MAX, |end| end.since(self.snd_nxt) as usize);
        let available = self.send_buf.len().saturating_sub(offset).min(hole);
        if available > 0 && self.snd_una == self.snd_max && self.recovery.is_none() {
            // Nothing in flight: the first segment of a flight (three
            // comparisons; a segment with data in flight pays no more).
            self.resume_after_idle(now);
        }
        let in_flight = self.in_flight();
        let usable = match self.recovery {
            // PRR (RFC 6937) sets what recovery sends, within the peer's
            // window.
            Some(r) => r.sndcnt.min(self.snd_wnd.saturating_sub(self.flight())) as usize,
            None => {
                let window = self.snd_wnd.min(self.cc.window() + self.limited_transmit());
                window.saturating_sub(in_flight) as usize
            }
        };
        let options = self.options_for(false, now);
        // A probe only when this segment's buffer can hold it (the one a
        // search just reopened sizes the next buffer).
        let probe = self.probe_due(now, available, usable.min(payload.len()));
        let room = match probe {
            // A path MTU probe: one segment of its size (RFC 4821 7.4).
            Some(size) => self.payload_room_of(size, &options),
            None => self.payload_room(&options),
        };
        let room = payload.len().min(room);
        if self.recovery.is_some() && usable < room.min(available) {
            // Whole segments only while recovery paces the sending.
            return None;
        }
        let len = available.min(room).min(usable);
        if self.recovery.is_none() && len < room.min(available) && self.cwnd_cuts(usable) {
            // The congestion window, not the data or the peer's window,
            // would cut this segment short: wait for the ACK that makes
            // room for a whole one (Linux counts its window in segments
            // and never sends such runts).
            return None;
        }
        let fin_seq = self.fin_seq();
        let fin = self.fin_queued && self.snd_nxt + len == fin_seq && self.snd_nxt <= fin_seq;
        if len == 0 && !fin {
            if available > 0
                && self.snd_wnd == 0
                && self.rto_at.is_none()
                && self.persist_at.is_none()
            {
                // Zero window with data waiting: probe on the persist timer
                // (its backoff starts over each time the window closes).
                self.persist_backoff = 0;
                self.persist_at = Some(now + self.persist_interval());
            }
            return None;
        }
        // Nagle (RFC 9293 3.7.4) with Minshall's refinement (as Linux): a
        // small segment waits while an earlier small one is unacknowledged,
        // unless our FIN rides on it.
        let small = len < room;
        let resending = self.snd_nxt < self.snd_max;
        if len > 0 && small && !self.nodelay && self.snd_sml > self.snd_una && !fin && !resending {
            return None;
        }
        if len > 0 && !self.pacer.may_send(now) {
            return None;
        }
        let copied = self.send_buf.copy_out(offset, &mut payload[..len]);
        let push = copied > 0 && offset + copied == self.send_buf.len();
        let extra = if fin { flags::FIN } else { 0 } | if push { flags::PSH } else { 0 };
        let seq = self.snd_nxt;
        let header = self.header(seq, extra, options);
        let new_data = self.snd_nxt == self.snd_max;
        self.retransmitted += u64::from(!new_data);
        self.snd_nxt = self.snd_nxt + copied + usize::from(fin);
        if let Some(size) = probe.filter(|_| copied == room) {
            self.path_probe.sent(seq, self.snd_nxt, size);
        }
        if let Some(r) = self.recovery.as_mut() {
            r.sent(copied);
        }
        if small && copied > 0 {
            self.snd_sml = self.snd_nxt;
        }
        // Did this segment fill the congestion window (no room left for
        // another)? Only then may the ACKs of this round grow it.
        let flight = in_flight + copied as u32 + u32::from(fin);
        let full = self.cc.window().saturating_sub(flight) < u32::from(self.mss);
        if let Some(round) = self.cwnd_use.sent(full, flight, self.snd_una, self.snd_nxt) {
            // Once per round trip at most: the first send after a round
            // was all acknowledged.
            self.round_ended(round, now);
        }
        if self.snd_nxt > self.snd_max {
            self.snd_max = self.snd_nxt;
            // Marks a quarter of a round trip apart: RACK's send times.
            let grain = self.rtt.srtt().unwrap_or_else(|| self.rtt.rto()) / 4;
            self.send_times.note(self.snd_max, now, grain);
        }
        if new_data && self.timing.is_none() {
            self.timing = Some((self.snd_nxt, now));
        }
        if new_data {
            self.last_sent = now;
        }
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
        if new_data {
            self.arm_tail_loss_probe(now);
        }
        self.persist_at = None;
        if self.pacer.is_on() {
            let window = (self.cc.window(), self.cc.ssthresh());
            let mss = u32::from(self.mss);
            self.pacer.sent(now, copied, window, self.rtt.srtt(), mss);
        }
        Some((self.acked(header), copied))
    }

    /// Data is to go with nothing in flight, at `now`: the idle spell since
    /// new data last left is accounted for. CUBIC's epoch moves on by it
    /// (as Linux's CA_EVENT_TX_START, whatever the switch says: time with
    /// nothing sent is no time of growth); past the RTO, with
    /// `slow_start_after_idle`, the window restarts (RFC 5681 4.1, Linux's
    /// tcp_slow_start_after_idle_check), not trusted for a burst at
    /// whatever it had grown to when the path was last seen.
    ///
    /// The spell is accounted for up to `now` even if nothing goes yet
    /// (the pacer or the peer's window may hold it), so a second call
    /// neither shifts nor halves for it again.
    #[inline(never)]
    fn resume_after_idle(&mut self, now: Instant) {
        let idle = now - self.last_sent.max(self.idle_accounted);
        if idle.is_zero() {
            return;
        }
        self.idle_accounted = now;
        self.cc.on_send_start(idle, now);
        let rto = self.rtt.rto();
        if self.slow_start_after_idle && idle > rto {
            let before = self.cc.window();
            self.cc.restart_after_idle(idle, rto);
            // The window is now what the restart made it: RFC 2861's
            // validation starts over (Linux's snd_cwnd_stamp).
            self.cwnd_use.validate(now);
            if self.cc.window() < before {
                self.loss.cwnd_restarts += 1;
            }
        }
    }

    /// A round of data ended (the first send after it was acknowledged):
    /// RFC 2861's validation of the window (as Linux's tcp_cwnd_validate,
    /// and under the same switch as the idle restart, as there). A window
    /// the application left unfilled for an RTO goes halfway down to what
    /// it used: otherwise a sender that trickles for minutes keeps a
    /// window from its last bulk burst and may send it whole at any time.
    /// Not in recovery (which sets the window itself), and not while the
    /// application's writes do not fit in the send buffer (the sender
    /// then waits on the peer's window or the buffer's size, not on the
    /// application: Linux's SOCK_NOSPACE).
    #[inline(never)]
    fn round_ended(&mut self, round: Round, now: Instant) {
        if !self.slow_start_after_idle {
            return;
        }
        let (cwnd, slow_start) = (self.cc.window(), self.cc.in_slow_start());
        let rto = self.rtt.rto();
        // `last_sent` is still the ended round's last new data: the
        // round's time, not the idle spell after it (the restart's
        // business), is what the window went unfilled for. So a window
        // filled again after a short spell is not cut just before (as in
        // Linux, which validates after the send).
        let round = (round, self.last_sent);
        let Some(used) = self.cwnd_use.round_ended(round, cwnd, slow_start, now, rto) else {
            return;
        };
        if self.recovery.is_none() && !self.cc.in_recovery() && !self.write_blocked {
            self.cc.application_limited(used);
        }
    }

    /// RFC 3042's limited transmit, without SACK: the first and second
    /// duplicate ACK each let one new segment go beyond the congestion
    /// window, so that a window too small to bring three duplicates back
    /// gets its fast retransmit rather than a timeout. (With SACK the
    /// sacked segments already leave the flight: the same effect.)
    fn limited_transmit(&self) -> u32 {
        if self.sack_ok || self.cc.in_recovery() || self.snd_nxt != self.snd_max {
            return 0;
        }
        self.dup_acks.min(2) * u32::from(self.mss)
    }

    /// True if `usable` bytes of room are the congestion window's limit
    /// (below the peer's window) while data is in flight, so an ACK will
    /// open it.
    fn cwnd_cuts(&self, usable: usize) -> bool {
        let in_flight = self.in_flight();
        let peer_room = self.snd_wnd.saturating_sub(in_flight) as usize;
        in_flight > 0 && usable < peer_room
    }

    /// Marks the ACK a segment carries as sent: nothing more is owed (a
    /// D-SACK is reported once).
    pub(crate) fn acked(&mut self, header: TcpRepr) -> TcpRepr {
        if header.flags & flags::ACK != 0 {
            self.last_ack_sent = Seq(header.ack);
            self.sack_rx.dsack = None;
            self.ack_now = false;
            self.challenge = false;
            self.ack_at = None;
            self.unacked_segments = 0;
        }
        header
    }
}
