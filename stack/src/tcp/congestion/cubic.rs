//! CUBIC (RFC 9438): after a congestion event the window follows
//! `W_cubic(t) = C * (t - K)^3 + W_max` (segments, seconds since the
//! congestion-avoidance epoch began), concave up to the window where the
//! last loss struck and convex beyond it, with a multiplicative decrease of
//! `BETA` (0.7), fast convergence (a window lower than the last `W_max`
//! gives some of its share up, 4.7) and the Reno-friendly region (never
//! slower than Reno's AIMD with the same decrease, 4.3).
//!
//! Slow start, fast recovery and the dup-ACK count are NewReno's (RFC 9438
//! 4.8 and 4.9 keep them): a [`NewReno`] does that bookkeeping, and CUBIC
//! sets the window after a loss and grows it in congestion avoidance.
//! Arithmetic in `f64`; per ACK, no allocation.

use super::{CongestionControl, DupAckAction, NewReno};
use crate::tcp::seq::Seq;
use crate::time::{Duration, Instant};

/// `C`: the aggressiveness, segments per second cubed (RFC 9438 4.1).
pub const C: f64 = 0.4;
/// `β_cubic`: the window kept on a congestion event (RFC 9438 4.6).
pub const BETA: f64 = 0.7;

/// CUBIC's state.
#[derive(Debug, Clone)]
pub struct Cubic {
    reno: NewReno,
    /// `W_max`, segments: the window before the last reduction.
    w_max: f64,
    /// `K`, seconds: when `W_cubic` reaches `W_max` again.
    k: f64,
    /// `W_est`, segments: Reno's window over the same epoch.
    w_est: f64,
    /// The congestion-avoidance epoch's start (`None`: the next ACK in
    /// congestion avoidance starts one).
    epoch: Option<Instant>,
}

impl Cubic {
    /// The initial window as NewReno's (RFC 6928).
    pub fn new(mss: u32) -> Cubic {
        Cubic {
            reno: NewReno::new(mss),
            w_max: 0.0,
            k: 0.0,
            w_est: 0.0,
            epoch: None,
        }
    }

    /// `W_cubic(t)` in segments (RFC 9438 4.2, figure 1).
    pub fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.w_max
    }

    /// `W_max` in segments.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// `K` in seconds.
    pub fn k(&self) -> f64 {
        self.k
    }

    /// When the congestion-avoidance epoch began, as moved on by idle
    /// spells (`None` outside one).
    pub fn epoch(&self) -> Option<Instant> {
        self.epoch
    }

    fn mss(&self) -> f64 {
        f64::from(self.reno.mss)
    }

    /// A congestion event with `cwnd` bytes as the window before it: the
    /// new `W_max` (fast convergence) and `ssthresh`, from the flight
    /// (RFC 9438 4.6, 4.7). The next epoch starts with the next ACK in
    /// congestion avoidance.
    fn congestion_event(&mut self, cwnd: u32, flight: u32) {
        let cwnd = f64::from(cwnd) / self.mss();
        self.w_max = if cwnd < self.w_max {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        let reduced = (f64::from(flight) * BETA) as u32;
        self.reno.ssthresh = reduced.max(2 * self.reno.mss);
        self.epoch = None;
    }

    /// Congestion avoidance (RFC 9438 4.2-4.5): towards `W_cubic(t +
    /// RTT)` (at most 1.5 times the window), or `W_est` where Reno's
    /// AIMD would be faster.
    fn avoid(&mut self, acked: u32, now: Instant, rtt: Duration) {
        let mss = self.mss();
        let cwnd = f64::from(self.reno.cwnd) / mss;
        let epoch = match self.epoch {
            Some(epoch) => epoch,
            None => {
                // RFC 9438 4.2: K from where the window stands now; a
                // window already past W_max starts the convex part.
                if cwnd >= self.w_max {
                    self.w_max = cwnd;
                    self.k = 0.0;
                } else {
                    self.k = ((self.w_max - cwnd) / C).cbrt();
                }
                self.w_est = cwnd;
                self.epoch = Some(now);
                now
            }
        };
        let t = now.saturating_duration_since(epoch).as_secs_f64();
        let acked = f64::from(acked) / mss;
        // RFC 9438 4.3: Reno's increase with CUBIC's decrease, α = 1 once
        // W_est passes W_max.
        let alpha = if self.w_est >= self.w_max {
            1.0
        } else {
            3.0 * (1.0 - BETA) / (1.0 + BETA)
        };
        self.w_est += alpha * acked / cwnd;
        let next = if self.w_cubic(t) < self.w_est {
            self.w_est
        } else {
            let target = self.w_cubic(t + rtt.as_secs_f64()).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd * acked
        };
        self.reno.cwnd = ((next * mss) as u32).max(self.reno.cwnd);
    }
}

