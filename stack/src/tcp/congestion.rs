//! Congestion control behind one small trait, [`CongestionControl`]:
//! NewReno (RFC 5681 slow start and congestion avoidance, RFC 6582 fast
//! recovery; with SACK, RFC 6675's recovery window, which `pipe` is counted
//! against instead of inflating it) and CUBIC (RFC 9438, the default, in
//! [`cubic`]), in bytes. A connection holds a [`Congestion`], an enum over
//! the two (static dispatch: nothing boxed per packet), chosen by
//! [`TcpConfig::congestion`](super::TcpConfig::congestion) or per
//! connection. Time comes in as an argument; nothing reads a clock.
//!
//! The window grows only while it limits the sender ([`CwndUse`], as
//! Linux's `tcp_is_cwnd_limited`; RFC 7661's concern): an application that
//! sends less than the window allows would otherwise grow it without bound
//! on ACKs of data the window never carried, and a later burst would go
//! at a window the path never validated.
//!
//! Nor does a window outlive an idle spell (RFC 5681 4.1, Linux's
//! `tcp_slow_start_after_idle`): when data is to go with nothing in flight
//! and none went for longer than the RTO, the connection calls
//! [`CongestionControl::restart_after_idle`] (unless
//! `TcpConfig::slow_start_after_idle` is off), which halves the window per
//! RTO of the spell down to the initial window; and, whatever the switch,
//! [`CongestionControl::on_send_start`], so that CUBIC's clock does not
//! run while nothing is sent. A window that is used, but not filled, for
//! an RTO goes halfway down to what was used, once per RTO (RFC 2861 3,
//! Linux's tcp_cwnd_application_limited, under the same switch):
//! [`CwndUse`] keeps the largest flight of the unfilled rounds and looks
//! once per round, as it ends.

pub mod cubic;
pub mod hystart;

pub use cubic::Cubic;
pub use hystart::HyStart;

use super::seq::Seq;
use crate::time::{Duration, Instant};

/// What a duplicate ACK asks the sender to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DupAckAction {
    /// Nothing yet.
    None,
    /// The third duplicate: retransmit the first unacknowledged segment
    /// (fast retransmit) and enter recovery.
    FastRetransmit,
}

/// Which algorithm a connection uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// CUBIC (RFC 9438), as Linux.
    #[default]
    Cubic,
    /// NewReno (RFC 5681, RFC 6582).
    NewReno,
}

/// What a connection asks of its congestion control.
pub trait CongestionControl {
    /// New data was acknowledged: `acked` bytes, up to `ack`, with
    /// `flight` bytes still outstanding, at `now`, the smoothed RTT
    /// `rtt` (zero before a sample); outside recovery the window grows
    /// only if `cwnd_limited` ([`CwndUse::allows_growth`]). True for a
    /// partial acknowledgment in NewReno recovery (the next hole is to go
    /// at once).
    fn on_ack(
        &mut self,
        acked: u32,
        ack: Seq,
        flight: u32,
        now: Instant,
        rtt: Duration,
        cwnd_limited: bool,
    ) -> bool;
    /// A duplicate ACK without SACK; the third enters fast recovery, a
    /// congestion event unless `reduce` is false (the window was already
    /// reduced for the window of data the loss is in, RFC 3168 6.1.2).
    fn on_dup_ack(&mut self, flight: u32, highest: Seq, una: Seq, reduce: bool) -> DupAckAction;
    /// SACK loss recovery begins until `point`: a congestion event unless
    /// `reduce` is false (as for [`Self::on_dup_ack`]).
    fn enter_recovery(&mut self, flight: u32, point: Seq, reduce: bool);
    /// The retransmission timer expired.
    fn on_timeout(&mut self, flight: u32);
    /// The peer echoed congestion (ECN, RFC 3168 6.1.2) with `flight`
    /// bytes outstanding: `ssthresh` and the window go down as for a loss,
    /// with no recovery entered and nothing to resend.
    fn on_ecn_echo(&mut self, flight: u32);
    /// The congestion window, in bytes.
    fn window(&self) -> u32;
    /// The slow-start threshold, in bytes.
    fn ssthresh(&self) -> u32;
    /// True during fast recovery.
    fn in_recovery(&self) -> bool;
    /// Slow start ends here (HyStart++ saw the queue grow): `ssthresh`
    /// becomes the window.
    fn end_slow_start(&mut self);
    /// True below the slow-start threshold.
    fn in_slow_start(&self) -> bool {
        self.window() < self.ssthresh()
    }
    /// Data is to go at `now` with nothing in flight, `idle` after new
    /// data last left (Linux's CA_EVENT_TX_START). Growth that follows the
    /// clock must not count the spell: CUBIC moves its epoch on by it.
    fn on_send_start(&mut self, idle: Duration, now: Instant) {
        let _ = (idle, now);
    }
    /// Data is to go after `idle` with nothing in flight, longer than the
    /// retransmission timeout `rto` (RFC 5681 4.1, as Linux's
    /// tcp_cwnd_restart): `ssthresh` keeps three quarters of the window to
    /// slow-start back to, and the window, unvalidated that long, halves
    /// per `rto` of it down to the restart window, the initial one.
    fn restart_after_idle(&mut self, idle: Duration, rto: Duration);
    /// The window went unfilled for an RTO, the largest flight `used`
    /// bytes (RFC 2861 / RFC 7661's concern, as Linux's
    /// tcp_cwnd_application_limited): `ssthresh` keeps three quarters of
    /// the window, and the window goes halfway down to what was used (the
    /// initial window at least).
    fn application_limited(&mut self, used: u32);
}

