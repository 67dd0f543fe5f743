//! SACK on a connection: the peer's blocks into the scoreboard (RFC 2018,
//! D-SACKs told apart per RFC 2883), RFC 6675 loss recovery (entered on
//! the third duplicate ACK or once `IsLost(SND.UNA)`, left when the
//! recovery point is acknowledged), and the retransmissions it sends: only
//! lost holes (`NextSeg` rule 1), instead of going back to `SND.UNA`, then
//! new data, as much as PRR (RFC 6937) allows: in proportion to what each
//! ACK delivered while `pipe` is above `ssthresh`, slow start back up to it
//! below. And the tail loss probe (RFC 8985 7): two RTTs after the last
//! data or ACK, the last segment again, so that a loss at the tail, which
//! no duplicate ACK can reveal, is found before the RTO.
//!
//! RACK's time rule (RFC 8985 6.2) finds lost first transmissions too
//! ([`super::send_times`]): a segment the peer's SACKs overtook is lost a
//! round trip and the reordering window after it left, however few
//! segments were sacked above it; that can enter recovery, from an ACK or
//! from the reordering timer. A retransmission that is itself lost is
//! found by RACK's rule ([`super::rack`]) and sent again, instead of
//! waiting for the RTO.
//!
//! Called from [`super::input`] per ACK and from [`super::output`] per
//! segment sent; the work is bounded by the scoreboard's size.

use super::congestion::CongestionControl;
use super::conn::Connection;
use super::sack::{Recovery, DUP_THRESH};
use super::seq::Seq;
use crate::time::{Duration, Instant};
use crate::wire::tcp::{flags, TcpRepr};

impl Connection {
    /// Takes the SACK blocks of an arriving ACK into the scoreboard. A
    /// first block below the ACK, or inside the second block, is a D-SACK
    /// (RFC 2883 4): counted, not recorded. Blocks outside
    /// `[ack, SND.MAX]` are ignored.
    pub(crate) fn take_sack(&mut self, seg: &TcpRepr, ack_no: Seq) {
        if !self.sack_ok || seg.options.sack.is_empty() {
            return;
        }
        let blocks = seg.options.sack;
        let blocks = blocks.as_slice();
        for (i, &(left, right)) in blocks.iter().enumerate() {
            let (left, right) = (Seq(left), Seq(right));
            if left >= right {
                continue;
            }
            if i == 0 {
                let inside_second = blocks
                    .get(1)
                    .is_some_and(|&(l, r)| left >= Seq(l) && right <= Seq(r));
                if right <= ack_no || inside_second {
                    self.loss.dsacks_received += 1;
                    self.reordering_seen = true;
                    continue;
                }
            }
            if right <= ack_no || right > self.snd_max {
                continue;
            }
            self.scoreboard.add(left.max(ack_no), right);
        }
    }

    /// `len` bytes from `seq` arrived that were all received before: a
    /// D-SACK for the part below `RCV.NXT` goes in our next ACK (RFC 2883).
    pub(crate) fn note_old_duplicate(&mut self, seq: Seq, len: usize) {
        if self.sack_ok && len > 0 && seq < self.rcv_nxt {
            let end = (seq + len).min(self.rcv_nxt);
            self.sack_rx.dsack = Some((seq, end));
            self.loss.dsacks_old_sent += 1;
        }
    }

    /// After an ACK's processing: counts a duplicate (`dup`), prunes the
    /// scoreboard, leaves recovery at the recovery point and enters it
    /// when RFC 6675 5 says a segment is lost.
    pub(crate) fn sack_after_ack(&mut self, dup: bool, now: Instant) {
        self.scoreboard.prune(self.snd_una);
        self.send_times.prune(self.snd_una);
        if dup {
            self.dup_acks += 1;
        }
        if let Some(recovery) = self.recovery {
            if self.snd_una >= recovery.point {
                self.recovery = None;
                self.rexmit_watch.clear();
                self.rack_at = None;
                self.dup_acks = 0;
                return;
            }
            self.rack_check(now, false);
            return;
        }
        // Nothing outstanding, or going back after a timeout (RFC 6675
        // 5.1: that repair is the timer's until SND.MAX is reached; pipe
        // would count what was not resent yet as in flight).
        if self.snd_una == self.snd_max || self.snd_nxt < self.snd_max {
            return;
        }
        self.rack_at = self.rack_first_transmissions(now);
        let lost = self.lost_edge() > self.snd_una;
        if (self.dup_acks >= DUP_THRESH || lost) && !self.probe_lost_at_una(now) {
            self.enter_sack_recovery(now);
        }
    }