impl CongestionControl for Cubic {
    fn on_ack(
        &mut self,
        acked: u32,
        ack: Seq,
        flight: u32,
        now: Instant,
        rtt: Duration,
        cwnd_limited: bool,
    ) -> bool {
        if self.reno.in_recovery() || self.reno.in_slow_start() {
            return self.reno.on_ack(acked, ack, flight, now, rtt, cwnd_limited);
        }
        self.reno.dup_acks = 0;
        // Not limited by the window: no growth (Linux's cubictcp_cong_avoid
        // returns before bictcp_update).
        if cwnd_limited {
            self.avoid(acked, now, rtt);
        }
        false
    }

    fn on_dup_ack(&mut self, flight: u32, highest: Seq, una: Seq, reduce: bool) -> DupAckAction {
        let cwnd = self.reno.cwnd;
        let action = self.reno.on_dup_ack(flight, highest, una, reduce);
        if action == DupAckAction::FastRetransmit && reduce {
            self.congestion_event(cwnd, flight);
            // RFC 6582's inflation by the three duplicates, over CUBIC's
            // threshold.
            self.reno.cwnd = self.reno.ssthresh + 3 * self.reno.mss;
        }
        action
    }

    fn enter_recovery(&mut self, flight: u32, point: Seq, reduce: bool) {
        let cwnd = self.reno.cwnd;
        self.reno.enter_recovery(flight, point, reduce);
        if reduce {
            self.congestion_event(cwnd, flight);
            self.reno.cwnd = self.reno.ssthresh;
        }
    }

    fn on_timeout(&mut self, flight: u32) {
        let cwnd = self.reno.cwnd;
        self.reno.on_timeout(flight);
        self.congestion_event(cwnd, flight);
    }

    /// CUBIC's decrease, as for a loss (RFC 9438 4.6 counts an ECN echo
    /// as a congestion event).
    fn on_ecn_echo(&mut self, flight: u32) {
        let cwnd = self.reno.cwnd;
        self.reno.on_ecn_echo(flight);
        self.congestion_event(cwnd, flight);
        self.reno.cwnd = self.reno.ssthresh;
    }

    fn window(&self) -> u32 {
        self.reno.window()
    }

    fn ssthresh(&self) -> u32 {
        self.reno.ssthresh()
    }

    fn in_recovery(&self) -> bool {
        self.reno.in_recovery()
    }

    fn end_slow_start(&mut self) {
        self.reno.end_slow_start();
    }

    /// The epoch moves on by the idle spell, never past `now` (as Linux's
    /// bictcp_cwnd_event on CA_EVENT_TX_START): `t` in `W_cubic(t)` counts
    /// time the window was in use, so the curve takes up where it left
    /// off instead of jumping by the spell's growth on the first ACK.
    fn on_send_start(&mut self, idle: Duration, now: Instant) {
        if let Some(epoch) = self.epoch {
            self.epoch = Some((epoch + idle).min(now));
        }
    }

    /// NewReno's restart; and the epoch ends, as after any reduction into
    /// slow start (RFC 9438 4.2: `t` counts from the start of congestion
    /// avoidance). Linux keeps its shifted epoch here, and its W_est
    /// (`tcp_cwnd`) then pulls the window up over a few ACKs; ours would
    /// set the window to the stale `W_est` on the first ACK past
    /// `ssthresh`, a burst of the window the restart just took away. A
    /// new epoch starts from the restarted window, towards the same
    /// `W_max`.
    fn restart_after_idle(&mut self, idle: Duration, rto: Duration) {
        let before = self.reno.cwnd;
        self.reno.restart_after_idle(idle, rto);
        if self.reno.cwnd < before {
            self.epoch = None;
        }
    }