/// A connection's congestion control: one of the algorithms.
#[derive(Debug, Clone)]
pub enum Congestion {
    /// NewReno.
    NewReno(NewReno),
    /// CUBIC.
    Cubic(Cubic),
}

impl Congestion {
    /// A fresh controller of `algorithm` for segments of `mss` bytes.
    pub fn new(algorithm: Algorithm, mss: u32) -> Congestion {
        match algorithm {
            Algorithm::NewReno => Congestion::NewReno(NewReno::new(mss)),
            Algorithm::Cubic => Congestion::Cubic(Cubic::new(mss)),
        }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Congestion::NewReno(_) => Algorithm::NewReno,
            Congestion::Cubic(_) => Algorithm::Cubic,
        }
    }
}

/// Runs `$call` on whichever algorithm `$self` holds (a match, so each
/// arm is inlined: no vtable per packet).
macro_rules! dispatch {
    ($self:ident, $c:ident => $call:expr) => {
        match $self {
            Congestion::NewReno($c) => $call,
            Congestion::Cubic($c) => $call,
        }
    };
}

impl CongestionControl for Congestion {
    fn on_ack(
        &mut self,
        acked: u32,
        ack: Seq,
        flight: u32,
        now: Instant,
        rtt: Duration,
        cwnd_limited: bool,
    ) -> bool {
        dispatch!(self, c => c.on_ack(acked, ack, flight, now, rtt, cwnd_limited))
    }
    fn on_dup_ack(&mut self, flight: u32, highest: Seq, una: Seq, reduce: bool) -> DupAckAction {
        dispatch!(self, c => c.on_dup_ack(flight, highest, una, reduce))
    }
    fn enter_recovery(&mut self, flight: u32, point: Seq, reduce: bool) {
        dispatch!(self, c => c.enter_recovery(flight, point, reduce))
    }
    fn on_timeout(&mut self, flight: u32) {
        dispatch!(self, c => c.on_timeout(flight))
    }
    fn on_ecn_echo(&mut self, flight: u32) {
        dispatch!(self, c => c.on_ecn_echo(flight))
    }
    fn window(&self) -> u32 {
        dispatch!(self, c => c.window())
    }
    fn ssthresh(&self) -> u32 {
        dispatch!(self, c => c.ssthresh())
    }
    fn in_recovery(&self) -> bool {
        dispatch!(self, c => c.in_recovery())
    }
    fn end_slow_start(&mut self) {
        dispatch!(self, c => c.end_slow_start())
    }
    fn on_send_start(&mut self, idle: Duration, now: Instant) {
        dispatch!(self, c => c.on_send_start(idle, now))
    }
    fn restart_after_idle(&mut self, idle: Duration, rto: Duration) {
        dispatch!(self, c => c.restart_after_idle(idle, rto))
    }
    fn application_limited(&mut self, used: u32) {
        dispatch!(self, c => c.application_limited(used))
    }
}

