//! A connection's timers: a fixed table of deadlines (retransmission,
//! delayed ACK, persist, TIME-WAIT, keepalive), polled with the time; the lcore keeps
//! connections in a timer wheel keyed by [`Connection::next_deadline`].
//!
//! Keepalive probes an idle connection when asked to.
//!
//! Retransmission (RFC 6298 5): go back to `SND.UNA`, back the timer off,
//! shrink the congestion window (RFC 5681 (4)), give up after the
//! configured number of tries (fewer for a SYN).

use super::conn::{Connection, State, TcpError};
use crate::time::Instant;

impl Connection {
    /// The earliest deadline of any timer.
    pub fn next_deadline(&self) -> Option<Instant> {
        [
            self.rto_at,
            self.ack_at,
            self.persist_at,
            self.time_wait_at,
            self.keepalive_at,
        ]
        .into_iter()
        .flatten()
        .min()
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
        if self.persist_at.is_some_and(|t| now >= t) {
            self.rtt.back_off();
            self.persist_at = Some(now + self.rtt.rto());
            self.probe = true;
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
        if self.keepalive_sent >= self.keepalive_probes {
            self.enter_closed(Some(TcpError::TimedOut));
            return;
        }
        self.keepalive_sent += 1;
        self.probe = true;
        self.keepalive_at = Some(now + self.keepalive_interval);
    }

    fn retransmission_timeout(&mut self, now: Instant) {
        let handshake = matches!(self.state, State::SynSent | State::SynReceived);
        let limit = if handshake {
            self.max_syn_retries
        } else {
            self.max_retries
        };
        if self.retries >= limit {
            self.enter_closed(Some(TcpError::TimedOut));
            return;
        }
        self.retries += 1;
        self.rtt.back_off();
        self.timing = None; // Karn: no sample from a retransmission
        if !handshake {
            self.cc.on_timeout(self.flight());
        }
        // Go back: everything from SND.UNA (or the SYN) is sent again.
        self.snd_nxt = self.snd_una;
        self.rto_at = Some(now + self.rtt.rto());
    }
}
