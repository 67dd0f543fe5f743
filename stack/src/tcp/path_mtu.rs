//! The connection's side of packetization-layer path MTU discovery:
//! where retransmission timeouts, ACKs and loss detection tell the
//! connection's [`PathProbe`](super::plpmtud::PathProbe) what happened, and
//! where the MSS follows its verdicts. The search itself, free of
//! connection state, is `plpmtud`.

use super::conn::Connection;
use super::plpmtud::ProbeOutcome;
use super::seq::Seq;
use crate::time::Instant;

impl Connection {
    /// A retransmission timeout with data in flight: a probe in flight was
    /// lost; otherwise the second timeout in a row suggests a black hole,
    /// and the MSS drops (what goes again from `SND.UNA` goes at the new
    /// size).
    pub(crate) fn path_mtu_on_timeout(&mut self, now: Instant) {
        if self.path_probe.in_flight().is_some() {
            if self.path_probe.on_loss(now).is_some() {
                self.loss.mtu_probe_failures += 1;
            }
            return;
        }
        if self.retries == BLACK_HOLE_TIMEOUTS {
            if let Some(lower) = self.path_probe.black_hole(self.mss) {
                self.mss = lower;
                self.loss.mtu_black_holes += 1;
            }
        }
    }

    /// The probe's size, if one should go now as the next segment of new
    /// data (`available` bytes waiting, `usable` allowed by the windows):
    /// outside recovery, with room for all of it.
    pub(crate) fn probe_due(
        &mut self,
        now: Instant,
        available: usize,
        usable: usize,
    ) -> Option<u16> {
        // Not gated on an open search: `due` also reopens one after
        // REPROBE_INTERVAL (and costs an Option test before any black hole).
        if self.recovery.is_some() || self.snd_nxt != self.snd_max {
            return None;
        }
        let size = self.path_probe.due(self.mss, now)?;
        (available >= usize::from(size) && usable >= usize::from(size)).then_some(size)
    }

    /// An ACK up to `ack`: an acknowledged probe raises the MSS.
    pub(crate) fn path_mtu_on_ack(&mut self, ack: Seq, now: Instant) {
        if let Some(ProbeOutcome::Raised(size)) = self.path_probe.on_ack(ack, now) {
            self.mss = self.mss.max(size);
            self.loss.mtu_probe_successes += 1;
        }
    }

    /// Loss detection found `SND.UNA` lost: if that is the probe, it failed,
    /// and everything unacknowledged goes again from `SND.UNA` at the
    /// current MSS (skipping what the peer sacked), with no congestion
    /// response. True if so (recovery is not entered).
    pub(crate) fn probe_lost_at_una(&mut self, now: Instant) -> bool {
        if self.path_probe.in_flight() != Some(self.snd_una) {
            return false;
        }
        if self.path_probe.on_loss(now).is_some() {
            self.loss.mtu_probe_failures += 1;
        }
        self.snd_nxt = self.snd_una;
        self.timing = None;
        self.dup_acks = 0;
        true
    }
}

/// Timeouts in a row that suggest a black hole (Linux waits for
/// `tcp_retries1`, three; the second already rules out most single losses,
/// and a wrong guess costs only the probes that restore the MSS).
const BLACK_HOLE_TIMEOUTS: u8 = 2;
