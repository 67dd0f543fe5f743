//! A connection's timers: a fixed table of deadlines (retransmission,
//! tail loss probe, delayed ACK, persist, TIME-WAIT, keepalive), polled with the time; the lcore keeps
//! connections in a timer wheel keyed by [`Connection::next_deadline`].
//!
//! Keepalive probes an idle connection when asked to, at the configured
//! idle time and interval (no backoff: its own deadline and count); not
//! while data is unacknowledged or waiting, which the retransmission or
//! persist timer probes already.
//!
//! Retransmission (RFC 6298 5): go back to `SND.UNA` (skipping what the
//! peer sacked, unless this is the second timeout in a row), back the
//! timer off, shrink the congestion window (RFC 5681 (4)), give up after
//! the configured number of tries (fewer for a SYN).
//!
//! Persist (RFC 9293 3.8.6.1): while the peer's window is zero and data
//! waits, a probe after an RTO, then at doubling gaps up to
//! [`PERSIST_MAX`]. Its backoff is its own: the RTO estimator is not
//! touched, so the data sent once the window opens is timed by the RTO
//! the path earned, not by how long the window stayed shut.

use super::congestion::CongestionControl;
use super::conn::{Connection, State, TcpError};
use crate::time::{Duration, Instant};

/// The longest gap between zero-window probes. RFC 9293 asks for an
/// exponential backoff and sets no ceiling; Linux stops at its 120 s
/// maximum RTO. But a window update is a bare ACK that nothing
/// retransmits: once one is lost, the next probe is what restarts the
/// transfer, and a gap of two minutes outlasts common idle timeouts
/// (socat's `-T`, proxies' 60 s). 30 s keeps a lost update's cost under
/// those while probing an application that stopped reading about
/// twice a minute.
pub const PERSIST_MAX: Duration = Duration::from_secs(30);

