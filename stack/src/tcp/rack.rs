//! Lost retransmissions, found by RACK's rule (RFC 8985 6.2: a segment is
//! lost once a segment sent after it has been delivered, beyond an
//! allowance for reordering) instead of by the retransmission timeout.
//! RFC 6675 retransmits each hole once; if that retransmission is lost
//! too, only the RTO (200 ms at least) would find it, and at 1 % loss a
//! bulk transfer meets that every hundred retransmissions.
//!
//! Send order is read from sequence numbers rather than timestamps: every
//! retransmission records `SND.MAX` as it left, and whatever the peer then
//! sacks above that mark (beyond [`REORDER_ALLOWANCE`] segments, RACK's
//! reordering window in segments) was sent later. RACK's time-based
//! detection of first transmissions is RFC 6675's `IsLost` here (three
//! segments sacked above a hole).
//!
//! Invariants: bounded ([`WATCHED`] retransmissions; the oldest is let go
//! when full, leaving it to the timer); an entry leaves once its range is
//! acknowledged, sacked, or found lost; per ACK, on the owning lcore.

use super::sack::Scoreboard;
use super::seq::Seq;
use arrayvec::ArrayVec;

/// Retransmissions watched at once.
pub const WATCHED: usize = 8;

/// Segments that must be delivered beyond a retransmission's mark before
/// it counts as lost (reordering tolerated up to this).
pub const REORDER_ALLOWANCE: u32 = 3;

/// Retransmissions in flight: `[start, end)` and `SND.MAX` when sent.
#[derive(Debug, Clone, Default)]
pub struct RetransmitWatch {
    sent: ArrayVec<(Seq, Seq, Seq), WATCHED>,
}

impl RetransmitWatch {
    /// `[start, end)` was retransmitted while `snd_max` was the highest
    /// sequence number sent.
    pub fn note(&mut self, start: Seq, end: Seq, snd_max: Seq) {
        if start >= end {
            return;
        }
        self.sent.retain(|&mut (s, e, _)| !(s >= start && e <= end));
        if self.sent.is_full() {
            self.sent.remove(0);
        }
        self.sent.push((start, end, snd_max));
    }

    /// After an ACK: drops what was delivered, and returns the lowest
    /// start of a retransmission now known lost (removed from the watch;
    /// it is to be sent again), if any.
    pub fn lost(&mut self, scoreboard: &Scoreboard, una: Seq, mss: u32) -> Option<Seq> {
        let highest_sacked = scoreboard.ranges().last().map(|r| r.1);
        let allowance = REORDER_ALLOWANCE * mss.max(1);
        let mut lost: Option<Seq> = None;
        self.sent.retain(|&mut (start, end, mark)| {
            let delivered = end <= una
                || scoreboard
                    .sacked_end(start.max(una))
                    .is_some_and(|e| e >= end);
            if delivered {
                return false;
            }
            if highest_sacked.is_some_and(|h| h >= mark + allowance) {
                let from = start.max(una);
                lost = Some(lost.map_or(from, |l| l.min(from)));
                return false;
            }
            true
        });
        lost
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

    #[test]
    fn a_retransmission_is_lost_once_later_data_is_sacked_beyond_the_allowance() {
        let mut watch = RetransmitWatch::default();
        // The hole [1000, 1100) went again while 5000 was the highest sent.
        watch.note(Seq(1000), Seq(1100), Seq(5000));
        let mut board = Scoreboard::default();
        board.add(Seq(1100), Seq(5200));
        assert_eq!(
            watch.lost(&board, Seq(1000), MSS),
            None,
            "within the allowance"
        );
        board.add(Seq(5200), Seq(5300));
        assert_eq!(watch.lost(&board, Seq(1000), MSS), Some(Seq(1000)));
        assert!(watch.is_empty(), "found once");
    }

    #[test]
    fn a_delivered_retransmission_leaves_the_watch() {
        let mut watch = RetransmitWatch::default();
        watch.note(Seq(1000), Seq(1100), Seq(5000));
        watch.note(Seq(2000), Seq(2100), Seq(5000));
        let mut board = Scoreboard::default();
        board.add(Seq(2000), Seq(9000));
        // The first was acknowledged, the second sacked: neither is lost.
        assert_eq!(watch.lost(&board, Seq(1100), MSS), None);
        assert!(watch.is_empty());
    }

    #[test]
    fn the_watch_is_bounded_and_keeps_the_newest() {
        let mut watch = RetransmitWatch::default();
        for i in 0..WATCHED as u32 + 3 {
            watch.note(Seq(i * 1000), Seq(i * 1000 + 100), Seq(100_000));
        }
        assert_eq!(watch.len(), WATCHED);
        let mut board = Scoreboard::default();
        board.add(Seq(200_000), Seq(200_100));
        assert_eq!(
            watch.lost(&board, Seq(0), MSS),
            Some(Seq(3000)),
            "the oldest three let go"
        );
    }
}
