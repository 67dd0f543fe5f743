//! HyStart++ (RFC 9406): leaves the first slow start before it overshoots.
//! Each round trip (a window of data, from `SND.NXT` at its start to its
//! acknowledgment) keeps its smallest RTT sample. Once a round's minimum
//! exceeds the last round's by a threshold (an eighth of it, between 4 and
//! 16 ms), the queue at the bottleneck is growing: slow start turns into
//! Conservative Slow Start, which grows a quarter as fast, for five rounds,
//! and then ends (`ssthresh` = `cwnd`). If the RTT falls back below the
//! minimum that started it, the delay rise was noise and slow start
//! resumes.
//!
//! It works in front of any [`CongestionControl`]: it only scales what an
//! ACK may grow the window by and, at the end, calls
//! [`CongestionControl::end_slow_start`]. Only the first slow start is
//! governed (RFC 9406 4.3): after a loss or a timeout, `ssthresh` is known.
//!
//! Invariants: it changes nothing outside slow start; the scaled growth is
//! never more than the unscaled.

use super::CongestionControl;
use crate::tcp::seq::Seq;
use crate::time::Duration;

/// RTT samples a round needs before its minimum counts.
const N_RTT_SAMPLE: u32 = 8;
const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
const MIN_RTT_DIVISOR: u32 = 8;
/// Conservative Slow Start grows by a quarter of slow start.
const CSS_GROWTH_DIVISOR: u32 = 4;
/// Rounds of Conservative Slow Start before slow start ends.
const CSS_ROUNDS: u32 = 5;

/// The state of the first slow start.
#[derive(Debug, Clone, Default)]
pub struct HyStart {
    /// Off: never governs (`TcpConfig::hystart` false), or done.
    done: bool,
    /// The end of the current round (`SND.NXT` when it began).
    window_end: Option<Seq>,
    last_round_min: Option<Duration>,
    current_round_min: Option<Duration>,
    samples: u32,
    /// In Conservative Slow Start: the minimum RTT that started it, and
    /// the rounds it has lasted.
    css: Option<(Duration, u32)>,
}

impl HyStart {
    /// A new one, governing the first slow start if `enabled`.
    pub fn new(enabled: bool) -> HyStart {
        HyStart {
            done: !enabled,
            ..HyStart::default()
        }
    }

    /// True in Conservative Slow Start.
    pub fn in_css(&self) -> bool {
        self.css.is_some()
    }