    /// RFC 6675 5: recovery begins, and the first hole goes at once.
    fn enter_sack_recovery(&mut self, now: Instant) {
        // A probe among the losses failed: its range goes again at the
        // current MSS, as every retransmission does.
        let lost_edge = self.lost_edge();
        if self
            .path_probe
            .in_flight()
            .is_some_and(|start| lost_edge > start)
            && self.path_probe.on_loss(now).is_some()
        {
            self.loss.mtu_probe_failures += 1;
        }
        let flight = self.flight();
        self.recovery = Some(Recovery::new(self.snd_una, self.snd_max, flight));
        // Data lost from a window an ECN echo already reduced the window
        // for is the same congestion (RFC 3168 6.1.2; Linux enters
        // recovery from its CWR state without a second reduction).
        let reduce = !self.ecn.reduced_for(self.snd_una);
        self.cc.enter_recovery(flight, self.snd_max, reduce);
        self.ecn.reduced(self.snd_max);
        self.loss.sack_recoveries += 1;
        // RFC 6675 5 step 4.2: the first hole goes at once, whatever pipe
        // says (as the third duplicate's fast retransmit).
        self.fast_retransmit = true;
        // Karn: a retransmission may carry the timed range.
        self.timing = None;
        self.tlp_at = None;
    }

    /// Going back to `SND.UNA` (a timeout): what is sent next is sent
    /// again, later than the send times say, and RACK starts afresh.
    pub(crate) fn forget_send_times(&mut self) {
        self.send_times.clear();
        self.rack_edge = self.snd_una;
        self.rack_at = None;
    }

    /// The reordering timer fired outside recovery: the first
    /// transmissions it was waiting for are lost unless delivered since,
    /// and recovery begins (no ACK may come to start it).
    pub(crate) fn rack_timer_outside_recovery(&mut self, now: Instant) {
        if self.snd_una == self.snd_max || self.snd_nxt < self.snd_max {
            return;
        }
        self.rack_at = self.rack_first_transmissions(now);
        if self.lost_edge() > self.snd_una && !self.probe_lost_at_una(now) {
            self.enter_sack_recovery(now);
        }
    }

    /// RACK for first transmissions: the highest sacked byte was the last
    /// delivered and everything below it was sent before it, so each
    /// unsacked byte below it that left a round trip and the reordering
    /// window ago is lost (raises `rack_edge`). Returns when the next one
    /// will be, if any is waiting.
    fn rack_first_transmissions(&mut self, now: Instant) -> Option<Instant> {
        let overtaken = self.scoreboard.ranges().last()?.1;
        let srtt = self.rtt.srtt().unwrap_or_else(|| self.rtt.rto());
        // RFC 8985 6.2 step 4: no reordering window in recovery until the
        // path has been seen to reorder.
        let reordering_window = if self.recovery.is_some() && !self.reordering_seen {
            Duration::ZERO
        } else {
            srtt / 4
        };
        let (edge, due) = self
            .send_times
            .lost_edge(overtaken, now, srtt + reordering_window);
        if let Some(edge) = edge {
            self.rack_edge = self.rack_edge.max(edge);
        }
        due
    }