/// Whether the congestion window, rather than the application or the
/// peer's window, limits the sender, tracked per round of data as Linux's
/// `tcp_cwnd_validate` (`is_cwnd_limited`, `max_packets_out`,
/// `cwnd_usage_seq`), in bytes.
///
/// Invariant: `round_end` is `SND.NXT` of a send no older than the flight
/// it started, so it is never more than a window behind `SND.UNA` when
/// compared (every send compares it).
///
/// It also keeps what RFC 2861's validation of an application-limited
/// window needs (Linux's `snd_cwnd_used`, `snd_cwnd_stamp`): the largest
/// flight of the rounds the window did not limit since it last did (or
/// since the last validation), looked at once per round as it ends.
#[derive(Debug, Clone, Copy)]
pub struct CwndUse {
    /// A send this round left the window without room for a segment.
    limited: bool,
    /// The largest flight of this round, in bytes.
    max_flight: u32,
    /// The round ends once this is acknowledged (`SND.NXT` at its start).
    round_end: Seq,
    /// The largest flight of the unlimited rounds since `validated`.
    used: u32,
    /// When a round the window limited last ended, or the window was last
    /// validated (reduced for being unused, or restarted after idle).
    validated: Instant,
}

/// A round of data that just ended (see [`CwndUse::sent`]).
#[derive(Debug, Clone, Copy)]
pub struct Round {
    /// A send of it left the window without room for a segment.
    pub limited: bool,
    /// Its largest flight, in bytes.
    pub max_flight: u32,
}

impl Round {
    /// True if the window of `cwnd` bytes limited this round (as
    /// [`CwndUse::allows_growth`] says of the current one).
    #[inline]
    pub fn used_window(&self, cwnd: u32, slow_start: bool) -> bool {
        self.limited || (slow_start && cwnd < self.max_flight.saturating_mul(2))
    }
}

impl CwndUse {
    /// Nothing sent yet, from `iss`: not limited.
    pub fn new(iss: Seq) -> CwndUse {
        CwndUse {
            limited: false,
            max_flight: 0,
            round_end: iss,
            used: 0,
            validated: Instant::ZERO,
        }
    }

    /// A segment left: `flight` bytes are now in flight, `full` if the
    /// congestion window has no room for another segment, `una` and `nxt`
    /// the send sequence. A new round starts once the last one is
    /// acknowledged, on a full window, or on a larger flight while not
    /// limited. Returns the round that ended, if this send is the first
    /// after it was all acknowledged (once per round trip at most).
    #[inline]
    pub fn sent(&mut self, full: bool, flight: u32, una: Seq, nxt: Seq) -> Option<Round> {
        let ended = una >= self.round_end;
        if ended || full || (!self.limited && flight > self.max_flight) {
            let round = Round {
                limited: self.limited,
                max_flight: self.max_flight,
            };
            self.limited = full;
            self.max_flight = flight;
            self.round_end = nxt;
            if ended {
                return Some(round);
            }
        }
        None
    }

    /// True if an ACK may grow a window of `cwnd` bytes (Linux's
    /// `tcp_is_cwnd_limited`): the window was full this round or, in slow
    /// start, it is under twice the largest flight (so slow start still
    /// doubles what was sent).
    #[inline]
    pub fn allows_growth(&self, cwnd: u32, slow_start: bool) -> bool {
        self.limited || (slow_start && cwnd < self.max_flight.saturating_mul(2))
    }

    /// `round`, whose last data left at `last_send`, was found ended at
    /// `now` under a window of `cwnd` bytes (RFC 2861 3, Linux's
    /// tcp_cwnd_validate): a round the window limited validates it; one
    /// it did not adds its flight to what was used. Returns the largest
    /// flight used once the window has gone unfilled for `rto` (up to the
    /// round's last send) since it was last validated, which it then is.
    pub fn round_ended(
        &mut self,
        (round, last_send): (Round, Instant),
        cwnd: u32,
        slow_start: bool,
        now: Instant,
        rto: Duration,
    ) -> Option<u32> {
        if round.used_window(cwnd, slow_start) {
            self.validate(now);
            return None;
        }
        self.used = self.used.max(round.max_flight);
        if last_send.saturating_duration_since(self.validated) < rto {
            return None;
        }
        let used = self.used;
        self.validate(now);
        Some(used)
    }