    /// An ACK of `acked` new bytes up to `ack`, while `snd_nxt` is the next
    /// byte to send, with the RTT `sample` it gave (if any). Returns the
    /// bytes the congestion control may grow by (all of them, outside
    /// Conservative Slow Start).
    pub fn on_ack<C: CongestionControl>(
        &mut self,
        cc: &mut C,
        (acked, ack, snd_nxt): (u32, Seq, Seq),
        sample: Option<Duration>,
    ) -> u32 {
        if self.done || cc.ssthresh() != u32::MAX || !cc.in_slow_start() || cc.in_recovery() {
            // A congestion event set ssthresh: the first slow start is over.
            self.done |= cc.ssthresh() != u32::MAX;
            self.css = None;
            return acked;
        }
        if self.window_end.is_none_or(|end| ack >= end) {
            // A round ends: its minimum becomes the last round's.
            self.last_round_min = self.current_round_min.take();
            self.samples = 0;
            self.window_end = Some(snd_nxt);
            if let Some((baseline, rounds)) = self.css {
                if rounds + 1 >= CSS_ROUNDS {
                    cc.end_slow_start();
                    self.done = true;
                    self.css = None;
                    return acked;
                }
                self.css = Some((baseline, rounds + 1));
            }
        }
        if let Some(rtt) = sample {
            self.current_round_min = Some(self.current_round_min.map_or(rtt, |m| m.min(rtt)));
            self.samples += 1;
        }
        if let (true, Some(current), Some(last)) = (
            self.samples >= N_RTT_SAMPLE,
            self.current_round_min,
            self.last_round_min,
        ) {
            match self.css {
                None => {
                    let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                    if current >= last + thresh {
                        self.css = Some((current, 0));
                    }
                }
                Some((baseline, _)) if current < baseline => self.css = None,
                Some(_) => {}
            }
        }
        match self.css {
            Some(_) => acked / CSS_GROWTH_DIVISOR,
            None => acked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::NewReno;
    use super::*;

    const MSS: u32 = 1000;

    /// A sender in its first slow start: rounds of ten ACKs of a segment.
    struct Flow {
        h: HyStart,
        cc: NewReno,
        next: Seq,
    }

    impl Flow {
        fn new(enabled: bool) -> Flow {
            Flow {
                h: HyStart::new(enabled),
                cc: NewReno::new(MSS),
                next: Seq(0),
            }
        }

        /// `count` rounds, ACKs of round `r` with an RTT of `rtt(r)` ms;
        /// the window after each.
        fn rounds(&mut self, count: u32, rtt: impl Fn(u32) -> u64) -> Vec<u32> {
            let mut windows = Vec::new();
            for round in 0..count {
                let end = self.next + self.cc.window();
                for _ in 0..10 {
                    self.next = self.next + MSS;
                    let sample = Some(Duration::from_millis(rtt(round)));
                    let grow = self.h.on_ack(&mut self.cc, (MSS, self.next, end), sample);
                    self.cc.on_ack(
                        grow,
                        self.next,
                        0,
                        crate::time::Instant::ZERO,
                        Duration::ZERO,
                        true,
                    );
                }
                self.next = end;
                windows.push(self.cc.window());
            }
            windows
        }
    }

    #[test]
    fn a_steady_rtt_leaves_slow_start_alone() {
        let mut f = Flow::new(true);
        let windows = f.rounds(6, |_| 20);
        assert!(
            windows.windows(2).all(|w| w[1] == w[0] + 10 * MSS),
            "{windows:?}"
        );
        assert_eq!(f.cc.ssthresh(), u32::MAX);
    }

    #[test]
    fn a_rising_rtt_turns_to_conservative_slow_start_and_then_ends_it() {
        let mut f = Flow::new(true);
        // 20 ms, then the queue builds: 30 ms is over 20 + 4.
        let windows = f.rounds(3, |round| if round < 2 { 20 } else { 30 });
        assert!(f.h.in_css(), "{windows:?}");
        let before = f.cc.window();
        let more = f.rounds(1, |_| 30);
        assert_eq!(
            more[0] - before,
            10 * MSS / 4,
            "a quarter of slow start's growth"
        );
        f.rounds(CSS_ROUNDS - 1, |_| 30);
        assert!(!f.h.in_css());
        assert_eq!(f.cc.ssthresh(), f.cc.window(), "slow start ended");
        // Ended for good: a later rise changes nothing.
        let after = f.rounds(2, |_| 30);
        assert!(after[1] - after[0] < 10 * MSS, "congestion avoidance now");
    }

    #[test]
    fn a_falling_rtt_in_conservative_slow_start_resumes_slow_start() {
        let mut f = Flow::new(true);
        f.rounds(3, |round| if round < 2 { 20 } else { 30 });
        assert!(f.h.in_css());
        f.rounds(1, |_| 25);
        assert!(!f.h.in_css(), "25 ms is under the 30 that started it");
        assert_eq!(f.cc.ssthresh(), u32::MAX);
        let windows = f.rounds(2, |_| 25);
        assert_eq!(windows[1] - windows[0], 10 * MSS, "full slow start again");
    }

    #[test]
    fn off_it_changes_nothing() {
        let mut f = Flow::new(false);
        let windows = f.rounds(4, |round| 20 + 20 * u64::from(round));
        assert!(
            windows.windows(2).all(|w| w[1] == w[0] + 10 * MSS),
            "{windows:?}"
        );
        assert_eq!(f.cc.ssthresh(), u32::MAX);
    }
}