    /// RACK (RFC 8985 6.2) in recovery, after an ACK or when its reordering
    /// timer fires (`timer`): a retransmission that later data overtook is
    /// lost, and NextSeg takes it again from there (from the timer, one
    /// segment may go whatever PRR says: no ACK will come to allow it).
    /// Then the timer is set for the next one that may be.
    pub(crate) fn rack_check(&mut self, now: Instant, timer: bool) {
        let mss = u32::from(self.mss);
        let rtt = self.rtt.srtt().unwrap_or_else(|| self.rtt.rto());
        let board = (&self.scoreboard, self.snd_una);
        let mut found = false;
        if let Some(seq) = self.rexmit_watch.lost(board, mss, now, rtt) {
            if let Some(r) = self.recovery.as_mut() {
                r.high_rxt = r.high_rxt.min(seq);
            }
            self.loss.lost_retransmits += 1;
            found = true;
        }
        let edge = self.rack_edge;
        let first_due = self.rack_first_transmissions(now);
        found |= self.rack_edge > edge;
        if let (true, Some(r)) = (found && timer, self.recovery.as_mut()) {
            r.sndcnt = r.sndcnt.max(mss);
        }
        let watch_due = self.rexmit_watch.deadline(&self.scoreboard, rtt, now);
        self.rack_at = match (first_due, watch_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// Where delivery stands: `SND.UNA` and the bytes sacked above it
    /// (before an ACK, for [`Connection::prr_on_ack`]).
    pub(crate) fn delivery_mark(&self) -> (Seq, u32) {
        let outstanding = self.snd_max.since(self.snd_una);
        let sacked = outstanding - self.scoreboard.unsacked(self.snd_una, self.snd_max);
        (self.snd_una, sacked)
    }

    /// PRR (RFC 6937) after an ACK in recovery: what it delivered (newly
    /// acknowledged plus newly sacked since `mark`) sets how much may be
    /// sent.
    pub(crate) fn prr_on_ack(&mut self, mark: (Seq, u32)) {
        if self.recovery.is_none() {
            return;
        }
        let (una, sacked) = self.delivery_mark();
        let acked = if una > mark.0 { una.since(mark.0) } else { 0 };
        let delivered = (acked + sacked).saturating_sub(mark.1);
        let (pipe, ssthresh, mss) = (self.pipe(), self.cc.ssthresh(), u32::from(self.mss));
        if let Some(r) = self.recovery.as_mut() {
            r.on_ack(delivered, pipe, ssthresh, mss);
        }
    }

    /// Every unsacked byte below it is lost: RFC 6675's `IsLost` edge at
    /// the current MSS, or RACK's, whichever is higher.
    fn lost_edge(&self) -> Seq {
        let is_lost = self.scoreboard.lost_edge(self.snd_una, u32::from(self.mss));
        is_lost.max(self.rack_edge.min(self.snd_max))
    }

    /// RFC 6675's `pipe`: bytes believed in the network. Unsacked bytes
    /// up to `SND.MAX`, less those lost, plus those retransmitted.
    pub(crate) fn pipe(&self) -> u32 {
        let (una, max) = (self.snd_una, self.snd_max);
        let edge = self.lost_edge().min(max);
        let high_rxt = self.recovery.map_or(una, |r| r.high_rxt.max(una)).min(max);
        self.scoreboard.unsacked(una, max) - self.scoreboard.unsacked(una, edge)
            + self.scoreboard.unsacked(una, high_rxt)
    }

    /// What counts against the congestion window: `pipe` in recovery (for
    /// reports: PRR's `sndcnt` decides what recovery sends); otherwise what was sent and not acknowledged, less what the peer
    /// sacked (as Linux's packets_out - sacked_out).
    pub(crate) fn in_flight(&self) -> u32 {
        if self.recovery.is_some() {
            return self.pipe();
        }
        let sacked =
            self.snd_nxt.since(self.snd_una) - self.scoreboard.unsacked(self.snd_una, self.snd_nxt);
        self.flight() - sacked
    }

    /// In recovery, the next lost hole (RFC 6675 `NextSeg` rule 1) if PRR
    /// allows a segment (`force`: the first retransmission, which goes
    /// regardless); `None` sends new data instead (rule 2).
    pub(crate) fn retransmit_lost(
        &mut self,
        now: Instant,
        payload: &mut [u8],
        force: bool,
    ) -> Option<(TcpRepr, usize)> {
        let recovery = self.recovery?;
        let options = self.options_for(false, now);
        let room = payload.len().min(self.payload_room(&options));
        if !force && (room as u32) > recovery.sndcnt {
            return None;
        }
        // On entry the first unacknowledged segment goes (RFC 6675 5 step
        // 4.3), lost by IsLost or by three duplicates alone.
        let mut seq = if force {
            self.snd_una
        } else {
            recovery.high_rxt.max(self.snd_una)
        };
        while let Some(end) = self.scoreboard.sacked_end(seq) {
            seq = end;
        }
        if !force && seq >= self.lost_edge() {
            return None;
        }
        let fin_seq = self.fin_seq();
        let hole_end = self.scoreboard.next_sacked(seq).unwrap_or(self.snd_max);
        let data_end = hole_end.min(fin_seq);
        let len = if seq < data_end {
            (data_end.since(seq) as usize).min(room)
        } else {
            0
        };
        let offset = seq.since(self.data_start) as usize;
        let len = self.send_buf.copy_out(offset, &mut payload[..len]);
        let fin = self.fin_queued && seq + len == fin_seq && self.snd_max > fin_seq;
        if len == 0 && !fin {
            return None;
        }
        let push = len > 0 && offset + len == self.send_buf.len();
        let extra = if fin { flags::FIN } else { 0 } | if push { flags::PSH } else { 0 };
        let header = self.header(seq, extra, options);
        if let Some(r) = self.recovery.as_mut() {
            r.high_rxt = seq + len + usize::from(fin);
            r.sent(len);
        }
        let end = seq + len + usize::from(fin);
        self.rexmit_watch.note(seq, end, self.snd_max, now);
        self.retransmitted += 1;
        self.loss.fast_retransmits += 1;
        if self.rto_at.is_none() {
            self.rto_at = Some(now + self.rtt.rto());
        }
        Some((self.acked(header), len))
    }

    /// Arms the tail loss probe (RFC 8985 7.2) after new data went out or
    /// an ACK came: two smoothed RTTs (plus the worst delayed ACK when one
    /// segment is out), if that is sooner than the RTO. SACK connections
    /// only, outside recovery, with data out and no FIN among it.
    pub(crate) fn arm_tail_loss_probe(&mut self, now: Instant) {
        self.tlp_at = None;
        let fin_out = self.fin_queued && self.snd_max > self.fin_seq();
        if !self.sack_ok
            || self.recovery.is_some()
            || self.snd_una == self.snd_max
            || self.snd_nxt < self.snd_max
            || fin_out
        {
            return;
        }
        let Some(srtt) = self.rtt.srtt() else {
            return;
        };
        let mut pto = srtt * 2;
        if self.flight() <= u32::from(self.mss) {
            pto += WORST_DELAYED_ACK;
        }
        let pto = pto.max(MIN_PTO);
        if pto < self.rtt.rto() {
            self.tlp_at = Some(now + pto);
        }
    }

    /// The probe timer expired: a probe is owed, and the RTO restarts
    /// behind it (RFC 8985 7.3).
    pub(crate) fn tail_loss_probe(&mut self, now: Instant) {
        self.tlp_at = None;
        self.tlp_due = true;
        self.loss.loss_probes += 1;
        self.rto_at = Some(now + self.rtt.rto());
    }

    /// The probe: the last segment sent, again (RFC 8985 7.3 allows it in
    /// place of new data; its ACK, or SACK of it, shows what was lost at
    /// the tail without waiting for the RTO).
    pub(crate) fn send_tail_probe(
        &mut self,
        now: Instant,
        payload: &mut [u8],
    ) -> Option<(TcpRepr, usize)> {
        let options = self.options_for(false, now);
        let room = payload.len().min(self.payload_room(&options)) as u32;
        let outstanding = self.snd_max.since(self.snd_una);
        if outstanding == 0 || self.snd_una < self.data_start {
            return None;
        }
        let seq = self.snd_max - outstanding.min(room);
        let offset = seq.since(self.data_start) as usize;
        let len = outstanding.min(room) as usize;
        let len = self.send_buf.copy_out(offset, &mut payload[..len]);
        if len == 0 {
            return None;
        }
        let push = offset + len == self.send_buf.len();
        let header = self.header(seq, if push { flags::PSH } else { 0 }, options);
        self.retransmitted += 1;
        self.timing = None;
        Some((self.acked(header), len))
    }
}

/// RFC 8985 7.2's `WCDelAckT`: the longest a receiver may delay an ACK.
const WORST_DELAYED_ACK: Duration = Duration::from_millis(200);

/// The shortest probe timeout: on a path of a few microseconds, two RTTs
/// would probe before the peer's stack has even answered.
const MIN_PTO: Duration = Duration::from_millis(10);