    /// The window is known good (or was just cut to what is known) at
    /// `now`: the next validation is an RTO away.
    pub fn validate(&mut self, now: Instant) {
        self.used = 0;
        self.validated = now;
    }
}

/// NewReno's state.
#[derive(Debug, Clone)]
pub struct NewReno {
    mss: u32,
    cwnd: u32,
    ssthresh: u32,
    dup_acks: u32,
    /// In fast recovery until this is acknowledged (RFC 6582 "recover").
    recover: Option<Seq>,
    /// Bytes acknowledged in congestion avoidance since cwnd last grew.
    acked_in_ca: u32,
    /// The recovery is SACK's (RFC 6675): the window is not inflated or
    /// deflated, the sender counts `pipe` against it instead.
    pipe_based: bool,
}

impl NewReno {
    /// Initial window per RFC 6928 (ten segments, within 14,600 bytes
    /// unless that is under two segments).
    pub fn new(mss: u32) -> NewReno {
        let mss = mss.max(1);
        NewReno {
            mss,
            cwnd: initial_window(mss),
            ssthresh: u32::MAX,
            dup_acks: 0,
            recover: None,
            acked_in_ca: 0,
            pipe_based: false,
        }
    }
}

/// RFC 6928's initial window for segments of `mss` bytes.
fn initial_window(mss: u32) -> u32 {
    (10 * mss).min((2 * mss).max(14_600))
}

impl CongestionControl for NewReno {
    /// SACK loss recovery begins (RFC 6675 5 step 4.2): `ssthresh` and
    /// `cwnd` to half of what was in flight (unless not to `reduce`),
    /// until `point` is acknowledged.
    fn enter_recovery(&mut self, flight: u32, point: Seq, reduce: bool) {
        if reduce {
            self.ssthresh = (flight / 2).max(2 * self.mss);
            self.cwnd = self.ssthresh;
        } else {
            self.cwnd = self.cwnd.min(self.ssthresh);
        }
        self.recover = Some(point);
        self.pipe_based = true;
        self.dup_acks = 0;
        self.acked_in_ca = 0;
    }

    /// The congestion window in bytes.
    fn window(&self) -> u32 {
        self.cwnd
    }

    /// The slow-start threshold.
    fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    /// True during fast recovery.
    fn in_recovery(&self) -> bool {
        self.recover.is_some()
    }

    fn end_slow_start(&mut self) {
        self.ssthresh = self.cwnd;
    }

    /// New data was acknowledged: `acked` bytes, up to `ack`, with
    /// `flight` bytes still outstanding after it. Returns true for a
    /// partial acknowledgment in recovery (RFC 6582 3.2 step 3: the next
    /// unacknowledged segment is to be retransmitted at once).
    fn on_ack(
        &mut self,
        acked: u32,
        ack: Seq,
        flight: u32,
        _: Instant,
        _: Duration,
        cwnd_limited: bool,
    ) -> bool {
        self.dup_acks = 0;
        if let Some(recover) = self.recover {
            if self.pipe_based {
                if ack >= recover {
                    self.recover = None;
                    self.pipe_based = false;
                    self.cwnd = self.ssthresh;
                }
                return false;
            }
            if ack >= recover {
                // Full acknowledgment: leave recovery with a window that
                // cannot burst.
                self.cwnd = self.ssthresh.min(flight.max(self.mss) + self.mss);
                self.recover = None;
                return false;
            }
            // Partial: deflate by what was acknowledged, add one segment back.
            self.cwnd = self.cwnd.saturating_sub(acked) + self.mss.min(acked);
            return true;
        }
        if !cwnd_limited {
            // The application or the peer's window held the sender back:
            // these ACKs say nothing of a larger window (Linux's
            // tcp_reno_cong_avoid returns here too).
            return false;
        }
        if self.cwnd < self.ssthresh {
            // Slow start: the window grows by what was acknowledged (RFC
            // 3465's byte counting, without its per-ACK limit, as Linux),
            // since one ACK may stand for a whole receive burst.
            self.cwnd = self.cwnd.saturating_add(acked);
        } else {
            // Congestion avoidance: one segment per window of data.
            self.acked_in_ca = self.acked_in_ca.saturating_add(acked);
            if self.acked_in_ca >= self.cwnd {
                self.acked_in_ca -= self.cwnd;
                self.cwnd = self.cwnd.saturating_add(self.mss);
            }
        }
        false
    }

