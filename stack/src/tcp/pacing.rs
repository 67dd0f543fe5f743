//! Pacing: a connection's data segments leave no faster than a rate
//! derived from its congestion window and smoothed round trip, as Linux's
//! internal pacing does (`sk_pacing_rate`: 200% of cwnd/srtt while the
//! window is below half of ssthresh, 120% after, `tcp_pacing_ss_ratio` and
//! `tcp_pacing_ca_ratio`).
//!
//! The pacer keeps one release time. A segment may leave once the clock
//! has reached it; each segment sent pushes it on by the segment's length
//! at the rate. A connection that was idle may catch up by the time
//! [`BURST_BYTES`] (at least two segments) take at its rate, the size of
//! the bursts a TSO-autosized Linux sender hands its NIC: its release time
//! is never further behind the clock than that. (ACKs that raise the rate
//! while the credit is spent let a little more through.)
//!
//! Invariant: with pacing off, [`Pacer::may_send`] is always true and the
//! pacer never holds a release time, so the send path is exactly as
//! without it. Without an RTT sample there is no rate, and nothing waits.

use crate::time::{Duration, Instant};

/// Most bytes a paced connection sends back to back after an idle spell.
pub const BURST_BYTES: u64 = 64 * 1024;

/// Percent of cwnd/srtt while the window is below half of ssthresh.
const SLOW_START_RATIO: u64 = 200;
/// Percent of cwnd/srtt otherwise.
const AVOIDANCE_RATIO: u64 = 120;

/// A connection's pacing state.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    on: bool,
    /// The last send was held back: the lcore should call again at
    /// `release`.
    held: bool,
    /// The earliest time the next data segment may leave.
    release: Instant,
}

impl Pacer {
    /// A pacer that paces if `on`.
    pub fn new(on: bool) -> Pacer {
        Pacer {
            on,
            held: false,
            release: Instant::ZERO,
        }
    }

    /// True if pacing is on.
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Turns pacing on or off (a connection's `set_pacing`).
    pub fn set(&mut self, on: bool) {
        self.on = on;
        self.held = false;
    }

    /// True if a data segment may leave at `now`; false holds it back and
    /// remembers that the sender waits.
    pub fn may_send(&mut self, now: Instant) -> bool {
        if !self.on || now >= self.release {
            return true;
        }
        self.held = true;
        false
    }

    /// Accounts `bytes` sent at `now` with congestion window `cwnd`
    /// (bytes), ssthresh `ssthresh`, round trip `srtt` and segment size
    /// `mss`.
    pub fn sent(
        &mut self,
        now: Instant,
        bytes: usize,
        window: (u32, u32),
        srtt: Option<Duration>,
        mss: u32,
    ) {
        if !self.on {
            return;
        }
        let (cwnd, ssthresh) = window;
        let (Some(srtt), true) = (srtt, cwnd > 0) else {
            return;
        };
        let ratio = if u64::from(cwnd) < u64::from(ssthresh) / 2 {
            SLOW_START_RATIO
        } else {
            AVOIDANCE_RATIO
        };
        let srtt = u64::try_from(srtt.as_nanos()).unwrap_or(u64::MAX / 2);
        // Nanoseconds to send `n` bytes at ratio% of cwnd per srtt.
        let time_of = |n: u64| {
            let nanos =
                u128::from(n) * u128::from(srtt) * 100 / (u128::from(cwnd) * u128::from(ratio));
            u64::try_from(nanos).unwrap_or(u64::MAX / 2)
        };
        let depth = BURST_BYTES.max(2 * u64::from(mss));
        let earliest = now.as_nanos().saturating_sub(time_of(depth));
        let from = self.release.as_nanos().max(earliest);
        self.release = Instant::from_nanos(from.saturating_add(time_of(bytes as u64)));
    }

    /// If a send was held back since the last call: the time to try again.
    pub fn take_held(&mut self) -> Option<Instant> {
        core::mem::take(&mut self.held).then_some(self.release)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    /// `n` microseconds after a start one second after the clock's origin
    /// (so that the idle credit before it is whole).
    fn us(n: u64) -> Instant {
        Instant::from_nanos((1_000_000 + n) * 1000)
    }

    /// Segments of the idle credit, the first included.
    fn burst() -> u32 {
        (BURST_BYTES as u32) / MSS + 1
    }

    #[test]
    fn off_never_holds() {
        let mut p = Pacer::new(false);
        for i in 0..100 {
            p.sent(
                us(0),
                1448,
                (14480, 1 << 30),
                Some(Duration::from_micros(100)),
                MSS,
            );
            assert!(p.may_send(us(0)), "segment {i}");
        }
        assert_eq!(p.take_held(), None);
    }

    #[test]
    fn no_rtt_no_rate() {
        let mut p = Pacer::new(true);
        for _ in 0..100 {
            assert!(p.may_send(us(0)));
            p.sent(us(0), 1448, (14480, 1 << 30), None, MSS);
        }
    }

    #[test]
    fn a_window_per_round_trip_at_the_ratio() {
        // cwnd 100 segments, srtt 1 ms, in congestion avoidance: 120
        // segments a millisecond, after a first burst of 64 KiB.
        let mut p = Pacer::new(true);
        let cwnd = 100 * MSS;
        let srtt = Some(Duration::from_millis(1));
        let mut sent = 0u32;
        let mut now = 0;
        let mut first = None;
        while now <= 10_000 {
            if p.may_send(us(now)) {
                p.sent(us(now), MSS as usize, (cwnd, cwnd), srtt, MSS);
                sent += 1;
            } else {
                first.get_or_insert(sent);
                now += 1;
            }
        }
        let first = first.unwrap();
        assert_eq!(first, burst(), "first burst");
        let paced = sent - first;
        // 10 ms at 120 segments a millisecond.
        assert!((1195..=1205).contains(&paced), "{paced} segments in 10 ms");
        assert_eq!(p.take_held().map(|t| t > us(10_000)), Some(true));
        assert_eq!(p.take_held(), None, "reported once");
    }

    #[test]
    fn slow_start_paces_at_twice_the_window() {
        let mut p = Pacer::new(true);
        let cwnd = 10 * MSS;
        let srtt = Some(Duration::from_millis(1));
        let mut sent = 0u32;
        for now in 0..=10_000u64 {
            while p.may_send(us(now)) {
                p.sent(us(now), MSS as usize, (cwnd, u32::MAX), srtt, MSS);
                sent += 1;
            }
        }
        // 20 segments a millisecond, plus the first burst.
        let expected = 200 + burst();
        assert!(
            sent.abs_diff(expected) <= 3,
            "{sent} segments, not about {expected}"
        );
    }

    #[test]
    fn idle_credit_is_bounded() {
        let mut p = Pacer::new(true);
        let cwnd = 100 * MSS;
        let srtt = Some(Duration::from_millis(1));
        p.sent(us(0), MSS as usize, (cwnd, cwnd), srtt, MSS);
        // A second of silence buys one burst, not a second's worth.
        let mut sent = 0;
        while p.may_send(us(1_000_000)) {
            p.sent(us(1_000_000), MSS as usize, (cwnd, cwnd), srtt, MSS);
            sent += 1;
        }
        assert_eq!(sent, burst());
    }
}
