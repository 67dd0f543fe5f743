//! Lost retransmissions, found by RACK's rule (RFC 8985 6.2: a segment is
//! lost once a segment sent after it has been delivered, beyond an
//! allowance for reordering) instead of by the retransmission timeout.
//! RFC 6675 retransmits each hole once; if that retransmission is lost
//! too, only the RTO (200 ms at least) would find it, and at 1 % loss a
//! bulk transfer meets that every hundred retransmissions.
//!
//! Send order is read from sequence numbers: every retransmission records
//! `SND.MAX` as it left (and when), and whatever the peer then sacks above
//! that mark was sent later. It is lost at once when that is
//! [`REORDER_ALLOWANCE`] segments or more (a reordering window in
//! segments), or, as RACK's reordering timer does, once a round trip and a
//! quarter have passed since it left with anything sent after it
//! delivered (an application-limited sender may never send three more
//! segments). First transmissions are RACK's too, by time, in
//! [`super::send_times`].
//!
//! Invariants: bounded ([`WATCHED`] retransmissions; the oldest is let go
//! when full, leaving it to the timer); an entry leaves once its range is
//! acknowledged, sacked, or found lost; per ACK or timer, on the owning
//! lcore.

use super::sack::Scoreboard;
use super::seq::Seq;
use crate::time::{Duration, Instant, Stamp};
use arrayvec::ArrayVec;

/// Retransmissions watched at once.
pub const WATCHED: usize = 8;

/// Segments that must be delivered beyond a retransmission's mark before
/// it counts as lost at once (reordering tolerated up to this).
pub const REORDER_ALLOWANCE: u32 = 3;

/// A retransmission in flight: `[start, end)`, `SND.MAX` when it left, and
/// when.
#[derive(Debug, Clone, Copy)]
struct Sent {
    start: Seq,
    end: Seq,
    mark: Seq,
    at: Stamp,
}

/// Retransmissions in flight.
#[derive(Debug, Clone, Default)]
pub struct RetransmitWatch {
    sent: ArrayVec<Sent, WATCHED>,
}

/// How long after a retransmission left it may still arrive: a round trip
/// `rtt` and a quarter (RACK's reordering window, a quarter of the RTT).
fn patience(rtt: Duration) -> Duration {
    rtt + rtt / 4
}

impl RetransmitWatch {
    /// `[start, end)` was retransmitted at `at` while `snd_max` was the
    /// highest sequence number sent.
    pub fn note(&mut self, start: Seq, end: Seq, snd_max: Seq, at: Instant) {
        if start >= end {
            return;
        }
        self.sent.retain(|s| !(s.start >= start && s.end <= end));
        if self.sent.is_full() {
            self.sent.remove(0);
        }
        let mark = snd_max;
        self.sent.push(Sent {
            start,
            end,
            mark,
            at: Stamp::of(at),
        });
    }

    /// At `now`, after an ACK or at [`RetransmitWatch::deadline`], with the
    /// smoothed RTT `rtt`: drops what was delivered, and returns the lowest
    /// start of a retransmission now known lost (removed from the watch;
    /// it is to be sent again), if any.
    pub fn lost(
        &mut self,
        (scoreboard, una): (&Scoreboard, Seq),
        mss: u32,
        now: Instant,
        rtt: Duration,
    ) -> Option<Seq> {
        let highest_sacked = scoreboard.ranges().last().map(|r| r.1);
        let allowance = REORDER_ALLOWANCE * mss.max(1);
        let mut lost: Option<Seq> = None;
        self.sent.retain(|s| {
            let held = (scoreboard.sacked_end(s.start.max(una))).is_some_and(|e| e >= s.end);
            if s.end <= una || held {
                return false;
            }
            let overtaken = highest_sacked.is_some_and(|h| h > s.mark);
            let far = highest_sacked.is_some_and(|h| h >= s.mark + allowance);
            if far || (overtaken && s.at.age(now) >= patience(rtt)) {
                let from = s.start.max(una);
                lost = Some(lost.map_or(from, |l| l.min(from)));
                return false;
            }
            true
        });
        lost
    }