    /// A duplicate ACK arrived with `flight` bytes outstanding and
    /// `highest` the highest sequence number sent so far.
    fn on_dup_ack(&mut self, flight: u32, highest: Seq, una: Seq, reduce: bool) -> DupAckAction {
        if self.recover.is_some() {
            // Each further duplicate means a segment left the network.
            self.cwnd = self.cwnd.saturating_add(self.mss);
            return DupAckAction::None;
        }
        self.dup_acks += 1;
        if self.dup_acks != 3 {
            return DupAckAction::None;
        }
        // RFC 6582 3.2 step 2 (the "recover" check keeps a second fast
        // retransmit for losses from the same window away is implicit:
        // recovery only begins above una).
        let _ = una;
        if reduce {
            self.ssthresh = (flight / 2).max(2 * self.mss);
        }
        self.cwnd = self.ssthresh + 3 * self.mss;
        self.recover = Some(highest);
        DupAckAction::FastRetransmit
    }

    fn restart_after_idle(&mut self, idle: Duration, rto: Duration) {
        if self.recover.is_some() {
            // Nothing in flight ends a recovery first; as Linux's
            // tcp_current_ssthresh, a window being reduced is left alone.
            return;
        }
        let cwnd = self.cwnd;
        // ssthresh first, from the window before the cut (Linux's
        // tcp_current_ssthresh): slow start may climb back to 3/4 of it.
        self.ssthresh = self.ssthresh.max((cwnd >> 1) + (cwnd >> 2));
        // The restart window RW = min(IW, cwnd) (RFC 5681 4.1). Linux's
        // tcp_cwnd_restart does not drop to it at once: it halves cwnd once
        // per RTO of the idle spell, stopping at RW (a spell of more than
        // n and at most n + 1 RTOs halves it n times), so a spell just
        // over one RTO costs half the window, not all of it. The same
        // decay here.
        let restart = initial_window(self.mss).min(cwnd);
        let mut reduced = cwnd;
        let mut left = idle;
        while left > rto && reduced > restart {
            reduced >>= 1;
            left -= rto;
        }
        self.cwnd = reduced.max(restart);
        self.acked_in_ca = 0;
    }

    fn application_limited(&mut self, used: u32) {
        if self.recover.is_some() {
            // Recovery sets the window itself (Linux validates only in
            // the Open state).
            return;
        }
        let used = used.max(initial_window(self.mss));
        let cwnd = self.cwnd;
        if used < cwnd {
            // RFC 2861 3: ssthresh remembers 3/4 of the window, which
            // then goes halfway down to what the application used.
            self.ssthresh = self.ssthresh.max((cwnd >> 1) + (cwnd >> 2));
            self.cwnd = ((u64::from(cwnd) + u64::from(used)) / 2) as u32;
            self.acked_in_ca = 0;
        }
    }

    /// An echo of congestion: half the flight, as at the start of a
    /// recovery (RFC 3168 6.1.2 halves the window).
    fn on_ecn_echo(&mut self, flight: u32) {
        self.ssthresh = (flight / 2).max(2 * self.mss);
        self.cwnd = self.ssthresh;
        self.acked_in_ca = 0;
    }