    /// NewReno's reduction; a window it cut starts a new epoch, for the
    /// reason a restart does (above).
    fn application_limited(&mut self, used: u32) {
        let before = self.reno.cwnd;
        self.reno.application_limited(used);
        if self.reno.cwnd < before {
            self.epoch = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One round trip of ACKs for the whole window from `start`, a
    /// segment each, spread evenly over the RTT; returns its end.
    fn round_trip(c: &mut Cubic, start: Instant, rtt: Duration) -> Instant {
        let segments = c.window() / 1000;
        for i in 0..segments {
            c.on_ack(1000, Seq(0), 0, start + rtt * i / segments, rtt, true);
        }
        start + rtt
    }

    #[test]
    fn the_window_follows_w_cubic_after_a_loss() {
        let rtt = Duration::from_millis(100);
        let mut c = Cubic::new(1000);
        // Slow start to 100 segments, then a loss with them in flight.
        let mut now = Instant::ZERO;
        while c.window() < 100_000 {
            c.on_ack(1000, Seq(0), 0, now, rtt, true);
        }
        c.enter_recovery(100_000, Seq(1), true);
        assert_eq!(c.window(), 70_000, "β = 0.7");
        assert!(!c.on_ack(1000, Seq(1), 0, now, rtt, true), "recovery ends");
        assert_eq!(c.w_max(), 100.0);
        // Each round trip, the window is W_cubic one RTT on (RFC 9438
        // 4.2), within a segment or 2% while the cubic dominates.
        let mut worst: f64 = 0.0;
        for _ in 0..60 {
            now = round_trip(&mut c, now, rtt);
            let t = (now - Instant::ZERO).as_secs_f64();
            let expected = c.w_cubic(t);
            let got = f64::from(c.window()) / 1000.0;
            worst = worst.max((got - expected).abs() / expected);
            assert!(
                (got - expected).abs() <= (0.02 * expected).max(1.0),
                "t {t:.1}: {got:.1} segments, W_cubic {expected:.1}"
            );
        }
        let k = (30.0f64 / C).cbrt();
        assert!((c.k() - k).abs() < 1e-9, "K = cbrt(W_max (1 - β) / C)");
        assert!(c.window() > 100_000, "past W_max: the convex part");
        assert!(worst < 0.02);
    }

    #[test]
    fn an_idle_spell_moves_the_epoch_on() {
        let rtt = Duration::from_millis(100);
        let mut c = Cubic::new(1000);
        while c.window() < 100_000 {
            c.on_ack(1000, Seq(0), 0, Instant::ZERO, rtt, true);
        }
        c.enter_recovery(100_000, Seq(1), true);
        c.on_ack(1000, Seq(1), 0, Instant::ZERO, rtt, true);
        let mut now = Instant::ZERO;
        for _ in 0..5 {
            now = round_trip(&mut c, now, rtt);
        }
        let epoch = c.epoch().expect("in an epoch");
        let idle = Duration::from_secs(10);
        // No spell: the reference round trip.
        let mut busy = c.clone();
        round_trip(&mut busy, now, rtt);
        // Ten idle seconds, the epoch moved on by them: the round trip
        // after the spell grows the window exactly as that one.
        let mut rested = c.clone();
        rested.on_send_start(idle, now + idle);
        assert_eq!(rested.epoch(), Some(epoch + idle));
        round_trip(&mut rested, now + idle, rtt);
        assert_eq!(rested.window(), busy.window());
        assert!(busy.window() < c.window() + 3_000, "{}", busy.window());
        // Counted as growth time, the spell would take W_cubic(t) far
        // past the window: growth up to the 1.5 clamp in one round.
        let mut stale = c.clone();
        round_trip(&mut stale, now + idle, rtt);
        assert!(stale.window() > c.window() * 14 / 10, "{}", stale.window());
        // Never past now; and nothing outside an epoch.
        let mut late = c.clone();
        late.on_send_start(Duration::from_secs(100), now);
        assert_eq!(late.epoch(), Some(now));
        let mut fresh = Cubic::new(1000);
        fresh.on_send_start(idle, now);
        assert_eq!(fresh.epoch(), None);
    }

    #[test]
    fn fast_convergence_releases_bandwidth_and_reno_friendliness_holds() {
        let mut c = Cubic::new(1000);
        let now = Instant::ZERO;
        let rtt = Duration::from_millis(1);
        // A loss at the initial 10 segments: W_max 10, 7 kept.
        c.enter_recovery(10_000, Seq(1), true);
        c.on_ack(1000, Seq(1), 0, now, rtt, true);
        assert_eq!((c.w_max(), c.window(), c.ssthresh()), (10.0, 7000, 7000));
        // Another below W_max: the flow gives some of its share up
        // (RFC 9438 4.7), W_max = 7 * (1 + β) / 2.
        c.enter_recovery(7000, Seq(2), true);
        c.on_ack(1000, Seq(2), 0, now, rtt, true);
        assert!((c.w_max() - 7.0 * (1.0 + BETA) / 2.0).abs() < 1e-9);
        assert_eq!(c.window(), 4900);
        // A 1 ms RTT leaves the cubic nearly flat for 50 ms; Reno's AIMD
        // (W_est, RFC 9438 4.3) would add about a segment a round trip,
        // and the window keeps up with it.
        let mut now = now;
        for _ in 0..50 {
            now = round_trip(&mut c, now, rtt);
        }
        let t = (now - Instant::ZERO).as_secs_f64();
        assert!(f64::from(c.window()) / 1000.0 > c.w_cubic(t) + 20.0);
        assert!(c.window() > 4900 + 30_000, "{}", c.window());
    }
}