    /// When a watched retransmission that later data overtook counts as
    /// lost if nothing arrives before (RACK's reordering timer).
    pub fn deadline(
        &self,
        scoreboard: &Scoreboard,
        rtt: Duration,
        now: Instant,
    ) -> Option<Instant> {
        let highest_sacked = scoreboard.ranges().last().map(|r| r.1)?;
        (self.sent.iter())
            .filter(|s| highest_sacked > s.mark)
            .map(|s| s.at.plus(patience(rtt), now))
            .min()
    }

    /// Forgets everything (recovery is over, or a timeout went back to
    /// `SND.UNA`).
    pub fn clear(&mut self) {
        self.sent.clear();
    }

    /// Retransmissions watched now.
    pub fn len(&self) -> usize {
        self.sent.len()
    }

    /// True if none is watched.
    pub fn is_empty(&self) -> bool {
        self.sent.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 100;
    const RTT: Duration = Duration::from_millis(10);

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn a_retransmission_is_lost_once_later_data_is_sacked_beyond_the_allowance() {
        let mut watch = RetransmitWatch::default();
        // The hole [1000, 1100) went again while 5000 was the highest sent.
        watch.note(Seq(1000), Seq(1100), Seq(5000), at(0));
        let mut board = Scoreboard::default();
        board.add(Seq(1100), Seq(5200));
        let una = Seq(1000);
        let lost = watch.lost((&board, una), MSS, at(1), RTT);
        assert_eq!(lost, None, "within the allowance");
        board.add(Seq(5200), Seq(5300));
        assert_eq!(watch.lost((&board, una), MSS, at(1), RTT), Some(Seq(1000)));
        assert!(watch.is_empty(), "found once");
    }

    #[test]
    fn overtaken_by_less_it_is_lost_after_a_round_trip_and_a_quarter() {
        let mut watch = RetransmitWatch::default();
        watch.note(Seq(1000), Seq(1100), Seq(5000), at(0));
        let mut board = Scoreboard::default();
        board.add(Seq(1100), Seq(5000));
        assert_eq!(
            watch.deadline(&board, RTT, at(0)),
            None,
            "nothing later delivered"
        );
        board.add(Seq(5000), Seq(5100));
        let due = at(0) + Duration::from_micros(12_500);
        assert_eq!(watch.deadline(&board, RTT, at(0)), Some(due));
        let una = Seq(1000);
        let early = watch.lost((&board, una), MSS, at(12), RTT);
        assert_eq!(early, None, "reordering, maybe");
        assert_eq!(watch.lost((&board, una), MSS, at(13), RTT), Some(Seq(1000)));
    }

    #[test]
    fn a_delivered_retransmission_leaves_the_watch() {
        let mut watch = RetransmitWatch::default();
        watch.note(Seq(1000), Seq(1100), Seq(5000), at(0));
        watch.note(Seq(2000), Seq(2100), Seq(5000), at(0));
        let mut board = Scoreboard::default();
        board.add(Seq(2000), Seq(9000));
        // The first was acknowledged, the second sacked: neither is lost.
        assert_eq!(watch.lost((&board, Seq(1100)), MSS, at(100), RTT), None);
        assert!(watch.is_empty());
    }

    #[test]
    fn the_watch_is_bounded_and_keeps_the_newest() {
        let mut watch = RetransmitWatch::default();
        for i in 0..WATCHED as u32 + 3 {
            watch.note(Seq(i * 1000), Seq(i * 1000 + 100), Seq(100_000), at(0));
        }
        assert_eq!(watch.len(), WATCHED);
        let mut board = Scoreboard::default();
        board.add(Seq(200_000), Seq(200_100));
        let lost = watch.lost((&board, Seq(0)), MSS, at(1), RTT);
        assert_eq!(lost, Some(Seq(3000)), "the oldest three let go");
    }
}