    /// The retransmission timer expired (RFC 5681 (4)): one segment, and
    /// recovery abandoned.
    fn on_timeout(&mut self, flight: u32) {
        self.ssthresh = (flight / 2).max(2 * self.mss);
        self.cwnd = self.mss;
        self.dup_acks = 0;
        self.recover = None;
        self.pipe_based = false;
        self.acked_in_ca = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_start_then_avoidance_then_fast_recovery() {
        let mut c = NewReno::new(1000);
        assert_eq!(c.window(), 10_000);
        c.on_ack(1000, Seq(1000), 0, Instant::ZERO, Duration::ZERO, true);
        assert_eq!(c.window(), 11_000);
        // Three duplicates with 10,000 bytes in flight.
        assert_eq!(
            c.on_dup_ack(10_000, Seq(20_000), Seq(1000), true),
            DupAckAction::None
        );
        assert_eq!(
            c.on_dup_ack(10_000, Seq(20_000), Seq(1000), true),
            DupAckAction::None
        );
        assert_eq!(
            c.on_dup_ack(10_000, Seq(20_000), Seq(1000), true),
            DupAckAction::FastRetransmit
        );
        assert_eq!((c.ssthresh(), c.window()), (5_000, 8_000));
        c.on_dup_ack(10_000, Seq(20_000), Seq(1000), true);
        assert_eq!(c.window(), 9_000, "inflated per duplicate");
        // A partial ACK: still in recovery, retransmit the next hole.
        assert!(c.on_ack(
            2_000,
            Seq(3_000),
            8_000,
            Instant::ZERO,
            Duration::ZERO,
            true
        ));
        assert!(c.in_recovery());
        // The full ACK ends it.
        assert!(!c.on_ack(17_000, Seq(20_000), 0, Instant::ZERO, Duration::ZERO, true));
        assert!(!c.in_recovery());
        assert_eq!(
            c.window(),
            2_000,
            "min(ssthresh 5000, flight 0 + 2 segments)"
        );
        // Congestion avoidance: a whole window of ACKs for one segment.
        let mut c = NewReno::new(1000);
        c.on_timeout(20_000);
        assert_eq!((c.window(), c.ssthresh()), (1000, 10_000));
        for _ in 0..9 {
            c.on_ack(1000, Seq(0), 0, Instant::ZERO, Duration::ZERO, true);
        }
        assert_eq!(c.window(), 10_000, "slow start up to ssthresh");
        for _ in 0..10 {
            c.on_ack(1000, Seq(0), 0, Instant::ZERO, Duration::ZERO, true);
        }
        assert_eq!(c.window(), 11_000);
    }

    #[test]
    fn a_restart_keeps_three_quarters_in_ssthresh_and_halves_per_rto() {
        let rto = Duration::from_millis(200);
        // After a timeout, congestion avoidance from 10 segments up to 24.
        let grown = || {
            let mut c = NewReno::new(1000);
            c.on_timeout(20_000);
            for _ in 0..500 {
                if c.window() >= 24_000 {
                    break;
                }
                c.on_ack(1000, Seq(0), 0, Instant::ZERO, Duration::ZERO, true);
            }
            assert_eq!((c.window(), c.ssthresh()), (24_000, 10_000));
            c
        };
        // Just over one RTO: halved once (as Linux); ssthresh from the
        // window before, 3/4 of it.
        let mut c = grown();
        c.restart_after_idle(rto + Duration::from_millis(1), rto);
        assert_eq!((c.window(), c.ssthresh()), (12_000, 18_000));
        // Two RTOs and a bit: twice, but never under the initial window of
        // ten segments.
        let mut c = grown();
        c.restart_after_idle(rto * 2 + Duration::from_millis(1), rto);
        assert_eq!((c.window(), c.ssthresh()), (10_000, 18_000));
        // A window below the initial one is the restart window itself.
        let mut c = NewReno::new(1000);
        c.on_timeout(20_000);
        c.restart_after_idle(rto * 10, rto);
        assert_eq!((c.window(), c.ssthresh()), (1000, 10_000));
    }

    #[test]
    fn an_ecn_echo_reduces_as_a_loss_without_recovery() {
        let mut c = NewReno::new(1000);
        c.on_ecn_echo(10_000);
        assert_eq!((c.ssthresh(), c.window()), (5_000, 5_000));
        assert!(!c.in_recovery());
        let mut c = Cubic::new(1000);
        c.on_ecn_echo(10_000);
        assert_eq!((c.ssthresh(), c.window()), (7_000, 7_000), "β 0.7");
        assert_eq!(c.w_max(), 10.0, "W_max: the window before");
        assert!(!c.in_recovery());
    }
}
