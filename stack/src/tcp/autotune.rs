//! Receive-window auto-tuning (dynamic right-sizing, as Linux's
//! `tcp_rcv_space_adjust`): once per receiver-side round trip, the window
//! grows to twice what the application read in it. A connection whose
//! window limits its sender reads a whole window per round trip, so its
//! window doubles each round trip up to its limit; one that moves little,
//! or whose application reads slowly, keeps the window it has.
//!
//! The receiver's round trip comes from timestamps when they are on (the
//! age of our TSval the peer echoes, Linux's `tcp_rcv_rtt_measure_ts`),
//! else from how long one window of data takes to arrive
//! (`tcp_rcv_rtt_measure`), which is at least a round trip.
//!
//! Invariants: the window it asks for is a power of two above the current
//! one (the caller caps it at the limit); the counter of bytes read
//! restarts at every decision.

use super::seq::Seq;
use crate::time::{Duration, Instant};

/// The shortest period decisions are made over: timestamps count
/// milliseconds, so a LAN's round trip reads as 0.
const MIN_PERIOD: Duration = Duration::from_millis(1);

/// The receiver's measurements.
#[derive(Debug, Clone, Default)]
pub(crate) struct RcvTuning {
    /// Bytes the application read since `since`.
    pub(crate) copied: usize,
    since: Option<Instant>,
    /// Smoothed receiver-side round trip.
    rtt: Option<Duration>,
    /// Without timestamps: the sequence number whose arrival ends the
    /// running measurement, and when it started.
    window_mark: Option<(Seq, Instant)>,
}

impl RcvTuning {
    /// A round-trip sample (7/8 smoothing, as the sender's estimator).
    pub(crate) fn sample(&mut self, sample: Duration) {
        self.rtt = Some(match self.rtt {
            None => sample,
            Some(old) => (old * 7 + sample) / 8,
        });
    }

    /// Without timestamps: in-order data reached `rcv_nxt`; a window of
    /// `window` bytes that took this long to arrive is a sample.
    pub(crate) fn data_arrived(&mut self, rcv_nxt: Seq, window: usize, now: Instant) {
        match self.window_mark {
            Some((end, _)) if rcv_nxt < end => {}
            Some((_, start)) => {
                self.sample(now - start);
                self.window_mark = Some((rcv_nxt + window as u32, now));
            }
            None => self.window_mark = Some((rcv_nxt + window as u32, now)),
        }
    }

    /// The window to grow to from `window`, once a round trip has passed
    /// since the last decision and the application read more than half
    /// the window in it.
    pub(crate) fn grow_to(&mut self, window: usize, now: Instant) -> Option<usize> {
        let rtt = self.rtt?.max(MIN_PERIOD);
        let Some(since) = self.since else {
            self.since = Some(now);
            self.copied = 0;
            return None;
        };
        if now - since < rtt {
            return None;
        }
        let copied = core::mem::take(&mut self.copied);
        self.since = Some(now);
        let want = copied.saturating_mul(2);
        (want > window).then(|| want.checked_next_power_of_two().unwrap_or(usize::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn a_window_read_whole_each_round_trip_doubles() {
        let mut t = RcvTuning::default();
        t.sample(Duration::from_millis(10));
        assert_eq!(t.grow_to(65536, at(0)), None, "the first period starts");
        t.copied = 65536;
        assert_eq!(t.grow_to(65536, at(5)), None, "not a round trip yet");
        assert_eq!(t.grow_to(65536, at(10)), Some(131072));
        t.copied = 20000;
        assert_eq!(
            t.grow_to(131072, at(20)),
            None,
            "a slow reader keeps its window"
        );
    }

    #[test]
    fn without_timestamps_a_window_of_data_is_the_round_trip() {
        let mut t = RcvTuning::default();
        t.data_arrived(Seq(0), 1000, at(0));
        assert_eq!(t.grow_to(1000, at(1)), None, "no sample yet");
        t.data_arrived(Seq(500), 1000, at(3));
        t.data_arrived(Seq(1000), 1000, at(4));
        assert_eq!(t.rtt, Some(Duration::from_millis(4)));
    }
}