impl Connection {
    /// The earliest deadline of any timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        // Branch-free over the nanoseconds (none: u64::MAX): this runs
        // after every segment.
        let at = |t: Option<Instant>| t.map_or(u64::MAX, Instant::as_nanos);
        let soonest = (at(self.rto_at).min(at(self.tlp_at)).min(at(self.ack_at)))
            .min(at(self.persist_at).min(at(self.time_wait_at)))
            .min(at(self.keepalive_at).min(at(self.rack_at)));
        (soonest != u64::MAX).then_some(Instant::from_nanos(soonest))
    }

    /// Runs the timers that are due at `now`.
    pub fn on_timer(&mut self, now: Instant) {
        if self.time_wait_at.is_some_and(|t| now >= t) {
            self.time_wait_at = None;
            self.enter_closed(None);
            return;
        }
        if self.ack_at.is_some_and(|t| now >= t) {
            self.ack_at = None;
            self.ack_now = true;
        }
        if self.rack_at.is_some_and(|t| now >= t) {
            self.rack_at = None;
            if self.recovery.is_some() {
                self.rack_check(now, true);
            } else {
                self.rack_timer_outside_recovery(now);
            }
        }
        if self.persist_at.is_some_and(|t| now >= t) {
            self.persist_timeout(now);
            if self.state == State::Closed {
                return;
            }
        }
        if self.tlp_at.is_some_and(|t| now >= t) {
            self.tail_loss_probe(now);
        }
        if self.rto_at.is_some_and(|t| now >= t) {
            self.retransmission_timeout(now);
        }
        if self.keepalive_at.is_some_and(|t| now >= t) {
            self.keepalive_timeout(now);
        }
    }

    /// Keepalive (RFC 9293 3.8.4, RFC 1122 4.2.3.6): after the idle time, a
    /// probe (an old sequence number, which the peer must acknowledge) every
    /// interval; the connection times out after the configured number go
    /// unanswered.
    fn keepalive_timeout(&mut self, now: Instant) {
        if self.snd_max != self.snd_una || !self.send_buf.is_empty() {
            // Data is unacknowledged or waiting: the retransmission or
            // persist timer probes the peer, with patience of its own (as
            // Linux's tcp_keepalive_timer). Looked at again after the idle
            // time.
            self.keepalive_at = self.keepalive.map(|idle| now + idle);
            return;
        }
        if self.keepalive_sent >= self.keepalive_probes {
            self.enter_closed(Some(TcpError::TimedOut));
            return;
        }
        self.keepalive_sent += 1;
        self.keepalives += 1;
        self.probe = true;
        self.keepalive_at = Some(now + self.keepalive_interval);
    }

    /// The persist timer: a zero-window probe, the next one twice as far
    /// off (at most [`PERSIST_MAX`]). A peer that answers none of
    /// `max_retries` probes is gone (as Linux's tcp_retries2); one that
    /// answers keeps the connection however long its window stays shut.
    fn persist_timeout(&mut self, now: Instant) {
        if self.persist_unanswered >= self.max_retries {
            self.enter_closed(Some(TcpError::TimedOut));
            return;
        }
        self.persist_unanswered += 1;
        self.window_probes += 1;
        self.probe = true;
        self.persist_backoff = self.persist_backoff.saturating_add(1);
        self.persist_at = Some(now + self.persist_interval());
    }

    /// The gap before the next zero-window probe: the RTO, doubled per
    /// probe already sent since the window closed, capped.
    pub(crate) fn persist_interval(&self) -> Duration {
        let factor = 1u32 << self.persist_backoff.min(16);
        (self.rtt.rto() * factor).min(PERSIST_MAX)
    }

    fn retransmission_timeout(&mut self, now: Instant) {
        let handshake = matches!(self.state, State::SynSent | State::SynReceived);
        let limit = if handshake {
            self.max_syn_retries
        } else {
            self.max_retries
        };
        if !handshake && self.snd_wnd == 0 && self.snd_una < self.fin_seq() {
            // The peer shrank its window to zero over data in flight: what
            // is outstanding would not be taken, and resending nothing on
            // each expiry would stall until the retries ran out. Flow
            // control, not loss: no congestion response, no retry counted;
            // everything from SND.UNA goes again once a probe finds the
            // window open. (Not when only our FIN is outstanding: a FIN
            // needs no window and goes again at once, so it is
            // retransmitted as any segment, backed off; handed to the
            // persist timer it would go every RTO for as long as the peer
            // answers.)
            self.snd_nxt = self.snd_una;
            self.rto_at = None;
            self.timing = None;
            // Nothing is in flight any more: a SACK recovery's pipe would
            // count what went back as sent, and hold the window shut.
            self.recovery = None;
            self.rexmit_watch.clear();
            self.forget_send_times();
            self.dup_acks = 0;
            self.persist_backoff = 0;
            self.persist_timeout(now);
            return;
        }
        if self.retries >= limit {
            self.enter_closed(Some(TcpError::TimedOut));
            return;
        }
        self.retries += 1;
        self.rtt.back_off();
        self.timing = None; // Karn: no sample from a retransmission
        if !handshake {
            self.cc.on_timeout(self.flight());
            self.ecn.reduced(self.snd_max);
            self.path_mtu_on_timeout(now);
        }
        // SACK recovery is over. The scoreboard is kept through one
        // timeout, so going back skips what the peer holds (as Linux); a
        // second in a row suggests the peer dropped what it sacked
        // (reneging, RFC 2018 8), and everything goes again.
        self.recovery = None;
        self.rexmit_watch.clear();
        self.forget_send_times();
        self.dup_acks = 0;
        self.tlp_at = None;
        if self.retries > 1 {
            self.scoreboard.clear();
        }
        // Go back: everything from SND.UNA (or the SYN) is sent again.
        self.snd_nxt = self.snd_una;
        self.rto_at = Some(now + self.rtt.rto());
    }
}
